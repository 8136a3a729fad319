"""A lower bound on the cross-validation error as a function of C, from finitely many approximate
solutions (Shibagaki, Suzuki, Karasuyama and Takeuchi, "Regularization Path of Cross-Validation
Error Lower Bounds", NeurIPS 2015, Sections 2-3).

The problem is the L2-regularised primal of `objectives` with a linear kernel and no free
intercept (intercept ``none``, or ``regularized``: the constant feature B joins x and its weight
u joins w, b = B u),

    P_C(w) = 1/2 ||w||^2 + C L(w),   L(w) = sum_i s_i loss(y_i w.x_i)   (convex in w),

and its dual over alpha >= 0 (hinge: alpha_i <= C s_i), with v(alpha) = sum_i alpha_i y_i x_i
(`objectives.dual_objective`). w*(C) is the exact solution at C.

**Lemma (the ball).** Let alpha be dual feasible at C~, v = v(alpha), and G = P_C~(v) - D_C~(alpha)
>= 0 its duality gap. Then for every C > 0, with rho = C / C~,

    || w*(C) - (1 + rho)/2 v ||^2  <=  (1 - rho)^2 / 4 ||v||^2 + rho G.

Proof. Fenchel duality gives G = 1/2 ||v - v||^2 + C~ F with F = L(v) + L*(u) - u.v >= 0 and
u = -v / C~ (the Fenchel-Young gap of L at v; the dual's L* is a representation of L*'s value, so
F is at most that): u is an F-subgradient of L at v. At C, -w*/C is a subgradient of L at w*.
Adding L(w*) >= L(v) + u.(w* - v) - F and L(v) >= L(w*) - (w*/C).(v - w*) gives
(w* + C u).(w* - v) <= C F, that is ||w* - (v - C u)/2||^2 <= ||(v + C u)/2||^2 + C F; with
C u = -rho v and C F = rho G this is the ball. At rho = 1 its radius is sqrt(G); for G = 0 it is
the ball with diameter [v, rho v] (the exact solution path's own ball).

**Certainly misclassified.** A validation row (x_i, y_i) is misclassified by w*(C) whenever the
largest margin over the ball is negative: (1 + rho)/2 y_i x_i.v + r(rho) ||x_i|| < 0. With
t_i = y_i x_i.v / ||x_i|| < 0, N = ||v||^2, p = sqrt(N - G) and q = sqrt(t_i^2 - G), squaring
turns this into (N - t^2) rho^2 - 2 (N + t^2 - 2 G) rho + (N - t^2) < 0, whose roots multiply to
1: the row is certainly misclassified exactly for

    rho in ((p - q) / (p + q), (p + q) / (p - q)),  i.e.  |log C - log C~| < 2 artanh(q / p),

when t_i^2 > G (never otherwise). Each approximate solution thus gives each validation row an
open interval of log C; the rows certainly misclassified at C are those whose interval from any
solution on their fold contains log C, and the fold's error of w*(C) is at least their share.
The lower bound on the CV error (the mean of the folds' errors) is the mean of those shares: a
step function of log C, lower semicontinuous (open intervals), so its minimum over a closed
range is attained at a breakpoint, an end of the range or between two breakpoints, where
`LowerBound.minimum` looks.

**Between two fits** (`pair_intervals`): for C between two neighbouring fitted values, w*(C) lies
in both fits' balls, whose intersection is far smaller than either where the solution path is
nearly straight; over segments of log C, a row whose largest margin over the intersection is
negative is certified too (`intersection_max`, the closed form; docs/design/search.md).

Rows with x_i = 0 and no intercept have w.x_i = 0 for every w: predicted -1 (f > 0 is +1, as
the pipeline's accuracy counts it), so a positive one is misclassified at every C (`always`).

Covered: the hinge and the squared hinge (any convex loss would do; these are the ones whose dual
`objectives` states), intercepts none and regularized, sample weights, linear kernel. Not
covered: a free intercept (b is not regularised: P is not strongly convex in it, and no ball
follows) or ``basis`` (b set after training), kernels (the rows' norms are in feature space; not
implemented), the Huber hinge (no dual here).
"""
from __future__ import annotations

import base64
import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from .kernels import row_norms_sq
from .objectives import dual_box_i, dual_objective, intercept_coordinate, primal_objective
from .problem import Problem

LOSSES = ("hinge", "squared_hinge")
INTERCEPTS = ("none", "regularized")


