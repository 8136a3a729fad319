"""bertini: N. Bertini, L. Chichiriccò and F. Ciccarelli, "Project #2 - Support Vector Machines",
Optimization Methods for Machine Learning, Sapienza University of Rome, Fall 2022. Writes Tables
I-XVI (ours beside theirs), each of the paper's findings marked holds or differs, and Figures 2-5,
from a run of conf/experiment/bertini.yaml.

Two summary tables carry every finding, so each can be checked on hand-made tables: the CV grid
(one row per kernel x C x gamma-or-degree: mean train, validation and held-out test accuracy,
free support vectors) and the methods (one row per method x kernel x q: iterations, f(alpha_0),
f(alpha*), m - M, time, proximal steps, accuracies). `summarise_grid` and `summarise_methods`
build them from results.parquet; the under-fitting case's b is checked from the kept models.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..report.common import fmt, markdown_table, styles
from ..report.figures import c_gamma_heatmap, confusion_matrices, figure_legend
from ..report.plotting import decorate, log_ticks, panel_grid
from ..report.registry import ReportData, Skip
from .registry import paper
from .claims import (LEVEL, REFEREE_WHY, STAND_IN, VOCABULARY_WHY, Cell, Claim, Estimate, Finding, RuleChange,
                     Sensitivity, StudyRules, changes_lines, data_lines, difference_over, exact, judge, ratio_over,
                     sensitivities, sensitivity_lines)
from .common import load, draw_figures, figure_lines, findings_table, save_figures, with_costs

NAME = "bertini"
MNIST = "mnist_3v8"           # every binary part: 2000 rows as theirs, 1280 a fold (conf/experiment/bertini.yaml)
THREE = "digits_bertini_3class"   # the one-vs-all of Figure 5
KERNELS = ("rbf", "poly")
KERNEL_NAME = {"rbf": "Gaussian", "poly": "polynomial"}
HYPER = {"rbf": "gamma", "poly": "degree"}     # their "gamma" is the degree for the polynomial kernel
GRID_ENTRIES = {"grid_rbf": "rbf", "grid_poly": "poly"}
METHODS = ("qp", "svmlight", "smo")
METHOD_ENTRIES = {f"{m}_{k}": (m, k) for m in METHODS for k in KERNELS}
OVA_ENTRY = "svmlight_ova"
UNDERFIT_ENTRIES = ("smo_underfit", "qp_underfit")   # Section I.B.1's point at tol 1e-13
nan = math.nan

# Table I: their best (C, gamma) and 5-fold validation score (%).
TABLE1 = {"rbf": (5000.0, 1e-3, 99.44), "poly": (1000.0, 2.0, 99.62)}
# Tables II/III (qp), VII/VIII (svmlight), XI/XII (smo): (table, train, validation, test) in %.
ACCURACY = {
    "qp": {"rbf": ("II", 100.0, 99.43, 98.75), "poly": ("III", 100.0, 99.62, 99.25)},
    "svmlight": {"rbf": ("VII", 100.0, 99.44, 98.75), "poly": ("VIII", 100.0, 99.625, 99.25)},
    "smo": {"rbf": ("XI", 100.0, nan, 98.75), "poly": ("XII", 100.0, nan, 99.25)},
}
# Tables IV/V, IX/X, XIII/XIV: (table, iterations, f(alpha_0), f(alpha*), m* - M*).
OPTIM = {
    "qp": {"rbf": ("IV", 27, -1.46e10, -1.0963e3, 5.01e-14), "poly": ("V", 24, -1.05e7, -2.07e-2, 1.64e-14)},
    "svmlight": {"rbf": ("IX", 36, 0.0, -1.0963e3, 4.54e-13), "poly": ("X", 31, 0.0, -2.07e-2, 5.55e-15)},
    "smo": {"rbf": ("XIII", 5129, 0.0, -1.0963e3, 1.99e-13), "poly": ("XIV", 3271, 0.0, -2.07e-2, 1.15e-14)},
}
# Table VI: their best q and its time; Tables XV/XVI: seconds per method ("Q1" qp, "Q2" svmlight, "Q3" smo).
BEST_Q = {"rbf": (70, ">= 0.5 s"), "poly": (100, "~0.2 s")}
TIMES = {"qp": {"rbf": 6.0, "poly": 5.0}, "svmlight": {"rbf": 0.32, "poly": 0.32}, "smo": {"rbf": 1.0, "poly": 1.0}}
UNDERFIT = (0.1, 1e-4)        # Section I.B.1: C = 0.1, gamma = 1e-4 has no free support vector
TOL = 1e-13                   # the methods' tol on m - M (conf/experiment/bertini.yaml); theirs end at 5.6e-15 to 4.5e-13
# The dated log of this study's rule changes (claims.RuleChange; README "Changes to the rules").
CHANGES = (
    RuleChange(
        "2026-11-27", "58ae3a13b31d8583",
        # what changed
        "the shared claim vocabulary; the levels of their unnamed data (Table I's best points and score, "
        "Tables II-XII's accuracies, Figure 5's) not comparable on our stand-in (were judged within 2 pp); "
        "'slightly worse at small C' judged at the methods' gamma 0.01, which Setup gives for theirs (was at "
        "their 1e-3, a nearly constant kernel here), above 0 and at most 5 pp with a 95% interval over folds, "
        "and 'the polynomial is more stable' its own finding (the smallest C, 0.1, against the best); the "
        "under-fitting case split in two (no free support vector; accuracy worse by more than 2.5 pp); where b "
        "is taken with no free support vector is a choice of method, shown and no longer judged; 'about 1e-13' "
        "judged as every fold of every method stopping on m - M <= 1e-13 before its cap (was m - M <= 1e-12, "
        "above the tolerance); the same optimum to 1e-4 per fold; 'far more iterations' at least 10x; their "
        "best q: every other q's time over theirs above 1.1x; proximal steps at some q; SVMlight 2-5x faster "
        "than SMO (was at least 2x); qp slowest above 1.1x (was 1.5x); every timing verdict with its interval "
        "over the 5 folds, the methods of a kernel run back to back in each fold",
        VOCABULARY_WHY,
        # the verdicts before
        "1 best points holds, 2 small C differs, 3 no free SV differs, 4 bound-only b differs, 5 accuracy "
        "holds, 6 KKT holds, 7 same optimum holds, 8 iterations holds, 9 best q differs, 10 proximal spikes "
        "differs, 11 svmlight faster differs, 12 qp slowest holds, 13 one-vs-all holds",
        # the verdicts after (the regeneration at full size under this digest)
        "1 best points not comparable, 2 small C holds, 3 polynomial stable holds (but see the next entry: the "
        "smallest C was the best C), 4 no free support vector differs, 5 under-fitting accuracy low holds, 6 "
        "accuracy levels not comparable, 7 every method converges holds, 8 same optimum holds, 9 far more "
        "iterations holds, 10 best q differs, 11 proximal steps differs, 12 SVMlight 2-5x faster differs, 13 qp "
        "slowest holds, 14 one-vs-all level not comparable"),
    RuleChange(
        "2026-11-27", "9f1d1bbf20b8e475",
        "after the regeneration under digest 58ae3a13b31d8583, 'the polynomial is more stable' compares the worst "
        "C of their grid with the best (was the smallest C, 0.1, with the best); digest 58ae3a13b31d8583 to "
        "9f1d1bbf20b8e475, nothing else moved",
        "that regeneration showed the polynomial's smallest C to be its best: the statistic compared a point with "
        "itself, 0 pp whatever the accuracy elsewhere, so it could not fail; this change was made knowing its "
        "result",
        "3 polynomial stable holds (0.00 pp: the smallest C is the best C)",
        "3 polynomial stable holds (0.00 pp: the accuracy is the same at every C of degree 2); the others as the "
        "entry before"),
    RuleChange(
        "2026-11-28", "c70ee9b5566b3a41",
        # what changed
        "every interval over repeats with Student's t on n - 1 degrees of freedom (the vocabulary); an interval "
        "wider than a finite band is 'below detectable power' (the vocabulary); 'slightly worse' is lower with "
        "no upper bound (was at most 5 pp, twice the nearly-equal band, which no paper sources: the kind now "
        "judges 'lower' and shows the size); 7 every method converges and 8 same optimum shown as by "
        "construction (each method stops on its own m - M <= 1e-13, and three such certificates of one convex "
        "QP agree whatever the data); 3 'more stable' tested as the comparison the paper makes: how much more "
        "the Gaussian falls over C than the polynomial, beyond the nearly-equal band (was the polynomial alone, "
        "nearly equal over C); 5 judged only where 4 holds (the paper's 'when all the support vectors are at "
        "bound'); 12 SVMlight faster than SMO judged as the method's direction, above 1.1x (was 2-5x: the "
        "paper's range, of their code on their data, a level a stand-in cannot judge); a sensitivity "
        "declared for 2 and 3 at their gamma 1e-3 (Table I) instead of the methods' 0.01; the levels name the "
        "printed numbers they take (1, 6, 14)",
        REFEREE_WHY,
        # the verdicts before
        "1 not comparable, 2 holds, 3 holds, 4 differs, 5 holds, 6 not comparable, 7 holds, 8 holds, 9 holds, "
        "10 differs, 11 differs, 12 differs, 13 holds, 14 not comparable",
        # the verdicts after (a regeneration at load average 27-33 on 2 cores, a check of the code)
        "1 not comparable, 2 holds (+2.44 pp [+0.98, +3.90]; at their gamma 1e-3 it holds too, +6.94 pp), 3 "
        "undecided (the Gaussian falls 2.44 pp more than the polynomial, across 2.5; at their gamma 1e-3 it "
        "holds, 6.94 pp), 4 differs, 5 premise not met (4 differs: 4 of 5 folds keep free support vectors), 6 not "
        "comparable, 7 by construction, 8 by construction, 9 holds, 10 differs, 11 differs, 12 differs (SMO "
        "0.40x and 0.45x SVMlight's time), 13 holds, 14 not comparable"),
)


# ------------------------------------------------------------------------------ summaries
def _num(results, col):
    return pd.to_numeric(results[col], errors="coerce") if col in results.columns else pd.Series(nan, index=results.index)


def summarise_grid(results: pd.DataFrame) -> pd.DataFrame:
    """One row per kernel x C x h (gamma, or the degree) of the CV grid: mean train, validation
    and held-out test accuracy (%), each fold's validation accuracy (`val_reps`, in fold order),
    folds, converged folds, the median number of free support vectors and the folds whose b came
    from the bound-only rule."""
    fits = results[results["solver_entry"].isin(GRID_ENTRIES) & (results["status"] != "error")]
    fits = fits.assign(kernel=fits["solver_entry"].map(GRID_ENTRIES),
                       h=np.where(fits["solver_entry"] == "grid_poly", _num(fits, "degree"), _num(fits, "gamma")),
                       _free=_num(fits, "info_n_free_sv"), _heldout=_num(fits, "heldout_accuracy"),
                       _bound=(fits["info_b_rule"] == "bound_only") if "info_b_rule" in fits.columns else False)
    fits = fits.sort_values("fold") if "fold" in fits.columns else fits
    g = fits.groupby(["kernel", "C", "h"], sort=True)
    return g.agg(train=("train_accuracy", lambda s: 100 * s.mean()), val=("test_accuracy", lambda s: 100 * s.mean()),
                 val_reps=("test_accuracy", lambda s: tuple(100 * s)),
                 test=("_heldout", lambda s: 100 * s.mean()), folds=("key", "count"),
                 converged=("status", lambda s: int((s == "converged").sum())),
                 n_free=("_free", "median"), bound_only=("_bound", "sum")).reset_index()


def summarise_methods(results: pd.DataFrame) -> pd.DataFrame:
    """One row per method x kernel x q (svmlight's sweep; NaN for the others) at the run's point (C,
    and h: gamma or the degree, as in the grid summary): median iterations, f(alpha_0), f(alpha*)
    and time, the worst m - M, the proximal steps (total, and the folds that took any),
    svmlight's subproblems solved by pair steps (median), mean accuracies (%), runs, converged
    runs and the statuses; each fold's iterations, f(alpha*), time and accuracies (`*_reps`, in
    fold order: the repeats a verdict pairs)."""
    fits = results[results["solver_entry"].isin(METHOD_ENTRIES) & (results["status"] != "error")]
    fits = fits.sort_values("fold") if "fold" in fits.columns else fits
    fits = fits.assign(method=fits["solver_entry"].map(lambda e: METHOD_ENTRIES[e][0]),
                       kernel=fits["solver_entry"].map(lambda e: METHOD_ENTRIES[e][1]),
                       q=_num(fits, "param_q").fillna(-1), _f0=_num(fits, "info_f_alpha0"),
                       _f=_num(fits, "info_f_alpha"), _prox=_num(fits, "info_n_proximal"),
                       _pair=_num(fits, "info_n_pair_solves"),
                       _heldout=_num(fits, "heldout_accuracy"),
                       _C=_num(fits, "C"),
                       _h=np.where(fits["solver_entry"].str.endswith("_poly"), _num(fits, "degree"),
                                   _num(fits, "gamma")))
    g = fits.groupby(["method", "kernel", "q"], sort=True)
    out = g.agg(C=("_C", "first"), h=("_h", "first"), n_iter=("n_iter", "median"), iter_reps=("n_iter", tuple),
                f0=("_f0", "median"), f_star=("_f", "median"), f_reps=("_f", tuple),
                f_spread=("_f", lambda s: float(s.max() - s.min())), kkt=("kkt_violation", "max"),
                time_s=("fit_time_s", "median"), time_reps=("fit_time_s", tuple), n_prox=("_prox", "sum"),
                prox_folds=("_prox", lambda s: int((s > 0).sum())), pair_solves=("_pair", "median"),
                train=("train_accuracy", lambda s: 100 * s.mean()), val=("test_accuracy", lambda s: 100 * s.mean()),
                test=("_heldout", lambda s: 100 * s.mean()), train_reps=("train_accuracy", lambda s: tuple(100 * s)),
                val_reps=("test_accuracy", lambda s: tuple(100 * s)), test_reps=("_heldout", lambda s: tuple(100 * s)),
                runs=("key", "count"),
                converged=("status", lambda s: int((s == "converged").sum())),
                statuses=("status", lambda s: ", ".join(f"{k} {v}" for k, v in s.value_counts().items()))).reset_index()
    return out.assign(q=out["q"].where(out["q"] >= 0))


def _cells(summary, **where) -> pd.DataFrame:
    mask = pd.Series(True, index=summary.index)
    for col, v in where.items():
        mask &= np.isclose(summary[col].astype(float), v) if isinstance(v, float) else (summary[col] == v)
    return summary[mask]


def _one(summary, col, **where) -> float:
    rows = _cells(summary, **where)
    return float(rows[col].iloc[0]) if len(rows) else nan


def best_points(grid: pd.DataFrame) -> dict:
    """kernel -> the grid row with the best validation accuracy (ties: the smallest C, then h)."""
    out = {}
    for k in KERNELS:
        rows = grid[grid["kernel"] == k]
        if len(rows):
            out[k] = rows.sort_values(["val", "C", "h"], ascending=[False, True, True]).iloc[0]
    return out


def point_text(methods, kernel) -> str:
    """The point the methods ran at for a kernel, 'C=5000, gamma=0.01' (from the run, not a constant)."""
    rows = methods[methods["kernel"] == kernel]
    if rows.empty:
        return ""
    return f"C={fmt(float(rows['C'].iloc[0]))}, {HYPER[kernel]}={fmt(float(rows['h'].iloc[0]))}"


def method_row(methods, method, kernel) -> pd.Series | None:
    """The row a method's Tables IV-XIV are read from: svmlight at their best q (Table VI), or
    the nearest q we ran; the others have one row per kernel."""
    rows = methods[(methods["method"] == method) & (methods["kernel"] == kernel)]
    if rows.empty:
        return None
    if method == "svmlight":
        rows = rows.iloc[(rows["q"] - BEST_Q[kernel][0]).abs().argsort()]
    return rows.iloc[0]


# ------------------------------------------------------------------------------ the rules
DATA = (
    (MNIST, STAND_IN, "their dataset is not named; MNIST 3 against 8, 2000 images, as their 400 test rows and "
                      "q = 1600 point to"),
    (THREE, STAND_IN, "their three labels are not named; scikit-learn's 8x8 digits 3, 5 and 8"),
)
_FOLDS = "5 folds (paired: the same folds for every point and method)"
_TIMED = "5 folds (paired: within a fold, a kernel's methods and q sweep run back to back)"
RULES = StudyRules(NAME, DATA, (
    Claim("best_points", "Table I: 5-fold CV picks Gaussian C=5000, gamma=1e-3 (99.44%) and polynomial C=1000, "
          "degree 2 (99.62%); the data are almost separable", "nearly equal",
          "our best 5-fold validation accuracy minus theirs", "kernel", _FOLDS, scope=LEVEL,
          printed="Table I's validation scores"),
    Claim("small_C", "Figure 3: below some C the Gaussian SVM does slightly worse (a modest under-fitting)",
          "slightly worse", "validation accuracy at the best C minus at the smallest C (0.1), at the methods' "
          "gamma (0.01; Setup says why not their 1e-3, which the sensitivity below takes)", "the Gaussian kernel",
          _FOLDS),
    Claim("poly_stable", "the polynomial kernel is more stable in terms of accuracy over C than the Gaussian (Section "
          "I.B.1: 'particularly when applying a polynomial kernel (more stable in terms of accuracy)')", "worse",
          "how much more the Gaussian's validation accuracy falls from its best C to its worst than the polynomial's "
          "does, across the 13 C values of their grid, at the methods' gamma (0.01) and degree 2", "the two kernels", _FOLDS),
    Claim("no_free_sv", "C=0.1, gamma=1e-4: the solution has no free support vector, all of them at a bound "
          "(Section I.B.1)", "share", "the share of folds whose solution (smo at tol 1e-13) has no free support "
          "vector", "the point C = 0.1, gamma = 1e-4", "exact", params=(("hi", 1.0), ("lo", 1.0))),
    Claim("underfit_low", "when all the support vectors are at bound, usually the accuracy is really low: "
          "under-fitting (Section I.B.1)", "worse", "validation accuracy at the best Gaussian point minus at "
          "C = 0.1, gamma = 1e-4", "the point C = 0.1, gamma = 1e-4", _FOLDS, given="no_free_sv"),
    Claim("accuracy", "train 100%, validation ~99.4-99.6%, test 98.75% (Gaussian) and 99.25% (polynomial) for every "
          "method at Table I's point (Tables II, III, VII, VIII, XI, XII)", "nearly equal",
          "our accuracy minus theirs", "method, kernel and split (train, validation, test)", _FOLDS, scope=LEVEL,
          printed="Tables II, III, VII, VIII, XI and XII"),
    Claim("converges", "every method solves the dual: m(alpha*) - M(alpha*) of 5.6e-15 to 4.5e-13 (Tables IV-XIV)",
          "share", "the share of folds in which the method stopped on m - M <= 1e-13 (the tolerance set for all "
          "three; only the stop is judged, its level is ours) before its cap", "method and kernel", "exact",
          params=(("hi", 1.0), ("lo", 1.0)),
          construction="each method runs until its own stopping test m - M <= 1e-13 passes, the tolerance we set "
                       "for all three; a fold that passes it is that test's definition, not a property of the data "
                       "(a cap reached would show as not converged in the tables below)"),
    Claim("same_optimum", "the three methods reach the same f(alpha*) (Tables IV, IX, XIII: -1096.3; V, X, XIV: "
          "-2.07e-2)", "same optimum", "the largest relative difference of f(alpha*) between the methods",
          "kernel and fold", "exact",
          construction="the dual is a convex QP and each method's f(alpha*) comes with finding 7's certificate "
                       "m - M <= 1e-13, which bounds its distance from the one optimal value far below 1e-4: three "
                       "certified solutions of one convex problem agree whatever the data"),
    Claim("iterations", "SMO takes far more iterations than SVMlight at its q (Tables XIII-XIV against IX-X: 5129 "
          "and 3271 pair steps against 36 and 31 subproblems)", "far greater",
          "SMO's pair steps over SVMlight's subproblems (at their q)", "kernel", _FOLDS),
    Claim("best_q", "Table VI: SVMlight is fastest at q = 70 (Gaussian) and q = 100 (polynomial)", "greater",
          "the time at another q over the time at their q", "kernel and other q", _TIMED),
    Claim("proximal", "Figures 2 and 4: past some q, Q_WW is no longer positive definite and the proximal-point "
          "modification (PPD) is applied, and the time spikes", "share",
          "the share of the q we ran at which some subproblem's Q_WW was not positive definite (a proximal step)",
          "kernel", "exact", params=(("hi", 1.0), ("lo", 0.0), ("lo_open", True))),
    Claim("svmlight_faster", "SVMlight takes less time than the other algorithms: 2 to 5 times less (Section IV; "
          "Tables XV-XVI: SMO ~1 s against ~0.32 s); the range is of their code on their data, the direction is "
          "the method's", "greater", "SMO's time over SVMlight's (at their q)", "kernel", _TIMED),
    Claim("qp_slowest", "the whole QP in one solve is the slowest option (Section IV; Tables XV-XVI: ~6 s and ~5 s)",
          "greater", "qp's time over the slower of SMO and SVMlight (at their q)", "kernel", _TIMED),
    Claim("multiclass", "Figure 5: one-vs-all over three labels with the polynomial kernel classifies the test set "
          "well (Table XVI's Q4: test 99.5%)", "nearly equal", "the one-vs-all model's held-out test accuracy "
          "minus theirs", "the three-class set", _FOLDS, scope=LEVEL, printed="Table XVI's Q4 test accuracy 99.5%"),
), changes=CHANGES, sensitivities=tuple(
    Sensitivity(key, "their gamma 1e-3 (Table I) for the Gaussian, instead of the methods' 0.01", (("gamma", 1e-3),))
    for key in ("small_C", "poly_stable")))


def _val_reps(grid, kernel, C, h) -> np.ndarray:
    rows = _cells(grid, kernel=kernel, C=C, h=h)
    return np.asarray(rows["val_reps"].iloc[0], float) if len(rows) else np.array([])


def _drop(grid, kernel, h, at_C) -> tuple[Estimate | None, float]:
    """(validation at the best C minus at C = at_C, per fold, as an estimate; the best C)."""
    rows = grid[(grid["kernel"] == kernel) & np.isclose(grid["h"], h)]
    if rows.empty:
        return None, nan
    best = rows.loc[rows["val"].idxmax()]
    a, b = _val_reps(grid, kernel, float(best.C), h), _val_reps(grid, kernel, at_C, h)
    n = min(len(a), len(b))
    return (difference_over(a[:n] - b[:n], "folds") if n else None), float(best.C)


def finding_best_points(grid) -> Finding:
    cells, parts = [], []
    for k, row in best_points(grid).items():
        C, h, theirs = TABLE1[k]
        cells.append(Cell(MNIST, KERNEL_NAME[k], difference_over(np.asarray(row.val_reps) - theirs, "folds")))
        parts.append(f"{KERNEL_NAME[k]}: best C={fmt(row.C)}, {HYPER[k]}={fmt(row.h)} at {row.val:.2f}%; at their "
                     f"point {_one(grid, 'val', kernel=k, C=C, h=h):.2f}%")
    return judge(RULES, RULES.claim("best_points"), cells, "; ".join(parts))


def finding_small_C(grid, gamma: float = nan, claim: Claim | None = None) -> Finding:
    """At the methods' gamma (the run's; `gamma`), the drop from the best C to the smallest."""
    claim = claim or RULES.claim("small_C")
    g = gamma if math.isfinite(gamma) else METHODS_GAMMA
    rbf = grid[(grid["kernel"] == "rbf") & np.isclose(grid["h"], g)]
    if rbf.empty:
        return judge(RULES, claim, [])
    small = float(rbf["C"].min())
    est, best = _drop(grid, "rbf", g, small)
    elsewhere = grid[grid["kernel"] == "rbf"].groupby("h").apply(
        lambda x: x["val"].max() - x.loc[np.isclose(x["C"], x["C"].min()), "val"].mean(), include_groups=False)
    ours = (f"at gamma={fmt(g)}: C={fmt(small)} against the best C={fmt(best)}; over the grid's gammas the smallest "
            "C costs " + ", ".join(f"{v:.2f} pp (gamma={float(h):g})" for h, v in elsewhere.items()))
    return judge(RULES, claim, [Cell(MNIST, f"gamma={fmt(g)}", est)] if est else [], ours,
                 "as gamma -> 0 the Gaussian SVM tends to a linear SVM whose penalty is proportional to C gamma "
                 "(Keerthi & Lin, Neural Computation 15, 2003): how much a small C costs depends on gamma and on the "
                 "data's squared distances (here [0, 1] pixels, Setup)")


def _fall_over_C(grid, kernel, h) -> tuple[np.ndarray, float, float]:
    """Per fold, the validation accuracy at the kernel's best C minus at its worst (both chosen on
    the folds' mean), at h; and those two C."""
    rows = grid[(grid["kernel"] == kernel) & np.isclose(grid["h"], h)]
    if rows.empty:
        return np.array([]), nan, nan
    best, worst = float(rows.loc[rows["val"].idxmax(), "C"]), float(rows.loc[rows["val"].idxmin(), "C"])
    a, b = _val_reps(grid, kernel, best, h), _val_reps(grid, kernel, worst, h)
    n = min(len(a), len(b))
    return a[:n] - b[:n], best, worst


