"""qp (the whole dual by an interior point method) against LIBSVM and against brute checks."""
import numpy as np
import pytest

import solvers.qp as qp
from solvers import Budget, Problem, SolverError, fit
from sklearn.exceptions import ConvergenceWarning
from kernel_refs import DIGITS38_POLY2, KERNELS, breast_cancer_data, digits17_data, digits38_data, svc_reference
from solvers.qp import dense_limit, solve_box_qp

@pytest.fixture(scope="module")
def breast_cancer():
    return breast_cancer_data()


@pytest.fixture(scope="module")
def digits17():
    return digits17_data()


@pytest.mark.parametrize("data", ["breast_cancer", "digits17"])
@pytest.mark.parametrize("kname", ["rbf", "poly"])
def test_reaches_svc(request, data, kname):
    X, y = request.getfixturevalue(data)
    kw = KERNELS[kname]
    C = 10.0
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    res = fit(Problem.build(X, y, C=C, intercept="free", **kw), "qp", budget=Budget(tol=1e-9))
    assert res.status == "converged" and res.info["polished"]
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4
    # the polished optimum is exact to rounding: gap and m - M near machine precision
    assert abs(res.gap) <= 1e-9 * abs(res.primal)
    assert res.kkt_violation < 1e-9
    assert abs(res.alpha @ y) < 1e-10 and res.alpha.min() >= 0 and res.alpha.max() <= C
    assert res.info["f_alpha0"] > res.info["f_alpha"]


def test_every_sv_at_bound(breast_cancer):
    X, y = breast_cancer
    keep = np.concatenate([np.flatnonzero(y > 0)[:100], np.flatnonzero(y < 0)[:100]])
    X, y = X[keep], y[keep]
    kw = dict(kernel="rbf", gamma=0.1)
    D_ref, f_ref, K = svc_reference(X, y, 1e-3, kw)
    res = fit(Problem.build(X, y, C=1e-3, intercept="free", **kw), "qp", budget=Budget(tol=1e-10))
    assert res.info["b_rule"] == "bound_only" and res.info["n_free_sv"] == 0
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4


@pytest.mark.parametrize("C, kw", [(1000.0, DIGITS38_POLY2), (0.05, dict(kernel="rbf", gamma=1e-4))],
                         ids=["poly2_tiny_alpha", "rbf_bound_only"])
def test_bertini_digits38(C, kw):
    """The bertini reproduction's failures (119 rows of them): with K ~ 1e6 and C = 1000 the
    optimum sits ~1e-9 of the box from 0, where absolute IPM stopping tests stopped 1e4 times away
    from it; with every alpha at a bound no free row fixes y'a = 0's multiplier, and taking it 0
    made the polish free correct bounds and refuse. Both ended `stalled` (m - M 4e-2 and 1.8)."""
    X, y = digits38_data()
    P = Problem.build(X, y, C=C, intercept="free", **kw)
    res = fit(P, "qp", budget=Budget(tol=1e-13))
    ref = fit(P, "smo", budget=Budget(tol=1e-13))
    assert res.status == "converged" and res.info["polished"]
    assert res.kkt_violation < 1e-13
    assert abs(res.dual - ref.dual) <= 1e-10 * abs(ref.dual)
    assert (res.info["n_free_sv"] == 0) == (kw["kernel"] == "rbf")


def test_duplicated_points(digits17):
    """Q singular (every point twice): the IPM needs only positive semi-definiteness."""
    X, y = digits17
    X2, y2 = np.vstack([X[:100], X[:100]]), np.concatenate([y[:100], y[:100]])
    D_ref, _, _ = svc_reference(X2, y2, 10.0, KERNELS["rbf"])
    res = fit(Problem.build(X2, y2, C=10.0, intercept="free", **KERNELS["rbf"]), "qp", budget=Budget(tol=1e-8))
    assert res.status == "converged"
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)


