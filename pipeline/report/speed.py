"""Speed comparisons, like for like: the one place where the report (and a paper's writer) gets
the time a solver needs, and which times may be put in one ratio.

A time is compared with another only when both are

- **to one target**: the seconds until the relative suboptimality (P - f*)/|f*| against the
  certified f* first falls to `target` (``report.target``, default `TARGET`), never the time to
  a solver's own stop: stopping rules differ (LIBLINEAR's projected-gradient spread, a plugin's
  duality gap, Pegasos's epochs), so the time to each own stop compares stops, not solvers. A fit
  that never gets there is infinitely slow: a median over folds that lands on such a fold is
  *not reached*, never a time, and is in no ratio. A target finer than the certainty of f* cannot
  be told reached and is not read (`reachable`);
- **from a trace dense enough to read it**: the timing fits (timing.parquet, plan.timing_template),
  traced at every due point, about 10 a decade, with the solver's clock paused while a point is
  recorded; a library run as one call (LIBLINEAR, LIBSVM and SGD through scikit-learn) by a ladder
  of cold solves capped at 1, 2, 3, ... iterations on the same grid (tasks._ladder). The sweep's
  own traces are thinned by the recorder's overhead budget (two points for a fast solver) and read
  only where a run has no timing fits (`run.timing=false`), said so in `source`;
- **from the same start**: the timing fits start cold. A sweep's fits along a C path start warm
  (from the previous C's solution) while a library starts cold each time; every row carries its
  `start`, and a ratio is taken only between rows of one and the same start (`ratios`, `single`);
- **on one problem**: every problem column equal (dataset, loss, intercept, kernel and its
  parameters, C): a ratio never crosses problems, and an entry that shares no problem with the
  baseline is said to share none;
- **on one clock**: "call" (`CLOCKS`), the whole call from the fold's arrays to a model: a
  library's fit call as it is timed (scikit-learn checks and copies its input inside it), and our
  solver's seconds plus `setup_s`, the seconds its problem took to build from the same arrays
  (what SVMClassifier.fit does before the solver); a timing fit counts the CPU seconds of its
  process, so that a wait for a core on a busy machine is not charged to the solver. A sweep fit
  (no setup_s) is on the solver's clock (wall seconds), said so in `clock`.

These are plain functions of columns (results and traces tables in, a table out), so a paper's
writer calls them as the report's tables do: `fit_times` (per fit), `speed_rows` (per problem and
configuration, with ratios), `headline` (the run's sentence about convergence and certification).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .common import certainty_floor, config_columns, fmt, keyed, problem_columns

TARGET = 1e-3

# The clocks a time column can be on, by the name the tables give them.
CLOCKS = {
    "call": "the whole call from the fold's arrays to a model, in CPU seconds of the task's process (a wait "
            "for a core on a busy machine is not counted): a library's fit call (its input checks and copies "
            "inside), our solver's seconds plus the seconds its problem took to build from the arrays",
    "solver": "the solver's own seconds from a built problem to its model, trace points and certificates "
              "excluded (a library's: its whole fit call)",
    "task": "the task's seconds: loading the fold, the fit, its certificates and scores",
}
# Where the times of a speed row come from.
SOURCES = {
    "timing": "timing fits: cold starts, traced at every due point (a library: a ladder of cold solves capped "
              "at 1, 2, 3, ... iterations)",
    "sweep": "the sweep's own fits (run.timing=false, or no timing fit for this problem): their traces may be "
             "thinned by the recorder's overhead budget, so a time to target is an upper bound",
}


def problem_key(df: pd.DataFrame) -> list[str]:
    """The columns two rows must share to be one problem in one run: every problem column, and a
    gathered multirun's job overrides (its jobs may differ where no column shows it, a dataset's
    `max_rows`, and were measured in different runs)."""
    return problem_columns(df) + (["job_overrides"] if "job_overrides" in df.columns else [])


def with_start(fits: pd.DataFrame) -> pd.DataFrame:
    """fits with a `start` column: the results' own, else (a results table written before it
    was recorded) warm exactly where a fit names the point it started from (`warm_from`)."""
    if "start" in fits.columns:
        return fits
    warm = fits["warm_from"].notna().to_numpy() if "warm_from" in fits.columns else np.zeros(len(fits), bool)
    return fits.assign(start=np.where(warm, "warm", "cold"))


def target_of(data) -> float:
    """The target a report times solvers to: `report.target`, else `TARGET`."""
    return float(getattr(data, "target", None) or TARGET)


def speed_fits(data) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """(fits, traces, source per fit): the finished fits that speed is read from. Per problem, the
    timing fits where the run has any for it, else the sweep's fits (`source` says which)."""
    sweep = data.fits
    timing = getattr(data, "timing", None)
    if timing is None or timing.empty:
        return sweep, data.traces, pd.Series("sweep", index=sweep.index)
    timing = timing[timing["status"] != "error"]
    prob = problem_key(sweep)
    have = set(map(tuple, keyed(timing, prob)[prob].itertuples(index=False)))
    rest = sweep[[t not in have for t in map(tuple, keyed(sweep, prob)[prob].itertuples(index=False))]]
    fits = pd.concat([timing, rest], ignore_index=True)
    traces = pd.concat([data.timing_traces, data.traces[data.traces["key"].isin(rest["key"])]], ignore_index=True)
    source = pd.Series(["timing"] * len(timing) + ["sweep"] * len(rest), index=fits.index)
    return fits, traces, source


