"""The change point method (troyan Section 4) and the searches built on it (cd_cpm, gd_cpm).

Certificates: the CPM step against a fine 1-D grid with local refinement and against the
subgradient condition 0 in [E, S] computed by a slow independent formula; each of the six
positions of troyan's Figure 4 built by hand with exact arithmetic; CD and GD against an
independent optimum (scikit-learn's SVC), their stalled status against the duality gap.
"""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

import solvers
from solvers import Budget, Problem, Recorder
from solvers.cpm import CASES, augmented_design, certificate, cpm_step, join_v
from solvers.objectives import C_from_lambda, primal_objective


def _phi(Z, y, v, s, lam, pen):
    """L(v + h s) by the obvious formula."""
    def f(h):
        vh = v + h * s
        return float(np.maximum(0.0, 1.0 - y * (Z @ vh)).sum() + lam * vh @ (pen * vh))
    return f


def _one_sided(Z, y, v, s, lam, pen, h):
    """Left and right derivatives of h -> L(v + h s), each term on its own (slow reference)."""
    r = 1.0 - y * (Z @ v)
    d = y * (Z @ s)
    t = r - h * d  # the hinge argument of each term at h
    tol = 1e-9 * (1.0 + np.abs(r))
    at_kink = np.abs(t) <= tol
    active = (t > 0) & ~at_kink
    base = float(-d[active].sum()) + 2.0 * lam * float((v + h * s) @ (pen * s))
    # At a kink the term's slope is 0 on one side and -d on the other.
    right = base + float(-d[at_kink & (d < 0)].sum())
    left = base + float(-d[at_kink & (d > 0)].sum())
    return left, right


def _random_problem(rng, n=60, p=6, free=True):
    Z = rng.normal(size=(n, p))
    pen = np.ones(p)
    if free:
        Z[:, 0] = 1.0
        pen[0] = 0.0
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return Z, y, pen


@pytest.mark.parametrize("seed", range(8))
def test_cpm_step_is_the_exact_minimiser_along_s(seed):
    rng = np.random.default_rng(seed)
    Z, y, pen = _random_problem(rng, free=seed % 2 == 0)
    v = rng.normal(size=Z.shape[1])
    s = rng.normal(size=Z.shape[1])
    lam = float(rng.choice([1e-3, 0.1, 1.0, 10.0]))
    res = cpm_step(Z, y, v, s, lam, pen=pen)
    f = _phi(Z, y, v, s, lam, pen)
    assert res.case in CASES
    assert res.loss == pytest.approx(f(res.h), rel=1e-12)
    # Fine grid around h, then a bounded Brent refinement in the best cell.
    grid = res.h + np.linspace(-5.0, 5.0, 20001)
    r, d = 1.0 - y * (Z @ v), y * (Z @ s)  # the same f on the whole grid at once
    pv, ps_, ss = v @ (pen * v), v @ (pen * s), s @ (pen * s)
    vals = np.maximum(0.0, r[None, :] - grid[:, None] * d[None, :]).sum(axis=1) \
        + lam * (pv + 2 * grid * ps_ + grid ** 2 * ss)
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    ref = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    assert f(res.h) <= min(vals.min(), ref.fun) + 1e-10 * abs(ref.fun)
    # Subgradient condition 0 in [E, S] at h, by the slow formula and as reported.
    left, right = _one_sided(Z, y, v, s, lam, pen, res.h)
    scale = 1.0 + float(np.abs(y * (Z @ s)).sum())
    assert left <= 1e-9 * scale and right >= -1e-9 * scale
    assert res.E <= 1e-9 * scale and res.S >= -1e-9 * scale


def test_cpm_step_with_tied_change_points():
    # Rows duplicated: pairs of equal change points act as one kink of double slope.
    rng = np.random.default_rng(3)
    Z, y, pen = _random_problem(rng, n=20, p=3)
    Z, y = np.vstack([Z, Z]), np.concatenate([y, y])
    v, s = rng.normal(size=3), rng.normal(size=3)
    res = cpm_step(Z, y, v, s, 0.05, pen=pen)
    left, right = _one_sided(Z, y, v, s, 0.05, pen, res.h)
    assert left <= 1e-9 and right >= -1e-9


