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

    min_{a}  1/2 a' Q_WW a + (G_W - Q_WW alpha_W^k)' a,   y_W' a = y_W' alpha_W^k,  0 <= a <= C.

When Q_WW is not positive definite (duplicated points, q large against the rank of K, bertini,
Section II.B), the proximal-point modification adds tau ||a - alpha_W^k||^2, i.e. Q_WW + 2 tau I
(bertini's PPD-SVMlight, Section II.B; tau = 1 by default). Then G += Q[:, W] (a - alpha_W^k)
with the columns that moved, from the shared LRU cache. Stop when m(alpha) - M(alpha) < tol.

The whole loop is compiled (`_chunk`, numba), the Python driver only owns the clock and the
trace, as smo's. The subproblem is solved by SMO restricted to W (`_smo_subproblem`: pair steps
on the most violating pair of the subproblem, warm-started at alpha_W^k, until its own violation
is below sub_tol * tol): a dense q x q problem costs O(q) a step, against the O(n q) of the
gradient update, and needs no factorisation, so a singular Q_WW is no special case. (Earlier
versions solved it by qp's interior point method from Python, a fixed interpreter cost per
subproblem that made the whole fit several times SVC's: docs/benchmarks/code-notes.md.)

Descent is guaranteed without trusting the subproblem solver:

- q = 2: W is the most violating pair (i, j) and the subproblem is solved in closed form along
  d = y_i e_i - y_j e_j (Platt 1998; the step of smo).
- q > 2: W holds the most violating pair (i*, j*) (the largest v in I_up and the smallest in
  I_low), so one closed-form step on that pair is a feasible point of the subproblem; an exact
  subproblem answer decreases f at least as much (the proximal one: its model f + tau ||.||^2).
  The answer is accepted only when it decreases f by at least half that step's decrease (a
  sufficient decrease test, `_accept`, on the reduced gradient); otherwise that one pair step is
  taken instead. Every iteration therefore decreases f at least half as much as an SMO step on
  the most violating pair, which terminates for tol > 0 (Keerthi & Gilbert, "Convergence of a
  generalized SMO algorithm for SVM classifier design", Machine Learning 46, 2002).
- Ties in v go to the lower index, so W is a function of (alpha, G) and the previous working
  sets alone.
- If f still does not decrease for STALL_ITERS consecutive iterations, the solve ends with status
  ``stalled`` and says why (it never spins to max_iter).

Without these (before version 2) the outer loop took whatever the interior point method
returned, and with qp's solver as it was then (before its KKT-solve and polish fixes) that
cycled. (a) A solve that stopped short came back as alpha_W^k itself, and as W depends on
(alpha, G) only, the same W repeated forever: breast cancer, poly, C = 10, q = 2 under OpenBLAS's
SkylakeX kernels kept the dual at 359.20 from iteration ~200 to 10^6 (SVC: 419.15). (b) On nearly
singular Q_WW (a degree-3 poly kernel in 2-D has a 10-dimensional feature space, so q = 10 is at
its rank) the answers went uphill (f up by as much as 1119 in one step on blobs 5k, C = 10) and
the dual alternated between 6101.83 and 6121.00 up to the 10^6 cap. The tests inject both
failures into the compiled loop (`_FAULT`).

SVMlight's option -n (its documentation: "set n < q to prevent zig-zagging"; the rule of its
svm_learn.c): only n_new variables enter each working set, the others stay from the previous
ones (`_carry`: each stays q // n_new working sets, so n_new (q // n_new - 1) <= q - n_new carry
over). With every variable new (n_new = q, versions 1-4) the selection zig-zagged on 5k blobs
(rbf, C = 10, q = 10: 6,514 subproblems, swinging 6,000-18,000 with rounding, against 1,407 at
n_new = 5). The kept variables are excluded from the new choice, so the most violating pair is in
W still (kept, or the first new index of its set) and the descent guarantee above holds.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from numba import njit

from .base import Budget, Fit, Recorder
from .kernel_dual import INTERCEPTS, KERNELS, LOSSES, box, certificates, dual_f, gradient, intercept, warm_alpha, finish_fit
from .kernels import QColumnCache, cache_get, kernel_value, row_dots, scattered_dot
from .problem import Problem
from .registry import Param, SolverError, SolverSpec, register

