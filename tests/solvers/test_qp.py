"""qp (the whole dual by an interior point method) against LIBSVM and against brute checks."""
import numpy as np
import pytest

from solvers import Budget, Problem, SolverError, fit
from kernel_refs import KERNELS, breast_cancer_data, digits17_data, svc_reference
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
    assert dense_limit(2048.0) == 8192


def test_cvxopt_backend(breast_cancer):
    pytest.importorskip("cvxopt")
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    a = fit(problem, "qp", budget=Budget(tol=1e-8), backend="cvxopt")
    b = fit(problem, "qp", budget=Budget(tol=1e-8))
    assert a.dual == pytest.approx(b.dual, rel=1e-8)


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
