"""Problem validation, objectives and conversions against obvious formulas."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

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


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=np.ones((3, 2)), y=[1, -1]), "3 rows but y has 2"),
    (dict(X=np.ones((2, 2)), y=[1, 0]), r"y\[1\] = 0"),
    (dict(X=np.ones((2, 2)), y=[1, 1]), "both classes"),
    (dict(X=np.array([[1.0, np.nan], [0, 1]]), y=[1, -1]), "non-finite value in row 0"),
    (dict(X=sp.csr_matrix(np.array([[1.0, 0], [0, np.inf]])), y=[1, -1]), "non-finite value .* in row 1"),
    (dict(X=np.ones((2, 2)), y=[1, -1], C=0.0), "C=0.0 must be > 0"),
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
