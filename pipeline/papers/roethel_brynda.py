"""roethel_brynda: A. Roethel and M. Brynda, "Dual Coordinate Descent Method for Linear SVM",
project report, April 2021. Writes Tables 1 and 2 (test accuracy and time, ours beside theirs),
each of the paper's findings marked holds or differs, and Figures 1-7, from a run of
conf/experiment/roethel_brynda.yaml.

The claims are data (`RULES`, judged by pipeline/papers/claims.py); the numbers each is judged on
come from a summary table (one row per dataset x solver entry x C, with every repeat's accuracy,
time and passes), the test rows each kept model classifies right (`predictions`), and the tracked
active sets (`active_stats`), so each can be checked on hand-made tables.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.common import fmt, markdown_table
from ..report.figures import _panels, _plt, figure_legend, w_change_per_pass
from ..report.registry import ReportData, Skip
from . import paper
from .claims import (HOLDS, KINDS, LEVEL, REFEREE_WHY, STAND_IN, THEIRS, VOCABULARY_WHY, Cell, Claim, Estimate, Finding,
                     RuleChange, StudyRules, cell_verdict, changes_lines, data_lines, difference_over, discordant, exact,
                     judge, paired_rows, proportions, ratio_over)
from .common import draw_figures, figure_lines, findings_table, load, predictions, save_figures, with_costs

NAME = "roethel_brynda"
CS = (1.0, 10.0, 100.0)
DATASETS = ("banknote", "cleveland_heart", "mnist_1v7", "toy_blobs")
PAPER_NAMES = {"banknote": "banknote", "cleveland_heart": "heart", "mnist_1v7": "mnist", "toy_blobs": "toy"}
# The paper's three columns, and our entries measured against each (both stopping rules).
COLUMNS = {"our": ("dcd", "dcd_wchange"), "our shrinking": ("dcd_shrinking", "dcd_wchange_shrinking"),
           "sklearn": ("liblinear",)}
REFERENCE = "liblinear"
# Table 1 (test accuracy, %) and Table 2 (seconds), at C = 1, 10, 100.
TABLE1 = {
    "banknote": {"our": (98.90, 98.90, 98.68), "our shrinking": (98.90, 98.90, 98.90), "sklearn": (98.90, 98.90, 98.90)},
    "cleveland_heart": {"our": (80.81, 80.81, 82.83), "our shrinking": (80.81, 80.81, 80.81),
                        "sklearn": (80.81, 82.83, 74.75)},
    "mnist_1v7": {"our": (99.55, 99.58, 99.58), "our shrinking": (99.55, 99.58, 99.58), "sklearn": (99.55, 99.58, 99.58)},
    "toy_blobs": {"our": (93.48, 93.48, 93.64), "our shrinking": (93.48, 93.48, 93.64), "sklearn": (93.48, 93.48, 93.48)},
}
TABLE2 = {
    "banknote": {"our": (3.3, 12.0, 11.9), "our shrinking": (4.2, 10.2, 7.2), "sklearn": (0.0029, 0.0099, 0.0068)},
    "cleveland_heart": {"our": (1.8, 4.3, 4.3), "our shrinking": (1.9, 4.5, 4.3), "sklearn": (0.0063, 0.0072, 0.0066)},
    "mnist_1v7": {"our": (45.9, 80.9, 81.5), "our shrinking": (65.7, 109.8, 107.6), "sklearn": (0.1399, 0.1133, 0.1095)},
    "toy_blobs": {"our": (4.1, 23.7, 25.1), "our shrinking": (5.3, 22.9, 23.9), "sklearn": (0.0078, 0.0196, 0.0315)},
}
TOL = 1e-4               # their epsilon, and ours
EXCEPTION = ("cleveland_heart", 100.0)   # Table 1's own exception to "almost identical" (finding 4's cell)
PG = ("dcd", "dcd_shrinking")            # the entries that stop on M - m < eps, LinearSVC's own rule
TRACKED = "dcd_shrinking_tracked"        # the toy fit that keeps A after given passes (dcd record_active_at)
DURING = (5, 10, 20)                     # the tracked passes "through the learning process" (Figure 4)
# The dated log of this study's rule changes (claims.RuleChange; README "Changes to the rules").
CHANGES = (
    RuleChange(
        "2026-11-27", "8084c43bce5e1cbe",
        # what changed
        "the shared claim vocabulary; 'almost identical' and 'unchanged' accuracy within 2.5 pp (was 2 test "
        "points or 0.5 pp), judged on the rows two models classify differently with a 95% interval; the "
        "levels per dataset and C against theirs, within 2.5 pp with the interval of two test sets (was the "
        "median over C within 2 pp); heart at C=100 'worse' above 2.5 pp with its interval (was 3 pp); 'far "
        "slower' at least 10x per cell, only the entries stopping on LinearSVC's own rule (was the median "
        "over all four entries, per repeat); shrinking 'not faster': the mean of time without over with at "
        "most 1.1x (was with over without at least 0.9); 'fewer passes': above 1.1x in some cell, stop=pg "
        "entries only; Figure 4 judged on the tracked active sets after passes 5, 10, 20 in 5 repeats (was "
        "the final alphas, a KKT consequence, now shown as by construction); the fits run cold and "
        "interleaved (dcd's C path was warm against LinearSVC's cold fits)",
        VOCABULARY_WHY,
        # the verdicts before
        "1 matches LinearSVC holds, 2 shrinking same accuracy holds, 3 levels differs, 4 heart drop holds, 5 "
        "far slower differs, 6 shrinking not faster differs, 7 fewer passes holds, 8 w_change reached holds, "
        "9 active near the boundary holds",
        # the verdicts after
        "1 matches LinearSVC holds, 2 shrinking same accuracy undecided (heart's 99 test rows at C=10 and "
        "100, where no run converged), 3 levels undecided (heart), 4 heart drop undecided, 5 far slower "
        "differs, 6 shrinking not faster differs, 7 fewer passes holds, 8 w_change reached holds, 9 A near "
        "the overlap during the passes differs, 10 the final alphas by construction"),
    RuleChange(
        "2026-11-28", "a049fae133773d74",
        # what changed
        "every interval over repeats with Student's t on n - 1 degrees of freedom, the paired test rows' too "
        "(was the normal quantile where a test-row error entered: findings 1, 2, 4); an interval wider than a "
        "finite band is 'below detectable power' and set aside, named (heart's 99 test rows: finding 3's two "
        "test sets of 99 rows give +-10 pp against +-2.5, and the paired cells of 1 and 2 on heart at least "
        "+-2.8 pp); 5 far slower and 7 fewer passes judged only where both sides met tol 1e-4 in every repeat "
        "(were all 24 cells, 16 of them with a side at the 1000-pass cap: a time or a pass count at the cap "
        "is not one to the tolerance), and 6 shrinking not faster likewise; 6's mean over the datasets and C "
        "is geometric (was arithmetic: 4.59x, where the geometric mean is half that and heart and toy were "
        "slower with shrinking); 9 'the only points' is at least 90% of A (was above 50%, which no word of "
        "theirs sets); 3 names the printed numbers it takes (Table 1's LinearSVC column). The caps stay "
        "theirs (LinearSVC's default 1000 passes, as they ran it): raising them makes every cell converge "
        "(measured once, random_state 0: within 66,526 passes, LinearSVC on heart at C = 100) but Table 1's "
        "C = 100 columns would then not be their setup",
        REFEREE_WHY,
        # the verdicts before
        "1 holds, 2 undecided, 3 undecided, 4 undecided, 5 differs, 6 differs, 7 holds, 8 holds, 9 differs, "
        "10 by construction",
        # the verdicts after (a regeneration at load average 23-35 on 2 cores, a check of the code)
        "1 holds (heart's cells below detectable power, set aside), 2 holds (likewise), 3 holds (heart below "
        "detectable power, set aside), 4 undecided, 5 differs (8 cells to the tolerance of 24), 6 differs (stop=pg "
        "4.15x, 6 cells), 7 holds (on mnist at C = 1, 8 cells), 8 holds, 9 differs (33-39% of A inside the margin), "
        "10 by construction"),
)


# ------------------------------------------------------------------------------ summary
def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset x entry x C over the repeats (random_state): mean test accuracy (%) and
    each repeat's (`acc_reps`), the fits' keys, median fit time and each repeat's (`time_reps`),
    passes (median, `iter_reps`), the lowest primal, runs, converged runs, worst relative duality
    gap, test rows, median coordinate updates (dcd); every `*_reps` and `keys` in random_state order."""
    fits = results[results["status"] != "error"]
    fits = fits.assign(_upd=pd.to_numeric(fits["info_n_updates"], errors="coerce")
                       if "info_n_updates" in fits.columns else np.nan,
                       _rel_gap=fits["duality_gap"] / fits["primal_objective"].abs())
    fits = fits.sort_values("param_random_state") if "param_random_state" in fits.columns else fits
    g = fits.groupby(["dataset", "solver_entry", "C"], sort=True)
    return g.agg(acc=("test_accuracy", lambda s: 100.0 * s.mean()), acc_reps=("test_accuracy", lambda s: tuple(100 * s)),
                 keys=("key", tuple), time_s=("fit_time_s", "median"),
                 time_reps=("fit_time_s", tuple), iter_reps=("n_iter", tuple),
                 primal=("primal_objective", "min"),
                 n_iter=("n_iter", "median"), runs=("key", "count"),
                 converged=("status", lambda s: int((s == "converged").sum())),
                 rel_gap=("_rel_gap", "max"), n_test=("n_test", "median"),
                 n_updates=("_upd", "median")).reset_index()


