"""Walk the registry into ``report.md``, a self-contained ``report.html`` (figures embedded as
base64 PNG) and ``figures/`` (PNG and PDF); gather a Hydra multirun; compare two runs."""
from __future__ import annotations

import argparse
import base64
import html
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import figures, tables  # noqa: F401  importing them registers the tables and figures
from .common import (MAX_LINES, config_columns, count, has_lambda, html_table, keyed, markdown_table,
                     swept_keys)
from .registry import ReportData, Skip, items

DPI = 110


@dataclass
class Section:
    name: str
    title: str
    note: str = ""
    table: pd.DataFrame | None = None
    lines: tuple = ()
    figure: Path | None = None      # the PNG (a PDF beside it)
    skipped: str = ""


def load(run_dir: Path, baseline: str | None = None) -> ReportData:
    """A run directory's tables (results, traces, models if kept) and options."""
    run_dir = Path(run_dir)
    res_path, tr_path = run_dir / "results.parquet", run_dir / "traces.parquet"
    for p in (res_path, tr_path):
        if not p.exists():
            raise FileNotFoundError(f"{p} not found: is {run_dir} a svmbench run directory?")
    models = run_dir / "models.parquet"
    return ReportData(pd.read_parquet(res_path), pd.read_parquet(tr_path),
                      pd.read_parquet(models) if models.exists() else pd.DataFrame(),
                      baseline=baseline if baseline is not None else config_baseline(run_dir), name=run_dir.name)


def config_baseline(run_dir: Path) -> str | None:
    """report.baseline of the run's config (config.yaml, written by run.py), if any."""
    path = Path(run_dir) / "config.yaml"
    if not path.exists():
        return None
    from omegaconf import OmegaConf
    cfg = OmegaConf.load(path)
    return OmegaConf.select(cfg, "report.baseline", default=None)


def sections(data: ReportData, fig_dir: Path, formats=("png", "pdf")) -> list[Section]:
    """Every registered table and figure, or the reason it was skipped."""
    out = []
    for it in items():
        sec = Section(it.name, it.title, it.note)
        why = it.missing(data)
        if why is None:
            try:
                value = it.fn(data)
            except Skip as exc:
                why = str(exc)
            else:
                if it.kind == "table":
                    sec.table = value
                    sec.lines = tuple(it.lines(data)) if it.lines else ()
                else:
                    sec.figure = save_figure(value, fig_dir, it.name, formats)
        sec.skipped = why or ""
        if why and it.kind == "figure":      # a rebuild leaves no figure of an earlier build behind
            for ext in ("png", "pdf"):
                (fig_dir / f"{it.name}.{ext}").unlink(missing_ok=True)
        out.append(sec)
    return out


