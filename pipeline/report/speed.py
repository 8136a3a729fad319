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

The report reads them through its columnar engine (registry.ReportData): `speed_view` is a pair of
views of the timing fits and the sweep's (on the call clock, each with its start), the times to
target per fit are a query over them (`fit_times_sql`) and `speed_rows` its group-by, a row per
problem and configuration; the ratios are then taken over those rows. `fit_times` is the same
rule over frames, for a paper's writer that reads a study's own fits (`headline` and
`speed_rows` take a ReportData, `headline` also a results frame).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..experiment.schema import REPORT_TARGET
from .columnar import norm, q
from .common import certainty_floor, config_columns, fmt, problem_columns

TARGET = REPORT_TARGET

# The clocks a time column can be on, by the name the tables give them.
CLOCKS = {
    "call": "the whole call from the fold's arrays to a model, in CPU seconds of the task's process (a wait "
            "for a core on a busy machine is not counted): a library's fit call (its input checks and copies "
            "inside), our solver's seconds plus the seconds its problem took to build from the arrays",
    "solver": "the solver's own seconds from a built problem to its model, trace points and certificates "
              "excluded (a library's: its whole fit call)",
    "task": "the task's seconds: loading the fold, the fit, its certificates and scores",
    "wall": "wall seconds of the process that drives the fit, trace points excluded: a distributed fit's driver "
            "in the client, across its workers' processes (pipeline/engine/distributed.py), and the timing fits "
            "compared with it, each in its own process (with the seconds its problem took to build)",
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
    `censored_s` the budget B of a fit cut by it before the target (`t_target_s` inf: not reached
    within B), and `clock` ("call" where the fit carries its setup seconds, else "solver"). The measure:
    `subopt`, (P - f*)/|f*|; `gap`, the relative duality gap (P - D)/|P|, which needs no f*. A fit
    without a trace point reaches the target at its own stop if it ended within it."""
    out = fits[["key"]].copy()
    setup = pd.to_numeric(fits["setup_s"], errors="coerce") if "setup_s" in fits.columns \
        else pd.Series(np.nan, index=fits.index)
    out["clock"] = np.where(setup.notna(), "call", "solver")
    if "clock" in fits.columns:       # timing fits that name their clock ("wall": beside a distributed fit)
        out["clock"] = fits["clock"].where(fits["clock"].notna(), out["clock"]).to_numpy()
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
    # A censored fit's points past its budget are not read (a ladder's top may lie past it).
    # astype(float): mapped over no trace point, the keys' own (string) dtype would be kept
    cut_at = tr["key"].map(pd.Series(_column(fits, "info_censored_at_s", np.inf).astype(float),
                                     index=fits["key"])).astype(float)
    within = (tr["time_s"] + tr["key"].map(pd.Series(setup, index=fits["key"])).astype(float)) <= cut_at
    hit = tr[((rel <= target) & within).to_numpy()].groupby("key")[["time_s", "iteration"]].min()
    traced = out["key"].isin(tr["key"]).to_numpy()
    t = out["key"].map(hit["time_s"]).astype(float).to_numpy() + setup
    it = out["key"].map(hit["iteration"]).astype(float).to_numpy()
    # No trace at all (a multiclass fit, run.trace=false): its own stop, if it ended within.
    final_in = final <= target
    t = np.where(traced, t, np.where(final_in, out["own_stop_s"].to_numpy(), np.nan))
    it = np.where(traced, it, np.where(final_in, pd.to_numeric(fits["n_iter"], errors="coerce").to_numpy(), np.nan))
    # A ladder cut short (its task killed: no rung at all) cannot tell that the target was never
    # reached: the library might have got there on a later rung.
    method = fits["timing_method"].to_numpy() if "timing_method" in fits.columns else np.full(len(fits), None)
    cut = _column(fits, "info_ladder_cut", False).astype(bool)
    unknown = (method == "ladder") & (cut | ~traced)
    how = np.where(~np.isnan(t), "time", np.where(unknown, "unknown", "never")).astype(object)
    # `fit_times_sql`'s rules for a fit cut by its budget (censored) and for a ladder of the
    # current kind (it resolves one target; its record's end is the solver's own stop or not).
    censored_at = _column(fits, "info_censored_at_s", np.nan).astype(float)
    in_trace = ~np.isnan(out["key"].map(hit["time_s"]).astype(float).to_numpy())     # a trace point reached it
    how = np.where(~in_trace & ~np.isnan(censored_at), "censored", how)
    new = (method == "ladder") & pd.notna(_column(fits, "info_ladder_end", None))
    resolved = new & (measure == "subopt") & np.isclose(_column(fits, "info_ladder_target", np.nan).astype(float),
                                                        target, rtol=1e-9, atol=0.0)
    never = _column(fits, "info_ladder_own_stop", False).astype(bool) & (final > target)
    read = np.where(in_trace, "time", np.where(~np.isnan(censored_at), "censored", np.where(never, "never", "unknown")))
    how = np.where(new, np.where(resolved, read, np.where(never, "never", "unknown")), how)
    how = np.where(ok, how, "unknown")
    out["t_target_s"] = np.where(how == "time", t, np.where(how == "unknown", np.nan, np.inf))
    out["it_target"] = np.where(how == "time", it, np.where(how == "unknown", np.nan, np.inf))
    out["censored_s"] = np.where(how == "censored", censored_at, np.nan)
    return out


def _column(df: pd.DataFrame, name: str, default) -> np.ndarray:
    """A column's values (missing ones `default`), or `default` everywhere."""
    if name not in df.columns:
        return np.full(len(df), default, dtype=object)
    values = df[name].to_numpy(dtype=object)
    return np.where(pd.isna(values), default, values) if default is not None else values


def start_sql(types: dict[str, str]) -> str:
    """`with_start` in SQL: the table's `start` (a missing one is cold, as `start_label` counts
    it), else warm exactly where a fit names the point it started from (`warm_from`)."""
    if "start" in types:
        return "coalesce(\"start\", 'cold')"
    if "warm_from" in types:
        return "(CASE WHEN warm_from IS NOT NULL THEN 'warm' ELSE 'cold' END)"
    return "'cold'"


def label_of(counts) -> str:
    """`start_label` of counts {value: n} (a group's `histogram` in SQL)."""
    counts = {str(k): int(v) for k, v in (counts.items() if isinstance(counts, dict) else counts or [])}
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), reverse=True))


