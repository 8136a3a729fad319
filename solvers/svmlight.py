"""SVMlight decomposition for the kernel SVM dual, with the proximal-point modification.

Joachims, "Making large-scale SVM learning practical", 1999; bertini II (shared/papers/001);
Palagi & Sciandrone, "On the convergence of a modified version of SVMlight algorithm",
Optim. Methods Softw. 20, 2005 (the proximal point modification). The dual:

    min f(alpha) = 1/2 alpha' Q alpha - e' alpha,  0 <= alpha <= C,  y' alpha = 0,  G = Q alpha - e.

Iteration k (bertini II.A): with v_i = -y_i G_i, take the q/2 indices of the largest v in
R = I_up = {alpha_i < C, y_i = +1} U {alpha_i > 0, y_i = -1} and the q/2 of the smallest v in
S = I_low (the complementary definition; these are the standard sets of Keerthi et al. and
objectives.kkt_violation_equality -- bertini's text swaps their labels), W = I U J, and solve the
q-variable subproblem (alpha_N fixed)

    min_{a}  1/2 a' Q_WW a + (G_W - Q_WW alpha_W^k)' a,   y_W' a = y_W' alpha_W^k,  0 <= a <= C

with our interior point method (`qp.solve_box_qp`). When Q_WW is not positive definite
(duplicated points, q large against the rank of K, bertini II.B), the proximal-point
modification adds tau ||a - alpha_W^k||^2, i.e. Q_WW + 2 tau I and -2 tau alpha_W^k in the
linear term (bertini II.B's PPD-SVMlight; tau = 1 by default). Then G += Q[:, W] (a - alpha_W^k)
with the q columns from the shared LRU cache (misses by one BLAS block). Stop when
m(alpha) - M(alpha) < tol.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .base import Budget, Fit, Recorder
from .kernel_dual import INTERCEPTS, KERNELS, LOSSES, certificates, dual_f, gradient, warm_alpha, finish_fit
from .kernels import QColumnCache
from .problem import Problem
from .qp import solve_box_qp
from .registry import Param, SolverError, SolverSpec, register


@njit(cache=True, nogil=True)
def _is_pd(H, rel):
    """Q_WW positive definite in the numerical sense: Cholesky succeeds with every pivot^2 above
    rel * max diagonal."""
    dmax = 0.0
    for i in range(H.shape[0]):
        dmax = max(dmax, H[i, i])
    try:
        L = np.linalg.cholesky(H)
    except Exception:  # noqa: BLE001 -- numba raises LinAlgError; only the class is caught
        return False
    for i in range(H.shape[0]):
        if not (L[i, i] * L[i, i] > rel * dmax):
            return False
    return True


@njit(cache=True, nogil=True)
def _repair(a, yv, r, u):
    """Snap values within 1e-10 u of a bound onto it and restore y'a = r on a free variable."""
    for i in range(a.shape[0]):
        if a[i] < 1e-10 * u[i]:
            a[i] = 0.0
        elif a[i] > u[i] * (1.0 - 1e-10):
            a[i] = u[i]
    res = yv @ a - r
    if res != 0.0:
        for i in range(a.shape[0]):
            v = a[i] - res * yv[i]
            if 0.0 <= v <= u[i]:
                a[i] = v
                break
    return a


@njit(cache=True, nogil=True)
def _subproblem(QWW, GW, aW, yW, C, tau, proximal, tol, max_steps):
    """Solve bertini II.A's subproblem (II.B's proximal version when proximal == 2, or when
    proximal == 1 and Q_WW is not positive definite). Returns (a, ipm steps, used proximal)."""
    q = aW.shape[0]
    H = QWW.copy()
    c = GW - QWW @ aW
    use_prox = proximal == 2 or (proximal == 1 and not _is_pd(QWW, 1e-10))
    if use_prox:
        for i in range(q):
            H[i, i] += 2.0 * tau
            c[i] -= 2.0 * tau * aW[i]
    r = yW @ aW
    u = np.full(q, C)
    a, steps, code, polished = solve_box_qp(H, c, yW, r, u, aW, tol, max_steps)
    if not polished:
        a = _repair(a, yW, r, u)
    if abs(yW @ a - r) > 1e-12 * C * q and not use_prox and proximal != 0:
        # No exact solution on the face the IPM found (singular Q_WW): the proximal
        # subproblem is strictly convex and always has one.
        for i in range(q):
            H[i, i] += 2.0 * tau
            c[i] -= 2.0 * tau * aW[i]
        use_prox = True
        a, steps2, code, polished = solve_box_qp(H, c, yW, r, u, aW, tol, max_steps)
        steps += steps2
        if not polished:
            a = _repair(a, yW, r, u)
    if abs(yW @ a - r) > 1e-12 * C * q:
        return aW.copy(), steps, use_prox  # refuse an infeasible step
    return a, steps, use_prox


