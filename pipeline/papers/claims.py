"""The claim vocabulary of the paper reproductions: one definition per kind of claim, shared by
every study.

A paper says "nearly equal", "much quicker", "about 3.4 times faster", "reaches the global
minimum". Each such phrase is one `Kind` here, with one statistic and one band that the
statistic must lie in, the same in every study. A study does not write its own comparison: it
declares its claims as data (`Claim`: the paper's words, a kind, its parameters, over which cells
and repeats), which datasets are the paper's own (`StudyRules.data`), and extracts the numbers
each claim needs from its run. `judge` turns those numbers into a verdict and the rule text
printed beside it, so the README's rule and the code's test are one object.

Uncertainty. Every measured statistic is an `Estimate` with a 95% interval:

- a ratio (times, iterations, work) over independent repeats (folds, seeds, random starts):
  the geometric mean of the per-repeat ratios, with Student's t interval on their logarithms
  (`ratio_over`). Re-solves of one fit are not repeats: a study folds them into one time first.
- a difference of accuracies, in percentage points: over paired repeats (folds) with Student's t
  (`difference_over`), or from the test rows themselves (`paired_rows`, the discordant rows of
  two models on one test set; `proportions`, two accuracies on independent test sets), with the
  normal quantile.
- a value that is not a sample (a certified optimum, a count of runs): `exact`, no width.

The verdict of one cell compares the interval with the kind's band: **holds** when the interval
lies inside the band, **differs** when it lies outside, **undecided** when it straddles an edge
(or rests on fewer than MIN_REPEATS repeats). A claim over several cells combines them as its
`over` says (`each`, `some`, `most`; "on average" is one cell whose statistic is the mean).

Rules are data: `StudyRules.digest` hashes every threshold of this vocabulary and every claim's
kind, parameters, statistic, cells and repeats, with the study's data declaration. A study keeps
the digest of its rules in a dated `RuleChange` (what changed, why, the verdicts before and after);
tests/pipeline/test_rules.py fails when the rules move without a new entry.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

# ------------------------------------------------------------------------------ the thresholds
CONFIDENCE = 0.95
# "Nearly equal", "almost identical", "almost equally well", "at the paper's level": two
# accuracies within 2.5 percentage points, either way. The widest gap a paper calls nearly equal:
# duros_katzman's Table 4 (multiclass, frequency features: .7172 against .6929, 2.43 pp);
# roethel_brynda's "almost identical" Table 1 has at most 2.02 pp (heart, C = 10).
NEARLY_EQUAL_PP = 2.5
# "Slightly worse": lower, by at most twice the nearly-equal band (bertini's "modest under-fitting").
SLIGHTLY_PP = 2 * NEARLY_EQUAL_PP
# "The same optimum", "reaches the global minimum", "the same loss": a relative difference of at
# most 1e-4, the same value to about 4 significant digits (troyan's Table 3 calls Maj's 92.1256
# and alpha-Maj's 92.1240 on Heart the same minimum: 1.7e-5 relative).
SAME_REL = 1e-4
# "Faster", "quicker", "more", "higher", "fewer": a ratio above 1.1. A difference of under 10% is
# not what a paper means by faster, and it is what a shared machine's load can move one fit's time.
MEANINGFUL = 1.1
# "About k times": within a factor 1.5 of k, either way.
ABOUT = 1.5
# "Far", "significantly longer", "seconds against milliseconds", "hours against seconds": at least
# an order of magnitude, 10x.
FAR = 10.0
# A measured interval needs this many independent repeats; fewer: undecided.
MIN_REPEATS = 3

# ------------------------------------------------------------------------------ the verdicts
HOLDS, DIFFERS, UNDECIDED = "holds", "differs", "undecided"
NOT_COMPARABLE, NOT_CHECKED, BY_CONSTRUCTION = "not comparable", "not checked", "by construction"
# Whose data a dataset is (StudyRules.data): the paper's own (THEIRS); built to stand in for data
# that cannot be had (STAND_IN: the mechanisms are judged on it, the paper's printed levels are
# not); or not the paper's problem (OTHER: shown, judged nowhere).
THEIRS, STAND_IN, OTHER = "theirs", "stand-in", "other"
# What a claim is about: a relation between methods within our run (MECHANISM), or a number the
# paper printed for its data (LEVEL: judged on THEIRS datasets only).
MECHANISM, LEVEL = "mechanism", "level"


# ------------------------------------------------------------------------------ estimates
@dataclass(frozen=True)
class Estimate:
    """A statistic with its 95% interval [lo, hi], the repeats it rests on and how it was had."""
    value: float
    lo: float
    hi: float
    n: int = 1
    how: str = "exact"
    exact: bool = False


def exact(value: float) -> Estimate:
    """A value that is not a sample: a certified optimum, a count, a printed number."""
    v = float(value)
    return Estimate(v, v, v, 1, "exact", True)


def _t(n: int) -> float:
    from scipy.stats import t
    return float(t.ppf(0.5 + CONFIDENCE / 2, n - 1))


def _z() -> float:
    from scipy.stats import norm
    return float(norm.ppf(0.5 + CONFIDENCE / 2))


def ratio_over(samples: Sequence[float], what: str = "repeats") -> Estimate:
    """The geometric mean of per-repeat ratios with Student's t interval on their logarithms:
    a ratio of times (or work) is multiplicative, and a repeat that ran 2x slow and one 2x fast
    cancel. Non-finite or non-positive ratios are dropped; one repeat has no interval."""
    x = np.asarray([v for v in samples if np.isfinite(v) and v > 0], dtype=float)
    if x.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, f"no {what}")
    logs = np.log(x)
    m = float(logs.mean())
    if x.size == 1:
        return Estimate(math.exp(m), 0.0, math.inf, 1, f"1 {what[:-1] if what.endswith('s') else what}")
    half = _t(x.size) * float(logs.std(ddof=1)) / math.sqrt(x.size)
    return Estimate(math.exp(m), math.exp(m - half), math.exp(m + half), int(x.size), f"{x.size} {what}")


def difference_over(samples: Sequence[float], what: str = "repeats", within: float = 0.0) -> Estimate:
    """The mean of per-repeat differences with its interval: Student's t over the repeats, or,
    when `within` (a standard error each repeat carries from its own test rows) is given, the
    normal quantile on sqrt(within^2 + var/n)."""
    x = np.asarray([v for v in samples if np.isfinite(v)], dtype=float)
    if x.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, f"no {what}")
    m = float(x.mean())
    between = float(x.var(ddof=1)) / x.size if x.size > 1 else (0.0 if within else math.inf)
    se = math.sqrt(within ** 2 + between)
    q = _z() if within else (_t(x.size) if x.size > 1 else math.inf)
    half = q * se if se > 0 else 0.0
    return Estimate(m, m - half, m + half, int(x.size), f"{x.size} {what}")


def proportions(p1: float, n1: int, p2: float, n2: int, what: str = "") -> Estimate:
    """The difference p1 - p2 of two accuracies (in %) measured on independent test sets of n1 and
    n2 rows, in percentage points, with the normal interval. Each proportion enters its standard
    error as (x + 1) / (n + 2) (Agresti and Caffo), so 100% on a finite test set is not certain."""
    def var(p, n):
        x = p / 100.0 * n
        q = (x + 1.0) / (n + 2.0)
        return q * (1.0 - q) / (n + 2.0)
    d = float(p1 - p2)
    se = 100.0 * math.sqrt(var(p1, n1) + var(p2, n2))
    return Estimate(d, d - _z() * se, d + _z() * se, int(min(n1, n2)), what or f"test sets of {n1} and {n2} rows")


def discordant_se(b: int, c: int, n: int) -> float:
    """Standard error (percentage points) of the accuracy difference (c - b)/n of two models on the
    same n test rows, where b rows only the first and c rows only the second gets right
    (McNemar's pairing), with half a row added to each discordant cell (Agresti and Min): two
    models that agree on every row of a finite test set are not proven identical."""
    b, c = b + 0.5, c + 0.5
    return 100.0 * math.sqrt(max(b + c - (c - b) ** 2 / n, 0.0)) / n


def paired_rows(diffs_pp: Sequence[float], ses_pp: Sequence[float], n_rows: int) -> Estimate:
    """Accuracy differences of two models on one test set, one per repeat (another pass order, the
    same rows), each with its discordant-row standard error (`discordant_se`): their mean, with an
    error of the rows (the mean standard error: repeats on the same rows are not independent of
    each other) and of the repeats (their spread)."""
    ses = [s for s in ses_pp if np.isfinite(s)]
    within = float(np.mean(ses)) if ses else 0.0
    return difference_over(diffs_pp, f"repeats on {n_rows} test rows", within=within)


# ------------------------------------------------------------------------------ kinds
@dataclass(frozen=True)
class Kind:
    """One phrase of the papers: its statistic, the band it must lie in, how a value is written.

    `band(params)` -> (lo, hi, lo_open, hi_open). `unit`: "pp" (percentage points), "x" (a ratio),
    "rel" (a relative difference), "share" (a fraction of runs)."""
    name: str
    words: str                      # the papers' phrases it covers
    statistic: str                  # what is measured
    band: Callable[[dict], tuple]
    band_text: Callable[[dict], str]
    unit: str
    source: str                     # where the threshold comes from


def _b(lo, hi, lo_open=False, hi_open=False):
    return lambda p: (lo, hi, lo_open, hi_open)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("nearly equal", "nearly equal, almost identical, almost equally well, unchanged, at the paper's level, stable",
         "the difference of two accuracies (percentage points)", _b(-NEARLY_EQUAL_PP, NEARLY_EQUAL_PP),
         lambda p: f"within ±{NEARLY_EQUAL_PP:g} pp", "pp",
         "duros_katzman's Table 4 calls 2.43 pp nearly equal; roethel_brynda's Table 1 calls 2.02 pp almost identical"),
    Kind("worse", "outperformed by, falls behind",
         "how far the better accuracy is above the other (percentage points)", _b(NEARLY_EQUAL_PP, math.inf, True),
         lambda p: f"above {NEARLY_EQUAL_PP:g} pp (beyond nearly equal)", "pp", "the complement of nearly equal"),
    Kind("slightly worse", "slightly worse, modest under-fitting",
         "how far an accuracy falls below another (percentage points)", _b(0.0, SLIGHTLY_PP, True),
         lambda p: f"above 0 and at most {SLIGHTLY_PP:g} pp (twice the nearly-equal band)", "pp",
         "lower, by at most twice the nearly-equal band"),
    Kind("greater", "faster, quicker, more, higher, fewer, slows down, the slowest",
         "a ratio (the larger side over the smaller)", _b(MEANINGFUL, math.inf, True),
         lambda p: f"above {MEANINGFUL:g}x", "x", "a difference of at least 10%"),
    Kind("not greater", "does not make faster, no gain",
         "a ratio (the gain claimed absent)", _b(0.0, MEANINGFUL),
         lambda p: f"at most {MEANINGFUL:g}x", "x", "the complement of greater"),
    Kind("far greater", "far slower, significantly longer, seconds against milliseconds, hours against seconds",
         "a ratio (the larger side over the smaller)", _b(FAR, math.inf),
         lambda p: f"at least {FAR:g}x", "x", "an order of magnitude"),
    Kind("about", "about k times, around twice",
         "a ratio", lambda p: (p["k"] / ABOUT, p["k"] * ABOUT, False, False),
         lambda p: f"within a factor {ABOUT:g} of {p['k']:.3g}x ({p['k'] / ABOUT:.3g}x-{p['k'] * ABOUT:.3g}x)", "x",
         "about: within a factor 1.5 either way"),
    Kind("between", "from k1 to k2 times",
         "a ratio", lambda p: (p["lo"], p["hi"], False, False),
         lambda p: f"in {p['lo']:g}x-{p['hi']:g}x (the paper's own range)", "x", "the range the paper states"),
    Kind("within", "after N iterations, within N steps",
         "the count needed over the paper's count", _b(0.0, ABOUT),
         lambda p: f"at most {ABOUT:g}x the paper's {p['of']}", "x", "about, one-sided: not more than a factor 1.5"),
    Kind("same optimum", "the same optimum, reaches the global minimum, the same loss",
         "the relative difference of two objective values", _b(0.0, SAME_REL),
         lambda p: f"at most {SAME_REL:g} (about 4 significant digits)", "rel",
         "troyan's Table 3: Maj and alpha-Maj on Heart 1.7e-5 apart, one minimum"),
    Kind("different", "stops away from the optimum, results differ, depends on the start",
         "the relative difference of two objective values", _b(SAME_REL, math.inf, True),
         lambda p: f"above {SAME_REL:g} (not the same to about 4 digits)", "rel", "the complement of same optimum"),
    Kind("share", "every run, all, some, none, under half",
         "the share of runs or points that meet a condition",
         lambda p: (p["lo"], p["hi"], bool(p.get("lo_open")), bool(p.get("hi_open"))),
         lambda p: _share_text(p), "share", "the words of the claim"),
)}


def _share_text(p: dict) -> str:
    lo, hi = p["lo"], p["hi"]
    if lo == hi == 1.0:
        return "all of them (100%)"
    if lo == hi == 0.0:
        return "none of them"
    if hi >= 1.0:
        return f"{'above' if p.get('lo_open') else 'at least'} {100 * lo:g}%"
    return f"{'under' if p.get('hi_open') else 'at most'} {100 * hi:g}%"


# ------------------------------------------------------------------------------ claims
OVER = {"each": "in each", "some": "in at least one", "most": "in most (more than half)", "mean": "on"}


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as data: the paper's words, the kind that judges it and its
    parameters, the statistic in this study's terms, the cells it must hold over and the repeats
    behind each cell's interval. `construction`: why it cannot fail here (then it is shown, marked
    *by construction*, and not counted as reproduced)."""
    key: str
    paper: str
    kind: str
    statistic: str
    cells: str
    repeats: str
    over: str = "each"
    scope: str = MECHANISM
    params: tuple = ()
    construction: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.key}: no kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if self.over not in OVER:
            raise ValueError(f"claim {self.key}: over={self.over!r}, one of {', '.join(OVER)}")

    @property
    def p(self) -> dict:
        return dict(self.params)

    def rule_text(self) -> str:
        """The README's rule: generated from the claim's own kind and parameters, never typed."""
        k = KINDS[self.kind]
        if self.construction:
            return f"by construction: {self.construction}"
        interval = "exact values" if self.repeats == "exact" else f"its 95% interval over {self.repeats} inside that"
        level = "; a level the paper printed for its data, judged on the paper's data only" if self.scope == LEVEL else ""
        where = "in" if self.over == "each" and self.cells.startswith("the ") else OVER[self.over]
        return f"{k.name}: {self.statistic}, {k.band_text(self.p)}, {where} {self.cells}; {interval}{level}"

    def as_data(self) -> dict:
        return {"key": self.key, "kind": self.kind, "params": sorted(self.params), "statistic": self.statistic,
                "cells": self.cells, "repeats": self.repeats, "over": self.over, "scope": self.scope,
                "by_construction": bool(self.construction)}