def speed_view(data):
    """The run as the figures that put solvers' convergence side by side see it: per problem,
    the timing fits where the run has any for it, else the sweep's fits (`_source` says which);
    the timing fits' seconds moved to the call clock (time_s and fit_time_s plus setup_s, which
    is then 0: the view's times are all on one clock), and a warm-started configuration named
    `<entry> (warm start)`, so that a warm line is never drawn unlabelled beside a cold one. Two
    views of the engine (`_speed_views`), made once per report (kept on `data`)."""
    if "speed_view" not in data.cache:
        fits, traces, _ = _speed_views(data)
        data.cache["speed_view"] = data.view({"results": fits, "fits": fits, "traces": traces, "timing": None,
                                              "timing_traces": None, "models": None})
    return data.cache["speed_view"]


def _speed_views(data) -> tuple[str, str, str]:
    """(fits, traces, fits with their own entry names) views: the timing fits that finished,
    and the sweep's fits of every problem without one (by `problem_key`, keyed), their traces;
    on the call clock (`speed_view`). The third view keeps each entry's own name (warm or cold
    alike, with its `start`): the speed tables count starts in their own column."""
    if "speed_views" in data.cache:
        return data.cache["speed_views"]
    from .common import point_c
    eng = data.engine
    sweep_t = data.types("fits")
    prob = problem_key(data.frame_of("fits"))
    timed = data.has_table("timing") and data.count("timing") > 0
    if timed:
        tim_t = data.types("timing")
        done = f"SELECT * FROM {data.table('timing')} WHERE status IS DISTINCT FROM 'error'"

        have = ", ".join(f"{norm(c, 'DOUBLE' if c == 'C' else tim_t.get(c, ''))} AS {q(c)}" for c in prob)
        tim_src = f"SELECT * REPLACE ({point_c(tim_t)} AS \"C\") FROM ({done})" if "C" in tim_t else done
        swp_src = (f"SELECT * REPLACE ({point_c(sweep_t)} AS \"C\") FROM {data.table('fits')}" if "C" in sweep_t
                   else f"SELECT * FROM {data.table('fits')}")
        match = " AND ".join(f"h.{q(c)} IS NOT DISTINCT FROM {norm(c, 'DOUBLE' if c == 'C' else sweep_t.get(c, ''), 'k')}"
                             for c in prob)
        # The sweep's rows keep their own C (the keyed one only decides whether a timing fit
        # covers them): their key columns are looked up, not replaced.
        rest = (f"SELECT f.* FROM {data.table('fits')} f WHERE f.key NOT IN (SELECT k.key FROM ({swp_src}) k "
                f"WHERE EXISTS (SELECT 1 FROM (SELECT DISTINCT {have} FROM ({tim_src})) h WHERE {match}))")
        union = (f"SELECT *, 'timing' AS _source, 0 AS _part FROM ({done}) UNION ALL BY NAME "
                 f"SELECT *, 'sweep' AS _source, 1 AS _part FROM ({rest})")
        rest_keys = f"SELECT key FROM ({rest})"
        trace_union = (f"SELECT * FROM {data.table('timing_traces')} UNION ALL BY NAME "
                       f"SELECT * FROM {data.table('traces')} WHERE key IN ({rest_keys})"
                       if data.has_table("timing_traces") else
                       f"SELECT * FROM {data.table('traces')} WHERE key IN ({rest_keys})")
    else:
        union = f"SELECT *, 'sweep' AS _source, 1 AS _part FROM {data.table('fits')}"
        trace_union = f"SELECT * FROM {data.table('traces')}"
    base = eng.view(f"SELECT * FROM ({union})", keep=True)
    types = eng.types(base)
    start = start_sql(types)
    if "setup_s" in types:
        clock = (f"SELECT * REPLACE (num(fit_time_s) + coalesce(num(setup_s), 0.0) AS fit_time_s, "
                 f"CASE WHEN num(setup_s) IS NULL THEN NULL ELSE 0.0 END AS setup_s) FROM {q(base)}")
        setup = f"SELECT key AS _k, coalesce(num(setup_s), 0.0) AS _setup FROM {q(base)}"
        traces = eng.view(f"SELECT t.* REPLACE (t.time_s + coalesce(s._setup, 0.0) AS time_s) FROM ({trace_union}) t "
                          f"LEFT JOIN ({setup}) s ON t.key = s._k", keep=True)
    else:
        clock = f"SELECT * FROM {q(base)}"
        traces = eng.view(trace_union, keep=True)
    order = ", ".join(c for c in ("_part", '"dataset"', '"solver_entry"', '"C"', '"fold"', '"key"')
                      if c.strip('"') in types)
    own = eng.view(f"SELECT * REPLACE ({start} AS \"start\") FROM ({clock}) ORDER BY {order}"
                   if "start" in types else f"SELECT *, {start} AS \"start\" FROM ({clock}) ORDER BY {order}", keep=True)
    fits = eng.view(f"SELECT * REPLACE (CASE WHEN \"start\" = 'warm' THEN solver_entry || ' (warm start)' "
                    f"ELSE solver_entry END AS solver_entry) FROM {q(own)}")
    data.cache["speed_views"] = (fits, traces, own)
    return data.cache["speed_views"]