TAU_CURV = 1e-12  # LIBSVM's floor for a non-positive curvature along the pair direction (as smo)
STALL_ITERS = 50  # consecutive iterations without a decrease of f before `stalled`
SUFFICIENT = 0.5  # an accepted subproblem answer decreases f by >= this x the pair step's decrease
PAIR_STEPS = 50  # the subproblem solver's budget: PAIR_STEPS * q pair steps
CHUNK = 100  # outer iterations per call of the compiled loop (the clock is read between calls)
PD_REL = 1e-10  # Q_WW is positive definite when every Cholesky pivot^2 exceeds this x max diagonal

SHRINK_EVERY = 10  # iterations between shrinking passes (SVMlight's; LIBSVM's min(n, 1000) pair steps)

# Return codes of _chunk
_RAN, _CONVERGED, _STALLED, _DIVERGED, _RECONSTRUCT = 0, 1, 2, 3, 4
# State of _chunk (the int64 array `ctr`): iterations, consecutive ones without descent, proximal
# subproblems, pair steps inside subproblems, pair-step answers, active set size, iterations to the
# next shrinking pass, whether the one LIBSVM unshrink near the end has happened, the size of the
# previous working set, variables carried over into working sets (summed over the iterations).
_IT, _NO_DESCENT, _N_PROX, _SUB_STEPS, _N_PAIR, _N_ACTIVE, _SHRINK_IN, _UNSHRUNK, _N_PREV, _N_KEPT = range(10)
# Test hook, read by fit_svmlight and passed to the compiled loop (a monkeypatched Python function
# cannot reach a compiled one): 1 turns every subproblem answer uphill, 2 makes it alpha_W^k (no
# step), 3 also removes the pair step's move. 0 in every real run.
_FAULT = 0


