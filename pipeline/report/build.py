"""Walk the registry into ``report.md``, a self-contained ``report.html`` (figures embedded as
base64 PNG) and ``figures/`` (PNG; PDF too when ``report.formats`` asks); gather a Hydra multirun;
compare two runs."""
from __future__ import annotations

import argparse
import base64
import html
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import figures, profiles, search, tables  # noqa: F401  importing them registers the tables and figures
from .figures import space_ticks
from .common import (MAX_LINES, config_columns, count, fmt, has_lambda, html_table, keyed, markdown_table,
                     split_wide, swept_keys)
from .registry import ReportData, Skip, items
from .speed import speed_view, with_start

DPI = 110


@dataclass
class Section:
    name: str
    title: str
    note: str = ""
    table: pd.DataFrame | None = None
    lines: tuple = ()
    figures: tuple = ()             # the PNGs (a PDF beside each): one, or the pages of a large grid
    skipped: str = ""
    hint: str = ""                  # what to set to get a skipped item

    @property
    def figure(self) -> Path | None:
        return self.figures[0] if self.figures else None


def load(run_dir: Path, baseline: str | None = None, target: float | None = None) -> ReportData:
    """A run directory's tables (results, traces, models if kept, the timing fits if any) and
    options (`baseline`, `target`: the run's report.* where not given)."""
    from ..results.tables import TIMING_TABLE, TIMING_TRACES
    run_dir = Path(run_dir)
    res_path, tr_path = run_dir / "results.parquet", run_dir / "traces.parquet"
    for p in (res_path, tr_path):
        if not p.exists():
            raise FileNotFoundError(f"{p} not found: is {run_dir} a svmbench run directory?")
    models = run_dir / "models.parquet"
    timing = [run_dir / TIMING_TABLE, run_dir / TIMING_TRACES]
    timed = all(p.exists() for p in timing)
    opts = report_options(run_dir)
    return ReportData(pd.read_parquet(res_path), pd.read_parquet(tr_path),
                      pd.read_parquet(models) if models.exists() else pd.DataFrame(),
                      baseline=baseline if baseline is not None else opts["baseline"], name=run_dir.name,
                      timing=pd.read_parquet(timing[0]) if timed else pd.DataFrame(),
                      timing_traces=pd.read_parquet(timing[1]) if timed else pd.DataFrame(),
                      target=float(target if target is not None else opts["target"]),
                      search=search.state(run_dir))


def config_baseline(run_dir: Path) -> str | None:
    """report.baseline of the run's config (config.yaml, written by run.py), if any."""
    return report_options(run_dir)["baseline"]


# The report's options (`report.*` of the experiment, schema.REPORT_KEYS) and their defaults.
REPORT_DEFAULTS = {"baseline": None, "formats": ["png"], "figures": True, "target": 1e-3}


def report_options(run_dir: Path) -> dict:
    """The `report` options of the run's config (config.yaml, written by run.py; validated there),
    the defaults where it sets none (or there is no config: a gathered multirun folder)."""
    out = dict(REPORT_DEFAULTS)
    path = Path(run_dir) / "config.yaml"
    if path.exists():
        # The saved config is plain YAML (the experiment as validated, `Experiment.to_yaml`):
        # read as data, not composed again.
        import yaml
        given = (yaml.safe_load(path.read_text()) or {}).get("report") or {}
        out.update({k: v for k, v in given.items() if v is not None})
    out["formats"] = list(out["formats"])
    return out


