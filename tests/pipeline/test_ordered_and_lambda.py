"""cv=ordered (rupnik 4.4: the first rows train, the rest test, order kept) and pegasos's `lam`
as the problem's lambda (one problem for the fit, its C column, its reference and f*)."""
import numpy as np
import pytest

from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.experiment.specs import make_folds
from pipeline.run import materialise_datasets
from pipeline.engine.tasks import run_fit, run_reference


def _cfg(tmp_path, *overrides):
    return compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=100",
                    *overrides])


def test_ordered_split_keeps_the_order_and_refuses_out_of_range(tmp_path):
    y = np.array([1.0, -1.0] * 6)
    (tr, te), = make_folds(y, {"kind": "ordered", "n_train": 7}, seed=0)
    assert tr.tolist() == list(range(7)) and te.tolist() == list(range(7, 12))
    (tr, te), = make_folds(y, {"kind": "ordered", "n_train": 0.75}, seed=0)      # a fraction: 9 of 12
    assert tr.tolist() == list(range(9)) and te.tolist() == [9, 10, 11]
    for bad, rows in ((12, 12), (0.01, 0)):
        with pytest.raises(ValueError, match=rf"cv.n_train={bad}: {rows} training rows of 12"):
            make_folds(y, {"kind": "ordered", "n_train": bad}, seed=0)
    for bad in (0, 1.5, "half", None):
        with pytest.raises(ConfigError, match=rf"cv.n_train={bad!r}: an ordered split needs"):
            validate(_cfg(tmp_path, "cv=ordered", f"cv.n_train={'null' if bad is None else bad}"))
    # Through the plan: the first 60 of the (sorted) 100 rows train, whatever the labels.
    cfg = _cfg(tmp_path, "cv=ordered", "cv.n_train=60", "solvers=[dcd]")
    exp = validate(cfg)
    plan = build_plan(exp, materialise_datasets(exp))
    (tr, te), = plan.datasets["toy_blobs"]["folds"]
    assert tr.tolist() == list(range(60)) and te.tolist() == list(range(60, 100))
    # Other schemes' specs do not carry the new key, so their keys (and finished shards) stay valid.
    kfold = build_plan(validate(_cfg(tmp_path, "solvers=[dcd]")), materialise_datasets(exp))
    assert all("n_train" not in f["data"]["cv"] for f in kfold.fits.values())


def test_pegasos_lam_is_the_problems_lambda(tmp_path):
    """lam=0.01 on pegasos and lambda=0.01 (convention pegasos) on dcd are one problem: one
    reference, one C = 1/(lambda n_train) in both rows. Left a solver parameter, lam would make
    pegasos fit C = 1/(lam n) while its row, reference and f* stayed at C = 1."""
    lam = 0.01
    cfg = _cfg(tmp_path, "solvers=[pegasos,dcd]", "cv=holdout",
               f"solvers.pegasos.params.lam={lam}", "solvers.pegasos.grid.C=null", "solvers.pegasos.params.epochs=2",
               f"+solvers.dcd.params.lambda={lam}", "+solvers.dcd.params.lambda_convention=pegasos",
               "solvers.dcd.grid.C=null", "solvers.dcd.params.loss=hinge", "solvers.dcd.params.intercept=regularized")
    exp = validate(cfg)
    plan = build_plan(exp, materialise_datasets(exp))
    fits = {f["solver_entry"]: f for f in plan.fits.values()}
    assert "lam" not in fits["pegasos"]["solver_params"]
    assert fits["pegasos"]["problem"] == fits["dcd"]["problem"]
    assert fits["pegasos"]["reference_key"] == fits["dcd"]["reference_key"] is not None
    # The records: both rows at C = 1/(lambda n_train), the reference of that C, and pegasos's
    # objective (of that problem) never below the certified f* - gap.
    peg, dcd = (run_fit(fits[e], str(tmp_path)) for e in ("pegasos", "dcd"))
    ref = run_reference(plan.references[fits["pegasos"]["reference_key"]], str(tmp_path))
    assert peg["C"] == dcd["C"] == ref["C"] == pytest.approx(1 / (lam * peg["n_train"]))
    assert peg["primal_objective"] >= ref["f_star"] - ref["f_star_gap"]
    assert dcd["primal_objective"] >= ref["f_star"] - ref["f_star_gap"]
    # lam beside the C the solver's yaml sweeps: refused, naming both.
    with pytest.raises(ConfigError, match=r"solvers.pegasos.params.lam=0.01: pegasos's lam is the problem's lambda.*"
                                          r"solvers.pegasos.grid.C=\[0.1, 1.0, 10.0\]"):
        validate(_cfg(tmp_path, "solvers=[pegasos]", "solvers.pegasos.params.lam=0.01"))
