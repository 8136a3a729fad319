"""The clusters a plan runs on, and how this process reaches them: ``local`` (a LocalCluster,
threads or processes of this one), ``address`` (an existing scheduler, plain or TLS, probed first;
``kept``: the kept cluster, through its state directory, `pipeline.engine.kept`), ``slurm``
(dask-jobqueue), ``kubernetes`` (dask-kubernetes), ``sequential`` (no Dask). Every listening
socket a cluster started here opens is on loopback; Dask's own instruments are quietened
(`quiet_dask_config`); Ctrl-C while a cluster starts or closes is one line, not a traceback
(`_sigint_deferred`). `keep_clusters` keeps a cluster open for the next run of this process."""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from ..experiment.experiment import as_dict, thaw
from . import security as tls
from .cutting import TASK_S
from .kept import KEPT, alive, kept_security, not_yours, read_state, state_dir

class ClusterError(RuntimeError):
    """A cluster that cannot be reached or started: one line for the user, no traceback."""


# A scheduler that does not answer is reported within this time (distributed's default is 30 s).
CONNECT_TIMEOUT_S = 8

# Dask's own instruments, which wake every process of the cluster tens of times a second and so
# take CPU from the fits on the same cores (a visible share of a core, idle, for 2 workers and
# their client: docs/benchmarks/sweep.md): the statistical profiler samples
# the task thread's stack every 10 ms (our task thread only waits on its sandbox child, where
# the fit runs unseen by it anyway); the event loop's responsiveness tick every 20 ms; the
# system monitor (CPU, memory, network, disk counters for the dashboard) every 500 ms; the
# memory monitor every 100 ms (it watches the worker process, which only relays: the sandbox
# watches its child's memory itself). A key the user's Dask config sets keeps the user's value.
# The memory thresholds of a worker that is a thread of the client (cluster.processes=false),
# all off: what they measure is the whole process.
IN_PROCESS_WORKER_MEMORY = {f"distributed.worker.memory.{key}": False for key in ("target", "spill", "pause", "terminate")}
QUIET_DASK_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def quiet_dask_config() -> dict:
    """QUIET_DASK_CONFIG without the keys the user's Dask config (yaml or DASK_* variables) sets
    to other than distributed's default."""
    import dask
    import distributed  # noqa: F401 - registers distributed's defaults with dask.config
    defaults = dask.config.merge(*dask.config.defaults)
    return {key: value for key, value in QUIET_DASK_CONFIG.items()
            if dask.config.get(key) == dask.config.get(key, config=defaults)}


def quiet_dask_env() -> dict[str, str]:
    """quiet_dask_config as the DASK_* environment variables of workers we start elsewhere
    (SLURM job scripts, Kubernetes pods), where our process's config does not reach."""
    return {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
            for key, value in quiet_dask_config().items()}


@contextlib.contextmanager
def open_client(cluster):
    """A Dask client for the cluster config (None for sequential)."""
    kind = cluster.kind
    if kind == "sequential":
        yield None
        return
    from distributed import Client
    # Dask's INFO lines (workers starting and stopping, comms closing) are not the run's story.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    if kind == "address":
        with _connect(*address_security(cluster)) as client:
            yield client
        return
    if kind == "slurm":
        import dask
        # Adaptive scaling asks for jobs by the seconds of work queued, at 0.5 s a task of a
        # kind it has not timed yet: our first tasks (cut to about TASK_S) looked like one
        # job's work, and the second job was asked for only once the first had run a few. The
        # scheduler runs in this process and reads the durations as each kind's first task
        # arrives, hence for the cluster's whole life.
        durations = {f"distributed.scheduler.default-task-durations.{prefix}": f"{TASK_S}s" for prefix in ("fit", "ref")}
        with dask.config.set(durations), \
                slurm_cluster(cluster) as managed:
            managed.adapt(**_adapt_range(kind, cluster))
            with Client(managed, security=managed.security) as client:
                yield client
        return
    if kind == "kubernetes":
        with kubernetes_cluster(cluster) as managed:
            managed.adapt(**_adapt_range(kind, cluster))
            with Client(managed) as client:
                yield client
        return
    import dask
    from distributed import LocalCluster
    n = cluster.n_workers or os.cpu_count() or 1
    processes = bool(cluster.processes)
    # Workers log at CRITICAL only: a task's failure comes back through its future (an error
    # row with the cause), and a worker's lost heartbeat when the client stops (Ctrl-C) is not news.
    # The scheduler reads its config as it starts, and each nanny hands the config of its start
    # to its worker process (and to a restarted one): set around the start, it holds for the
    # cluster's life without changing this process's config for anything else.
    config = quiet_dask_config()
    if not processes:
        # A worker that is a thread of this process would measure this process (the client's
        # tables and report) against its memory limit, and pause or spill for it. The limit
        # is the sandboxes' (`sandbox._memory_share`), which they enforce on their own child.
        config.update(IN_PROCESS_WORKER_MEMORY)
    with contextlib.ExitStack() as stack:
        # A Ctrl-C while it starts is raised once the cluster is whole and will be closed.
        with _sigint_deferred():
            with dask.config.set(config):
                local = LocalCluster(n_workers=n, threads_per_worker=int(cluster.threads_per_worker),
                                     processes=processes, memory_limit=cluster.memory_limit,
                                     silence_logs=logging.CRITICAL, **_local_listening(cluster),
                                     **_worker_preload(processes))
            stack.enter_context(local)
            client = stack.enter_context(Client(local, security=local.security))
        try:
            yield client
        finally:
            if not processes:
                # Closing a worker thread waits for the task it runs, and a fit may run for
                # minutes: after Ctrl-C or an error, the sandboxes end now, their tasks with them.
                from .sandbox import stop_sandboxes
                stop_sandboxes({worker.address for worker in local.workers.values()})