def _cell(summary, dataset, entry, C, col):
    row = summary[(summary["dataset"] == dataset) & (summary["solver_entry"] == entry) & np.isclose(summary["C"], C)]
    return float(row[col].iloc[0]) if len(row) else math.nan


# ------------------------------------------------------------------------------ the rules
DATA = (
    ("banknote", THEIRS, "UCI banknote authentication, 1372 x 4, as theirs; our own random 67/33 split"),
    ("cleveland_heart", THEIRS, "Cleveland heart disease, 297 rows and 13 predictors, as theirs; our own random "
                                "67/33 split"),
    ("mnist_1v7", THEIRS, "MNIST ones and sevens, 10,853 images as theirs (which 10,853 they kept is not said)"),
    ("toy_blobs", STAND_IN, "their generator is not given; ours draws 2000 points of two overlapping Gaussian blobs "
                            "in R^2 as they describe, its separation set by us (Bayes accuracy 93.3%)"),
)
_ROWS = "5 random_state repeats (another pass order, the same test rows; the rows the two models classify differently)"
_TIMES = "5 random_state repeats (paired: the fits of a dataset and C run back to back, each cold)"
# A time or a pass count is compared to a tolerance only where both sides reached it: a run at the
# pass cap stopped at another point, and its time is not a time to the tolerance.
_TO_TOL = ("dataset, C and dcd entry (without and with shrinking) where both sides met tol 1e-4 in every repeat (a "
           "cell with a side at the 1000-pass cap is set aside and named)")
RULES = StudyRules(NAME, DATA, (
    Claim("matches_linearsvc", "dcd's test accuracy is almost identical to LinearSVC's with the same parameters "
          "(Section 4.2, Table 1)", "nearly equal", "dcd's test accuracy minus LinearSVC's",
          "dataset, C and dcd entry (both stopping rules, without and with shrinking), heart at C=100 aside (Table 1's "
          "own exception: 74.75 against 80.81-82.83, finding 4)", _ROWS),
    Claim("shrinking_same", "shrinking leaves the accuracy unchanged (Table 1, 'our' against 'our shrinking')",
          "nearly equal", "test accuracy with shrinking minus without", "dataset, C and stopping rule", _ROWS),
    Claim("levels", "test accuracy levels of Table 1: banknote 98.7-98.9%, heart 74.75-82.83%, MNIST ones/sevens "
          "99.55-99.58%, toy 93.48-93.64% (LinearSVC's column)", "nearly equal",
          "our LinearSVC's test accuracy minus theirs", "dataset and C",
          "two independent random test sets of 33% (ours and theirs, the same size)", scope=LEVEL,
          printed="Table 1's LinearSVC column"),
    Claim("heart_drop", "LinearSVC falls behind dcd on heart at C=100 (Table 1: 74.75% against 82.83% and 80.81%)",
          "worse", "dcd's test accuracy minus LinearSVC's at heart C=100", "dcd entry stopping on M - m (without and "
          "with shrinking)", _ROWS),
    Claim("far_slower", "dcd is far slower than LinearSVC: seconds against milliseconds (Table 2: 300-1000x), which "
          "they put down to Python against LIBLINEAR's C", "far greater",
          "dcd's fit time over LinearSVC's, both stopping on M - m < 1e-4 (LIBLINEAR's rule; the ||w_k+1 - w_k|| "
          "entries stop elsewhere and are not compared)", _TO_TOL, _TIMES),
    Claim("shrinking_not_faster", "shrinking does not make dcd faster (Table 2: with over without 0.6x-1.4x, slower "
          "on MNIST at every C)", "not greater", "the geometric mean, over the datasets and C where both met tol 1e-4 in "
          "every repeat, of dcd's time without shrinking over its time with it", "stopping rule", _TIMES),
    Claim("fewer_passes", "in some cases dcd converged in fewer steps than LinearSVC (Section 4.2; no counts printed)",
          "greater", "LinearSVC's passes over dcd's, both stopping on M - m < 1e-4", _TO_TOL, _TIMES, over="some"),
    Claim("w_change_reached", "at C=1 the rule ||w_k+1 - w_k|| < 1e-4 is reached, with and without shrinking (Figures "
          "5 and 6)", "share", "the share of the stop=w_change runs at C=1 that stopped on the rule within the "
          "1000-pass cap", "dataset and shrinking (5 runs each)", "exact", params=(("hi", 1.0), ("lo", 1.0))),
    Claim("active_during", "through the learning process, the only points the shrinking keeps in A are those near the "
          "intersection of the two classes (Section 4.1.1, Figure 4)", "share",
          "the share of A (as the solver tracked it) inside the class overlap, y f(x) <= 1 under the final model",
          "tracked pass (5, 10, 20; toy, C = 10)", "5 random_state repeats", params=(("lo", 0.9), ("hi", 1.0))),
    Claim("active_end", "Figure 4's picture: at the end, the points with alpha > 0 lie near the intersection, the rest "
          "have alpha = 0", "share", "the share of the alpha > 0 points inside the margin, y f(x) <= 1",
          "toy at C = 10", "exact", params=(("lo", 1.0), ("hi", 1.0)),
          construction="at the optimum the KKT conditions of the squared hinge give alpha_i > 0 exactly where "
                       "y_i f(x_i) < 1 (alpha_i = 2C max(0, 1 - y_i f(x_i))), so the final alphas show this whatever "
                       "the data; finding 9 checks the claim on the tracked A instead"),
), changes=CHANGES)


