"""The certified C search: given the fits so far, the next round's C values, or the end with
the guarantee reached or not (Shibagaki, Suzuki, Karasuyama and Takeuchi, NeurIPS 2015,
Section 4; the bound itself is solvers/cv_bounds.py).

A pure function of the fits (`decide`): a resumed search reads its fits back from the shards
and makes the same decisions, so it asks for the same keys and refits nothing.

Each round:

1. The CV error E(C) of each C fitted on every fold (its tightest tolerance), and the best,
   E_best at C_best.
2. The lower bound LB(C) of the CV error of the exact solutions from every certificate, and its
   minimum over [C_min, C_max]. E_best - min LB <= epsilon: done, certified: no C of the range
   has a CV error below E_best - epsilon (the paper's epsilon-approximate regularisation
   parameter, with E_best the error of the solutions actually fitted).
3. Otherwise the C ranges where LB < E_best - epsilon (where a better C may hide) are ranked by
   their lowest bound, and each of the first `per_round` gets a point at its bound's minimum
   (the middle of the lowest plateau): either a C where the error is low or one where the
   bound is loose, both of which the guarantee needs (the paper's rule).
4. A range whose minimum sits on a C already fitted is one where that fit's duality gap hides
   rows (its own bound is below its error): it is fitted again at tol x refine, down to
   min_tol. This calibrates the training tolerance to the validation target a posteriori, in
   the spirit of Ndiaye et al. (ICML 2019, Section 3): a fit is accurate enough once its gap
   hides at most epsilon/2 of the CV error at its C.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from solvers.cv_bounds import Certificate, LowerBound, lower_bound

# The solvers whose fits carry their dual point alpha on the hinge (the certificate's alpha):
# from w alone the hinge has no dual point (the KKT map is not unique on the margin), while the
# squared hinge's is the KKT map of w (`cv_bounds.alpha_from_w`), so any linear solver serves it.
HINGE_DUAL_SOLVERS = ("dcd", "smooth_newton")


@dataclass(frozen=True)
class Settings:
    C_min: float
    C_max: float
    epsilon: float
    initial: int = 5
    per_round: int = 2
    max_rounds: int = 20
    refine: float = 0.1
    min_tol: float = 1e-6

    @classmethod
    def of(cls, search) -> "Settings":
        return cls(**{f: getattr(search, f) for f in cls.__dataclass_fields__})


@dataclass(frozen=True)
class FoldFit:
    """One fit of the search: its C, tolerance and fold, its validation error (1 - accuracy)
    and its certificate (None where the fit failed)."""

    C: float
    tol: float
    fold: int
    error: float
    certificate: Certificate | None
    round: int = 0
    status: str = "converged"


@dataclass
class Decision:
    """What `decide` concludes: the next round's points (each {"C": c}, and "tol" for a refit),
    or done; the best C so far, the bound's minimum, and why the search stops (or goes on)."""

    points: list
    done: bool
    certified: bool
    best_C: float
    best_error: float
    bound_min: float
    bound_min_C: float
    reason: str
    errors: dict = field(default_factory=dict)       # C -> (CV error, tol) of each complete C
    bound: LowerBound | None = None


def rounded(C: float) -> float:
    """C to 12 significant digits, as the config's ranges are (`config.grid_range`): the same value,
    and so the same task key, on every machine."""
    return float(f"{C:.12g}")


def first_points(s: Settings) -> list[dict]:
    """The first round: `initial` C values log-spaced over [C_min, C_max], ends included."""
    n = max(int(s.initial), 1)
    Cs = np.geomspace(s.C_min, s.C_max, n) if n > 1 else np.array([math.sqrt(s.C_min * s.C_max)])
    return [{"C": rounded(C)} for C in Cs]


