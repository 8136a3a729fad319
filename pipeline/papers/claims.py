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
  (`difference_over`), or from the test rows themselves: `paired_rows`, the discordant rows of
  two models on one test set, whose repeats (pass orders, batch seeds) add their spread, with
  Student's t on n - 1 degrees of freedom as every interval over repeats; `proportions`, two
  accuracies on independent test sets (not repeats), with the normal quantile.
- a value that is not a sample (a certified optimum, a count of runs): `exact`, no width.

The verdict of one cell compares the interval with the kind's band: **holds** when the interval
lies inside the band, **differs** when it lies outside, **undecided** when it straddles an edge
(or rests on fewer than MIN_REPEATS repeats), and **below detectable power** when it straddles a
band of finite width while being wider than the band: no value of the statistic could have been
shown to hold there. A claim over several cells combines them as its `over` says (`each`, `some`,
`most`; "on average" is one cell whose statistic is the mean); cells below detectable power are
set aside and named. A claim whose premise is another claim (`Claim.given`) is judged only where
that premise holds (**premise not met** otherwise).

Rules are data: `StudyRules.digest` hashes every threshold of this vocabulary and every claim's
kind, parameters, statistic, cells and repeats, with the study's data declaration and its
pre-registered sensitivities (`Sensitivity`: a finding judged again with one setting moved). A
study keeps the digest of its rules in a dated `RuleChange` (what changed, why, the verdicts before
and after); tests/pipeline/test_rules.py fails when the rules move without a new entry, and when
`lint` finds a claim that measures against the paper's printed number without saying so, or keeps
the default mechanism scope for such a number on a stand-in.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

# ------------------------------------------------------------------------------ the thresholds
CONFIDENCE = 0.95
# "Nearly equal", "almost identical", "almost equally well", "at the paper's level": two
# accuracies within 2.5 percentage points, either way. The widest gap a paper calls nearly equal:
# duros_katzman's Table 4 (multiclass, frequency features: .7172 against .6929, 2.43 pp);
# roethel_brynda's "almost identical" Table 1 has at most 2.02 pp (heart, C = 10).
NEARLY_EQUAL_PP = 2.5
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
# An interval wider than its band, across an edge: it could never lie inside, whatever the truth
# (heart's 99 test rows against a band of 5 pp): the data cannot judge the claim at this size.
BELOW_POWER = "below detectable power"
# A claim made of another (`Claim.given`): judged only where that premise holds.
PREMISE_NOT_MET = "premise not met"
# Whose data a dataset is (StudyRules.data): the paper's own (THEIRS); built to stand in for data
# that cannot be had (STAND_IN: the mechanisms are judged on it, the paper's printed levels are
# not); or not the paper's problem (OTHER: shown, judged nowhere).
THEIRS, STAND_IN, OTHER = "theirs", "stand-in", "other"
# What a claim is about: a relation between methods within our run (MECHANISM), or a number the
# paper printed for its data (LEVEL: judged on THEIRS datasets only).
MECHANISM, LEVEL = "mechanism", "level"
# The classes of claim a dataset's declaration can keep it out of (`StudyRules.data`, 4th field):
# ACCURACY, every accuracy comparison (a kind in percentage points), and LEVEL, every printed level.
ACCURACY = "accuracy"


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
    """The mean of per-repeat differences with its interval: Student's t on n - 1 degrees of
    freedom over the repeats, with `within` (a standard error each repeat carries from its own
    test rows) added to the repeats' own: sqrt(within^2 + var/n). One repeat with a `within` is
    not an interval over repeats: the normal quantile on `within` alone."""
    x = np.asarray([v for v in samples if np.isfinite(v)], dtype=float)
    if x.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, f"no {what}")
    m = float(x.mean())
    between = float(x.var(ddof=1)) / x.size if x.size > 1 else (0.0 if within else math.inf)
    se = math.sqrt(within ** 2 + between)
    q = _t(x.size) if x.size > 1 else (_z() if within else math.inf)
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