def _fall_words(fall: np.ndarray, best: float, worst: float) -> str:
    """How a kernel's accuracy falls over C, in words: where its best and worst C are one (the same
    accuracy at every C of the grid), that, not a fall 'from C=0.1 to C=0.1'."""
    if best == worst:
        return "the same at every C (0.00 pp)"
    return f"falls {np.mean(fall):.2f} pp from C={best:g} to C={worst:g}"


def finding_poly_stable(grid, gamma: float = nan, claim: Claim | None = None) -> Finding:
    """More stable than the Gaussian: per fold, how much more the Gaussian's validation accuracy
    falls from its best C to its worst than the polynomial's does (the Gaussian at the methods'
    gamma, or `gamma`; the polynomial at their degree)."""
    claim = claim or RULES.claim("poly_stable")
    g, d = (gamma if math.isfinite(gamma) else METHODS_GAMMA), TABLE1["poly"][1]
    gauss, gb, gw = _fall_over_C(grid, "rbf", g)
    poly, pb, pw = _fall_over_C(grid, "poly", d)
    n = min(len(gauss), len(poly))
    if not n:
        return judge(RULES, claim, [])
    ours = (f"over C, the Gaussian (gamma={fmt(g)}) {_fall_words(gauss, gb, gw)}, the polynomial (degree {fmt(d)}) "
            f"{_fall_words(poly, pb, pw)} (means over folds)")
    return judge(RULES, claim, [Cell(MNIST, f"gamma={fmt(g)} against degree {fmt(d)}",
                                     difference_over(gauss[:n] - poly[:n], "folds"))], ours,
                 "both kernels hold their accuracy over C on these almost separable digits at these points: the "
                 "Gaussian moves no more than the polynomial beyond the nearly-equal band")