# Why every study's rules changed on 2026-11-27, when this vocabulary replaced the studies' own
# comparisons (each study's first RuleChange).
VOCABULARY_WHY = (
    "a referee's read found the same words judged by different thresholds in different studies, rules changed "
    "after their results were seen (a spread statistic moved from the range to the middle half), data exclusions "
    "applied to some findings only, differences judged without their uncertainty, comparisons of work not like for "
    "like, and findings that could not fail; every verdict now comes from the shared claim vocabulary with a 95% "
    "interval, fixed as data before the run. These rules were written knowing the verdicts listed as before; they "
    "were fixed, with this digest, before the regeneration whose verdicts are listed as after")


@dataclass(frozen=True)
class RuleChange:
    """A dated entry of a study's rule log: what changed, why, the verdicts before and after, and
    the digest of the rules it leaves (`StudyRules.digest`)."""
    date: str
    digest: str
    what: str
    why: str
    before: str
    after: str


@dataclass(frozen=True)
class StudyRules:
    """Everything a study's verdicts rest on, fixed before its run: whose data each dataset is
    (with why), and its claims. `changes` is the dated log; its last entry holds `digest()`."""
    study: str
    data: tuple            # ((dataset, THEIRS | STAND_IN | OTHER, why), ...)
    claims: tuple          # (Claim, ...)
    changes: tuple = ()    # (RuleChange, ...), oldest first

    def status(self, dataset: str) -> str:
        for name, st, _ in self.data:
            if name == dataset:
                return st
        return THEIRS

    def why(self, dataset: str) -> str:
        return next((w for name, _, w in self.data if name == dataset), "")

    def claim(self, key: str) -> Claim:
        return next(c for c in self.claims if c.key == key)

    def digest(self) -> str:
        """sha256 (16 hex digits) of the canonical JSON of the vocabulary's thresholds, the data
        declaration and every claim's judging fields (not the prose of the paper's words)."""
        body = {"vocabulary": vocabulary_data(),
                "data": sorted((d, s) for d, s, _ in self.data),
                "claims": [c.as_data() for c in self.claims]}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=float)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def vocabulary_data() -> dict:
    """The thresholds every study shares, as they enter each study's digest."""
    return {"confidence": CONFIDENCE, "nearly_equal_pp": NEARLY_EQUAL_PP, "slightly_pp": SLIGHTLY_PP,
            "same_rel": SAME_REL, "meaningful": MEANINGFUL, "about": ABOUT, "far": FAR,
            "min_repeats": MIN_REPEATS,
            "kinds": {name: [list(k.band({"k": 2.0, "lo": 0.25, "hi": 0.75, "of": ""})), k.unit]
                      for name, k in KINDS.items()}}