def cv_errors(fits: list[FoldFit], n_folds: int) -> dict:
    """C -> (CV error, tol) from the tightest tolerance at which C has an error on every fold
    (the mean over folds of their validation errors, as the report's CV summary)."""
    by: dict = {}
    for f in fits:
        if f.certificate is not None and math.isfinite(f.error):
            by.setdefault((f.C, f.tol), {})[f.fold] = f.error
    out: dict = {}
    for (C, tol), errs in sorted(by.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        if len(errs) == n_folds:
            out[C] = (float(np.mean([errs[k] for k in sorted(errs)])), tol)    # tighter tol wins
    return out


def decide(s: Settings, fits: list[FoldFit], n_folds: int, rounds_done: int, pairs: dict | None = None,
           place=None) -> Decision:
    """The next round (or the end) from every fit so far; `rounds_done` rounds have run. pairs:
    `cv_bounds.lower_bound`'s cache, kept by the caller across rounds. place(s, fits, decision):
    the next round's points where not certified (default `next_points`, the paper's rule)."""
    errors = cv_errors(fits, n_folds)
    nan = math.nan
    if not errors:
        return Decision([], True, False, nan, nan, nan, nan,
                        "no C has a validation error on every fold (every fit of some fold failed: see the "
                        "results' status and error columns)")
    best_C = min(errors, key=lambda C: (errors[C][0], C))
    best = errors[best_C][0]
    certs = [[f.certificate for f in fits if f.fold == k and f.certificate is not None] for k in range(n_folds)]
    bound = lower_bound(certs, pairs)
    low, low_C = bound.minimum(s.C_min, s.C_max)
    decision = Decision([], False, False, best_C, best, low, low_C, "", errors, bound)
    if best - low <= s.epsilon:
        decision.done, decision.certified = True, True
        decision.reason = (f"certified: the best CV error found, {best:.4f} at C={best_C:.4g}, is within "
                           f"epsilon={s.epsilon:g} of the lower bound's minimum over [{s.C_min:g}, {s.C_max:g}], "
                           f"{low:.4f} at C={low_C:.4g}")
        return decision
    if rounds_done > s.max_rounds:
        decision.done = True
        decision.reason = (f"not certified: max_rounds={s.max_rounds} reached; " + why_not(s, fits, decision))
        return decision
    decision.points = (place or next_points)(s, fits, decision)
    if not decision.points:
        decision.done = True
        decision.reason = ("not certified: the bound's lowest point in every range where it is below the best CV "
                           f"error less epsilon is a C already fitted as tightly as it can be (min_tol={s.min_tol:g}, "
                           "or its fits stopped at their iteration cap); " + why_not(s, fits, decision))
    return decision


def _runs(below: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each maximal run of True."""
    edges = np.diff(np.r_[0, below.astype(np.int8), 0])
    return list(zip(np.flatnonzero(edges == 1).tolist(), (np.flatnonzero(edges == -1) - 1).tolist()))


def uncertified(s: Settings, bound: LowerBound, best: float) -> list[dict]:
    """The ranges of log C where the bound is below best - epsilon, each {lo, hi (log C), low
    (its lowest bound), at (log C of the middle of its lowest plateau)}, lowest first (then widest)."""
    x = bound.candidates(s.C_min, s.C_max)
    values = bound.at(np.exp(x))
    out = []
    for i, j in _runs(values < best - s.epsilon):
        seg = values[i:j + 1]
        low = seg.min()
        # The middle of the widest plateau at the lowest value (between breaks the bound is
        # constant), in log C.
        plateaus = [(x[i + a], x[i + b]) for a, b in _runs(seg == low)]
        a, b = max(plateaus, key=lambda p: p[1] - p[0])
        out.append({"lo": float(x[i]), "hi": float(x[j]), "low": float(low), "at": float((a + b) / 2.0),
                    "plateau": (float(a), float(b))})
    return sorted(out, key=lambda r: (r["low"], -(r["hi"] - r["lo"]), r["lo"]))


# A fit that stopped here did not reach its tol: a tighter tol would stop at the same place.
CAPPED = ("max_iter", "timeout")


def next_points(s: Settings, fits: list[FoldFit], d: Decision) -> list[dict]:
    """Up to per_round points, one per uncertified range, lowest bound first (module docstring)."""
    points, taken = [], set()
    fitted, capped = {}, set()        # C -> its tightest tol; the Cs whose tightest fits stopped short
    for f in fits:
        fitted[f.C] = min(fitted.get(f.C, math.inf), f.tol)
    for f in fits:
        if f.tol == fitted[f.C] and f.status in CAPPED:
            capped.add(f.C)
    slack = {C: e - float(d.bound.at(C)[0]) for C, (e, _) in d.errors.items()}
    logs = sorted(fitted, key=math.log)
    for r in uncertified(s, d.bound, d.best_error):
        if len(points) >= s.per_round:
            break
        # The fits in the range and the nearest on each side: one whose own gap hides more than
        # epsilon/2 of its error is refitted before any new C is added beside it, since its
        # bound is what keeps the range open (unless a tighter tol cannot help: at min_tol, or
        # stopped at its iteration cap).
        inside = [C for C in logs if r["lo"] <= math.log(C) <= r["hi"]]
        below = [C for C in logs if math.log(C) < r["lo"]][-1:]
        above = [C for C in logs if math.log(C) > r["hi"]][:1]
        loose = sorted((C for C in below + inside + above if C in slack and slack[C] > s.epsilon / 2
                        and C not in capped and C not in taken and fitted[C] * s.refine >= s.min_tol),
                       key=lambda C: -slack[C])
        if loose:
            C = loose[0]
            points.append({"C": C, "tol": rounded(fitted[C] * s.refine)})
            taken.add(C)
            continue
        at = r["at"]
        on = [C for C in fitted if abs(math.log(C) - at) < 1e-9]
        if on:
            # The plateau's middle is a C fitted already (its fit cannot tighten): the middle of
            # the plateau's wider side of it instead.
            a, b = r["plateau"]
            c = math.log(on[0])
            at = (a + c) / 2.0 if c - a >= b - c else (c + b) / 2.0
            if min(c - a, b - c) <= 0 and max(c - a, b - c) < 1e-9:
                continue
        C_new = rounded(math.exp(at))
        if C_new in taken or C_new in fitted:
            continue
        points.append({"C": C_new})
        taken.add(C_new)
    return points


def why_not(s: Settings, fits: list[FoldFit], d: Decision) -> str:
    """Where and why the bound stays below the best CV error less epsilon: the uncertified
    ranges, and what their fits' certificates look like (how wide in C a fit certifies its
    misclassified rows, and how many rows its duality gap hides)."""
    ranges = uncertified(s, d.bound, d.best_error)
    if not ranges:
        return "the bound is above the best CV error less epsilon everywhere"
    lo = math.exp(min(r["lo"] for r in ranges))
    hi = math.exp(max(r["hi"] for r in ranges))
    text = (f"the bound's minimum {d.bound_min:.4f} (C={d.bound_min_C:.4g}) is {d.best_error - d.bound_min:.4f} "
            f"below the best CV error {d.best_error:.4f} (C={d.best_C:.4g}); it stays below best - epsilon on "
            f"{len(ranges)} range(s) within C in [{lo:.4g}, {hi:.4g}]")
    certs = [f.certificate for f in fits if f.certificate is not None and lo <= f.C <= hi]
    if certs:
        widths, hidden, rows = [], 0, 0
        for c in certs:
            _, a, b = c.intervals()
            widths.extend(((b - a) / 2).tolist())
            hidden += int(np.count_nonzero(c.t * c.t <= c.gap))
            rows += len(c.t)
        if widths:
            text += (f"; there a fit certifies a misclassified validation row for C within a factor "
                     f"{math.exp(float(np.median(widths))):.3g} of its own (median over rows)")
        if rows:
            text += f", and its duality gap hides {hidden / rows:.0%} of those rows"
    stopped = sorted({f.C for f in fits if f.status in CAPPED and lo <= f.C <= hi})
    if stopped:
        text += (f"; the fits at C={', '.join(f'{C:.4g}' for C in stopped[:4])}{' ...' if len(stopped) > 4 else ''} "
                 f"stopped at their iteration cap, short of their tol (raise max_iter)")
    return text


# ------------------------------------------------------------------ how many fits epsilon needs
def reach(certs: list[Certificate], level: float) -> float:
    """How far in log C, each way, one C's fits (one certificate per fold) keep the CV error
    bound at or above `level` by themselves (their single balls): each misclassified row counts
    while |log C - log C~| < its half-width 2 artanh(q/p) (`Certificate.intervals`), each fold's
    rows weighed 1 / (its size x the folds). inf when the rows counted everywhere reach the level
    already (`always`); 0 when even at C~ they do not (the fits' gaps hide too many rows)."""
    n = len(certs)
    widths, weights, base = [], [], 0.0
    for c in certs:
        _, lo, hi = c.intervals()
        widths.append((hi - lo) / 2.0)
        weights.append(np.full(len(lo), 1.0 / (c.n_val * n)))
        base += c.always / (c.n_val * n)
    if base >= level:
        return math.inf
    h, w = np.concatenate(widths), np.concatenate(weights)
    order = np.argsort(-h, kind="stable")
    covered = base + np.cumsum(w[order])
    k = int(np.searchsorted(covered, level - 1e-12))
    return float(h[order][k]) if k < len(h) else 0.0


def estimate(s: Settings, by_C: dict, best: float, epsilons=None) -> dict:
    """From the fits of a first round (by_C: C -> its certificates, one per fold), how many C
    values the bound needs over [C_min, C_max] to certify the best CV error within each epsilon:
    between two neighbouring C values a and b with reaches r_a, r_b (`reach` at best - epsilon),
    about (log b - log a) / (r_a + r_b) C values, the single balls' own need (the bound between
    two fits certifies more, so this counts high). The reaches are those of fits whose gap hides
    no row (G = 0 in the lemma): the gaps are the tolerance's to close (the refits; a held-out
    search's tolerance from epsilon), the spacing is what epsilon asks; None where a fit's rows
    reach the level nowhere."""
    epsilons = sorted({s.epsilon, *(epsilons or (s.epsilon / 2, 2 * s.epsilon))})
    Cs = sorted(by_C)
    exact = {C: [dataclasses.replace(c, gap=0.0) for c in certs] for C, certs in by_C.items()}
    out = {}
    for eps in epsilons:
        r = [reach(exact[C], best - eps) for C in Cs]
        if min(r) == 0.0:
            out[eps] = None
            continue
        need = len(Cs)
        for (a, ra), (b, rb) in zip(zip(Cs, r), zip(Cs[1:], r[1:])):
            need += max(0, math.ceil(math.log(b / a) / (ra + rb)) - 1)
        out[eps] = need
    return out


# How much farther apart than their single balls' reach two fits may be placed, for the bound
# between them (`cv_bounds.pair_intervals`) to certify the C values between: where the solution
# path is nearly straight the two balls meet in a lens far smaller than either (docs/design/search.md,
# "Between two fits"); the next round fills what it leaves, at the single balls' own spacing.
PAIR_REACH = 2.0


def _spaced(a: float, b: float, ra: float, rb: float, stretch: float) -> list[float]:
    """Points of log C strictly between a and b so that consecutive ones are about
    stretch (r(x) + r(x')) apart, r the reach, interpolated log-linearly from ra at a to rb at b:
    the points where the count n(x) = integral from a to x of dx / (2 stretch r) reaches 1, 2, ...
    (n(b) - 1 of them, at least one)."""
    span = b - a
    beta = (math.log(rb) - math.log(ra)) / span
    def count(x):
        return (x - a) / (2 * stretch * ra) if abs(beta * span) < 1e-9 else \
            (1.0 - math.exp(-beta * (x - a))) / (2 * stretch * ra * beta)
    k = max(1, math.ceil(count(b)) - 1)
    total = count(b)
    out = []
    for j in range(1, k + 1):
        n = j * total / (k + 1)          # k points dividing the count evenly
        x = a + n * 2 * stretch * ra if abs(beta * span) < 1e-9 else \
            a - math.log(1.0 - 2 * stretch * ra * beta * n) / beta
        out.append(x)
    return out


def heldout_points(s: Settings, fits: list[FoldFit], d: Decision, max_points: int) -> list[dict]:
    """The next round of a held-out search: in every range where the bound is below the best
    validation error less epsilon, C values between the fitted C values around it, spaced by
    what the fits at its two ends reach (`reach`, interpolated log-linearly between them) and
    PAIR_REACH times that on a range's first filling (the bound between two fits carries
    further; a range already filled once gets the single balls' spacing); at least one a range;
    in increasing C, a sequential walk warm from each neighbour."""
    certs = {}
    for f in fits:
        if f.certificate is not None and (f.C not in certs or f.tol < certs[f.C][0]):
            certs[f.C] = (f.tol, f.certificate)
    C_of = {math.log(C): C for C in certs}
    logs = sorted(C_of)
    level = d.best_error - s.epsilon
    rounds = {f.C: f.round for f in fits}
    out: set = set()
    for r in uncertified(s, d.bound, d.best_error):
        a = max((x for x in logs if x <= r["lo"] + 1e-12), default=logs[0])
        b = min((x for x in logs if x >= r["hi"] - 1e-12), default=logs[-1])
        if b - a < 1e-9:
            continue
        ra, rb = (reach([certs[C_of[x]][1]], level) or reach([dataclasses.replace(certs[C_of[x]][1], gap=0.0)], level)
                  for x in (a, b))
        # Two fits of the first round at the ends: a range never filled; else filled before.
        stretch = PAIR_REACH if max(rounds[C_of[a]], rounds[C_of[b]]) == 0 else 1.0
        xs = _spaced(a, b, max(ra, 1e-6), max(rb, 1e-6), stretch) if ra + rb > 0 and math.isfinite(ra + rb) \
            else [(a + b) / 2.0]
        out.update(rounded(math.exp(x)) for x in xs[:max_points])
    fitted = set(certs)
    return [{"C": C} for C in sorted(out - fitted)][:max_points]
