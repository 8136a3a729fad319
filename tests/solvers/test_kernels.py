"""Kernels against slow, obvious implementations; the LRU Q-column cache against the full Q."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

from solvers import Problem
from solvers.kernels import (Kernel, PrefixQColumnCache, QColumnCache, cache_get, prefix_get, kernel_block,
                             kernel_diagonal, resolve_gamma, row_norms_sq)

KERNELS = [Kernel("linear"), Kernel("rbf", gamma=0.3), Kernel("poly", gamma=0.2, degree=3, coef0=1.0),
           Kernel("poly", gamma=1.5, degree=1, coef0=-0.5)]


def slow_kernel(k, x, z):
    if k.name == "linear":
        return float(x @ z)
    if k.name == "rbf":
        return math.exp(-k.gamma * float((x - z) @ (x - z)))
    return (k.gamma * float(x @ z) + k.coef0) ** k.degree


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 7))
    X[rng.random(X.shape) < 0.4] = 0.0
    y = np.where(rng.random(40) > 0.5, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: f"{k.name}{k.degree}")
def test_kernel_block_matches_slow_loop(data, k):
    X, _ = data
    Z = X[:9] * 1.3
    slow = np.array([[slow_kernel(k, x, z) for z in Z] for x in X])
    np.testing.assert_allclose(kernel_block(k, X, Z), slow, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel_block(k, sp.csr_matrix(X), sp.csr_matrix(Z)), slow, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel_diagonal(k, row_norms_sq(X)), np.diag(kernel_block(k, X, X)), rtol=1e-12)


def test_agrees_with_scikit_learn(data):
    X, _ = data
    np.testing.assert_allclose(kernel_block(Kernel("rbf", gamma=0.3), X, X), rbf_kernel(X, gamma=0.3), rtol=1e-10)
    np.testing.assert_allclose(kernel_block(Kernel("poly", gamma=0.2, degree=3, coef0=1.0), X, X),
                               polynomial_kernel(X, degree=3, gamma=0.2, coef0=1.0), rtol=1e-10)


def test_gamma_scale_as_scikit_learn(data):
    X, _ = data
    assert resolve_gamma("scale", X) == pytest.approx(1.0 / (X.shape[1] * X.var()))
    assert resolve_gamma("scale", sp.csr_matrix(X)) == pytest.approx(1.0 / (X.shape[1] * X.var()))
    assert resolve_gamma("auto", X) == pytest.approx(1.0 / X.shape[1])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("k", KERNELS, ids=lambda k: f"{k.name}{k.degree}")
def test_cache_columns_are_Q(data, k, sparse):
    """Q[:, idx] from the cache (misses by BLAS, hits from the buffer) and from the numba path
    (cache_get, on a subset of rows as after shrinking) equal diag(y) K diag(y)."""
    X, y = data
    Xc = sp.csr_matrix(X) if sparse else X
    if sparse:
        Xc.indices = Xc.indices.astype(np.int32)
        Xc.indptr = Xc.indptr.astype(np.int32)
    Q = y[:, None] * kernel_block(k, X, X) * y[None, :]
    cache = QColumnCache(k, Xc, y, cache_mb=8 * 40 * 6 / 2**20)  # six columns
    assert cache.n_slots == 6
    np.testing.assert_allclose(cache.QD, np.diag(Q), rtol=1e-12)
    idx = np.array([3, 17, 5])
    np.testing.assert_allclose(cache.columns(idx), Q[:, idx], rtol=1e-12, atol=1e-12)
    assert cache.misses == 3 and cache.hits == 0
    np.testing.assert_allclose(cache.columns(idx[::-1]), Q[:, idx[::-1]], rtol=1e-12, atol=1e-12)
    assert cache.hits == 3
    rows = np.array([1, 3, 4, 9, 22, 39], dtype=np.int64)
    for i in (0, 3, 30, 31, 32, 33, 34, 35):  # more columns than slots: evictions
        col = cache_get(i, False, rows, rows.size, cache.state, cache.data, cache.ker)
        np.testing.assert_allclose(col[rows], Q[rows, i], rtol=1e-12, atol=1e-12)
    full = cache_get(31, True, rows, rows.size, cache.state, cache.data, cache.ker)
    np.testing.assert_allclose(full, Q[:, 31], rtol=1e-12, atol=1e-12)
    # the least recently used columns (3 and 17 from the first request) were evicted
    slot_of = cache.state[1]
    assert slot_of[17] == -1 and slot_of[35] >= 0
    assert (slot_of >= 0).sum() == 6


def test_cache_partial_columns_invalidated_when_the_active_set_grows(data):
    X, y = data
    k = KERNELS[1]
    Q = y[:, None] * kernel_block(k, X, X) * y[None, :]
    cache = QColumnCache(k, X, y)
    rows = np.arange(0, 40, 2, dtype=np.int64)
    cache_get(7, False, rows, rows.size, cache.state, cache.data, cache.ker)
    misses = cache.misses
    cache_get(7, False, rows[:5], 5, cache.state, cache.data, cache.ker)  # a smaller set: a hit
    assert cache.misses == misses
    cache.invalidate_partial()
    allrows = np.arange(40, dtype=np.int64)
    col = cache_get(7, False, allrows, 40, cache.state, cache.data, cache.ker)
    assert cache.misses == misses + 1
    np.testing.assert_allclose(col, Q[:, 7], rtol=1e-12)


@njit
def _prefix_col(p, n_rows, state, data, ker):
    """prefix_get from Python, through an uncached caller: numba 0.68 cannot box the array a
    cached function returns to Python once another cached function that calls it was loaded
    ('NRT_adapt_ndarray_to_python: descr is NULL'); the solvers call it from numba only."""
    return prefix_get(p, n_rows, state, data, ker).copy()


def _csr(X):
    Xc = sp.csr_matrix(X)
    Xc.indices = Xc.indices.astype(np.int32)
    Xc.indptr = Xc.indptr.astype(np.int32)
    return Xc


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("k", KERNELS, ids=lambda k: f"{k.name}{k.degree}")
def test_prefix_cache_columns_are_Q(data, k, sparse):
    """smo's cache (LIBSVM's layout): prefix_get on a prefix of the positions, with evictions,
    equals diag(y) K diag(y); the least recently used columns go first."""
    X, y = data
    Q = y[:, None] * kernel_block(k, X, X) * y[None, :]
    cache = PrefixQColumnCache(k, _csr(X) if sparse else X, y, cache_mb=8 * 40 * 6 / 2**20)
    assert cache.n_slots == 6
    for i in (0, 3, 17, 30, 31, 32, 33, 34, 35):  # more columns than slots: evictions
        col = _prefix_col(i, 9, cache.state, cache.data, cache.ker)
        np.testing.assert_allclose(col[:9], Q[:9, i], rtol=1e-12, atol=1e-12)
    full = _prefix_col(31, 40, cache.state, cache.data, cache.ker)
    np.testing.assert_allclose(full, Q[:, 31], rtol=1e-12, atol=1e-12)
    slot_of = cache.state[1]
    assert slot_of[3] == -1 and slot_of[17] == -1 and slot_of[35] >= 0 and (slot_of >= 0).sum() == 6
    assert cache.misses == 10 and cache.kernel_evaluations == 9 * 9 + 31


def test_prefix_cache_extends_a_prefix(data):
    """A request for a longer prefix computes only the entries the slot lacks (LIBSVM's
    Cache::get_data); a shorter one is a hit."""
    X, y = data
    k = KERNELS[1]
    Q = y[:, None] * kernel_block(k, X, X) * y[None, :]
    cache = PrefixQColumnCache(k, X, y)
    _prefix_col(7, 20, cache.state, cache.data, cache.ker)
    _prefix_col(7, 5, cache.state, cache.data, cache.ker)
    assert (cache.misses, cache.hits, cache.kernel_evaluations) == (1, 1, 20)
    col = _prefix_col(7, 40, cache.state, cache.data, cache.ker)
    assert (cache.misses, cache.kernel_evaluations) == (2, 40)
    np.testing.assert_allclose(col, Q[:, 7], rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_prefix_swaps_keep_columns_in_position_order(data, sparse):
    """LIBSVM's layout: after swaps, position p holds row perm[p] of X and every cached column's
    valid prefix holds Q[perm][:, perm]'s entries; a column holding only the first of two swapped
    entries is cut before it (the rest would be stale), one holding both keeps its length."""
    from solvers.kernels import prefix_swaps
    X, y = data
    X0 = X.copy()
    k = KERNELS[2]
    Q = y[:, None] * kernel_block(k, X, X) * y[None, :]
    cache = PrefixQColumnCache(k, _csr(X) if sparse else X, y)
    lengths = {2: 40, 6: 36, 11: 12, 25: 1}
    for p, L in lengths.items():
        _prefix_col(p, L, cache.state, cache.data, cache.ker)
    # nested, as LIBSVM's shrinking makes them: (i ascending, j descending)
    I = np.array([1, 6, 9, 20], dtype=np.int64)
    J = np.array([35, 28, 15, 21], dtype=np.int64)
    prefix_swaps(I, J, 4, cache.state, cache.data)
    perm = cache.perm
    ref = np.arange(40)
    for i, j in zip(I, J):
        ref[[i, j]] = ref[[j, i]]
    np.testing.assert_array_equal(perm, ref)
    buf, slot_of, col_of, _, _, length, _ = cache.state
    # variable 6 moved to position 28 with its column; 28's slot is now none
    assert col_of[slot_of[28]] == 28 and slot_of[6] == -1
    # 11's column (length 12) holds entry 1 but not 35: cut at 1; 25's (length 1) holds neither
    expected = {2: 40, 28: 36, 11: 1, 25: 1}
    for p, L in expected.items():
        s = slot_of[p]
        assert length[s] == L, p
        np.testing.assert_allclose(buf[s, :L], Q[perm[:L], perm[p]], rtol=1e-12, atol=1e-12)
    if not sparse:
        np.testing.assert_array_equal(cache.position_rows(), X[perm])
    np.testing.assert_array_equal(cache.data[6], y[perm])
    np.testing.assert_array_equal(X, X0)  # the caller's X is never reordered
    # entries computed after the swaps are in the new order too
    col = _prefix_col(11, 40, cache.state, cache.data, cache.ker)
    np.testing.assert_allclose(col, Q[perm, perm[11]], rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="position"):
        cache.columns([3])


def test_matvec_in_chunks(data):
    X, y = data
    k = KERNELS[2]
    cache = QColumnCache(k, X, y)
    beta = np.linspace(-1, 1, 12)
    idx = np.arange(3, 15)
    ref = kernel_block(k, X, X[idx]) @ beta
    np.testing.assert_allclose(cache.matvec(idx, beta, chunk_mb=1e-4), ref, rtol=1e-12)
    np.testing.assert_allclose(cache.matvec(idx, beta, rows=np.array([4, 2])), ref[[4, 2]], rtol=1e-12)


@pytest.mark.parametrize("kw, key", [
    (dict(name="rbf", gamma=0.0), "gamma"), (dict(name="rbf", gamma=-1.0), "gamma"),
    (dict(name="poly", gamma=1.0, degree=0), "degree"), (dict(name="poly", gamma=1.0, degree=2.5), "degree"),
    (dict(name="sigmoid"), "kernel"), (dict(name="poly", coef0=math.inf), "coef0"),
])
def test_bad_kernel_parameters_name_the_key(kw, key):
    with pytest.raises(ValueError, match=key):
        Kernel(**kw)


def test_bad_cache_size():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="cache_size"):
        QColumnCache(Kernel("rbf", 1.0), X, np.array([1.0, -1, 1]), cache_mb=0)


def test_problem_build_resolves_gamma(data):
    X, y = data
    p = Problem.build(X, y, kernel="rbf", gamma="scale", intercept="free")
    assert p.kernel.gamma == pytest.approx(1.0 / (X.shape[1] * X.var()))
