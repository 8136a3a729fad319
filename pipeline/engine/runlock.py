"""One writer per run directory: `run_lock(run_dir)` holds `<run_dir>/.lock` while a run writes.

Two runs into one directory would both compute the missing tasks and race on every shard and
table. The lock file is created whole or not at all (written under a temporary name, then
`os.link`, which fails if the lock exists: atomic on local filesystems and NFS alike), and holds
the owner's host, pid and start time, so a refused run can name them.

A run that crashes (SIGKILL, power loss) leaves its lock behind. It is stale, and taken over with
a message saying so, when
- its host is this host and its pid is no longer alive, or
- its host is another one (the pid cannot be checked from here) and the file's mtime is older
  than STALE_AFTER_S: a live owner touches it every HEARTBEAT_S from a daemon thread.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

LOCK_FILE = ".lock"
HEARTBEAT_S = 30.0
# Ten missed heartbeats: a stalled filesystem or a suspended laptop does not lose its lock.
STALE_AFTER_S = 10 * HEARTBEAT_S


class LockError(Exception):
    """Another live run holds the run directory; the message names it."""


def lock_path(run_dir) -> Path:
    return Path(run_dir) / LOCK_FILE


def read_owner(run_dir) -> dict | None:
    """The lock's owner {host, pid, started} (None if unlocked; {} if unreadable)."""
    try:
        return json.loads(lock_path(run_dir).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}


def stale_reason(owner: dict, mtime: float, now: float | None = None) -> str | None:
    """Why a lock is stale (its owner is gone), or None while its owner may be alive."""
    now = time.time() if now is None else now
    host, pid = owner.get("host"), owner.get("pid")
    if host == socket.gethostname() and isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return f"process {pid} on this host is gone"
        except PermissionError:
            return None    # alive, another user's
        return None
    age = now - mtime
    if age > STALE_AFTER_S:
        return f"no heartbeat for {age:.0f} s (> {STALE_AFTER_S:.0f} s)"
    return None


def check_free(run_dir) -> None:
    """Raise LockError if a live run holds run_dir (a check before any file is written)."""
    owner = read_owner(run_dir)
    if owner is None:
        return
    with contextlib.suppress(FileNotFoundError):
        if stale_reason(owner, lock_path(run_dir).stat().st_mtime) is None:
            raise LockError(_refusal(run_dir, owner))


def _refusal(run_dir, owner: dict) -> str:
    who = f"host {owner.get('host', '?')}, pid {owner.get('pid', '?')}, started {owner.get('started', '?')}"
    return (f"run directory {run_dir} is in use by another run ({who}); wait for it to finish, or "
            f"use another hydra.run.dir (if that run is gone, delete {lock_path(run_dir)})")


def _try_create(path: Path, owner: dict) -> bool:
    tmp = path.with_name(f"{LOCK_FILE}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(owner))
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:
        # A filesystem without hard links (some FUSE and SMB mounts): exclusive create, then
        # write; a reader that catches it empty takes it as unreadable, hence live until stale.
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(owner))
        return True
    finally:
        tmp.unlink()


@contextlib.contextmanager
def run_lock(run_dir, say=print):
    """Hold run_dir's lock for the block; refuse (LockError) if a live run holds it, take over
    (saying so) a stale one."""
    path = lock_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = {"host": socket.gethostname(), "pid": os.getpid(),
             "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    while not _try_create(path, owner):
        other = read_owner(run_dir)
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            continue   # released meanwhile: try again
        reason = stale_reason(other or {}, mtime)
        if reason is None:
            raise LockError(_refusal(run_dir, other or {}))
        # Renamed away under a unique name first, then checked: of two runs taking over at once,
        # the later rename may catch the winner's fresh lock, which is then put back (link
        # fails only if yet another run has locked meanwhile) and the loop reads it again.
        grave = path.with_name(f"{LOCK_FILE}.{uuid.uuid4().hex}.stale")
        try:
            os.rename(path, grave)
        except FileNotFoundError:
            continue
        try:
            if json.loads(grave.read_text() or "{}") != (other or {}):
                with contextlib.suppress(FileExistsError):
                    os.link(grave, path)
                continue
        except ValueError:
            pass   # half-written by a crash before the atomic link existed: stale all the same
        finally:
            grave.unlink()
        say(f"taking over the stale lock of run directory {run_dir} (host {(other or {}).get('host', '?')}, "
            f"pid {(other or {}).get('pid', '?')}: {reason})")
    stop = threading.Event()

    def heartbeat():
        while not stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                os.utime(path)

    beat = threading.Thread(target=heartbeat, name="svmbench-lock-heartbeat", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        # Only our own lock: one taken over from us (we were presumed dead) is not ours to drop.
        if read_owner(run_dir) == owner:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