def _acc_difference(summary, preds, ds, C, a, b) -> Estimate | None:
    """Accuracy of entry a minus entry b (pp) on one test set, over the repeats: from the rows the
    two models classify differently (`preds`: fit key -> its test rows classified right), or, without
    the kept models, from the accuracies with an unpaired error of the test size (wider)."""
    ra = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == a) & np.isclose(summary["C"], C)]
    rb = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == b) & np.isclose(summary["C"], C)]
    if ra.empty or rb.empty:
        return None
    ka, kb = ra["keys"].iloc[0], rb["keys"].iloc[0]
    n = int(ra["n_test"].iloc[0])
    if preds and all(k in preds for k in (*ka, *kb)):
        diffs, ses = zip(*(discordant(preds[x], preds[y]) for x, y in zip(ka, kb)))
        return paired_rows(diffs, ses, n)
    acc_a, acc_b = ra["acc_reps"].iloc[0], rb["acc_reps"].iloc[0]
    m = min(len(acc_a), len(acc_b))
    unpaired = proportions(float(np.mean(acc_a)), n, float(np.mean(acc_b)), n)
    se = (unpaired.hi - unpaired.value) / 1.959963984540054
    return difference_over([x - y for x, y in zip(acc_a[:m], acc_b[:m])], f"repeats on {n} test rows, unpaired",
                           within=se)


def finding_matches_linearsvc(summary, preds=None) -> Finding:
    cells = [Cell(ds, f"{PAPER_NAMES.get(ds, ds)} C={fmt(C)} {e}", _acc_difference(summary, preds, ds, C, e, REFERENCE))
             for ds in _datasets(summary) for C in CS if (ds, C) != EXCEPTION
             for e in COLUMNS["our"] + COLUMNS["our shrinking"]]
    return judge(RULES, RULES.claim("matches_linearsvc"), [c for c in cells if c.estimate is not None],
                 why=_unconverged(summary, cells), explains_undecided=True)


def finding_shrinking_same_accuracy(summary, preds=None) -> Finding:
    cells = [Cell(ds, f"{PAPER_NAMES.get(ds, ds)} C={fmt(C)} {'stop=w_change' if 'wchange' in s else 'stop=pg'}",
                  _acc_difference(summary, preds, ds, C, s, p))
             for ds in _datasets(summary) for C in CS for p, s in zip(COLUMNS["our"], COLUMNS["our shrinking"])]
    return judge(RULES, RULES.claim("shrinking_same"), [c for c in cells if c.estimate is not None],
                 why=_unconverged(summary, cells), explains_undecided=True)


def _unconverged(summary, cells) -> str:
    """Why the cells that did not hold are off: runs stopped at the pass cap short of tol 1e-4."""
    caps = sorted({c.label.split(" ")[0] + " " + c.label.split(" ")[1] for c in cells if c.estimate is not None
                   and cell_verdict(c.estimate, KINDS["nearly equal"], {}) != HOLDS})
    if not caps:
        return ""
    return ("off or undecided at " + ", ".join(caps) + ": there the runs stop at the 1000-pass cap short of tol 1e-4 "
            "(Convergence below), so the models are different points short of the one optimum, or the test rows "
            "are too few to tell 2.5 pp")


def _datasets(summary):
    return [d for d in DATASETS if d in set(summary["dataset"])]


def finding_accuracy_levels(summary) -> Finding:
    cells = []
    for ds in _datasets(summary):
        for i, C in enumerate(CS):
            ours, n = _cell(summary, ds, REFERENCE, C, "acc"), _cell(summary, ds, REFERENCE, C, "n_test")
            if math.isfinite(ours):
                theirs = TABLE1[ds]["sklearn"][i]
                cells.append(Cell(ds, f"{PAPER_NAMES[ds]} C={fmt(C)} ({ours:.2f} against {theirs:.2f})",
                                  proportions(ours, int(n), theirs, int(n))))
    return judge(RULES, RULES.claim("levels"), cells,
                 why="the data are theirs, the split another random 33%: on heart, two test sets of 99 rows (one row "
                     "is 1.01 pp) cannot resolve 2.5 pp", explains_undecided=True)


def finding_heart_linearsvc_drop(summary, preds=None) -> Finding:
    ds, C = EXCEPTION
    cells = [Cell(ds, f"heart C=100 {e}", _acc_difference(summary, preds, ds, C, e, REFERENCE)) for e in PG]
    cell = summary[(summary["dataset"] == ds) & np.isclose(summary["C"], C)]
    why = ""
    if len(cell) and (cell["converged"] < cell["runs"]).all():
        why = ("no solver met tol 1e-4 within 1000 passes here (worst relative duality gaps: " +
               ", ".join(f"{r.solver_entry} {fmt(r.rel_gap)}" for r in cell.itertuples() if r.solver_entry != REFERENCE)
               + "; LinearSVC returns no dual), so these are accuracies of different points short of the one optimum, "
               "and which lands lower depends on where each stopped")
    return judge(RULES, RULES.claim("heart_drop"), [c for c in cells if c.estimate is not None], why=why,
                 explains_undecided=True)


def _reps(summary, ds, entry, C, col="time_reps") -> np.ndarray:
    row = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == entry) & np.isclose(summary["C"], C)]
    return np.asarray(row[col].iloc[0], float) if len(row) else np.array([])


def _paired(summary, ds, C, a, b, col="time_reps") -> Estimate | None:
    """time (or passes) of a over b, repeat by repeat (random_state), as a ratio with its interval."""
    x, y = _reps(summary, ds, a, C, col), _reps(summary, ds, b, C, col)
    n = min(len(x), len(y))
    return ratio_over(x[:n] / y[:n], "random_state repeats") if n else None


