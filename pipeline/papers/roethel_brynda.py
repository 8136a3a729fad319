"""roethel_brynda: A. Roethel and M. Brynda, "Dual Coordinate Descent Method for Linear SVM",
project report, April 2021. Writes Tables 1 and 2 (test accuracy and time, ours beside theirs),
each of the paper's findings marked holds or differs, and Figures 1-7, from a run of
conf/experiment/roethel_brynda.yaml.

The findings are functions of a summary table (one row per dataset x solver entry x C: mean
test accuracy in %, median time, passes, converged runs, ...), so they can be checked on
hand-made tables; `summarise` builds that table from results.parquet.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.build import load
from ..report.common import fmt, markdown_table
from ..report.figures import _panels, _plt, w_change_per_pass
from ..report.registry import ReportData, Skip
from . import paper
from .common import (Finding, draw_figures, figure_lines, findings_table, not_comparable, save_figures,
                     timed_finding, with_costs)

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
LEVEL_PP = 2.0           # "at the paper's accuracy level": within 2 percentage points
# "Almost identical" (Section 4.2) in the paper's own terms: their Table 1 calls 'our' and
# 'sklearn' almost identical with heart at C=10 two test points apart (80.81 against 82.83 of 99
# test rows), so two test points (or 0.5 pp, on the large test sets) is the tolerance, either way.
# Heart at C=100 (82.83 against 74.75) is their own exception, checked by its own finding.
AGREE_POINTS = 2.0
AGREE_PP = 0.5
EXCEPTION = ("cleveland_heart", 100.0)
HEART_DROP_PP = 3.0      # "falls behind" at heart C=100: three test points (theirs: 8.08 pp)
FAR_SLOWER = 10.0        # "far slower": ten times at least (theirs 500-1000x)
NOT_FASTER = 0.9         # "shrinking does not make it faster": with/without at least 0.9 (theirs: median 1.05)
NOT_COMPARABLE_LEVELS = {"toy_blobs": "their toy generator is not given, so its accuracy level is not a number "
                                      "we can reproduce"}


# ------------------------------------------------------------------------------ summary
def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset x entry x C over the repeats (random_state): mean test accuracy (%),
    median fit time and each repeat's (`time_reps`, in random_state order), median passes, runs, converged runs, worst relative suboptimality, test
    rows, median coordinate updates (dcd)."""
    fits = results[results["status"] != "error"]
    fits = fits.assign(_upd=pd.to_numeric(fits["info_n_updates"], errors="coerce")
                       if "info_n_updates" in fits.columns else np.nan,
                       _rel_gap=fits["duality_gap"] / fits["primal_objective"].abs())
    fits = fits.sort_values("param_random_state") if "param_random_state" in fits.columns else fits
    g = fits.groupby(["dataset", "solver_entry", "C"], sort=True)
    return g.agg(acc=("test_accuracy", lambda s: 100.0 * s.mean()), time_s=("fit_time_s", "median"),
                 time_reps=("fit_time_s", tuple),
                 n_iter=("n_iter", "median"), runs=("key", "count"),
                 converged=("status", lambda s: int((s == "converged").sum())),
                 rel_gap=("_rel_gap", "max"), n_test=("n_test", "median"),
                 n_updates=("_upd", "median")).reset_index()


def _cell(summary, dataset, entry, C, col):
    row = summary[(summary["dataset"] == dataset) & (summary["solver_entry"] == entry) & np.isclose(summary["C"], C)]
    return float(row[col].iloc[0]) if len(row) else math.nan


# ------------------------------------------------------------------------------ findings
def _pairs(summary, entries, against, skip=()):
    """(dataset, C, entry, |acc - acc_against| in test points, in pp) over the cells both have,
    less the (dataset, C) cells in `skip`."""
    out = []
    for ds in sorted(summary["dataset"].unique()):
        for C in CS:
            if (ds, C) in skip:
                continue
            base = _cell(summary, ds, against, C, "acc")
            for e in entries:
                acc, n = _cell(summary, ds, e, C, "acc"), _cell(summary, ds, e, C, "n_test")
                if math.isfinite(acc) and math.isfinite(base):
                    out.append((ds, C, e, abs(acc - base) * n / 100.0, abs(acc - base)))
    return out


