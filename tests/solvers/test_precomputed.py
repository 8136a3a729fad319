"""kernel="precomputed" and callable kernels in SVMClassifier (issue 31): the dual of the given
Gram matrix, solved on a factor of it with the linear kernel, against SVC with the same kernel;
prediction from the test Gram matrix's support columns (precomputed) or the callable on the
support vectors."""
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from solvers import SolverError, SVMClassifier


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.mark.parametrize("solver", ["smo", "svmlight", "qp", "libsvm"])
def test_precomputed_matches_svc_precomputed(iris, solver):
    X, y = iris
    tr, te = np.arange(0, 150, 2), np.arange(1, 150, 2)
    K_tr, K_te = rbf_kernel(X[tr], X[tr], gamma=0.5), rbf_kernel(X[te], X[tr], gamma=0.5)
    ours = SVMClassifier(solver=solver, kernel="precomputed", tol=1e-9, multi_class="ovo").fit(K_tr, y[tr])
    ref = SVC(kernel="precomputed", tol=1e-9, decision_function_shape="ovo").fit(K_tr, y[tr])
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=1e-5)
    np.testing.assert_allclose(ours.decision_function(K_te), ref.decision_function(K_te), atol=1e-5)
    np.testing.assert_array_equal(ours.predict(K_te), ref.predict(K_te))
    assert not hasattr(ours, "coef_")
    # The same model as the rbf kernel computed by the solver itself, up to the factor's rounding.
    direct = SVMClassifier(solver=solver, kernel="rbf", gamma=0.5, tol=1e-9, multi_class="ovo").fit(X[tr], y[tr])
    np.testing.assert_allclose(ours.decision_function(K_te), direct.decision_function(X[te]), atol=1e-5)


def test_callable_kernel_matches_svc(iris):
    X, y = iris

    def kernel(A, B):
        return rbf_kernel(A, B, gamma=0.5)

    ours = SVMClassifier(solver="smo", kernel=kernel, tol=1e-10, multi_class="ovo").fit(X, y, sample_weight=1 + (np.arange(150) % 2))
    ref = SVC(kernel=kernel, tol=1e-10, decision_function_shape="ovo").fit(X, y, sample_weight=1 + (np.arange(150) % 2))
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_array_equal(ours.support_vectors_, X[ours.support_])
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-6)


def test_newton_takes_its_kernel_formulation_on_a_gram_matrix(iris):
    X, y = iris
    K = rbf_kernel(X, X, gamma=0.5)
    a = SVMClassifier(solver="newton", kernel="precomputed", intercept="free", tol=1e-12).fit(K, y)
    b = SVMClassifier(solver="newton", kernel="rbf", gamma=0.5, intercept="free", tol=1e-12).fit(X, y)
    np.testing.assert_allclose(a.decision_function(K), b.decision_function(X), atol=1e-8)


def test_gram_kernel_errors(iris):
    X, y = iris
    with pytest.raises(ValueError, match="Precomputed matrix must be a square matrix. Input is a 150x4 matrix."):
        SVMClassifier(solver="smo", kernel="precomputed").fit(X, y)
    with pytest.raises(SolverError, match="solver 'gd' returned no dual variables, which kernel='precomputed' needs"):
        SVMClassifier(solver="gd", kernel="precomputed").fit(rbf_kernel(X, X), y)
    with pytest.raises(ValueError, match=r"The 'kernel' parameter of SVMClassifier must be a str among \{'linear', "
                                         r"'poly', 'precomputed', 'rbf'\} or a callable. Got 'sigmoid' instead."):
        SVMClassifier(kernel="sigmoid").fit(X, y)
    with pytest.raises(ValueError, match=r"kernel\(X, X\) returned shape \(150,\), expected \(150, 150\)"):
        SVMClassifier(solver="smo", kernel=lambda A, B: A[:, 0]).fit(X, y)


def test_dcd_on_a_linear_gram_matrix_is_dcd_on_X(iris):
    """dcd (LIBLINEAR's dual, bias feature) on K = X X' solves the dual of X itself: the same
    decisions, from dual_coef_ on K's support columns instead of coef_ (it keeps none here)."""
    X, y = iris
    kw = dict(solver="dcd", loss="hinge", tol=1e-8, max_iter=10**5)
    a = SVMClassifier(kernel="precomputed", **kw).fit(X @ X.T, y)
    b = SVMClassifier(kernel="linear", **kw).fit(X, y)
    assert not hasattr(a, "coef_")
    np.testing.assert_allclose(a.decision_function(X @ X.T), b.decision_function(X), atol=1e-5)
