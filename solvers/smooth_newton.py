"""Smoothed-hinge Newton with continuation: a certified solver for the linear L1-SVM at any C.

The hinge h(m) = (1 - m)_+ of the margin m = y f is replaced by its Moreau-type smoothing
(the hinge's conjugate plus mu/2 a^2; Nesterov, "Smooth minimization of non-smooth functions",
Math. Program. 103 (2005), Section 4),

    l_mu(m) = max_{0 <= a <= 1} a (1 - m) - mu a^2 / 2
            = 0                     for m >= 1
              (1 - m)^2 / (2 mu)    for 1 - mu < m < 1         (the quadratic set S)
              1 - m - mu / 2        for m <= 1 - mu            (the linear set L)

so that l_mu <= h <= l_mu + mu/2, and its maximiser a_i = clip((1 - m_i) / mu, 0, 1) gives the dual
point alpha_i = C a_i, which lies in the hinge dual's box 0 <= alpha_i <= C for every w and mu.
Hence at every iterate the hinge duality gap

    gap = P(w) - D(alpha),  D(alpha) = sum alpha - 1/2 ||Z' (alpha * y)||^2   (objectives.py)

is a true certificate (P - f* <= gap), whatever mu is. With v = (w, u) (u the intercept
coordinate: b = B u for intercept="regularized", objectives.intercept_coordinate) and
Z = [X, B 1], P_mu(v) = 1/2 ||v||^2 + C sum l_mu(y_i z_i . v) is piecewise quadratic:

    grad = v - Z' (alpha * y),      H = I + (C / mu) Z_S' Z_S,

and Newton's method with an exact line search (a convex piecewise quadratic in the step, solved
by `line_search`) reaches its optimum in finitely many steps once S and L stop changing (the
finite Newton method of Chapelle 2007, Section 3; LIBLINEAR's primal solver is the trust-region
variant on the squared hinge: Lin, Weng & Keerthi, "Trust region Newton method for large-scale
logistic regression", JMLR 9 (2008)). The squared hinge is this same loss with mu = 1/2 and no
linear piece (l = (1 - m)_+^2, alpha = 2C (1 - m)_+): one stage of the same Newton, certified by
objectives.linear_certificates.

Continuation (hinge). At the optimum of stage mu the gap is only the smoothing error,
C sum_S (1 - m_i)(1 - (1 - m_i)/mu) <= |S| C mu / 4, linear in mu. Once the stage's own gap
(P_mu - D_mu, D_mu = D - mu/(2C) ||alpha||^2) is below half of that smoothing error, mu is cut by
`shrink` (0.1) and the next stage starts from the current v (warm). Measured on the a9a-like
set (README), C = 0.01 ... 50: a fixed 0.1 took 58-182 Newton steps; 0.3 took 62-201, and cuts
of up to 1e-3 (aimed at the target gap in one stage) 200-330, the long steps of mu leaving each
stage's Newton to cross many margins with short line-search steps.

Identification. As mu -> 0 the sets L, S, R of the stage become those of the hinge optimum:
L = {alpha_i = C}, S = {margin exactly 1}, R = {alpha_i = 0} (a point with m = 1 and alpha at a
bound may fall on either side; both are consistent). For those sets the optimum solves the
equality-constrained problem

    min 1/2 ||v||^2 - C y_L' Z_L v   s.t.  y_S * (Z_S v) = 1,
    v = v_L + dv,  v_L = C Z_L' y_L,  dv = A^+ (1 - A v_L),  A = diag(y_S) Z_S,

(dv the least-norm correction, by `lstsq`, which also serves a rank-deficient A, as duplicated rows
make it), and alpha_S from A' alpha_S = dv with 0 <= alpha_S <= C (bounded least squares). This
`_identify` step is tried at the end of each stage with |S| <= min(`identify_max`, 4 dim + 100)
(an SVD of the dense Z_S; a larger S is not a margin set yet); its (v, alpha) is
only a candidate: the solver keeps the lowest P and the highest D it has seen, both certified,
so a wrong identification costs one linear solve and is never reported as an answer. A warm start
tries it first, on the margins within 1e-9 of 1: from a previous optimum the first iteration
certifies; otherwise the warm start is rescaled by the exact line search of the hinge along it
(the best multiple: a previous C's solution is mostly off in scale) and tried again there.

Sample weights s_i (`Problem.sample_weight`) make every C above per row, C_i = C s_i: alpha_i =
C_i a_i in the box [0, C_i], the smoothed loss and its Hessian rows carry s_i
(H = I + (C / mu) Z_S' diag(s_S) Z_S), the conjugate term of D_mu is mu/2 sum alpha_i^2 / C_i, and
the identification's v_L and box use C_i (an unweighted problem keeps the scalar C: the same sums).

Stopping: tol is the relative duality gap, (P_best - D_best) / |P_best| <= tol ("converged").
Iterations are Newton steps and identification attempts. The solver stops with ``stalled``, and
says why in ``info["stop_reason"]``, when `stall_stages` (3) stages in a row do not halve the
certified gap (the rounding level: a tol below ~1e-14 relative), when `stall_iters` (5) Newton
steps in a row cannot move (the line search returns 0), or when mu would drop below 1e-14.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .base import Budget, Fit, Recorder, finish, import_optimize, split_warm_start
from .objectives import dual_objective, intercept_coordinate, pg_violation, primal_from_decision
from .newton import conjugate_gradient, line_search
from .problem import Problem
from .registry import Param, SolverSpec, register


# Below this smoothing (relative to a margin of 1) the quadratic piece is rounding.
_MU_MIN = 1e-14

# ------------------------------------------------------------------ the linear map Z = [X, c 1]
class _Z:
    """v = (w, u) -> Z v = X w + c u, and s -> Z' s; c = B for a regularized intercept."""

    def __init__(self, problem: Problem, X=None):
        self.X = problem.X if X is None else X
        self.d = problem.n_features
        self.c, _ = intercept_coordinate(problem)
        self.has_u = problem.intercept != "none"
        self.dim = self.d + int(self.has_u)

    def dot(self, v):
        f = np.asarray(self.X @ v[:self.d]).ravel()
        return f + self.c * v[self.d] if self.has_u else f

    def tdot(self, s):
        g = np.asarray(self.X.T @ s).ravel()
        return np.append(g, self.c * float(s.sum())) if self.has_u else g

    def rows(self, S):
        """Z_S as a dense (|S|, dim) array."""
        Xs = self.X[S]
        Xs = Xs.toarray() if sp.issparse(Xs) else np.array(Xs)
        return np.hstack([Xs, np.full((Xs.shape[0], 1), self.c)]) if self.has_u else Xs

    def gram(self, S, s=None):
        """Z_S' Z_S (dim x dim), or Z_S' diag(s) Z_S with row weights s (of the rows S): the
        sparse product for CSR, so no BLAS rounding enters the Hessian of sparse input."""
        Xs = self.X[S]
        if s is None:
            G = np.asarray((Xs.T @ Xs).toarray() if sp.issparse(Xs) else Xs.T @ Xs)
            col = self.c * np.asarray(Xs.sum(axis=0)).ravel()
            corner = self.c * self.c * len(S)
        else:
            sX = sp.diags(s) @ Xs if sp.issparse(Xs) else s[:, None] * Xs
            G = np.asarray((Xs.T @ sX).toarray() if sp.issparse(Xs) else Xs.T @ sX)
            col = self.c * np.asarray(sX.sum(axis=0)).ravel()
            corner = self.c * self.c * float(s.sum())
        if not self.has_u:
            return G
        out = np.empty((self.dim, self.dim))
        out[:self.d, :self.d] = G
        out[:self.d, self.d] = col
        out[self.d, :self.d] = col
        out[self.d, self.d] = corner
        return out