def sections(data: ReportData, fig_dir: Path, formats=("png",), figures_: bool = True,
             processes: int | None = None, meanwhile=None) -> list[Section]:
    """Every registered table and figure, or the reason it was skipped. The figures are drawn
    in `processes` forked processes (default: one per core, at most PROCESSES): drawing is
    nearly all of a report's time, and each figure is independent of the others. The tables,
    and `meanwhile()` if given (the interactive page), are made here while they draw."""
    its = items()
    wanted = [it for it in its if it.kind == "figure" and figures_ and it.missing(data) is None]
    pending = draw_figures(wanted, data, fig_dir, formats, processes)
    tables_ = {}
    for it in its:
        if it.kind == "table" and it.missing(data) is None:
            try:
                tables_[it.name] = (it.fn(data), tuple(it.lines(data)) if it.lines else (), None)
            except Skip as exc:
                tables_[it.name] = (None, (), exc)
    if meanwhile is not None:
        meanwhile()
    drawn = pending()
    out = []
    for it in its:
        sec = Section(it.name, it.title, it.note)
        why = it.missing(data)
        hint = it.hint
        if why is None and it.kind == "figure" and not figures_:
            why, hint = "figures are off in this run (report.figures=false)", "set `report.figures=true`"
        if why is None:
            if it.kind == "table":
                sec.table, sec.lines, exc = tables_[it.name]
                if exc is not None:
                    why = str(exc)
                    hint = it.hint if exc.hint is None else exc.hint
            else:
                sec.figures, why, skip_hint = drawn[it.name]
                hint = it.hint if skip_hint is None else skip_hint
        if why:
            sec.skipped, sec.hint = why, hint
        if it.kind == "figure":      # a rebuild leaves no figure (or page) of an earlier build behind
            for stale in _pages_on_disk(fig_dir, it.name):
                if stale.with_suffix(".png") not in sec.figures or stale.suffix[1:] not in formats:
                    stale.unlink()
        out.append(sec)
    return out


PROCESSES = 4
_JOB: tuple = ()          # (data, fig_dir, formats) of the figures being drawn, for the forked processes


def _draw_one(name: str):
    """(name, (pages, skipped reason, hint)) of one registered figure, drawn and saved."""
    data, fig_dir, formats = _JOB
    it = next(i for i in items("figure") if i.name == name)
    try:
        value = it.fn(data)
    except Skip as exc:
        return name, ((), str(exc), exc.hint)
    return name, (save_figures(value, fig_dir, it.name, formats), "", None)


def draw_figures(wanted, data: ReportData, fig_dir: Path, formats, processes: int | None = None):
    """Start drawing the figure items; returns a function that waits for them and gives
    {name: (pages, skipped reason, hint)}. In forked processes where the platform forks (they read
    `data` as the parent holds it, nothing pickled) and there is more than one figure and one
    core; else drawn here, one after another, before returning."""
    import multiprocessing as mp
    import os
    global _JOB
    if processes is None:
        processes = min(PROCESSES, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    processes = max(1, min(processes, len(wanted)))
    if processes == 1 or "fork" not in mp.get_all_start_methods():
        _JOB = (data, fig_dir, formats)
        try:
            done = dict(_draw_one(it.name) for it in wanted)
        finally:
            _JOB = ()
        return lambda: done
    data.trace_arrays()          # split once, before the fork: every process reads it
    speed_view(data).trace_arrays()      # and the timing fits' (speed.py), which the figures draw
    _JOB = (data, fig_dir, formats)
    try:
        pool = mp.get_context("fork").Pool(processes)
    finally:
        _JOB = ()                # the children have their copy
    result = pool.map_async(_draw_one, [it.name for it in wanted], chunksize=1)
    pool.close()

    def wait() -> dict:
        try:
            return dict(result.get())
        finally:
            pool.terminate()
            pool.join()
    return wait


def _pages_on_disk(fig_dir: Path, name: str) -> list[Path]:
    if not fig_dir.exists():
        return []
    return [p for p in fig_dir.iterdir() if p.suffix in (".png", ".pdf")
            and (p.stem == name or (p.stem.startswith(name + "_") and p.stem[len(name) + 1:].isdigit()))]


def save_figures(value, fig_dir: Path, name: str, formats=("png",)) -> tuple[Path, ...]:
    """A figure, or the pages of one (a list), as `name.png`, `name_2.png`, ... (and PDFs)."""
    figs = value if isinstance(value, list) else [value]
    return tuple(save_figure(f, fig_dir, name if i == 0 else f"{name}_{i + 1}", formats)
                 for i, f in enumerate(figs))


def save_figure(fig, fig_dir: Path, name: str, formats=("png",)) -> Path:
    """The figure as PNG (embedded in the html) and, if asked, PDF (for papers); returns the PNG.

    The figure is drawn once: onto a canvas grown to hold what hangs outside the panels (the
    legends below them), whose pixels are then cropped to what is drawn. savefig's
    bbox_inches="tight" draws every text of the figure once more to measure it, and then once
    per format; on a page of a dozen panels that measuring was as long as the drawing."""
    import matplotlib.pyplot as plt
    fig_dir.mkdir(parents=True, exist_ok=True)
    _make_room(fig)
    space_ticks(fig)
    fig.set_dpi(DPI)
    _grow_canvas(fig)
    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    box = _ink_box(rgba)
    png = fig_dir / f"{name}.png"
    if box is None:
        # Something touches the canvas's edge (it may go on beyond it): measured the slow way.
        bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.1)
        for ext in formats:
            fig.savefig(fig_dir / f"{name}.{ext}", dpi=DPI, bbox_inches=bbox)
    else:
        r0, r1, c0, c1 = box
        from PIL import Image
        # compress_level 1: a fifth of the default's time for PNGs about a third larger; RGB, the
        # figure being opaque: a quarter less to encode.
        Image.fromarray(np.ascontiguousarray(rgba[r0:r1, c0:c1, :3])).save(png, compress_level=1)
        if "pdf" in formats:
            from matplotlib.transforms import Bbox
            h = rgba.shape[0]
            fig.savefig(fig_dir / f"{name}.pdf", bbox_inches=Bbox([[c0 / DPI, (h - r1) / DPI], [c1 / DPI, (h - r0) / DPI]]))
    plt.close(fig)
    return png