# The six positions of Figure 4, on phi(h) = sum_i max(0, 1 - d_i h) + lam pen h^2 (v = 0,
# s = 1, one column holding d_i = y_i z_i, so the change points are p_i = 1 / d_i). The
# numbers are dyadic, so every derivative below is exact in floating point.
SIX = {
    # a: between the change points 1/4 (d = 4) and 1 (d = 1, 1): phi' = -2 + 5 h = 0.
    "a": (np.array([4.0, 1.0, 1.0]), 2.5, 1.0, 0.4, None, None),
    # b: at the change point 0.5 of d = (2, 2) with a small penalty: E = -4 + 1/64, S = 1/64.
    "b": (np.array([2.0, 2.0]), 1.0 / 64, 1.0, 0.5, -4.0 + 1.0 / 64, 1.0 / 64),
    # c: d = -4 (change point -1/4, active to its right), lam = 8: S = 4 - 4 = 0, E = -4.
    "c": (np.array([-4.0]), 8.0, 1.0, -0.25, -4.0, 0.0),
    # d: d = 4 (change point 1/4, active to its left), lam = 8: E = -4 + 4 = 0, S = 4.
    "d": (np.array([4.0]), 8.0, 1.0, 0.25, 0.0, 4.0),
    # e: d = -1 (change point -1), lam = 4: right of it phi' = 1 + 8 h = 0 at h = -1/8.
    "e": (np.array([-1.0]), 4.0, 1.0, -0.125, None, None),
    # f: d = (1, 1) (change point 1), lam = 4: left of it phi' = -2 + 8 h = 0 at h = 1/4.
    "f": (np.array([1.0, 1.0]), 4.0, 1.0, 0.25, None, None),
}


@pytest.mark.parametrize("case", sorted(SIX))
def test_cpm_step_each_position_of_figure_4(case):
    d, lam, pen, h_expected, E, S = SIX[case]
    n = d.size
    Z = d[:, None].copy()
    y = np.ones(n)
    res = cpm_step(Z, y, np.zeros(1), np.ones(1), lam, pen=np.array([pen]))
    assert res.case == case
    assert res.h == h_expected
    if E is not None:
        assert (res.E, res.S) == (E, S)
    else:
        assert res.E == res.S == pytest.approx(0.0, abs=1e-12)


def test_cpm_step_unpenalised_intercept_direction():
    # Troyan: the intercept is searched without the penalty. Along e_0 with pen_0 = 0 the loss
    # is piecewise linear; its minimum is at a change point (b) or on a flat piece (c/d).
    rng = np.random.default_rng(11)
    Z, y, pen = _random_problem(rng, n=41, p=4)
    v = rng.normal(size=4)
    s = np.array([1.0, 0.0, 0.0, 0.0])
    res = cpm_step(Z, y, v, s, 0.7, pen=pen)
    assert res.case in ("b", "c", "d")
    f = _phi(Z, y, v, s, 0.7, pen)
    grid = res.h + np.linspace(-3, 3, 6001)
    assert f(res.h) <= min(f(h) for h in grid) + 1e-12


def test_cpm_step_sparse_equals_dense():
    rng = np.random.default_rng(5)
    Z, y, pen = _random_problem(rng, n=50, p=8)
    Z[rng.random(Z.shape) < 0.6] = 0.0
    Z[:, 0] = 1.0
    v, s = rng.normal(size=8), rng.normal(size=8)
    a = cpm_step(Z, y, v, s, 0.3, pen=pen)
    b = cpm_step(sp.csr_matrix(Z), y, v, s, 0.3, pen=pen)
    assert a.h == pytest.approx(b.h, rel=1e-12) and a.case == b.case


def test_cpm_step_bad_input_names_the_parameter():
    Z = np.ones((3, 2))
    y = np.array([1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match=r"\bs\b.*zero"):
        cpm_step(Z, y, np.ones(2), np.zeros(2), 1.0)
    for lam in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="lam"):
            cpm_step(Z, y, np.ones(2), np.ones(2), lam)
    with pytest.raises(ValueError, match="s has shape"):
        cpm_step(Z, y, np.ones(2), np.ones(3), 1.0)
    with pytest.raises(ValueError, match="pen"):
        cpm_step(Z, y, np.ones(2), np.ones(2), 1.0, pen=np.array([1.0, -1.0]))