def _kkt_violation(H, c, y, r, a, u):
    v = -y * (H @ a + c)
    up = ((a < u) & (y > 0)) | ((a > 0) & (y < 0))
    low = ((a < u) & (y < 0)) | ((a > 0) & (y > 0))
    return max(v[up].max(initial=-np.inf) - v[low].min(initial=np.inf), 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_box_qp_random(seed):
    """The subproblem solver on random box-and-equality QPs with general r (svmlight's case),
    rank-deficient H included: feasible and optimal (m - M ~ 0) after polishing."""
    rng = np.random.default_rng(seed)
    for _ in range(20):
        q = int(rng.integers(2, 30))
        C = float(10 ** rng.uniform(-2, 2))
        A = rng.normal(size=(q, max(1, q - 2)))
        H = A @ A.T
        y = np.where(rng.random(q) > 0.5, 1.0, -1.0)
        a0 = rng.uniform(0, C, q) * (rng.random(q) > 0.3)
        r = float(y @ a0)
        c = rng.normal(size=q)
        u = np.full(q, C)
        a, steps, code, polished = solve_box_qp(H, c, y, r, u, a0, 1e-10, 100)
        assert code == 1 and steps < 40
        assert abs(y @ a - r) <= 1e-10 * max(1.0, C * q)
        assert a.min() >= 0 and a.max() <= C
        assert _kkt_violation(H, c, y, r, a, u) <= 1e-7 * (1 + np.abs(H).max() * C)


def test_warm_start(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    cold = fit(problem, "qp", budget=Budget(tol=1e-9))
    warm = fit(problem.with_(C=12.0), "qp", budget=Budget(tol=1e-9), warm_start=cold)
    ref = fit(problem.with_(C=12.0), "smo", budget=Budget(tol=1e-10))
    assert warm.status == "converged" and warm.dual == pytest.approx(ref.dual, rel=1e-8)


def test_refuses_a_matrix_too_large(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=1.0, intercept="free", kernel="rbf", gamma=1.0)
    with pytest.raises(SolverError, match=r"n <= 181.*smo"):
        fit(problem, "qp", max_memory_mb=1.0)
    with pytest.raises(SolverError, match=r"low-rank path \(rank <= qp.max_rank=569\) needs n <= 0.*smo"):
        fit(problem, "qp", max_memory_mb=1.0, method="lowrank")
    assert dense_limit(2048.0) == 8192
    # (2048 MiB - the 32 MiB column cache - 3 MAX_WS^2 doubles) / (3 max_rank doubles per point)
    assert qp.lowrank_limit(2048.0, 1000) == 87080


def test_cvxopt_backend(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    a = fit(problem, "qp", budget=Budget(tol=1e-8), backend="cvxopt")
    b = fit(problem, "qp", budget=Budget(tol=1e-8))
    assert a.dual == pytest.approx(b.dual, rel=1e-8)


@pytest.mark.parametrize("case", ["breast_cancer", "duplicated"])
def test_cvxopt_backend_reaches_svc(request, digits17, case):
    """backend="cvxopt" (bertini's solver; in the test extra, so this runs) polished by the same
    active-set method: LIBSVM's optimum, also on a singular Q, and the native backend's."""
    if case == "duplicated":
        X, y, kw = _rank_deficient("duplicated", digits17)
    else:
        (X, y), kw = request.getfixturevalue("breast_cancer"), KERNELS["rbf"]
    D_ref, f_ref, K = svc_reference(X, y, 10.0, kw)
    problem = Problem.build(X, y, C=10.0, intercept="free", **kw)
    res = fit(problem, "qp", budget=Budget(tol=1e-9), backend="cvxopt")
    assert res.status == "converged" and res.info["polished"] and res.info["backend"] == "cvxopt"
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref) and res.kkt_violation < 1e-9
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4
    native = fit(problem, "qp", budget=Budget(tol=1e-9))
    assert res.dual == pytest.approx(native.dual, rel=1e-10)


def test_cvxopt_absent_is_a_clear_error(breast_cancer, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_cvxopt(name, *args, **kwargs):
        if name == "cvxopt":
            raise ImportError("no cvxopt")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cvxopt)
    X, y = breast_cancer
    problem = Problem.build(X[:40], y[:40], C=1.0, intercept="free", kernel="rbf", gamma=1.0)
    with pytest.raises(SolverError, match="cvxopt"):
        fit(problem, "qp", backend="cvxopt")


@pytest.mark.parametrize("key, value", [("backend", "mosek"), ("ipm_tol", 0.0), ("max_memory_mb", 0.0)])
def test_bad_params_name_the_key(breast_cancer, key, value):
    X, y = breast_cancer
    problem = Problem.build(X[:40], y[:40], intercept="free", kernel="rbf", gamma=1.0)
    with pytest.raises(SolverError, match=key):
        fit(problem, "qp", **{key: value})


# ---------------------------------------------------------------- singular (rank-deficient) Q
def _blobs(n, seed=1):
    """2-D blobs (two unit Gaussians 3 apart, standardised): a kernel of low rank on them."""
    rng = np.random.default_rng(seed)
    y = np.r_[-np.ones(n // 2), np.ones(n - n // 2)]
    X = rng.normal(size=(n, 2)) + y[:, None] * (3.0 / 2 / np.sqrt(2))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X), y


def _rank_deficient(case, digits17):
    X, y = digits17
    if case == "duplicated":  # every point twice: rank <= n / 2
        return np.vstack([X[:100], X[:100]]), np.concatenate([y[:100], y[:100]]), KERNELS["rbf"]
    if case == "linear_n>>d":  # rank 2 at n = 400
        return (*_blobs(400), dict(kernel="linear"))
    if case == "poly3_2d":  # rank 10 (monomials of degree <= 3 in 2 variables)
        return (*_blobs(600), dict(kernel="poly", gamma=0.5, degree=3, coef0=1.0))
    raise ValueError(case)


@pytest.mark.parametrize("case, C", [("duplicated", 1.0), ("duplicated", 10.0), ("linear_n>>d", 1.0),
                                     ("linear_n>>d", 10.0), ("poly3_2d", 10.0)])
def test_rank_deficient_Q_reaches_svc(digits17, case, C):
    """Singular Q: the face's KKT system has a whole affine set of solutions. The polish must
    take the one nearest the IPM iterate under every BLAS kernel (an LU solve returned a
    +-5.5e3 one under OpenBLAS SkylakeX on the duplicated points; at C = 10 the fallback then
    clipped every alpha to 0; on poly3_2d qp ended 'stalled' with the dual 2.5x off)."""
    X, y, kw = _rank_deficient(case, digits17)
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    res = fit(Problem.build(X, y, C=C, intercept="free", **kw), "qp", budget=Budget(tol=1e-9))
    assert res.status == "converged" and res.info["polished"] and res.info["stop_reason"] == ""
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert abs(res.gap) <= 1e-9 * abs(res.primal) and res.kkt_violation < 1e-9
    assert abs(res.alpha @ y) < 1e-10 and res.alpha.min() >= 0 and res.alpha.max() <= C
    if case == "duplicated":
        # the nearest point to a symmetric iterate splits each pair evenly (any split is optimal)
        assert np.abs(res.alpha[:100] - res.alpha[100:]).max() <= 1e-6 * C


def _kkt_reference(H, c, yv, r, u, state, a):
    """The point of the face's KKT solution set nearest to a, by numpy's pseudo-inverse."""
    F = np.flatnonzero(state == 0)
    x = np.where(state == 2, u, np.where(state == 1, 0.0, a))
    A = np.block([[H[np.ix_(F, F)], yv[F, None]], [yv[None, F], np.zeros((1, 1))]])
    rhs = np.r_[-(H @ x + c)[F], r - yv @ x]
    d = np.linalg.pinv(A, rcond=1e-12) @ rhs
    x[F] += d[:-1]
    return x


@pytest.mark.parametrize("singular", [True, False])
def test_kkt_solve_singular_falls_back(singular):
    """`_kkt_solve` on a face whose H_FF is singular (12 free variables, rank 4 with three exact
    duplicates): the Cholesky path is refused, the eigen pseudo-inverse gives the solution nearest
    to a, residual-checked; on a nonsingular face it is the Cholesky solution."""
    rng = np.random.default_rng(3)
    n = 16
    B = rng.normal(size=(n, 4 if singular else n))
    if singular:
        B[8:11] = B[0:3]  # duplicated points
    H = B @ B.T / n
    yv = np.where(rng.random(n) > 0.5, 1.0, -1.0) * 10.0  # unit-box scaling: y C at C = 10
    state = np.zeros(n, np.int8)
    state[[3, 12]] = 1
    state[[5, 14]] = 2
    u = np.ones(n)
    a = rng.uniform(0.2, 0.8, n)
    x_ref = np.where(state == 2, 1.0, np.where(state == 1, 0.0, a))
    r = float(yv @ x_ref) + 0.3  # the equality moves the point too
    c = -(H @ rng.uniform(0.0, 1.0, n))  # consistent: some point has zero gradient on F
    out, mu, ok, res, how, flat = qp._kkt_solve(H, c, yv, r, u, state, a)
    assert ok and np.isfinite(out).all() and res <= 1e-13
    assert how == (qp._HOW_EIGEN if singular else qp._HOW_CHOLESKY)
    F = state == 0
    g = H @ out + c + mu * yv
    assert np.abs(g[F]).max() <= 1e-12 and abs(yv @ out - r) <= 1e-12 * np.abs(yv).sum()
    assert np.abs(out - _kkt_reference(H, c, yv, r, u, state, a)).max() <= 1e-8
    # the nearest solution: the correction is orthogonal to the null space of the face's KKT
    # matrix (directions d with H_FF d = 0 and y_F' d = 0, along which every point is a solution)
    A = np.vstack([H[np.ix_(F, F)], yv[None, F]])
    _, sv, Vt = np.linalg.svd(A)
    null = Vt[np.count_nonzero(sv > 1e-10 * sv[0]):]
    assert null.shape[0] == (F.sum() - 5 if singular else 0)  # rank H_FF = 4, plus the y row
    assert np.abs(null @ (out - a)[F]).max(initial=0.0) <= 1e-10


def test_psd_solve_min_norm():
    """`_psd_solve` on an exactly singular PSD matrix: the minimum-norm solution (no component
    along the null space), not a backward-stable one of arbitrary size."""
    rng = np.random.default_rng(0)
    B = rng.normal(size=(30, 5))
    M = B @ B.T
    b = M @ rng.normal(size=30)
    x, how, res = qp._psd_solve(M, b)
    assert how == qp._HOW_EIGEN and res <= 1e-14
    np.testing.assert_allclose(x, np.linalg.pinv(M, rcond=1e-12) @ b, atol=1e-9)


def test_psd_solve_refuses_tiny_pivots():
    """A Cholesky that succeeds on a numerically singular M (here B B' + 1e-14 l_max I) is
    backward stable yet puts (noise in b) / pivot along the null space: 1e-12 / 1e-14 = 100 here,
    as LU put 5.5e3 on the duplicated points under OpenBLAS SkylakeX. Tiny pivots send the solve
    to the pseudo-inverse, which leaves that direction alone."""
    rng = np.random.default_rng(1)
    B = rng.normal(size=(20, 6))
    M0 = B @ B.T
    lmax = np.linalg.eigvalsh(M0)[-1]
    M = M0 + 1e-14 * lmax * np.eye(20)
    null = np.linalg.svd(B.T)[2][-1]  # B' null = 0
    x0 = B @ rng.normal(size=6)
    b = M0 @ x0 + 1e-12 * lmax * null
    x, how, res = qp._psd_solve(M, b)
    assert how == qp._HOW_EIGEN
    assert abs(x @ null) <= 1e-6 and np.abs(x - x0).max() <= 1e-6 * np.abs(x0).max()


def test_snap_multipliers_scaled_yv():
    """The fallback restores y'a = r by the Euclidean projection of the free variables for any yv,
    here yv = y C (the unit-box scaling, C = 10; the old step res y_i / |F| overshot 100-fold and
    clipped every free variable to a bound)."""
    rng = np.random.default_rng(5)
    n = 40
    C = 10.0
    yv = np.where(rng.random(n) > 0.5, 1.0, -1.0) * C
    x = rng.uniform(0.05, 0.95, n)
    z = np.full(n, 1e-12)
    w = np.full(n, 1e-12)
    z[:5] = 1.0  # at 0
    w[5:10] = 1.0  # at 1
    u = np.ones(n)
    r = float(yv @ x) - 0.7 * C  # the free variables must move
    out = qp._snap_multipliers(x, z, w, yv, r, u)
    assert np.all(out[:5] == 0.0) and np.all(out[5:10] == 1.0)
    assert abs(yv @ out - r) <= 1e-12 * np.abs(yv).sum() and out.min() >= 0 and out.max() <= 1
    free = np.arange(10, n)
    # the projection's KKT: out_i = clip(x_i - theta yv_i, 0, 1) with one theta
    inner = free[(out[free] > 0) & (out[free] < 1)]
    assert inner.size > 20  # it moved the free variables a little, not to the bounds
    theta = (x[inner] - out[inner]) / yv[inner]
    assert np.ptp(theta) <= 1e-12
    np.testing.assert_allclose(out[free], np.clip(x[free] - theta[0] * yv[free], 0, 1), atol=1e-12)


# ---------------------------------------------------------------- stopping with a reason
def test_polish_refused_is_stalled_with_a_reason(digits17, monkeypatch):
    """When the polish is refused, alpha is the IPM iterate snapped and projected, and a loose
    ipm_tol leaves m - M above budget.tol: status 'stalled', a ConvergenceWarning stating m - M,
    and info['stop_reason'] saying the polish was refused."""
    X, y = digits17
    monkeypatch.setattr(qp, "_polish", lambda H, c, yv, r, u, a, z, w, gtol: (a, False))
    problem = Problem.build(X[:120], y[:120], C=10.0, intercept="free", **KERNELS["rbf"])
    with pytest.warns(ConvergenceWarning, match=r"qp stopped with status 'stalled'.*m - M"):
        res = fit(problem, "qp", budget=Budget(tol=1e-10), ipm_tol=1e-3)
    assert res.status == "stalled" and not res.info["polished"] and res.kkt_violation > 1e-10
    assert "polish was refused" in res.info["stop_reason"]
    assert abs(res.alpha @ y[:120]) < 1e-10 and res.alpha.min() >= 0 and res.alpha.max() <= 10.0


def test_no_progress_stops_early(digits17, monkeypatch):
    """An IPM that reports no progress (`_STALLED`) ends the loop at once (not at max_iter) with
    status 'stalled' and the reason; if the polish then finds the exact point, it is converged."""
    X, y = digits17
    calls = []

    def stuck(H, V, c, yv, r, u, a, z, w, lam, stall, tol, max_steps):
        calls.append(1)
        return qp._STALLED, 1

    monkeypatch.setattr(qp, "_ipm_run", stuck)
    problem = Problem.build(X[:120], y[:120], C=10.0, intercept="free", **KERNELS["rbf"])
    # the polish alone, from the centred start, finds the exact optimum here
    res = fit(problem, "qp", budget=Budget(tol=1e-10, max_iter=50))
    assert len(calls) == 1 and res.n_iter == 1
    assert res.status == "converged" and res.info["polished"] and res.info["stop_reason"] == ""
    # and when it cannot, the reason is the IPM's
    monkeypatch.setattr(qp, "_polish", lambda H, c, yv, r, u, a, z, w, gtol: (a, False))
    with pytest.warns(ConvergenceWarning, match="stalled"):
        res = fit(problem, "qp", budget=Budget(tol=1e-10, max_iter=50))
    assert len(calls) == 2 and res.n_iter == 1 and res.status == "stalled"
    assert "no progress" in res.info["stop_reason"] and "polish was refused" in res.info["stop_reason"]


def test_ipm_stall_counter():
    """`_ipm_run` itself: from a start pinned against the box and badly centred (a_i at 1e-300 or
    1 - 2^-52, multipliers from 1e-300 to 10) both step lengths collapse; after STALL_COUNT such
    steps it returns _STALLED instead of running on. The counter carries across calls (the
    driver runs one step per call) and a normal step resets it."""
    n = 6
    yv = np.r_[np.ones(3), -np.ones(3)]
    u = np.ones(n)
    rng = np.random.default_rng(0)
    B = rng.normal(size=(n, n))
    H = B @ B.T / n
    c = rng.normal(size=n)
    a = np.where(rng.random(n) < 0.5, 1e-300, 1 - 2.0**-52)
    z = 10.0 ** rng.integers(-300, 2, n)
    w = 10.0 ** rng.integers(-300, 2, n)
    lam = np.zeros(1)
    stall = np.zeros(1, np.int64)
    V = np.zeros((n, 0))
    codes = [qp._ipm_run(H, V, c, yv, float(yv @ a), u, a, z, w, lam, stall, 1e-10, 1)[0] for _ in range(6)]
    k = codes.index(qp._STALLED)
    assert k < 6 and stall[0] >= qp.STALL_COUNT and all(code == qp._RUNNING for code in codes[:k])
    # a step of normal length resets the counter, so only consecutive tiny steps stall
    x = np.full(n, 0.5)
    zc, wc = qp._centred_multipliers(x)
    stall[0] = qp.STALL_COUNT - 1
    code, steps = qp._ipm_run(H, V, c, yv, 0.0, u, x, zc, wc, np.zeros(1), stall, 1e-10, 1)
    assert code == qp._RUNNING and stall[0] == 0  # a centred start moves: the counter resets


# ---------------------------------------------------------------- low-rank path (Fine & Scheinberg)
def test_pivoted_cholesky_reconstruction():
    """K ~ G G' by the pivoted incomplete Cholesky: the residual K - G G' is positive
    semi-definite with the trace the function reports (<= tol trace(K)), so every entry is within
    that trace; on 2-D blobs the rbf kernel needs few columns (its spectrum decays fast), and a
    rank cap stops it with the residual reported, not hidden."""
    X, y = _blobs(500)
    P = Problem.build(X, y, C=1.0, intercept="free", kernel="rbf", gamma=0.5)
    K = qp.kernel_block(P.kernel, X, X)
    G, resid = qp.pivoted_cholesky(P.kernel, X, P.row_norms_sq, 1e-8, 500)
    R = K - G @ G.T
    assert resid <= 1e-8 and np.trace(R) / np.trace(K) == pytest.approx(resid, rel=1e-3, abs=1e-14)
    assert np.abs(R).max() <= resid * np.trace(K) + 1e-12
    assert np.linalg.eigvalsh(R).min() >= -1e-10
    assert G.shape[1] <= 120  # 99 of 500 columns (greedy pivots on the residual diagonal)
    G5, resid5 = qp.pivoted_cholesky(P.kernel, X, P.row_norms_sq, 1e-8, 5)
    assert G5.shape[1] == 5 and resid5 == pytest.approx(np.trace(K - G5 @ G5.T) / np.trace(K), rel=1e-9)
    assert resid5 > 1e-3


@pytest.mark.parametrize("n_small, small, backward", [(90, 1e-9, 1e-12), (10, 1e-20, 1e-6)])
def test_woodbury_newton_solve(n_small, small, backward):
    """The low-rank Newton system (diag(D) + V V') x = b by Sherman-Morrison-Woodbury (r = 20):
    backward stable (residual at the rounding of the terms it sums) with D from 1e-9 to 1e8.
    With fewer than r entries of D at 1e-20 (free variables at the end of the interior point)
    I + V' D^-1 V is singular to rounding and its Cholesky fails; floored at D_FLOOR, the
    floored system is solved instead (to 1e-8 or so: an inexact Newton step), finite."""
    rng = np.random.default_rng(2)
    n, r = 300, 20
    V = rng.normal(size=(n, r)) / np.sqrt(n)
    D = 10.0 ** rng.uniform(-2, 8, n)
    D[rng.permutation(n)[:n_small]] = small
    b = rng.normal(size=n)
    L, ok = qp._factor(np.zeros((0, 0)), V, D)
    assert ok and L.shape == (r, r)
    x = qp._newton_solve(L, np.zeros((0, 0)), V, D, b)
    Df = np.maximum(D, qp.D_FLOOR)
    res = np.abs(Df * x + V @ (V.T @ x) - b)
    assert np.isfinite(x).all()
    # (the forward error is no test here: the condition number reaches 1e8 / 1e-10)
    assert (res <= backward * (Df * np.abs(x) + np.abs(V) @ (np.abs(V.T) @ np.abs(x)) + np.abs(b))).all()


def _lowrank_vs_smo(X, y, C, kw, **params):
    P = Problem.build(X, y, C=C, intercept="free", **kw)
    res = fit(P, "qp", budget=Budget(tol=1e-10), method="lowrank", **params)
    ref = fit(P, "smo", budget=Budget(tol=1e-13))
    return res, ref


def test_lowrank_path_reaches_smo():
    """A few hundred points forced onto the low-rank path: the IPM on Q ~ V V' and the exact
    finish end at smo's optimum, certified on the exact Q (m - M to rounding, not only <= tol)."""
    X, y = _blobs(400)
    res, ref = _lowrank_vs_smo(X, y, 10.0, dict(kernel="rbf", gamma=0.5))
    assert res.info["method"] == "lowrank" and res.info["lowrank_rank"] < 100
    assert res.status == "converged" and res.info["polished"] and res.kkt_violation <= 1e-12
    assert abs(res.dual - ref.dual) <= 1e-11 * abs(ref.dual)
    assert abs(res.alpha @ y) < 1e-10 and res.alpha.min() >= 0 and res.alpha.max() <= 10.0
    assert np.abs(res.alpha - ref.alpha).max() <= 1e-6 * 10.0


def test_lowrank_poor_approximation_still_certified():
    """A kernel of high rank (digits, rbf gamma 0.02) cut at 5 columns: the IPM's optimum is far
    from the exact one, and the exact finish takes several chunking rounds, through the IPM on its
    working set, to certify the exact optimum (smo's)."""
    X, y = digits17_data()
    res, ref = _lowrank_vs_smo(X, y, 10.0, dict(kernel="rbf", gamma=0.02), max_rank=5)
    assert res.info["lowrank_rank"] == 5 and res.info["lowrank_residual"] > 0.1
    assert res.info["finish_rounds"] > 1
    assert res.status == "converged" and res.kkt_violation <= 1e-10
    assert abs(res.dual - ref.dual) <= 1e-10 * abs(ref.dual)


def test_lowrank_uncertified_finish_says_so(monkeypatch):
    """When the exact finish stops short (here its round cap cut to 1 on a poor approximation),
    the status is 'stalled' with the reason and m - M on the exact Q, never 'converged'."""
    X, y = digits17_data()
    monkeypatch.setattr(qp, "FINISH_ROUNDS", 1)
    P = Problem.build(X, y, C=10.0, intercept="free", kernel="rbf", gamma=0.02)
    with pytest.warns(ConvergenceWarning, match=r"stalled.*m - M.*cap of 1 rounds"):
        res = fit(P, "qp", budget=Budget(tol=1e-10), method="lowrank", max_rank=5)
    assert res.status == "stalled" and not res.info["polished"] and res.kkt_violation > 1e-10
    assert "cap of 1 rounds" in res.info["stop_reason"]
    assert abs(res.alpha @ y) < 1e-10 and res.alpha.min() >= 0 and res.alpha.max() <= 10.0


def test_auto_path(monkeypatch):
    """method='auto': dense up to AUTO_DENSE_N points (lowered here to keep the test small);
    above, the low-rank path when n / 8 columns reach lowrank_tol (2-D blobs), else dense with
    the reason (gamma 1e4: K ~ I, rank n)."""
    monkeypatch.setattr(qp, "AUTO_DENSE_N", 200)
    X, y = _blobs(1200)
    kw = dict(C=1.0, intercept="free", kernel="rbf")
    low = fit(Problem.build(X, y, gamma=0.5, **kw), "qp")
    assert low.info["method"] == "lowrank" and low.info["lowrank_rank"] <= 1200 // 8
    assert low.status == "converged" and low.kkt_violation <= 1e-6
    small = fit(Problem.build(X[::6], y[::6], gamma=0.5, **kw), "qp")  # 200 points
    assert small.info["method"] == "dense" and "lowrank_rank" not in small.info
    wide = fit(Problem.build(X[::3], y[::3], gamma=1e4, **kw), "qp")  # 400 points
    assert wide.info["method"] == "dense" and wide.info["lowrank_rank"] == 50
    assert "the dense path" in wide.info["method_reason"] and wide.status == "converged"


def test_lowrank_ipm_stops_when_it_stops_improving(monkeypatch):
    """Degree 3 on 2-D blobs at C = 1e4 (rank 10, exact): below D_FLOOR the low-rank Newton steps
    are inexact and the interior point creeps (169 iterations without the stop); it ends when its
    residuals stop halving, and the exact finish certifies the optimum from there."""
    X, y = _blobs(600)
    P = Problem.build(X, y, C=1e4, intercept="free", kernel="poly", degree=3, gamma=0.5, coef0=1.0)
    res = fit(P, "qp", budget=Budget(tol=1e-9), method="lowrank")
    assert res.status == "converged" and res.kkt_violation <= 1e-9 and res.n_iter < 60
    monkeypatch.setattr(qp, "LOWRANK_STALL", 10**6)
    creep = fit(P, "qp", budget=Budget(tol=1e-9), method="lowrank")
    assert creep.n_iter > 150 and creep.dual == pytest.approx(res.dual, rel=1e-10)  # both m - M ~ 3e-10
