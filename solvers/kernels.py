"""Kernel functions and their specification.

A `Kernel` is plain data (name and parameters); `kernel_block(kernel, X, Z)` evaluates
K(X, Z) in vectorised form with BLAS, as bertini I.A writes the Gaussian kernel:
``||x||^2 - 2 X Z^T + ||z||^2`` inside the exponential. No n x n Python loop anywhere.

    linear:  k(x, z) = x . z
    rbf:     k(x, z) = exp(-gamma ||x - z||^2)
    poly:    k(x, z) = (gamma x . z + coef0) ** degree
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

KERNELS = ("linear", "rbf", "poly")


@dataclass(frozen=True)
class Kernel:
    """A kernel and its resolved parameters (gamma is always a number here)."""

    name: str = "linear"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self):
        if self.name not in KERNELS:
            raise ValueError(f"kernel={self.name!r} is not one of {list(KERNELS)}")
        if self.name != "linear":
            if not (np.isfinite(self.gamma) and self.gamma > 0):
                raise ValueError(f"gamma={self.gamma!r} must be a finite number > 0")
            if not np.isfinite(self.coef0):
                raise ValueError(f"coef0={self.coef0!r} must be finite")
        if self.name == "poly" and (int(self.degree) != self.degree or self.degree < 1):
            raise ValueError(f"degree={self.degree!r} must be an integer >= 1")

    @property
    def is_linear(self) -> bool:
        return self.name == "linear"

    def as_dict(self) -> dict:
        if self.name == "linear":
            return {"kernel": "linear"}
        d = {"kernel": self.name, "gamma": float(self.gamma)}
        if self.name == "poly":
            d.update(degree=int(self.degree), coef0=float(self.coef0))
        return d


def resolve_gamma(gamma, X) -> float:
    """`gamma` as a number: "scale" is 1 / (n_features * X.var()) and "auto" is
    1 / n_features, as in scikit-learn's SVC. X.var() is `_variance`'s, the same float for a
    dense array and a CSR matrix of the same values (scikit-learn's SVC computes it two ways,
    which differ in the last bits)."""
    n_features = X.shape[1]
    if isinstance(gamma, str):
        if gamma == "scale":
            var = _variance(X)
            return 1.0 / (n_features * var) if var > 0 else 1.0
        if gamma == "auto":
            return 1.0 / n_features
        raise ValueError(f"gamma={gamma!r} must be 'scale', 'auto' or a number > 0")
    return float(gamma)


# ------------------------------------------------------------------ one summation order
# A kernel value must not depend on how X is stored: the kernel solvers choose their working
# sets by comparing gradients built from kernel values, so values that differ in the last bit
# between a dense array and a CSR matrix of the same rows make the two paths part ways, and the
# solves stop at different points inside their tolerance. Every dot product the solvers compute
# themselves (the cached columns of Q, svmlight's Q_WW), every squared row norm and the variance
# behind gamma="scale" is therefore summed in one order: over the features in increasing index,
# from 0, one rounding per product and one per addition (no fused multiply-add):
#
#     x . z = (...((0 + x_1 z_1) + x_2 z_2) + ...) + x_d z_d.
#
# A CSR row (sorted indices, as Problem keeps them) gives the same float by summing over its
# nonzeros only: a skipped term is a product with a zero, and s + (+-0) = s (up to the sign of
# a zero sum, which no kernel value or update can tell). A dense loop in this order cannot be
# vectorised along the features, so the dense kernels vectorise across rows instead: smo's cache
# keeps its rows in panels (`_panels`), svmlight's reads four rows at a time (`row_dots`).
# LIBSVM's dot (svm.cpp's Kernel::dot, over sparse nodes or, in scikit-learn's dense build, over
# all features) sums in this order too. BLAS's products (`kernel_block`) sum in blocks of its own
# choice; they are kept for the blocks computed outside the solvers' loops and made
# storage-independent by densifying (`_dot`).


def canonical_csr(X):
    """X (sparse) as CSR with float64 values and sorted, duplicate-free indices: X itself when it
    already is, otherwise a copy (never in place on the caller's matrix)."""
    if not (X.format == "csr" and X.dtype == np.float64):
        X = sp.csr_matrix(X, dtype=np.float64)
    elif X.has_canonical_format:
        return X
    else:
        X = X.copy()
    X.sum_duplicates()   # sorts the indices too
    X.sort_indices()
    return X


@njit(cache=True, nogil=True)
def _csr_row_sums(data, indptr, shift, square):
    """Per row, the sum over its nonzero values v, in storage order, of v - shift, or of
    (v - shift)^2 when square; and the number of nonzeros. Stored zeros are skipped, so a dense
    row read as a CSR row that stores every column (`_row_sums`) gives the same floats."""
    n = indptr.shape[0] - 1
    out = np.empty(n)
    nnz = 0
    for i in range(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = data[p]
            if v != 0.0:
                t = v - shift
                s += t * t if square else t
                nnz += 1
        out[i] = s
    return out, nnz


def _row_sums(X, shift=0.0, square=False):
    """`_csr_row_sums` of X, dense (each row read as a CSR row that stores all its columns, in
    order) or sparse (sorted indices): per-row sums in feature order, the same floats for either
    storage, and the number of nonzeros."""
    if sp.issparse(X):
        X = canonical_csr(X)
        return _csr_row_sums(X.data, X.indptr, shift, square)
    X = np.ascontiguousarray(X, dtype=np.float64)
    return _csr_row_sums(X.reshape(-1), np.arange(X.shape[0] + 1) * X.shape[1], shift, square)


def _variance(X) -> float:
    """The variance of all n d entries of X (zeros included), two-pass as numpy's var: the mean,
    then the mean squared deviation, each a sum of per-row sums over the nonzeros (`_row_sums`)
    with the zeros' share added in one term, (n d - nnz) mean^2. The per-row sums and their total
    (numpy's sum of the same vector) are the same floats for either storage."""
    N = X.shape[0] * X.shape[1]
    if N == 0:
        return 0.0
    rows, _ = _row_sums(X)
    mean = float(rows.sum()) / N
    rows, nnz = _row_sums(X, mean, True)
    return (float(rows.sum()) + (N - nnz) * mean * mean) / N


def row_norms_sq(X) -> np.ndarray:
    """||x_i||^2 for each row, dense or CSR, without densifying, summed in feature order (the
    same floats for either storage)."""
    return _row_sums(X, 0.0, True)[0]


@njit(cache=True, nogil=True)
def row_dots(X, rows, n_rows, x, out):
    """out[t] = X[rows[t]] . x for t < n_rows, each summed in feature order (dense X, row-major):
    four rows at a time, so that four independent sums share each x_f."""
    d = X.shape[1]
    t = 0
    while t + 4 <= n_rows:
        a = X[rows[t]]
        b = X[rows[t + 1]]
        c = X[rows[t + 2]]
        e = X[rows[t + 3]]
        s0 = s1 = s2 = s3 = 0.0
        for f in range(d):
            v = x[f]
            s0 += a[f] * v
            s1 += b[f] * v
            s2 += c[f] * v
            s3 += e[f] * v
        out[t] = s0
        out[t + 1] = s1
        out[t + 2] = s2
        out[t + 3] = s3
        t += 4
    while t < n_rows:
        a = X[rows[t]]
        s = 0.0
        for f in range(d):
            s += a[f] * x[f]
        out[t] = s
        t += 1


#: Rows per panel of smo's dense layout (`_panels`): 32 sums in flight hide the latency of each
#: addition and fill whole vector registers.
PANEL = 32


def _panels(X) -> np.ndarray:
    """A dense X as panels of PANEL rows, P[b, f, r] = X[b PANEL + r, f] (rows past n are 0, and
    X without columns has one column of zeros, so that every panel has a first feature):
    within a panel a feature's PANEL values are contiguous, so `_panel_dots` sums PANEL rows in
    feature order with vector loads and operations, streaming through memory as a row-major
    product does (faster than BLAS's gemv on MNIST's rows: docs/benchmarks/kernel.md)."""
    n, d = X.shape
    nb = -(-n // PANEL)
    P = np.zeros((nb, max(d, 1), PANEL))
    full = n // PANEL
    P[:full, :d] = X[:full * PANEL].reshape(full, PANEL, d).transpose(0, 2, 1)
    if full < nb:
        P[full, :d, :n - full * PANEL] = X[full * PANEL:].T
    return P


@njit(cache=True, nogil=True, inline="always")
def _panel_dots(P, b, x, acc, at):
    """acc[at + r] = x . (row r of panel b) for the PANEL rows of panel b, each in feature order
    (the first term added to 0 as it is read: one pass less over acc)."""
    Pb = P[b]
    v = x[0]
    col = Pb[0]
    for r in range(PANEL):
        acc[at + r] = 0.0 + col[r] * v
    for f in range(1, Pb.shape[0]):
        v = x[f]
        col = Pb[f]
        for r in range(PANEL):
            acc[at + r] += col[r] * v


#: The largest sparse operand (as dense float64 bytes) `_dot` makes dense for its product.
DENSE_OPERAND_BYTES = 64 << 20


def _densified(A):
    """A as a dense array when that stays under DENSE_OPERAND_BYTES, else A."""
    if sp.issparse(A) and 8 * A.shape[0] * A.shape[1] <= DENSE_OPERAND_BYTES:
        return A.toarray()
    return A


def _dot(X, Z) -> np.ndarray:
    """X Z^T as a dense array: BLAS for dense operands, a sparse product otherwise.

    A sparse operand that is small as a dense array (DENSE_OPERAND_BYTES) is made dense first:
    on image rows (hundreds of columns, a fifth of them nonzero) a dense BLAS product beats
    scipy's CSR products several times over (docs/benchmarks/code-notes.md). The decision
    values on test rows and a warm start's gradient are such products.
    A text set's 47k columns keep its rows sparse.

    Made dense, a CSR operand is the very array a dense caller passes, so the product is the same
    BLAS call with the same floats; K(X, X) densifies X once, so that it is numpy's symmetric
    product (syrk) for a CSR X as for a dense one. A product left sparse sums each entry in
    feature order over sorted indices (`canonical_csr`), where BLAS sums in blocks: above
    DENSE_OPERAND_BYTES the two storages agree to rounding only."""
    same = X is Z
    X = _densified(canonical_csr(X) if sp.issparse(X) else X)
    Z = X if same else _densified(canonical_csr(Z) if sp.issparse(Z) else Z)
    if not (sp.issparse(X) or sp.issparse(Z)):
        X = np.asarray(X)
        return X @ (X if same else np.asarray(Z)).T
    out = X @ Z.T
    return out.toarray() if sp.issparse(out) else np.asarray(out)


def kernel_block(kernel: Kernel, X, Z, x_norms=None, z_norms=None) -> np.ndarray:
    """K(X, Z), shape (len(X), len(Z)), float64.

    `x_norms`/`z_norms` are the squared row norms when already known (the rbf kernel
    needs them; computing them once per solve, not once per block, is the point).
    """
    G = _dot(X, Z)
    if kernel.name == "linear":
        return G
    if kernel.name == "rbf":
        xn = row_norms_sq(X) if x_norms is None else x_norms
        zn = row_norms_sq(Z) if z_norms is None else z_norms
        # ||x - z||^2 = ||x||^2 - 2 x.z + ||z||^2; clip the tiny negatives rounding makes.
        G *= -2.0
        G += xn[:, None]
        G += zn[None, :]
        np.maximum(G, 0.0, out=G)
        G *= -kernel.gamma
        return np.exp(G, out=G)
    G *= kernel.gamma
    G += kernel.coef0
    return G ** int(kernel.degree)


# ------------------------------------------------------------------ kernel-column cache
# The dual solvers (smo, svmlight) need columns Q_i = (y_i y_k K(x_i, x_k))_k of the Hessian of
# the dual, Q = diag(y) K diag(y), a few at a time. `QColumnCache` keeps the most recently used
# columns in a bounded buffer (LRU, size in MB), so n can exceed what a full n x n matrix allows.
# Its state is plain arrays, so a numba loop (smo) and Python code (svmlight, through
# `QColumnCache.columns`) use the same cache. A column may be computed only on the rows of a
# shrunken active set (LIBSVM's design, Fan, Chen & Lin 2005, Section 5); such a column stays
# valid while the active set only shrinks and is dropped when the set is enlarged again
# (`QColumnCache.invalidate_partial`).

_KIND = {"linear": 0, "rbf": 1, "poly": 2}

# Layout of the int64 `stats` array of a cache.
_N_USED, _EPOCH, _HITS, _MISSES = 0, 1, 2, 3


@njit(cache=True, nogil=True, inline="always")
def kernel_value(kind, gamma, coef0, degree, dot, ni, nk):
    if kind == 0:
        return dot
    if kind == 1:
        d2 = ni - 2.0 * dot + nk
        if d2 < 0.0:
            d2 = 0.0
        return math.exp(-gamma * d2)
    v = gamma * dot + coef0
    out = 1.0
    for _ in range(degree):
        out *= v
    return out


@njit(cache=True, nogil=True, inline="always")
def scattered_dot(scratch, vals, indices, indptr, k):
    """x_i . x_k for CSR row k, with x_i scattered into the dense `scratch` (LIBSVM's sparse dot)."""
    s = 0.0
    for p in range(indptr[k], indptr[k + 1]):
        s += scratch[indices[p]] * vals[p]
    return s


@njit(cache=True, nogil=True, error_model="numpy")
def _fill_column(i, rows, n_rows, out, data, ker):
    """out[k] = Q_ik = y_i y_k K(x_i, x_k) for k in rows[:n_rows]: one pass over X, BLAS-free,
    the dot products in feature order (`row_dots` on dense rows, a scatter/gather sparse dot on
    CSR rows, as LIBSVM's sparse dot: the same floats)."""
    dense, Xd, vals, indices, indptr, xn, y, scratch = data
    kind, gamma, coef0, degree = ker
    yi = y[i]
    ni = xn[i]
    if dense:
        row_dots(Xd, rows, n_rows, Xd[i], scratch)
        for t in range(n_rows):
            k = rows[t]
            out[k] = yi * y[k] * kernel_value(kind, gamma, coef0, degree, scratch[t], ni, xn[k])
    else:
        for p in range(indptr[i], indptr[i + 1]):
            scratch[indices[p]] = vals[p]
        for t in range(n_rows):
            k = rows[t]
            s = scattered_dot(scratch, vals, indices, indptr, k)
            out[k] = yi * y[k] * kernel_value(kind, gamma, coef0, degree, s, ni, xn[k])
        for p in range(indptr[i], indptr[i + 1]):
            scratch[indices[p]] = 0.0


@njit(cache=True, nogil=True, inline="always")
def _lru_touch(s, prev, nxt):
    """Move slot s to the most-recently-used end of the circular list (sentinel = len - 1)."""
    head = prev.shape[0] - 1
    # unlink (a no-op for a fresh slot whose links point to itself)
    nxt[prev[s]] = nxt[s]
    prev[nxt[s]] = prev[s]
    # insert before the sentinel (the tail is the MRU end)
    last = prev[head]
    nxt[last] = s
    prev[s] = last
    nxt[s] = head
    prev[head] = s


@njit(cache=True, nogil=True)
def _lru_slot(i, slot_of, col_of, prev, nxt, stats):
    """Slot holding column i, allocated (a free slot, or the least recently used one's) when
    absent; stats[0] counts the slots in use. Returns (slot, present)."""
    s = slot_of[i]
    if s >= 0:
        _lru_touch(s, prev, nxt)
        return s, True
    n_slots = col_of.shape[0]
    if stats[0] < n_slots:
        s = stats[0]
        stats[0] += 1
        prev[s] = s
        nxt[s] = s
    else:
        s = nxt[prev.shape[0] - 1]  # least recently used
        slot_of[col_of[s]] = -1
    col_of[s] = i
    slot_of[i] = s
    _lru_touch(s, prev, nxt)
    return s, False


def _lru_arrays(n, n_slots):
    """slot_of, col_of and the circular list (prev, nxt; the last entry is the sentinel) of an
    empty cache of n columns in n_slots slots."""
    prev = np.zeros(n_slots + 1, np.int64)
    nxt = np.zeros(n_slots + 1, np.int64)
    prev[-1] = nxt[-1] = n_slots
    return np.full(n, -1, np.int64), np.full(n_slots, -1, np.int64), prev, nxt


@njit(cache=True, nogil=True)
def _cache_slot(i, cache):
    """Slot holding column i, allocated (evicting the least recently used) when absent.
    Returns (slot, present); a present slot may still need recomputation (see cache_get)."""
    buf, slot_of, col_of, prev, nxt, full, epoch, stats = cache
    s, present = _lru_slot(i, slot_of, col_of, prev, nxt, stats)
    if not present:
        full[s] = 0
        epoch[s] = -1
    return s, present


@njit(cache=True, nogil=True)
def cache_get(i, need_full, rows, n_rows, cache, data, ker):
    """Q_i as a row of the cache buffer, valid on rows[:n_rows] (on all n rows if need_full)."""
    buf, slot_of, col_of, prev, nxt, full, epoch, stats = cache
    s, present = _cache_slot(i, cache)
    n = buf.shape[1]
    if present and (full[s] or (not need_full and epoch[s] == stats[_EPOCH])):
        stats[_HITS] += 1
        return buf[s]
    stats[_MISSES] += 1
    if need_full or n_rows == n:
        _fill_column(i, np.arange(n), n, buf[s], data, ker)
        full[s] = 1
    else:
        _fill_column(i, rows, n_rows, buf[s], data, ker)
        full[s] = 0
    epoch[s] = stats[_EPOCH]
    return buf[s]


@njit(cache=True, nogil=True)
def _cache_lookup(idx, cache):
    """Slots for the full columns idx (hits first, so that allocating the misses can never evict
    a hit of the same request). Returns (slots, miss mask)."""
    buf, slot_of, col_of, prev, nxt, full, epoch, stats = cache
    m = idx.shape[0]
    slots = np.empty(m, np.int64)
    miss = np.zeros(m, np.bool_)
    for t in range(m):
        s = slot_of[idx[t]]
        if s >= 0 and full[s]:
            _lru_touch(s, prev, nxt)
            slots[t] = s
            stats[_HITS] += 1
        else:
            miss[t] = True
    for t in range(m):
        if miss[t]:
            s, _ = _cache_slot(idx[t], cache)
            slots[t] = s
            full[s] = 1
            epoch[s] = stats[_EPOCH]
            stats[_MISSES] += 1
    return slots, miss


def kernel_diagonal(kernel: Kernel, x_norms: np.ndarray) -> np.ndarray:
    """K(x_i, x_i) from the squared row norms."""
    if kernel.name == "linear":
        return x_norms.astype(np.float64, copy=True)
    if kernel.name == "rbf":
        return np.ones_like(x_norms, dtype=np.float64)
    return (kernel.gamma * x_norms + kernel.coef0) ** int(kernel.degree)


class QColumnCache:
    """Bounded LRU cache of the columns of Q = diag(y) K diag(y) (the Hessian of the SVM dual).

    Parameters
    ----------
    kernel : Kernel
    X : ndarray (n, d) C-contiguous float64, or CSR (used as is when canonical, `canonical_csr`)
    y : ndarray (n,) in {-1, +1}
    cache_mb : float
        Buffer size in MB; it holds max(2, floor(cache_mb 2^20 / (8 n))) columns of n float64
        (never more than n). Two columns are the minimum the two-variable update needs.
    x_norms : ndarray (n,) or None
        Squared row norms when known.

    Notes
    -----
    ``columns(idx)`` returns full columns Q[:, idx] (misses computed together by one BLAS
    block, `kernel_block`); the numba solvers call `cache_get` on ``state`` directly.
    ``hits``/``misses`` count column requests.
    """

    def __init__(self, kernel: Kernel, X, y, cache_mb: float = 200.0, x_norms=None):
        if not (cache_mb > 0 and math.isfinite(cache_mb)):
            raise ValueError(f"cache_size={cache_mb!r} must be a finite number of MB > 0")
        self.kernel = kernel
        self.X = canonical_csr(X) if sp.issparse(X) else X
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        n = self.y.shape[0]
        self.n = n
        self.x_norms = row_norms_sq(X) if x_norms is None else np.asarray(x_norms, dtype=np.float64)
        self.cache_mb = float(cache_mb)
        self.n_slots = int(min(n, max(2, (cache_mb * 2**20) // (8 * n))))
        self.QD = kernel_diagonal(kernel, self.x_norms)
        self.state, self.data = self._layout()
        self.ker = (_KIND[kernel.name], float(kernel.gamma), float(kernel.coef0),
                    int(kernel.degree) if kernel.name == "poly" else 1)

    def _layout(self):
        """(state, data): the arrays the numba functions work on."""
        n, X = self.n, self.X
        state = (
            np.empty((self.n_slots, n), dtype=np.float64),
            *_lru_arrays(n, self.n_slots),            # slot_of, col_of, prev, nxt
            np.zeros(self.n_slots, np.uint8),         # full: computed on all n rows
            np.zeros(self.n_slots, np.int64),         # epoch of a partial column
            np.zeros(4, np.int64),                    # n_used, epoch, hits, misses
        )
        # scratch: x_i scattered (CSR), or the dot products of one column (dense)
        if sp.issparse(X):
            data = (False, np.empty((0, 0)), X.data, X.indices, X.indptr, self.x_norms, self.y,
                    np.zeros(X.shape[1]))
        else:
            data = (True, X, np.empty(0), np.empty(0, np.int32), np.zeros(1, np.int32),
                    self.x_norms, self.y, np.zeros(n))
        return state, data

    # where the counters sit in the stats array (the last of `state`)
    _hits_at, _misses_at = _HITS, _MISSES

    @property
    def hits(self) -> int:
        return int(self.state[-1][self._hits_at])

    @property
    def misses(self) -> int:
        return int(self.state[-1][self._misses_at])

    @property
    def fits_all(self) -> bool:
        return self.n_slots >= self.n

    def invalidate_partial(self) -> None:
        """The active set grew: columns computed on a shrunken set are no longer complete."""
        self.state[7][_EPOCH] += 1

    def block(self, rows, cols) -> np.ndarray:
        """``Q[rows][:, cols]`` computed directly (BLAS), bypassing the cache."""
        K = kernel_block(self.kernel, self.X[rows], self.X[cols], self.x_norms[rows], self.x_norms[cols])
        K *= self.y[rows][:, None]
        K *= self.y[cols][None, :]
        return K

    def columns(self, idx) -> np.ndarray:
        """Q[:, idx], shape (n, len(idx)); the misses are computed by one BLAS block."""
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        if idx.shape[0] > self.n_slots:
            return self.block(np.arange(self.n), idx)
        slots, miss = _cache_lookup(idx, self.state)
        buf = self.state[0]
        if miss.any():
            cols = idx[miss]
            buf[slots[miss]] = self.block(np.arange(self.n), cols).T
        return buf[slots].T

    def matvec(self, beta_idx, beta, rows=None, chunk_mb: float = 64.0) -> np.ndarray:
        """sum_j K(x_r, x_j) beta_j over j in beta_idx for rows r (all by default), in row chunks
        of at most chunk_mb so memory stays bounded: the decision values K beta of a model."""
        rows = np.arange(self.n) if rows is None else np.asarray(rows)
        out = np.zeros(rows.shape[0])
        beta_idx = np.asarray(beta_idx)
        if beta_idx.shape[0] == 0 or rows.shape[0] == 0:
            return out
        Xs = self.X[beta_idx]
        ns = self.x_norms[beta_idx]
        step = max(1, int(chunk_mb * 2**20 // (8 * beta_idx.shape[0])))
        for a in range(0, rows.shape[0], step):
            r = rows[a:a + step]
            out[a:a + step] = kernel_block(self.kernel, self.X[r], Xs, self.x_norms[r], ns) @ beta
        return out


# ------------------------------------------------------------------ LIBSVM's layout (smo)
# LIBSVM's shrinking layout (Chang & Lin 2011, Section 5; svm.cpp's Cache and
# Solver::swap_index), `PrefixQColumnCache`: the cache indexes variables by *position*, and a
# solver that shrinks swaps the shrunken variables to the end (`prefix_swaps`), so that the
# active set is the prefix [0, n_active) of positions and a column is needed, computed and scanned
# on that prefix only. A slot holds the prefix [0, length) of its column; a request for a longer
# prefix computes only the entries it lacks (LIBSVM's Cache::get_data). The rows of X, their
# norms and labels are kept in position order (perm[k] is the data row at position k), so an
# entry is computed from contiguous rows.

# Layout of the int64 `stats` array of a PrefixQColumnCache.
_P_USED, _P_HITS, _P_MISSES, _P_EVALS = 0, 1, 2, 3


@njit(cache=True, nogil=True, error_model="numpy")
def _fill_prefix(p, start, stop, out, data, ker):
    """out[k] = Q_pk = y_p y_k K(x_p, x_k) for the positions k in [start, stop), the dot products
    in feature order: by whole panels of rows (dense, `_panel_dots`; the panel's rows outside
    [start, stop) are computed and dropped), or by a scatter/gather sparse dot per row (CSR, as
    LIBSVM's sparse dot), then the kernel's transform."""
    if stop <= start:
        return
    dense, P, vals, indices, indptr, xn, y, perm, scratch = data
    kind, gamma, coef0, degree = ker
    yp = y[p]
    npp = xn[p]
    if dense:
        d = P.shape[1]
        xp = scratch[:d]
        dots = scratch[d:]
        for f in range(d):
            xp[f] = P[p // PANEL, f, p % PANEL]
        # the dot products first, then the transform in one loop over [start, stop)
        b0 = start // PANEL
        for b in range(b0, (stop - 1) // PANEL + 1):
            _panel_dots(P, b, xp, dots, (b - b0) * PANEL)
        at = b0 * PANEL
        for k in range(start, stop):
            out[k] = yp * y[k] * kernel_value(kind, gamma, coef0, degree, dots[k - at], npp, xn[k])
        return
    r = perm[p]
    for q in range(indptr[r], indptr[r + 1]):
        scratch[indices[q]] = vals[q]
    for k in range(start, stop):
        s = scattered_dot(scratch, vals, indices, indptr, perm[k])
        out[k] = yp * y[k] * kernel_value(kind, gamma, coef0, degree, s, npp, xn[k])
    for q in range(indptr[r], indptr[r + 1]):
        scratch[indices[q]] = 0.0


@njit(cache=True, nogil=True)
def _prefix_slot(p, state):
    """Slot holding the column of position p, allocated empty (length 0, evicting the least
    recently used column) when absent."""
    buf, slot_of, col_of, prev, nxt, length, stats = state
    s, present = _lru_slot(p, slot_of, col_of, prev, nxt, stats)
    if not present:
        length[s] = 0
    return s


@njit(cache=True, nogil=True)
def prefix_get(p, n_rows, state, data, ker):
    """Q_p as a row of the cache buffer, valid on the positions [0, n_rows); only the entries
    the slot lacks are computed."""
    buf, slot_of, col_of, prev, nxt, length, stats = state
    s = _prefix_slot(p, state)
    have = length[s]
    if have >= n_rows:
        stats[_P_HITS] += 1
    else:
        stats[_P_MISSES] += 1
        stats[_P_EVALS] += n_rows - have
        _fill_prefix(p, have, n_rows, buf[s], data, ker)
        length[s] = n_rows
    return buf[s]


@njit(cache=True, nogil=True)
def prefix_swaps(I, J, m, state, data):
    """Exchange the variables at positions I[t] and J[t], t < m, in this order (LIBSVM's
    Cache::swap_index with Kernel::swap_index, batched): the data rows, which slot is whose
    column, and the two entries of every cached column. A column that holds only the first of
    the two entries keeps the prefix before it (LIBSVM drops such a column whole). The entries
    are swapped slot by slot, so that one slot's row stays in the CPU cache across the swaps."""
    buf, slot_of, col_of, prev, nxt, length, stats = state
    dense, P, vals, indices, indptr, xn, y, perm, scratch = data
    for t in range(m):
        i = I[t]
        j = J[t]
        xn[i], xn[j] = xn[j], xn[i]
        y[i], y[j] = y[j], y[i]
        perm[i], perm[j] = perm[j], perm[i]
        if dense:
            bi, ri, bj, rj = i // PANEL, i % PANEL, j // PANEL, j % PANEL
            for f in range(P.shape[1]):
                P[bi, f, ri], P[bj, f, rj] = P[bj, f, rj], P[bi, f, ri]
        si = slot_of[i]
        sj = slot_of[j]
        slot_of[i] = sj
        slot_of[j] = si
        if si >= 0:
            col_of[si] = j
        if sj >= 0:
            col_of[sj] = i
    for s in range(stats[_P_USED]):
        col = buf[s]
        L = length[s]
        for t in range(m):
            i = min(I[t], J[t])
            j = max(I[t], J[t])
            if j < L:
                col[i], col[j] = col[j], col[i]
            elif i < L:
                L = i
        length[s] = L


class PrefixQColumnCache(QColumnCache):
    """`QColumnCache` on LIBSVM's layout (smo): columns by position, each a valid prefix, and the
    positions reordered by `prefix_swaps`. ``perm[k]`` is the row of X at position k (the
    identity until a swap). The cache keeps its own copies of a dense X, the norms and labels in
    position order, so the caller's X is never modified. The numba solver calls `prefix_get`
    and `prefix_swaps` on ``state`` and ``data``; ``matvec`` and ``block`` take rows of X. A dense
    X is kept in panels (`_panels`), the rows of position b PANEL + r in panel b.
    ``hits``/``misses`` count column requests, ``kernel_evaluations`` the entries computed."""

    def _layout(self):
        n, X = self.n, self.X
        self.perm = np.arange(n, dtype=np.int64)
        state = (
            np.empty((self.n_slots, n), dtype=np.float64),
            *_lru_arrays(n, self.n_slots),            # slot_of, col_of (by position), prev, nxt
            np.zeros(self.n_slots, np.int64),         # length: the valid prefix of each slot
            np.zeros(4, np.int64),                    # n_used, hits, misses, kernel evaluations
        )
        yp, xn = self.y.copy(), self.x_norms.copy()
        # scratch: x_p scattered (CSR), or x_p and the dot products of a column (dense)
        if sp.issparse(X):
            data = (False, np.empty((0, 0, 0)), X.data, X.indices, X.indptr, xn, yp, self.perm,
                    np.zeros(X.shape[1]))
        else:
            P = _panels(np.asarray(X, dtype=np.float64))
            data = (True, P, np.empty(0), np.empty(0, np.int32), np.zeros(1, np.int32), xn, yp, self.perm,
                    np.zeros(P.shape[1] + P.shape[0] * PANEL))
        return state, data

    _hits_at, _misses_at = _P_HITS, _P_MISSES

    def position_rows(self) -> np.ndarray:
        """The dense rows in position order (row perm[k] of X at position k), read back from the
        panels: what the numba loops see."""
        P = self.data[1]
        return P.transpose(0, 2, 1).reshape(-1, P.shape[1])[:self.n, :self.X.shape[1]]

    @property
    def kernel_evaluations(self) -> int:
        return int(self.state[-1][_P_EVALS])

    def columns(self, idx):
        raise TypeError("PrefixQColumnCache holds columns by position, as prefixes: use prefix_get")
