"""The report's tables, each registered with the columns it needs (see registry.py): each a
group-by the columnar engine computes over the run's fits (`ReportData.summary`), a row per
configuration, dataset or status, finished in pandas over those rows (ranks, labels, ratios)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .columnar import q
from .common import (F_STAR_HINT, LAMBDA, MISSING, certainty_floor, config_columns, floor_sql, fmt, key_value,
                     keyed, problem_columns, short)
from .registry import ReportData, Skip, table
from .speed import (CLOCKS, SOURCES, TARGET, headline, label_of, problem_key, shares_problem, speed_rows, start_sql,
                    target_of, timed_fits)

TARGETS = (1e-2, 1e-3, 1e-4, 1e-6)
# Failed fits listed one by one, at most; past it, one row per dataset, entry and first error line.
MAX_FAILURES = 100


def _groups(data: ReportData):
    """(the full config key: dataset, entry and every configuration column; the swept keys shown)."""
    if data.count("fits") == 0:
        raise Skip("no fit finished")
    cfg = [c for c in config_columns(data.frame_of("fits")) if c != "dataset"]
    return ["dataset", "solver_entry"] + cfg, data.swept()


def _cv_rows(data: ReportData) -> tuple[pd.DataFrame, list[str]]:
    """(cv_table's rows with `_scored`, the folds with a test score of each, and the swept keys
    shown); computed once for the tables that read them (a copy each)."""
    if "cv_rows" not in data.cache:
        data.cache["cv_rows"] = _cv_summary(data)
    agg, shown = data.cache["cv_rows"]
    return agg.copy(), list(shown)


def _cv_summary(data: ReportData) -> tuple[pd.DataFrame, list[str]]:
    keys, shown = _groups(data)
    agg = data.summary(keys, {
        "mean_test_score": "favg(num(test_accuracy))", "std_test_score": "stddev_samp(num(test_accuracy))",
        "mean_train_score": "favg(num(train_accuracy))", "mean_fit_time": "favg(num(fit_time_s))",
        "std_fit_time": "stddev_samp(num(fit_time_s))", "mean_n_iter": "favg(num(n_iter))",
        "_converged": "count_if(status = 'converged')", "_n": "count(*)", "_scored": "count(num(test_accuracy))",
        "start": f"histogram({start_sql(data.types('fits'))})"})
    agg["converged_folds"] = [f"{c}/{n}" for c, n in zip(agg.pop("_converged"), agg.pop("_n"))]
    agg["start"] = agg["start"].map(label_of)
    agg["rank_test_score"] = agg.groupby(["dataset", "solver_entry"])["mean_test_score"].rank(
        ascending=False, method="min").astype("Int64")
    return agg, shown


def cv_table(data: ReportData) -> pd.DataFrame:
    """One row per dataset x entry x configuration, in the shape of scikit-learn's
    `cv_results_`: the swept parameters, mean/std of the test score (accuracy) over folds, its
    rank within the dataset x entry, train score, fit time and how many folds converged."""
    agg, shown = _cv_rows(data)
    return agg[["dataset", "solver_entry", *shown, "mean_test_score", "std_test_score", "rank_test_score",
                "mean_train_score", "mean_fit_time", "std_fit_time", "mean_n_iter", "converged_folds", "start"]]


table("cv_results", "Cross-validation", needs=("test_accuracy",), top=("rank_test_score", True),
      note="Per configuration, over folds (scikit-learn's `cv_results_`): test score = accuracy; rank within "
           "the dataset and solver; `converged_folds`: folds whose fit reached its own tolerance, of all folds; "
           "`mean_fit_time`: the solver's seconds to its own stop, started as `start` says (`warm`: from the "
           "previous C's solution on its C path). Not a speed comparison: see Time to target.")(cv_table)


ONE_SE_NOTE = ("The configuration of best mean test accuracy (ties: the faster), picked from `configs` "
               "configurations, each score a mean over folds: the best of many noisy means is optimistic. "
               "`se_test_score` is the standard error of the best's mean (its std over folds / sqrt(folds)); "
               "`C_1se` is the one-standard-error choice (Hastie, Tibshirani and Friedman, *The Elements of "
               "Statistical Learning*, section 7.10; glmnet's `lambda.1se`): the smallest C, every other key as the "
               "best's, whose mean test accuracy is at least the best's less one standard error, the most "
               "regularised model the folds cannot tell from the best (scikit-learn's example *Balance model "
               "complexity and cross-validated score* takes one standard deviation instead: a wider band). Every "
               "swept key is shown.")


@table("best_params", "Best parameters per dataset and solver", needs=("test_accuracy",), note=ONE_SE_NOTE,
       lines=lambda data: one_se_lines(best_params(data)))
def best_params(data: ReportData) -> pd.DataFrame:
    cv, shown = _cv_rows(data)
    cv["se_test_score"] = cv["std_test_score"] / np.sqrt(cv["_scored"].astype(float))
    cv["_acc"] = cv["mean_test_score"].fillna(-np.inf)
    cv = cv.sort_values(["dataset", "solver_entry", "_acc", "mean_fit_time"], ascending=[True, True, False, True],
                        kind="stable")
    along = [c for c in ("C", LAMBDA) if c in shown]
    rows = []
    for _, grp in cv.groupby(["dataset", "solver_entry"], sort=True):
        best = grp.iloc[0].to_dict()
        best["configs"] = len(grp)
        if "C" in along:
            one = one_se_choice(grp, best, [c for c in shown if c not in along])
            best.update({f"{c}_1se": one[c] for c in along})
            best["mean_test_score_1se"] = one["mean_test_score"]
        rows.append(best)
    one_se = [f"{c}_1se" for c in along] + (["mean_test_score_1se"] if "C" in along else [])
    cols = ["dataset", "solver_entry", *shown, "mean_test_score", "std_test_score", "se_test_score", "configs",
            *one_se, "mean_train_score", "mean_fit_time", "std_fit_time", "mean_n_iter", "converged_folds", "start"]
    return pd.DataFrame(rows, columns=cols)


def one_se_choice(grp: pd.DataFrame, best: dict, fixed: list[str]) -> dict:
    """The one-standard-error choice among the configurations `grp` of one dataset and entry: of
    those that share the best's `fixed` keys (its C path), the one of least C whose mean test
    score is at least the best's less the best's standard error (no spread known, one fold: at
    least the best's). The best itself when no smaller C gets there."""
    path = grp
    for c in fixed:
        path = path[path[c].map(key_value) == key_value(best[c])]
    se = best["se_test_score"]
    floor = best["mean_test_score"] - (se if np.isfinite(se) else 0.0)
    within = path[path["mean_test_score"] >= floor]
    C = pd.to_numeric(within["C"], errors="coerce")
    if C.notna().any():
        return within.loc[C.idxmin()].to_dict()
    return best


def one_se_lines(best: pd.DataFrame) -> list[str]:
    """A line when a one-standard-error choice is not the best: the folds cannot tell it from
    the best, with less C."""
    if "C_1se" not in best.columns or best.empty:
        return []
    C, C1 = pd.to_numeric(best["C"], errors="coerce"), pd.to_numeric(best["C_1se"], errors="coerce")
    other = best[C1 < C]
    if other.empty:
        return []
    r = other.iloc[0]
    return [f"- {len(other)} of {len(best)} best configurations have a smaller C within one standard error of "
            f"their score (first: {r['solver_entry']} on {r['dataset']}, C={fmt(float(r['C_1se']))} at "
            f"{fmt(float(r['mean_test_score_1se']))} against C={fmt(float(r['C']))} at "
            f"{fmt(float(r['mean_test_score']))}, standard error {fmt(float(r['se_test_score']))}): the folds do "
            f"not tell them apart; the smaller C is the more regularised model."]


@table("timing", "Timing", needs=("fit_time_s",),
       note=f"Where the sweep's seconds went, each fit to its own stop, started as `start` counts: "
            f"`solver_s_*` on the solver clock ({CLOCKS['solver']}), `task_s_total` on the task clock "
            f"({CLOCKS['task']}). Not a speed comparison (stops and starts differ): see Time to target.")
def timing_table(data: ReportData) -> pd.DataFrame:
    if data.count("fits") == 0:
        raise Skip("no fit finished")
    agg = {"fits": "count(key)", "start": f"histogram({start_sql(data.types('fits'))})",
           "solver_s_total": "coalesce(fsum(num(fit_time_s)), 0.0)", "solver_s_median": "median(num(fit_time_s))",
           "solver_s_max": "max(num(fit_time_s))", "n_iter_median": "median(num(n_iter))"}
    if "task_time_s" in data.types("fits"):
        agg["task_s_total"] = "coalesce(fsum(num(task_time_s)), 0.0)"
    out = data.summary(["dataset", "solver_entry"], agg, where="dataset IS NOT NULL AND solver_entry IS NOT NULL")
    out["start"] = out["start"].map(label_of)
    return out


# Where each solver's dual point D comes from (solvers/: dcd.py, smo.py, svmlight.py, qp.py keep
# their dual variables alpha; references.py takes LIBSVM's alpha from SVC's dual_coef_; every
# solver of a w alone -- LIBLINEAR through LinearSVC, which does not expose its alpha, SGD, gd,
# newton, pegasos -- goes through objectives.linear_certificates, which rebuilds alpha from w).
OWN_DUAL = {"dual_cd", "kernel_dual"}
OWN_DUAL_SOLVERS = {"libsvm"}
REBUILT = "rebuilt from w"


def dual_source(types) -> str:
    """SQL naming, per fit, where its D comes from: `own alpha` (the solver's dual variables),
    `rebuilt from w` (the KKT map alpha_i = 2C (1 - y_i f_i)_+ of the squared hinge), or `majorizer`
    (the multipliers of the majorization solvers' last active set)."""
    fam = "family" if "family" in types else "''"
    own = f"{fam} IN ({', '.join(map(repr, sorted(OWN_DUAL)))})"
    if "solver" in types:
        own += f" OR solver IN ({', '.join(map(repr, sorted(OWN_DUAL_SOLVERS)))})"
    return f"(CASE WHEN {own} THEN 'own alpha' WHEN {fam} = 'majorization' THEN 'majorizer' ELSE '{REBUILT}' END)"


@table("certificates", "Certificates", needs=("primal_objective",), top=("rel_gap_max", False),
       note="Worst over folds, per configuration. `duality_gap_max`: P - D, an upper bound on how far P is from the "
            "optimum (P - P* <= P - D), in the objective's units; `rel_gap_max`: that over |P| (1e-3: P is within 0.1% "
            "of optimal, or better); `dual_from`: where D comes from (below); `kkt_violation_max`: the largest "
            "violation of the dual's optimality conditions (projected gradient), 0 at the optimum; `rel_subopt_max`: "
            "(P - f*)/|f*| against the certified reference, never shown finer than the certainty of f* "
            "(`f_star_rel_gap_max`, the reference solve's relative gap); `f_star_status`: how that reference ended.",
       lines=lambda data: certificate_lines(data))
def certificates(data: ReportData) -> pd.DataFrame:
    keys, shown = _groups(data)
    types = data.types("fits")
    floor = floor_sql(types) if "f_star" in types else "NULL::DOUBLE"
    rel = "num(rel_suboptimality)" if "rel_suboptimality" in types else "NULL::DOUBLE"
    agg = {"duality_gap_max": "max(num(duality_gap))",
           "rel_gap_max": "max(nn(num(duality_gap) / abs(num(primal_objective))))",
           "dual_from": f"any_value({dual_source(types)})", "kkt_violation_max": "max(num(kkt_violation))",
           "rel_subopt_max": f"max(CASE WHEN {rel} IS NULL THEN NULL ELSE greatest({rel}, {floor}) END)",
           "f_star_rel_gap_max": f"max({floor})"}
    if "f_star_status" in types:
        agg["f_star_status"] = ("coalesce(string_agg(DISTINCT CAST(f_star_status AS VARCHAR), ', ' "
                                "ORDER BY CAST(f_star_status AS VARCHAR)), '')")
    out = data.summary(keys, agg)
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
       lines=lambda data: status_lines(data, target_of(data)))
