"""What the three kernel dual solvers (`qp`, `svmlight`, `smo`) share: the dual, its feasible
set, the intercept b, and the final certificates.

The dual of the hinge-loss SVM with a free intercept (bertini, Section I; bertini = N. Bertini,
"Project #2 - Support Vector Machines", Optimization Methods for Machine Learning, Fall 2022):

    min_alpha f(alpha) = 1/2 alpha' Q alpha - e' alpha,   Q_ij = y_i y_j K(x_i, x_j),
    s.t. 0 <= alpha_i <= C,  y' alpha = 0,

with gradient G = Q alpha - e. The model is f(x) = sum_i alpha_i y_i K(x_i, x) + b, i.e.
beta = alpha * y and the decision values on the training set are K beta + b = y * (G + 1) + b.
In objectives' terms (design.md), D(alpha) = -f(alpha) and ||w||^2 = beta' K beta = alpha' Q alpha.

Optimality (bertini, Section II; Keerthi et al. 2001) is m(alpha) <= M(alpha) with

    m = max_{i in R} -y_i G_i,  M = min_{i in S} -y_i G_i,
    R = {alpha_i < C, y_i = +1} U {alpha_i > 0, y_i = -1},
    S = {alpha_i < C, y_i = -1} U {alpha_i > 0, y_i = +1}

(`objectives.kkt_violation_equality`), and every solver stops when m - M < tol.

Sample weights s_i make the box per row, 0 <= alpha_i <= C_i = C s_i (LIBSVM's weighted C-SVC):
wherever C appears above it is then C_i (`box`), and C is a number for an unweighted problem, so
its arithmetic is unchanged.
"""
from __future__ import annotations

import math

import numpy as np

from .kernels import QColumnCache, kernel_block
from .objectives import dual_objective, kkt_violation_equality, primal_from_decision
from .problem import Problem

#: The problem settings the kernel dual solvers take (bertini's dual: hinge, free intercept).
LOSSES = ("hinge",)
INTERCEPTS = ("free",)
KERNELS = ("linear", "rbf", "poly")


# ---------------------------------------------------------------------------- feasibility
def box(problem: Problem):
    """The upper bound of alpha: C, or the per-row C_i = C s_i of a weighted problem."""
    return problem.C if problem.sample_weight is None else problem.C_i


