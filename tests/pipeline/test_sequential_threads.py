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


def test_the_run_log_gives_a_paper_readme_its_time_and_load(tmp_path):
    """run.log's machine and execute lines, which every paper README quotes (papers.common.cost_lines)."""
    from pipeline.papers.common import cost_lines, run_timing

    run(compose([f"store.root={tmp_path / 'store'}", *BASE]), tmp_path / "run")
    t = run_timing(tmp_path / "run")
    assert t["sessions"] == 1 and t["tasks_run"] == 2 and t["cores"] >= 1
    assert len(t["load_start"]) == 3 and len(t["load_end"]) == 3 and 0 < t["execute_s"] <= t["report_s"]
    text = "\n".join(cost_lines(tmp_path / "run", str(tmp_path / "store"),
                                pd.read_parquet(tmp_path / "run" / "results.parquet")))
    assert "fit its 2 tasks" in text and "load average" in text and "downloads nothing (its data are generated)" in text
