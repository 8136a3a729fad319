"""What every reproduction's writer shares: a finding (the paper's claim, our numbers, the
verdict and why), the findings table, and the figures section (draw each figure, or say why it
was not drawn). The study-specific parts (the paper's numbers, the summary table, the findings
themselves) stay in pipeline/papers/<name>.py."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..report.build import save_figure
from ..report.common import markdown_table
from ..report.registry import Skip


@dataclass
class Finding:
    claim: str           # what the paper says (with its table or figure)
    ours: str            # what our run shows, in numbers
    holds: bool | None   # None: this run cannot tell (the cells are missing)
    why: str = ""        # the reason, when it differs (or why it cannot be told)

    @property
    def verdict(self) -> str:
        return "not checked" if self.holds is None else ("holds" if self.holds else "differs")


def findings_table(found: list[Finding]) -> list[str]:
    """The README's findings as markdown lines: one row per claim, the verdict in bold."""
    out = ["| # | the paper | ours | verdict | why |", "|---|---|---|---|---|"]
    for i, f in enumerate(found, 1):
        cells = [c.replace("|", "\\|") for c in (f.claim, f.ours, f.why)]
        out.append(f"| {i} | {cells[0]} | {cells[1]} | **{f.verdict}** | {cells[2]} |")
    return out


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


def header_lines(name: str, citation: str, fits, found: list[Finding]) -> list[str]:
    """The top of a reproduction's README: title, the study, how it was written, the findings."""
    return [f"# Reproduction: {name}\n",
            f"{citation} Written by `python -m pipeline +experiment={name}` (`make papers`) from the run's "
            f"tables; regenerate rather than edit. This run: {fits} fits.\n",
            "## Findings\n", *findings_table(found)]


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
