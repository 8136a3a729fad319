"""Reference solvers: thin adapters over scikit-learn's LinearSVC (LIBLINEAR), SVC (LIBSVM) and
SGDClassifier, registered with family "reference" so that sweeps put the established
implementations beside ours under the same contract. Their certificates are computed here from
the model they return, by the project's objectives, never taken from the library.

Mappings of the problem of design.md, P = 1/2 ||w||^2 + C sum loss(y f):

- ``liblinear``: LinearSVC(C, loss, dual). intercept "regularized" is fit_intercept=True with
  intercept_scaling = B (LIBLINEAR penalises the bias feature exactly as P does); "none" is
  fit_intercept=False. budget.tol -> tol, budget.max_iter -> max_iter (LIBLINEAR's passes or
  Newton iterations). dual=False with the hinge does not exist in LIBLINEAR and is refused.
- ``sgd``: SGDClassifier(loss, penalty="l2", alpha = lambda = 1/(C n)), whose objective
  1/n sum loss + alpha/2 ||w||^2 is P / (C n). Its intercept is never penalised, so it takes
  intercept "none" (fit_intercept=False) or "free" (note: on sparse X scikit-learn damps the
  intercept's updates by 0.01, so dense and CSR runs differ with a free intercept). learning_rate "optimal" is scikit-learn's
  eta = 1/(alpha (t0 + t)); "pegasos" is eta_t = 1/(alpha t) (invscaling with eta0 = 1/alpha,
  power_t = 1). budget.max_iter -> max_iter (epochs), budget.tol -> tol.
- ``libsvm``: SVC(C, kernel, gamma, degree, coef0) for the hinge with a free intercept (the
  dual with sum alpha_i y_i = 0). alpha_i = |dual_coef_| on support_, b = intercept_;
  budget.tol -> tol; budget.max_iter -> max_iter (-1, unlimited, when not given: LIBSVM counts
  SMO pairs, and the project's default 1000 would stop it early); n_iter_ is reported.

Sample weights (`Problem.sample_weight`) go to each estimator's ``fit(..., sample_weight=)``: C_i =
C s_i in LIBLINEAR and LIBSVM, s_i times the loss in SGDClassifier's average, so each solves the
weighted P.

Non-convergence: scikit-learn's ConvergenceWarning is caught and turned into status
``max_iter`` plus the project's own warning (base.finish).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .base import Budget, Fit, Recorder, finish
from .objectives import kkt_violation_equality, lambda_from_C, linear_certificates, primal_from_decision
from .kernels import kernel_block
from .kernel_dual import box
from .problem import Problem
from .registry import Param, SolverSpec, register


def _run(estimator, problem):
    """fit on the problem's rows (and weights), with scikit-learn's ConvergenceWarning caught
    (returns whether one was raised)."""
    from sklearn.exceptions import ConvergenceWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        estimator.fit(problem.X, problem.y, sample_weight=problem.sample_weight)
    hit = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    for w in caught:
        if not issubclass(w.category, ConvergenceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return hit


def _linear_fit(problem, name, est, recorder, info):
    warned = _run(est, problem)
    fit_time = recorder.seconds()
    w = np.ascontiguousarray(est.coef_.ravel(), dtype=np.float64)
    b = float(np.ravel(est.intercept_)[0]) if problem.intercept != "none" else 0.0
    n_iter = int(np.max(est.n_iter_))
    status = "max_iter" if warned else "converged"
    if not (np.isfinite(w).all() and math.isfinite(b)):
        status = "diverged"
        cert = {"primal": math.nan, "dual": math.nan, "gap": math.nan, "kkt_violation": math.nan}
    else:
        cert = linear_certificates(problem, w, b)
        if status == "converged" and cert["primal"] > problem.C * problem.n_samples:
            # Above P(0) = C n (w = 0: every loss is 1), so above f*: whatever the library's own
            # test said, this is not an optimum (SGDClassifier's "optimal" rate blows up on the
            # squared hinge, P = 1e7 against f* = 16 on solvers.testing's problem, and stops
            # on a small loss change).
            status = "diverged"
    if recorder.enabled:
        recorder.record(n_iter, lambda: (cert["primal"], cert["dual"], cert["gap"]))
    finish(status, name, n_iter, "scikit-learn reported non-convergence" if status == "max_iter" else "")
    return Fit(b=b, status=status, n_iter=n_iter, primal=cert["primal"], w=w, dual=cert["dual"],
               gap=cert["gap"], kkt_violation=cert["kkt_violation"], fit_time_s=fit_time, info=info)


# ------------------------------------------------------------------ liblinear
def fit_liblinear(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
                  dual: bool = True, random_state: int | None = 0) -> Fit:
    """LIBLINEAR through scikit-learn's LinearSVC (module docstring): dual=True is the dual
    coordinate descent (-s 1 / -s 3), dual=False the primal trust-region Newton (-s 2)."""
    from sklearn.svm import LinearSVC
    est = LinearSVC(C=problem.C, loss=problem.loss, dual=dual, tol=budget.tol,
                    max_iter=budget.iterations(LIBLINEAR_MAX_ITER), fit_intercept=problem.intercept == "regularized",
                    intercept_scaling=problem.intercept_scaling, random_state=random_state)
    return _linear_fit(problem, "liblinear", est, recorder, {"dual": dual})


def _liblinear_refuses(loss: str, params: dict) -> str | None:
    """LIBLINEAR has no primal method for the plain hinge (its -s 2 is the squared hinge's), so
    LinearSVC refuses dual=False there; this says it in LinearSVC's own words, before any work."""
    if loss == "hinge" and not params.get("dual", True):
        return ("Unsupported set of arguments: The combination of penalty='l2' and loss='hinge' are not supported "
                "when dual=False, Parameters: penalty='l2', loss='hinge', dual=False (solver 'liblinear': use "
                "dual=True, or loss='squared_hinge')")
    return None


# LinearSVC's pass cap when the budget names none: dcd's (and conf/solvers/liblinear.yaml's), so
# that the two compare at equal budgets, and the estimator and the pipeline end a fit alike.
LIBLINEAR_MAX_ITER = 10_000


# ------------------------------------------------------------------ sgd
def fit_sgd(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
            learning_rate: str = "optimal", average: bool = False, shuffle: bool = True,
            random_state: int | None = 0) -> Fit:
    """scikit-learn's SGDClassifier on P / (C n) (module docstring)."""
    from sklearn.linear_model import SGDClassifier
    n = problem.n_samples
    alpha = lambda_from_C(problem.C, "pegasos", n)
    kw = {}
    if learning_rate == "pegasos":
        kw = dict(learning_rate="invscaling", eta0=1.0 / alpha, power_t=1.0)
    else:
        kw = dict(learning_rate=learning_rate)
    est = SGDClassifier(loss=problem.loss, penalty="l2", alpha=alpha, fit_intercept=problem.intercept == "free",
                        max_iter=budget.iterations(1000), tol=budget.tol, shuffle=shuffle,
                        random_state=random_state, average=average, **kw)
    return _linear_fit(problem, "sgd", est, recorder, {"lambda": alpha, "learning_rate": learning_rate})


# ------------------------------------------------------------------ libsvm
def kernel_certificates(problem: Problem, alpha: np.ndarray, b: float) -> dict:
    """Certificates of a kernel model with dual variables alpha (hinge, free intercept):
    P at f = K (alpha y) + b, D(alpha) = sum alpha - 1/2 (alpha y)' K (alpha y), the gap, and
    m(alpha) - M(alpha) of the dual with the equality constraint (objectives)."""
    y = problem.y
    sv = np.flatnonzero(alpha)
    ay = (alpha * y)[sv]
    K = kernel_block(problem.kernel, problem.X, problem.X[sv])  # n x n_sv
    Kay = K @ ay
    f = Kay + b
    quad = float(ay @ Kay[sv])
    P = primal_from_decision(problem, quad, b, f)
    D = float(alpha.sum() - 0.5 * quad)
    G = y * Kay - 1.0  # gradient of the dual minimisation form, Q alpha - e
    kkt = kkt_violation_equality(G, alpha, y, box(problem))
    return {"primal": P, "dual": D, "gap": P - D, "kkt_violation": kkt}


def fit_libsvm(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
               shrinking: bool = True, cache_size: float = 200.0) -> Fit:
    """LIBSVM through scikit-learn's SVC (module docstring)."""
    from sklearn.svm import SVC
    kern = problem.kernel
    est = SVC(C=problem.C, kernel=kern.name, gamma=kern.gamma if kern.name != "linear" else "scale",
              degree=int(kern.degree), coef0=kern.coef0, tol=budget.tol, shrinking=shrinking,
              cache_size=cache_size, max_iter=int(budget.max_iter) if budget.max_iter is not None else -1)
    warned = _run(est, problem)
    fit_time = recorder.seconds()
    n = problem.n_samples
    alpha = np.zeros(n)
    # classes_ are [-1, +1], so dual_coef_ = alpha_i y_i and f = sum dual_coef K + intercept_.
    dual_coef = est.dual_coef_.toarray() if hasattr(est.dual_coef_, "toarray") else est.dual_coef_  # sparse X
    alpha[est.support_] = np.abs(np.ravel(dual_coef))
    b = float(est.intercept_[0])
    n_iter = int(np.max(est.n_iter_))
    status = "max_iter" if warned else "converged"
    cert = kernel_certificates(problem, alpha, b)
    if not math.isfinite(cert["primal"]):
        status = "diverged"
    if recorder.enabled:
        recorder.record(n_iter, lambda: (cert["primal"], cert["dual"], cert["gap"]))
    finish(status, "libsvm", n_iter, "scikit-learn reported non-convergence" if status == "max_iter" else "",
           kernel_dual=True)
    return Fit(b=b, status=status, n_iter=n_iter, primal=cert["primal"], alpha=alpha, dual=cert["dual"],
               gap=cert["gap"], kkt_violation=cert["kkt_violation"], fit_time_s=fit_time,
               info={"n_sv": int(est.support_.size)})


register(SolverSpec(
    name="liblinear", family="reference", fit=fit_liblinear,
    sample_weight=True,
    params={"dual": Param(True, "bool", doc="LinearSVC(dual=...): dual CD, or the primal Newton (squared hinge)"),
            "random_state": Param(0, "int", low=0, none_ok=True, doc="seed of LIBLINEAR's permutations")},
    losses=("hinge", "squared_hinge"), intercepts=("regularized", "none"), kernels=("linear",),
    default_max_iter=LIBLINEAR_MAX_ITER, default_tol=0.1,   # LIBLINEAR's own eps, as dcd (LinearSVC's is 1e-4)
    refuse=_liblinear_refuses, time_limit=False, version="1", description="scikit-learn LinearSVC (LIBLINEAR)",
))
register(SolverSpec(
    name="sgd", family="reference", fit=fit_sgd,
    sample_weight=True,
    params={"learning_rate": Param("optimal", "str", options=("optimal", "pegasos"),
                                   doc="1/(alpha (t0 + t)) or Pegasos's 1/(alpha t)"),
            "average": Param(False, "bool", doc="averaged SGD"),
            "shuffle": Param(True, "bool", doc="shuffle each epoch"),
            "random_state": Param(0, "int", low=0, none_ok=True, doc="seed of the shuffles")},
    losses=("hinge", "squared_hinge"), intercepts=("none", "free"), kernels=("linear",),
    default_max_iter=1000, default_tol=1e-3,  # SGDClassifier's
    time_limit=False, version="2",   # 2: "diverged" when it ends above P(0)
    description="scikit-learn SGDClassifier",
))
register(SolverSpec(
    name="libsvm", family="reference", fit=fit_libsvm,
    sample_weight=True,
    params={"shrinking": Param(True, "bool", doc="LIBSVM's shrinking heuristic"),
            "cache_size": Param(200.0, "float", low=0.0, open_low=True, doc="kernel cache (MB)")},
    losses=("hinge",), intercepts=("free",), kernels=("linear", "rbf", "poly"),
    default_max_iter=10_000_000,  # LIBSVM counts SMO pairs; its own default is unlimited
    default_tol=1e-3,             # LIBSVM's eps
    time_limit=False, version="1", description="scikit-learn SVC (LIBSVM)",
))