def fit_times_sql(view, target: float, measure: str = "subopt", fits: str | None = None) -> str:
    """`fit_times` as a query over a speed view's fits (or `fits`, a query over them) and traces:
    per fit `key`, `clock`, `own_stop_s`, `rel_subopt`, `t_target_s` (NULL: f* not certain enough
    to tell, or a ladder cut short; 'inf': never reached) and `it_target`. The view's seconds are
    on the call clock already (setup_s 0 where a fit has one)."""
    from .common import floor_sql
    types = view.types("results")
    fits = fits or f"SELECT * FROM {view.table('results')}"
    has = lambda c: c in types  # noqa: E731
    eps = repr(float(target))
    setup = "coalesce(num(setup_s), 0.0)" if has("setup_s") else "0.0"
    clock = "(CASE WHEN num(setup_s) IS NOT NULL THEN 'call' ELSE 'solver' END)" if has("setup_s") else "'solver'"
    if has("clock"):       # timing fits that name their clock ("wall": beside a distributed fit)
        clock = f"coalesce(CAST(clock AS VARCHAR), {clock})"
    rel_sub = "num(rel_suboptimality)" if has("rel_suboptimality") else "NULL::DOUBLE"
    if measure == "subopt":
        star = "num(f_star)" if has("f_star") else "NULL::DOUBLE"
        final = rel_sub
        ok = f"({star} IS NOT NULL AND {floor_sql(types)} <= {eps})" if has("f_star") else "FALSE"
        rel = "(t.primal - f._star) / abs(f._star)"
    else:
        star = "NULL::DOUBLE"
        final = "nn(num(duality_gap) / abs(num(primal_objective)))"
        ok = "TRUE"
        rel = "(CASE WHEN t.primal <> 0 THEN t.gap / abs(t.primal) END)"
    method = "timing_method" if has("timing_method") else "NULL"
    cut = "coalesce(TRY_CAST(info_ladder_cut AS BOOLEAN), FALSE)" if has("info_ladder_cut") else "FALSE"
    gap_col = "t.gap" if "gap" in view.types("traces") else "NULL::DOUBLE"
    rel = rel.replace("t.gap", gap_col)
    # A ladder of the current kind says how it ended (`info_ladder_end`) and the one target its
    # rungs resolve (`info_ladder_target`): `_resolved`, this target; `_own`, its record is the
    # solver's own stop. A fit cut by its timing budget carries it (`info_censored_at_s`).
    new = f"({method} = 'ladder' AND info_ladder_end IS NOT NULL)" if has("info_ladder_end") else "FALSE"
    ladder_target = "TRY_CAST(info_ladder_target AS DOUBLE)" if has("info_ladder_target") else "NULL::DOUBLE"
    resolved = (f"({measure == 'subopt'} AND abs({ladder_target} - {eps}) <= 1e-9 * {eps})"
                if has("info_ladder_target") else "FALSE")
    own = "coalesce(TRY_CAST(info_ladder_own_stop AS BOOLEAN), FALSE)" if has("info_ladder_own_stop") else "FALSE"
    censored = "TRY_CAST(info_censored_at_s AS DOUBLE)" if has("info_censored_at_s") else "NULL::DOUBLE"
    within = "(f._censored_at IS NULL OR t.time_s + f._setup <= f._censored_at)"
    return f"""
        WITH f AS (SELECT key, {clock} AS clock, num(fit_time_s) + {setup} AS own_stop_s, {rel_sub} AS rel_subopt,
                          {star} AS _star, {final} AS _final, {ok} AS _ok, {setup} AS _setup,
                          num(n_iter) AS _n_iter, {method} AS _method, {cut} AS _cut, coalesce({new}, FALSE) AS _new,
                          coalesce({resolved}, FALSE) AS _resolved, {own} AS _own, {censored} AS _censored_at
                   FROM ({fits})),
             -- A censored fit's points past its budget are not read (a ladder's top, its sweep
             -- twin's own stop, may lie past it).
             hit AS (SELECT t.key, min(t.time_s) FILTER (WHERE {rel} <= {eps} AND {within}) AS _t,
                            min(t.iteration) FILTER (WHERE {rel} <= {eps} AND {within}) AS _it
                     FROM {view.table('traces')} t JOIN f ON t.key = f.key GROUP BY t.key),
             g AS (SELECT f.*, hit.key IS NOT NULL AS _traced, hit._t + f._setup AS _t, CAST(hit._it AS DOUBLE) AS _it
                   FROM f LEFT JOIN hit ON f.key = hit.key),
             h AS (SELECT *, CASE WHEN _traced THEN _t WHEN _final <= {eps} THEN own_stop_s END AS _tt,
                             CASE WHEN _traced THEN _it WHEN _final <= {eps} THEN _n_iter END AS _ii,
                             coalesce(_method = 'ladder' AND (_cut OR NOT _traced), FALSE) AS _unknown,
                             coalesce(_own AND _final > {eps}, FALSE) AS _never FROM g),
             -- _how: how a fit reads at this target: 'time', 'never', 'censored' (not reached within
             -- its budget) or 'unknown'.
             r AS (SELECT *, CASE
                     WHEN NOT _ok THEN 'unknown'
                     WHEN _new AND NOT _resolved THEN (CASE WHEN _never THEN 'never' ELSE 'unknown' END)
                     WHEN _new THEN (CASE WHEN _t IS NOT NULL THEN 'time' WHEN _censored_at IS NOT NULL THEN 'censored'
                                          WHEN _never THEN 'never' ELSE 'unknown' END)
                     WHEN _t IS NOT NULL THEN 'time'
                     WHEN _censored_at IS NOT NULL THEN 'censored'
                     WHEN _tt IS NOT NULL THEN 'time'
                     WHEN _unknown THEN 'unknown' ELSE 'never' END AS _how FROM h)
        SELECT key, clock, own_stop_s, rel_subopt,
               CASE _how WHEN 'time' THEN coalesce(_t, _tt) WHEN 'unknown' THEN NULL ELSE 'inf'::DOUBLE END AS t_target_s,
               CASE _how WHEN 'time' THEN coalesce(_it, _ii) WHEN 'unknown' THEN NULL ELSE 'inf'::DOUBLE END AS it_target,
               CASE WHEN _how = 'censored' THEN _censored_at END AS censored_s
        FROM r"""


