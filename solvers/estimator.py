"""`SVMClassifier`: the one scikit-learn estimator over every registered solver.

``__init__`` only stores; ``fit`` validates once (the constraints below, then the solver's own
declared parameters through the registry), builds a `Problem` and hands it to `solvers.fit`.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .base import Budget, Recorder
from .kernels import Kernel, kernel_block, resolve_gamma
from .problem import Problem
from .params import BUDGET_PARAMS, PROBLEM_PARAMS, TASK_PARAMS, estimator_message
from .registry import Param, SolverError, fit as solve, get_solver


def _check_magnitude(X) -> None:
    """Refuse X whose values would overflow float64 in the solvers: a squared norm ||x_i||^2
    (kernels, gamma="scale"'s variance, Qbar_ii) sums up to n_features squares, so values above
    sqrt(max float / n_features) (1.3e154 / sqrt(d)) can make it inf, and a fit from there
    divides inf by inf. One message, before any work, naming the value's row and column."""
    data = X.data if sp.issparse(X) else X
    if data.size == 0:
        return
    # Two reductions and no temporary: np.abs(data) would allocate a copy of X's values (on
    # full RCV1, 490 MB of pages touched for the first time) for one number.
    amax = max(float(data.max()), -float(data.min()))
    limit = math.sqrt(np.finfo(np.float64).max / max(X.shape[1], 1))
    if amax <= limit or not math.isfinite(amax):
        return     # NaN and inf in sparse X: Problem refuses them, naming the row
    if sp.issparse(X):
        k = int(np.argmax(np.abs(X.data)))
        row, col = int(np.searchsorted(X.indptr, k, side="right") - 1), int(X.indices[k])
    else:
        row, col = (int(i) for i in np.unravel_index(int(np.argmax(np.abs(X))), X.shape))
    raise ValueError(f"X has a value of magnitude {amax:.3g} (row {row}, column {col}): with {X.shape[1]} "
                     f"features, squared norms and kernel values overflow float64 above {limit:.3g}; "
                     "rescale X (e.g. sklearn.preprocessing.MaxAbsScaler)")


def _gram(K) -> np.ndarray:
    """A callable kernel's value as a dense float64 array: on sparse rows a kernel such as
    ``lambda A, B: A @ B.T`` returns a sparse matrix, which SVC densifies too."""
    return np.asarray(K.toarray() if sp.issparse(K) else K, dtype=np.float64)


class SVMClassifier(ClassifierMixin, BaseEstimator):
    """Support vector machine classifier over any svmbench solver.

    Minimises P(w, b) = 1/2 ||w||^2 + C sum_i loss(y_i (w . phi(x_i) + b)) (DESIGN.md).

    Parameters
    ----------
    solver : str, default="dcd"
        A registered solver (``solvers.solver_names()``).
    C : float, default=1.0
        Penalty; ``inf`` is a hard margin for the solvers that support it.
    loss : {"hinge", "squared_hinge", "huber_hinge"} or None, default=None
        None: the solver's first declared loss (``get_solver(solver).losses[0]``; hinge for dcd,
        squared hinge for gd and newton), resolved at fit.
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="linear"
        "precomputed": X is the Gram matrix, (n_samples, n_samples) at fit and (n_test,
        n_samples) at predict; a callable k(A, B) returns the Gram matrix of the rows of A and B.
        Both solve on a factor F of the training Gram matrix K = F F' (its eigendecomposition,
        negative eigenvalues of an indefinite K clipped to 0) with the linear kernel, so the
        dual is that of K exactly up to rounding; they need a solver with dual variables
        (smo, svmlight, qp, libsvm, dcd, newton's kernel formulation) and keep no coef_.
    gamma : {"scale", "auto"} or float, default="scale"
    degree : int, default=3
    coef0 : float, default=0.0
    intercept : {"none", "regularized", "free", "basis"} or None, default=None
        None: the solver's first declared intercept, resolved at fit, as sweeps do: regularized
        (LIBLINEAR's bias feature) for dcd, liblinear, pegasos, gd and newton; free for the
        kernel duals (smo, svmlight, qp, libsvm) and the majorization family; none for sgd.
        basis (gd, newton, pegasos): duros_katzman's bias, set after training without one.
    intercept_scaling : float, default=1.0
        The constant feature B of a regularized intercept (LIBLINEAR's bias term).
    huber_k : float, default=1.0
        The Huber hinge's k (quadratic on -k < y f <= 1).
    tol : float or None, default=None
        Tolerance of the solver's own stopping rule; None: the solver's ``default_tol``, chosen
        so that a default sweep over C ends converged (README, "Defaults").
    max_iter : int or None, default=None
        Iteration cap in the solver's unit; None is the solver's default.
    multi_class : {"ovr", "ovo", "ordinal"}, default="ovr"
        How more than two classes are reduced to binary problems (solvers/multiclass.py):
        one-vs-rest (argmax), one-vs-one (voting, ties to the lowest class as SVC), or the ordinal
        chain of adjacent pairs of the sorted classes decoded by duros_katzman's table P(label | S).
    random_state : int or None, default=None
    solver_params : dict or None, default=None
        Solver-specific parameters, checked against the solver's declaration.
    probability : bool, default=False
        Fit Platt's sigmoids (Lin, Lin and Weng 2007) on decision values of a 5-fold internal
        cross-validation (five more fits), for `predict_proba` and `predict_log_proba`, as SVC's;
        multiclass: pairwise coupling for ovo, normalised sigmoids for ovr. The folds are
        drawn with random_state (0 when None). predict still follows the decision values.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class: row i's loss term is scaled by class_weight[y_i] (times its
        sample_weight), i.e. its dual box is C class_weight[y_i] (LIBSVM's ``-wi``, SVC's and
        LinearSVC's class_weight). "balanced": n_samples / (n_classes * count(class)), from the
        labels given to fit, as scikit-learn computes it. Only solvers that weigh rows take
        weights other than 1 (``get_solver(name).sample_weight``); the others refuse by name.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class (all 1 without class_weight), as SVC's.
    coef_ : ndarray of shape (1, n_features) or (n_models, n_features)  (linear kernel)
        w of each model, as LinearSVC's (an attribute; a CSR matrix after `sparsify`); for the
        kernel duals (smo, svmlight, qp, libsvm) with the linear kernel, SVC's: dual_coef_ @
        support_vectors_ per model, computed at each read and read-only (a CSR matrix after a
        sparse fit).
    intercept_ : ndarray of shape (1,) or (n_models,)
        n_models: n_classes (ovr), n_classes (n_classes - 1) / 2 (ovo, one per pair as SVC's),
        n_classes - 1 (ordinal), in the column order of `decision_function`.
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV) for two classes and for ovo, or
        (n_models, n_SV) for ovr and ordinal  (models with dual variables)
        alpha_i y_i of the support vectors (for the kernel newton, beta). Two classes and ovo
        follow SVC (LIBSVM's layout: the coefficient of a support vector of class i in pair
        (i, j) is in row j - 1, of class j in row i; positive for classes_[1] with two classes);
        ovr and ordinal, which SVC lacks, hold one row per binary model over the union of
        support vectors (0 where a vector is not one of that model's). A CSR matrix after a
        sparse fit, as SVC's.
    support_ : ndarray of shape (n_SV,)
        Rows of the X given to fit that are support vectors of any model, ordered by class, then
        by row (SVC's order). Unlike SVC's, these index the rows given to fit also when rows of
        weight 0 were left out.
    n_support_ : ndarray of shape (n_classes,)
        Support vectors per class.
    support_vectors_ : ndarray or sparse matrix of shape (n_SV, n_features)  (models without w)
        Solvers that return w (dcd, liblinear) predict from ``coef_`` and keep none, as LinearSVC
        (``X[support_]`` gives them).
    multiclass_ : solvers.multiclass.MulticlassModel  (more than two classes)
        The binary models (``.models``), their class pairs and the ordinal table.
    probA_, probB_ : ndarray of shape (n_models,)  (probability=True)
        Each binary model's sigmoid P(+1 | f) = 1 / (1 + exp(A f + B)).
    n_iter_ : int, or ndarray of shape (n_models,)
        Iterations of each binary model: an int for two classes when the model predicts from w
        (LinearSVC's), an array otherwise (SVC's, also for two classes).
    status_ : str, or list of str per model
    objective_ : float, or ndarray of shape (n_models,)
        The primal objective P at the returned model(s).
    trace_ : list of (iteration, seconds, primal, dual, gap), or one such list per model

    Predictions read the attributes above (coef_ and intercept_ for a model with w, dual_coef_,
    support_vectors_ and intercept_ for a model that predicts from its support vectors), so
    reassigning or editing them changes the model, as LinearSVC's coef_ and SVC's dual_coef_;
    the binary models in ``multiclass_`` are the fit's record and are not read again. A model
    of dense support vectors refuses sparse rows at predict, as SVC's.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from solvers import SVMClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = SVMClassifier(C=0.01, tol=1e-6, max_iter=10000).fit(X / X.max(0), y)
    >>> clf.score(X / X.max(0), y) > 0.9
    True
    """

    # The problem's, budget's and task's parameters are the table's (`params.PROBLEM_PARAMS`, ...),
    # which `Problem` and the pipeline's config read too: a bad value gets one message from each.
    _parameter_constraints = {
        **{k: PROBLEM_PARAMS[k] for k in ("C", "loss", "intercept", "intercept_scaling", "huber_k", "gamma",
                                          "degree", "coef0", "class_weight")},
        "tol": BUDGET_PARAMS["tol"],
        "max_iter": BUDGET_PARAMS["max_iter"],
        "multi_class": TASK_PARAMS["multi_class"],
        "solver": Param("dcd", "str"),
        "kernel": Param("linear", "any"),
        "random_state": Param(None, "int", low=0, none_ok=True),
        "solver_params": Param(None, "any", none_ok=True),
        "probability": Param(False, "bool"),
    }
    # None for these is the solver's own (its first declared loss and intercept, its default_tol),
    # resolved at fit, as a sweep's defaults are: not a value the table checks.
    _solver_defaults = ("loss", "intercept", "tol")

    def __init__(self, solver="dcd", C=1.0, loss=None, kernel="linear", gamma="scale", degree=3,
                 coef0=0.0, intercept=None, intercept_scaling=1.0, huber_k=1.0, tol=None,
                 max_iter=None, multi_class="ovr", random_state=None, solver_params=None, class_weight=None,
                 probability=False):
        self.solver = solver
        self.C = C
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.intercept = intercept
        self.intercept_scaling = intercept_scaling
        self.huber_k = huber_k
        self.tol = tol
        self.max_iter = max_iter
        self.multi_class = multi_class
        self.random_state = random_state
        self.solver_params = solver_params
        self.class_weight = class_weight
        self.probability = probability

    # ------------------------------------------------------------------ validation
    def _validate_params(self):
        """The solver's spec and its checked parameters, or scikit-learn's InvalidParameterError
        for a refused value, in its words ("The 'C' parameter of SVMClassifier must be a float
        in the range (0.0, inf]. Got nan instead."), what the table refuses (`params`)."""
        from sklearn.utils._param_validation import InvalidParameterError

        for key, p in self._parameter_constraints.items():
            value = getattr(self, key)
            why = None if value is None and key in self._solver_defaults else p.reason(value)
            if why is not None:
                said = None if p.rule is not None else p.constraint()
                raise InvalidParameterError(estimator_message("SVMClassifier", key, value, why, said))
        if not (callable(self.kernel) or self.kernel in ("linear", "rbf", "poly", "precomputed")):
            raise InvalidParameterError(estimator_message(
                "SVMClassifier", "kernel", self.kernel, "",
                "a str among {'linear', 'poly', 'precomputed', 'rbf'} or a callable"))
        if self.solver_params is not None and not isinstance(self.solver_params, dict):
            raise InvalidParameterError(estimator_message("SVMClassifier", "solver_params", self.solver_params, "",
                                                          "an instance of 'dict' or None"))
        spec = get_solver(self.solver)
        params = dict(self.solver_params or {})
        if "random_state" in spec.params and "random_state" not in params and self.random_state is not None:
            params["random_state"] = self.random_state
        spec.check_combination(self.loss if self.loss is not None else spec.losses[0], spec.check_params(params))
        return spec, params

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None):
        """Fit on X (n_samples, n_features), dense or sparse, and labels y.

        sample_weight : array-like of shape (n_samples,) or None
            Per-row weights, multiplied by the class weights: row i's penalty is
            C sample_weight[i] class_weight[y_i]. Rows of weight <= 0 are left out of the fit
            (as SVC does); their indices never appear in ``support_``.
        """
        spec, params = self._validate_params()
        # A CSR already in float64 passes through as is (no copy; Problem shares its buffers).
        # Its values are checked for NaN and inf once, by Problem (naming the row), not also here:
        # each check is a pass over all nonzeros (docs/benchmarks/linear.md counts them). Dense X keeps
        # scikit-learn's check, whose message its estimator checks expect.
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C",
                             ensure_all_finite=not sp.issparse(X))
        _check_magnitude(X)
        self._sparse_fit = sp.issparse(X)
        check_classification_targets(y)
        # Each row's class index, from the same sort that finds the classes (one sort of y).
        self.classes_, yi = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y has only one class ({self.classes_[0]!r}); a classifier needs at least two")
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(f"Precomputed matrix must be a square matrix. Input is a {X.shape[0]}x{X.shape[1]} matrix.")
        weights, kept = self._row_weights(X, yi, sample_weight)
        X_given, y_given = X, y
        if kept is not None:
            X, y, yi = X[kept], y[kept], yi[kept]
        self._kept = kept
        self._gram = callable(self.kernel) or self.kernel == "precomputed"
        if self._gram:
            X, params = self._gram_factor(X, kept, spec, params)
            self._kernel = Kernel("linear")
        else:
            g = resolve_gamma(self.gamma, X) if self.kernel != "linear" else 1.0
            self._kernel = Kernel(self.kernel, float(g), int(self.degree), float(self.coef0))
        # None: the solver's own defaults (its first declared loss and intercept, its default_tol),
        # so that SVMClassifier(solver=name) works for every solver as a sweep's defaults do.
        self._loss = self.loss if self.loss is not None else spec.losses[0]
        self._intercept = self.intercept if self.intercept is not None else spec.intercepts[0]
        budget = Budget(max_iter=self.max_iter, tol=self.tol if self.tol is not None else spec.default_tol)
        if len(self.classes_) == 2:
            ybin = np.where(yi == 1, 1.0, -1.0)
            self._model = self._fit_binary(X, ybin, spec, params, budget, weights)
            # One model: classes_[1] is +1, as SVC's binary sign (dual_coef_ > 0 for classes_[1]).
            self._set_layout([self._model], [(1, 0)], [None], X, y)
        else:
            from .multiclass import fit_multiclass
            self.multiclass_ = fit_multiclass(
                self.multi_class, X, y, self.classes_,
                lambda Xs, ys, ws=None: self._fit_binary(Xs, ys, spec, params, budget, ws),
                lambda m, Xs: self._binary_decision(self._kernel, m, Xs), sample_weight=weights)
            mc = self.multiclass_
            self._set_layout(mc.models, mc.pairs, mc.rows, X, y)
        if self._gram:
            self._gram_attributes(X_given)
        if self.probability:
            self._fit_probability(X_given, y_given, sample_weight)
        return self

    def _fit_probability(self, X, y, sample_weight):
        """Platt's sigmoids (solvers/probability.py) on decision values of a 5-fold internal
        cross-validation, as LIBSVM's -b 1: each fold's model is this estimator, without
        probability, fitted on the other folds (with their sample weights); a binary model's
        sigmoid is fitted on the rows it was trained on (both classes of its pair for ovo)."""
        from sklearn.base import clone
        from sklearn.model_selection import StratifiedKFold

        from .probability import fit_sigmoid
        if len(self.classes_) > 2 and self.multi_class == "ordinal":
            raise ValueError("probability=True needs multi_class='ovr' or 'ovo' (ordinal's table gives P(label | S) "
                             "itself: multiclass_.table.probabilities)")
        counts = np.bincount(np.searchsorted(self.classes_, y), minlength=len(self.classes_))
        if counts.min() < 2:
            raise ValueError(f"probability=True fits its sigmoids by cross-validation: class "
                             f"{self.classes_[int(np.argmin(counts))]!r} has {int(counts.min())} sample(s), at least 2 needed")
        folds = StratifiedKFold(min(5, int(counts.min())), shuffle=True,
                                random_state=self.random_state if self.random_state is not None else 0)
        D = np.empty((len(y), len(self.intercept_)))
        sw = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        inner = clone(self).set_params(probability=False)
        for tr, te in folds.split(np.zeros(len(y)), y):
            if self.kernel == "precomputed":
                Xtr, Xte = X[np.ix_(tr, tr)], X[np.ix_(te, tr)]
            else:
                Xtr, Xte = X[tr], X[te]
            m = clone(inner).fit(Xtr, y[tr], sample_weight=None if sw is None else sw[tr])
            d = m.decision_function(Xte)
            D[te] = d[:, None] if d.ndim == 1 else d
        yi = np.searchsorted(self.classes_, y)
        pairs = [(1, 0)] if len(self.classes_) == 2 else self.multiclass_.pairs
        ab = []
        for k, (pos, neg) in enumerate(pairs):
            rows = np.ones(len(y), bool) if neg < 0 or len(self.classes_) == 2 else (yi == pos) | (yi == neg)
            ab.append(fit_sigmoid(D[rows, k], yi[rows] == pos))
        self.probA_ = np.array([a for a, _ in ab])
        self.probB_ = np.array([b for _, b in ab])

    @available_if(lambda self: self.probability)
    def predict_proba(self, X):
        """Class probabilities (n_samples, n_classes), columns in classes_ order: Platt's
        sigmoid of each binary model's decision value (fitted by internal cross-validation at
        fit), combined by pairwise coupling for ovo (Wu, Lin and Weng 2004, as SVC) or
        normalised over the classes for ovr. Needs probability=True at fit."""
        from .probability import pairwise_coupling, sigmoid_predict
        check_is_fitted(self)
        if not hasattr(self, "probA_"):
            from sklearn.exceptions import NotFittedError
            raise NotFittedError("predict_proba is not available when fitted with probability=False")
        D = self.decision_function(X)
        K = len(self.classes_)
        if K == 2:
            p1 = sigmoid_predict(D, self.probA_[0], self.probB_[0])
            return np.column_stack([1.0 - p1, p1])
        P = sigmoid_predict(D, self.probA_[None, :], self.probB_[None, :])
        if self.multi_class == "ovr":
            return P / P.sum(axis=1, keepdims=True)
        r = np.zeros((D.shape[0], K, K))
        for m, (i, j) in enumerate(self.multiclass_.pairs):
            rij = np.clip(P[:, m], 1e-7, 1.0 - 1e-7)     # LIBSVM's clip of the pairwise estimates
            r[:, i, j] = rij
            r[:, j, i] = 1.0 - rij
        return pairwise_coupling(r)

    @available_if(lambda self: self.probability)
    def predict_log_proba(self, X):
        """log of `predict_proba`."""
        return np.log(self.predict_proba(X))

    def _gram_factor(self, X, kept, spec, params):
        """(F, params): a factor of the training Gram matrix K = F F' (rows: the kept rows), the
        rows the linear kernel then solves on: sum_ij alpha_i alpha_j y_i y_j K_ij is the dual's
        quadratic term, and F F' reproduces K to rounding (K = V diag(lambda) V', F =
        V diag(sqrt(max(lambda, 0)))). newton is switched to its kernel formulation, which keeps
        dual variables to predict with."""
        if self.kernel == "precomputed":
            # X holds the kept rows already; their columns are those of the kept rows too.
            K = X.toarray() if sp.issparse(X) else np.asarray(X)
            if kept is not None:
                K = K[:, kept]
        else:
            K = _gram(self.kernel(X, X))
            if K.shape != (X.shape[0], X.shape[0]):
                raise ValueError(f"kernel(X, X) returned shape {K.shape}, expected ({X.shape[0]}, {X.shape[0]})")
        if not np.all(np.isfinite(K)):
            raise ValueError("the Gram matrix has non-finite values")
        lam, V = np.linalg.eigh(0.5 * (K + K.T))
        F = np.ascontiguousarray(V * np.sqrt(np.maximum(lam, 0.0)))
        if spec.name == "newton":
            params = {**params, "formulation": params.get("formulation", "kernel")}
        return F, params

    def _gram_attributes(self, X_given):
        """Precomputed or callable kernel: no coef_ (F's coordinates mean nothing to the user);
        support_vectors_ are the rows of the X given to fit (a callable evaluates them at
        predict) or, precomputed, none (predict reads the support columns of the test Gram
        matrix)."""
        if not hasattr(self, "dual_coef_"):
            raise SolverError(f"solver {self.solver!r} returned no dual variables, which kernel={self.kernel!r} needs to "
                              "predict; use smo, svmlight, qp, libsvm, dcd or newton")
        if callable(self.kernel):
            self.support_vectors_ = X_given[self.support_]
        else:
            self.support_vectors_ = np.empty((0, 0))

    def _row_weights(self, X, yi, sample_weight):
        """(weights, kept): each kept row's weight sample_weight_i * class_weight[y_i] (None when
        every weight is 1, so an unweighted fit is the very fit it was before weights existed,
        and solvers that cannot weight still take it), and the indices of the rows of weight
        > 0 (None when all are), which alone are fitted, as LIBSVM drops them in SVC.
        yi: each row's index in classes_. Sets class_weight_."""
        from sklearn.utils.class_weight import compute_class_weight
        from sklearn.utils.validation import _check_sample_weight

        K = self.classes_.size
        if self.class_weight is None:
            self.class_weight_ = np.ones(K)
        elif isinstance(self.class_weight, str):
            # "balanced": n_samples / (n_classes * count(class)), scikit-learn's rule, from the
            # class indices already at hand (compute_class_weight would sort y again).
            self.class_weight_ = yi.size / (K * np.bincount(yi, minlength=K).astype(np.float64))
        else:
            unknown = [c for c in self.class_weight if c not in self.classes_]
            if unknown:
                raise ValueError(f"class_weight has the label {unknown[0]!r}, which is not in y "
                                 f"(classes: {self.classes_.tolist()})")
            # Finite weights > 0: checked with the other parameters (`params.class_weight_reason`).
            self.class_weight_ = compute_class_weight(self.class_weight, classes=self.classes_,
                                                      y=self.classes_[yi])
        s = self.class_weight_[yi]
        if sample_weight is not None:
            raw = np.asarray(sample_weight, dtype=np.float64)
            if raw.shape == (X.shape[0],) and np.all(raw <= 0):
                raise ValueError("Invalid input - all samples have zero or negative weights.")
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
            if not np.all(np.isfinite(sw)):
                raise ValueError(f"sample_weight[{int(np.flatnonzero(~np.isfinite(sw))[0])}] is not finite")
            s = s * sw
        keep = s > 0
        if not keep.any():
            raise ValueError("Invalid input - all samples have zero or negative weights.")
        kept = None if keep.all() else np.flatnonzero(keep)
        if kept is not None:
            left = np.flatnonzero(np.bincount(yi[kept], minlength=K))
            if left.size < 2:
                raise ValueError("Invalid input - all samples with positive weights belong to the same class "
                                 f"({self.classes_[left[0]]!r}).")
            if left.size < K:
                gone = np.setdiff1d(np.arange(K), left)
                raise ValueError(f"class {self.classes_[gone[0]]!r} has no sample of positive weight; a classifier "
                                 "needs each class it is given")
        s = s if kept is None else s[kept]
        # A solver that cannot weight is refused by the registry, naming it.
        return (None if np.all(s == 1.0) else s), kept

    def _fit_binary(self, X, ybin, spec, params, budget, weights=None):
        """One binary solve; returns the parts of a binary model as a dict."""
        problem = Problem(X, ybin, C=self.C, loss=self._loss, intercept=self._intercept,
                          kernel=self._kernel, intercept_scaling=self.intercept_scaling,
                          huber_k=self.huber_k, sample_weight=weights)
        rec = Recorder()
        res = solve(problem, spec.name, budget=budget, recorder=rec, **params)
        model = {"b": float(res.b), "status": res.status, "n_iter": int(res.n_iter),
                 "objective": float(res.primal), "trace": res.trace, "w": None, "support": None,
                 "dual_coef": None, "support_vectors": None}
        if res.w is not None and self._kernel.is_linear:
            model["w"] = np.asarray(res.w, dtype=np.float64)
        if res.alpha is not None:
            # alpha != 0, not > 0: a kernel Newton stopped early may hold a few alpha_i < 0
            # (solvers/newton.py); they are part of the model it returned.
            sv = np.flatnonzero(res.alpha != 0)
            model["support"] = sv
            model["dual_coef"] = (res.alpha[sv] * ybin[sv])
            if model["w"] is None:
                model["support_vectors"] = X[sv]
                if self._kernel.is_linear:
                    # A kernel dual with the linear kernel: w = sum_i alpha_i y_i x_i, SVC's coef_
                    # (dual_coef_ @ support_vectors_).
                    model["w"] = np.asarray(model["support_vectors"].T @ model["dual_coef"], dtype=np.float64).ravel()
        if model["w"] is None and model["dual_coef"] is None:
            raise SolverError(f"solver {spec.name!r} returned neither w nor alpha")
        parts = [model["b"]] + [model[k] for k in ("w", "dual_coef") if model[k] is not None]
        if not all(np.all(np.isfinite(v)) for v in parts):
            # A NaN or infinite model predicts one class whatever X is: never a result.
            raise ValueError(f"solver {spec.name!r} returned a non-finite model (status {res.status!r}, "
                             f"{res.n_iter} iterations); lower C, the step or the kernel's parameters, rescale X, or try "
                             "another solver")
        return model

    def _set_layout(self, models, pairs, rows, X, y):
        """The fitted attributes in SVC's and LinearSVC's layout (class docstring), from the
        binary models, their class pairs and training rows (None: all of X), on the rows X, y
        that were solved. Prediction reads these attributes, not the models."""
        n_models = len(models)
        binary = n_models == 1 and len(self.classes_) == 2
        # What an earlier fit left (another solver's) is not this model's.
        for name in ("_coef", "support_vectors_", "dual_coef_", "support_", "n_support_"):
            self.__dict__.pop(name, None)
        # SVC's counterpart predicts from its support vectors (a kernel dual; a precomputed or
        # callable kernel); LinearSVC's from w (dcd, liblinear, pegasos, ...).
        self._dual_model = self._gram or any(m["support_vectors"] is not None for m in models)
        n_iter = np.array([m["n_iter"] for m in models], dtype=np.int32)
        # LinearSVC's n_iter_ is an int; SVC's an array with one count per pair, also for two classes.
        self.n_iter_ = int(n_iter[0]) if binary and not self._dual_model else n_iter
        status = [m["status"] for m in models]
        objective = np.array([m["objective"] for m in models])
        trace = [m["trace"] for m in models]
        self.status_, self.objective_, self.trace_ = (status[0], objective[0], trace[0]) if binary else \
            (status, objective, trace)
        self.intercept_ = np.array([m["b"] for m in models])
        if any(m["dual_coef"] is not None for m in models) and all(m["dual_coef"] is not None for m in models):
            # The union of the models' support vectors, ordered by class, then by row (SVC's
            # order: n_support_[c] consecutive vectors per class).
            glob = [m["support"] if r is None else r[m["support"]] for m, r in zip(models, rows)]
            yi = np.searchsorted(self.classes_, y)
            union = np.unique(np.concatenate(glob)) if glob else np.zeros(0, np.int64)
            sv = union[np.lexsort((union, yi[union]))]
            col = np.full(X.shape[0], -1, dtype=np.int64)
            col[sv] = np.arange(sv.size)
            coef = np.zeros((n_models, sv.size))
            for k, (m, g) in enumerate(zip(models, glob)):
                coef[k, col[g]] = m["dual_coef"]
            sv_class = yi[sv]
            if self.multi_class == "ovo" and not binary:
                from .multiclass import svc_dual_coef
                coef = svc_dual_coef(coef, sv_class, pairs, len(self.classes_))
            self._sv_class = sv_class
            self.n_support_ = np.bincount(sv_class, minlength=len(self.classes_)).astype(np.int32)
            # Indices into the rows given to fit (rows of weight 0 were left out of the solve).
            self.support_ = (sv if self._kept is None else self._kept[sv]).astype(np.int32)
            self.dual_coef_ = sp.csr_matrix(coef) if sp.issparse(X) else coef
            # Only a model without w needs its support vectors to predict; one with w (dcd,
            # liblinear) predicts from coef_, as LinearSVC (which keeps none), and X[sv] would
            # copy up to all of X (on RCV1 about half the rows are support vectors).
            if self._dual_model:
                self.support_vectors_ = X[sv]
        if self._kernel.is_linear and not self._dual_model and all(m["w"] is not None for m in models):
            self._coef = np.vstack([m["w"] for m in models])

    @property
    def coef_(self):
        """w of each model (linear kernel). A model that predicts from w (LinearSVC's
        counterpart: dcd, liblinear, pegasos, ...) holds it as an attribute, which may be
        reassigned or edited and is what predicts. A model that predicts from its support
        vectors (SVC's: smo, svmlight, qp, libsvm with kernel="linear") computes it at each read
        as dual_coef_ @ support_vectors_ per model (a CSR matrix after a sparse fit) and returns
        it read-only, as SVC's: an edit of dual_coef_ shows in it, and an edit of coef_, which
        would not change the model, is refused rather than ignored."""
        if "_coef" in self.__dict__:
            return self.__dict__["_coef"]
        if "_dual_model" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'coef_'")
        if not self._dual_model or self._gram or not self._kernel.is_linear:
            raise AttributeError("coef_ is only available when using a linear kernel")
        coef = self._model_coef()
        sv = self.support_vectors_
        if sp.issparse(sv):
            coef = (sp.csr_matrix(coef) @ sv).tocsr()
            coef.data.flags.writeable = False
        else:
            coef = coef @ sv
            coef.flags.writeable = False
        return coef

    @coef_.setter
    def coef_(self, value):
        if self.__dict__.get("_dual_model"):
            raise AttributeError(f"coef_ of a model that predicts from its support vectors (solver {self.solver!r}) is "
                                 "read-only, as SVC's: it is dual_coef_ @ support_vectors_; set or edit dual_coef_")
        self.__dict__["_coef"] = value

    @coef_.deleter
    def coef_(self):
        if self.__dict__.pop("_coef", None) is None:
            raise AttributeError("coef_")

    def sparsify(self):
        """coef_ as a scipy CSR matrix (LinearSVC's sparsify): smaller when most weights are 0;
        predictions are unchanged. Linear kernel and a model that predicts from w only (the
        coef_ of one that predicts from its support vectors is read-only)."""
        check_is_fitted(self, "coef_")
        self.coef_ = sp.csr_matrix(self.coef_)
        return self

    def densify(self):
        """coef_ back to a dense array (LinearSVC's densify)."""
        check_is_fitted(self, "coef_")
        if sp.issparse(self.coef_):
            self.coef_ = self.coef_.toarray()
        return self

    # ------------------------------------------------------------------ predict
    @staticmethod
    def _binary_decision(kernel: Kernel, m, X):
        if m["w"] is not None:
            return np.asarray(X @ m["w"]).ravel() + m["b"]
        K = kernel_block(kernel, X, m["support_vectors"])
        return K @ m["dual_coef"] + m["b"]

    def _decision_matrix(self, X):
        """(n_samples, n_models) decision values from the fitted attributes: X coef_' +
        intercept_ for the linear kernel, K(X, support_vectors_) C' + intercept_ otherwise, with C
        the models' coefficient rows (read from SVC's layout for ovo). Reassigned or edited
        attributes are what predicts, as LinearSVC's coef_ and intercept_."""
        intercept = np.asarray(self.intercept_, dtype=np.float64)
        if self._gram:
            if self.kernel == "precomputed":
                K = X[:, self.support_]
                K = K.toarray() if sp.issparse(K) else K
            else:
                K = _gram(self.kernel(X, self.support_vectors_))
            coef = self._model_coef()
            return K @ coef.T + intercept
        if self._kernel.is_linear:
            coef = self.coef_
            if sp.issparse(coef):     # after sparsify()
                return np.asarray(safe_sparse_dot(X, coef.T, dense_output=True)) + intercept
            # One product per model, X w_k + b_k, as a binary fit computes it: a multiclass
            # model's column is then bit for bit its binary model's (tests/solvers/test_multiclass).
            coef = np.asarray(coef, dtype=np.float64)
            D = np.empty((X.shape[0], coef.shape[0]))
            for k in range(coef.shape[0]):
                D[:, k] = np.asarray(X @ coef[k]).ravel() + intercept[k]
            return D
        K = kernel_block(self._kernel, X, self.support_vectors_)
        return K @ self._model_coef().T + intercept

    def _model_coef(self):
        """One row of dual coefficients per binary model (read from SVC's layout for ovo)."""
        coef = self.dual_coef_.toarray() if sp.issparse(self.dual_coef_) else np.asarray(self.dual_coef_)
        if self.multi_class == "ovo" and len(self.classes_) > 2:
            from .multiclass import pair_coef
            coef = pair_coef(coef, self._sv_class, self.multiclass_.pairs)
        return coef

    def decision_function(self, X):
        """Decision values: shape (n_samples,) for two classes (> 0 means classes_[1]); for
        more, the multiclass strategy's (n_samples, n_classes) or ovo's pairwise values."""
        check_is_fitted(self)
        if sp.issparse(X) and self._dual_model and not self._sparse_fit and not callable(self.kernel):
            # SVC's rule: a model of dense support vectors takes dense rows (LinearSVC's
            # counterpart, which predicts from w, takes either).
            raise ValueError(f"cannot use sparse input in {type(self).__name__!r} trained on dense data")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, order="C", reset=False)
        D = self._decision_matrix(X)
        return D[:, 0] if len(self.classes_) == 2 else D

    def predict(self, X):
        D = self.decision_function(X)
        if len(self.classes_) == 2:
            return self.classes_[(D > 0).astype(int)]
        return self.classes_[self.multiclass_.predict_index(D)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