def _smoothed_loss_sum(m, mu, kink, s=None):
    """sum_i s_i l(m_i) for the loss of `line_search` (kink = mu: smoothed hinge; inf: squared
    hinge); s None: all 1."""
    r = 1.0 - m
    quad = (r > 0.0) & (r < kink)
    lin = r >= kink
    if s is None:
        return float((r[quad] ** 2).sum() / (2.0 * mu) + (r[lin] - kink / 2.0).sum() * (kink / mu))
    return float((s[quad] * r[quad] ** 2).sum() / (2.0 * mu) + (s[lin] * (r[lin] - kink / 2.0)).sum() * (kink / mu))


def _identify(problem, Z, S, L, max_rows):
    """The hinge optimum if (L, S, R) are its sets (module docstring, Identification):
    (v, alpha) with A v = 1 on S, alpha = C on L, 0 on R, and alpha_S in [0, C] fitted to v by
    bounded least squares. None when S is too large to be a margin set or to solve for."""
    # C_i per row when weighted (module docstring); the scalar C otherwise.
    sw = problem.sample_weight
    C = problem.C if sw is None else problem.C_i
    y = problem.y
    nS = int(S.sum())
    # The margin set of a hinge optimum has about dim points (more only with duplicated rows);
    # a stage whose S is far larger is not near it yet, and its lstsq would be wasted (on the
    # a9a-like set S holds many times dim rows while mu is large, about dim at the optimum).
    # Its cost is the SVD of the dense |S| x dim Z_S (|S| dim min(|S|, dim) flops), so it is
    # also capped at max_rows rows and 2e7 entries (160 MB).
    if nS == 0 or nS > min(4 * Z.dim + 100, max_rows) or nS * Z.dim > 20_000_000:
        return None
    # The scalar C outside, the weights inside: all-ones weights take the unweighted sums.
    vL = problem.C * Z.tdot(np.where(L, y if sw is None else sw * y, 0.0))
    CS = C if np.ndim(C) == 0 else C[S]
    A = y[S, None] * Z.rows(np.flatnonzero(S))
    rhs = 1.0 - A @ vL
    # Least-norm correction (gelsd: SVD-based, so a rank-deficient A, from duplicated rows,
    # gives the one v of the affine set closest to v_L instead of an arbitrary one).
    dv = sla.lstsq(A, rhs, lapack_driver="gelsd")[0]
    aS = sla.lstsq(A.T, dv, lapack_driver="gelsd")[0]
    if aS.min() < 0.0 or np.any(aS > CS):
        # The least-norm multipliers leave the box (degenerate sets: many alpha_S fit dv);
        # look for ones inside it.
        from scipy.optimize import lsq_linear     # imported by fit_smooth_newton's first call
        aS = lsq_linear(A.T, dv, bounds=(0.0, CS), method="bvls").x
    alpha = np.where(L, C, 0.0)
    alpha[S] = np.clip(aS, 0.0, CS)
    return vL + dv, alpha


