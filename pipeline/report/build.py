"""Walk the registry into ``report.md``, a self-contained ``report.html`` (figures embedded as
base64 PNG) and ``figures/`` (PNG; PDF too when ``report.formats`` asks); gather a Hydra multirun;
compare two runs. `build_bounded` builds a report in a process of its own, watched: a report that
fails or outgrows its memory ends alone, and the run it reads stays as it was."""
from __future__ import annotations

import argparse
import base64
import gc
import html
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import exits
from . import figures, glossary, profiles, scaled, search, tables  # noqa: F401  importing them registers the tables and figures
from .figures import space_ticks
from .common import MAX_LINES, config_columns, count, fmt, html_table, markdown_table, md_text, split_wide
from .registry import MAX_PROBLEMS, ReportData, Skip, items
from .speed import speed_view

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
    rows: int = 0                   # a table's rows in all (it shows at most MAX_TABLE_ROWS of them)
    hint: str = ""                  # what to set to get a skipped item

    @property
    def figure(self) -> Path | None:
        return self.figures[0] if self.figures else None


def load(run_dir: Path, baseline: str | None = None, target: float | None = None,
         memory_mb: int | None = None) -> ReportData:
    """A run directory's tables (results, traces, models if kept, the timing fits if any) in the
    columnar engine, and the report options (`baseline`, `target`: the run's report.* where not
    given). Nothing is read whole: items ask for summaries (registry.ReportData)."""
    run_dir = Path(run_dir)
    for p in (run_dir / "results.parquet", run_dir / "traces.parquet"):
        if not p.exists():
            raise FileNotFoundError(f"{p} not found: is {run_dir} a svmbench run directory?")
    opts = report_options(run_dir)
    return ReportData.open(run_dir, baseline=baseline if baseline is not None else opts["baseline"],
                           target=float(target if target is not None else opts["target"]), memory_mb=memory_mb,
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


# A table of more rows than this shows this many in report.md and report.html (its item's `top`
# rows: the best ranked, the worst certified), and is written whole to tables/<name>.csv.
MAX_TABLE_ROWS = 100


def sections(data: ReportData, fig_dir: Path, formats=("png",), figures_: bool = True,
             processes: int | None = None, meanwhile=None, log=None) -> list[Section]:
    """Every registered table and figure, or the reason it was skipped. The figures are drawn
    in `processes` forked processes (default: one per core, at most PROCESSES): drawing is
    nearly all of a report's time, and each figure is independent of the others. The tables,
    and `meanwhile()` if given (the interactive page), are made here while they draw. `log`
    gets progress lines once the report has taken REPORT_QUIET_S."""
    progress = Progress(log)
    its = [it for it in items() if it.applies(data)]
    wanted = [it for it in its if it.kind == "figure" and figures_ and it.missing(data) is None]
    if wanted:
        prepare(data)
    pending = draw_figures(wanted, data, fig_dir, formats, processes)
    tables_ = {}
    table_items = [it for it in its if it.kind == "table" and it.missing(data) is None]
    for i, it in enumerate(table_items):
        progress.say(f"table {it.title} ({i + 1} of {len(table_items)})")
        try:
            tables_[it.name] = (it.fn(data), tuple(it.lines(data)) if it.lines else (), None)
        except Skip as exc:
            tables_[it.name] = (None, (), exc)
    if meanwhile is not None:
        progress.say("the interactive page")
        meanwhile()
    drawn = pending(progress)
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
                    _cut(sec, it, fig_dir.parent / "tables")
            else:
                sec.figures, why, skip_hint = drawn[it.name]
                hint = it.hint if skip_hint is None else skip_hint
        if why:
            sec.skipped, sec.hint = why, hint
        if it.kind == "figure":      # a rebuild leaves no figure (or page) of an earlier build behind
            for stale in _pages_on_disk(fig_dir, it.name):
                if stale.with_suffix(".png") not in sec.figures or stale.suffix[1:] not in formats:
                    stale.unlink()
        elif sec.table is None or sec.rows <= MAX_TABLE_ROWS:
            (fig_dir.parent / "tables" / f"{it.name}.csv").unlink(missing_ok=True)
        out.append(sec)
    return out


def _cut(sec: Section, it, table_dir: Path) -> None:
    """A table longer than MAX_TABLE_ROWS: written whole to tables/<name>.csv, and cut to the
    item's `top` rows (in the table's order) with a line saying so."""
    table = sec.table
    sec.rows = len(table)
    if len(table) <= MAX_TABLE_ROWS:
        return
    table_dir.mkdir(parents=True, exist_ok=True)
    tmp = table_dir / f".{it.name}.csv.tmp"
    table.to_csv(tmp, index=False)
    tmp.replace(table_dir / f"{it.name}.csv")
    if it.top is not None and it.top[0] in table.columns:
        col, ascending = it.top
        keep = pd.to_numeric(table[col], errors="coerce").sort_values(ascending=ascending, kind="stable",
                                                                        na_position="last").index[:MAX_TABLE_ROWS]
        which = f"the {MAX_TABLE_ROWS} of {'least' if ascending else 'largest'} `{col}`"
    else:
        keep = table.index[:MAX_TABLE_ROWS]
        which = f"the first {MAX_TABLE_ROWS}"
    sec.table = table.loc[sorted(keep)]
    sec.lines = (f"- {len(table)} rows: {which} shown; every row in `tables/{it.name}.csv`.",) + tuple(sec.lines)


def prepare(data: ReportData) -> None:
    """What the figures share, made once before the drawing processes fork (each would make it
    again): the speed view, the swept keys of it and of the run, the problems drawn one panel each
    and their traces split by fit."""
    from .figures import panel_data
    data.n_problems()
    for d in (data, speed_view(data)):
        d.swept()
        try:
            panel_data(d).trace_arrays()
        except Skip:
            pass


# A report that has taken this long says what it is doing, then at most every REPORT_PROGRESS_S.
REPORT_QUIET_S = 3.0
REPORT_PROGRESS_S = 5.0


class Progress:
    """The report's progress lines, like the warm-up's: none for a report of a few seconds, then
    what it is making and how far along it is, every REPORT_PROGRESS_S at most."""

    def __init__(self, log=None):
        import time
        self.log, self.t0, self.next = log, time.perf_counter(), time.perf_counter() + REPORT_QUIET_S

    def say(self, what: str, force: bool = False) -> None:
        import time
        now = time.perf_counter()
        if self.log is not None and (now >= self.next or force):
            self.log(f"report: {what}, {now - self.t0:.0f} s in")
            self.next = now + REPORT_PROGRESS_S


PROCESSES = 4
_JOB: tuple = ()          # (data, fig_dir, formats) of the figures being drawn, for the forked processes


def _draw_one(name: str):
    """(name, (pages, skipped reason, hint)) of one registered figure, drawn and saved; every
    figure the item made is closed, whatever it raised."""
    data, fig_dir, formats = _JOB
    it = next(i for i in items("figure") if i.name == name)
    try:
        value = it.fn(data)
        return name, (save_figures(value, fig_dir, it.name, formats), "", None)
    except Skip as exc:
        return name, ((), str(exc), exc.hint)
    finally:
        close_all()


def close_all() -> None:
    """Close every figure pyplot holds (a figure left open keeps its canvas and arrays), and clear
    the pages figures.py keeps of what they drew."""
    import sys
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    figures.clear_pages()


def _child() -> None:
    """A forked drawing process: its own connections to the engine (DuckDB's is not shared), and
    the default signal dispositions, not its parent's handlers: the pool ends its children with
    SIGTERM (`Pool.terminate`), which a handler copied from the parent (one that raises in the
    main thread, or ignores the signal once it ran) would turn into a child that never ends and
    a parent joined to it for ever; Ctrl-C is the parent's to handle."""
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .columnar import reopen_all
    reopen_all()


def _freeze() -> None:
    """Before a fork: every object alive moves to the collector's permanent generation
    (`gc.freeze`), so that a child's collections do not write the header of every object it
    inherited, each write a private copy of a page it shared with its parent: a forked figure
    process's memory of its own is then what it draws, not a copy of its parent's heap. The
    parent unfreezes once it has forked (`gc.unfreeze`): frozen, its own garbage would never be
    collected again, in a process (an API caller's, a test's) that builds report after report."""
    gc.collect()
    gc.freeze()


def draw_figures(wanted, data: ReportData, fig_dir: Path, formats, processes: int | None = None):
    """Start drawing the figure items; returns a function that waits for them (saying how far
    along they are to a `Progress`) and gives {name: (pages, skipped reason, hint)}. In at most
    `processes` forked processes where the platform forks (they read `data` as the parent holds
    it, nothing pickled, each on its own engine connection) and there is more than one figure and
    one core; else drawn here, one after another, before returning."""
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
        return lambda progress=None: done
    _JOB = (data, fig_dir, formats)
    try:
        # The processes are forked here, in this thread, while no query runs: a process forked
        # later by the pool's own thread (maxtasksperchild) could copy the engine's locks held.
        _freeze()
        pool = mp.get_context("fork").Pool(processes, initializer=_child)
    finally:
        _JOB = ()                # the children have their copy
        gc.unfreeze()            # this process collects its own objects again
    result = pool.imap_unordered(_draw_one, [it.name for it in wanted], chunksize=1)
    pool.close()

    def wait(progress=None) -> dict:
        done = {}
        try:
            while len(done) < len(wanted):
                try:
                    name, value = result.next(timeout=1.0)
                except mp.TimeoutError:
                    if progress is not None:
                        progress.say(f"{len(done)} of {len(wanted)} figures drawn")
                    continue
                done[name] = value
                if progress is not None:
                    progress.say(f"{len(done)} of {len(wanted)} figures drawn (last: {name})")
            return done
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
    if not figures.saved(fig):          # a kept page is cleared when it is drawn again (figures.page_figure)
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


def summary_line(data: ReportData) -> str:
    n, failed, datasets, entries = data.engine.con.execute(
        f"SELECT count(*), count_if(status = 'error'), count(DISTINCT dataset), count(DISTINCT solver_entry) "
        f"FROM {data.table('results')}").fetchall()[0]
    return (f"{count(n, 'fit')} ({n - failed} finished, {failed} failed) over "
            f"{count(datasets, 'dataset')} and {count(entries, 'solver')}.")


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


TERMS_TITLE = "Terms"


def terms_used(intro: list[str], secs: list[Section]) -> list[str]:
    """The glossary's terms the report's own words use: its intro, and of each section drawn its
    title, note, lines and table (headers and text cells), and the skipped sections' reasons."""
    texts = list(intro) + skip_lines(secs)
    for s in secs:
        if s.skipped:
            continue
        texts += [s.title, s.note, *s.lines]
        if s.table is not None:
            texts += [str(c) for c in s.table.columns]
            texts += [v for col in s.table.columns if s.table[col].dtype == object or str(s.table[col].dtype) == "str"
                      for v in s.table[col].dropna().unique() if isinstance(v, str)]
    return glossary.used(texts)


def to_markdown(title: str, intro: list[str], secs: list[Section], rel_to: Path, pdf: bool = False) -> str:
    def figure(s, png):
        rel = png.relative_to(rel_to).as_posix()
        return f"![{s.title}]({rel})" + (f" ([PDF]({rel[:-4]}.pdf))" if pdf else "") + "\n"
    # Every line of prose may hold a user's string (a dataset's name, a swept value): `md_text`.
    body = _walk(secs, lambda s: f"## {md_text(s.title)}\n", lambda n: md_text(n) + "\n",
                 lambda t: "\n".join(markdown_table(part) for part in split_wide(t)),
                 lambda ls: "\n".join(map(md_text, ls)) + "\n", figure)
    terms = terms_used(intro, secs)
    if terms:
        body += [f"## {TERMS_TITLE}\n", "\n".join(glossary.lines(terms)) + "\n"]
    skips = skip_lines(secs)
    if skips:
        body += [f"## {SKIPPED_TITLE}\n", "\n".join(map(md_text, skips)) + "\n"]
    return "\n".join([f"# {md_text(title)}\n", *[md_text(line) + "\n" for line in intro], *body])


_CSS = ("body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em}"
        "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
        ".wide{overflow-x:auto}img{max-width:100%}.note{color:#444}.skip{color:#666}"
        "code{background:#f3f3f3;padding:0 2px}a.term{color:inherit;text-decoration:underline dotted}"
        "dt{font-weight:bold;margin-top:0.4em}")


def inline(text: str, terms: set[str] = frozenset()) -> str:
    """Markdown's inline code (`run.reference=true`) as HTML <code>, the rest escaped: the page
    shows no raw backticks. The first use of each of `terms` outside code links to its entry
    under *Terms* (`glossary.link_first`)."""
    parts = html.escape(text).split("`")
    done: set[str] = set()               # each term linked once in the text, the first time
    if len(parts) % 2 == 0:              # an unpaired backtick: left as it is
        return glossary.link_first(html.escape(text), terms, done)
    return "".join(glossary.link_first(p, terms, done) if i % 2 == 0 else f"<code>{p}</code>"
                   for i, p in enumerate(parts))


def to_html(title: str, intro: list[str], secs: list[Section]) -> str:
    """Every section, the figures embedded as base64 PNG: one file that opens anywhere."""
    esc = html.escape

    def figure(s, png):
        b64 = base64.b64encode(png.read_bytes()).decode("ascii")
        return f'<img alt="{esc(s.title)}" src="data:image/png;base64,{b64}">'
    drawn = [s for s in secs if not s.skipped]
    skips = skip_lines(secs)
    terms = terms_used(intro, secs)
    known = set(terms)
    toc = [(s.name, s.title) for s in drawn] + ([("terms", TERMS_TITLE)] if terms else []) \
        + ([("not_drawn", SKIPPED_TITLE)] if skips else [])
    head = [f"<!doctype html><meta charset=utf-8><title>{esc(title)}</title><style>{_CSS}</style>",
            f"<h1>{esc(title)}</h1>", *[f"<p>{inline(x, known)}</p>" for x in intro],
            "<ul>" + "".join(f'<li><a href="#{name}">{esc(t)}</a></li>' for name, t in toc) + "</ul>"]
    items_ = lambda ls: "<ul>" + "".join(f"<li>{inline(x.lstrip('- '), known)}</li>" for x in ls) + "</ul>"  # noqa: E731
    body = _walk(secs, lambda s: f'<h2 id="{s.name}">{esc(s.title)}</h2>',
                 lambda n: f"<p class=note>{inline(n, known)}</p>",
                 lambda t: "".join(f"<div class=wide>{html_table(part)}</div>" for part in split_wide(t)), items_, figure)
    if terms:
        body += [f'<h2 id="terms">{TERMS_TITLE}</h2>',
                 "<dl>" + "".join(f'<dt id="term-{glossary.anchor(t)}">{esc(t)}</dt><dd>{inline(glossary.TERMS[t][0])} '
                                  f"(<code>{esc(glossary.DOCS)}#{esc(glossary.anchor(t))}</code>)</dd>" for t in terms)
                 + "</dl>"]
    if skips:
        body += [f'<h2 id="not_drawn">{SKIPPED_TITLE}</h2>', f"<div class=skip>{items_(skips)}</div>"]
    return "\n".join(head + body) + "\n"


def write(run_dir: Path, title: str, intro: list[str], secs: list[Section], pdf: bool = False) -> Path:
    """report.md and report.html, each written whole or not at all (a temporary file renamed)."""
    for name, text in (("report.md", to_markdown(title, intro, secs, run_dir, pdf)),
                       ("report.html", to_html(title, intro, secs))):
        tmp = run_dir / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(run_dir / name)
    return run_dir / "report.md"


def preload(figures: bool = True) -> None:
    """Import what the figures and the interactive page draw with (matplotlib's Agg backend,
    plotly, PIL: about a second of a small run's report, idle) ahead of `build_report`, for a
    caller that has idle time before it: `run` waits for its Dask workers to start and warm while
    this runs in a thread. Nothing with `figures=False` (tables only need neither)."""
    if not figures:
        return
    from .plotting import pyplot
    pyplot()
    import matplotlib.transforms  # noqa: F401
    import plotly.io  # noqa: F401
    from PIL import Image  # noqa: F401
    import duckdb  # noqa: F401
    from . import interactive
    interactive.template()


def build_report(run_dir: Path, baseline: str | None = None, compare: Path | None = None,
                 formats: list[str] | None = None, figures: bool | None = None, target: float | None = None,
                 log=None, info: dict | None = None, memory_mb: int | None = None) -> Path:
    """Write report.md, report.html and figures/ from the run's Parquet tables. A Hydra multirun
    folder (job folders each with results.parquet) is gathered into one table first; `compare`
    adds a section putting another run's numbers beside this one's. `formats` (png, pdf) and
    `figures` (False: tables only, no figure nor interactive page) default to the run's
    `report.formats` and `report.figures`; `target` (the (P - f*)/|f*| speed is timed to) to its
    `report.target`. `log` gets progress lines (a report of more than a few seconds); `info`, if
    given, what the report summarised and what it left out (`left_out`), for run.log."""
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
    data = load(run_dir, baseline, target, memory_mb)
    intro.insert(0, summary_line(data))
    if data.has("results", "param_lambda"):
        intro.append("A configuration given by lambda is named by its lambda; its C in the tables and on the C "
                     "axes is the mean over its fits of the C it gives (Pegasos's C = 1/(lambda n) moves with "
                     "each fold's training size n).")
    intro.append(f"Figures draw at most {MAX_LINES} lines per panel (the best by the figure's measure, as the "
                 f"panel's title says); the tables list every configuration (a table of more than {MAX_TABLE_ROWS} "
                 f"rows shows {MAX_TABLE_ROWS} of them here, as it says, and every row in `tables/<name>.csv`).")
    n_problems = data.n_problems()
    if figures and n_problems > MAX_PROBLEMS:
        intro.append(f"This run solves {n_problems} problems: a figure of one panel per problem draws the few chosen "
                     f"for a reason its title gives (the best CV score, the slowest, the largest final gap, those that "
                     f"did not converge), and *Summary over the swept keys* draws every problem.")
    intro += speed_intro(data)
    if data.baseline:
        intro.append(f"Ratios are taken against `{data.baseline}` (report.baseline).")
    from .interactive import NAME, write_page

    def page():
        if not figures:
            (run_dir / NAME).unlink(missing_ok=True)
        elif write_page(data, run_dir / NAME, f"svmbench traces: {run_dir.name}"):
            intro.append(f"Every trace, to explore by dataset, problem, metric and solver: `{NAME}` (opens offline).")
    secs = sections(data, run_dir / "figures", formats, figures, meanwhile=page, log=log)
    if compare is not None:
        other = load(Path(compare))
        secs.append(Section("compare", f"Compared with {Path(compare).name}",
                            note="Configurations present in both runs, matched on dataset, solver entry, every "
                                 "problem and parameter key, start (a warm fit is matched with a warm one only) "
                                 "and fold; medians over the matched folds, ratio: other over this run, on the "
                                 "solver clock, each to its own stop.", table=compare_table(data, other)))
    path = write(run_dir, f"svmbench report: {run_dir.name}", intro, secs, pdf="pdf" in formats)
    if info is not None:
        info.update(fits=data.count("results"), problems=n_problems, left_out=left_out(data, secs, figures))
    return path


def left_out(data: ReportData, secs: list[Section], figures: bool) -> list[str]:
    """What a report did not show of its run, in words for run.log: the problems not drawn one
    panel each, the rows of the tables cut short, the figures off."""
    out = []
    n = data.n_problems()
    if figures and n > MAX_PROBLEMS:
        from .figures import chosen_problems
        out.append(f"{n - len(chosen_problems(data))} of {n} problems from the figures of one panel per problem "
                   f"(the summaries over the swept keys hold every one)")
    for s in secs:
        if s.table is not None and s.rows > MAX_TABLE_ROWS:
            out.append(f"{s.rows - len(s.table)} of {s.rows} rows of {s.title} from report.md (all in "
                       f"tables/{s.name}.csv)")
    if not figures:
        out.append("every figure (report.figures=false)")
    return out


def censored_line(data: ReportData) -> str:
    """How many timing fits their budget cut before they reached the target (run.timing_budget_s):
    a sentence, or nothing."""
    if not data.has("timing", "info_censored_at_s"):
        return ""
    n, low, high = data.engine.con.execute(
        f"SELECT count(*), min(TRY_CAST(info_censored_at_s AS DOUBLE)), max(TRY_CAST(info_censored_at_s AS DOUBLE)) "
        f"FROM {data.table('timing')} WHERE info_censored_at_s IS NOT NULL").fetchall()[0]
    if not n:
        return ""
    budget = f"{low:g} s" if low == high else f"{low:g}-{high:g} s"
    return (f" {count(n, 'timing fit')} reached the end of {'its' if n == 1 else 'their'} budget of {budget} "
            f"(run.timing_budget_s) first: a target {'it' if n == 1 else 'they'} had not reached by then reads "
            f"`not reached within {budget}`, never a time (censored).")


def speed_intro(data: ReportData) -> list[str]:
    """What the report's speed comparisons show, said once at the top: the target, which fits they
    read (the timing fits, cold; or the sweep's, each with its start) and which fits started warm."""
    from .speed import start_sql, target_of
    if not data.has("fits", "f_star"):
        return []
    warm = sorted(str(e) for e in data.sql(f"SELECT DISTINCT solver_entry FROM {data.table('fits')} "
                                           f"WHERE {start_sql(data.types('fits'))} = 'warm'")["solver_entry"])
    where = (f" The sweep's fits of {', '.join(warm)} start warm along their C paths (`start`): they are compared "
             f"for accuracy, never for speed." if warm else "")
    timing = data.count("timing")
    if timing:
        return [f"Speed is the time to (P - f*)/|f*| <= {fmt(target_of(data))} (report.target) of "
                f"{count(timing, 'timing fit')}: cold starts, traced at every due point (a library: a ladder "
                f"of cold solves), on the call clock (the whole call from the fold's arrays to a model), one problem "
                f"and one start per ratio." + censored_line(data) + where]
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
    tables, so it still joins a fit to its trace and model. The engine copies the jobs' files
    into the sweep's, in bounded memory (columns of one job unified with another's by name)."""
    from .columnar import FILES, Engine, lit
    varied = varied_overrides({d: _overrides(d) for d in job_dirs})
    con = Engine.connect()
    try:
        for name, file in FILES.items():
            parts = []
            for d in job_dirs:
                if not (d / file).exists():
                    continue
                job = d.relative_to(sweep_dir).as_posix()
                cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet({lit(str(d / file))})").fetchall()]
                if not con.execute(f"SELECT count(*) FROM read_parquet({lit(str(d / file))})").fetchall()[0][0] \
                        and len(parts):
                    continue        # an empty job's table adds no row (as the frames' concat left it out)
                extra = f", {lit(job)} AS job, {lit(varied[d])} AS job_overrides" if name in ("results", "timing") else ""
                key = f"{lit(job + '/')} || CAST(key AS VARCHAR)"
                select = f"* REPLACE ({key} AS key)" if "key" in cols else "*"
                parts.append(f"SELECT {select}{extra} FROM read_parquet({lit(str(d / file))})")
            target = sweep_dir / file
            if not parts:       # none of the jobs has it: an earlier gather's copy is not left to be read
                target.unlink(missing_ok=True)
                continue
            tmp = sweep_dir / f".{file}.tmp"
            con.execute(f"COPY ({' UNION ALL BY NAME '.join(parts)}) TO {lit(str(tmp))} (FORMAT parquet)")
            tmp.replace(target)
    finally:
        con.close()


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
    from .columnar import lit, norm, q
    from .common import swept_keys_sql
    from .common import point_c
    from .speed import start_sql
    union = sorted(set(a.columns("results")) | set(b.columns("results")))
    cfg = ["dataset", "solver_entry"] + [c for c in config_columns(pd.DataFrame(columns=union))
                                         if c not in ("dataset", "job_overrides")]
    # Each run's rows, only the columns compared, into this run's engine (`start` as each run says it).
    need = list(dict.fromkeys(cfg + ["fold", "status", "key", "fit_time_s", "test_accuracy", "rel_suboptimality",
                                     "param_lambda_convention", "job_overrides"]))
    for run, d in (("this", a), ("other", b)):
        have = [c for c in need if c in d.types("results")]
        a.engine.register(f"_cmp_{run}", d.engine.arrow(
            f"SELECT {', '.join(q(c) for c in have)}, {start_sql(d.types('results'))} AS \"start\", {lit(run)} AS _run "
            f"FROM {d.table('results')}"))
    both = a.engine.view("SELECT * FROM _cmp_this UNION ALL BY NAME SELECT * FROM _cmp_other")
    view = a.view({"results": both, "fits": a.engine.view(f"SELECT * FROM {q(both)} WHERE status IS DISTINCT FROM 'error'")})
    types = view.types("fits")
    if view.count("fits") == 0:
        return pd.DataFrame()
    cfg = [c for c in cfg if c in types] + ["start", "fold"]
    keyed_rows = f"SELECT * REPLACE ({point_c(types)} AS \"C\") FROM {view.table('fits')}" if "C" in types \
        else f"SELECT * FROM {view.table('fits')}"
    keys = ", ".join(f"{norm(c, 'DOUBLE' if c == 'C' else types[c])} AS {q(c)}" for c in cfg)
    matched = a.engine.view(
        f"WITH k AS (SELECT {keys}, _run, num(fit_time_s) AS _t, num(test_accuracy) AS _acc, "
        f"num(rel_suboptimality) AS _rel, status FROM ({keyed_rows})), "
        f"c AS (SELECT {', '.join(q(c) for c in cfg)} FROM k GROUP BY ALL HAVING count(DISTINCT _run) = 2) "
        f"SELECT k.* FROM k JOIN c ON " + " AND ".join(f"k.{q(c)} IS NOT DISTINCT FROM c.{q(c)}" for c in cfg))
    grouped = view.view({"_m": matched})
    by = [c for c in cfg if c != "fold"] + ["_run"]
    agg = grouped.summary(by, {"folds": "count(fold)", "fit_time_s": "median(_t)", "test_accuracy": "favg(_acc)",
                               "rel_subopt": "median(_rel)", "converged": "count_if(status = 'converged')"},
                          name="_m")
    if agg.empty:
        return pd.DataFrame()
    agg = agg.set_index(by).unstack("_run")
    agg.columns = [f"{m}_{r}" for m, r in agg.columns]
    agg = agg.reset_index()
    agg["fit_time_ratio_other_vs_this"] = agg["fit_time_s_other"] / agg["fit_time_s_this"]
    shown = swept_keys_sql(view) + ["start"]
    cols = ["dataset", "solver_entry", *shown, "folds_this"]
    for m in ("fit_time_s", "test_accuracy", "rel_subopt", "converged"):
        cols += [f"{m}_this", f"{m}_other"]
    return agg[cols + ["fit_time_ratio_other_vs_this"]].rename(columns={"folds_this": "folds"})


# ------------------------------------------------------------------------- a report on its own
# The memory a report's processes may hold of their own, in MB (their private pages: what the
# fork shares with the command that made the run is not counted), past which it is ended.
REPORT_MEMORY_MB = 2048
REBUILD = "python -m pipeline.report"
_WATCH_S = 0.25
_SAMPLE_S = 0.5


class ReportFailed(Exception):
    """A report that failed, ran out of memory or was killed: its one line says why and how to
    rebuild it; the run's results are untouched."""