def status_table(results, target: float | None = None) -> pd.DataFrame:
    """Fits per dataset x solver entry and status, every status that occurs as its own column;
    where the results have f*, how many are certified within the target and how many are above.
    `results`: a ReportData, or a frame of them."""
    data = results if isinstance(results, ReportData) else ReportData(results)
    target = target_of(data) if target is None and isinstance(results, ReportData) else target
    if data.count("results") == 0:
        return pd.DataFrame()
    named = "dataset IS NOT NULL AND solver_entry IS NOT NULL"
    counts = data.summary(["dataset", "solver_entry", "status"], {"n": "count(*)"}, name="results",
                          where=f"{named} AND status IS NOT NULL")
    t = counts.set_index(["dataset", "solver_entry", "status"])["n"].unstack("status", fill_value=0)
    order = ["converged"] + sorted(c for c in t.columns if c != "converged")
    t = t[[c for c in order if c in t.columns]]
    t.insert(0, "fits", t.sum(axis=1))
    t.columns.name = None
    if data.has("results", "f_star"):
        types = data.types("results")
        eps = repr(float(TARGET if target is None else target))
        rel = f"(CASE WHEN num(rel_suboptimality) IS NULL THEN NULL ELSE greatest(num(rel_suboptimality), {floor_sql(types)}) END)"
        told = "(num(f_star) IS NOT NULL AND status IS DISTINCT FROM 'error')"
        marks = data.summary(["dataset", "solver_entry"], {"certified": f"count_if({told} AND {rel} <= {eps})",
                                                            "above_target": f"count_if({told} AND {rel} > {eps})"},
                             name="results", where=named)
        t = t.join(marks.set_index(["dataset", "solver_entry"]))
    return t.reset_index()


