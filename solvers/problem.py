"""`Problem`: what every binary solver sees, validated once when built.

    P(w, b) = 1/2 ||w||^2 + C * sum_i loss(y_i * (w . phi(x_i) + b))

- X: CSR with sorted int32 indices, float64 values and no stored zeros, or a C-contiguous
  float64 ndarray.
  Input already in that form is used as is (its buffers are shared, never written: no solver
  writes into X); anything else is canonicalised on a copy, never in place on the caller's
  arrays. A per-fit copy of X costs as much as a solver pass over it.
- y: float64 in {-1, +1}, both present.
- C > 0 (C = inf is a hard margin; only solvers that support it accept it).
- loss: ``hinge`` (L1-SVM), ``squared_hinge`` (L2-SVM), ``huber_hinge`` (SVM-Maj's Huber hinge
  with parameter ``huber_k``, Groenen, Nalbantov and Bioch 2008, eq. (4)).
- intercept: ``none``, ``regularized`` (b = B * w_b with a constant feature B =
  ``intercept_scaling`` whose weight w_b is penalised, as LIBLINEAR does), ``free`` (b unpenalised),
  ``basis`` (duros_katzman 3: the problem without intercept is solved, then b is set after
  training from the margin violators, `objectives.basis_intercept`; `registry.fit` does it for
  the solvers that declare it, and the certificates are those of the problem without b).
- kernel: a `Kernel`.
- sample_weight: None (every row weighs 1), or one finite weight s_i > 0 per row, which scales
  that row's loss term: P = 1/2 ||w||^2 + C sum_i s_i loss(y_i f_i). In the dual the box of
  alpha_i becomes C_i = C s_i (hinge; LIBSVM's per-sample C, its ``-wi`` for class weights) and
  the squared hinge's diagonal 1/(2 C_i) (`objectives.dual_box`). A weight of 2 is the row taken
  twice. Rows of weight 0 are left out by the caller (the estimator does, as LIBSVM), so no
  solver meets a zero box. Solvers that cannot weight refuse a weighted problem by name
  (`registry.SolverSpec.sample_weight`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from numba import njit

from .kernels import Kernel, resolve_gamma, row_norms_sq
from .params import INTERCEPTS, LOSSES, PROBLEM_PARAMS  # noqa: F401  (LOSSES, INTERCEPTS: this module's names too)


class ProblemError(ValueError):
    """Invalid problem data or settings; the message names the offending input."""


def _is_canonical_csr(X) -> bool:
    """float64 values, int32 column indices sorted within each row with no duplicates
    (scipy's canonical format), int32 or int64 indptr, no stored zeros: the form the numba
    kernels read. A stored zero would be a term the CSR a dense copy of X gives does not have:
    dcd's two partial sums alternate over a row's stored entries, so it would move the terms
    between them and round apart from the dense fit."""
    return (X.format == "csr" and X.dtype == np.float64 and X.indices.dtype == np.int32
            and X.indptr.dtype in (np.int32, np.int64) and bool(X.has_canonical_format)
            and np.count_nonzero(X.data) == X.data.shape[0])


def _all_finite(a: np.ndarray) -> bool:
    """Whether every value is finite. A finite sum says so in one pass with no temporary
    (np.isfinite(a).all() allocates a boolean per value: 61 MB on full RCV1, and faults it
    in); an infinite or NaN sum may still come from large finite values, so then each value
    is tested (scikit-learn's check_array does the same)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(a.sum()):
            return True
    return bool(np.isfinite(a).all())


def canonical_X(X):
    if sp.issparse(X):
        if X.ndim != 2:
            raise ProblemError(f"X must be 2-D, got {X.ndim}-D")
        indptr_dtype = np.int32 if X.nnz < 2**31 else np.int64
        if _is_canonical_csr(X):
            # Share the caller's data and indices. A csr_array is wrapped as a csr_matrix (the
            # solvers use matrix semantics); an int64 indptr of a small matrix becomes int32, an
            # O(n_rows) copy, so the kernels see one index type (one numba specialisation).
            if isinstance(X, sp.csr_matrix) and X.indptr.dtype == indptr_dtype:
                out = X
            else:
                out = sp.csr_matrix(X.shape, dtype=np.float64)
                out.data, out.indices = X.data, X.indices
                out.indptr = X.indptr.astype(indptr_dtype, copy=False)
                out.has_canonical_format = True
        else:
            out = sp.csr_matrix(X, dtype=np.float64, copy=True)
            out.sum_duplicates()
            out.eliminate_zeros()
            out.sort_indices()
            out.indices = out.indices.astype(np.int32, copy=False)
            out.indptr = out.indptr.astype(indptr_dtype, copy=False)
        if out.nnz and not _all_finite(out.data):
            bad = int(np.flatnonzero(~np.isfinite(out.data))[0])
            row = int(np.searchsorted(out.indptr, bad, side="right") - 1)
            raise ProblemError(f"X has a non-finite value ({float(out.data[bad])}) in row {row}")
        return out
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ProblemError(f"X cannot be read as a float64 array: {exc}") from None
    if X.ndim != 2:
        raise ProblemError(f"X must be 2-D, got shape {X.shape}")
    if not _all_finite(X):
        row = int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0])
        raise ProblemError(f"X has a non-finite value in row {row}")
    return X