# ------------------------------------------------------------------------------ judging
@dataclass
class Cell:
    """One place a claim is checked (a dataset, a C, a kernel ...), with its estimate."""
    dataset: str
    label: str
    estimate: Estimate | None


def cell_verdict(est: Estimate | None, kind: Kind, params: dict) -> str | None:
    """HOLDS / DIFFERS / UNDECIDED of one estimate against the kind's band (None: missing)."""
    if est is None or math.isnan(est.value):
        return None
    lo, hi, lo_open, hi_open = kind.band(params)

    def inside(x):
        return (x > lo if lo_open else x >= lo - 1e-12 * abs(lo)) and (x < hi if hi_open else x <= hi + 1e-12 * abs(hi))
    if not est.exact and est.n < MIN_REPEATS:
        return UNDECIDED
    a, b = est.lo, est.hi
    if inside(a) and inside(b):
        return HOLDS
    if (b < lo or (lo_open and b <= lo)) or (a > hi or (hi_open and a >= hi)):
        return DIFFERS
    return UNDECIDED


def combine(verdicts: list[str], over: str) -> str:
    """The verdict of a claim over its cells: `each` (a cell that differs makes it differ),
    `some` (a cell that holds makes it hold), `most` (more than half hold; half or more differ:
    differs), `mean` (one cell)."""
    h, d, n = verdicts.count(HOLDS), verdicts.count(DIFFERS), len(verdicts)
    if over in ("each", "mean"):
        return DIFFERS if d else (UNDECIDED if h < n else HOLDS)
    if over == "some":
        return HOLDS if h else (UNDECIDED if d < n else DIFFERS)
    return HOLDS if 2 * h > n else (DIFFERS if 2 * d >= n else UNDECIDED)


