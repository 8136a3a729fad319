"""Worker memory at scale (issue 18): a task process holds a fold of a large dataset, not the
dataset beside it. Each test fails when its mechanism is taken away (folds read from the store
row group by row group, room made in the fold cache before a fold is cut)."""
import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.data import store
from pipeline.engine import tasks
from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.run import materialise_datasets, run

ROOT = Path(__file__).resolve().parents[2]


def _blocks(n_rows: int, n_features: int, per_row: int, seed: int, block: int = 8192):
    """Sparse text-like rows in blocks (the parent never holds the whole matrix), labelled by a
    planted linear model so that dcd converges in a few passes."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n_features)
    for start in range(0, n_rows, block):
        n = min(block, n_rows - start)
        cols = np.sort(rng.integers(0, n_features, size=(n, per_row)), axis=1)
        vals = rng.random((n, per_row))
        X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * per_row + 1, per_row)),
                          shape=(n, n_features))
        yield X, np.where(np.asarray(X @ w) > 0, 1.0, -1.0)


def _plan(root, name, *overrides):
    cfg = compose([f"store.root={root}", f"datasets=[{name}]", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]",
                   "cluster=sequential", "run.progress=false", "run.reference=false", *overrides])
    exp = validate(cfg)
    return build_plan(exp, materialise_datasets(exp))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    store.write_dataset_chunks(root, "small", _blocks(600, 40, 6, seed=1, block=100), 40, source={},
                               row_group_size=128)
    return root


@pytest.mark.parametrize("overrides", [["cv=holdout"], ["cv=kfold_test", "cv.folds=3"],
                                       ["cv.folds=2", "datasets.small.max_rows=300", "datasets.small.scale=maxabs"]])
def test_folds_read_from_the_store_are_the_folds_cut_in_memory(small, monkeypatch, overrides):
    plan = _plan(small, "small", *overrides)
    data = next(iter(plan.fits.values()))["data"]

    def folds(stream_bytes):
        monkeypatch.setattr(tasks, "STREAM_DATASET_BYTES", stream_bytes)
        tasks.clear_caches()
        return [tasks._cached_fold(str(small), data, f) for f in range(len(plan.datasets["small"]["folds"]))]

    in_memory, streamed = folds(1 << 40), folds(0)
    assert tasks.split_data(str(small), data)[0].stream      # the second run did stream
    for a, b in zip(in_memory, streamed, strict=True):
        for x, z in zip(a, b, strict=True):
            if sp.issparse(x):     # same rows in the same order, bit for bit, canonical arrays
                assert (x != z).nnz == 0 and z.indices.dtype == np.int32 and z.has_sorted_indices
            else:
                np.testing.assert_array_equal(x, z)


def test_each_task_records_its_peak_memory_and_the_run_says_it_against_the_csr(small, tmp_path):
    cfg = compose([f"store.root={small}", "datasets=[small]", "solvers=[dcd]", "solvers.dcd.grid.C=[0.1,1.0]",
                   "cv.folds=2", "cluster=sequential", "run.progress=false", "run.reference=false",
                   "run.warm_start=false"])
    # dcd's kernels compiled (or loaded from numba's cache) first: a cold compile inside the first
    # task adds 50-75 MB to its peak, which is not what this test is about.
    from solvers.registry import get_solver, warm
    warm(get_solver("dcd"))
    np.ones(40_000_000).sum()     # 305 MiB held and freed before the run: no task's peak
    before = tasks.peak_rss_mb()
    out = run(cfg, tmp_path / "run")
    peaks = out["results"]["env_peak_rss_mb"]
    # Each task's peak starts at its own start (VmHWM reset), not at the process's worst moment.
    assert peaks.notna().all() and (peaks > 50).all() and (peaks < before - 200).all(), (before, list(peaks))
    summary = out["summary"]
    assert f"; worker peak RSS {peaks.max():.0f} MB (dcd: in this process)" in summary.line()
    assert "the largest dataset's CSR" not in summary.line()       # 43 KB of data: no ratio
    summary.csr_mb = 100.0
    assert f"(dcd: in this process) = {peaks.max() / 100:.2f}x the largest dataset's CSR (100 MB)" in summary.line()


def test_the_fold_cache_makes_room_before_it_cuts_a_fold(small, monkeypatch):
    data = next(iter(_plan(small, "small", "cv.folds=3").fits.values()))["data"]
    tasks.clear_caches()
    first = tasks._cached_fold(str(small), data, 0)
    # Room for one fold: the next one may not be cut while the first is still held.
    monkeypatch.setattr(tasks, "FOLD_CACHE_BYTES", tasks._nbytes(first) + 1000)
    held = []
    extract = tasks._extract_fold
    monkeypatch.setattr(tasks, "_extract_fold", lambda *a: held.append(len(tasks._FOLDS)) or extract(*a))
    tasks._cached_fold(str(small), data, 1)
    assert held == [0] and len(tasks._FOLDS) == 1


# What a task process does before its solver's passes (the fold read from the store, cut and
# kept in the fold cache, and the Problem over it), in a fresh process: its peak RSS (VmHWM) above
# what it held after its imports. The solver's own arrays are O(rows + features) (dcd's alpha and
# w); the whole task on full RCV1 is measured by bench_scale.
_MEASURE = textwrap.dedent("""
    import pickle, sys
    from pipeline.engine import tasks
    import sklearn.model_selection, solvers     # what every task imports, loaded
    spec, root, stream_bytes = pickle.load(open(sys.argv[1], "rb"))
    tasks.STREAM_DATASET_BYTES = stream_bytes
    def rss(field):
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith(field)) / 1024
    before = rss("VmRSS:")
    X, y, _, _, _ = tasks.fold_data(root, spec["data"], spec["fold"])
    problem = tasks.problem_of(spec["problem"], X, y)
    print(rss("VmHWM:") - before, problem.X is X, flush=True)
