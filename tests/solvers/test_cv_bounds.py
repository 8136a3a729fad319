"""The CV error lower bound (solvers/cv_bounds.py) against exact solutions and slow, obvious
reference computations: the lemma's ball holds the exact solution at every C, each row's
interval is where the ball's largest margin is negative, the merged count is the union, and the
bound never exceeds the exact CV error at any C."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

import solvers
from solvers import Budget, Problem
from solvers.cv_bounds import Certificate, alpha_from_w, certificate, lower_bound


def _data(n=150, d=6, seed=0, flip=0.12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = np.where(X @ w + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    y[rng.random(n) < flip] *= -1      # label noise: misclassified validation rows at every C
    return X, y


def _folds(n, k=3, seed=0):
    order = np.random.default_rng(seed).permutation(n)
    return [(np.sort(np.setdiff1d(order, part)), np.sort(part)) for part in np.array_split(order, k)]


def _fit(X, y, C, loss, intercept, tol, solver="dcd", max_iter=100_000, sample_weight=None):
    p = Problem(X, y, C=C, loss=loss, intercept=intercept, sample_weight=sample_weight)
    return p, solvers.fit(p, solver, budget=Budget(tol=tol, max_iter=max_iter))


def _exact(X, y, C, loss, intercept, sample_weight=None):
    """A solution certified to rounding (smooth_newton's gap), as the exact w*(C)."""
    p, fit = _fit(X, y, C, loss, intercept, 1e-12, "smooth_newton", 500, sample_weight)
    assert fit.gap <= 1e-9 * max(1.0, abs(fit.primal)), (C, fit.gap, fit.primal)
    return p, fit


def _augmented(p, fit):
    """w* with its intercept coordinate u (b = B u), and the rows with the constant feature B."""
    B = p.intercept_scaling if p.intercept == "regularized" else 0.0
    u = fit.b / B if B else 0.0
    return np.r_[fit.w, u], B


CASES = [("squared_hinge", "none", False), ("squared_hinge", "regularized", False), ("hinge", "none", False),
         ("hinge", "regularized", False), ("squared_hinge", "none", True), ("hinge", "regularized", True)]


@pytest.mark.parametrize("loss, intercept, weighted", CASES)
def test_the_exact_solution_at_every_C_lies_in_the_ball_of_a_loose_one(loss, intercept, weighted):
    """The lemma: ||w*(C) - (1 + rho)/2 v||^2 <= (1 - rho)^2/4 ||v||^2 + rho G, with v and G of a
    loose fit at C~, for C from C~/100 to 100 C~ (v recomputed here from alpha, the slow way);
    with sample weights (a class weighted 3 times the other) too."""
    X, y = _data()
    sw = np.where(y > 0, 3.0, 1.0) if weighted else None
    C0 = 0.3
    p0, loose = _fit(X, y, C0, loss, intercept, tol=1.0, sample_weight=sw)
    cert = certificate(p0, loose.alpha, X[:5], y[:5])
    assert cert.gap > 1e-4            # loose indeed: the gap term matters
    B = p0.intercept_scaling if intercept == "regularized" else 0.0
    _, U = solvers.objectives.dual_box_i(p0)
    alpha = np.clip(loose.alpha, 0.0, U)
    v = np.r_[sum(a * yi * xi for a, yi, xi in zip(alpha, y, X)), B * float(alpha @ y)]
    assert math.isclose(float(v @ v), cert.norm_sq, rel_tol=1e-9)
    for C in np.geomspace(C0 / 100, C0 * 100, 13):
        rho = C / C0
        w_star, _ = _augmented(*_exact(X, y, C, loss, intercept, sw))
        lhs = float(np.sum((w_star - (1 + rho) / 2 * v) ** 2))
        rhs = (1 - rho) ** 2 / 4 * cert.norm_sq + rho * cert.gap
        assert lhs <= rhs * (1 + 1e-9) + 1e-12, (C, lhs, rhs)


def test_each_rows_interval_is_where_the_balls_largest_margin_is_negative():
    """`Certificate.intervals`' closed form against the condition itself on a grid of rho:
    (1 + rho)/2 t + sqrt((1 - rho)^2/4 N + rho G) < 0."""
    rng = np.random.default_rng(1)
    N, G = 4.0, 0.01
    t = -rng.uniform(0.0, 2.0, size=200)           # |t| <= sqrt(N)
    cert = Certificate(C=2.0, norm_sq=N, gap=G, n_val=200, rows=np.arange(200), t=t)
    rows, lo, hi = cert.intervals()
    assert set(rows) == set(np.flatnonzero(t * t > G))
    log_rho = np.linspace(-4, 4, 4001)
    rho = np.exp(log_rho)
    for r, a, b in zip(rows, lo, hi):
        inside = (1 + rho) / 2 * t[r] + np.sqrt((1 - rho) ** 2 / 4 * N + rho * G) < 0
        x = math.log(2.0) + log_rho
        clear = (np.abs(x - a) > 1e-6) & (np.abs(x - b) > 1e-6)
        np.testing.assert_array_equal(inside[clear], ((x > a) & (x < b))[clear])
    # A row at t^2 <= G is never certified, wherever C is.
    never = np.flatnonzero(t * t <= G)
    for r in never:
        assert not ((1 + rho) / 2 * t[r] + np.sqrt((1 - rho) ** 2 / 4 * N + rho * G) < 0).any()


def _union_count(certs, x):
    """The rows certified at log C = x by any certificate of the fold: loops over rows."""
    hit = set()
    for c in certs:
        rows, lo, hi = c.intervals()
        for r, a, b in zip(rows, lo, hi):
            if a < x < b:
                hit.add(int(r))
    return len(hit) + max(c.always for c in certs)


def test_the_bound_counts_each_row_once_where_any_fit_certifies_it():
    """`lower_bound`'s merged intervals against the union of the rows' intervals, counted row by
    row at many C (overlapping intervals of one row count once), and its minimum over the range:
    attained at its C, and no sampled C lower."""
    rng = np.random.default_rng(2)
    folds = []
    for k in range(2):
        certs = []
        for C in (0.1, 0.3, 1.0, 3.0):
            rows = np.sort(rng.choice(60, size=25, replace=False))
            certs.append(Certificate(C=C, norm_sq=1.0, gap=1e-3, n_val=60, rows=rows,
                                     t=-rng.uniform(0.05, 0.9, size=25), always=k))
        folds.append(certs)
    bound = lower_bound(folds)
    xs = rng.uniform(math.log(0.01), math.log(30.0), size=300)
    expected = np.array([np.mean([_union_count(c, x) / 60 for c in folds]) for x in xs])
    np.testing.assert_allclose(bound.at(np.exp(xs)), expected, rtol=0, atol=1e-12)
    low, at = bound.minimum(0.01, 30.0)
    assert math.isclose(low, np.mean([_union_count(c, math.log(at)) / 60 for c in folds]), abs_tol=1e-12)
    assert low <= expected.min() + 1e-12
    assert low < bound.at([1.0])[0]       # not flat: the certificates do bound something


def _cv_errors(X, y, folds, Cs, loss, intercept):
    out = []
    for C in Cs:
        errs = []
        for tr, va in folds:
            p, fit = _exact(X[tr], y[tr], C, loss, intercept)
            f = p.decision(fit, X[va])
            errs.append(np.mean((f > 0) != (y[va] > 0)))
        out.append(np.mean(errs))
    return np.array(out)


@pytest.mark.parametrize("loss, intercept, sparse", [("squared_hinge", "none", False), ("squared_hinge", "regularized", True),
                                                      ("hinge", "none", True), ("hinge", "regularized", False)])
def test_the_bound_is_never_above_the_exact_cv_error(loss, intercept, sparse):
    """From fits at nine C values (four of them very loose), the bound at 60 C values between them and beyond is at
    most the CV error of the exact solutions there, and at the small fitted C values it is close to
    it (a bound of zero everywhere would pass the first check)."""
    X, y = _data(n=180, d=5, seed=3)
    Xs = sp.csr_matrix(X) if sparse else X
    folds = _folds(len(y))
    fitted = [0.01, 0.1, 1.0, 10.0, 100.0]
    certs = [[] for _ in folds]
    # Fits at tol 0.01, and very loose ones between them, whose gaps the bound must account for.
    for C, tol in [(C, 0.01) for C in fitted] + [(0.03, 1.0), (0.3, 1.0), (3.0, 1.0), (30.0, 1.0)]:
        for k, (tr, va) in enumerate(folds):
            p, fit = _fit(Xs[tr], y[tr], C, loss, intercept, tol=tol)
            alpha = fit.alpha if fit.alpha is not None else alpha_from_w(p, fit.w, fit.b)
            certs[k].append(certificate(p, alpha, Xs[va], y[va]))
    bound = lower_bound(certs)
    Cs = np.geomspace(0.003, 300, 60)
    exact = _cv_errors(X, y, folds, Cs, loss, intercept)
    lb = bound.at(Cs)
    assert (lb <= exact + 1e-12).all(), list(zip(Cs[lb > exact], lb[lb > exact], exact[lb > exact]))
    # At the small fitted C values the loose fits' gaps are small beside their rows' margins.
    small = fitted[:3]
    at_fitted = bound.at(small)
    assert (at_fitted >= _cv_errors(X, y, folds, small, loss, intercept) - 0.05).all(), at_fitted


def test_the_largest_margin_over_two_balls_is_the_numeric_maximum():
    """`intersection_max` against scipy's SLSQP maximising a . w over two balls in R^3, from
    several starts: never below it (the bound stays a bound) and no more than rounding above."""
    from scipy.optimize import minimize
    from solvers.cv_bounds import intersection_max
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(150):
        mL, mR = rng.normal(size=3), 0.7 * rng.normal(size=3)
        RL, RR = rng.uniform(0.3, 2.0), rng.uniform(0.3, 2.0)
        a = rng.normal(size=3)
        a /= np.linalg.norm(a)
        if np.linalg.norm(mR - mL) >= RL + RR:
            continue
        cons = [{"type": "ineq", "fun": lambda w: RL ** 2 - np.sum((w - mL) ** 2)},
                {"type": "ineq", "fun": lambda w: RR ** 2 - np.sum((w - mR) ** 2)}]
        best = -np.inf
        for start in [mL + s * (mR - mL) for s in np.linspace(0.0, 1.0, 5)]:
            res = minimize(lambda w: -a @ w, start, constraints=cons, method="SLSQP",
                           options={"ftol": 1e-13, "maxiter": 500})
            if all(c["fun"](res.x) >= -1e-9 for c in cons):
                best = max(best, float(a @ res.x))
        got = float(intersection_max(a @ mL, a @ mR, RL, RR, float(np.sum((mR - mL) ** 2))))
        assert best - 1e-7 <= got <= best + 1e-6, (got, best)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_each_segment_ball_holds_the_exact_solutions_of_its_segment(loss):
    """The ball `pair_intervals` takes over a segment [C_a, C_b] of log C (`_segment_ball`) holds
    the lemma's ball of every C of the segment (its ends included: centre distance plus radius,
    with v's rounding to float32), and so w*(C), for coarse segments of a loose fit."""
    from solvers.cv_bounds import _segment_ball
    X, y = _data()
    C0 = 0.3
    p0, loose = _fit(X, y, C0, loss, "none", tol=0.5)
    cert = certificate(p0, loose.alpha, X[:5], y[:5])
    v32 = cert.v32.astype(np.float64)
    for Ca, Cb in [(0.3, 0.9), (0.9, 3.0), (0.05, 0.3), (3.0, 30.0)]:
        a, R = (float(x) for x in _segment_ball(cert, Ca, Cb, float(np.linalg.norm(v32))))
        for C in np.geomspace(Ca, Cb, 5):
            rho = C / C0
            reach = abs((1 + rho) / 2 - a) * np.linalg.norm(v32) + float(cert.radius(rho)) \
                + (1 + rho) / 2 * 2.0 ** -24 * math.sqrt(cert.norm_sq)
            assert reach <= R * (1 + 1e-12), (Ca, Cb, C, reach, R)
            p, fit = _exact(X, y, C, loss, "none")
            w = np.r_[fit.w, 0.0]
            assert np.linalg.norm(w - a * v32) <= R, (Ca, Cb, C, np.linalg.norm(w - a * v32), R)


def test_two_neighbouring_fits_bound_more_than_each_alone_and_never_too_much():
    """Between two fits the bound with their pair (`pair_intervals`) is higher than with each
    fit alone at some C, and never above the exact CV error."""
    import dataclasses
    X, y = _data(n=240, d=8, seed=5)
    folds = _folds(len(y))
    fitted = [0.05, 0.5, 5.0]
    certs = [[] for _ in folds]
    for C in fitted:
        for k, (tr, va) in enumerate(folds):
            p, fit = _fit(X[tr], y[tr], C, "squared_hinge", "none", tol=1e-4)
            certs[k].append(certificate(p, fit.alpha, X[va], y[va]))
    alone = lower_bound([[dataclasses.replace(c, v32=None, t32=None) for c in f] for f in certs])
    paired = lower_bound(certs)
    Cs = np.geomspace(0.05, 5.0, 41)
    a, b = alone.at(Cs), paired.at(Cs)
    assert (b >= a).all() and (b > a + 0.02).any(), list(zip(Cs, a, b))
    exact = _cv_errors(X, y, folds, Cs, "squared_hinge", "none")
    assert (b <= exact + 1e-12).all(), list(zip(Cs[b > exact], b[b > exact], exact[b > exact]))


def test_the_bound_counts_a_row_only_strictly_inside_its_interval():
    """A row certified misclassified over the open intervals (1, 10) and (10, 100) of C (two
    intervals that share an end, as the single fits' and the pairs' can), one row always, of 4:
    the bound is 2/4 inside either and 1/4 at every end (1, 10 and 100: an end counts in
    neither interval), below and above them; its minimum over [3, 30] is at C = 10."""
    from solvers.cv_bounds import LowerBound
    lo, hi = np.log([1.0, 10.0]), np.log([10.0, 100.0])
    bound = LowerBound(((lo, hi, 4, 1),))
    C = np.array([0.5, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0])
    assert bound.at(C).tolist() == [0.25, 0.25, 0.5, 0.25, 0.5, 0.25, 0.25]
    assert bound.minimum(3.0, 30.0) == (0.25, pytest.approx(10.0, rel=1e-12))
    # A range that starts on an end: its minimum is that end (the range is closed, the interval open).
    assert bound.minimum(1.0, 5.0) == (0.25, pytest.approx(1.0, rel=1e-12))
    assert bound.minimum(2.0, 10.0) == (0.25, pytest.approx(10.0, rel=1e-12))
    # Two folds: the mean of their shares.
    two = LowerBound(((lo, hi, 4, 1), (np.log([5.0]), np.log([50.0]), 2, 0)))
    assert two.at(np.array([5.0, 10.0, 20.0, 50.0])).tolist() == [0.5 * (0.5 + 0.0), 0.5 * (0.25 + 0.5),
                                                                  0.5 * (0.5 + 0.5), 0.5 * (0.5 + 0.0)]