def reachable(fits: pd.DataFrame, target: float) -> pd.Series:
    """Per fit, whether its f* is certain enough to tell the target reached (its certainty, the
    reference's relative gap, at most the target)."""
    if "f_star" not in fits.columns:
        return pd.Series(False, index=fits.index)
    return fits["f_star"].notna() & (certainty_floor(fits) <= target)


def fit_times(fits: pd.DataFrame, traces: pd.DataFrame, target: float = TARGET, measure: str = "subopt") -> pd.DataFrame:
    """Per fit (`key`): `t_target_s`, the seconds on the call clock until its measure first fell
    to `target` (inf: never; NaN: f* not certain enough to tell), `it_target` its iteration,
    `own_stop_s` the seconds to the fit's own stop on the same clock, `rel_subopt` where it ended,
    and `clock` ("call" where the fit carries its setup seconds, else "solver"). The measure:
    `subopt`, (P - f*)/|f*|; `gap`, the relative duality gap (P - D)/|P|, which needs no f*. A fit
    without a trace point reaches the target at its own stop if it ended within it."""
    out = fits[["key"]].copy()
    setup = pd.to_numeric(fits["setup_s"], errors="coerce") if "setup_s" in fits.columns \
        else pd.Series(np.nan, index=fits.index)
    out["clock"] = np.where(setup.notna(), "call", "solver")
    setup = setup.fillna(0.0).to_numpy()
    out["own_stop_s"] = pd.to_numeric(fits["fit_time_s"], errors="coerce").to_numpy() + setup
    out["rel_subopt"] = pd.to_numeric(fits.get("rel_suboptimality"), errors="coerce").to_numpy() \
        if "rel_suboptimality" in fits.columns else np.nan
    if "key" not in traces.columns:          # no trace at all (run.trace=false)
        traces = pd.DataFrame(columns=["key", "iteration", "time_s", "primal", "gap"])
    tr = traces[traces["key"].isin(out["key"])]
    if measure == "subopt":
        star = tr["key"].map(fits.set_index("key")["f_star"]).astype(float)
        rel = (tr["primal"] - star) / star.abs()
        final = out["rel_subopt"].to_numpy()
        ok = reachable(fits, target).to_numpy()
    else:
        rel = tr["gap"] / tr["primal"].abs().where(tr["primal"] != 0)
        final = (pd.to_numeric(fits["duality_gap"], errors="coerce")
                 / pd.to_numeric(fits["primal_objective"], errors="coerce").abs()).to_numpy()
        ok = np.ones(len(fits), bool)
    hit = tr[(rel <= target).to_numpy()].groupby("key")[["time_s", "iteration"]].min()
    traced = out["key"].isin(tr["key"]).to_numpy()
    t = out["key"].map(hit["time_s"]).astype(float).to_numpy() + setup
    it = out["key"].map(hit["iteration"]).astype(float).to_numpy()
    # No trace at all (a multiclass fit, run.trace=false): its own stop, if it ended within.
    final_in = final <= target
    t = np.where(traced, t, np.where(final_in, out["own_stop_s"].to_numpy(), np.nan))
    it = np.where(traced, it, np.where(final_in, pd.to_numeric(fits["n_iter"], errors="coerce").to_numpy(), np.nan))
    # A ladder cut short (its budget spent, or its task killed: no rung at all) cannot tell that the
    # target was never reached: the library might have got there on a later rung.
    method = fits["timing_method"].to_numpy() if "timing_method" in fits.columns else np.full(len(fits), None)
    cut = fits["info_ladder_cut"].fillna(False).astype(bool).to_numpy() if "info_ladder_cut" in fits.columns \
        else np.zeros(len(fits), bool)
    unknown = (method == "ladder") & (cut | ~traced)
    never = np.where(unknown, np.nan, np.inf)
    out["t_target_s"] = np.where(ok, np.where(np.isnan(t), never, t), np.nan)
    out["it_target"] = np.where(ok, np.where(np.isnan(it), never, it), np.nan)
    return out