@dataclass(frozen=True)
class Certificate:
    """What one approximate solution at C~ says about one validation fold (the lemma's inputs):
    C~, N = ||v||^2 (the intercept coordinate included), the gap G, the fold's size, the
    validation rows (positions in the fold) with t_i < 0 and their t_i, and how many rows are
    misclassified whatever w is (`always`)."""

    C: float
    norm_sq: float
    gap: float
    n_val: int
    rows: np.ndarray        # int64 positions among the fold's validation rows
    t: np.ndarray           # y_i x_i.v / ||x_i|| < 0 of those rows
    always: int = 0
    # For the bound between two fits (`pair_intervals`): v rounded to float32 (v_32), and each
    # stored row's y_i x_i.v_32 / ||x_i||; None where the record did not keep them.
    v32: np.ndarray | None = None
    t32: np.ndarray | None = None

    def to_dict(self) -> dict:
        """Plain JSON data (a shard record's field; v_32 as base64 of its little-endian bytes)."""
        out = {"C": float(self.C), "norm_sq": float(self.norm_sq), "gap": float(self.gap), "n_val": int(self.n_val),
               "rows": self.rows.astype(np.int64).tolist(), "t": self.t.astype(np.float64).tolist(),
               "always": int(self.always)}
        if self.v32 is not None:
            out["v32"] = base64.b64encode(np.ascontiguousarray(self.v32, dtype="<f4").tobytes()).decode("ascii")
            out["t32"] = self.t32.astype(np.float64).tolist()
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Certificate":
        v32 = np.frombuffer(base64.b64decode(d["v32"]), dtype="<f4") if d.get("v32") else None
        return cls(C=float(d["C"]), norm_sq=float(d["norm_sq"]), gap=float(d["gap"]), n_val=int(d["n_val"]),
                   rows=np.asarray(d["rows"], dtype=np.int64), t=np.asarray(d["t"], dtype=np.float64),
                   always=int(d.get("always", 0)), v32=v32,
                   t32=np.asarray(d["t32"], dtype=np.float64) if v32 is not None else None)

    def radius(self, rho) -> np.ndarray:
        """The lemma's radius at C = rho C~: sqrt((1 - rho)^2/4 N + rho G)."""
        rho = np.asarray(rho, dtype=np.float64)
        return np.sqrt((1.0 - rho) ** 2 / 4.0 * self.norm_sq + rho * self.gap)

    def intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, lo, hi): the open interval of log C on which each row is certainly
        misclassified (module docstring); rows with t_i^2 <= G have none and are left out. hi is
        +inf where t_i^2 = N (x_i parallel to v)."""
        N, G = self.norm_sq, self.gap
        ok = self.t * self.t > G
        rows, t2 = self.rows[ok], self.t[ok] ** 2
        p = math.sqrt(max(N - G, 0.0))
        q = np.sqrt(t2 - G)
        # |t| <= ||v|| (Cauchy-Schwarz), so q <= p; rounding may put q a hair above.
        ratio = np.minimum(q / p, 1.0) if p > 0 else np.ones_like(q)
        with np.errstate(divide="ignore"):
            half = 2.0 * np.arctanh(ratio)
        centre = math.log(self.C)
        return rows, centre - half, centre + half


def certificate(problem: Problem, alpha: np.ndarray, X_val, y_val: np.ndarray, pairs: bool = True) -> Certificate:
    """The lemma's inputs from a dual-feasible alpha at the problem's C (the training fold's
    problem) and the fold's validation rows. v = sum alpha_i y_i x_i is recomputed from alpha, and
    G = P(v) - D(alpha) from v, so the certificate holds whatever the solver's own iterate was.
    alpha is projected onto the dual's box first (it is what the gap is taken at). pairs: keep
    v_32 and the rows' margins on it, for the bound between two fits (`pair_intervals`)."""
    if problem.loss not in LOSSES:
        raise ValueError(f"loss={problem.loss!r}: the CV error bound covers {list(LOSSES)}")
    if problem.intercept not in INTERCEPTS:
        raise ValueError(f"intercept={problem.intercept!r}: the CV error bound covers {list(INTERCEPTS)} "
                         f"(a free intercept is not regularised, so no ball contains the solution)")
    if problem.kernel.name != "linear":
        raise ValueError(f"kernel={problem.kernel.name!r}: the CV error bound covers the linear kernel")
    _, U = dual_box_i(problem)
    alpha = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, U)
    ay = alpha * problem.y
    v = np.asarray(problem.X.T @ ay).ravel()
    c, _ = intercept_coordinate(problem)        # regularized: (B, 1); none: (0, 0)
    u = c * float(ay.sum())
    norm_sq = float(v @ v) + u * u
    P = primal_objective(problem, v, c * u)
    D = dual_objective(problem, alpha, norm_sq)
    # P and D are sums of many terms: their difference is known to a few ulps of their size.
    gap = max(P - D, 0.0) + 8.0 * np.finfo(float).eps * (abs(P) + abs(D))
    f = np.asarray(X_val @ v).ravel() + c * u
    norms = np.sqrt(row_norms_sq(X_val) + c * c)
    y_val = np.asarray(y_val, dtype=np.float64)
    zero = norms == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(zero, 0.0, y_val * f / np.where(zero, 1.0, norms))
    neg = np.flatnonzero((t < 0) & ~zero)
    cert = Certificate(C=float(problem.C), norm_sq=norm_sq, gap=float(gap), n_val=int(len(y_val)),
                       rows=neg.astype(np.int64), t=t[neg], always=int(np.count_nonzero(zero & (y_val > 0))))
    if not pairs:
        return cert
    # v rounded to float32, with the rows' margins on it computed here, exactly as a later
    # bound between two fits reads them (`pair_intervals`).
    v32 = np.r_[v, u].astype(np.float32)
    f32 = np.asarray(X_val @ v32[:-1].astype(np.float64)).ravel() + c * float(v32[-1])
    return dataclasses.replace(cert, v32=v32, t32=y_val[neg] * f32[neg] / norms[neg])


