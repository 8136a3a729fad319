"""Session-wide servers for the pipeline tests: a real single-node SLURM (`slurm_cluster.py`),
started once for every test that asks for it and stopped at the session's end."""
import pytest

from .slurm_cluster import slurm as _slurm
from .slurm_cluster import unavailable


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A running SLURM (`slurm_cluster.Slurm`); the test is skipped, saying why, where none can start."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    # dask-jobqueue's first import must be in the main thread (`clusters._jobqueue_slurm`): the
    # tests run their sweeps in threads.
    from pipeline.engine.clusters import _jobqueue_slurm
    _jobqueue_slurm()
    with _slurm(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


# The modules that look at a run's figures or interactive page; every other test that runs the
# pipeline gets its report's tables only (report.figures=false by default): drawing a hundred
# panels per run() call was much of the suite's time, and the figures are the report tests' own.
FIGURE_MODULES = {"test_report", "test_report_interactive", "test_report_panels", "test_report_profiles",
                  "test_report_runs", "test_report_scale", "test_papers", "test_run", "test_run_dir",
                  "test_multirun", "test_paths"}


@pytest.fixture(autouse=True)
def _tables_only_report(request, monkeypatch):
    if request.module.__name__.rsplit(".", 1)[-1] not in FIGURE_MODULES:
        from pipeline.report import build
        monkeypatch.setitem(build.REPORT_DEFAULTS, "figures", False)


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """One dataset store per pytest process (each xdist worker has its own): a dataset is
    materialised once per worker, not once per module. Writes to a store are atomic and keyed by
    content, so tests that share it see each other's datasets and nothing else; a test that needs
    an empty or a damaged store makes its own (tmp_path)."""
    return tmp_path_factory.mktemp("store")