def status_lines(results, target: float | None = None) -> list[str]:
    """The headline (`speed.headline`: fits that reached their own tolerance apart from those
    certified within the target of f*), then every non-converged status in plain words: which
    fits, at which C (or lambda), and what to change. `results`: a ReportData, or a frame."""
    data = results if isinstance(results, ReportData) else ReportData(results)
    if data.count("results") == 0:
        return []
    lines = headline(data, TARGET if target is None else target)
    res = data.table("results")
    n_bad = data.count("results", "status IS DISTINCT FROM 'converged'")
    if not n_bad:
        return lines + reference_lines(data)
    lines.append(f"The {n_bad} fits that did not reach their own tolerance:")
    others = [c for c in data.swept() if c not in ("C", LAMBDA)]
    groups = data.summary(["dataset", "solver_entry", "status"], {"n": "count(*)"}, name="results",
                          where="status IS DISTINCT FROM 'converged' AND status IS NOT NULL "
                                "AND dataset IS NOT NULL AND solver_entry IS NOT NULL")
    totals = data.summary(["dataset", "solver_entry"], {"n": "count(*)"}, name="results",
                          where="dataset IS NOT NULL AND solver_entry IS NOT NULL").set_index(["dataset", "solver_entry"])["n"]
    for g in groups.itertuples(index=False):
        ds, entry, status = g.dataset, g.solver_entry, g.status
        mine = f"dataset = {_lit(ds)} AND solver_entry = {_lit(entry)}"
        grp = f"{mine} AND status = {_lit(status)}"
        where = "; ".join(x for x in [point_names(data, grp), *(_values_among(data, grp, mine, c) for c in others)] if x)
        advice = STATUS_ADVICE.get(status, "ended with an unrecognised status")
        lines.append(f"- {entry} on {ds}: {g.n} of {int(totals[(ds, entry)])} fits `{status}`"
                     f"{' (' + where + ')' if where else ''}: {advice}.")
    del res
    return lines + reference_lines(data)


