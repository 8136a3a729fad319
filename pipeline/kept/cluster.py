"""`svmbench cluster start|status|stop` (= `python -m pipeline.kept ...`): a local Dask
cluster kept between commands, which `cluster=kept` runs on (the package's docstring says why).

    svmbench cluster start [--workers N] [--idle-timeout 1h] [--warm dcd,smo | --warm all] [--security none]
    svmbench run 'solvers=[dcd]' cluster=kept        # no cluster start, no warm-up
    svmbench cluster status
    svmbench cluster stop

`start` runs `dask scheduler` on 127.0.0.1 (a free port, Dask's scheduler file) and `dask worker`
with one single-threaded worker process per core (as cluster=local), each in a session of its
own (Ctrl-C in the terminal that started them does not reach them), waits for the workers, and
warms their sandboxes for the solvers named (all registered ones by default: on a machine's first
run numba compiles their kernels, the workers taking different solvers at once, said as it goes). The scheduler ends itself after
`--idle-timeout` without a task (Dask's own idle timeout), and its workers with it.
Exit codes: 0, 2 for a cluster already running (start), none running (stop) or one that
did not come up (start: its log is named).

Only the user who started it can use it (a client of a scheduler runs code as that user): every
process of it listens on loopback alone, and the scheduler, workers and nannies take TLS
connections from holders of credentials made for this cluster, in its state directory (mode
0600 in a 0700 directory: `pipeline.engine.security`); `--security none` is the explicit opt-out.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..engine import security as tls
from ..engine.clusters import checked_state_dir, ClusterError
from ..engine.kept import alive, kept_security, not_yours, read_state, state_dir
from .handoff import SOCKET

START_TIMEOUT_S = 120       # for the scheduler and its workers to come up
STOP_TIMEOUT_S = 10         # for them to end once asked, before they are killed


class KeptError(RuntimeError):
    """A kept-cluster command that cannot be done: one line, exit 2."""


def start(workers: int | None = None, idle_timeout: str = "1h", warm: list[str] | None = None,
          blas_threads: int = 1, memory_limit: str = "auto", log=print, launcher: bool = True,
          security: str = "tls", dashboard_address: str = "127.0.0.1:0") -> dict:
    """Start the kept cluster and warm its workers for `warm` (None: every registered solver),
    and its launcher (`pipeline.kept.launcher`) unless `launcher` is false; returns its state
    (what cluster.json holds). security "tls": TLS with credentials made for it in its state
    directory; "none": plain tcp:// on loopback, which any local user can reach (warned)."""
    from distributed import Client

    from ..engine.clusters import LOOPBACK, quiet_dask_env
    from ..engine.warmup import warm_workers
    directory = state_dir()
    why = tls.private_dir(directory)
    if why is not None:
        raise KeptError(not_yours(directory, why))
    state = read_state(directory)
    if state is not None and alive(int(state["scheduler_pid"])):
        raise KeptError(f"a kept cluster is running already at {state['address']} (pid {state['scheduler_pid']}); "
                        f"`svmbench cluster stop` ends it")
    scheduler_file = directory / "scheduler.json"
    for stale in _state_files(directory):
        stale.unlink(missing_ok=True)
    n = workers or os.cpu_count() or 1
    env = {**os.environ, **quiet_dask_env()}
    if security == tls.NONE:
        log("warning: --security none: the kept cluster runs without TLS: its scheduler and workers on 127.0.0.1 "
            "accept any local user's connection, who can then run code as you until it ends")
        credentials = []
    else:
        files = tls.write(tls.temporary(), directory)
        credentials = ["--tls-ca-file", str(files["ca_file"]), "--tls-cert", str(files["cert"]),
                       "--tls-key", str(files["key"])]
        env["DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION"] = "True"     # no plain tcp:// peer either way
    started = time.perf_counter()
    with open(directory / "cluster.log", "ab") as out:
        def spawn(*args, environ=env):
            # A session of its own: the terminal's Ctrl-C and its closing do not reach the cluster.
            return subprocess.Popen([sys.executable, "-m", *args], stdout=out, stderr=subprocess.STDOUT, env=environ,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        # Loopback only: the scheduler, its dashboard, each worker and its nanny, and each worker's
        # HTTP server (its /metrics: `dask worker` opens it on every interface, dashboard or not).
        # The workers take tls:// from the scheduler's address.
        scheduler = spawn("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                          "--protocol", "tcp" if security == tls.NONE else "tls",
                          "--dashboard-address", dashboard_address, "--scheduler-file", str(scheduler_file),
                          "--idle-timeout", idle_timeout, *credentials)
        worker = spawn("distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file), "--nworkers", str(n),
                       "--host", "127.0.0.1", "--nthreads", "1", "--memory-limit", memory_limit, "--no-dashboard",
                       "--dashboard-address", LOOPBACK, *credentials)
        # The launcher (pipeline/kept/launcher.py) imports beside the workers' start and warm-up,
        # in this command's environment: its children run commands as they would run themselves.
        server = spawn("pipeline.kept.launcher", str(directory), str(scheduler.pid), environ=os.environ) \
            if launcher else None
    try:
        address = _wait_for_file(scheduler_file, scheduler, directory)
        state = {"address": address, "scheduler_pid": scheduler.pid, "worker_pid": worker.pid,
                 "launcher_pid": server.pid if server else None, "workers": n,
                 "idle_timeout": idle_timeout, "blas_threads": blas_threads, "security": security,
                 "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        with Client(address, timeout="30s", security=kept_security(state, directory)) as client:
            client.wait_for_workers(n, timeout=START_TIMEOUT_S)
            (directory / "cluster.json").write_text(json.dumps(state, indent=1) + "\n")
            log(f"kept cluster: scheduler {address} and {n} workers up in {time.perf_counter() - started:.1f} s "
                f"(state and log in {directory})")
            names = warm if warm is not None else _all_solvers()
            if names:
                t0 = time.perf_counter()
                from solvers.registry import uncompiled
                new = uncompiled(names)
                log(f"warming {n} workers for {', '.join(names)}" + (
                    f" (compiling the numba kernels of {', '.join(new)}, which numba's cache lacks: a first run's "
                    f"cost, some seconds of CPU a solver, the workers taking different solvers at once)" if new else
                    " (numba's kernels loaded from its cache)"))
                failed = [r for r in client.gather(warm_workers(client, names, blas_threads)) if r is None]
                if failed:
                    raise KeptError(f"{len(failed)} of {n} workers' sandboxes died while warming; see {directory / 'cluster.log'}")
                log(f"warm in {time.perf_counter() - t0:.1f} s")
            if server is not None:
                if _wait_for_launcher(directory / SOCKET, server):
                    log("launcher ready: a command with cluster=kept runs in a child of it, its imports done")
                else:
                    log(f"warning: the launcher did not start (see {directory / 'cluster.log'}); commands on this "
                        f"cluster run with their own imports")
            log(f"run with cluster=kept; `svmbench cluster stop` ends it (it ends itself after {idle_timeout} "
                f"without a task)")
    except BaseException:
        _end(scheduler.pid, worker.pid, *([server.pid] if server else []))
        for path in _state_files(directory):
            path.unlink(missing_ok=True)
        raise
    return state


def _state_files(directory: Path) -> list[Path]:
    """The files of a kept cluster's state that end with it (not its log): a stale one is never
    read as the next cluster's."""
    return [directory / name for name in ("scheduler.json", "cluster.json", SOCKET, *tls.FILES.values())]


def _wait_for_file(path: Path, scheduler: subprocess.Popen, directory: Path) -> str:
    """The scheduler's address once it has written its scheduler file."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if scheduler.poll() is not None:
            raise KeptError(f"the scheduler exited with status {scheduler.returncode} as it started; "
                            f"see {directory / 'cluster.log'}")
        try:
            return json.loads(path.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
    raise KeptError(f"the scheduler wrote no {path.name} within {START_TIMEOUT_S} s; see {directory / 'cluster.log'}")


def _wait_for_launcher(path: Path, launcher: subprocess.Popen) -> bool:
    """Whether the launcher's socket appeared (it has done its imports) before it exited or
    START_TIMEOUT_S passed."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and launcher.poll() is None:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def _all_solvers() -> list[str]:
    from solvers import solver_names as names
    return sorted(names())


def status() -> dict | None:
    """The running kept cluster's state with its workers now, or None."""
    directory = _checked()
    state = read_state(directory)
    if state is None or not alive(int(state["scheduler_pid"])):
        return None
    from distributed import Client
    try:
        with Client(state["address"], timeout="10s", security=kept_security(state, directory)) as client:
            state["workers_now"] = len(client.scheduler_info()["workers"])
    except (OSError, TimeoutError) as exc:
        raise KeptError(f"the kept cluster's scheduler (pid {state['scheduler_pid']}, {state['address']}) does not "
                        f"answer: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; "
                        f"`svmbench cluster stop` ends it") from None
    return state


def stop() -> dict:
    """Shut the kept cluster down (its scheduler closes its workers), killing what has not ended
    within STOP_TIMEOUT_S; its state files go. KeptError when none runs."""
    directory = _checked()
    state = read_state(directory)
    if state is None or not alive(int(state["scheduler_pid"])):
        for path in _state_files(directory):
            path.unlink(missing_ok=True)
        if state is not None:     # the scheduler gone, its workers or launcher not yet
            _end(*(int(state[k]) for k in ("worker_pid", "launcher_pid") if state.get(k) and alive(int(state[k]))))
        raise KeptError("no kept cluster is running (`svmbench cluster start` starts one)")
    from distributed import Client
    try:
        with Client(state["address"], timeout="10s", security=kept_security(state, directory)) as client:
            client.shutdown()
    except (OSError, TimeoutError):
        pass     # killed below
    _end(int(state["scheduler_pid"]), int(state["worker_pid"]), *_launcher(state))
    for path in _state_files(directory):
        path.unlink(missing_ok=True)
    return state


def _checked() -> Path:
    """The state directory, or KeptError if another user can write to it (`checked_state_dir`):
    `stop` would otherwise kill the processes a cluster.json placed there names."""
    try:
        return checked_state_dir()
    except ClusterError as exc:
        raise KeptError(str(exc)) from None


def _launcher(state: dict) -> list[int]:
    """The launcher's pid, asked to end (SIGTERM: it removes its socket), if it runs."""
    pid = state.get("launcher_pid")
    if pid is None or not alive(int(pid)):
        return []
    try:
        os.kill(int(pid), signal.SIGTERM)
    except ProcessLookupError:
        return []
    return [int(pid)]


def _end(*pids: int) -> None:
    """Wait for these processes (and their sessions: the workers' processes and sandboxes) to
    end, then SIGKILL what is left of each session."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)     # each was started as its session's (and group's) leader
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)        # ours (started here): reaped, not left a zombie
        except ChildProcessError:
            pass


def main(argv: list[str] | None = None, prog: str = "python -m pipeline.kept") -> int:
    """The kept cluster's one entry point: `svmbench cluster`, `python -m pipeline.kept`."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    up = sub.add_parser("start", help="start a local cluster kept between commands (run with cluster=kept)")
    up.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    up.add_argument("--idle-timeout", default="1h", help="end after this long without a task (Dask's form: 30m, 2h)")
    up.add_argument("--warm", default="all", help="solvers to warm, comma-separated, 'all' (default) or 'none'")
    up.add_argument("--blas-threads", type=int, default=1, help="BLAS/numba threads per task process (cluster.blas_threads)")
    up.add_argument("--memory-limit", default="auto", help="per worker, Dask's form (default: the machine's memory shared out)")
    up.add_argument("--no-launcher", action="store_true",
                    help="no launcher: commands with cluster=kept do their own imports (saves its ~250 MB)")
    up.add_argument("--security", choices=("tls", tls.NONE), default="tls",
                    help="tls (default): only holders of the credentials made for it, in its state directory, "
                         "connect; none: plain tcp://, which any local user can reach")
    up.add_argument("--dashboard-address", default="127.0.0.1:0",
                    help="the scheduler's dashboard (default: loopback, a free port; reach it with ssh -L)")
    sub.add_parser("status", help="the kept cluster's address, workers and settings")
    sub.add_parser("stop", help="end the kept cluster")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            warm = None if args.warm == "all" else [] if args.warm == "none" else \
                [w.strip() for w in args.warm.split(",") if w.strip()]
            if warm:
                from solvers import solver_names as names
                unknown = sorted(set(warm) - set(names()))
                if unknown:
                    raise KeptError(f"--warm: no such solver {', '.join(unknown)}; registered: {', '.join(sorted(names()))}")
            start(args.workers, args.idle_timeout, warm, args.blas_threads, args.memory_limit, launcher=not args.no_launcher,
                  security=args.security, dashboard_address=args.dashboard_address)
        elif args.action == "status":
            state = status()
            if state is None:
                print(f"no kept cluster is running (state: {state_dir()})")
                return 1
            pid = state.get("launcher_pid")
            launcher = (f"launcher pid {pid}" if pid is not None and alive(int(pid)) and (state_dir() / SOCKET).exists()
                        else "no launcher (commands run with their own imports)")
            print(f"kept cluster at {state['address']}: {state['workers_now']} of {state['workers']} workers, {launcher}, "
                  f"started {state['started']}, ends after {state['idle_timeout']} without a task (state: {state_dir()})")
        else:
            state = stop()
            print(f"kept cluster at {state['address']} stopped")
    except KeptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
