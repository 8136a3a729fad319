"""rupnik: J. Rupnik, "Stochastic Subgradient Approach for Solving Linear Support Vector Machines -
an Overview", Jozef Stefan Institute, 2008. Writes Section 4.3 (Pegasos's relative gap to a
certified optimum: iterations and seconds to 0.3% and 0.1%), Figures 2-4 (random starts, test
error against iterations, k against T at fixed kT with and without advancing t on steps without
violators), each of the paper's findings marked holds or differs, from a run of
conf/experiment/rupnik.yaml.

The findings are functions of three summary tables built from the run's Parquet tables (so they
can be checked on hand-made ones): `convergence` (one row per dataset x entry `pegasos` / `dcd`),
`starts` (one row per dataset x sampling seed: how far the random starts' objectives ever differ),
and `k_vs_T` (one row per dataset x lazy_t x kT x k).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.common import fmt, styles
from ..report.figures import _decorate, _log_ticks, _panels, _value_ticks, figure_legend
from ..report.registry import ReportData, Skip
from ..report.tables import to_targets
from . import paper
from .claims import (LEVEL, OTHER, REFEREE_WHY, STAND_IN, VOCABULARY_WHY, Cell, Claim, Estimate, Finding, RuleChange,
                     StudyRules, changes_lines, difference_over, discordant, exact, judge, paired_rows, ratio_over)
from .common import (draw_figures, figure_lines, header_lines, load, predictions, save_figures, table_lines,
                     with_costs)

NAME = "rupnik"
PEGASOS, EXACT, STARTS, KT = "pegasos", "dcd", "pegasos_starts", "pegasos_kT"
AT_50 = "pegasos_at50"                    # Section 4.4: the iterate after exactly 50 steps, kept (run.keep_models)
TARGETS = (3e-3, 1e-3)                    # Section 4.3: within 0.3% and 0.1% of the optimum
# Section 4.3: k = 8000, lambda = 1e-4; 200 iterations (9.2 CPU seconds) to 0.3%, 560 to 0.1%;
# SVMlight's optimum took about four hours of CPU time.
THEIRS_IT = {3e-3: 200, 1e-3: 560}
THEIRS_S_03 = 9.2
THEIRS_EXACT_H = 4.0
# Section 4.4 / Figure 3: 5.8% test error within 50 iterations; SVMlight 5.6%.
THEIRS_ERR_50, THEIRS_ERR_EXACT, AT_IT = 5.8, 5.6, 50
# The dated log of this study's rule changes (claims.RuleChange; README "Changes to the rules").
CHANGES = (
    RuleChange(
        "2026-11-27", "75e86b5bfdd196a6",
        # what changed
        "the shared claim vocabulary; rotten_tomatoes declared not the paper's problem (lambda = 1e-4 on its "
        "rows is C = 0.90, 63 times RCV1's), judged in no finding (was not comparable in two findings and "
        "judged in six); the random starts shown as by construction (Pegasos's first step erases the start); "
        "Section 4.3's iterations within 1.5x theirs over 5 batch seeds (was 2x, one seed); 'the exact solver "
        "is the slow one' like for like: dcd's examples to the same target against Pegasos's, at least 10x "
        "(was Pegasos's work to 0.1% under dcd's to its certified optimum); test error nearly equal within "
        "2.5 pp with its interval (was 0.5 pp, one-sided); the k sweep over 3 batch seeds, 'slows', 'lies "
        "below' and lazy t's gain above 1.1x with their intervals (was 2x on one seed); 'only kT matters' "
        "(Shalev-Shwartz et al.'s, which the paper's Figure 4 contradicts) no longer a finding of the paper; "
        "the lazy-t claim split in its two parts",
        VOCABULARY_WHY,
        # the verdicts before
        "on RCV1-like / rotten_tomatoes: starts holds / holds, 0.3% and 0.1% iterations holds / not "
        "comparable, exact solver slow holds / differs, test error holds / not comparable, small k slows "
        "differs / differs, only kT matters holds / differs, larger kT lower holds / holds, lazy t differs / "
        "differs",
        # the verdicts after
        "1 starts by construction, 2 Section 4.3's iterations holds, 3 the exact solver far slower differs "
        "(like for like, dcd visits about as many examples as Pegasos to 0.3% and fewer to 0.1%), 4 test error holds, 5 "
        "small k slows differs, 6 larger kT lower holds, 7 lazy t better differs, 8 lazy t still slower "
        "holds; all judged on the RCV1-like set, rotten_tomatoes shown beside"),
    RuleChange(
        "2026-11-28", "fd77de311a0add48",
        # what changed
        "every interval over repeats with Student's t on n - 1 degrees of freedom, and an interval wider than a "
        "finite band 'below detectable power' (the vocabulary); 2 (200 and 560 iterations) is a level of RCV1, "
        "not comparable on the RCV1-like stand-in (was judged as a mechanism), and its mechanism is a new "
        "finding 9: the iterations to 0.1% over those to 0.3%, about their 2.8x (Pegasos's rate, on any data); "
        "4 judged on the test rows Pegasos after exactly 50 steps (a new entry, pegasos_at50, its model kept: "
        "run.keep_models) and the exact solver classify differently, McNemar's pairing with Student's t over the "
        "5 batch seeds (was the traced error at the last point at or before 50, iteration 47, with an unpaired "
        "error of two test sets and the normal quantile, though the test set is one); 6 (3x the examples, a "
        "lower gap) shown as by construction (Pegasos's rate in the steps); 8 judged only where 7 holds (it "
        "held only because 7, its 'although', failed)",
        REFEREE_WHY,
        # the verdicts before
        "1 by construction, 2 holds, 3 differs, 4 holds, 5 differs, 6 holds, 7 differs, 8 holds",
        # the verdicts after (a regeneration at load average 16-33 on 2 cores; no verdict here is a timing)
        "1 by construction, 2 not comparable (ours 240 and 715 iterations, shown), 3 differs, 4 holds (+0.39 pp "
        "[+0.25, +0.52] on the 104,414 test rows; the cut at 50 iterations sits on a cliff, said beside it), 5 "
        "differs, 6 by construction, 7 differs, 8 premise not met (7 differs), 9 holds (2.93x [2.80, 3.07] "
        "against their 2.8x)"),
)
PAPER_DATA = {"rcv1_full": "RCV1-like (RCV1's size)", "rotten_tomatoes": "rotten_tomatoes (real text)"}


def _name(ds: str) -> str:
    return PAPER_DATA.get(ds, ds)


# ------------------------------------------------------------------------------ summaries
def _fits(data: ReportData, entry: str) -> pd.DataFrame:
    return data.fits[data.fits["solver_entry"] == entry]


def _at_iteration(tr: pd.DataFrame, col: str, it: int) -> tuple[float, float]:
    """(iteration, value) of the last trace point at or before `it` with a value."""
    tr = tr[(tr["iteration"] <= it) & tr[col].notna()]
    if tr.empty:
        return math.nan, math.nan
    last = tr.sort_values("iteration").iloc[-1]
    return float(last["iteration"]), float(last[col])


def convergence(data: ReportData) -> pd.DataFrame:
    """One row per dataset x entry (pegasos, dcd) x batch seed (random_state): status, iterations and
    solver seconds, the final (P - f*)/|f*|, how well f* is known, the first trace iteration and
    second at which the gap is within 0.3% and 0.1%, the final test error and (pegasos) the test
    error at 50 iterations, in %, and the work counts (k; dcd's coordinate updates)."""
    fits = data.fits[data.fits["solver_entry"].isin((PEGASOS, EXACT))]
    cols = ["dataset", "solver_entry", "random_state", "status", "n_iter", "fit_time_s", "rel_subopt", "f_star_rel_gap",
            "f_star_status", "f_star_solver"] + [f"{p}_{e:g}" for e in TARGETS for p in ("it", "t")] + [
            "test_err", "err_it", "test_err_at", "n_train", "n_test", "lambda", "k", "n_updates"]
    if fits.empty or "f_star" not in fits.columns:
        return pd.DataFrame(columns=cols)
    fits = fits[fits["f_star"].notna()]
    hit = to_targets(fits, data.traces, TARGETS).set_index("key")
    by_key = {k: g for k, g in data.traces.groupby("key")}
    rows = []
    for r in fits.itertuples(index=False):
        tr = by_key.get(r.key, pd.DataFrame(columns=["iteration", "test_error"]))
        err_it, err = (_at_iteration(tr, "test_error", AT_IT) if "test_error" in tr.columns
                       else (math.nan, math.nan))
        row = {"dataset": r.dataset, "solver_entry": r.solver_entry, "status": r.status, "n_iter": r.n_iter,
               "random_state": _number(getattr(r, "param_random_state", 0.0)),
               "fit_time_s": r.fit_time_s, "rel_subopt": r.rel_suboptimality,
               "f_star_rel_gap": r.f_star_rel_gap, "f_star_status": r.f_star_status,
               "f_star_solver": r.f_star_solver, "test_err": 100.0 * (1.0 - r.test_accuracy),
               "err_it": err_it, "test_err_at": 100.0 * err, "n_train": r.n_train, "n_test": r.n_test,
               "lambda": r.lambda_pegasos,
               # The work of each: Pegasos reads k examples per iteration, dcd one per coordinate update.
               "k": _number(getattr(r, "param_k", math.nan)), "n_updates": _number(getattr(r, "info_n_updates", math.nan))}
        for e in TARGETS:
            row[f"it_{e:g}"] = hit.loc[r.key, f"it_{e:g}"]
            row[f"t_{e:g}"] = hit.loc[r.key, f"t_{e:g}"]
        rows.append(row)
    return pd.DataFrame(rows, columns=cols).sort_values(["dataset", "solver_entry", "random_state"]).reset_index(drop=True)


def _number(v) -> float:
    v = pd.to_numeric(pd.Series([v]), errors="coerce").iloc[0]
    return float(v) if pd.notna(v) else math.nan


def starts(data: ReportData) -> pd.DataFrame:
    """One row per dataset x sampling seed (random_state) of the random-start runs: how many starts
    (init_seed), the largest relative difference of their objectives at any common trace
    iteration, and the final objectives' spread (max - min) / min."""
    fits = _fits(data, STARTS)
    cols = ["dataset", "random_state", "starts", "max_rel_diff", "final_spread", "final_P", "final_gap"]
    if fits.empty or "param_init_seed" not in fits.columns:
        return pd.DataFrame(columns=cols)
    rows = []
    for (ds, rs), grp in fits.groupby(["dataset", "param_random_state"]):
        tr = data.traces[data.traces["key"].isin(grp["key"])]
        P = tr.pivot_table(index="iteration", columns="key", values="primal").dropna()
        diff = ((P.max(axis=1) - P.min(axis=1)) / P.min(axis=1).abs()).max() if len(P) else math.nan
        final = grp["primal_objective"].astype(float)
        gap = grp["rel_suboptimality"].astype(float).median() if "rel_suboptimality" in grp.columns else math.nan
        rows.append({"dataset": ds, "random_state": int(rs), "starts": grp["param_init_seed"].nunique(),
                     "max_rel_diff": float(diff), "final_spread": float((final.max() - final.min()) / abs(final.min())),
                     "final_P": float(final.median()), "final_gap": float(gap)})
    return pd.DataFrame(rows, columns=cols)


def k_vs_T(data: ReportData) -> pd.DataFrame:
    """One row per dataset x lazy_t x epochs (kT = epochs x n_train examples drawn) x k x batch seed
    (random_state): T, the final (P - f*)/|f*|, solver seconds, the steps that advanced t."""
    fits = _fits(data, KT)
    cols = ["dataset", "lazy_t", "epochs", "kT", "k", "random_state", "T", "rel_subopt", "time_s", "steps_t"]
    if fits.empty or "param_k" not in fits.columns:
        return pd.DataFrame(columns=cols)
    info_t = pd.to_numeric(fits["info_t"], errors="coerce") if "info_t" in fits.columns else np.nan
    out = pd.DataFrame({
        # param_lazy_t is a str column ("True", "False", "nan" for the other entries)
        "dataset": fits["dataset"], "lazy_t": fits["param_lazy_t"].astype(str) == "True",
        "epochs": pd.to_numeric(fits["param_epochs"]).astype(int), "k": pd.to_numeric(fits["param_k"]).astype(int),
        "random_state": (pd.to_numeric(fits["param_random_state"], errors="coerce").fillna(0).astype(int)
                         if "param_random_state" in fits.columns else 0),
        "T": pd.to_numeric(fits["info_T"], errors="coerce"), "rel_subopt": fits["rel_suboptimality"].astype(float),
        "time_s": fits["fit_time_s"].astype(float), "steps_t": info_t})
    out["kT"] = out["epochs"] * fits["n_train"].astype(int)
    return out[cols].sort_values(["dataset", "lazy_t", "epochs", "k", "random_state"]).reset_index(drop=True)


# ------------------------------------------------------------------------------ the rules
DATA = (
    ("rcv1_full", STAND_IN, "RCV1 cannot be had offline: our RCV1-like generator at RCV1's size and density, unit "
                            "tf-idf rows, 700,000 training rows, so lambda = 1e-4 is RCV1's C = 1/(lambda n) = 0.014"),
    ("rotten_tomatoes", OTHER, "real text, but the paper's lambda = 1e-4 on its 11,146 training rows is C = 0.90, 63 "
                               "times RCV1's: another problem's regime, shown beside and judged nowhere"),
)
_SEEDS = "5 batch seeds (random_state)"
_KT_SEEDS = "3 batch seeds (random_state)"
RULES = StudyRules(NAME, DATA, (
    Claim("starts", "the behaviour of Pegasos is more or less independent of the choice of initial solution "
          "(Section 4.2, Figure 2)", "same optimum", "the spread of the starts' final objectives on the same "
          "batches, relative", "batch seed", "exact",
          construction="Pegasos's first step has eta_1 lambda = 1, so w_2 = (eta_1 / k) sum y x over the first "
                       "batch's violators: the start w_1 is erased, and survives only in which examples of that "
                       "batch it puts inside the margin"),
    Claim("gap_iterations", "with k = 8000 and lambda = 1e-4 Pegasos is within 0.3% of the optimum after 200 "
          "iterations (9.2 s) and within 0.1% after 560 (Section 4.3)", "within",
          "Pegasos's iterations to within the target of the certified optimum over theirs (a seed that does not "
          "reach it counts at its 1000 iterations, a lower bound)", "target (0.3%: 200, 0.1%: 560)", _SEEDS,
          params=(("of", "iterations"),), scope=LEVEL, printed="200 and 560 iterations (Section 4.3)"),
    Claim("exact_is_slow", "the high-precision solver is the slow one: SVMlight took about four hours of CPU for "
          "the optimum, Pegasos 9.2 s to 0.3% of it (Section 4.3)", "far greater",
          "the exact solver's work over Pegasos's to the same target, in examples visited: dcd's passes to the "
          "target x n (an upper bound: shrinking skips some) against Pegasos's k x iterations; theirs compare "
          "Pegasos at 0.3% with SVMlight at the optimum, ours both at one target", "target (0.3%, 0.1%)", _SEEDS),
    Claim("test_error", "test error reaches the exact solver's early: 5.8% within 50 iterations against 5.6% for "
          "SVMlight (Section 4.4, Figure 3)", "nearly equal",
          "Pegasos's test error after exactly 50 iterations minus the exact solver's (percentage points), from the "
          "test rows the two classify differently", "the test rows", _SEEDS + " on one test set"),
    Claim("small_k_slow", "at fixed kT, setting k too small can slow down convergence (Section 4.5, Figure 4)",
          "greater", "the final (P - f*)/|f*| at the smallest k (1) over the best k's, t advancing",
          "kT (1, 3 and 10 epochs)", _KT_SEEDS),
    Claim("larger_kT", "curves with larger kT lie below those with smaller kT (Section 4.5, Figure 4)", "greater",
          "the final (P - f*)/|f*| at a kT over that at the next larger kT (3x the examples)", "k and kT step",
          _KT_SEEDS,
          construction="at a fixed k, 3x the examples is 3x the steps, and Pegasos's gap bound falls as log(T) / "
                       "(lambda T) in the steps T (Shalev-Shwartz et al. 2007, Corollary 1): 3x the steps lies "
                       "below whatever the data, but for the last iterate's noise"),
    Claim("lazy_better", "not increasing t on steps without violators improves the convergence rate at small k "
          "(Section 4.5)", "greater", "the final (P - f*)/|f*| at the smallest k with t advancing over with lazy t",
          "kT", _KT_SEEDS),
    Claim("lazy_still_slower", "... although the convergence remains slower than with a larger k (Section 4.5)",
          "greater", "the final (P - f*)/|f*| at the smallest k with lazy t over the best k's (t advancing)", "kT",
          _KT_SEEDS, given="lazy_better"),
    Claim("gap_ratio", "0.1% of the optimum takes 560 iterations where 0.3% takes 200 (Section 4.3): 2.8x the "
          "iterations for a target 3x tighter", "about", "Pegasos's iterations to 0.1% over its iterations to 0.3%, "
          "seed by seed (a seed that does not reach 0.1% counts at its 1000 iterations, a lower bound)",
          "the pair of targets (0.1% over 0.3%)", _SEEDS, params=(("k", 2.8),), printed="560 / 200 iterations (2.8x)",
          mechanism="Pegasos's gap bound falls as log(T) / (lambda T) in the steps T (Shalev-Shwartz et al. 2007), "
                    "so a target 3x tighter takes about 3x the steps on any data; the levels (200, 560) are RCV1's, "
                    "their ratio is the rate's"),
), changes=CHANGES)


def _rows(conv: pd.DataFrame, entry: str, ds: str | None = None) -> pd.DataFrame:
    out = conv[conv["solver_entry"] == entry]
    return out if ds is None else out[out["dataset"] == ds]


def _certified(row) -> bool:
    """f* known well enough to judge a 0.1% gap (its own relative gap under a tenth of it)."""
    return row["f_star_status"] == "converged" and row["f_star_rel_gap"] <= TARGETS[-1] / 10


def _when(row, eps) -> str:
    it, t = row[f"it_{eps:g}"], row[f"t_{eps:g}"]
    return "not reached" if not math.isfinite(it) else f"{it:.0f} iterations, {t:.2f} s"


def _datasets(*tables) -> list[str]:
    found = set().union(*(set(t["dataset"]) for t in tables if "dataset" in t.columns))
    return [d for d in PAPER_DATA if d in found] + sorted(found - set(PAPER_DATA))


def _pct(eps: float) -> str:
    return f"{100 * eps:g}%"


def finding_gap_iterations(conv) -> Finding:
    cells, parts = [], []
    for ds in _datasets(conv):
        peg = _rows(conv, PEGASOS, ds)
        if peg.empty or not all(_certified(r) for r in peg.to_dict("records")):
            continue
        for eps in TARGETS:
            cells.append(Cell(ds, f"{_name(ds)} {_pct(eps)}", ratio_over(_its_to(peg, eps) / THEIRS_IT[eps],
                                                                        "batch seeds")))
            reached = peg[f"it_{eps:g}"].dropna()
            parts.append(f"{_name(ds)}: {_pct(eps)} " + (f"after {reached.median():.0f} iterations (the median of the "
                         f"{len(reached)} of {len(peg)} seeds that reached it)" if len(reached) else
                         f"reached by none of {len(peg)} seeds"))
    return judge(RULES, RULES.claim("gap_iterations"), cells, "; ".join(parts),
                 "the same lambda is a weaker regularization on fewer rows (C = 1/(lambda n) grows as n shrinks)")


def finding_exact_is_slow(conv) -> Finding:
    cells, parts = [], []
    for ds in _datasets(conv):
        peg, x = _rows(conv, PEGASOS, ds), _rows(conv, EXACT, ds)
        if peg.empty or x.empty:
            continue
        xr = x.iloc[0]
        for eps in TARGETS:
            dcd_work = xr[f"it_{eps:g}"] * xr["n_train"]
            peg_work = [k * (it if math.isfinite(it) else n)
                        for k, it, n in zip(peg["k"], peg[f"it_{eps:g}"], peg["n_iter"])]
            cells.append(Cell(ds, f"{_name(ds)} {_pct(eps)}", ratio_over(dcd_work / np.asarray(peg_work, float),
                                                                        "batch seeds")))
            t_peg = peg[f"t_{eps:g}"].dropna()
            parts.append(f"{_name(ds)} to {_pct(eps)}: dcd {xr[f'it_{eps:g}']:.0f} passes, {_work(dcd_work)} examples "
                         f"({xr[f't_{eps:g}']:.2f} s); Pegasos {_work(float(np.median(peg_work)))} examples (median"
                         + (f", {t_peg.median():.2f} s)" if len(t_peg) else "; not reached within its 1000 steps)"))
        parts.append(f"{_name(ds)}: dcd certified the optimum ({xr['status']}) in {xr['n_iter']:.0f} passes, "
                     f"{_work(xr['n_updates'])} coordinate updates, {xr['fit_time_s']:.2f} s")
    return judge(RULES, RULES.claim("exact_is_slow"), cells, "; ".join(parts),
                 "an exact solve is not hours here: LIBLINEAR's dual coordinate descent (dcd) reaches either target "
                 "in a few passes (C = 1/(lambda n) is small, so the dual box is tight), fewer examples than Pegasos "
                 "visits; the four hours were SVMlight's, a decomposition method for kernels, not the problem's; and "
                 "theirs set Pegasos at 0.3% against SVMlight at the optimum, not one target against one target")


def _work(n: float) -> str:
    return "?" if not math.isfinite(n) else f"{n:,.0f}"


def _its_to(peg: pd.DataFrame, eps: float) -> np.ndarray:
    """Each seed's iterations to within eps (a seed that never got there: its last iteration)."""
    return np.asarray([it if math.isfinite(it) else n for it, n in zip(peg[f"it_{eps:g}"], peg["n_iter"])], float)


def finding_gap_ratio(conv) -> Finding:
    cells = []
    for ds in _datasets(conv):
        peg = _rows(conv, PEGASOS, ds)
        if peg.empty or not all(_certified(r) for r in peg.to_dict("records")):
            continue
        tight, loose = TARGETS[1], TARGETS[0]
        cells.append(Cell(ds, f"{_name(ds)} {_pct(tight)} over {_pct(loose)}",
                          ratio_over(_its_to(peg, tight) / _its_to(peg, loose), "batch seeds")))
    return judge(RULES, RULES.claim("gap_ratio"), cells,
                 why="the last iterate's gap does not fall as the rate's 1/T between the two targets here")


def _cliff(data: ReportData | None, ds: str) -> str:
    """Pegasos's test error near 50 iterations (median over the batch seeds of the last trace point
    at or before t), from the 1000-step runs' traces: how steep the curve is where the claim cuts it."""
    if data is None or "test_error" not in data.traces.columns:
        return ""
    fits = data.fits[(data.fits["solver_entry"] == PEGASOS) & (data.fits["dataset"] == ds)]
    by_key = _traces_of(data, fits)
    at = {t: [100 * _at_iteration(tr, "test_error", t)[1] for tr in by_key.values()] for t in (20, 30, 40, 50, 70, 100)}
    at = {t: float(np.nanmedian(v)) for t, v in at.items() if v and np.isfinite(v).any()}
    if not at:
        return ""
    # A cut where the error still halves within ten steps rests on where exactly it falls.
    cliff = at.get(40, 0.0) > 1.5 * at.get(AT_IT, math.inf)
    return (("the claim cuts the curve on a cliff, the error still falling fast at 50 iterations" if cliff else
             "the curve around the claim's cut at 50 iterations") + " (median over seeds at the last trace point at "
            "or before t: " + ", ".join(f"{v:.1f}% by t = {t}" for t, v in at.items()) + ")")


def finding_test_error(conv, preds: dict | None = None, data: ReportData | None = None) -> Finding:
    """Pegasos's test error after 50 iterations against the exact solver's, on one test set: from
    the rows the two models classify differently (`preds`, the kept models of AT_50 and the exact
    solver: McNemar's pairing, Student's t over the batch seeds), or, without them, from the traced
    errors at the last point at or before 50 with the errors of two test sets (wider)."""
    cells, parts = [], []
    for ds in _datasets(conv):
        peg, x = _rows(conv, PEGASOS, ds), _rows(conv, EXACT, ds)
        if x.empty:
            continue
        xr = x.iloc[0]
        q = int(xr["n_test"])
        at50 = _at50_keys(data, ds)
        exact_key = _exact_key(data, ds)
        if preds and exact_key in preds and at50 and all(k in preds for k in at50):
            diffs, ses = zip(*(discordant(preds[exact_key], preds[k]) for k in at50))
            cells.append(Cell(ds, _name(ds), paired_rows(diffs, ses, q, "batch seeds")))
            parts.append(f"{_name(ds)}: Pegasos {xr['test_err'] + np.mean(diffs):.2f}% after 50 iterations (mean over "
                         f"{len(at50)} seeds), dcd {xr['test_err']:.2f}% ({q:,} test rows)")
        elif not peg.empty and peg["test_err_at"].notna().any():
            diffs = (peg["test_err_at"] - xr["test_err"]).dropna()
            p = float(xr["test_err"]) / 100
            cells.append(Cell(ds, f"{_name(ds)} (traced, unpaired)", difference_over(
                diffs, "batch seeds", within=100 * math.sqrt(2 * p * (1 - p) / q))))
            parts.append(f"{_name(ds)}: Pegasos {peg['test_err_at'].median():.2f}% at iteration "
                         f"{peg['err_it'].median():.0f} (median over seeds, traced); dcd {xr['test_err']:.2f}% "
                         f"({q:,} test rows)")
        cliff = _cliff(data, ds) if RULES.status(ds) == STAND_IN else ""
        if cliff:
            parts.append(cliff)
    return judge(RULES, RULES.claim("test_error"), cells, "; ".join(parts))


def _at50_keys(data: ReportData | None, ds: str) -> list[str]:
    if data is None:
        return []
    fits = data.fits[(data.fits["solver_entry"] == AT_50) & (data.fits["dataset"] == ds)]
    if "param_random_state" in fits.columns:
        fits = fits.sort_values("param_random_state")
    return list(fits["key"])


def _exact_key(data: ReportData | None, ds: str) -> str | None:
    if data is None:
        return None
    fits = data.fits[(data.fits["solver_entry"] == EXACT) & (data.fits["dataset"] == ds)]
    return str(fits["key"].iloc[0]) if len(fits) else None


def finding_starts(st) -> Finding:
    if st.empty:
        return judge(RULES, RULES.claim("starts"), [])
    cells = [Cell(ds, f"{_name(ds)} batch seed {int(r.random_state)}", exact(r.final_spread))
             for ds, g in st.groupby("dataset") for r in g.itertuples()]
    ours = (f"{int(st['starts'].max())} starts x {st.groupby('dataset')['random_state'].nunique().max()} batch seeds: "
            "the starts' objectives differ by at most " + ", ".join(
                f"{fmt(float(g['max_rel_diff'].max()))} ({_name(d)})" for d, g in st.groupby("dataset")) +
            " (relative) at any traced iteration, early, and not after")
    return judge(RULES, RULES.claim("starts"), cells, ours)


def _sweep(kt: pd.DataFrame, ds: str, lazy: bool) -> dict:
    """(epochs, k) -> the final gaps over the batch seeds (seed order), of one dataset and t rule."""
    sub = kt[(kt["dataset"] == ds) & (kt["lazy_t"] == lazy)].sort_values("random_state")
    return {(int(e), int(k)): g["rel_subopt"].to_numpy(float) for (e, k), g in sub.groupby(["epochs", "k"])}


def _ratio(a: np.ndarray, b: np.ndarray) -> Estimate:
    n = min(len(a), len(b))
    return ratio_over(a[:n] / b[:n], "batch seeds")


def _best_k(sweep: dict, ep: int) -> int:
    ks = [k for e, k in sweep if e == ep]
    return min(ks, key=lambda k: float(np.median(sweep[(ep, k)])))


def _kT_text(kt, ds, ep) -> str:
    sub = kt[(kt["dataset"] == ds) & (kt["epochs"] == ep)]
    return f"kT={float(sub['kT'].iloc[0]):,.0f}" if len(sub) else f"{ep} epochs"


def finding_small_k_slow(kt) -> Finding:
    cells, parts = [], []
    for ds in _datasets(kt):
        sw = _sweep(kt, ds, False)
        for ep in sorted({e for e, _ in sw}):
            ks = sorted(k for e, k in sw if e == ep)
            if len(ks) < 2:
                continue
            best = _best_k(sw, ep)
            small = sw[(ep, ks[0])]
            other = ks[1] if best == ks[0] else best
            cells.append(Cell(ds, f"{_name(ds)} {_kT_text(kt, ds, ep)} (best k={other})", _ratio(small, sw[(ep, other)])))
            spread = max(np.median(sw[(ep, k)]) for k in ks) / min(np.median(sw[(ep, k)]) for k in ks)
            parts.append(f"{_name(ds)} {_kT_text(kt, ds, ep)}: worst over best k {spread:.2f}x")
    return judge(RULES, RULES.claim("small_k_slow"), cells, "; ".join(parts),
                 "at these kT the final gap hardly depends on k, as Shalev-Shwartz et al. found (only kT matters); "
                 "their RCV1 at k = 1 went slower (their explanation: few violators once the training error is "
                 "5-10%, while t still advances)")


def finding_larger_kT_better(kt) -> Finding:
    cells = []
    for ds in _datasets(kt):
        sw = _sweep(kt, ds, False)
        eps = sorted({e for e, _ in sw})
        for k in sorted({k for _, k in sw}):
            for e1, e2 in zip(eps, eps[1:]):
                if (e1, k) in sw and (e2, k) in sw:
                    cells.append(Cell(ds, f"{_name(ds)} k={k} {e1} to {e2} epochs", _ratio(sw[(e1, k)], sw[(e2, k)])))
    return judge(RULES, RULES.claim("larger_kT"), cells, why="a stochastic last iterate")


def _lazy_cells(kt, against_best: bool) -> list[Cell]:
    cells = []
    for ds in _datasets(kt):
        plain, lazy = _sweep(kt, ds, False), _sweep(kt, ds, True)
        for ep in sorted({e for e, _ in plain}):
            ks = sorted(k for e, k in plain if e == ep)
            if not ks or (ep, ks[0]) not in lazy:
                continue
            z = lazy[(ep, ks[0])]
            est = _ratio(z, plain[(ep, _best_k(plain, ep))]) if against_best else _ratio(plain[(ep, ks[0])], z)
            cells.append(Cell(ds, f"{_name(ds)} {_kT_text(kt, ds, ep)} k={ks[0]}", est))
    return cells


def finding_lazy_t(kt) -> Finding:
    share = kt[kt["lazy_t"] & kt["steps_t"].notna()]
    share = share[share["k"] == share["k"].min()] if len(share) else share
    ours = ("t advanced on " + ", ".join(f"{100 * r.steps_t / r.T:.0f}%" for r in share.itertuples()
                                          if r.random_state == 0) + " of the smallest k's steps (seed 0)"
            if len(share) else "")
    return judge(RULES, RULES.claim("lazy_better"), _lazy_cells(kt, False), ours,
                 "t stays small, so the step 1/(lambda t) stays that many times larger, and the last iterate, one "
                 "example's step from the one before, keeps the noise of those larger steps (our reading)")


def finding_lazy_still_slower(kt, premise: Finding) -> Finding:
    """Judged only where lazy t improves on t advancing (finding 7, `premise`): "although" it does."""
    return judge(RULES, RULES.claim("lazy_still_slower"), _lazy_cells(kt, True), premise=premise)


def findings(conv: pd.DataFrame, st: pd.DataFrame, kt: pd.DataFrame, preds: dict | None = None,
             data: ReportData | None = None) -> list[Finding]:
    """One finding per claim, each over both datasets: rotten_tomatoes is not the paper's problem
    (`DATA`), so its cells are shown beside and judged nowhere."""
    lazy = finding_lazy_t(kt)
    return [finding_starts(st), finding_gap_iterations(conv), finding_exact_is_slow(conv),
            finding_test_error(conv, preds, data), finding_small_k_slow(kt), finding_larger_kT_better(kt), lazy,
            finding_lazy_still_slower(kt, lazy), finding_gap_ratio(conv)]


# ------------------------------------------------------------------------------ tables
def _num(v, digits=2) -> str:
    return "" if v is None or not math.isfinite(float(v)) else f"{float(v):.{digits}f}"


def table_4_3(conv) -> pd.DataFrame:
    """Section 4.3 and Figure 3: theirs, then ours per dataset and entry."""
    rows = [{"data": "RCV1 CCAT (paper)", "solver": "Pegasos k=8000", "to 0.3%": "200 it., 9.2 s",
             "to 0.1%": "560 it.", "final gap": "", "test error %": f"{THEIRS_ERR_50:g} at 50 it.",
             "f* (its rel. gap)": "SVMlight, ~4 h"},
            {"data": "RCV1 CCAT (paper)", "solver": "SVMlight", "to 0.3%": "", "to 0.1%": "", "final gap": "",
             "test error %": f"{THEIRS_ERR_EXACT:g}", "f* (its rel. gap)": ""}]
    for r in conv.to_dict("records"):
        err = f"{r['test_err']:.2f}"
        if r["solver_entry"] == PEGASOS and math.isfinite(r["test_err_at"]):
            err = f"{r['test_err_at']:.2f} at {r['err_it']:.0f} it.; {err} at {r['n_iter']:.0f}"
        rows.append({"data": f"{_name(r['dataset'])}, {r['n_train']:,.0f} / {r['n_test']:,.0f}",
                     "solver": (f"Pegasos k=8000, seed {r['random_state']:.0f}" if r["solver_entry"] == PEGASOS
                                else "dcd (exact)"),
                     "to 0.3%": _when(r, 3e-3), "to 0.1%": _when(r, 1e-3),
                     "final gap": f"{fmt(r['rel_subopt'])} ({r['status']}, {r['n_iter']:.0f} it., {r['fit_time_s']:.2f} s)",
                     "test error %": err,
                     "f* (its rel. gap)": f"{r['f_star_solver']}, {fmt(r['f_star_rel_gap'])} ({r['f_star_status']})"})
    return pd.DataFrame(rows)


def table_k_vs_T(kt) -> pd.DataFrame:
    """Figure 4's numbers: the final relative gap per k at each kT, t advancing and lazy: the median
    over the batch seeds and their range, T, and under lazy t the steps that advanced t (median)."""
    if kt.empty:
        return kt
    agg = kt.groupby(["dataset", "kT", "lazy_t", "k"]).agg(g=("rel_subopt", "median"), lo=("rel_subopt", "min"),
                                                           hi=("rel_subopt", "max"), T=("T", "median"),
                                                           t=("steps_t", "median"), n=("rel_subopt", "count"))
    agg = agg.reset_index()
    agg = agg.assign(cell=[f"{fmt(r.g)}" + (f" ({fmt(r.lo)}-{fmt(r.hi)})" if r.n > 1 else "") + f"; T={r.T:.0f}"
                           + (f", t={r.t:.0f}" if r.lazy_t and math.isfinite(r.t) else "") for r in agg.itertuples()],
                     t_rule=np.where(agg["lazy_t"], "lazy t", "t advances"))
    wide = agg.pivot_table(index=["dataset", "kT", "t_rule"], columns="k", values="cell", aggfunc="first")
    wide.columns = [f"k={c}" for c in wide.columns]
    wide = wide.reset_index()
    wide["dataset"] = wide["dataset"].map(_name)
    wide["kT"] = wide["kT"].map(lambda v: fmt(float(v)))
    return wide.fillna("")


# ------------------------------------------------------------------------------ figures
def _traces_of(data: ReportData, fits: pd.DataFrame) -> dict:
    return {k: g.sort_values("iteration") for k, g in data.traces[data.traces["key"].isin(fits["key"])].groupby("key")}


def fig_random_starts(data: ReportData):
    fits = _fits(data, STARTS)
    if fits.empty or "param_init_seed" not in fits.columns:
        raise Skip("no pegasos_starts run")
    by_key = _traces_of(data, fits)
    datasets = sorted(fits["dataset"].unique())
    fig, axes = _panels(len(datasets), width=5.6, height=4.2)
    for ax, ds in zip(axes, datasets):
        sub = fits[fits["dataset"] == ds].sort_values(["param_random_state", "param_init_seed"])
        seeds = sorted(sub["param_init_seed"].unique())
        st = styles(len(seeds))
        dashes = ["-", "--", ":", "-."]
        for r in sub.itertuples(index=False):
            tr = by_key.get(r.key)
            if tr is None:
                continue
            i = seeds.index(r.param_init_seed)
            ax.plot(tr["iteration"], tr["primal"], color=st[i]["color"],
                    linestyle=dashes[int(r.param_random_state) % len(dashes)], linewidth=1.1, alpha=0.8,
                    label=f"start init_seed={r.param_init_seed:.0f}, batches random_state={r.param_random_state:.0f}")
        _decorate(ax, _name(ds) + (";\nnot the paper's problem" if RULES.status(ds) == OTHER else ""), "iteration t",
                  "primal objective P (C = 1/(lambda n))", 0, logx=True, logy=True)
        _log_ticks(ax)
    figure_legend(fig, axes)   # the same starts and seeds on both datasets: listed once
    fig.suptitle("Figure 2: Pegasos from random starts (colour: start; dash: batch seed)", fontsize=9)
    return fig


def fig_gap(data: ReportData):
    """Section 4.3: the relative gap to the certified optimum against the examples each solver has
    visited (one unit for both: a Pegasos step reads k examples, a dcd pass all n) and against
    solver seconds, every Pegasos batch seed a line."""
    fits = data.fits[data.fits["solver_entry"].isin((PEGASOS, EXACT))]
    if "f_star" not in fits.columns or fits["f_star"].isna().all():
        raise Skip("no pegasos or dcd fit with a certified f*")
    fits = fits[fits["f_star"].notna()]
    by_key = _traces_of(data, fits)
    datasets = _datasets(fits)
    fig, axes = _panels(2 * len(datasets), width=5.2, height=4.0, ncols_max=2)
    for i, ds in enumerate(datasets):
        ax_n, ax_t = axes[2 * i], axes[2 * i + 1]
        n_train = float(fits[fits["dataset"] == ds]["n_train"].iloc[0])
        k = None
        for r in fits[fits["dataset"] == ds].itertuples(index=False):
            tr = by_key.get(r.key)
            if tr is None:
                continue
            gap = np.maximum((tr["primal"] - r.f_star) / abs(r.f_star), max(float(r.f_star_rel_gap), 1e-12))
            pegasos = r.solver_entry == PEGASOS
            if pegasos:
                k = _number(getattr(r, "param_k", math.nan))
                k = 8000.0 if not math.isfinite(k) else k
            examples = tr["iteration"] * (k if pegasos else n_train)
            style = dict(color="tab:blue", linewidth=0.9, alpha=0.7, label="Pegasos k=8000 (a line per batch seed)") \
                if pegasos else dict(color="tab:red", linewidth=1.4, label="dcd, exact (a point per pass)")
            ax_n.plot(examples, gap, **style)
            ax_t.plot(tr["time_s"], gap, **style)
        for ax in (ax_n, ax_t):
            for eps, ls in zip(TARGETS, ("--", ":")):
                ax.axhline(eps, color="0.4", linestyle=ls, linewidth=0.9, label=f"{100 * eps:g}% of the optimum")
        for eps in TARGETS:
            ax_n.axvline(THEIRS_IT[eps] * 8000, color="tab:green", linestyle="--" if eps == 3e-3 else ":",
                         linewidth=0.9, label=f"theirs to {100 * eps:g}%: {THEIRS_IT[eps]} steps of k=8000")
        other = "; not the paper's problem" if RULES.status(ds) == OTHER else ""
        # Two lines a title: a panel is half the figure's width, and one line ran into its neighbour's.
        _decorate(ax_n, f"{_name(ds)}{other}:\nagainst examples visited", "examples visited (Pegasos: k per step; "
                  "dcd: n per pass)", "(P - f*) / |f*|", 0, logx=True, logy=True)
        _decorate(ax_t, f"{_name(ds)}{other}:\nagainst solver seconds", "solver seconds", "(P - f*) / |f*|", 0,
                  logx=True, logy=True)
        _log_ticks(ax_n)
        _log_ticks(ax_t)
    figure_legend(fig, axes)   # the same lines in every panel: listed once
    fig.suptitle("Section 4.3: relative gap to the certified optimum (lambda = 1e-4)", fontsize=10)
    return fig


def fig_test_error(data: ReportData):
    fits = data.fits[data.fits["solver_entry"] == PEGASOS]
    if "test_error" not in data.traces.columns or fits.empty:
        raise Skip("no test-error trace of pegasos (run.trace_test_error=true)")
    by_key = _traces_of(data, fits)
    exact = _fits(data, EXACT)
    datasets = sorted(fits["dataset"].unique())
    fig, axes = _panels(len(datasets), width=5.4, height=4.0)
    for ax, ds in zip(axes, datasets):
        n = 0
        for r in fits[fits["dataset"] == ds].itertuples(index=False):
            tr = by_key.get(r.key)
            if tr is not None:
                ax.plot(tr["iteration"], 100 * tr["test_error"], color="tab:blue", linewidth=0.9, alpha=0.7,
                        label=None if n else "Pegasos k=8000 (a line per batch seed)")
                n = 1
        x = exact[exact["dataset"] == ds]
        if len(x):
            ax.axhline(100 * (1 - float(x["test_accuracy"].iloc[0])), color="tab:red", linestyle="--",
                       label="dcd, exact solver")
            n += 1
        ax.axvline(AT_IT, color="0.5", linestyle=":", linewidth=0.9, label=f"{AT_IT} iterations")
        _decorate(ax, _name(ds) + (";\nnot the paper's problem" if RULES.status(ds) == OTHER else ""), "iteration t",
                  "test error (%)", n + 1, logx=True)
        # The whole curve from t = 1 (a cap at a multiple of the exact error hid the early
        # iterations, where the curves differ most).
        ax.set_ylim(0.0, ax.get_ylim()[1])
    fig.suptitle("Figure 3: test error against iterations (ordered split)", fontsize=9)
    return fig


def fig_k_vs_T(kt: pd.DataFrame):
    if kt.empty or kt["k"].nunique() < 2:
        raise Skip("no k sweep at fixed kT")
    datasets = sorted(kt["dataset"].unique())
    fig, axes = _panels(len(datasets), width=5.6, height=4.4)
    for ax, ds in zip(axes, datasets):
        sub = kt[kt["dataset"] == ds]
        groups = list(sub.groupby(["epochs", "lazy_t"]))
        colours = styles(sub["epochs"].nunique())
        eps = sorted(sub["epochs"].unique())
        for (ep, lazy), g in groups:
            m = g.groupby("k")["rel_subopt"].agg(["median", "min", "max"])
            colour = colours[eps.index(ep)]["color"]
            ax.plot(m.index, m["median"], color=colour, marker="o" if not lazy else "s",
                    markersize=4, linestyle=":" if lazy else "-",
                    label=f"kT = {float(g['kT'].iloc[0]):,.0f} ({ep} epoch{'s' if ep > 1 else ''})"
                          + (", lazy t" if lazy else ""))
            ax.fill_between(m.index, m["min"], m["max"], color=colour, alpha=0.15, linewidth=0)
        _decorate(ax, _name(ds) + (";\nnot the paper's problem" if RULES.status(ds) == OTHER else ""),
                  "mini-batch size k (T = kT / k steps)", "final (P - f*) / |f*|", len(groups), logx=True, logy=True)
        _value_ticks(ax, sub["k"])
        ax.set_xticklabels([f"{v:,.0f}" for v in ax.get_xticks()])
    fig.suptitle("Figure 4: k against T at fixed kT (median of the batch seeds, band their range); dotted: t does "
                 "not advance without violators", fontsize=10)
    return fig


FIGURES = {
    "fig2_random_starts": ("Figure 2: several random starting points",
                           "Pegasos (k=8000, lambda=1e-4) from random w_1 in the ball ||w|| <= 1/sqrt(lambda), "
                           "seeded by init_seed apart from the batches (random_state). The first step multiplies w_1 by "
                           "1 - eta_1 lambda = 0, so w_1 enters only through which examples of the first batch it puts "
                           "inside the margin; the trace starts after step 1."),
    "sec4_3_gap": ("Section 4.3: relative gap to the optimum",
                   "(P - f*)/|f*| against the certified f* (dcd at tol 1e-9, closed by its duality gap; the curve is "
                   "floored at f*'s own relative gap). Left: against the examples each solver visited, one unit for "
                   "both (a Pegasos step reads k = 8000 examples, a dcd pass all n), with their 200 and 560 steps "
                   "marked; right: against solver seconds. A line per Pegasos batch seed."),
    "fig3_test_error": ("Figure 3: test error against iterations",
                        "Test error of Pegasos's iterate on the ordered split's test rows at each trace point (a line "
                        "per batch seed), and the exact solver's (dcd) test error."),
    "fig4_k_vs_T": ("Figure 4: k against T at fixed kT",
                    "Final relative gap of Pegasos (lambda=1e-4, last iterate) against the mini-batch size k with T = "
                    "kT / k steps, at three kT (1, 3 and 10 epochs of the training rows): the median of 3 batch seeds, "
                    "the band their range; solid: t advances every step (Pegasos), dotted: t does not advance on "
                    "steps without violators (rupnik 4.5)."),
}


# ------------------------------------------------------------------------------ the README
def readme(conv, st, kt, found, figs, skipped, setup: dict) -> str:
    out = header_lines(NAME, 'J. Rupnik, "Stochastic Subgradient Approach for Solving Linear Support Vector Machines - '
                       'an Overview", Jozef Stefan Institute, Ljubljana, 2008.', setup.get("fits", "?"), found, RULES)
    # Said before the findings: none of them is on RCV1.
    out[2:2] = ["**RCV1 is not obtainable offline.** The paper's data (Reuters RCV1, category CCAT, 804,414 x 47,236) "
                "are replaced by our RCV1-like generator at RCV1's size (`rcv1_full`), and the study is also run on a "
                "real sparse text corpus (`rotten_tomatoes`). Numbers on either are not RCV1's; the findings are "
                "judged on the RCV1-like set only (below).\n"]
    out += [
        "## Setup, and how it differs from theirs\n",
        "- Problem: Pegasos's lambda/2 ||w||^2 + (1/n) sum max(0, 1 - y w'x), no bias (their 3.2.1), lambda = 1e-4 "
        "(their value for RCV1 CCAT, kept for both datasets). It is the C-SVM of every other solver here with "
        "C = 1/(lambda n_train) (`lambda` with `lambda_convention: pegasos`): Pegasos, the exact solver, the "
        "reference solve and f* are one problem, and the objective shown is that C-SVM's P = P_pegasos / (C n).",
        "- Pegasos: their Algorithm (3.2.2): batches of k drawn with replacement, step 1/(lambda t), projection onto "
        "the ball of radius 1/sqrt(lambda), the last iterate w_T+1. Section 4.3 and Figure 3: k = 8000, T = 1000 "
        "steps from w_1 = 0, 5 batch seeds (`random_state` 0..4: the repeats of those findings). Section 4.4's "
        "test error after 50 iterations is the iterate after exactly 50 steps of the same batches (`pegasos_at50`, "
        "its model kept), judged on the test rows it and the exact solver classify differently. Figure 2: 300 "
        "steps from random starts inside the ball (a uniform direction and "
        "radius), 5 starts (`init_seed`) x 2 batch seeds (`random_state`), the start seeded apart from the "
        "batches. Figure 4: k in {1, 10, 100, 1000, 10000} at kT = 1, 3 and 10 epochs of the training rows "
        "(T = epochs x ceil(n/k)), each with t advancing every step and with `lazy_t` (t does not advance on "
        "steps whose batch has no violator, their 4.5), 3 batch seeds each.",
        "- Exact solver and f*: theirs was SVMlight (about four hours of CPU). Ours is `dcd` (LIBLINEAR's dual "
        "coordinate descent) at tol 1e-9 on the projected-gradient spread; f* is a separate reference solve of "
        "the same problem, certified by its duality gap (f* lies in [P_ref - gap, P_ref]; the table gives gap/|f*|).",
        "- Split (their 4.4): the first rows train, the rest test, order kept (`cv=ordered`, n_train = 0.8701987 of "
        "the rows: 700,000 of RCV1-like's 804,414, as theirs). RCV1's order is by date; our generator draws rows "
        "independently, so on it the ordered split is as good as a random one.",
        "- Iterations to a target are read off trace points spaced 30 per decade (every step up to 30, then 8% "
        "apart), so they overstate by up to 8%, and seeds that reach a target at the same trace point give an "
        "interval of no width: that 8% is the resolution, which the interval does not show. The findings rest "
        "on counts of work, one unit for both solvers: "
        "the examples each visits (a Pegasos step reads k, a dcd pass all n), to the same target. Seconds are "
        "shown (solver seconds without the trace's own cost, one fit at a time on a shared 2-core machine) but "
        "judge nothing; their 9.2 s were on 2008 hardware.",
        f"- Data: {setup.get('rows', '')}.",
        "- rcv1_full: Zipf vocabulary of 47,236 terms, 76 nonzeros per row (RCV1's density 0.16%), unit-length "
        "tf-idf rows, labels from a sparse linear ground truth with a margin and 3% label noise, balanced (CCAT is "
        "47% positive). The generator's parameters were fixed before any result of this study was seen: the last "
        "of them on 2026-11-25 (`conf/datasets/rcv1_full.yaml`: the margin, 0.0 to 0.1, so that a linear SVM's test "
        "accuracy is near RCV1 CCAT's, LinearSVC 95.1% at C = 0.1 on 400,000 / 100,000 rows), before this study's "
        "first commit (2026-11-26), and none since; they were chosen on that accuracy level, not on any finding "
        "here. rotten_tomatoes: 12,808 review snippets (20,047 terms), built the same way as RCV1's vectors: tf-idf rows "
        "of unit length (`weighting: tfidf`).",
        "",
        *table_lines("Section 4.3 and Figure 3: the gap to the optimum, and test error",
                     "Iterations and solver seconds until (P - f*)/|f*| first falls within 0.3% and 0.1%, the final "
                     "gap, and the test error (for Pegasos at the last trace point at or before 50 iterations, and at "
                     "the end). Rows are train / test.", table_4_3(conv)),
        *table_lines("Figure 2: random starts",
                     "Per batch seed: the largest relative difference between the starts' objectives at any traced "
                     "iteration, and the spread of their final objectives.",
                     st.assign(dataset=st["dataset"].map(_name)) if not st.empty else st),
        *table_lines("Figure 4: k against T at fixed kT",
                     "Final (P - f*)/|f*| per k (the median of the batch seeds, their range) and T, at each kT "
                     "(examples drawn: epochs x training rows); under lazy t, also t, the steps that advanced t (had "
                     "a violator).", table_k_vs_T(kt)),
        "## Figures\n", *figure_lines(FIGURES, figs, skipped), *changes_lines(RULES)]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ writer
def _setup(data: ReportData) -> dict:
    res = data.results
    rows = res.groupby("dataset")[["n_train", "n_test"]].median() if len(res) else pd.DataFrame()
    return {"fits": len(res),
            "rows": "; ".join(f"{_name(d)} {int(r.n_train):,} train / {int(r.n_test):,} test rows"
                              for d, r in rows.iterrows())}


@paper(NAME)
def write(run_dir: Path, out: Path, root: str | None = None) -> Path:
    data = load(run_dir)
    conv, st, kt = convergence(data), starts(data), k_vs_T(data)
    figs, skipped = save_figures(draw_figures({
        "fig2_random_starts": lambda: fig_random_starts(data),
        "sec4_3_gap": lambda: fig_gap(data),
        "fig3_test_error": lambda: fig_test_error(data),
        "fig4_k_vs_T": lambda: fig_k_vs_T(kt)}), out)
    preds = predictions(run_dir, data, root, entries=(AT_50, EXACT))
    text = readme(conv, st, kt, findings(conv, st, kt, preds, data), figs, skipped, _setup(data))
    (out / "README.md").write_text(with_costs(text, run_dir, root, data.results))
    return out / "README.md"
