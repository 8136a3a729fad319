"""The one objective every solver minimises or certifies against, its dual, the optimality
measures, and the conversions between the papers' parameterisations. Nothing else in the
project restates these formulas.

Primal (DESIGN.md):

    P(w, b) = 1/2 ||w||^2 [+ 1/2 w_b^2 if intercept="regularized"] + C sum_i loss(y_i f_i)
    f_i = w . phi(x_i) + b,  b = B w_b  (B = intercept_scaling)

Losses of the margin m = y f:

    hinge          max(0, 1 - m)
    squared_hinge  max(0, 1 - m)^2
    huber_hinge    0 for m > 1; (1 - m)^2 / (2 (k + 1)) for -k < m <= 1; 1 - m - (k + 1)/2 for m <= -k
                   (Groenen, Nalbantov & Bioch 2008, eq. 4; troyan's "Huber hinge").

Dual, for hinge and squared hinge (Hsieh et al. 2008, eq. 4 written as a maximisation):

    D(alpha) = sum_i alpha_i - 1/2 ||sum_i alpha_i y_i phi(x_i)||^2 - diag/2 ||alpha||^2,
    0 <= alpha_i <= U,   hinge: (diag, U) = (0, C);  squared hinge: (1/(2C), inf)

with sum_i alpha_i y_i = 0 added when the intercept is free. The duality gap P - D >= 0 is
zero exactly at the optimum.

Sample weights s_i (`Problem.sample_weight`) scale the loss terms, C sum_i s_i loss_i, that is a
per-row penalty C_i = C s_i: the dual's box and diagonal become per row, (diag_i, U_i) = (0, C_i)
for the hinge and (1/(2 C_i), inf) for the squared hinge (LIBSVM's weighted C-SVC, Chang and Lin
2011, Section 2.1 with C_i), and D(alpha) = sum alpha_i - 1/2 ||.||^2 - 1/2 sum_i diag_i alpha_i^2.
An unweighted problem takes exactly the sums it took before (`Problem.weigh`).
"""
from __future__ import annotations

import math

import numpy as np

from .problem import Problem


# ---------------------------------------------------------------------------- losses
def loss_values(loss: str, margins: np.ndarray, huber_k: float = 1.0) -> np.ndarray:
    """loss(m) elementwise for margins m = y f. The hinges are computed in the one new array
    r = 1 - m (a certificate on full RCV1 otherwise allocated, and faulted in, 6 MB a step)."""
    r = 1.0 - np.asarray(margins, dtype=np.float64)
    if loss == "hinge":
        return np.maximum(r, 0.0, out=r)
    if loss == "squared_hinge":
        np.maximum(r, 0.0, out=r)
        return np.multiply(r, r, out=r)
    if loss == "huber_hinge":
        k = float(huber_k)
        out = np.where(r > 0, r * r / (2.0 * (k + 1.0)), 0.0)
        lin = r >= k + 1.0  # m <= -k
        out[lin] = r[lin] - (k + 1.0) / 2.0
        return out
    raise ValueError(f"loss={loss!r} is not one of hinge, squared_hinge, huber_hinge")


def loss_derivative(loss: str, margins: np.ndarray, huber_k: float = 1.0) -> np.ndarray:
    """d loss / d m elementwise (a subgradient, -1 on the kink side, for the hinge)."""
    r = 1.0 - np.asarray(margins, dtype=np.float64)
    if loss == "hinge":
        return -(r > 0).astype(np.float64)
    if loss == "squared_hinge":
        return -2.0 * np.maximum(r, 0.0)
    if loss == "huber_hinge":
        k = float(huber_k)
        return -np.clip(r / (k + 1.0), 0.0, 1.0)
    raise ValueError(f"loss={loss!r} is not one of hinge, squared_hinge, huber_hinge")


# ---------------------------------------------------------------------------- primal
def regularizer(problem: Problem, w_norm_sq: float, b: float) -> float:
    """1/2 ||w||^2, plus 1/2 w_b^2 = 1/2 (b / B)^2 for a regularized intercept."""
    reg = 0.5 * w_norm_sq
    if problem.intercept == "regularized":
        try:
            reg += 0.5 * (b / problem.intercept_scaling) ** 2
        except OverflowError:
            # Python floats raise where numpy's give inf: a diverged iterate's P is inf (and
            # its solver says "diverged"), not a traceback.
            reg = math.inf
    return reg