def alpha_from_w(problem: Problem, w: np.ndarray, b: float) -> np.ndarray:
    """The squared hinge's dual point of a primal model: alpha_i = 2 C_i (1 - y_i f_i)_+ (the KKT
    map; exact at the optimum), for solvers that return w alone. The hinge has no such map (it
    is not unique on the margin), so a primal hinge solver gives no certificate."""
    if problem.loss != "squared_hinge":
        raise ValueError("a dual point from w alone is defined for the squared hinge; the hinge needs the "
                         "solver's alpha")
    f = np.asarray(problem.X @ np.asarray(w, dtype=np.float64)).ravel() + b
    return 2.0 * problem.C_i * np.maximum(1.0 - problem.y * f, 0.0)


@dataclass(frozen=True)
class LowerBound:
    """The CV error lower bound as a step function of log C, from each fold's merged open
    intervals: its value at any C (`at`), where it may change (`breaks`) and its minimum over a
    range (`minimum`). Built by `lower_bound`."""

    folds: tuple            # per fold: (sorted lo, sorted hi, n_val, always) of the merged intervals

    def at(self, C) -> np.ndarray:
        """The bound at each C (array): the mean over folds of the share of rows whose merged
        interval contains log C (open intervals: an end does not count)."""
        x = np.log(np.atleast_1d(np.asarray(C, dtype=np.float64)))
        total = np.zeros(x.shape)
        for lo, hi, n_val, always in self.folds:
            inside = np.searchsorted(lo, x, side="left") - np.searchsorted(hi, x, side="right")
            total += (inside + always) / n_val
        return total / max(len(self.folds), 1)

    def breaks(self, C_min: float, C_max: float) -> np.ndarray:
        """The log C values in [log C_min, log C_max] where the bound may change, with both ends."""
        a, b = math.log(C_min), math.log(C_max)
        ends = [np.concatenate([lo, hi]) for lo, hi, _, _ in self.folds]
        x = np.concatenate([[a, b], *ends]) if ends else np.array([a, b])
        x = np.unique(x[np.isfinite(x)])
        return x[(x >= a) & (x <= b)]

    def candidates(self, C_min: float, C_max: float) -> np.ndarray:
        """Every log C where the bound's minimum over [C_min, C_max] may be: the breaks and the
        midpoints between consecutive ones (a step function is constant between breaks)."""
        x = self.breaks(C_min, C_max)
        return np.sort(np.concatenate([x, (x[1:] + x[:-1]) / 2.0]))

    def minimum(self, C_min: float, C_max: float) -> tuple[float, float]:
        """(the bound's minimum over [C_min, C_max], a C where it is attained): exact, since the
        bound is lower semicontinuous and constant between breaks."""
        x = self.candidates(C_min, C_max)
        values = self.at(np.exp(x))
        i = int(np.argmin(values))
        return float(values[i]), float(math.exp(x[i]))