""")


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """300k x 5,000 with 40 entries a row: 12M entries, a 138 MiB CSR."""
    root = tmp_path_factory.mktemp("store")
    store.write_dataset_chunks(root, "large", _blocks(300_000, 5000, 40, seed=2), 5000, source={},
                               row_group_size=16384)
    return root


@pytest.mark.slow
@pytest.mark.long     # a 138 MiB CSR written, then read twice: large by nature, so that RSS tells a fold from the whole
def test_a_task_on_a_large_dataset_holds_its_fold_not_the_dataset_beside_it(large, tmp_path):
    spec = next(iter(_plan(large, "large", "cv=holdout").fits.values()))
    csr_mb = store.csr_nbytes(store.dataset_info(large, "large")) / 2**20
    procs = []
    for mode, stream_bytes in (("streamed", 0), ("whole", 1 << 40)):
        path = tmp_path / f"{mode}.pkl"
        path.write_bytes(pickle.dumps((spec, str(large), stream_bytes)))
        procs.append(subprocess.Popen([sys.executable, "-c", _MEASURE, str(path)], cwd=ROOT,
                                      stdout=subprocess.PIPE, text=True))
    (streamed, shared), (whole, _) = [p.communicate()[0].split() for p in procs]
    streamed, whole = float(streamed), float(whole)
    assert shared == "True"     # the Problem reads the fold's arrays, no copy
    # The fold (train + test rows: the CSR once) plus a fixed allowance for one row group in
    # flight, Arrow's buffers and the fold's bookkeeping (measured 80-100 MB, whatever the data's
    # size). The whole dataset beside its fold adds the CSR again, which the measurement must see
    # for the bound to mean anything.
    bound = csr_mb + 125
    assert streamed < bound < whole, json.dumps({"streamed": streamed, "whole": whole, "csr_mb": csr_mb})