def build_bounded(run_dir: Path, log=None, memory_mb: int | None = None, **kw) -> tuple[Path, dict]:
    """`build_report` in a forked process of its own group, watched: its progress lines reach
    `log`; past `memory_mb` (REPORT_MEMORY_MB) of memory of its own (its figure processes'
    included) it is ended. Returns (report.md, `info`: what it summarised and left out, its
    processes' peak RSS `peak_mb`, their own memory at its peak `own_mb` and their CPU seconds
    `cpu_s`); raises ReportFailed with one line (why, and the command that
    rebuilds it) for a report that failed, outgrew its memory or was killed. The run's tables are
    only read, and report.md, report.html and each figure are replaced whole (a temporary file
    renamed), so a report ended at any point leaves the run as it was."""
    import os
    import select
    import signal
    run_dir = Path(run_dir)
    limit = REPORT_MEMORY_MB if memory_mb is None else int(memory_mb)
    rebuild = f"rebuild it with `{REBUILD} {run_dir}`"
    if not hasattr(os, "fork"):         # no fork: in this process, its failures caught all the same
        info: dict = {}
        try:
            return build_report(run_dir, log=log, info=info, **kw), info
        except (Skip, OSError, ValueError, RuntimeError, MemoryError) as exc:
            raise ReportFailed(f"report failed: {_first_line(exc)}; the results are whole; {rebuild}") from None
    r, w = os.pipe()
    _freeze()
    pid = os.fork()
    if pid:
        gc.unfreeze()                   # the command collects its own objects again
    if pid == 0:                        # the report's process
        os.close(r)
        code = 0
        try:
            os.setpgid(0, 0)            # its figure processes with it: one group to end
            signal.signal(signal.SIGINT, signal.SIG_IGN)    # the command's Ctrl-C ends it (below)
            info = {}
            path = build_report(run_dir, log=lambda line: _send(w, ("log", line)), info=info, **kw)
            _send(w, ("done", str(path), info))
        except BaseException as exc:    # noqa: BLE001 - said to the parent, which reports it
            code = 1
            try:
                _send(w, ("error", _first_line(exc)))
            except OSError:
                pass
        finally:
            exits.fast_exit(code, forked=True)    # a fork of the command: its handlers are the command's
    os.close(w)
    outcome, watch = None, MemoryWatch(pid, limit)
    try:
        while True:
            ready, _, _ = select.select([r], [], [], _WATCH_S)
            if ready:
                msg = _receive(r)
                if msg is None:         # the report's process has closed its end: it ended
                    break
                if msg[0] == "log":
                    if log is not None:
                        log(msg[1])
                else:
                    outcome = msg
                continue
            own = watch.over()
            if own is not None:
                _kill_group(pid)
                outcome = ("memory", own)
                break
    except BaseException:
        _kill_group(pid)                # Ctrl-C, or anything else here: the report ends with it
        raise
    finally:
        os.close(r)
        _, status, usage = os.wait4(pid, 0)
    peak_mb = usage.ru_maxrss / 1024
    if outcome is not None and outcome[0] == "done":
        return Path(outcome[1]), {**outcome[2], "peak_mb": peak_mb, "own_mb": watch.peak,
                                  "cpu_s": usage.ru_utime + usage.ru_stime}
    if outcome is not None and outcome[0] == "memory":
        why = f"its processes passed {limit} MB of memory of their own ({outcome[1]:.0f} MB; {REBUILD} --memory-mb sets it)"
    elif outcome is not None and outcome[0] == "error":
        why = outcome[1]
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        why = f"its process was killed by signal {sig} ({signal.Signals(sig).name}: the system's out-of-memory killer, or a kill)"
    else:
        why = f"its process ended with status {os.waitstatus_to_exitcode(status)} before writing the report"
    raise ReportFailed(f"report failed: {why}; the results are whole; {rebuild}")


