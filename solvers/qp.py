"""The whole kernel SVM dual in one solve, by a primal-dual interior point method.

The problem (bertini I.C, shared/papers/001; the dual of the hinge SVM with a free intercept):

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
0 or u and free ones satisfy the KKT system to rounding. The same kernel solves svmlight's
q-variable subproblems.

bertini used CVXOPT for this step; ``backend="cvxopt"`` does the same when cvxopt is installed.
Dense: memory ~4 n^2 doubles and O(n^3) time per iteration, so qp is the correctness reference
for n up to a few thousand (see ``max_memory_mb``); smo and svmlight scale further.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .base import Budget, Fit, Recorder
from .kernel_dual import INTERCEPTS, KERNELS, LOSSES, certificates, project_feasible, warm_alpha, finish_fit
from .kernels import kernel_block
from .problem import Problem
from .registry import Param, SolverError, SolverSpec, register

# Codes of _ipm_run
_RUNNING, _CONVERGED, _FAILED = 0, 1, 2


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
def _factor(H, D):
    """Cholesky of H + diag(D), with a growing diagonal shift if rounding makes it indefinite
    (H may be singular, e.g. duplicated points, and D -> 0 on free variables near the end)."""
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
def _max_step(v, dv):
    """Largest t in (0, 1] with v + t dv >= 0 (v > 0)."""
    t = 1.0
    for i in range(v.shape[0]):
        if dv[i] < 0.0:
            t = min(t, -v[i] / dv[i])
    return t


@njit(cache=True, nogil=True)
def _ipm_run(H, c, yv, r, u, a, z, w, lam, tol, max_steps):
    """Up to max_steps Mehrotra predictor-corrector iterations on (a, z, w, lam) in place.
    Returns (code, steps): _CONVERGED when the relative residuals and the complementarity gap
    are below tol, _FAILED if the Newton matrix could not be factored."""
    n = a.shape[0]
    cscale = 1.0
    for i in range(n):
        cscale = max(cscale, abs(c[i]))
    for step in range(max_steps):
        s = a.copy()
        t = u - a
        Ha = H @ a
        rd = Ha + c - lam[0] * yv - z + w
        rp = yv @ a - r
        comp = s @ z + t @ w
        obj = 0.5 * (a @ Ha) + c @ a
        amax = 1.0
        for i in range(n):
            amax = max(amax, abs(a[i]))
        if (np.max(np.abs(rd)) <= tol * cscale and abs(rp) <= tol * amax
                and comp <= tol * (1.0 + abs(obj))):
            return _CONVERGED, step
        mu = comp / (2.0 * n)
        D = z / s + w / t
        L, ok = _factor(H, D)
        if not ok:
            return _FAILED, step
        v2 = _cho_solve(L, yv)
        yv2 = yv @ v2
        # predictor (affine scaling, sigma = 0)
        rcl = -s * z
        rcu = -t * w
        v1 = _cho_solve(L, -rd + rcl / s - rcu / t)
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
        v1 = _cho_solve(L, -rd + rcl / s - rcu / t)
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
        # keep strictly inside the box (rounding)
        for i in range(n):
            if a[i] <= 0.0:
                a[i] = 1e-300
            if a[i] >= u[i]:
                a[i] = u[i] * (1.0 - 1e-16)
    return _RUNNING, max_steps


@njit(cache=True, nogil=True)
def _kkt_solve(H, c, yv, r, u, state):
    """For a guessed active set (state 1: a_i = 0, 2: a_i = u_i, 0: free F) solve
    [H_FF y_F; y_F' 0] [a_F; mu] = [-c_F - H_FU u_U; r - y_U' u_U]. Returns (a, mu, ok)."""
    n = c.shape[0]
    out = np.zeros(n)
    nF = 0
    for i in range(n):
        if state[i] == 2:
            out[i] = u[i]
        elif state[i] == 0:
            nF += 1
    if nF == 0:
        return out, 0.0, abs(yv @ out - r) <= 1e-12 * (1.0 + np.max(u))
    F = np.empty(nF, np.int64)
    k = 0
    for i in range(n):
        if state[i] == 0:
            F[k] = i
            k += 1
    Hu = H @ out
    A = np.zeros((nF + 1, nF + 1))
    b = np.zeros(nF + 1)
    for p in range(nF):
        for q in range(nF):
            A[p, q] = H[F[p], F[q]]
        A[p, nF] = yv[F[p]]
        A[nF, p] = yv[F[p]]
        b[p] = -c[F[p]] - Hu[F[p]]
    b[nF] = r - yv @ out
    try:
        sol = np.linalg.solve(A, b)
    except Exception:  # noqa: BLE001 -- singular H_FF (duplicated points): least squares
        sol = np.linalg.lstsq(A, b)[0]
    if not np.all(np.isfinite(sol)):
        sol = np.linalg.lstsq(A, b)[0]
    for p in range(nF):
        out[F[p]] = sol[p]
    return out, sol[nF], True


@njit(cache=True, nogil=True)
def _polish(H, c, yv, r, u, a, z, w, gtol):
    """Exact solution on an active set: start from the one the IPM multipliers indicate
    (a_i = 0 where z_i > a_i, a_i = u_i where w_i > u_i - a_i), solve the equality-constrained
    QP on the free set (`_kkt_solve`), and correct the guess a few times (free variables that
    leave the box go to the bound they cross; bound variables whose multiplier has the wrong
    sign are freed). Returns (a, accepted); on refusal a is returned unchanged."""
    n = a.shape[0]
    state = np.zeros(n, np.int8)
    for i in range(n):
        if z[i] > a[i]:
            state[i] = 1
        elif w[i] > u[i] - a[i]:
            state[i] = 2
    umax = np.max(u)
    for _ in range(10):
        out, mu, ok = _kkt_solve(H, c, yv, r, u, state)
        if not ok:
            return a, False
        moved = False
        for i in range(n):
            if state[i] == 0:
                if out[i] < -1e-9 * umax:
                    state[i] = 1
                    moved = True
                elif out[i] > u[i] + 1e-9 * umax:
                    state[i] = 2
                    moved = True
        if moved:
            continue
        g = H @ out + c + mu * yv
        for i in range(n):
            if state[i] == 0 and abs(g[i]) > gtol:
                return a, False  # inconsistent KKT system (least squares): keep the IPM point
        for i in range(n):
            if (state[i] == 1 and g[i] < -gtol) or (state[i] == 2 and g[i] > gtol):
                state[i] = 0
                moved = True
        if moved:
            continue
        for i in range(n):
            out[i] = min(max(out[i], 0.0), u[i])
        # The clipping moved y'a by at most ~1e-9 u: put the residual back on the free
        # variable with the most room, so that the equality holds to rounding.
        res = yv @ out - r
        if res != 0.0:
            best = -1
            room = -1.0
            for i in range(n):
                if state[i] == 0:
                    v = out[i] - res * yv[i]
                    if 0.0 <= v <= u[i] and min(v, u[i] - v) > room:
                        room = min(v, u[i] - v)
                        best = i
            if best >= 0:
                out[best] -= res * yv[best]
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
    code, steps = _ipm_run(Ht, ct, yt, r, one, x, z, w, lam, tol, max_steps)
    out, ok = _polish(Ht, ct, yt, r, one, x, z, w, 1e-9)
    if not ok:
        out = _snap_multipliers(x, z, w, yt, r, one)
    return out * u, steps, code, ok


@njit(cache=True, nogil=True)
def _snap_multipliers(a, z, w, yv, r, u):
    """Fallback when polishing is refused: put a_i on the bound its multiplier points to
    (z_i > a_i: 0; w_i > u_i - a_i: u_i), then restore y'a = r on the free variables."""
    n = a.shape[0]
    out = a.copy()
    free = np.ones(n, np.bool_)
    for i in range(n):
        if z[i] > a[i]:
            out[i] = 0.0
            free[i] = False
        elif w[i] > u[i] - a[i]:
            out[i] = u[i]
            free[i] = False
    for _ in range(n + 1):
        res = yv @ out - r
        nf = 0
        for i in range(n):
            if free[i]:
                nf += 1
        if res == 0.0 or nf == 0:
            break
        for i in range(n):
            if free[i]:
                v = out[i] - res * yv[i] / nf
                if v <= 0.0 or v >= u[i]:
                    v = min(max(v, 0.0), u[i])
                    free[i] = False
                out[i] = v
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