def project_feasible(alpha0: np.ndarray, y: np.ndarray, C, tol: float = 1e-13) -> np.ndarray:
    """Euclidean projection of alpha0 onto {0 <= alpha <= C, y' alpha = 0} (C a number or per
    row).

    The minimiser of 1/2 ||alpha - alpha0||^2 over that set is alpha(theta) =
    clip(alpha0 - theta y, 0, C) for the theta with y' alpha(theta) = 0; y' alpha(theta) is
    non-increasing in theta, so bisection finds it. A feasible alpha0 comes back unchanged.
    """
    alpha0 = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, C)
    C_max = float(np.max(C))
    if abs(float(y @ alpha0)) <= tol * max(1.0, C_max * alpha0.shape[0]):
        return alpha0

    def h(theta):
        return float(y @ np.clip(alpha0 - theta * y, 0.0, C))

    lo, hi = -C_max, C_max  # h(-C) >= 0 >= h(C): every alpha_i is pushed to the bound of its class
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if h(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * C_max:
            break
    alpha = np.clip(alpha0 - 0.5 * (lo + hi) * y, 0.0, C)
    # Remove the bisection's last rounding residue on one free variable (or a bound one).
    r = float(y @ alpha)
    if r != 0.0:
        free = np.flatnonzero((alpha > 0) & (alpha < C))
        for i in (free if free.size else np.arange(alpha.shape[0])):
            a = alpha[i] - r * y[i]
            if 0.0 <= a <= (C if np.ndim(C) == 0 else C[i]):
                alpha[i] = a
                break
    return alpha


def warm_alpha(problem: Problem, warm_start) -> np.ndarray:
    """Feasible starting alpha: zeros, or a warm start's alpha projected onto the feasible set
    (`project_feasible`), so a warm start from another C or a perturbed alpha is repaired."""
    n = problem.n_samples
    if warm_start is None or warm_start.get("alpha") is None:
        if warm_start is not None and warm_start.get("w") is not None:
            raise ValueError("the kernel dual solvers take a warm start alpha, not w")
        return np.zeros(n)
    alpha = np.asarray(warm_start["alpha"], dtype=np.float64)
    if alpha.shape != (n,):
        raise ValueError(f"warm_start alpha has shape {alpha.shape}, expected ({n},)")
    if not np.all(np.isfinite(alpha)):
        raise ValueError("warm_start alpha has non-finite values")
    return project_feasible(alpha, problem.y, box(problem))


# ---------------------------------------------------------------------------- C paths
class KernelPath:
    """What the fits of one C path share: tasks.run_path hands the same KernelPath to each fit
    of a (fold, kernel) path, in increasing C, as ``warm_start={"path": path}``.

    A solver that takes one (SolverSpec.kernel_path; smo) puts back, when a fit ends with a model,
    its kernel-column cache (in its final layout: the kernel values do not depend on C, so the
    next fit starts with the columns this one computed) and its alpha with the gradients G and
    G_bar at alpha and C, from which the next fit is seeded (`path_seed`). A fit takes the
    contents out as it starts (`take`): one that fails or diverges leaves the next a cold start
    and a fresh cache, never a cache whose layout its own swaps left half changed.
    """

    #: The largest kernel block between other rows and the training rows `decision` keeps.
    DECISION_BYTES = 256 << 20

    def __init__(self):
        self.state: dict | None = None
        self._rows = None   # (X, training X, kernel) of the kept block
        self._K = self._have = None

    @property
    def ready(self) -> bool:
        return self.state is not None

    def take(self) -> dict | None:
        state, self.state = self.state, None
        return state

    def keep(self, **state) -> None:
        self.state = state

    def decision(self, problem: Problem, fit, X) -> np.ndarray:
        """The fit's decision values on rows X, sum_{j in SV} alpha_j y_j K(x, x_j) + b, as
        `Problem.decision` computes them, with the columns K(X, x_j) kept for the path's later
        fits: a fold's test rows meet the same support vectors at every C (most of one C's are
        the next one's), so each column is computed once per path, not once per fit. Above
        DECISION_BYTES (test rows x training rows, float64) nothing is kept."""
        n = problem.n_samples
        if fit.alpha is None or 8 * X.shape[0] * n > self.DECISION_BYTES:
            return problem.decision(fit, X)
        if self._rows is None or self._rows[0] is not X or self._rows[1] is not problem.X \
                or self._rows[2] != problem.kernel:
            self._rows = (X, problem.X, problem.kernel)
            # column-major: a column computed touches its own pages only
            self._K, self._have = np.empty((X.shape[0], n), order="F"), np.zeros(n, dtype=bool)
        sv = np.flatnonzero(fit.alpha != 0)
        new = sv[~self._have[sv]]
        if new.size:
            self._K[:, new] = kernel_block(problem.kernel, X, problem.X[new], z_norms=problem.row_norms_sq[new])
            self._have[new] = True
        return self._K[:, sv] @ (fit.alpha[sv] * problem.y[sv]) + fit.b


def path_seed(alpha: np.ndarray, G: np.ndarray, G_bar: np.ndarray, y: np.ndarray, C_from_i, C_to_i,
              s: float) -> tuple:
    """The start of the next C of a path from the solution alpha at the box C_from_i (C_to_i =
    s C_from_i), without a kernel evaluation: alpha scaled by c, c one of

    - s, DeCoste & Wagstaff's seeding ("Alpha seeding for support vector machines", KDD 2000):
      the bounded variables (margin violators) stay at the new bound, and 0 <= alpha <= C and
      y' alpha = 0 hold; and
    - 1 (for s > 1), the last solution as it is, feasible in the larger box: where C_from
      already bounded no variable (the separable end of a path) it is the new solution;

    whichever has the lower dual objective f(c alpha) = c^2/2 alpha' Q alpha - c e' alpha
    (alpha' Q alpha = alpha' (G + e)). Neither seed alone wins on every path; taking the better
    of the two never did much worse than a cold start and, summed over paths, saved the most
    pair updates (Kernel and majorization solvers benchmark, "Older measurements from the
    solvers' comments").

    G and G_bar scale with alpha: G(c alpha) = c (G + e) - e; G_bar = sum_{alpha_j = C_j} C_j Q_j
    is s G_bar for c = s (the same bounded set) and 0 for c = 1 < s (nothing at the larger bound).
    Variables at their bound are put on the new bound exactly (s C_i rounds off it, and a
    variable a rounding below C would count as free); the equality is repaired by
    `project_feasible`, a no-op unless rounding left y' alpha off. Returns (alpha, G, G_bar, c),
    G and G_bar None when the repair moved alpha (the caller computes them)."""
    def f(c):
        return 0.5 * c * c * float(alpha @ (G + 1.0)) - c * float(alpha.sum())

    if s > 1.0 and f(1.0) <= f(s):
        return alpha.copy(), G.copy(), np.zeros_like(G_bar), 1.0
    bounded = alpha >= C_from_i
    seed = np.where(bounded, C_to_i, alpha * s)
    repaired = project_feasible(seed, y, C_to_i)
    if not (np.array_equal(repaired, seed) and np.array_equal(seed >= C_to_i, bounded)):
        return repaired, None, None, s
    return seed, s * (G + 1.0) - 1.0, s * G_bar, s


def gradient(cache: QColumnCache, alpha: np.ndarray, C):
    """G = Q alpha - e and G_bar = sum_{alpha_j = C_j} C_j Q[:, j] (LIBSVM's gradient of the
    bounded part, used to rebuild G after shrinking), by BLAS blocks over the support vectors
    only. C: a number, or per row."""
    y = cache.y
    sv = np.flatnonzero(alpha > 0)
    G = -np.ones(cache.n)
    if sv.size:
        G += y * cache.matvec(sv, alpha[sv] * y[sv])
    at_C = np.flatnonzero(alpha >= C)
    G_bar = np.zeros(cache.n)
    if at_C.size:
        if np.ndim(C) == 0:
            G_bar = C * y * cache.matvec(at_C, y[at_C])
        else:
            G_bar = y * cache.matvec(at_C, C[at_C] * y[at_C])
    return G, G_bar


# ---------------------------------------------------------------------------- hard margin
#: Rows above which the separability check's dense n x n linear program is refused.
SEPARABLE_MAX_ROWS = 5000


def check_separable(problem: Problem) -> None:
    """Refuse C = inf (the hard margin: 0 <= alpha_i, no upper bound) unless the data are
    separable by the kernel with a free intercept, i.e. some f = sum_j beta_j K(x_j, .) + b has
    y_i f(x_i) >= 1 on every row (the representer theorem puts a separating w in the span of
    the rows); otherwise the dual is unbounded and its solvers would raise alpha for ever. A
    linear program in (beta, b) decides it (in (w, b) for the linear kernel with fewer features
    than rows), by HiGHS through scipy.optimize.linprog."""
    from scipy.optimize import linprog

    from .kernels import kernel_block
    from .registry import SolverError

    n = problem.n_samples
    y = problem.y
    if problem.kernel.is_linear and problem.n_features < n:
        A = problem.X.toarray() if hasattr(problem.X, "toarray") else problem.X
        what = "hyperplane"
    else:
        if n > SEPARABLE_MAX_ROWS:
            raise SolverError(f"C=inf (a hard margin) needs a check that the data are separable, a linear program "
                              f"over an {n} x {n} kernel matrix: above {SEPARABLE_MAX_ROWS} rows it is refused; use a finite C")
        A = kernel_block(problem.kernel, problem.X, problem.X)
        what = f"{problem.kernel.name} kernel"
    # y_i (A_i v + b) >= 1  <=>  -y_i A_i v - y_i b <= -1; zero objective: feasibility only.
    A_ub = -y[:, None] * np.hstack([A, np.ones((n, 1))])
    res = linprog(np.zeros(A.shape[1] + 1), A_ub=A_ub, b_ub=-np.ones(n), bounds=(None, None), method="highs")
    if res.status == 2:
        raise SolverError(f"C=inf (a hard margin) needs data separable by the {what}: no f with y_i f(x_i) >= 1 on "
                          f"every one of the {n} rows exists (the linear program is infeasible), so the dual is "
                          "unbounded; use a finite C")
    if res.status != 0:
        raise SolverError(f"C=inf: the separability check did not conclude ({res.message}); use a finite C")


# ---------------------------------------------------------------------------- intercept
def intercept(G: np.ndarray, alpha: np.ndarray, y: np.ndarray, C):
    """b and how it was found.

    With free support vectors (0 < alpha_i < C): b = mean over them of y_i - (K beta)_i =
    -y_i G_i (bertini, Section I.D, first formula). When every support vector is at a bound the KKT
    conditions only confine b to [L, U] (Burges & Crisp 1999; bertini, Section I.D):

        L = max( max_{V+} (1 - (K beta)_i), max_{S-} (-1 - (K beta)_i) )
        U = min( min_{V-} (-1 - (K beta)_i), min_{S+} (1 - (K beta)_i) )

    with S+- = {alpha_i = C, y_i = +-1}, V+- = {alpha_i = 0, y_i = +-1}; bertini takes L when
    |S-| > |S+| and U when |S-| < |S+|. At a feasible alpha with no free variable the two counts
    are equal (y' alpha = 0) and the primal is flat on [L, U]; we then take its midpoint, as
    LIBSVM does, so decision values match SVC's.

    Returns (b, rule, (L, U)) with rule "free" or "bound_only"; (L, U) is (nan, nan) for "free".
    """
    mG = -y * G  # = y_i - (K beta)_i, the b that puts x_i on its margin
    free = (alpha > 0) & (alpha < C)
    if free.any():
        return float(mG[free].mean()), "free", (math.nan, math.nan)
    at_C = alpha >= C
    low = (at_C & (y < 0)) | (~at_C & (y > 0))    # S- and V+ bound b from below
    high = (at_C & (y > 0)) | (~at_C & (y < 0))   # S+ and V- bound b from above
    L = float(mG[low].max()) if low.any() else -math.inf
    U = float(mG[high].min()) if high.any() else math.inf
    n_Sp = int(np.count_nonzero(at_C & (y > 0)))
    n_Sm = int(np.count_nonzero(at_C & (y < 0)))
    if n_Sm > n_Sp and math.isfinite(L):
        b = L
    elif n_Sm < n_Sp and math.isfinite(U):
        b = U
    elif math.isfinite(L) and math.isfinite(U):
        b = 0.5 * (L + U)
    else:
        b = L if math.isfinite(L) else (U if math.isfinite(U) else 0.0)
    return float(b), "bound_only", (L, U)


# ---------------------------------------------------------------------------- certificates
def dual_f(alpha: np.ndarray, G: np.ndarray) -> float:
    """f(alpha) = 1/2 alpha' Q alpha - e' alpha = 1/2 alpha' (G - e) from G = Q alpha - e."""
    return float(0.5 * alpha @ (G - 1.0))


def certificates(problem: Problem, alpha: np.ndarray, G: np.ndarray):
    """(P, D, gap, m - M, b, info) at alpha with its exact gradient G.

    P is the primal of the model (beta = alpha y, b) through objectives.primal_from_decision with
    ||w||^2 = beta' K beta and decision values K beta + b = y (G + 1) + b; D = -f(alpha) through
    objectives.dual_objective.
    """
    y, C = problem.y, box(problem)
    Kbeta = y * (G + 1.0)
    wnorm2 = float(alpha @ (G + 1.0))  # alpha' Q alpha
    b, rule, (L, U) = intercept(G, alpha, y, C)
    P = primal_from_decision(problem, wnorm2, b, Kbeta + b)
    D = dual_objective(problem, alpha, wnorm2)
    kkt = kkt_violation_equality(G, alpha, y, C)
    n_sv = int(np.count_nonzero(alpha > 0))
    n_bounded = int(np.count_nonzero(alpha >= C))
    info = {"f_alpha": -D, "m_minus_M": kkt, "n_sv": n_sv, "n_bounded_sv": n_bounded,
            "n_free_sv": n_sv - n_bounded, "b_rule": rule}
    if rule == "bound_only":
        info["b_interval"] = (L, U)
    return P, D, P - D, kkt, b, info


def finish_fit(name: str, problem: Problem, alpha: np.ndarray, G: np.ndarray, status: str, n_iter: int,
               tol: float, fit_time: float, reason: str = "", **extra):
    """The closing of every kernel dual driver: certificates at the returned alpha, status
    ``diverged`` for a non-finite objective, ``stalled`` for a ``converged`` whose m - M still
    exceeds tol, the ConvergenceWarning, and the `Fit` with the solver's own `extra` info.

    reason: why the driver stopped short (a driver's own ``stalled``, say); appended to the
    warning and kept as info["stop_reason"] when the status is not ``converged``."""
    from .base import Fit, finish

    P, D, gap, kkt, b, info = certificates(problem, alpha, G)
    if status == "converged" and kkt > tol:
        status = "stalled"
    if math.isinf(problem.C) and math.isinf(P) and np.all(np.isfinite(alpha)):
        # A hard margin's P is finite only where every margin is >= 1: a solve stopped at tol
        # leaves margins up to about tol below 1. Short of the certificate, not divergent.
        worst = float(np.min(problem.y * (problem.y * (G + 1.0) + b)))
        status = "stalled"
        reason = (reason + "; " if reason else "") + (
            f"hard margin: the smallest margin is {worst:.9g} < 1, so the model is not feasible for C=inf "
            f"(P = inf); a smaller tol (1e-8, say) ends with every margin >= 1")
    elif not math.isfinite(P):
        status = "diverged"
    detail = f"m - M = {kkt:.3g} (tol {tol:g})" + (f"; {reason}" if reason else "")
    finish(status, name, n_iter, detail if status != "converged" else "", kernel_dual=True)
    info.update(extra)
    if reason and status != "converged":
        info["stop_reason"] = reason
    return Fit(b=b, status=status, n_iter=n_iter, primal=P, alpha=alpha, dual=D, gap=gap,
               kkt_violation=kkt, fit_time_s=fit_time, info=info)