def select_working_set(v, up, low, q):
    """q/2 indices of the largest v in I_up and q/2 of the smallest v in I_low, distinct
    (Joachims 1999; bertini II.A). Returns (W, m, M) with m = max_{I_up} v, M = min_{I_low} v."""
    iu = np.flatnonzero(up)
    il = np.flatnonzero(low)
    m = v[iu].max() if iu.size else -math.inf
    M = v[il].min() if il.size else math.inf
    h = q // 2
    if iu.size > h:
        I = iu[np.argpartition(-v[iu], h - 1)[:h]]
    else:
        I = iu
    il = il[~np.isin(il, I, assume_unique=True)] if I.size else il
    k = q - I.size
    if il.size > k:
        J = il[np.argpartition(v[il], k - 1)[:k]]
    else:
        J = il
    return np.concatenate([I, J]), m, M


def fit_svmlight(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
                 q: int = 40, tau: float = 1.0, proximal: str = "auto", cache_size: float = 200.0,
                 sub_tol: float = 1e-10) -> Fit:
    """SVMlight decomposition (module docstring). An iteration is one q-variable subproblem;
    budget.tol is the tolerance on m(alpha) - M(alpha).

    proximal: "auto" (proximal term only when Q_WW is not positive definite, bertini II.B),
    "always" or "never". warm_start: ``alpha``, projected onto the feasible set first.
    info: f_alpha0, f_alpha, m_minus_M, n_sv / n_bounded_sv / n_free_sv, b_rule, q,
    n_proximal (subproblems solved with the proximal term), ipm_iterations, cache counters.
    """
    if q % 2:
        raise SolverError(f"svmlight.q={q!r} must be even (q/2 indices come from each violating set)")
    y = problem.y
    n = problem.n_samples
    C = problem.C
    tol = budget.tol
    max_iter = budget.iterations(1_000_000)
    q = min(q, n)
    cache = QColumnCache(problem.kernel, problem.X, y, cache_size, problem.row_norms_sq)
    alpha = warm_alpha(problem, warm_start)
    if alpha.any():
        G, _ = gradient(cache, alpha, C)
    else:
        G = -np.ones(n)
    f0 = dual_f(alpha, G)
    prox_code = {"never": 0, "auto": 1, "always": 2}[proximal]

    status = "max_iter"
    it = 0
    n_prox = 0
    ipm_its = 0
    while it < max_iter:
        v = -y * G
        up = np.where(y > 0, alpha < C, alpha > 0)
        low = np.where(y > 0, alpha > 0, alpha < C)
        W, m, M = select_working_set(v, up, low, q)
        if m - M < tol:
            status = "converged"
            break
        QW = cache.columns(W)
        aW = alpha[W]
        a, steps, used = _subproblem(np.ascontiguousarray(QW[W]), G[W], aW, y[W], C, tau,
                                     prox_code, sub_tol, 100)
        d = a - aW
        G += QW @ d
        alpha[W] = a
        it += 1
        n_prox += int(used)
        ipm_its += int(steps)
        if recorder.due(it):
            recorder.record(it, lambda: certificates(problem, alpha, G)[:3])
        if not np.isfinite(d).all():
            status = "diverged"
            break
        if recorder.out_of_time(budget):
            status = "timeout"
            break

    fit_time = recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    return finish_fit("svmlight", problem, alpha, G, status, it, tol, fit_time, f_alpha0=f0, q=q,
                      n_proximal=n_prox, ipm_iterations=ipm_its, cache_hits=cache.hits,
                      cache_misses=cache.misses, cache_columns=cache.n_slots)


register(SolverSpec(
    name="svmlight",
    family="kernel_dual",
    fit=fit_svmlight,
    params={
        "q": Param(40, "int", low=2, doc="working-set size (even): q/2 from each violating set (the sweep over "
                   "2..200 on breast_cancer and digits was fastest at 40-100)"),
        "tau": Param(1.0, "float", low=0.0, open_low=True, doc="proximal-point weight (bertini II.B)"),
        "proximal": Param("auto", "str", options=("auto", "always", "never"),
                          doc="proximal term when Q_WW is not positive definite / always / never"),
        "cache_size": Param(200.0, "float", low=0.0, open_low=True, doc="kernel-column cache, MB"),
        "sub_tol": Param(1e-10, "float", low=0.0, open_low=True, high=1.0,
                         doc="interior point tolerance of each subproblem"),
    },
    losses=LOSSES,
    intercepts=INTERCEPTS,
    kernels=KERNELS,
    warm_start=True,
    default_max_iter=1_000_000,
    version="1",
    description="SVMlight decomposition with the proximal-point modification (Joachims 1999; bertini II)",
))