def speed_view(data):
    """The run as the figures that put solvers' convergence side by side see it (`speed_fits`):
    per problem, the timing fits, their seconds moved to the call clock (time_s and fit_time_s
    plus setup_s, which is then 0: `fit_times` of the view adds nothing again), else
    the sweep's fits, a warm-started configuration named `<entry> (warm start)`, so that a warm
    line is never drawn unlabelled beside a cold one. Made once per report (kept on `data`)."""
    if "speed_view" not in data.cache:
        data.cache["speed_view"] = _speed_view(data)
    return data.cache["speed_view"]


def _speed_view(data):
    from .registry import ReportData
    fits, traces, _ = speed_fits(data)
    if "setup_s" in fits.columns:
        # On the call clock once: the trace's seconds and the fit's own, its setup then counted in.
        setup = pd.to_numeric(fits["setup_s"], errors="coerce")
        by_key = pd.Series(setup.to_numpy(), index=fits["key"].to_numpy())
        traces = traces.assign(time_s=traces["time_s"] + traces["key"].map(by_key).fillna(0.0).to_numpy())
        fits = fits.assign(fit_time_s=pd.to_numeric(fits["fit_time_s"], errors="coerce") + setup.fillna(0.0),
                           setup_s=setup.where(setup.isna(), 0.0))
    fits = with_start(fits)
    warm = (fits["start"] == "warm").to_numpy()
    fits = fits.assign(solver_entry=np.where(warm, fits["solver_entry"].astype(str) + " (warm start)",
                                             fits["solver_entry"].astype(str)))
    view = ReportData(fits.reset_index(drop=True), traces.reset_index(drop=True), data.models, baseline=data.baseline,
                      name=data.name, target=data.target)
    return view


def start_label(starts: pd.Series) -> str:
    """The start of a row of fits: "cold", "warm", or "warm 4, cold 1" where they differ (a C path's
    first point starts cold)."""
    counts = starts.fillna("cold").value_counts()
    if len(counts) == 1:
        return str(counts.index[0])
    return ", ".join(f"{k} {int(v)}" for k, v in counts.sort_index(ascending=False).items())


def _median_with_inf(values: pd.Series) -> float:
    """The median over folds, a fold that never got there infinite (so that a median landing on
    one is inf: not reached); NaN only where no fold can tell."""
    v = values.dropna().to_numpy(dtype=float)
    return float(np.median(v)) if v.size else math.nan


def speed_rows(data, target: float | None = None, bases: list[str] | None = None) -> pd.DataFrame:
    """One row per whole problem (every problem column) and solver configuration: `source`,
    `start`, `clock`, `folds`, `reached` (folds within the target of f*, "k/n"), `t_target_s`
    (median over folds on the clock; inf: not reached), `it_target`, `own_stop_s` (labelled: the
    time to the solver's own stop, never put in a ratio), `rel_subopt` (median final), and per base
    entry `ratio_vs_<base>`: t_target_s over the base's on the same problem and start (its fastest
    configuration there), where both reached the target. Problems without a certified f* are left
    out. `bases` default: none (`tables.baselines` gives the report's). Made once per report
    (kept on `data`): every speed table reads it."""
    target = target_of(data) if target is None else float(target)
    key = ("speed_rows", target, tuple(bases or ()))
    if key not in data.cache:
        data.cache[key] = _speed_rows(data, target, list(bases or ()))
    return data.cache[key].copy()


def _speed_rows(data, target: float, bases: list[str]) -> pd.DataFrame:
    fits, traces, source = speed_fits(data)
    fits = with_start(fits).assign(_source=source.to_numpy())
    if "f_star" in fits.columns:
        fits = fits[fits["f_star"].notna()]
    if fits.empty:
        return pd.DataFrame()
    times = fit_times(fits, traces, target).set_index("key")
    prob = problem_columns(fits)
    own = [c for c in config_columns(fits) if c not in prob]
    fits = keyed(fits, prob + own)
    for c in ("t_target_s", "it_target", "own_stop_s", "rel_subopt", "clock"):
        fits[f"_{c}"] = fits["key"].map(times[c]).to_numpy()
    fits["_floored"] = np.maximum(fits["_rel_subopt"], certainty_floor(fits))
    fits["_told"] = fits["_t_target_s"].notna()
    fits["_hit"] = np.isfinite(fits["_t_target_s"])
    keys = prob + ["solver_entry"] + own
    out = fits.groupby(keys, sort=True, dropna=False).agg(
        source=("_source", "first"), start=("start", start_label), clock=("_clock", start_label),
        folds=("key", "count"), _hit=("_hit", "sum"), _told=("_told", "sum"),
        t_target_s=("_t_target_s", _median_with_inf), it_target=("_it_target", _median_with_inf),
        own_stop_s=("_own_stop_s", "median"), rel_subopt=("_floored", "median")).reset_index()
    out.insert(out.columns.get_loc("t_target_s"), "reached",
               [f"{int(h)}/{int(t)}" if t else "-" for h, t in zip(out.pop("_hit"), out.pop("_told"))])
    for base in bases:
        out[f"ratio_vs_{base}"] = ratios(out, problem_key(out), base)
    return out


