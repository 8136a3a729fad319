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


def _private_imports() -> list[str]:
    """Every `from X import _name` in the packages whose X is one of ours (pipeline, solvers,
    relative or absolute) and whose module is not X itself."""
    import ast
    found = []
    for path in SOURCES:
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            ours = node.level > 0 or (node.module or "").split(".")[0] in ("pipeline", "solvers")
            for alias in node.names:
                if ours and alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{rel}:{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}")
    return found


def test_no_private_name_is_imported_across_modules():
    """What one module uses of another is that module's public name: a private name (a leading
    underscore) may change without notice, so a module that reads another's is a seam no one
    sees. (Third-party private helpers are another matter: scikit-learn's, where the pipeline
    reproduces its draws exactly, are said where they are used.)"""
    assert _private_imports() == []


def test_the_private_import_scan_sees_relative_and_absolute_imports(tmp_path, monkeypatch):
    """The scan above finds both spellings (a scan that found neither would pass vacuously)."""
    a = tmp_path / "pipeline" / "a.py"
    a.parent.mkdir()
    a.write_text("from .b import _x, y\nfrom solvers.dcd import _passes\nfrom numpy import _core\n")
    monkeypatch.setitem(globals(), "SOURCES", [a])
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert _private_imports() == ["pipeline/a.py:1: from .b import _x", "pipeline/a.py:2: from solvers.dcd import _passes"]
