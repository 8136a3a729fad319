"""`interactive.html`: the run's convergence traces on one self-contained page (plotly, its
JavaScript inlined: it opens offline, no CDN), in the spirit of benchopt's results page.

Controls, all plotly's own (updatemenus and the legend, no JavaScript of ours):

- dataset: shows that dataset's first problem and puts its problems in the problem menu;
- problem: one problem (dataset and every problem key, as the report's panels);
- metric: (P - f*)/|f*|, the relative duality gap (P - D)/|P|, test error (those the run has);
- x: seconds (the call clock of the timing fits, where the run has them) or iterations; x and y axes: log or linear;
- solvers: a click on a legend entry hides or shows that solver (all its folds).

How it works: one trace per fit (a fold of one solver configuration on one problem), holding its
trace points. The problem menus set which traces are visible; the metric and x menus restyle the
y or x arrays of every trace at once (the arrays of one trace are aligned by trace point), so the
menus combine freely. A fit's points are thinned to at most MAX_POINTS, log-spaced, to bound the
page's size on a paper-sized sweep.
"""
from __future__ import annotations

import functools
import html

import numpy as np

from .common import certainty_floor, config_columns, label
from .figures import START_KEYS, problem_key_columns, problem_title, problems, rel_gap, varying_problem_keys
from .registry import ReportData

MAX_POINTS = 80
NAME = "interactive.html"


def _thin(n: int) -> np.ndarray:
    """Indices of at most MAX_POINTS of n points, log-spaced (the start matters most), both ends kept."""
    if n <= MAX_POINTS:
        return np.arange(n)
    return np.unique(np.concatenate([np.geomspace(1, n, MAX_POINTS).astype(int) - 1, [n - 1]]))


def _metrics(data: ReportData) -> list[tuple[str, str]]:
    """(column, axis title) of the metrics the run can show, in menu order."""
    out = []
    if "f_star" in data.results.columns and data.results["f_star"].notna().any() and "primal" in data.traces:
        out.append(("subopt", "(P - f*) / |f*|"))
    if "gap" in data.traces.columns and data.traces["gap"].notna().any():
        out.append(("gap", "(P - D) / |P|"))
    if "test_error" in data.traces.columns and data.traces["test_error"].notna().any():
        out.append(("test_error", "test error"))
    return out


def _esc(v) -> str:
    """A user's string (a dataset's or an entry's name, a swept value) as the page shows it: as
    text. plotly draws its strings as a small HTML dialect (<b>, <a href>, <br>) and decodes
    entities: escaped, a name like `<img src=x onerror=...>` is shown, never made an element, and
    no string can close the <script> the figure's JSON sits in."""
    return html.escape(str(v), quote=False)


def _clean(a) -> list:
    """JSON-safe values: NaN and inf as null (a gap in the line), floats as plain floats."""
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=float)]


