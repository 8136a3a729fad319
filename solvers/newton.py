"""Chapelle's primal Newton method for the L2-SVM (squared hinge), linear and kernel.

Chapelle, "Training a support vector machine in the primal", Neural Computation 19 (2007),
Sections 3-4; duros_katzman Section 4.2 and their Algorithm 1. The problem is
the primal of DESIGN.md with the squared hinge,

    P = 1/2 ||w||^2 + r/2 u^2 + C sum_i (1 - y_i f_i)_+^2,

whose Hessian is constant on each set of "support vectors" sv = {i : y_i f_i < 1}: P restricted
to a fixed sv is a regularised least-squares problem, and Newton's method moves from set to set.

Linear (``formulation="primal"``): f = X w + c u (intercept coordinate u as in gd.py),

    grad = (w + 2C X_sv' (f_sv - y_sv),  r u + 2C c sum_sv (f_sv - y_sv)),
    H    = diag(1, ..., 1, r) + 2C Z_sv' Z_sv,   Z = [X, c 1].

The Newton system H d = -grad is solved by conjugate gradient with products Z_sv' (Z_sv v) over
the active rows only (never a d x d matrix; an inexact Newton method with forcing term
eta_k = min(0.1, sqrt(||grad||/||grad P(0)||))), or, for few features, directly by Cholesky
(``linear_solver``). The step length is the exact minimiser of P along d (a convex piecewise
quadratic in t; `line_search` below, Chapelle's ``line_search_linear``).

Kernel (``formulation="kernel"``, any kernel): f = K beta (+ b). Chapelle eq. (10) /
duros_katzman eq. (5): on the current sv the Newton point is

    beta_sv = (K_sv + lambda I)^{-1} y_sv,  other beta_i = 0,   lambda = 1/(2C)

(the squared-hinge stationarity beta_i = 2C (y_i - f_i) on sv), solved directly; with a free
intercept the bordered system ``[[K_sv + lambda I, 1], [1', 0]] [beta; b] = [y_sv; 0]``; a
regularized intercept is the kernel K + B^2 (b = B^2 sum beta). The step from the current beta
to the Newton point is taken with the same exact line search. ``start="doubling"`` is Algorithm 1's
recursive start: solve on the first half (of a seeded permutation) down to ``doubling_n0``
points, and start from that solution's support vectors; ``info["doubling"]`` holds per level
(size, Newton steps, status, seconds, support vectors).

Stopping (both): the support-vector set did not change in the last step and the relative
decrease (P_k - P_{k+1}) / P_k, the Newton decrement, is <= tol. Iterations are Newton steps.

What a kernel fit returns: ``Fit.alpha = beta * y``. At the optimum beta_i = 2C y_i (1 - y_i f_i)_+,
so alpha_i = 2C (1 - y_i f_i)_+ >= 0 is exactly the squared-hinge dual variable and
dual_coef = alpha * y = beta. A run stopped early (max_iter, timeout) may leave alpha_i < 0 on a
few points that left the support set in the last step; alpha is returned as is (not clipped,
so the model is the one the solver holds), and ``info["n_negative_alpha"]`` counts them.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numba import njit

from .base import Budget, Fit, Recorder, finish, split_warm_start
from .objectives import (diag_term, dual_box_i, gradient_norm_at_zero, intercept_coordinate, kkt_violation_equality,
                         linear_certificates, pg_violation, primal_from_decision)
from .kernels import kernel_block, row_norms_sq
from .problem import Problem
from .registry import Param, SolverSpec, register


# ------------------------------------------------------------------ numba kernel
@njit(cache=True, nogil=True)
def line_search(m, q, C, mu, kink, a0, a1, s=None):
    """argmin_t phi(t) = a0 t + a1 t^2 / 2 + C sum_i s_i l(m_i + t q_i), l the smoothed loss with
    quadratic piece (1 - m)^2 / (2 mu) for 0 < 1 - m < kink and slope -kink/mu beyond; a1 is the
    regulariser's curvature along the direction. Newton passes the squared hinge (mu = 1/2,
    kink = inf, m = y f, q = y X d), smooth_newton the smoothed hinge (kink = mu).

    phi is convex piecewise quadratic (Chapelle's ``line_search_linear``); a safeguarded 1-D
    Newton lands on the minimiser of the current piece at each step (exact once the piece no
    longer changes), a bracket phi'(lo) < 0 <= phi'(hi) keeps every iterate in range. s: the
    rows' sample weights, or None (all 1: compiled without the weight, numba prunes the branch)."""
    n = m.shape[0]
    slope = kink / mu

    def deriv(t):
        g = a0 + a1 * t
        h = a1
        for i in range(n):
            qi = q[i]
            if qi == 0.0:
                continue
            r = 1.0 - (m[i] + t * qi)
            if r <= 0.0:
                continue
            Ci = C
            if s is not None:
                Ci = C * s[i]
            if r < kink:
                g -= Ci * qi * r / mu
                h += Ci * qi * qi / mu
            else:
                g -= Ci * qi * slope
        return g, h

    g0, h0 = deriv(0.0)
    if g0 >= 0.0:
        return 0.0
    lo = 0.0
    hi = 1.0
    g_hi, h_hi = deriv(hi)
    k = 0
    while g_hi < 0.0 and k < 60:
        lo = hi
        hi *= 2.0
        g_hi, h_hi = deriv(hi)
        k += 1
    if g_hi < 0.0:
        return hi
    t = lo
    g, h = deriv(t)
    for _ in range(200):
        if h <= 0.0:
            t_new = 0.5 * (lo + hi)
        else:
            t_new = t - g / h
            if not (lo < t_new < hi):
                t_new = 0.5 * (lo + hi)
        g_new, h_new = deriv(t_new)
        if g_new < 0.0:
            lo = t_new
        else:
            hi = t_new
        done = abs(g_new) <= 1e-14 * abs(g0) or (hi - lo) <= 1e-15 * max(1.0, abs(t_new))
        t, g, h = t_new, g_new, h_new
        if done:
            break
    return t


# ------------------------------------------------------------------ linear Newton
def conjugate_gradient(hess_vec, g, tol_abs, max_cg):
    """Conjugate gradient for H d = -g, stopped when ||H d + g|| <= tol_abs."""
    d = np.zeros_like(g)
    r = -g.copy()
    p = r.copy()
    rr = float(r @ r)
    k = 0
    while k < max_cg and math.sqrt(rr) > tol_abs:
        Hp = hess_vec(p)
        pHp = float(p @ Hp)
        if pHp <= 0.0:
            break
        a = rr / pHp
        d += a * p
        r -= a * Hp
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
        k += 1
    return d, k


def _fit_linear(problem, budget, recorder, warm_start, linear_solver, max_cg):
    X = problem.X
    y = problem.y
    C = problem.C
    c, r = intercept_coordinate(problem)
    has_u = problem.intercept != "none"
    d = problem.n_features
    max_iter = budget.iterations(100)
    tol = budget.tol
    if linear_solver == "auto":
        linear_solver = "direct" if d + 1 <= 256 else "cg"

    w, b = split_warm_start(problem, warm_start)
    u = b / c if c else 0.0
    f = np.asarray(X @ w).ravel() + c * u

    def primal(w_, u_, f_):
        return primal_from_decision(problem, float(w_ @ w_), c * u_, f_)

    def certificates():
        cert = linear_certificates(problem, w, c * u, f)
        return cert["primal"], cert["dual"], cert["gap"]

    P = primal(w, u, f)
    sv = np.flatnonzero(y * f < 1.0)
    g0 = gradient_norm_at_zero(problem)
    sw = problem.sample_weight
    status = "max_iter"
    it = 0
    n_cg_total = 0
    gnorm = math.nan
    decrement = math.nan
    while it < max_iter:
        Xs = X[sv]
        ys = y[sv]
        e = f[sv] - ys  # (f_sv - y_sv); grad of C (1 - y f)^2 in f is 2C (f - y) on sv
        # Sample weights: row i's term is C s_i (1 - y f)^2, so its gradient and its Hessian
        # rows carry s_i (H = I + 2C Z_sv' S Z_sv).
        ws = None if sw is None else sw[sv]
        if ws is not None:
            e = e * ws
        g_w = w + 2.0 * C * np.asarray(Xs.T @ e).ravel()
        g_u = r * u + 2.0 * C * c * float(e.sum())
        g = np.append(g_w, g_u) if has_u else g_w
        gnorm = float(np.linalg.norm(g))
        if not math.isfinite(gnorm):
            status = "diverged"
            break
        if gnorm == 0.0:
            status = "converged"
            break
        if linear_solver == "direct":
            Zs = Xs.toarray() if sp.issparse(Xs) else Xs
            if has_u:
                Zs = np.hstack([Zs, np.full((Zs.shape[0], 1), c)])
            H = 2.0 * C * (Zs.T @ (Zs if ws is None else ws[:, None] * Zs))
            H[np.diag_indices(d)] += 1.0
            if has_u:
                # A free intercept has no penalty; a tiny ridge keeps H definite when sv is empty.
                H[d, d] += r if r > 0 else 1e-12 * max(1.0, H[d, d])
            try:
                step = -sla.solve(H, g, assume_a="pos")
            except (np.linalg.LinAlgError, sla.LinAlgError):
                step = -np.linalg.lstsq(H, g, rcond=None)[0]
            n_cg = 0
        else:
            def hess_vec(v):
                vw = v[:d]
                z = np.asarray(Xs @ vw).ravel()
                if has_u:
                    z += c * v[d]
                if ws is not None:
                    z = z * ws
                out_w = vw + 2.0 * C * np.asarray(Xs.T @ z).ravel()
                if has_u:
                    # Free intercept: r = 0; the ridge keeps CG well defined when sv is empty.
                    out_u = (r if r > 0 else 1e-12) * v[d] + 2.0 * C * c * float(z.sum())
                    return np.append(out_w, out_u)
                return out_w

            eta = min(0.1, math.sqrt(gnorm / g0))
            step, n_cg = conjugate_gradient(hess_vec, g, eta * gnorm, max_cg)
        n_cg_total += n_cg
        s_w = step[:d]
        s_u = float(step[d]) if has_u else 0.0
        q = np.asarray(X @ s_w).ravel() + c * s_u
        a0 = float(w @ s_w) + r * u * s_u
        a1 = float(s_w @ s_w) + r * s_u * s_u
        t = line_search(y * f, y * q, C, 0.5, math.inf, a0, a1, sw)
        decrement = -0.5 * float(g @ step)
        w = w + t * s_w
        u = u + t * s_u
        f = f + t * q
        it += 1
        P_old, P = P, primal(w, u, f)
        sv_new = np.flatnonzero(y * f < 1.0)
        same = np.array_equal(sv_new, sv)
        sv = sv_new
        # Chapelle's rule: the sv set no longer changes; plus the decrement / relative decrease.
        if end := recorder.after(it, certificates, budget, diverged=not math.isfinite(P),
                                 converged=same and (P_old - P) <= tol * max(abs(P), 1e-300)
                                 and decrement <= tol * max(abs(P), 1e-300)):
            status = end
            break
    fit_time = recorder.close(it, certificates)
    cert = linear_certificates(problem, w, c * u, f)
    if not math.isfinite(cert["primal"]):
        status = "diverged"
    finish(status, "newton", it, f"Newton decrement {decrement:.3g} > tol {tol:g} or sv set still moving"
           if status == "max_iter" else "")
    return Fit(b=float(c * u), status=status, n_iter=it, primal=cert["primal"], w=w, dual=cert["dual"],
               gap=cert["gap"], kkt_violation=cert["kkt_violation"], fit_time_s=fit_time,
               info={"formulation": "primal", "linear_solver": linear_solver, "n_cg": n_cg_total,
                     "grad_norm": gnorm, "n_sv": int(sv.size), "decrement": decrement})


# ------------------------------------------------------------------ kernel Newton
class _KernelRows:
    """K'(rows, cols) for the solve: the whole matrix once when it fits in ``precompute_mb``,
    blocks from kernels.kernel_block otherwise. K' = K + B^2 for a regularized intercept."""

    def __init__(self, problem: Problem, precompute_mb: float):
        self.problem = problem
        self.X = problem.X
        self.norms = row_norms_sq(self.X) if problem.kernel.name == "rbf" else None
        self.shift = problem.B ** 2
        n = problem.n_samples
        self.full = None
        if n * n * 8 <= precompute_mb * 2**20:
            self.full = self._compute(np.arange(n), np.arange(n))

    def _compute(self, rows, cols):
        xn = self.norms[rows] if self.norms is not None else None
        zn = self.norms[cols] if self.norms is not None else None
        K = kernel_block(self.problem.kernel, self.X[rows], self.X[cols], xn, zn)
        if self.shift:
            K += self.shift
        return K

    def block(self, rows, cols):
        if self.full is not None:
            return self.full[np.ix_(rows, cols)]
        return self._compute(rows, cols)

    def matvec(self, rows, cols, v, chunk=2048):
        """K'(rows, cols) v in column chunks (bounded memory when K' is not stored)."""
        if self.full is not None:
            return self.full[np.ix_(rows, cols)] @ v
        out = np.zeros(len(rows))
        for s in range(0, len(cols), chunk):
            out += self._compute(rows, cols[s:s + chunk]) @ v[s:s + chunk]
        return out


def _kernel_newton(problem, Kr, idx, beta0, b0, max_iter, tol, free, recorder, time_limit, top):
    """Newton on the rows idx (positions into the full problem), from beta0 (len(idx)) and b0.
    Returns (beta, b, f, it, status)."""
    y = problem.y[idx]
    C = problem.C
    # The ridge 1/(2 C_i) per row: with sample weights the stationarity on sv reads
    # beta_i = 2 C s_i (y_i - f_i), i.e. (K_sv + diag(1/(2 C s_sv))) beta_sv = y_sv.
    sw = None if problem.sample_weight is None else problem.sample_weight[idx]
    lam = 0.5 / C if sw is None else 0.5 / (C * sw)
    m = len(idx)
    beta = beta0.copy()
    b = b0
    nz = np.flatnonzero(beta)
    f = (Kr.matvec(idx, idx[nz], beta[nz]) if nz.size else np.zeros(m)) + b
    Kbeta = f - b
    sv = np.flatnonzero(y * f < 1.0) if nz.size or b else np.arange(m)

    P = _kernel_primal(problem, y, beta, b, Kbeta, sw)
    status = "max_iter"
    it = 0
    while it < max_iter:
        Ks = Kr.block(idx[sv], idx[sv])
        Ks[np.diag_indices_from(Ks)] += lam if sw is None else lam[sv]
        ys = y[sv]
        if sv.size == 0:
            # Every margin is >= 1: the Newton point of the empty set is beta = 0 (b kept).
            beta_sv, b_new = np.zeros(0), b
        elif free:
            ns = sv.size
            A = np.empty((ns + 1, ns + 1))
            A[:ns, :ns] = Ks
            A[:ns, ns] = 1.0
            A[ns, :ns] = 1.0
            A[ns, ns] = 0.0
            try:
                sol = sla.solve(A, np.append(ys, 0.0), assume_a="sym")
            except (np.linalg.LinAlgError, sla.LinAlgError):
                sol = np.linalg.lstsq(A, np.append(ys, 0.0), rcond=None)[0]
            beta_sv, b_new = sol[:ns], float(sol[ns])
        else:
            try:
                beta_sv = sla.solve(Ks, ys, assume_a="pos")
            except (np.linalg.LinAlgError, sla.LinAlgError):
                beta_sv = np.linalg.lstsq(Ks, ys, rcond=None)[0]
            b_new = 0.0
        beta_new = np.zeros(m)
        beta_new[sv] = beta_sv
        delta = beta_new - beta
        db = b_new - b
        nzd = np.flatnonzero(delta)
        Kdelta = Kr.matvec(idx, idx[nzd], delta[nzd]) if nzd.size else np.zeros(m)
        q = Kdelta + db
        a0 = float(beta @ Kdelta)
        a1 = float(delta @ Kdelta)
        t = line_search(y * f, y * q, C, 0.5, math.inf, a0, a1, sw)
        beta = beta + t * delta
        b = b + t * db
        Kbeta = Kbeta + t * Kdelta
        f = Kbeta + b
        it += 1
        P_old, P = P, _kernel_primal(problem, y, beta, b, Kbeta, sw)
        sv_new = np.flatnonzero(y * f < 1.0)
        same = np.array_equal(sv_new, sv)
        sv = sv_new
        if top and recorder.due(it):
            recorder.record(it, lambda: (P, math.nan, math.nan))
        if not (math.isfinite(P) and np.isfinite(beta).all()):
            status = "diverged"
            break
        if same and (P_old - P) <= tol * max(abs(P), 1e-300):
            status = "converged"
            break
        if time_limit is not None and recorder.seconds() > time_limit:
            status = "timeout"
            break
    return beta, b, f, Kbeta, it, status


def _kernel_primal(problem, y, beta, b, Kbeta, sw=None):
    """P of a kernel model on rows with labels y (and weights sw, None for 1): 1/2 beta'K'beta
    + C sum s_i loss(y f). K' carries B^2 for a regularized intercept, so the regulariser is
    beta'K'beta whole."""
    r = np.maximum(1.0 - y * (Kbeta + b), 0.0)
    return 0.5 * float(beta @ Kbeta) + problem.C * float(r @ (r if sw is None else sw * r))


def _drop_residues(beta):
    """Zero beta's rounding residues in place: a line-search step of t = 1 - O(eps) leaves O(eps)
    on points that left the support set; they are not support vectors."""
    beta[np.abs(beta) <= 1e-13 * max(float(np.abs(beta).max(initial=0.0)), 1e-300)] = 0.0


def _fit_kernel(problem, budget, recorder, warm_start, start, doubling_n0, random_state, precompute_mb):
    n = problem.n_samples
    y = problem.y
    free = problem.intercept == "free"
    max_iter = budget.iterations(100)
    tol = budget.tol
    Kr = _KernelRows(problem, precompute_mb)
    beta0 = np.zeros(n)
    b0 = 0.0
    if warm_start is not None and warm_start.get("alpha") is not None:
        a = np.asarray(warm_start["alpha"], dtype=np.float64)
        if a.shape != (n,):
            raise ValueError(f"warm_start alpha has shape {a.shape}, expected ({n},)")
        beta0 = a * y
        b0 = float(warm_start.get("b") or 0.0) if free else 0.0

    info = {"formulation": "kernel", "start": start, "doubling": []}
    perm = np.arange(n)
    if start == "doubling" and warm_start is None and n > doubling_n0:
        # Algorithm 1 (duros_katzman): solve on the first half, recursively down to n0 points,
        # and start each level from the previous level's solution. A seeded permutation makes
        # "the first half" a random half whatever the order of the data.
        perm = np.random.default_rng(random_state).permutation(n)
        sizes = []
        m = n
        while m > doubling_n0:
            m = (m + 1) // 2
            sizes.append(m)
        sizes = sizes[::-1]
        beta_sub = np.zeros(sizes[0])
        b_sub = 0.0
        for size in sizes:
            idx = perm[:size]
            start_beta = np.zeros(size)
            start_beta[:beta_sub.size] = beta_sub
            t0 = recorder.seconds()
            beta_sub, b_sub, _, _, it_sub, st_sub = _kernel_newton(
                problem, Kr, idx, start_beta, b_sub, max_iter, tol, free, recorder, None, False)
            _drop_residues(beta_sub)
            # n_sv per level: a Newton step costs O(n n_sv + n_sv^3) (duros_katzman Table 2).
            info["doubling"].append((int(size), int(it_sub), st_sub, recorder.seconds() - t0,
                                     int(np.count_nonzero(beta_sub))))
        beta0 = np.zeros(n)
        beta0[perm[:beta_sub.size]] = beta_sub
        b0 = b_sub
    idx = np.arange(n)
    beta, b, f, Kbeta, it, status = _kernel_newton(problem, Kr, idx, beta0, b0, max_iter, tol, free,
                                                   recorder, budget.time_limit_s, True)
    fit_time = recorder.seconds()
    _drop_residues(beta)
    # Final certificates: P (objectives), the squared-hinge dual at alpha = beta y, its gap and
    # the dual KKT violation (with the equality constraint for a free intercept).
    b_model = float(b) if free else float(problem.B ** 2 * beta.sum())
    quad_noB = float(beta @ Kbeta) - problem.B ** 2 * float(beta.sum()) ** 2
    P = primal_from_decision(problem, quad_noB, b_model, f) if math.isfinite(float(beta @ Kbeta)) else math.nan
    alpha = beta * y
    # diag_i = 1/(2 C_i), equal entries when unweighted (objectives.dual_box_i).
    diag = 0.5 / problem.C if problem.sample_weight is None else dual_box_i(problem)[0]
    if math.isfinite(P):
        # alpha_KKT = 2C_i (1 - y f)_+ is the dual point the primal model implies.
        a_k = 2.0 * (problem.C if problem.sample_weight is None else problem.C_i) * np.maximum(1.0 - y * f, 0.0)
        nz = np.flatnonzero(a_k)
        Ka = Kr.matvec(np.arange(n), nz, (a_k * y)[nz]) if nz.size else np.zeros(n)
        G = y * Ka - 1.0 + diag * a_k
        if free:
            D, gap = math.nan, math.nan
            kkt = kkt_violation_equality(G, a_k, y, math.inf)
        else:
            D = float(a_k.sum() - 0.5 * (a_k * y) @ Ka - 0.5 * diag_term(diag, a_k))
            gap = P - D
            kkt = pg_violation(G, a_k, math.inf)
    else:
        status = "diverged"
        D = gap = kkt = math.nan
    recorder.close(it, lambda: (P, D, gap))
    finish(status, "newton", it, "support-vector set still changing" if status == "max_iter" else "")
    info.update(n_sv=int(np.count_nonzero(beta)), n_negative_alpha=int(np.sum(alpha < 0)))
    return Fit(b=b_model, status=status, n_iter=it, primal=P, alpha=alpha, dual=D, gap=gap,
               kkt_violation=kkt, fit_time_s=fit_time, info=info)


# ------------------------------------------------------------------ driver
def fit_newton(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
               formulation: str = "auto", linear_solver: str = "auto", max_cg: int = 1000,
               start: str = "all", doubling_n0: int = 1000, random_state: int | None = 0,
               precompute_mb: float = 256.0) -> Fit:
    """Chapelle's primal Newton (see the module docstring).

    formulation: ``primal`` (w, linear kernel only), ``kernel`` (beta, any kernel) or ``auto``
    (primal for the linear kernel). linear_solver/max_cg: the Newton system of the primal
    formulation. start/doubling_n0/random_state: the kernel formulation's start (all points
    as support vectors, or Algorithm 1's recursive doubling). precompute_mb: store the whole
    kernel matrix when it fits in that many MiB.
    """
    if formulation == "auto":
        formulation = "primal" if problem.kernel.is_linear else "kernel"
    if formulation == "primal":
        if not problem.kernel.is_linear:
            raise ValueError(f"newton formulation='primal' needs the linear kernel, not {problem.kernel.name!r}")
        return _fit_linear(problem, budget, recorder, warm_start, linear_solver, max_cg)
    return _fit_kernel(problem, budget, recorder, warm_start, start, doubling_n0, random_state, precompute_mb)


register(SolverSpec(
    name="newton",
    family="primal",
    sample_weight=True,
    fit=fit_newton,
    params={
        "formulation": Param("auto", "str", options=("auto", "primal", "kernel"),
                             doc="w (linear) or beta (kernel) variables"),
        "linear_solver": Param("auto", "str", options=("auto", "cg", "direct"),
                               doc="Newton system of the primal formulation: CG on the active rows, or Cholesky"),
        "max_cg": Param(1000, "int", low=1, doc="CG iterations per Newton step"),
        "start": Param("all", "str", options=("all", "doubling"),
                       doc="kernel start: every point a support vector, or Algorithm 1's recursive doubling"),
        "doubling_n0": Param(1000, "int", low=2, doc="size of the smallest problem of the doubling"),
        "random_state": Param(0, "int", low=0, none_ok=True, doc="seed of the doubling's permutation"),
        "precompute_mb": Param(256.0, "float", low=0.0, doc="store the kernel matrix when it fits"),
    },
    losses=("squared_hinge",),
    # The first declared intercept is the default (estimator and sweeps): LIBLINEAR's bias feature.
    intercepts=("regularized", "none", "free", "basis"),
    kernels=("linear", "rbf", "poly"),
    warm_start=True,
    default_max_iter=100,
    default_tol=1e-8,   # Newton converges quadratically: a tight tol costs a step or two
    version="3",        # 3: the line search shared with smooth_newton (tighter 1-D stop); 2: info["doubling"] levels carry their support-vector count
    description="Chapelle's primal Newton over the support-vector set (Chapelle 2007; duros_katzman 4.2)",
))
