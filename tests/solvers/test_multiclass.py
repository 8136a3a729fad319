"""Multiclass wrappers: ovr, ovo and the ordinal chain with duros_katzman's probability table."""
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier

from solvers import SVMClassifier
from solvers.multiclass import OrdinalTable, class_pairs


def blobs(n_classes, seed=0):
    X, y = make_classification(60 * n_classes, 8, n_informative=6, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, class_sep=2.0, random_state=seed)
    return X, np.array(["c%d" % v for v in y])  # string labels: classes_ must carry through


def ordinal_data(n=400, n_classes=5, seed=0):
    """Ordered labels: a latent score cut at quantiles, with noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6))
    z = X @ np.array([1.5, -1.0, 0.5, 0.0, 0.0, 0.3]) + 0.3 * rng.standard_normal(n)
    cuts = np.quantile(z, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.searchsorted(cuts, z)


@pytest.mark.parametrize("n_classes", [3, 5])
def test_ovr_agrees_with_sklearn_one_vs_rest(n_classes):
    X, y = blobs(n_classes)
    base = dict(solver="dcd", C=1.0, loss="squared_hinge", tol=1e-4, max_iter=5000, random_state=0)
    ours = SVMClassifier(multi_class="ovr", **base).fit(X, y)
    ref = OneVsRestClassifier(SVMClassifier(**base)).fit(X, y)
    D = ours.decision_function(X)
    assert D.shape == (len(y), n_classes)
    assert ours.coef_.shape == (n_classes, X.shape[1]) and ours.intercept_.shape == (n_classes,)
    # Exact, not close: model j is the same binary problem (same rows in the same order, the
    # same +1/-1 labels, the same seed) solved by the same code, so the bits agree.
    np.testing.assert_array_equal(D, ref.decision_function(X))
    # D from the binary models by hand (w_j, b_j), independent of the wrapper's bookkeeping.
    np.testing.assert_allclose(D, X @ ours.coef_.T + ours.intercept_, rtol=0, atol=1e-12)
    pred = ours.predict(X)
    assert set(pred) == set(y)
    # OneVsRestClassifier takes its own running maximum over the estimators; with D equal to
    # the bit, and no two columns equal in a row, the classes are the same everywhere.
    assert (np.sort(D, axis=1)[:, -1] > np.sort(D, axis=1)[:, -2]).all()
    np.testing.assert_array_equal(pred, ref.predict(X))
    by_hand = [ours.classes_[max(range(n_classes), key=lambda j: row[j])] for row in D]
    np.testing.assert_array_equal(pred, by_hand)


@pytest.mark.parametrize("n_classes", [3, 5])
@pytest.mark.parametrize("solver", ["dcd", "newton"])
def test_ovo_agrees_with_sklearn_one_vs_one(n_classes, solver):
    X, y = blobs(n_classes, seed=1)
    base = dict(solver=solver, C=1.0, loss="squared_hinge", tol=1e-8, max_iter=5000, random_state=0)
    ours = SVMClassifier(multi_class="ovo", **base).fit(X, y)
    ref = OneVsOneClassifier(SVMClassifier(**base)).fit(X, y)
    D = ours.decision_function(X)
    assert D.shape == (len(y), n_classes * (n_classes - 1) // 2)
    pred = ours.predict(X)
    assert set(pred) == set(y)
    # Column m is pair (i, j) with a positive value for class i, as SVC(decision_function_shape="ovo"):
    # OneVsOneClassifier's estimator for (i, j) has class j positive, so it is our column negated
    # -- exactly: the labels negated leave the dual (Q = diag(y) X X' diag(y)) and every margin
    # y_i (w'x_i + b) unchanged, and IEEE negation is exact, so both solvers take the same path
    # with (w, b) of opposite sign.
    for m, (i, j) in enumerate(class_pairs("ovo", n_classes)):
        np.testing.assert_array_equal(D[:, m], -ref.estimators_[m].decision_function(X))
    np.testing.assert_allclose(D, X @ ours.coef_.T + ours.intercept_, rtol=0, atol=1e-12)
    # Votes counted by hand, ties to the lowest class index (SVC, break_ties=False).
    by_hand, tied = [], []
    for row in D:
        votes = [0] * n_classes
        m = 0
        for i in range(n_classes):
            for j in range(i + 1, n_classes):
                votes[i if row[m] > 0 else j] += 1
                m += 1
        top = max(votes)
        by_hand.append(ours.classes_[votes.index(top)])
        tied.append(votes.count(top) > 1)
    np.testing.assert_array_equal(pred, by_hand)
    # OneVsOneClassifier breaks vote ties by summed confidences, so it is the same class
    # exactly where the votes do not tie.
    tied = np.array(tied)
    np.testing.assert_array_equal(pred[~tied], ref.predict(X)[~tied])


def test_ovo_votes_break_ties_to_the_lowest_class():
    """Three pair models voting 0>1, 1>2, 2>0 tie one vote each; LIBSVM/SVC pick class 0."""
    from solvers.multiclass import MulticlassModel
    mc = MulticlassModel("ovo", np.array([0, 1, 2]), class_pairs("ovo", 3), [None] * 3)
    # pairs (0,1), (0,2), (1,2): +1 votes the first class of the pair
    D = np.array([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0], [1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(mc.predict_index(D), [0, 0, 0])
    D = np.array([[-1.0, -1.0, 1.0], [-1.0, -1.0, -1.0]])
    np.testing.assert_array_equal(mc.predict_index(D), [1, 2])


def test_ordinal_table_by_hand():
    """duros_katzman 3.1: most probable label per pattern S; unseen patterns get the prior."""
    S = np.array([[0, 0], [0, 0], [0, 0],
                  [1, 0], [1, 0], [1, 0], [1, 0],
                  [1, 1], [1, 1]], dtype=bool)
    labels = np.array([0, 0, 1,
                       1, 1, 0, 2,
                       2, 1])
    table = OrdinalTable(3).fit(S, labels)  # class counts 3, 4, 2
    query = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=bool)
    # (1, 1) ties labels 1 and 2 (one each): the larger prior, class 1, wins; (0, 1) was never
    # seen: the prior's argmax, class 1.
    np.testing.assert_array_equal(table.decode(query), [0, 1, 1, 1])
    P = table.probabilities(query)
    np.testing.assert_allclose(P[0], [2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(P[1], [1 / 4, 2 / 4, 1 / 4])
    np.testing.assert_allclose(P[3], [3 / 9, 4 / 9, 2 / 9])
    # A table trained with a clear majority in (1, 1) and a prior favouring class 0.
    table = OrdinalTable(3).fit(np.array([[0, 0]] * 5 + [[1, 1]] * 2, dtype=bool), [0] * 5 + [2] * 2)
    np.testing.assert_array_equal(table.decode(np.array([[1, 1], [1, 0], [0, 1]], dtype=bool)), [2, 0, 0])


def test_ordinal_ties_go_to_the_prior_not_to_the_first_class():
    """A pattern whose labels tie is given the tied label of larger prior, here the LAST class;
    a pattern never seen is given the prior's argmax, also not the first class."""
    S = np.array([[0, 0], [0, 0],
                  [1, 0], [1, 0], [1, 0], [1, 0],
                  [1, 1], [1, 1], [1, 1]], dtype=bool)
    labels = np.array([0, 2,
                       1, 1, 1, 0,
                       2, 2, 2])
    table = OrdinalTable(3).fit(S, labels)  # class counts 2, 3, 4
    np.testing.assert_array_equal(table.class_counts, [2, 3, 4])
    query = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=bool)
    # (0, 0): labels 0 and 2 once each, prior 2/9 < 4/9: class 2. (0, 1): unseen, prior: class 2.
    np.testing.assert_array_equal(table.decode(query), [2, 1, 2, 2])
    np.testing.assert_allclose(table.probabilities(query)[0], [1 / 2, 0, 1 / 2])
    # Priors tied as well (classes 1 and 2, twice each): the lower index, for a seen pattern
    # and for an unseen one.
    table = OrdinalTable(3).fit(np.array([[0, 0], [0, 0], [1, 1], [1, 1], [1, 1]], dtype=bool),
                                [2, 1, 1, 2, 0])
    np.testing.assert_array_equal(table.decode(np.array([[0, 0], [1, 1], [0, 1]], dtype=bool)), [1, 1, 1])