def finding_no_free_sv(check: pd.DataFrame | None) -> Finding:
    """check: `bound_b_check`'s rows (smo's at tol 1e-13 decide)."""
    C, _ = UNDERFIT
    smo = None if check is None else check[(check["entry"] == "smo_underfit") & (check["status"] == "converged")]
    at = None if smo is None else smo[np.isclose(smo["C"], C)]
    if at is None or at.empty:
        return judge(RULES, RULES.claim("no_free_sv"), [])
    share = float((at["n_free"] == 0).mean())
    free = at[at["n_free"] > 0]
    gaps = sorted({int(abs(r["n_S+"] - r["n_S-"])) for _, r in free.iterrows()})
    ours = (f"free support vectors per fold {', '.join(str(v) for v in at['n_free'])}; b from the bound-only rule in "
            f"{int((at['rule'] == 'bound_only').sum())} of {len(at)} folds")
    for c, g in smo[~np.isclose(smo["C"], C)].groupby("C"):
        ours += f"; at C={fmt(c)}: no free support vector in {int((g['n_free'] == 0).sum())} of {len(g)} folds"
    why = (f"{len(free)} of {len(at)} folds keep free alphas ({', '.join(map(str, free['n_free']))}), with |S+| and "
           f"|S-| {' or '.join(map(str, gaps))} apart: y'alpha = 0 then leaves that many times C to the free alphas of "
           "one class, a bound's worth split between points rather than points on the margin") if len(free) else ""
    return judge(RULES, RULES.claim("no_free_sv"), [Cell(MNIST, f"C={fmt(C)}", exact(share))], ours, why)


