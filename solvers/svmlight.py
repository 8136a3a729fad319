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
  I_low), so one closed-form step on that pair is a feasible point of the subproblem; an exact
  subproblem answer decreases f at least as much (the proximal one: its model f + tau ||.||^2).
  The interior point answer is accepted only when it decreases f by at least half that step's
  decrease (a sufficient decrease test); otherwise the subproblem is solved by pair steps
  (SMO restricted to W, `_smo_subproblem`), whose first step is that one. Every iteration
  therefore decreases f at least half as much as an SMO step on the most violating pair, which
  terminates for tol > 0 (Keerthi & Gilbert, "Convergence of a generalized SMO algorithm for
  SVM classifier design", Machine Learning 46, 2002).
- Ties in v go to the lower index, so W is a function of (alpha, G) alone.
- If f still does not decrease for STALL_ITERS consecutive iterations, the solve ends with status
  ``stalled`` and says why (it never spins to max_iter).

Without these (before version 2) the outer loop took whatever the interior point method
returned, and with qp's solver as it was then (before its KKT-solve and polish fixes) that cycled. (a) A solve that stops short (100 steps, polish refused) came back as alpha_W^k itself
(the multiplier snap puts both variables on a corner, the equality repair moves back), and as W
depends on (alpha, G) only, the same W repeated forever: breast cancer, poly, C = 10, q = 2 under
OpenBLAS's SkylakeX kernels kept the dual at 359.20 from iteration ~200 to 10^6 (SVC: 419.15).
(b) On nearly singular Q_WW that still passes the positive-definiteness test (a degree-3 poly
kernel in 2-D has a 10-dimensional feature space, so q = 10 is at its rank) the answers went
uphill (f up by as much as 1119 in one step, 13,337 of the first 30,000 iterations on blobs 5k,
C = 10) and the dual alternated between 6101.83 and 6121.00 up to the 10^6 cap.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from numba import njit

from .base import Budget, Fit, Recorder
from .kernel_dual import INTERCEPTS, KERNELS, LOSSES, certificates, dual_f, gradient, intercept, warm_alpha, finish_fit
from .kernels import QColumnCache
from .problem import Problem
from .qp import solve_box_qp
from .registry import Param, SolverError, SolverSpec, register

TAU_CURV = 1e-12  # LIBSVM's floor for a non-positive curvature along the pair direction (as smo)
STALL_ITERS = 50  # consecutive iterations without a decrease of f before `stalled`
SUFFICIENT = 0.5  # an accepted subproblem answer decreases f by >= this x the pair step's decrease
PAIR_STEPS = 50  # the pair-step subproblem solver's budget: PAIR_STEPS * q steps


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
def _reduced_gradient(GW, yW):
    """G_W minus its component along y_W. On a step with y_W'd = 0 it gives the same G_W'd, but
    rounding of d = a - alpha_W leaves y_W'd ~ q ulp(alpha) != 0, which G_W'd multiplies by
    |G_W| ~ |b| (G_i = -y_i b on free variables at the optimum): on digits 3 vs 8, degree 2,
    C = 1000 (alpha ~ 1e-7, exact steps ~ 1e-15 and decreases ~ 1e-22 near the end) that error,
    ~1e-22, made exact interior point answers fail the decrease test, and 1 subproblem in 5 at
    q = 4 fell back to pair steps. The reduced gradient is ~m - M, so the error shrinks with it."""
    return GW - yW * ((yW @ GW) / (yW @ yW))


@njit(cache=True, nogil=True)
def _df(QWW, GW, d, ptau):
    """Change of the subproblem's model for a step d on W: G_W'd + 1/2 d'(Q_WW + 2 ptau I)d; with
    ptau = 0 it is f(alpha + d) - f(alpha), exact for the quadratic."""
    return GW @ d + 0.5 * (d @ (QWW @ d)) + ptau * (d @ d)


@njit(cache=True, nogil=True)
def _smo_subproblem(QWW, GW, aW, yW, C, ptau, tol, max_steps):
    """The subproblem solved by pair steps (SMO restricted to W): each step takes the most
    violating pair (i, j) of the model 1/2 d'(Q_WW + 2 ptau I)d + G_W'd (the proximal one when
    ptau > 0) and minimises it along d = y_i e_i - y_j e_j in closed form, clipped to the box
    (Platt 1998; bertini, Section III's t* = -g'd / d'Hd and t_max). With b = v_i - v_j > 0 the
    step decreases the model by min(b^2 / (2 a), ...) > 0, so every step is a descent step of f
    (f changes by the model's change minus ptau ||d||^2). A curvature a <= 0 (a non-PD Q_WW
    without the proximal term) is floored at TAU_CURV, as in LIBSVM and smo: the step then goes
    to the bound, the minimiser on the segment along a descent direction of non-positive
    curvature. At q = 2 the first step is the exact solution (W is one pair).

    Ties go to the lower position. Stops when the violation on W is below tol or after
    max_steps. Returns (a, steps, pred): pred = sum of the steps' model changes
    -t b + 1/2 t^2 a in exact arithmetic, < 0 once a step is taken. Near the optimum the
    change computed from the new point, G_W'd + ..., is rounding noise (|G| ulp(alpha) ~ 1e-14
    against a true decrease b^2 / 2a ~ 1e-16 at b ~ 1e-8); pred is what the stall test reads."""
    q = aW.shape[0]
    a = aW.copy()
    g = GW.copy()  # the model's gradient at a: G_W + (Q_WW + 2 ptau I)(a - alpha_W)
    steps = 0
    pred = 0.0
    while steps < max_steps:
        i = -1
        j = -1
        vi = -np.inf
        vj = np.inf
        for t in range(q):
            v = -yW[t] * g[t]
            up = a[t] < C if yW[t] > 0 else a[t] > 0
            low = a[t] > 0 if yW[t] > 0 else a[t] < C
            if up and v > vi:
                vi = v
                i = t
            if low and v < vj:
                vj = v
                j = t
        if i < 0 or j < 0 or not (vi - vj >= tol):
            break
        yi = yW[i]
        yj = yW[j]
        b = vi - vj  # -g'd
        curv = QWW[i, i] + QWW[j, j] - 2.0 * yi * yj * QWW[i, j] + 4.0 * ptau  # d'Hd, ||d||^2 = 2
        if not (curv > TAU_CURV):
            curv = TAU_CURV
        # Room along d: alpha_i moves by y_i t, alpha_j by -y_j t.
        room_i = C - a[i] if yi > 0 else a[i]
        room_j = a[j] if yj > 0 else C - a[j]
        t = b / curv
        ai0 = a[i]
        aj0 = a[j]
        s = yi * ai0 + yj * aj0  # conserved: y_W' a = y_W' alpha_W
        # The variable that reaches its bound is put on it exactly, the other follows from s.
        if t >= room_i and room_i <= room_j:
            a[i] = C if yi > 0 else 0.0
            a[j] = min(max(yj * (s - yi * a[i]), 0.0), C)
        elif t >= room_j:
            a[j] = 0.0 if yj > 0 else C
            a[i] = min(max(yi * (s - yj * a[j]), 0.0), C)
        else:
            a[i] = ai0 + yi * t
            a[j] = min(max(yj * (s - yi * a[i]), 0.0), C)
        di = a[i] - ai0
        dj = a[j] - aj0
        ts = yi * di  # the step length taken (t, or the room to the bound)
        pred += -ts * b + 0.5 * ts * ts * curv
        for k in range(q):
            g[k] += QWW[k, i] * di + QWW[k, j] * dj
        g[i] += 2.0 * ptau * di
        g[j] += 2.0 * ptau * dj
        steps += 1
    return a, steps, pred


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


def fit_svmlight(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
                 q: int = 40, tau: float = 1.0, proximal: str = "auto", cache_size: float = 200.0,
                 sub_tol: float = 1e-10) -> Fit:
    """SVMlight decomposition (module docstring). An iteration is one q-variable subproblem;
    budget.tol is the tolerance on m(alpha) - M(alpha).

    proximal: "auto" (proximal term only when Q_WW is not positive definite, bertini,
    Section II.B), "always" or "never". warm_start: ``alpha``, projected onto the feasible set first.
    info: f_alpha0, f_alpha, m_minus_M, n_sv / n_bounded_sv / n_free_sv, b_rule, q,
    n_proximal (subproblems solved with the proximal term), ipm_iterations, n_pair_solves
    (subproblems solved by closed-form pair steps, `_smo_subproblem`: every one at q = 2; at
    q > 2 those whose interior point answer failed the decrease test) and pair_steps (their
    steps), max_df (the largest change of f over the accepted steps: <= 0 up to rounding),
    cache counters; stop_reason when status is ``stalled``.
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
    pair_its = 0
    no_descent = 0
    max_df = -math.inf
    # The current model for the caller's trace extras (test error at each point).
    recorder.model(lambda: SimpleNamespace(w=None, alpha=alpha, b=intercept(G, alpha, y, C)[0]))
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
        if W.shape[0] == 2:
            # The 2-variable subproblem in closed form (its proximal version: curvature + 4 tau).
            used = prox_code == 2 or (prox_code == 1 and not _is_pd(QWW, 1e-10))
            a, steps, pred = _smo_subproblem(QWW, GW, aW, yW, C, tau if used else 0.0, tol, 2)
            n_pair += 1
            pair_its += int(steps)
        else:
            a, steps, used = _subproblem(QWW, GW, aW, yW, C, tau, prox_code, sub_tol, 100)
            ipm_its += int(steps)
            ptau = tau if used else 0.0
            # Sufficient decrease against one pair step on the most violating pair of W (the
            # global one, select_working_set) for the same model (module docstring): an exact
            # answer passes, one the IPM left short, uphill or infeasible does not.
            # The reference is that step's exact-arithmetic decrease (< 0), not one computed
            # from its end point, which is rounding noise near the optimum (_smo_subproblem).
            _, _, pred1 = _smo_subproblem(QWW, GW, aW, yW, C, ptau, tol, 1)
            pred = _df(QWW, _reduced_gradient(GW, yW), a - aW, 0.0)
            ok = (a.min() >= 0.0 and a.max() <= C and abs(yW @ (a - aW)) <= 1e-12 * C * q
                  and pred <= SUFFICIENT * pred1 and pred1 < 0.0)
            if not ok:
                a, steps, pred = _smo_subproblem(QWW, GW, aW, yW, C, ptau, tol, PAIR_STEPS * q)
                n_pair += 1
                pair_its += int(steps)
        df = _df(QWW, GW, a - aW, 0.0)
        d = a - aW
        G += QW @ d
        alpha[W] = a
        it += 1
        n_prox += int(used)
        max_df = max(max_df, float(df))
        # Progress: a decrease of f (the accepted answer's, or the pair steps' exact-arithmetic
        # one) and a point that moved. Neither for STALL_ITERS iterations in a row: stalled.
        no_descent = no_descent + 1 if not (pred < 0.0 and d.any()) else 0
        if recorder.due(it):
            recorder.note(m_minus_M=m - M, n_sv=int(np.count_nonzero(alpha)), n_prox=n_prox)
            recorder.record(it, lambda: certificates(problem, alpha, G)[:3])
        if not np.isfinite(d).all():
            status = "diverged"
            break
        if no_descent >= STALL_ITERS:
            status = "stalled"
            reason = (f"f did not decrease in {no_descent} consecutive iterations: neither the "
                      f"subproblem answer nor the closed-form pair steps on W (most violating pair "
                      f"m - M = {m - M:.3g}) lowered it")
            break
        if recorder.out_of_time(budget):
            status = "timeout"
            break

    fit_time = recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    return finish_fit("svmlight", problem, alpha, G, status, it, tol, fit_time, reason=reason,
                      f_alpha0=f0, q=q, n_proximal=n_prox, ipm_iterations=ipm_its, n_pair_solves=n_pair,
                      pair_steps=pair_its, max_df=max_df, cache_hits=cache.hits, cache_misses=cache.misses,
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
    version="3",  # 3: the decrease test on the reduced gradient (_reduced_gradient)
    description="SVMlight decomposition with the proximal-point modification (Joachims 1999; bertini, Section II)",
))
