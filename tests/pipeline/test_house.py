"""The house rules a reading of the source can check: the front door on Hydra's public API, one
way out of a process."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "solvers").rglob("*.py")])


def _lines(pattern: str, skip=()):
    found = []
    for path in SOURCES:
        rel = path.relative_to(ROOT).as_posix()
        if rel in skip:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line.split("#")[0]):
                found.append(f"{rel}:{n}: {line.strip()}")
    return found


def test_hydra_is_used_through_its_public_api_only():
    """No `hydra._internal` anywhere: the command composes with the compose API and runs its job
    with `hydra.core.utils.run_job`, the call Hydra's launchers make."""
    assert _lines(r"\bhydra\._internal\b|from hydra import _internal") == []


def test_a_process_ends_through_fast_exit_only():
    """`os._exit` (which skips the atexit handlers and the streams' flush) is called in one place,
    `exits.fast_exit`, which runs or leaves those on purpose."""
    assert _lines(r"\bos\._exit\(", skip=("pipeline/exits.py",)) == []
