"""What test_stop.py stops: a run on a real `dask scheduler` and `dask worker` (each in a process
group of its own, as test_cluster.py starts them) whose one fit blocks in its sandbox until the
suite is stopped. Not collected by itself (no test_ prefix); test_stop.py runs it through
`make test` and says where `_block` writes its worker's pid (SVMBENCH_STOP_PIDFILE)."""
import os
from pathlib import Path

import pytest

from pipeline.experiment.config import compose
from pipeline.run import run

from .test_cluster import BASE, FAULTS, _dask, _solver


def test_a_fit_that_blocks_until_the_suite_is_stopped(tmp_path):
    pidfile = os.environ.get("SVMBENCH_STOP_PIDFILE")
    if not pidfile:
        pytest.skip("run by test_stop.py")
    with _dask(tmp_path, workers=1, worker_args=("--preload", str(FAULTS))) as address:
        run(compose([f"store.root={tmp_path / 'store'}", *BASE, "cluster=address", f"cluster.address={address}",
                     "run.reference=false", "solvers.dcd.grid.C=[1]",
                     _solver("_block", pidfile=pidfile, release=tmp_path / "never")]), tmp_path / "run")
    raise AssertionError("the blocked fit ended")
