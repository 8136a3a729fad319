"""The whole kernel SVM dual in one solve, by a primal-dual interior point method.

The problem (bertini, Section I.C: the dual of the hinge SVM with a free intercept; `bertini` is
N. Bertini et al., "Project #2 - Support Vector Machines", Optimization Methods for Machine
Learning, Fall 2022, listed with the other studies in README.md):

    min_alpha 1/2 alpha' Q alpha - e' alpha,   Q_ij = y_i y_j K(x_i, x_j),
    s.t. y' alpha = 0,  0 <= alpha <= C.

`_ipm_run` solves the general box-and-one-equality QP

    min 1/2 a' H a + c' a   s.t.  y' a = r,  0 <= a <= u

with Mehrotra's predictor-corrector (Nocedal & Wright, Numerical Optimization, 2nd ed.,
Section 16.6, Algorithm 16.4 specialised to bounds): multipliers z >= 0 for a >= 0, w >= 0 for
a <= u and lambda for the equality; each iteration factors H + diag(z/a + w/(u - a)) once
(Cholesky) and eliminates the one equality by a Schur complement. H only needs to be positive
semi-definite. `_polish` then fixes the active set the multipliers point to and solves the
equality-constrained QP on the free variables exactly, so that bounded variables sit exactly at
0 or u and free ones satisfy the KKT system to rounding. When that system is singular (duplicated
points, a kernel of rank below the number of free variables: linear with n >> d, a low-degree
polynomial on low-dimensional data) it has a whole affine set of solutions; `_kkt_solve` returns
the one nearest to the IPM iterate, by a rank-revealing solve in the null space of the equality,
so that the answer does not depend on the rounding of a particular BLAS kernel. The same pair
(`solve_box_qp`) solves the working-set subproblems of the low-rank path's exact finish.

bertini used CVXOPT for the whole dual; ``backend="cvxopt"`` does the same when cvxopt is installed.
Dense: memory ~4 n^2 doubles and O(n^3) time per iteration. Above AUTO_DENSE_N points
(``method="auto"``) the low-rank path (Fine & Scheinberg, "Efficient SVM training using low-rank
kernel representations", JMLR 2001) replaces Q by V V' from a pivoted incomplete Cholesky of K
(`pivoted_cholesky`), solves each Newton system by Sherman-Morrison-Woodbury in O(n r^2), and
finishes on the exact Q (`_exact_finish`): its status and certificates come from the exact
gradient, never from the factor. `_choose_path` decides and checks the memory limits.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .base import Budget, Fit, Recorder
from .kernel_dual import (INTERCEPTS, KERNELS, LOSSES, certificates, check_separable, project_feasible, warm_alpha,
                          finish_fit)
from .kernels import QColumnCache, kernel_block, kernel_diagonal
from .objectives import kkt_violation_equality
from .problem import Problem
from .registry import Param, SolverError, SolverSpec, register

# Codes of _ipm_run
_RUNNING, _CONVERGED, _FAILED, _STALLED = 0, 1, 2, 3
# No progress: both step lengths below STALL_STEP for STALL_COUNT iterations in a row. Mehrotra's
# steps are O(1) near the central path; steps this short mean the iterate is pinned against the
# box (an inconsistent Newton system, e.g. an infeasible y'a = r), and more iterations would only
# spend the budget.
STALL_STEP, STALL_COUNT = 1e-10, 3


@njit(cache=True, nogil=True)
def _cho_solve(L, b):
    """Solve L L' x = b for lower-triangular L (forward and back substitution)."""
    n = b.shape[0]
    z = b.copy()
    for i in range(n):
        s = z[i]
        for k in range(i):
            s -= L[i, k] * z[k]
        z[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = z[i]
        for k in range(i + 1, n):
            s -= L[k, i] * z[k]
        z[i] = s / L[i, i]
    return z


@njit(cache=True, nogil=True)
def _hmul(H, V, a):
    """H a, with H = V V' on the low-rank path (H is then 0 x 0): O(n r) instead of O(n^2)."""
    if H.shape[0] == 0:
        return V @ (V.T @ a)
    return H @ a


# The low-rank Newton matrix D + V V' is inverted through D^-1 (`_factor`), but D_i = z_i/a_i +
# w_i/(u_i - a_i) -> 0 on the free variables as the IPM converges, and I + V' D^-1 V would lose
# every digit (a LinAlgError, or NaN, at D ~ 1e-20). D is floored at D_FLOOR: the unit-box
# Hessian has lambda_max <= 1, so that matrix stays below 1 + 1 / D_FLOOR in condition. Where
# D < D_FLOOR the step is the Newton step of the floored matrix; the residuals the IPM tests are
# exact, so an inexact Newton matrix can slow it, never make it stop at a wrong point.
D_FLOOR = 1e-10


@njit(cache=True, nogil=True)
def _factor(H, V, D):
    """The factor of the Newton matrix H + diag(D). Dense: Cholesky of H + diag(D), with a growing
    diagonal shift if rounding makes it indefinite (H may be singular, e.g. duplicated points, and
    D -> 0 on free variables near the end). Low rank (H = V V', H passed as 0 x 0): the Cholesky
    factor of the r x r capacitance matrix I + V' D^-1 V of the Sherman-Morrison-Woodbury formula
    (Fine & Scheinberg 2001, Section 4), O(n r^2) instead of O(n^3)."""
    if H.shape[0] == 0:
        Dinv = 1.0 / np.maximum(D, D_FLOOR)
        S = (V.T * Dinv) @ V
        for k in range(S.shape[0]):
            S[k, k] += 1.0
        try:
            return np.linalg.cholesky(S), True
        except Exception:  # noqa: BLE001 -- numba raises LinAlgError; only the class is caught
            return np.zeros((0, 0)), False
    n = H.shape[0]
    hmax = 0.0
    for i in range(n):
        hmax = max(hmax, abs(H[i, i]))
    shift = 0.0
    for _ in range(12):
        M = H.copy()
        for i in range(n):
            M[i, i] += D[i] + shift
        try:
            return np.linalg.cholesky(M), True
        except Exception:  # noqa: BLE001 -- numba raises LinAlgError; only the class is caught
            shift = 1e-14 * (1.0 + hmax) if shift == 0.0 else shift * 100.0
    return np.zeros((n, n)), False


@njit(cache=True, nogil=True)
def _smw_solve(L, V, Dinv, b):
    """(diag(1/Dinv) + V V')^-1 b = Dinv b - Dinv V (I + V' Dinv V)^-1 V' Dinv b (Woodbury),
    L the Cholesky factor of I + V' Dinv V."""
    t = Dinv * b
    return t - Dinv * (V @ _cho_solve(L, V.T @ t))


@njit(cache=True, nogil=True)
def _newton_solve(L, H, V, D, b):
    """Solve (H + diag(D)) x = b with the factor from `_factor` (low rank: D floored)."""
    if H.shape[0] != 0:
        return _cho_solve(L, b)
    return _smw_solve(L, V, 1.0 / np.maximum(D, D_FLOOR), b)


@njit(cache=True, nogil=True)
def _max_step(v, dv):
    """Largest t in (0, 1] with v + t dv >= 0 (v > 0)."""
    t = 1.0
    for i in range(v.shape[0]):
        if dv[i] < 0.0:
            t = min(t, -v[i] / dv[i])
    return t


@njit(cache=True, nogil=True)
def _ipm_run(H, V, c, yv, r, u, a, z, w, lam, stuck, tol, max_steps):
    """Up to max_steps Mehrotra predictor-corrector iterations on (a, z, w, lam) in place, with
    the Hessian H dense, or H = V V' when H is 0 x 0 (the low-rank path).
    Returns (code, steps): _CONVERGED when the relative residuals and the complementarity gap
    are below tol, _FAILED if the Newton matrix could not be factored, _STALLED after
    STALL_COUNT steps in a row shorter than STALL_STEP (stuck[0] counts them across calls)."""
    n = a.shape[0]
    cmax = np.max(np.abs(c))
    for step in range(max_steps):
        s = a.copy()
        t = u - a
        Ha = _hmul(H, V, a)
        rd = Ha + c - lam[0] * yv - z + w
        rp = yv @ a - r
        comp = s @ z + t @ w
        # The tests are relative to the size of the terms at the iterate, not to 1: the unit box
        # (`_unit_box`) makes |H a| <= 1 and |c| <= 1 over the box, but the optimum can sit in a
        # tiny corner of it (degree-2 kernel on 0..16 pixels, K ~ 1e6, C = 1000: alpha* ~ 1e-7 to
        # 1e-5, c ~ 3e-13 and f* ~ 1e-19 in unit-box units). An absolute 1e-10 on the residual and
        # on the gap (s'z + t'w, the duality gap of a feasible iterate) then stopped the IPM with
        # the iterate still 1e4 times its optimum, and no face near it had a KKT point.
        fsize = 0.5 * (a @ Ha) + np.abs(c) @ a
        amax = 1.0
        for i in range(n):
            amax = max(amax, abs(a[i]))
        if (np.max(np.abs(rd)) <= tol * max(cmax, np.max(np.abs(Ha))) and abs(rp) <= tol * amax
                and comp <= tol * fsize):
            return _CONVERGED, step
        mu = comp / (2.0 * n)
        D = z / s + w / t
        L, ok = _factor(H, V, D)
        if not ok:
            return _FAILED, step
        v2 = _newton_solve(L, H, V, D, yv)
        yv2 = yv @ v2
        if not yv2 > 0.0:  # the Schur complement y' (H + D)^-1 y of a PD matrix is > 0
            return _FAILED, step
        # predictor (affine scaling, sigma = 0)
        rcl = -s * z
        rcu = -t * w
        v1 = _newton_solve(L, H, V, D, -rd + rcl / s - rcu / t)
        dlam = (-rp - yv @ v1) / yv2
        da = v1 + dlam * v2
        dz = (rcl - z * da) / s
        dw = (rcu + w * da) / t
        ap = min(_max_step(s, da), _max_step(t, -da))
        ad = min(_max_step(z, dz), _max_step(w, dw))
        st = min(ap, ad)
        mu_aff = ((s + st * da) @ (z + st * dz) + (t - st * da) @ (w + st * dw)) / (2.0 * n)
        sigma = min(1.0, (mu_aff / mu) ** 3)
        # corrector (Mehrotra's second-order term and centring)
        rcl = -s * z - da * dz + sigma * mu
        rcu = -t * w + da * dw + sigma * mu
        v1 = _newton_solve(L, H, V, D, -rd + rcl / s - rcu / t)
        dlam = (-rp - yv @ v1) / yv2
        da = v1 + dlam * v2
        dz = (rcl - z * da) / s
        dw = (rcu + w * da) / t
        # Separate primal and dual step lengths: a common step lets a badly centred pair
        # (a_i near a bound with a small multiplier) throw the iterate across the box and cycle.
        ap = min(1.0, 0.995 * min(_max_step(s, da), _max_step(t, -da)))
        ad = min(1.0, 0.995 * min(_max_step(z, dz), _max_step(w, dw)))
        a += ap * da
        z += ad * dz
        w += ad * dw
        lam[0] += ad * dlam
        # keep strictly inside the box (rounding); 1 - 2^-52 is the largest double below 1
        # (1 - 1e-16 rounds to 1, which left u - a = 0 and divided by it)
        for i in range(n):
            if a[i] <= 0.0:
                a[i] = 1e-300
            if a[i] >= u[i]:
                a[i] = u[i] * (1.0 - 2.0 ** -52)
        if max(ap, ad) < STALL_STEP:
            stuck[0] += 1
            if stuck[0] >= STALL_COUNT:
                return _STALLED, step + 1
        else:
            stuck[0] = 0
    return _RUNNING, max_steps


# Relative thresholds of the rank decisions in `_psd_solve` (the reduced Hessian has lambda_max <= 1
# on the unit-box problem). A Cholesky pivot below PIVOT_RTOL * max diag means M is numerically
# singular (lambda_min <= every pivot): its solution would carry rounding / pivot of any size along
# the null space, so the eigen-decomposition decides. Eigenvalues below EIG_RTOL * lambda_max are
# treated as zero: that leaves a residual of at most EIG_RTOL * lambda_max per unit of correction
# and amplifies rounding by at most eps / EIG_RTOL (~1e-5) along the kept ones.
PIVOT_RTOL = 1e-10
EIG_RTOL = 1e-11
# How `_psd_solve` solved: Cholesky, or the minimum-norm least-squares fallback
_HOW_CHOLESKY, _HOW_EIGEN = 0, 1


@njit(cache=True, nogil=True)
def _psd_solve(M, b):
    """Minimum-norm solution of M x = b for symmetric positive semi-definite M (least squares if
    b is not in its range). Returns (x, how, relative residual ||M x - b|| / (||M|| ||x|| + ||b||)).

    Fast path: Cholesky, accepted only if no pivot is tiny and the residual is at rounding level.
    On a singular M (duplicated points, a low-rank kernel) an LU or Cholesky solve is backward
    stable yet worthless: its residual is at rounding level while its component along the null
    space is rounding divided by a rounding-size pivot -- any size, decided by the last bits of the
    BLAS kernel (x = +-5.5e3 on a unit box under OpenBLAS SkylakeX, a LinAlgError under Haswell).
    So the fallback is the pseudo-inverse by eigen-decomposition, M = V diag(l) V', x = sum over
    l_k > EIG_RTOL l_max of v_k (v_k' b) / l_k, whose null-space component is exactly zero, plus
    one step of iterative refinement (Golub & Van Loan, Matrix Computations, "iterative
    improvement")."""
    m = b.shape[0]
    dmax = 0.0
    mnorm = 0.0
    for i in range(m):
        dmax = max(dmax, M[i, i])
        s = 0.0
        for k in range(m):
            s += abs(M[i, k])
        mnorm = max(mnorm, s)
    bnorm = np.max(np.abs(b)) if m > 0 else 0.0
    if m == 0 or dmax <= 0.0:
        return np.zeros(m), _HOW_EIGEN, (1.0 if bnorm > 0.0 else 0.0)
    ok = True
    try:
        L = np.linalg.cholesky(M)
    except Exception:  # noqa: BLE001 -- numba raises LinAlgError; only the class is caught
        ok = False
        L = np.zeros((1, 1))
    if ok:
        for i in range(m):
            if L[i, i] * L[i, i] < PIVOT_RTOL * dmax:
                ok = False
                break
    if ok:
        x = _cho_solve(L, b)
        x += _cho_solve(L, b - M @ x)
        res = np.max(np.abs(M @ x - b)) / (mnorm * np.max(np.abs(x)) + bnorm + 1e-300)
        if np.all(np.isfinite(x)) and res <= 1e-12:
            return x, _HOW_CHOLESKY, res
    lam, V = np.linalg.eigh(M)
    lmax = np.max(lam)
    inv = np.zeros(m)
    for k in range(m):
        if lam[k] > EIG_RTOL * lmax:
            inv[k] = 1.0 / lam[k]
    x = V @ (inv * (V.T @ b))
    # refinement on the kept eigenvectors only, so that no null-space component comes back
    x += V @ (inv * (V.T @ (b - M @ x)))
    res = np.max(np.abs(M @ x - b)) / (mnorm * np.max(np.abs(x)) + bnorm + 1e-300)
    return x, _HOW_EIGEN, res


@njit(cache=True, nogil=True)
def _bound_only_mu(g, yv, state):
    """The multiplier of y'a = r on a face with no free variable: no stationarity row fixes it,
    only the signs of the bound multipliers, g_i + mu y_i >= 0 at a_i = 0 and <= 0 at a_i = u_i,
    which bound it to an interval [lo, hi] (the bound-only case of the intercept, b = -mu:
    Chang & Lin, LIBSVM, Section 4.1.5). Returns its midpoint, as LIBSVM's b; when lo > hi no mu
    fits, the face is not optimal and the midpoint leaves the violators for the polish to free.
    (mu = 0 here, as before, freed every variable whose g_i alone had the wrong sign: on an
    all-at-bound optimum, digits 3 vs 8 at rbf C=0.05, the polish then wandered and was refused.)"""
    lo = -np.inf
    hi = np.inf
    for i in range(g.shape[0]):
        if yv[i] == 0.0:
            continue
        m = -g[i] / yv[i]
        if (state[i] == 1) == (yv[i] > 0.0):
            lo = max(lo, m)
        else:
            hi = min(hi, m)
    if lo == -np.inf and hi == np.inf:
        return 0.0
    if lo == -np.inf:
        return hi
    if hi == np.inf:
        return lo
    return 0.5 * (lo + hi)


@njit(cache=True, nogil=True)
def _kkt_solve(H, c, yv, r, u, state, a):
    """For a guessed active set (state 1: a_i = 0, 2: a_i = u_i, 0: free F) the point of
    {H_FF x_F + mu y_F = -c_F - H_FU u_U, y_F' x_F = r - y_U' u_U} nearest to a (the IPM
    iterate): the KKT system of the QP on the face (bertini, Section I.C; Nocedal & Wright,
    Section 16.1). Returns (x, mu, ok, residual, how, flat); residual is the relative stationarity
    and feasibility residual of the returned point, how the `_psd_solve` path, and flat (zero if
    the system is consistent) a descent direction of the face along which its objective is linear.

    H_FF is singular whenever two free points coincide or the kernel has rank < |F|; the system is
    then consistent with a whole affine set of solutions, and only the one nearest to a (which is
    inside the box) is worth polishing. So solve for the correction d = x_F - a_F in the null
    space of the equality (Nocedal & Wright, Section 16.2): with the Householder reflector P
    (P y_F = -+||y_F|| e_1), Z = P[:, 1:] spans {y_F' d = 0}, d = d_p + Z dz with
    d_p = y_F rp / ||y_F||^2, and the reduced Hessian Z' H_FF Z is positive semi-definite:
    `_psd_solve` gives its minimum-norm dz, hence the minimum-norm d. mu is then the least
    squares multiplier of the stationarity rows."""
    n = c.shape[0]
    out = a.copy()
    nF = 0
    for i in range(n):
        if state[i] == 1:
            out[i] = 0.0
        elif state[i] == 2:
            out[i] = u[i]
        else:
            out[i] = min(max(out[i], 0.0), u[i])
            nF += 1
    if nF == 0:
        res = abs(yv @ out - r) / (np.max(np.abs(yv)) * np.sum(out) + abs(r) + 1e-300)
        return out, _bound_only_mu(H @ out + c, yv, state), res <= 1e-12, res, _HOW_CHOLESKY, np.zeros(n)
    F = np.empty(nF, np.int64)
    k = 0
    for i in range(n):
        if state[i] == 0:
            F[k] = i
            k += 1
    g = H @ out + c
    HFF = np.empty((nF, nF))
    gF = np.empty(nF)
    yF = np.empty(nF)
    for p in range(nF):
        gF[p] = g[F[p]]
        yF[p] = yv[F[p]]
        for q in range(nF):
            HFF[p, q] = H[F[p], F[q]]
    ny2 = yF @ yF
    rp = r - yv @ out
    how = _HOW_CHOLESKY
    fl = np.zeros(nF)
    if ny2 == 0.0:  # no equality on the face (y_F = 0 only in svmlight's general use)
        d, how, _ = _psd_solve(HFF, -gF)
        fl = -gF - HFF @ d
    else:
        d = yF * (rp / ny2)
        if nF > 1:
            v = yF.copy()
            v[0] += math.copysign(math.sqrt(ny2), yF[0])
            beta = 2.0 / (v @ v)
            hv = HFF @ v
            vhv = v @ hv
            # P H P = H - beta v hv' - beta hv v' + beta^2 (v' H v) v v'   (P = I - beta v v')
            B = HFF.copy()
            for p in range(nF):
                for q in range(nF):
                    B[p, q] += -beta * (v[p] * hv[q] + hv[p] * v[q]) + beta * beta * vhv * v[p] * v[q]
            t = gF + HFF @ d
            Pt = t - beta * (v @ t) * v
            Mr = B[1:, 1:].copy()
            br = -Pt[1:].copy()
            dz, how, _ = _psd_solve(Mr, br)
            e = np.zeros(nF)
            e[1:] = dz
            d += e - beta * (v @ e) * v
            # What the solve left of the reduced gradient lies along the (numerical) null space
            # of Z' H_FF Z, where the objective on the face is linear: -Z'g there is a descent
            # direction of zero curvature (zero if the system was consistent).
            e[1:] = br - Mr @ dz
            e[0] = 0.0
            fl = e - beta * (v @ e) * v
    gd = gF + HFF @ d
    mu = -(yF @ gd) / ny2 if ny2 > 0.0 else 0.0
    flat = np.zeros(n)
    for p in range(nF):
        out[F[p]] += d[p]
        flat[F[p]] = fl[p]
    # residuals relative to the size of the terms they sum: |c| + |H| |x|_1 + |mu y| for
    # stationarity, |y| |x|_1 + |r| for the equality
    stat = np.max(np.abs(gd + mu * yF))
    ymax = np.max(np.abs(yv))
    x1 = np.sum(np.abs(out))
    res = max(stat / (np.max(np.abs(c)) + np.max(np.abs(H)) * x1 + abs(mu) * ymax + 1e-300),
              abs(yv @ out - r) / (ymax * x1 + abs(r) + 1e-300))
    return out, mu, True, res, how, flat


@njit(cache=True, nogil=True)
def _ratio(x, p, state, u, tmax):
    """Largest t <= tmax with 0 <= x + t p <= u on the free variables (state 0)."""
    t = tmax
    for i in range(x.shape[0]):
        if state[i] == 0:
            if p[i] < 0.0:
                t = min(t, max(x[i], 0.0) / -p[i])
            elif p[i] > 0.0:
                t = min(t, max(u[i] - x[i], 0.0) / p[i])
    return t


@njit(cache=True, nogil=True)
def _step_to(x, p, t, state, u):
    """x += t p on the free variables; those the step takes to a bound (to rounding) join it."""
    for i in range(x.shape[0]):
        if state[i] == 0 and p[i] != 0.0:
            x[i] += t * p[i]
            if x[i] <= 1e-14 * u[i]:
                x[i] = 0.0
                state[i] = 1
            elif x[i] >= u[i] * (1.0 - 1e-14):
                x[i] = u[i]
                state[i] = 2


POLISH_ITERS = 100  # active-set changes before the polish gives up (one or more per iteration)


@njit(cache=True, nogil=True)
def _place_residue(out, yv, u, free, res):
    """Move the equality's last rounding residue res = y'a - r onto the free variable with the
    most room to both of its bounds, so y'a = r holds to the last bit without leaving the box."""
    best = -1
    room = -1.0
    for i in range(out.shape[0]):
        if free[i] and yv[i] != 0.0:
            v = out[i] - res / yv[i]
            if 0.0 <= v <= u[i] and min(v, u[i] - v) > room:
                room = min(v, u[i] - v)
                best = i
    if best >= 0:
        out[best] -= res / yv[best]


@njit(cache=True, nogil=True)
def _polish(H, c, yv, r, u, a, z, w, gtol):
    """Exact solution on an active set by a primal active-set method (Nocedal & Wright,
    Algorithm 16.3) started at the IPM iterate: the face the multipliers indicate (a_i = 0 where
    z_i > a_i, a_i = u_i where w_i > u_i - a_i) with the free variables projected onto y'a = r
    (`_snap_multipliers`), a feasible point. Each iteration solves the equality-constrained QP on
    the free set for the point nearest the current one (`_kkt_solve`) and moves towards it as
    far as the box allows, fixing the variables that block; where the face's system is
    inconsistent (singular H_FF) it moves along the direction where the face's objective is
    linear, which a bound must block. At the face's solution, bound variables whose multiplier
    has the wrong sign are freed. Every step keeps the point feasible and does not increase the
    objective, so a wrong guess is corrected instead of jumped across (moving every free
    variable that left the box to its bound, as before, made the active set wander on
    ill-conditioned faces). Accepted only if the returned point itself is feasible to rounding and
    satisfies the KKT conditions within gtol (bertini, Section I.C: y'a = r, 0 <= a <= u; g_i = 0
    on free variables, g_i >= 0 at 0, g_i <= 0 at u, g = H a + c + mu y). Returns (a, accepted);
    on refusal a is returned unchanged."""
    n = a.shape[0]
    x = _snap_multipliers(a, z, w, yv, r, u)
    if abs(yv @ x - r) > 1e-12 * (1.0 + np.sum(np.abs(yv) * u)):
        return a, False
    state = np.zeros(n, np.int8)
    for i in range(n):
        if x[i] <= 0.0:
            x[i] = 0.0
            state[i] = 1
        elif x[i] >= u[i]:
            x[i] = u[i]
            state[i] = 2
    for _ in range(POLISH_ITERS):
        out, mu, ok, _res, _how, flat = _kkt_solve(H, c, yv, r, u, state, x)
        if not ok:
            return a, False
        p = out - x
        t = _ratio(x, p, state, u, 1.0)
        if t < 1.0:
            _step_to(x, p, t, state, u)
            continue
        for i in range(n):
            if state[i] == 0:
                x[i] = out[i]
        g = H @ x + c + mu * yv
        gmax = 0.0
        for i in range(n):
            if state[i] == 0:
                gmax = max(gmax, abs(g[i]))
        if gmax > gtol:
            # inconsistent face: descend along flat (g'flat = -|flat|^2 < 0 in the reduced space)
            # to the first bound, or to the minimum along it if curvature (rounding) is positive
            fHf = flat @ (H @ flat)
            gf = g @ flat
            if not gf < 0.0:
                return a, False
            tmax = -gf / fHf if fHf > 0.0 else np.inf
            t = _ratio(x, flat, state, u, tmax)
            if not t < np.inf or t <= 0.0:
                return a, False
            _step_to(x, flat, t, state, u)
            continue
        moved = False
        for i in range(n):
            if (state[i] == 1 and g[i] < -gtol) or (state[i] == 2 and g[i] > gtol):
                state[i] = 0
                moved = True
        if moved:
            continue
        out = x.copy()
        for i in range(n):
            out[i] = min(max(out[i], 0.0), u[i])
        # The solve and the clipping moved y'a by rounding: put the residual back on the free
        # variable with the most room, so that the equality holds to rounding.
        res = yv @ out - r
        if res != 0.0:
            _place_residue(out, yv, u, state == 0, res)
        # Acceptance on the point returned, not on the linear solve: feasible to rounding and
        # KKT within gtol.
        ysum = 0.0
        for i in range(n):
            ysum += abs(yv[i]) * u[i]
        if abs(yv @ out - r) > 1e-12 * (1.0 + ysum):
            return a, False
        g = H @ out + c + mu * yv
        for i in range(n):
            if out[i] < 0.0 or out[i] > u[i]:
                return a, False
            if (state[i] == 0 and abs(g[i]) > gtol) or (state[i] == 1 and g[i] < -gtol) \
                    or (state[i] == 2 and g[i] > gtol):
                return a, False
        return out, True
    return a, False


@njit(cache=True, nogil=True)
def _unit_box(H, c, yv, u):
    """The problem in x = a / u (box [0, 1]) with the objective divided by its gradient size
    over the box: min 1/2 x' Ht x + ct' x, yt' x = r. Then z = w = 1 and x = 1/2 start well
    centred; unscaled, Mehrotra's heuristic can throw the iterate across a box that is long
    against the gradient and cycle."""
    n = c.shape[0]
    Ht = np.empty((n, n))
    ct = np.empty(n)
    sc = 1e-300
    for i in range(n):
        g = abs(c[i] * u[i])
        for k in range(n):
            Ht[i, k] = H[i, k] * u[i] * u[k]
            g += abs(Ht[i, k])
        sc = max(sc, g)
    for i in range(n):
        ct[i] = c[i] * u[i] / sc
        for k in range(n):
            Ht[i, k] /= sc
    return Ht, ct, yv * u, sc


MU0 = 0.1  # initial complementarity of the unit-box problem


@njit(cache=True, nogil=True)
def _centred_multipliers(x):
    """z, w with x_i z_i = (1 - x_i) w_i = MU0: a start on the central path's neighbourhood
    whatever x is (a warm start near a bound), which Mehrotra's heuristic needs not to cycle."""
    return MU0 / x, MU0 / (1.0 - x)


@njit(cache=True, nogil=True)
def solve_box_qp(H, c, yv, r, u, a0, tol, max_steps):
    """min 1/2 a'Ha + c'a s.t. y'a = r, 0 <= a <= u from a0 (pushed inside the box): IPM on the
    unit-box form, then polish. Returns (a, ipm iterations, code, polished)."""
    n = c.shape[0]
    Ht, ct, yt, sc = _unit_box(H, c, yv, u)
    one = np.ones(n)
    x = np.empty(n)
    for i in range(n):
        x[i] = min(max(a0[i] / u[i], 0.01), 0.99)
    z, w = _centred_multipliers(x)
    lam = np.zeros(1)
    code, steps = _ipm_run(Ht, np.zeros((n, 0)), ct, yt, r, one, x, z, w, lam, np.zeros(1, np.int64), tol,
                           max_steps)
    out, ok = _polish(Ht, ct, yt, r, one, x, z, w, 1e-9)
    if not ok:
        out = _snap_multipliers(x, z, w, yt, r, one)
    return out * u, steps, code, ok


@njit(cache=True, nogil=True)
def _proj_h(theta, x0, free, yv, r, u):
    """y'x(theta) - r for `_project_free`."""
    s = 0.0
    for i in range(x0.shape[0]):
        if free[i]:
            s += yv[i] * min(max(x0[i] - theta * yv[i], 0.0), u[i])
        else:
            s += yv[i] * x0[i]
    return s - r


@njit(cache=True, nogil=True)
def _project_free(out, free, yv, r, u):
    """In place: the Euclidean projection of out[free] onto {y_F' x_F = r - y_B' out_B,
    0 <= x_F <= u_F}, the others fixed. Its minimiser is x_i(theta) = clip(out_i - theta y_i, 0, u_i)
    (KKT of the projection) for the theta with y'x(theta) = r; y'x(theta) is non-increasing in
    theta, so bisection finds it, for any y (|y_i| = 1 or, on the unit box, y_i u_i). Returns False
    if no theta reaches r (the free variables cannot restore the equality)."""
    n = out.shape[0]
    x0 = out.copy()
    T = 0.0
    for i in range(n):
        if free[i] and yv[i] != 0.0:
            T = max(T, u[i] / abs(yv[i]))
    if T == 0.0:
        return abs(yv @ out - r) == 0.0

    # at theta = +-T every free variable is pushed to the bound of the sign of its y_i
    lo, hi = -T, T
    if _proj_h(lo, x0, free, yv, r, u) < 0.0 or _proj_h(hi, x0, free, yv, r, u) > 0.0:
        return False
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _proj_h(mid, x0, free, yv, r, u) > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-16 * T:
            break
    theta = 0.5 * (lo + hi)
    for i in range(n):
        if free[i]:
            out[i] = min(max(x0[i] - theta * yv[i], 0.0), u[i])
    # the bisection's last rounding residue on the free variable with the most room
    _place_residue(out, yv, u, free, yv @ out - r)
    return True


@njit(cache=True, nogil=True)
def _snap_multipliers(a, z, w, yv, r, u):
    """Fallback when polishing is refused: put a_i on the bound its multiplier points to
    (z_i > a_i: 0; w_i > u_i - a_i: u_i), then restore y'a = r by the Euclidean projection of
    the free variables (`_project_free`; all of them if the free ones cannot). Correct for any
    yv: the earlier step a_F -= res y_F / |F| was the projection only for |y_i| = 1, and with the
    unit-box yv = y C it overshot C^2-fold (100-fold at C = 10, clipping every alpha to 0)."""
    n = a.shape[0]
    out = np.empty(n)
    free = np.ones(n, np.bool_)
    for i in range(n):
        out[i] = min(max(a[i], 0.0), u[i])
        if z[i] > a[i]:
            out[i] = 0.0
            free[i] = False
        elif w[i] > u[i] - a[i]:
            out[i] = u[i]
            free[i] = False
    if yv @ out - r != 0.0 and not _project_free(out, free, yv, r, u):
        free[:] = True
        _project_free(out, free, yv, r, u)
    return out


@njit(cache=True, nogil=True)
def _objective_scale(H, c, u):
    """max(|c|, |H| u): the size of the gradient over the box."""
    sc = 1e-300
    n = c.shape[0]
    for i in range(n):
        g = abs(c[i])
        for k in range(n):
            g += abs(H[i, k]) * u[k]
        sc = max(sc, g)
    return sc


# ---------------------------------------------------------------------------- low-rank path
def pivoted_cholesky(kernel, X, x_norms, tol: float, max_rank: int):
    """K ~ G G' (G n x r) by the pivoted incomplete Cholesky factorisation (Fine & Scheinberg,
    "Efficient SVM training using low-rank kernel representations", JMLR 2001, Section 3): each
    step pivots on the point with the largest residual diagonal d_j = K_jj - ||G_j||^2, evaluates
    that one kernel column, and stops when the residual trace sum(d) is at most tol * trace(K) or
    at max_rank columns. The residual K - G G' is positive semi-definite, so its trace bounds its
    largest eigenvalue and every |residual entry|. O(n r^2) time, n r kernel evaluations.
    Returns (G, C-contiguous n x r, and the relative residual trace sum(d) / trace(K))."""
    n = X.shape[0]
    d = kernel_diagonal(kernel, x_norms)
    trace = float(d.sum())
    cap = min(int(max_rank), n)
    Gt = np.empty((min(cap, 64), n))  # rows are columns of G: each pivot's update is one gemv
    k = 0
    while k < cap and d.sum() > tol * trace:
        j = int(np.argmax(d))
        if k == Gt.shape[0]:
            Gt = np.vstack([Gt, np.empty((min(cap, 2 * k) - k, n))])
        col = kernel_block(kernel, X[j:j + 1], X, x_norms[j:j + 1], x_norms)[0]
        Gt[k] = (col - Gt[:k, j] @ Gt[:k]) / math.sqrt(d[j])
        d -= Gt[k] * Gt[k]
        d[j] = 0.0
        np.maximum(d, 0.0, out=d)  # rounding below zero on points the factor already spans
        k += 1
    return np.ascontiguousarray(Gt[:k].T), (float(d.sum()) / trace if trace > 0.0 else 0.0)


def _unit_box_lowrank(V, c, yv, u):
    """`_unit_box` for H = V V': the scaled factor Vt (Ht = Vt Vt') with the gradient size over
    the box bounded by |c_i| u_i + u_i (|V| |V|' u)_i >= the dense row sums, in O(n r)."""
    A = np.abs(V)
    sc = max(float(np.max(np.abs(c) * u + u * (A @ (A.T @ u)))), 1e-300)
    return np.ascontiguousarray(V * (u / math.sqrt(sc))[:, None]), c * u / sc, yv * u, sc


# The exact finish (`_exact_finish`): a chunking decomposition on the exact Q started from the
# low-rank optimum. Each round solves the exact QP on a working set W (the free variables and the
# KKT violators, at most MAX_WS) with the others fixed and updates G with the kernel columns of
# the variables that moved; it stops when m - M <= tol on the exact gradient.
FINISH_ROUNDS = 50
MAX_WS = 1000  # the dense IPM fallback of a round costs O(MAX_WS^3) per iteration
# A start with more free variables than this goes to the IPM at once: the polish from it would
# spend up to POLISH_ITERS eigen-decompositions, O(free^3) each, before giving up.
FACE_POLISH_FREE = 200
FINISH_IPM_TOL = 1e-10  # that fallback's tolerance: the polish after it needs a converged iterate
FINISH_CACHE_MB = 32.0
AUTO_DENSE_N = 1000  # method="auto": below this the dense IPM takes well under a second
AUTO_RANK_FRACTION = 8  # ... and above it, the low-rank path if rank <= n / 8 suffices


def _exact_gradient(cache, alpha):
    """G = Q alpha - e on the exact kernel, by blocks over the support vectors."""
    sv = np.flatnonzero(alpha > 0)
    return -1.0 + cache.y * cache.matvec(sv, alpha[sv] * cache.y[sv])


def _finish_set(G, alpha, y, C):
    """The working set of one finish round: every free variable, then the bound ones violating
    the KKT conditions at the free variables' b (-y_i G_i <= b on R, >= b on S; `objectives.
    kkt_violation_equality`), largest violation first up to MAX_WS, and always the maximal
    violating pair, so each round lowers f while m > M (Keerthi et al. 2001)."""
    v = -y * G
    up = ((alpha < C) & (y > 0)) | ((alpha > 0) & (y < 0))
    lo = ((alpha < C) & (y < 0)) | ((alpha > 0) & (y > 0))
    free = up & lo
    i_up = np.flatnonzero(up)[np.argmax(v[up])]
    i_lo = np.flatnonzero(lo)[np.argmin(v[lo])]
    b = float(v[free].mean()) if free.any() else 0.5 * (v[i_up] + v[i_lo])
    viol = np.where(free, -np.inf, np.where(up, v - b, b - v))
    cand = np.flatnonzero(viol > 0.0)
    cand = cand[np.argsort(-viol[cand], kind="stable")[:max(MAX_WS - int(free.sum()), 0)]]
    return np.unique(np.concatenate([np.flatnonzero(free), cand, [i_up, i_lo]]))


def _solve_face(H, c, yv, C, a, tol):
    """The exact subproblem min 1/2 a'Ha + c'a, y'a = y'a0, 0 <= a <= C from the feasible a0:
    the active-set polish from a0 itself (its bound variables whose gradient has the wrong sign
    are freed), then, if the polish is refused or a0 has more than FACE_POLISH_FREE free
    variables, the interior point (`solve_box_qp`). The polish's gradient tolerance is the
    finish's target in unit-box units (g_unit = g C / sc), not below rounding. Returns the new a,
    or a0 if nothing lowered the objective."""
    n = a.shape[0]
    u = np.full(n, C)
    r = float(yv @ a)
    Ht, ct, yt, sc = _unit_box(H, c, yv, u)
    x = a / C
    gtol = max(min(1e-9, 0.25 * tol * C / sc), 1e-14)
    if np.count_nonzero((x > 0.0) & (x < 1.0)) <= FACE_POLISH_FREE:
        out, ok = _polish(Ht, ct, yt, r, np.ones(n), x, (x <= 0.0) * 1.0, (x >= 1.0) * 1.0, gtol)
        if ok:
            return out * C
    out = solve_box_qp(H, c, yv, r, u, a, FINISH_IPM_TOL, 200)[0]
    return out if 0.5 * out @ (H @ out) + c @ out < 0.5 * a @ (H @ a) + c @ a else a


def _exact_finish(cache, alpha, G, C, tol):
    """Rounds of `_finish_set` + `_solve_face` on the exact Q until m - M <= tol, in place on
    (alpha, G). Returns (rounds, reason): reason is "" when certified, else why it stopped."""
    y = cache.y
    for rnd in range(FINISH_ROUNDS):
        # one round always: the exact solve on the free set is what makes qp exact to rounding
        # (the reference the other kernel solvers are checked against), not merely within tol
        if rnd > 0 and kkt_violation_equality(G, alpha, y, C) <= tol:
            return rnd, ""
        W = _finish_set(G, alpha, y, C)
        H = cache.block(W, W)
        aW = alpha[W]
        new = _solve_face(H, G[W] - H @ aW, y[W], C, aW, tol)
        d = new - aW
        moved = np.flatnonzero(d)
        if moved.size == 0:
            if kkt_violation_equality(G, alpha, y, C) <= tol:
                return rnd + 1, ""
            return rnd + 1, (f"the exact finish made no progress on a working set of {W.size} "
                             f"variables")
        G += y * cache.matvec(W[moved], d[moved] * y[W[moved]])
        alpha[W] = new
    if kkt_violation_equality(G, alpha, y, C) <= tol:
        return FINISH_ROUNDS, ""
    return FINISH_ROUNDS, f"the exact finish reached its cap of {FINISH_ROUNDS} rounds"


# ---------------------------------------------------------------------------- driver
def dense_limit(max_memory_mb: float) -> int:
    """Largest n whose dense IPM fits: Q, its unit-box scaling, the Newton matrix and its
    Cholesky factor, 4 n^2 doubles."""
    return int(math.isqrt(int(max_memory_mb * 2**20 / 32)))


def lowrank_limit(max_memory_mb: float, rank: int) -> int:
    """Largest n whose low-rank path fits: the factor, its unit-box copy and the IPM's r x n
    product (3 n r doubles), besides the finish's column cache and its dense working set
    (3 MAX_WS^2 doubles)."""
    fixed = FINISH_CACHE_MB * 2**20 + 24 * MAX_WS**2
    return max(int((max_memory_mb * 2**20 - fixed) // (24 * max(rank, 1))), 0)


def _snap(a, u, y, r):
    """Fallback when polishing is refused: the nearest feasible point of the IPM iterate (u: each
    variable's bound)."""
    a = np.where(a < 1e-10 * u, 0.0, np.where(a > u * (1 - 1e-10), u, a))
    return project_feasible(a, y, u)


def _cvxopt_solve(Q, y, u, tol, max_iter):
    try:
        import cvxopt
    except ImportError:
        raise SolverError("qp.backend='cvxopt' needs the cvxopt package (pip install cvxopt); "
                          "backend='ipm' needs nothing extra") from None
    n = y.shape[0]
    P = cvxopt.matrix(Q)
    q = cvxopt.matrix(-np.ones(n))
    G = cvxopt.matrix(np.vstack([-np.eye(n), np.eye(n)]))
    h = cvxopt.matrix(np.hstack([np.zeros(n), u]))
    A = cvxopt.matrix(y[None, :].copy())
    b = cvxopt.matrix(0.0)
    opts = {"show_progress": False, "abstol": tol, "reltol": tol, "feastol": tol, "maxiters": max_iter}
    sol = cvxopt.solvers.qp(P, q, G, h, A, b, options=opts)
    a = np.array(sol["x"]).ravel()
    zz = np.array(sol["z"]).ravel()
    return a, zz[:n].copy(), zz[n:].copy(), int(sol["iterations"]), sol["status"] == "optimal"


def _choose_path(problem: Problem, method, backend, lowrank_tol, max_rank, max_memory_mb):
    """(V, info): V the low-rank factor of Q (V V' ~ Q, V = diag(y) G) or None for the dense
    path, info what decided. method="auto": dense up to AUTO_DENSE_N points; above, the pivoted
    Cholesky with at most n / AUTO_RANK_FRACTION columns (the low-rank IPM's O(n r^2) per
    iteration then costs at most 3 / 64 of the dense O(n^3 / 3)), and dense if that rank does not
    reach lowrank_tol and the dense matrices fit. Memory limits are checked before allocating."""
    n = problem.n_samples
    limit = dense_limit(max_memory_mb)
    dense_msg = (f"qp builds the dense {n} x {n} dual: about {32 * n * n / 2**20:.0f} MB, over "
                 f"qp.max_memory_mb={max_memory_mb:g} (n <= {limit})")
    if backend == "cvxopt" and method == "lowrank":
        raise SolverError("qp.method='lowrank' needs backend='ipm' (cvxopt solves the dense dual)")
    if backend == "cvxopt" or method == "dense" or (method == "auto" and n <= AUTO_DENSE_N):
        if n > limit:
            raise SolverError(f"{dense_msg}; use method='lowrank', or solver='smo' or 'svmlight', "
                              f"which work from a kernel-column cache")
        return None, {}
    cap = min(max_rank, n) if method == "lowrank" or n > limit else min(max_rank, max(n // AUTO_RANK_FRACTION, 1))
    lr_limit = lowrank_limit(max_memory_mb, cap)
    if n > lr_limit:
        raise SolverError(f"{dense_msg}, and its low-rank path (rank <= qp.max_rank={cap}) needs n <= "
                          f"{lr_limit}; use solver='smo' or 'svmlight', which work from a kernel-column cache")
    G, resid = pivoted_cholesky(problem.kernel, problem.X, problem.row_norms_sq, lowrank_tol, cap)
    info = {"lowrank_rank": G.shape[1], "lowrank_residual": resid}
    if method == "auto" and resid > lowrank_tol and n <= limit:
        info["method_reason"] = (f"rank {cap} leaves a residual trace {resid:.1e} > lowrank_tol: "
                                 f"the dense path")
        return None, info
    if G.shape[1] == 0:  # K = 0: a zero column keeps the algebra well defined
        G = np.zeros((n, 1))
    return problem.y[:, None] * G, info


def fit_qp(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
           backend: str = "ipm", ipm_tol: float = 1e-10, max_memory_mb: float = 2048.0,
           method: str = "auto", lowrank_tol: float = 1e-6, max_rank: int = 1000) -> Fit:
    """The whole dual in one solve (module docstring): dense, or through a low-rank factor of the
    kernel with an exact finish (`_choose_path`). Iterations are IPM iterations; budget.tol is
    checked on the final m(alpha) - M(alpha) on the exact Q (status "stalled" if above it).

    warm_start: ``alpha`` (projected onto the feasible set) starts the IPM from inside the box
    near it; interior point methods gain little from a warm start (bertini, Section II.B, notes
    the same of CVXOPT).
    """
    if math.isinf(problem.C):
        return _fit_hard_margin(problem, budget, recorder, warm_start, backend=backend, ipm_tol=ipm_tol,
                                max_memory_mb=max_memory_mb, method=method, lowrank_tol=lowrank_tol, max_rank=max_rank)
    n = problem.n_samples
    y = problem.y
    V, path_info = _choose_path(problem, method, backend, lowrank_tol, max_rank, max_memory_mb)
    if V is not None and problem.sample_weight is not None:
        raise SolverError("qp's low-rank path (method='lowrank', or 'auto' above "
                          f"{AUTO_DENSE_N} rows) does not take sample weights; use method='dense', "
                          "or solver='smo' or 'svmlight'")
    max_iter = budget.iterations(200)
    c = -np.ones(n)
    # The box of each variable, C_i = C s_i (all C unweighted); the IPM works in x = alpha / u.
    u = problem.C_i
    alpha_start = warm_alpha(problem, warm_start)
    a0 = alpha_start if warm_start is not None else 0.5 * u
    a = np.clip(a0, 0.01 * u, 0.99 * u)
    extra = dict(backend=backend, dense_limit_n=dense_limit(max_memory_mb), **path_info)
    if V is not None:
        return _fit_lowrank(problem, V, a, budget, recorder, ipm_tol, max_iter, extra)
    Q = kernel_block(problem.kernel, problem.X, problem.X, problem.row_norms_sq, problem.row_norms_sq)
    Q *= y[:, None]
    Q *= y[None, :]
    f0 = float(0.5 * a @ (Q @ a) - a.sum())

    status = "max_iter"
    polished = False
    reason = ""
    if backend == "cvxopt":
        a, z, w, it, ok = _cvxopt_solve(Q, y, u, ipm_tol, max_iter)
        status = "converged" if ok else "max_iter"
        Ht, ct, yt, sc = _unit_box(Q, c, y, u)
        x, polished = _polish(Ht, ct, yt, 0.0, np.ones(n), a / u, z / (sc / u), w / (sc / u), 1e-9)
        alpha = x * u if polished else _snap(a, u, y, 0.0)
    else:
        Ht, ct, yt, sc = _unit_box(Q, c, y, u)
        x = a / u
        status, reason, it, z, w = _ipm_loop(problem, Ht, np.zeros((n, 0)), ct, yt, x, budget, recorder,
                                             ipm_tol, max_iter, lambda al: Q @ al - 1.0)
        # Out of time, the iterate is snapped, not polished: the active-set polish from an early
        # iterate runs up to POLISH_ITERS dense KKT solves, O(n^3) each, which would overrun time_limit_s by far (found by solvers.testing's time_limit check).
        if status == "timeout":
            polished = False
        else:
            x, polished = _polish(Ht, ct, yt, 0.0, np.ones(n), x, z, w, 1e-9)
        if polished and status == "stalled":
            # the exact KKT point of a face: converged, if finish_fit's m - M agrees
            status = "converged"
            reason = ""
        if not polished:
            x = _snap_multipliers(x, z, w, yt, 0.0, np.ones(n))
        alpha = x * u
    if not polished:
        reason = (reason + "; " if reason else "") + (
            "the active-set polish was refused (no face near the interior point iterate has a "
            "KKT solution within 1e-9), so alpha is that iterate snapped to the bounds its "
            "multipliers indicate and projected onto y'alpha = 0")
    fit_time = recorder.seconds()
    G = Q @ alpha - 1.0
    recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    return finish_fit("qp", problem, alpha, G, status, it, budget.tol, fit_time, f_alpha0=f0,
                      polished=bool(polished), method="dense", stop_reason=reason, **extra)


#: The hard margin's first finite box, and the factor it grows by while the solution touches it.
HARD_MARGIN_BOX0 = 1e3
HARD_MARGIN_GROW = 100.0


def _fit_hard_margin(problem, budget, recorder, warm_start, **params):
    """C = inf (the hard margin) on separable data (kernel_dual.check_separable). The interior
    point needs a finite box (it works in x = alpha / C), so the dual is solved with the box
    U = 1e3, 1e5, ...: once no alpha_i reaches U, that solution satisfies the hard margin's KKT
    conditions (alpha >= 0, y'alpha = 0, margins >= 1, = 1 where alpha_i > 0) and is its
    optimum, certified on the problem with C = inf. Separable data have a bounded optimum, so
    a box above its largest alpha_i is reached in a few rounds."""
    from .base import Recorder as _Recorder
    check_separable(problem)
    U = HARD_MARGIN_BOX0
    rounds, it = 0, 0
    while True:
        rounds += 1
        inner = fit_qp(problem.with_(C=U), budget=budget, recorder=_Recorder(enabled=False).start(),
                       warm_start=warm_start, **params)
        it += inner.n_iter
        alpha = inner.alpha
        if inner.status != "converged" or alpha.max() < U * (1.0 - 1e-9) or rounds >= 8:
            break
        U *= HARD_MARGIN_GROW
    fit_time = recorder.seconds()
    Q = kernel_block(problem.kernel, problem.X, problem.X, problem.row_norms_sq, problem.row_norms_sq)
    G = problem.y * (Q @ (alpha * problem.y)) - 1.0
    reason = "" if alpha.max() < U * (1.0 - 1e-9) else f"alpha still reaches the box {U:g} after {rounds} rounds"
    recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    return finish_fit("qp", problem, alpha, G, inner.status if not reason else "stalled", it, budget.tol,
                      fit_time, reason=reason, hard_margin_rounds=rounds, hard_margin_box=U,
                      **{k: v for k, v in inner.info.items() if k in ("method", "polished", "backend")})


def _ipm_loop(problem, Ht, Vt, ct, yt, x, budget, recorder, ipm_tol, max_iter, exact_gradient):
    """The interior point on the unit-box problem (dense Ht, or Ht = Vt Vt' when Ht is 0 x 0),
    one step per `_ipm_run` call so the recorder and the clock are checked between steps; trace
    points are the certificates of the iterate snapped to the feasible set, on the exact Q
    (exact_gradient(alpha) = Q alpha - e). Returns (status, reason, iterations, z, w); x in place."""
    n = x.shape[0]
    y = problem.y
    u = problem.C_i
    z, w = _centred_multipliers(x)
    lam = np.zeros(1)
    stuck = np.zeros(1, np.int64)
    one = np.ones(n)
    it = 0
    history = []
    while it < max_iter:
        code, steps = _ipm_run(Ht, Vt, ct, yt, 0.0, one, x, z, w, lam, stuck, ipm_tol, 1)
        it += steps
        if code == _CONVERGED:
            return "converged", "", it, z, w
        if Ht.shape[0] == 0:
            history.append(_lowrank_merit(Vt, ct, yt, x, z, w, lam[0]))
            if (len(history) > LOWRANK_STALL and min(history) <= LOWRANK_STALL_BELOW
                    and min(history[-LOWRANK_STALL:]) > 0.5 * min(history[:-LOWRANK_STALL])):
                return "stalled", (f"the low-rank interior point stopped improving (its residuals not "
                                   f"halved in {LOWRANK_STALL} iterations)"), it, z, w
        if code == _STALLED:
            return "stalled", (f"the interior point made no progress (steps below {STALL_STEP:g} "
                               f"for {STALL_COUNT} iterations)"), it, z, w
        if code == _FAILED or not np.isfinite(x).all():
            return "diverged", "the interior point's Newton matrix could not be factored", it, z, w
        if recorder.due(it):
            snapped = _snap(x * u, u, y, 0.0)
            recorder.record(it, lambda: certificates(problem, snapped, exact_gradient(snapped))[:3])
        if recorder.out_of_time(budget):
            return "timeout", "", it, z, w
    return "max_iter", "", it, z, w


# The low-rank IPM ends when its residuals stop falling: where D < D_FLOOR its Newton steps are
# inexact, and on a kernel whose free-set eigenvalues are below D_FLOOR (degree 3 in 2-D at C = 100:
# the dual residual stuck at 6.5e-7 for 300 iterations, complementarity at 2e-16) it would spend the
# whole budget there. Its iterate is then as good as it gets, and the exact finish decides. Only
# near the end (residuals below LOWRANK_STALL_BELOW): early on, with a large C, the merit can take
# more than 10 iterations to halve (600 blobs, degree 3, C = 1e4: stopped at iteration 11).
LOWRANK_STALL = 10
LOWRANK_STALL_BELOW = 1e-5


def _lowrank_merit(Vt, ct, yt, x, z, w, lam):
    """max of the dual residual and the complementarity gap, relative as in `_ipm_run`'s tests."""
    Ha = Vt @ (Vt.T @ x)
    rd = np.max(np.abs(Ha + ct - lam * yt - z + w)) / max(np.max(np.abs(ct)), np.max(np.abs(Ha)))
    fsize = 0.5 * (x @ Ha) + np.abs(ct) @ x
    return max(rd, (x @ z + (1.0 - x) @ w) / fsize)


def _fit_lowrank(problem, V, a, budget, recorder, ipm_tol, max_iter, extra):
    """The low-rank path (Fine & Scheinberg 2001): the interior point on Q ~ V V' with
    Sherman-Morrison-Woodbury Newton solves, its iterate snapped to the bounds its multipliers
    indicate, then `_exact_finish` on the exact Q. The status and certificates come from the exact
    gradient, recomputed from scratch at the end. f_alpha0 is nan here: the exact objective of the
    (all-positive) start costs n^2 kernel evaluations."""
    n = problem.n_samples
    y, C = problem.y, problem.C
    u = np.full(n, C)
    cache = QColumnCache(problem.kernel, problem.X, y, FINISH_CACHE_MB, problem.row_norms_sq)
    Vt, ct, yt, _ = _unit_box_lowrank(V, -np.ones(n), y, u)
    x = a / C
    status, reason, it, z, w = _ipm_loop(problem, np.zeros((0, 0)), Vt, ct, yt, x, budget, recorder,
                                         ipm_tol, max_iter, lambda al: _exact_gradient(cache, al))
    if not (np.isfinite(x).all() and np.isfinite(z).all() and np.isfinite(w).all()):
        x = a / C  # a failed Newton solve left no usable iterate: the finish starts from the start
        z, w = _centred_multipliers(x)
    alpha = _snap_multipliers(x, z, w, yt, 0.0, np.ones(n)) * C
    G = _exact_gradient(cache, alpha)
    rounds, why = _exact_finish(cache, alpha, G, C, budget.tol)
    if status in ("converged", "stalled", "diverged"):
        # the IPM on the approximate Q only starts the finish, which decides (finish_fit checks m - M)
        status, reason = ("converged", "") if not why else ("stalled", "; ".join(r for r in (reason, why) if r))
    else:  # the budget (max_iter, timeout) cut the IPM: that stays the status
        reason = "; ".join(r for r in (reason, why) if r)
    fit_time = recorder.seconds()
    G = _exact_gradient(cache, alpha)
    recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    return finish_fit("qp", problem, alpha, G, status, it, budget.tol, fit_time, f_alpha0=math.nan,
                      polished=not why, method="lowrank", finish_rounds=rounds, reason=reason,
                      stop_reason=reason, **extra)


register(SolverSpec(
    name="qp",
    family="kernel_dual",
    sample_weight=True,
    hard_margin=True,   # C = inf on separable data, by growing finite boxes (_fit_hard_margin)
    fit=fit_qp,
    params={
        "backend": Param("ipm", "str", options=("ipm", "cvxopt"),
                         doc="our interior point method, or cvxopt.solvers.qp when installed"),
        "ipm_tol": Param(1e-10, "float", low=0.0, open_low=True, high=1.0,
                         doc="relative residual / complementarity tolerance of the IPM"),
        "max_memory_mb": Param(2048.0, "float", low=0.0, open_low=True,
                               doc="refuse n whose matrices exceed this: dense 4 n^2 doubles, low-rank "
                                   "3 n max_rank doubles + 128 MB (`lowrank_limit`)"),
        "method": Param("auto", "str", options=("auto", "dense", "lowrank"),
                        doc="dense IPM, low-rank IPM + exact finish, or auto: dense up to 1000 points "
                            "or when rank n / 8 does not reach lowrank_tol"),
        "lowrank_tol": Param(1e-6, "float", low=0.0, open_low=True, high=1.0,
                             doc="stop the pivoted Cholesky at this residual trace / trace(K)"),
        "max_rank": Param(1000, "int", low=1, doc="most columns of the pivoted Cholesky factor"),
    },
    losses=LOSSES,
    intercepts=INTERCEPTS,
    kernels=KERNELS,
    warm_start=True,
    default_max_iter=200,
    default_tol=1e-6,
    # 2: nearest-point KKT solve and feasible active-set polish (singular Q); 3: scale-free IPM
    # stopping tests and the bound-only multiplier in the polish (bertini's digits 3 vs 8); 4: the
    # low-rank path (pivoted Cholesky, Woodbury Newton solves, exact finish) above 1000 points
    # 5: a timeout is snapped, not polished (the polish overran time_limit_s by seconds); 6: row
    # norms and gamma="scale" in one summation order for dense and CSR rows (kernels.py)
    version="6",
    description="the whole kernel dual by a primal-dual interior point method (bertini, Section I.C)",
))
