"""One answer whatever the input's storage: the kernel dual solvers (smo, svmlight, qp) on a dense
array and on CSR input of the same rows give the same model at the default tolerance.

scikit-learn's `check_svm_model_equal` (sklearn/svm/tests/test_sparse.py) for SVMClassifier, at
rtol 1e-7 as LIBSVM's dense and sparse fits agree, for every kernel solver and kernel, binary and
multiclass, and every sparse input a user passes: csr_matrix, csr_array, lil (converted to CSR on
entry) and CSR with unsorted indices. Below the estimator, the mechanism: the kernel values a
solver sees are the same floats for either storage (solvers/kernels.py, "one summation order"),
so a fit takes the same path, the same iterations, to the same alpha. The linear dual coordinate
descent (dcd) walks the CSR of X's nonzeros for either storage and is held to the same.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import base
from sklearn.datasets import load_breast_cancer, load_digits, load_iris
from test_kernels import _prefix_col

from solvers import Budget, Problem, SVMClassifier, fit, kernels
from solvers.kernels import (Kernel, PrefixQColumnCache, QColumnCache, cache_get, prefix_swaps, kernel_block,
                             resolve_gamma, row_norms_sq)

SOLVERS = ["smo", "svmlight", "qp"]
KERNELS = {"linear": {}, "rbf": {"gamma": "scale"}, "poly": {"gamma": "scale", "degree": 3, "coef0": 1.0}}


def _unsorted(X):
    """CSR of X with each row's indices reversed (scikit-learn's scramble_indices)."""
    X = sp.csr_matrix(X)
    data, indices = X.data.copy(), X.indices.copy()
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        data[a:b], indices[a:b] = data[a:b][::-1], indices[a:b][::-1]
    out = sp.csr_matrix((data, indices, X.indptr.copy()), shape=X.shape)
    assert not out.has_sorted_indices
    return out


def _stored_zeros(X):
    """CSR of X that also stores a zero in each row (where X has one): a term the CSR of a dense
    copy does not have."""
    X = np.asarray(X)
    rows, cols = np.nonzero(X == 0)
    first = np.unique(rows, return_index=True)[1]
    coo = sp.coo_matrix(X)
    out = sp.csr_matrix((np.r_[coo.data, np.zeros(first.size)], (np.r_[coo.row, rows[first]], np.r_[coo.col, cols[first]])),
                        shape=X.shape)
    assert out.nnz == np.count_nonzero(X) + first.size > np.count_nonzero(X)
    return out


CONTAINERS = {"csr_matrix": sp.csr_matrix, "csr_array": sp.csr_array, "lil": sp.lil_matrix, "unsorted": _unsorted}
ALL_CONTAINERS = {**CONTAINERS, "stored_zeros": _stored_zeros}


#: C per data set: the breast cancer rows at a large C, where the path is long enough that
#: kernel values one bit apart made the dense and CSR fits part ways (iris and digits part at 1).
C = {"cancer": 100.0, "digits": 1.0, "iris": 1.0}


def _data(name):
    """(X train, y train, X test). cancer: binary, breast cancer standardised with the entries
    below 0.5 in size set to 0; digits: three classes of 8x8 pixels / 16, about half of them 0;
    iris: scikit-learn's multiclass set, unscaled, no zeros. Zeros are terms a CSR row skips and
    a dense row sums."""
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        perm = np.random.RandomState(0).permutation(len(y))
        X, y = X[perm], y[perm]
        return X[:120], y[:120], X[120:]
    if name == "cancer":
        X, y = load_breast_cancer(return_X_y=True)
        X = (X - X.mean(0)) / X.std(0)
        X[np.abs(X) < 0.5] = 0.0
        return X[:120], y[:120], X[120:170]
    X, y = load_digits(return_X_y=True)
    rows = np.flatnonzero(y < 3)
    return X[rows[:100]] / 16.0, y[rows[:100]], X[rows[100:150]] / 16.0


def _statuses(est):
    models = [est._model] if len(est.classes_) == 2 else est.multiclass_.models
    return {m["status"] for m in models}


_DENSE = {}


def _dense_fit(solver, kernel, data):
    """The dense fit of a case (one per case; each sparse container is compared with it)."""
    key = (solver, kernel, data)
    if key not in _DENSE:
        X, y, _ = _data(data)
        est = SVMClassifier(solver=solver, kernel=kernel, C=C[data], multi_class="ovo", **KERNELS[kernel])
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # a ConvergenceWarning would make this no test
            est.fit(X, y)
        assert _statuses(est) == {"converged"}
        _DENSE[key] = est
    return _DENSE[key]


@pytest.mark.parametrize("container", list(CONTAINERS))
@pytest.mark.parametrize("data", list(C))
@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("solver", SOLVERS)
def test_dense_and_sparse_fits_are_one_model(solver, kernel, data, container):
    """check_svm_model_equal at the default tol (1e-3 for smo and svmlight, qp's own): the same
    support vectors, dual_coef_, intercept_ and decision values to rtol 1e-7 (LIBSVM's dense and
    sparse fits agree so; ours did not, by up to 5% in dual_coef_, before one summation order)."""
    X, y, T = _data(data)
    dense = _dense_fit(solver, kernel, data)
    sparse = base.clone(dense)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sparse.fit(CONTAINERS[container](X), y)
    assert _statuses(sparse) == {"converged"}
    assert sp.issparse(sparse.support_vectors_) and sp.issparse(sparse.dual_coef_)
    np.testing.assert_array_equal(dense.support_, sparse.support_)
    np.testing.assert_array_equal(dense.n_support_, sparse.n_support_)
    np.testing.assert_allclose(dense.support_vectors_, sparse.support_vectors_.toarray(), rtol=0, atol=0)
    np.testing.assert_allclose(sparse.dual_coef_.toarray(), dense.dual_coef_, rtol=1e-7,
                               atol=1e-7 * np.abs(dense.dual_coef_).max())
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-7, atol=1e-7 * np.abs(dense.intercept_).max())
    if kernel == "linear":
        np.testing.assert_allclose(sparse.coef_.toarray(), dense.coef_, rtol=1e-7, atol=1e-7 * np.abs(dense.coef_).max())
    D = dense.decision_function(T)
    scale = 1e-7 * np.abs(D).max()
    for Tc in (T, CONTAINERS[container](T)):
        np.testing.assert_allclose(sparse.decision_function(Tc), D, rtol=1e-7, atol=scale)
        np.testing.assert_array_equal(sparse.predict(Tc), dense.predict(T))


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("solver", SOLVERS)
def test_dense_and_csr_problems_take_one_path(solver, kernel):
    """Below the estimator: a Problem of dense rows and one of the same rows as CSR are solved
    along one path, the same iterations (and kernel columns computed) to the same alpha and b,
    bit for bit; and the fit's certificate holds (m - M below tol, a gap >= 0)."""
    X, y, _ = _data("cancer")
    y = np.where(y == 1, 1.0, -1.0)
    fits = []
    for Xf in (X, sp.csr_matrix(X)):
        problem = Problem.build(Xf, y, C=C["cancer"], intercept="free", kernel=kernel, **KERNELS[kernel])
        fits.append(fit(problem, solver, budget=Budget(tol=1e-3)))
    a, b = fits
    assert a.status == b.status == "converged"
    assert a.kkt_violation < 1e-3 and a.gap >= -1e-12 * abs(a.primal)
    assert a.n_iter == b.n_iter
    for key in ("kernel_evaluations", "cache_misses", "sub_steps", "n_reconstruct"):
        assert a.info.get(key) == b.info.get(key), key
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.b == b.b


# ------------------------------------------------------------------ the mechanism
@pytest.fixture(scope="module")
def rows():
    """Rows with zeros in them, values of mixed signs and magnitudes (sums that round): numpy's
    var and einsum and scipy's sparse sums give other floats on these than on their CSR."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70, 37)) * np.exp(rng.normal(size=37))
    X[rng.random(X.shape) < 0.5] = 0.0
    return X, np.where(rng.random(70) > 0.5, 1.0, -1.0)


def test_norms_and_gamma_are_one_float(rows):
    """||x_i||^2 and gamma="scale" (the variance of X) are the same floats for every storage."""
    X, _ = rows
    norms, gamma = row_norms_sq(X), resolve_gamma("scale", X)
    for make in ALL_CONTAINERS.values():
        np.testing.assert_array_equal(row_norms_sq(make(X)), norms)
        assert resolve_gamma("scale", make(X)) == gamma
    assert gamma == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-13)


KERNEL_SPECS = [Kernel("linear"), Kernel("rbf", gamma=0.05), Kernel("poly", gamma=0.1, degree=3, coef0=1.0)]


@pytest.mark.parametrize("kernel", KERNEL_SPECS, ids=lambda k: k.name)
def test_kernel_blocks_are_one_float(kernel, monkeypatch):
    """K(X, Z) and K(X, X) by BLAS (decision values, a warm start's gradient, qp's matrix) are the
    same floats from CSR operands as from dense ones: made dense they are the same BLAS call, and
    K(X, X) is numpy's symmetric product for both (a general product of X and a copy of X rounds
    otherwise on this shape). Operands too large to make dense stay sparse, and the product sums
    each entry over sorted indices: the same floats for every sparse input."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 64))
    X[rng.random(X.shape) < 0.5] = 0.0
    Z = X[::7] * 1.5
    KXX, KXZ = kernel_block(kernel, X, X), kernel_block(kernel, X, Z)
    for make in ALL_CONTAINERS.values():
        Xs = make(X)
        np.testing.assert_array_equal(kernel_block(kernel, Xs, Xs), KXX)
        np.testing.assert_array_equal(kernel_block(kernel, Xs, make(Z)), KXZ)
        np.testing.assert_array_equal(kernel_block(kernel, X, make(Z)), KXZ)
    monkeypatch.setattr(kernels, "DENSE_OPERAND_BYTES", 0)
    KXZ = kernel_block(kernel, sp.csr_matrix(X), sp.csr_matrix(Z))
    for make in ALL_CONTAINERS.values():
        np.testing.assert_array_equal(kernel_block(kernel, make(X), make(Z)), KXZ)


