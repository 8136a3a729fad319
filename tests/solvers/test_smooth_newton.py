"""smooth_newton: its answers against LIBLINEAR and dcd, its certificate recomputed here, and each
of its mechanisms (continuation, identification, the gap stopping test, warm start, stalling)."""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from a9a_like import a9a_like
from solvers import Budget, Problem, fit
from solvers.objectives import primal_objective


@pytest.fixture(scope="module")
def small():
    return a9a_like(n=400, seed=1)


def _liblinear_primal(problem):
    ref = LinearSVC(C=problem.C, loss=problem.loss, fit_intercept=problem.intercept == "regularized",
                    intercept_scaling=problem.intercept_scaling, dual=True, tol=1e-10, max_iter=200_000,
                    random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(problem.X, problem.y)
    return primal_objective(problem, ref.coef_.ravel(), float(np.ravel(ref.intercept_)[0]))


def _dual_by_hand(problem, alpha):
    """D(alpha) from alpha alone: sum alpha - 1/2 ||X'(alpha y)||^2 - 1/2 (B sum alpha y)^2
    (- ||alpha||^2 / (4C) for the squared hinge), after checking the box."""
    assert alpha.min() >= 0.0
    if problem.loss == "hinge":
        assert alpha.max() <= problem.C
    ay = alpha * problem.y
    X = problem.X.toarray() if sp.issparse(problem.X) else problem.X
    wa = X.T @ ay
    D = alpha.sum() - 0.5 * wa @ wa - 0.5 * (problem.B * ay.sum()) ** 2
    if problem.loss == "squared_hinge":
        D -= alpha @ alpha / (4.0 * problem.C)
    return D


def _check_certificate(problem, res, tol):
    """The reported P is the model's, the reported D is alpha's, and P - D is small and >= 0."""
    assert res.primal == pytest.approx(primal_objective(problem, res.w, res.b), rel=1e-12)
    assert res.dual == pytest.approx(_dual_by_hand(problem, res.alpha), rel=1e-12, abs=1e-12)
    assert res.gap == pytest.approx(res.primal - res.dual, rel=1e-12, abs=1e-12)
    assert -1e-12 * abs(res.primal) <= res.gap <= tol * abs(res.primal)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("intercept", ["none", "regularized"])
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_matches_liblinear_dense_and_csr(small, loss, intercept, C):
    X, y = small
    fits = []
    for Xf in (X, X.toarray()):
        problem = Problem(Xf, y, C=C, loss=loss, intercept=intercept)
        res = fit(problem, "smooth_newton", budget=Budget(tol=1e-10))
        assert res.status == "converged"
        _check_certificate(problem, res, 1e-10)
        fits.append(res)
    ref = _liblinear_primal(problem)
    # Never above LIBLINEAR (measured: at C = 100 LIBLINEAR stops up to 7e-3 above the certified
    # optimum, elsewhere within 3e-12 of it), and as close as its own tolerance where it converges.
    assert fits[0].primal <= ref * (1 + 1e-10)
    if C <= 1.0:
        assert fits[0].primal == pytest.approx(ref, rel=1e-9)
    # Dense and CSR take the same path (the Hessian from sparse products either way).
    assert fits[0].primal == pytest.approx(fits[1].primal, rel=1e-12)
    assert fits[0].n_iter == fits[1].n_iter


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_matches_dcd_at_tight_tol(small, loss):
    X, y = small
    problem = Problem(X, y, C=0.1, loss=loss, intercept="regularized")
    ours = fit(problem, "smooth_newton", budget=Budget(tol=1e-10))
    dcd = fit(problem, "dcd", budget=Budget(tol=1e-10, max_iter=1_000_000))
    assert ours.status == dcd.status == "converged"
    assert ours.primal == pytest.approx(dcd.primal, rel=1e-9)
    # Both certificates bound the same optimum.
    assert max(ours.dual, dcd.dual) <= min(ours.primal, dcd.primal) * (1 + 1e-12)


def test_large_C_where_dcd_crawls():
    # Issue #10: at large C the hinge problem on binary one-hot features is degenerate and dcd
    # crawls. Measured (3000 x 123, C = 1000): dcd after 10^4 passes at relative gap 0.34 (its P
    # 22% above the optimum); smooth_newton certifies 1e-9 (3.7e-12) in 236 steps.
    X, y = a9a_like(n=3000, seed=2)
    problem = Problem(X, y, C=1000.0, loss="hinge", intercept="regularized")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dcd = fit(problem, "dcd", budget=Budget(tol=1e-9, max_iter=10_000))
    ours = fit(problem, "smooth_newton", budget=Budget(tol=1e-9))
    assert dcd.status == "max_iter" and dcd.gap / dcd.primal > 1e-2
    assert ours.status == "converged"
    _check_certificate(problem, ours, 1e-9)
    assert ours.primal < dcd.primal


def test_warm_start_from_optimum_takes_one_step(small):
    X, y = small
    problem = Problem(X, y, C=50.0, loss="hinge", intercept="regularized")
    first = fit(problem, "smooth_newton", budget=Budget(tol=1e-10))
    again = fit(problem, "smooth_newton", budget=Budget(tol=1e-10), warm_start={"w": first.w, "b": first.b})
    assert again.status == "converged" and again.n_iter == 1 and again.info["identified"]
    assert again.primal == pytest.approx(first.primal, rel=1e-12)
    _check_certificate(problem, again, 1e-10)


def test_warm_start_off_in_scale_is_rescaled(small):
    # The exact line search along the warm start finds the multiple of it that is best; from
    # 3 w* that is w* itself, identified at once (two iterations: the try at 3 w*, then at w*).
    X, y = small
    problem = Problem(X, y, C=50.0, loss="hinge", intercept="regularized")
    first = fit(problem, "smooth_newton", budget=Budget(tol=1e-10))
    again = fit(problem, "smooth_newton", budget=Budget(tol=1e-10), warm_start={"w": 3 * first.w, "b": 3 * first.b})
    assert again.status == "converged" and again.n_iter == 2 and again.info["identified"]
    assert again.primal == pytest.approx(first.primal, rel=1e-10)


def test_warm_start_from_a_smaller_C(small):
    # The pipeline's C path: the previous C's solution, rescaled by the exact line search along
    # it, starts the next. Measured: 81 steps warm from C = 10 against 117 cold at C = 20.
    X, y = small
    prev = fit(Problem(X, y, C=10.0, intercept="regularized"), "smooth_newton", budget=Budget(tol=1e-10))
    problem = Problem(X, y, C=20.0, intercept="regularized")
    cold = fit(problem, "smooth_newton", budget=Budget(tol=1e-10))
    warm = fit(problem, "smooth_newton", budget=Budget(tol=1e-10), warm_start=prev)
    assert cold.status == warm.status == "converged"
    assert warm.primal == pytest.approx(cold.primal, rel=1e-9)
    assert warm.n_iter < cold.n_iter


def test_continuation_alone_closes_the_gap(small):
    # Without the exact step, the gap is only the smoothing error |S| C mu / 4 at each stage's
    # optimum, so it must fall with mu: more stages, a smaller certified gap.
    X, y = small
    problem = Problem(X, y, C=10.0, loss="hinge", intercept="regularized")
    res = fit(problem, "smooth_newton", budget=Budget(tol=1e-7), identify=False)
    assert res.status == "converged" and res.info["n_identify"] == 0
    assert res.info["n_stages"] >= 4 and res.info["mu_end"] <= 1e-3
    _check_certificate(problem, res, 1e-7)


def test_identification_reaches_the_rounding_level(small):
    # With the exact step the gap closes to rounding (measured 2.3e-13 after 86 steps); without
    # it each stage at mu leaves ~ |S| C mu / 4 (measured 4.6e-11 after 500 steps, mu = 1e-10).
    X, y = small
    problem = Problem(X, y, C=10.0, loss="hinge", intercept="regularized")
    res = fit(problem, "smooth_newton", budget=Budget(tol=1e-12, max_iter=300))
    assert res.status == "converged" and res.info["identified"]
    _check_certificate(problem, res, 1e-12)
    with pytest.warns(ConvergenceWarning):
        bare = fit(problem, "smooth_newton", budget=Budget(tol=1e-12, max_iter=300), identify=False)
    assert bare.status != "converged" and bare.gap > 1e-12 * bare.primal


def test_stopping_test_is_the_relative_gap(small):
    X, y = small
    problem = Problem(X, y, C=10.0, loss="hinge", intercept="regularized")
    loose = fit(problem, "smooth_newton", budget=Budget(tol=1e-2), identify=False)
    tight = fit(problem, "smooth_newton", budget=Budget(tol=1e-8), identify=False)
    assert loose.status == tight.status == "converged"
    assert loose.gap <= 1e-2 * loose.primal and tight.gap <= 1e-8 * tight.primal
    # The loose run stopped as soon as its gap passed, not after the tight run's work.
    assert loose.n_iter < tight.n_iter and loose.gap > 1e-8 * loose.primal


def test_unreachable_tol_stalls_instead_of_spinning(small):
    # 1e-17 relative is below rounding: the solver must say so well before its cap.
    X, y = small
    problem = Problem(X, y, C=10.0, loss="hinge", intercept="regularized")
    with pytest.warns(ConvergenceWarning, match="stalled"):
        res = fit(problem, "smooth_newton", budget=Budget(tol=1e-17, max_iter=1000))
    assert res.status == "stalled" and res.n_iter < 1000 and res.info["stop_reason"]
    _check_certificate(problem, res, 1e-12)


def test_max_iter_and_timeout_are_statuses(small):
    X, y = small
    problem = Problem(X, y, C=10.0, loss="hinge", intercept="regularized")
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        res = fit(problem, "smooth_newton", budget=Budget(tol=1e-10, max_iter=3))
    assert res.status == "max_iter" and res.n_iter == 3
    # Even stopped early, the returned pair is certified: D(alpha) <= f* <= P(w).
    assert res.dual == pytest.approx(_dual_by_hand(problem, res.alpha), rel=1e-12)
    assert res.gap >= 0 and math.isfinite(res.gap)


def test_cg_newton_system_reaches_the_same_optimum(small):
    # The path for many features (CG on H = I + (C/mu) Z_S'Z_S instead of its Cholesky): same
    # certified optimum (measured: 72 steps, 1956 CG iterations against 46 direct steps).
    X, y = small
    problem = Problem(X, y, C=1.0, loss="hinge", intercept="regularized")
    direct = fit(problem, "smooth_newton", budget=Budget(tol=1e-10), linear_solver="direct")
    cg = fit(problem, "smooth_newton", budget=Budget(tol=1e-10), linear_solver="cg")
    assert direct.status == cg.status == "converged" and cg.info["n_cg"] > 0
    assert cg.primal == pytest.approx(direct.primal, rel=1e-10)
    _check_certificate(problem, cg, 1e-10)
