"""Multiclass wrappers over any binary solver: one-vs-rest, one-vs-one, and the ordinal chain.

A binary model is whatever ``fit_binary(X_rows, y_pm1)`` returns (the estimator's dict); its
decision values come from ``binary_decision(model, X)``. Here only the bookkeeping lives: which
rows and which labels each binary problem gets, and how decision values become a class.

- ``ovr`` (one-vs-all): model j separates classes_[j] (+1) from the rest (-1); the class is the
  argmax of the K decision values (bertini's one-vs-all; scikit-learn's OneVsRestClassifier).
  decision_function: (n, K).
- ``ovo`` (one-vs-one, duros_katzman 3.1 citing Hsu and Lin): a model per pair i < j, trained on
  the rows of classes i and j with class i as +1, so a positive value votes for i (LIBSVM's and
  SVC's convention). The class is the one with most votes, ties to the lowest class index (as
  SVC with break_ties=False). decision_function: (n, K(K-1)/2), pairs in the order (0,1), (0,2),
  ..., (1,2), ..., like SVC(decision_function_shape="ovo").
- ``ordinal`` (duros_katzman 3.1): the classes, in the order given (sorted, for the estimator), are
  ranks; a model per adjacent
  pair (i, i+1), trained on the rows of those two classes with the higher class i+1 as +1.
  Each point gets the pattern S = (E_1 >= 0, ..., E_{K-1} >= 0) of the pair models' outputs, and
  the table P(label | S) = count(label, S) / count(S) is estimated on the training data; a point
  is given the most probable label of its pattern, and a pattern never seen in training the
  class of largest prior count(label) / n. Ties: larger prior, then lower class index.
  decision_function: (n, K-1), the pair models' values.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

STRATEGIES = ("ovr", "ovo", "ordinal")


# ------------------------------------------------------------------ ordinal decoding table
def _pattern_keys(S: np.ndarray) -> np.ndarray:
    """One comparable key per row of a boolean pattern matrix (rows packed into bytes)."""
    S = np.asarray(S, dtype=bool)
    packed = np.ascontiguousarray(np.packbits(S, axis=1))
    return packed.view(np.dtype((np.void, packed.shape[1]))).ravel()


@dataclass
class OrdinalTable:
    """duros_katzman's P(label | S) with the prior fallback (see the module docstring).

    ``fit(S, labels)`` with S (n, K-1) boolean and labels (n,) class indices in [0, K);
    ``decode(S)`` the class index of each row.
    """

    n_classes: int
    patterns: np.ndarray = field(default=None, repr=False)   # sorted unique keys
    counts: np.ndarray = field(default=None, repr=False)     # (n_patterns, K) count(label, S)
    class_counts: np.ndarray = field(default=None, repr=False)
    best: np.ndarray = field(default=None, repr=False)       # most probable label per pattern
    prior_label: int = 0

    def fit(self, S, labels) -> "OrdinalTable":
        labels = np.asarray(labels, dtype=np.int64)
        K = self.n_classes
        keys = _pattern_keys(S)
        self.patterns, inv = np.unique(keys, return_inverse=True)
        self.counts = np.zeros((self.patterns.size, K), dtype=np.int64)
        np.add.at(self.counts, (inv.ravel(), labels), 1)
        self.class_counts = np.bincount(labels, minlength=K)
        n = labels.size
        # argmax of count(label, S); ties to the larger prior, then to the lower index.
        self.best = np.argmax(self.counts * (n + 1) + self.class_counts[None, :], axis=1)
        self.prior_label = int(np.argmax(self.class_counts))
        return self

    def probabilities(self, S) -> np.ndarray:
        """P(label | S) per row (n, K); the priors for unseen patterns."""
        pos, found = self._lookup(S)
        prior = self.class_counts / self.class_counts.sum()
        out = np.tile(prior, (pos.size, 1))
        c = self.counts[pos[found]]
        out[found] = c / c.sum(axis=1, keepdims=True)
        return out

    def _lookup(self, S):
        keys = _pattern_keys(S)
        pos = np.searchsorted(self.patterns, keys)
        pos = np.minimum(pos, self.patterns.size - 1)
        found = self.patterns[pos] == keys
        return pos, found

    def decode(self, S) -> np.ndarray:
        pos, found = self._lookup(S)
        return np.where(found, self.best[pos], self.prior_label)


# ------------------------------------------------------------------ the fitted wrapper
@dataclass
class MulticlassModel:
    """The binary models of one strategy and how to combine them.

    pairs[m] = (pos, neg): class indices of model m's +1 and -1 sides (neg = -1 means "the rest").
    """

    strategy: str
    classes: np.ndarray
    pairs: list
    models: list
    table: OrdinalTable | None = None
    # The training rows of each model (None: every row), so that its support indices, which are
    # positions among those rows, can be read as rows of the whole training set.
    rows: list | None = None

    def decision_function(self, X, binary_decision) -> np.ndarray:
        """(n, K) for ovr, (n, K(K-1)/2) for ovo, (n, K-1) for ordinal (module docstring)."""
        n = X.shape[0]
        D = np.empty((n, len(self.models)))
        for j, m in enumerate(self.models):
            D[:, j] = binary_decision(m, X)
        return D

    def predict_index(self, D) -> np.ndarray:
        """Class indices from decision values."""
        K = len(self.classes)
        if self.strategy == "ovr":
            return np.argmax(D, axis=1)
        if self.strategy == "ovo":
            votes = np.zeros((D.shape[0], K), dtype=np.int64)
            for j, (i, k) in enumerate(self.pairs):
                pos = D[:, j] > 0
                votes[:, i] += pos
                votes[:, k] += ~pos
            return np.argmax(votes, axis=1)  # ties: lowest index, as LIBSVM / SVC
        return self.table.decode(D >= 0)

    def predict(self, X, binary_decision) -> np.ndarray:
        return self.classes[self.predict_index(self.decision_function(X, binary_decision))]


def class_pairs(strategy: str, n_classes: int) -> list:
    """The (pos, neg) class-index pairs of each binary model, in decision-column order."""
    K = n_classes
    if strategy == "ovr":
        return [(j, -1) for j in range(K)]
    if strategy == "ovo":
        return [(i, k) for i in range(K) for k in range(i + 1, K)]
    if strategy == "ordinal":
        return [(i + 1, i) for i in range(K - 1)]
    raise ValueError(f"multi_class={strategy!r} is not one of {list(STRATEGIES)}")


def fit_multiclass(strategy: str, X, y, classes, fit_binary, binary_decision, sample_weight=None) -> MulticlassModel:
    """Train the binary models of `strategy` with ``fit_binary(X_rows, y_pm1)`` (module
    docstring); `binary_decision(model, X)` is needed by the ordinal table, which is estimated
    on the training data. With `sample_weight` (n,), each call is ``fit_binary(X_rows, y_pm1,
    weights_of_those_rows)``: a row keeps its weight in every binary problem it enters, as
    LIBSVM's one-vs-one keeps each row's C_i."""
    classes = np.asarray(classes)
    # Class indices in the order `classes` is given (the ordinal ranks), sorted or not.
    sorter = np.argsort(classes, kind="stable")
    pos = np.minimum(np.searchsorted(classes, y, sorter=sorter), len(classes) - 1)
    yi = sorter[pos]
    if not np.array_equal(classes[yi], np.asarray(y)):
        raise ValueError("y has labels that are not in classes")
    pairs = class_pairs(strategy, len(classes))
    weights = () if sample_weight is None else (np.asarray(sample_weight),)
    models, model_rows = [], []
    for pos, neg in pairs:
        if neg < 0:
            models.append(fit_binary(X, np.where(yi == pos, 1.0, -1.0), *weights))
            model_rows.append(None)
            continue
        rows = np.flatnonzero((yi == pos) | (yi == neg))
        models.append(fit_binary(X[rows], np.where(yi[rows] == pos, 1.0, -1.0), *(w[rows] for w in weights)))
        model_rows.append(rows)
    mc = MulticlassModel(strategy, classes, pairs, models, rows=model_rows)
    if strategy == "ordinal":
        D = mc.decision_function(X, binary_decision)
        mc.table = OrdinalTable(len(classes)).fit(D >= 0, yi)
    return mc


# ------------------------------------------------------------------ SVC's layout of dual models
def svc_dual_coef(coef: np.ndarray, sv_class: np.ndarray, pairs: list, n_classes: int) -> np.ndarray:
    """LIBSVM's one-vs-one layout (svm_predict_values; SVC's dual_coef_ of shape (K-1, n_SV))
    from one row of coefficients per pair model over the union of support vectors.

    coef: (n_pairs, n_SV), coef[p, s] = alpha_s y_s of pair p = (i, j), i < j, class i as +1
    (0 where s is not one of its support vectors); sv_class: each support vector's class index.
    The coefficient of a support vector of class i in pair (i, j) goes to row j - 1, one of class
    j to row i: each (row, support vector) slot belongs to exactly one pair."""
    out = np.zeros((n_classes - 1, coef.shape[1]))
    for p, (i, j) in enumerate(pairs):
        ci = sv_class == i
        cj = sv_class == j
        out[j - 1, ci] = coef[p, ci]
        out[i, cj] = coef[p, cj]
    return out


def pair_coef(dual_coef: np.ndarray, sv_class: np.ndarray, pairs: list) -> np.ndarray:
    """The inverse of `svc_dual_coef`: each pair model's coefficients (n_pairs, n_SV) read back
    from SVC's layout, as svm_predict_values reads them."""
    out = np.zeros((len(pairs), dual_coef.shape[1]))
    for p, (i, j) in enumerate(pairs):
        ci = sv_class == i
        cj = sv_class == j
        out[p, ci] = dual_coef[j - 1, ci]
        out[p, cj] = dual_coef[i, cj]
    return out