# ---------------------------------------------------------------------------- CD and GD
def _data(n=150, m=6, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    w = rng.normal(size=m)
    y = np.where(X @ w + 0.3 + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    return X, y


def _svc_optimum(problem):
    svc = SVC(kernel="linear", C=problem.C, tol=1e-12, max_iter=10**7).fit(problem.X, problem.y)
    return primal_objective(problem, svc.coef_.ravel(), float(svc.intercept_[0]))


@pytest.mark.parametrize("solver", ["cd_cpm", "gd_cpm"])
def test_cpm_searches_never_increase_the_loss_and_classify_their_stop(solver):
    X, y = _data(seed=1)
    problem = Problem(X, y, C=C_from_lambda(0.5, "svmmaj"), loss="hinge", intercept="free")
    rec = Recorder(per_decade=10**6, max_overhead=None)  # a point at every iteration
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = solvers.fit(problem, solver, budget=Budget(tol=1e-7, max_iter=3000), recorder=rec)
    P = np.array([p[2] for p in rec.points])
    assert np.all(np.diff(P) <= 1e-12 * P[1:])
    assert fit.primal == pytest.approx(primal_objective(problem, fit.w, fit.b), rel=1e-12)
    assert fit.info["loss_L"] == pytest.approx(fit.primal / problem.C)
    P_star = _svc_optimum(problem)
    assert fit.primal >= P_star * (1 - 1e-6)
    assert fit.gap >= fit.primal - P_star - 1e-9 * P_star  # the gap bounds the true excess
    # The status follows the certificate: stalled exactly when the gap says "not optimal".
    if fit.gap > 10 * 1e-7 * fit.primal:  # gap_tol defaults to 10 tol
        assert fit.status == "stalled"
    else:
        assert fit.status == "converged"
        assert fit.primal <= P_star * (1 + 1e-6)


def test_cd_cpm_stalls_away_from_the_optimum_and_warns():
    # Troyan 5.2: CD with the exact line search zigzags to a non-optimal point of the
    # non-smooth loss. The stop must say "stalled" (and warn), not "converged".
    X, y = _data(n=200, m=8, seed=4)
    problem = Problem(X, y, C=C_from_lambda(1.0, "svmmaj"), loss="hinge", intercept="free")
    P_star = _svc_optimum(problem)
    with pytest.warns(ConvergenceWarning, match="stalled"):
        fit = solvers.fit(problem, "cd_cpm", budget=Budget(tol=1e-7))
    assert fit.status == "stalled"
    assert fit.primal > P_star * (1 + 1e-4)
    assert fit.info["rel_gap"] > 1e-5
    # It is a coordinate-wise minimum: no coordinate direction decreases L (beyond the tol
    # at which it stopped).
    Z, pen = augmented_design(problem)
    v = join_v(problem, fit.w, fit.b)
    lam = fit.info["lambda"]
    for j in range(Z.shape[1]):
        e = np.zeros(Z.shape[1])
        e[j] = 1.0
        step = cpm_step(Z, y, v, e, lam, pen=pen)
        assert step.loss >= fit.info["loss_L"] * (1 - 1e-9)


def test_cd_cpm_dense_and_sparse_agree():
    X, y = _data(n=80, m=5, seed=2, sparse=True)
    kw = dict(C=0.7, loss="hinge", intercept="free")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = solvers.fit(Problem(X, y, **kw), "cd_cpm", budget=Budget(tol=1e-7, max_iter=50))
        b = solvers.fit(Problem(X.toarray(), y, **kw), "cd_cpm", budget=Budget(tol=1e-7, max_iter=50))
    np.testing.assert_allclose(a.w, b.w, rtol=1e-10, atol=1e-12)
    assert a.b == pytest.approx(b.b, rel=1e-10, abs=1e-12)


def test_certificate_is_tight_at_the_optimum():
    X, y = _data(n=120, m=5, seed=6)
    problem = Problem(X, y, C=0.3, loss="hinge", intercept="free")
    svc = SVC(kernel="linear", C=problem.C, tol=1e-12, max_iter=10**7).fit(X, y)
    Z, pen = augmented_design(problem)
    v = join_v(problem, svc.coef_.ravel(), float(svc.intercept_[0]))
    P, D, gap, kkt = certificate(problem, Z, pen, v, y * (Z @ v))
    assert 0 <= gap <= 1e-6 * P  # weak duality, and tight at SVC's optimum
    # Near the optimum (same active sets) the gap is about the loss excess itself, not its
    # square root: the KKT polish recovers alpha* from the sets alone.
    rng = np.random.default_rng(0)
    v2 = v + 1e-6 * rng.normal(size=v.size)
    P2, D2, gap2, _ = certificate(problem, Z, pen, v2, y * (Z @ v2))
    excess = P2 - D  # D is (up to 1e-6) the optimum
    assert gap2 >= excess - 1e-6 * P and gap2 <= 10 * abs(excess) + 1e-8 * P


def test_cpm_searches_refuse_other_losses():
    X, y = _data(n=20, m=2)
    for solver in ("cd_cpm", "gd_cpm"):
        with pytest.raises(solvers.SolverError, match="loss"):
            solvers.fit(Problem(X, y, loss="squared_hinge", intercept="free"), solver)


@pytest.mark.parametrize("U", [1.0, math.inf])
def test_projection_onto_the_dual_feasible_set(U):
    # The certificate's projection onto {0 <= alpha <= U, y'alpha = 0} against SLSQP.
    from scipy.optimize import minimize

    from solvers.cpm import _project_equality
    rng = np.random.default_rng(1)
    for _ in range(3):
        y = np.where(rng.random(25) < 0.4, -1.0, 1.0)
        a = 2.0 * rng.normal(size=25)
        p = _project_equality(a, y, U)
        ref = minimize(lambda x: 0.5 * np.sum((x - a) ** 2), np.clip(a, 0, min(U, 5)), jac=lambda x: x - a,
                       bounds=[(0, U if math.isfinite(U) else None)] * 25, method="SLSQP",
                       constraints=[{"type": "eq", "fun": lambda x: y @ x, "jac": lambda x: y}],
                       options={"ftol": 1e-15, "maxiter": 1000})
        assert abs(y @ p) <= 1e-12 and p.min() >= 0 and p.max() <= U
        np.testing.assert_allclose(p, ref.x, atol=1e-8)
