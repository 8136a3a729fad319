"""A report of a large sweep (more problems than MAX_PROBLEMS): the sweep's shape at a glance.

- `sweep_summary`: each measure (test accuracy, fit time, passes, final relative gap) against each
  swept key (C, gamma, lambda, ...), one line per solver entry and other swept values, the spread
  over folds (least to largest fold) as a band around the mean (accuracy) or the median (the rest);
- `sweep_map`: two swept keys as a map of mean test accuracy and median fit time;
- `write_scaled_page`: the interactive page of such a run, the same summaries (a click on a point
  opens that problem's traces), every problem's traces thinned to fit a budget of points, the page
  bounded in size whatever the sweep's.

Everything is asked of the engine as aggregates over the run's files (registry.ReportData); no
frame of every fit is made.
"""
from __future__ import annotations

import base64
import html
import json

import numpy as np
import pandas as pd

from .columnar import q
from .common import LAMBDA, MAX_LINES, label, styles
from .registry import ReportData, Skip, figure

# (column, SQL centre over folds, what the centre is, axis label, log y): the measures drawn.
MEASURES = (
    ("test_accuracy", "favg", "mean", "test accuracy", False),
    ("fit_time_s", "median", "median", "fit time (s, solver clock)", True),
    ("n_iter", "median", "median", "iterations (passes for dcd)", True),
    ("_rel_gap", "median", "median", "final (P - D) / |P|", True),
)
# A measure in a panel's title.
SHORT = {"test_accuracy": "test accuracy", "fit_time_s": "fit time", "n_iter": "iterations", "_rel_gap": "final gap"}
# Swept keys drawn against (the first few, in the order `data.swept` gives them).
MAX_KEYS = 3
# Datasets drawn in one summary figure (a row of panels each); the rest are named as left out.
MAX_DATASETS = 4
# Rows (configurations) of one summary line set the page holds per swept key; past it, the
# configurations along each line are thinned evenly (the page says so).
PAGE_ROWS = 20_000
# Trace points the page holds in all (each: seconds, iteration and the metric, float32): past
# them a problem's lines get fewer points, never fewer than MIN_POINTS each.
PAGE_POINTS = 120_000
MIN_POINTS = 4
MAX_POINTS = 40


def _measure_sql(data: ReportData, col: str, centre: str) -> tuple[str, str, str] | None:
    """(centre, least, largest) over folds of one measure as SQL, or None if the run lacks it."""
    types = data.types("fits")
    if col == "_rel_gap":
        if not {"duality_gap", "primal_objective"} <= set(types):
            return None
        v = "nn(abs(num(duality_gap)) / abs(num(primal_objective)))"
    elif col in types:
        v = f"num({q(col)})"
    else:
        return None
    return f"{centre}({v})", f"min({v})", f"max({v})"


def swept_numeric(data: ReportData) -> list[str]:
    """The swept keys with numeric values (C, gamma, lambda, a tol...), at most MAX_KEYS."""
    from .figures import START_KEYS
    types = data.types("fits")
    out = []
    for k in data.swept():
        if k in START_KEYS or k not in types:
            continue
        if k == "C" or data.engine.scalar(f"SELECT count(num({q(k)})) FROM {data.table('fits')}"):
            out.append(k)
    if LAMBDA in out and "C" in out:
        out.remove("C")          # a lambda sweep is drawn along lambda (its C moves with the fold)
    return out[:MAX_KEYS]


def _numeric_view(data: ReportData, keys: list[str]) -> ReportData:
    """The fits with `keys` as numbers (a key swept as text beside numbers: its numbers)."""
    repl = ", ".join(f"num({q(k)}) AS {q(k)}" for k in keys if k != "C")
    sql = f"SELECT * REPLACE ({repl}) FROM {data.table('fits')}" if repl else f"SELECT * FROM {data.table('fits')}"
    return data.view({"_num": data.engine.view(sql)})


