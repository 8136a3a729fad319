"""The kept cluster (`svmbench cluster start|status|stop`, `cluster=kept`): real `dask scheduler`
and `dask worker` processes on loopback, started and stopped by the command a user runs."""
import os
import subprocess
import sys

import pytest

from pipeline.engine.clusters import ClusterError
from pipeline.engine.kept import alive, read_state
from pipeline.experiment.config import compose
from pipeline.run import run


def run_results(run_dir):
    import pandas as pd
    return pd.read_parquet(run_dir / "results.parquet")



def _cluster(state, *args):
    env = {**os.environ, "SVMBENCH_CLUSTER_DIR": str(state)}
    return subprocess.run([sys.executable, "-m", "pipeline.cluster", *args], capture_output=True, text=True,
                          env=env, timeout=50)


def _sandbox_pids(address):
    from distributed import Client
    from pipeline.engine.kept import kept_security
    from pipeline.engine.sandbox import call_in_sandboxes
    with Client(address, timeout="10s", security=kept_security(read_state())) as client:
        return sorted(pid for pids in client.run(call_in_sandboxes, "os:getpid").values() for pid in pids)


@pytest.mark.slow
def test_a_kept_cluster_runs_commands_warm_and_ends_when_stopped(store, tmp_path, monkeypatch):
    """Started once, its sandboxes warmed; two runs on it use the same warm sandbox processes
    (no start, no warm-up of their own: the point of keeping it) and write their results; a
    second start is refused naming the running one; stop ends every process of it, and a run
    with cluster=kept then fails before any work, in one line saying how to start one."""
    state = tmp_path / "state"
    monkeypatch.setenv("SVMBENCH_CLUSTER_DIR", str(state))
    up = _cluster(state, "start", "--workers", "1", "--warm", "dcd")
    try:
        assert up.returncode == 0, up.stderr
        assert "1 workers up" in up.stdout and "warm in" in up.stdout
        kept = read_state(state)
        assert kept["workers"] == 1 and alive(kept["scheduler_pid"]) and alive(kept["worker_pid"])
        again = _cluster(state, "start")
        assert again.returncode == 2 and f"a kept cluster is running already at {kept['address']}" in again.stderr
        status = _cluster(state, "status")
        assert status.returncode == 0 and f"kept cluster at {kept['address']}: 1 of 1 workers, launcher pid " \
            f"{kept['launcher_pid']}" in status.stdout
        assert "launcher ready" in up.stdout and (state / "launcher.sock").exists()

        warm = _sandbox_pids(kept["address"])
        assert len(warm) == 1      # warmed by `start`: one sandbox for the one worker thread
        overrides = [f"store.root={store}", "datasets=[toy_blobs]", "solvers=[dcd]", "solvers.dcd.grid.C=[1,10]",
                     "cv.folds=2", "run.progress=false", "cluster=kept"]
        for name in ("a", "b"):
            out = run(compose(overrides), tmp_path / name)
            assert out["failed"] == 0 and len(out["results"]) == 4
            assert _sandbox_pids(kept["address"]) == warm      # the same warm process, run after run
        # A command with cluster=kept on its command line runs in a child of the launcher.
        cmd = subprocess.run([sys.executable, "-m", "pipeline", *overrides, f"hydra.run.dir={tmp_path / 'l'}"],
                             capture_output=True, text=True, timeout=60)
        assert cmd.returncode == 0, cmd.stderr
        assert f"imports done ahead by the kept cluster's launcher, pid {kept['launcher_pid']}" in \
            (tmp_path / "l" / "run.log").read_text()
        assert len(run_results(tmp_path / "l")) == 4 and _sandbox_pids(kept["address"]) == warm
    finally:
        down = _cluster(state, "stop")
    assert down.returncode == 0 and "stopped" in down.stdout, down.stderr
    assert not alive(kept["scheduler_pid"]) and not alive(kept["worker_pid"]) and not alive(warm[0])
    assert not alive(kept["launcher_pid"]) and not (state / "launcher.sock").exists()
    assert read_state(state) is None
    with pytest.raises(ClusterError, match=r"cluster=kept: no kept cluster is running \(.*start one with "
                                           r"`svmbench cluster start`"):
        run(compose(overrides), tmp_path / "c")
    assert not (tmp_path / "c").exists()
    gone = _cluster(state, "stop")
    assert gone.returncode == 2 and "no kept cluster is running" in gone.stderr
