"""Dual coordinate descent for the linear L1- and L2-SVM.

Hsieh, Chang, Lin, Keerthi and Sundararajan, "A Dual Coordinate Descent Method for Large-scale
Linear SVM", ICML 2008, Algorithm 1 with the shrinking of Section 3.2 (LIBLINEAR's
``solve_l2r_l1l2_svc``). roethel_brynda (A. Roethel and M. Brynda, "Dual Coordinate Descent Method
for Linear SVM", 2021) reproduces it: Algorithm 1 of its Section 2 stops on the change of w, and its
Section 3.2 adds the shrinking and the projected-gradient rule.

The dual solved is

    min_alpha f(alpha) = 1/2 alpha' Qbar alpha - e' alpha,   0 <= alpha_i <= U,
    Qbar = Q + D,  Q_ij = y_i y_j (x_i . x_j + B^2),  D = diag * I,

with (diag, U) = (0, C) for the hinge and (1/(2C), inf) for the squared hinge: the loss reaches
the one kernel below as these two numbers. A regularized intercept is the constant feature
B = intercept_scaling with weight w_b, never materialised as a column of X. The primal is
kept as w = sum_i alpha_i y_i x_i, so one coordinate step is

    G = y_i (w . x_i + B w_b) - 1 + diag alpha_i,   alpha_i <- min(max(alpha_i - G / Qbar_ii, 0), U)

at O(nnz(x_i)) cost. Stopping (``stop``):

- ``pg``: the projected gradients of one pass lie within tol of each other and of zero,
  M - m < tol and both max(M, 0), -min(m, 0) < tol (LIBLINEAR's rule);
- ``w_change``: ||w_{k+1} - w_k|| < tol between passes (roethel_brynda Section 2, Algorithm 1).

Shrinking runs under both rules: a variable at a bound whose gradient points outward beyond the
extremes M, m of the previous pass's projected gradients is moved out of the active set. Either
test passing on a shrunken set certifies only that set (a shrunken pass that moves w by less than
tol says nothing of the variables it skipped), so, as LIBLINEAR does, the solver then restores all
variables and stops only when the test passes on a pass that visited every variable.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from numba import njit

from .base import Budget, Fit, Recorder, finish
from .objectives import decision_linear, dual_box, dual_objective, pg_violation, primal_from_decision
from .kernels import row_norms_sq
from .problem import Problem
from .registry import Param, SolverSpec, register

_INF = np.inf


@njit(cache=True, nogil=True)
def _dcd_pass(data, indices, indptr, y, alpha, w, wb, B, QD, diag, U, index, active,
              PGmax_old, PGmin_old, shrinking):
    """One pass over index[:active] in its current order. Shrinks (moves to the tail of
    `index`) variables at a bound whose gradient points outward beyond last pass's extremes.

    Returns (active, PGmax_new, PGmin_new)."""
    PGmax_new = -_INF
    PGmin_new = _INF
    s = 0
    while s < active:
        i = index[s]
        yi = y[i]
        start = indptr[i]
        end = indptr[i + 1]
        dot = wb[0] * B
        for p in range(start, end):
            dot += w[indices[p]] * data[p]
        G = yi * dot - 1.0 + diag * alpha[i]
        PG = 0.0
        a = alpha[i]
        if a == 0.0:
            if shrinking and G > PGmax_old:
                active -= 1
                index[s] = index[active]
                index[active] = i
                continue
            if G < 0.0:
                PG = G
        elif a == U:
            if shrinking and G < PGmin_old:
                active -= 1
                index[s] = index[active]
                index[active] = i
                continue
            if G > 0.0:
                PG = G
        else:
            PG = G
        if PG > PGmax_new:
            PGmax_new = PG
        if PG < PGmin_new:
            PGmin_new = PG
        if abs(PG) > 1e-12:
            if QD[i] > 0.0:
                new = a - G / QD[i]
            else:
                # An empty row under the hinge with no intercept: f(alpha) is linear in
                # alpha_i (G = -1 < 0), so the minimiser is the upper bound, as LIBLINEAR's
                # division by zero gives.
                new = U if G < 0.0 else 0.0
            if new < 0.0:
                new = 0.0
            elif new > U:
                new = U
            alpha[i] = new
            d = (new - a) * yi
            for p in range(start, end):
                w[indices[p]] += d * data[p]
            wb[0] += d * B
        s += 1
    return active, PGmax_new, PGmin_new


def _alpha_from_w(problem: Problem, w, b, diag, U):
    """Dual variables consistent with a primal warm start (the KKT conditions at an optimum:
    hinge: alpha_i = U where y_i f_i < 1, 0 where > 1; squared hinge: alpha_i = 2C (1 - y_i f_i)_+)."""
    m = problem.y * decision_linear(problem, np.asarray(w, dtype=np.float64), b)
    if math.isinf(U):
        return np.maximum(1.0 - m, 0.0) / diag
    return np.where(m < 1.0, U, 0.0)


def fit_dcd(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
            shrinking: bool = True, stop: str = "pg", random_state: int | None = 0) -> Fit:
    """Dual coordinate descent (Hsieh et al. 2008, Algorithm 1; see the module docstring).

    Iterations are passes over the (active) data; budget.tol is the stopping tolerance of `stop`.
    warm_start: ``alpha`` (exact) or ``w``/``b`` (alpha recovered from the KKT conditions).
    info: n_active_end (active-set size at exit), n_sv, and n_updates, the coordinate steps
    taken (the active-set sizes at the start of each pass summed over passes; each costs one
    gradient, O(nnz(x_i))), the measure of what shrinking saves.
    """
    X = problem.X_csr
    y = problem.y
    n = problem.n_samples
    diag, U = dual_box(problem)
    B = float(problem.B)
    # Norms from the CSR itself, so dense and sparse input take bit-identical paths.
    QD = row_norms_sq(X) + B * B + diag
    tol = budget.tol
    max_iter = budget.iterations(1000)
    rng = np.random.default_rng(random_state)

    alpha = np.zeros(n)
    if warm_start is not None:
        if warm_start.get("alpha") is not None:
            alpha = np.clip(np.asarray(warm_start["alpha"], dtype=np.float64).copy(), 0.0, U)
            if alpha.shape != (n,):
                raise ValueError(f"warm_start alpha has shape {alpha.shape}, expected ({n},)")
        elif warm_start.get("w") is not None:
            w0 = np.asarray(warm_start["w"], dtype=np.float64)
            if w0.shape != (problem.n_features,):
                raise ValueError(f"warm_start w has shape {w0.shape}, expected ({problem.n_features},)")
            alpha = _alpha_from_w(problem, w0, float(warm_start.get("b") or 0.0), diag, U)
    ay = alpha * y
    w = np.asarray(X.T @ ay).ravel()
    wb = np.array([B * ay.sum()])

    recorder.model(lambda: SimpleNamespace(w=w, alpha=alpha, b=wb[0] * B))

    def certificates():
        f = decision_linear(problem, w, wb[0] * B)
        P = primal_from_decision(problem, float(w @ w), wb[0] * B, f)
        D = dual_objective(problem, alpha, float(w @ w) + wb[0] ** 2)
        return P, D, P - D

    # Unsigned views (same bits; every index is >= 0) let numba drop its negative-index
    # wraparound test in the two inner loops, the hot path of the whole solver.
    indices_u = X.indices.view(np.uint32)
    index = np.arange(n, dtype=np.uint64)
    active = n
    PGmax_old, PGmin_old = _INF, -_INF
    n_updates = 0
    status = "max_iter"
    it = 0
    while it < max_iter:
        # Random order of the active variables each pass (Hsieh et al. Section 3.1).
        index[:active] = index[:active][rng.permutation(active)]
        # A pass that starts with every variable active is a check of the full problem even if
        # it shrinks some: a variable is shrunk only where its projected gradient is 0 (at a
        # bound, gradient pointing outward), and it is left unchanged, as a plain pass would.
        full_pass = active == n
        n_updates += active
        # w before the pass: for the w_change rule, and for the trace's ||w_k+1 - w_k|| when a
        # point is due after this pass (an O(d) copy only then).
        w_prev = w.copy() if stop == "w_change" or recorder.due(it + 1) else None
        wb_prev = wb[0]
        active, PGmax_new, PGmin_new = _dcd_pass(
            X.data, indices_u, X.indptr, y, alpha, w, wb, B, QD, diag, U, index, active,
            PGmax_old, PGmin_old, shrinking)
        it += 1
        if recorder.due(it):
            recorder.note(w_change=math.sqrt(float(np.sum((w - w_prev) ** 2)) + (wb[0] - wb_prev) ** 2),
                          n_active=active)
            recorder.record(it, certificates)
        if not (math.isfinite(wb[0]) and np.isfinite(alpha).all()):
            status = "diverged"
            break
        if stop == "w_change":
            dw = math.sqrt(float(np.sum((w - w_prev) ** 2)) + (wb[0] - wb_prev) ** 2)
            passed = dw < tol
        else:
            if active == 0:
                # Every visited variable was shrunk: no projected gradient was seen.
                PGmax_new, PGmin_new = 0.0, 0.0
            passed = PGmax_new - PGmin_new <= tol and PGmax_new <= tol and PGmin_new >= -tol
        if passed:
            if full_pass:
                status = "converged"
                break
            # Passed on the shrunken set only: restore every variable and recheck.
            active = n
            PGmax_old, PGmin_old = _INF, -_INF
        else:
            # The shrinking thresholds of the next pass, under either stopping rule.
            PGmax_old = PGmax_new if PGmax_new > 0 else _INF
            PGmin_old = PGmin_new if PGmin_new < 0 else -_INF
        if recorder.out_of_time(budget):
            status = "timeout"
            break

    fit_time = recorder.close(it, certificates)
    P, D, gap = certificates()
    G = y * decision_linear(problem, w, wb[0] * B) - 1.0 + diag * alpha
    kkt = pg_violation(G, alpha, U)
    if not math.isfinite(P):
        status = "diverged"
    finish(status, "dcd", it, f"projected-gradient spread {kkt:.3g} > tol {tol:g}" if status == "max_iter" else "")
    return Fit(b=float(wb[0] * B), status=status, n_iter=it, primal=P, w=w, alpha=alpha, dual=D,
               gap=gap, kkt_violation=kkt, fit_time_s=fit_time,
               info={"n_active_end": int(active), "n_sv": int(np.count_nonzero(alpha)),
                     "n_updates": int(n_updates)})


def _warmup():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    fit_dcd(Problem(X, np.array([1.0, -1.0])), budget=Budget(max_iter=50), recorder=Recorder(enabled=False).start())


register(SolverSpec(
    name="dcd",
    family="dual_cd",
    fit=fit_dcd,
    params={
        "shrinking": Param(True, "bool", doc="shrink bounded variables (Hsieh et al. 3.2)"),
        "stop": Param("pg", "str", options=("pg", "w_change"), doc="stopping rule"),
        "random_state": Param(0, "int", low=0, none_ok=True, doc="seed of the pass permutations"),
    },
    losses=("hinge", "squared_hinge"),
    intercepts=("none", "regularized"),
    kernels=("linear",),
    warm_start=True,
    default_max_iter=1000,
    # 2: shrinking also under stop="w_change" (it shrank nothing), and a stopping test is final
    # on a pass that started with all variables; cached fits and references of 1 are not reused.
    version="2",
    description="dual coordinate descent, Hsieh et al. 2008 (LIBLINEAR -s 1 / -s 3)",
    warmup=_warmup,
))