def save_figure(fig, fig_dir: Path, name: str, formats=("png", "pdf")) -> Path:
    """The figure as PNG (embedded in the html) and PDF (for papers); returns the PNG."""
    import matplotlib.pyplot as plt
    fig_dir.mkdir(parents=True, exist_ok=True)
    _make_room(fig)
    for ext in formats:
        # bbox "tight": the legends sit below their panels, outside the axes.
        fig.savefig(fig_dir / f"{name}.{ext}", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return fig_dir / f"{name}.png"


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


def _walk(secs: list[Section], heading, skipped, note, table, lines, figure) -> list[str]:
    """The sections in one output format: one renderer per part, the order shared by md and html."""
    out = []
    for s in secs:
        out.append(heading(s))
        if s.skipped:
            out.append(skipped(s.skipped))
            continue
        if s.note:
            out.append(note(s.note))
        if s.table is not None:          # an empty table is shown as "(none)", not left out
            out.append(table(s.table))
        if s.lines:
            out.append(lines(s.lines))
        if s.figure is not None:
            out.append(figure(s))
    return out


def to_markdown(title: str, intro: list[str], secs: list[Section], rel_to: Path) -> str:
    def figure(s):
        rel = s.figure.relative_to(rel_to).as_posix()
        return f"![{s.title}]({rel}) ([PDF]({rel[:-4]}.pdf))\n"
    body = _walk(secs, lambda s: f"## {s.title}\n", lambda why: f"_Skipped: {why}._\n", lambda n: n + "\n",
                 markdown_table, lambda ls: "\n".join(ls) + "\n", figure)
    return "\n".join([f"# {title}\n", *[line + "\n" for line in intro], *body])


_CSS = ("body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em}"
        "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
        "img{max-width:100%}.note{color:#444}.skip{color:#888;font-style:italic}")


def to_html(title: str, intro: list[str], secs: list[Section]) -> str:
    """Every section, the figures embedded as base64 PNG: one file that opens anywhere."""
    esc = html.escape

    def figure(s):
        b64 = base64.b64encode(s.figure.read_bytes()).decode("ascii")
        return f'<img alt="{esc(s.title)}" src="data:image/png;base64,{b64}">'
    head = [f"<!doctype html><meta charset=utf-8><title>{esc(title)}</title><style>{_CSS}</style>",
            f"<h1>{esc(title)}</h1>", *[f"<p>{esc(x)}</p>" for x in intro],
            "<ul>" + "".join(f'<li><a href="#{s.name}">{esc(s.title)}</a></li>' for s in secs) + "</ul>"]
    body = _walk(secs, lambda s: f'<h2 id="{s.name}">{esc(s.title)}</h2>',
                 lambda why: f"<p class=skip>Skipped: {esc(why)}.</p>", lambda n: f"<p class=note>{esc(n)}</p>",
                 html_table, lambda ls: "<ul>" + "".join(f"<li>{esc(x.lstrip('- '))}</li>" for x in ls) + "</ul>",
                 figure)
    return "\n".join(head + body) + "\n"


def write(run_dir: Path, title: str, intro: list[str], secs: list[Section]) -> Path:
    (run_dir / "report.md").write_text(to_markdown(title, intro, secs, run_dir))
    (run_dir / "report.html").write_text(to_html(title, intro, secs))
    return run_dir / "report.md"


def build_report(run_dir: Path, baseline: str | None = None, compare: Path | None = None) -> Path:
    """Write report.md, report.html and figures/ from the run's Parquet tables. A Hydra multirun
    folder (job folders each with results.parquet) is gathered into one table first; `compare`
    adds a section putting another run's numbers beside this one's."""
    run_dir = Path(run_dir)
    intro = []
    if not (run_dir / "results.parquet").exists() or jobs(run_dir):
        found = jobs(run_dir)
        if found:
            gather(run_dir, found)
            intro.append(f"Gathered from {count(len(found), 'job')} of a Hydra multirun: "
                         + ", ".join(p.relative_to(run_dir).as_posix() for p in found) + ".")
    data = load(run_dir, baseline)
    intro.insert(0, summary_line(data.results))
    if has_lambda(data.results).any():
        intro.append("A configuration given by lambda is named by its lambda; its C in the tables and on the C "
                     "axes is the mean over its fits of the C it gives (Pegasos's C = 1/(lambda n) moves with "
                     "each fold's training size n).")
    intro.append(f"Figures draw at most {MAX_LINES} lines per panel (the best by the figure's measure, as the "
                 "panel's title says); the tables list every configuration.")
    if data.baseline:
        intro.append(f"Ratios are taken against `{data.baseline}` (report.baseline).")
    secs = sections(data, run_dir / "figures")
    if compare is not None:
        other = load(Path(compare))
        secs.append(Section("compare", f"Compared with {Path(compare).name}",
                            note="Configurations present in both runs, matched on dataset, solver entry, every "
                                 "problem and parameter key and fold; medians over the matched folds, ratio: "
                                 "other over this run.", table=compare_table(data, other)))
    return write(run_dir, f"svmbench report: {run_dir.name}", intro, secs)


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
    frames = {"results": [], "traces": [], "models": []}
    for d in job_dirs:
        job = d.relative_to(sweep_dir).as_posix()
        res = pd.read_parquet(d / "results.parquet")
        res["job"] = job
        res["job_overrides"] = _overrides(d)
        own = {"results": res, "traces": pd.read_parquet(d / "traces.parquet")}
        if (d / "models.parquet").exists():
            own["models"] = pd.read_parquet(d / "models.parquet")
        for name, df in own.items():
            df["key"] = job + "/" + df["key"].astype(str)
            frames[name].append(df)
    for name, dfs in frames.items():
        if dfs:
            write_parquet(pd.concat([d for d in dfs if len(d)] or dfs[:1], ignore_index=True),
                          sweep_dir / f"{name}.parquet")


def _overrides(job_dir: Path) -> str:
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.exists():
        return ""
    from omegaconf import OmegaConf
    return " ".join(str(x) for x in OmegaConf.load(path))


# ------------------------------------------------------------------------------------- compare
def compare_table(a: ReportData, b: ReportData) -> pd.DataFrame:
    """Per configuration both runs hold (dataset, entry, every problem and parameter key), over
    the folds both ran: median fit time, mean test accuracy, median suboptimality, converged
    folds, side by side, and the fit-time ratio other / this."""
    both = pd.concat([a.fits.assign(_run="this"), b.fits.assign(_run="other")], ignore_index=True)
    if both.empty:
        return pd.DataFrame()
    cfg = ["dataset", "solver_entry"] + [c for c in config_columns(both) if c not in ("dataset", "job_overrides")] + ["fold"]
    both = keyed(both, cfg)
    common = both.groupby(cfg)["_run"].nunique()
    common = common[common == 2].index
    both = both.set_index(cfg).loc[lambda d: d.index.isin(common)].reset_index()
    if both.empty:
        return pd.DataFrame()
    shown = swept_keys(pd.concat([a.results, b.results], ignore_index=True))
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
    parser.add_argument("--baseline", metavar="ENTRY", help="solver entry that ratios are taken against "
                                                            "(default: the run's report.baseline, else the references)")
    args = parser.parse_args(argv)
    try:
        path = build_report(args.run_dir, baseline=args.baseline, compare=args.compare)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0

