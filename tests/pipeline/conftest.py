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
    # dask-jobqueue's first import must be in the main thread (`execute._jobqueue_slurm`): the
    # tests run their sweeps in threads.
    from pipeline.engine.execute import _jobqueue_slurm
    _jobqueue_slurm()
    with _slurm(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster
