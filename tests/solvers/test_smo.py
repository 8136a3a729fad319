"""smo against LIBSVM (scikit-learn's SVC) and against its own certificates."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from solvers import Budget, Problem, SolverError, fit
from kernel_refs import KERNELS, breast_cancer_data, digits17_data, svc_reference

@pytest.fixture(scope="module")
def breast_cancer():
    return breast_cancer_data()


@pytest.fixture(scope="module")
def digits17():
    return digits17_data()


def decision(res, K, y):
    return K @ (res.alpha * y) + res.b


@pytest.mark.parametrize("data", ["breast_cancer", "digits17"])
@pytest.mark.parametrize("kname", ["rbf", "poly"])
@pytest.mark.parametrize("wss", ["second_order", "mvp"])
def test_reaches_svc(request, data, kname, wss):
    X, y = request.getfixturevalue(data)
    kw = KERNELS[kname]
    C = 10.0
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    problem = Problem.build(X, y, C=C, intercept="free", **kw)
    res = fit(problem, "smo", budget=Budget(tol=1e-9), wss=wss)
    assert res.status == "converged"
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(decision(res, K, y) - f_ref).max() < 1e-4
    # certificates: primal and dual meet, m - M below tol, y'alpha = 0 and the box hold
    assert abs(res.gap) <= 1e-6 * abs(res.primal)
    assert res.kkt_violation < 1e-9
    assert abs(res.alpha @ y) < 1e-9 and res.alpha.min() >= 0 and res.alpha.max() <= C
    info = res.info
    assert info["n_sv"] == info["n_bounded_sv"] + info["n_free_sv"] == np.count_nonzero(res.alpha)
    assert info["f_alpha0"] == 0.0 and info["f_alpha"] == pytest.approx(-res.dual)
    assert info["b_rule"] == "free"


def test_wss2_uses_the_curvature_where_mvp_does_not():
    """Fan et al. 2005 WSS 2 on three points: i = 0 is the only candidate of I_up; of I_low,
    j = 1 violates most (b = 3) but lies far from x_0 (a = |x_0 - x_1|^2 = 16), j = 2 violates
    less (b = 2.5) but is close (a = 0.01). MVP takes j = 1; WSS 2 maximises b^2 / a and takes
    j = 2 (625 against 9/16). With the curvature dropped (a = 1) WSS 2 would pick j = 1 too."""
    from solvers.kernels import PrefixQColumnCache
    from solvers.smo import _select
    X = np.array([[1.0, 0.0], [-3.0, 0.0], [1.1, 0.0]])
    y = np.array([1.0, -1.0, -1.0])
    problem = Problem.build(X, y, C=1.0, intercept="free", kernel="linear")
    cache = PrefixQColumnCache(problem.kernel, X, y, 1.0)
    G = np.array([-1.0, -2.0, -1.5])  # -y_0 G_0 = 1 = m; y_k G_k = 2, 1.5 on I_low
    up = np.array([1, 0, 0], np.uint8)
    low = np.array([0, 1, 1], np.uint8)
    for wss, j_expected in [(1, 1), (2, 2)]:
        i, j, gap = _select(G, y, up, low, cache.QD, 3, 1e-3, wss, cache.state, cache.data, cache.ker)
        assert (i, j) == (0, j_expected), f"wss={wss}"
        assert gap == pytest.approx(3.0)  # m - M = 1 + 2, whichever j is taken
    # Optimal on the active set (m - M below eps): no pair.
    i, j, gap = _select(G, y, up, low, cache.QD, 3, 3.5, 2, cache.state, cache.data, cache.ker)
    assert j == -1 and gap == pytest.approx(3.0)


@pytest.mark.parametrize("kname, at_most", [("rbf", 0.6), ("poly", 0.45)])
def test_wss2_takes_fewer_pairs_than_mvp(breast_cancer, kname, at_most):
    """The second-order rule's point is fewer pair updates for the same optimum. Measured at
    C = 10, tol 1e-8: rbf 776 against 1804 pairs (0.43), poly 516 against 1934 (0.27); a WSS 2
    that lost its curvature term takes exactly MVP's path, hence the same count."""
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS[kname])
    so = fit(problem, "smo", budget=Budget(tol=1e-8), wss="second_order")
    mvp = fit(problem, "smo", budget=Budget(tol=1e-8), wss="mvp")
    assert so.status == mvp.status == "converged"
    assert so.dual == pytest.approx(mvp.dual, rel=1e-9)
    assert so.n_iter < at_most * mvp.n_iter, (so.n_iter, mvp.n_iter)


def test_dense_and_sparse_agree(breast_cancer):
    X, y = breast_cancer
    kw = KERNELS["rbf"]
    rd = fit(Problem.build(X, y, C=1.0, intercept="free", **kw), "smo", budget=Budget(tol=1e-8))
    rs = fit(Problem.build(sp.csr_matrix(X), y, C=1.0, intercept="free", **kw), "smo", budget=Budget(tol=1e-8))
    # the dot products round differently (BLAS vs sparse), so the paths may differ by a step
    assert rs.dual == pytest.approx(rd.dual, rel=1e-10)
    np.testing.assert_allclose(rs.alpha, rd.alpha, atol=1e-6)
    assert rs.b == pytest.approx(rd.b, abs=1e-6)


@pytest.mark.parametrize("shrinking", [True, False])
def test_small_cache_same_result(digits17, shrinking):
    """A cache of a few columns (far less than the matrix) gives the same path as a full one."""
    X, y = digits17
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    full = fit(problem, "smo", budget=Budget(tol=1e-8), shrinking=shrinking)
    small_mb = 8 * len(y) * 5 / 2**20  # five columns
    small = fit(problem, "smo", budget=Budget(tol=1e-8), cache_size=small_mb, shrinking=shrinking)
    assert full.info["cache_columns"] == len(y) and small.info["cache_columns"] == 5
    assert small.info["cache_misses"] > full.info["cache_misses"]
    assert small.n_iter == full.n_iter
    np.testing.assert_allclose(small.alpha, full.alpha, atol=1e-10)
    assert small.dual == pytest.approx(full.dual, rel=1e-12)


def test_shrinking_does_not_change_the_optimum(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["poly"])
    a = fit(problem, "smo", budget=Budget(tol=1e-9), shrinking=True)
    b = fit(problem, "smo", budget=Budget(tol=1e-9), shrinking=False)
    assert a.dual == pytest.approx(b.dual, rel=1e-9)
    assert a.info["n_reconstruct"] >= 1 and b.info["n_reconstruct"] == 0


def _exact_G(problem, alpha):
    """G = Q alpha - e from the whole kernel matrix (rows of X order)."""
    from solvers.kernels import kernel_block
    y = problem.y
    return y * (kernel_block(problem.kernel, problem.X, problem.X) @ (alpha * y)) - 1.0


def test_shrinking_swaps_the_active_set_to_a_prefix(breast_cancer):
    """LIBSVM's layout: after a shrink, positions [0, n_active) hold the active variables (every
    free one among them) and the rest are at a bound; the solver's labels, the cache's data rows
    and every column entry the iterations read are in the same permuted order, so G on the
    prefix stays exact through the pair updates after the swaps; the run then ends at the
    unshrunken run's optimum."""
    from solvers.kernels import PrefixQColumnCache
    from solvers.smo import _FREE, _OPTIMAL, _RAN, _reconstruct, _smo_chunk, _start
    X, y = breast_cancer
    C = 10.0
    problem = Problem.build(X, y, C=C, intercept="free", **KERNELS["rbf"])
    n = len(y)
    cache = PrefixQColumnCache(problem.kernel, X, y, 200.0, problem.row_norms_sq)
    alpha, G, G_bar = np.zeros(n), -np.ones(n), np.zeros(n)
    ys, QD, st, up, low, ctl, swaps = _start(cache, alpha, C)
    Cb = np.full(n, C)   # each position's bound C_i, permuted with it by the swaps
    args = (1e-8, 2, True, Cb, alpha, G, G_bar, st, up, low, ys, QD, ctl, swaps, cache.state, cache.data, cache.ker)
    code, steps = _smo_chunk(n + 30, *args)  # the first shrink comes after n pair updates
    na, perm = int(ctl[0]), cache.perm
    assert code == _RAN and na < n // 10 and sorted(perm) == list(range(n))
    assert np.all(st[na:] != _FREE) and np.count_nonzero(st[:na] == _FREE) > 0
    np.testing.assert_array_equal(ys, y[perm])
    np.testing.assert_array_equal(cache.position_rows(), X[perm])
    np.testing.assert_array_equal(QD, cache.QD[perm])
    a_rows = np.empty(n)
    a_rows[perm] = alpha
    G_true = _exact_G(problem, a_rows)[perm]
    np.testing.assert_allclose(G[:na], G_true[:na], rtol=0, atol=1e-10)
    G_full = G.copy()
    _reconstruct(alpha, G_full, G_bar, st, na, cache.state, cache.data, cache.ker)
    np.testing.assert_allclose(G_full, G_true, rtol=0, atol=1e-10)
    while code != _OPTIMAL:
        code, _ = _smo_chunk(10_000, *args)
    a_rows[perm] = alpha
    ref = fit(problem, "smo", budget=Budget(tol=1e-8), shrinking=False)
    assert ctl[3] >= 1  # the unshrink and final recheck rebuilt G
    np.testing.assert_allclose(a_rows, ref.alpha, atol=1e-6)
    G_end = _exact_G(problem, a_rows)
    np.testing.assert_allclose(G[np.argsort(perm)], G_end, rtol=0, atol=1e-10)


