"""probability=True (issue 31): Platt's sigmoid fitted as Lin, Lin and Weng 2007 on internal
cross-validation decision values, pairwise coupling for ovo (Wu, Lin and Weng 2004), against an
independent minimiser, exact consistency, and scikit-learn's SVC(probability=True)."""
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from solvers import SVMClassifier
from solvers.probability import fit_sigmoid, pairwise_coupling, sigmoid_predict


def test_sigmoid_is_the_minimiser_of_platts_objective():
    """Against a general-purpose minimiser (BFGS) of the same cross-entropy with Platt's
    smoothed targets, written naively (no overflow at these values)."""
    rng = np.random.default_rng(0)
    f = np.concatenate([rng.normal(1.0, 1.0, 80), rng.normal(-1.5, 0.8, 120)])
    pos = np.arange(200) < 80
    t = np.where(pos, 81 / 82, 1 / 122)

    def nll(ab):
        p = 1.0 / (1.0 + np.exp(ab[0] * f + ab[1]))
        return -np.sum(t * np.log(p) + (1 - t) * np.log(1 - p))

    ref = minimize(nll, [0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(fit_sigmoid(f, pos), ref, atol=1e-5)
    # Large decision values: no overflow (Lin et al.'s point), probabilities in [0, 1].
    A, B = fit_sigmoid(1e3 * f, pos)
    p = sigmoid_predict(1e3 * f, A, B)
    assert np.all(np.isfinite(p)) and p.min() >= 0 and p.max() <= 1


def test_pairwise_coupling_recovers_consistent_probabilities():
    """If r_ij = p_i / (p_i + p_j) for some p, p solves method 2 exactly (every residual is 0)."""
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(4), size=5)
    r = p[:, :, None] / (p[:, :, None] + p[:, None, :])
    for i in range(4):
        r[:, i, i] = 0.0
    np.testing.assert_allclose(pairwise_coupling(r), p, atol=2e-3)


def _svc_proba(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)   # scikit-learn 1.9 deprecates it
        return SVC(probability=True, random_state=0, **kw).fit(X, y).predict_proba(X)


def test_binary_probabilities_are_svcs():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = SVMClassifier(solver="smo", kernel="rbf", probability=True, random_state=0).fit(X, y)
    P = clf.predict_proba(X)
    assert P.shape == (len(y), 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(P))
    # The sigmoid of the decision value: P(classes_[1]) grows with it.
    d = clf.decision_function(X)
    assert np.all(np.diff(P[np.argsort(d), 1]) >= -1e-15)
    ref = _svc_proba(X, y, kernel="rbf")
    # Other folds than LIBSVM's, so not to the digit: within 0.05, 0.005 on average.
    assert np.abs(P - ref).max() < 0.05 and np.abs(P - ref).mean() < 0.005


def test_ovo_probabilities_are_svcs_and_ovr_normalised():
    X, y = load_iris(return_X_y=True)
    ovo = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, multi_class="ovo", probability=True,
                        random_state=0).fit(X, y)
    P = ovo.predict_proba(X)
    ref = _svc_proba(X, y, kernel="rbf", gamma=0.5)
    assert np.abs(P - ref).max() < 0.05 and np.abs(P - ref).mean() < 0.005
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert ovo.probA_.shape == (3,)
    ovr = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, probability=True, random_state=0).fit(X, y)
    Q = ovr.predict_proba(X)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0)
    assert (Q.argmax(axis=1) == y).mean() > 0.95


def test_probability_errors():
    X, y = load_iris(return_X_y=True)
    # As SVC: no predict_proba at all without probability=True (scikit-learn's checks read hasattr).
    assert not hasattr(SVMClassifier(solver="smo").fit(X, y), "predict_proba")
    clf = SVMClassifier(solver="smo").fit(X, y)
    clf.probability = True        # switched on after a fit without: available, but not fitted
    with pytest.raises(AttributeError, match="predict_proba is not available when fitted with probability=False"):
        clf.predict_proba(X)
    with pytest.raises(ValueError, match="probability=True needs multi_class='ovr' or 'ovo'"):
        SVMClassifier(solver="smo", multi_class="ordinal", probability=True).fit(X, y)


def _noisy(rng, n):
    """Two classes split by x0 > 0 through noise, 15% of the labels flipped: P(y | x) stays
    well inside (0, 1) everywhere."""
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, 0)
    return X, np.where(rng.random(n) < 0.15, 1 - y, y)


def test_the_sigmoid_is_fitted_on_cross_validated_decision_values():
    """An RBF model that overfits (gamma 20, C 100) puts every training row at or beyond its
    margin, so a sigmoid fitted on the training decision values says 0 or 1 (a held-out log loss
    of about 1.7 here); fitted on the internal cross-validation's values, as Platt and LIBSVM do,
    it stays near the labels' noise (about 0.67; knowing nothing is log 2 = 0.69)."""
    rng = np.random.default_rng(0)
    X, y = _noisy(rng, 200)
    X_new, y_new = _noisy(rng, 2000)
    clf = SVMClassifier(solver="smo", kernel="rbf", gamma=20.0, C=100.0, probability=True, random_state=0).fit(X, y)
    P = clf.predict_proba(X_new)[np.arange(len(y_new)), y_new]
    assert -np.mean(np.log(P)) < 0.8
    assert np.abs(P - 0.5).mean() < 0.2          # not the training values' near-certainty (about 0.4)


def test_a_precomputed_gram_matrix_gives_the_kernels_probabilities():
    """kernel="precomputed": the internal cross-validation cuts the Gram matrix's rows and columns
    to each fold (training x training to fit, held-out x training to score); the sigmoid and the
    probabilities are those of kernel="rbf" on the rows themselves, within the solver's
    tolerance (the Gram matrix is solved through a factor of it, in other arithmetic)."""
    from sklearn.metrics.pairwise import rbf_kernel
    X, y = load_breast_cancer(return_X_y=True)
    X, y = StandardScaler().fit_transform(X)[:150], y[:150]
    own = SVMClassifier(solver="smo", kernel="rbf", gamma=0.05, tol=1e-6, probability=True, random_state=0).fit(X, y)
    gram = SVMClassifier(solver="smo", kernel="precomputed", tol=1e-6, probability=True,
                         random_state=0).fit(rbf_kernel(X, X, gamma=0.05), y)
    np.testing.assert_allclose([gram.probA_, gram.probB_], [own.probA_, own.probB_], rtol=1e-5)
    np.testing.assert_allclose(gram.predict_proba(rbf_kernel(X[:50], X, gamma=0.05)), own.predict_proba(X[:50]),
                               atol=1e-6)