@contextlib.contextmanager
def quiet_on_interrupt():
    """On Ctrl-C, silence Dask's shutdown (cancelled callbacks, workers killed mid-task: logged
    with tracebacks by distributed and tornado) before the cluster closes: the run's own line,
    how many tasks are saved, is what the user needs."""
    try:
        yield
    except KeyboardInterrupt:
        for name in ("distributed", "tornado", "asyncio"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        raise


@contextlib.contextmanager
def _sigint_deferred():
    """Hold a Ctrl-C that comes during the block and raise it (KeyboardInterrupt) as the block
    ends: a LocalCluster is started inside, and entered into the `with` that closes it; a
    KeyboardInterrupt in the middle of its start would leave it half made, unclosed.
    Ctrl-C is never ignored meanwhile: the workers used to be started with SIGINT ignored in
    this whole process, so that they inherited the ignore, and a Ctrl-C in those seconds was
    lost (a resumed run opens its cluster after planning: interrupted there, it ran on and
    exited 0). Worker processes now ignore it themselves (`_worker_preload`). A process that
    ignores SIGINT (a background job of a non-interactive shell) keeps ignoring it."""
    import signal
    import threading
    held = []
    if threading.current_thread() is not threading.main_thread() or not callable(signal.getsignal(signal.SIGINT)):
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        previous(signal.SIGINT, None)


def _worker_preload(processes: bool) -> dict:
    """For worker processes of their own (cluster.processes=true), their Dask preloads with
    `pipeline.engine.sandbox` (its `dask_setup`: SIGINT ignored in the worker, so that Ctrl-C,
    which reaches the whole process group, is the client's alone to act on: one line, exit 130,
    no worker's KeyboardInterrupt traceback); a worker the nanny restarts gets it too. The
    user's own preloads come first. Workers that are threads of this process need none."""
    if not processes:
        return {}
    import dask
    return {"preload": [*(dask.config.get("distributed.worker.preload") or []), "pipeline.engine.sandbox"]}


# The cluster kept open by `keep_clusters` for the later runs of this process: (config, its
# open_client context, the client), or None outside keep_clusters.
_KEPT: list | None = None


@contextlib.contextmanager
def keep_clusters():
    """Within this context, the cluster a run opens stays open for the next run with the same
    cluster config, and is closed when the context ends (or a run wants another config).

    `python -m pipeline` runs inside it, so the jobs of a Hydra multirun (run one after the other
    in this process by Hydra's basic launcher) pay one cluster start-up, not one each, and the
    workers keep the datasets they already read (tasks.py's caches). Only one cluster is kept,
    so a sweep over cluster settings does not pile up workers."""
    global _KEPT
    _KEPT = []
    try:
        yield
    finally:
        kept, _KEPT = _KEPT, None
        for _, context, _ in kept:
            context.__exit__(None, None, None)


@contextlib.contextmanager
def shared_client(cluster):
    """open_client, or the client `keep_clusters` kept for the same cluster config."""
    if _KEPT is None or cluster.kind == "sequential":
        with open_client(cluster) as client:
            yield client
        return
    config = as_dict(cluster)
    # A client that lost its scheduler (an address cluster restarted between two jobs) is
    # replaced rather than handed to the next job.
    if _KEPT and (_KEPT[0][0] != config or _KEPT[0][2].status != "running"):
        _, context, _ = _KEPT.pop()
        context.__exit__(None, None, None)
    if not _KEPT:
        context = open_client(cluster)
        _KEPT.append((config, context, context.__enter__()))
    yield _KEPT[0][2]


def probe_cluster(cluster) -> None:
    """What can be checked of the cluster before any work: a SLURM walltime, and for
    cluster=address, ClusterError naming the address unless something accepts a TCP connection
    there: a refused port is known at once, where distributed retries it for its
    whole timeout (30 s) and then prints a long traceback."""
    if cluster.kind == "slurm":
        _lifetime_s(cluster)      # a walltime that cannot hold a worker's lifetime, before any work
    if cluster.kind == "address":
        _probe_address(resolve_address(cluster.address))


def _probe_address(address: str) -> None:
    import socket
    from urllib.parse import urlsplit
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme in ("tcp", "tls") and parts.hostname and parts.port:
        try:
            socket.create_connection((parts.hostname, parts.port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise ClusterError(f"cluster.address={address}: no Dask scheduler answers there "
                               f"({exc.strerror or exc}); start one with `dask scheduler` or fix the address") from None


def _connect(address: str, sec):
    """A client of the scheduler at address, or ClusterError naming it within CONNECT_TIMEOUT_S."""
    from distributed import Client
    _probe_address(address)
    if address.startswith("tls://") and sec is None:
        raise ClusterError(f"cluster.address={address}: a tls:// scheduler needs cluster.security.ca_file, "
                           f".cert and .key (PEM files)")
    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s", security=sec)
    except (OSError, TimeoutError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ClusterError(f"cluster.address={address}: could not connect to a Dask scheduler "
                           f"within {CONNECT_TIMEOUT_S} s: {first}") from None


# ---- the kept cluster (`pipeline.kept`), reached through its state directory (`pipeline.engine.kept`)
def checked_state_dir() -> Path:
    """`state_dir`, or ClusterError if it exists but is not this user's alone
    (`security.not_private`): its state would not be what this user's `cluster start` wrote."""
    directory = state_dir()
    why = tls.not_private(directory) if directory.is_dir() else None
    if why is not None:
        raise ClusterError(not_yours(directory, why))
    return directory


def kept_address() -> str:
    """The kept cluster's scheduler address, or ClusterError saying how to start one."""
    return kept_state()["address"]


def kept_state() -> dict:
    """The running kept cluster's state (cluster.json), or ClusterError saying how to start one."""
    where = checked_state_dir()
    state = read_state(where)
    if state is None or not alive(int(state["scheduler_pid"])):
        why = ("none was started" if state is None else
               f"its scheduler (pid {state['scheduler_pid']}) has ended: idle for {state['idle_timeout']}, or stopped")
        raise ClusterError(f"cluster=kept: no kept cluster is running ({why}; state in {where}); start one with "
                           f"`svmbench cluster start` (or `python -m pipeline.kept start`), or use cluster=local")
    return state


def kept_connection() -> tuple[str, object]:
    """(address, Security or None) of the kept cluster, for cluster.address `KEPT`."""
    state = kept_state()
    return state["address"], kept_security(state)


def resolve_address(address: str) -> str:
    """cluster.address as given, or the kept cluster's when it is `KEPT`."""
    return kept_address() if address == KEPT else address


def address_security(cluster) -> tuple[str, object]:
    """(address, distributed's Security or None) for cluster=address: the kept cluster's own
    (its state directory's credentials), else cluster.security's files; a plain tcp:// address
    on another machine is warned about once (`security.warn_plain_address`)."""
    if cluster.address == KEPT:
        return kept_connection()
    if tls.mode(cluster) == "files":
        return cluster.address, tls.from_files(cluster.security)
    tls.warn_plain_address(cluster.address)
    return cluster.address, None


# Where the listening sockets of a cluster started here go that no one outside needs: the
# scheduler's HTTP server (its dashboard) by default, and an in-process worker's HTTP server
# (its /metrics), which distributed would otherwise open on every interface.
LOOPBACK = "127.0.0.1:0"


def _local_listening(cluster) -> dict:
    """LocalCluster's arguments for where it listens and who may connect: the scheduler, the
    workers and their nannies on loopback (LocalCluster's default host; threads of this process
    use inproc:// and open no port but their HTTP servers'), the dashboard at
    cluster.dashboard_address (loopback unless named otherwise), and, with worker processes,
    TLS (cluster.security's files, else credentials made for this cluster, in memory): their
    scheduler listens on a loopback port that every local user can reach."""
    dashboard = cluster.dashboard_address
    args = {"dashboard_address": dashboard or LOOPBACK,
            # null: no dashboard, but the scheduler's HTTP server (health, metrics) on loopback
            "scheduler_kwargs": {"dashboard": dashboard is not None}}
    if not cluster.processes:
        args["worker_dashboard_address"] = LOOPBACK
    elif tls.mode(cluster) == tls.NONE:
        tls.warn_none("local")
    else:
        args["security"] = tls.from_files(cluster.security) if tls.mode(cluster) == "files" else tls.temporary()
    return args


def dashboard_line(client, cluster) -> str | None:
    """The run log's dashboard line: where it is, and, on loopback, how to reach it from another
    machine (an SSH tunnel); None without one."""
    import socket
    from urllib.parse import urlsplit
    scheduler = getattr(getattr(client, "cluster", None), "scheduler", None)
    server = getattr(scheduler, "http_server", None)       # a scheduler in this process (local, slurm)
    if server is not None:
        if cluster.dashboard_address is None:
            return None
        host = getattr(server, "address", None)
        link = f"http://{host if host not in (None, '', '0.0.0.0', '::') else socket.gethostname()}:{server.port}/status"
    else:
        link = client.dashboard_link
    if not link:
        return None
    parts = urlsplit(link)
    if not tls.is_loopback(parts.hostname):
        return f"dask dashboard: {link}"
    return (f"dask dashboard: {link} (on this machine's loopback only; from another machine: "
            f"`ssh -L {parts.port}:127.0.0.1:{parts.port} {socket.gethostname()}`, then http://localhost:{parts.port}/status)")


def _adapt_range(kind: str, cluster) -> dict:
    a = cluster.adapt
    # dask-jobqueue scales in jobs (each `processes` workers); dask-kubernetes in workers.
    return ({"minimum_jobs": int(a["minimum"]), "maximum_jobs": int(a["maximum"])} if kind == "slurm"
            else {"minimum": int(a["minimum"]), "maximum": int(a["maximum"])})


def _walltime_s(walltime: str) -> int:
    """SLURM's time formats in seconds: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch --time)."""
    days, _, clock = str(walltime).rpartition("-")
    try:
        parts = [int(p) for p in clock.split(":")]
        if not 1 <= len(parts) <= 3 or days and not days.isdigit():
            raise ValueError
    except ValueError:
        raise ClusterError(f"cluster.jobqueue.walltime={walltime!r}: not a SLURM time "
                           f"(M, M:S, H:M:S, D-H, D-H:M or D-H:M:S)") from None
    if days:
        h, m, sec = parts + [0] * (3 - len(parts))
    else:
        h, m, sec = [0] * (3 - len(parts)) + parts if len(parts) > 1 else [0, parts[0], 0]
    return int(days or 0) * 86400 + h * 3600 + m * 60 + sec


def _lifetime_s(cluster) -> int:
    """A SLURM worker's --lifetime: the walltime less the margin, which must leave room for the stagger."""
    walltime = cluster.jobqueue.get("walltime")
    lifetime = _walltime_s(walltime) - int(cluster.lifetime_margin_s)
    if lifetime <= int(cluster.lifetime_stagger_s):
        raise ClusterError(f"cluster.jobqueue.walltime={walltime}: too short for lifetime_margin_s="
                           f"{cluster.lifetime_margin_s} + lifetime_stagger_s={cluster.lifetime_stagger_s}")
    return lifetime


@contextlib.contextmanager
def slurm_cluster(cluster):
    """dask-jobqueue's SLURMCluster for cluster=slurm (not yet scaled: `open_client` adapts it),
    open for the block (`with slurm_cluster(exp.cluster) as c: print(c.job_script())`).

    Each worker retires (`--lifetime`) `lifetime_margin_s` before the job's walltime, give or take
    `lifetime_stagger_s` (so the workers of a job do not all leave at once), and adaptive scaling
    submits new jobs: SLURM's kill at walltime would instead meet running tasks, lost with their
    worker and counted against `allowed-failures`.

    The scheduler, in this process, listens on the login node's network for the jobs' workers:
    TLS by default (`_slurm_security`), its dashboard on loopback (cluster.dashboard_address)."""
    SLURMCluster = _jobqueue_slurm()
    jq = thaw(cluster.jobqueue)
    # The job's workers run this process's python, so the venv the client plans with (svmbench,
    # numpy, numba, distributed: the versions each row records) is the one that fits; set
    # `python` for another interpreter at the same path on the nodes.
    jq["python"] = jq.get("python") or sys.executable
    lifetime = _lifetime_s(cluster)
    jq["worker_extra_args"] = [*jq.get("worker_extra_args", []),
                               "--lifetime", f"{lifetime}s", "--lifetime-stagger", f"{int(cluster.lifetime_stagger_s)}s"]
    jq["job_script_prologue"] = [*jq.get("job_script_prologue", []), *_thread_exports(cluster),
                                 *(f"export {k}={v}" for k, v in quiet_dask_env().items())]
    dashboard = cluster.dashboard_address
    jq["scheduler_options"] = {"dashboard_address": dashboard or LOOPBACK, "dashboard": dashboard is not None,
                               **(jq.get("scheduler_options") or {})}
    with _slurm_security(cluster, jq) as sec:
        if sec is not None:
            # dask-jobqueue: the scheduler on tls://, and each worker's --protocol tls:// and
            # --tls-ca-file, --tls-cert, --tls-key (the files' paths) in the job script.
            jq["security"] = sec
            jq["job_script_prologue"].append("export DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION=True")
        with SLURMCluster(**{k: v for k, v in jq.items() if v is not None}) as managed:
            yield managed


@contextlib.contextmanager
def _slurm_security(cluster, jq: dict):
    """The Security of a SLURM cluster for the block: cluster.security's files, none for
    cluster.security=none (warned about), else credentials made for this cluster alone
    (`security.credentials_dir`), in a 0700 directory under the jobs' shared file system
    (cluster.jobqueue.shared_temp_directory, else the log directory the jobs write to, else the
    working directory), deleted when the cluster closes."""
    kind = tls.mode(cluster)
    if kind == tls.NONE:
        tls.warn_none("slurm")
        yield None
    elif kind == "files":
        yield tls.from_files(cluster.security)
    else:
        shared = jq.get("shared_temp_directory") or jq.get("log_directory") or os.getcwd()
        with tls.credentials_dir(Path(shared)) as (sec, _):
            yield sec


def _jobqueue_slurm():
    """dask-jobqueue's SLURMCluster, imported without its side effect on Ctrl-C: its runner
    module (0.9) sets SIGINT's handler to `sys.exit` as it is imported, which turned Ctrl-C on a
    cluster=slurm run into a bare SystemExit instead of the run's one line and exit code 130.
    Its call is refused while it imports (`signal.signal` set aside for the import), rather than
    undone after it: a Ctrl-C in between would have met its handler and exited 0."""
    import signal
    real = signal.signal

    def keep_sigint(signum, handler):
        # Refused for SIGINT while it imports: a Ctrl-C meanwhile would run its handler
        # (a bare SystemExit, exit 0) instead of ours.
        return signal.getsignal(signum) if signum == signal.SIGINT else real(signum, handler)
    signal.signal = keep_sigint
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ClusterError("cluster=slurm needs dask-jobqueue: pip install 'svmbench[slurm]'") from None
    finally:
        signal.signal = real
    return SLURMCluster


def _thread_exports(cluster) -> list[str]:
    from .sandbox import THREAD_VARS
    return [f"export {v}={int(cluster.blas_threads)}" for v in THREAD_VARS]


def kubernetes_cluster(cluster):
    """dask-kubernetes' KubeCluster for cluster=kubernetes (the operator must run in the cluster)."""
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError:
        raise ClusterError("cluster=kubernetes needs dask-kubernetes: pip install 'svmbench[kubernetes]'") from None
    tls.warn_once(("kubernetes",), "warning: cluster=kubernetes: dask-kubernetes' operator starts its scheduler "
                  "without TLS: any pod that reaches its service can run code as the workers' user; restrict it "
                  "with a Kubernetes NetworkPolicy (docs: Clusters, Kubernetes)")
    k = thaw(cluster.kubernetes)
    from .sandbox import THREAD_VARS
    env = {**{v: str(cluster.blas_threads) for v in THREAD_VARS}, **quiet_dask_env(), **(k.get("env") or {})}
    return KubeCluster(name=k["name"], image=k["image"], resources=k.get("resources") or {}, env=env,
                       n_workers=int(cluster.adapt["minimum"]))