def show(est: Estimate, unit: str) -> str:
    """An estimate as the README writes it: value [interval] (how)."""
    def f(v):
        if unit == "pp":
            return f"{v:+.2f}"
        if unit == "x":
            return "inf" if math.isinf(v) else f"{v:.3g}"
        if unit == "share":
            return f"{100 * v:.0f}%"
        return f"{v:.2g}"
    suffix = {"pp": " pp", "x": "x", "rel": "", "share": ""}[unit]
    if est.exact or est.lo == est.hi:
        return f"{f(est.value)}{suffix}"
    return f"{f(est.value)}{suffix} [{f(est.lo)}, {f(est.hi)}] ({est.how})"


@dataclass
class Finding:
    """A row of a README's findings table: the paper's claim, the rule (generated from the claim),
    our numbers, the verdict and why."""
    claim: str
    ours: str
    verdict: str
    why: str = ""
    rule: str = ""
    key: str = ""

    @property
    def holds(self) -> bool | None:
        return True if self.verdict == HOLDS else False if self.verdict == DIFFERS else None


def judge(rules: StudyRules, claim: Claim, cells: list[Cell], ours: str = "", why: str = "",
          paper: str | None = None, explains_undecided: bool = False) -> Finding:
    """The finding of `claim` on `cells`: each cell's verdict against the claim's kind, the cells
    on data the study does not judge set aside (OTHER everywhere; STAND_IN for a LEVEL claim),
    combined as `claim.over` says. `ours`: the study's numbers in the paper's units, put before the
    cells' estimates; `why`: the study's explanation of a `differs` (and, with `explains_undecided`,
    added to an `undecided`'s own reason: the interval that straddles the band)."""
    kind = KINDS[claim.kind]
    rule = claim.rule_text()
    text = paper or claim.paper
    judged, aside = [], []
    for c in cells:
        st = rules.status(c.dataset)
        if st == OTHER or (st == STAND_IN and claim.scope == LEVEL):
            aside.append(c)
        else:
            judged.append(c)
    verdicts = [(c, cell_verdict(c.estimate, kind, claim.p)) for c in judged]
    known = [(c, v) for c, v in verdicts if v is not None]
    parts = [ours] if ours else []
    if known:
        parts.append(_cells_text(known, kind))
    if aside:
        shown = "; ".join(f"{c.label}" + (f" {show(c.estimate, kind.unit)}" if c.estimate is not None
                                          and not math.isnan(c.estimate.value) else "") for c in aside[:4])
        more = f" and {len(aside) - 4} more" if len(aside) > 4 else ""
        why_aside = "; ".join(f"{d}: {_aside_word(rules, d, claim)}" for d in dict.fromkeys(c.dataset for c in aside))
        parts.append(f"not judged ({why_aside}; see 'Whose data'): {shown}{more}")
    said = "; ".join(p for p in parts if p)
    if claim.construction:
        return Finding(text, said, BY_CONSTRUCTION, "not counted as reproduced: it cannot fail here (the rule says why)",
                       rule, claim.key)
    if not known:
        if aside:
            return Finding(text, said, NOT_COMPARABLE, "; ".join(sorted({_aside_reason(rules, c.dataset, claim)
                                                                          for c in aside})), rule, claim.key)
        return Finding(text, said or "no cell was run", NOT_CHECKED, why or "the run lacks these cells", rule, claim.key)
    verdict = combine([v for _, v in known], claim.over)
    reason = why if verdict == DIFFERS else ""
    if verdict == UNDECIDED:
        reason = _undecided_reason(known, kind, claim) + (f"; {why}" if explains_undecided and why else "")
    return Finding(text, said, verdict, reason, rule, claim.key)