def start_label(starts: pd.Series) -> str:
    """The start of a row of fits: "cold", "warm", or "warm 4, cold 1" where they differ (a C path's
    first point starts cold)."""
    counts = starts.fillna("cold").value_counts()
    if len(counts) == 1:
        return str(counts.index[0])
    return ", ".join(f"{k} {int(v)}" for k, v in counts.sort_index(ascending=False).items())


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


def timed_fits(data, target: float, measure: str = "subopt", own: bool = True) -> str:
    """A view of the speed view's fits (`own`: under their own entry names, with `start`; else
    the figures' names, warm entries apart) joined with their times to the target (`fit_times_sql`:
    `_t_target_s`, `_it_target`, `_own_stop_s`, `_rel_subopt`, `_clock`)."""
    key = ("timed_fits", target, measure, own)
    if key not in data.cache:
        fits, _, own_view = _speed_views(data)
        view = speed_view(data)
        src = own_view if own else fits
        times = fit_times_sql(view, target, measure, f"SELECT * FROM {q(src)}")
        cols = ", ".join(f"t.{c} AS _{c}" for c in ("t_target_s", "it_target", "own_stop_s", "rel_subopt", "clock",
                                                      "censored_s"))
        data.cache[key] = data.engine.view(f"SELECT f.*, {cols} FROM {q(src)} f JOIN ({times}) t ON f.key = t.key",
                                           keep=True)
    return data.cache[key]


