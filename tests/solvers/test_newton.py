"""newton: Chapelle's primal Newton for the squared hinge, linear and kernel."""
import warnings

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC

import solvers
from solvers import Budget, Problem, SolverError
from solvers.kernels import kernel_block
from solvers.objectives import primal_objective


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(240, 12, n_informative=6, flip_y=0.05, random_state=1)
    return X, 2.0 * y - 1.0


@pytest.mark.parametrize("intercept", ["none", "regularized"])
def test_linear_newton_gd_dcd_reach_liblinear(data, intercept):
    """gd, newton (both Newton systems, dense and CSR) and dcd reach LinearSVC's optimum of the
    squared hinge to 1e-5 relative, and agree with one another."""
    X, y = data
    C = 0.7
    est = LinearSVC(C=C, loss="squared_hinge", dual=False, tol=1e-12, max_iter=10000,
                    fit_intercept=intercept == "regularized").fit(X, y)
    pr = Problem(X, y, C=C, loss="squared_hinge", intercept=intercept)
    fstar = primal_objective(pr, est.coef_.ravel(), float(est.intercept_[0]) if intercept != "none" else 0.0)
    values = {}
    for Xi, tag in ((X, "dense"), (sp.csr_matrix(X), "csr")):
        pri = Problem(Xi, y, C=C, loss="squared_hinge", intercept=intercept)
        for ls in ("direct", "cg"):
            r = solvers.fit(pri, "newton", budget=Budget(tol=1e-10), linear_solver=ls)
            assert r.status == "converged" and r.n_iter <= 15
            assert abs(r.gap) < 1e-8 * r.primal and r.kkt_violation < 1e-5
            values[f"newton-{ls}-{tag}"] = r.primal
    values["gd"] = solvers.fit(pr, "gd", budget=Budget(tol=1e-8, max_iter=50000)).primal
    values["dcd"] = solvers.fit(pr, "dcd", budget=Budget(tol=1e-8, max_iter=10000)).primal
    for name, P in values.items():
        assert abs(P - fstar) / fstar < 1e-5, name
    assert max(values.values()) - min(values.values()) < 1e-5 * fstar


def test_free_intercept_matches_lbfgs(data):
    """An unpenalised b: compare with L-BFGS on P(w, b) written out here."""
    X, y = data
    C = 0.7

    def P(v):
        w, b = v[:-1], v[-1]
        xi = np.maximum(1 - y * (X @ w + b), 0)
        g = np.append(w - 2 * C * X.T @ (y * xi), -2 * C * np.sum(y * xi))
        return 0.5 * w @ w + C * xi @ xi, g

    ref = so.minimize(P, np.zeros(X.shape[1] + 1), jac=True, method="L-BFGS-B",
                      options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10000})
    r = solvers.fit(Problem(X, y, C=C, loss="squared_hinge", intercept="free"), "newton",
                    budget=Budget(tol=1e-12))
    assert r.status == "converged"
    assert abs(r.primal - ref.fun) / ref.fun < 1e-8
    np.testing.assert_allclose(np.append(r.w, r.b), ref.x, atol=1e-4)


def test_cg_never_builds_a_dense_hessian_for_wide_data():
    """d = 5000 > the direct threshold: auto picks CG, and the result is still the optimum."""
    rng = np.random.default_rng(0)
    X = sp.random(300, 5000, density=0.01, format="csr", random_state=0)
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    pr = Problem(X, y, C=1.0, loss="squared_hinge")
    r = solvers.fit(pr, "newton", budget=Budget(tol=1e-10))
    assert r.info["linear_solver"] == "cg" and r.status == "converged"
    d = solvers.fit(pr, "dcd", budget=Budget(tol=1e-10, max_iter=10000))
    assert abs(r.primal - d.primal) / d.primal < 1e-7


def squared_hinge_dual_lbfgs(Q, C):
    """max_alpha>=0 sum alpha - 1/2 alpha'Q alpha - 1/(4C) ||alpha||^2, by L-BFGS-B: an
    independent solve of the kernel L2-SVM without intercept (its optimum equals P*)."""
    n = Q.shape[0]

    def negD(a):
        Qa = Q @ a
        return -(a.sum() - 0.5 * a @ Qa - a @ a / (4 * C)), -(1 - Qa - a / (2 * C))

    res = so.minimize(negD, np.zeros(n), jac=True, method="L-BFGS-B", bounds=[(0, None)] * n,
                      options={"ftol": 1e-16, "gtol": 1e-11, "maxiter": 20000, "maxcor": 50})
    return res.x, -res.fun