# Margin (inches) kept round what is drawn, and grown round the panels before drawing.
PAD_IN = 0.1


def _grow_canvas(fig) -> None:
    """Grow the figure's canvas (the axes keep their size and place in inches) by what its
    legends need below the panels, and a margin all round, so that one draw holds all of it."""
    renderer = fig.canvas.get_renderer()
    w, h = fig.get_size_inches()
    low = 0.0
    for leg in list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
        low = min(low, leg.get_window_extent(renderer).y0 / fig.dpi)
    sup = fig._suptitle
    # The suptitle (a figure's heading: its target, the problems it leaves out) stands above the
    # highest panel's title, however tall the figure: at the figure's top it ran into the panel
    # titles of a short figure of one row.
    sup_lines = sup.get_text().count("\n") + 1 if sup is not None and sup.get_text() else 0
    left = right = 0.4
    top = 0.4 + 0.2 * sup_lines
    bottom = 0.4 - low + 0.3           # 0.3 in: a legend measured before the draw may yet grow
    fig.set_size_inches(w + left + right, h + top + bottom, forward=False)
    W, H = w + left + right, h + top + bottom
    for ax in fig.axes:
        p = ax.get_position()
        ax.set_position([(p.x0 * w + left) / W, (p.y0 * h + bottom) / H, p.width * w / W, p.height * h / H])
    for text in fig.texts:
        x, y = text.get_position()
        if text is not sup and text.get_transform() == fig.transFigure:
            text.set_position(((x * w + left) / W, (y * h + bottom) / H))
    if sup_lines:
        shown = [ax for ax in fig.axes if ax.get_visible()]
        highest = max(shown, key=lambda ax: ax.get_position().y1) if shown else None
        title_lines = max((ax.get_title().count("\n") + 1 for ax in shown if ax.get_title()), default=0)
        y1 = highest.get_position().y1 * H if highest is not None else h + bottom
        sup.set_verticalalignment("bottom")
        sup.set_position((0.5, (y1 + 0.08 + 0.2 * title_lines + 0.1) / H))


def _ink_box(rgba: np.ndarray) -> tuple[int, int, int, int] | None:
    """(first row, end row, first column, end column) of the pixels that differ from the
    background, padded by PAD_IN; None if any touches the canvas's edge (it was cut there)."""
    px = np.ascontiguousarray(rgba).view(np.uint32)[..., 0]      # a pixel as one word: one comparison
    ink = px != px[0, 0]
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size == 0:
        return 0, rgba.shape[0], 0, rgba.shape[1]
    if rows[0] == 0 or cols[0] == 0 or rows[-1] == rgba.shape[0] - 1 or cols[-1] == rgba.shape[1] - 1:
        return None
    pad = int(round(PAD_IN * DPI))
    return (max(rows[0] - pad, 0), min(rows[-1] + 1 + pad, rgba.shape[0]),
            max(cols[0] - pad, 0), min(cols[-1] + 1 + pad, rgba.shape[1]))