def fit_smooth_newton(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
                      mu0: float = 1.0, shrink: float = 0.1,
                      identify: bool = True, identify_max: int = 1000,
                      linear_solver: str = "auto", max_cg: int = 1000, stall_iters: int = 5,
                      stall_stages: int = 3) -> Fit:
    """Smoothed-hinge Newton with continuation (see the module docstring).

    budget.tol: the relative duality gap (P - D) / |P| to reach. Iterations: Newton steps plus
    identification attempts. mu0: the first smoothing (hinge). shrink: the factor mu is cut by
    between stages. identify/identify_max: try the exact step on the
    stage's margin set when it has at most that many points (and at most 4 dim + 100). linear_solver: the Newton system,
    by Cholesky of the (dim x dim) Hessian ("direct") or CG ("cg"); "auto" is direct up to
    2048 features. stall_iters: stop ``stalled`` after that many consecutive Newton steps
    that cannot move v (the line search returns 0 at the rounding floor), or after
    stall_stages stages in a row that did not halve the certified gap.
    """
    import_optimize()
    y = problem.y
    C = problem.C
    sw = problem.sample_weight
    # The per-row penalty C_i = C s_i where alpha, the box and the conjugate term need it.
    Ci = C if sw is None else C * sw
    Z = _Z(problem)
    dim = Z.dim
    hinge = problem.loss == "hinge"
    tol = budget.tol
    max_iter = budget.iterations(500)
    if linear_solver == "auto":
        linear_solver = "direct" if dim <= 2048 else "cg"
    # The loss of the current stage: kink = mu (smoothed hinge) or inf with mu = 1/2 (squared hinge).
    mu = float(mu0) if hinge else 0.5
    kink_of = (lambda mu_: mu_) if hinge else (lambda mu_: math.inf)
    U = Ci if hinge else math.inf

    w0, b0 = split_warm_start(problem, warm_start)
    v = np.append(w0, b0 / Z.c) if Z.has_u else w0

    best = {"P": math.inf, "D": -math.inf, "v": np.zeros(dim), "alpha": np.zeros(problem.n_samples),
            "wa": np.zeros(dim)}

    def offer_primal(v_, f_):
        P_ = _primal(v_, f_)
        if P_ < best["P"]:
            best.update(P=P_, v=v_.copy())
        return P_

    def _primal(v_, f_):
        u_ = v_[Z.d] if Z.has_u else 0.0
        return primal_from_decision(problem, float(v_[:Z.d] @ v_[:Z.d]), Z.c * u_, f_)

    def offer_dual(alpha_, wa_):
        # D with the intercept coordinate's share of ||Z' alpha y||^2 (objectives.dual_objective).
        D_ = dual_objective(problem, alpha_, float(wa_ @ wa_))
        if D_ > best["D"]:
            best.update(D=D_, alpha=alpha_.copy(), wa=wa_.copy())
        return D_

    def rel_gap():
        if not (math.isfinite(best["P"]) and math.isfinite(best["D"])):
            return math.inf
        return (best["P"] - best["D"]) / max(abs(best["P"]), 1e-300)

    def certificates():
        return best["P"], best["D"], best["P"] - best["D"]

    it = 0
    status = "max_iter"
    reason = ""
    info = {"n_stages": 1, "n_identify": 0, "identified": False, "mu_end": math.nan, "n_cg": 0}

    def try_identify(S_, L_):
        out = _identify(problem, Z, S_, L_, identify_max)
        info["n_identify"] += 1
        if out is None:
            return
        v_id, alpha_id = out
        offer_primal(v_id, Z.dot(v_id))
        offer_dual(alpha_id, Z.tdot(alpha_id * y))

    if warm_start is not None and np.any(v):
        f = Z.dot(v)
        if hinge and identify:
            # From a previous optimum the margin set is the margins at 1 up to rounding.
            r = 1.0 - y * f
            try_identify(np.abs(r) <= 1e-9, r > 1e-9)
            it += 1
            if rel_gap() <= tol:
                info["identified"] = True
        if rel_gap() > tol:
            # Best multiple of the warm start (a previous C's solution is off in scale):
            # the exact line search from 0 along v.
            # The scale is the hinge's own (a smoothing of 1e-12, not mu0's, whose best multiple
            # of an optimum is not 1).
            q = y * f
            mu_s = 1e-12 if hinge else mu
            t = line_search(np.zeros_like(q), q, C, mu_s, kink_of(mu_s), 0.0, float(v @ v), sw)
            v = t * v if t > 0 else np.zeros(dim)
            if hinge and identify and t > 0:
                # A warm start off only in scale (the optimum of a nearby C) is identified here.
                r = 1.0 - t * (y * f)
                try_identify(np.abs(r) <= 1e-9, r > 1e-9)
                it += 1
                info["identified"] = rel_gap() <= tol

    f = Z.dot(v)
    still = 0
    stages_flat = 0
    stage_gap = math.inf
    while rel_gap() > tol and it < max_iter:
        kink = kink_of(mu)
        m = y * f
        r = 1.0 - m
        alpha = Ci * np.clip(r / mu, 0.0, kink / mu)
        wa = Z.tdot(alpha * y)
        P = offer_primal(v, f)
        D = offer_dual(alpha, wa)
        if rel_gap() <= tol:
            break
        g = v - wa
        S = (r > 0.0) & (r < kink)
        if hinge:
            P_mu = 0.5 * float(v @ v) + C * _smoothed_loss_sum(m, mu, kink, sw)
            D_mu = D - 0.5 * mu / C * float(alpha @ (alpha if sw is None else alpha / sw))
            G_mu = P_mu - D_mu
            E_mu = (P - D) - G_mu   # the smoothing error C sum_S r (1 - r/mu) >= 0
            if G_mu <= 0.5 * E_mu:
                # This stage is solved to within its smoothing error: try the exact step on its
                # sets, then cut mu.
                if identify:
                    try_identify(S, r >= kink)
                    it += 1
                    if rel_gap() <= tol:
                        info["identified"] = True
                        break
                # A stage that does not halve the best certified gap made no progress; the gap
                # of a stage's optimum is linear in mu, so `stall_stages` of them in a row mean
                # the rounding level (measured: ~1e-14 relative after identification).
                stages_flat = stages_flat + 1 if rel_gap() > 0.5 * stage_gap else 0
                stage_gap = min(stage_gap, rel_gap())
                if mu * shrink < _MU_MIN or stages_flat >= stall_stages:
                    status = "stalled"
                    reason = (f"relative duality gap {rel_gap():.3g} > tol {tol:g} and not falling "
                              f"any more (mu={mu:.3g}, {stages_flat} stages without progress)")
                    break
                mu *= shrink
                info["n_stages"] += 1
                continue
        # Newton step on P_mu: H = I + (C/mu) Z_S' Z_S.
        idx = np.flatnonzero(S)
        if linear_solver == "direct":
            H = (C / mu) * Z.gram(idx, None if sw is None else sw[idx])
            H[np.diag_indices(dim)] += 1.0
            step = -sla.cho_solve(sla.cho_factor(H, lower=True, check_finite=False), g, check_finite=False)
        else:
            # Z_S sliced once per Newton step (a CSR row slice costs as much as a product).
            Zs = _Z(problem, Z.X[idx])
            s_idx = None if sw is None else sw[idx]

            def hess_vec(p):
                z = Zs.dot(p)
                return p + (C / mu) * Zs.tdot(z if s_idx is None else s_idx * z)
            gn = float(np.linalg.norm(g))
            forcing = min(0.1, math.sqrt(gn / max(float(np.linalg.norm(v)) + gn, 1e-300)))
            step, n_cg = conjugate_gradient(hess_vec, g, forcing * gn, max_cg)
            info["n_cg"] += n_cg
        q = y * Z.dot(step)
        t = line_search(m, q, C, mu, kink, float(v @ step), float(step @ step), sw)
        it += 1
        v_new = v + t * step
        if not np.isfinite(v_new).all():
            status = "diverged"
            reason = "non-finite Newton step"
            break
        moved = t > 0.0 and not np.array_equal(v_new, v)
        v = v_new
        f = Z.dot(v)
        if recorder.due(it):
            recorder.record(it, certificates)
        if moved:
            still = 0
        else:
            # The rounding floor of this stage: no Newton step lowers P_mu any more. Try the
            # exact step on its sets and cut mu (hinge); the squared hinge has nowhere to go.
            still += 1
            if hinge and still < stall_iters and mu > _MU_MIN:
                if identify:
                    try_identify(S, r >= kink)
                    if rel_gap() <= tol:
                        info["identified"] = True
                        break
                mu *= shrink
                info["n_stages"] += 1
            else:
                status = "stalled"
                reason = (f"the line search cannot move (rounding floor) at mu={mu:.3g}; "
                          f"relative duality gap {rel_gap():.3g} > tol {tol:g}")
                break
        if recorder.out_of_time(budget):
            status = "timeout"
            break
    if rel_gap() <= tol:
        status = "converged"
    fit_time = recorder.close(it, certificates)
    v, alpha, wa = best["v"], best["alpha"], best["wa"]
    P, D = best["P"], best["D"]
    if not math.isfinite(P):
        status = "diverged"
    # The dual's projected-gradient spread at the returned alpha: grad = Q alpha - 1 (+ diag alpha).
    diag = 0.0 if hinge else 0.5 / Ci
    kkt = pg_violation(y * Z.dot(wa) - 1.0 + diag * alpha, alpha, U)
    info.update(mu_end=mu if hinge else math.nan, n_sv=int(np.count_nonzero(alpha)), stop_reason=reason)
    finish(status, "smooth_newton", it, reason or (f"relative duality gap {rel_gap():.3g} > tol {tol:g}"
                                                   if status in ("max_iter", "timeout") else ""))
    u = v[Z.d] if Z.has_u else 0.0
    return Fit(b=float(Z.c * u), status=status, n_iter=it, primal=P, w=v[:Z.d].copy(), alpha=alpha, dual=D,
               gap=P - D, kkt_violation=kkt, fit_time_s=fit_time, info=info)


