"""Operation (issue #11): one run per run directory (a lock, stale locks taken over), Ctrl-C and
SIGKILL of the client with real `python -m pipeline` processes, the dry run, run.log."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.engine import runlock
from pipeline.experiment.config import compose
from pipeline.run import run
from pipeline.engine.runlock import LockError, run_lock
from pipeline.results.shards import read_shard

ROOT = Path(__file__).resolve().parents[2]
# Fits that take about half a second each (pegasos runs to its time limit), so a signal lands mid-sweep.
SLOW = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=200", "solvers=[pegasos]",
        "solvers.pegasos.grid.C=[0.1,0.2,0.3,0.5,1,2,3,5,10,20]", "solvers.pegasos.params.tol=1e-12",
        "solvers.pegasos.params.max_iter=1000000000", "solvers.pegasos.params.epochs=100000000",
        "solvers.pegasos.params.time_limit_s=0.5", "cv.folds=2",
        "run.reference=false"]


def _start(store, run_dir, *overrides):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "pipeline", f"store.root={store}", *SLOW, f"hydra.run.dir={run_dir}", *overrides]
    # Its own process group: the test sends the signal to the group, as a terminal's Ctrl-C does.
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                            start_new_session=True, preexec_fn=default_sigint)


def default_sigint():
    """A child's SIGINT as a terminal gives it, whatever this process's is (a test run as a
    background job of a script starts with SIGINT ignored, and Python keeps an inherited ignore:
    the CLI under test would ignore Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _shards(run_dir):
    # One file per task; these sweeps of 20 single fits run one fit per task under
    # cluster=sequential, and on Dask several once the pace is known (cutting.paced_chunk).
    return sorted((Path(run_dir) / "shards").glob("*.parquet"))


def _saved(run_dir) -> int:
    """Records in the shards."""
    return sum(len(read_shard(shard)) for shard in _shards(run_dir))


def _interrupted_when(ready, store, run_dir, *overrides):
    """(process, stdout, stderr) of the command sent SIGINT, to its process group as a terminal's
    Ctrl-C is, once ready() holds."""
    p = _start(store, run_dir, *overrides)
    try:
        _wait_for(ready)
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    return p, out, err


def _run(store, run_dir, *overrides, echo=None):
    return run(compose([f"store.root={store}", "cluster=sequential", "run.progress=false", *SLOW, *overrides]),
               run_dir, echo=echo)


# ------------------------------------------------------------------------------------ the lock
def test_a_live_lock_refuses_a_second_run_naming_dir_host_and_pid(store, tmp_path):
    with run_lock(tmp_path):
        with pytest.raises(LockError) as err:
            _run(store, tmp_path)
        # The CLI's check before Hydra writes its .hydra/ into the other run's directory.
        from pipeline.preflight import preflight
        overrides = [f"store.root={store}", *SLOW, f"hydra.run.dir={tmp_path}"]
        with pytest.raises(LockError):
            preflight(compose(overrides), overrides)
    message = str(err.value)
    assert f"run directory {tmp_path} is in use" in message
    assert f"host {socket.gethostname()}, pid {os.getpid()}" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == []     # released, and nothing written


def _plant_lock(run_dir, host, pid, age_s):
    path = runlock.lock_path(run_dir)
    path.write_text(json.dumps({"host": host, "pid": pid, "started": "then"}))
    os.utime(path, (time.time() - age_s, time.time() - age_s))


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("host, pid, age_s, stale", [
    ("this", "dead", 0, "is gone"),                                   # crashed here: its pid is gone
    ("other-host", 123, runlock.STALE_AFTER_S + 60, "no heartbeat"),   # elsewhere: heartbeat too old
    ("other-host", 123, 1, None),                                      # elsewhere, beating: refused
    ("this", "alive", runlock.STALE_AFTER_S + 60, None),               # here, alive: refused whatever its age
])
def test_a_stale_lock_is_taken_over_saying_so_and_a_live_one_refused(tmp_path, host, pid, age_s, stale):
    host = socket.gethostname() if host == "this" else host
    pid = {"dead": _dead_pid(), "alive": os.getpid()}.get(pid, pid)
    _plant_lock(tmp_path, host, pid, age_s)
    said = []
    if stale is None:
        with pytest.raises(LockError, match=f"host {host}, pid {pid}"), run_lock(tmp_path, said.append):
            pass
        assert runlock.read_owner(tmp_path)["pid"] == pid       # left in place
        return
    with run_lock(tmp_path, said.append):
        assert runlock.read_owner(tmp_path)["pid"] == os.getpid()
    assert len(said) == 1 and f"taking over the stale lock of run directory {tmp_path}" in said[0]
    assert f"pid {pid}: " in said[0] and stale in said[0]
    assert not runlock.lock_path(tmp_path).exists()


# Another host's lock between one missed heartbeat and STALE_AFTER_S: its owner may be a live run
# on a node whose filesystem stalled for a few heartbeats, so taking it over would let two runs
# write one directory. Only an age past STALE_AFTER_S (ten heartbeats) makes it stale.
@pytest.mark.parametrize("age_s", [
    runlock.HEARTBEAT_S + 1,            # one missed heartbeat
    3 * runlock.HEARTBEAT_S,            # a few
    runlock.STALE_AFTER_S - 1,          # just inside the window
])
def test_another_host_s_lock_a_few_heartbeats_old_is_refused(tmp_path, age_s):
    _plant_lock(tmp_path, "other-host", 123, age_s)
    said = []
    with pytest.raises(LockError, match="host other-host, pid 123"), run_lock(tmp_path, said.append):
        pass
    assert said == [] and runlock.read_owner(tmp_path)["pid"] == 123
    with pytest.raises(LockError):
        runlock.check_free(tmp_path)


def test_another_host_s_lock_turns_stale_at_stale_after_s_and_not_before():
    owner, now = {"host": "other-host", "pid": 123}, 1_000_000.0
    assert runlock.stale_reason(owner, now - runlock.STALE_AFTER_S, now) is None           # at the boundary
    assert runlock.stale_reason(owner, now - runlock.STALE_AFTER_S + 0.5, now) is None
    reason = runlock.stale_reason(owner, now - runlock.STALE_AFTER_S - 0.5, now)           # just past it
    assert reason == f"no heartbeat for {runlock.STALE_AFTER_S + 0.5:.0f} s (> {runlock.STALE_AFTER_S:.0f} s)"


def test_without_hard_links_the_lock_is_an_exclusive_create(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(runlock.os, "link", no_links)
    with run_lock(tmp_path):
        assert runlock.read_owner(tmp_path)["pid"] == os.getpid()
        with pytest.raises(LockError), run_lock(tmp_path):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_heartbeat_keeps_a_long_run_s_lock_fresh(tmp_path, monkeypatch):
    """Another host takes a lock over once it is STALE_AFTER_S old, so a live run must touch it
    several times within that: its age, sampled through 1.5 x STALE_AFTER_S (both intervals
    scaled down 100-fold, kept in proportion), never passes half of it. A heartbeat as slow as
    STALE_AFTER_S lets the age reach it."""
    assert runlock.HEARTBEAT_S <= runlock.STALE_AFTER_S / 5
    monkeypatch.setattr(runlock, "HEARTBEAT_S", runlock.HEARTBEAT_S / 100)
    monkeypatch.setattr(runlock, "STALE_AFTER_S", runlock.STALE_AFTER_S / 100)
    ages = []
    with run_lock(tmp_path):
        path = runlock.lock_path(tmp_path)
        end = time.monotonic() + 1.5 * runlock.STALE_AFTER_S
        while time.monotonic() < end:
            ages.append(time.time() - path.stat().st_mtime)
            time.sleep(0.02)
    assert max(ages) < runlock.STALE_AFTER_S / 2, max(ages)


# ------------------------------------------------------------------------------------ signals
@pytest.mark.slow   # a real LocalCluster: client, scheduler and a worker process start and stop
def test_ctrl_c_prints_one_line_exits_130_and_no_process_prints_a_traceback(store, tmp_path):
    # Fits of 1 s (SLOW's 0.5 s): after the first shard at least 15 s of the sweep are left, so the
    # signal surely lands inside execute, even on a loaded machine.
    # After the first shard the worker is inside its second task: the moment a worker without
    # SIGINT ignored would print its KeyboardInterrupt traceback.
    p, out, err = _interrupted_when(lambda: len(_shards(tmp_path)) >= 1, store, tmp_path, "cluster=local",
                                    "cluster.n_workers=1", "solvers.pegasos.params.time_limit_s=1")
    n = _saved(tmp_path)
    assert p.returncode == 130, err[-3000:]
    assert err.strip().splitlines() == [
        f"interrupted: {n} of 20 tasks saved in {tmp_path}; run the same command to resume"], err[-3000:]
    assert "Traceback" not in out and "Error" not in out, out[-3000:]
    assert not runlock.lock_path(tmp_path).exists()
    assert (tmp_path / "run.log").read_text().rstrip().endswith(err.strip())   # how the run ended


# Twelve fits of half a second in one task (two C paths of six, run.chunk=12): what an interrupt
# keeps is what the task's fits finished, not whole tasks.
ONE_TASK = ["solvers.pegasos.grid.C=[0.1,0.3,1,3,10,30]", "run.chunk=12"]


def _records(run_dir) -> list[str]:
    """The keys of the records in the shards, one per record."""
    return [r["key"] for shard in _shards(run_dir) for r in read_shard(shard)]


@pytest.mark.slow   # a real LocalCluster in a command, then the rest of the sweep: about 15 s
def test_ctrl_c_mid_task_keeps_the_fits_it_finished_and_the_resume_runs_only_the_rest(store, tmp_path):
    """Ctrl-C while the run's one task is half done, on the default cluster (a worker thread
    of the client, its fits in a sandbox child): the fits that ended are saved, each once (the
    sandbox streams them to the client as they end: fits of half a second are each sent at
    once), the interrupted line counts them, and the resume runs exactly the others."""
    seen = [0]

    def three_saved():
        seen[0] = len(_records(tmp_path))
        return seen[0] >= 3
    p, out, err = _interrupted_when(three_saved, store, tmp_path, "cluster=local", "cluster.n_workers=1", *ONE_TASK)
    seen = seen[0]
    saved = _records(tmp_path)
    assert p.returncode == 130, err[-3000:]
    assert 3 <= seen <= len(saved) < 12 and len(set(saved)) == len(saved), (seen, saved)
    assert err.strip().splitlines() == [
        f"interrupted: {len(saved)} of 12 tasks saved in {tmp_path}; run the same command to resume"], err[-3000:]
    out = _run(store, tmp_path, *ONE_TASK)
    assert (out["summary"].skipped, out["summary"].done) == (len(saved), 12 - len(saved))
    assert len(out["results"]) == 12 and out["results"]["key"].is_unique
    assert sorted(_records(tmp_path)) == sorted(out["results"]["key"])   # each fit's record written once


@pytest.mark.slow
def test_a_killed_client_keeps_the_fits_its_running_task_finished(store, tmp_path):
    """cluster=sequential, the run's one task in the client itself, killed outright (SIGKILL:
    nothing runs after it): the fits that ended more than FLUSH_S before the kill are on disk,
    and the next run computes exactly the others."""
    p = _start(store, tmp_path, "cluster=sequential", *ONE_TASK)
    try:
        _wait_for(lambda: len(_records(tmp_path)) >= 2)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate(timeout=60)
    saved = _records(tmp_path)
    assert 2 <= len(saved) < 12 and len(set(saved)) == len(saved)
    out = _run(store, tmp_path, *ONE_TASK)
    assert (out["summary"].skipped, out["summary"].done) == (len(saved), 12 - len(saved))
    assert len(out["results"]) == 12 and sorted(_records(tmp_path)) == sorted(out["results"]["key"])


def test_sigkill_leaves_only_whole_shards_and_the_next_run_cleans_up_and_takes_over(store, tmp_path):
    p = _start(store, tmp_path, "cluster=sequential")
    try:
        _wait_for(lambda: len(_shards(tmp_path)) >= 2)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate(timeout=60)
    for shard in _shards(tmp_path):           # every shard is a whole record (one per task here)
        assert read_shard(shard)[0]["status"] in ("converged", "budget", "timeout", "max_iter")
    assert runlock.read_owner(tmp_path)["pid"] == p.pid     # its lock stayed behind
    # A kill inside write_shard leaves a temporary file that no reader takes for a shard.
    partial = tmp_path / "shards" / f".{_shards(tmp_path)[0].name}.0123abcd.tmp"
    partial.write_text('{"key": "fit-0", "status": "conv')
    done = len(_shards(tmp_path))
    said = []
    dry = _run(store, tmp_path, "run.dry_run=true", echo=said.append)
    assert dry["done"] == done and dry["todo"] == 20 - done and partial.exists()   # a dry run writes nothing
    assert "  fits: 20 (pegasos 20)" in said and f"{done} of 20 tasks already done" in said[-1]
    out = _run(store, tmp_path, "solvers.pegasos.grid.C=[0.1]", echo=said.append)   # 2 fits, into the same dir
    assert any(f"taking over the stale lock of run directory {tmp_path} (host {socket.gethostname()}, pid {p.pid}"
               in s for s in said), said
    # Ours, and often one the kill itself left mid-write.
    assert re.search(r"removed [12] partial shard files", " ".join(said)), said
    assert not list((tmp_path / "shards").glob(".*.tmp"))
    assert out["summary"].total == 2 and not runlock.lock_path(tmp_path).exists()
    log = (tmp_path / "run.log").read_text()     # written without Hydra too, with the summary
    assert "2 tasks:" in log and "report:" in log


def test_a_run_that_fails_after_planning_ends_its_run_log_with_the_error(store, tmp_path):
    """The run directory holds a shard that is not one (a torn copy): the resumed run stops
    with ShardError once the directory is its own, and its run.log ends with the error's line,
    the one `python -m pipeline` prints."""
    from pipeline.results.shards import ShardError
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "fit-0.parquet").write_text("not parquet")
    with pytest.raises(ShardError) as err:
        _run(store, tmp_path, "solvers.pegasos.grid.C=[0.1]")
    last = (tmp_path / "run.log").read_text().splitlines()[-1]
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] error: (.*)", last).group(1) == str(err.value)
    assert (tmp_path / "config.yaml").exists()