def agree(points: float, pp: float) -> bool:
    """The rule of "almost identical" accuracy: two-sided, within AGREE_POINTS test points or
    AGREE_PP percentage points (the paper's own Table 1 needs both: see AGREE_POINTS)."""
    return points <= AGREE_POINTS + 1e-6 or pp <= AGREE_PP + 1e-9


AGREE_RULE = (f"|difference| <= {AGREE_POINTS:g} test points or {AGREE_PP:g} pp in every cell (their Table 1 "
              "calls heart C=10, 2 test points apart, almost identical)")


def _same_accuracy(summary, entries, against, claim, cause, skip=(), rule=AGREE_RULE) -> Finding:
    pairs = _pairs(summary, entries, against, skip)
    if not pairs:
        return Finding(claim, "no cell has both", None, "the run lacks these entries", rule)
    off = [p for p in pairs if not agree(p[3], p[4])]
    worst = max(pairs, key=lambda p: p[4])
    ours = (f"{len(pairs) - len(off)} of {len(pairs)} cells within {AGREE_POINTS:g} test points or {AGREE_PP:g} pp; "
            f"largest difference {worst[4]:.2f} pp ({worst[3]:.0f} test points: {worst[0]}, C={fmt(worst[1])}, "
            f"{worst[2]})")
    why = "" if not off else cause(off)
    return Finding(claim, ours, not off, why, rule)


def finding_matches_linearsvc(summary) -> Finding:
    entries = [e for col in ("our", "our shrinking") for e in COLUMNS[col]]
    f = _same_accuracy(
        summary, entries, REFERENCE,
        "dcd's test accuracy is almost identical to LinearSVC's with the same parameters (Table 1; their own "
        "exception: heart at C=100, 80.81/82.83 against 74.75)",
        lambda off: _off_cells(summary, off, REFERENCE), skip=(EXCEPTION,),
        rule=AGREE_RULE + "; heart at C=100, their exception, is left to finding 4")
    if f.holds is not None:
        f.ours += "; heart C=100 (their exception) is finding 4's"
    return f


def _off_cells(summary, off, against) -> str:
    """The cells whose accuracies disagree, each with how many runs of either side converged:
    two solutions of one problem that both met tol 1e-4 should classify alike."""
    parts = []
    for d, C, e, pts, _ in off[:4]:
        conv = [f"{x} {_cell(summary, d, x, C, 'converged'):.0f}/{_cell(summary, d, x, C, 'runs'):.0f}"
                for x in (e, against)]
        parts.append(f"{PAPER_NAMES.get(d, d)} C={fmt(C)} {e} ({pts:.0f} test points; converged: {', '.join(conv)})")
    unconverged = all(min(_cell(summary, d, x, C, "converged") - _cell(summary, d, x, C, "runs")
                          for x in (e, against)) < 0 for d, C, e, _, _ in off)
    more = f" and {len(off) - 4} more" if len(off) > 4 else ""
    return ("differs in " + "; ".join(parts) + more + (": in each, a run stopped at the 1000-pass cap short of "
            "tol 1e-4, so the two models are different points short of the one optimum" if unconverged else
            ": some of these runs met tol 1e-4 and still disagree"))


def finding_shrinking_same_accuracy(summary) -> Finding:
    pairs = []
    for plain, shrunk in zip(COLUMNS["our"], COLUMNS["our shrinking"]):
        pairs.append(_same_accuracy(summary, [shrunk], plain, "", lambda off, p=plain: _off_cells(summary, off, p)))
    known = [f for f in pairs if f.holds is not None]
    claim = "shrinking leaves the accuracy unchanged (Table 1, 'our' against 'our shrinking')"
    rule = AGREE_RULE + " (their own: heart C=100 2 test points, banknote C=100 1)"
    if not known:
        return Finding(claim, "no cell has both", None, "the run lacks these entries", rule)
    ok = all(f.holds for f in known)
    return Finding(claim, "; ".join(f"{s}: {f.ours}" for s, f in zip(("stop=pg", "stop=w_change"), pairs)
                                    if f.holds is not None), ok,
                   "; ".join(f.why for f in known if not f.holds), rule)