@njit(cache=True, nogil=True)
def _is_pd(H, rel):
    """Q_WW positive definite in the numerical sense: Cholesky succeeds with every pivot^2 above
    rel * max diagonal. Plain loops, no LAPACK: the same answer under every BLAS kernel."""
    q = H.shape[0]
    dmax = 0.0
    for i in range(q):
        dmax = max(dmax, H[i, i])
    L = np.zeros((q, q))
    for j in range(q):
        s = H[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not (s > rel * dmax):
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, q):
            t = H[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / d
    return True


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
def _smo_subproblem(QWW, GW, aW, yW, C, ptau, tol, max_steps, second_order):
    """The subproblem solved by pair steps (SMO restricted to W): each step takes a violating
    pair (i, j) of the model 1/2 d'(Q_WW + 2 ptau I)d + G_W'd (the proximal one when ptau > 0) and
    minimises it along d = y_i e_i - y_j e_j in closed form, clipped to the box (Platt 1998;
    bertini, Section III's t* = -g'd / d'Hd and t_max). i is the most violating index of I_up; j
    the most violating of I_low (second_order False: the most violating pair) or the one of the
    largest model decrease b^2 / a (Fan, Chen & Lin 2005, WSS 2, as smo's default: on the
    near-singular Q_WW of low-dimensional data it needs a fraction of the steps). With
    b = v_i - v_j > 0 the step decreases the model by min(b^2 / (2 a), ...) > 0, so every step is
    a descent step of f (f changes by the model's change minus ptau ||d||^2). A curvature a <= 0
    (a non-PD Q_WW without the proximal term) is floored at TAU_CURV, as in LIBSVM and smo: the
    step then goes to the bound, the minimiser on the segment along a descent direction of
    non-positive curvature. At q = 2 the first step is the exact solution (W is one pair).
    C: the bound of each variable of W (C_i = C s_i under sample weights).

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
        vi = -np.inf
        vmin = np.inf
        for t in range(q):
            v = -yW[t] * g[t]
            up = a[t] < C[t] if yW[t] > 0 else a[t] > 0
            low = a[t] > 0 if yW[t] > 0 else a[t] < C[t]
            if up and v > vi:
                vi = v
                i = t
            if low and v < vmin:
                vmin = v
        if i < 0 or not (vi - vmin >= tol):
            break
        j = -1
        vj = np.inf
        best = np.inf
        for t in range(q):
            low = a[t] > 0 if yW[t] > 0 else a[t] < C[t]
            if not low:
                continue
            v = -yW[t] * g[t]
            if not second_order:
                if v < vj:
                    vj = v
                    j = t
            elif v < vi:
                bt = vi - v
                at = QWW[i, i] + QWW[t, t] - 2.0 * yW[i] * yW[t] * QWW[i, t] + 4.0 * ptau
                if not (at > TAU_CURV):
                    at = TAU_CURV
                if -bt * bt / at < best:
                    best = -bt * bt / at
                    vj = v
                    j = t
        yi = yW[i]
        yj = yW[j]
        b = vi - vj  # -g'd
        curv = QWW[i, i] + QWW[j, j] - 2.0 * yi * yj * QWW[i, j] + 4.0 * ptau  # d'Hd, ||d||^2 = 2
        if not (curv > TAU_CURV):
            curv = TAU_CURV
        # Room along d: alpha_i moves by y_i t, alpha_j by -y_j t.
        Ci = C[i]
        Cj = C[j]
        room_i = Ci - a[i] if yi > 0 else a[i]
        room_j = a[j] if yj > 0 else Cj - a[j]
        t = b / curv
        ai0 = a[i]
        aj0 = a[j]
        s = yi * ai0 + yj * aj0  # conserved: y_W' a = y_W' alpha_W
        # The variable that reaches its bound is put on it exactly, the other follows from s.
        if t >= room_i and room_i <= room_j:
            a[i] = Ci if yi > 0 else 0.0
            a[j] = min(max(yj * (s - yi * a[i]), 0.0), Cj)
        elif t >= room_j:
            a[j] = 0.0 if yj > 0 else Cj
            a[i] = min(max(yi * (s - yj * a[j]), 0.0), Ci)
        else:
            a[i] = ai0 + yi * t
            a[j] = min(max(yj * (s - yi * a[i]), 0.0), Cj)
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
def _best(v, idx, n_idx, mask, excl, k, sign, out):
    """Indices of the k largest sign * v over idx[:n_idx] in mask and not in excl, most violating
    first; idx is increasing, and a tie keeps the lower index (the scan is in index order and
    only a strictly better value moves ahead), so the working set does not depend on a sort's tie
    order. Returns how many were found."""
    val = np.empty(k)
    cnt = 0
    for r in range(n_idx):
        t = idx[r]
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
def _m_M(v, up, low, idx, n_idx):
    """m = max of v over I_up, M = min over I_low, both over idx[:n_idx]."""
    m = -np.inf
    M = np.inf
    for r in range(n_idx):
        t = idx[r]
        if up[t] and v[t] > m:
            m = v[t]
        if low[t] and v[t] < M:
            M = v[t]
    return m, M


@njit(cache=True, nogil=True)
def _select(v, up, low, q, idx, n_idx, excl, keep, n_keep, n_new):
    """(W, m, M) over the variables idx[:n_idx]: the kept variables keep[:n_keep] first, then
    min(q - n_keep, n_new) new ones (see select_working_set) from outside them. excl: all False, a
    scratch array of n (left all False), so that no iteration allocates O(n). The most violating
    pair is in W either way: kept, or the first new index of its set."""
    m, M = _m_M(v, up, low, idx, n_idx)
    nn = min(q - n_keep, n_new)
    W = np.empty(n_keep + nn, np.int64)
    W[:n_keep] = keep[:n_keep]
    for t in range(n_keep):
        excl[W[t]] = True
    nI = _best(v, idx, n_idx, up, excl, nn // 2, 1.0, W[n_keep:n_keep + nn // 2])
    for t in range(n_keep, n_keep + nI):
        excl[W[t]] = True
    nJ = _best(v, idx, n_idx, low, excl, nn - nI, -1.0, W[n_keep + nI:])
    for t in range(n_keep + nI):
        excl[W[t]] = False
    return W[:n_keep + nI + nJ].copy(), m, M


@njit(cache=True, nogil=True)
def _carry(prev, age, life, keep):
    """The variables of the previous working set prev that stay in the next (SVMlight's -n,
    svm_learn.c: a variable leaves once it has been in life = q // n working sets, so n new
    ones enter each iteration and n (life - 1) <= q - n stay; n < q against zig-zagging
    between working sets). age[t]: how many consecutive working sets t has been in (0: none, or
    shrunk). Writes them to keep in prev's order (deterministic) and returns how many."""
    n_keep = 0
    for t in prev:
        if 0 < age[t] < life:
            keep[n_keep] = t
            n_keep += 1
        else:
            age[t] = 0
    return n_keep


@njit(cache=True, nogil=True)
def _age(W, age):
    """Every variable of the working set W has been in one more (a new one: in 1)."""
    for t in W:
        age[t] += 1


@njit(cache=True, nogil=True)
def _shrink(v, up, low, m, M, active, n_active):
    """Drop from the active set the variables at a bound that cannot enter a working set while
    m and M hold (LIBSVM's be_shrunk, Chang & Lin 2011, Section 5.1; Joachims 1999, Section 4):
    one only in I_up with v below M, or only in I_low with v above m. Keeps active[:n] in
    increasing order (the tie rule) and the dropped ones after it. Returns the new size."""
    kept = 0
    dropped = np.empty(n_active, np.int64)
    nd = 0
    for r in range(n_active):
        t = active[r]
        out = (up[t] and not low[t] and v[t] < M) or (low[t] and not up[t] and v[t] > m)
        if out:
            dropped[nd] = t
            nd += 1
        else:
            active[kept] = t
            kept += 1
    active[kept:n_active] = dropped[:nd]
    return kept


def select_working_set(v, up, low, q, keep=(), n_new=None):
    """q/2 indices of the largest v in I_up and q/2 of the smallest v in I_low, distinct
    (Joachims 1999; bertini, Section II.A), ties to the lower index. With keep (variables carried
    over from the previous working set, `_carry`) and n_new: keep, then n_new/2 + n_new/2 new
    ones (at most q in all) chosen the same way among the others. Returns (W, m, M) with
    m = max_{I_up} v, M = min_{I_low} v; W's first new index attains m unless a kept one does, and
    the first new index in I_low with the smallest v attains M unless a kept one does."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    idx = np.arange(v.shape[0], dtype=np.int64)
    keep = np.asarray(keep, dtype=np.int64)
    return _select(v, np.ascontiguousarray(up, dtype=np.bool_), np.ascontiguousarray(low, dtype=np.bool_),
                   int(q), idx, idx.shape[0], np.zeros(v.shape[0], np.bool_), keep, keep.shape[0],
                   int(q if n_new is None else n_new))


@njit(cache=True, nogil=True)
def _accept(a, aW, yW, C, pred, pred1):
    """The sufficient decrease test (module docstring): the answer a is in the box, keeps
    y_W'a = y_W'alpha_W, and decreases f by pred <= SUFFICIENT x pred1 (< 0), the decrease of one
    pair step on the most violating pair. pred is read on the reduced gradient (`_reduced_gradient`)
    and pred1 in exact arithmetic, so an exact answer passes however small its step."""
    q = a.shape[0]
    dy = 0.0
    C_max = 0.0
    for t in range(q):
        if not (0.0 <= a[t] <= C[t]):
            return False
        dy += yW[t] * (a[t] - aW[t])
        C_max = max(C_max, C[t])
    return abs(dy) <= 1e-12 * C_max * q and pred1 < 0.0 and pred <= SUFFICIENT * pred1


@njit(cache=True, nogil=True)
def _inject(fault, a, aW, C):
    """The failures the decrease test exists for (`_FAULT`; tests only): 1 walks from alpha_W
    against the answer's step as far as the box allows (an uphill answer, as the interior point
    method gave on nearly singular Q_WW), 2 and 3 return alpha_W itself (no step, as it gave
    under SkylakeX)."""
    d = a - aW
    if fault != 1:
        return aW.copy()
    s = 1.0
    for k in range(d.shape[0]):
        if d[k] != 0.0:
            s = min(s, (aW[k] if d[k] > 0 else C[k] - aW[k]) / abs(d[k]))
    return aW - s * d


@njit(cache=True, nogil=True, error_model="numpy")
def _kernel_QWW(W, data, ker):
    """Q_WW = y_i y_j K(x_i, x_j) over W computed directly, q^2 kernel values: most of W does not
    move in a subproblem, and fetching its full columns from the cache (n kernel values each) made
    column computation most of the time on 5k blobs (every one of the n columns computed, against
    smo's ~1,300). Only the columns of the variables that moved are fetched, for the G update."""
    dense, Xd, vals, indices, indptr, xn, y, scratch = data
    kind, gamma, coef0, degree = ker
    w = W.shape[0]
    QWW = np.empty((w, w))
    dots = np.empty(w)
    for s in range(w):
        i = W[s]
        # x_i . x_j for j in W[s:], in feature order (kernels.row_dots, or the scattered
        # sparse dot): the same floats as the cached columns, for dense and CSR rows alike
        if dense:
            row_dots(Xd, W[s:], w - s, Xd[i], dots)
        else:
            for p in range(indptr[i], indptr[i + 1]):
                scratch[indices[p]] = vals[p]
            for t in range(s, w):
                dots[t - s] = scattered_dot(scratch, vals, indices, indptr, W[t])
            for p in range(indptr[i], indptr[i + 1]):
                scratch[indices[p]] = 0.0
        for t in range(s, w):
            j = W[t]
            # the upper triangle mirrored: symmetric
            QWW[s, t] = QWW[t, s] = y[i] * y[j] * kernel_value(kind, gamma, coef0, degree, dots[t - s], xn[i], xn[j])
    return QWW


@njit(cache=True, nogil=True)
def _set_sets(k, a, yk, C, up, low):
    """I_up / I_low membership of variable k at alpha_k = a."""
    if yk > 0:
        up[k] = a < C
        low[k] = a > 0.0
    else:
        up[k] = a > 0.0
        low[k] = a < C


@njit(cache=True, nogil=True, error_model="numpy")
def _chunk(max_iters, q, n_new, tol, sub_eps, C, tau, prox, fault, shrinking, alpha, G, G_bar, y, up, low,
           active, age, prev, ctr, last, cache, data, ker):
    """Up to max_iters SVMlight iterations (module docstring) on the active variables
    active[:ctr[_N_ACTIVE]], in place on alpha, G (exact on the active rows), G_bar (with
    shrinking), up, low and the counters ctr; last = [m - M at the last selection, the largest change of f over the accepted
    steps]. Returns _RAN, _CONVERGED (m - M < tol on every variable), _STALLED, _DIVERGED or
    _RECONSTRUCT (the driver rebuilds G on the shrunken variables and activates them all).
    age, prev[:ctr[_N_PREV]]: the working-set state of `_carry` (n_new < q)."""
    n = alpha.shape[0]
    v = np.empty(n)
    excl = np.zeros(n, np.bool_)
    keep = np.empty(q, np.int64)
    life = q // n_new
    for _ in range(max_iters):
        n_active = ctr[_N_ACTIVE]
        for r in range(n_active):
            k = active[r]
            v[k] = -y[k] * G[k]
        ctr[_SHRINK_IN] -= 1
        if shrinking and ctr[_SHRINK_IN] <= 0:
            ctr[_SHRINK_IN] = SHRINK_EVERY
            m, M = _m_M(v, up, low, active, n_active)
            if ctr[_UNSHRUNK] == 0 and m - M <= 10.0 * tol:
                # LIBSVM: once near the end, rebuild G and shrink again from everything
                ctr[_UNSHRUNK] = 1
                if n_active < n:
                    return _RECONSTRUCT
            n_kept = _shrink(v, up, low, m, M, active, n_active)
            for r in range(n_kept, n_active):  # a shrunken variable leaves the working set too
                age[active[r]] = 0
            ctr[_N_ACTIVE] = n_active = n_kept
        n_keep = _carry(prev[:ctr[_N_PREV]], age, life, keep)
        W, m, M = _select(v, up, low, q, active, n_active, excl, keep, n_keep, n_new)
        last[0] = m - M
        if m - M < tol:
            if n_active < n:  # optimal on the active set: check the shrunken ones too
                ctr[_SHRINK_IN] = SHRINK_EVERY
                return _RECONSTRUCT
            return _CONVERGED
        w = W.shape[0]
        QWW = _kernel_QWW(W, data, ker)
        aW = alpha[W]
        GW = G[W]
        yW = y[W]
        CW = C[W]
        used = prox == 2 or (prox == 1 and not _is_pd(QWW, PD_REL))
        ptau = tau if used else 0.0
        # The guaranteed step: one pair step on W's most violating pair, the global one.
        a1, _, pred1 = _smo_subproblem(QWW, GW, aW, yW, CW, ptau, tol, 1, False)
        if fault == 3:
            a1 = aW.copy()
        if w == 2:  # W is one pair: the closed form is the exact answer
            a = a1
            pred = pred1
            ctr[_N_PAIR] += 1
            ctr[_SUB_STEPS] += 1
        else:
            a, steps, _ = _smo_subproblem(QWW, GW, aW, yW, CW, ptau, sub_eps, PAIR_STEPS * w, True)
            ctr[_SUB_STEPS] += steps
            if fault != 0:
                a = _inject(fault, a, aW, CW)
            pred = _df(QWW, _reduced_gradient(GW, yW), a - aW, 0.0)
            if not _accept(a, aW, yW, CW, pred, pred1):
                a = a1
                pred = pred1
                ctr[_N_PAIR] += 1
        d = a - aW
        moved = False
        for t in range(w):
            if not math.isfinite(d[t]):
                return _DIVERGED
            moved |= d[t] != 0.0
        last[1] = max(last[1], _df(QWW, GW, d, 0.0))
        # G += Q[:, W] d on the active rows, over the columns that moved (the others cost nothing);
        # with shrinking, G_bar = sum_{alpha_j = C_j} C_j Q_j (LIBSVM's, for `_reconstruct`) takes the
        # full column of a variable that reaches or leaves C.
        for t in range(w):
            if d[t] != 0.0:
                to_C = (a[t] >= CW[t]) != (aW[t] >= CW[t])
                col = cache_get(W[t], shrinking and to_C, active, n_active, cache, data, ker)
                if shrinking and to_C:
                    sgn = CW[t] if a[t] >= CW[t] else -CW[t]
                    for k in range(n):
                        G_bar[k] += sgn * col[k]
                dt = d[t]
                if n_active == n:  # contiguous: vectorises
                    for k in range(n):
                        G[k] += col[k] * dt
                else:
                    for r in range(n_active):
                        k = active[r]
                        G[k] += col[k] * dt
            alpha[W[t]] = a[t]
            _set_sets(W[t], a[t], y[W[t]], CW[t], up, low)
        _age(W, age)
        prev[:w] = W
        ctr[_N_PREV] = w
        ctr[_N_KEPT] += n_keep
        ctr[_IT] += 1
        ctr[_N_PROX] += used
        # Progress: a decrease of f (the accepted answer's, or the pair step's exact-arithmetic
        # one) and a point that moved. Neither for STALL_ITERS iterations in a row: stalled.
        ctr[_NO_DESCENT] = 0 if (pred < 0.0 and moved) else ctr[_NO_DESCENT] + 1
        if ctr[_NO_DESCENT] >= STALL_ITERS:
            return _STALLED
    return _RAN


def _reconstruct(cache, alpha, G, G_bar, active, n_active, C):
    """G_k = G_bar_k - 1 + sum_{0 < alpha_j < C} alpha_j Q_kj on the shrunken variables
    k = active[n_active:] (their G went stale while they were out; LIBSVM's reconstruct_gradient),
    by BLAS blocks over the free support vectors only: summing over every support vector instead
    took more than half of the solve on 5k blobs."""
    rows = active[n_active:]
    if rows.size == 0:
        return G
    y = cache.y
    free = np.flatnonzero((alpha > 0) & (alpha < C))
    G[rows] = G_bar[rows] - 1.0
    if free.size:
        G[rows] += y[rows] * cache.matvec(free, alpha[free] * y[free], rows=rows)
    return G


def _unshrink(cache, alpha, G, G_bar, active, ctr, C):
    """Every variable active again, with its G rebuilt; partial cached columns become stale."""
    if ctr[_N_ACTIVE] < alpha.shape[0]:
        _reconstruct(cache, alpha, G, G_bar, active, int(ctr[_N_ACTIVE]), C)
        active[:] = np.arange(alpha.shape[0])
        ctr[_N_ACTIVE] = alpha.shape[0]
        cache.invalidate_partial()


def fit_svmlight(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
                 q: int = 40, tau: float = 1.0, proximal: str = "auto", cache_size: float = 200.0,
                 sub_tol: float = 0.1, shrinking: bool = True, n_new: int | None = None) -> Fit:
    """SVMlight decomposition (module docstring). An iteration is one q-variable subproblem;
    budget.tol is the tolerance on m(alpha) - M(alpha), sub_tol * tol the subproblem's on its own.

    proximal: "auto" (proximal term only when Q_WW is not positive definite, bertini,
    Section II.B), "always" or "never". shrinking: drop the variables at a bound that cannot enter
    a working set (`_shrink`), rebuild their G before the final check (`_reconstruct`).
    n_new: SVMlight's -n, the new variables entering each working set (2..q, n_new // 2 from
    I_up; n_new = q: every working set new, versions 1-4; None: q // 2, at least 2); a variable
    stays q // n_new iterations (`_carry`).
    warm_start: ``alpha``, projected onto the feasible set first.
    info: f_alpha0, f_alpha, m_minus_M, n_sv / n_bounded_sv / n_free_sv, b_rule, q,
    n_proximal (subproblems solved with the proximal term), sub_steps (pair steps inside the
    subproblems), n_new, n_kept (variables carried over from the previous working set, summed over
    the iterations: 0 at n_new = q), n_pair_solves (subproblems answered by the one closed-form pair step: every one
    at q = 2; at q > 2 those whose answer failed the decrease test), max_df (the largest change of
    f over the accepted steps: <= 0 up to rounding), n_reconstruct (gradient rebuilds after
    shrinking), cache counters; stop_reason when status is ``stalled``.
    """
    if q % 2:
        raise SolverError(f"svmlight.q={q!r} must be even (q/2 indices come from each violating set)")
    y = problem.y
    n = problem.n_samples
    # The bound of each variable, C_i = C s_i (all C unweighted: the same steps as a scalar C),
    # in the compiled loop; C itself, or the C_i, for the shared kernel_dual code.
    C = box(problem)
    C_i = problem.C_i
    tol = budget.tol
    max_iter = budget.iterations(1_000_000)
    n_new = max(2, q // 2) if n_new is None else n_new
    if not 2 <= n_new <= q:
        raise SolverError(f"svmlight.n_new={n_new!r} must be in [2, q={q}] (a new index from each violating set "
                          f"at least, so that W holds the most violating pair)")
    q = min(q, n)
    n_new = min(n_new, q)
    cache = QColumnCache(problem.kernel, problem.X, y, cache_size, problem.row_norms_sq)
    alpha = warm_alpha(problem, warm_start)
    if alpha.any():
        G, G_bar = gradient(cache, alpha, C)
    else:
        G, G_bar = -np.ones(n), np.zeros(n)
    f0 = dual_f(alpha, G)
    prox_code = {"never": 0, "auto": 1, "always": 2}[proximal]
    up = np.where(y > 0, alpha < C, alpha > 0).astype(np.uint8)
    low = np.where(y > 0, alpha > 0, alpha < C).astype(np.uint8)
    active = np.arange(n, dtype=np.int64)
    ctr = np.zeros(10, np.int64)
    age = np.zeros(n, np.int64)
    prev = np.empty(q, np.int64)
    ctr[_N_ACTIVE] = n
    ctr[_SHRINK_IN] = SHRINK_EVERY
    last = np.array([math.inf, -math.inf])
    n_recon = 0

    def exact_G():
        return _reconstruct(cache, alpha, G.copy(), G_bar, active, int(ctr[_N_ACTIVE]), C)

    def trace_point():
        return certificates(problem, alpha, exact_G())[:3]

    status = "max_iter"
    reason = ""
    it = 0
    # The current model for the caller's trace extras (test error at each point).
    recorder.model(lambda: SimpleNamespace(w=None, alpha=alpha, b=intercept(exact_G(), alpha, y, C)[0]))
    while it < max_iter:
        # Run the compiled loop up to the next trace point, CHUNK iterations or the budget.
        nxt = recorder.next_due()
        stop_at = it + min(CHUNK, max_iter - it)
        if nxt is not None and it < nxt < stop_at:
            stop_at = nxt
        code = _chunk(stop_at - it, q, n_new, tol, sub_tol * tol, C_i, tau, prox_code, _FAULT, shrinking, alpha, G,
                      G_bar, y, up, low, active, age, prev, ctr, last, cache.state, cache.data, cache.ker)
        steps, it = int(ctr[_IT]) - it, int(ctr[_IT])
        if code == _RECONSTRUCT:
            _unshrink(cache, alpha, G, G_bar, active, ctr, C)
            n_recon += 1
        if code == _CONVERGED:
            status = "converged"
            break
        if recorder.due(it) and steps:
            recorder.note(m_minus_M=last[0], n_sv=int(np.count_nonzero(alpha)), n_prox=int(ctr[_N_PROX]))
            recorder.record(it, trace_point)
        if code == _DIVERGED:
            status = "diverged"
            break
        if code == _STALLED:
            status = "stalled"
            reason = (f"f did not decrease in {int(ctr[_NO_DESCENT])} consecutive iterations: neither the "
                      f"subproblem answer nor the closed-form pair step on W (most violating pair "
                      f"m - M = {last[0]:.3g}) lowered it")
            break
        if recorder.out_of_time(budget):
            status = "timeout"
            break

    fit_time = recorder.seconds()
    _unshrink(cache, alpha, G, G_bar, active, ctr, C)
    recorder.close(it, trace_point)
    return finish_fit("svmlight", problem, alpha, G, status, it, tol, fit_time, reason=reason,
                      f_alpha0=f0, q=q, n_new=n_new, n_kept=int(ctr[_N_KEPT]), n_proximal=int(ctr[_N_PROX]), sub_steps=int(ctr[_SUB_STEPS]),
                      n_pair_solves=int(ctr[_N_PAIR]), max_df=float(last[1]), n_reconstruct=n_recon, cache_hits=cache.hits,
                      cache_misses=cache.misses, cache_columns=cache.n_slots)


register(SolverSpec(
    name="svmlight",
    family="kernel_dual",
    sample_weight=True,
    fit=fit_svmlight,
    params={
        "q": Param(40, "int", low=2, doc="working-set size (even): q/2 from each violating set (the sweep over "
                   "2..200 on breast_cancer and digits was fastest at 40-100)"),
        "tau": Param(1.0, "float", low=0.0, open_low=True, doc="proximal-point weight (bertini, Section II.B)"),
        "proximal": Param("auto", "str", options=("auto", "always", "never"),
                          doc="proximal term when Q_WW is not positive definite / always / never"),
        "cache_size": Param(200.0, "float", low=0.0, open_low=True, doc="kernel-column cache, MB"),
        "sub_tol": Param(0.1, "float", low=0.0, open_low=True, high=1.0,
                         doc="each subproblem is solved to a violation below sub_tol x tol"),
        "shrinking": Param(True, "bool", doc="shrinking with gradient reconstruction (Joachims 1999, Section 4)"),
        "n_new": Param(None, "int", low=2, none_ok=True, doc="SVMlight's -n: new variables per working set (2..q; "
                       "null: q/2, at least 2); each stays q // n_new iterations, against zig-zagging (q/2 "
                       "took 2-10x fewer subproblems than q on 5k blobs)"),
    },
    losses=LOSSES,
    intercepts=INTERCEPTS,
    kernels=KERNELS,
    warm_start=True,
    default_max_iter=1_000_000,
    default_tol=1e-3,   # as smo and LIBSVM: the same violation m(alpha) - M(alpha)
    version="6",  # 6: kernel values in one summation order for dense and CSR rows (kernels.py); 5: n_new = q/2 by default (SVMlight's -n); 4: compiled loop, subproblems by pair steps; 3: the decrease test on the reduced gradient
    description="SVMlight decomposition with the proximal-point modification (Joachims 1999; bertini, Section II)",
))
