"""cv.kind=kfold_test (bertini's train / validation / test): a stratified held-out test set,
stratified k-fold on the rest, every fold's model also scored on the held-out rows; and solver
entries restricted to some datasets (`solvers.X.datasets`)."""
import json

import numpy as np
import pandas as pd
import pytest

from pipeline.engine import tasks
from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.experiment.specs import heldout_rows, make_folds
from pipeline.engine.execute import execute
from pipeline.results.tables import write_tables
from pipeline.run import materialise_datasets

CV = {"kind": "kfold_test", "folds": 4, "shuffle": True, "test_size": 0.25}


def test_heldout_rows_are_in_no_fold_and_the_folds_partition_the_rest():
    y = np.array([1.0] * 60 + [-1.0] * 20)
    held = heldout_rows(y, CV, seed=3)
    folds = make_folds(y, CV, seed=3)
    # Stratified: a quarter of each class, whatever the seed (a plain shuffle strays from 5 of 20).
    assert len(held) == 20 and all((y[heldout_rows(y, CV, seed=s)] < 0).sum() == 5 for s in range(10))
    assert len(folds) == 4
    for tr, va in folds:
        assert not set(tr) & set(va) and not set(held) & (set(tr) | set(va))
        assert (y[va] < 0).sum() in (3, 4)                                 # 15 negatives over 4 folds
    assert sorted(np.concatenate([va for _, va in folds]).tolist() + held.tolist()) == list(range(80))
    # Deterministic by seed, another seed draws another test set; the other kinds hold out nothing.
    assert (heldout_rows(y, CV, seed=3) == held).all()
    assert all((a[1] == b[1]).all() for a, b in zip(folds, make_folds(y, CV, seed=3)))
    assert set(heldout_rows(y, CV, seed=4)) != set(held)
    assert heldout_rows(y, {"kind": "kfold", "folds": 4, "shuffle": True}, seed=3).size == 0


@pytest.mark.parametrize("override, match", [
    ("cv.test_size=0", r"cv.test_size=0"), ("cv.test_size=1.5", r"cv.test_size=1.5: must be a number in \(0, 1\)"),
    ("cv.folds=1", r"cv.folds=1: kfold_test"),
    ("+solvers.smo.datasets=[nope]", r"solvers.smo.datasets=\['nope'\]: 'nope' is not a selected dataset entry"),
    ("+solvers.smo.datasets=[]", r"solvers.smo.datasets=\[\]: name at least one"),
])
def test_bad_values_are_refused(tmp_path, override, match):
    cfg = compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[smo]", "cv=kfold_test", override])
    with pytest.raises(ConfigError, match=match):
        validate(cfg)


def _run(tmp_path):
    """The plan executed and its tables written (no report: the tables are what is tested)."""
    cfg = validate(compose([
        f"store.root={tmp_path / 'store'}", "datasets=[toy_blobs,digits_bertini_3class]",
        "datasets.toy_blobs.max_rows=80", "datasets.toy_blobs.scale=standard",
        "datasets.digits_bertini_3class.max_rows=90", "solvers=[smo]", "solvers.smo.grid.C=[1.0]",
        "+solvers.lin={solver: dcd, datasets: [toy_blobs], grid: {C: [1.0]}}",
        "cv=kfold_test", "cv.folds=3", "cluster=sequential", "run.progress=false", "run.trace=false"]))
    plan = build_plan(cfg, materialise_datasets(cfg))
    execute(plan, tmp_path / "run", cfg, str(tmp_path / "store"))
    write_tables(tmp_path / "run", list(plan.fits))
    return cfg, plan, pd.read_parquet(tmp_path / "run" / "results.parquet")


def test_every_fold_is_scored_on_the_heldout_rows(tmp_path):
    cfg, plan, res = _run(tmp_path)
    # The restricted entry runs on its dataset only; the other on both.
    assert set(res.loc[res["solver_entry"] == "lin", "dataset"]) == {"toy_blobs"}
    assert set(res.loc[res["solver_entry"] == "smo", "dataset"]) == {"toy_blobs", "digits_bertini_3class"}
    assert (res["n_heldout"] == res["dataset"].map({"toy_blobs": 16, "digits_bertini_3class": 18})).all()
    assert res["heldout_accuracy"].between(0.5, 1.0).all()
    three = res[res["dataset"] == "digits_bertini_3class"]
    assert all(np.array(json.loads(c)).sum() == 18 for c in three["confusion_heldout"])
    # The held-out rows are scaled by the fold's training scaler and scored with the fold's model.
    spec = next(s for s in plan.fits.values() if s["solver_entry"] == "lin" and s["fold"] == 1)
    tasks.clear_caches()
    X_tr, _, _, _, _ = tasks.fold_data(str(tmp_path / "store"), spec["data"], 1)
    X_ho, y_ho = tasks.heldout_data(str(tmp_path / "store"), spec["data"], 1)
    raw = tasks.split_data(str(tmp_path / "store"), spec["data"])
    train = plan.datasets["toy_blobs"]["folds"][1][0]
    Xr = raw[0].X.toarray() if hasattr(raw[0].X, "toarray") else raw[0].X
    mu, sd = Xr[train].mean(axis=0), Xr[train].std(axis=0)
    held = plan.datasets["toy_blobs"]["heldout"]
    assert np.allclose(np.asarray(X_ho), (Xr[held] - mu) / sd) and np.allclose(np.asarray(X_tr).mean(axis=0), 0)
    assert (y_ho == raw[1][held]).all()