def _speed_rows(data, target: float, bases: list[str]) -> pd.DataFrame:
    from .common import floor_sql
    view = timed_fits(data, target)
    d = data.view({"_timed": view})
    types = d.types("_timed")
    where = "f_star IS NOT NULL" if "f_star" in types else None
    if d.count("_timed", where) == 0:
        return pd.DataFrame()
    cols = d.frame_of("_timed")
    prob = problem_columns(cols)
    own = [c for c in config_columns(cols) if c not in prob]
    keys = prob + ["solver_entry"] + own
    floored = f"(CASE WHEN _rel_subopt IS NULL THEN NULL ELSE greatest(_rel_subopt, {floor_sql(types)}) END)"
    out = d.summary(keys, {
        "source": "any_value(_source)", "start": "histogram(\"start\")", "clock": "histogram(_clock)",
        "folds": "count(key)", "_hit": "count_if(isfinite(_t_target_s))", "_told": "count(_t_target_s)",
        "censored": "count(_censored_s)", "budget_s": "max(_censored_s)",
        "t_target_s": "median(_t_target_s)", "it_target": "median(_it_target)",
        "own_stop_s": "median(_own_stop_s)", "rel_subopt": f"median({floored})"}, name="_timed", where=where)
    out["start"] = out["start"].map(label_of)
    out["clock"] = out["clock"].map(label_of)
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