def finding_accuracy_levels(summary) -> Finding:
    rows, off, aside = [], [], []
    for ds in DATASETS:
        ours = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == REFERENCE)]["acc"]
        if ours.empty:
            continue
        theirs = float(np.median(TABLE1[ds]["sklearn"]))
        mine = float(ours.median())
        if ds in NOT_COMPARABLE_LEVELS:
            aside.append(f"{PAPER_NAMES[ds]} {mine:.2f} (paper {theirs:.2f}; not comparable: "
                         f"{NOT_COMPARABLE_LEVELS[ds]})")
            continue
        rows.append(f"{PAPER_NAMES[ds]} {mine:.2f} (paper {theirs:.2f})")
        if not abs(mine - theirs) <= LEVEL_PP:
            off.append(ds)
    claim = "test accuracy levels: banknote ~98.9%, heart ~80.8%, MNIST ones/sevens ~99.6%, toy ~93.5% (Table 1)"
    rule = (f"LinearSVC's median over C within {LEVEL_PP:g} pp of theirs, either way, on the data we share "
            "(banknote, heart, MNIST; not toy)")
    if not rows:
        if aside:
            return not_comparable(claim, "; ".join(aside), "no dataset of theirs we share was run", rule)
        return Finding(claim, "no LinearSVC cell", None, "the run lacks LinearSVC", rule)
    why = ("" if not off else "the data differ: " + "; ".join(DATA_DIFFERENCES[d] for d in off))
    return Finding(claim, "; ".join(rows + aside), not off, why, rule)


def finding_heart_linearsvc_drop(summary) -> Finding:
    claim = "LinearSVC falls behind dcd on heart at C=100 (Table 1: 74.75% against 80.81-82.83%)"
    lib = _cell(summary, "cleveland_heart", REFERENCE, 100.0, "acc")
    dcd = _cell(summary, "cleveland_heart", "dcd", 100.0, "acc")
    if not (math.isfinite(lib) and math.isfinite(dcd)):
        return Finding(claim, "heart at C=100 not run", None, "the run lacks that cell")
    def conv(e):
        return (f"{_cell(summary, 'cleveland_heart', e, 100.0, 'converged'):.0f}/"
                f"{_cell(summary, 'cleveland_heart', e, 100.0, 'runs'):.0f}")
    holds = dcd - lib >= HEART_DROP_PP
    ours = f"LinearSVC {lib:.2f}%, dcd {dcd:.2f}% (runs that met tol 1e-4: LinearSVC {conv(REFERENCE)}, dcd {conv('dcd')})"
    cell = summary[(summary["dataset"] == "cleveland_heart") & np.isclose(summary["C"], 100.0)]
    if (cell["converged"] < cell["runs"]).all():
        why = ("no solver met tol 1e-4 within 1000 passes here (worst relative duality gaps: " +
               ", ".join(f"{r.solver_entry} {fmt(r.rel_gap)}" for r in cell.itertuples()) + "), so these are "
               "accuracies of different points short of the one optimum; which solver lands lower depends on "
               "where it stopped. Theirs likely also stopped short (LinearSVC's default cap is 1000 passes)")
    else:
        why = "" if holds else "both reach the same optimum here, and the optimum has one accuracy"
    return Finding(claim, ours, holds, why if not holds else "",
                   f"dcd - LinearSVC >= {HEART_DROP_PP:g} pp (3 test points) at heart C=100")


def _time_ratios(summary, entries):
    out = []
    for ds in sorted(summary["dataset"].unique()):
        for C in CS:
            lib = _cell(summary, ds, REFERENCE, C, "time_s")
            for e in entries:
                t = _cell(summary, ds, e, C, "time_s")
                if math.isfinite(t) and math.isfinite(lib) and lib > 0:
                    out.append((ds, C, e, t / lib))
    return out