def finding_underfit_low(grid, premise: Finding) -> Finding:
    """The accuracy at the under-fitting point against the best; judged only where finding 4 (no
    free support vector there: `premise`) holds."""
    C, g = UNDERFIT
    rbf = grid[grid["kernel"] == "rbf"]
    if rbf.empty or _cells(grid, kernel="rbf", C=C, h=g).empty:
        return judge(RULES, RULES.claim("underfit_low"), [], premise=premise)
    best = rbf.loc[rbf["val"].idxmax()]
    a, b = np.asarray(best.val_reps, float), _val_reps(grid, "rbf", C, g)
    n = min(len(a), len(b))
    return judge(RULES, RULES.claim("underfit_low"), [Cell(MNIST, f"C={C:g}, gamma={g:g}",
                                                           difference_over(a[:n] - b[:n], "folds"))],
                 f"validation {_one(grid, 'val', kernel='rbf', C=C, h=g):.2f}% against {best.val:.2f}% at the best "
                 f"Gaussian point (C={best.C:g}, gamma={best.h:g})", premise=premise)


def finding_accuracy(methods) -> Finding:
    cells = []
    for m in METHODS:
        for k in KERNELS:
            r = method_row(methods, m, k)
            if r is None:
                continue
            _, tr, va, te = ACCURACY[m][k]
            for split, theirs, reps in (("train", tr, r.train_reps), ("validation", va, r.val_reps),
                                        ("test", te, r.test_reps)):
                if math.isfinite(theirs):
                    cells.append(Cell(MNIST, f"{m} {KERNEL_NAME[k]} {split} ({np.mean(reps):.2f} against {theirs:.2f})",
                                      difference_over(np.asarray(reps) - theirs, "folds")))
    point = "; ".join(f"{KERNEL_NAME[k]} {point_text(methods, k)}" for k in KERNELS if point_text(methods, k))
    return judge(RULES, RULES.claim("accuracy"), cells, f"at {point}" if point else "")


def finding_converges(methods) -> Finding:
    cells = []
    for m in METHODS:
        for k in KERNELS:
            r = method_row(methods, m, k)
            if r is not None:
                cells.append(Cell(MNIST, f"{m} {KERNEL_NAME[k]} ({r.statuses}; worst m - M {r.kkt:.2g})",
                                  exact(r.converged / r.runs)))
    short = [c.label for c in cells if c.estimate.value < 1]
    return judge(RULES, RULES.claim("converges"), cells,
                 why="; ".join(short) + (": our interior point stalls on this problem and its active-set polish is "
                                         "refused, so alpha is the stalled iterate" if any(s.startswith("qp") for s in short)
                                         else ""))


def finding_same_optimum(methods) -> Finding:
    cells = []
    for k in KERNELS:
        rows = [r for r in (method_row(methods, m, k) for m in METHODS) if r is not None]
        if len(rows) < 2:
            continue
        n = min(len(r.f_reps) for r in rows)
        for i in range(n):
            f = np.array([r.f_reps[i] for r in rows], float)
            cells.append(Cell(MNIST, f"{KERNEL_NAME[k]} fold {i}", exact((f.max() - f.min()) / np.abs(f).max())))
    ours = "; ".join(f"{KERNEL_NAME[k]}: " + ", ".join(f"{m} {r.f_star:.6g}" for m in METHODS
                                                        if (r := method_row(methods, m, k)) is not None)
                     for k in KERNELS)
    return judge(RULES, RULES.claim("same_optimum"), cells, ours + " (medians over folds)")


def _fold_ratio(a, b, col) -> Estimate:
    x, y = np.asarray(getattr(a, col), float), np.asarray(getattr(b, col), float)
    n = min(len(x), len(y))
    return ratio_over(x[:n] / y[:n], "folds")


def finding_iterations(methods) -> Finding:
    cells, parts = [], []
    for k in KERNELS:
        r = {m: method_row(methods, m, k) for m in METHODS}
        if r["smo"] is None or r["svmlight"] is None:
            continue
        cells.append(Cell(MNIST, KERNEL_NAME[k], _fold_ratio(r["smo"], r["svmlight"], "iter_reps")))
        parts.append(f"{KERNEL_NAME[k]}: smo {r['smo'].n_iter:.0f} pair steps, svmlight (q={r['svmlight'].q:.0f}) "
                     f"{r['svmlight'].n_iter:.0f} subproblems" +
                     (f", qp {r['qp'].n_iter:.0f} interior-point iterations" if r["qp"] is not None else ""))
    return judge(RULES, RULES.claim("iterations"), cells, "; ".join(parts) + " (medians over folds)")


def finding_best_q(methods) -> Finding:
    cells, trend = [], []
    for k in KERNELS:
        theirs = method_row(methods, "svmlight", k)
        rows = methods[(methods["method"] == "svmlight") & (methods["kernel"] == k)]
        if theirs is None or rows.empty:
            continue
        for r in rows.itertuples():
            if r.q != theirs.q:
                cells.append(Cell(MNIST, f"{KERNEL_NAME[k]} q={r.q:.0f}", _fold_ratio(r, theirs, "time_reps")))
        low = rows.loc[rows["q"].idxmin()]
        trend.append(f"{KERNEL_NAME[k]}: from q={low.q:.0f} to q={theirs.q:.0f} the subproblems fall "
                     f"{low.n_iter / theirs.n_iter:.0f}x ({low.n_iter:.0f} to {theirs.n_iter:.0f}) and the median "
                     f"time goes {1e3 * low.time_s:.3g} to {1e3 * theirs.time_s:.3g} ms")
    return judge(RULES, RULES.claim("best_q"), cells, "; ".join(trend),
                 "a subproblem of ours costs its q x q kernel block, a positive-definiteness test (a Cholesky "
                 "factorisation, q^3/3 operations) and its pair steps, all compiled, so many small subproblems cost "
                 "little and fewer large ones do not pay; theirs called quadprog from Python for each subproblem, a "
                 "fixed cost that many small subproblems multiply, which favours a larger q (a likely cause, not "
                 "measured here: their code is not available)")


def finding_proximal_spikes(methods) -> Finding:
    sv = methods[methods["method"] == "svmlight"]
    cells, parts = [], []
    for k in KERNELS:
        rows = sv[sv["kernel"] == k]
        if rows.empty:
            continue
        with_prox = rows[rows["n_prox"] > 0]
        cells.append(Cell(MNIST, KERNEL_NAME[k], exact(len(with_prox) / len(rows))))
        fastest = rows["time_s"].min()
        slow = rows.nlargest(2, "time_s")
        parts.append(f"{KERNEL_NAME[k]}: proximal steps at " + (", ".join(
            f"q={r.q:.0f} ({r.n_prox:.0f} in {r.prox_folds:.0f} folds)" for r in with_prox.itertuples())
            if len(with_prox) else "no q") + "; slowest " + ", ".join(
            f"q={r.q:.0f} {r.time_s:.3g} s ({r.time_s / fastest:.0f}x the fastest, {r.n_iter:.0f} subproblems)"
            for r in slow.itertuples()))
    return judge(RULES, RULES.claim("proximal"), cells, "; ".join(parts),
                 "Q_WW stayed positive definite at every q we ran, up to the whole 1280-row fold (their q = 1600): the "
                 "Gaussian kernel matrix of distinct points is positive definite, and the degree-2 kernel on 784 "
                 "pixels has rank up to 785 * 786 / 2 = 308,505, beyond any q here, so the proximal term was never "
                 "needed and no spike of that cause appears. Their solver (quadprog) refused matrices that are "
                 "positive definite only up to rounding; ours requires every pivot^2 of a Cholesky factorisation of "
                 "Q_WW to exceed 1e-10 of its largest diagonal. Our time does rise at the largest q without any "
                 "proximal step: each subproblem's positive-definiteness test is a Cholesky factorisation of Q_WW, "
                 "q^3/3 operations (7e8 at q = 1280)")