def _make_room(fig) -> None:
    """Space between rows of panels for the legends below them (the saved figure is cropped to
    what is drawn, so the last row's legend needs none). Cheaper than a layout engine, which
    measures every text of the figure again."""
    rows = [len(ax.get_legend().get_texts()) for ax in fig.axes if ax.get_legend() is not None
            and ax.get_legend().get_bbox_to_anchor().y0 < ax.bbox.y0]
    n = max(rows, default=0)
    grids = [ax.get_subplotspec().get_gridspec() for ax in fig.axes if ax.get_subplotspec() is not None]
    nrows = max((g.nrows for g in grids), default=1)
    old = fig.subplotpars.hspace
    pars = fig.subplotpars
    panel_in = fig.get_figheight() * (pars.top - pars.bottom) / (nrows + (nrows - 1) * old)
    # 0.45 panel heights without legends: a panel's x label and the title of the panel below it
    # need that much; a legend adds its lines (7 pt type: 0.15 in each) and its gap to the x label.
    hspace = 0.45 + ((0.15 * n + 0.3) / panel_in if n else 0.0)
    if nrows > 1:
        # hspace is a fraction of the panels' height taken out of the figure's: the figure grows
        # instead, so that the panels keep the height they were made with.
        fig.set_figheight(fig.get_figheight() * (nrows + (nrows - 1) * hspace) / (nrows + (nrows - 1) * old))
    fig.subplots_adjust(hspace=hspace, wspace=0.3)


def summary_line(results: pd.DataFrame) -> str:
    n_failed = int((results["status"] == "error").sum())
    return (f"{count(len(results), 'fit')} ({len(results) - n_failed} finished, {n_failed} failed) over "
            f"{count(results['dataset'].nunique(), 'dataset')} and "
            f"{count(results['solver_entry'].nunique(), 'solver')}.")


def _walk(secs: list[Section], heading, note, table, lines, figure) -> list[str]:
    """The sections drawn, in one output format: one renderer per part, the order shared by md
    and html. Skipped sections are not walked: `skip_lines` lists them once, at the end."""
    out = []
    for s in secs:
        if s.skipped:
            continue
        out.append(heading(s))
        if s.note:
            out.append(note(s.note))
        if s.table is not None:          # an empty table is shown as "(none)", not left out
            out.append(table(s.table))
        if s.lines:
            out.append(lines(s.lines))
        for png in s.figures:
            out.append(figure(s, png))
    return out


SKIPPED_TITLE = "Not drawn"


def skip_lines(secs: list[Section]) -> list[str]:
    """Every skipped table and figure once, grouped by why and what to set to get it: a run
    without f* reads one line naming its six sections, not six headings saying the same."""
    groups: dict[tuple[str, str], list[str]] = {}
    for s in secs:
        if s.skipped:
            groups.setdefault((s.skipped, s.hint), []).append(s.title)
    return [f"- {', '.join(titles)}: {why}" + (f"; to get it, {hint}" if hint else "") + "."
            for (why, hint), titles in groups.items()]


def to_markdown(title: str, intro: list[str], secs: list[Section], rel_to: Path, pdf: bool = False) -> str:
    def figure(s, png):
        rel = png.relative_to(rel_to).as_posix()
        return f"![{s.title}]({rel})" + (f" ([PDF]({rel[:-4]}.pdf))" if pdf else "") + "\n"
    body = _walk(secs, lambda s: f"## {s.title}\n", lambda n: n + "\n",
                 lambda t: "\n".join(markdown_table(part) for part in split_wide(t)), lambda ls: "\n".join(ls) + "\n",
                 figure)
    skips = skip_lines(secs)
    if skips:
        body += [f"## {SKIPPED_TITLE}\n", "\n".join(skips) + "\n"]
    return "\n".join([f"# {title}\n", *[line + "\n" for line in intro], *body])


_CSS = ("body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em}"
        "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
        ".wide{overflow-x:auto}img{max-width:100%}.note{color:#444}.skip{color:#666}"
        "code{background:#f3f3f3;padding:0 2px}")


def inline(text: str) -> str:
    """Markdown's inline code (`run.reference=true`) as HTML <code>, the rest escaped: the page
    shows no raw backticks."""
    parts = html.escape(text).split("`")
    if len(parts) % 2 == 0:              # an unpaired backtick: left as it is
        return html.escape(text)
    return "".join(p if i % 2 == 0 else f"<code>{p}</code>" for i, p in enumerate(parts))