def _aside_word(rules: StudyRules, dataset: str, claim: Claim) -> str:
    return "not the paper's problem" if rules.status(dataset) == OTHER else "a stand-in, whose level is not theirs"


def _aside_reason(rules: StudyRules, dataset: str, claim: Claim) -> str:
    st = rules.status(dataset)
    w = rules.why(dataset)
    if st == OTHER:
        return f"not the paper's problem{': ' + w if w else ''}"
    return f"a stand-in for the paper's data, whose printed levels it cannot reproduce{': ' + w if w else ''}"


def _cells_text(known: list, kind: Kind) -> str:
    """Every cell's estimate when few, else the counts and the cells that did not hold."""
    counts = {v: sum(1 for _, x in known if x == v) for v in (HOLDS, DIFFERS, UNDECIDED)}
    if len(known) <= 4:
        return "; ".join(f"{c.label}: {show(c.estimate, kind.unit)}" for c, _ in known)
    word = {HOLDS: ("holds", "hold"), DIFFERS: ("differs", "differ"), UNDECIDED: ("undecided", "undecided")}
    head = f"{len(known)} cells: " + ", ".join(f"{n} {word[v][n != 1]}" for v, n in counts.items() if n)
    off = [(c, v) for c, v in known if v != HOLDS]
    shown = off[:4] if off else known[:2]
    tail = "; ".join(f"{c.label}: {show(c.estimate, kind.unit)}" + (f" ({v})" if v != HOLDS else "") for c, v in shown)
    more = f" and {len(off) - 4} more" if len(off) > 4 else ""
    return f"{head}; {'e.g. ' if not off else ''}{tail}{more}"