def finding_svmlight_faster(methods) -> Finding:
    cells, costs = [], []
    for k in KERNELS:
        s, sl = method_row(methods, "smo", k), method_row(methods, "svmlight", k)
        if s is None or sl is None:
            continue
        cells.append(Cell(MNIST, KERNEL_NAME[k], _fold_ratio(s, sl, "time_reps")))
        costs.append(f"{KERNEL_NAME[k]}: svmlight {s.n_iter / max(sl.n_iter, 1):.0f}x fewer iterations, each "
                     f"{(sl.time_s / max(sl.n_iter, 1)) / (s.time_s / s.n_iter):.0f}x dearer")
    return judge(RULES, RULES.claim("svmlight_faster"), cells, "; ".join(costs),
                 "the iteration counts are like theirs (thousands of pair steps against tens to a hundred or two "
                 "subproblems), the cost per iteration is not: their SMO was interpreted Python (~0.2 ms a pair step: "
                 "5129 steps in ~1 s), ours runs its pair steps compiled, and so does our svmlight, whose iteration "
                 "builds a q x q kernel block, tests it for positive definiteness (a Cholesky factorisation) and "
                 "solves the q-variable QP by pair steps; with interpreted pair steps, as theirs, the many cheap "
                 "iterations are the expensive side")


def finding_qp_slowest(methods) -> Finding:
    cells = []
    for k in KERNELS:
        r = {m: method_row(methods, m, k) for m in METHODS}
        if any(v is None for v in r.values()):
            continue
        other = SimpleNamespace(time_reps=tuple(max(a, b) for a, b in zip(r["smo"].time_reps, r["svmlight"].time_reps)))
        cells.append(Cell(MNIST, f"{KERNEL_NAME[k]} (qp {r['qp'].statuses})", _fold_ratio(r["qp"], other, "time_reps")))
    return judge(RULES, RULES.claim("qp_slowest"), cells,
                 why="our interior point needs a few dozen dense 1280 x 1280 factorisations")


def finding_multiclass(ova: dict | None) -> Finding:
    """ova: {'test': mean held-out accuracy %, 'test_reps', 'val', 'folds', 'converged'}."""
    if not ova:
        return judge(RULES, RULES.claim("multiclass"), [])
    return judge(RULES, RULES.claim("multiclass"),
                 [Cell(THREE, f"held-out test {ova['test']:.2f}% (validation {ova['val']:.2f}%; {ova['converged']}/"
                              f"{ova['folds']} folds converged)",
                       difference_over(np.asarray(ova["test_reps"]) - 99.5, "folds"))])


# The methods' Gaussian gamma (conf/experiment/bertini.yaml): our own Table I grid's best, not
# their 1e-3, which leaves the kernel nearly constant on [0, 1] pixels (Setup).
METHODS_GAMMA = 0.01


def _methods_gamma(methods) -> float:
    return float(methods.loc[methods["kernel"] == "rbf", "h"].iloc[0]) if (methods["kernel"] == "rbf").any() else nan


def findings(grid, methods, check=None, ova=None) -> list[Finding]:
    g = _methods_gamma(methods)
    no_free = finding_no_free_sv(check)
    return [finding_best_points(grid), finding_small_C(grid, g), finding_poly_stable(grid, g), no_free,
            finding_underfit_low(grid, no_free), finding_accuracy(methods), finding_converges(methods),
            finding_same_optimum(methods), finding_iterations(methods), finding_best_q(methods),
            finding_proximal_spikes(methods), finding_svmlight_faster(methods), finding_qp_slowest(methods),
            finding_multiclass(ova)]


def sensitivity_findings(grid):
    """The declared sensitivities (RULES.sensitivities): findings 2 and 3 at their gamma."""
    return sensitivities(RULES, {"small_C": lambda c: finding_small_C(grid, c.p["gamma"], c),
                                 "poly_stable": lambda c: finding_poly_stable(grid, c.p["gamma"], c)})


# ------------------------------------------------------------------------------ the under-fitting b
def their_b(G: np.ndarray, alpha: np.ndarray, y: np.ndarray, C: float) -> tuple[float, int, int]:
    """(b, |S+|, |S-|) by their Section I.D: the mean of y_i - w'x_i over the free support
    vectors; with none,

        |S-| >= |S+|:  b = max( max_{S-} (-1 - w'x_i), max_{V+} (1 - w'x_i) )
        otherwise:     b = min( min_{V-} (-1 - w'x_i), min_{S+} (1 - w'x_i) )

    (S+- = {alpha_i = C, y_i = +-1}, V+- = {alpha_i = 0, y_i = +-1}; their second line prints
    max over S+, Burges & Crisp's bound is the min). w'x_i = y_i (G_i + 1) from G = Q alpha - e."""
    wx = y * (G + 1.0)
    at_C, at_0 = alpha >= C, alpha <= 0
    n_Sp, n_Sm = int(np.count_nonzero(at_C & (y > 0))), int(np.count_nonzero(at_C & (y < 0)))
    free = ~at_C & ~at_0
    if free.any():
        return float(np.mean(y[free] - wx[free])), n_Sp, n_Sm
    if n_Sm >= n_Sp:
        parts = [-1.0 - wx[at_C & (y < 0)], 1.0 - wx[at_0 & (y > 0)]]
        return float(max(p.max() for p in parts if p.size)), n_Sp, n_Sm
    parts = [-1.0 - wx[at_0 & (y < 0)], 1.0 - wx[at_C & (y > 0)]]
    return float(min(p.min() for p in parts if p.size)), n_Sp, n_Sm


def bound_b_check(run_dir: Path, data: ReportData, root: str | None) -> pd.DataFrame:
    """Per entry and fold of the under-fitting point (UNDERFIT_ENTRIES: C=0.1, gamma=1e-4 at tol
    1e-13): the b rule, |S+|, |S-|, [L, U], our b and theirs (their Section I.D: the mean over the
    free support vectors when there are any, as ours; else L if |S-| >= |S+|, U otherwise), and
    whether the two b classify the validation rows alike; from the kept alphas and the fold's
    rows (read from the store)."""
    from solvers.kernel_dual import intercept
    from solvers.kernels import kernel_block

    from ..results.tables import read_shards
    from ..data.store import default_store_root
    from ..engine.tasks import problem_of, fold_data
    fits = data.fits[data.fits["solver_entry"].isin(UNDERFIT_ENTRIES)]
    if fits.empty:
        raise Skip(f"no fit of {', '.join(UNDERFIT_ENTRIES)}")
    fits = fits.merge(data.models, on="key", suffixes=("", "_model"))
    if fits.empty:
        raise Skip("no kept model of the under-fitting case (run.keep_models=true)")
    rows = []
    for r in fits.itertuples():
        shard = read_shards(run_dir, {r.key})
        if not shard:
            raise Skip(f"no shard of {r.key} in {run_dir}: the fold's rows cannot be found")
        spec = shard[0]["spec"]
        X_tr, y_tr, X_va, y_va, _ = fold_data(str(root or default_store_root()), spec["data"], spec["fold"])
        problem = problem_of(spec["problem"], X_tr, y_tr)
        alpha = np.zeros(len(y_tr))
        alpha[np.asarray(r.support, dtype=int)] = np.asarray(r.alpha, dtype=float)
        G = y_tr * (kernel_block(problem.kernel, problem.X, problem.X) @ (alpha * y_tr)) - 1.0
        b_ours, rule, (L, U) = intercept(G, alpha, y_tr, problem.C)
        b_theirs, n_Sp, n_Sm = their_b(G, alpha, y_tr, problem.C)
        at_C = alpha >= problem.C
        f = problem.decision(SimpleNamespace(w=None, alpha=alpha, b=0.0), X_va)
        rows.append({"entry": r.solver_entry, "C": float(r.C), "fold": spec["fold"], "status": r.status, "m_minus_M": r.kkt_violation,
                     "rule": rule, "n_free": int(np.count_nonzero((alpha > 0) & ~at_C)),
                     "n_S+": n_Sp, "n_S-": n_Sm, "L": L, "U": U, "b_ours": b_ours, "b_model": float(r.b),
                     "b_theirs": b_theirs, "same_predictions": bool(np.array_equal(f + b_ours > 0, f + b_theirs > 0)),
                     "val_ours": 100 * float(np.mean(np.where(f + b_ours > 0, 1.0, -1.0) == y_va)),
                     "val_theirs": 100 * float(np.mean(np.where(f + b_theirs > 0, 1.0, -1.0) == y_va))})
    return pd.DataFrame(rows).sort_values(["entry", "C", "fold"], ascending=[False, True, True]).reset_index(drop=True)