@pytest.mark.parametrize("kernel", KERNEL_SPECS, ids=lambda k: k.name)
def test_cached_columns_are_one_float(rows, kernel):
    """The columns of Q both caches compute (svmlight's on all rows and on a subset, smo's on a
    prefix after swaps) are bit for bit the same from dense rows as from CSR rows."""
    X, y = rows
    Xs = sp.csr_matrix(X)
    n = len(y)
    caches = [QColumnCache(kernel, Xf, y) for Xf in (X, Xs)]
    subset = np.arange(1, n, 3, dtype=np.int64)
    for i in (0, 5, 69):
        full = [cache_get(i, True, subset, 0, c.state, c.data, c.ker).copy() for c in caches]
        np.testing.assert_array_equal(full[0], full[1])
        part = [cache_get((i + 1) % n, False, subset, subset.size, c.state, c.data, c.ker)[subset].copy()
                for c in caches]
        np.testing.assert_array_equal(part[0], part[1])
    caches = [PrefixQColumnCache(kernel, Xf, y) for Xf in (X, Xs)]
    I, J = np.array([2, 33], dtype=np.int64), np.array([66, 40], dtype=np.int64)
    for c in caches:
        prefix_swaps(I, J, 2, c.state, c.data)
    for p in (0, 2, 31, 32, 69):
        cols = [_prefix_col(p, n - 3, c.state, c.data, c.ker)[:n - 3] for c in caches]
        np.testing.assert_array_equal(cols[0], cols[1])


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_dcd_takes_one_path_for_every_storage(loss):
    """The linear dual coordinate descent walks CSR rows whatever X's storage (a dense X through
    the CSR of its nonzeros): its pass order (seeded) and each dot product, two partial sums that
    alternate over a row's stored entries, are the same for every input, a CSR that stores zeros
    included (Problem drops them), so w is the same bit for bit; and the fit is certified (the
    projected-gradient spread below tol, the duality gap >= 0)."""
    X, y, _ = _data("cancer")
    y = np.where(y == 1, 1.0, -1.0)
    fits = [fit(Problem(Xf, y, C=0.5, loss=loss, intercept="regularized"), "dcd", budget=Budget(tol=1e-4), random_state=3)
            for Xf in [X, *(make(X) for make in ALL_CONTAINERS.values())]]
    a = fits[0]
    assert a.status == "converged" and a.gap >= -1e-12 * abs(a.primal)
    for b in fits[1:]:
        assert b.n_iter == a.n_iter and b.info["n_updates"] == a.info["n_updates"]
        np.testing.assert_array_equal(b.w, a.w)
        np.testing.assert_array_equal(b.alpha, a.alpha)
