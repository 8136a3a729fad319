"""End to end: the same sweep on sequential and a LocalCluster gives the same results (a real
`dask scheduler` + `dask worker` on loopback, and the faults, are in test_cluster.py); a rerun
recomputes nothing; a solver that raises becomes error rows while the others finish; the report
rebuilds from Parquet alone."""
import shutil

import numpy as np
import pandas as pd
import pytest

import solvers
from .shard_edit import drop_records
from pipeline.experiment.config import compose
from pipeline.report import main as report_main
from pipeline.results.tables import outcomes, read_shards
from pipeline.run import run

SWEEP = ["datasets=[toy_blobs,breast_cancer]", "solvers=[dcd]", "datasets.toy_blobs.max_rows=160",
         "datasets.breast_cancer.max_rows=160", "cv.folds=3", "solvers.dcd.grid.C=[0.1,1]",
         "solvers.dcd.params.tol=1e-3", "run.progress=false", "run.reference=true"]
OUTCOMES = ["key", "dataset", "solver", "C", "fold", "status", "n_iter", "primal_objective", "dual_objective",
            "duality_gap", "kkt_violation", "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test",
            "f_star", "rel_suboptimality"]


def _run(store, run_dir, *overrides):
    cfg = compose([f"store.root={store}", *SWEEP, *overrides])
    return run(cfg, run_dir)