def test_ordinal_table_many_pairs():
    """Patterns longer than one byte (K - 1 = 11 pair models) are keyed correctly."""
    rng = np.random.default_rng(0)
    S = rng.random((500, 11)) < 0.5
    labels = rng.integers(0, 12, 500)
    table = OrdinalTable(12).fit(S, labels)
    for row in range(0, 500, 37):
        same = np.all(S == S[row], axis=1)
        counts = np.bincount(labels[same], minlength=12)
        assert counts[table.decode(S[row:row + 1])[0]] == counts.max()


@pytest.mark.parametrize("n_classes", [3, 5])
def test_ordinal_chain(n_classes):
    X, y = ordinal_data(n_classes=n_classes)
    clf = SVMClassifier(multi_class="ordinal", C=1.0, tol=1e-6, max_iter=5000, random_state=0).fit(X, y)
    D = clf.decision_function(X)
    assert D.shape == (len(y), n_classes - 1)
    assert len(clf.multiclass_.models) == n_classes - 1
    pred = clf.predict(X)
    assert set(pred) == set(range(n_classes))
    np.testing.assert_allclose(D, X @ clf.coef_.T + clf.intercept_, rtol=0, atol=1e-12)
    # Predictions are duros_katzman's table read by hand: count(label, S) on the training
    # patterns S = (D >= 0); the most frequent label, ties to the larger prior, then the lower
    # index; unseen patterns (test points) to the prior's argmax.
    counts = {}
    for s, label in zip(map(tuple, D >= 0), y):
        counts.setdefault(s, [0] * n_classes)[label] += 1
    prior = [int(np.sum(y == c)) for c in range(n_classes)]
    prior_label = max(range(n_classes), key=lambda c: (prior[c], -c))

    def by_hand(Dq):
        out = []
        for s in map(tuple, Dq >= 0):
            if s not in counts:
                out.append(prior_label)
            else:
                out.append(max(range(n_classes), key=lambda c: (counts[s][c], prior[c], -c)))
        return np.array(out)

    np.testing.assert_array_equal(pred, by_hand(D))
    assert np.mean(pred == y) > 0.7  # beats chance (1 / n_classes) by far
    # New points, some far out where the pair models' hyperplanes cross: patterns never seen
    # in training (E_m < 0 <= E_{m+1}), decoded by the prior.
    Xt = np.vstack([ordinal_data(n_classes=n_classes, seed=1)[0],
                    10 * np.random.default_rng(2).standard_normal((400, X.shape[1]))])
    Dt = clf.decision_function(Xt)
    assert any(s not in counts for s in map(tuple, Dt >= 0))
    np.testing.assert_array_equal(clf.predict(Xt), by_hand(Dt))
    # The pair models separate adjacent classes with the higher class positive.
    for m in range(n_classes - 1):
        rows = (y == m) | (y == m + 1)
        assert np.mean((D[rows, m] >= 0) == (y[rows] == m + 1)) > 0.8