def _undecided_reason(known: list, kind: Kind, claim: Claim) -> str:
    few = [c.label for c, v in known if v == UNDECIDED and not c.estimate.exact and c.estimate.n < MIN_REPEATS]
    if few:
        return f"fewer than {MIN_REPEATS} repeats behind {', '.join(few[:3])}"
    straddle = [c.label for c, v in known if v == UNDECIDED]
    return (f"the 95% interval of {', '.join(straddle[:3])}{' and others' if len(straddle) > 3 else ''} covers an "
            f"edge of the band ({kind.band_text(claim.p)}): the data cannot tell on which side it lies")


def counts_line(found: list[Finding]) -> str:
    """The line under a findings table: how many findings of each verdict (by construction and not
    comparable are not counted as reproduced)."""
    n = {v: sum(1 for f in found if f.verdict == v)
         for v in (HOLDS, DIFFERS, UNDECIDED, NOT_COMPARABLE, BY_CONSTRUCTION, NOT_CHECKED)}
    judged = n[HOLDS] + n[DIFFERS] + n[UNDECIDED]
    return (f"Of {len(found)} findings, {judged} are judged: {n[HOLDS]} {'holds' if n[HOLDS] == 1 else 'hold'}, "
            f"{n[DIFFERS]} {'differs' if n[DIFFERS] == 1 else 'differ'}, {n[UNDECIDED]} undecided. Not counted: "
            f"{n[NOT_COMPARABLE]} not comparable (a level of data that are not the paper's), {n[BY_CONSTRUCTION]} by "
            f"construction (cannot fail here), {n[NOT_CHECKED]} not checked.")