def ova_summary(results: pd.DataFrame) -> dict | None:
    fits = results[(results["solver_entry"] == OVA_ENTRY) & (results["status"] != "error")]
    if fits.empty or "heldout_accuracy" not in fits.columns:
        return None
    fits = fits.sort_values("fold") if "fold" in fits.columns else fits
    return {"test": 100 * float(fits["heldout_accuracy"].mean()), "test_reps": tuple(100 * fits["heldout_accuracy"]),
            "val": 100 * float(fits["test_accuracy"].mean()),
            "folds": len(fits), "converged": int((fits["status"] == "converged").sum())}


# ------------------------------------------------------------------------------ tables
def _p(v, digits=2):
    return "" if not math.isfinite(v) else f"{v:.{digits}f}"


def table1(grid) -> pd.DataFrame:
    rows = []
    for k, row in best_points(grid).items():
        C, h, val = TABLE1[k]
        rows.append({"kernel": KERNEL_NAME[k], "paper: C": fmt(C), "paper: gamma (degree)": fmt(h),
                     "paper: validation %": _p(val), "ours: best C": fmt(row.C), "ours: best gamma (degree)": fmt(row.h),
                     "ours: validation %": _p(row.val), "ours at their point: validation %":
                     _p(_one(grid, "val", kernel=k, C=C, h=h))})
    return pd.DataFrame(rows)


def accuracy_table(methods, grid) -> pd.DataFrame:
    rows = []
    best = best_points(grid)
    for m in METHODS:
        for k in KERNELS:
            t, tr, va, te = ACCURACY[m][k]
            r = method_row(methods, m, k)
            rows.append({"table": t, "method": m, "kernel": KERNEL_NAME[k], "paper: train / val / test %":
                         " / ".join(_p(v) or "-" for v in (tr, va, te)),
                         "ours: train / val / test %":
                         "" if r is None else " / ".join(_p(v) for v in (r.train, r.val, r.test))})
    for k, row in best.items():
        rows.append({"table": "", "method": "smo (grid, tol 1e-3)", "kernel": f"{KERNEL_NAME[k]} at our best point",
                     "paper: train / val / test %": "",
                     "ours: train / val / test %": " / ".join(_p(v) for v in (row.train, row.val, row.test))})
    return pd.DataFrame(rows)


def optim_table(methods) -> pd.DataFrame:
    rows = []
    for m in METHODS:
        for k in KERNELS:
            t, it, f0, f, kkt = OPTIM[m][k]
            r = method_row(methods, m, k)
            row = {"table": t, "method": m + (f" (q={BEST_Q[k][0]})" if m == "svmlight" else ""),
                   "kernel": KERNEL_NAME[k], "paper: iterations": it, "paper: f(alpha_0)": fmt(f0),
                   "paper: f(alpha*)": fmt(f), "paper: m* - M*": fmt(kkt)}
            if r is not None:
                row.update({"ours: iterations": f"{r.n_iter:.0f}", "ours: f(alpha_0)": fmt(r.f0),
                            "ours: f(alpha*)": f"{r.f_star:.8g}", "ours: m* - M* (worst)": fmt(r.kkt),
                            "ours: time (ms)": f"{1e3 * r.time_s:.3g}", "ours: status": r.statuses})
            rows.append(row)
    return pd.DataFrame(rows)


def q_table(methods) -> pd.DataFrame:
    sv = methods[methods["method"] == "svmlight"].sort_values(["kernel", "q"])
    return pd.DataFrame({"kernel": sv["kernel"].map(KERNEL_NAME), "q": sv["q"].map(lambda v: f"{v:.0f}"),
                         "time (ms, median)": (1e3 * sv["time_s"]).map(lambda v: f"{v:.3g}"),
                         "subproblems (median)": sv["n_iter"].map(lambda v: f"{v:.0f}"),
                         "proximal steps (total; folds)": [f"{a:.0f}; {b:.0f}" for a, b in zip(sv["n_prox"], sv["prox_folds"])],
                         "by pair steps (median)": sv["pair_solves"].map(lambda v: "" if not math.isfinite(v) else f"{v:.0f}"),
                         "m - M (worst)": sv["kkt"].map(fmt), "status": sv["statuses"]})


def summary_table(methods) -> pd.DataFrame:
    """Tables XV and XVI: per method, their C, gamma, q, accuracies, KKT and time beside ours."""
    rows = []
    for k in KERNELS:
        C, h, _ = TABLE1[k]
        for m in METHODS:
            r = method_row(methods, m, k)
            _, tr, _, te = ACCURACY[m][k]
            row = {"kernel": KERNEL_NAME[k], "method": m, "paper: C, gamma (degree), q": f"{fmt(C)}, {fmt(h)}, "
                   + {"qp": "1600 (all)", "svmlight": str(BEST_Q[k][0]), "smo": "2"}[m],
                   "paper: train / test %": f"{_p(tr)} / {_p(te)}", "paper: KKT": fmt(OPTIM[m][k][4]),
                   "paper: time": f"~{fmt(TIMES[m][k])} s"}
            if r is not None:
                q = {"qp": "all", "svmlight": f"{r.q:.0f}", "smo": "2"}[m]
                row.update({"ours: C, gamma (degree), q": f"{fmt(r.C)}, {fmt(r.h)}, {q}",
                            "ours: train / test %": f"{_p(r.train)} / {_p(r.test)}", "ours: KKT (worst)": fmt(r.kkt),
                            "ours: time (ms, median)": f"{1e3 * r.time_s:.3g}", "ours: status": r.statuses})
            rows.append(row)
    return pd.DataFrame(rows)


def bound_table(check: pd.DataFrame) -> pd.DataFrame:
    out = check[["entry", "C", "fold", "status", "m_minus_M", "rule", "n_free", "n_S+", "n_S-", "L", "U", "b_ours",
                 "b_theirs", "val_ours", "val_theirs"]]
    return out.rename(columns={"m_minus_M": "m - M", "rule": "b rule", "n_free": "free SVs", "b_ours": "our b",
                               "b_theirs": "their b", "val_ours": "validation %, our b",
                               "val_theirs": "validation %, their b"})


# ------------------------------------------------------------------------------ figures
def _only(data: ReportData, entries, **assign) -> ReportData:
    fits = data.results[data.results["solver_entry"].isin(entries)]
    if fits.empty:
        raise Skip(f"no fit of {', '.join(entries)}")
    return ReportData(fits.assign(**{k: f(fits) for k, f in assign.items()}), data.traces, data.models, name=data.name)


def fig_accuracy_vs_C(data: ReportData):
    """Figure 3 (Gaussian) with the polynomial panel beside it: validation accuracy (%) against C,
    a line per gamma or degree in the paper's words, bars the fold range (min to max, so never
    past 100%), their Table I point marked."""
    fits = data.results[data.results["solver_entry"].isin(GRID_ENTRIES) & (data.results["status"] != "error")]
    if fits.empty:
        raise Skip("no grid fit")
    fig, axes = panel_grid(2, width=5.0, height=3.8)
    for ax, (entry, k) in zip(axes, GRID_ENTRIES.items()):
        sub = fits[fits["solver_entry"] == entry]
        sub = sub.assign(h=_num(sub, "degree" if k == "poly" else "gamma"), acc=100 * sub["test_accuracy"])
        groups = list(sub.groupby("h"))
        for (h, g), style in zip(groups, styles(len(groups))):
            m = g.groupby("C")["acc"].agg(["mean", "min", "max"])
            ax.errorbar(m.index, m["mean"], yerr=[m["mean"] - m["min"], m["max"] - m["mean"]], capsize=2,
                        markersize=4, label=f"{HYPER[k]} = {fmt(h)}", **style)
        C, h, theirs = TABLE1[k]
        ax.plot([C], [theirs], marker="*", markersize=11, color="k", linestyle="none",
                label=f"theirs: C={fmt(C)}, {HYPER[k]}={fmt(h)}, {theirs:.2f}%")
        ax.set_xscale("log")
        ax.set_ylim(top=min(ax.get_ylim()[1], 100.5))      # a percentage: no room above 100 is needed
        ax.set_xlabel("C")
        ax.set_ylabel("validation accuracy, % (mean of 5 folds)")
        ax.set_title(f"{KERNEL_NAME[k]} kernel" + (" (their Fig. 3)" if k == "rbf" else ""), fontsize=9)
        ax.legend(fontsize=6.5, loc="lower right")
    fig.suptitle("Validation accuracy against C; bars: min to max over the folds", fontsize=9)
    return fig