def build_figure(data: ReportData) -> dict | None:
    """The plotly figure of the page as its JSON dict ({"data": [...], "layout": {...}}), or None
    when no fit has a trace to show. A dict, not a graph_objects.Figure: validating two hundred
    traces through plotly's Python classes took longer than all the rest of the page."""
    from .common import styles
    metrics = _metrics(data)
    fits = data.fits[data.fits["key"].isin(data.traces["key"])]
    if fits.empty or not metrics:
        return None
    if "f_star" in fits.columns:
        fits = fits.assign(_floor=certainty_floor(fits).to_numpy())
    # Only the columns read below: a row of the results' ~90 columns, made a dict per fit, was
    # most of the page's own time.
    keep = problem_key_columns(fits) + ["solver_entry"] + config_columns(fits) + ["key", "fold", "f_star", "_floor"]
    fits, prob, found = problems(fits[[c for c in dict.fromkeys(keep) if c in fits.columns]])
    named, _ = varying_problem_keys(prob, found)
    cfg = [c for c in config_columns(fits) if c not in START_KEYS]
    line_keys = ["solver_entry"] + [c for c in cfg if c not in prob]
    shown = [c for c in data.swept() if c not in prob and c not in START_KEYS]
    by_key = data.trace_arrays()
    solvers = sorted({_esc(label(r, shown)) for r in fits[line_keys].to_dict("records")})
    colour = {s: "rgb({:.0f},{:.0f},{:.0f})".format(*(255 * np.array(st["color"]))) for s, st in zip(solvers, styles(len(solvers)))}

    fig = {"data": [], "layout": {}}
    traces = []          # (problem index, per-metric y arrays, x arrays)
    titles = []
    legend_shown = set()
    groups = fits.groupby(prob, sort=False, dropna=False)
    for p, key in enumerate(found):
        sub = groups.get_group(key if len(prob) > 1 else key[0])
        titles.append(_esc(problem_title(dict(zip(prob, key)), named).replace("\n", " | ")))
        for i, row in enumerate(sub.sort_values(line_keys + ["fold"]).to_dict("records")):
            full = by_key[row["key"]]
            order = np.argsort(full["iteration"], kind="stable")
            tr = {c: v[order][_thin(len(order))] for c, v in full.items()}
            n_pts = len(tr["iteration"])
            nan = np.full(n_pts, np.nan)
            ys = {}
            for m, _ in metrics:
                if m == "subopt":
                    f = row.get("f_star", np.nan)
                    y = (np.asarray(tr["primal"], dtype=float) - f) / abs(f) if np.isfinite(f) else nan
                    ys[m] = np.maximum(y, row.get("_floor", 0.0))          # never finer than f* is known
                elif m == "gap":
                    ys[m] = rel_gap(tr) if "gap" in tr else nan
                else:
                    ys[m] = np.asarray(tr[m], dtype=float) if m in tr else nan
            xs = {"time_s": np.asarray(tr["time_s"], dtype=float), "iteration": np.asarray(tr["iteration"], dtype=float)}
            name = _esc(label(row, shown))
            fig["data"].append({
                "type": "scatter", "x": _clean(xs["time_s"]), "y": _clean(ys[metrics[0][0]]), "mode": "lines+markers",
                "name": name, "legendgroup": name,
                "line": {"color": colour[name], "width": 1.2, "shape": "hv"}, "visible": p == 0,
                # A marker at the last point: where a fold stopped, and the one point of a
                # reference solver's trace (LIBLINEAR is one call), which a line alone never shows.
                "marker": {"size": [0] * (n_pts - 1) + [7], "color": colour[name]},
                # One legend entry per solver and problem: its folds follow it in and out.
                "showlegend": (p, name) not in legend_shown,
                "hovertemplate": f"{name} fold {_esc(row['fold'])}<br>x=%{{x:.3g}} y=%{{y:.3g}}<extra></extra>"})
            legend_shown.add((p, name))
            traces.append((p, ys, xs, name))

    n = len(traces)

    def visible(ps):
        return [t[0] in ps for t in traces]

    problem_buttons = [{"label": t, "method": "update", "args": [{"visible": visible({p})}, {"title.text": t}]}
                       for p, t in enumerate(titles)]
    datasets = list(dict.fromkeys(k[prob.index("dataset")] for k in found))
    dataset_buttons = []
    for ds in datasets:
        mine = [p for p, k in enumerate(found) if k[prob.index("dataset")] == ds]
        # The dataset's first problem, and the problem menu narrowed to the dataset's problems.
        dataset_buttons.append({"label": _esc(ds), "method": "update",
                                "args": [{"visible": visible({mine[0]})},
                                         {"title.text": titles[mine[0]], "updatemenus[1].buttons": [problem_buttons[p] for p in mine],
                                          "updatemenus[1].active": 0}]})
    metric_buttons = [{"label": axis, "method": "update",
                       "args": [{"y": [_clean(t[1][m]) for t in traces]}, {"yaxis.title.text": axis}]}
                      for m, axis in metrics]
    x_buttons = [{"label": lab, "method": "update", "args": [{"x": [_clean(t[2][c]) for t in traces]}, {"xaxis.title.text": lab}]}
                 for c, lab in (("time_s", "seconds"), ("iteration", "iteration"))]
    def scale_buttons(ax):
        return [{"label": f"{ax} {kind}", "method": "relayout", "args": [{f"{ax}axis.type": kind}]}
                for kind in ("log", "linear")]

    def menu(buttons, x, title):
        return {"buttons": buttons, "direction": "down", "x": x, "y": 1.17, "xanchor": "left", "yanchor": "top",
                "showactive": True, "active": 0, "pad": {"r": 4, "t": 4}, "name": title}

    first = [p for p, k in enumerate(found) if k[prob.index("dataset")] == datasets[0]]
    fig["layout"].update(
        title={"text": titles[0], "y": 0.97, "font": {"size": 14}},
        updatemenus=[menu(dataset_buttons, 0.0, "dataset"), menu([problem_buttons[p] for p in first], 0.16, "problem"),
                     menu(metric_buttons, 0.50, "metric"), menu(x_buttons, 0.66, "x"),
                     # Buttons, not menus: one click switches an axis, and each shows its state.
                     {**menu(scale_buttons("x"), 0.80, "x axis"), "type": "buttons", "direction": "right", "y": 1.27},
                     {**menu(scale_buttons("y"), 0.80, "y axis"), "type": "buttons", "direction": "right", "y": 1.17,
                      "active": 0 if metrics[0][0] != "test_error" else 1}],
        annotations=[{"text": t, "x": x, "y": 1.22, "xref": "paper", "yref": "paper", "showarrow": False,
                      "xanchor": "left", "font": {"size": 11}}
                     for t, x in (("dataset", 0.0), ("problem", 0.16), ("metric", 0.50), ("x", 0.66))],
        xaxis={"type": "log", "title": {"text": "seconds"}},
        yaxis={"type": "log" if metrics[0][0] != "test_error" else "linear", "title": {"text": metrics[0][1]}},
        legend={"title": {"text": "solver (click: hide / show)"}, "groupclick": "togglegroup"},
        margin={"t": 150}, height=640)
    assert len(fig["data"]) == n
    return fig


