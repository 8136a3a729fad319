"""Full-batch gradient descent on the primal of the L2-SVM (squared hinge).

duros_katzman, Section 4.1: "we use the entire training set to compute the
gradient", a fixed learning rate eta = 1e-3 and the squared hinge L = max(0, 1 - y f)^2. The
problem is the primal of DESIGN.md,

    P(w, u) = 1/2 ||w||^2 + r/2 u^2 + C sum_i s_i loss(y_i f_i),   f_i = w . x_i + c u,

with sample weights s_i (1 when unweighted), where the intercept is the extra coordinate u with feature value c and penalty r:
``none`` (no u), ``regularized`` (c = B = intercept_scaling, r = 1: LIBLINEAR's bias feature,
b = B u) and ``free`` (c = 1, r = 0: b = u unpenalised). The gradient is

    grad_w = w + C X' (s * y * loss'(y f)),   grad_u = r u + C c sum_i s_i y_i loss'(y_i f_i),

two sparse or dense matrix-vector products per iteration and nothing per sample in Python.
The step is fixed (the paper's eta), backtracking (Armijo: start from twice the last accepted step
and halve until P(v - t g) <= P(v) - sigma t ||g||^2), or ``bb`` (the default): the
Barzilai-Borwein step t = s's / s'z (s = v_k - v_k-1, z = grad_k - grad_k-1; Barzilai and Borwein
1988) as the first trial, halved until the nonmonotone Armijo test of Grippo, Lampariello and
Lucidi (1986) against the largest P of the last ``BB_MEMORY`` iterates holds (Raydan 1997's
globalised BB). Plain Armijo's step can only double per iteration and settles near 1 / L, the
worst curvature, so on ill-conditioned sets its iterations grow with the condition number
(on rcv1_like at a large C it ran into its iteration cap); BB's step follows the curvature
along the path and ends there in a small fraction of those iterations (Defaults that converge,
"gd alone"). Because f is linear in the
step, f(t) = f - t X g, each trial costs O(n), not a matrix product.

Stopping (``stop``): ``grad_norm`` when ||grad P|| <= tol ||grad P(0)|| (LIBLINEAR's scale), ``rel_decrease`` when
(P_k - P_{k+1}) / P_k <= tol. Iterations are gradient steps.

Certificates (`linear_certificates`, shared with newton, pegasos and the references): P, and for
the squared hinge the dual point of the KKT map alpha_i = 2C (1 - y_i f_i)_+, its dual objective
D(alpha) and gap P - D (>= 0 for any w, 0 at the optimum), and LIBLINEAR's projected-gradient
spread of the dual at alpha.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from .base import Budget, Fit, Recorder, finish, split_warm_start
from .objectives import (gradient_norm_at_zero, intercept_coordinate, linear_certificates, loss_derivative,
                         loss_values, step_from_learning_rate)
from .problem import Problem
from .registry import Param, SolverSpec, register

# Iterates whose largest P the nonmonotone (bb) test compares against (GLL 1986 use 10).
BB_MEMORY = 10


# ------------------------------------------------------------------ driver
def fit_gd(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
           step: str = "bb", eta: float = 1e-3, eta_scale: str = "objective",
           stop: str = "grad_norm", armijo_sigma: float = 1e-4) -> Fit:
    """Gradient descent on P (duros_katzman 4.1; see the module docstring).

    step: ``fixed`` (eta every iteration, the paper's method), ``armijo`` (backtracking that
    tries eta first, then twice the last accepted step each iteration) or ``bb`` (Barzilai-
    Borwein trial step, nonmonotone backtracking; eta is the first iteration's trial). budget.tol
    is the tolerance of `stop`; iterations are gradient steps. eta_scale: eta is a step on P
    (``objective``) or duros_katzman's learning rate on the averaged objective P / (C n)
    (``mean``; converted by objectives.step_from_learning_rate).
    """
    X = problem.X
    y = problem.y
    C = problem.C
    loss, hk = problem.loss, problem.huber_k
    c, r = intercept_coordinate(problem)
    max_iter = budget.iterations(10000)
    tol = budget.tol

    w, b = split_warm_start(problem, warm_start)
    u = b / c if c else 0.0
    f = np.asarray(X @ w).ravel() + c * u

    def objective(wsq, u_, f_):
        return 0.5 * wsq + 0.5 * r * u_ * u_ + C * float(problem.weigh(loss_values(loss, y * f_, hk)).sum())

    wsq = float(w @ w)
    P = objective(wsq, u, f)

    def certificates():
        cert = linear_certificates(problem, w, c * u, f)
        return cert["primal"], cert["dual"], cert["gap"]

    # The current model for the caller's trace extras (the test error along the run).
    recorder.model(lambda: SimpleNamespace(w=w, alpha=None, b=c * u))
    # ||grad P|| at w = 0 scales the stopping test (as LIBLINEAR's Newton does), so that a warm
    # start near the optimum stops at once instead of chasing a relative decrease of its own.
    g0 = gradient_norm_at_zero(problem)
    t = float(eta) if eta_scale == "objective" else step_from_learning_rate(eta, C, problem.n_samples)
    status = "max_iter"
    detail = ""
    it = 0
    gnorm = math.nan
    recent = [P]            # the last BB_MEMORY objectives (step="bb")
    prev = None             # (g_w, g_u, accepted step) of the last iteration (step="bb")
    while it < max_iter:
        # Gradient: two products with X (here and Xg below); nothing per sample in Python.
        # Sample weights scale each row's loss term, so its derivative (Problem.weigh).
        s = problem.weigh(y * loss_derivative(loss, y * f, hk))
        g_w = w + C * np.asarray(X.T @ s).ravel()
        g_u = r * u + C * c * float(s.sum())
        gsq = float(g_w @ g_w) + g_u * g_u
        gnorm = math.sqrt(gsq)
        if not math.isfinite(gnorm):
            status = "diverged"
            break
        if stop == "grad_norm" and gnorm <= tol * max(g0, 1e-300):
            status = "converged"
            break
        Xg = np.asarray(X @ g_w).ravel() + c * g_u
        wg = float(w @ g_w)
        if step == "fixed":
            t_acc = t
            P_new = objective(wsq - 2 * t * wg + t * t * float(g_w @ g_w), u - t * g_u, f - t * Xg)
        else:
            # Backtracking; f(t) = f - t Xg makes each trial O(n).
            if step == "bb":
                t_try = _bb_step(prev, g_w, g_u, t)
                P_ref = max(recent)
            else:
                t_try = min(2.0 * t, 1e12) if it > 0 else t
                P_ref = P
            ggw = float(g_w @ g_w)
            for _ in range(60):
                P_new = objective(wsq - 2 * t_try * wg + t_try * t_try * ggw, u - t_try * g_u,
                                  f - t_try * Xg)
                if P_new <= P_ref - armijo_sigma * t_try * gsq:
                    break
                t_try *= 0.5
            else:
                status, detail = "stalled", "Armijo backtracking found no decrease"
                break
            t_acc = t = t_try
            if step == "bb":
                prev = (g_w, g_u, t_acc)
                recent = (recent + [P_new])[-BB_MEMORY:]
        w -= t_acc * g_w
        u -= t_acc * g_u
        f -= t_acc * Xg
        wsq = float(w @ w)
        it += 1
        P_old, P = P, P_new
        if end := recorder.after(it, certificates, budget, diverged=not math.isfinite(P),
                                 converged=stop == "rel_decrease" and abs(P_old - P) <= tol * max(abs(P_old), 1e-300)):
            status = end
            break

    fit_time = recorder.seconds()
    if not (np.isfinite(w).all() and math.isfinite(u)):
        status = "diverged"
        cert = {"primal": math.nan, "dual": math.nan, "gap": math.nan, "kkt_violation": math.nan}
    else:
        recorder.close(it, certificates)
        cert = linear_certificates(problem, w, c * u, f)
        if not math.isfinite(cert["primal"]):
            status = "diverged"
    if status == "max_iter":
        detail = f"gradient norm {gnorm:.3g} (initial {g0:.3g}), tol {tol:g}"
    finish(status, "gd", it, detail)
    return Fit(b=float(c * u), status=status, n_iter=it, primal=cert["primal"], w=w, dual=cert["dual"],
               gap=cert["gap"], kkt_violation=cert["kkt_violation"], fit_time_s=fit_time,
               info={"grad_norm": gnorm, "grad_norm0": g0, "last_step": t})


def _bb_step(prev, g_w, g_u, t_last: float) -> float:
    """The Barzilai-Borwein step s's / s'z with s = -t g_prev, z = g - g_prev (first iteration,
    or z's curvature not positive: the last step)."""
    if prev is None:
        return t_last
    gp_w, gp_u, t_prev = prev
    # s = -t_prev g_prev: s's = t_prev^2 ||g_prev||^2, s'z = -t_prev g_prev'(g - g_prev).
    ss = t_prev * t_prev * (float(gp_w @ gp_w) + gp_u * gp_u)
    sz = -t_prev * (float(gp_w @ (g_w - gp_w)) + gp_u * (g_u - gp_u))
    if not sz > 0:
        return t_last
    return min(ss / sz, 1e12)


register(SolverSpec(
    name="gd",
    family="primal",
    sample_weight=True,
    fit=fit_gd,
    params={
        "step": Param("bb", "str", options=("fixed", "armijo", "bb"),
                      doc="fixed learning rate eta (duros_katzman 4.1), Armijo backtracking, or the "
                          "Barzilai-Borwein step with nonmonotone backtracking"),
        "eta": Param(1e-3, "float", low=0.0, open_low=True,
                     doc="the fixed step, and the first trial step of the backtracking"),
        "eta_scale": Param("objective", "str", options=("objective", "mean"),
                           doc="eta is a step on P, or a learning rate on P/(C n) (duros_katzman 4.1)"),
        "stop": Param("grad_norm", "str", options=("grad_norm", "rel_decrease"),
                      doc="||grad|| <= tol ||grad P(0)||, or relative objective decrease <= tol"),
        "armijo_sigma": Param(1e-4, "float", low=0.0, high=0.5, open_low=True, open_high=True,
                              doc="sufficient-decrease constant of the backtracking"),
    },
    losses=("squared_hinge", "huber_hinge"),
    # The first declared intercept is the default (estimator and sweeps): LIBLINEAR's bias feature.
    intercepts=("regularized", "none", "free", "basis"),
    kernels=("linear",),
    warm_start=True,
    default_max_iter=10000,
    # ||grad P|| <= 1e-3 ||grad P(0)||: with Armijo's step 1e-5 left much of a default sweep at
    # max_iter (the solvers guide's table; Defaults that converge, "gd alone").
    default_tol=1e-3,
    version="3",        # 2: traces carry the caller's extras (the test error); 3: step="bb" is the default
    description="full-batch gradient descent on the squared-hinge primal (duros_katzman 4.1)",
))
