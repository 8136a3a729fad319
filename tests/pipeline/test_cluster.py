"""Clusters that survive, against real `dask scheduler` and `dask worker` processes on 127.0.0.1
(one scheduler and two workers shared by the module): a SIGKILLed worker costs no task; a task
that aborts its process, one that outgrows its memory and one that ignores its time limit each
lose only themselves (error with the cause; timeout) while the sweep goes on; an address where
nothing answers is one line within 10 s; sequential, address and an interrupted-then-resumed run
give the same table; TLS; the SLURM job script; the Kubernetes guard."""
import importlib.util
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import contextlib
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import psutil
import pytest

from pipeline.engine import clusters
from pipeline.engine import security as tls
from pipeline.experiment.config import compose, validate
from pipeline.engine.clusters import ClusterError, open_client, probe_cluster, slurm_cluster
from pipeline.engine.sink import finished_keys
from pipeline.results.tables import outcomes
from pipeline.run import run

from .processes import running, written

FAULTS = Path(__file__).with_name("fault_solvers.py")
if "fault_solvers" not in sys.modules:       # the client validates solver names against its registry
    _spec = importlib.util.spec_from_file_location("fault_solvers", FAULTS)
    sys.modules["fault_solvers"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["fault_solvers"])

# The command line's process needs the fault solvers too (its config names them).
_LOAD_FAULTS = ("import importlib.util as u; s = u.spec_from_file_location('fault_solvers', "
                f"{str(FAULTS)!r}); m = u.module_from_spec(s); sys.modules['fault_solvers'] = m; "
                "s.loader.exec_module(m)")

BASE = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=120", "cv=holdout", "solvers=[dcd]",
        "solvers.dcd.grid.C=[0.1,1,10]", "run.progress=false", "run.reference=true"]
DASK = str(Path(sys.executable).parent / "dask")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _wait_for(path: Path, seconds: float = 60) -> str:
    end = time.time() + seconds
    while time.time() < end:
        if path.exists() and path.stat().st_size > 0:
            return path.read_text()
        time.sleep(0.05)
    raise TimeoutError(f"{path} did not appear within {seconds} s")