_DUAL_REF = {}


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
@pytest.mark.parametrize("start", ["all", "doubling"])
def test_kernel_newton_matches_an_independent_dual_solve(data, kernel, start):
    X, y = data[0][:150], data[1][:150]
    C = 2.0
    pr = Problem.build(X, y, C=C, loss="squared_hinge", intercept="none", kernel=kernel, degree=2)
    r = solvers.fit(pr, "newton", budget=Budget(tol=1e-12), start=start, doubling_n0=40)
    assert r.status == "converged"
    K = kernel_block(pr.kernel, X, X)
    if kernel not in _DUAL_REF:
        _DUAL_REF[kernel] = squared_hinge_dual_lbfgs(K * np.outer(y, y), C)
    alpha_ref, D_ref = _DUAL_REF[kernel]
    assert abs(r.primal - D_ref) / D_ref < 1e-7
    assert abs(r.gap) < 1e-8 * r.primal and r.kkt_violation < 1e-6
    np.testing.assert_allclose(K @ (r.alpha * y), K @ (alpha_ref * y), atol=1e-4)
    # What is returned: alpha = beta y = 2C (1 - y f)_+ >= 0 at the optimum.
    f = K @ (r.alpha * y)
    assert r.alpha.min() >= 0
    np.testing.assert_allclose(r.alpha, 2 * C * np.maximum(1 - y * f, 0), atol=1e-9)
    if start == "doubling":
        assert [s for s, *_ in r.info["doubling"]] == [38, 75]
        # The first level is a cold solve on the first 38 rows of the seeded permutation: its
        # support-vector count is that solve's.
        rows = np.random.default_rng(0).permutation(150)[:38]
        first = solvers.fit(pr.subset(rows), "newton", budget=Budget(tol=1e-12))
        assert r.info["doubling"][0][4] == first.info["n_sv"] > 0


def test_kernel_newton_free_intercept_matches_svc_on_separable_data():
    """At a large C on separable data both the L2- and the L1-SVM are the hard margin: our
    squared-hinge kernel Newton and LIBSVM's SVC give the same decision values."""
    X, y = make_blobs(80, 2, centers=[[-2, -2], [2, 2]], cluster_std=0.8, random_state=0)
    y = 2.0 * y - 1.0
    C = 1e6
    pr = Problem.build(X, y, C=C, loss="squared_hinge", intercept="free", kernel="rbf", gamma=0.5)
    r = solvers.fit(pr, "newton", budget=Budget(tol=1e-12))
    svc = SVC(C=C, kernel="rbf", gamma=0.5, tol=1e-10).fit(X, y)
    Xt = np.random.default_rng(0).uniform(-4, 4, size=(200, 2))
    f_ours = kernel_block(pr.kernel, Xt, X) @ (r.alpha * y) + r.b
    np.testing.assert_allclose(f_ours, svc.decision_function(Xt), atol=1e-3)
    assert abs(np.sum(r.alpha * y)) < 1e-8  # the equality constraint of a free intercept


def test_linear_kernel_formulation_equals_primal(data):
    X, y = data
    for intercept in ("none", "regularized", "free"):
        pr = Problem(X, y, C=0.3, loss="squared_hinge", intercept=intercept)
        a = solvers.fit(pr, "newton", budget=Budget(tol=1e-12))
        k = solvers.fit(pr, "newton", budget=Budget(tol=1e-12), formulation="kernel")
        assert abs(a.primal - k.primal) < 1e-9 * a.primal
        np.testing.assert_allclose(X.T @ (k.alpha * y), a.w, atol=1e-6)
        assert abs(a.b - k.b) < 1e-6


def test_non_convergence_is_a_status(data):
    X, y = data
    pr = Problem.build(X, y, C=10.0, loss="squared_hinge", kernel="rbf")
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        r = solvers.fit(pr, "newton", budget=Budget(max_iter=1, tol=1e-12))
    assert r.status == "max_iter" and r.n_iter == 1
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        r = solvers.fit(Problem(X, y, C=10.0, loss="squared_hinge"), "newton", budget=Budget(max_iter=1))
    assert r.status == "max_iter"


def test_overflow_is_diverged(data):
    X, y = data
    pr = Problem(X * 1e200, y, C=1e100, loss="squared_hinge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.warns(ConvergenceWarning, match="diverged"):
            r = solvers.fit(pr, "newton", linear_solver="cg")
    assert r.status == "diverged"


@pytest.mark.parametrize("key,value", [("max_cg", 0), ("doubling_n0", 1), ("start", "half"),
                                       ("formulation", "dual")])
def test_bad_parameters_name_the_key(data, key, value):
    X, y = data
    with pytest.raises(SolverError, match=f"newton.{key}"):
        solvers.fit(Problem(X, y, loss="squared_hinge"), "newton", **{key: value})


def test_primal_formulation_refuses_a_kernel(data):
    X, y = data
    with pytest.raises(ValueError, match="linear kernel"):
        solvers.fit(Problem.build(X, y, loss="squared_hinge", kernel="rbf"), "newton", formulation="primal")
