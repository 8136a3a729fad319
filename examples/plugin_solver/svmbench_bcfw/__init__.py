"""Block-coordinate Frank-Wolfe (BCFW) for the linear L1-SVM dual, an svmbench solver plugin.

Lacoste-Julien, Jaggi, Schmidt and Pletscher, "Block-Coordinate Frank-Wolfe Optimization for
Structural SVMs", ICML 2013: Algorithm 3 (BCFW with line search) and Section 4's weighted
averaging, applied to the binary SVM, the structural SVM whose outputs are the two labels.

The problem (svmbench's, hinge loss, no intercept) and its dual:

    P(w)     = 1/2 ||w||^2 + C sum_i max(0, 1 - y_i w.x_i)
    D(alpha) = sum_i alpha_i - 1/2 ||w(alpha)||^2,   w(alpha) = sum_i alpha_i y_i x_i,
               0 <= alpha_i <= C

(the paper's lambda/2 ||w||^2 + 1/n sum_i H_i(w) is P / (C n), lambda = 1/(C n)). The dual's
domain is a product of n blocks [0, C], one per example. BCFW picks a block i uniformly at random
and takes a Frank-Wolfe step on it alone:

    corner  s_i = C if 1 - y_i w.x_i > 0 else 0     (the loss-augmented "decoding" of example i:
                                                      the linear maximiser of D over block i)
    step    gamma = clip((1 - y_i w.x_i) / ((s_i - alpha_i) ||x_i||^2), 0, 1)   (exact line search)
    update  alpha_i += gamma (s_i - alpha_i),  w += gamma (s_i - alpha_i) y_i x_i

at O(nnz(x_i)) cost. The Frank-Wolfe duality gap over the whole domain is

    g(alpha) = max_s <grad D(alpha), s - alpha> = C sum_i (1 - y_i w.x_i)_+ - sum_i alpha_i + ||w||^2
             = P(w(alpha)) - D(alpha),

the primal-dual gap itself (the paper's Section 3, "duality gap"), so one pass over the data
computes an exact certificate. The solver stops when g <= tol P (``budget.tol`` is relative).

Weighted averaging (Section 4): alongside the iterate, bar_alpha_{t+1} = t/(t+2) bar_alpha_t +
2/(t+2) alpha_{t+1}, which the paper finds to converge faster in the primal; here it is taken
once per pass (t counts passes) rather than per block step, an O(n + d) update a pass instead of
O(d) a step. Both iterates are dual feasible, so each one's gap certifies it: the solver stops
on either and returns the one with the smaller gap (``averaging="weighted"``); ``"none"``
returns the last iterate.

One pass is n block steps with indices drawn with replacement (numpy's PCG64 seeded by
``random_state``), one compiled call (`_bcfw_pass`); the driver owns the loop, the certificate,
the time limit and the trace. svmbench's `solvers` package supplies the contract (Problem, Budget,
Recorder, Fit) and the objective (`solvers.objectives`), so P and D are svmbench's own.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers import Budget, Fit, Param, Problem, Recorder, SolverSpec
from solvers.base import finish
from solvers.objectives import dual_objective, pg_violation, primal_from_decision

__all__ = ["SOLVERS", "SPEC", "fit_bcfw"]


@njit(cache=True, nogil=True)
def _bcfw_pass(data, indices, indptr, y, sq_norms, C, alpha, w, blocks):
    """One pass: a block Frank-Wolfe step with exact line search for each index in `blocks`."""
    for i in blocks:
        if sq_norms[i] == 0.0:
            continue
        lo, hi = indptr[i], indptr[i + 1]
        wx = 0.0
        for p in range(lo, hi):
            wx += w[indices[p]] * data[p]
        g = 1.0 - y[i] * wx                    # d D / d alpha_i
        s = C if g > 0.0 else 0.0              # the block's linear maximiser
        d = s - alpha[i]
        if d == 0.0:
            continue
        gamma = min(max(g / (d * sq_norms[i]), 0.0), 1.0)
        step = gamma * d
        if step == 0.0:
            continue
        alpha[i] += step
        c = step * y[i]
        for p in range(lo, hi):
            w[indices[p]] += c * data[p]


def _certificate(problem: Problem, alpha: np.ndarray, w: np.ndarray):
    """(P, D, gap, X w) at w = w(alpha): the Frank-Wolfe gap is P - D (module docstring)."""
    Xw = np.asarray(problem.X @ w).ravel()
    w2 = float(w @ w)
    P = primal_from_decision(problem, w2, 0.0, Xw)
    D = dual_objective(problem, alpha, w2)
    return P, D, P - D, Xw


def fit_bcfw(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
             averaging: str = "weighted", random_state: int | None = 0) -> Fit:
    """Block-coordinate Frank-Wolfe on the hinge SVM dual (module docstring).

    Iterations are passes (n block steps each); budget.tol bounds the duality gap relative to
    P. warm_start: ``alpha`` (a dict or a previous Fit); a ``w`` alone is refused, as it does
    not determine alpha.
    """
    X = problem.X_csr
    y = problem.y
    n, d = problem.n_samples, problem.n_features
    C = problem.C
    sq_norms = np.zeros(n)
    np.add.at(sq_norms, np.repeat(np.arange(n), np.diff(X.indptr)), X.data ** 2)
    alpha = np.zeros(n)
    if warm_start is not None:
        if warm_start.get("alpha") is None:
            raise ValueError("bcfw warm-starts from alpha only (a w does not determine it)")
        alpha = np.clip(np.asarray(warm_start["alpha"], dtype=np.float64).ravel().copy(), 0.0, C)
        if alpha.shape != (n,):
            raise ValueError(f"warm_start alpha has shape {alpha.shape}, expected ({n},)")
    w = np.asarray(X.T @ (alpha * y)).ravel()
    bar_alpha, bar_w = alpha.copy(), w.copy()
    rng = np.random.default_rng(random_state)
    max_iter = budget.iterations(SPEC.default_max_iter)
    weighted = averaging == "weighted"

    best = _certificate(problem, alpha, w) + (alpha, w)
    status, it = "max_iter", 0
    while it < max_iter:
        _bcfw_pass(X.data, X.indices, X.indptr, y, sq_norms, C, alpha, w, rng.integers(0, n, n))
        it += 1
        best = _certificate(problem, alpha, w) + (alpha, w)
        if weighted:
            # Section 4's weights 2/(t+2), t = it - 1 (the first pass is taken as is).
            rho = 2.0 / (it + 1)
            bar_alpha += rho * (alpha - bar_alpha)
            bar_w += rho * (w - bar_w)
            averaged = _certificate(problem, bar_alpha, bar_w) + (bar_alpha, bar_w)
            if averaged[2] < best[2]:
                best = averaged
        P, D, gap = best[:3]
        if end := recorder.after(it, lambda: (P, D, gap), budget, diverged=not math.isfinite(P),
                                 converged=gap <= budget.tol * abs(P)):
            status = end
            break
    fit_time = recorder.seconds()
    P, D, gap, Xw, a, wv = best
    recorder.close(it, lambda: (P, D, gap))
    a, wv = a.copy(), wv.copy()
    kkt = pg_violation(y * Xw - 1.0, a, C)
    finish(status, "bcfw", it, f"relative duality gap {gap / P:.3g} > tol {budget.tol:g}")
    return Fit(b=0.0, status=status, n_iter=it, primal=P, w=wv, alpha=a, dual=D, gap=gap,
               kkt_violation=kkt, fit_time_s=fit_time, train_Xw=Xw,
               info={"averaged": best[4] is bar_alpha, "n_sv": int(np.count_nonzero(a))})


SPEC = SolverSpec(
    name="bcfw",
    family="dual_fw",
    fit=fit_bcfw,
    params={
        "averaging": Param("weighted", "str", options=("weighted", "none"),
                           doc="return the weighted average (Lacoste-Julien et al. 2013, Section 4) "
                               "when its gap is smaller, or the last iterate"),
        "random_state": Param(0, "int", low=0, none_ok=True, doc="seed of the block sampling"),
    },
    losses=("hinge",),
    intercepts=("none",),
    kernels=("linear",),
    warm_start=True,
    default_max_iter=1000,
    default_tol=1e-3,
    version="1",
    description="block-coordinate Frank-Wolfe on the dual with weighted averaging "
                "(Lacoste-Julien et al. 2013, Algorithm 3 and Section 4)",
)

# What `plugins=[svmbench_bcfw]` (solvers.load_plugin) registers; the entry point names SPEC.
SOLVERS = [SPEC]
