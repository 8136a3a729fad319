"""svmlight against LIBSVM (scikit-learn's SVC), its proximal-point path, and its certificates."""
import numpy as np
import pytest

from solvers import Budget, Problem, SolverError, fit
from kernel_refs import KERNELS, breast_cancer_data, digits17_data, svc_reference
from solvers.svmlight import select_working_set

@pytest.fixture(scope="module")
def breast_cancer():
    return breast_cancer_data()


@pytest.fixture(scope="module")
def digits17():
    return digits17_data()


@pytest.mark.parametrize("data", ["breast_cancer", "digits17"])
@pytest.mark.parametrize("kname", ["rbf", "poly"])
@pytest.mark.parametrize("q", [2, 20])
def test_reaches_svc(request, data, kname, q):
    X, y = request.getfixturevalue(data)
    kw = KERNELS[kname]
    C = 10.0
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    res = fit(Problem.build(X, y, C=C, intercept="free", **kw), "svmlight", budget=Budget(tol=1e-9), q=q)
    assert res.status == "converged"
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4
    assert abs(res.gap) <= 1e-6 * abs(res.primal)
    assert res.kkt_violation < 1e-9
    assert abs(res.alpha @ y) < 1e-9 and res.alpha.min() >= 0 and res.alpha.max() <= C
    assert res.info["q"] == q and res.info["n_sv"] == np.count_nonzero(res.alpha)


def test_singular_Q_WW_takes_the_proximal_path(digits17):
    """Every point twice: Q_WW is singular whenever W holds both copies. With proximal="auto"
    the proximal-point subproblem (bertini II.B) is used and the optimum is still SVC's."""
    X, y = digits17
    X2, y2 = np.vstack([X[:120], X[:120]]), np.concatenate([y[:120], y[:120]])
    kw = KERNELS["rbf"]
    D_ref, f_ref, K = svc_reference(X2, y2, 10.0, kw)
    problem = Problem.build(X2, y2, C=10.0, intercept="free", **kw)
    res = fit(problem, "svmlight", budget=Budget(tol=1e-9), q=40)
    assert res.status == "converged" and res.info["n_proximal"] > 0
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y2) + res.b - f_ref).max() < 1e-4
    always = fit(problem, "svmlight", budget=Budget(tol=1e-9), q=40, proximal="always", tau=0.5)
    assert always.info["n_proximal"] == always.n_iter
    assert abs(always.dual - D_ref) <= 1e-6 * abs(D_ref)
    never = fit(Problem.build(X[:120], y[:120], C=10.0, intercept="free", **kw), "svmlight",
                budget=Budget(tol=1e-9), q=10, proximal="never")
    assert never.info["n_proximal"] == 0


def test_small_cache_same_result(digits17):
    X, y = digits17
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    full = fit(problem, "svmlight", budget=Budget(tol=1e-8), q=10)
    small = fit(problem, "svmlight", budget=Budget(tol=1e-8), q=10, cache_size=8 * len(y) * 12 / 2**20)
    assert small.info["cache_columns"] == 12 and small.info["cache_misses"] > full.info["cache_misses"]
    assert small.n_iter == full.n_iter
    np.testing.assert_allclose(small.alpha, full.alpha, atol=1e-10)


def test_every_sv_at_bound(breast_cancer):
    X, y = breast_cancer
    keep = np.concatenate([np.flatnonzero(y > 0)[:100], np.flatnonzero(y < 0)[:100]])
    X, y = X[keep], y[keep]
    kw = dict(kernel="rbf", gamma=0.1)
    D_ref, f_ref, K = svc_reference(X, y, 1e-3, kw)
    res = fit(Problem.build(X, y, C=1e-3, intercept="free", **kw), "svmlight", budget=Budget(tol=1e-10))
    assert res.info["b_rule"] == "bound_only"
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4


def test_warm_start(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    cold = fit(problem, "svmlight", budget=Budget(tol=1e-8))
    again = fit(problem, "svmlight", budget=Budget(tol=1e-8), warm_start=cold)
    assert again.n_iter == 0 and again.dual == pytest.approx(cold.dual, rel=1e-12)
    bad = {"alpha": np.random.default_rng(1).uniform(-5, 20, size=len(y))}
    warm = fit(problem, "svmlight", budget=Budget(tol=1e-8), warm_start=bad)
    assert warm.status == "converged" and warm.dual == pytest.approx(cold.dual, rel=1e-9)


def test_working_set_is_the_most_violating():
    v = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    up = np.array([1, 1, 0, 1, 1, 1], bool)
    low = np.array([1, 1, 1, 1, 1, 0], bool)
    W, m, M = select_working_set(v, up, low, 4)
    assert m == 5.0 and M == 1.0
    assert sorted(W[:2]) == [0, 1] and sorted(W[2:]) == [3, 4]
    assert len(set(W)) == len(W)


@pytest.mark.parametrize("key, value, match", [
    ("q", 1, "q"), ("q", 7, "q"), ("tau", 0.0, "tau"), ("tau", -1.0, "tau"),
    ("cache_size", 0.0, "cache_size"), ("proximal", "sometimes", "proximal"),
])
def test_bad_params_name_the_key(breast_cancer, key, value, match):
    X, y = breast_cancer
    problem = Problem.build(X[:50], y[:50], intercept="free", kernel="rbf", gamma=1.0)
    with pytest.raises(SolverError, match=match):
        fit(problem, "svmlight", **{key: value})