def repeat_ratios(summary, pairs) -> list[float]:
    """Per repeat (random_state), the median over `pairs` ((dataset, C, entry, against)) of
    time(entry) / time(against) in that repeat: the samples a timing verdict rests on. A summary
    without per-repeat times gives its medians as one sample."""
    per = []
    for ds, C, e, ref in pairs:
        a, b = _reps(summary, ds, e, C), _reps(summary, ds, ref, C)
        n = min(len(a), len(b))
        if n:
            per.append(np.asarray(a[:n], float) / np.asarray(b[:n], float))
    if not per:
        return []
    n = min(len(r) for r in per)
    return [float(np.median([r[i] for r in per])) for i in range(n)]


def _reps(summary, ds, entry, C) -> tuple:
    row = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == entry) & np.isclose(summary["C"], C)]
    if not len(row):
        return ()
    return tuple(row["time_reps"].iloc[0]) if "time_reps" in row.columns else (float(row["time_s"].iloc[0]),)


def finding_slower_than_linearsvc(summary) -> Finding:
    claim = ("dcd is far slower than LinearSVC: seconds against milliseconds, 500-1000x (Table 2), which they "
             "put down to Python against LIBLINEAR's C")
    rule = (f"per repeat, the median over cells of dcd's time over LinearSVC's >= {FAR_SLOWER:g}x in every repeat "
            "(theirs: 1138x, ...); undecided when the repeats straddle it")
    ratios = _time_ratios(summary, COLUMNS["our"] + COLUMNS["our shrinking"])
    if not ratios:
        return Finding(claim, "no timed cell has both", None, "the run lacks these entries", rule)
    reps = repeat_ratios(summary, [(d, C, e, REFERENCE) for d, C, e, _ in ratios])
    r = np.array([x[3] for x in ratios])
    under = int((r <= 1.0).sum())
    alike = np.array([x[3] for x in _time_ratios(summary, ["dcd_shrinking"])])   # both shrink, both stop on M - m
    per_pass = np.array([x[3] for x in _time_ratios(_per_pass(summary), ["dcd_shrinking"])])
    ours = (f"ours over LinearSVC: median {np.median(r):.2f}x, range {r.min():.2f}x-{r.max():.2f}x; at or under "
            f"LinearSVC's time in {under} of {len(r)} cells")
    if alike.size:
        ours += (f"; like for like (dcd with shrinking, stop=pg, as LIBLINEAR runs): median {np.median(alike):.2f}x, "
                 f"per pass {np.median(per_pass):.2f}x")
    why = ("ours is compiled (numba), theirs was interpreted Python: the 500-1000x was the language, as they "
           "said. " + _speed_reason(alike, per_pass))
    return timed_finding(claim, ours, reps, FAR_SLOWER, math.inf, rule, why)


def _speed_reason(alike: np.ndarray, per_pass: np.ndarray) -> str:
    """Where ours stands against LinearSVC like for like, said from the run's own ratios."""
    if not alike.size:
        return "No like-for-like cell (dcd with shrinking) was timed."
    med, slower = float(np.median(alike)), int((alike > 1.0).sum())
    at = ("at or under LinearSVC's time" if med <= 1.0 else "still over LinearSVC's time")
    pp = float(np.median(per_pass)) if per_pass.size else math.nan
    cost = ("a pass costs less than LIBLINEAR's" if pp <= 1.0 else "a pass costs more than LIBLINEAR's")
    return (f"Like for like, ours is {at} (median {med:.2f}x, {slower} of {alike.size} cells over; {cost}, "
            f"median {pp:.2f}x per pass), traced at every pass (a compiled call per pass; untraced, see the "
            f"README's Benchmarks). Without shrinking every pass touches "
            f"every variable, so those entries are slower where shrinking removes most of them (MNIST)")


