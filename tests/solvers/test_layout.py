"""SVMClassifier's fitted attributes in SVC's and LinearSVC's layout (issue 31): support_,
support_vectors_, dual_coef_ (n_classes - 1, n_SV), intercept_ per pair, n_support_ per class,
coef_ for the linear kernel on the kernel solvers, n_iter_ per model, sparse dual_coef_ after a
sparse fit, sparsify()/densify(), and predictions read from the attributes (LinearSVC's way:
reassigned or edited attributes are the model)."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.svm import SVC

from solvers import SVMClassifier


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_dual_layout_is_svcs(iris, fmt, n_classes):
    """smo with ovo against SVC (also one-vs-one), both converged far below the comparison:
    the same support vectors in the same order, per-class counts, dual_coef_ slot for slot,
    intercepts per pair and decision values."""
    X, y = iris
    X, y = X[y < n_classes], y[y < n_classes]
    Xf = sp.csr_matrix(X) if fmt == "csr" else X
    ours = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, tol=1e-10, multi_class="ovo").fit(Xf, y)
    ref = SVC(kernel="rbf", gamma=0.5, tol=1e-10, decision_function_shape="ovo").fit(Xf, y)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_array_equal(ours.n_support_, ref.n_support_)
    assert ours.dual_coef_.shape == ref.dual_coef_.shape == (n_classes - 1, ref.support_.size)
    assert sp.issparse(ours.dual_coef_) == sp.issparse(ref.dual_coef_) == (fmt == "csr")
    assert sp.issparse(ours.support_vectors_) == (fmt == "csr")
    dense = (lambda A: A.toarray()) if fmt == "csr" else np.asarray
    np.testing.assert_allclose(dense(ours.dual_coef_), dense(ref.dual_coef_), atol=1e-6)
    np.testing.assert_allclose(dense(ours.support_vectors_), dense(ref.support_vectors_))
    assert ours.intercept_.shape == ref.intercept_.shape
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-6)
    np.testing.assert_allclose(ours.decision_function(Xf), ref.decision_function(Xf), atol=1e-6)
    # n_iter_ as SVC gives it: one count per binary model, an array also for two classes.
    assert isinstance(ours.n_iter_, np.ndarray) and ours.n_iter_.shape == ref.n_iter_.shape


@pytest.mark.parametrize("solver", ["smo", "svmlight", "qp"])
def test_linear_kernel_on_kernel_solvers_has_coef(iris, solver):
    """coef_ = dual_coef_ @ support_vectors_ per model (SVC's coef_ for kernel="linear")."""
    X, y = iris
    clf = SVMClassifier(solver=solver, kernel="linear", tol=1e-8, multi_class="ovo").fit(X, y)
    ref = SVC(kernel="linear", tol=1e-8, decision_function_shape="ovo").fit(X, y)
    assert clf.coef_.shape == ref.coef_.shape == (3, X.shape[1])
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=2e-3 * np.abs(ref.coef_).max())
    # The binary case, exactly: coef_ is dual_coef_ @ support_vectors_.
    b = SVMClassifier(solver=solver, kernel="linear", tol=1e-8).fit(X[y > 0], y[y > 0])
    np.testing.assert_allclose(b.coef_, b.dual_coef_ @ b.support_vectors_, rtol=1e-12, atol=1e-12)


def test_ovr_and_ordinal_layout_has_one_row_per_model(iris):
    """No SVC layout exists for ovr or ordinal: dual_coef_ holds one row per binary model over
    the union of support vectors, and decisions come from it."""
    X, y = iris
    for mc, rows in (("ovr", 3), ("ordinal", 2)):
        clf = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, tol=1e-8, multi_class=mc).fit(X, y)
        assert clf.dual_coef_.shape == (rows, clf.support_.size)
        assert clf.n_support_.sum() == clf.support_.size
        K = np.exp(-0.5 * ((X[:, None, :] - clf.support_vectors_[None]) ** 2).sum(-1))
        np.testing.assert_allclose(clf.decision_function(X), K @ clf.dual_coef_.T + clf.intercept_, atol=1e-10)
        for k, m in enumerate(clf.multiclass_.models):   # each row is its binary model
            assert np.count_nonzero(clf.dual_coef_[k]) == m["support"].size


