"""SVMClassifier: scikit-learn's estimator checks, and every primal/reference solver behind it."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.utils.estimator_checks import parametrize_with_checks

import solvers
from solvers import Budget, Problem, SolverError, SVMClassifier


@parametrize_with_checks([SVMClassifier()])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(150, 6, n_informative=4, random_state=4)
    return X, np.where(y == 1, "yes", "no")


CASES = [
    dict(solver="gd", loss="squared_hinge", intercept="free", tol=1e-8, max_iter=20000),
    dict(solver="newton", loss="squared_hinge", intercept="regularized", tol=1e-10),
    dict(solver="newton", loss="squared_hinge", intercept="free", kernel="rbf", tol=1e-10),
    dict(solver="pegasos", loss="hinge", intercept="regularized", C=0.05,
         solver_params={"epochs": 200, "iterate": "average"}),
    dict(solver="liblinear", loss="squared_hinge", intercept="regularized", tol=1e-8, max_iter=100000),
    dict(solver="sgd", loss="hinge", intercept="none", C=0.05),
    dict(solver="libsvm", loss="hinge", intercept="free", kernel="poly", degree=2, coef0=1.0),
]


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"{p['solver']}-{p.get('kernel', 'linear')}")
def test_each_solver_through_the_estimator(data, params):
    """fit/predict/decision_function agree with a direct solve of the same Problem, dense and CSR."""
    X, y = data
    params = dict(params, random_state=0)
    clf = SVMClassifier(**params).fit(X, y)
    clf_sparse = SVMClassifier(**params).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(clf.decision_function(X), clf_sparse.decision_function(sp.csr_matrix(X)),
                               rtol=1e-7, atol=1e-7)
    assert clf.score(X, y) > 0.8
    assert clf.status_ == "converged"
    kernel = params.get("kernel", "linear")
    ybin = np.where(y == clf.classes_[1], 1.0, -1.0)
    pr = Problem.build(X, ybin, C=params.get("C", 1.0), loss=params["loss"], intercept=params["intercept"],
                       kernel=kernel, degree=params.get("degree", 3), coef0=params.get("coef0", 0.0))
    spec = solvers.get_solver(params["solver"])
    sp_params = dict(params.get("solver_params") or {})
    if "random_state" in spec.params:
        sp_params["random_state"] = 0
    r = solvers.fit(pr, params["solver"], budget=Budget(tol=params.get("tol", 1e-4), max_iter=params.get("max_iter")),
                    **sp_params)
    assert clf.objective_ == pytest.approx(r.primal, rel=1e-9)
    if kernel == "linear":
        np.testing.assert_allclose(clf.coef_.ravel(), r.w, rtol=1e-7, atol=1e-10)
    else:
        assert clf.dual_coef_.shape == (1, clf.support_.size)
        np.testing.assert_allclose(clf.dual_coef_.ravel(), (r.alpha * ybin)[r.alpha != 0], rtol=1e-7, atol=1e-10)


def test_solver_params_are_checked_with_the_key(data):
    X, y = data
    with pytest.raises(SolverError, match="pegasos.k"):
        SVMClassifier(solver="pegasos", solver_params={"k": 0}).fit(X, y)
    with pytest.raises(SolverError, match="newton.max_cg"):
        SVMClassifier(solver="newton", loss="squared_hinge", solver_params={"max_cg": -1}).fit(X, y)


def test_multiclass_kernel_models_predict(data):
    X, _ = data
    y = np.arange(len(X)) % 3
    X = X + 3.0 * np.eye(3)[y] @ np.ones((3, X.shape[1])) * np.arange(X.shape[1])[None, :] / X.shape[1]
    for mc in ("ovr", "ovo", "ordinal"):
        clf = SVMClassifier(solver="newton", loss="squared_hinge", intercept="free", kernel="rbf",
                            multi_class=mc, tol=1e-8).fit(X, y)
        shape = {"ovr": 3, "ovo": 3, "ordinal": 2}[mc]
        D = clf.decision_function(X)
        assert D.shape == (len(y), shape)
        assert set(clf.predict(X)) == {0, 1, 2}
        # Each column is its binary kernel model, evaluated here by hand:
        # sum_i dual_coef_i exp(-gamma |x - sv_i|^2) + b.
        g = clf._kernel.gamma
        for j, m in enumerate(clf.multiclass_.models):
            sq = ((X[:, None, :] - m["support_vectors"][None, :, :]) ** 2).sum(axis=2)
            np.testing.assert_allclose(D[:, j], np.exp(-g * sq) @ m["dual_coef"] + m["b"], rtol=0, atol=1e-10)
        if mc == "ovr":
            np.testing.assert_array_equal(clf.predict(X), clf.classes_[[max(range(3), key=r.__getitem__) for r in D]])
