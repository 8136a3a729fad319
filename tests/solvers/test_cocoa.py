"""cocoa (CoCoA+ over row blocks, solvers/cocoa.py): each block count reaches dcd's certified f*
with its own duality gap, the partition sums give the project's P and D, and the local pass is
dcd's kernel on the subproblem of sigma' = K."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import Budget, Problem, Recorder, fit
from solvers.cocoa import LocalPartitions, LocalSubproblem, combine, run_rounds
from solvers.objectives import dual_objective, primal_objective


def _text(n=600, d=200, seed=0):
    """Sparse unit rows, labels from a sparse w with some flipped: not separable."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.05, random_state=rng, format="csr")
    X.data = rng.exponential(size=X.nnz)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    w = np.zeros(d)
    w[rng.choice(d, 20, replace=False)] = rng.normal(size=20)
    y = np.where(X @ w + 0.05 * rng.normal(size=n) > 0, 1.0, -1.0)
    y[rng.random(n) < 0.05] *= -1
    return X, y


@pytest.fixture(scope="module")
def text():
    return _text()


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("intercept", ["none", "regularized"])
@pytest.mark.parametrize("K", [1, 3])
def test_reaches_dcds_optimum_by_its_own_gap(text, loss, intercept, K):
    """Stopped by its relative duality gap, the fit is within that of dcd's f* (solved to a
    projected-gradient spread of 1e-10), and its gap brackets f*: D <= f* <= P."""
    X, y = text
    problem = Problem(X, y, C=1.0, loss=loss, intercept=intercept)
    ref = fit(problem, "dcd", budget=Budget(tol=1e-10, max_iter=100_000))
    assert ref.status == "converged"
    tol = 1e-5
    res = fit(problem, "cocoa", budget=Budget(tol=tol, max_iter=20_000), partitions=K)
    assert res.status == "converged" and res.info["partitions"] == K
    assert res.gap <= tol * res.primal
    assert res.dual <= ref.primal * (1 + 1e-12) and res.primal >= ref.primal * (1 - 1e-12)
    assert (res.primal - ref.primal) / ref.primal <= tol
    # The reported P is the returned model's, D the returned alpha's (w kept as the rounds' sum).
    assert res.primal == pytest.approx(primal_objective(problem, res.w, res.b), rel=1e-12)
    B = problem.B
    ww = float(res.w @ res.w) + (res.b / B) ** 2 if B else float(res.w @ res.w)
    assert res.dual == pytest.approx(dual_objective(problem, res.alpha, ww), rel=1e-9)


def test_one_block_is_dcd(text):
    """K = 1 is sigma' = 1: the subproblem is the dual itself and a round is a dcd pass, so with
    one pass a round the iterates are dcd's own, pass for pass (the same seed, shrinking)."""
    X, y = text
    problem = Problem(X, y, C=1.0, loss="hinge", intercept="none")
    for rounds in (1, 2, 7):
        a = fit(problem, "cocoa", budget=Budget(tol=1e-12, max_iter=rounds), partitions=1, random_state=3)
        b = fit(problem, "dcd", budget=Budget(tol=1e-12, max_iter=rounds), random_state=3)
        np.testing.assert_allclose(a.alpha, b.alpha, rtol=0, atol=1e-14)
        np.testing.assert_allclose(a.w, b.w, rtol=1e-12, atol=1e-14)