def paired_rows(diffs_pp: Sequence[float], ses_pp: Sequence[float], n_rows: int, what: str = "repeats") -> Estimate:
    """Accuracy differences of two models on one test set, one per repeat (another pass order or
    batch seed, the same rows), each with its discordant-row standard error (`discordant_se`):
    their mean, with an error of the rows (the mean standard error: repeats on the same rows are
    not independent of each other) and of the repeats (their spread), Student's t on n - 1."""
    ses = [s for s in ses_pp if np.isfinite(s)]
    within = float(np.mean(ses)) if ses else 0.0
    return difference_over(diffs_pp, f"{what} on {n_rows} test rows", within=within)


def discordant(right_a: np.ndarray, right_b: np.ndarray) -> tuple[float, float]:
    """(a's accuracy minus b's in pp, its discordant-row standard error) of two models on the same
    test rows, from which rows each classifies right (boolean arrays in one row order)."""
    right_a, right_b = np.asarray(right_a, bool), np.asarray(right_b, bool)
    n = right_a.size
    only_a = int(np.count_nonzero(right_a & ~right_b))
    only_b = int(np.count_nonzero(right_b & ~right_a))
    return 100.0 * (only_a - only_b) / n, discordant_se(only_a, only_b, n)


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
         "how far an accuracy falls below another (percentage points)", _b(0.0, math.inf, True),
         lambda p: "above 0 pp (lower; how much lower is shown, not judged)", "pp",
         "lower: no paper gives the size of 'slightly' (bertini's Figure 3 is a picture), so none is judged"),
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
         "the relative difference of two objective values", lambda p: (0.0, p.get("rel", SAME_REL), False, False),
         lambda p: f"at most {p.get('rel', SAME_REL):g}" + (" (about 4 significant digits)" if "rel" not in p else ""),
         "rel", "troyan's Table 3: Maj and alpha-Maj on Heart 1.7e-5 apart, one minimum"),
    Kind("different", "stops away from the optimum, results differ, depends on the start",
         "the relative difference of two objective values", lambda p: (p.get("rel", SAME_REL), math.inf, True, False),
         lambda p: f"above {p.get('rel', SAME_REL):g}" + (" (not the same to about 4 digits)" if "rel" not in p else ""),
         "rel", "the complement of same optimum"),
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
# The kinds whose band is a number of the paper's (about k times, between k1 and k2, within the
# paper's count), and the statistics that measure against a number it printed ("ours minus theirs",
# "over theirs", "against their Table 2's mean", "their loss"): such a claim names the number
# (`Claim.printed`), which `lint` checks.
PRINTED_KINDS = ("about", "between", "within")
_AGAINST_PRINTED = re.compile(r"\b(minus|over|against|than) (theirs\b|the paper's (?!(\d+ )?datasets)|their (?!q\b))"
                              r"|\btheir loss\b", re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as data: the paper's words, the kind that judges it and its
    parameters, the statistic in this study's terms, the cells it must hold over and the repeats
    behind each cell's interval. `construction`: why it cannot fail here (then it is shown, marked
    *by construction*, and not counted as reproduced). `printed`: the number(s) the paper printed
    that its band or the other side of its statistic is taken from; on a stand-in such a number
    is a level of the paper's data (`scope=LEVEL`), unless `mechanism` says why it is the method's
    on any data. `given`: the key of a claim this one presupposes (it is judged only where that
    one holds)."""
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
    printed: str = ""
    mechanism: str = ""
    given: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.key}: no kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if self.over not in OVER:
            raise ValueError(f"claim {self.key}: over={self.over!r}, one of {', '.join(OVER)}")
        if self.scope not in (MECHANISM, LEVEL):
            raise ValueError(f"claim {self.key}: scope={self.scope!r}, one of {MECHANISM!r}, {LEVEL!r}")

    @property
    def p(self) -> dict:
        return dict(self.params)

    @property
    def category(self) -> str:
        """The class of claim a dataset's declaration can keep it out of: LEVEL, ACCURACY (a
        comparison of accuracies, in percentage points), or none."""
        return LEVEL if self.scope == LEVEL else ACCURACY if KINDS[self.kind].unit == "pp" else ""

    def varied(self, params) -> "Claim":
        """The same claim with some parameters moved (a `Sensitivity`)."""
        return replace(self, params=tuple(sorted({**self.p, **dict(params)}.items())))

    def rule_text(self) -> str:
        """The README's rule: generated from the claim's own kind and parameters, never typed."""
        k = KINDS[self.kind]
        if self.construction:
            return f"by construction: {self.construction}"
        interval = "exact values" if self.repeats == "exact" else f"its 95% interval over {self.repeats} inside that"
        level = "; a level the paper printed for its data, judged on the paper's data only" if self.scope == LEVEL else ""
        mech = f"; the paper's {self.printed} taken as the method's on any data: {self.mechanism}" if self.mechanism else ""
        given = f"; judged only where `{self.given}` holds" if self.given else ""
        where = "in" if self.over == "each" and self.cells.startswith("the ") else OVER[self.over]
        return f"{k.name}: {self.statistic}, {k.band_text(self.p)}, {where} {self.cells}; {interval}{level}{mech}{given}"

    def as_data(self) -> dict:
        return {"key": self.key, "kind": self.kind, "params": sorted(self.params), "statistic": self.statistic,
                "cells": self.cells, "repeats": self.repeats, "over": self.over, "scope": self.scope,
                "by_construction": bool(self.construction), "printed": bool(self.printed),
                "mechanism": bool(self.mechanism), "given": self.given}


@dataclass(frozen=True)
class Sensitivity:
    """A finding judged again with one setting moved, declared with the rules before the run (so
    in their digest): a threshold of its kind (`params`, e.g. (("rel", 1.7e-5),)) or a choice of
    the study's that its finding reads (e.g. (("gamma", 1e-3),)). Its verdict is shown beside the
    finding's, never instead of it."""
    claim: str
    what: str
    params: tuple

    def as_data(self) -> dict:
        return {"claim": self.claim, "params": sorted(self.params)}