def to_html(title: str, intro: list[str], secs: list[Section]) -> str:
    """Every section, the figures embedded as base64 PNG: one file that opens anywhere."""
    esc = html.escape

    def figure(s, png):
        b64 = base64.b64encode(png.read_bytes()).decode("ascii")
        return f'<img alt="{esc(s.title)}" src="data:image/png;base64,{b64}">'
    drawn = [s for s in secs if not s.skipped]
    skips = skip_lines(secs)
    toc = [(s.name, s.title) for s in drawn] + ([("not_drawn", SKIPPED_TITLE)] if skips else [])
    head = [f"<!doctype html><meta charset=utf-8><title>{esc(title)}</title><style>{_CSS}</style>",
            f"<h1>{esc(title)}</h1>", *[f"<p>{inline(x)}</p>" for x in intro],
            "<ul>" + "".join(f'<li><a href="#{name}">{esc(t)}</a></li>' for name, t in toc) + "</ul>"]
    items_ = lambda ls: "<ul>" + "".join(f"<li>{inline(x.lstrip('- '))}</li>" for x in ls) + "</ul>"  # noqa: E731
    body = _walk(secs, lambda s: f'<h2 id="{s.name}">{esc(s.title)}</h2>', lambda n: f"<p class=note>{inline(n)}</p>",
                 lambda t: "".join(f"<div class=wide>{html_table(part)}</div>" for part in split_wide(t)), items_, figure)
    if skips:
        body += [f'<h2 id="not_drawn">{SKIPPED_TITLE}</h2>', f"<div class=skip>{items_(skips)}</div>"]
    return "\n".join(head + body) + "\n"


def write(run_dir: Path, title: str, intro: list[str], secs: list[Section], pdf: bool = False) -> Path:
    (run_dir / "report.md").write_text(to_markdown(title, intro, secs, run_dir, pdf))
    (run_dir / "report.html").write_text(to_html(title, intro, secs))
    return run_dir / "report.md"


def preload(figures: bool = True) -> None:
    """Import what the figures and the interactive page draw with (matplotlib's Agg backend,
    plotly, PIL: about a second of a small run's report, idle) ahead of `build_report`, for a
    caller that has idle time before it: `run` waits for its Dask workers to start and warm while
    this runs in a thread. Nothing with `figures=False` (tables only need neither)."""
    if not figures:
        return
    from .figures import _plt
    _plt()
    import matplotlib.transforms  # noqa: F401
    import plotly.io  # noqa: F401
    from PIL import Image  # noqa: F401
    from . import interactive
    interactive.template()


def build_report(run_dir: Path, baseline: str | None = None, compare: Path | None = None,
                 formats: list[str] | None = None, figures: bool | None = None, target: float | None = None) -> Path:
    """Write report.md, report.html and figures/ from the run's Parquet tables. A Hydra multirun
    folder (job folders each with results.parquet) is gathered into one table first; `compare`
    adds a section putting another run's numbers beside this one's. `formats` (png, pdf) and
    `figures` (False: tables only, no figure nor interactive page) default to the run's
    `report.formats` and `report.figures`; `target` (the (P - f*)/|f*| speed is timed to) to its
    `report.target`."""
    run_dir = Path(run_dir)
    opts = report_options(run_dir)
    formats = list(opts["formats"] if formats is None else formats)
    figures = bool(opts["figures"] if figures is None else figures)
    intro = []
    if not (run_dir / "results.parquet").exists() or jobs(run_dir):
        found = jobs(run_dir)
        if found:
            gather(run_dir, found)
            intro.append(f"Gathered from {count(len(found), 'job')} of a Hydra multirun: "
                         + ", ".join(p.relative_to(run_dir).as_posix() for p in found) + ".")
    data = load(run_dir, baseline, target)
    intro.insert(0, summary_line(data.results))
    if has_lambda(data.results).any():
        intro.append("A configuration given by lambda is named by its lambda; its C in the tables and on the C "
                     "axes is the mean over its fits of the C it gives (Pegasos's C = 1/(lambda n) moves with "
                     "each fold's training size n).")
    intro.append(f"Figures draw at most {MAX_LINES} lines per panel (the best by the figure's measure, as the "
                 "panel's title says); the tables list every configuration.")
    intro += speed_intro(data)
    if data.baseline:
        intro.append(f"Ratios are taken against `{data.baseline}` (report.baseline).")
    from .interactive import NAME, write_page

    def page():
        if not figures:
            (run_dir / NAME).unlink(missing_ok=True)
        elif write_page(data, run_dir / NAME, f"svmbench traces: {run_dir.name}"):
            intro.append(f"Every trace, to explore by dataset, problem, metric and solver: `{NAME}` (opens offline).")
    secs = sections(data, run_dir / "figures", formats, figures, meanwhile=page)
    if compare is not None:
        other = load(Path(compare))
        secs.append(Section("compare", f"Compared with {Path(compare).name}",
                            note="Configurations present in both runs, matched on dataset, solver entry, every "
                                 "problem and parameter key, start (a warm fit is matched with a warm one only) "
                                 "and fold; medians over the matched folds, ratio: other over this run, on the "
                                 "solver clock, each to its own stop.", table=compare_table(data, other)))
    return write(run_dir, f"svmbench report: {run_dir.name}", intro, secs, pdf="pdf" in formats)


