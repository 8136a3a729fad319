"""Performance profiles (Dolan and Moré, Math. Programming 91, 2002) and data profiles (Moré
and Wild, SIAM J. Optim. 20, 2009): how optimisation papers compare solvers over many problems.

For problems p and solvers s, let t_{p,s} be the seconds s needs on p until its measure (the
relative suboptimality (P - f*)/|f*|, or the relative duality gap (P - D)/|P|) first falls to the
report's target (report.target, default 1e-3): the median over the folds of each fold's time,
infinite where the fold never gets there. The times are those of every speed table (speed.py):
the timing fits, cold, on the call clock. The performance ratio is r_{p,s} = t_{p,s} / min_s t_{p,s} (Dolan and Moré eq. 1), and

    rho_s(tau) = |{p : r_{p,s} <= tau}| / |P|           (eq. 2)

the fraction of problems s solves within tau times the best solver's time: rho_s(1) is how often
s is fastest, rho_s at large tau how often it gets there at all. The data profile counts the
problems solved within a budget of kappa passes over the training rows (Moré and Wild eq. 2.9,
their simplex gradients, n_p + 1 function evaluations, replaced by passes: the unit of work a
first-order SVM solver's cost is counted in):

    d_s(kappa) = |{p : passes_{p,s} <= kappa}| / |P|.

Only solvers whose trace iteration is one pass over the data are drawn (`PASS_SOLVERS`); the
others (SMO's pair updates, Newton steps, Pegasos's minibatch steps) are named on the figure and
left out, rather than put on one axis in another unit.

A profile compares solvers on the problems all of them ran: problems are grouped by the set of
solver configurations that ran them (a linear and a kernel grid are two panels, neither counting
the other's solvers as failures). A fit that ended in error counts as never reaching the target.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .common import F_STAR_HINT, config_columns, count, floor_sql, fmt, label
from .figures import START_KEYS, figure_legend, problem_key_columns
from .plotting import decorate, panel_grid, sort_value
from .registry import ReportData, Skip, figure
from .speed import speed_view, target_of, timed_fits


# Solvers whose trace `iteration` is one pass over the training rows (their own docstrings):
# dcd, Algorithm 1 of Hsieh et al. 2008, one pass over the (active) variables; LIBLINEAR's dual
# coordinate descent the same (its outer iterations; dual=False is Newton steps, not passes);
# scikit-learn's SGD, epochs. A shrinking solver's pass covers the active rows only: a pass is at
# most one full pass, the same bound for both.
PASS_SOLVERS = ("dcd", "liblinear", "sgd")


def counts_passes(types: dict[str, str]) -> str:
    """SQL: whether a fit's iterations are passes over the data (`PASS_SOLVERS`; LIBLINEAR only
    in its dual, the default), over a table with these columns."""
    ok = f"solver IN ({', '.join(map(repr, PASS_SOLVERS))})"
    if "param_dual" in types:
        primal = "(solver = 'liblinear' AND coalesce(CAST(param_dual AS VARCHAR) IN ('false', 'False', '0', '0.0'), FALSE))"
        ok = f"({ok} AND NOT {primal})"
    return ok


def performance_ratios(times: pd.DataFrame) -> pd.DataFrame:
    """r_{p,s} = t_{p,s} / min_s t_{p,s} (rows problems, columns solvers; inf: never reached). A
    problem no solver reaches has every ratio inf: it counts against all of them."""
    best = times.replace(np.inf, np.nan).min(axis=1)
    return times.div(best, axis=0).fillna(np.inf)


def fraction_within(values: pd.DataFrame, xs) -> pd.DataFrame:
    """For each column (a solver) and x, the fraction of rows (problems) with a value <= x: rho_s
    of performance ratios (Dolan and Moré eq. 2), d_s of iteration counts (Moré and Wild)."""
    v = values.to_numpy(dtype=float)
    xs = np.asarray(xs, dtype=float)
    return pd.DataFrame({s: (v[:, [j]] <= xs[None, :]).mean(axis=0) for j, s in enumerate(values.columns)}, index=xs)


def _per_problem(data: ReportData, measure: str, passes: bool = False):
    """([(group title, times, iterations)], labels of the solvers): per group of problems run by
    one set of solver configurations (two at least), the medians over folds of each fold's
    seconds (call clock) and iterations to the target, a row per problem and a column per solver,
    from the fits speed is read from (speed.speed_view: the timing fits, cold). A warm-started
    configuration (a sweep's, where the run has no timing fits) is left out: its time is not put
    against a cold one. `passes`: only the fits whose iterations are passes (`counts_passes`)."""
    target = target_of(data)
    d = data.view({"_t": timed_fits(data, target, measure, own=False)})
    types = d.types("_t")
    where = ["NOT ends_with(solver_entry, ' (warm start)')"]
    if passes:
        where.append(counts_passes(types))
    if measure == "subopt":
        # A problem whose f* is known more coarsely than the target cannot tell who reached it.
        where.append(f"num(f_star) IS NOT NULL AND {floor_sql(types)} <= {target!r}")
        if d.count("_t", " AND ".join(where)) == 0:
            raise Skip(f"no problem has an f* certain to {fmt(target)}")
    cols = d.frame_of("_t")
    prob = problem_key_columns(cols)
    cfg = [c for c in config_columns(cols) if c not in START_KEYS]
    line_keys = ["solver_entry"] + [c for c in cfg if c not in prob]
    shown = [c for c in data.swept() if c not in prob and c not in START_KEYS]
    # A fit that never got there, or cannot tell (a ladder cut short), is infinitely slow.
    med = d.summary(list(dict.fromkeys(prob + line_keys)),
                    {"t": "median(coalesce(_t_target_s, 'inf'::DOUBLE))", "it": "median(coalesce(_it_target, 'inf'::DOUBLE))"},
                    name="_t", where=" AND ".join(where))
    found = sorted({tuple(p) for p in med[prob].itertuples(index=False)}, key=lambda k: [sort_value(v) for v in k])
    pid = {p: i for i, p in enumerate(found)}
    med["_solver"] = [label(r, shown) for r in med[line_keys].to_dict("records")]
    med["_pid"] = [pid[tuple(p)] for p in med[prob].itertuples(index=False)]
    med = med.set_index(["_pid", "_solver"])[["t", "it"]]
    groups: dict[tuple, list[int]] = {}
    for i, g in med.reset_index().groupby("_pid", sort=True)["_solver"]:
        groups.setdefault(tuple(sorted(set(g))), []).append(i)
    out = []
    for solvers, ids in groups.items():
        if len(solvers) < 2:
            continue
        t = med["t"].unstack("_solver").reindex(index=ids, columns=list(solvers))
        it = med["it"].unstack("_solver").reindex(index=ids, columns=list(solvers))
        # The kind of the group's problems where they share one (kernel=linear loss=squared_hinge).
        kinds = []
        for j, c in enumerate(prob):
            vals = {found[i][j] for i in ids}
            if c in ("kernel", "loss", "intercept") and len(vals) == 1:
                kinds.append(f"{c}={fmt(vals.pop())}")
        out.append((count(len(ids), "problem") + (f"\n{' '.join(kinds)}" if kinds else ""), t, it))
    if not out:
        raise Skip("no problem was run by two solver configurations",
                   hint="run a second solver (or configuration) on the same problems")
    return out


def _profile_figure(groups, xlabel: str, ylabel: str, curve, log_base: float = 2, heading: str = ""):
    """One panel per group of problems: a step line per solver, curve(times, iterations) ->
    (xs, fractions DataFrame); the solver's colour the same in every panel; `heading` above
    the panels (the target: a profile means nothing without it)."""
    from .common import styles
    order = list(dict.fromkeys(s for _, t, _ in groups for s in t.columns))
    style_of = dict(zip(order, styles(len(order))))
    fig, axes = panel_grid(len(groups), width=4.6, height=3.4, ncols_max=3)
    for ax, (title, t, it) in zip(axes, groups):
        xs, frac = curve(t, it)
        for s in frac.columns:
            st = style_of[s]
            ax.step(xs, frac[s].to_numpy(), where="post", label=s, color=st["color"], linestyle=st["linestyle"],
                    linewidth=1.4)
        ax.set_xscale("log", base=log_base)
        ax.set_ylim(-0.03, 1.03)
        decorate(ax, title, xlabel, ylabel, 0)
    figure_legend(fig, axes)
    if heading:
        fig.suptitle(heading, fontsize=10)
    return fig


def _ratio_curve(t, it):
    r = performance_ratios(t)
    finite = r.to_numpy()[np.isfinite(r.to_numpy())]
    top = max(2.0, float(finite.max()) * 1.5) if finite.size else 2.0
    xs = np.unique(np.concatenate([[1.0], np.sort(finite), [top]]))
    return xs, fraction_within(r, xs)


def _budget_curve(t, it):
    finite = it.to_numpy()[np.isfinite(it.to_numpy())]
    if not finite.size:
        return np.array([1.0, 2.0]), fraction_within(it, [1.0, 2.0])
    xs = np.unique(np.concatenate([np.sort(finite), [float(finite.max()) * 1.5]]))
    return xs, fraction_within(it, xs)


def _clock(data: ReportData) -> str:
    """The clock a profile's times are on: the timing fits' call clock, or the sweep's solver clock
    (a run without timing fits), or both where problems differ."""
    view = speed_view(data)
    if "setup_s" not in view.types("results"):
        return "solver clock"
    timed, n = data.engine.con.execute(f"SELECT count(setup_s), count(*) FROM {view.table('results')}").fetchall()[0]
    return "call clock" if timed == n else "solver clock" if not timed else "call clock, solver clock where untimed"


def _warm_left_out(data: ReportData) -> str:
    """The heading's line naming the warm-started configurations a profile leaves out (a sweep's,
    where the run has no timing fits for their problems), or ""."""
    view = speed_view(data)
    warm = sorted(str(e) for e in view.sql(f"SELECT DISTINCT solver_entry FROM {view.table('results')} "
                                           f"WHERE ends_with(solver_entry, ' (warm start)')")["solver_entry"])
    return f"\nLeft out, started warm (no cold timing fit): {', '.join(warm)}" if warm else ""


_READ = ("Each solver's line: the fraction of problems on which it reaches the target within tau times the "
         "fastest solver's seconds on that problem (median over folds); at tau = 1 how often it is fastest, at the "
         "right end how often it gets there at all (Dolan and Moré 2002). Problems are grouped by the solvers that "
         "ran them; a problem no solver solves counts against all.")


@figure("performance_profile", "Performance profile: suboptimality", needs=("f_star",), trace_needs=("primal",),
        hint=F_STAR_HINT,
        note="Target (P - f*)/|f*| <= the report's target (report.target, the heading above the panels). " + _READ)
def performance_profile(data: ReportData):
    return _profile_figure(_per_problem(data, "subopt"), "tau (time to target over the fastest solver's)",
                           "fraction of problems", _ratio_curve,
                           heading=f"Target: (P - f*)/|f*| <= {fmt(target_of(data))}; solved within tau x the fastest "
                                   f"time ({_clock(data)}, cold starts)" + _warm_left_out(data))


@figure("performance_profile_gap", "Performance profile: duality gap", trace_needs=("primal", "gap"),
        hint="run solvers that certify a duality gap (see Relative duality gap against time)",
        note="Target (P - D)/|P| <= the report's target: needs no f*. " + _READ)
def performance_profile_gap(data: ReportData):
    return _profile_figure(_per_problem(data, "gap"), "tau (time to target over the fastest solver's)",
                           "fraction of problems", _ratio_curve,
                           heading=f"Target: (P - D)/|P| <= {fmt(target_of(data))}; solved within tau x the fastest "
                                   f"time ({_clock(data)}, cold starts)" + _warm_left_out(data))


@figure("data_profile", "Data profile: suboptimality against passes over the data", needs=("f_star",),
        trace_needs=("primal",), hint=F_STAR_HINT,
        note="The fraction of problems each solver brings to the report's target (P - f*)/|f*| within kappa passes over "
             "the training rows (median over folds; Moré and Wild 2009, passes for their simplex gradients). Only "
             f"solvers whose iterations are passes are drawn ({', '.join(PASS_SOLVERS)}); the others are named "
             "above the figure, not put on this axis in their own units.")
def data_profile(data: ReportData):
    passing = counts_passes(data.types("results"))
    left = sorted(str(e) for e in data.sql(f"SELECT DISTINCT solver_entry FROM {data.table('results')} "
                                           f"WHERE NOT coalesce({passing}, FALSE)")["solver_entry"])
    if not data.count("results", passing):
        raise Skip(f"no solver counts passes over the data (drawn: {', '.join(PASS_SOLVERS)}; this run: "
                   f"{', '.join(left)})", hint=f"run {' or '.join(PASS_SOLVERS)} beside the others")
    heading = f"Target: (P - f*)/|f*| <= {fmt(target_of(data))}; solved within kappa passes over the data"
    if left:
        heading += (f"\nLeft out: {', '.join(left)} (their iterations are not passes over the data: "
                    "SMO pair updates, Newton or minibatch steps)")
    return _profile_figure(_per_problem(data, "subopt", passes=True),
                           "kappa (passes over the training data)", "fraction of problems", _budget_curve,
                           log_base=10, heading=heading)
