"""Problem validation, objectives and conversions against obvious formulas."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from solvers import Problem, ProblemError
from solvers import objectives as obj


def test_csr_is_canonicalised_on_a_copy():
    X = sp.csr_matrix(np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]]))
    # Unsorted indices, int64: the caller's arrays must not change.
    X.indices = X.indices[[1, 0, 2]].astype(np.int64)
    X.data = X.data[[1, 0, 2]]
    before = (X.indices.copy(), X.data.copy())
    p = Problem(X, [1, -1])
    assert p.X.indices.dtype == np.int32 and p.X.has_sorted_indices
    np.testing.assert_array_equal(X.indices, before[0])
    np.testing.assert_array_equal(X.data, before[1])
    np.testing.assert_array_equal(p.X.toarray(), X.toarray())


def _canonical_csr():
    rng = np.random.default_rng(0)
    return sp.random(40, 30, density=0.2, format="csr", random_state=rng, dtype=np.float64)


def _buffers(X):
    return (X.data, X.indices, X.indptr) if sp.issparse(X) else (X,)


def test_canonical_csr_and_dense_are_used_without_a_copy():
    """Issue 10: a per-fit copy of X costs a solver pass. Canonical input keeps its buffers."""
    X = _canonical_csr()
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32 and X.has_canonical_format
    p = Problem(X, np.where(np.arange(40) % 2, 1.0, -1.0))
    for a, b in zip(_buffers(X), _buffers(p.X)):
        assert np.shares_memory(a, b)
    # A csr_array and an int64 indptr (int32 indices) also keep data and indices; the indptr of a
    # small matrix becomes int32 (an O(n_rows) copy) so the kernels see one index type.
    for Xv in (sp.csr_array(X), sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)):
        if Xv is not X and isinstance(Xv, sp.csr_matrix):
            Xv.indptr = X.indptr.astype(np.int64)
        q = Problem(Xv, p.y)
        assert isinstance(q.X, sp.csr_matrix) and q.X.indptr.dtype == np.int32
        assert np.shares_memory(q.X.data, X.data) and np.shares_memory(q.X.indices, X.indices)
        np.testing.assert_array_equal(q.X.toarray(), X.toarray())
    D = np.ascontiguousarray(X.toarray())
    assert np.shares_memory(Problem(D, p.y).X, D)


@pytest.mark.parametrize("how", ["unsorted", "int64_indices", "float32", "duplicates"])
def test_non_canonical_csr_is_copied_and_the_callers_arrays_unchanged(how):
    X = _canonical_csr()
    dense = X.toarray()
    if how == "unsorted":
        X = sp.csr_matrix((X.data.copy(), X.indices.copy(), X.indptr.copy()), shape=X.shape)
        for r in range(X.shape[0]):   # reverse each row's entries
            a, b = X.indptr[r], X.indptr[r + 1]
            X.indices[a:b] = X.indices[a:b][::-1].copy()
            X.data[a:b] = X.data[a:b][::-1].copy()
        X.has_sorted_indices = False
    elif how == "int64_indices":
        X = sp.csr_matrix(X.shape)
        Y = _canonical_csr()
        X.data, X.indices, X.indptr = Y.data, Y.indices.astype(np.int64), Y.indptr.astype(np.int64)
    elif how == "float32":
        X = X.astype(np.float32)
        dense = X.toarray().astype(np.float64)
    elif how == "duplicates":
        # Each row's entries twice, each with half its value: the same matrix, with duplicated
        # (row, column) pairs (sorted, so only the duplicates make it non-canonical).
        Y = X
        indptr = 2 * Y.indptr
        indices = np.repeat(Y.indices, 2)
        data = np.repeat(Y.data / 2, 2)
        X = sp.csr_matrix(Y.shape)
        X.data, X.indices, X.indptr = data, indices, indptr
        assert X.nnz == 2 * Y.nnz and not X.has_canonical_format
    before = [a.copy() for a in _buffers(X)]
    p = Problem(X, np.where(np.arange(40) % 2, 1.0, -1.0))
    for a in _buffers(X):
        assert not any(np.shares_memory(a, b) for b in _buffers(p.X))
    for a, b in zip(_buffers(X), before):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert p.X.indices.dtype == np.int32 and p.X.data.dtype == np.float64 and p.X.has_canonical_format
    np.testing.assert_allclose(p.X.toarray(), dense, rtol=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=np.ones((3, 2)), y=[1, -1]), "3 rows but y has 2"),
    (dict(X=np.ones((2, 2)), y=[1, 0]), r"y\[1\] = 0"),
    (dict(X=np.ones((2, 2)), y=[1, 1]), "both classes"),
    (dict(X=np.array([[1.0, np.nan], [0, 1]]), y=[1, -1]), "non-finite value in row 0"),
    (dict(X=sp.csr_matrix(np.array([[1.0, 0], [0, np.inf]])), y=[1, -1]), "non-finite value .* in row 1"),
    (dict(X=np.ones((2, 2)), y=[1, -1], C=0.0), "C=0.0: must be a number > 0"),
    (dict(X=np.ones((2, 2)), y=[1, -1], loss="log"), "loss='log'"),
    (dict(X=np.ones((2, 2)), y=[1, -1], intercept="yes"), "intercept='yes'"),
    (dict(X=np.ones(2), y=[1, -1]), "2-D"),
])
def test_invalid_problems_name_the_problem(kwargs, match):
    with pytest.raises(ProblemError, match=match):
        Problem(**kwargs)


def test_kernel_parameters_validated():
    X = np.eye(2)
    with pytest.raises(ProblemError, match="gamma"):
        Problem.build(X, [1, -1], kernel="rbf", gamma=-1.0)
    with pytest.raises(ProblemError, match="degree"):
        Problem.build(X, [1, -1], kernel="poly", degree=0)


def test_losses_against_their_definitions():
    m = np.linspace(-4, 3, 141)
    np.testing.assert_allclose(obj.loss_values("hinge", m), [max(0, 1 - v) for v in m])
    np.testing.assert_allclose(obj.loss_values("squared_hinge", m), [max(0, 1 - v) ** 2 for v in m])
    k = 1.5

    def huber(q):
        if q > 1:
            return 0.0
        if q > -k:
            return (1 - q) ** 2 / (2 * (k + 1))
        return 1 - q - (k + 1) / 2

    np.testing.assert_allclose(obj.loss_values("huber_hinge", m, k), [huber(v) for v in m], atol=1e-12)
    # Derivatives by central differences away from kinks.
    h = 1e-6
    for loss in ("hinge", "squared_hinge", "huber_hinge"):
        mm = m[np.abs(m - 1) > 1e-3]
        mm = mm[np.abs(mm + k) > 1e-3]
        num = (obj.loss_values(loss, mm + h, k) - obj.loss_values(loss, mm - h, k)) / (2 * h)
        np.testing.assert_allclose(obj.loss_derivative(loss, mm, k), num, atol=1e-5)


def test_primal_regularized_intercept_counts_w_b():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    p = Problem(X, [1, -1], C=2.0, intercept="regularized", intercept_scaling=2.0)
    w, b = np.array([0.5, -0.25]), 1.0
    f = X @ w + b
    expected = 0.5 * (w @ w) + 0.5 * (b / 2.0) ** 2 + 2.0 * np.maximum(0, 1 - np.array([1, -1]) * f).sum()
    assert obj.primal_objective(p, w, b) == pytest.approx(expected)


def test_dual_below_primal_weak_duality():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = np.where(rng.random(30) < 0.5, 1.0, -1.0)
    y[:2] = [1, -1]
    for loss in ("hinge", "squared_hinge"):
        p = Problem(X, y, C=0.7, loss=loss)
        diag, U = obj.dual_box(p)
        for _ in range(20):
            alpha = rng.uniform(0, min(U, 3.0), size=30)
            w = X.T @ (alpha * y)
            assert obj.dual_objective(p, alpha, w @ w) <= obj.primal_objective(p, w) + 1e-12


def test_conversions_round_trip_and_scale():
    assert obj.C_from_lambda(1e-4, "pegasos", n_samples=1000) == pytest.approx(10.0)
    assert obj.C_from_lambda(0.5, "svmmaj") == pytest.approx(1.0)
    for conv in ("pegasos", "svmmaj"):
        C = obj.C_from_lambda(0.03, conv, n_samples=50)
        assert obj.lambda_from_C(C, conv, n_samples=50) == pytest.approx(0.03)
    # SVM-Maj's L = sum hinge + lambda w'w equals P / C.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 3))
    y = np.sign(rng.normal(size=20))
    y[:2] = [1, -1]
    lam = 0.3
    C = obj.C_from_lambda(lam, "svmmaj")
    p = Problem(X, y, C=C, intercept="free")
    w, b = rng.normal(size=3), 0.2
    L = np.maximum(0, 1 - y * (X @ w + b)).sum() + lam * w @ w
    assert obj.objective_scale("svmmaj", C) * obj.primal_objective(p, w, b) == pytest.approx(L)
    with pytest.raises(ValueError, match="lambda"):
        obj.C_from_lambda(0.0, "svmmaj")
    assert math.isinf(obj.C_from_lambda(1e-320, "svmmaj")) or obj.C_from_lambda(1e-320, "svmmaj") > 1e300


def test_dense_x_csr_is_scipys_csr():
    # Problem.X_csr converts dense X by its own compiled scan (not scipy's COO route): the same
    # arrays as scipy's, zeros (also -0.0) dropped, sorted int32 indices, canonical.
    rng = np.random.default_rng(0)
    X = np.where(rng.random((40, 7)) < 0.4, rng.normal(size=(40, 7)), 0.0)
    X[3, 2] = -0.0
    X[5] = 0.0
    y = np.where(np.arange(40) % 2, 1.0, -1.0)
    A = Problem(X, y).X_csr
    B = sp.csr_matrix(X)
    assert A.indices.dtype == np.int32 and A.has_canonical_format
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


def test_with_keeps_the_checked_data_and_checks_the_settings(monkeypatch):
    """A sweep derives each C's problem from one Problem of a fold (`with_`, `with_settings`):
    X and y are not checked again (no pass over X's values), the settings are; new data is."""
    from solvers import problem as problem_module
    X = _canonical_csr()
    y = np.where(np.arange(40) % 2, 1.0, -1.0)
    p = Problem(X, y)
    built = Problem.build(X, y, C=3, intercept="regularized", kernel="rbf", gamma="scale")
    calls = []
    real = problem_module.canonical_X
    monkeypatch.setattr(problem_module, "canonical_X", lambda A: calls.append(A) or real(A))
    q = p.with_(C=2.0, loss="squared_hinge")
    assert calls == [] and q.X is p.X and q.y is p.y and (q.C, q.loss) == (2.0, "squared_hinge")
    r = p.with_settings(C=3, intercept="regularized", kernel="rbf", gamma="scale")
    assert calls == [] and r.X is p.X and r.kernel == built.kernel and r.C == built.C == 3.0
    for bad, match in [({"C": -1.0}, "C=-1.0: must be a number > 0"), ({"loss": "log"}, "loss='log'"),
                       ({"kernel": "rbf"}, "kernel must be a solvers.Kernel")]:
        with pytest.raises(ProblemError, match=match):
            p.with_(**bad)
    with pytest.raises(TypeError, match="no setting 'lam'"):
        p.with_(lam=1.0)
    # New data is checked as in any new Problem: a non-finite value, a label out of {-1, +1}.
    X_nan = X.copy()
    X_nan.data[3] = np.nan
    with pytest.raises(ProblemError, match="non-finite value"):
        p.with_(X=X_nan)
    with pytest.raises(ProblemError, match=r"y\[0\] = "):
        p.with_(y=np.r_[2.0, y[1:]])
    assert len(calls) == 2


def test_the_problems_with_makes_share_one_csr_form_of_dense_X():
    """The C values of a fold are `with_` copies of one problem: a dense X is converted to CSR
    once, by that problem, whichever copy asks first; another X gets its own."""
    X, y = make_classification(60, 5, random_state=0)
    y = np.where(y == 1, 1.0, -1.0)
    rows = Problem(X, y)
    a, b = rows.with_(C=2.0), rows.with_(C=3.0).with_(loss="squared_hinge")
    assert "X_csr" not in rows.__dict__
    assert a.X_csr is b.X_csr is rows.X_csr
    np.testing.assert_array_equal(a.X_csr.toarray(), X)
    other = rows.with_(X=X[:30], y=y[:30])
    assert other.X_csr is not rows.X_csr and other.X_csr.shape == (30, 5)