# ------------------------------------------------------------------------------ README sections
def data_lines(rules: StudyRules) -> list[str]:
    """The README's declaration of whose data each dataset is, and what that sets aside."""
    word = {THEIRS: "the paper's data", STAND_IN: "a stand-in", OTHER: "not the paper's problem"}
    out = ["## Whose data, and what is judged on them\n",
           "Declared once for the study, before its run, and applied to every finding: a stand-in's mechanisms are "
           "judged, the paper's printed levels are not; data that are not the paper's problem are shown and judged "
           "nowhere.\n", "| dataset | status | why |", "|---|---|---|"]
    out += [f"| {d} | {word[s]} | {w} |" for d, s, w in rules.data]
    return out + [""]


def changes_lines(rules: StudyRules) -> list[str]:
    """The README's dated log of rule changes (what, why, verdicts before and after)."""
    out = ["## Changes to the rules\n",
           f"The rules above are fixed before a run; this study's rules have digest `{rules.digest()}` "
           "(`pipeline/papers/claims.py`, `StudyRules.digest`). A change needs a dated entry here.\n"]
    for c in reversed(rules.changes):
        out += [f"### {c.date} (digest `{c.digest}`)\n", f"- What changed: {c.what}", f"- Why: {c.why}",
                f"- Verdicts before: {c.before}", f"- Verdicts after: {c.after}", ""]
    return out


def vocabulary_table() -> list[str]:
    """Markdown table of the kinds: the phrase, the statistic, the band, its source (docs)."""
    out = ["| kind | the papers' words | statistic | holds when its 95% interval is | threshold from |",
           "|---|---|---|---|---|"]
    ex = {"about": {"k": 4.0}, "between": {"lo": 2.0, "hi": 5.0}, "within": {"of": "count"},
          "share": {"lo": 1.0, "hi": 1.0}}
    for name, k in KINDS.items():
        out.append(f"| {name} | {k.words} | {k.statistic} | {k.band_text(ex.get(name, {}))}"
                   f"{' (e.g. k = 4)' if name == 'about' else ''} | {k.source} |")
    return out


def rule_texts(rules: StudyRules) -> dict[str, str]:
    """claim key -> its rule text, as the README prints it (tests compare the two)."""
    return {c.key: c.rule_text() for c in rules.claims}