def fig_heatmap(data: ReportData, entry: str):
    # The map's second axis is `gamma`: the polynomial's degree takes its place (and leaves the keys).
    sub = _only(data, [entry], **({"gamma": lambda f: f["degree"], "degree": lambda f: None}
                                  if entry == "grid_poly" else {}))
    fig = c_gamma_heatmap(sub)
    fig.set_size_inches(8.5, 4.2)       # 13 C values: the cells' numbers need the width
    for ax in fig.axes:
        # One format on both axes of the map (the report's `fmt` writes 1e+04 beside 1.000e+05, 0.001
        # beside 5.000e-04); the colour bar keeps its own.
        for axis, set_labels in ((ax.xaxis, ax.set_xticklabels), (ax.yaxis, ax.set_yticklabels)) if ax.images else ():
            texts = [t.get_text() for t in axis.get_ticklabels()]
            try:
                values = [float(t) for t in texts]
            except ValueError:
                continue
            if values:
                set_labels([f"{v:g}" for v in values], **({"rotation": 45} if axis is ax.xaxis else {}))
        if ax.get_ylabel() == "test accuracy":      # the colour bar: a fold's "test" is its validation fold here
            ax.set_ylabel("validation accuracy")
        if ax.get_ylabel() == "gamma" and entry == "grid_poly":
            ax.set_ylabel("degree (their gamma)")
        if ax.get_title():
            ax.set_title(f"{KERNEL_NAME[GRID_ENTRIES[entry]]}: validation accuracy, C x "
                         f"{HYPER[GRID_ENTRIES[entry]]}", fontsize=9)
    return fig


# The q ticks of Figures 2 and 4: the sweep's ends, their q (70, 100) and a few between, a factor
# of 2 or more apart on the log axis, so no two labels touch.
Q_TICKS = (2, 4, 10, 20, 40, 70, 100, 200, 400, 800, 1280)


def fig_time_vs_q(methods: pd.DataFrame):
    """Figures 2 and 4: svmlight's time against q, a panel per kernel on the same log-log axes:
    the median over the 5 folds, a band from the fastest to the slowest fold (the verdicts pair the
    folds), each fold's time as a dot; their best q marked, and a red x where a proximal step was taken."""
    from matplotlib.ticker import FixedLocator, NullLocator
    sv = methods[methods["method"] == "svmlight"].sort_values("q")
    if sv.empty:
        raise Skip("no svmlight fit")
    fig, axes = panel_grid(2, width=5.2, height=3.9)
    ys = [t for reps in sv["time_reps"] for t in reps if t > 0]
    for ax, k in zip(axes, ("rbf", "poly")):
        rows = sv[sv["kernel"] == k]
        if rows.empty:
            ax.set_visible(False)
            continue
        q = rows["q"].to_numpy(float)
        reps = [np.asarray(r, float) for r in rows["time_reps"]]
        ax.fill_between(q, [r.min() for r in reps], [r.max() for r in reps], color="tab:blue", alpha=0.2,
                        label="fastest to slowest fold")
        for x, r in zip(q, reps):
            ax.plot(np.full(len(r), x), r, ".", color="tab:blue", alpha=0.5, markersize=3)
        ax.plot(q, [np.median(r) for r in reps], "o-", color="tab:blue", markersize=4, label="median over the folds")
        for r in rows.itertuples():
            if r.n_prox > 0:
                ax.plot([r.q], [r.time_s], "rx", markersize=10, label="a proximal step taken")
            if r.converged < r.runs:
                ax.annotate(r.statuses, (r.q, r.time_s), fontsize=6, textcoords="offset points", xytext=(4, 4))
        ax.axvline(BEST_Q[k][0], color="tab:green", linestyle="--", linewidth=1,
                   label=f"their best q (Table VI: {BEST_Q['rbf'][0]} Gaussian, {BEST_Q['poly'][0]} polynomial)")
        decorate(ax, f"{KERNEL_NAME[k]}, {point_text(methods, k)} (their Fig. {4 if k == 'rbf' else 2})",
                  "working-set size q", "fit time (s)", 0, logx=True, logy=True)
        ax.set_ylim(min(ys) / 1.3, max(ys) * 1.3)
        ax.xaxis.set_major_locator(FixedLocator([t for t in Q_TICKS if q.min() <= t <= q.max()]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(t) for t in Q_TICKS if q.min() <= t <= q.max()])
        log_ticks(ax, x=False, y=True)
    figure_legend(fig, [a for a in axes if a.get_visible()])
    fig.suptitle(f"svmlight on MNIST 3 against 8, tol {TOL:g}: time against q ({int(sv['n_prox'].sum())} proximal "
                 "steps in all)", fontsize=10)
    return fig


def fig_confusion(data: ReportData, classes=("3", "5", "8")):
    """Figure 5: the one-vs-all confusion matrix on the held-out test digits, fold 0's model."""
    fits = data.results[(data.results["solver_entry"] == OVA_ENTRY) & (data.results["fold"] == 0)]
    if fits.empty or "confusion_heldout" not in fits.columns:
        raise Skip("no one-vs-all fit with a held-out confusion matrix")
    fig = confusion_matrices(ReportData(fits.assign(confusion_test=fits["confusion_heldout"]), data.traces,
                                        name=data.name))
    ax = fig.axes[0]
    ax.set_xticks(range(len(classes)), classes)
    ax.set_yticks(range(len(classes)), classes)
    ax.set_xlabel("predicted digit")
    ax.set_ylabel("true digit")
    n = int(np.sum(json.loads(fits["confusion_heldout"].iloc[0])))
    ax.set_title(f"one-vs-all, svmlight poly C=1000 degree 2:\nheld-out test set ({n} digits), fold 0's model",
                 fontsize=9)
    return fig


FIGURES = {
    "fig3_accuracy_vs_C": ("Figure 3: validation accuracy against C",
                           "Mean validation accuracy of the 5 folds (bars: the folds' min to max) over their C grid, a "
                           "line per gamma (Gaussian, their Figure 3) and per degree (polynomial: their 'gamma'), "
                           "smo at tol 1e-3; the star is their Table I point and score."),
    "heatmap_rbf": ("C x gamma (Gaussian)", "Mean validation accuracy over their grid (their Table I point: C=5000, "
                    "gamma=1e-3)."),
    "heatmap_poly": ("C x degree (polynomial)", "Mean validation accuracy; their polynomial 'gamma' is the degree."),
    "fig2_4_time_vs_q": ("Figures 2 and 4: svmlight's time against q",
                         f"Fit time on MNIST 3 against 8 (1280 training rows) at the points of Setup, tol {TOL:g}, both "
                         "panels on the same log-log axes: the median of the 5 folds (line), each fold (dots) and the "
                         "band from the fastest to the slowest fold, which the q verdicts pair fold by fold; the dashed "
                         "line is their best q. Their spikes came from the proximal-point restarts (a red x marks a q "
                         "where ours took a proximal step)."),
    "fig5_confusion": ("Figure 5: one-vs-all confusion matrix (test set)",
                       "svmlight (q=100) one-vs-all over digits 3, 5, 8 at the polynomial Table I point; rows: true digit."),
}


def figures(data: ReportData, methods) -> dict:
    return draw_figures({
        "fig3_accuracy_vs_C": lambda: fig_accuracy_vs_C(data),
        "heatmap_rbf": lambda: fig_heatmap(data, "grid_rbf"),
        "heatmap_poly": lambda: fig_heatmap(data, "grid_poly"),
        "fig2_4_time_vs_q": lambda: fig_time_vs_q(methods),
        "fig5_confusion": lambda: fig_confusion(data)})


# ------------------------------------------------------------------------------ the README
def _points_note(grid, methods) -> list[str]:
    """Setup's paragraph on the methods' points: which are theirs, which ours, and why."""
    at = _one(grid, "val", kernel="rbf", C=TABLE1["rbf"][0], h=TABLE1["rbf"][1])
    best = best_points(grid).get("rbf")
    chosen = _cells(grid, kernel="rbf", h=float(methods.loc[methods["kernel"] == "rbf", "h"].iloc[0])) \
        if (methods["kernel"] == "rbf").any() else grid.iloc[0:0]
    return [
        f"- The methods' points (Tables II-XVI): polynomial {point_text(methods, 'poly')} is theirs, (x'z + 1)^2 "
        "on [0, 1] pixels. The Gaussian's C is theirs, its **gamma is ours**: two of these images are 42-160 apart "
        "in squared distance (1st-99th percentile over 300 training images, median 97), so their gamma=1e-3 "
        "leaves the kernel at 0.85-0.96 for every pair, nearly constant, while gamma=0.01, about 1 / the median, "
        "spreads it over 0.20-0.65"
        + (f"; on our Table I grid the best gamma is {fmt(best.h)} ({best.val:.2f}% at C={fmt(best.C)}), best "
           f"over C at the methods' gamma {chosen['val'].max():.2f}%, at their point {at:.2f}%"
           if best is not None and len(chosen) else "")
        + ". The grid is theirs (C and gamma lists of Table I) and runs on the same folds as the methods."]


def _q_range(methods) -> str:
    qs = methods.loc[methods["method"] == "svmlight", "q"].dropna()
    return f"from {qs.min():.0f} to {qs.max():.0f}" if len(qs) else "(not run)"


