"""class_weight as a problem key of the pipeline: validated once, in the task key only when set,
the weighted problem solved and certified by the solvers (Problem.sample_weight), and a column
of the results table."""
import numpy as np
import pytest

from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.run import run

BASE = ["datasets=[toy_blobs]", "datasets.toy_blobs.params.n_samples=120", "cv.folds=2", "cluster=sequential",
        "run.progress=false", "run.trace=false", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]",
        "solvers.dcd.params.tol=1e-6"]


def _labels():
    y = np.where(np.arange(40) % 4 == 0, 1.0, -1.0)
    return {"toy_blobs": ({"name": "toy_blobs", "fingerprint": "a" * 64, "n_features": 2}, y)}


def test_class_weight_is_a_problem_key_only_when_set(tmp_path):
    base = [f"store.root={tmp_path}", *BASE]
    plain = build_plan(validate(compose(base)), _labels())
    null = build_plan(validate(compose([*base, "++solvers.dcd.params.class_weight=null"])), _labels())
    weighted = build_plan(validate(compose([*base, "++solvers.dcd.params.class_weight=balanced"])), _labels())
    assert set(plain.fits) == set(null.fits)              # unweighted keys as before the key existed
    assert not set(plain.fits) & set(weighted.fits)
    assert {s["problem"]["class_weight"] for s in weighted.fits.values()} == {"balanced"}
    swept = build_plan(validate(compose([*base, "++solvers.dcd.grid.class_weight=[balanced,{-1: 1, 1: 3}]"])),
                       _labels())
    assert len(swept.fits) == 4


@pytest.mark.parametrize("override, match", [
    ("++solvers.dcd.params.class_weight=heavy", r"solvers.dcd.params.class_weight='heavy': must be null, 'balanced'"),
    ("++solvers.dcd.params.class_weight={-1: 1, 2: 3}", r"label 2: the labels of a binary problem are -1 and 1"),
    ("++solvers.dcd.params.class_weight={-1: 0, 1: 3}", r"the weight of label -1 must be a finite number > 0"),
])
def test_a_bad_class_weight_is_refused_naming_it(tmp_path, override, match):
    with pytest.raises(ConfigError, match=match):
        validate(compose([f"store.root={tmp_path}", *BASE, override]))


def test_a_solver_that_cannot_weigh_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match=r"solver 'svmmaj' does not weigh rows; the solvers that do: .*dcd"):
        validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[svmmaj]",
                          "solvers.svmmaj.grid.C=[1.0]", "++solvers.svmmaj.params.class_weight=balanced"]))


def test_a_dataset_weighs_its_classes_and_the_fit_is_certified_weighted(tmp_path):
    """datasets.<entry>.problem.class_weight weighs every solver's problem on that dataset; the
    fits solve the weighted problem (a minority weighted up is predicted more often, and dcd and
    smooth_newton's reference agree on the weighted f*), and the table names the weights."""
    common = [f"store.root={tmp_path / 'store'}", *BASE, "solvers=[dcd,liblinear]",
              "solvers.liblinear.grid.C=[1.0]", "run.reference=true"]
    out = run(compose([*common, "datasets.toy_blobs.problem.class_weight={-1: 1, 1: 5}"]), tmp_path / "w")
    res = out["results"]
    assert set(res["class_weight"]) == {'{"-1": 1, "1": 5}'}
    assert (res["status"] == "converged").all()
    dcd = res[res["solver"] == "dcd"]
    assert (dcd["rel_suboptimality"].abs() < 1e-4).all()         # against the weighted reference
    plain = run(compose(common), tmp_path / "p")["results"]
    assert "class_weight" not in plain.columns
    assert (dcd["primal_objective"].values > plain[plain["solver"] == "dcd"]["primal_objective"].values).all()


def _weighted_primal(X, y, w, b, C, weights) -> float:
    """P(w, b) of LIBLINEAR's squared-hinge problem with its bias feature (intercept
    regularized, scaling 1), each row's loss weighed by its class's weight, written here."""
    s = np.where(y > 0, weights[1], weights[-1])
    margins = np.maximum(0.0, 1.0 - y * (X @ w + b))
    return 0.5 * (w @ w + b * b) + C * float(s @ margins ** 2)


def test_each_class_gets_its_own_weight(tmp_path):
    """The weights reach the rows of their own class, not of the other: each fold's f* is that of
    a solve written apart (scikit-learn's LinearSVC with the same class_weight, a tight tol, on
    the fold's rows), and an objective with the two weights swapped is far from it."""
    from sklearn.svm import LinearSVC

    from pipeline.engine.tasks import fold_data
    store = tmp_path / "store"
    weights = {-1: 1.0, 1: 5.0}
    cfg = compose([f"store.root={store}", *BASE, "datasets.toy_blobs.problem.class_weight={-1: 1, 1: 5}"])
    res = run(cfg, tmp_path / "w")["results"].set_index("key")
    exp = validate(cfg)
    from pipeline.run import materialise_datasets
    plan = build_plan(exp, materialise_datasets(exp))
    for key, spec in plan.fits.items():
        X, y = fold_data(str(store), spec["data"], spec["fold"])[:2]
        ref = LinearSVC(C=1.0, class_weight=weights, tol=1e-10, max_iter=100_000, intercept_scaling=1.0).fit(X, y)
        w, b = ref.coef_.ravel(), float(ref.intercept_[0])
        f_star = _weighted_primal(X, y, w, b, 1.0, weights)
        swapped = _weighted_primal(X, y, w, b, 1.0, {-1: weights[1], 1: weights[-1]})
        assert res.loc[key, "primal_objective"] == pytest.approx(f_star, rel=1e-4)
        assert abs(swapped - f_star) > 0.2 * f_star
