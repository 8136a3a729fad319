"""The papers' writers by study name: each writer module registers itself with `paper`,
and the package imports every writer once (`pipeline/papers/__init__.py`)."""
from __future__ import annotations

from typing import Callable

PAPERS: dict[str, Callable] = {}


def paper(name: str):
    """Register fn(run_dir, out_dir, root) -> README path as the writer of study `name`."""
    def deco(fn):
        if name in PAPERS:
            raise ValueError(f"paper {name!r} registered twice")
        PAPERS[name] = fn
        return fn
    return deco


def names() -> list[str]:
    return sorted(PAPERS)
