"""cluster=sequential runs its tasks in this process under `cluster.blas_threads`, as a sandbox
child runs under its environment: unlimited, OpenBLAS hands a dot product of 20,000 elements to
a second thread, which on a busy machine waits for the scheduler (pipeline.engine.tasks.thread_limits)."""
import numba
import pandas as pd
from threadpoolctl import threadpool_info

from pipeline.experiment.config import compose
from pipeline.run import run

BASE = ["datasets=[toy_blobs]", "datasets.toy_blobs.params.n_samples=60", "cv.folds=2", "cluster=sequential",
        "run.progress=false", "run.trace=false", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]"]


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"]


def test_a_sequential_run_fits_under_blas_threads_and_restores_the_process(tmp_path):
    before = (_blas_threads(), numba.get_num_threads())
    run(compose([f"store.root={tmp_path / 'store'}", *BASE]), tmp_path / "run")
    env = pd.read_parquet(tmp_path / "run" / "results.parquet")
    # Measured in the process while the fits ran: one BLAS and one numba thread (the default).
    assert (env["env_blas_threads"] == 1).all() and (env["env_numba_threads"] == 1).all()
    assert (_blas_threads(), numba.get_num_threads()) == before
