"""Paper reproductions: one writer per study, registered by the study's short name.

An experiment config that names `paper: <name>` (conf/experiment/<name>.yaml) makes `run.py`
call the writer after the report. A writer reads the run's Parquet tables (and, for figures of
the data themselves, the store) and writes `README.md` and PNG figures: its tables beside the
paper's own numbers, and each of the paper's findings with its verdict, judged by the shared
claim vocabulary (`claims.py`: one statistic, band and 95% interval per kind of claim) from the
study's rules, which it declares as data. The folder is `outputs/papers/<name>/` of the checkout (committed), or of the current
directory when svmbench is installed from a wheel (`pipeline.installation`); under `smoke=true`
it is `<run_dir>/papers/<name>/`, so a smoke run never overwrites the committed reproduction.
"""
from __future__ import annotations

from pathlib import Path

from ..installation import PAPERS_DIR   # the checkout's outputs/papers, or the CWD's
# The writers register themselves (`registry.paper`) as they are imported.
from . import bertini, duros_katzman, roethel_brynda, rupnik, troyan  # noqa: F401
from .common import smoke_run, stamp_smoke
from .registry import PAPERS, names, paper  # noqa: F401  (the package's public names)


def out_dir(name: str, run_dir: Path, smoke: bool) -> Path:
    """Where a reproduction is written: the committed folder, or the run's own under smoke."""
    return Path(run_dir) / "papers" / name if smoke else PAPERS_DIR / name


def write_paper(name: str, run_dir: Path, out: Path, root: str | None = None) -> Path:
    """Run study `name`'s writer on the run's tables into `out`; returns its README."""
    if name not in PAPERS:
        raise ValueError(f"paper={name!r}: no such reproduction; registered: {', '.join(names()) or '(none)'}")
    out = Path(out)
    if smoke_run(run_dir) and out.resolve().is_relative_to(PAPERS_DIR.resolve()):
        # The committed reproductions come from full runs only: a smoke run's reduced sizes and
        # caps would overwrite them with verdicts that mean nothing (`out_dir` sends it elsewhere).
        raise ValueError(f"run {run_dir} is a smoke run: its reproduction of {name!r} is not written into "
                         f"{out} (outputs/papers/ holds full runs only); write it into the run's papers/{name}/")
    out.mkdir(parents=True, exist_ok=True)
    readme = PAPERS[name](Path(run_dir), out, root)
    if smoke_run(run_dir):          # every README a smoke run writes says so at its top
        stamp_smoke(readme)
    return readme

