"""SVMlight decomposition for the kernel SVM dual, with the proximal-point modification.

Joachims, "Making large-scale SVM learning practical", 1999; bertini (Section II);
Palagi & Sciandrone, "On the convergence of a modified version of SVMlight algorithm",
Optim. Methods Softw. 20, 2005 (the proximal point modification). The dual:

    min f(alpha) = 1/2 alpha' Q alpha - e' alpha,  0 <= alpha <= C,  y' alpha = 0,  G = Q alpha - e.

Iteration k (bertini, Section II.A): with v_i = -y_i G_i, take the q/2 indices of the largest v in
R = I_up = {alpha_i < C, y_i = +1} U {alpha_i > 0, y_i = -1} and the q/2 of the smallest v in
S = I_low (the complementary definition; these are the standard sets of Keerthi et al. and
objectives.kkt_violation_equality -- bertini's text swaps their labels), W = I U J, and solve the
q-variable subproblem (alpha_N fixed)

    min_{a}  1/2 a' Q_WW a + (G_W - Q_WW alpha_W^k)' a,   y_W' a = y_W' alpha_W^k,  0 <= a <= C

with our interior point method (`qp.solve_box_qp`). When Q_WW is not positive definite
(duplicated points, q large against the rank of K, bertini, Section II.B), the proximal-point
modification adds tau ||a - alpha_W^k||^2, i.e. Q_WW + 2 tau I and -2 tau alpha_W^k in the
linear term (bertini's PPD-SVMlight, Section II.B; tau = 1 by default). Then
G += Q[:, W] (a - alpha_W^k) with the q columns from the shared LRU cache (misses by one BLAS
block). Stop when m(alpha) - M(alpha) < tol.

Descent is guaranteed without trusting the subproblem solver:

- q = 2: W is the most violating pair (i, j) and the subproblem is solved in closed form along
  d = y_i e_i - y_j e_j (Platt 1998; the step of smo), no interior point method.
- q > 2: W holds the most violating pair (i*, j*) (the largest v in I_up and the smallest in
  I_low), so the closed-form step on that pair is a feasible point of the subproblem; an exact
  subproblem answer decreases f at least as much (the proximal one, its model f + tau ||.||^2).
  The answer is accepted only when it decreases f by at least half the pair step's decrease
  (a sufficient decrease test); otherwise the pair step is taken. Every iteration therefore
  decreases f at least as much as half an SMO step on the most violating pair, which
  terminates for tol > 0 (Keerthi & Gilbert, "Convergence of a generalized SMO algorithm for
  SVM classifier design", Machine Learning 46, 2002).
- Ties in v are broken towards the lower index, so W is a function of (alpha, G) alone.
- If f still does not decrease for STALL_ITERS consecutive iterations, the solve ends with status
  ``stalled`` and says why (it never spins to max_iter).

Without these, an interior point solve that stops short (100 steps, no polish) can come back as
alpha_W^k itself (qp's fallback snaps to a corner, the equality repair moves back), and since the
selection depends on (alpha, G) only, the same W repeats forever: on breast cancer (poly, C = 10,
q = 2) under OpenBLAS's SkylakeX kernels the dual stayed at 359.20 from iteration ~200 to 10^6
(SVC: 419.15).
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

TAU_CURV = 1e-12  # LIBSVM's floor for a non-positive curvature along the pair direction (as smo)
STALL_ITERS = 50  # consecutive iterations without a decrease of f before `stalled`
SUFFICIENT = 0.5  # an accepted subproblem answer decreases f by >= this x the pair step's decrease


@njit(cache=True, nogil=True)
def _is_pd(H, rel):
    """Q_WW positive definite in the numerical sense: Cholesky succeeds with every pivot^2 above
    rel * max diagonal. The 2 x 2 case in closed form (no LAPACK: the same answer on every BLAS)."""
    dmax = 0.0
    for i in range(H.shape[0]):
        dmax = max(dmax, H[i, i])
    if H.shape[0] == 2:
        if not (H[0, 0] > rel * dmax):
            return False
        return H[1, 1] - H[0, 1] * H[1, 0] / H[0, 0] > rel * dmax
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
    """Solve bertini's subproblem (Section II.A; II.B's proximal version when proximal == 2, or
    when proximal == 1 and Q_WW is not positive definite) by the interior point method. Returns
    (a, ipm steps, used proximal); a may be inexact -- the caller tests its decrease."""
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
        return aW.copy(), steps, use_prox  # infeasible: no step (the caller takes the pair step)
    return a, steps, use_prox


@njit(cache=True, nogil=True)
def _df(QWW, GW, d):
    """f(alpha + d) - f(alpha) for d supported on W: G_W'd + 1/2 d'Q_WW d (exact for the quadratic)."""
    return GW @ d + 0.5 * (d @ (QWW @ d))


@njit(cache=True, nogil=True)
def _pair_step(QWW, GW, aW, yW, C, i, j, extra):
    """Closed-form minimiser of f along d = y_i e_i - y_j e_j inside the box (Platt 1998; bertini,
    Section III's t* = -G'd / d'Qd and t_max), for positions i in I_up, j in I_low of W with
    b = v_i - v_j > 0. `extra` adds to the curvature d'Q_WW d: 4 tau for the proximal model
    (tau ||t d||^2 = 2 tau t^2); a curvature <= 0 (non-PD Q_WW without it) is floored at
    TAU_CURV as in LIBSVM, which takes the step to the bound -- along a descent direction of
    non-positive curvature that is the minimiser on the segment.

    Returns (a, model decrease, f decrease); both decreases are < 0 when b > 0."""
    yi = yW[i]
    yj = yW[j]
    b = yj * GW[j] - yi * GW[i]  # v_i - v_j = -G'd
    curv = QWW[i, i] + QWW[j, j] - 2.0 * yi * yj * QWW[i, j]  # d'Q_WW d = K_ii + K_jj - 2 K_ij
    a_mod = curv + extra
    if not (a_mod > TAU_CURV):
        a_mod = TAU_CURV
    # Room along d: alpha_i moves by y_i t, alpha_j by -y_j t.
    room_i = C - aW[i] if yi > 0 else aW[i]
    room_j = aW[j] if yj > 0 else C - aW[j]
    t = b / a_mod
    a = aW.copy()
    s = yi * aW[i] + yj * aW[j]  # conserved: y_W' a = y_W' alpha_W
    if t >= room_i and room_i <= room_j:
        # alpha_i reaches its bound exactly; alpha_j from the conservation law
        a[i] = C if yi > 0 else 0.0
        a[j] = min(max(yj * (s - yi * a[i]), 0.0), C)
    elif t >= room_j:
        a[j] = 0.0 if yj > 0 else C
        a[i] = min(max(yi * (s - yj * a[j]), 0.0), C)
    else:
        a[i] = aW[i] + yi * t
        a[j] = min(max(yj * (s - yi * a[i]), 0.0), C)
    d = a - aW
    df = _df(QWW, GW, d)
    ts = yi * d[i]  # the step length actually taken
    dfm = -ts * b + 0.5 * ts * ts * (curv + extra)
    return a, dfm, df


@njit(cache=True, nogil=True)
def _best(v, mask, excl, k, sign, out):
    """Indices of the k largest sign * v over mask & ~excl, most violating first; a tie keeps the
    lower index (the scan is in index order and only a strictly better value moves ahead), so
    the working set does not depend on a sort's tie order. Returns how many were found."""
    n = v.shape[0]
    val = np.empty(k)
    cnt = 0
    for t in range(n):
        if not mask[t] or excl[t]:
            continue
        s = sign * v[t]
        if cnt < k:
            p = cnt
            cnt += 1
        elif s > val[k - 1]:
            p = k - 1
        else:
            continue
        while p > 0 and val[p - 1] < s:
            val[p] = val[p - 1]
            out[p] = out[p - 1]
            p -= 1
        val[p] = s
        out[p] = t
    return cnt


@njit(cache=True, nogil=True)
def _select(v, up, low, q):
    """(W, m, M): see select_working_set."""
    n = v.shape[0]
    m = -np.inf
    M = np.inf
    for t in range(n):
        if up[t] and v[t] > m:
            m = v[t]
        if low[t] and v[t] < M:
            M = v[t]
    W = np.empty(q, np.int64)
    excl = np.zeros(n, np.bool_)
    h = q // 2
    nI = _best(v, up, excl, h, 1.0, W[:h])
    for t in range(nI):
        excl[W[t]] = True
    k = q - nI
    nJ = _best(v, low, excl, k, -1.0, W[nI:])
    return W[:nI + nJ].copy(), m, M


def select_working_set(v, up, low, q):
    """q/2 indices of the largest v in I_up and q/2 of the smallest v in I_low, distinct
    (Joachims 1999; bertini, Section II.A), ties to the lower index. Returns (W, m, M) with
    m = max_{I_up} v, M = min_{I_low} v; W[0] attains m, and the first index of W in I_low
    with the smallest v attains M."""
    return _select(np.ascontiguousarray(v, dtype=np.float64), np.ascontiguousarray(up, dtype=np.bool_),
                   np.ascontiguousarray(low, dtype=np.bool_), int(q))


@njit(cache=True, nogil=True)
def _pair_in_w(vW, upW, lowW):
    """Positions (i, j) in W of the largest v over I_up and the smallest over I_low; W holds the
    global maximiser and minimiser (select_working_set), so v_i - v_j = m - M."""
    i = -1
    j = -1
    for t in range(vW.shape[0]):
        if upW[t] and (i < 0 or vW[t] > vW[i]):
            i = t
        if lowW[t] and (j < 0 or vW[t] < vW[j]):
            j = t
    return i, j


def fit_svmlight(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
                 q: int = 40, tau: float = 1.0, proximal: str = "auto", cache_size: float = 200.0,
                 sub_tol: float = 1e-10) -> Fit:
    """SVMlight decomposition (module docstring). An iteration is one q-variable subproblem;
    budget.tol is the tolerance on m(alpha) - M(alpha).

    proximal: "auto" (proximal term only when Q_WW is not positive definite, bertini,
    Section II.B), "always" or "never". warm_start: ``alpha``, projected onto the feasible set first.
    info: f_alpha0, f_alpha, m_minus_M, n_sv / n_bounded_sv / n_free_sv, b_rule, q,
    n_proximal (subproblems solved with the proximal term), ipm_iterations, n_pair_steps
    (iterations that took the closed-form pair step: every one at q = 2; at q > 2 those whose
    subproblem answer failed the decrease test), max_df (the largest change of f over the
    accepted steps, <= 0), cache counters; stop_reason when status is ``stalled``.
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
    reason = ""
    it = 0
    n_prox = 0
    ipm_its = 0
    n_pair = 0
    no_descent = 0
    max_df = -math.inf
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
        QWW = np.ascontiguousarray(QW[W])
        GW = G[W]
        yW = y[W]
        pi, pj = _pair_in_w(v[W], up[W], low[W])
        if W.shape[0] == 2:
            # The 2-variable subproblem in closed form (its proximal version: curvature + 4 tau).
            used = prox_code == 2 or (prox_code == 1 and not _is_pd(QWW, 1e-10))
            a, _, df = _pair_step(QWW, GW, aW, yW, C, pi, pj, 4.0 * tau if used else 0.0)
            n_pair += 1
        else:
            a, steps, used = _subproblem(QWW, GW, aW, yW, C, tau, prox_code, sub_tol, 100)
            ipm_its += int(steps)
            df = _df(QWW, GW, a - aW)
            # Sufficient decrease against the pair step of the same model (module docstring):
            # an exact answer passes, one the IPM left short or infeasible does not.
            ap, dfm_pair, df_pair = _pair_step(QWW, GW, aW, yW, C, pi, pj, 4.0 * tau if used else 0.0)
            ok = (a.min() >= 0.0 and a.max() <= C and abs(yW @ (a - aW)) <= 1e-12 * C * q
                  and df <= SUFFICIENT * dfm_pair)
            if not ok:
                a, df = ap, df_pair
                n_pair += 1
        d = a - aW
        G += QW @ d
        alpha[W] = a
        it += 1
        n_prox += int(used)
        max_df = max(max_df, float(df))
        no_descent = no_descent + 1 if not df < 0.0 else 0
        if recorder.due(it):
            recorder.record(it, lambda: certificates(problem, alpha, G)[:3])
        if not np.isfinite(d).all():
            status = "diverged"
            break
        if no_descent >= STALL_ITERS:
            status = "stalled"
            reason = (f"f did not decrease in {no_descent} consecutive iterations (the subproblem "
                      f"answer and the closed-form step on the most violating pair, m - M = {m - M:.3g}, "
                      f"both failed to decrease it)")
            break
        if recorder.out_of_time(budget):
            status = "timeout"
            break

    fit_time = recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    return finish_fit("svmlight", problem, alpha, G, status, it, tol, fit_time, reason=reason,
                      f_alpha0=f0, q=q, n_proximal=n_prox, ipm_iterations=ipm_its, n_pair_steps=n_pair,
                      max_df=max_df, cache_hits=cache.hits, cache_misses=cache.misses,
                      cache_columns=cache.n_slots)


register(SolverSpec(
    name="svmlight",
    family="kernel_dual",
    fit=fit_svmlight,
    params={
        "q": Param(40, "int", low=2, doc="working-set size (even): q/2 from each violating set (the sweep over "
                   "2..200 on breast_cancer and digits was fastest at 40-100)"),
        "tau": Param(1.0, "float", low=0.0, open_low=True, doc="proximal-point weight (bertini, Section II.B)"),
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
    default_tol=1e-3,   # as smo and LIBSVM: the same violation m(alpha) - M(alpha)
    version="2",
    description="SVMlight decomposition with the proximal-point modification (Joachims 1999; bertini, Section II)",
))