def test_partition_sums_are_the_objectives(text):
    """combine() of the blocks' sums at any (w, alpha) equals P(w) and D(alpha) of the whole
    problem (objectives.py), whatever the cut: sums, not one block's values."""
    X, y = text
    rng = np.random.default_rng(1)
    for loss in ("hinge", "squared_hinge"):
        problem = Problem(X, y, C=0.7, loss=loss, intercept="regularized", intercept_scaling=2.0)
        parts = LocalPartitions(problem, 3, sigma=3.0, shrinking=True, random_state=0)
        for p in parts.parts:
            p.alpha[:] = rng.uniform(0, 0.7, size=len(p.alpha))
        w, wb = rng.normal(size=X.shape[1]), 0.3
        cert = combine(parts.sums(w, wb), w, wb, problem.C)
        alpha = np.concatenate([p.alpha for p in parts.parts])
        assert cert.primal == pytest.approx(primal_objective(problem, w, wb * 2.0), rel=1e-12)
        assert cert.dual == pytest.approx(dual_objective(problem, alpha, float(w @ w) + wb * wb), rel=1e-12)
        assert cert.n == len(y)


def test_a_block_of_one_class(text):
    """Blocks cut from rows sorted by label hold one class each (no Problem can be built of
    them): the rounds still reach the optimum."""
    X, y = text
    order = np.argsort(y, kind="stable")
    problem = Problem(X[order], y[order], C=1.0, loss="squared_hinge", intercept="none")
    ref = fit(problem, "dcd", budget=Budget(tol=1e-10, max_iter=100_000))
    res = fit(problem, "cocoa", budget=Budget(tol=1e-7, max_iter=20_000), partitions=2)
    assert res.status == "converged" and (res.primal - ref.primal) / ref.primal <= 1e-7


def test_a_round_sums_the_blocks_updates(text):
    """After one round from zero, w is the sum of the blocks' v_k = X_k' (dalpha_k y_k), each
    block having stepped on its own subproblem (sigma' = K in its diagonal and its step)."""
    X, y = text
    problem = Problem(X, y, C=1.0, loss="hinge", intercept="none")
    parts = LocalPartitions(problem, 2, sigma=2.0, shrinking=False, random_state=0)
    w = np.zeros(X.shape[1])
    v, vb, ok = parts.solve(w, 0.0, 1, 0.0)
    alpha = np.concatenate([p.alpha for p in parts.parts])
    np.testing.assert_allclose(v, X.T @ (alpha * y), rtol=1e-10, atol=1e-13)
    # The first step of a block from alpha = 0 (G_i = -1) is alpha_i = min(1 / Qbar_ii, C) with
    # Qbar_ii = sigma' ||x_i||^2: half dcd's step on these unit rows at sigma' = 2.
    sub = LocalSubproblem(X[:300], y[:300], C=1.0, loss="hinge", B=0.0, sigma=2.0, shrinking=False,
                          random_state=0)
    sub.solve(w, 0.0, 1, 0.0)
    first = int(sub.index[0])      # the pass's first row (its shuffled order, kept without shrinking)
    assert X[first].nnz and sub.alpha[first] == pytest.approx(min(1.0 / (2.0 * X[first].power(2).sum()), 1.0))


def test_diverged_and_max_iter_are_statuses(text):
    """A round cap is status max_iter with a ConvergenceWarning naming the gap, never an error."""
    X, y = text
    problem = Problem(X, y, C=10.0, loss="hinge", intercept="none")
    with pytest.warns(Warning, match="relative duality gap"):
        res = fit(problem, "cocoa", budget=Budget(tol=1e-12, max_iter=3), partitions=4)
    assert res.status == "max_iter" and res.n_iter == 3 and res.gap > 0


def test_trace_points_are_certified_rounds(text):
    """Every trace point is a round's (P, D, gap) with P - D >= 0 and P falling overall."""
    X, y = text
    problem = Problem(X, y, C=1.0, loss="squared_hinge", intercept="none")
    rec = Recorder(per_decade=10, max_overhead=None)
    res = fit(problem, "cocoa", budget=Budget(tol=1e-6, max_iter=5000), recorder=rec, partitions=2)
    ks = [p[0] for p in res.trace]
    assert ks == sorted(ks) and ks[-1] == res.n_iter
    assert all(P - D >= -1e-9 * abs(P) and g == pytest.approx(P - D) for _, _, P, D, g in res.trace)
    assert res.trace[-1][2] < res.trace[0][2]
