"""Do two regenerations agree? `python -m pipeline.papers_check [name ...]` (`make papers-check`)
runs each fast study's experiment twice, full size (smoke=false), writes both reproductions into
a temporary folder (never outputs/papers/), and compares their verdicts finding by finding.

Two regenerations contradict each other when one says **holds** and the other **differs** (or a
finding changes category: comparable or not, checked or not): such a verdict rests on noise, its
interval too narrow for its repeats (pipeline/papers/claims.py). A finding that is decided in one
run and open in the other (**undecided**, **below detectable power**, or **premise not met**
where its premise flipped so) sits at the edge of its band: each verdict is what its own interval
supports at 95%, and near an edge a rerun lands on either side of it. Contradictions fail
the check (exit 1); edge flips are listed and fail it only with `--strict`.

`--against DIR` runs each study once and compares it with the reproduction already in
DIR/<name>/README.md (`--against outputs/papers`: the committed one, itself a full regeneration),
half the time of two fresh runs; the README must come from the same code for that to mean anything.

Exit status 1 when any study's verdicts differ between the two runs, and each difference printed.
"""
from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

# The studies that regenerate in minutes on 2 cores (duros_katzman's 2991 fits and rupnik's
# RCV1-sized runs take longer: name them on the command line to check them too).
FAST = ("troyan", "bertini", "roethel_brynda")

_ROW = re.compile(r"^\| (\d+) \| (.*) \| \*\*([a-z ]+)\*\* \|")


def verdicts(readme: str) -> list[tuple[int, str, str]]:
    """(number, the paper's claim, verdict) of each row of a README's findings table."""
    out = []
    for line in readme.splitlines():
        m = _ROW.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2).split(" | ")[0], m.group(3)))
    return out


def differences(first: list[tuple[int, str, str]], second: list[tuple[int, str, str]]) -> list[str]:
    """The findings whose verdicts differ between two regenerations (or that one of them lacks),
    each line saying whether it is a contradiction or an edge flip (`is_edge`)."""
    a, b = {n: (c, v) for n, c, v in first}, {n: (c, v) for n, c, v in second}
    out = []
    for n in sorted(set(a) | set(b)):
        if n not in a or n not in b:
            out.append(f"finding {n}: only in the {'first' if n in a else 'second'} run")
        elif a[n][1] != b[n][1]:
            pair = {a[n][1], b[n][1]}
            kind = EDGE if pair & OPEN and pair <= DECIDABLE else CONTRADICTION
            out.append(f"finding {n} ({a[n][0][:70]}...): {a[n][1]} then {b[n][1]} ({kind})")
    return out


EDGE, CONTRADICTION = "at the edge of its band", "a contradiction"
# Verdicts one interval can move between from run to run: the open ones (an interval across an
# edge, one wider than its band, a premise that is itself at an edge) and the decided ones.
OPEN = {"undecided", "below detectable power", "premise not met"}
DECIDABLE = {"holds", "differs"} | OPEN


def is_edge(line: str) -> bool:
    return line.endswith(f"({EDGE})")


def regenerate(name: str, run_dir: Path, out: Path, overrides: list[str] = ()) -> list[tuple[int, str, str]]:
    """Run study `name`'s experiment into run_dir with its writer switched off (so nothing goes to
    outputs/papers/), then write its reproduction into `out`; returns its verdicts."""
    from .experiment.config import compose
    from .papers import write_paper
    from .run import run
    cfg = compose([f"+experiment={name}", "paper=null", "smoke=false", *overrides])
    run(cfg, run_dir)
    return verdicts(write_paper(name, run_dir, out).read_text())


def load_text(run_dir: Path) -> str:
    """The 1-minute load average at a run's start and end (its run.log), as a check line says it:
    a timing verdict is only as steady as the load it was measured under."""
    from .papers.common import run_timing
    t = run_timing(run_dir)
    if "load_start" not in t or "load_end" not in t:
        return "load not recorded"
    return f"load {t['load_start'][0]:.1f} to {t['load_end'][0]:.1f} on {t.get('cores', '?')} cores"


def check(names=FAST, overrides: list[str] = (), log=print, against: Path | None = None) -> dict[str, list[str]]:
    """name -> the differences between two regenerations (empty: they agree); with `against`,
    the first is the reproduction already written in against/<name>/README.md. Each line says the
    load each fresh run was measured under."""
    found = {}
    with tempfile.TemporaryDirectory(prefix="papers-check-") as tmp:
        for name in names:
            start = time.perf_counter()
            runs = [] if against is None else [verdicts((Path(against) / name / "README.md").read_text())]
            fresh = range(len(runs) + 1, 3)
            runs += [regenerate(name, Path(tmp) / f"{name}-{i}", Path(tmp) / f"{name}-{i}-paper", overrides)
                     for i in fresh]
            found[name] = differences(*runs)
            edges = sum(map(is_edge, found[name]))
            loads = "; ".join(f"run {i} at {load_text(Path(tmp) / f'{name}-{i}')}" for i in fresh)
            log(f"papers-check: {name}: {len(runs[0])} findings, "
                f"{'agree' if not found[name] else f'{len(found[name]) - edges} contradict, {edges} at an edge'} "
                f"({time.perf_counter() - start:.0f} s for {'the fresh run' if against else 'both runs'}; {loads})")
            for line in found[name]:
                log(f"  {line}")
    return found


def main(argv: list[str]) -> int:
    strict = "--strict" in argv
    argv = [a for a in argv if a != "--strict"]
    against = None
    if "--against" in argv:
        i = argv.index("--against")
        if i + 1 == len(argv):
            print("papers-check: --against needs a folder of reproductions (e.g. outputs/papers)", file=sys.stderr)
            return 2
        against, argv = Path(argv[i + 1]), argv[:i] + argv[i + 2:]
    names = [a for a in argv if "=" not in a] or list(FAST)
    overrides = [a for a in argv if "=" in a]
    from .papers import PAPERS
    unknown = [n for n in names if n not in PAPERS]
    if unknown:
        print(f"papers-check: no such reproduction: {', '.join(unknown)}; registered: {', '.join(sorted(PAPERS))}",
              file=sys.stderr)
        return 2
    missing = [n for n in names if against is not None and not (against / n / "README.md").is_file()]
    if missing:
        print(f"papers-check: --against {against}: no README.md for {', '.join(missing)}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    found = check(names, overrides, against=against)
    lines = [line for v in found.values() for line in v]
    edges = sum(map(is_edge, lines))
    print(f"papers-check: {len(lines) - edges} verdicts contradict, {edges} flip at the edge of their band, over "
          f"{len(names)} studies ({time.perf_counter() - start:.0f} s)")
    return 1 if (lines if strict else [line for line in lines if not is_edge(line)]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
