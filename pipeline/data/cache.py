"""Where svmbench keeps its caches (`user_cache_dir`): a module of its own, with nothing but the
standard library, so that a command that only needs the path (the kept cluster's launcher
hand-off in `python -m pipeline`, pipeline/kept/handoff.py) does not import the store's
pyarrow and scipy to find it."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def user_cache_dir() -> Path:
    """``svmbench`` under the user's cache directory: ``$XDG_CACHE_HOME`` or ``~/.cache`` on
    Linux and other Unix systems, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "svmbench"
