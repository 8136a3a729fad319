"""cluster=slurm on a real SLURM (issue 32): munged, slurmctld and slurmd on loopback
(`slurm_cluster.py`, the session's `slurm` fixture), dask-jobqueue submitting worker jobs with
sbatch. A sweep gives the same table as cluster=sequential, and so does one during which a
job is cancelled with scancel, one whose workers retire at their --lifetime before the
walltime (and new jobs finish it), and one whose client is SIGKILLed and which is resumed on new
jobs: every task ends exactly once, and the log says what happened, one line each."""
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from pipeline.experiment.config import compose
from pipeline.engine.sink import finished_keys
from pipeline.results.shards import read_shard
from pipeline.results.tables import outcomes, shard_files
from pipeline.run import run

from .test_cluster import _LOAD_FAULTS, FAULTS

# One slurmctld for the session: under pytest-xdist every test of this file runs on one worker
# (`make test` passes --dist loadgroup).
pytestmark = pytest.mark.xdist_group("slurm")


def _sweep(n_c: int, seconds: float) -> list[str]:
    """dcd at two C and `n_c` fits of fault_solvers._pause (dcd after a sleep of `seconds`): fits
    that are deterministic, so the table must equal cluster=sequential's, and long enough that
    a job can end while one runs."""
    grid = ",".join(f"{0.01 * 100 ** (i / max(1, n_c - 1)):.6g}" for i in range(n_c))     # 0.01 to 1
    return ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=120", "cv=holdout", "solvers=[dcd]",
            f"+solvers._pause={{solver: _pause, params: {{loss: hinge, seconds: {seconds}}}, grid: {{C: [{grid}]}}}}",
            "solvers.dcd.grid.C=[0.1,1]", "run.progress=false", "run.reference=false",
            # Each fit its own task: these tests are about jobs that end mid-sweep. A warm C path
            # is one task, and on two workers its last points are cut into a segment that starts
            # cold (cutting.cut_paths), so n_iter would depend on how many jobs had joined.
            "run.warm_start=false"]


SWEEP = _sweep(16, 0.4)       # 18 fits, 6.4 s of sleep
N_FITS = 18


@pytest.fixture(scope="module")
def expected(store, tmp_path_factory):
    """SWEEP's table under cluster=sequential: what every SLURM run of it must give."""
    run_dir = tmp_path_factory.mktemp("sequential")
    run(compose([f"store.root={store}", *SWEEP, "cluster=sequential"]), run_dir)
    return _table(run_dir)


def _slurm_args(slurm, jobs: Path, walltime="00:30:00", margin_s=60, stagger_s=1, maximum=2,
                faults=True) -> list[str]:
    """cluster=slurm on the test SLURM: one-core, one-worker jobs of 1 GB, at most `maximum` at a
    time, their logs in `jobs`, their workers loading the fault solvers; a worker whose client
    is gone exits 20 s later (dask-jobqueue's default: 60 s; also how long a worker may take to start)."""
    return ["cluster=slurm", f"cluster.jobqueue.queue={slurm.partition}", "cluster.jobqueue.cores=1",
            "cluster.jobqueue.processes=1", "cluster.jobqueue.memory=1GB", f"cluster.jobqueue.walltime={walltime}",
            f"cluster.jobqueue.log_directory={jobs}", f"cluster.lifetime_margin_s={margin_s}",
            f"cluster.lifetime_stagger_s={stagger_s}", "cluster.adapt.minimum=1", f"cluster.adapt.maximum={maximum}",
            "+cluster.jobqueue.death_timeout=20", *([f"+cluster.jobqueue.worker_extra_args=[--preload,{FAULTS}]"]
                                                     if faults else [])]


def _table(run_dir: Path) -> pd.DataFrame:
    return outcomes(pd.read_parquet(run_dir / "results.parquet"))


def _check_every_task_once(run_dir: Path, expected: pd.DataFrame, n=N_FITS) -> None:
    """Every task has exactly one record in the shards (none lost, none written twice), and the
    table is cluster=sequential's."""
    keys = [record["key"] for shard in shard_files(run_dir) for record in read_shard(shard)]
    assert len(keys) == n and sorted(keys) == sorted(finished_keys(run_dir))
    pd.testing.assert_frame_equal(_table(run_dir), expected)


def _in_thread(cfg, run_dir, said):
    out = {}
    runner = threading.Thread(target=lambda: out.update(run(cfg, run_dir, echo=said.append)), daemon=True)
    runner.start()
    return runner, out