def _converged(summary, ds, entry, C) -> bool:
    """Whether every repeat of the entry at (dataset, C) met its stopping test: a run stopped at
    the pass cap ended at another point than the tolerance's, so its time or passes are not the
    time or passes to that tolerance."""
    row = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == entry) & np.isclose(summary["C"], C)]
    return bool(len(row)) and int(row["converged"].iloc[0]) == int(row["runs"].iloc[0])


def _to_tolerance(summary, pairs) -> tuple[list, list[str]]:
    """Split (label, dataset, C, a, b) into the pairs whose two entries met tol 1e-4 in every repeat
    (like for like: both times or passes to the same tolerance) and the labels of the rest."""
    both, capped = [], []
    for p in pairs:
        _, ds, C, a, b = p
        (both if _converged(summary, ds, a, C) and _converged(summary, ds, b, C) else capped).append(p)
    return both, [p[0] for p in capped if len(_reps(summary, p[1], p[3], p[2])) and len(_reps(summary, p[1], p[4], p[2]))]


_ALL_CAPPED = "every cell had a side at the 1000-pass cap: no time or passes to the tolerance to compare"


def _capped_text(capped: list[str]) -> str:
    if not capped:
        return ""
    return (f"set aside, a side stopped at the 1000-pass cap in some repeat (its time is not a time to tol 1e-4): "
            f"{len(capped)} cells ({', '.join(capped[:6])}{' and more' if len(capped) > 6 else ''})")


def _pg_pairs(summary, reference_first: bool = False):
    return [(f"{PAPER_NAMES.get(ds, ds)} C={fmt(C)} {e}", ds, C, *((REFERENCE, e) if reference_first else (e, REFERENCE)))
            for ds in _datasets(summary) for C in CS for e in PG]


def finding_slower_than_linearsvc(summary) -> Finding:
    both, capped = _to_tolerance(summary, _pg_pairs(summary))
    cells = [Cell(ds, label, _paired(summary, ds, C, a, b)) for label, ds, C, a, b in both]
    cells = [c for c in cells if c.estimate is not None]
    per_pass = [ratio_over(_reps(summary, ds, "dcd_shrinking", C) / _reps(summary, ds, "dcd_shrinking", C, "iter_reps")
                           / (_reps(summary, ds, REFERENCE, C) / _reps(summary, ds, REFERENCE, C, "iter_reps"))).value
                for ds in _datasets(summary) for C in CS
                if len(_reps(summary, ds, "dcd_shrinking", C)) and len(_reps(summary, ds, REFERENCE, C))]
    why = ("ours is compiled (numba), theirs was interpreted Python: the 300-1000x was the language, as they said. "
           + (f"A pass of dcd with shrinking costs a median {np.median(per_pass):.2f}x LinearSVC's (the same "
              "algorithm, both shrinking); " if per_pass else "")
           + "ours is traced after every pass (Setup: a compiled call per pass), which only adds to dcd's side")
    return judge(RULES, RULES.claim("far_slower"), cells, _capped_text(capped), why=why if cells else _ALL_CAPPED)


def finding_shrinking_not_faster(summary) -> Finding:
    """Per repeat, the geometric mean over the datasets and C where both runs met the tolerance
    of time without shrinking over time with it (a ratio: 2x slower and 2x faster cancel)."""
    cells, parts = [], []
    for plain, shrunk in zip(COLUMNS["our"], COLUMNS["our shrinking"]):
        rule = "stop=w_change" if "wchange" in plain else "stop=pg"
        both, capped = _to_tolerance(summary, [(f"{PAPER_NAMES.get(ds, ds)} C={fmt(C)}", ds, C, plain, shrunk)
                                               for ds in _datasets(summary) for C in CS])
        per = [(ds, _reps(summary, ds, plain, C), _reps(summary, ds, shrunk, C)) for _, ds, C, *_ in both]
        per = [(ds, a, b) for ds, a, b in per if len(a) and len(b)]
        if not per:
            continue
        n = min(min(len(a), len(b)) for _, a, b in per)
        logs = np.log([[a[i] / b[i] for i in range(n)] for _, a, b in per])
        cells.append(Cell("", f"{rule} ({len(per)} dataset and C cells)", ratio_over(np.exp(logs.mean(axis=0)),
                                                                                     "random_state repeats")))
        by_ds = {ds: float(np.exp(np.mean([logs[j] for j, (d, *_) in enumerate(per) if d == ds]))) for ds, *_ in per}
        parts.append(f"{rule}, per dataset: " + ", ".join(f"{PAPER_NAMES.get(d, d)} {r:.2f}x" for d, r in by_ds.items())
                     + (f" ({len(capped)} cells set aside at the pass cap)" if capped else ""))
    ups = [_cell(summary, ds, p, C, "n_updates") / _cell(summary, ds, s, C, "n_updates")
           for ds in _datasets(summary) for C in CS for p, s in zip(COLUMNS["our"], COLUMNS["our shrinking"])]
    ups = [u for u in ups if math.isfinite(u)]
    ours = "; ".join(parts + ([f"coordinate updates without over with shrinking: median {np.median(ups):.2f}x"]
                              if ups else []))
    return judge(RULES, RULES.claim("shrinking_not_faster"), cells, ours,
                 "ours skips the shrunk variables inside the compiled pass, so fewer coordinate updates are fewer "
                 "seconds; the report does not say why theirs gained nothing (in interpreted Python the per-index "
                 "bookkeeping may cost what the skipped updates save)" if cells else _ALL_CAPPED)


def finding_fewer_passes(summary) -> Finding:
    both, capped = _to_tolerance(summary, _pg_pairs(summary, reference_first=True))
    cells = [Cell(ds, label, _paired(summary, ds, C, a, b, "iter_reps")) for label, ds, C, a, b in both]
    return judge(RULES, RULES.claim("fewer_passes"), [c for c in cells if c.estimate is not None], _capped_text(capped),
                 why="LinearSVC needed no more passes than dcd anywhere both met the tolerance" if cells else _ALL_CAPPED)


def finding_w_change_reached(summary) -> Finding:
    cells = summary[summary["solver_entry"].isin(("dcd_wchange", "dcd_wchange_shrinking")) & np.isclose(summary["C"], 1.0)]
    out = [Cell(r.dataset, f"{PAPER_NAMES.get(r.dataset, r.dataset)} {r.solver_entry} ({r.converged:.0f} of {r.runs:.0f}, "
                f"median {r.n_iter:.0f} passes)", exact(r.converged / r.runs)) for r in cells.itertuples()]
    short = cells[cells["converged"] < cells["runs"]]
    return judge(RULES, RULES.claim("w_change_reached"), out,
                 why="not reached within the pass cap on " + ", ".join(f"{r.dataset} {r.solver_entry}"
                                                                       for r in short.itertuples()))