# ---------------------------------------------------------------------------- driver
def dense_limit(max_memory_mb: float) -> int:
    """Largest n whose dense IPM fits: Q, its unit-box scaling, the Newton matrix and its
    Cholesky factor, 4 n^2 doubles."""
    return int(math.isqrt(int(max_memory_mb * 2**20 / 32)))


def _snap(a, u, y, r):
    """Fallback when polishing is refused: the nearest feasible point of the IPM iterate."""
    a = np.where(a < 1e-10 * u, 0.0, np.where(a > u * (1 - 1e-10), u, a))
    return project_feasible(a, y, float(u[0]))


def _cvxopt_solve(Q, y, C, tol, max_iter):
    try:
        import cvxopt
    except ImportError:
        raise SolverError("qp.backend='cvxopt' needs the cvxopt package (pip install cvxopt); "
                          "backend='ipm' needs nothing extra") from None
    n = y.shape[0]
    P = cvxopt.matrix(Q)
    q = cvxopt.matrix(-np.ones(n))
    G = cvxopt.matrix(np.vstack([-np.eye(n), np.eye(n)]))
    h = cvxopt.matrix(np.hstack([np.zeros(n), C * np.ones(n)]))
    A = cvxopt.matrix(y[None, :].copy())
    b = cvxopt.matrix(0.0)
    opts = {"show_progress": False, "abstol": tol, "reltol": tol, "feastol": tol, "maxiters": max_iter}
    sol = cvxopt.solvers.qp(P, q, G, h, A, b, options=opts)
    a = np.array(sol["x"]).ravel()
    zz = np.array(sol["z"]).ravel()
    return a, zz[:n].copy(), zz[n:].copy(), int(sol["iterations"]), sol["status"] == "optimal"


