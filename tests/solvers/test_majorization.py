"""SVM-Maj (absolute, quadratic and Huber hinge; relaxed 2Maj) and alpha-Maj.

Certificates: the optimum of each hinge against an independent solve (scikit-learn's SVC and
LinearSVC for the absolute hinge, scipy L-BFGS on the smooth objective for the quadratic and
Huber hinges), the duality gap, a loss that never increases along the trace, alpha-Maj reaching
the same loss in fewer iterations, and the majorizer inequality itself.
"""
import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC

import solvers
from solvers import Budget, Kernel, Problem, ProblemError, Recorder, SolverError
from solvers.majorization import majorizer_coefficients
from solvers.objectives import (C_from_lambda, loss_derivative, loss_values, objective_scale,
                                primal_objective)

TIGHT = Budget(tol=1e-7, max_iter=20000)  # the paper's tol: certified relative gap <= 1e-6
# Against a reference that is itself only ~1e-7 accurate, certify one decade tighter.
TIGHTER = Budget(tol=1e-8, max_iter=20000)


def _data(n=160, m=6, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    w = rng.normal(size=m)
    y = np.where(X @ w - 0.4 + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        return sp.csr_matrix(X), y
    return X, y


def _smooth_optimum(problem):
    """min P(w, b) with a free intercept by L-BFGS (the squared and Huber hinges are C^1)."""
    X, y, C = problem.X, problem.y, problem.C
    Xd = X.toarray() if sp.issparse(X) else X

    def fun(z):
        w, b = z[:-1], z[-1]
        mg = y * (Xd @ w + b)
        g = C * y * loss_derivative(problem.loss, mg, problem.huber_k)
        P = 0.5 * w @ w + C * loss_values(problem.loss, mg, problem.huber_k).sum()
        return P, np.concatenate([w + Xd.T @ g, [g.sum()]])

    res = minimize(fun, np.zeros(Xd.shape[1] + 1), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 20000, "maxcor": 30})
    return res.fun


# ---------------------------------------------------------------------------- optimum
@pytest.mark.parametrize("solver", ["svmmaj", "alpha_maj"])
@pytest.mark.parametrize("sparse", [False, True])
def test_absolute_hinge_reaches_the_l1_svm_optimum(solver, sparse):
    X, y = _data(sparse=sparse)
    lam = 0.8
    problem = Problem(X, y, C=C_from_lambda(lam, "svmmaj"), loss="hinge", intercept="free")
    fit = solvers.fit(problem, solver, budget=TIGHTER)
    Xd = X.toarray() if sparse else X
    svc = SVC(kernel="linear", C=problem.C, tol=1e-12, max_iter=10**7).fit(Xd, y)
    P_svc = primal_objective(problem, svc.coef_.ravel(), float(svc.intercept_[0]))
    assert fit.status == "converged"
    assert abs(fit.primal - P_svc) <= 1e-6 * P_svc
    assert fit.primal == pytest.approx(primal_objective(problem, fit.w, fit.b), rel=1e-13)
    # The paper's loss and lambda are P / C and 1 / (2 C).
    assert fit.info["loss_L"] == pytest.approx(objective_scale("svmmaj", problem.C) * fit.primal)
    assert fit.info["lambda"] == pytest.approx(lam)
    # certified by the dual (gap_tol = 10 tol); the active set's alpha* can meet P to rounding
    assert -1e-12 * fit.primal <= fit.gap <= 1e-7 * fit.primal


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # LIBLINEAR at tol 1e-12
@pytest.mark.parametrize("intercept", ["none", "regularized"])
def test_absolute_hinge_other_intercepts_match_liblinear(intercept):
    X, y = _data(seed=3)
    problem = Problem(X, y, C=0.4, loss="hinge", intercept=intercept, intercept_scaling=2.0)
    fit = solvers.fit(problem, "alpha_maj", budget=TIGHTER)
    ref = LinearSVC(C=0.4, loss="hinge", dual=True, tol=1e-12, max_iter=10**6, random_state=0,
                    fit_intercept=intercept == "regularized", intercept_scaling=2.0).fit(X, y)
    b = float(ref.intercept_[0]) if intercept == "regularized" else 0.0
    P_ref = primal_objective(problem, ref.coef_.ravel(), b)
    assert fit.primal <= P_ref * (1 + 1e-6)
    assert fit.primal >= P_ref * (1 - 1e-6) - fit.gap  # LIBLINEAR may itself sit slightly above
    assert fit.gap <= 1e-5 * fit.primal


@pytest.mark.parametrize("loss,huber_k", [("squared_hinge", 1.0), ("huber_hinge", 0.5), ("huber_hinge", -0.5)])
def test_smooth_hinges_match_lbfgs(loss, huber_k):
    X, y = _data(seed=1)
    problem = Problem(X, y, C=0.6, loss=loss, intercept="free", huber_k=huber_k)
    fit = solvers.fit(problem, "svmmaj", budget=Budget(tol=1e-10, max_iter=20000))
    P_ref = _smooth_optimum(problem)
    assert fit.status == "converged"
    assert abs(fit.primal - P_ref) <= 1e-6 * P_ref
    assert fit.kkt_violation < 1e-3


# --------------------------------------------------------------------- monotone traces
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # capped at 400
@pytest.mark.parametrize("loss,kw", [("hinge", {}), ("hinge", {"relax": True, "relax_from": 3}),
                                     ("squared_hinge", {}), ("squared_hinge", {"relax": True}),
                                     ("huber_hinge", {}), ("hinge", "alpha")])
def test_loss_never_increases(loss, kw):
    X, y = _data(seed=2)
    problem = Problem(X, y, C=0.5, loss=loss, intercept="free", huber_k=0.3)
    rec = Recorder(per_decade=10**6, max_overhead=None)  # a point at every iteration
    solver, params = ("alpha_maj", {}) if kw == "alpha" else ("svmmaj", kw)
    fit = solvers.fit(problem, solver, budget=Budget(tol=1e-9, max_iter=400), recorder=rec, **params)
    P = np.array([p[2] for p in rec.points])
    assert len(P) == fit.n_iter
    # Up to rounding, and the delta guard's O(delta) at the kink of the absolute hinge.
    assert np.all(np.diff(P) <= 1e-10 * P[1:])


def test_majorizers_bound_each_hinge_and_touch_it():
    m = np.linspace(-4, 4, 2001)
    for loss, k in [("hinge", 1.0), ("squared_hinge", 1.0), ("huber_hinge", 2.0), ("huber_hinge", -0.5)]:
        for mbar in (-3.0, -0.7, 0.2, 0.99, 1.3, 3.0):
            a, b = majorizer_coefficients(loss, np.array([mbar]), huber_k=k)
            f = loss_values(loss, m, k)
            fbar = float(loss_values(loss, np.array([mbar]), k)[0])
            # gamma from touching at mbar: g(mbar) = f(mbar).
            g = a * m * m - 2 * b * m + (fbar - a * mbar * mbar + 2 * b * mbar)
            assert np.all(g >= f - 1e-12), (loss, mbar)


# --------------------------------------------------------------------- alpha-Maj vs Maj
def test_alpha_maj_same_loss_in_fewer_iterations():
    X, y = _data(n=250, m=8, seed=5)
    problem = Problem(X, y, C=C_from_lambda(2.0, "svmmaj"), loss="hinge", intercept="free")
    # The printed algorithms: the active-set finishing step would end all three in a few steps.
    maj = solvers.fit(problem, "svmmaj", budget=TIGHT, finish=False)
    amaj = solvers.fit(problem, "alpha_maj", budget=TIGHT, finish=False)
    relaxed = solvers.fit(problem, "svmmaj", budget=TIGHT, relax=True, finish=False)
    assert abs(amaj.primal - maj.primal) <= 1e-6 * maj.primal
    assert abs(relaxed.primal - maj.primal) <= 1e-6 * maj.primal
    assert amaj.n_iter < maj.n_iter
    assert relaxed.n_iter < maj.n_iter


def test_dense_sparse_and_cg_agree():
    X, y = _data(n=120, m=7, seed=7, sparse=True)
    kw = dict(C=0.5, loss="squared_hinge", intercept="free")
    dense = solvers.fit(Problem(X.toarray(), y, **kw), "svmmaj", budget=Budget(tol=1e-10, max_iter=5000))
    chol = solvers.fit(Problem(X, y, **kw), "svmmaj", budget=Budget(tol=1e-10, max_iter=5000))
    cg = solvers.fit(Problem(X, y, **kw), "svmmaj", budget=Budget(tol=1e-10, max_iter=5000), linsolve="cg")
    assert cg.info["linsolve"] == "cg" and chol.info["linsolve"] == "cholesky"
    for other in (chol, cg):
        assert other.primal == pytest.approx(dense.primal, rel=1e-8)
        np.testing.assert_allclose(other.w, dense.w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("intercept", ["free", "regularized", "none"])
def test_the_n_space_solve_is_the_p_space_one(intercept):
    """More features than rows: the exact n x n (Woodbury) solve gives each majorization step
    the p x p Cholesky's, so both take the same iterations to the same certified optimum of the
    absolute hinge; linsolve=auto switches to it from CG where p > 1500 and CG falls short."""
    rng = np.random.default_rng(4)
    X = sp.random(60, 300, density=0.05, random_state=4, format="csr")
    y = np.where(X @ rng.normal(size=300) + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    problem = Problem(X, y, C=1.0, loss="hinge", intercept=intercept)
    budget = Budget(tol=1e-7, max_iter=3000)
    kernel = solvers.fit(problem, "svmmaj", budget=budget, linsolve="kernel")
    chol = solvers.fit(problem, "svmmaj", budget=budget, linsolve="cholesky")
    assert kernel.status == "converged" and kernel.n_iter == chol.n_iter
    assert kernel.primal == pytest.approx(chol.primal, rel=1e-9)
    assert -1e-12 * kernel.primal <= kernel.gap <= 1e-6 * kernel.primal
    # p > 1500: auto starts with CG, and switches to the n-space solve once CG falls short
    # (the kink weights); a cap of 1 CG step forces that at the first iteration.
    wide = Problem(sp.hstack([X] * 6, format="csr"), y, C=1.0, loss="hinge", intercept=intercept)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = solvers.fit(wide, "svmmaj", budget=Budget(max_iter=1))
        switched = solvers.fit(wide, "svmmaj", budget=Budget(max_iter=1), cg_maxiter=1)
    assert first.info["linsolve"] == "cg" and switched.info["linsolve"] == "kernel"


def test_a_cg_step_without_decrease_switches_to_the_exact_solve(monkeypatch):
    """CG can meet its tolerance and still not lower L (the kink weights): auto then retries
    the step with the n-space solve instead of stopping there as `stalled`."""
    import solvers.majorization as mj
    X = sp.random(60, 1800, density=0.02, random_state=5, format="csr")
    y = np.where(np.asarray(X.sum(axis=1)).ravel() > np.median(np.asarray(X.sum(axis=1))), 1.0, -1.0)
    problem = Problem(X, y, C=1.0, loss="hinge", intercept="free")
    monkeypatch.setattr(mj.spla, "cg", lambda A, b, x0, **kw: (x0, 0))   # "converged", no step
    fit = solvers.fit(problem, "svmmaj", budget=Budget(tol=1e-7, max_iter=3000))
    assert fit.info["linsolve"] == "kernel" and fit.status == "converged" and fit.n_iter > 1


def test_warm_start_from_the_optimum_stops_at_once():
    X, y = _data(seed=8)
    problem = Problem(X, y, C=0.5, loss="hinge", intercept="free")
    first = solvers.fit(problem, "alpha_maj", budget=TIGHT)
    again = solvers.fit(problem, "alpha_maj", budget=TIGHT, warm_start=first)
    assert again.n_iter <= 3 and again.primal <= first.primal * (1 + 1e-9)


def test_estimator_front():
    X, y = _data(seed=9)
    clf = solvers.SVMClassifier(solver="alpha_maj", C=0.5, intercept="free", tol=1e-7).fit(X, y)
    problem = Problem(X, y, C=0.5, loss="hinge", intercept="free")
    fit = solvers.fit(problem, "alpha_maj", budget=TIGHT)
    assert clf.objective_ == pytest.approx(fit.primal, rel=1e-9)
    assert clf.score(X, y) > 0.7


def test_budget_and_timeout_statuses_warn():
    X, y = _data(seed=10)
    problem = Problem(X, y, C=0.5, loss="hinge", intercept="free")
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        fit = solvers.fit(problem, "svmmaj", budget=Budget(tol=1e-7, max_iter=3))
    assert fit.status == "max_iter" and fit.n_iter == 3 and math.isfinite(fit.gap)


def test_a_budget_stop_at_a_certified_point_is_converged():
    """The duality gap, not the decrease rule, is what `converged` means: a run whose decrease
    never falls below tol (tol 1e-15) but whose final gap meets gap_tol ends `converged`; with a
    gap_tol its point does not meet, the same run keeps `max_iter` (issue 10: rcv1_like timeouts
    that were already certified)."""
    X, y = _data(seed=3)
    problem = Problem(X, y, C=0.5, loss="squared_hinge", intercept="free")
    budget = Budget(tol=1e-15, max_iter=200)
    fit = solvers.fit(problem, "svmmaj", budget=budget, gap_tol=1e-6)
    assert fit.status == "converged" and fit.n_iter == 200
    assert -1e-12 * fit.primal <= fit.gap <= 1e-6 * fit.primal
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        short = solvers.fit(problem, "svmmaj", budget=budget, gap_tol=1e-300)
    assert short.status == "max_iter" and short.gap > 0


# ------------------------------------------------------------- the active-set finish (issue 10)
@pytest.fixture(scope="module")
def stalled_case():
    """Standardised breast_cancer (569 x 30) at C = 0.03: the default svmmaj (tol 1e-5) stopped
    there `stalled`, 5e-6 above f* with a relative gap of 1.8e-4 (gap_tol 1e-4), as 12 of the
    default sweep's fits did. f* from the interior point (qp, linear kernel) at tol 1e-11: its
    own certificate pins it to 1e-15 (LIBSVM's SVC at tol 1e-12 is still 2e-9 above it)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler
    X, y = load_breast_cancer(return_X_y=True)
    problem = Problem(StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0), C=0.03,
                      loss="hinge", intercept="free")
    ref = solvers.fit(replace(problem, kernel=Kernel("linear")), "qp", budget=Budget(tol=1e-11, max_iter=500))
    assert ref.status == "converged" and abs(ref.gap) <= 1e-13 * ref.primal
    return problem, ref.primal


def test_a_stalled_default_fit_ends_certified(stalled_case, monkeypatch):
    """Without the active-set finish the default fit stalls; with it, it ends `converged`, its
    gap within gap_tol (10 tol) and the independent f* inside [P - gap, P]."""
    import solvers.majorization as mj
    problem, f_star = stalled_case
    fit = solvers.fit(problem, "svmmaj")
    assert fit.status == "converged" and fit.gap <= 1e-4 * fit.primal
    assert fit.primal - fit.gap <= f_star * (1 + 1e-9) and f_star <= fit.primal * (1 + 1e-9)
    monkeypatch.setattr(mj, "kkt_finish", lambda *args, **kw: None)
    with pytest.warns(ConvergenceWarning, match="stalled"):
        before = solvers.fit(problem, "svmmaj")
    assert before.status == "stalled" and before.gap > 1e-4 * before.primal


def test_the_active_set_dual_certifies_the_point_itself(stalled_case):
    """The dual from the active set is alpha* once the margin set is right, so without the
    finishing step (finish=False: the iterates are the majorization's) the gap is the point's
    true suboptimality P - f*, where the majorizer's multipliers overstated it 30-fold."""
    problem, f_star = stalled_case
    fit = solvers.fit(problem, "svmmaj", finish=False)
    assert fit.status == "converged" and fit.primal - f_star > 1e-6 * f_star
    assert abs(fit.gap - (fit.primal - f_star)) <= 1e-9 * f_star


def test_the_finishing_step_reaches_the_optimum_in_fewer_iterations(stalled_case):
    """The finishing step's exact KKT solve ends at f* to rounding (the majorization alone stops
    1e-5 above it at tol 1e-5) and in fewer iterations."""
    problem, f_star = stalled_case
    fit = solvers.fit(problem, "svmmaj")
    plain = solvers.fit(problem, "svmmaj", finish=False)
    assert abs(fit.primal - f_star) <= 1e-10 * f_star and abs(fit.gap) <= 1e-10 * f_star
    assert fit.n_iter < plain.n_iter


# ---------------------------------------------------------------------------- bad input
def test_bad_input_names_the_parameter():
    X, y = _data(n=20, m=2)
    for lam in (0.0, -1.0):
        with pytest.raises(ValueError, match="lambda"):
            C_from_lambda(lam, "svmmaj")
    for C in (0.0, -2.0):
        with pytest.raises(ProblemError, match="C="):
            Problem(X, y, C=C, intercept="free")
    with pytest.raises(ProblemError, match="loss"):
        Problem(X, y, loss="logistic_hinge")
    with pytest.raises(ValueError, match="loss"):
        majorizer_coefficients("logistic_hinge", np.zeros(3))
    with pytest.raises(ProblemError, match="huber_k"):
        Problem(X, y, loss="huber_hinge", huber_k=-1.0)
    with pytest.raises(ValueError, match="huber_k"):
        majorizer_coefficients("huber_hinge", np.zeros(3), huber_k=-3.0)
    problem = Problem(X, y, intercept="free")
    with pytest.raises(SolverError, match="delta"):
        solvers.fit(problem, "svmmaj", delta=0.0)
    with pytest.raises(SolverError, match="linsolve"):
        solvers.fit(problem, "svmmaj", linsolve="lu")
    with pytest.raises(SolverError, match="loss"):
        solvers.fit(Problem(X, y, loss="squared_hinge", intercept="free"), "alpha_maj")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solvers.fit(problem, "svmmaj", budget=TIGHT)  # a valid call neither raises nor warns


# ---------------------------------------------------------------------------- random starts
@pytest.mark.parametrize("solver", ["svmmaj", "alpha_maj", "cd_cpm", "gd_cpm"])
def test_random_start_is_seeded_on_its_own(solver):
    """init='random' draws v from its own generator: one iteration from seeds 0 and 1 ends at
    different points, the same seed twice at the same point bit for bit; init='zero' ignores it."""
    X, y = _data(seed=11)
    problem = Problem(X, y, C=0.5, loss="hinge", intercept="free")
    one = Budget(tol=1e-7, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a, b, a2 = (solvers.fit(problem, solver, budget=one, init="random", init_seed=s) for s in (0, 1, 0))
        z0, z1 = (solvers.fit(problem, solver, budget=one, init="zero", init_seed=s) for s in (0, 1))
    assert not np.allclose(a.w, b.w)
    assert np.array_equal(a.w, a2.w) and a.b == a2.b and a.primal == a2.primal
    assert np.array_equal(z0.w, z1.w)


@pytest.mark.parametrize("solver", ["svmmaj", "alpha_maj"])
def test_majorization_reaches_the_certified_optimum_from_any_start(solver):
    """From three random starts the certified solve ends at SVC's optimum within 1e-6."""
    X, y = _data(seed=12)
    problem = Problem(X, y, C=0.5, loss="hinge", intercept="free")
    svc = SVC(kernel="linear", C=problem.C, tol=1e-12, max_iter=10**7).fit(X, y)
    P_svc = primal_objective(problem, svc.coef_.ravel(), float(svc.intercept_[0]))
    for seed in (0, 1, 2):
        fit = solvers.fit(problem, solver, budget=TIGHTER, init="random", init_seed=seed)
        assert fit.status == "converged" and abs(fit.primal - P_svc) <= 1e-6 * P_svc, seed


def test_bad_start_parameters_are_refused():
    X, y = _data(n=20, m=2)
    problem = Problem(X, y, intercept="free")
    with pytest.raises(SolverError, match="init='rnd'"):
        solvers.fit(problem, "svmmaj", init="rnd")
    with pytest.raises(SolverError, match="init_seed"):
        solvers.fit(problem, "cd_cpm", init="random", init_seed=-1)