@contextmanager
def _dask(tmp: Path, *tls: str, workers: int = 2, worker_args=()):
    """A `dask scheduler` and `dask worker --nworkers N` on 127.0.0.1: the scheduler's address."""
    sched_file = tmp / "scheduler.json"
    with running([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
                  "--scheduler-file", str(sched_file), *tls],
                 [DASK, "worker", "--scheduler-file", str(sched_file), "--nthreads", "1", "--nworkers", str(workers),
                  "--host", "127.0.0.1", "--no-dashboard", *worker_args, *tls], env=ENV, ready=written(sched_file)):
        yield json.loads(sched_file.read_text())["address"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two 1-thread workers with an 800 MB memory limit that know the fault solvers."""
    from distributed import Client
    with _dask(tmp_path_factory.mktemp("dask"), worker_args=("--memory-limit", "800MB", "--preload", str(FAULTS))) \
            as address:
        with Client(address, timeout="60s") as c:
            c.wait_for_workers(2, timeout=60)
        yield address


@pytest.fixture
def both_workers(cluster):
    """`cluster` with both workers up again: earlier tests SIGKILL one or push one past its memory
    limit, and its nanny's restart can lag under load; a test counting tasks per worker needs two."""
    from distributed import Client
    with Client(cluster, timeout="60s") as c:
        c.wait_for_workers(2, timeout=60)
    return cluster


def _run(store, run_dir, *overrides):
    return run(compose([f"store.root={store}", *BASE, *overrides]), run_dir)


def _solver(name: str, **params) -> str:
    inner = ", ".join(f"{k}: '{v}'" if isinstance(v, (str, Path)) else f"{k}: {v}" for k, v in params.items())
    return f"+solvers.{name}={{solver: {name}, params: {{loss: hinge{', ' + inner if inner else ''}}}}}"


@pytest.mark.slow
def test_a_sigkilled_worker_costs_no_task(store, cluster, tmp_path):
    """The worker running `_block` is SIGKILLed while it surely runs it: distributed reruns the
    task elsewhere (run.retries), every task ends once, converged, and the killed worker's
    sandbox dies with it."""
    pidfile, release = tmp_path / "worker.pid", tmp_path / "release"
    cfg = compose([f"store.root={store}", *BASE, "cluster=address", f"cluster.address={cluster}",
                   "run.reference=false", _solver("_block", pidfile=pidfile, release=release)])
    out = {}
    runner = threading.Thread(target=lambda: out.update(run(cfg, tmp_path / "run")))
    runner.start()
    worker = psutil.Process(int(_wait_for(pidfile)))
    sandbox = [c for c in worker.children() if "pipeline.engine.sandbox" in " ".join(c.cmdline())]
    pidfile.unlink()
    worker.send_signal(signal.SIGKILL)
    release.touch()
    runner.join(120)
    res = out["results"]
    assert out["summary"].done == out["summary"].total == len(finished_keys(tmp_path / "run"))
    assert len(res) == 4 and (res["status"] == "converged").all() and out["failed"] == 0
    assert pidfile.exists()                       # _block ran again, on another worker
    assert len(sandbox) == 1 and _dead(sandbox[0])


def _dead(proc: psutil.Process) -> bool:
    """Gone, or a zombie: dead, waiting for a reaper (its parent, the worker, was killed)."""
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
@pytest.mark.long     # waits on the workers' own clocks: a spin past its limit and grace, each nanny's restart
def test_abort_memory_and_a_runaway_loop_lose_only_their_own_task(store, cluster, tmp_path):
    spin_pid = tmp_path / "spin.pid"
    out = _run(store, tmp_path / "run", "cluster=address", f"cluster.address={cluster}",
               "run.reference=false", "run.timeout_grace_s=5", _solver("_abort"), _solver("_hog"),
               _solver("_spin", pidfile=spin_pid, time_limit_s=0.5))
    res = out["results"].set_index("solver")
    assert (res.loc["dcd", "status"] == "converged").all() and len(res.loc["dcd"]) == 3
    # A process that aborts: retried once (run.retries=1) in a fresh sandbox, then an error
    # that names the signal.
    assert res.loc["_abort", "status"] == "error"
    assert "died of SIGABRT (signal 6)" in res.loc["_abort", "error"] and "2 attempts" in res.loc["_abort", "error"]
    # Past the worker's memory limit (800 MB, one thread): killed long before its 3 GB.
    assert res.loc["_hog", "status"] == "error", res.loc["_hog", "error"]
    assert "over the limit of 725 MB" in res.loc["_hog", "error"] and "2 attempts" in res.loc["_hog", "error"]
    # A numba loop that never looks at the clock: killed after its 0.5 s + the 5 s grace (a retried sandbox may still be starting under load), a row
    # with status timeout; its process is gone (replaced) and the sweep went on without it.
    assert res.loc["_spin", "status"] == "timeout", res.loc["_spin", "error"]
    assert "did not stop at its time limit" in res.loc["_spin", "error"]
    assert not psutil.pid_exists(int(spin_pid.read_text()))
    assert out["failed"] == 2


def _count_in_flight(monkeypatch) -> list:
    """Record, at each task the client submits, (tasks already back, tasks in flight with it)."""
    import distributed
    seen = []

    class Counting(distributed.as_completed):
        back = 0

        def add(self, future):
            super().add(future)
            seen.append((self.back, self.count()))

        def __next__(self):
            out = super().__next__()
            self.back += 1
            return out
    monkeypatch.setattr(distributed, "as_completed", Counting)
    return seen


@pytest.mark.slow
def test_short_fits_on_dask_are_cut_by_their_pace_into_few_tasks(store, both_workers, tmp_path, monkeypatch):
    """400 fits of a millisecond or so: the first tasks are cut at 1/40 of a worker's share (5
    specs), the next ones by the pace those took (cutting.paced_chunk), so the sweep is a handful
    of Dask tasks (the first wave, three per worker, at 1/40 of a share), not 80, and every fit
    still has its record. Their tasks keep three per worker in flight throughout (`in_flight`)."""
    seen = _count_in_flight(monkeypatch)
    out = _run(store, tmp_path / "run", "cluster=address", f"cluster.address={both_workers}", "run.reference=false",
               "run.warm_start=false", "cv=repeated", "cv.rounds=40", "cv.test_size=0.3",
               "solvers.dcd.grid.C=[0.01,0.03,0.1,0.3,1,3,10,30,100,300]")
    assert len(out["results"]) == 400 and not (out["results"]["status"] == "error").any()
    # 80 cut at 1/40 of a share. The paced chunks follow the measured pace, which a loaded
    # machine slows (21 tasks at load 10): the bound allows that, and is still far below 80.
    assert out["summary"].tasks <= 32, out["summary"].tasks
    assert max(n for back, n in seen if back >= 1) == 6, seen


def test_tasks_of_half_a_second_go_one_per_worker_none_held_for_the_end(store, both_workers, tmp_path, monkeypatch):
    """Fits that run to a 0.6 s time limit: the first wave is three tasks per worker (the pace
    unknown), but once a unit has taken LONG_UNIT_S the client keeps one per worker in flight,
    so no worker holds a second task that the other, done, could not take at the sweep's end.
    (Scenario (d)'s short fits keep three: test_short_fits_on_dask_are_cut_by_their_pace...)"""
    seen = _count_in_flight(monkeypatch)
    slow = ["solvers=[pegasos]", "solvers.pegasos.grid.C=[0.1,0.2,0.3,0.5,1,2,3,5]", "solvers.pegasos.params.tol=1e-12",
            "solvers.pegasos.params.max_iter=1000000000", "solvers.pegasos.params.epochs=100000000",
            "solvers.pegasos.params.time_limit_s=0.6", "run.reference=false", "run.trace=false"]
    out = run(compose([f"store.root={store}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=120", "cv=holdout",
                       "run.progress=false", "cluster=address", f"cluster.address={both_workers}", *slow]), tmp_path / "run")
    assert len(out["results"]) == 8 and set(out["results"]["status"]) == {"timeout"}, out["results"]["status"]
    assert max(n for back, n in seen if back == 0) == 6                 # the first wave: 3 x 2 workers
    assert seen[-1][0] >= 1 and max(n for back, n in seen if back >= 1) <= 2, seen


def test_an_address_where_nothing_answers_is_one_line_within_10_s(store, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed again when the block ends: nothing listens
    args = [f"store.root={store}", *BASE, "cluster=address", f"cluster.address=tcp://127.0.0.1:{port}"]
    message = (f"cluster.address=tcp://127.0.0.1:{port}: no Dask scheduler answers there (Connection refused); "
               f"start one with `dask scheduler` or fix the address")
    # In the run, before any work (the command's own start-up, seconds on a loaded machine, aside).
    t0 = time.monotonic()
    with pytest.raises(ClusterError) as err:
        run(compose(args), tmp_path / "in_process")
    assert time.monotonic() - t0 < 10 and str(err.value) == message
    proc = subprocess.run([sys.executable, "-m", "pipeline", *args, f"hydra.run.dir={tmp_path / 'run'}"],
                          env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {message}"     # bad input
    # Refused before any work: no run directory at all (the run makes it after planning).
    assert not (tmp_path / "in_process").exists() and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_same_table_on_address_and_after_a_sequential_run_interrupted_then_resumed(store, cluster, tmp_path):
    block = _solver("_block", pidfile=tmp_path / "block.pid", release=tmp_path / "release")
    args = [f"store.root={store}", *BASE, "solvers.dcd.params.tol=1e-3", block]
    # Interrupted: a run that SIGKILLs mid-sweep (at _block, the last task, every dcd task saved).
    cli = (f"import runpy, sys; sys.argv[0] = 'pipeline'; {_LOAD_FAULTS}; "
           "runpy.run_module('pipeline', run_name='__main__', alter_sys=True)")
    proc = subprocess.Popen([sys.executable, "-c", cli, *args, "cluster=sequential",
                             f"hydra.run.dir={tmp_path / 'resumed'}"], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(tmp_path / "block.pid")
    proc.kill()
    proc.wait()
    saved = len(finished_keys(tmp_path / "resumed"))
    (tmp_path / "release").touch()
    resumed = run(compose([*args, "cluster=sequential"]), tmp_path / "resumed")
    assert 0 < saved < resumed["summary"].total and resumed["summary"].skipped == saved
    # The resumed run is sequential: against the address cluster's run, both claims at once.
    run(compose([*args, "cluster=address", f"cluster.address={cluster}"]), tmp_path / "address")
    assert (resumed["results"]["status"] == "converged").all() and len(resumed["results"]) == 4
    pd.testing.assert_frame_equal(*(outcomes(pd.read_parquet(tmp_path / d / "results.parquet"))
                                    for d in ("resumed", "address")))
    # One BLAS and one numba thread per task process on a cluster, as measured in the process.
    env = pd.read_parquet(tmp_path / "address" / "results.parquet")
    assert (env["env_blas_threads"] == 1).all() and (env["env_numba_threads"] == 1).all()


def _certificates(tmp: Path) -> dict:
    """A key and a certificate that is its own CA (scheduler, worker and client share them), as
    files: what the pipeline makes for each cluster it starts (`security.temporary`)."""
    tmp.mkdir(exist_ok=True)
    return tls.write(tls.temporary(), tmp)


@pytest.mark.slow
def test_tls_scheduler_and_worker_on_loopback(store, tmp_path, monkeypatch):
    files = _certificates(tmp_path)
    tls = ["--protocol", "tls", "--tls-ca-file", str(files["ca_file"]), "--tls-cert", str(files["cert"]),
           "--tls-key", str(files["key"])]
    with _dask(tmp_path, *tls, workers=1) as address:
        assert address.startswith("tls://127.0.0.1:")
        # Without certificates, or with a certificate of another CA, the client is refused in
        # one line naming the address (the scheduler checks the client: TLS both ways).
        with pytest.raises(ClusterError, match=f"cluster.address={address}: a tls:// scheduler needs"):
            with open_client(compose(["cluster=address", f"cluster.address={address}"]).cluster):
                pass
        strange = _certificates(tmp_path / "other")
        monkeypatch.setattr(clusters, "CONNECT_TIMEOUT_S", 2)     # a refused handshake is retried till then
        with pytest.raises(ClusterError, match=f"cluster.address={address}: could not connect"):
            with open_client(compose(["cluster=address", f"cluster.address={address}",
                                      *(f"cluster.security.{k}={v}" for k, v in strange.items())]).cluster):
                pass
        out = _run(store, tmp_path / "run", "cluster=address", f"cluster.address={address}",
                   *(f"cluster.security.{k}={v}" for k, v in files.items()))
        assert len(out["results"]) == 3 and (out["results"]["status"] == "converged").all()


def test_slurm_job_script(monkeypatch, tmp_path, caplog):
    if importlib.util.find_spec("dask_jobqueue") is None:   # not imported here: its import sets a SIGINT handler
        pytest.skip("dask_jobqueue is not installed")
    monkeypatch.chdir(tmp_path)       # the jobs' log directory (slurm-logs) is relative to it
    cfg = compose(["cluster=slurm", "cluster.jobqueue.queue=short", "cluster.jobqueue.account=proj7",
                   "cluster.jobqueue.walltime=02:00:00", "cluster.jobqueue.memory=8GB"])
    with slurm_cluster(validate(cfg).cluster) as slurm:
        script = slurm.job_script()
        # TLS with credentials made for this cluster: in a 0700 directory of the log directory
        # (on the file system the jobs share), each file 0600; the scheduler's dashboard on loopback.
        credentials = list((tmp_path / "slurm-logs").glob(".svmbench-tls-*"))
        assert len(credentials) == 1 and stat.S_IMODE(credentials[0].stat().st_mode) == 0o700
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in credentials[0].iterdir()}
        assert modes == {"ca.pem": 0o600, "cert.pem": 0o600, "key.pem": 0o600}
        assert slurm.scheduler_address.startswith("tls://")
        assert slurm.scheduler.http_server.address == "127.0.0.1"
    assert not credentials[0].exists()       # gone with the cluster
    lines = script.splitlines()
    tls_args = (f"--protocol tls:// --tls-ca-file {credentials[0]}/ca.pem --tls-cert {credentials[0]}/cert.pem "
                f"--tls-key {credentials[0]}/key.pem")
    assert tls_args in script and "export DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION=True" in lines, script
    for directive in ("#SBATCH -p short", "#SBATCH -A proj7", "#SBATCH -t 02:00:00", "#SBATCH --cpus-per-task=4"):
        assert directive in lines, (directive, script)
    assert any(line.startswith("#SBATCH --mem=") for line in lines)
    launch = next(line for line in lines if "distributed.cli.dask_worker" in line or "dask worker" in line)
    # 4 one-thread workers; each retires 1200 s (+-240 s) before the 2 h walltime.
    assert "--nthreads 1" in launch and "--nworkers 4" in launch and "--memory-limit 1.86GiB" in launch   # 8 GB / 4
    assert "--lifetime 6000s --lifetime-stagger 240s" in launch
    # The workers run the client's python (its venv), and say what they do in one file per job.
    assert launch.split()[0] == sys.executable
    assert "#SBATCH -J svmbench-worker" in lines and "#SBATCH -e slurm-logs/svmbench-worker-%J.err" in lines
    assert "export OPENBLAS_NUM_THREADS=1" in lines and "export NUMBA_NUM_THREADS=1" in lines
    # Dask's instruments quieted on the job's workers too (clusters.QUIET_DASK_CONFIG).
    assert "export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False" in lines
    assert "export DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL=1s" in lines
    with pytest.raises(ClusterError, match="walltime=00:05:00: too short"):
        probe_cluster(compose(["cluster=slurm", "cluster.jobqueue.walltime=00:05:00"]).cluster)
    # cluster.security=none: plain tcp://, no credentials, and a warning naming the risk.
    monkeypatch.setattr(tls, "_WARNED", set())
    with slurm_cluster(validate(compose(["cluster=slurm", "cluster.security=none"])).cluster) as slurm:
        assert slurm.scheduler_address.startswith("tcp://") and "--tls-" not in slurm.job_script()
    assert not list((tmp_path / "slurm-logs").glob(".svmbench-tls-*"))
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith(
        "warning: cluster.security=none: cluster=slurm runs without TLS: its scheduler listens on the login "
        "node's network")]


def test_importing_dask_jobqueue_leaves_ctrl_c_to_the_run():
    """dask-jobqueue 0.9 sets SIGINT's handler to sys.exit as it is imported: Ctrl-C on a
    cluster=slurm run would end it with a bare SystemExit, not the run's one line and exit 130."""
    code = ("import signal; from pipeline.engine.clusters import _jobqueue_slurm; _jobqueue_slurm(); "
            "import dask_jobqueue.runner; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    from .test_operation import default_sigint
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60,
                         preexec_fn=default_sigint)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


@pytest.mark.parametrize("walltime, seconds", [("90", 5400), ("90:30", 5430), ("2:00:00", 7200), ("1-2", 93600),
                                               ("1-2:30", 95400), ("1-0:0:5", 86405)])
def test_slurm_walltime_formats(walltime, seconds):
    assert clusters._walltime_s(walltime) == seconds
    with pytest.raises(ClusterError, match=r"walltime='1:2:3:4': not a SLURM time"):
        clusters._walltime_s("1:2:3:4")


def test_kubernetes_without_its_package_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_kubernetes", None)     # as if not installed
    monkeypatch.setitem(sys.modules, "dask_kubernetes.operator", None)
    with pytest.raises(ClusterError, match=r"cluster=kubernetes needs dask-kubernetes: pip install 'svmbench\[kubernetes\]'"):
        with open_client(compose(["cluster=kubernetes"]).cluster):
            pass


def test_a_reference_killed_at_its_hard_limit_leaves_f_star_unknown(tmp_path):
    """A reference whose sandbox was killed has no f* (a timeout row of its own, without one):
    its fits get no suboptimality rather than a KeyError or a made-up value."""
    from pipeline.engine.sink import write_shard
    from pipeline.results.tables import write_tables
    killed = {"key": "ref-x", "kind": "reference", "status": "timeout", "error": "killed after 62.0 s",
              "spec": {"key": "ref-x", "kind": "reference"}}
    spec = {"kind": "fit", "data": {"entry": "d", "name": "d", "fingerprint": "f"}, "solver": "dcd",
            "solver_entry": "dcd", "solver_version": "5", "family": "dual_cd", "fold": 0, "seed": 1,
            "problem": {"loss": "hinge", "intercept": "none", "C": 1.0}, "reference_key": "ref-x"}
    write_shard(tmp_path, [killed, {"key": "fit-x", "kind": "fit", "status": "converged", "primal_objective": 1.0,
                                    "spec": spec}])
    write_tables(tmp_path)
    row = pd.read_parquet(tmp_path / "results.parquet").iloc[0]
    assert pd.isna(row["f_star"]) and pd.isna(row["rel_suboptimality"]) and row["f_star_status"] is None


@pytest.mark.slow
def test_a_runaway_loop_on_a_local_cluster_is_a_timeout_too(store, tmp_path):
    """cluster=local takes the same path as address: its workers' sandboxes kill the runaway fit.
    The workers are threads of this process, which registered the fault solvers; their sandboxes
    import them as they import any plugin (no Dask preload, which would run in this process)."""
    spin_pid = tmp_path / "spin.pid"
    out = _run(store, tmp_path / "run", "cluster=local", "cluster.n_workers=1", "solvers.dcd.grid.C=[1]",
               "run.reference=false", "run.timeout_grace_s=2", _solver("_spin", pidfile=spin_pid, time_limit_s=0.5))
    res = out["results"].set_index("solver")
    assert res.loc["_spin", "status"] == "timeout" and res.loc["dcd", "status"] == "converged"
    assert not psutil.pid_exists(int(spin_pid.read_text()))


def _instruments(server) -> dict:
    """A Dask server's instruments: is its profiler on, and the periods (ms) of its tick and system monitor."""
    return {"profile": "profile" in server.periodic_callbacks, "tick_ms": server.periodic_callbacks["tick"].callback_time,
            "monitor_ms": server.periodic_callbacks["monitor"].callback_time}


def _worker_instruments(dask_worker) -> dict:
    return {**_instruments(dask_worker), "memory_monitor_s": dask_worker.memory_manager.memory_monitor_interval}


def _scheduler_instruments(dask_scheduler) -> dict:
    return _instruments(dask_scheduler)


def test_local_cluster_runs_without_dasks_profiler_and_with_slow_ticks():
    """cluster=local starts its scheduler and workers with QUIET_DASK_CONFIG (issue 10, 7b: the
    profiler and 20 ms ticks took CPU from the fits), a key the user's Dask config sets keeps
    the user's value, and this process's config is left as it was."""
    import dask
    cfg = compose(["cluster=local", "cluster.n_workers=1", "cluster.dashboard_address=null"])
    with dask.config.set({"distributed.admin.system-monitor.interval": "2s"}):   # the user's own
        with open_client(validate(cfg).cluster) as client:
            workers = list(client.run(_worker_instruments).values())
            scheduler = client.run_on_scheduler(_scheduler_instruments)
        assert dask.config.get("distributed.admin.tick.interval") == "20ms"
    assert workers == [{"profile": False, "tick_ms": 1000, "monitor_ms": 2000, "memory_monitor_s": 1.0}]
    assert scheduler == {"profile": False, "tick_ms": 1000, "monitor_ms": 2000}


def _memory_thresholds(dask_worker) -> tuple:
    manager = dask_worker.memory_manager
    return manager.memory_target_fraction, manager.memory_spill_fraction, manager.memory_pause_fraction


def test_local_workers_are_threads_of_the_client_unless_processes_is_set():
    """cluster=local's workers are threads of the command's process (the fits run in sandbox
    processes either way: a worker process only relayed them, at about 1.5 s of CPU each to
    start), with Dask's memory thresholds off, since they would measure the whole client;
    cluster.processes=true gives each worker a process of its own, as before."""
    cfg = ["cluster=local", "cluster.n_workers=2", "cluster.dashboard_address=null"]
    with open_client(validate(compose(cfg)).cluster) as client:
        pids = set(client.run(os.getpid).values())
        thresholds = set(client.run(_memory_thresholds).values())
        limits = set(client.run(lambda dask_worker: dask_worker.memory_manager.memory_limit).values())
    assert pids == {os.getpid()}
    assert thresholds == {(False, False, False)}
    assert len(limits) == 1 and limits.pop() > 0       # the sandboxes' share comes from it
    with open_client(validate(compose([*cfg, "cluster.processes=true"])).cluster) as client:
        pids = set(client.run(os.getpid).values())
        # Ctrl-C reaches the whole process group: a worker process ignores it (its preload,
        # sandbox.dask_setup), and so does one its nanny restarts, so that only the client acts.
        ignored = set(client.run(lambda: signal.getsignal(signal.SIGINT) is signal.SIG_IGN).values())
        client.restart(wait_for_workers=True)
        ignored |= set(client.run(lambda: signal.getsignal(signal.SIGINT) is signal.SIG_IGN).values())
    assert len(pids) == 2 and os.getpid() not in pids
    assert ignored == {True}


@pytest.mark.slow
def test_ctrl_c_ends_a_fit_running_under_a_worker_thread_at_once(store, tmp_path):
    """A worker that is a thread of this process closes only once its task returns (distributed
    waits for its executor): Ctrl-C during a fit that never ends (a numba loop, no clock) must
    end its sandbox, not wait out the fit's time limit, and save what finished."""
    import _thread
    spin_pid = tmp_path / "spin.pid"
    seen = []

    def interrupt():
        seen.append(int(_wait_for(spin_pid)))
        seen.append(time.monotonic())
        _thread.interrupt_main()
        # Were the sandbox left running, the run would wait for it for ever: end it after 15 s,
        # so that the test fails on the time it took instead of hanging.
        with contextlib.suppress(psutil.Error):
            psutil.Process(seen[0]).wait(timeout=15)
        with contextlib.suppress(psutil.Error):
            psutil.Process(seen[0]).kill()

    # Python's own handler, which interrupt_main calls: an earlier test in this process may have
    # imported dask_jobqueue, which replaces it (test_importing_dask_jobqueue_leaves_ctrl_c_to_the_run).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    with contextlib.ExitStack() as restore, pytest.raises(KeyboardInterrupt, match="tasks saved"):
        restore.callback(signal.signal, signal.SIGINT, previous)
        _run(store, tmp_path / "run", "cluster=local", "cluster.n_workers=1", "solvers.dcd.grid.C=[1]",
             "run.reference=false", _solver("_spin", pidfile=spin_pid, time_limit_s=600))
    assert time.monotonic() - seen[1] < 10
    # The spinning sandbox is gone: killed, and reaped by the worker thread that waited on it.
    assert not psutil.pid_exists(seen[0])
