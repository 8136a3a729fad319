"""A pipeline fit is the model a user gets from `SVMClassifier` on a dense copy of the same rows.

The store holds every dataset as CSR, and a dataset under half full stays CSR in the fits
(tasks._Rows); a researcher who checks a result in a notebook passes a dense NumPy array. The
kernel solvers compute every kernel value in one summation order whatever the storage
(solvers/kernels.py), and dcd walks the CSR of the nonzeros either way, so the pipeline's fit and
the estimator's on the dense copy of the same training rows, with the same settings, are one
model: the same support vectors, alpha and b (w and b for dcd).
"""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_breast_cancer

from pipeline.data.datasets import ingest_file
from pipeline.data.store import read_dataset
from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.run import materialise_datasets, run
from solvers import SVMClassifier

# A user's LIBSVM file, ingested: 300 breast cancer rows, standardised, the entries below 0.8 in
# size set to 0 (37% nonzero, so the fits get CSR), fitted as stored (scale=none: a fold's scaler
# is scikit-learn's, whose MaxAbsScaler divides a dense X by the column scales and multiplies a
# sparse one by their reciprocals). At C = 30 the dense and CSR fits parted before one summation
# order. One C per solver, so that each fit is a cold start, as the estimator's is.
SWEEP = ["datasets=[cancer_file]", "datasets.cancer_file.scale=none", "solvers=[smo,svmlight,dcd]",
         "solvers.smo.grid.C=[30.0]", "solvers.svmlight.grid.C=[30.0]", "solvers.dcd.grid.C=[1.0]",
         "cv.folds=2", "run.keep_models=true", "run.reference=false", "cluster=sequential", "run.progress=false"]
# The estimator's settings of each solver entry, as its conf/solvers file gives them.
SETTINGS = {"smo": dict(kernel="rbf", gamma="scale", tol=1e-3, intercept="free"),
            "svmlight": dict(kernel="rbf", gamma="scale", tol=1e-3, intercept="free"),
            "dcd": dict(kernel="linear", loss="squared_hinge", intercept="regularized", tol=0.1, max_iter=10000)}


def test_a_pipeline_fit_is_the_estimators_model_on_a_dense_copy(tmp_path):
    store = tmp_path / "store"
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    X[np.abs(X) < 0.8] = 0.0
    dump_svmlight_file(X[:300], y[:300], str(tmp_path / "cancer.libsvm"))
    ingest_file(store, tmp_path / "cancer.libsvm", "cancer_file")
    cfg = compose([f"store.root={store}", *SWEEP])
    res = run(cfg, tmp_path / "run")["results"]
    models = pd.read_parquet(tmp_path / "run" / "models.parquet").set_index("key")
    exp = validate(cfg)
    data = build_plan(exp, materialise_datasets(exp, build=False)).datasets["cancer_file"]
    stored = read_dataset(str(store), data["name"])
    assert sp.issparse(stored.X) and stored.X.nnz <= 0.5 * np.prod(stored.X.shape)   # fitted as CSR
    X, y = stored.X.toarray(), stored.y           # the dense copy a user makes
    assert len(res) == 3 * 2 and (res["status"] == "converged").all()
    for r in res.itertuples():
        train, test = data["folds"][r.fold]
        # dcd's pass order is drawn from the fit's seed (the results' seed column)
        seed = {"solver_params": {"random_state": r.seed}} if r.solver == "dcd" else {}
        est = SVMClassifier(solver=r.solver, C=r.C, **SETTINGS[r.solver], **seed).fit(X[train], y[train])
        m = models.loc[r.key]
        if r.solver == "dcd":
            np.testing.assert_array_equal(est.coef_.ravel(), m["w"])
        else:
            # support_ in SVC's order (grouped by class), the kept model's in row order
            order = np.argsort(est.support_)
            np.testing.assert_array_equal(est.support_[order], m["support"])
            # classes_[1] (the pipeline's positive label, the larger) is +1: dual_coef_ = alpha_i y_i
            np.testing.assert_allclose(np.abs(est.dual_coef_.ravel()[order]), m["alpha"], rtol=1e-7, atol=0)
        assert est.intercept_[0] == pytest.approx(m["b"], rel=1e-7, abs=1e-12)
        assert est.score(X[test], y[test]) == r.test_accuracy
        assert est.score(X[train], y[train]) == r.train_accuracy