def finding_active_during(active: dict | None) -> Finding:
    """active: `active_stats`' {pass: [share of A inside the margin, per repeat]} and its sizes."""
    if not active:
        return judge(RULES, RULES.claim("active_during"), [], why="no tracked fit of A (dcd record_active_at)")
    cells = [Cell("toy_blobs", f"after pass {p} (A holds {100 * np.mean(active['size'][p]):.0f}% of the points)",
                  difference_over(active["inside"][p], "random_state repeats")) for p in DURING if p in active["inside"]]
    return judge(RULES, RULES.claim("active_during"), cells,
                 why="the shrinking removes a point only once its projected gradient passes the last pass's largest, "
                     "so in the first passes A still holds most points, most of them outside the margin; A comes down "
                     f"to the overlap only near the end ({100 * active['end_inside']:.0f}% of A inside the margin, A "
                     f"{100 * active['end_size']:.0f}% of the points)" if "end_inside" in active else "")


def finding_active_end(active: dict | None) -> Finding:
    cells = [] if not active or "alpha_inside" not in active else [
        Cell("toy_blobs", f"{100 * active['alpha_share']:.0f}% of the points have alpha > 0, largest y f(x) among "
                          f"them {active['max_margin']:.3f}", exact(active["alpha_inside"]))]
    return judge(RULES, RULES.claim("active_end"), cells)


FINDINGS = ("matches_linearsvc", "shrinking_same", "levels", "heart_drop", "far_slower", "shrinking_not_faster",
            "fewer_passes", "w_change_reached", "active_during", "active_end")


def findings(summary: pd.DataFrame, active: dict | None = None, preds: dict | None = None) -> list[Finding]:
    return [finding_matches_linearsvc(summary, preds), finding_shrinking_same_accuracy(summary, preds),
            finding_accuracy_levels(summary), finding_heart_linearsvc_drop(summary, preds),
            finding_slower_than_linearsvc(summary), finding_shrinking_not_faster(summary), finding_fewer_passes(summary),
            finding_w_change_reached(summary), finding_active_during(active), finding_active_end(active)]


# ------------------------------------------------------------------------------ tables
def _fmt_pct(v):
    return "" if not math.isfinite(v) else f"{v:.2f}"


def table1(summary) -> pd.DataFrame:
    """Test accuracy (%): the paper's number, then ours under each stopping rule, per column."""
    rows = []
    for ds in DATASETS:
        for i, C in enumerate(CS):
            row = {"dataset": PAPER_NAMES[ds], "C": fmt(C)}
            for col, entries in COLUMNS.items():
                row[f"{col}: paper"] = _fmt_pct(TABLE1[ds][col][i])
                for e in entries:
                    row[f"{col}: {_rule(e)}"] = _fmt_pct(_cell(summary, ds, e, C, "acc"))
            rows.append(row)
    return pd.DataFrame(rows)


def _rule(entry: str) -> str:
    return "ours" if entry == REFERENCE else ("ours, stop=w_change" if "wchange" in entry else "ours, stop=pg")


def _ms(seconds: float) -> str:
    if not math.isfinite(seconds):
        return ""
    ms = 1e3 * seconds
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.3g}"


def table2(summary) -> pd.DataFrame:
    """Times: the paper's seconds, ours in milliseconds, and ours over our LinearSVC's."""
    rows = []
    for ds in DATASETS:
        for i, C in enumerate(CS):
            lib = _cell(summary, ds, REFERENCE, C, "time_s")
            row = {"dataset": PAPER_NAMES[ds], "C": fmt(C)}
            for col, entries in COLUMNS.items():
                row[f"{col}: paper (s)"] = fmt(TABLE2[ds][col][i])
                for e in entries:
                    t = _cell(summary, ds, e, C, "time_s")
                    row[f"{col}: {_rule(e)} (ms)"] = _ms(t)
                    if e != REFERENCE:
                        row[f"{col}: {_rule(e)} / LinearSVC"] = "" if not math.isfinite(t / lib) else f"{t / lib:.2f}"
            rows.append(row)
    return pd.DataFrame(rows)


def convergence_table(summary) -> pd.DataFrame:
    """Per cell: runs that met their stopping test, median passes, coordinate updates; the lowest
    primal objective the entry reached over the cell's lowest (every solver alike: one problem,
    one P); and, for dcd, the worst relative duality gap (P - D)/|P| of its own dual iterate, which
    bounds (P - f*)/|P|. LinearSVC returns no dual: a dual rebuilt from its w is not its iterate and
    bounds nothing, so it gets none."""
    low = summary.groupby(["dataset", "C"])["primal"].transform("min")
    out = summary.assign(dataset=summary["dataset"].map(PAPER_NAMES).fillna(summary["dataset"]),
                         converged=[f"{c}/{r}" for c, r in zip(summary["converged"], summary["runs"])],
                         above=(summary["primal"] - low) / low.abs(),
                         rel_gap=summary["rel_gap"].where(summary["solver_entry"] != REFERENCE))
    out = out[["dataset", "C", "solver_entry", "converged", "n_iter", "n_updates", "above", "rel_gap"]]
    return out.rename(columns={"solver_entry": "entry", "n_iter": "passes (median)",
                               "n_updates": "coordinate updates (median)",
                               "above": "lowest P over the cell's lowest, relative",
                               "rel_gap": "relative duality gap (worst; dcd)"})


# ------------------------------------------------------------------------------ figures
def _toy_models(data: ReportData) -> pd.DataFrame:
    """Kept toy models of the first repeat (random_state 0, or the first), with their fit rows."""
    if data.models.empty or "X" not in data.models.columns:
        raise Skip("no kept models (run.keep_models=true)")
    fits = data.fits[data.fits["dataset"] == "toy_blobs"]
    if "param_random_state" in fits.columns:
        fits = fits[fits["param_random_state"] == fits["param_random_state"].min()]
    m = fits.merge(data.models[data.models["X"].notna()], on="key")
    if m.empty:
        raise Skip("no kept toy model")
    return m


def _toy_model(data, entry, C):
    m = _toy_models(data)
    sel = m[(m["solver_entry"] == entry)]
    if sel.empty:
        raise Skip(f"no kept toy model of {entry}")
    sel = sel.iloc[(np.abs(np.log(sel["C"].astype(float)) - math.log(C))).argsort()]
    row = sel.iloc[0].to_dict()
    row["Xa"] = np.array([list(p) for p in row["X"]], dtype=float)
    row["ya"] = np.asarray(row["y"], dtype=float)
    return row


def _scatter(ax, X, y, s=6, alpha=0.8):
    ax.scatter(X[y > 0, 0], X[y > 0, 1], s=s, c="tab:blue", alpha=alpha, label="class +1")
    ax.scatter(X[y < 0, 0], X[y < 0, 1], s=s, c="tab:orange", alpha=alpha, label="class -1")


def fig_toy_data(data: ReportData):
    row = _toy_model(data, "dcd", 10.0)
    fig, (ax,) = _panels(1, width=5.0, height=4.4)
    _scatter(ax, row["Xa"], row["ya"])
    ax.set_title(f"Toy data: two overlapping blobs ({len(row['ya'])} training points)")
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def _grid(X, n=150):
    pad = 0.05 * (X.max(axis=0) - X.min(axis=0))
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n))
    return gx, gy