def speed_intro(data: ReportData) -> list[str]:
    """What the report's speed comparisons show, said once at the top: the target, which fits they
    read (the timing fits, cold; or the sweep's, each with its start) and which fits started warm."""
    from .speed import target_of
    fits = data.fits
    if fits.empty or "f_star" not in fits.columns or not fits["f_star"].notna().any():
        return []
    warm = sorted(set(fits.loc[with_start(fits)["start"] == "warm", "solver_entry"]))
    where = (f" The sweep's fits of {', '.join(warm)} start warm along their C paths (`start`): they are compared "
             f"for accuracy, never for speed." if warm else "")
    if not data.timing.empty:
        return [f"Speed is the time to (P - f*)/|f*| <= {fmt(target_of(data))} (report.target) of "
                f"{count(len(data.timing), 'timing fit')}: cold starts, traced at every due point (a library: a ladder "
                f"of cold solves), on the call clock (the whole call from the fold's arrays to a model), one problem "
                f"and one start per ratio." + where]
    return [f"Speed is the time to (P - f*)/|f*| <= {fmt(target_of(data))} (report.target), read from the sweep's "
            f"own fits (this run has no timing fits: run.timing=false), whose traces may be thinned: a time to "
            f"target is an upper bound; ratios only between fits of one start (warm with warm, cold with cold)."
            + (f" Warm-started: {', '.join(warm)}." if warm else "")]


# ------------------------------------------------------------------------------------ multirun
def jobs(sweep_dir: Path) -> list[Path]:
    """The job folders of a Hydra multirun under sweep_dir (any depth), each with results.parquet."""
    sweep_dir = Path(sweep_dir)
    return sorted(p.parent for p in sweep_dir.rglob("results.parquet") if p.parent != sweep_dir)


def gather(sweep_dir: Path, job_dirs: list[Path]) -> None:
    """One results/traces/models table from the jobs of a multirun: a `job` column names each
    row's folder and `job_overrides` its Hydra overrides. Every job's rows are kept, also where
    two jobs ran the same task (a sweep over `cluster.n_workers` or `run.chunk` changes no task
    key, and its point is to compare the jobs): `key` becomes `<job>/<task key>` in all three
    tables, so it still joins a fit to its trace and model."""
    from ..results.tables import write_parquet
    frames = {"results": [], "traces": [], "models": [], "timing": [], "timing_traces": []}
    varied = varied_overrides({d: _overrides(d) for d in job_dirs})
    for d in job_dirs:
        job = d.relative_to(sweep_dir).as_posix()
        own = {name: pd.read_parquet(d / f"{name}.parquet") for name in frames if (d / f"{name}.parquet").exists()}
        for name in ("results", "timing"):
            if name in own:
                own[name]["job"] = job
                own[name]["job_overrides"] = varied[d]
        for name, df in own.items():
            df["key"] = job + "/" + df["key"].astype(str)
            frames[name].append(df)
    for name, dfs in frames.items():
        if dfs:
            write_parquet(pd.concat([d for d in dfs if len(d)] or dfs[:1], ignore_index=True),
                          sweep_dir / f"{name}.parquet")
        else:           # none of the jobs has it: an earlier gather's copy is not left to be read
            (sweep_dir / f"{name}.parquet").unlink(missing_ok=True)