# float32's unit roundoff: ||v_32 - v|| <= U32 ||v|| (each component rounded to nearest).
U32 = 2.0 ** -24
# Segments of log C a pair's balls are taken over, per unit of log C between the two fits.
PAIR_PIECES_PER_LOG = 40


def pair_intervals(left: Certificate, right: Certificate) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, lo, hi): open intervals of log C between two fits (C_L < C_R, both with v_32)
    over which a row is misclassified by every exact solution in *both* fits' balls.

    For C between the fits, w*(C) lies in the intersection of the two balls of the lemma, and
    where the solution path is nearly straight (a ray at small C, flat at large C) the two balls
    only touch: the intersection is far smaller than either. Over a segment [C_a, C_b] of log C,
    each fit's balls lie in one ball (`_segment_ball`: its centre at the segment's middle rho,
    its radius the largest, the centre's travel and v_32's rounding added), and the largest
    margin over the intersection of the two is, with s_j = a . m_j (a = y_i x_i / ||x_i||), d
    the distance of the centres and their radii R_j: the maximiser of one ball if it lies in the
    other (s_j + R_j), else the maximum over the circle where the spheres meet,
    s_L + tau (a.u) + rho_c sqrt(1 - (a.u)^2), tau = (R_L^2 - R_R^2 + d^2) / (2 d),
    rho_c^2 = R_L^2 - tau^2, u the unit vector between the centres. A row whose maximum is
    negative over a segment is certified over all of it; each run of such segments is one
    interval (its ends excluded: open, as the single fits' are)."""
    if left.v32 is None or right.v32 is None or not left.C < right.C:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    rows, il, ir = np.intersect1d(left.rows, right.rows, assume_unique=True, return_indices=True)
    if not len(rows):
        return rows, np.zeros(0), np.zeros(0)
    tL, tR = left.t32[il], right.t32[ir]
    vL, vR = left.v32.astype(np.float64), right.v32.astype(np.float64)
    # ||a_L v_L - a_R v_R||^2 from the difference (no cancellation where v_L and v_R are close).
    diff = vL - vR
    D, X, N_R, N_L = (_dot(p, q) for p, q in ((diff, diff), (diff, vR), (vR, vR), (vL, vL)))
    normL, normR = math.sqrt(N_L), math.sqrt(N_R)
    span = math.log(right.C / left.C)
    pieces = max(8, math.ceil(PAIR_PIECES_PER_LOG * span))
    edges = np.linspace(math.log(left.C), math.log(right.C), pieces + 1)
    Ca, Cb = np.exp(edges[:-1]), np.exp(edges[1:])
    aL, RL = _segment_ball(left, Ca, Cb, normL)
    aR, RR = _segment_ball(right, Ca, Cb, normR)
    d2 = aL * aL * D + (aL - aR) ** 2 * N_R + 2.0 * aL * (aL - aR) * X
    sL, sR = tL[:, None] * aL, tR[:, None] * aR          # rows x segments
    best = intersection_max(sL, sR, RL, RR, d2)
    # Rounding of the float64 arithmetic above, far below the terms' size.
    hit = best < -1e-9 * (np.abs(sL) + np.abs(sR) + RL + RR)
    padded = np.pad(hit, ((0, 0), (1, 1)))
    change = np.diff(padded.astype(np.int8), axis=1)
    r0, c0 = np.nonzero(change == 1)
    r1, c1 = np.nonzero(change == -1)
    return rows[r0], edges[c0], edges[c1]


def _dot(p: np.ndarray, q: np.ndarray) -> float:
    """p . q without BLAS: a search decides in the client process, whose BLAS may run threads
    that wait on a loaded machine far longer than the product takes alone."""
    return float(np.einsum("i,i->", p, q))


def intersection_max(sL, sR, RL, RR, d2) -> np.ndarray:
    """max of a . w over B(m_L, R_L) and B(m_R, R_R) together (||a|| = 1), from s_j = a . m_j,
    the radii and d2 = ||m_R - m_L||^2 (arrays broadcast): the maximiser of one ball if it lies
    in the other, else the maximum over the circle where the two spheres meet
    (`pair_intervals`); where the balls are disjoint or one holds the other, the lesser of the
    two balls' maxima."""
    sL, sR = np.asarray(sL, dtype=np.float64), np.asarray(sR, dtype=np.float64)
    RL, RR, d2 = (np.asarray(v, dtype=np.float64) for v in (RL, RR, d2))
    d = np.sqrt(np.maximum(d2, 0.0))
    best = np.minimum(sL + RL, sR + RR)          # each ball alone
    meet = (d > 0) & (d < RL + RR) & (d > np.abs(RL - RR))
    safe = np.where(meet, d, 1.0)
    gap = sR - sL                                # a . (m_R - m_L)
    au = gap / safe
    tau = (RL * RL - RR * RR + d2) / (2.0 * safe)
    rc = np.sqrt(np.maximum(RL * RL - tau * tau, 0.0))
    circle = sL + tau * au + rc * np.sqrt(np.maximum(1.0 - au * au, 0.0))
    in_R = d2 - 2.0 * RL * gap + RL * RL <= RR * RR     # ||m_L + R_L a - m_R|| <= R_R
    in_L = d2 + 2.0 * RR * gap + RR * RR <= RL * RL     # ||m_R + R_R a - m_L|| <= R_L
    both = np.where(in_R, sL + RL, np.where(in_L, sR + RR, np.minimum(circle, best)))
    return np.where(meet, both, best)


def _segment_ball(cert: Certificate, Ca, Cb, norm32: float):
    """(centre scale a, radius R) of one ball B(a v_32, R) holding the lemma's balls of every C in
    [Ca, Cb]: centred at the middle rho, its radius the largest of the ends' (the radius is the
    norm of an affine function of rho, so convex), the centre's travel (rho_b - rho_a)/4 ||v_32||
    and v_32's rounding a(rho_b) U32 ||v|| added (norm32: ||v_32||)."""
    ra, rb = np.asarray(Ca) / cert.C, np.asarray(Cb) / cert.C
    a = (1.0 + (ra + rb) / 2.0) / 2.0
    norm = math.sqrt(cert.norm_sq)
    travel = (rb - ra) / 4.0 * norm32
    R = travel + np.maximum(cert.radius(ra), cert.radius(rb)) + (1.0 + rb) / 2.0 * U32 * norm * (1.0 + 1e-6)
    return a, R


def lower_bound(folds: list[list[Certificate]], pairs: dict | None = None) -> LowerBound:
    """The CV error lower bound from each fold's certificates (every fold needs at least one;
    a fold's certificates all have its n_val). Per row, the intervals of its fold's solutions
    are merged (union), so a row counts once wherever any solution certifies it: each fit's own,
    and between each two neighbouring C values fitted (the least gap at each), the pair's
    (`pair_intervals`). pairs: a dict the caller keeps across calls with the same certificate
    objects (a search's rounds): each pair's intervals are computed once."""
    out = []
    pairs = {} if pairs is None else pairs
    for certs in folds:
        if not certs:
            raise ValueError("every fold needs at least one certificate")
        n_val = certs[0].n_val
        parts = [c.intervals() for c in certs]
        tightest = {}
        for c in certs:
            if c.v32 is not None and (c.C not in tightest or c.gap < tightest[c.C].gap):
                tightest[c.C] = c
        ordered = [tightest[C] for C in sorted(tightest)]
        for a, b in zip(ordered, ordered[1:]):
            key = (id(a), id(b))
            if key not in pairs:
                pairs[key] = (a, b, pair_intervals(a, b))     # a and b held: their ids stay theirs
            parts.append(pairs[key][2])
        rows = np.concatenate([p[0] for p in parts])
        lo = np.concatenate([p[1] for p in parts])
        hi = np.concatenate([p[2] for p in parts])
        lo, hi = _merge(rows, lo, hi)
        out.append((np.sort(lo), np.sort(hi), n_val, max(c.always for c in certs)))
    return LowerBound(tuple(out))


def _merge(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of each row's open intervals as disjoint open intervals (lo, hi), all rows
    together: two intervals of a row that overlap become one (touching ones stay two: the
    point where they meet is in neither)."""
    if not len(rows):
        return lo, hi
    order = np.lexsort((lo, rows))
    return _merge_sorted(rows[order], lo[order], hi[order])


@njit(cache=True)
def _merge_sorted(rows, lo, hi):
    out_lo = np.empty_like(lo)
    out_hi = np.empty_like(hi)
    k = 0
    out_lo[0], out_hi[0] = lo[0], hi[0]
    for i in range(1, len(rows)):
        if rows[i] == rows[i - 1] and lo[i] < out_hi[k]:
            if hi[i] > out_hi[k]:
                out_hi[k] = hi[i]
        else:
            k += 1
            out_lo[k], out_hi[k] = lo[i], hi[i]
    return out_lo[:k + 1].copy(), out_hi[:k + 1].copy()