def fig_decision_function(data: ReportData):
    row = _toy_model(data, "dcd", 10.0)
    X, y, w, b = row["Xa"], row["ya"], np.asarray(row["w"], dtype=float), float(row["b"])
    gx, gy = _grid(X)
    f = (np.column_stack([gx.ravel(), gy.ravel()]) @ w + b).reshape(gx.shape)
    plt = _plt()
    fig, (ax,) = _panels(1, width=5.6, height=4.4)
    lim = np.abs(f).max()
    im = ax.contourf(gx, gy, f, levels=np.linspace(-lim, lim, 21), cmap="RdBu", alpha=0.75)
    ax.contour(gx, gy, f, levels=[-1, 0, 1], colors="k", linestyles=["--", "-", "--"], linewidths=0.9)
    _scatter(ax, X, y, s=4, alpha=0.6)
    plt.colorbar(im, ax=ax, label="decision function x'w + b")
    ax.set_title(f"Decision function, dcd C={fmt(row['C'])} ({_state(row)})\nlines: f = -1, 0, 1", fontsize=9)
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _tracked_rows(data: ReportData) -> list[dict]:
    """The kept tracked fits (every random_state), each with its training rows as arrays."""
    if data.models.empty or "X" not in data.models.columns:
        raise Skip("no kept models (run.keep_models=true)")
    fits = data.fits[(data.fits["dataset"] == "toy_blobs") & (data.fits["solver_entry"] == TRACKED)]
    if "param_random_state" in fits.columns:
        fits = fits.sort_values("param_random_state")
    m = fits.merge(data.models[data.models["X"].notna()], on="key")
    if m.empty:
        raise Skip(f"no kept toy model of {TRACKED}")
    rows = []
    for r in m.to_dict("records"):
        r["Xa"] = np.array([list(p) for p in r["X"]], dtype=float)
        r["ya"] = np.asarray(r["y"], dtype=float)
        rows.append(r)
    return rows


def active_stats(data: ReportData) -> dict:
    """Of each tracked toy fit (C = 10, one per random_state) and each pass it kept A after: the
    share of the points in A (`size`) and the share of A inside the class overlap, y f(x) <= 1 under
    the fit's final model (`inside`), per repeat; the same at the end (medians over repeats); and of
    the first repeat's final alphas, the share > 0, the share of those inside the margin (y f(x) <=
    1.01: to the fit's tolerance) and their largest y f(x) (Figure 4's picture, by construction)."""
    inside, size, end_in, end_size = {}, {}, [], []
    rows = _tracked_rows(data)
    for row in rows:
        X, y = row["Xa"], row["ya"]
        margin = y * (X @ np.asarray(row["w"], dtype=float) + float(row["b"]))
        for label, members in tracked_active_sets(row):
            live = np.zeros(len(y), dtype=bool)
            live[members] = True
            share_in = float((margin[live] <= 1.0).mean()) if live.any() else math.nan
            if label == "at the end":
                end_in.append(share_in)
                end_size.append(float(live.mean()))
            else:
                p = int(label.split()[-1])
                inside.setdefault(p, []).append(share_in)
                size.setdefault(p, []).append(float(live.mean()))
    first = rows[0]
    X, y = first["Xa"], first["ya"]
    margin = y * (X @ np.asarray(first["w"], dtype=float) + float(first["b"]))
    alpha = np.zeros(len(y), dtype=bool)
    alpha[np.asarray(first["support"], dtype=int)] = True
    out = {"inside": inside, "size": size}
    if end_in:
        out.update(end_inside=float(np.median(end_in)), end_size=float(np.median(end_size)))
    if alpha.any():
        out.update(alpha_share=float(alpha.mean()), alpha_inside=float((margin[alpha] <= 1.01).mean()),
                   max_margin=float(margin[alpha].max()))
    return out


def _state(row) -> str:
    """How the drawn fit ended: its status and relative duality gap (a cap is never shown as converged)."""
    gap = row.get("duality_gap", math.nan) / abs(row.get("primal_objective", math.nan))
    return f"{row.get('status', '?')}, rel. gap {fmt(gap)}"


def tracked_active_sets(row) -> list[tuple[str, np.ndarray]]:
    """The active sets A the tracked fit kept: (label, training-row indices) per recorded pass
    and at the end (dcd's info active_at)."""
    raw = row.get("info_active_at")
    if isinstance(raw, str):
        raw = json.loads(raw)
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        raise Skip(f"the {TRACKED} fit kept no active sets (dcd record_active_at)")
    return [(f"after pass {p}" if p != "end" else "at the end", np.asarray(rows, dtype=int)) for p, rows in raw]


def fig_active_points(data: ReportData):
    """Figure 4: the active set A of the shrinking passes, as tracked by the solver after a few
    passes and at the end (their picture), beside the separating line of the final model."""
    row = _tracked_rows(data)[0]
    shown = tracked_active_sets(row)        # every pass the solver kept A after, and the end
    X, y = row["Xa"], row["ya"]
    gx, gy = _grid(X)
    f = (np.column_stack([gx.ravel(), gy.ravel()]) @ np.asarray(row["w"], dtype=float) + float(row["b"]))
    fig, axes = _panels(len(shown), width=4.0, height=3.7, ncols_max=4)
    for ax, (label, members) in zip(axes, shown):
        live = np.zeros(len(y), dtype=bool)
        live[members] = True
        ax.contour(gx, gy, f.reshape(gx.shape), levels=[-1, 0, 1], colors="k", linestyles=["--", "-", "--"],
                   linewidths=0.7)
        for cls, colour in ((1, "tab:blue"), (-1, "tab:orange")):
            idle, act = (y == cls) & ~live, (y == cls) & live
            ax.scatter(X[idle, 0], X[idle, 1], s=3, c=colour, alpha=0.25, label=f"class {cls:+d}, shrunk away")
            ax.scatter(X[act, 0], X[act, 1], s=16, c=colour, edgecolors="k", linewidths=0.4,
                       label=f"class {cls:+d}, in A")
        margin = y * (X @ np.asarray(row["w"], dtype=float) + float(row["b"]))
        ax.set_title(f"{label}: |A| = {live.sum()} of {len(y)},\n{(margin[live] <= 1).mean():.0%} of A inside the "
                     "margin", fontsize=9)
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
    figure_legend(fig, axes)          # the same four kinds of point in every panel: listed once
    fig.suptitle(f"Shrinking on the toy data: the active set A of dcd (stop=pg), C={fmt(row['C'])}, random_state "
                 f"{row.get('param_random_state', 0):.0f} ({_state(row)}); lines: the final f = -1, 0, 1", fontsize=10)
    return fig