def _per_pass(summary):
    """The summary with time_s per pass (time over median passes)."""
    return summary.assign(time_s=summary["time_s"] / summary["n_iter"])


def finding_shrinking_not_faster(summary) -> Finding:
    claim = ("shrinking does not make dcd faster (Table 2: 0.6x-1.4x of the plain time, slower on MNIST at "
             "every C)")
    rule = (f"per repeat, the median over cells of time with shrinking over without >= {NOT_FASTER:g} in every "
            "repeat (theirs: median 1.05x); undecided when the repeats straddle it")
    ratios, updates, pairs = [], [], []
    for plain, shrunk in zip(COLUMNS["our"], COLUMNS["our shrinking"]):
        for ds in sorted(summary["dataset"].unique()):
            for C in CS:
                a, b = _cell(summary, ds, plain, C, "time_s"), _cell(summary, ds, shrunk, C, "time_s")
                ua, ub = _cell(summary, ds, plain, C, "n_updates"), _cell(summary, ds, shrunk, C, "n_updates")
                if math.isfinite(a) and math.isfinite(b) and a > 0:
                    ratios.append(b / a)
                    pairs.append((ds, C, shrunk, plain))
                if math.isfinite(ua) and math.isfinite(ub) and ua > 0:
                    updates.append(ub / ua)
    if not ratios:
        return Finding(claim, "no cell has both", None, "the run lacks these entries", rule)
    r = np.array(ratios)
    ours = f"time with shrinking over without: median {np.median(r):.2f}x ({r.min():.2f}x-{r.max():.2f}x) over cells"
    if updates:
        ours += f"; coordinate updates with over without: median {np.median(updates):.2f}x"
    why = ("ours skips the shrunk variables inside the compiled pass, so the fewer coordinate updates are "
           "fewer seconds; the report does not say why theirs gained nothing (in interpreted Python the per-index bookkeeping may cost what the skipped updates save)")
    return timed_finding(claim, ours, repeat_ratios(summary, pairs), NOT_FASTER, math.inf, rule, why)


def finding_fewer_passes(summary) -> Finding:
    claim = "in some cases dcd converged in fewer steps than LinearSVC (Section 4.2)"
    cells = []
    for ds in sorted(summary["dataset"].unique()):
        for C in CS:
            lib = _cell(summary, ds, REFERENCE, C, "n_iter")
            for e in COLUMNS["our"] + COLUMNS["our shrinking"]:
                n = _cell(summary, ds, e, C, "n_iter")
                if math.isfinite(n) and math.isfinite(lib):
                    cells.append((ds, C, e, n, lib))
    if not cells:
        return Finding(claim, "no cell has both", None, "the run lacks these entries")
    fewer = [c for c in cells if c[3] < c[4]]
    ours = f"fewer passes than LinearSVC in {len(fewer)} of {len(cells)} cells"
    if fewer:
        d, C, e, n, lib = fewer[0]
        ours += f" (e.g. {d} C={fmt(C)} {e}: {n:.0f} against {lib:.0f})"
    return Finding(claim, ours, bool(fewer), "" if fewer else "LinearSVC needed no more passes than dcd anywhere")


def finding_w_change_reached(summary) -> Finding:
    claim = ("at C=1 the rule ||w_k+1 - w_k|| < 1e-4 is reached, with and without shrinking (Figures 5 and 6)")
    cells = summary[summary["solver_entry"].isin(("dcd_wchange", "dcd_wchange_shrinking")) & np.isclose(summary["C"], 1.0)]
    if cells.empty:
        return Finding(claim, "no w_change run at C=1", None, "the run lacks these entries")
    short = cells[cells["converged"] < cells["runs"]]
    ours = (f"{int(cells['converged'].sum())} of {int(cells['runs'].sum())} runs stopped on it, after a median "
            f"{cells['n_iter'].median():.0f} passes")
    why = "" if short.empty else ("not reached within the pass cap on " +
                                  ", ".join(f"{r.dataset} {r.solver_entry}" for r in short.itertuples()))
    return Finding(claim, ours, short.empty, why)