# Why every study's rules changed on 2026-11-27, when this vocabulary replaced the studies' own
# comparisons (each study's first RuleChange).
VOCABULARY_WHY = (
    "a referee's read found the same words judged by different thresholds in different studies, rules changed "
    "after their results were seen (a spread statistic moved from the range to the middle half), data exclusions "
    "applied to some findings only, differences judged without their uncertainty, comparisons of work not like for "
    "like, and findings that could not fail; every verdict now comes from the shared claim vocabulary with a 95% "
    "interval, fixed as data before the run. These rules were written knowing the verdicts listed as before; they "
    "were fixed, with this digest, before the regeneration whose verdicts are listed as after")
# Why every study's rules changed on 2026-11-28 (each study's entry of that day says what).
REFEREE_WHY = (
    "a referee's second read graded the studies B+ to C+ and named what stood between each and an A: intervals "
    "over 5 repeats with the normal quantile (now Student's t on n - 1 degrees of freedom wherever an interval is "
    "over repeats, the paired test rows too), cells compared unlike for like, findings that cannot fail counted as "
    "reproduced, levels judged on stand-ins, intervals too wide to decide called undecided (now: below detectable "
    "power), findings that hold only because another fails (now judged only where their premise holds), and "
    "thresholds that had no source. These rules were written knowing the verdicts listed as before")


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
    (`data`: (dataset, THEIRS | STAND_IN | OTHER, why[, ((category, reason), ...)]), the optional
    last field keeping the dataset out of every claim of a category, ACCURACY or LEVEL), its
    claims and the sensitivities it will show. `changes` is the dated log; its last entry holds
    `digest()`."""
    study: str
    data: tuple            # ((dataset, THEIRS | STAND_IN | OTHER, why[, kept out of]), ...)
    claims: tuple          # (Claim, ...)
    changes: tuple = ()    # (RuleChange, ...), oldest first
    sensitivities: tuple = ()   # (Sensitivity, ...)

    def __post_init__(self):
        keys = [c.key for c in self.claims]
        for c in self.claims:
            if c.given and c.given not in keys:
                raise ValueError(f"{self.study}: claim {c.key} is given {c.given!r}, which is no claim of the study")
        for s in self.sensitivities:
            if s.claim not in keys:
                raise ValueError(f"{self.study}: a sensitivity of {s.claim!r}, which is no claim of the study")

    def _row(self, dataset: str) -> tuple:
        return next((row for row in self.data if row[0] == dataset), (dataset, THEIRS, ""))

    def status(self, dataset: str) -> str:
        return self._row(dataset)[1]

    def why(self, dataset: str) -> str:
        return self._row(dataset)[2]

    def kept_out(self, dataset: str) -> dict:
        """category -> why the dataset is kept out of every claim of that category."""
        row = self._row(dataset)
        return dict(row[3]) if len(row) > 3 else {}

    def aside(self, dataset: str, claim: Claim) -> str:
        """Why a cell of `claim` on `dataset` is shown and not judged ("" when it is judged): data
        that are not the paper's problem; a stand-in, for a level; a dataset declared out of the
        claim's category."""
        st = self.status(dataset)
        if st == OTHER:
            return "not the paper's problem"
        if st == STAND_IN and claim.scope == LEVEL:
            return "a stand-in, whose level is not theirs"
        if claim.category in self.kept_out(dataset):
            return f"kept out of every {claim.category} claim"
        return ""

    def aside_reason(self, dataset: str, claim: Claim) -> str:
        """The long form of `aside`, with the declaration's why (a finding not comparable says it)."""
        word, why = self.aside(dataset, claim), self.why(dataset)
        if word.startswith("kept out"):
            return f"{dataset} is {word}: {self.kept_out(dataset)[claim.category]}"
        if word.startswith("a stand-in"):
            return f"a stand-in for the paper's data, whose printed levels it cannot reproduce{': ' + why if why else ''}"
        return f"{word}{': ' + why if why else ''}"

    def claim(self, key: str) -> Claim:
        return next(c for c in self.claims if c.key == key)

    def number(self, key: str) -> int:
        """The finding's number in the README (the claims' order)."""
        return 1 + [c.key for c in self.claims].index(key)

    def digest(self) -> str:
        """sha256 (16 hex digits) of the canonical JSON of the vocabulary's thresholds, the data
        declaration, every claim's judging fields (not the prose of the paper's words) and the
        sensitivities."""
        body = {"vocabulary": vocabulary_data(),
                "data": sorted((row[0], row[1], sorted(dict(row[3])) if len(row) > 3 else []) for row in self.data),
                "claims": [c.as_data() for c in self.claims],
                "sensitivities": [s.as_data() for s in self.sensitivities]}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=float)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def vocabulary_data() -> dict:
    """The thresholds every study shares, as they enter each study's digest."""
    return {"confidence": CONFIDENCE, "nearly_equal_pp": NEARLY_EQUAL_PP, "same_rel": SAME_REL,
            "meaningful": MEANINGFUL, "about": ABOUT, "far": FAR, "min_repeats": MIN_REPEATS,
            "t_over_repeats": True, "below_power": "an interval wider than a finite band",
            "kinds": {name: [list(k.band({"k": 2.0, "lo": 0.25, "hi": 0.75, "of": ""})), k.unit]
                      for name, k in KINDS.items()}}