def test_attributes_are_the_model(iris):
    """LinearSVC's way, for every attribute that predicts: a reassigned or edited coef_,
    intercept_ or dual_coef_ changes the predictions (nothing is read from a hidden copy)."""
    X, y = iris
    lin = SVMClassifier(solver="dcd", tol=1e-6, max_iter=10**5).fit(X, y)
    before = lin.decision_function(X)
    lin.intercept_ = lin.intercept_ + 1.0
    np.testing.assert_allclose(lin.decision_function(X), before + 1.0)
    lin.coef_ = 2.0 * lin.coef_
    np.testing.assert_allclose(lin.decision_function(X), 2.0 * (before - lin.intercept_ + 1.0) + lin.intercept_)
    lin.coef_[:] = 0.0
    np.testing.assert_allclose(lin.decision_function(X), np.tile(lin.intercept_, (len(y), 1)))
    ker = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, multi_class="ovo").fit(X, y)
    before = ker.decision_function(X)
    ker.dual_coef_ = 3.0 * ker.dual_coef_
    np.testing.assert_allclose(ker.decision_function(X) - ker.intercept_, 3.0 * (before - ker.intercept_), atol=1e-10)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_an_edited_dual_coef_is_the_linear_kernel_models_too(iris, fmt):
    """SVC's way for a model that predicts from its support vectors, the linear kernel included:
    coef_ is dual_coef_ @ support_vectors_ at each read, so an edit of dual_coef_ changes coef_
    and the predictions, and coef_ itself is read-only (an edit would change nothing)."""
    X, y = iris
    X, y = X[y > 0], y[y > 0]
    Xf = sp.csr_matrix(X) if fmt == "csr" else X
    clf = SVMClassifier(solver="smo", kernel="linear", tol=1e-8).fit(Xf, y)
    before = clf.decision_function(X)
    dense = (lambda A: A.toarray()) if fmt == "csr" else np.asarray
    coef = dense(clf.dual_coef_).copy()
    if fmt == "csr":
        clf.dual_coef_ = sp.csr_matrix(2.0 * coef)
    else:
        clf.dual_coef_ *= 2.0
    np.testing.assert_allclose(dense(clf.coef_), 2.0 * coef @ X[clf.support_], rtol=1e-12)
    np.testing.assert_allclose(clf.decision_function(X) - clf.intercept_, 2.0 * (before - clf.intercept_), rtol=1e-10)
    with pytest.raises(AttributeError, match="read-only"):
        clf.coef_ = np.zeros_like(dense(clf.coef_))


def test_a_refit_keeps_nothing_of_the_last_model(iris):
    """A refit with another solver leaves no attribute of the last one: a w model (dcd) after a
    support-vector model (smo) keeps no support_vectors_ and its coef_ is its own, writable,
    with LinearSVC's int n_iter_; and back again."""
    X, y = iris
    X, y = X[y > 0], y[y > 0]
    clf = SVMClassifier(solver="smo", kernel="linear").fit(X, y)
    assert hasattr(clf, "support_vectors_") and isinstance(clf.n_iter_, np.ndarray)
    clf.set_params(solver="dcd").fit(X, y)
    assert not hasattr(clf, "support_vectors_") and isinstance(clf.n_iter_, int)
    clf.coef_ = clf.coef_ * 0.0
    np.testing.assert_allclose(clf.decision_function(X), clf.intercept_[0])
    clf.set_params(solver="smo").fit(X, y)
    np.testing.assert_allclose(clf.coef_, clf.dual_coef_ @ clf.support_vectors_)


def test_sparsify_and_densify_keep_predictions(iris):
    X, y = iris
    clf = SVMClassifier(solver="dcd", tol=1e-6, max_iter=10**5).fit(X, y)
    d = clf.decision_function(X)
    clf.coef_[:, 1] = 0.0
    d = clf.decision_function(X)
    assert sp.issparse(clf.sparsify().coef_) and clf.coef_.nnz == 3 * (X.shape[1] - 1)
    np.testing.assert_allclose(clf.decision_function(X), d, rtol=1e-12)
    np.testing.assert_allclose(clf.decision_function(sp.csr_matrix(X)), d, rtol=1e-12)
    assert isinstance(clf.densify().coef_, np.ndarray)
    np.testing.assert_allclose(clf.decision_function(X), d, rtol=1e-12)


def test_support_indexes_the_given_rows_in_multiclass_with_zero_weights(iris):
    X, y = iris
    sw = np.where(np.arange(len(y)) % 5 == 0, 0.0, 1.0)
    clf = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, tol=1e-10, multi_class="ovo").fit(X, y, sample_weight=sw)
    ref = SVC(kernel="rbf", gamma=0.5, tol=1e-10, decision_function_shape="ovo").fit(X, y, sample_weight=sw)
    kept = np.flatnonzero(sw > 0)
    np.testing.assert_array_equal(clf.support_, kept[ref.support_])
    np.testing.assert_array_equal(clf.support_vectors_, X[clf.support_])
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X), atol=1e-6)