def finding_active_near_boundary(active: dict | None) -> Finding:
    """active: {'share': share of points with alpha > 0, 'max_margin': largest y f(x) among them,
    'min_margin_inactive': smallest y f(x) among alpha = 0} of the toy fit (see `active_stats`)."""
    claim = ("under shrinking only points near the class overlap stay active (alpha > 0); the rest are removed "
             "(Figure 4)")
    if not active:
        return Finding(claim, "no kept toy model", None, "run with run.keep_models=true")
    holds = active["share"] < 0.5 and active["max_margin"] < 1.0 + 1e-2
    ours = (f"{100 * active['share']:.1f}% of the toy training points have alpha > 0, all with y f(x) <= "
            f"{active['max_margin']:.3f} (inside the margin); the alpha = 0 points have y f(x) >= "
            f"{active['min_margin_inactive']:.3f}")
    return Finding(claim, ours, holds, "" if holds else "the active points are not a minority near the boundary")


# The rules of the findings that state theirs inline nowhere else (the paper prints no numbers for them).
RULES = {"fewer": "dcd's median passes < LinearSVC's in at least one cell (the paper prints no pass counts)",
         "w_change": "every stop=w_change run at C=1 stops on the rule within the 1000-pass cap",
         "active": "under half the toy points keep alpha > 0, all with y f(x) <= 1.01 (inside the margin)"}


def findings(summary: pd.DataFrame, active: dict | None = None) -> list[Finding]:
    found = [finding_matches_linearsvc(summary), finding_shrinking_same_accuracy(summary),
             finding_accuracy_levels(summary), finding_heart_linearsvc_drop(summary),
             finding_slower_than_linearsvc(summary), finding_shrinking_not_faster(summary),
             finding_fewer_passes(summary), finding_w_change_reached(summary), finding_active_near_boundary(active)]
    for f, key in zip(found[-3:], ("fewer", "w_change", "active")):
        f.rule = f.rule or RULES[key]
    return found


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
    """Per cell: runs that met their stopping test, median passes, coordinate updates, and the
    worst relative duality gap (P - D)/|P|, which bounds (P - f*)/|P|: how far each rule stopped
    from the optimum."""
    out = summary.assign(dataset=summary["dataset"].map(PAPER_NAMES).fillna(summary["dataset"]),
                         converged=[f"{c}/{r}" for c, r in zip(summary["converged"], summary["runs"])])
    out = out[["dataset", "C", "solver_entry", "converged", "n_iter", "n_updates", "rel_gap"]]
    return out.rename(columns={"solver_entry": "entry", "n_iter": "passes (median)",
                               "n_updates": "coordinate updates (median)", "rel_gap": "relative duality gap (worst)"})


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


def active_stats(data: ReportData, entry="dcd_shrinking", C=10.0) -> dict:
    """Share of toy training points with alpha > 0, and the margins y f(x) on each side."""
    row = _toy_model(data, entry, C)
    X, y = row["Xa"], row["ya"]
    margin = y * (X @ np.asarray(row["w"], dtype=float) + float(row["b"]))
    active = np.zeros(len(y), dtype=bool)
    active[np.asarray(row["support"], dtype=int)] = True
    return {"share": float(active.mean()), "max_margin": float(margin[active].max()) if active.any() else math.nan,
            "min_margin_inactive": float(margin[~active].min()) if (~active).any() else math.nan,
            "C": float(row["C"]), "active": active, "row": row}


def _state(row) -> str:
    """How the drawn fit ended: its status and relative duality gap (a cap is never shown as converged)."""
    gap = row.get("duality_gap", math.nan) / abs(row.get("primal_objective", math.nan))
    return f"{row.get('status', '?')}, rel. gap {fmt(gap)}"