def lint(rules: StudyRules) -> list[str]:
    """What is wrong with a study's claims as declared (empty: nothing): a claim whose band or
    statistic is a number the paper printed without naming it (`printed`), and a claim that cites
    such a number and keeps the default mechanism scope while the study has stand-in data (a
    printed number is a level of the paper's data: `scope=LEVEL`, or `mechanism` saying why it is
    the method's on any data)."""
    out = []
    stand_ins = [row[0] for row in rules.data if row[1] == STAND_IN]
    for c in rules.claims:
        against = _AGAINST_PRINTED.search(c.statistic)
        if (c.kind in PRINTED_KINDS or against) and not c.printed:
            what = f"its kind {c.kind!r} takes the paper's number" if c.kind in PRINTED_KINDS else \
                f"its statistic measures against the paper's ({against.group(0)!r})"
            out.append(f"{rules.study}: claim {c.key}: {what}: name that number in printed=")
        if c.printed and c.scope == MECHANISM and not c.mechanism and not c.construction and stand_ins:
            out.append(f"{rules.study}: claim {c.key} cites the paper's printed {c.printed} and keeps the default "
                       f"mechanism scope on stand-in data ({', '.join(stand_ins)}): a printed number is a level of "
                       f"the paper's data; declare scope=LEVEL (judged on the paper's data only), or say in "
                       f"mechanism= why it is the method's on any data")
    return out


# ------------------------------------------------------------------------------ judging
@dataclass
class Cell:
    """One place a claim is checked (a dataset, a C, a kernel ...), with its estimate."""
    dataset: str
    label: str
    estimate: Estimate | None