def _setup(results: pd.DataFrame) -> dict:
    rows = results.groupby("dataset")[["n_train", "n_test"]].median()
    held = results.groupby("dataset")["n_heldout"].median() if "n_heldout" in results.columns else {}
    return {"fits": len(results),
            "rows": ", ".join(f"{d}: {int(r.n_train)} train / {int(r.n_test)} validation per fold, "
                              f"{int(held.get(d, 0))} test" for d, r in rows.iterrows())}


def readme(grid, methods, found, check, figs, skipped, setup) -> str:
    out = [
        "# Reproduction: bertini\n",
        'N. Bertini, L. Chichiriccò and F. Ciccarelli, "Project #2 - Support Vector Machines", Optimization Methods '
        "for Machine Learning, Sapienza University of Rome, Fall 2022. Written by `python -m pipeline "
        "+experiment=bertini` (`make papers`) from the run's tables; regenerate rather than edit. "
        f"This run: {setup.get('fits', '?')} fits.\n",
        "## Findings\n", *findings_table(found), "", *data_lines(RULES),
        *sensitivity_lines(RULES, sensitivity_findings(grid)),
        "## Setup, and how it differs from theirs\n",
        "- Data: their dataset is not named (their 400 test rows and 1600 training rows point to 2000 images). "
        f"Every binary part (the grids of Table I and Figure 3, the under-fitting case, Tables II-XVI, the q sweep) "
        f"runs on **MNIST 3 against 8** (`{MNIST}`, a stratified, seeded sample of 2000 of its 13,966 images, 784 "
        "pixels / 255 in [0, 1]), so a fold trains on 1280 rows and q reaches the whole fold, as their q reaches "
        "1600 (Table XV's Q1). The one-vs-all (Figure 5) runs on scikit-learn's 8x8 handwritten digits **3, 5 and "
        "8** (539 rows, pixels 0..16).",
        *_points_note(grid, methods),
        "- Split (train / validation / test): a stratified 20% test set is held out, 5-fold stratified CV runs on "
        "the other 80% (`cv=kfold_test`); train and validation accuracies are means over the folds, and the test "
        "accuracy is the mean of the 5 fold models on the held-out rows (no refit on the whole 80%). "
        f"Rows: {setup.get('rows', '')}.",
        "- Kernels: Gaussian exp(-gamma ||x - z||^2); polynomial (x'z + 1)^d, i.e. our poly kernel with gamma 1, "
        "coef0 1 and degree d (their polynomial 'gamma' is the degree).",
        "- Grid (Table I, Figure 3, the maps): their C and gamma lists, 13 x 6 Gaussian and 13 x 5 polynomial points, "
        "each fold solved by our `smo` at tol 1e-3 on m - M (LIBSVM's). They used CVXOPT on the whole QP; the "
        "accuracy of a point is its optimum's, whichever method reaches it (the findings on convergence and the same optimum).",
        "- Methods (Tables IV-XVI): `qp` (one interior point solve of the whole dual, polished to its exact face), "
        f"`svmlight` (q-variable subproblems from the most violating sets, tau = 1, q swept {_q_range(methods)}), "
        "`smo` with the most violating pair and without shrinking (their SMO), each at the points above "
        f"(Gaussian {point_text(methods, 'rbf')}; polynomial {point_text(methods, 'poly')}), at tol {TOL:g} on "
        "m - M, about where theirs end "
        "(5.6e-15 to 4.5e-13); svmlight is capped at 20,000 subproblems. Iterations: IPM iterations, "
        "subproblems, pair steps. f(alpha_0) is the dual at the starting point: 0 for svmlight and smo (alpha = 0), "
        "qp starts inside the box (alpha = C/2), theirs (CVXOPT's) elsewhere.",
        "- Proximal point: theirs reruns the whole solve with the PPD term once standard SVMlight fails; ours adds "
        "tau ||alpha_W - alpha_W^k||^2 to a subproblem exactly when its Q_WW is not positive definite (a Cholesky "
        "pivot^2 under 1e-10 of its largest diagonal), per subproblem, and counts those steps (`info_n_proximal`).",
        "- b: from the free support vectors (their first formula); with none, both rules confine b to [L, U] (their "
        "Section I.D); theirs takes L or U by |S-| against |S+|, ours the midpoint (LIBSVM's choice). Where b is "
        "taken in [L, U] is a choice of method, not a claim: every b there minimises the primal. It is shown in "
        "the under-fitting table below (their b beside ours, and whether the two classify the validation rows "
        "alike), not judged.",
        "- Times are solver seconds, one fit at a time (`cluster=sequential`) on a 2-core machine shared with other "
        "work. Within each fold, a kernel's qp, smo and svmlight q sweep run back to back (the experiment's entry "
        "order), so a timing verdict pairs two times of one fold taken close together, and its interval is over the "
        "5 folds; iteration counts are exact.", "",
        "## Table I: the CV grid's best point\n", markdown_table(table1(grid)),
        "## Tables II, III, VII, VIII, XI, XII: accuracy\n",
        f"Per method on MNIST 3 against 8 at the points of Setup (Gaussian {point_text(methods, 'rbf')}, "
        f"polynomial {point_text(methods, 'poly')}); the last rows are the grid's own best point.\n",
        markdown_table(accuracy_table(methods, grid)),
        "## Tables IV, V, IX, X, XIII, XIV: optimisation\n",
        "Medians over the 5 folds (m - M: the worst); svmlight at their best q (Table VI).\n",
        markdown_table(optim_table(methods)),
        "## Table VI and Figures 2, 4: svmlight against q\n",
        f"Their Table VI: best q {BEST_Q['rbf'][0]} Gaussian ({BEST_Q['rbf'][1]}), {BEST_Q['poly'][0]} polynomial "
        f"({BEST_Q['poly'][1]}). Ours per q on MNIST 3 against 8 (1280 training rows a fold) at the points of "
        f"Setup, tol {TOL:g}: median time and subproblems over the "
        "5 folds, proximal steps, subproblems answered by the one pair step (every one at q = 2; at q > 2 the "
        "answer failed the decrease test), the worst m - M.\n",
        markdown_table(q_table(methods)),
        "## The under-fitting case: gamma = 1e-4, C = 0.1 (theirs) and 0.05\n",
        ("Per fold, from the kept alphas: the sets S+- (alpha = C) and the interval [L, U] that the KKT conditions "
         "leave b (their Section I.D), our b and theirs, and the validation accuracy with each.\n"
         if check is not None else "_Not checked: no kept model of this point._\n"),
        markdown_table(bound_table(check)) if check is not None else "", *_underfit_notes(check),
        "## Tables XV, XVI: summary per method\n", markdown_table(summary_table(methods)),
        "## Figures\n", *figure_lines(FIGURES, figs, skipped),
        "## Not reproduced\n",
        "- Figure 1 (\"Performances of qp_ solvers alternative solvers\"): it compares the QP libraries they tried "
        "for the whole dual (CVXOPT against others); here the whole dual has one solver, our `qp`, so there is "
        "nothing to set beside it.",
        "- Table XVI's Q4 row (C=2, gamma=1000, q=100, test 99.5%, KKT n.d., ~5 s): it is their one-vs-all "
        "classifier of Section V, with hyperparameters that disagree with their own Table I (C=1000, degree 2) "
        "and no KKT value; ours is the last finding and Figure 5, at Table I's point, set beside its 99.5%.\n",
        *changes_lines(RULES)]
    return "\n".join(out) + "\n"


def _underfit_notes(check) -> list[str]:
    """What the under-fitting table shows beyond the findings: a qp that stopped short there."""
    if check is None:
        return []
    qp = check[check["entry"] == "qp_underfit"]
    short = qp[qp["status"] != "converged"]
    if short.empty:
        return []
    smo = check[check["entry"] == "smo_underfit"].set_index(["C", "fold"])
    bound = sum(smo.loc[(r.C, r.fold), "rule"] == "bound_only" for r in short.itertuples() if (r.C, r.fold) in smo.index)
    return [f"qp ends `{short['status'].iloc[0]}` in {len(short)} of {len(qp)} of these solves (m - M up to "
            f"{short['m_minus_M'].max():.3g}), {bound} of them where smo's optimum has no free alpha: there "
            "its interior point stalls and its active-set polish is refused (why is not analysed here), so its "
            "b and accuracy are those of the stalled iterate; flagged, not fixed in this reproduction.\n"]


@paper(NAME)
def write(run_dir: Path, out: Path, root: str | None = None) -> Path:
    data = load(run_dir)
    grid, methods = summarise_grid(data.results), summarise_methods(data.results)
    try:
        check = bound_b_check(run_dir, data, root)
    except (Skip, OSError, ValueError):
        check = None
    figs, skipped = save_figures(figures(data, methods), out)
    found = findings(grid, methods, check, ova_summary(data.results))
    (out / "README.md").write_text(with_costs(readme(grid, methods, found, check, figs, skipped, _setup(data.results)),
                                               run_dir, root, data.results))
    return out / "README.md"
