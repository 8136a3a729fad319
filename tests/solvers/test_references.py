"""references: liblinear, sgd and libsvm adapters under the solver contract."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.svm import SVC, LinearSVC

import solvers
from solvers import Budget, Problem, Recorder, SolverError
from solvers.kernels import kernel_block
from solvers.objectives import primal_objective


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(200, 10, n_informative=5, flip_y=0.05, random_state=3)
    return X, 2.0 * y - 1.0


def test_registered_as_references():
    for name in ("liblinear", "sgd", "libsvm"):
        assert solvers.get_solver(name).family == "reference"


@pytest.mark.parametrize("name", [n for n in solvers.solver_names() if not n.startswith("_")])  # "_x": test-only
def test_every_solver_has_a_version_and_a_description(name):
    """version and description are written into every result and the store; a keyword that
    slips into a trailing comment leaves the registry's defaults ("1", "") without any error."""
    spec = solvers.get_solver(name)
    assert isinstance(spec.version, str) and spec.version.strip()
    assert isinstance(spec.description, str) and spec.description.strip()


@pytest.mark.parametrize("loss,dual", [("hinge", True), ("squared_hinge", True), ("squared_hinge", False)])
@pytest.mark.parametrize("intercept", ["none", "regularized"])
def test_liblinear_reaches_dcd_optimum(data, loss, dual, intercept):
    """Same problem, same optimum: LIBLINEAR through LinearSVC and our dcd; the intercept
    mapping (regularized == fit_intercept=True with intercept_scaling = B) included."""
    X, y = data
    pr = Problem(sp.csr_matrix(X), y, C=0.4, loss=loss, intercept=intercept, intercept_scaling=2.0)
    r = solvers.fit(pr, "liblinear", budget=Budget(tol=1e-10, max_iter=100000), dual=dual)
    d = solvers.fit(pr, "dcd", budget=Budget(tol=1e-10, max_iter=100000))
    assert r.status == "converged" and r.n_iter >= 1
    assert abs(r.primal - d.primal) / d.primal < 1e-6
    assert r.primal == pytest.approx(primal_objective(pr, r.w, r.b), rel=1e-12)
    if loss == "squared_hinge":
        assert abs(r.gap) < 1e-6 * r.primal
    # The adapter's model is LinearSVC's, untouched.
    est = LinearSVC(C=0.4, loss=loss, dual=dual, tol=1e-10, max_iter=100000, random_state=0,
                    fit_intercept=intercept == "regularized", intercept_scaling=2.0).fit(X, y)
    np.testing.assert_allclose(r.w, est.coef_.ravel(), rtol=1e-6, atol=1e-9)


def test_liblinear_refuses_primal_hinge(data):
    X, y = data
    with pytest.raises(SolverError, match="dual=False"):
        solvers.fit(Problem(X, y, loss="hinge"), "liblinear", dual=False)


def test_liblinear_non_convergence_is_a_status(data):
    X, y = data
    with pytest.warns(ConvergenceWarning, match="liblinear"):
        r = solvers.fit(Problem(X, y, C=100.0, loss="hinge"), "liblinear", budget=Budget(max_iter=2, tol=1e-12))
    assert r.status == "max_iter"


@pytest.mark.parametrize("learning_rate", ["optimal", "pegasos"])
@pytest.mark.parametrize("intercept", ["none", "free"])
def test_sgd_maps_lambda_and_is_near_optimal(data, learning_rate, intercept):
    X, y = data
    n = len(y)
    C = 0.05
    pr = Problem(X, y, C=C, loss="hinge", intercept=intercept)
    r = solvers.fit(pr, "sgd", budget=Budget(tol=1e-6, max_iter=200), learning_rate=learning_rate,
                    average=True)
    assert r.info["lambda"] == pytest.approx(1 / (C * n))
    assert r.primal == pytest.approx(primal_objective(pr, r.w, r.b), rel=1e-12)
    if intercept == "none":
        est = LinearSVC(C=C, loss="hinge", fit_intercept=False, tol=1e-10, max_iter=100000, random_state=0).fit(X, y)
        fstar = primal_objective(pr, est.coef_.ravel())
        assert (r.primal - fstar) / fstar < 0.05
    sk = SGDClassifier(loss="hinge", alpha=1 / (C * n), fit_intercept=intercept == "free", max_iter=200,
                       tol=1e-6, random_state=0, average=True,
                       **({"learning_rate": "optimal"} if learning_rate == "optimal" else
                          {"learning_rate": "invscaling", "eta0": C * n, "power_t": 1.0})).fit(X, y)
    np.testing.assert_allclose(r.w, sk.coef_.ravel())


def test_sgd_refuses_a_regularized_intercept(data):
    X, y = data
    with pytest.raises(SolverError, match="intercept"):
        solvers.fit(Problem(X, y, intercept="regularized"), "sgd")


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_libsvm_certificates(data, kernel):
    """alpha from |dual_coef_|, b = intercept_; our P, D, gap and m - M certify LIBSVM's answer,
    and the decision values are SVC's."""
    X, y = data
    pr = Problem.build(X, y, C=0.8, loss="hinge", intercept="free", kernel=kernel, degree=2)
    r = solvers.fit(pr, "libsvm", budget=Budget(tol=1e-8), recorder=Recorder())
    assert r.status == "converged" and r.n_iter > 0 and len(r.trace) == 1
    assert 0 <= r.gap < 1e-6 * r.primal and r.kkt_violation < 1e-4
    assert r.alpha.min() >= 0 and r.alpha.max() <= 0.8 + 1e-12
    assert abs(np.sum(r.alpha * y)) < 1e-8
    svc = SVC(C=0.8, kernel=kernel, gamma=pr.kernel.gamma, degree=2, tol=1e-8).fit(X, y)
    f = kernel_block(pr.kernel, X, X[r.support]) @ (r.alpha * y)[r.support] + r.b
    np.testing.assert_allclose(f, svc.decision_function(X), atol=1e-8)


def test_libsvm_needs_a_free_intercept_and_the_hinge(data):
    X, y = data
    with pytest.raises(SolverError, match="intercept"):
        solvers.fit(Problem(X, y, intercept="none"), "libsvm")
    with pytest.raises(SolverError, match="loss"):
        solvers.fit(Problem(X, y, loss="squared_hinge", intercept="free"), "libsvm")


def test_libsvm_max_iter_is_a_status(data):
    X, y = data
    pr = Problem.build(X, y, C=100.0, loss="hinge", intercept="free", kernel="rbf")
    with pytest.warns(ConvergenceWarning, match="libsvm"):
        r = solvers.fit(pr, "libsvm", budget=Budget(max_iter=3))
    assert r.status == "max_iter"


def test_bad_parameters_name_the_key(data):
    X, y = data
    with pytest.raises(SolverError, match="sgd.learning_rate"):
        solvers.fit(Problem(X, y), "sgd", learning_rate="adaptive")
    with pytest.raises(SolverError, match="libsvm.cache_size"):
        solvers.fit(Problem(X, y, intercept="free"), "libsvm", cache_size=0)