def _lit(v) -> str:
    from .columnar import lit
    return lit(v)


def point_names(data: ReportData, where: str) -> str:
    """`common.point_names` of the results rows `where` selects: `lambda=0.001, lambda=0.01` for
    fits given by lambda, `C=0.1, C=1` for the others (each value once, not once per fold's C)."""
    types = data.types("results")
    lam = data.norm(LAMBDA) if LAMBDA in types else "NULL"
    given = f"({lam} IS NOT NULL)"
    rows = data.sql(f"SELECT DISTINCT {given} AS _given, CASE WHEN {given} THEN num({q(LAMBDA) if LAMBDA in types else 'NULL'}) "
                    f"ELSE num(\"C\") END AS _v FROM {data.table('results')} WHERE {where}")
    rows = rows[rows["_v"].notna()]
    lams = sorted(rows.loc[rows["_given"], "_v"].unique())
    Cs = sorted(rows.loc[~rows["_given"], "_v"].unique())
    return ", ".join([f"lambda={fmt(float(v))}" for v in lams] + [f"C={fmt(float(c))}" for c in Cs])


def _values_among(data: ReportData, some: str, all_: str, col: str) -> str:
    """`eta=1, 2, 3` where some fits of an entry (`some`) hold only part of the values `col` takes
    over all its fits (`all_`: the step sizes that diverged); "" where they hold them all, or it has one."""
    from .common import key_values
    expr = data.norm(col)
    mine = set(key_values(data.sql(f"SELECT DISTINCT {expr} AS v FROM {data.table('results')} WHERE {some}")["v"]))
    every = set(key_values(data.sql(f"SELECT DISTINCT {expr} AS v FROM {data.table('results')} WHERE {all_}")["v"]))
    vals = mine - {MISSING}
    if len(every) < 2 or mine == every or not vals:
        return ""
    return f"{short(col)}=" + ", ".join(fmt(v) for v in sorted(vals, key=lambda v: (isinstance(v, str), v)))