@pytest.mark.parametrize("n_shrunk, shrunk_columns", [(3, True), (30, False)])
def test_reconstruct_gradient(breast_cancer, n_shrunk, shrunk_columns):
    """G on the shrunken positions from G_bar and the free variables (LIBSVM's
    reconstruct_gradient), by both of its orders: with few shrunken variables their columns on
    the active prefix (n_shrunk x n_active kernel values), with many the free variables' columns
    extended to full length (n_free x n)."""
    from solvers.kernels import PrefixQColumnCache, kernel_block
    from solvers.smo import _FREE, _LOWER, _UPPER, _reconstruct
    X, y = breast_cancer
    X, y = X[:60], y[:60]
    n, C = 60, 1.0
    problem = Problem.build(X, y, C=C, intercept="free", **KERNELS["poly"])
    rng = np.random.default_rng(1)
    alpha = rng.uniform(0.1, 0.9, n)
    na = n - n_shrunk
    alpha[na:] = np.where(np.arange(n_shrunk) % 2, C, 0.0)  # shrunken: at a bound
    alpha[: na // 3] = np.where(np.arange(na // 3) % 2, C, 0.0)  # bounded ones stay active too
    st = np.where(alpha >= C, _UPPER, np.where(alpha <= 0, _LOWER, _FREE)).astype(np.int8)
    n_free = int(np.count_nonzero(st == _FREE))
    assert (n_free * n > 2 * na * (n - na)) == shrunk_columns  # LIBSVM's choice of order
    Q = y[:, None] * kernel_block(problem.kernel, X, X) * y[None, :]
    G_true = Q @ alpha - 1.0
    G = G_true.copy()
    G[na:] = np.nan
    cache = PrefixQColumnCache(problem.kernel, X, y, 1.0, problem.row_norms_sq)
    _reconstruct(alpha, G, Q[:, alpha >= C].sum(axis=1) * C, st, na, cache.state, cache.data, cache.ker)
    np.testing.assert_allclose(G, G_true, rtol=1e-12, atol=1e-12)
    assert cache.kernel_evaluations == (n_shrunk * na if shrunk_columns else n_free * n)


def test_every_sv_at_bound(breast_cancer):
    """A small C on balanced classes puts every alpha at C: b from bertini I.D's bound-only
    formula (the interval's midpoint, as both class counts at C are equal)."""
    X, y = breast_cancer
    keep = np.concatenate([np.flatnonzero(y > 0)[:100], np.flatnonzero(y < 0)[:100]])
    X, y = X[keep], y[keep]
    kw = dict(kernel="rbf", gamma=0.1)
    C = 1e-3
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    problem = Problem.build(X, y, C=C, intercept="free", **kw)
    res = fit(problem, "smo", budget=Budget(tol=1e-10))
    assert res.info["n_free_sv"] == 0 and res.info["b_rule"] == "bound_only"
    L, U = res.info["b_interval"]
    assert L - 1e-12 <= res.b <= U + 1e-12
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    # any b in [L, U] is optimal; the primal is flat there and equals the dual
    assert abs(res.gap) <= 1e-8 * abs(res.primal)
    assert np.abs(decision(res, K, y) - f_ref).max() < 1e-4


def test_warm_start(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    cold = fit(problem, "smo", budget=Budget(tol=1e-8))
    again = fit(problem, "smo", budget=Budget(tol=1e-8), warm_start=cold)
    assert again.n_iter <= 2 and again.dual == pytest.approx(cold.dual, rel=1e-12)
    # an infeasible start (box and y'alpha = 0 violated) is projected, then solved
    rng = np.random.default_rng(0)
    bad = {"alpha": rng.uniform(-5, 20, size=len(y))}
    warm = fit(problem, "smo", budget=Budget(tol=1e-8), warm_start=bad)
    assert warm.status == "converged" and warm.dual == pytest.approx(cold.dual, rel=1e-9)
    assert warm.info["f_alpha0"] != 0.0
    # from the optimum of another C: a C path
    path = fit(problem.with_(C=20.0), "smo", budget=Budget(tol=1e-8), warm_start=cold)
    ref = fit(problem.with_(C=20.0), "smo", budget=Budget(tol=1e-8))
    assert path.dual == pytest.approx(ref.dual, rel=1e-9)
    with pytest.raises(ValueError, match="shape"):
        fit(problem, "smo", warm_start={"alpha": np.zeros(3)})


def test_max_iter_warns_and_reports(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    with pytest.warns(ConvergenceWarning):
        res = fit(problem, "smo", budget=Budget(tol=1e-9, max_iter=20))
    assert res.status == "max_iter" and res.n_iter == 20
    assert res.kkt_violation > 1e-9 and res.gap > 0


def test_trace_is_recorded(breast_cancer):
    from solvers import Recorder
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    res = fit(problem, "smo", budget=Budget(tol=1e-8), recorder=Recorder(max_overhead=None))
    its = [p[0] for p in res.trace]
    assert its[0] == 1 and its[-1] == res.n_iter and its == sorted(its) and len(its) > 10
    gaps = np.array([p[4] for p in res.trace])
    assert np.all(gaps >= -1e-8) and gaps[-1] < gaps[0]


@pytest.mark.parametrize("key, value, match", [
    ("cache_size", 0.0, "cache_size"), ("cache_size", -1.0, "cache_size"),
    ("wss", "third", "wss"), ("chunk", 0, "chunk"),
])
def test_bad_params_name_the_key(breast_cancer, key, value, match):
    X, y = breast_cancer
    problem = Problem.build(X[:50], y[:50], intercept="free", kernel="rbf", gamma=1.0)
    with pytest.raises(SolverError, match=match):
        fit(problem, "smo", **{key: value})


def test_refuses_other_problems(breast_cancer):
    X, y = breast_cancer
    with pytest.raises(SolverError, match="intercept"):
        fit(Problem.build(X, y, intercept="none", kernel="rbf"), "smo")
    with pytest.raises(SolverError, match="loss"):
        fit(Problem.build(X, y, intercept="free", loss="squared_hinge", kernel="rbf"), "smo")


def test_estimator_front(digits17):
    from solvers import SVMClassifier
    X, y = digits17
    clf = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, C=10.0, intercept="free", tol=1e-8).fit(X, y)
    svc = SVC(kernel="rbf", gamma=0.5, C=10.0, tol=1e-10).fit(X, y)
    assert np.abs(clf.decision_function(X) - svc.decision_function(X)).max() < 1e-4


# ------------------------------------------------------------------ a C path (KernelPath)
PATH_CS = (0.3, 1.0, 3.0, 10.0, 30.0)


def _path(problem, shared: bool):
    """smo over PATH_CS in increasing C, at tol 1e-8: the fits of one KernelPath (shared cache,
    each seeded from the last), or each cold with its own cache."""
    from solvers.kernel_dual import KernelPath
    path = KernelPath()
    return [fit(problem.with_(C=C), "smo", budget=Budget(tol=1e-8), warm_start={"path": path} if shared else None)
            for C in PATH_CS]


@pytest.fixture(scope="module")
def path_fits(digits17):
    X, y = digits17
    problem = Problem.build(X, y, intercept="free", **KERNELS["rbf"])
    return problem, _path(problem, True), _path(problem, False)


def test_a_kernel_path_reaches_the_certified_optimum_of_each_C(path_fits, digits17):
    X, y = digits17
    _, shared, cold = path_fits
    assert [f.info["seeded"] for f in shared] == [""] + ["path"] * (len(PATH_CS) - 1)
    for C, s, c in zip(PATH_CS, shared, cold):
        D_ref, f_ref, K = svc_reference(X, y, C, KERNELS["rbf"])
        assert s.status == "converged" and s.kkt_violation <= 1e-8
        assert abs(s.gap) <= 1e-6 * abs(s.primal)
        assert abs(s.dual - D_ref) <= 1e-6 * abs(D_ref)
        assert s.dual == pytest.approx(c.dual, rel=1e-9)
        # the training decisions come from the solver's gradient (Fit.train_Xw): the model's own
        assert np.abs(Problem.build(X, y, C=C, intercept="free", **KERNELS["rbf"]).decision(s)
                      - decision(s, K, y)).max() < 1e-9


def test_a_kernel_path_shares_its_kernel_cache(path_fits):
    # Every point after the first finds most columns in the cache the points before it filled
    # (the kernel does not depend on C). Counted on digits 1 vs 7: none against 216,600 for the
    # cold points; with the cache not handed on (`smo._serves` False), 1.0x.
    _, shared, cold = path_fits
    later = [sum(f.info["kernel_evaluations"] for f in fits[1:]) for fits in (shared, cold)]
    assert later[0] < 0.2 * later[1]


def test_a_kernel_path_seeds_each_C_from_the_last(path_fits):
    # The seed (kernel_dual.path_seed) starts each point at or near its solution: on digits 1 vs 7
    # (separable from C = 3 on) 780 pair updates against 3,373 from cold starts; with the seed
    # lost (zeros, the cache still shared), 1.0x.
    _, shared, cold = path_fits
    later = [sum(f.n_iter for f in fits[1:]) for fits in (shared, cold)]
    assert later[0] < 0.7 * later[1]


def test_a_kernel_path_keeps_the_test_rows_kernel_columns(digits17):
    # KernelPath.decision: the decision values Problem.decision gives, with each support vector's
    # column K(X_test, x_j) computed once for the whole path.
    from solvers.kernel_dual import KernelPath
    X, y = digits17
    problem = Problem.build(X[50:], y[50:], intercept="free", **KERNELS["rbf"])
    path = KernelPath()
    for C in (0.3, 3.0):
        res = fit(problem.with_(C=C), "smo", budget=Budget(tol=1e-6), warm_start={"path": path})
        np.testing.assert_allclose(path.decision(problem, res, X[:50]), problem.decision(res, X[:50]), rtol=0, atol=1e-10)
    assert set(np.flatnonzero(path._have)) >= set(res.support)   # the columns kept: every support vector seen
