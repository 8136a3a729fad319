"""Every registered solver, through the one contract: dense and CSR input, the certificate it
reports against an independent optimum, its own objective recomputed from its model, determinism
with a seed. New solvers are picked up from the registry; nothing here names a solver except the
few stochastic ones, whose optimum is only approached."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

import solvers
from solvers import STATUSES, Budget, Problem, fit
from solvers import objectives as obj

NAMES = [n for n in solvers.solver_names() if not n.startswith("_")]
# Stochastic methods approach the optimum; they are held to a relative gap, not to the digit.
STOCHASTIC = {"pegasos": 0.03, "sgd": 0.05}
EXTRA = {"pegasos": {"epochs": 300}}


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(len(y), 120, replace=False))
    X = StandardScaler().fit_transform(X[rows])[:, :10]
    return X, np.where(y[rows] == 1, 1.0, -1.0)


def _problem_for(spec, X, y):
    intercept = "free" if "free" in spec.intercepts and spec.family in ("kernel_dual", "majorization") else spec.intercepts[0]
    return Problem(X, y, C=0.5, loss=spec.losses[0], intercept=intercept)


def _reference_optimum(problem):
    """f* by an independent route: LIBLINEAR/LIBSVM where they solve the same problem, else
    L-BFGS on the smooth objectives."""
    X, y, C = problem.X, problem.y, problem.C
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if problem.loss in ("hinge", "squared_hinge") and problem.intercept in ("none", "regularized"):
            m = LinearSVC(C=C, loss=problem.loss, fit_intercept=problem.intercept == "regularized",
                          intercept_scaling=problem.intercept_scaling, tol=1e-10, max_iter=500_000,
                          random_state=0).fit(X, y)  # tol 1e-12 sometimes ends off the optimum after max_iter
            return obj.primal_objective(problem, m.coef_.ravel(), float(np.ravel(m.intercept_)[0]))
        if problem.loss == "hinge" and problem.intercept == "free":
            m = SVC(kernel="linear", C=C, tol=1e-10).fit(X, y)
            coef = m.coef_.toarray() if sp.issparse(m.coef_) else m.coef_
            return obj.primal_objective(problem, np.ravel(coef), float(m.intercept_[0]))
    Xd = X.toarray() if sp.issparse(X) else X
    d = Xd.shape[1]

    def f(v):
        w, b = v[:d], (v[d] if problem.intercept == "free" else 0.0)
        m = y * (Xd @ w + b)
        val = obj.primal_objective(problem, w, b)
        g_m = C * obj.loss_derivative(problem.loss, m, problem.huber_k) * y
        g = np.append(w + Xd.T @ g_m, g_m.sum() if problem.intercept == "free" else 0.0)
        return val, g

    res = minimize(f, np.zeros(d + 1), jac=True, method="L-BFGS-B", options={"maxiter": 20000, "gtol": 1e-12, "ftol": 1e-16})
    return float(res.fun)


def _model_objective(problem, res):
    """P recomputed from the returned model alone (w, or alpha through the kernel)."""
    if res.w is not None:
        return obj.primal_objective(problem, res.w, res.b)
    sv = np.flatnonzero(res.alpha != 0)
    beta = res.alpha[sv] * problem.y[sv]
    from solvers.kernels import kernel_block
    w2 = float(beta @ kernel_block(problem.kernel, problem.X[sv], problem.X[sv]) @ beta)
    return obj.primal_from_decision(problem, w2, res.b, problem.decision(res))


def _solve(name, problem, seed=0):
    spec = solvers.get_solver(name)
    params = dict(EXTRA.get(name, {}))
    if "random_state" in spec.params:
        params["random_state"] = seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit(problem, name, budget=Budget(tol=1e-8, max_iter=None), **params)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_solver_contract_and_certificate(name, fmt, data):
    X, y = data
    X = sp.csr_matrix(X) if fmt == "csr" else X
    spec = solvers.get_solver(name)
    problem = _problem_for(spec, X, y)
    res = _solve(name, problem)
    assert res.status in STATUSES and res.n_iter >= 1 and np.isfinite(res.primal)
    assert (res.w is not None) or (res.alpha is not None)
    # The reported objective is the objective of the returned model.
    assert res.primal == pytest.approx(_model_objective(problem, res), rel=1e-7, abs=1e-9)
    f_star = _reference_optimum(problem)
    rel = (res.primal - f_star) / abs(f_star)
    assert rel > -1e-7, f"{name} reports below the reference optimum: {res.primal} < {f_star}"
    if res.status == "stalled":
        # An honest "stalled" (troyan's zigzagging CD and GD) must really be short of f*.
        assert rel > 1e-7
    else:
        assert rel < STOCHASTIC.get(name, 1e-5), f"{name} ({res.status}): relative gap {rel:.2e} to f*={f_star}"
    # Where a dual certificate is reported it must bound the optimum from below.
    if np.isfinite(res.dual):
        assert res.dual <= f_star * (1 + 1e-7) + 1e-9


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_model(name, data):
    X, y = data
    problem = _problem_for(solvers.get_solver(name), X, y)
    a, b = _solve(name, problem, seed=3), _solve(name, problem, seed=3)
    assert a.primal == b.primal and a.n_iter == b.n_iter


@pytest.mark.parametrize("name", NAMES)
def test_dense_and_csr_agree(name, data):
    X, y = data
    spec = solvers.get_solver(name)
    a = _solve(name, _problem_for(spec, X, y))
    b = _solve(name, _problem_for(spec, sp.csr_matrix(X), y))
    if "stalled" in (a.status, b.status):
        pytest.skip(f"{name} stalled (where it stalls depends on rounding)")
    tol = STOCHASTIC.get(name, 1e-6)
    assert a.primal == pytest.approx(b.primal, rel=tol)