def fit_qp(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
           backend: str = "ipm", ipm_tol: float = 1e-10, max_memory_mb: float = 2048.0) -> Fit:
    """The whole dual in one dense solve (module docstring). Iterations are IPM iterations;
    budget.tol is checked on the final m(alpha) - M(alpha) (status "stalled" if above it).

    warm_start: ``alpha`` (projected onto the feasible set) starts the IPM from inside the box
    near it; interior point methods gain little from a warm start (bertini II.B notes the same
    of CVXOPT).
    """
    n = problem.n_samples
    limit = dense_limit(max_memory_mb)
    if n > limit:
        raise SolverError(
            f"qp builds the dense {n} x {n} dual: about {32 * n * n / 2**20:.0f} MB, over "
            f"qp.max_memory_mb={max_memory_mb:g} (n <= {limit}); use solver='smo' or 'svmlight', "
            f"which work from a kernel-column cache")
    y = problem.y
    C = problem.C
    max_iter = budget.iterations(200)
    Q = kernel_block(problem.kernel, problem.X, problem.X, problem.row_norms_sq, problem.row_norms_sq)
    Q *= y[:, None]
    Q *= y[None, :]
    c = -np.ones(n)
    u = np.full(n, C)
    alpha_start = warm_alpha(problem, warm_start)
    a0 = alpha_start if warm_start is not None else 0.5 * u
    a = np.clip(a0, 0.01 * u, 0.99 * u)
    f0 = float(0.5 * a @ (Q @ a) - a.sum())

    status = "max_iter"
    polished = False
    if backend == "cvxopt":
        a, z, w, it, ok = _cvxopt_solve(Q, y, C, ipm_tol, max_iter)
        status = "converged" if ok else "max_iter"
        Ht, ct, yt, sc = _unit_box(Q, c, y, u)
        x, polished = _polish(Ht, ct, yt, 0.0, np.ones(n), a / C, z / (sc / C), w / (sc / C), 1e-9)
        alpha = x * C
    else:
        Ht, ct, yt, sc = _unit_box(Q, c, y, u)
        x = a / C
        z, w = _centred_multipliers(x)
        lam = np.zeros(1)
        one = np.ones(n)
        it = 0
        while it < max_iter:
            code, steps = _ipm_run(Ht, ct, yt, 0.0, one, x, z, w, lam, ipm_tol, 1)
            it += steps
            if code == _CONVERGED:
                status = "converged"
                break
            if code == _FAILED or not np.isfinite(x).all():
                status = "diverged"
                break
            if recorder.due(it):
                recorder.record(it, lambda: certificates(problem, _snap(x * C, u, y, 0.0),
                                                         Q @ _snap(x * C, u, y, 0.0) - 1.0)[:3])
            if recorder.out_of_time(budget):
                status = "timeout"
                break
        x, polished = _polish(Ht, ct, yt, 0.0, one, x, z, w, 1e-9)
        if not polished:
            x = _snap_multipliers(x, z, w, yt, 0.0, one)
        a = x * C
        alpha = a
    if not polished and backend == "cvxopt":
        alpha = _snap(a, u, y, 0.0)
    fit_time = recorder.seconds()
    G = Q @ alpha - 1.0
    recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    return finish_fit("qp", problem, alpha, G, status, it, budget.tol, fit_time, f_alpha0=f0,
                      backend=backend, polished=bool(polished), dense_limit_n=limit)


register(SolverSpec(
    name="qp",
    family="kernel_dual",
    fit=fit_qp,
    params={
        "backend": Param("ipm", "str", options=("ipm", "cvxopt"),
                         doc="our interior point method, or cvxopt.solvers.qp when installed"),
        "ipm_tol": Param(1e-10, "float", low=0.0, open_low=True, high=1.0,
                         doc="relative residual / complementarity tolerance of the IPM"),
        "max_memory_mb": Param(2048.0, "float", low=0.0, open_low=True,
                               doc="refuse n whose dense matrices exceed this (4 n^2 doubles)"),
    },
    losses=LOSSES,
    intercepts=INTERCEPTS,
    kernels=KERNELS,
    warm_start=True,
    default_max_iter=200,
    default_tol=1e-6,
    version="1",
    description="the whole kernel dual by a primal-dual interior point method (bertini I.C)",
))