class MemoryWatch:
    """When the watcher reads the memory of their own of a report's processes (`_private_mb`, from
    smaps: a walk of their page tables, costlier the larger the process and the busier the
    machine), and its peak: at once whenever the cheap bound of their counters
    (`_resident_mb`) passes the limit, so an outgrown report is ended at the next tick; else only
    for the peak, every _SAMPLE_S and at most a tenth of the time."""

    def __init__(self, pid: int, limit: float, clock=None, own=None, bound=None):
        import time
        self.pid, self.limit, self.peak, self.next = pid, limit, 0.0, 0.0
        self.clock = clock or time.monotonic
        self.own, self.bound = own or _private_mb, bound or _resident_mb

    def over(self) -> float | None:
        """The processes' own MB if they passed the limit (the report is to end), else None."""
        now = self.clock()
        if now < self.next and self.bound(self.pid) <= self.limit:
            return None
        own = self.own(self.pid)
        done = self.clock()
        self.next = done + max(_SAMPLE_S, 9 * (done - now))
        self.peak = max(self.peak, own)
        return own if own > self.limit else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _send(fd: int, msg) -> None:
    """A message to the watching parent: its length (8 bytes), then its pickle."""
    import os
    import pickle
    data = pickle.dumps(msg)
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int):
    """The next message `_send` wrote, or None at the end of the pipe."""
    import os
    import pickle

    def exactly(n):
        got = b""
        while len(got) < n:
            chunk = os.read(fd, n - len(got))
            if not chunk:
                return None
            got += chunk
        return got
    head = exactly(8)
    if head is None:
        return None
    body = exactly(int.from_bytes(head, "little"))
    return None if body is None else pickle.loads(body)