@functools.lru_cache(maxsize=1)
def template() -> dict:
    """plotly's "plotly_white" template as JSON: plotly builds it from its JSON file through its
    validators on first use, 0.4-0.6 s, which `report.preload` pays ahead, in the warm-up's wait."""
    import plotly.io as pio
    return pio.templates["plotly_white"].to_plotly_json()


def write_page(data: ReportData, path, title: str) -> bool:
    """Write the page (plotly.js inlined: ~4.5 MB, no network needed); False when there is nothing
    to show (no trace), in which case no page is written and a stale one is removed."""
    from pathlib import Path
    from .figures import panel_data
    from .registry import MAX_PROBLEMS
    from .speed import speed_view
    path = Path(path)
    if data.n_problems() > MAX_PROBLEMS:
        from .scaled import write_scaled_page
        return write_scaled_page(data, path, title)
    # The fits the convergence figures draw: the timing fits (cold, dense) where the run has them.
    fig = build_figure(panel_data(speed_view(data)))
    if fig is None:
        path.unlink(missing_ok=True)
        return False
    import plotly.io as pio
    fig["layout"]["template"] = template()
    body = pio.to_html(fig, full_html=False, include_plotlyjs=True, div_id="svmbench-traces", validate=False,
                       config={"displaylogo": False, "responsive": True})
    note = ("One line per fold; the menus choose the dataset, the problem, the metric and the x axis; a click on "
            "a solver in the legend hides or shows it. Suboptimality is never shown finer than the certainty of f*. "
            "The lines are the timing fits where the run has them (cold starts, densely traced, their seconds on the "
            "call clock: the whole call from the fold's arrays to a model), else the sweep's fits (solver seconds; a "
            "warm-started one named `(warm start)`).")
    path.write_text(f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title></head>"
                    f"<body style='font-family:sans-serif'><h2>{html.escape(title)}</h2><p>{html.escape(note)}</p>"
                    f"{body}</body></html>\n")
    return True