def cell_verdict(est: Estimate | None, kind: Kind, params: dict) -> str | None:
    """HOLDS / DIFFERS / UNDECIDED / BELOW_POWER of one estimate against the kind's band (None:
    missing)."""
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
    if _wider_than_band(a, b, lo, hi, kind.unit):
        return BELOW_POWER
    return UNDECIDED


def _wider_than_band(a: float, b: float, lo: float, hi: float, unit: str) -> bool:
    """Whether the interval [a, b] is wider than a finite band [lo, hi] (a ratio's on the log
    scale, where its interval is symmetric): then it cannot lie inside, whatever the truth."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return False
    if unit == "x":
        return lo > 0 and a > 0 and math.log(b / a) > math.log(hi / lo)
    return b - a > hi - lo


def combine(verdicts: list[str], over: str) -> str:
    """The verdict of a claim over its cells: `each` (a cell that differs makes it differ),
    `some` (a cell that holds makes it hold), `most` (more than half hold; half or more differ:
    differs), `mean` (one cell). Cells below detectable power are set aside; with none left, that
    is the verdict."""
    verdicts = [v for v in verdicts if v != BELOW_POWER]
    if not verdicts:
        return BELOW_POWER
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
          paper: str | None = None, explains_undecided: bool = False, premise: Finding | None = None) -> Finding:
    """The finding of `claim` on `cells`: each cell's verdict against the claim's kind, the cells
    on data the study does not judge for this claim set aside (`StudyRules.aside`), combined as
    `claim.over` says. `ours`: the study's numbers in the paper's units, put before the cells'
    estimates; `why`: the study's explanation of a `differs` (and, with `explains_undecided`,
    added to an `undecided`'s own reason: the interval that straddles the band). A claim `given`
    another needs that one's finding (`premise`): where it does not hold, the verdict is
    PREMISE_NOT_MET, the numbers shown."""
    kind = KINDS[claim.kind]
    rule = claim.rule_text()
    text = paper or claim.paper
    judged, aside = [], []
    for c in cells:
        (aside if rules.aside(c.dataset, claim) else judged).append(c)
    _refuse_printed_on_stand_ins(rules, claim, judged)
    verdicts = [(c, cell_verdict(c.estimate, kind, claim.p)) for c in judged]
    known = [(c, v) for c, v in verdicts if v is not None]
    parts = [ours] if ours else []
    if known:
        parts.append(_cells_text(known, kind))
    if aside:
        shown = "; ".join(f"{c.label}" + (f" {show(c.estimate, kind.unit)}" if c.estimate is not None
                                          and not math.isnan(c.estimate.value) else "") for c in aside[:4])
        more = f" and {len(aside) - 4} more" if len(aside) > 4 else ""
        why_aside = "; ".join(f"{d}: {rules.aside(d, claim)}" for d in dict.fromkeys(c.dataset for c in aside))
        parts.append(f"not judged ({why_aside}; see 'Whose data'): {shown}{more}")
    said = "; ".join(p for p in parts if p)
    if claim.construction:
        return Finding(text, said, BY_CONSTRUCTION, "not counted as reproduced: it cannot fail here (the rule says why)",
                       rule, claim.key)
    if claim.given:
        if premise is None:
            raise ValueError(f"{rules.study}: claim {claim.key} is judged only where {claim.given} holds: pass that "
                             "claim's finding as premise=")
        if premise.verdict == NOT_CHECKED:
            return Finding(text, said or "no cell was run", NOT_CHECKED,
                           f"its premise, finding {rules.number(claim.given)} ({claim.given}), was not checked", rule,
                           claim.key)
        if premise.verdict != HOLDS:
            return Finding(text, said, PREMISE_NOT_MET,
                           f"judged only where finding {rules.number(claim.given)} ({claim.given}) holds, and it "
                           f"{'is ' if premise.verdict in (UNDECIDED, BELOW_POWER) else ''}{premise.verdict} here: "
                           "the claim is about a case this run does not have", rule, claim.key)
    if not known:
        if aside:
            return Finding(text, said, NOT_COMPARABLE, "; ".join(sorted({rules.aside_reason(c.dataset, claim)
                                                                          for c in aside})), rule, claim.key)
        return Finding(text, said or "no cell was run", NOT_CHECKED, why or "the run lacks these cells", rule, claim.key)
    verdict = combine([v for _, v in known], claim.over)
    low = [c for c, v in known if v == BELOW_POWER]
    reason = why if verdict == DIFFERS else ""
    if verdict == UNDECIDED:
        reason = _undecided_reason(known, kind, claim) + (f"; {why}" if explains_undecided and why else "")
    if low:
        power = _power_reason(low, kind, claim)
        reason = power if verdict == BELOW_POWER else "; ".join(r for r in (reason, "set aside: " + power) if r)
    return Finding(text, said, verdict, reason, rule, claim.key)


def _refuse_printed_on_stand_ins(rules: StudyRules, claim: Claim, judged: list[Cell]) -> None:
    """A printed number judged on a stand-in as a mechanism, though nobody said why it would be
    the method's on any data (`lint` finds the same in the declaration; this, in the cells)."""
    if claim.printed and claim.scope == MECHANISM and not claim.mechanism:
        on = sorted({c.dataset for c in judged if rules.status(c.dataset) == STAND_IN})
        if on:
            raise ValueError(f"{rules.study}: claim {claim.key} cites the paper's printed {claim.printed} and is judged "
                             f"as a mechanism on the stand-in {', '.join(on)}: declare scope=LEVEL, or mechanism=")