def _wait(predicate, timeout=90.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def _lines(said, pattern):
    return [line for line in said if re.search(pattern, line)]


@pytest.mark.slow
def test_a_sweep_on_slurm_gives_the_sequential_table(slurm, store, expected, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    said = []
    out = run(compose([f"store.root={store}", *SWEEP, *_slurm_args(slurm, tmp_path / "jobs")]), tmp_path / "run",
              echo=said.append)
    assert out["failed"] == 0 and out["summary"].done == N_FITS
    _check_every_task_once(tmp_path / "run", expected)
    # Both jobs' cores were asked for at once (adaptive scaling sees the queued tasks' seconds).
    joined = _lines(said, r"^worker SLURMCluster-\d \(SLURM job \d+\) joined$")
    assert len(joined) == 2, said
    # Each job's log, where the docs say: its worker ran this venv's python and met the scheduler.
    logs = sorted((tmp_path / "jobs").glob("svmbench-worker-*.err"))
    assert len(logs) >= 2 and all("Registered to:" in log.read_text() for log in logs)
    job = re.search(r"SLURM job (\d+)", joined[0]).group(1)
    script = slurm.command("scontrol", "write", "batch_script", job, "-")
    assert f"{sys.executable} -m distributed.cli.dask_worker" in script, script
    # Over TLS, by default: the workers met a tls:// scheduler with the credentials made for it,
    # which went with the cluster.
    assert re.search(r"dask_worker tls://\S+ .*--protocol tls:// --tls-ca-file \S+/ca\.pem", script), script
    assert all(re.search(r"Registered to: +tls://", log.read_text()) for log in logs)
    assert not list((tmp_path / "jobs").glob(".svmbench-tls-*"))


@pytest.mark.slow
def test_the_slurm_scheduler_refuses_clients_without_its_credentials(slurm, store, tmp_path, monkeypatch):
    """While a sweep runs (held by a `_block` fit): its credentials are 0600 files in a 0700
    directory of the jobs' log directory; a client with them is served, and the scheduler,
    which listens on the network for the jobs, refuses a plain tcp:// client and a TLS client
    with a certificate of another CA."""
    from distributed import Client
    from distributed.security import Security

    from pipeline.engine.security import files_in, from_files
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    release, jobs = tmp_path / "release", tmp_path / "jobs"
    block = (f"+solvers._block={{solver: _block, params: {{loss: hinge, pidfile: '{tmp_path / 'pid'}', "
             f"release: '{release}'}}}}")
    said = []
    runner, out = _in_thread(compose([f"store.root={store}", *SWEEP[:4], block, "solvers.dcd.grid.C=[0.1]",
                                      "run.progress=false", "run.reference=false",
                                      *_slurm_args(slurm, jobs, maximum=1)]), tmp_path / "run", said)
    try:
        _wait(lambda: (tmp_path / "pid").exists())         # the sweep is running, on a job's worker
        directory, = jobs.glob(".svmbench-tls-*")
        assert oct(directory.stat().st_mode & 0o777) == oct(0o700)
        assert {p.name: oct(p.stat().st_mode & 0o777) for p in directory.iterdir()} == \
            {name: oct(0o600) for name in ("ca.pem", "cert.pem", "key.pem")}
        job = re.search(r"SLURM job (\d+)", _lines(said, "joined")[0]).group(1)
        address = re.search(r"dask_worker (\w+://\S+)", slurm.command("scontrol", "write", "batch_script", job, "-"))[1]
        host_port = address.split("://")[1]
        for other, security in (("tcp://" + host_port, None), ("tls://" + host_port, Security.temporary())):
            with pytest.raises((OSError, TimeoutError)):
                Client(other, security=security, timeout="3s")
        with Client(address, security=from_files(files_in(directory)), timeout="20s") as client:
            assert address.startswith("tls://") and len(client.scheduler_info()["workers"]) == 1
    finally:
        release.touch()
        runner.join(120)
    assert out["failed"] == 0 and out["summary"].done == 2
    assert not directory.exists()


@pytest.mark.slow
def test_a_job_cancelled_mid_sweep_loses_no_task(slurm, store, expected, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    said = []
    runner, out = _in_thread(compose([f"store.root={store}", *SWEEP, *_slurm_args(slurm, tmp_path / "jobs")]),
                             tmp_path / "run", said)
    # Mid-sweep: a task has ended, and a worker runs one now.
    _wait(lambda: shard_files(tmp_path / "run"))
    victim = int(re.search(r"SLURM job (\d+)", _lines(said, "joined")[0]).group(1))
    slurm.command("scancel", str(victim))
    runner.join(120)
    assert slurm.job(victim)["JobState"] == "CANCELLED"
    assert out["failed"] == 0 and out["summary"].done == N_FITS
    _check_every_task_once(tmp_path / "run", expected)
    left = _lines(said, rf"\(SLURM job {victim}\) left")
    assert len(left) == 1 and "lost (its job cancelled, past its walltime, or its node gone)" in left[0], said


@pytest.mark.slow    # two generations of jobs
@pytest.mark.long     # SLURM's least walltime is a minute; its workers retire 20 s into it
def test_workers_retire_before_the_walltime_and_new_jobs_finish_the_sweep(slurm, store, tmp_path, monkeypatch):
    """A walltime of one minute (SLURM's least) and each worker's --lifetime 20 +- 1 s (time
    for a new worker to warm and run the dcd fits even on a loaded machine): the worker holding
    the one `_block` fit retires while it runs, and a new job, asked for by the adaptive
    scaling, runs it again once the test lets it end."""
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    release = tmp_path / "release"
    block = (f"+solvers._block={{solver: _block, params: {{loss: hinge, pidfile: '{tmp_path / 'pid'}', "
             f"release: '{release}'}}}}")
    sweep = [f"store.root={store}", *SWEEP[:4], block, "solvers.dcd.grid.C=[0.1,1]", "run.progress=false",
             "run.reference=false", "run.warm_start=false"]
    said = []
    runner, out = _in_thread(compose([*sweep, *_slurm_args(slurm, tmp_path / "jobs", walltime="1", margin_s=40,
                                                           stagger_s=1)]), tmp_path / "run", said)
    # _block has started, and a worker retired with unfinished tasks: then it may end.
    _wait(lambda: (tmp_path / "pid").exists()
          and _lines(said, r"left: retired \(its --lifetime, before its job's walltime\); its \d unfinished"))
    release.touch()
    runner.join(120)
    assert out["failed"] == 0 and out["summary"].done == 3
    run(compose([*sweep, "cluster=sequential"]), tmp_path / "sequential")
    _check_every_task_once(tmp_path / "run", _table(tmp_path / "sequential"), 3)
    retired = _lines(said, r"left: retired \(its --lifetime")
    first = int(re.search(r"SLURM job (\d+)", retired[0]).group(1))
    job = slurm.job(first)
    assert job["JobState"] == "COMPLETED" and job["TimeLimit"] == "00:01:00"   # ended by its worker, not SLURM
    assert len(_lines(said, "joined")) > len(retired)      # replacements


@pytest.mark.slow    # a client process, its jobs, and a second run on new jobs
@pytest.mark.long     # a client killed, its jobs ended by SLURM, and new jobs for the resumed run
def test_a_killed_client_is_resumed_on_new_jobs(slurm, store, expected, tmp_path):
    run_dir = tmp_path / "run"
    args = [f"store.root={store}", *SWEEP, *_slurm_args(slurm, tmp_path / "jobs")]
    cli = (f"import runpy, sys; sys.argv[0] = 'pipeline'; {_LOAD_FAULTS}; "
           "runpy.run_module('pipeline', run_name='__main__', alter_sys=True)")
    env = {**slurm.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    client = subprocess.Popen([sys.executable, "-c", cli, *args, f"hydra.run.dir={run_dir}"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait(lambda: len(shard_files(run_dir)) >= 2)
        first_jobs = set(slurm.jobs())
    finally:
        os.killpg(client.pid, signal.SIGKILL)
        client.wait()
    saved = len(finished_keys(run_dir))
    assert 0 < saved < N_FITS
    # Its jobs' workers would exit death_timeout after losing their scheduler; the docs' recipe
    # ends them at once, freeing the cores for the new allocation.
    slurm.command("scancel", "--name=svmbench-worker")
    said = []
    os.environ["SLURM_CONF"] = str(slurm.conf)
    try:
        out = run(compose(args), run_dir, echo=said.append)
    finally:
        del os.environ["SLURM_CONF"]
    assert out["failed"] == 0 and out["summary"].skipped == saved and out["summary"].done == N_FITS - saved
    _check_every_task_once(run_dir, expected)
    assert _lines(said, rf"taking over the stale lock of run directory {run_dir} .*pid {client.pid}: process")
    assert _lines(said, rf"^resuming: {saved} of {N_FITS} tasks already have shards")
    # The killed client's jobs ended; the resumed run's are new.
    resumed_jobs = {int(j) for line in _lines(said, "joined") for j in re.findall(r"SLURM job (\d+)", line)}
    assert resumed_jobs and not resumed_jobs & first_jobs
    assert all(slurm.job(job)["JobState"] != "RUNNING" for job in first_jobs)


@pytest.mark.slow    # a multirun of two Hydra jobs, each with its report
def test_a_multirun_s_jobs_share_one_slurm_cluster(slurm, store, tmp_path):
    """`python -m pipeline -m`: the second Hydra job runs on the first one's SLURMCluster (kept by
    clusters.keep_clusters), not on a cluster of its own: a second cluster would name its first
    worker SLURMCluster-0 again."""
    sweep, jobs = tmp_path / "sweep", tmp_path / "jobs"
    env = {**slurm.env, "PYTHONPATH": os.pathsep.join(sys.path), "OPENBLAS_NUM_THREADS": "1"}
    # run.chunk changes no task key: the two Hydra jobs run the same fits.
    p = subprocess.run([sys.executable, "-m", "pipeline", "-m", f"store.root={store}", "datasets=[toy_blobs]",
                        "datasets.toy_blobs.max_rows=120", "cv=holdout", "solvers=[dcd]", "solvers.dcd.grid.C=[0.1,1]",
                        "run.progress=false", "run.reference=false", "run.chunk=1,2", f"hydra.sweep.dir={sweep}",
                        *_slurm_args(slurm, jobs, maximum=1, faults=False)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert all(len(pd.read_parquet(sweep / job / "results.parquet")) == 2 for job in ("0", "1"))
    names = [re.search(r"Worker name: +(\S+)", log.read_text()).group(1) for log in sorted(jobs.glob("*.err"))]
    assert names and len(set(names)) == len(names), names