def _checked_data(X, labels):
    """(X, y) as a Problem holds them (`canonical_X`; y float64 in {-1, +1}, both classes), or a
    ProblemError naming what is wrong."""
    X = canonical_X(X)
    y_in = np.asarray(labels)
    if y_in.ndim != 1:
        raise ProblemError(f"y must be 1-D, got shape {y_in.shape}")
    if y_in.shape[0] != X.shape[0]:
        raise ProblemError(f"X has {X.shape[0]} rows but y has {y_in.shape[0]} labels")
    if X.shape[0] == 0:
        raise ProblemError("X has no rows")
    try:
        y = y_in.astype(np.float64)
    except (TypeError, ValueError):
        raise ProblemError("y must be numeric labels in {-1, +1}") from None
    bad = ~np.isin(y, (-1.0, 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ProblemError(f"y must be in {{-1, +1}}; y[{i}] = {labels[i]!r}")
    if not ((y > 0).any() and (y < 0).any()):
        raise ProblemError("y must contain both classes -1 and +1")
    return X, y


def _checked_weights(sample_weight, n: int):
    """sample_weight as a Problem holds it (None, or float64 (n,) of finite values > 0), or a
    ProblemError naming the first bad value."""
    if sample_weight is None:
        return None
    try:
        s = np.array(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ProblemError("sample_weight cannot be read as float64 numbers") from None
    if s.ndim != 1:
        raise ProblemError(f"sample_weight must be 1-D with one weight per row, got shape {s.shape}")
    if s.shape[0] != n:
        raise ProblemError(f"X has {n} rows but sample_weight has {s.shape[0]} weights")
    bad = ~(np.isfinite(s) & (s > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ProblemError(f"sample_weight[{i}] = {float(s[i])!r} must be a finite number > 0 "
                           "(rows of weight 0 are left out before building a Problem)")
    s.setflags(write=False)
    return s


def class_weight_rows(y: np.ndarray, class_weight) -> np.ndarray | None:
    """Per-row weights class_weight[y_i] for labels y in {-1, +1}, the problem key
    ``class_weight`` (a sweep's, or `Problem.build`'s): None (no weights), "balanced" (n / (2
    count(y_i)), scikit-learn's rule for two classes) or a mapping {-1: w, +1: w} (a missing
    label weighs 1). None also when every weight is 1, so that such a problem is unweighted."""
    if class_weight is None:
        return None
    PROBLEM_PARAMS["class_weight"].check("class_weight", class_weight, ProblemError)
    y = np.asarray(y, dtype=np.float64)
    if isinstance(class_weight, str):
        n_pos = int((y > 0).sum())
        w = {1.0: y.size / (2.0 * n_pos), -1.0: y.size / (2.0 * (y.size - n_pos))}
    else:
        w = {}
        for k, v in class_weight.items():
            try:
                label = float(k)
            except (TypeError, ValueError):
                label = None
            if label not in (-1.0, 1.0):
                raise ProblemError(f"class_weight has the label {k!r}; the labels of a binary problem are -1 and 1")
            w[label] = float(v)
    s = np.where(y > 0, w.get(1.0, 1.0), w.get(-1.0, 1.0))
    return None if np.all(s == 1.0) else s


def _kernel(kernel, gamma, degree, coef0, X) -> Kernel:
    """A `Kernel` from scikit-learn style arguments, gamma "scale"/"auto" resolved on X."""
    if isinstance(kernel, Kernel):
        return kernel
    try:
        g = resolve_gamma(gamma, X) if kernel != "linear" else 1.0
        return Kernel(str(kernel), float(g), degree, float(coef0))
    except (TypeError, ValueError) as exc:
        raise ProblemError(str(exc)) from None


@njit(cache=True, nogil=True)
def _row_nnz(X):
    counts = np.zeros(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        c = 0
        for j in range(X.shape[1]):
            if X[i, j] != 0.0:
                c += 1
        counts[i] = c
    return counts


@njit(cache=True, nogil=True)
def _fill_csr(X, indptr, data, indices):
    for i in range(X.shape[0]):
        p = indptr[i]
        for j in range(X.shape[1]):
            v = X[i, j]
            if v != 0.0:
                data[p] = v
                indices[p] = j
                p += 1


@dataclass(frozen=True, eq=False)
class Problem:
    """A validated binary SVM problem (see the module docstring for the objective)."""

    X: object
    y: np.ndarray
    C: float = 1.0
    loss: str = "hinge"
    intercept: str = "none"
    kernel: Kernel = field(default_factory=Kernel)
    intercept_scaling: float = 1.0
    huber_k: float = 1.0
    sample_weight: np.ndarray | None = None

    def __post_init__(self):
        X, y = _checked_data(self.X, self.y)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "sample_weight", _checked_weights(self.sample_weight, X.shape[0]))
        self._check_settings()

    def _check_settings(self) -> None:
        # The settings' ranges are the table's (`params.PROBLEM_PARAMS`), which the estimator
        # and the pipeline's config read too: one message for one bad value wherever it is set.
        for name in ("C", "loss", "intercept", "intercept_scaling", "huber_k"):
            value = PROBLEM_PARAMS[name].check(name, getattr(self, name), ProblemError)
            object.__setattr__(self, name, value)
        if not isinstance(self.kernel, Kernel):
            raise ProblemError(f"kernel must be a solvers.Kernel, got {type(self.kernel).__name__}")

    @classmethod
    def build(cls, X, y, C=1.0, loss="hinge", intercept="none", kernel="linear",
              gamma="scale", degree=3, coef0=0.0, intercept_scaling=1.0, huber_k=1.0, sample_weight=None,
              class_weight=None):
        """Build a Problem from scikit-learn style arguments (kernel by name, gamma
        "scale"/"auto" resolved on X; class_weight per label, `class_weight_rows`, multiplied
        into sample_weight)."""
        if class_weight is not None:
            cw = class_weight_rows(_checked_data(X, y)[1], class_weight)
            if cw is not None:
                sample_weight = cw if sample_weight is None else cw * np.asarray(sample_weight, dtype=np.float64)
        return cls(X, y, C, loss, intercept, _kernel(kernel, gamma, degree, coef0, X), intercept_scaling, huber_k,
                   sample_weight)

    def with_settings(self, C=1.0, loss="hinge", intercept="none", kernel="linear",
                      gamma="scale", degree=3, coef0=0.0, intercept_scaling=1.0, huber_k=1.0,
                      class_weight=None) -> "Problem":
        """`build` on this problem's X and y, which are not checked again (`with_`): the
        problems of one fold's C values, built from one Problem of its rows. class_weight
        (`class_weight_rows`) sets the row weights; None keeps this problem's own."""
        extra = {}
        if class_weight is not None:
            extra["sample_weight"] = class_weight_rows(self.y, class_weight)
        return self.with_(C=C, loss=loss, intercept=intercept, kernel=_kernel(kernel, gamma, degree, coef0, self.X),
                          intercept_scaling=intercept_scaling, huber_k=huber_k, **extra)

    # --- derived, computed once -------------------------------------------------------
    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def weighted(self) -> bool:
        return self.sample_weight is not None

    def weigh(self, v):
        """v_i s_i for a weighted problem, v itself (not a copy) otherwise: every loss term
        C sum_i loss_i reads C sum_i s_i loss_i, and an unweighted problem takes exactly the
        sums it took before weights existed (bit for bit)."""
        return v if self.sample_weight is None else v * self.sample_weight

    @property
    def C_i(self) -> np.ndarray:
        """The per-row penalty C s_i (C everywhere when unweighted): the dual box of the hinge."""
        if self.sample_weight is None:
            return np.full(self.n_samples, self.C)
        return self.C * self.sample_weight

    @property
    def B(self) -> float:
        """Value of the constant feature carrying a regularized intercept (0 otherwise)."""
        return self.intercept_scaling if self.intercept == "regularized" else 0.0

    @cached_property
    def X_csr(self) -> sp.csr_matrix:
        """X as canonical CSR (int32 indices); the linear coordinate solvers walk rows. The
        problems `with_` makes from one problem share its X, and its CSR form with it: the C
        values of a fold (a sweep's, a C path's) convert dense X once, not once per C."""
        if self.is_sparse:
            return self.X
        origin = self.__dict__.get("_origin")
        if origin is not None and origin.X is self.X:
            return origin.X_csr
        # One compiled scan instead of scipy's dense -> COO -> CSR, whose fixed cost is a visible
        # share of a whole dcd fit on a small dense set (docs/benchmarks/code-notes.md). X is
        # finite (checked when built); a row-major scan gives sorted indices, and zeros (also
        # -0.0) are dropped, as scipy does.
        X = self.X
        counts = _row_nnz(X)
        nnz = int(counts.sum())
        indptr = np.zeros(X.shape[0] + 1, dtype=np.int32 if nnz < 2**31 else np.int64)
        np.cumsum(counts, out=indptr[1:])
        data = np.empty(nnz)
        indices = np.empty(nnz, dtype=np.int32)
        _fill_csr(X, indptr, data, indices)
        out = sp.csr_matrix((data, indices, indptr), shape=X.shape)
        out.has_sorted_indices = True
        out.has_canonical_format = True
        return out

    @cached_property
    def row_norms_sq(self) -> np.ndarray:
        return row_norms_sq(self.X)

    def decision(self, fit, X=None) -> np.ndarray:
        """Decision values f(x) = w . phi(x) + b of a solver's `Fit` on rows X (default: the
        training rows). A linear model uses w; a dual model uses sum_i alpha_i y_i k(x_i, x)
        over its support vectors."""
        from .kernels import kernel_block
        if X is None and getattr(fit, "train_Xw", None) is not None and len(fit.train_Xw) == self.n_samples:
            return fit.train_Xw + fit.b      # the same sum as below, its product already made
        X = self.X if X is None else X
        if fit.w is not None and self.kernel.is_linear:
            return np.asarray(X @ fit.w).ravel() + fit.b
        if fit.alpha is None:
            raise ValueError("the fit has neither w nor alpha")
        sv = np.flatnonzero(fit.alpha != 0)   # != 0: an early-stopped kernel Newton may hold alpha_i < 0
        if sv.size == 0:
            return np.full(X.shape[0], float(fit.b))
        beta = fit.alpha[sv] * self.y[sv]
        return kernel_block(self.kernel, X, self.X[sv]) @ beta + fit.b

    def with_(self, **changes) -> "Problem":
        """A copy with some settings changed, checked like any new Problem's. X and y, unless
        among the changes, are this problem's own, checked when it was built, and are not
        checked again: that is a pass over X's values, which a sweep would otherwise repeat for
        every C of a fold. A dense X's CSR form (`X_csr`) is made once, by the problem the copies
        came from, when the first of them asks for it; `row_norms_sq` is each copy's own."""
        if "X" in changes or "y" in changes:
            return replace(self, **changes)
        names = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"Problem has no setting {unknown[0]!r}")
        out = object.__new__(type(self))
        for name in names:
            object.__setattr__(out, name, changes.get(name, getattr(self, name)))
        if "sample_weight" in changes:
            object.__setattr__(out, "sample_weight", _checked_weights(out.sample_weight, out.n_samples))
        out._check_settings()
        object.__setattr__(out, "_origin", self.__dict__.get("_origin") or self)
        return out

    def subset(self, rows) -> "Problem":
        """The problem restricted to some rows (used by the multiclass wrappers)."""
        rows = np.asarray(rows)
        sw = None if self.sample_weight is None else self.sample_weight[rows]
        return self.with_(X=self.X[rows], y=self.y[rows], sample_weight=sw)