def reference_lines(data: ReportData) -> list[str]:
    """A reference solve that stopped short of its tolerance is said so, with how uncertain its
    f* is: suboptimalities below that are floored to it (`rel_suboptimality_floored`)."""
    if "f_star_status" not in data.types("results"):
        return []
    where = "f_star_status IS NOT NULL AND f_star_status <> 'converged'"
    n = data.count("results", where)
    if not n:
        return []
    got = data.sql(f"SELECT string_agg(DISTINCT f_star_status, ', ' ORDER BY f_star_status) AS s, "
                   f"max(num(f_star_rel_gap)) AS g FROM {data.table('results')} WHERE {where}").iloc[0]
    return [f"- f* not certified to its tolerance for {n} fits ({point_names(data, where)}; reference "
            f"{got['s']}): f* is known only to a relative gap of up to "
            f"{fmt(float(got['g']))}, and smaller suboptimalities are shown floored to it."]


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


def entries(data: ReportData, where: str | None = None) -> list[str]:
    """The solver entries of the run's results (those `where` selects), sorted."""
    got = data.sql(f"SELECT DISTINCT solver_entry FROM {data.table('results')}" + (f" WHERE {where}" if where else ""))
    return sorted(str(e) for e in got["solver_entry"].dropna())


def baselines(data: ReportData) -> list[str]:
    """The entries ratios are taken against: the one the user names (report.baseline), else
    every reference-family entry (LIBLINEAR, LIBSVM, SGD) in the results."""
    if data.baseline:
        every = entries(data)
        if data.baseline not in every:
            raise Skip(f"report.baseline={data.baseline!r} is not a solver entry of this run "
                       f"(entries: {', '.join(every)})")
        return [data.baseline]
    return entries(data, "family = 'reference'") if "family" in data.types("results") else []


