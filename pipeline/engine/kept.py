"""The kept cluster: a local Dask scheduler and workers that `svmbench cluster start`
(pipeline/cluster.py) leaves running between commands, and that `cluster=kept` runs on.

A fresh local cluster costs every command its start and warm-up: worker processes that import
Dask, sandbox children that import numpy, scipy, numba and the solvers and load their kernels,
two at once on two cores (about 3 of the 4-5 s a 10-fit command takes from nothing, idle: issue
30, point 3). The kept cluster pays them once; its sandbox children stay warm across commands
(pipeline/engine/sandbox.py keeps one per worker thread), as Dask's own `dask scheduler` and
`dask worker` do when started by hand and reached with `cluster=address`. This module is the
state both sides read: where the scheduler is, and which processes are the cluster's.

The state lives in one directory (`state_dir`: $SVMBENCH_CLUSTER_DIR, else ``cluster`` under
the user's svmbench cache): ``scheduler.json`` (Dask's scheduler file, its address),
``cluster.json`` (the processes, the settings, when it started), ``cluster.log``, the
launcher's socket, and the cluster's TLS credentials (``ca.pem``, ``cert.pem``, ``key.pem``,
mode 0600: `pipeline.engine.security`). The directory is its user's alone (0700): whoever could
write to it could point commands at a scheduler of their own, or have `stop` kill processes
named there, so a directory another user can write to is refused, by `cluster start` and by
every command that reads it (`checked_state_dir`).
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


def checked_state_dir() -> Path:
    """`state_dir`, or ClusterError if it exists but is not this user's alone
    (`security.not_private`): its state would not be what this user's `cluster start` wrote."""
    from .security import not_private
    directory = state_dir()
    why = not_private(directory) if directory.is_dir() else None
    if why is not None:
        from .execute import ClusterError
        raise ClusterError(not_yours(directory, why))
    return directory


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


def kept_address() -> str:
    """The kept cluster's scheduler address, or ClusterError saying how to start one."""
    return kept_state()["address"]


def kept_state() -> dict:
    """The running kept cluster's state (cluster.json), or ClusterError saying how to start one."""
    from .execute import ClusterError
    where = checked_state_dir()
    state = read_state(where)
    if state is None or not alive(int(state["scheduler_pid"])):
        why = ("none was started" if state is None else
               f"its scheduler (pid {state['scheduler_pid']}) has ended: idle for {state['idle_timeout']}, or stopped")
        raise ClusterError(f"cluster=kept: no kept cluster is running ({why}; state in {where}); start one with "
                           f"`svmbench cluster start` (or `python -m pipeline.cluster start`), or use cluster=local")
    return state


def kept_security(state: dict, directory: Path | None = None):
    """distributed's Security for a client of the kept cluster of this state: its credentials in
    the state directory; None for one started with `--security none` (or by a version without
    TLS, whose state does not say)."""
    from .security import NONE, files_in, from_files
    if state.get("security", NONE) == NONE:
        return None
    return from_files(files_in(directory or state_dir()))


def connection() -> tuple[str, object]:
    """(address, Security or None) of the kept cluster, for cluster.address `KEPT`."""
    state = kept_state()
    return state["address"], kept_security(state)


def resolve(address: str) -> str:
    """cluster.address as given, or the kept cluster's when it is `KEPT`."""
    return kept_address() if address == KEPT else address