TRACKED = "dcd_shrinking_tracked"   # the toy fit that keeps A after given passes (dcd record_active_at)


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
    row = _toy_model(data, TRACKED, 10.0)
    sets = tracked_active_sets(row)
    X, y = row["Xa"], row["ya"]
    gx, gy = _grid(X)
    f = (np.column_stack([gx.ravel(), gy.ravel()]) @ np.asarray(row["w"], dtype=float) + float(row["b"]))
    # At most four panels: the first kept pass, two spread over the rest, and the end.
    shown = ([sets[i] for i in sorted(set(np.linspace(0, len(sets) - 2, 3).round().astype(int)))] + sets[-1:]
             if len(sets) > 4 else sets)
    fig, axes = _panels(len(shown), width=4.2, height=3.9, ncols_max=2)
    for ax, (label, members) in zip(axes, shown):
        live = np.zeros(len(y), dtype=bool)
        live[members] = True
        ax.contour(gx, gy, f.reshape(gx.shape), levels=[-1, 0, 1], colors="k", linestyles=["--", "-", "--"],
                   linewidths=0.7)
        for cls, colour in ((1, "tab:blue"), (-1, "tab:orange")):
            idle, act = (y == cls) & ~live, (y == cls) & live
            ax.scatter(X[idle, 0], X[idle, 1], s=3, c=colour, alpha=0.25,
                       label=f"class {cls:+d}, shrunk ({idle.sum()})")
            ax.scatter(X[act, 0], X[act, 1], s=16, c=colour, edgecolors="k", linewidths=0.4,
                       label=f"class {cls:+d}, in A ({act.sum()})")
        ax.set_title(f"{label}: |A| = {live.sum()} of {len(y)}", fontsize=9)
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        ax.legend(fontsize=6, loc="lower right")
    fig.suptitle(f"Shrinking on the toy data: the active set A of dcd (stop=pg), C={fmt(row['C'])} "
                 f"({_state(row)}); lines: the final f = -1, 0, 1", fontsize=9)
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
                                     "(its record_active_at option): large points are in A after the pass named "
                                     "above each panel, small ones were shrunk away by then; the last panel is A "
                                     "when the fit ended. The lines are the final model's f = -1, 0, 1."),
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
        *findings_table(found),
    ]
    out += ["", "## Setup, and how it differs from theirs\n",
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
            f"- Repeats: every fit runs {setup.get('repeats', 5)} times (random_state 0 to "
            f"{setup.get('repeats', 5) - 1}: another pass order); accuracies are means, times medians over them, "
            "and the timing findings (5, 6) are judged in each repeat: undecided when the repeats straddle the "
            "rule's threshold. The repeats run in one process, dataset by dataset (each dataset's fits together), "
            "not strictly alternating. Times are solver seconds, one fit at a time "
            "(cluster=sequential) on a loaded 2-core machine, ours and LinearSVC's in the same run. Every dcd "
            "pass is traced (for Figures 5-6): the recorder's own time is left out of the solver seconds, but "
            "the copy of w each pass needs for ||w_k+1 - w_k|| is in them, and a trace point after every pass "
            "makes each pass its own compiled call (untraced, dcd runs many passes per call). So Table 2 "
            "overstates our time; the untraced whole call is measured in the repository README's Benchmarks "
            "(`python tests/solvers/bench_dcd.py small`).",
            *[f"- {DATA_DIFFERENCES[d]}." for d in DATASETS],
            "- Their own toy numbers disagree: Section 4.1 gives 92.73% at C=10 for dcd and for LinearSVC, their "
            "Table 1 93.48% for both at C=10. The report does not say which run each is (another split or draw, "
            "we guess); Table 1 is the one compared here, and on toy only as a mechanism (not comparable levels).",
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
            "converged), median passes and coordinate updates, and the worst relative duality gap (P - D)/|P| "
            "of the returned model, an upper bound on its relative distance from the optimum, (P - f*)/|P|.\n",
            markdown_table(convergence_table(summary)),
            "## Figures\n", *figure_lines(FIGURES, figs, skipped)]
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
    text = readme(summary, findings(summary, active), figs, skipped, _setup(data))
    (out / "README.md").write_text(with_costs(text, run_dir, root, data.results))
    return out / "README.md"