def _speed(data: ReportData) -> tuple[pd.DataFrame, list[str]]:
    """speed.speed_rows against the report's baselines, and the columns shown before its own:
    every problem key that differs between rows, the entry and its swept keys."""
    if not data.has("fits", "f_star"):
        raise Skip("no fit has a certified f*")
    rows = speed_rows(data, bases=baselines(data))
    if rows.empty:
        raise Skip("no fit has a certified f*")
    prob = problem_columns(rows)
    swept = data.swept()
    own = [c for c in rows.columns if c.startswith("param_") or c == "job_overrides"]
    shown = [c for c in prob + ["solver_entry"] + own if c in ("dataset", "solver_entry", "C") or c in swept
             or (c in prob and rows[c].nunique() > 1)]
    return rows, shown


def _target_note(what: str) -> str:
    return (f"One row per whole problem (every problem key) and solver configuration; {what} Times are on the call "
            f"clock ({CLOCKS['call']}), or where `clock` says `wall` on the wall clock ({CLOCKS['wall']}), and read "
            f"from the {SOURCES['timing']}, or, where `source` says `sweep`, from "
            f"{SOURCES['sweep']}.")


def _never(v: float, censored: float = 0, budget: float | None = None) -> object:
    """A median time (or iteration count) as shown: `not reached` for inf, `not reached within B s`
    where folds were cut by their timing budget B (censored: never a time)."""
    if v != np.inf:
        return v
    return f"not reached within {budget:g} s" if censored and budget is not None and np.isfinite(budget) \
        else "not reached"