def _overrides(job_dir: Path) -> list[str]:
    """A job's overrides as the user typed them: `prepare_overrides` (experiment.config) writes a
    free key as `++solvers.smo.grid.gamma=...` for Hydra; the `++` is ours, not the user's."""
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.exists():
        return []
    from omegaconf import OmegaConf
    return [str(x)[2:] if str(x).startswith("++") else str(x) for x in OmegaConf.load(path)]


def varied_overrides(by_job: dict) -> dict:
    """Per job, the overrides that are not the same in every job (what the multirun varied), in
    the order typed: the shared ones name no row apart and would repeat on every row."""
    lists = list(by_job.values())
    common = set.intersection(*map(set, lists)) if len(lists) > 1 else set()
    return {job: " ".join(o for o in ovs if o not in common) for job, ovs in by_job.items()}


# ------------------------------------------------------------------------------------- compare
def compare_table(a: ReportData, b: ReportData) -> pd.DataFrame:
    """Per configuration both runs hold (dataset, entry, every problem and parameter key), over
    the folds both ran: median fit time, mean test accuracy, median suboptimality, converged
    folds, side by side, and the fit-time ratio other / this."""
    both = pd.concat([with_start(a.fits).assign(_run="this"), with_start(b.fits).assign(_run="other")],
                     ignore_index=True)
    if both.empty:
        return pd.DataFrame()
    # A fit is matched only with a fit of the same start: a warm run's C path is never put in a
    # ratio with a cold run's fits (`with_start`: a run written before `start` was recorded says
    # it by `warm_from`).
    cfg = ["dataset", "solver_entry"] + [c for c in config_columns(both) if c not in ("dataset", "job_overrides")] + \
        ["start", "fold"]
    both = keyed(both, cfg)
    common = both.groupby(cfg)["_run"].nunique()
    common = common[common == 2].index
    both = both.set_index(cfg).loc[lambda d: d.index.isin(common)].reset_index()
    if both.empty:
        return pd.DataFrame()
    shown = swept_keys(pd.concat([a.results, b.results], ignore_index=True)) + ["start"]
    keys = [c for c in cfg if c != "fold"]
    agg = both.groupby(keys + ["_run"], sort=True).agg(
        folds=("fold", "count"), fit_time_s=("fit_time_s", "median"), test_accuracy=("test_accuracy", "mean"),
        rel_subopt=("rel_suboptimality", "median"),
        converged=("status", lambda s: int((s == "converged").sum()))).unstack("_run")
    agg.columns = [f"{m}_{r}" for m, r in agg.columns]
    agg = agg.reset_index()
    agg["fit_time_ratio_other_vs_this"] = agg["fit_time_s_other"] / agg["fit_time_s_this"]
    cols = ["dataset", "solver_entry", *shown, "folds_this"]
    for m in ("fit_time_s", "test_accuracy", "rel_subopt", "converged"):
        cols += [f"{m}_this", f"{m}_other"]
    return agg[cols + ["fit_time_ratio_other_vs_this"]].rename(columns={"folds_this": "folds"})


def main(argv=None, prog: str = "python -m pipeline.report") -> int:
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Rebuild a run's report from its Parquet tables (a Hydra "
                                                 "multirun folder: gather its jobs into one report).")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--compare", type=Path, metavar="OTHER_RUN_DIR",
                        help="put another run's numbers beside this one's (same problems, matched by key columns)")
    parser.add_argument("--pdf", action="store_true", default=None,
                        help="also write every figure as PDF (default: the run's report.formats, else PNG only)")
    parser.add_argument("--baseline", metavar="ENTRY", help="solver entry that ratios are taken against "
                                                            "(default: the run's report.baseline, else the references)")
    parser.add_argument("--target", type=float, metavar="EPS",
                        help="the relative suboptimality (P - f*)/|f*| speed is timed to, in (0, 1) (default: the "
                             "run's report.target, else 1e-3)")
    args = parser.parse_args(argv)
    if args.target is not None and not 0 < args.target < 1:
        print(f"error: --target={args.target!r}: must be a relative suboptimality in (0, 1), e.g. 1e-3", file=sys.stderr)
        return 2
    try:
        formats = ["png", "pdf"] if args.pdf else None
        path = build_report(args.run_dir, baseline=args.baseline, compare=args.compare, formats=formats,
                            target=args.target)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0

