"""The kept cluster's state directory (`pipeline.kept` starts, shows and stops the cluster):
what `svmbench cluster start` writes and what a command with `cluster=kept` reads to reach it.

The state lives in one directory (`state_dir`: $SVMBENCH_CLUSTER_DIR, else ``cluster`` under
the user's svmbench cache): ``scheduler.json`` (Dask's scheduler file, its address),
``cluster.json`` (the processes, the settings, when it started), ``cluster.log``, the
launcher's socket, and the cluster's TLS credentials (``ca.pem``, ``cert.pem``, ``key.pem``,
mode 0600: `pipeline.engine.security`). The directory is its user's alone (0700): whoever could
write to it could point commands at a scheduler of their own, or have `stop` kill processes
named there, so a directory another user can write to is refused, by `cluster start` and by
every command that reads it (`clusters.checked_state_dir`).

It sits in the engine, below the `pipeline.kept` package, because the engine reads it to
connect (`clusters.kept_connection`), and the package, whose launcher runs whole commands,
sits above everything a command imports.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

KEPT = "kept"      # the cluster.address that means "the kept cluster" (conf/cluster/kept.yaml)


def state_dir() -> Path:
    """$SVMBENCH_CLUSTER_DIR, else ``cluster`` under the user's svmbench cache directory."""
    from ..data.cache import user_cache_dir
    configured = os.environ.get("SVMBENCH_CLUSTER_DIR")
    return Path(configured) if configured else user_cache_dir() / "cluster"


def not_yours(directory: Path, why: str) -> str:
    """The line refusing a state directory that is not this user's alone, and why."""
    return (f"the kept cluster's state directory {directory} is not yours alone: {why}; set $SVMBENCH_CLUSTER_DIR "
            f"to a directory of your own (it is created mode 0700)")


def read_state(directory: Path | None = None) -> dict | None:
    """cluster.json of the kept cluster (None: none was started, or it was stopped)."""
    path = (directory or state_dir()) / "cluster.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    """Whether a process of that pid runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True


def kept_security(state: dict, directory: Path | None = None):
    """distributed's Security for a client of the kept cluster of this state: its credentials in
    the state directory; None for one started with `--security none` (or by a version without
    TLS, whose state does not say)."""
    from .security import NONE, files_in, from_files
    if state.get("security", NONE) == NONE:
        return None
    return from_files(files_in(directory or state_dir()))