def _group(pid: int) -> list[int]:
    """pid and every process under it (/proc's children lists; [] where /proc has none)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _private_mb(pid: int) -> float:
    """The memory of their own (private pages, resident or swapped) of a process and those under
    it, in MB: pages a fork shares with its parent until written are the parent's."""
    total = 0
    for p in _group(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith(("Private_Clean:", "Private_Dirty:", "Swap:")):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total / 1024


def _resident_mb(pid: int) -> float:
    """A bound on `_private_mb` read from the kernel's counters (/proc/<pid>/status: resident
    and swapped pages, private or shared), no page table walked: while it is under a limit, so
    is the memory of their own."""
    total = 0
    for p in _group(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(("VmRSS:", "VmSwap:")):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total / 1024


def _kill_group(pid: int) -> None:
    import os
    import signal
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


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
    parser.add_argument("--memory-mb", type=int, metavar="MB", default=REPORT_MEMORY_MB,
                        help=f"memory the report's processes may hold of their own (default {REPORT_MEMORY_MB})")
    args = parser.parse_args(argv)
    if args.target is not None and not 0 < args.target < 1:
        print(f"error: --target={args.target!r}: must be a relative suboptimality in (0, 1), e.g. 1e-3", file=sys.stderr)
        return 2
    for d in [args.run_dir] + ([args.compare] if args.compare else []):
        if not (Path(d) / "results.parquet").exists() and not jobs(Path(d)):
            print(f"error: {Path(d) / 'results.parquet'} not found: is {d} a svmbench run directory?", file=sys.stderr)
            return 2
    formats = ["png", "pdf"] if args.pdf else None
    try:
        path, _ = build_bounded(args.run_dir, log=lambda line: print(line, file=sys.stderr, flush=True),
                                memory_mb=args.memory_mb, baseline=args.baseline, compare=args.compare,
                                formats=formats, target=args.target)
    except ReportFailed as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(path)
    return 0
