"""gd: full-batch gradient descent on the squared-hinge primal (duros_katzman 4.1)."""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

import solvers
from solvers import Budget, Problem, Recorder, SolverError
from solvers.objectives import primal_objective


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(200, 10, n_informative=5, flip_y=0.05, random_state=0)
    return X, 2.0 * y - 1.0


def liblinear_optimum(X, y, C, intercept):
    est = LinearSVC(C=C, loss="squared_hinge", dual=False, tol=1e-12, max_iter=10000,
                    fit_intercept=intercept == "regularized").fit(X, y)
    pr = Problem(X, y, C=C, loss="squared_hinge", intercept=intercept)
    b = float(est.intercept_[0]) if intercept == "regularized" else 0.0
    return primal_objective(pr, est.coef_.ravel(), b)


@pytest.mark.parametrize("intercept", ["none", "regularized"])
@pytest.mark.parametrize("sparse", [False, True])
def test_reaches_liblinear_optimum(data, intercept, sparse):
    X, y = data
    fstar = liblinear_optimum(X, y, 0.5, intercept)
    pr = Problem(sp.csr_matrix(X) if sparse else X, y, C=0.5, loss="squared_hinge", intercept=intercept)
    r = solvers.fit(pr, "gd", budget=Budget(tol=1e-7, max_iter=50000))
    assert r.status == "converged"
    assert abs(r.primal - fstar) / fstar < 1e-5
    # Certificates: P recomputed independently, the dual gap of the KKT-map alpha, KKT violation.
    assert r.primal == pytest.approx(primal_objective(pr, r.w, r.b), rel=1e-12)
    assert 0 <= r.gap < 1e-5 * r.primal + 1e-12 or abs(r.gap) < 1e-9 * r.primal
    assert r.kkt_violation < 1e-3


def test_dense_and_sparse_agree(data):
    X, y = data
    fits = [solvers.fit(Problem(Xi, y, C=2.0, loss="squared_hinge", intercept="free"), "gd",
                        budget=Budget(tol=1e-6, max_iter=20000)) for Xi in (X, sp.csr_matrix(X))]
    np.testing.assert_allclose(fits[0].w, fits[1].w, rtol=1e-9, atol=1e-12)
    assert fits[0].n_iter == fits[1].n_iter


def test_free_intercept_is_stationary(data):
    """b unpenalised: at the solution d P / d b = -2C sum_sv y_i (1 - y_i f_i) = 0."""
    X, y = data
    pr = Problem(X, y, C=1.0, loss="squared_hinge", intercept="free")
    r = solvers.fit(pr, "gd", budget=Budget(tol=1e-8, max_iter=50000))
    f = X @ r.w + r.b
    xi = np.maximum(1 - y * f, 0)
    grad = np.append(r.w - 2 * (X.T @ (y * xi)), -2 * np.sum(y * xi))
    grad0 = np.append(-2 * (X.T @ y), -2 * np.sum(y))  # the gradient at (0, 0), C = 1
    assert np.linalg.norm(grad) <= 1e-8 * np.linalg.norm(grad0) * (1 + 1e-9)
    assert abs(grad[-1]) < 1e-6 * np.sum(xi)


def test_fixed_step_monotone_and_max_iter(data):
    """The paper's fixed eta = 1e-3: small enough here to decrease P every step; the run is
    cut by the budget, which is a status and a warning, never an exception."""
    X, y = data
    pr = Problem(X, y, C=0.1, loss="squared_hinge")
    rec = Recorder(per_decade=100)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        r = solvers.fit(pr, "gd", budget=Budget(tol=1e-10, max_iter=200), recorder=rec, step="fixed")
    assert r.status == "max_iter" and r.n_iter == 200
    P = np.array([p[2] for p in r.trace])
    assert np.all(np.diff(P) <= 1e-12)
    assert P[-1] < primal_objective(pr, np.zeros(X.shape[1]))


def test_rel_decrease_stop(data):
    X, y = data
    pr = Problem(X, y, C=0.5, loss="squared_hinge")
    r = solvers.fit(pr, "gd", budget=Budget(tol=1e-9, max_iter=50000), stop="rel_decrease")
    assert r.status == "converged"
    assert abs(r.primal - liblinear_optimum(X, y, 0.5, "none")) / r.primal < 1e-5