# ------------------------------------------------------------------------------------ dry run
def test_a_dry_run_plans_builds_nothing_and_names_a_missing_dataset(tmp_path, capsys):
    from pipeline.command import Command
    empty = tmp_path / "store"
    assert Command([f"store.root={empty}", "datasets=[toy_blobs]", "solvers=[dcd,liblinear]", "run.dry_run=true",
                    f"hydra.run.dir={tmp_path / 'run'}"]).run() == 0
    out = capsys.readouterr().out
    assert "dataset toy_blobs: not in the store; the run would build it first" in out
    assert "fits: 0" in out
    assert not empty.exists() and not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------ progress
def test_the_progress_bar_counts_failures_and_shows_an_eta(store, tmp_path, monkeypatch):
    import io

    from tqdm import tqdm

    from pipeline.engine import execute
    text = io.StringIO()
    monkeypatch.setattr(execute, "_progress", lambda total, enabled: tqdm(total=total, file=text, mininterval=0))
    # qp refuses a dual larger than max_memory_mb: both fits fail, as error rows.
    out = run(compose([f"store.root={store}", "cluster=sequential", "datasets=[toy_blobs]",
                       "datasets.toy_blobs.max_rows=60", "solvers=[qp]", "solvers.qp.grid.C=[1.0]", "cv.folds=2",
                       "run.reference=false", "solvers.qp.params.max_memory_mb=0.01"]), tmp_path)
    assert out["failed"] == 2
    final = text.getvalue().split("\r")[-1]
    assert "2/2" in final and "failed=2" in final and "<" in final     # done/total, failures, elapsed<ETA