def fig_w_change(data: ReportData):
    """Figures 5 and 6: the built-in ||w_k+1 - w_k|| figure on the C = 1 runs that stop on it,
    without and with shrinking, with the tolerance drawn."""
    fits = data.results[data.results["solver_entry"].isin(("dcd_wchange", "dcd_wchange_shrinking"))
                        & np.isclose(data.results["C"].astype(float), 1.0)]
    if fits.empty:
        raise Skip("no stop=w_change run at C=1")
    sub = ReportData(fits, data.traces[data.traces["key"].isin(fits["key"])], name=data.name)
    fig = w_change_per_pass(sub)
    for ax in fig.axes:          # a panel per problem (here: per dataset, all at C = 1), one legend below
        if ax.get_visible() and ax.get_lines():
            ax.axhline(TOL, color="0.3", linestyle=":", linewidth=1)
            ax.set_xscale("linear")
            ax.set_xlabel("epoch (pass over the data)")
            ds = ax.get_title().split("\n")[0]
            ax.set_title(f"{PAPER_NAMES.get(ds, ds)}, C=1 (dotted: tol 1e-4)")
    for text in (t for legend in fig.legends for t in legend.get_texts()):
        t = text.get_text()
        text.set_text(("with shrinking (Fig. 6): " if "shrinking" in t else "without shrinking (Fig. 5): ") + t)
    fig.suptitle("||w_k+1 - w_k|| per epoch: dcd_wchange = without shrinking (Fig. 5), "
                 "dcd_wchange_shrinking = with (Fig. 6); median of the repeats, band their middle half", fontsize=9, y=1.03)
    return fig


def misclassified_digits(run_dir: Path, data: ReportData, root: str | None, C=100.0, limit=24):
    """(images, true digit, predicted digit) of the test digits dcd (stop=pg, no shrinking) gets
    wrong at C, from its kept w and b and the test rows it was scored on (read from the store)."""
    from ..results.tables import read_shards
    from ..data.store import default_store_root
    from ..engine.tasks import fold_data
    fits = data.fits[(data.fits["dataset"] == "mnist_1v7") & (data.fits["solver_entry"] == "dcd")]
    if fits.empty:
        raise Skip("no MNIST fit of dcd")
    C = C if np.isclose(fits["C"].astype(float), C).any() else float(fits["C"].max())   # smoke runs two Cs
    fits = fits[np.isclose(fits["C"].astype(float), C)]
    if "param_random_state" in fits.columns:
        fits = fits.sort_values("param_random_state")
    fits = fits.merge(data.models, on="key")
    if fits.empty:
        raise Skip(f"no kept MNIST model of dcd at C={fmt(C)}")
    row = fits.iloc[0]
    spec = read_shards(run_dir, {row["key"]})[0]["spec"]
    _, _, X_te, y_te, classes = fold_data(str(root or default_store_root()), spec["data"], spec["fold"])
    X_te = X_te.toarray() if hasattr(X_te, "toarray") else np.asarray(X_te)
    pred = np.where(X_te @ np.asarray(row["w"], dtype=float) + float(row["b"]) > 0, 1.0, -1.0)
    wrong = np.flatnonzero(pred != y_te)
    digit = {1.0: classes[1], -1.0: classes[0]}
    return (X_te[wrong[:limit]], [digit[v] for v in y_te[wrong[:limit]]], [digit[v] for v in pred[wrong[:limit]]],
            len(wrong), len(y_te), C)


def fig_misclassified(images, true, predicted, n_wrong, n_test, C=100.0):
    plt = _plt()
    n = len(images)
    if n == 0:
        raise Skip("no misclassified test digit")
    ncols = min(8, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.3 * ncols, 1.5 * nrows + 0.5), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, img, t, p in zip(axes.ravel(), images, true, predicted):
        ax.imshow(np.asarray(img).reshape(28, 28), cmap="gray_r")
        ax.set_title(f"true {fmt(t)}, pred. {fmt(p)}", fontsize=7)
    fig.suptitle(f"MNIST test digits dcd (C={fmt(C)}) gets wrong: {min(n, n_wrong)} of {n_wrong} "
                 f"(of {n_test} test digits)", fontsize=9)
    return fig


# ------------------------------------------------------------------------------ the README
DATA_DIFFERENCES = {
    "banknote": "banknote: the same UCI data (1372 x 4, kosmos-core's copy), our own random 67/33 split",
    "cleveland_heart": ("heart: Cleveland, 297 rows after dropping missing values, 13 predictors with the "
                        "categorical ones as integer codes (orange3's copy), standardised; our own random 67/33 "
                        "split, whose 99 test rows make one row 1.01 pp"),
    "mnist_1v7": ("mnist: they kept 10,853 images of ones and sevens (how they chose them is not said); ours is a "
                  "stratified random 10,853 of MNIST's 15,170 ones and sevens (max_rows), pixels / 255"),
    "toy_blobs": ("toy: their generator is not given; ours draws 2000 points of two overlapping Gaussian blobs in "
                  "R^2 (separation 3, unit std), so the accuracies cannot be the same numbers"),
}


FIGURES = {
    "fig1_toy_data": ("Figure 1: the toy dataset", "Training points of the 67/33 split (ours; their generator is not given)."),
    "fig2_3_decision_function": ("Figures 2 and 3: the decision function",
                                 "x'w + b of dcd at C=10 (their Section 4.1 uses C=10) over the plane, lines at f = -1, 0, 1."),
    "fig4_shrinking_active_points": ("Figure 4: shrinking on the toy data",
                                     "The active set A of dcd with shrinking (stop=pg) as the solver tracked it "
                                     "(its record_active_at option), after each of passes 1, 2, 3, 5, 10 and 20 and "
                                     "when the fit ended, random_state 0 (finding 9 uses all five repeats): large "
                                     "points are in A, small ones were shrunk away by then. The lines are the final "
                                     "model's f = -1, 0, 1."),
    "fig5_6_w_change": ("Figures 5 and 6: ||w_k+1 - w_k|| per epoch at C=1",
                        "The runs that stop on ||w_k+1 - w_k|| < 1e-4, without shrinking (dcd_wchange, their Fig. 5) "
                        "and with it (dcd_wchange_shrinking, their Fig. 6); one point per epoch, the median of the "
                        "repeats (a repeat that stopped holds its last value, so a line runs to the last repeat's "
                        "end). A late jump with shrinking is the recheck: the rule passed on the shrunken set, "
                        "every variable was restored, and w moved again before it passed on all of them."),
    "fig7_mnist_misclassified": ("Figure 7: misclassified MNIST digits",
                                 "Test digits dcd (stop=pg, no shrinking, C=100, as in their Figure 7) classifies wrongly, "
                                 "drawn from the test rows and the kept model."),
}