def headline(results, target: float = TARGET) -> list[str]:
    """The run's first lines about its fits: how many reached their own tolerance (`converged`:
    the solver's own stopping test), how many are certified within the target of f*, and how
    far the others ended, with the distribution of the achieved (P - f*)/|f*|. `converged` is
    never said of a fit above the target without its number. `results`: a ReportData, or a
    frame of them."""
    from .common import floor_sql
    from .registry import ReportData
    data = results if isinstance(results, ReportData) else ReportData(results)
    if data.count("results") == 0:
        return []
    types = data.types("results")
    res = data.table("results")
    n, own, failed = data.engine.con.execute(
        f"SELECT count(*), count_if(status = 'converged'), count_if(status = 'error') FROM {res}").fetchall()[0]
    lines = [f"{n} fits: {own} reached their own stopping tolerance (`converged`), {n - own - failed} stopped "
             f"otherwise, {failed} failed."]
    if not data.has("fits", "f_star"):
        return lines + ["No fit has a certified f*, so none is certified near the optimum: `converged` is each "
                        "solver's own test, not a certificate."]
    eps = repr(float(target))
    floor = floor_sql(types)
    rel = f"(CASE WHEN num(rel_suboptimality) IS NULL THEN NULL ELSE greatest(num(rel_suboptimality), {floor}) END)"
    known = data.engine.view(f"SELECT *, {rel} AS _rel, ({floor} <= {eps}) AS _tell FROM {data.table('fits')} "
                             f"WHERE num(f_star) IS NOT NULL")
    n_known, within, above, untold, top = data.engine.con.execute(
        f"SELECT count(*), count_if(_tell AND _rel <= {eps}), count_if(_tell AND _rel > {eps}), count_if(NOT _tell), "
        f"max(_rel) FROM {q(known)}").fetchall()[0]
    qs = quantiles(data.engine, f"SELECT _rel AS x FROM {q(known)} WHERE _rel IS NOT NULL", (0.5, 0.9))
    line = (f"Certified against f*: {within} of the {n_known} fits with a certified f* end within "
            f"(P - f*)/|f*| <= {fmt(target)}, {above} above it")
    if untold:
        line += f", {untold} on an f* too uncertain to tell"
    line += (f"; (P - f*)/|f*| over them: median {fmt(float(qs[0]))}, 90th percentile {fmt(float(qs[1]))}, "
             f"max {fmt(float(top) if top is not None else math.nan)}.")
    lines.append(line)
    # The worst of the fits that stopped by their own test above the target; of equal ones, the
    # last in the table's order (dataset, entry, C, fold, key), as a stable sort gives it.
    order = ", ".join(f"{q(c)} DESC" for c in ("dataset", "solver_entry", "C", "fold", "key") if c in types)
    stopped = data.sql(f"SELECT count(*) OVER () AS _n, solver_entry, dataset, \"C\", _rel FROM {q(known)} "
                       f"WHERE _tell AND _rel > {eps} AND status = 'converged' ORDER BY _rel DESC, {order} LIMIT 1")
    if len(stopped):
        worst = stopped.iloc[0]
        lines.append(f"- {int(worst['_n'])} fits reached their own tolerance but end above the target "
                     f"(worst: {worst['solver_entry']} on {worst['dataset']} at C={fmt(worst['C'])}, "
                     f"{fmt(float(worst['_rel']))} above f*): their tol stops them short of it; tighten tol "
                     f"(a budget key) to get there.")
    return lines


def quantiles(engine, values_sql: str, qs) -> list[float]:
    """np.quantile (linear) of the column `x` of a query, exactly as numpy computes it: the two
    order statistics around each quantile's position, sorted by the engine (in bounded memory),
    then numpy's own interpolation between them. NaN where the query has no row."""
    n = int(engine.scalar(f"SELECT count(*) FROM ({values_sql})") or 0)
    if n == 0:
        return [math.nan for _ in qs]
    pos = {}
    for p in qs:
        h = p * (n - 1)
        pos[p] = (int(math.floor(h)), min(int(math.floor(h)) + 1, n - 1), h - math.floor(h))
    want = sorted({i for lo, hi, _ in pos.values() for i in (lo, hi)})
    got = dict(engine.con.execute(
        f"SELECT _i, x FROM (SELECT x, row_number() OVER (ORDER BY x) - 1 AS _i FROM ({values_sql})) "
        f"WHERE _i IN ({', '.join(map(str, want))})").fetchall())
    return [float(np.quantile(np.array([got[lo], got[hi]]), frac)) if lo != hi else float(got[lo])
            for lo, hi, frac in pos.values()]