def primal_from_decision(problem: Problem, w_norm_sq: float, b: float, f: np.ndarray) -> float:
    """P from ||w||^2 (beta' K beta for a kernel model), b and decision values f = w.phi(x) + b."""
    if math.isinf(problem.C):
        # Hard margin: P = 1/2||w||^2 when every margin is >= 1, +inf otherwise.
        feasible = np.all(problem.y * f >= 1.0 - 1e-9)
        return regularizer(problem, w_norm_sq, b) if feasible else math.inf
    losses = loss_values(problem.loss, problem.y * f, problem.huber_k)
    return regularizer(problem, w_norm_sq, b) + problem.C * float(problem.weigh(losses).sum())


def decision_linear(problem: Problem, w: np.ndarray, b: float = 0.0) -> np.ndarray:
    return np.asarray(problem.X @ w).ravel() + b


def primal_objective(problem: Problem, w: np.ndarray, b: float = 0.0) -> float:
    """P(w, b) for a linear model."""
    w = np.asarray(w, dtype=np.float64)
    return primal_from_decision(problem, float(w @ w), b, decision_linear(problem, w, b))


# ---------------------------------------------------------------------------- dual
def dual_box(problem: Problem) -> tuple[float, float]:
    """(diag, U) of the dual: the loss enters the dual only through these two numbers
    (Hsieh et al. 2008, Table 1), which is how one DCD kernel serves both losses."""
    if problem.loss == "hinge":
        return 0.0, problem.C
    if problem.loss == "squared_hinge":
        return 0.5 / problem.C, math.inf
    raise ValueError(f"the dual is defined here for hinge and squared_hinge, not {problem.loss!r}")


def dual_box_i(problem: Problem, C: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(diag_i, U_i) per row: `dual_box` with the per-row penalty C_i = C s_i (module docstring);
    every entry equals `dual_box`'s when the problem is unweighted. C: another C (pegasos's)."""
    C = problem.C if C is None else float(C)
    n = problem.n_samples
    Ci = np.full(n, C) if problem.sample_weight is None else C * problem.sample_weight
    if problem.loss == "hinge":
        return np.zeros(n), Ci
    if problem.loss == "squared_hinge":
        return 0.5 / Ci, np.full(n, math.inf)
    raise ValueError(f"the dual is defined here for hinge and squared_hinge, not {problem.loss!r}")


def diag_term(diag, alpha: np.ndarray) -> float:
    """sum_i diag_i alpha_i^2 (diag a scalar or per row), the squared hinge's part of D."""
    if np.ndim(diag) == 0:
        return float(diag * (alpha @ alpha))
    return float(diag @ (alpha * alpha))


def dual_objective(problem: Problem, alpha: np.ndarray, w_norm_sq: float) -> float:
    """D(alpha) given ||sum alpha_i y_i phi(x_i)||^2 (including w_b^2 when regularized)."""
    diag = dual_box(problem)[0] if problem.sample_weight is None else dual_box_i(problem)[0]
    alpha = np.asarray(alpha, dtype=np.float64)
    return float(alpha.sum() - 0.5 * w_norm_sq - 0.5 * diag_term(diag, alpha))


def primal_from_sums(C: float, w_norm_sq: float, loss_sum: float) -> float:
    """P from ||w||^2 (with w_b^2 when regularized) and sum_i s_i loss_i, the sum added up over
    partitions of the rows (solvers/cocoa.py): `primal_from_decision`'s sum, kept apart."""
    return 0.5 * w_norm_sq + C * loss_sum


def dual_from_sums(alpha_sum: float, w_norm_sq: float, diag_sum: float) -> float:
    """D from sum_i alpha_i, ||sum_i alpha_i y_i x_i||^2 and sum_i diag_i alpha_i^2, each added up
    over partitions of the rows (solvers/cocoa.py): `dual_objective`'s terms, kept apart."""
    return alpha_sum - 0.5 * w_norm_sq - 0.5 * diag_sum


def projected_gradient(G: np.ndarray, alpha: np.ndarray, U) -> np.ndarray:
    """PG_i of min f(alpha) over 0 <= alpha <= U given the gradient G (Hsieh et al. eq. 8); U a
    number or one bound per row."""
    PG = np.asarray(G, dtype=np.float64).copy()
    at_lo = alpha <= 0.0
    at_hi = alpha >= U
    PG[at_lo] = np.minimum(PG[at_lo], 0.0)
    PG[at_hi] = np.maximum(PG[at_hi], 0.0)
    return PG


def pg_violation(G: np.ndarray, alpha: np.ndarray, U) -> float:
    """M - m, the spread of projected gradients, LIBLINEAR's stopping quantity; zero at the
    optimum of the box-constrained dual (no equality constraint)."""
    PG = projected_gradient(G, alpha, U)
    return float(max(PG.max(), 0.0) - min(PG.min(), 0.0))