@table("time_to_target", "Time to target suboptimality", needs=("f_star",), hint=F_STAR_HINT,
       note=_target_note("`t_target_s`: the median over folds of the seconds until (P - f*)/|f*| first fell to the "
                         "report's target (said at the top of the report and under the table), `not reached` where "
                         "the median fold never got there (it stopped above the target, by its own rule or at its "
                         "cap), `not reached within B s` where folds were cut by their timing budget B first "
                         "(run.timing_budget_s: censored, never a time); `reached`: folds that got there, of the folds whose f* is certain enough to tell; "
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
    out["t_target_s"] = [_never(v, c, b) for v, c, b in zip(out["t_target_s"], rows["censored"], rows["budget_s"])]
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
    untimed = sorted(set(entries(data, "status IS DISTINCT FROM 'error'")) - set(rows["solver_entry"]))
    if untimed:
        out.append(f"- Not timed: {', '.join(untimed)} (no certified f* for their problems: no other solver entry "
                   f"fits them, so none was planned; run.log's plan says which key keeps them apart).")
    return out


@table("iterations_to_target", "Iterations to target suboptimality", needs=("f_star",), hint=F_STAR_HINT,
       note="As above in the solver's own iterations (passes, steps, pairs: not comparable across solvers), from the "
            "same fits; `it_eps`: the median over folds of the iterations until (P - f*)/|f*| <= eps (`not reached` "
            "where the median fold never got there, `not reached within B s` where its timing budget cut it first; "
            "empty where f* is not certain to eps, and for a library's ladder at an eps other than report.target: "
            "its rungs stop at the first that reaches report.target, so they resolve no other).")
def iterations_to_target(data: ReportData) -> pd.DataFrame:
    rows, shown = _speed(data)
    # The fits of the speed rows, each with its iterations to every target (`fit_times_sql`).
    its = [data.engine.view(f"SELECT key AS _k, _it_target, _censored_s FROM {q(timed_fits(data, eps))}")
           for eps in TARGETS]
    icols = [f"it_{eps:g}" for eps in TARGETS]
    joined = data.engine.view(
        "SELECT f.*, " + ", ".join(f"i{j}._it_target AS {q(c)}, i{j}._censored_s AS {q('_cut_' + c)}"
                                   for j, c in enumerate(icols))
        + f" FROM {q(timed_fits(data, TARGETS[0]))} f "
        + " ".join(f"JOIN {q(v)} i{j} ON f.key = i{j}._k" for j, v in enumerate(its)))
    d = data.view({"_its": joined})
    cols = d.frame_of("_its")
    prob = problem_columns(cols)
    own = [c for c in config_columns(cols) if c not in prob]
    keys = prob + ["solver_entry"] + own
    where = "f_star IS NOT NULL" if "f_star" in d.types("_its") else None
    agg = d.summary(keys, {"runs": "count(key)", "start": "histogram(\"start\")", "n_iter": "median(num(n_iter))",
                           **{c: f"median({q(c)})" for c in icols},
                           **{f"_n_{c}": f"count({q('_cut_' + c)})" for c in icols},
                           **{f"_b_{c}": f"max({q('_cut_' + c)})" for c in icols}}, name="_its", where=where)
    agg["start"] = agg["start"].map(label_of)
    for c in icols:
        agg[c] = [_never(v, n, b) for v, n, b in zip(agg[c], agg.pop(f"_n_{c}"), agg.pop(f"_b_{c}"))]
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
            cut = sum(1 for row_ in grp.itertuples(index=False) if row_.censored and not np.isfinite(row_.t_target_s)
                      and tuple(getattr(row_, c) for c in prob) in reached_by_base)
            won = sum(1 for p, hit in mine_ if hit and p in shared - reached_by_base)
            text = f"x{fmt(float(np.exp(np.log(r).mean())))} over {len(r)}" if len(r) else "no ratio"
            row[ds] = text + (f"; {missed} not reached" if missed else "") + \
                (f" ({cut} within the timing budget: censored)" if cut else "") + \
                (f"; {won} reached where {base} did not" if won else "")
        out.append(row)
    return pd.DataFrame(out).fillna("")


# Failed fits listed one by one, at most; past it, one row per dataset, entry and first error line.
MAX_FAILURES = 100


@table("failures", "Failures", needs=("status",), note="First line of each error; results.parquet's `error` holds the traceback.")
def failures(data: ReportData) -> pd.DataFrame:
    n = data.count("results", "status = 'error'")
    if not n:
        raise Skip("no fit failed")
    if n > MAX_FAILURES:
        # One row per dataset, entry and first line: a sweep that failed everywhere lists its
        # reasons, not a row per fit.
        return data.sql(f"SELECT dataset, solver_entry, split_part(trim(coalesce(error, '')), chr(10), 1) AS error, "
                        f"count(*) AS fits FROM {data.table('results')} WHERE status = 'error' GROUP BY ALL "
                        f"ORDER BY dataset, solver_entry, fits DESC, error")
    shown = data.swept()
    # What `keyed` reads of a row besides the columns shown (a lambda point's C is a mean).
    extra = [c for c in ("param_lambda", "param_lambda_convention", "job_overrides") if c in data.types("results")]
    cols = ", ".join(q(c) for c in dict.fromkeys(["dataset", "solver_entry", *shown, "fold", "error", *extra]))
    failed = data.sql(f"SELECT {cols} FROM {data.table('results')} WHERE status = 'error'")
    rows = keyed(failed, shown)[["dataset", "solver_entry", *shown, "fold", "error"]].copy()
    rows["error"] = rows["error"].map(lambda e: (e or "").strip().splitlines()[0] if e else "")
    return rows.reset_index(drop=True)