def _cells_text(known: list, kind: Kind) -> str:
    """Every cell's estimate when few, else the counts and the cells that did not hold."""
    order = (HOLDS, DIFFERS, UNDECIDED, BELOW_POWER)
    counts = {v: sum(1 for _, x in known if x == v) for v in order}
    if len(known) <= 4:
        return "; ".join(f"{c.label}: {show(c.estimate, kind.unit)}" + (f" ({v})" if v == BELOW_POWER else "")
                         for c, v in known)
    word = {HOLDS: ("holds", "hold"), DIFFERS: ("differs", "differ"), UNDECIDED: ("undecided", "undecided"),
            BELOW_POWER: ("below detectable power", "below detectable power")}
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


def _power_reason(low: list[Cell], kind: Kind, claim: Claim) -> str:
    names = ", ".join(c.label for c in low[:3]) + (" and others" if len(low) > 3 else "")
    return (f"below detectable power at {names}; there the 95% interval is wider than the band "
            f"({kind.band_text(claim.p)}) it straddles, so no result of this size could show the claim (too few test "
            "rows or repeats)")


def counts_line(found: list[Finding]) -> str:
    """The line under a findings table: how many findings of each verdict (only holds, differs and
    undecided are judged; the rest are not counted as reproduced)."""
    n = {v: sum(1 for f in found if f.verdict == v)
         for v in (HOLDS, DIFFERS, UNDECIDED, BELOW_POWER, NOT_COMPARABLE, BY_CONSTRUCTION, PREMISE_NOT_MET,
                   NOT_CHECKED)}
    judged = n[HOLDS] + n[DIFFERS] + n[UNDECIDED]
    return (f"Of {len(found)} findings, {judged} are judged: {n[HOLDS]} {'holds' if n[HOLDS] == 1 else 'hold'}, "
            f"{n[DIFFERS]} {'differs' if n[DIFFERS] == 1 else 'differ'}, {n[UNDECIDED]} undecided. Not counted: "
            f"{n[BELOW_POWER]} below detectable power (the data cannot resolve the band), {n[NOT_COMPARABLE]} not "
            f"comparable (data that cannot carry the claim), {n[BY_CONSTRUCTION]} by construction (cannot fail here), "
            f"{n[PREMISE_NOT_MET]} premise not met, {n[NOT_CHECKED]} not checked.")


# ------------------------------------------------------------------------------ README sections
OUTCOME = {HOLDS: "reproduced", DIFFERS: "differs"}
_SOURCE = re.compile(r" \((?=Sections?\b|Tables?\b|Figures?\b)")


# Words a period follows without ending the sentence ("Shalev-Shwartz et al. 2007", "e.g. the
# heart set"): a reason cut there would end mid-citation in the summary table.
_ABBREVIATIONS = {"al", "e.g", "i.e", "cf", "vs", "etc", "approx", "fig", "eq", "sec", "tab", "no"}


