"""LIBLINEAR's C search (``train -C``), as a warm path per fold: its start, doubling, cap and
stopping rule, read from `find_parameters` and `find_parameter_C` in LIBLINEAR's linear.cpp
(versions 2.4x and 2.50) and `NEWTON::newton` in its newton.cpp.

- **Start** (`calc_start_C`, for ``-s 2``, the squared hinge): C_0 = 2^floor(log2(1 / (2 l M))),
  l the rows of the whole problem (all the folds' rows) and M = max_i ||x_i||^2 (the bias
  feature included). Below it the model barely changes: at C <= 1 / (2 l M) every margin stays
  below 1, so w*(C) = 2C sum_i y_i x_i up to that scale (Chu, Chou, Lin et al., "Warm Start for
  Parameter Selection of Linear Classifiers", KDD 2015, Section 4). ``-c`` gives C_0 instead.
  C_0 is capped at the last C.
- **Doubling and cap**: C_{k+1} = 2 C_k while C_k <= 1024 (``max_C``; ``ratio = 2``).
- **Warm start**: each fold starts C_{k+1} from its own w of C_k (``init_sol = prev_w[i]``);
  the folds run one after another there, in parallel here (one Dask task per fold).
- **Stopping rule**: a fold's w is *unchanged* at C when the solver, started from it, stops at
  once: ``-s 2``'s primal Newton stops when ||grad P_C(w)|| <= eps' ||grad P_C(0)||, with
  eps' = eps max(min(l+, l-), 1) / l on the fold's training rows (`train_one`'s
  ``primal_solver_tol``; eps = 0.01 by default), and checks that before its first step (so
  ``norm_w_diff`` is 0 there). The walk stops after the C where every fold's w has been unchanged
  for 5 values of C in a row (``num_unchanged_w == 5``; the first C counts as one, since no fold
  has a w to compare yet), or after the last C <= 1024.
- **Reported**: the C with the best CV accuracy, the first at that accuracy (``current_rate >
  *best_score``), and its CV accuracy.

`unchanged` is that test on any solver's model, so the rule is LIBLINEAR's whatever solver walks
the path (dcd by default): where it holds, the fold keeps its model (`kept_fit`), as LIBLINEAR's
does, at no solve. Pure functions of numbers and of a `solvers.Problem`; the walk itself runs in
the engine's C path task (`pipeline.engine.tasks.run_path`), its decision in
`pipeline.search_run.PathSearch`.
"""
from __future__ import annotations

import math
import time

import numpy as np

# ``max_C`` of `find_parameters` for the classifiers (-s 0, -s 2).
CAP = 1024.0
# LIBLINEAR's default eps for -s 2 (train.c: ``param.eps = 0.01`` for L2R_L2LOSS_SVC): the
# tolerance of the stopping test that decides whether a fold's w is unchanged.
EPS = 0.01
# Unchanged C values in a row, every fold, that end the walk (``num_unchanged_w == 5``).
UNCHANGED_RUN = 5


def start_C(n_rows: int, max_sq_norm: float, cap: float = CAP) -> float:
    """LIBLINEAR's first C for the squared hinge (`calc_start_C`): 2^floor(log2(1/(2 l M))),
    capped at `cap`; M = max_i ||x_i||^2 over the problem's rows (bias feature included)."""
    if n_rows < 1 or not max_sq_norm > 0:
        raise ValueError(f"start_C needs rows with a nonzero feature: l={n_rows}, max ||x||^2={max_sq_norm}")
    # LIBLINEAR's own arithmetic, ``pow(2, floor(log(min_C) / log(2.0)))``: at an exact power of
    # two the quotient may round below the integer (2^-29 gives -29.000000000000004), and then
    # LIBLINEAR starts a doubling lower; the same libm log gives the same start here.
    k = math.floor(math.log(1.0 / (2.0 * n_rows * max_sq_norm)) / math.log(2.0))
    return min(math.ldexp(1.0, k), cap)


def path_Cs(start: float, cap: float = CAP) -> list[float]:
    """C_0 = min(start, cap), doubled while <= cap (LIBLINEAR's ``while(param_tmp->C <= max_C)``).
    Doubling is exact in floating point: the values are LIBLINEAR's to the bit."""
    C = min(float(start), float(cap))
    out = []
    while C <= cap:
        out.append(C)
        C *= 2.0
    return out