def test_huber_hinge_gradient(data):
    """The Huber hinge is differentiable too; the gradient at the solution is ~0."""
    X, y = data
    pr = Problem(X, y, C=1.0, loss="huber_hinge", huber_k=0.5)
    r = solvers.fit(pr, "gd", budget=Budget(tol=1e-8, max_iter=50000))
    from solvers.objectives import loss_derivative
    g = r.w + X.T @ (y * loss_derivative("huber_hinge", y * (X @ r.w), 0.5))
    assert r.status == "converged" and np.linalg.norm(g) < 1e-5


def test_divergence_is_a_status(data):
    X, y = data
    pr = Problem(X * 1e3, y, C=1e6, loss="squared_hinge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.warns(ConvergenceWarning, match="diverged"):
            r = solvers.fit(pr, "gd", budget=Budget(max_iter=10000), step="fixed", eta=1.0)
    assert r.status == "diverged" and r.n_iter < 10000


@pytest.mark.parametrize("key,value,msg", [("eta", 0.0, "gd.eta"), ("eta", -1.0, "gd.eta"),
                                           ("step", "newton", "gd.step"), ("armijo_sigma", 0.7, "gd.armijo_sigma")])
def test_bad_parameters_name_the_key(data, key, value, msg):
    X, y = data
    with pytest.raises(SolverError, match=msg):
        solvers.fit(Problem(X, y, loss="squared_hinge"), "gd", **{key: value})


def test_refuses_the_hinge(data):
    X, y = data
    with pytest.raises(SolverError, match="loss='hinge'"):
        solvers.fit(Problem(X, y, loss="hinge"), "gd")


def test_warm_start_from_optimum(data):
    X, y = data
    pr = Problem(X, y, C=0.5, loss="squared_hinge", intercept="regularized")
    r = solvers.fit(pr, "newton", budget=Budget(tol=1e-12))
    r2 = solvers.fit(pr, "gd", budget=Budget(tol=1e-6), warm_start=r)
    assert r2.status == "converged" and r2.n_iter <= 2
    assert math.isclose(r2.primal, r.primal, rel_tol=1e-10)


def test_learning_rate_on_the_averaged_objective_is_converted_once(data):
    """eta_scale="mean": duros_katzman's learning rate r on F = P / (C n). One fixed step from
    w = 0 on the squared hinge is w_1 = -r grad F(0) = 2 r X'y / n whatever C (grad P(0) =
    -2C X'y); the same run with eta = r / (C n) on P is the same iterate."""
    X, y = data
    n = len(y)
    for C in (0.01, 3.0):
        pr = Problem(X, y, C=C, loss="squared_hinge", intercept="none")
        one = Budget(max_iter=1, tol=1e-300)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            r = solvers.fit(pr, "gd", budget=one, step="fixed", eta=0.3, eta_scale="mean")
            same = solvers.fit(pr, "gd", budget=one, step="fixed", eta=0.3 / (C * n))
        np.testing.assert_allclose(r.w, 2 * 0.3 * X.T @ y / n, rtol=1e-12)
        np.testing.assert_array_equal(r.w, same.w)
    with pytest.raises(ValueError, match="learning rate"):
        solvers.objectives.step_from_learning_rate(-1.0, 1.0, n)


def test_bb_step_beats_the_condition_number():
    """The default step (Barzilai-Borwein, nonmonotone backtracking) follows the curvature: on
    features scaled over a decade, Armijo's step, which can only double per iteration, stays
    near 1 / L and needs about 1,500 iterations; bb converges in about 200 to the same optimum
    as LIBLINEAR (the bench_defaults failure of issue 10, rcv1_like at C = 10)."""
    X, y = make_classification(300, 20, n_informative=8, flip_y=0.05, random_state=1)
    X = X * np.logspace(-0.5, 0.5, 20)
    y = 2.0 * y - 1.0
    pr = Problem(X, y, C=10.0, loss="squared_hinge", intercept="none")
    fstar = liblinear_optimum(X, y, 10.0, "none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        armijo = solvers.fit(pr, "gd", budget=Budget(tol=1e-6, max_iter=1000), step="armijo")
    bb = solvers.fit(pr, "gd", budget=Budget(tol=1e-6, max_iter=1000))
    assert armijo.status == "max_iter"
    assert bb.status == "converged" and bb.n_iter < 400
    assert abs(bb.primal - fstar) / fstar < 1e-6
    assert 0 <= bb.gap < 1e-6 * bb.primal