def readme(summary, found, figs, skipped, setup: dict) -> str:
    out = [
        "# Reproduction: roethel_brynda\n",
        'A. Roethel and M. Brynda, "Dual Coordinate Descent Method for Linear SVM", project report, April 2021. '
        "Written by `python -m pipeline +experiment=roethel_brynda` (`make papers`) from the run's tables; "
        f"regenerate rather than edit. This run: {setup.get('fits', '?')} fits.\n",
        "## Findings\n",
        *findings_table(found), "", *data_lines(RULES),
    ]
    out += ["## Setup, and how it differs from theirs\n",
            "- Problem: their eq. (2), the L2-SVM 1/2 ||w||^2 + C sum max(0, 1 - y w'x)^2 with the bias as an extra "
            "constant feature (regularized), C in {1, 10, 100}; eps = 1e-4 for both of their stopping rules.",
            "- Solvers: `dcd` is their Algorithm 1 with the random permutation of 3.1 (LIBLINEAR's method), "
            "compiled with numba; `dcd` / `dcd_shrinking` stop on the projected-gradient spread M - m < 1e-4 "
            "(their 3.2 rule), `dcd_wchange` / `dcd_wchange_shrinking` on ||w_k+1 - w_k|| < 1e-4 (Algorithm 1); "
            "a test passed on a shrunken set is rechecked on all variables before it counts, and under M - m "
            "also each time the shrunken set's spread falls two decades (which LIBLINEAR does not: it finds "
            "variables shrunk too early sooner). "
            "`liblinear` is scikit-learn's LinearSVC (tol 1e-4, its default 1000 passes, as they ran it). "
            "They do not say which rule made Tables 1 and 2, so both of ours stand beside their numbers.",
            "- Split: a stratified random 67/33 holdout. They do not state theirs, but every accuracy in their "
            "Table 1 is a multiple of 1/453 (banknote), 1/99 (heart), 1/3582 (MNIST) and 1/660 (toy): test sets "
            "of 33%. Ours is another random draw of the same size.",
            "- Scaling: they mention none. Banknote and heart are standardised here (fitted on the training "
            "rows), MNIST is pixels / 255, toy as drawn: unscaled, neither dcd nor LinearSVC reaches tol 1e-4 "
            "within 1000 passes on heart or banknote even at C=1 (measured once, both solvers, C = 1, 10, 100: "
            "all 12 fits `max_iter`), while standardised both converge at C=1.",
            "- No certified reference solve (`run.reference=false`): each fit's own duality gap bounds its "
            "distance from the optimum.",
            "- Pass caps: theirs, 1000 passes (LinearSVC's default, as they ran it; dcd alike). A run at the cap "
            "stopped short of tol 1e-4, so its time and passes are not a time or a pass count to the tolerance: "
            "the time and pass findings (5, 6, 7) compare only the cells where both sides met the tolerance in "
            "every repeat, and name the rest. Raising the caps makes every cell converge (measured once, "
            "random_state 0, C = 10 and 100: within 66,526 passes, LinearSVC on heart at C = 100), but Table 1's "
            "C = 10 and 100 columns would then not be their setup.",
            f"- Repeats: every fit runs {setup.get('repeats', 5)} times (random_state 0 to "
            f"{setup.get('repeats', 5) - 1}: another pass order, on the same split); accuracies are means, times "
            "medians over them in the tables. A timing verdict is a ratio per repeat, its 95% interval over the "
            "repeats (pipeline/papers/claims.py); the fits of one dataset, C and repeat run back to back "
            "(`run.interleave`), every fit cold (`run.warm_start: false`: dcd's C path would start C = 10 and 100 "
            "from the last C's solution, LinearSVC always starts from zero). An accuracy verdict counts the test "
            "rows two models classify differently (from the kept models): one set of test rows, so its interval "
            "is that of the rows, with the repeats' spread added. Times are solver seconds, one fit at a time "
            "(cluster=sequential) on a shared 2-core machine, ours and LinearSVC's in the same run. Every dcd "
            "pass is traced (for Figures 5-6): the recorder's own time is left out of the solver seconds, but "
            "the copy of w each pass needs for ||w_k+1 - w_k|| is in them, and a trace point after every pass "
            "makes each pass its own compiled call (untraced, dcd runs many passes per call). So Table 2 "
            "overstates our time; the untraced whole call is measured in the repository README's Benchmarks "
            "(`python tests/solvers/bench_dcd.py small`).",
            *[f"- {DATA_DIFFERENCES[d]}." for d in DATASETS],
            "- Their own toy numbers disagree: Section 4.1 gives 92.73% at C=10 for dcd and for LinearSVC, their "
            "Table 1 93.48% for both at C=10. The report does not say which run each is (another split or draw, "
            "we guess); Table 1 is the one compared here, and on toy only as a mechanism (a stand-in: its levels "
            "are not judged).",
            f"- Rows (train / test): {setup.get('rows', '')}.", "",
            "## Table 1: test accuracy (%)\n",
            "Their numbers (paper) beside ours under each stopping rule.\n",
            markdown_table(table1(summary)),
            "## Table 2: time\n",
            "Their seconds (pure Python against LinearSVC's C) beside our milliseconds, and ours over our LinearSVC's "
            "time on the same fits (under 1: ours is faster). Ours are traced at every pass for Figures 5-6, which "
            "costs a compiled call per pass (see Setup); the untraced whole call is in the README's Benchmarks.\n",
            markdown_table(table2(summary)),
            "## Convergence and certificates\n",
            "Runs whose stopping test passed (a rule not reached within 1000 passes is `max_iter`, never counted as "
            "converged), median passes and coordinate updates, the lowest primal objective P each entry reached "
            "over the lowest any entry reached in that cell (one problem: every solver alike), and for dcd the "
            "worst relative duality gap (P - D)/|P| of its own dual iterate, an upper bound on its relative "
            "distance from the optimum. LinearSVC returns no dual iterate: a dual rebuilt from its w bounds "
            "nothing (it gave 'gaps' of thousands), so it has none here.\n",
            markdown_table(convergence_table(summary)),
            "## Figures\n", *figure_lines(FIGURES, figs, skipped), *changes_lines(RULES)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ writer
def _setup(data: ReportData) -> dict:
    res = data.results
    rows = res.groupby("dataset")[["n_train", "n_test"]].median()
    reps = res["param_random_state"].nunique() if "param_random_state" in res.columns else 1
    return {"fits": len(res), "repeats": reps,
            "rows": ", ".join(f"{PAPER_NAMES.get(d, d)} {int(r.n_train)} / {int(r.n_test)}" for d, r in rows.iterrows())}


def figures(run_dir: Path, data: ReportData, root) -> dict:
    """name -> Figure or Skip reason (str)."""
    return draw_figures({
        "fig1_toy_data": lambda: fig_toy_data(data),
        "fig2_3_decision_function": lambda: fig_decision_function(data),
        "fig4_shrinking_active_points": lambda: fig_active_points(data),
        "fig5_6_w_change": lambda: fig_w_change(data),
        "fig7_mnist_misclassified": lambda: fig_misclassified(*misclassified_digits(run_dir, data, root))})


@paper(NAME)
def write(run_dir: Path, out: Path, root: str | None = None) -> Path:
    data = load(run_dir)
    summary = summarise(data.results)
    try:
        active = active_stats(data)
    except Skip:
        active = None
    figs, skipped = save_figures(figures(run_dir, data, root), out)
    text = readme(summary, findings(summary, active, predictions(run_dir, data, root)), figs, skipped, _setup(data))
    (out / "README.md").write_text(with_costs(text, run_dir, root, data.results))
    return out / "README.md"