def test_unknown_strategy():
    with pytest.raises(ValueError, match="multi_class"):
        class_pairs("crammer_singer", 3)


def test_classes_in_a_given_order_are_the_ranks():
    """The ordinal chain follows the order of `classes` (here reversed), sorted or not."""
    from solvers.multiclass import fit_multiclass
    X, y = ordinal_data(n_classes=3)
    seen = []

    def fit_binary(Xs, ys):
        seen.append((Xs.shape[0], ys.copy()))
        return {"w": np.linalg.lstsq(np.c_[Xs, np.ones(len(ys))], ys, rcond=None)[0]}

    def decision(m, Xs):
        return np.c_[Xs, np.ones(Xs.shape[0])] @ m["w"]

    mc = fit_multiclass("ordinal", X, y, np.array([2, 1, 0]), fit_binary, decision)
    assert mc.pairs == [(1, 0), (2, 1)]
    # First pair: classes[0] = 2 (-1) against classes[1] = 1 (+1).
    n0 = np.sum((y == 2) | (y == 1))
    assert seen[0][0] == n0 and np.sum(seen[0][1] > 0) == np.sum(y == 1)
    assert set(mc.predict(X, decision)) == {0, 1, 2}
    with pytest.raises(ValueError, match="not in classes"):
        fit_multiclass("ovr", X, y, np.array([0, 1]), fit_binary, decision)