def kkt_violation_equality(grad: np.ndarray, alpha: np.ndarray, y: np.ndarray, C) -> float:
    """m(alpha) - M(alpha) for the dual with sum alpha_i y_i = 0 (bertini II, Keerthi et al.):

        R = {i: alpha_i < C, y_i = +1} U {i: alpha_i > 0, y_i = -1}
        S = {i: alpha_i < C, y_i = -1} U {i: alpha_i > 0, y_i = +1}
        m = max_{i in R} -y_i grad_i,  M = min_{i in S} -y_i grad_i

    with grad = Q alpha - e. alpha is optimal iff m <= M; the violation is max(m - M, 0).
    C: a number, or the per-row bounds C_i of a weighted problem.
    """
    v = -y * grad
    up = ((alpha < C) & (y > 0)) | ((alpha > 0) & (y < 0))
    lo = ((alpha < C) & (y < 0)) | ((alpha > 0) & (y > 0))
    if not up.any() or not lo.any():
        return 0.0
    return float(max(v[up].max() - v[lo].min(), 0.0))


# ------------------------------------------------------------ linear model certificates
def intercept_coordinate(problem: Problem) -> tuple[float, float]:
    """(c, r): feature value and penalty of the intercept coordinate u (b = c u).

    none: (0, 0); regularized: (B, 1), LIBLINEAR's constant feature; free: (1, 0)."""
    if problem.intercept == "regularized":
        return float(problem.intercept_scaling), 1.0
    if problem.intercept == "free":
        return 1.0, 0.0
    return 0.0, 0.0


def primal_at(problem: Problem, C: float, w_norm_sq: float, b: float, f: np.ndarray) -> float:
    """P with the problem's loss and intercept but a given C (pegasos's lambda may set C);
    equals objectives.primal_from_decision when C == problem.C."""
    losses = loss_values(problem.loss, problem.y * f, problem.huber_k)
    return regularizer(problem, w_norm_sq, b) + C * float(problem.weigh(losses).sum())


def linear_certificates(problem: Problem, w: np.ndarray, b: float, f: np.ndarray | None = None,
                        C: float | None = None) -> dict:
    """Certificates of a linear model (w, b): primal P, and for the squared hinge the dual
    objective D at the KKT-map alpha_i = 2C (1 - y_i f_i)_+, the gap P - D and the dual KKT
    violation. (For the hinge the map from w to alpha is not unique on the margin, y_i f_i = 1,
    and the obvious choice gives a gap far from 0 at the optimum, so only P is reported.)

    Without an equality constraint (intercept none/regularized) any alpha >= 0 (<= C for the
    hinge) is dual feasible, so D(alpha) is a valid lower bound and the gap is >= 0. With a free
    intercept the KKT-map alpha need not satisfy sum alpha_i y_i = 0, so D and the gap are NaN
    and the violation is m - M of the equality-constrained dual.
    """
    C = problem.C if C is None else float(C)
    y = problem.y
    w = np.asarray(w, dtype=np.float64)
    if f is None:
        f = np.asarray(problem.X @ w).ravel()
        f += b
    P = primal_at(problem, C, float(w @ w), b, f)
    out = {"primal": P, "dual": math.nan, "gap": math.nan, "kkt_violation": math.nan,
           "alpha": None}
    if problem.loss != "squared_hinge" or not math.isfinite(P):
        return out
    m = y * f
    if problem.sample_weight is None:
        diag, U = 0.5 / C, math.inf
        alpha = 2.0 * C * np.maximum(1.0 - m, 0.0)
    else:
        diag, U = dual_box_i(problem, C)
        alpha = 2.0 * (C * problem.sample_weight) * np.maximum(1.0 - m, 0.0)
    ay = alpha * y
    w_a = np.asarray(problem.X.T @ ay).ravel()
    c, _ = intercept_coordinate(problem)
    if problem.intercept == "regularized":
        u_a = c * ay.sum()
        fa = np.asarray(problem.X @ w_a).ravel() + c * u_a
        G = y * fa - 1.0 + diag * alpha
        D = float(alpha.sum() - 0.5 * (w_a @ w_a + u_a * u_a) - 0.5 * diag_term(diag, alpha))
        out.update(dual=D, gap=P - D, kkt_violation=pg_violation(G, alpha, U))
    elif problem.intercept == "none":
        fa = np.asarray(problem.X @ w_a).ravel()
        G = y * fa - 1.0 + diag * alpha
        D = float(alpha.sum() - 0.5 * (w_a @ w_a) - 0.5 * diag_term(diag, alpha))
        out.update(dual=D, gap=P - D, kkt_violation=pg_violation(G, alpha, U))
    else:
        fa = np.asarray(problem.X @ w_a).ravel()
        G = y * fa - 1.0 + diag * alpha
        out["kkt_violation"] = kkt_violation_equality(G, alpha, y, U)
    out["alpha"] = alpha
    return out