def stop_index(unchanged: list[list[bool]]) -> int | None:
    """The index of the last C LIBLINEAR walks, from each fold's flags (flags[k] for C_k, k >= 1:
    that fold's w unchanged at C_k; flags[0] is not read): the first k where every fold has
    been unchanged at k - 4, ..., k (C_0 counting as unchanged), else None (the walk reaches the
    cap). Every fold must have flags up to the same length."""
    if not unchanged:
        return None
    n = min(len(f) for f in unchanged)
    run = 0
    for k in range(n):
        run = run + 1 if k == 0 or all(f[k] for f in unchanged) else 0
        if run == UNCHANGED_RUN:
            return k
    return None


def fold_stop(unchanged: list[bool]) -> int | None:
    """The first k where this fold alone has been unchanged UNCHANGED_RUN values in a row (C_0
    counting): no C of the walk can end it earlier (`stop_index` needs every fold's run)."""
    return stop_index([unchanged])


def gradient_norm(problem, w: np.ndarray, b: float, Xw: np.ndarray | None = None) -> float:
    """||grad P_C(w)|| of the squared hinge's primal, with the intercept coordinate u (b = B u)
    where it is regularised: grad_w = w + 2 sum_i C_i (y_i f_i - 1) y_i x_i over y_i f_i < 1
    (LIBLINEAR's l2r_l2_svc_fun::grad). Xw: X w on the problem's rows, where the fit has it."""
    from solvers.objectives import intercept_coordinate
    f = (np.asarray(problem.X @ w).ravel() if Xw is None else Xw) + b
    m = problem.y * f
    coef = np.where(m < 1.0, 2.0 * problem.C_i * (m - 1.0) * problem.y, 0.0)
    g = w + np.asarray(problem.X.T @ coef).ravel()
    c, r = intercept_coordinate(problem)
    u = b / c if c else 0.0
    g_u = r * u + c * float(coef.sum())
    return math.sqrt(float(g @ g) + g_u * g_u)


# ||grad P_C(0)|| / C of the problems seen last, by their rows and weights: it is C times a
# constant of the fold, so a path computes its X' y pass once, not once per C.
_G0: dict = {}


def newton_tolerance(problem, eps: float = EPS) -> float:
    """The right side of ``-s 2``'s stopping test: eps max(min(l+, l-), 1) / l ||grad P_C(0)||."""
    from solvers.objectives import gradient_norm_at_zero
    key = (id(problem.X), id(problem.sample_weight), problem.intercept, problem.B)
    held = _G0.get(key)
    if held is None or held[0] is not problem.X:
        while len(_G0) >= 4:
            _G0.pop(next(iter(_G0)))
        pos = int(np.count_nonzero(problem.y > 0))
        l = problem.n_samples
        held = _G0[key] = (problem.X, max(min(pos, l - pos), 1) / l * gradient_norm_at_zero(problem) / problem.C)
    return eps * held[1] * problem.C


def unchanged(problem, w: np.ndarray, b: float, eps: float = EPS, Xw: np.ndarray | None = None) \
        -> tuple[bool, float, float]:
    """(LIBLINEAR's -s 2 would stop at (w, b) before a step at this problem's C, ||grad P_C||,
    the test's tolerance)."""
    g = gradient_norm(problem, np.asarray(w, dtype=np.float64), float(b), Xw)
    tol = newton_tolerance(problem, eps)
    return g <= tol, g, tol


def kept_fit(problem, w: np.ndarray, b: float, grad: float, tol: float, started: float, Xw: np.ndarray):
    """The fold's model kept at this C (no solve: LIBLINEAR's own model there is its start), with
    its certificates at this C (the squared hinge's KKT map gives the dual point); Xw = X w."""
    from solvers import Fit
    from solvers.objectives import linear_certificates
    w = np.asarray(w, dtype=np.float64)
    cert = linear_certificates(problem, w, b, f=Xw + b)
    return Fit(b=float(b), status="converged", n_iter=0, primal=cert["primal"], w=w, alpha=cert["alpha"],
               dual=cert["dual"], gap=cert["gap"], kkt_violation=cert["kkt_violation"],
               fit_time_s=time.perf_counter() - started, train_Xw=Xw,
               info={"unchanged": True, "newton_grad": grad, "newton_tol": tol})