@pytest.fixture(scope="module")
def sequential(store, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("seq")
    out = _run(store, run_dir, "cluster=sequential")
    return run_dir, out


def test_sequential_run_writes_everything(sequential):
    run_dir, out = sequential
    res = pd.read_parquet(run_dir / "results.parquet")
    assert len(res) == 2 * 2 * 3 and (res["status"] == "converged").all()
    assert res["f_star"].notna().all() and (res["rel_suboptimality"] > -1e-9).all()
    # The certified f* is below every fit's primal, and dcd at tol 1e-3 lands close to it.
    assert (res["rel_suboptimality"] < 1e-2).all()
    traces = pd.read_parquet(run_dir / "traces.parquet")
    assert set(traces["key"]) == set(res["key"])
    assert (run_dir / "report.md").exists() and (run_dir / "figures" / "suboptimality_vs_time.png").exists()
    md = (run_dir / "report.md").read_text()
    assert "toy_blobs" in md and "breast_cancer" in md and "Cross-validation" in md


def _same_results(a_dir, b_dir):
    """Every column but timings and where it ran (env_*) is the same on every cluster."""
    a, b = (outcomes(pd.read_parquet(d / "results.parquet")) for d in (a_dir, b_dir))
    assert set(OUTCOMES) <= set(a.columns)
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.slow
def test_local_cluster_gives_the_same_table(store, sequential, tmp_path):
    _run(store, tmp_path, "cluster=local", "cluster.n_workers=2")
    _same_results(sequential[0], tmp_path)


def test_rerun_recomputes_nothing(store, sequential, tmp_path):
    run_dir = tmp_path / "again"
    shutil.copytree(sequential[0] / "shards", run_dir / "shards")
    before = {p.name: p.stat().st_mtime_ns for p in (run_dir / "shards").iterdir()}
    out = _run(store, run_dir, "cluster=sequential")
    assert out["summary"].done == 0 and out["summary"].skipped == out["summary"].total == 24
    assert {p.name: p.stat().st_mtime_ns for p in (run_dir / "shards").iterdir()} == before
    _same_results(sequential[0], run_dir)


def test_interrupted_run_resumes_only_missing(store, sequential, tmp_path):
    run_dir = tmp_path / "partial"
    shutil.copytree(sequential[0] / "shards", run_dir / "shards")
    victims = sorted(r["key"] for r in read_shards(run_dir) if r["kind"] == "fit")[:3]
    drop_records(run_dir, victims)
    out = _run(store, run_dir, "cluster=sequential")
    assert out["summary"].done == 3
    # The kept shards are untouched; a recomputed point of a C path may start from another
    # point than in the first run (its predecessor's model is not stored), so it is the same
    # optimum within the solver's tolerance, not the same bits.
    a = pd.read_parquet(sequential[0] / "results.parquet").set_index("key")
    b = pd.read_parquet(run_dir / "results.parquet").set_index("key")
    redone = set(victims)
    kept = sorted(set(a.index) - redone)
    pd.testing.assert_frame_equal(a.loc[kept, OUTCOMES[1:]], b.loc[kept, OUTCOMES[1:]])
    redone = sorted(redone)
    assert (b.loc[redone, "status"] == "converged").all()
    np.testing.assert_allclose(b.loc[redone, "primal_objective"], a.loc[redone, "primal_objective"], rtol=1e-2)


def _explode(problem, *, budget, recorder, warm_start=None, when="always"):
    raise RuntimeError("boom: the solver failed on purpose")


solvers.register(solvers.SolverSpec(name="_explode", family="test", fit=_explode,
                                    params={"when": solvers.Param("always", "str")}))


def test_solver_error_becomes_rows_and_the_sweep_goes_on(store, tmp_path):
    conf = tmp_path / "explode.yaml"
    cfg = compose([f"store.root={store}", *SWEEP, "cluster=sequential",
                   "+solvers._explode={solver: _explode, params: {loss: hinge}}"])
    out = run(cfg, tmp_path / "run")
    res = out["results"]
    bad = res[res["solver"] == "_explode"]
    good = res[res["solver"] == "dcd"]
    assert len(bad) == 2 * 3 and (bad["status"] == "error").all()
    assert bad["error"].str.contains("RuntimeError: boom").all()
    assert bad["error"].str.contains("Traceback").all()
    assert len(good) == 12 and (good["status"] == "converged").all()
    assert out["summary"].failed == 6
    assert "Failures" in (tmp_path / "run" / "report.md").read_text()
    del conf


def test_report_rebuilds_from_parquet_alone(sequential, tmp_path, capsys):
    run_dir = tmp_path / "copy"
    run_dir.mkdir()
    for name in ("results.parquet", "traces.parquet"):
        shutil.copy(sequential[0] / name, run_dir / name)
    assert report_main([str(run_dir)]) == 0
    assert (run_dir / "report.md").read_text() == (sequential[0] / "report.md").read_text().replace(
        sequential[0].name, run_dir.name)
    assert (run_dir / "report.html").exists()
    assert report_main([str(tmp_path / "nowhere")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.parametrize("strategy", ["ovr", "ovo", "ordinal"])
def test_multiclass_sweep_over_an_ingested_dataset(store, tmp_path, strategy):
    """A 3-class store entry (as `ingest` makes) swept with each multiclass strategy."""
    from sklearn.datasets import load_iris
    from pipeline.data.store import exists, write_dataset
    if not exists(store, "iris_test"):
        X, y = load_iris(return_X_y=True)
        write_dataset(store, "iris_test", X, y, source={"test": "sklearn load_iris"})
    cfg = compose([f"store.root={store}", "datasets=[toy_blobs]", "solvers=[dcd]", "datasets.toy_blobs.builder=iris_test",
                   "datasets.toy_blobs.scale=standard", "cluster=sequential", "cv.folds=3", "run.progress=false",
                   "solvers.dcd.grid.C=[1.0]", f"+solvers.dcd.params.multi_class={strategy}"])
    out = run(cfg, tmp_path / strategy)
    res = out["results"]
    assert len(res) == 3 and (res["status"] != "error").all(), res["error"].tolist()
    assert (res["n_classes"] == 3).all() and res["f_star"].isna().all()
    assert res["test_accuracy"].mean() > 0.8
    import json
    cm = np.array(json.loads(res["confusion_test"].iloc[0]))
    assert cm.shape == (3, 3) and cm.sum() == res["n_test"].iloc[0]