def _warmup():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([1.0, -1.0, -1.0])
    for loss in ("hinge", "squared_hinge"):
        fit_smooth_newton(Problem(X, y, C=10.0, loss=loss), budget=Budget(max_iter=20),
                          recorder=Recorder(enabled=False).start())


register(SolverSpec(
    name="smooth_newton",
    family="primal",
    sample_weight=True,
    fit=fit_smooth_newton,
    params={
        "mu0": Param(1.0, "float", low=0.0, open_low=True, doc="first smoothing of the hinge"),
        "shrink": Param(0.1, "float", low=0.0, high=1.0, open_low=True, open_high=True,
                        doc="factor mu is cut by between stages"),
        "identify": Param(True, "bool", doc="try the exact step on each stage's margin set"),
        "identify_max": Param(1000, "int", low=1, doc="largest margin set the exact step solves for"),
        "linear_solver": Param("auto", "str", options=("auto", "direct", "cg"), doc="Newton system"),
        "max_cg": Param(1000, "int", low=1, doc="CG iterations per Newton step"),
        "stall_iters": Param(5, "int", low=1, doc="consecutive steps that cannot move before 'stalled'"),
        "stall_stages": Param(3, "int", low=1, doc="consecutive stages that do not halve the gap before 'stalled'"),
    },
    losses=("hinge", "squared_hinge"),
    intercepts=("none", "regularized"),
    kernels=("linear",),
    warm_start=True,
    default_max_iter=500,
    version="1",
    description="smoothed-hinge Newton with continuation and a certified duality gap",
    warmup=_warmup,
))