def single(label: str) -> bool:
    """Whether a row's start (or clock) is one, not mixed ("warm 4, cold 1"): a row of warm and
    cold folds is put in no ratio, against either."""
    return "," not in label


def ratios(rows: pd.DataFrame, prob: list[str], base: str) -> np.ndarray:
    """Each row's t_target_s over the base entry's on the same problem, the same start and the same
    clock (the base's fastest configuration there); NaN where either did not reach the target
    (inf), could not tell (NaN), or no base row matches."""
    base_rows = rows[(rows["solver_entry"] == base) & np.isfinite(rows["t_target_s"])
                     & rows["start"].map(single) & rows["clock"].map(single)]
    best = base_rows.groupby(prob + ["start", "clock"], dropna=False)["t_target_s"].min()
    out = np.full(len(rows), np.nan)
    for i, row in enumerate(rows.itertuples(index=False)):
        r = row._asdict()
        if not (np.isfinite(r["t_target_s"]) and single(r["start"]) and single(r["clock"])):
            continue
        ref = best.get(tuple(r[c] for c in prob) + (r["start"], r["clock"]))
        if ref is not None and ref > 0:
            out[i] = r["t_target_s"] / ref
    return out


def shares_problem(rows: pd.DataFrame, prob: list[str], entry: str, base: str) -> bool:
    """Whether `entry` and `base` have a row on one problem."""
    mine = set(map(tuple, rows.loc[rows["solver_entry"] == entry, prob].itertuples(index=False)))
    return any(tuple(r) in mine for r in rows.loc[rows["solver_entry"] == base, prob].itertuples(index=False))


def headline(results: pd.DataFrame, target: float = TARGET) -> list[str]:
    """The run's first lines about its fits: how many reached their own tolerance (`converged`:
    the solver's own stopping test), how many are certified within the target of f*, and how
    far the others ended, with the distribution of the achieved (P - f*)/|f*|. `converged` is
    never said of a fit above the target without its number."""
    if results.empty:
        return []
    n = len(results)
    own = int((results["status"] == "converged").sum())
    failed = int((results["status"] == "error").sum())
    lines = [f"{n} fits: {own} reached their own stopping tolerance (`converged`), {n - own - failed} stopped "
             f"otherwise, {failed} failed."]
    fits = results[results["status"] != "error"]
    if "f_star" not in fits.columns or not fits["f_star"].notna().any():
        return lines + ["No fit has a certified f*, so none is certified near the optimum: `converged` is each "
                        "solver's own test, not a certificate."]
    known = fits[fits["f_star"].notna()]
    rel = np.maximum(pd.to_numeric(known["rel_suboptimality"], errors="coerce"), certainty_floor(known))
    tell = reachable(known, target)
    within = tell & (rel <= target)
    above = known[tell & (rel > target)]
    q = np.nanquantile(rel, [0.5, 0.9]) if rel.notna().any() else [math.nan, math.nan]
    line = (f"Certified against f*: {int(within.sum())} of the {len(known)} fits with a certified f* end within "
            f"(P - f*)/|f*| <= {fmt(target)}, {len(above)} above it")
    if (~tell).any():
        line += f", {int((~tell).sum())} on an f* too uncertain to tell"
    line += (f"; (P - f*)/|f*| over them: median {fmt(float(q[0]))}, 90th percentile {fmt(float(q[1]))}, "
             f"max {fmt(float(rel.max()))}.")
    lines.append(line)
    stopped = above[above["status"] == "converged"]
    if len(stopped):
        worst = stopped.assign(_rel=rel[stopped.index]).sort_values("_rel").iloc[-1]
        lines.append(f"- {len(stopped)} fits reached their own tolerance but end above the target "
                     f"(worst: {worst['solver_entry']} on {worst['dataset']} at C={fmt(worst['C'])}, "
                     f"{fmt(float(worst['_rel']))} above f*): their tol stops them short of it; tighten tol "
                     f"(a budget key) to get there.")
    return lines