def gradient_norm_at_zero(problem: Problem) -> float:
    """||grad P(0)||: the scale of the gradient-norm stopping tests of gd and newton."""
    y = problem.y
    s = problem.weigh(y * loss_derivative(problem.loss, np.zeros(problem.n_samples), problem.huber_k))
    g_w = problem.C * np.asarray(problem.X.T @ s).ravel()
    c, _ = intercept_coordinate(problem)
    g_u = problem.C * c * float(s.sum())
    return max(math.sqrt(float(g_w @ g_w) + g_u * g_u), 1e-300)


# ------------------------------------------------------------------ parameterisations
# The papers state the same problem with different constants. These are the only
# conversions in the project; results record both C and lambda.
def _reciprocal(value: float, name: str, convention: str, n_samples: int | None) -> float:
    """Both conventions are involutions: C = 1/(lambda n) iff lambda = 1/(C n), and
    C = 1/(2 lambda) iff lambda = 1/(2 C); so one formula serves both directions."""
    value = float(value)
    if not value > 0:
        raise ValueError(f"{name}={value!r} must be > 0")
    if math.isinf(value):
        return 0.0
    if convention == "pegasos":
        if not n_samples:
            raise ValueError("the pegasos convention needs n_samples")
        return 1.0 / (value * n_samples)
    if convention == "svmmaj":
        return 1.0 / (2.0 * value)
    raise ValueError(f"convention={convention!r} is not one of 'pegasos', 'svmmaj'")


def C_from_lambda(lam: float, convention: str, n_samples: int | None = None) -> float:
    """C for a paper's lambda.

    - ``pegasos``: lambda/2 ||w||^2 + (1/n) sum hinge  ->  C = 1 / (lambda n)
      (Shalev-Shwartz et al. 2007; rupnik 3.2; duros_katzman Algorithm 2)
    - ``svmmaj``:  sum hinge + lambda w'w  ->  C = 1 / (2 lambda)  (troyan eq. 1; Groenen et al.)
    """
    return _reciprocal(lam, "lambda", convention, n_samples)


def lambda_from_C(C: float, convention: str, n_samples: int | None = None) -> float:
    """The inverse of `C_from_lambda` (a hard margin, C = inf, is lambda = 0)."""
    return _reciprocal(C, "C", convention, n_samples)


def objective_scale(convention: str, C: float, n_samples: int | None = None) -> float:
    """Factor s with paper_objective = s * P: pegasos's objective is P / (C n) and SVM-Maj's
    is P / C (divide P = 1/2||w||^2 + C sum loss by C n, resp. by C)."""
    if convention == "pegasos":
        return 1.0 / (C * n_samples)
    if convention == "svmmaj":
        return 1.0 / C
    raise ValueError(f"convention={convention!r} is not one of 'pegasos', 'svmmaj'")


def step_from_learning_rate(rate: float, C: float, n_samples: int) -> float:
    """The step on P of a learning rate on the per-sample averaged objective.

    duros_katzman 4.1 step w <- w - rate * grad F with F the averaged objective
    F = lambda/2 ||w||^2 + (1/n) sum_i loss_i = P / (C n)  (lambda = 1/(C n), as Pegasos's
    objective, their eq. 6). grad F = grad P / (C n), so their step is the step
    rate / (C n) = rate * lambda on P; gd's ``eta_scale="mean"`` applies it.
    """
    rate, C = float(rate), float(C)
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"learning rate={rate!r} must be a finite number > 0")
    if not (C > 0 and math.isfinite(C)) or not n_samples or n_samples < 1:
        raise ValueError(f"C={C!r} and n_samples={n_samples!r} must be finite and > 0")
    return rate / (C * n_samples)


# ------------------------------------------------------------------ duros_katzman's bias
def basis_intercept(y: np.ndarray, f: np.ndarray) -> tuple[float, int]:
    """duros_katzman's "basis" (Section 3), computed after training from the decision values
    f_i = w . x_i of a model without intercept: b = -(1/|V|) sum_{i in V} f_i over the margin
    violators V = {i : y_i f_i < 1} (their "support vectors, whose margins are less than one").

    Their text says "their average distance from the hyperplane"; the distance is f_i / ||w||,
    and in the units of f that average is mean(f_V). We read it as signed (an unsigned mean
    would always move the plane towards the negative side) and move the plane onto it:
    f + b = 0 passes through the violators' centre. Returns (b, |V|); b = 0 when V is empty.
    """
    f = np.asarray(f, dtype=np.float64)
    viol = np.asarray(y) * f < 1.0
    n = int(viol.sum())
    return (-float(f[viol].mean()) if n else 0.0), n
