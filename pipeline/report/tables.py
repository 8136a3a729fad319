"""The report's tables, each registered with the columns it needs (see registry.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .common import (F_STAR_HINT, LAMBDA, MISSING, certainty_floor, config_columns, fmt, keyed, point_names,
                     problem_columns, short, swept_keys)
from .registry import ReportData, Skip, table
from .speed import (CLOCKS, SOURCES, TARGET, fit_times, headline, problem_key, shares_problem, speed_fits, speed_rows,
                    start_label, target_of, with_start)

TARGETS = (1e-2, 1e-3, 1e-4, 1e-6)


def _groups(data: ReportData):
    """(fits with keyed config columns, the full config key, the swept keys shown)."""
    fits = data.fits
    if fits.empty:
        raise Skip("no fit finished")
    cfg = [c for c in config_columns(fits) if c != "dataset"]
    return keyed(fits, cfg), ["dataset", "solver_entry"] + cfg, swept_keys(data.results)


def _converged(s: pd.Series) -> str:
    return f"{int((s == 'converged').sum())}/{len(s)}"


def cv_table(data: ReportData) -> pd.DataFrame:
    """One row per dataset x entry x configuration, in the shape of scikit-learn's
    `cv_results_`: the swept parameters, mean/std of the test score (accuracy) over folds, its
    rank within the dataset x entry, train score, fit time and how many folds converged."""
    fits, keys, shown = _groups(data)
    fits = with_start(fits)
    agg = fits.groupby(keys, sort=True, dropna=False).agg(
        mean_test_score=("test_accuracy", "mean"), std_test_score=("test_accuracy", "std"),
        mean_train_score=("train_accuracy", "mean"), mean_fit_time=("fit_time_s", "mean"),
        std_fit_time=("fit_time_s", "std"), mean_n_iter=("n_iter", "mean"),
        converged_folds=("status", _converged), start=("start", start_label)).reset_index()
    agg["rank_test_score"] = agg.groupby(["dataset", "solver_entry"])["mean_test_score"].rank(
        ascending=False, method="min").astype("Int64")
    return agg[["dataset", "solver_entry", *shown, "mean_test_score", "std_test_score", "rank_test_score",
                "mean_train_score", "mean_fit_time", "std_fit_time", "mean_n_iter", "converged_folds", "start"]]


table("cv_results", "Cross-validation", needs=("test_accuracy",),
      note="Per configuration, over folds (scikit-learn's `cv_results_`): test score = accuracy; rank within "
           "the dataset and solver; `converged_folds`: folds whose fit reached its own tolerance, of all folds; "
           "`mean_fit_time`: the solver's seconds to its own stop, started as `start` says (`warm`: from the "
           "previous C's solution on its C path). Not a speed comparison: see Time to target.")(cv_table)


@table("best_params", "Best parameters per dataset and solver", needs=("test_accuracy",),
       note="The configuration of best mean test accuracy (ties: the faster); every swept key is shown.")
def best_params(data: ReportData) -> pd.DataFrame:
    cv = cv_table(data)
    cv = cv.assign(_acc=cv["mean_test_score"].fillna(-np.inf))
    cv = cv.sort_values(["dataset", "solver_entry", "_acc", "mean_fit_time"], ascending=[True, True, False, True])
    best = cv.groupby(["dataset", "solver_entry"], sort=True).head(1).drop(columns=["_acc", "rank_test_score"])
    return best.reset_index(drop=True)


@table("timing", "Timing", needs=("fit_time_s",),
       note=f"Where the sweep's seconds went, each fit to its own stop, started as `start` counts: "
            f"`solver_s_*` on the solver clock ({CLOCKS['solver']}), `task_s_total` on the task clock "
            f"({CLOCKS['task']}). Not a speed comparison (stops and starts differ): see Time to target.")
def timing_table(data: ReportData) -> pd.DataFrame:
    fits = data.fits
    if fits.empty:
        raise Skip("no fit finished")
    fits = with_start(fits)
    agg = dict(fits=("key", "count"), start=("start", start_label), solver_s_total=("fit_time_s", "sum"),
               solver_s_median=("fit_time_s", "median"), solver_s_max=("fit_time_s", "max"),
               n_iter_median=("n_iter", "median"))
    if "task_time_s" in fits.columns:
        agg["task_s_total"] = ("task_time_s", "sum")
    return fits.groupby(["dataset", "solver_entry"], sort=True).agg(**agg).reset_index()


# Where each solver's dual point D comes from (solvers/: dcd.py, smo.py, svmlight.py, qp.py keep
# their dual variables alpha; references.py takes LIBSVM's alpha from SVC's dual_coef_; every
# solver of a w alone -- LIBLINEAR through LinearSVC, which does not expose its alpha, SGD, gd,
# newton, pegasos -- goes through objectives.linear_certificates, which rebuilds alpha from w).
OWN_DUAL = {"dual_cd", "kernel_dual"}
OWN_DUAL_SOLVERS = {"libsvm"}
REBUILT = "rebuilt from w"


def dual_source(fits: pd.DataFrame) -> pd.Series:
    """Per fit, where its D comes from: `own alpha` (the solver's dual variables), `rebuilt from
    w` (the KKT map alpha_i = 2C (1 - y_i f_i)_+ of the squared hinge), or `majorizer` (the
    multipliers of the majorization solvers' last active set)."""
    fam = fits["family"] if "family" in fits.columns else pd.Series("", index=fits.index)
    own = fam.isin(OWN_DUAL) | fits["solver"].isin(OWN_DUAL_SOLVERS) if "solver" in fits.columns else fam.isin(OWN_DUAL)
    return pd.Series(np.where(own, "own alpha", np.where(fam == "majorization", "majorizer", REBUILT)), index=fits.index)


@table("certificates", "Certificates", needs=("primal_objective",),
       note="Worst over folds, per configuration. `duality_gap_max`: P - D, an upper bound on how far P is from the "
            "optimum (P - P* <= P - D), in the objective's units; `rel_gap_max`: that over |P| (1e-3: P is within 0.1% "
            "of optimal, or better); `dual_from`: where D comes from (below); `kkt_violation_max`: the largest "
            "violation of the dual's optimality conditions (projected gradient), 0 at the optimum; `rel_subopt_max`: "
            "(P - f*)/|f*| against the certified reference, never shown finer than the certainty of f* "
            "(`f_star_rel_gap_max`, the reference solve's relative gap); `f_star_status`: how that reference ended.",
       lines=lambda data: certificate_lines(data))
def certificates(data: ReportData) -> pd.DataFrame:
    fits, keys, shown = _groups(data)
    fits = fits.assign(_floor=certainty_floor(fits) if "f_star" in fits.columns else np.nan)
    fits["_rel"] = np.maximum(pd.to_numeric(fits.get("rel_suboptimality"), errors="coerce"), fits["_floor"])
    fits["_rel_gap"] = (pd.to_numeric(fits["duality_gap"], errors="coerce")
                        / pd.to_numeric(fits["primal_objective"], errors="coerce").abs())
    fits["_dual"] = dual_source(fits).to_numpy()
    agg = dict(duality_gap_max=("duality_gap", "max"), rel_gap_max=("_rel_gap", "max"),
               dual_from=("_dual", "first"), kkt_violation_max=("kkt_violation", "max"),
               rel_subopt_max=("_rel", "max"), f_star_rel_gap_max=("_floor", "max"))
    if "f_star_status" in fits.columns:
        agg["f_star_status"] = ("f_star_status", lambda s: ", ".join(sorted({str(v) for v in s.dropna()})))
    out = fits.groupby(keys, sort=True, dropna=False).agg(**agg).reset_index()
    out.loc[out["rel_subopt_max"].isna(), "f_star_rel_gap_max"] = np.nan
    out.loc[out["rel_gap_max"].isna(), "dual_from"] = MISSING       # no D at all (the linear hinge)
    return out[["dataset", "solver_entry", *shown, *agg]]


def certificate_lines(data: ReportData) -> list[str]:
    """Why a fit can be `converged` beside a large gap: its D was rebuilt from w. Said once, with
    the worst such case and what the certified f* says of the same fits."""
    try:
        cert = certificates(data)
    except Skip:
        return []
    rebuilt = cert[(cert["dual_from"] == REBUILT) & (cert["rel_gap_max"] > 1e-2)]
    out = ["- `own alpha`: D of the solver's own dual variables, the gap its own certificate. `rebuilt from w`: "
           "the solver returns w only (LIBLINEAR through scikit-learn does not expose its alpha), so D is that of "
           "alpha_i = 2C (1 - y_i f_i)_+, the map that is exact at the optimum (squared hinge; the hinge has no "
           "such map, so no gap). It is a valid bound, but loose: an error e in the margins moves alpha by 2C e, "
           "so at large C a model close to f* can show a gap larger than P itself. A solver's `converged` is its "
           "own stopping test (LIBLINEAR: the projected gradient of its own dual under tol), not this gap; where "
           "f* is certified, `rel_subopt_max` is the measure to read."]
    if not rebuilt.empty:
        worst = rebuilt.sort_values("rel_gap_max").iloc[-1]
        sub = worst.get("rel_subopt_max", np.nan)
        out.append(f"- Here: {len(rebuilt)} configuration(s) with a rebuilt D show a relative gap over 1e-2; the worst, "
                   f"{worst['solver_entry']} on {worst['dataset']} at C={fmt(worst['C'])}, has gap "
                   f"{fmt(worst['duality_gap_max'])} (relative {fmt(worst['rel_gap_max'])})"
                   + (f" while (P - f*)/|f*| is {fmt(sub)}." if pd.notna(sub) else "."))
    return out if (cert["dual_from"] == REBUILT).any() else []


# What each status means, and what a user can change about it (the report's status section).
STATUS_ADVICE = {
    "max_iter": "stopped at its iteration cap before reaching its tolerance: raise max_iter, loosen tol, "
                "or scale the features (a dataset's `scale:`); large C makes every solver slower",
    "timeout": "stopped at its time limit (run.timeout_s or time_limit_s) before reaching its tolerance: "
               "raise the limit or loosen tol",
    "stalled": "stopped because it could not make further progress (the solver's warning says why; the "
               "certificates in the results show how far from the optimum it ended): try another solver "
               "for this problem or a looser tol",
    "diverged": "produced non-finite values: lower the step size or C, or scale the features",
    "budget": "ran its fixed schedule (epochs or steps) as planned; it has no convergence test, so the certificates and the suboptimality against f* say how close it got",
    "error": "raised an error (see Failures for the first line, results.parquet's `error` for the traceback)",
}


@table("status", "Status", needs=("status",),
       note="Fits per dataset and solver entry by status (`converged`: reached its own stopping tolerance, the "
            "solver's own test, not a certificate); `certified`: of the fits with a certified f*, those that end "
            "within the report's target (P - f*)/|f*|, and `above_target` those that do not, whatever their status. "
            "Every status other than `converged` is explained below.",
       lines=lambda data: status_lines(data.results, target_of(data)))
def status_table(results, target: float | None = None) -> pd.DataFrame:
    """Fits per dataset x solver entry and status, every status that occurs as its own column;
    where the results have f*, how many are certified within the target and how many are above."""
    if isinstance(results, ReportData):
        target = target_of(results) if target is None else target
        results = results.results
    if results.empty:
        return pd.DataFrame()
    t = results.groupby(["dataset", "solver_entry", "status"]).size().unstack("status", fill_value=0)
    order = ["converged"] + sorted(c for c in t.columns if c != "converged")
    t = t[[c for c in order if c in t.columns]]
    t.insert(0, "fits", t.sum(axis=1))
    t.columns.name = None
    if "f_star" in results.columns and results["f_star"].notna().any():
        rel = np.maximum(pd.to_numeric(results["rel_suboptimality"], errors="coerce"), certainty_floor(results))
        told = results["f_star"].notna() & (results["status"] != "error")
        eps = TARGET if target is None else target
        marks = results.assign(certified=told & (rel <= eps), above_target=told & (rel > eps))
        t = t.join(marks.groupby(["dataset", "solver_entry"])[["certified", "above_target"]].sum())
    return t.reset_index()


def status_lines(results: pd.DataFrame, target: float | None = None) -> list[str]:
    """The headline (`speed.headline`: fits that reached their own tolerance apart from those
    certified within the target of f*), then every non-converged status in plain words: which
    fits, at which C (or lambda), and what to change."""
    if results.empty:
        return []
    lines = headline(results, TARGET if target is None else target)
    bad = results[results["status"] != "converged"]
    if bad.empty:
        return lines + reference_lines(results)
    lines.append(f"The {len(bad)} fits that did not reach their own tolerance:")
    others = [c for c in swept_keys(results) if c not in ("C", LAMBDA)]
    for (ds, entry, status), grp in bad.groupby(["dataset", "solver_entry", "status"], sort=True):
        mine = results[(results["dataset"] == ds) & (results["solver_entry"] == entry)]
        n_all = len(mine)
        where = "; ".join(x for x in [point_names(grp), *(_values_among(grp, mine, c) for c in others)] if x)
        advice = STATUS_ADVICE.get(status, "ended with an unrecognised status")
        lines.append(f"- {entry} on {ds}: {len(grp)} of {n_all} fits `{status}`"
                     f"{' (' + where + ')' if where else ''}: {advice}.")
    return lines + reference_lines(results)


def _values_among(some: pd.DataFrame, all_: pd.DataFrame, col: str) -> str:
    """`eta=1, 2, 3` where some fits of an entry hold only part of the values `col` takes over
    all its fits (the step sizes that diverged); "" where they hold them all, or it has one."""
    mine = keyed(some, [col])[col]
    every = set(keyed(all_, [col])[col])
    vals = set(mine) - {MISSING}
    if len(every) < 2 or set(mine) == every or not vals:
        return ""
    return f"{short(col)}=" + ", ".join(fmt(v) for v in sorted(vals, key=lambda v: (isinstance(v, str), v)))


def reference_lines(results: pd.DataFrame) -> list[str]:
    """A reference solve that stopped short of its tolerance is said so, with how uncertain its
    f* is: suboptimalities below that are floored to it (`rel_suboptimality_floored`)."""
    if "f_star_status" not in results:
        return []
    short = results[results["f_star_status"].notna() & (results["f_star_status"] != "converged")]
    if short.empty:
        return []
    where = point_names(short)
    return [f"- f* not certified to its tolerance for {len(short)} fits ({where}; reference "
            f"{', '.join(sorted(short['f_star_status'].unique()))}): f* is known only to a relative gap of up to "
            f"{fmt(float(short['f_star_rel_gap'].max()))}, and smaller suboptimalities are shown floored to it."]


# ------------------------------------------------------------------ problems, targets, ratios
def _floored_rel(trace: pd.DataFrame) -> pd.Series:
    return (trace["primal"] - trace["f_star"]) / trace["f_star"].abs()


def _rel_gap(trace: pd.DataFrame) -> pd.Series:
    return trace["gap"] / trace["primal"].abs().where(trace["primal"] != 0)


def to_targets(fits: pd.DataFrame, traces: pd.DataFrame, targets=TARGETS, measure: str = "subopt") -> pd.DataFrame:
    """Per fit, the solver seconds `t_<eps>` and the iteration `it_<eps>` at which the measure
    first falls to each target, from its own trace; a fit without a trace (the references run as
    one call) reaches a target at its fit time and iteration count if its final model is within it.
    The fits are read as they are, each on its own start and stop: the report's speed tables read
    `speed.fit_times` of the timing fits instead (cold, dense, one clock); this stays for a paper's
    writer that reads a study's own fits at several targets.
    `subopt`: (P - f*)/|f*|, a target finer than the fit's f* certainty never reached (it could not
    be told); `gap`: the relative duality gap (P - D)/|P|, which needs no f*."""
    if measure == "subopt":
        out = fits[["key", "f_star", "fit_time_s", "n_iter", "rel_suboptimality"]].copy()
        out["_final"] = out["rel_suboptimality"]
        out["_floor"] = certainty_floor(fits).to_numpy()
        tr = traces[["key", "iteration", "time_s", "primal"]].merge(out[["key", "f_star"]], on="key", how="inner")
        tr["rel"] = _floored_rel(tr)
    else:
        out = fits[["key", "fit_time_s", "n_iter"]].copy()
        out["_final"] = (pd.to_numeric(fits["duality_gap"], errors="coerce")
                         / pd.to_numeric(fits["primal_objective"], errors="coerce").abs()).to_numpy()
        out["_floor"] = 0.0
        tr = traces[traces["key"].isin(out["key"])][["key", "iteration", "time_s", "primal", "gap"]].copy()
        tr["rel"] = _rel_gap(tr)
    no_trace = ~out["key"].isin(tr["key"])
    for eps in targets:
        hit = tr[tr["rel"] <= eps].groupby("key")[["time_s", "iteration"]].min()
        reached = no_trace & (out["_final"] <= eps)
        for col, src, own in ((f"t_{eps:g}", "time_s", "fit_time_s"), (f"it_{eps:g}", "iteration", "n_iter")):
            out[col] = out["key"].map(hit[src]).astype(float)
            out.loc[reached, col] = out.loc[reached, own]
            out.loc[out["_floor"] > eps, col] = np.nan
    return out.drop(columns=[c for c in ("f_star", "fit_time_s", "n_iter", "rel_suboptimality", "_floor", "_final")
                             if c in out.columns])


def baselines(data: ReportData) -> list[str]:
    """The entries ratios are taken against: the one the user names (report.baseline), else
    every reference-family entry (LIBLINEAR, LIBSVM, SGD) in the results."""
    if data.baseline:
        if data.baseline not in set(data.results["solver_entry"]):
            raise Skip(f"report.baseline={data.baseline!r} is not a solver entry of this run "
                       f"(entries: {', '.join(sorted(set(data.results['solver_entry'])))})")
        return [data.baseline]
    return sorted(set(data.results.loc[data.results["family"] == "reference", "solver_entry"]))


def _speed(data: ReportData) -> tuple[pd.DataFrame, list[str]]:
    """speed.speed_rows against the report's baselines, and the columns shown before its own:
    every problem key that differs between rows, the entry and its swept keys."""
    fits = data.fits
    if fits.empty or "f_star" not in fits.columns or not fits["f_star"].notna().any():
        raise Skip("no fit has a certified f*")
    rows = speed_rows(data, bases=baselines(data))
    if rows.empty:
        raise Skip("no fit has a certified f*")
    prob = problem_columns(rows)
    swept = swept_keys(data.results)
    own = [c for c in rows.columns if c.startswith("param_") or c == "job_overrides"]
    shown = [c for c in prob + ["solver_entry"] + own if c in ("dataset", "solver_entry", "C") or c in swept
             or (c in prob and rows[c].nunique() > 1)]
    return rows, shown


def _target_note(what: str) -> str:
    return (f"One row per whole problem (every problem key) and solver configuration; {what} Times are on the call "
            f"clock ({CLOCKS['call']}) and read from the {SOURCES['timing']}, or, where `source` says `sweep`, from "
            f"{SOURCES['sweep']}.")


def _never(v: float) -> object:
    return "not reached" if v == np.inf else v


@table("time_to_target", "Time to target suboptimality", needs=("f_star",), hint=F_STAR_HINT,
       note=_target_note("`t_target_s`: the median over folds of the seconds until (P - f*)/|f*| first fell to the "
                         "report's target (said at the top of the report and under the table), `not reached` where "
                         "the median fold never got there (it stopped above the target, by its own rule or at its "
                         "cap); `reached`: folds that got there, of the folds whose f* is certain enough to tell; "
                         "`ratio`: t_target_s over its `baseline`'s on the same problem, from the same start and on "
                         "the same clock (the baseline's fastest configuration there), only where both reached the "
                         "target; `own_stop_s`: the time to the solver's own stop, a different rule per solver, never "
                         "put in a ratio; `rel_subopt`: the median (P - f*)/|f*| where the fits ended; `source`, "
                         "`start` and `clock` are columns where rows differ in them, else said under the table."),
       lines=lambda data: target_lines(data))
def time_to_target(data: ReportData) -> pd.DataFrame:
    rows, shown = _speed(data)
    labels = [c for c in ("source", "start", "clock") if rows[c].nunique() > 1]     # one value: said under it
    out = rows[shown + labels + ["reached", "t_target_s"]].copy()
    out["baseline"], out["ratio"] = _own_ratio(rows)
    out["own_stop_s"], out["rel_subopt"] = rows["own_stop_s"], rows["rel_subopt"]
    out["t_target_s"] = out["t_target_s"].map(_never)
    return out


def _own_ratio(rows: pd.DataFrame) -> tuple[list, np.ndarray]:
    """Per row, its baseline (the first of the report's that shares a problem with its entry) and
    its ratio against it (`speed_rows`' `ratio_vs_<base>`): one column for every entry."""
    bases = [c[len("ratio_vs_"):] for c in rows.columns if c.startswith("ratio_vs_")]
    prob = problem_key(rows)
    of = {e: next((b for b in bases if shares_problem(rows, prob, e, b)), None) for e in set(rows["solver_entry"])}
    of.update({b: b for b in bases})
    names = [of[e] or "" for e in rows["solver_entry"]]
    ratio = np.array([rows[f"ratio_vs_{b}"].iloc[i] if b else np.nan for i, b in enumerate(names)], dtype=float)
    return names, ratio


def target_lines(data: ReportData) -> list[str]:
    """The target the table times to, and, per entry without a problem in common with a baseline,
    that it is in no ratio (it solves other problems: another loss, intercept or kernel)."""
    try:
        rows, _ = _speed(data)
    except Skip:
        return []
    prob = problem_key(rows)
    out = [f"- Target: (P - f*)/|f*| <= {fmt(target_of(data))} (report.target)."]
    same = [f"{c} `{rows[c].iloc[0]}`" for c in ("source", "start", "clock") if rows[c].nunique() == 1]
    if same:
        out.append(f"- Every row: {', '.join(same)} (see the note above the table).")
    bases = [c[len("ratio_vs_"):] for c in rows.columns if c.startswith("ratio_vs_")]
    alone = [e for e in sorted(set(rows["solver_entry"]))
             if e not in bases and not any(shares_problem(rows, prob, e, b) for b in bases)]
    if bases and alone:
        out.append(f"- No problem in common with a baseline ({', '.join(bases)}): {', '.join(alone)} (another loss, "
                   f"intercept, kernel or C): timed, never put in a ratio.")
    untimed = sorted(set(data.fits["solver_entry"]) - set(rows["solver_entry"]))
    if untimed:
        out.append(f"- Not timed: {', '.join(untimed)} (no certified f* for their problems: no other solver entry "
                   f"fits them, so none was planned; run.log's plan says which key keeps them apart).")
    return out


@table("iterations_to_target", "Iterations to target suboptimality", needs=("f_star",), hint=F_STAR_HINT,
       note="As above in the solver's own iterations (passes, steps, pairs: not comparable across solvers), from the "
            "same fits; `it_eps`: the median over folds of the iterations until (P - f*)/|f*| <= eps (`not reached` "
            "where the median fold never got there; empty where f* is not certain to eps).")
def iterations_to_target(data: ReportData) -> pd.DataFrame:
    rows, shown = _speed(data)
    fits, traces, _ = speed_fits(data)
    fits = with_start(fits[fits["f_star"].notna()])
    prob = problem_columns(fits)
    own = [c for c in config_columns(fits) if c not in prob]
    fits = keyed(fits, prob + own)
    keys = prob + ["solver_entry"] + own
    for eps in TARGETS:
        fits[f"it_{eps:g}"] = fits["key"].map(fit_times(fits, traces, eps).set_index("key")["it_target"]).to_numpy()
    icols = [f"it_{eps:g}" for eps in TARGETS]
    agg = fits.groupby(keys, sort=True, dropna=False).agg(
        runs=("key", "count"), start=("start", start_label), n_iter=("n_iter", "median"),
        **{c: (c, lambda v: float(np.median(v.dropna())) if v.notna().any() else np.nan) for c in icols}).reset_index()
    for c in icols:
        agg[c] = agg[c].map(_never)
    return agg[[c for c in shown if c in agg.columns] + ["runs", "start", "n_iter", *icols]]


@table("methods", "Methods x datasets", needs=("f_star",), hint=F_STAR_HINT,
       note="Per solver entry and dataset, against its baseline (report.baseline=<entry>, or the first reference "
            "entry that shares a problem with it): `xR over n`, the geometric mean over the n problems both brought "
            "to the target of its time to target over the baseline's (the rows of Time to target: same problem, "
            "start and clock), with how many problems it did not reach that the baseline did, and how many it "
            "reached that the baseline did not; `no problem shared` "
            "where it solves none of the baseline's problems (another loss, intercept, kernel or C): never ranked "
            "against it.")
def methods_table(data: ReportData) -> pd.DataFrame:
    rows, _ = _speed(data)
    bases = [c[len("ratio_vs_"):] for c in rows.columns if c.startswith("ratio_vs_")]
    if not bases:
        raise Skip("no baseline to take ratios against", hint="set `report.baseline=<solver entry>`")
    prob = problem_key(rows)
    out = []
    for entry, mine in rows.groupby("solver_entry", sort=True):
        base = next((b for b in bases if b != entry and shares_problem(rows, prob, entry, b)), None)
        row = {"solver_entry": entry, "baseline": "(baseline)" if entry in bases else base or "-"}
        for ds, grp in mine.groupby("dataset", sort=True):
            if entry in bases:
                row[ds] = "baseline"
                continue
            here = rows[rows["dataset"] == ds]
            if base is None or not shares_problem(here, prob, entry, base):
                row[ds] = f"no problem shared with {base or ', '.join(bases)}"
                continue
            reached_by_base = set(map(tuple, here.loc[(here["solver_entry"] == base) & np.isfinite(here["t_target_s"]),
                                                      prob].itertuples(index=False)))
            r = grp[f"ratio_vs_{base}"].dropna()
            r = r[r > 0]
            shared = set(map(tuple, here.loc[here["solver_entry"] == base, prob].itertuples(index=False)))
            mine_ = [(tuple(getattr(row_, c) for c in prob), np.isfinite(row_.t_target_s))
                     for row_ in grp.itertuples(index=False)]
            missed = sum(1 for p, hit in mine_ if not hit and p in reached_by_base)
            won = sum(1 for p, hit in mine_ if hit and p in shared - reached_by_base)
            text = f"x{fmt(float(np.exp(np.log(r).mean())))} over {len(r)}" if len(r) else "no ratio"
            row[ds] = text + (f"; {missed} not reached" if missed else "") + \
                (f"; {won} reached where {base} did not" if won else "")
        out.append(row)
    return pd.DataFrame(out).fillna("")


@table("failures", "Failures", needs=("status",), note="First line of each error; results.parquet's `error` holds the traceback.")
def failures(data: ReportData) -> pd.DataFrame:
    failed = data.results[data.results["status"] == "error"]
    if failed.empty:
        raise Skip("no fit failed")
    shown = swept_keys(data.results)
    rows = keyed(failed, shown)[["dataset", "solver_entry", *shown, "fold", "error"]].copy()
    rows["error"] = rows["error"].map(lambda e: (e or "").strip().splitlines()[0] if e else "")
    return rows.reset_index(drop=True)