def _first_clause(text: str) -> str:
    """A reason's first clause, for the summary table: to the first '; ' or '. ' outside
    parentheses, a period after an abbreviation or an initial not ending it."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif depth == 0 and i > 0 and text[i + 1 : i + 2] == " " and ch in ";.":
            if ch == ".":
                word = text[:i].rsplit(" ", 1)[-1].lstrip("(")
                if word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper()):
                    continue
            return text[:i].rstrip(".")
    return text.rstrip(".")


def outcome_lines(found: list[Finding]) -> list[str]:
    """The README's summary: one table saying which findings are reproduced, which differ and which
    cannot be judged, each with the first clause of why (the findings table below has the rest)."""
    out = ["| outcome | # | the finding | why |", "|---|---|---|---|"]
    numbered = list(enumerate(found, 1))
    for group in ("reproduced", "differs", "cannot be judged"):
        for i, f in numbered:
            if OUTCOME.get(f.verdict, "cannot be judged") != group:
                continue
            claim = _SOURCE.split(f.claim, maxsplit=1)[0]
            if group == "cannot be judged":
                why = _first_clause(f.why) if f.why.startswith(f.verdict) else \
                    f"{f.verdict}: {_first_clause(f.why)}" if f.why else f.verdict
                if f.verdict == BY_CONSTRUCTION:
                    why = f"{f.verdict}: {_first_clause(f.rule.removeprefix('by construction: '))}"
            else:
                where = ("in at least one cell" if f" {OVER['some']} " in f.rule else
                         "in most cells" if f" {OVER['most']} " in f.rule else "in every cell judged")
                why = _first_clause(f.why) if f.why else f"the 95% interval lies inside the band {where}"
                if f.why.startswith("set aside: "):
                    # Cells below power were set aside: the verdict is still the judged cells'.
                    side = "inside" if group == "reproduced" else "outside"
                    why = f"the 95% interval lies {side} the band {where} ({_first_clause(f.why)})"
            out.append(f"| {group} | {i} | {claim.replace('|', chr(92) + '|')} | {why.replace('|', chr(92) + '|')} |")
    return out


def data_lines(rules: StudyRules) -> list[str]:
    """The README's declaration of whose data each dataset is, and what that sets aside."""
    word = {THEIRS: "the paper's data", STAND_IN: "a stand-in", OTHER: "not the paper's problem"}
    out = ["## Whose data, and what is judged on them\n",
           "Declared once for the study, before its run, and applied to every finding: a stand-in's mechanisms are "
           "judged, the paper's printed levels are not; data that are not the paper's problem are shown and judged "
           "nowhere; a dataset kept out of a class of claims (every accuracy comparison, or every printed level) is "
           "kept out of each claim of that class.\n",
           "| dataset | status | why | kept out of |", "|---|---|---|---|"]
    for row in rules.data:
        kept = "; ".join(f"every {cat} claim: {why}" for cat, why in (row[3] if len(row) > 3 else ()))
        out.append(f"| {row[0]} | {word[row[1]]} | {row[2]} | {kept} |")
    return out + [""]


def sensitivities(rules: StudyRules, finding_of: dict[str, Callable[[Claim], Finding]]) -> list[tuple[Sensitivity, Finding]]:
    """Each declared sensitivity with its finding: `finding_of[claim key]` judges the claim it is
    handed (the study's claim with the sensitivity's parameters moved)."""
    return [(s, finding_of[s.claim](rules.claim(s.claim).varied(s.params))) for s in rules.sensitivities]


def sensitivity_lines(rules: StudyRules, judged: list[tuple[Sensitivity, Finding]]) -> list[str]:
    """The README's pre-registered sensitivities: each finding judged again with one setting moved."""
    if not rules.sensitivities:
        return []
    out = ["## Sensitivity, declared with the rules\n",
           "Each row judges one finding again with one setting moved, as declared with the rules before the run (in "
           "their digest). The finding's verdict above stands; a row says how much it rests on that setting.\n",
           "| the finding | moved | rule | ours | verdict |", "|---|---|---|---|---|"]
    for s, f in judged:
        # The row opens with the claim's key, not its number: a findings row is `| <number> |` (what
        # papers_check and test_rules read), and a sensitivity is not a finding.
        cells = [x.replace("|", "\\|") for x in (s.what, f.rule, f.ours)]
        out.append(f"| `{s.claim}` (finding {rules.number(s.claim)}) | {cells[0]} | {cells[1]} | {cells[2]} | "
                   f"**{f.verdict}** |")
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