def summaries(data: ReportData, x: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """(rows: one per dataset, line and x, with `<measure>`, `<measure>_lo`, `<measure>_hi` and
    `_pid`; the line keys; the swept keys a label names) of the measures against swept key x."""
    from .figures import keys_of_lines
    line_keys, shown = keys_of_lines(data, x)
    view = _numeric_view(data, [x])
    aggs = {}
    for col, centre, *_ in MEASURES:
        sql = _measure_sql(data, col, centre)
        if sql is not None:
            aggs.update({col: sql[0], f"{col}_lo": sql[1], f"{col}_hi": sql[2]})
    if not aggs:
        raise Skip("the run's fits have none of test accuracy, fit time, iterations, duality gap")
    aggs["_pid"] = f"any_value({data.pid('fits')})"
    aggs["_folds"] = "count(*)"
    rows = view.summary(list(dict.fromkeys(["dataset"] + line_keys + [x])), aggs, name="_num",
                        where=f"{q(x)} IS NOT NULL")
    return rows, line_keys, shown


def _lines(rows: pd.DataFrame, line_keys: list[str], x: str, score_col: str, higher: bool):
    """The lines of one dataset (each a frame sorted by x), at most MAX_LINES: the best by the
    measure at any x; and the words saying how many were left out."""
    from .figures import best_lines
    lines = [g.sort_values(x) for _, g in rows.groupby(line_keys, sort=True, dropna=False) if g[x].nunique() > 1]
    if not lines:
        return [], ""
    col = score_col if score_col in rows.columns else "fit_time_s"
    return best_lines(lines, (lambda g: g[col].max()) if higher else (lambda g: g[col].min()),
                      f"{'best' if higher else 'least'} {col}", higher=higher)


def _axis_label(x: str) -> str:
    return {"C": "C", LAMBDA: "lambda"}.get(x, x[6:] if x.startswith("param_") else x)


@figure("sweep_summary", "Summary over the swept keys", scale=True,
        note="Every problem of the sweep: each measure against each swept key, a line per solver entry and other "
             "swept values (at most 10 per panel: those of the best accuracy, or the least time, at any value); "
             "the band is the spread over folds (the least to the largest fold), around the mean accuracy or the "
             "median of the others. A key swept over hundreds of values is a curve, not points.")
def sweep_summary(data: ReportData):
    from .figures import panel_title
    from .plotting import decorate, log_ticks, panel_grid, value_ticks
    from .plotting import pyplot
    plt = pyplot()
    keys = swept_numeric(data)
    if not keys:
        raise Skip("no numeric key was swept")
    pages = []
    for x in keys:
        rows, line_keys, shown = summaries(data, x)
        datasets = sorted(rows["dataset"].unique(), key=str)
        measures = [m for m in MEASURES if m[0] in rows.columns and rows[m[0]].notna().any()]
        if not measures:
            continue
        drawn = datasets[:MAX_DATASETS]
        fig, axes = panel_grid(len(drawn) * len(measures), ncols_max=len(measures))
        for i, ds in enumerate(drawn):
            mine = rows[rows["dataset"] == ds]
            lines, cut = _lines(mine, line_keys, x, "test_accuracy", True) if "test_accuracy" in mine.columns \
                and mine["test_accuracy"].notna().any() else _lines(mine, line_keys, x, "fit_time_s", False)
            for j, (col, _, centre, ylabel, logy) in enumerate(measures):
                ax = axes[i * len(measures) + j]
                for grp, style in zip(lines, styles(len(lines))):
                    style = {k: v for k, v in style.items() if k not in ("marker", "markersize")}
                    xs = grp[x].to_numpy(float)
                    ax.plot(xs, grp[col].to_numpy(float), label=label(grp.iloc[0], shown), **style)
                    ax.fill_between(xs, grp[f"{col}_lo"].to_numpy(float), grp[f"{col}_hi"].to_numpy(float),
                                    color=style.get("color"), alpha=0.18, linewidth=0)
                vals = pd.concat([g[[f"{col}_lo", f"{col}_hi"]] for g in lines]).to_numpy(float) if lines else np.array([])
                vals = vals[np.isfinite(vals)]
                log = logy and vals.size and vals.min() > 0 and vals.max() / vals.min() > 10
                title = f"{ds}: {centre} {SHORT[col]}"
                decorate(ax, panel_title(title, cut), _axis_label(x), ylabel, len(lines) if j == 0 else 0,
                          logx=bool((rows[x] > 0).all()), logy=log)
                if ax.get_legend() is not None and j > 0:
                    ax.get_legend().remove()
                if lines:
                    value_ticks(ax, pd.concat([g[x] for g in lines]))
                if log:
                    log_ticks(ax, x=False, y=True)
        if len(datasets) > len(drawn):
            fig.suptitle(f"{len(datasets) - len(drawn)} more datasets not drawn: {', '.join(map(str, datasets[len(drawn):]))}"[:200])
        pages.append(fig)
    if not pages:
        plt.close("all")
        raise Skip("no measure was recorded")
    return pages[0] if len(pages) == 1 else pages


@figure("sweep_map", "Map over two swept keys", scale=True,
        note="Mean test accuracy and median fit time over folds at each pair of values of the first two swept keys, "
             "one pair of panels per dataset and solver entry (at most four).")
def sweep_map(data: ReportData):
    from .plotting import panel_grid
    keys = swept_numeric(data)
    if len(keys) < 2:
        raise Skip("fewer than two numeric keys were swept")
    x, y = keys[:2]
    view = _numeric_view(data, [x, y])
    aggs = {}
    for col, centre, *_ in MEASURES[:2]:
        sql = _measure_sql(data, col, centre)
        if sql is not None:
            aggs[col] = sql[0]
    rows = view.summary(["dataset", "solver_entry", x, y], aggs, name="_num", where=f"{q(x)} IS NOT NULL AND {q(y)} IS NOT NULL")
    panels = [(k, g) for k, g in rows.groupby(["dataset", "solver_entry"], sort=True) if g[x].nunique() > 1 and g[y].nunique() > 1]
    if not panels:
        raise Skip(f"no solver entry was run at more than one {x} and {y}")
    measures = [m for m in MEASURES[:2] if m[0] in rows.columns]
    panels = panels[:4]
    fig, axes = panel_grid(len(panels) * len(measures), ncols_max=len(measures) * (2 if len(panels) > 1 else 1))
    for i, ((ds, entry), g) in enumerate(panels):
        for j, (col, _, centre, what, logc) in enumerate(measures):
            ax = axes[i * len(measures) + j]
            grid = g.pivot_table(index=y, columns=x, values=col, aggfunc="mean")
            vals = grid.to_numpy(float)
            if logc:
                vals = np.log10(np.where(vals > 0, vals, np.nan))
            xs, ys = grid.columns.to_numpy(float), grid.index.to_numpy(float)
            mesh = ax.pcolormesh(xs, ys, vals, shading="nearest", cmap="viridis")
            if (xs > 0).all():
                ax.set_xscale("log")
            if (ys > 0).all():
                ax.set_yscale("log")
            ax.set_xlabel(_axis_label(x))
            ax.set_ylabel(_axis_label(y))
            ax.set_title(f"{ds}, {entry}: {centre} {SHORT[col]}" + (" (log10)" if logc else ""), fontsize=9)
            ax.figure.colorbar(mesh, ax=ax)
    return fig


# ------------------------------------------------------------------------------ the page
def _b64(a) -> str:
    """A float array as base64 of little-endian float32 (NaN where missing): a quarter of JSON's size."""
    return base64.b64encode(np.asarray(a, dtype="<f4").tobytes()).decode("ascii")


def _esc(v) -> str:
    """A user's string as plotly and the page show it: as text, never markup."""
    return html.escape(str(v), quote=False)


def page_traces(data: ReportData, pids: list[str]) -> dict:
    """Per problem (index into `pids`), its lines: the first fold of each configuration, its
    trace thinned to a log-spaced `per` points (the budget PAGE_POINTS shared by every line),
    as base64 float32 columns (seconds, iteration, and the relative gap or the objective)."""
    if not data.has_table("traces") or data.count("traces") == 0:
        return {"lines": [], "metric": ""}
    types_t = data.types("traces")
    fits = data.table("fits")
    from .figures import START_KEYS
    from .common import config_columns
    cfg = [c for c in config_columns(data.frame_of("fits")) if c not in START_KEYS]
    first = data.engine.view(
        f"SELECT key, {data.pid('fits')} AS _pid, solver_entry FROM {fits} "
        f"QUALIFY row_number() OVER (PARTITION BY {', '.join(data.norm(c, 'fits') for c in ['solver_entry'] + cfg)} "
        f"ORDER BY fold, key) = 1")
    n_lines = int(data.engine.scalar(f"SELECT count(*) FROM {q(first)}") or 0)
    if n_lines == 0:
        return {"lines": [], "metric": ""}
    per = int(np.clip(PAGE_POINTS // max(n_lines, 1), MIN_POINTS, MAX_POINTS))
    keep_lines = max(1, PAGE_POINTS // per)
    if "gap" in types_t and "primal" in types_t:
        metric, y = "(P - D) / |P|", "nn(abs(t.gap) / abs(t.primal))"
    elif "primal" in types_t:
        metric, y = "primal objective P", "t.primal"
    else:
        return {"lines": [], "metric": ""}
    import pyarrow as pa
    data.engine.register("_page_pids", pa.table({"_pid": pa.array([str(p) for p in pids], pa.string()),
                                                  "_i": pa.array(np.arange(len(pids)), pa.int64())}))
    # Log-spaced thinning in SQL: of a line's n points, the first, the last, and each where
    # floor(per * ln(rn) / ln(n)) steps up.
    rows = data.sql(f"""
        WITH l AS (SELECT f.key, p._i, f.solver_entry FROM {q(first)} f JOIN _page_pids p ON f._pid = p._pid
                   ORDER BY p._i, f.key LIMIT {keep_lines}),
             t AS (SELECT l._i, l.solver_entry, l.key, t.iteration, t.time_s, {y} AS y,
                          row_number() OVER (PARTITION BY l.key ORDER BY t.iteration) AS rn,
                          count(*) OVER (PARTITION BY l.key) AS n
                   FROM {data.table('traces')} t JOIN l ON t.key = l.key)
        SELECT _i, solver_entry, key, list(time_s ORDER BY rn) AS time_s, list(iteration ORDER BY rn) AS it,
               list(y ORDER BY rn) AS y
        FROM t WHERE rn = 1 OR rn = n OR floor({per} * ln(rn) / ln(n)) > floor({per} * ln(rn - 1) / ln(n))
        GROUP BY _i, solver_entry, key ORDER BY _i, solver_entry, key""")
    data.engine.con.unregister("_page_pids")
    lines = [{"p": int(r["_i"]), "name": _esc(r["solver_entry"]), "t": _b64(r["time_s"]), "k": _b64(r["it"]),
              "y": _b64(r["y"])} for r in rows.to_dict("records")]
    return {"lines": lines, "metric": metric, "per": per, "cut": max(0, n_lines - keep_lines)}


def page_data(data: ReportData) -> dict:
    """What the scaled page draws, as JSON: per swept key the summary lines (a point per value,
    each naming its problem), the problems' names and every problem's thinned traces."""
    from .figures import chosen_problems
    keys = swept_numeric(data)
    pids = [str(p) for p in data.sql(f"SELECT DISTINCT {data.pid('fits')} AS p FROM {data.table('fits')} ORDER BY p")["p"]]
    index = {p: i for i, p in enumerate(pids)}
    # A problem's name as the page shows it: its keys' values, the missing ones ("-") left out.
    out = {"keys": [], "problems": [_esc(" | ".join(v for v in p.split(" | ") if v != "-")) for p in pids],
           "measures": []}
    for x in keys:
        rows, line_keys, shown = summaries(data, x)
        measures = [m for m in MEASURES if m[0] in rows.columns and rows[m[0]].notna().any()]
        if not out["measures"]:
            out["measures"] = [{"col": m[0], "label": f"{m[2]} {m[3]}", "log": m[4]} for m in measures]
        lines = []
        for ds in sorted(rows["dataset"].unique(), key=str):
            mine = rows[rows["dataset"] == ds]
            kept, _ = _lines(mine, line_keys, x, "test_accuracy", True) if "test_accuracy" in mine.columns else \
                _lines(mine, line_keys, x, "fit_time_s", False)
            for g in kept:
                if len(g) > PAGE_ROWS // max(1, MAX_LINES):
                    g = g.iloc[np.unique(np.linspace(0, len(g) - 1, PAGE_ROWS // MAX_LINES).astype(int))]
                line = {"name": _esc(f"{ds}: {label(g.iloc[0], shown)}"), "x": _b64(g[x]),
                        "p": [index.get(str(p), -1) for p in g["_pid"]]}
                for m in measures:
                    for suffix in ("", "_lo", "_hi"):
                        line[m[0] + suffix] = _b64(g[m[0] + suffix])
                lines.append(line)
        out["keys"].append({"key": _esc(_axis_label(x)), "lines": lines})
    out["traces"] = page_traces(data, pids)
    out["chosen"] = [{"p": index[p], "why": _esc(why)} for p, why in chosen_problems(data.root).items() if p in index]
    return out


_SCRIPT = r"""
(function () {
  const D = JSON.parse(document.getElementById('svmbench-data').textContent);
  // A line and its band in one colour (plotly's own cycle would give the band another).
  const COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  const f32 = s => { const b = atob(s), u = new Uint8Array(b.length);
                     for (let i = 0; i < b.length; i++) u[i] = b.charCodeAt(i);
                     return Array.from(new Float32Array(u.buffer), v => Number.isFinite(v) ? v : null); };
  const $ = id => document.getElementById(id);
  const opt = (sel, items) => { sel.replaceChildren(...items.map(([v, t]) => {
      const o = document.createElement('option'); o.value = v; o.textContent = t; return o; })); };
  const decode = (s) => { const t = document.createElement('textarea'); t.innerHTML = s; return t.value; };
  opt($('key'), D.keys.map((k, i) => [i, decode(k.key)]));
  opt($('measure'), D.measures.map((m, i) => [i, m.label]));
  opt($('chosen'), [[-1, 'chosen problems...']].concat(D.chosen.map(c => [c.p, decode(c.why) + ': ' + decode(D.problems[c.p])])));
  $('problem').max = Math.max(0, D.problems.length - 1);
  function summary() {
    if (!D.keys.length) return;
    const k = D.keys[+$('key').value], m = D.measures[+$('measure').value], data = [];
    k.lines.forEach((l, i) => {
      const x = f32(l.x), lo = f32(l[m.col + '_lo']), hi = f32(l[m.col + '_hi']), c = COLOURS[i % COLOURS.length];
      data.push({x: x, y: lo, mode: 'lines', line: {width: 0, color: c}, showlegend: false, hoverinfo: 'skip',
                 legendgroup: 'g' + i});
      data.push({x: x, y: hi, mode: 'lines', line: {width: 0, color: c}, fill: 'tonexty', fillcolor: c + '33',
                 showlegend: false, hoverinfo: 'skip', legendgroup: 'g' + i});
      data.push({x: x, y: f32(l[m.col]), mode: 'lines+markers', marker: {size: 3, color: c}, line: {color: c},
                 name: l.name, legendgroup: 'g' + i,
                 customdata: l.p, hovertemplate: '%{x:.4g}: %{y:.4g} (click: its traces)<extra>' + l.name + '</extra>'});
    });
    Plotly.react('summary', data, {title: {text: m.label + ' against ' + k.key}, height: 520,
      xaxis: {type: 'log', title: {text: k.key}}, yaxis: {type: m.log ? 'log' : 'linear', title: {text: m.label}},
      legend: {title: {text: 'lines (click: hide / show)'}}, margin: {t: 50}});
  }
  function problem(p) {
    if (p < 0 || p >= D.problems.length) return;
    $('problem').value = p;
    $('which').textContent = 'problem ' + (p + 1) + ' of ' + D.problems.length + ': ' + decode(D.problems[p]);
    const data = D.traces.lines.filter(l => l.p === p).map(l => ({
      x: f32($('x').value === 'time' ? l.t : l.k), y: f32(l.y), name: l.name, mode: 'lines+markers',
      marker: {size: 4}, line: {shape: 'hv'}}));
    Plotly.react('traces', data, {title: {text: data.length ? decode(D.problems[p]) : 'no trace kept for this problem'},
      height: 480, xaxis: {type: 'log', title: {text: $('x').value === 'time' ? 'seconds' : 'iteration'}},
      yaxis: {type: 'log', title: {text: D.traces.metric}}, margin: {t: 50}});
  }
  $('key').onchange = summary; $('measure').onchange = summary;
  $('chosen').onchange = () => problem(+$('chosen').value);
  $('problem').oninput = () => problem(+$('problem').value);
  $('x').onchange = () => problem(+$('problem').value);
  summary();
  problem(D.chosen.length ? D.chosen[0].p : 0);
  const s = $('summary');
  if (s.on) s.on('plotly_click', ev => { const pt = ev.points[0]; if (pt && pt.customdata !== undefined) problem(pt.customdata); });
})();
"""


def write_scaled_page(data: ReportData, path, title: str) -> bool:
    """The interactive page of a run of more than MAX_PROBLEMS problems: the summaries over the
    swept keys and any one problem's traces on demand, from data embedded in the page (offline;
    plotly.js inlined), its size bounded by PAGE_ROWS and PAGE_POINTS whatever the sweep's."""
    from pathlib import Path
    path = Path(path)
    try:
        payload = page_data(data)
    except Skip:
        path.unlink(missing_ok=True)
        return False
    if not any(k["lines"] for k in payload["keys"]) and not payload["traces"]["lines"]:
        path.unlink(missing_ok=True)
        return False
    from plotly.offline import get_plotlyjs
    # JSON inside <script>: "</" written as "<\/" so no user string can end the element.
    blob = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")
    tr = payload["traces"]
    note = (f"{len(payload['problems'])} problems. Above: a measure against a swept key over every problem (band: the "
            f"spread over folds); click a point to see that problem's traces below. Below: one line per solver "
            f"configuration (its first fold), at most {tr.get('per', MAX_POINTS)} log-spaced points each"
            + (f"; {tr['cut']} lines beyond the page's budget of {PAGE_POINTS} points are left out" if tr.get("cut") else "")
            + ". The sweep's own fits, on the solver clock.")
    text = (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title></head>"
            f"<body style='font-family:sans-serif'><h2>{html.escape(title)}</h2><p>{html.escape(note)}</p>"
            f"<script>{get_plotlyjs()}</script>"
            f"<div>swept key <select id=key></select> measure <select id=measure></select></div>"
            f"<div id=summary></div>"
            f"<div>problem <input id=problem type=range min=0 value=0 style='width:40%'> <select id=chosen></select> "
            f"x <select id=x><option value=time>seconds</option><option value=iteration>iteration</option></select> "
            f"<span id=which></span></div><div id=traces></div>"
            f"<script type=application/json id=svmbench-data>{blob}</script>"
            f"<script>{_SCRIPT}</script></body></html>\n")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return True

