"""The command's side of the kept cluster's launcher (pipeline/kept/launcher.py says why and
how): `hand_off`, called at the top of `python -m pipeline` and `svmbench run` before any heavy
import, sends a ``cluster=kept`` command to the launcher's socket and waits for its status.

Light on purpose: the standard library, the state directory's path (`pipeline.engine.kept`)
and nothing else, so that a command the launcher takes has imported next to nothing itself.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import struct
import sys

from .. import exits

SOCKET = "launcher.sock"
# Environment variables read at import time by what the launcher preloads (numba's config,
# the BLAS libraries' thread counts, Dask's config, matplotlib's backend and config, Python's
# own): a command whose values differ would not run as it would in its own process.
IMPORT_TIME_ENV = ("PYTHON", "NUMBA_", "OMP_", "OPENBLAS", "GOTO", "MKL_", "BLIS_", "VECLIB_", "DASK_", "MPL",
                   "LD_", "XDG_", "HOME", "TMPDIR")
HANDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# How long a command waits for the launcher's answer before it runs by itself (a launcher that
# answers at all answers in milliseconds: it reads the request and forks).
REPLY_TIMEOUT_S = 30


def _package_dirs() -> list[str]:
    """The folders of the `pipeline` and `solvers` packages this interpreter imports (without
    importing `solvers`)."""
    import importlib.util
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # pipeline/, above kept/
    spec = importlib.util.find_spec("solvers")
    other = os.path.dirname(spec.origin) if spec is not None and spec.origin else ""
    return [here, other]


def fingerprint() -> str:
    """What must be the same for a command to run in the launcher's child as in its own process:
    the interpreter, the package folders with every .py file's size and modification time
    (a stat each: cheap beside the imports it saves), the modification time of each sys.path folder (a package installed or
    removed there changes it), and the environment variables libraries read at import."""
    h = hashlib.sha256()
    h.update(sys.executable.encode())
    for root in _package_dirs():
        h.update(root.encode())
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and d != "conf")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, name))
                    h.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    for entry in sys.path[1:]:
        try:
            h.update(f"{entry}:{os.stat(entry).st_mtime_ns}".encode())
        except OSError:
            h.update(entry.encode())
    for key in sorted(os.environ):
        if key.startswith(IMPORT_TIME_ENV):
            h.update(f"{key}={os.environ[key]}".encode())
    return h.hexdigest()


def socket_path():
    from ..engine.kept import state_dir
    return state_dir() / SOCKET


def peer(sock: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a connected Unix socket, as the kernel
    recorded them when it connected (SO_PEERCRED, Linux); None where the system gives none."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid


def _read_line(sock: socket.socket) -> str:
    """One reply line ('' at end of file)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(256)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


def hand_off(argv: list[str], started: float) -> None:
    """Run this command in the kept cluster's launcher if it names ``cluster=kept`` and a
    launcher is up that takes it: then exit with the run's status (never return). Return, having
    done nothing, when there is none or it refuses (the command then runs here)."""
    if "cluster=kept" not in argv or os.environ.get("SVMBENCH_LAUNCHER", "1") == "0":
        return
    path = socket_path()
    if not path.exists():
        return
    fds = [fd for fd in (0, 1, 2) if _is_open(fd)]
    # A signal this command ignores (SIGINT in a background job of a non-interactive shell) is
    # not handed on, and the child ignores it too; the others are held from here until the
    # launcher answers, then forwarded to its child, or, if the command runs here after all,
    # acted on here: a Ctrl-C in the moment of the hand-off is neither lost nor a traceback.
    ignored = [int(sig) for sig in HANDED_SIGNALS if signal.getsignal(sig) is signal.SIG_IGN]
    held, child = [], []

    def forward(signum, frame):
        if not child:
            held.append(signum)
            return
        try:
            os.kill(child[0], signum)
        except ProcessLookupError:
            pass
    previous = {sig: signal.signal(sig, forward) for sig in HANDED_SIGNALS if int(sig) not in ignored}
    request = json.dumps({"argv": argv, "argv0": sys.argv[0], "cwd": os.getcwd(), "env": dict(os.environ),
                          "path": sys.path, "started": started, "fds": fds, "fingerprint": fingerprint(),
                          "ignored": ignored}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(REPLY_TIMEOUT_S)     # a launcher that does not answer (stopped, swapped out)
    try:
        conn.connect(str(path))
        ours = peer(conn)
        if ours is None or ours[1] != os.geteuid():
            conn.close()     # not this user's launcher: it gets neither the environment nor the streams
            return
        socket.send_fds(conn, [struct.pack("!I", len(request)) + request], fds)
        reply = _read_line(conn)
    except OSError:
        reply = ""     # a socket left by a launcher that has ended, or one that did not answer: run here
    if not reply.startswith("ok "):
        conn.close()
        if reply.startswith("no "):
            print(f"note: the kept cluster's launcher does not run this command ({reply[3:]}); it runs here, "
                  f"with its own imports", file=sys.stderr)
        _run_here(previous, held)
        return
    conn.settimeout(None)
    child.append(int(reply.split()[1]))
    for signum in held:
        forward(signum, None)
    line = _read_line(conn)      # the signals above interrupt it, then it resumes (PEP 475)
    if line.startswith("exit "):
        exits.fast_exit(int(line.split()[1]))
    print(f"error: the kept cluster's launcher ended while running this command (pid {child[0]}); "
          f"its log: {path.parent / 'cluster.log'}", file=sys.stderr)
    exits.fast_exit(1)


def _run_here(previous: dict, held: list) -> None:
    """The command runs in its own process after all: its signals' handlers as they were, and
    one that came meanwhile acted on as it would have been (Ctrl-C: the interrupted line, 130)."""
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    for signum in held:
        if signum == signal.SIGINT:
            print("interrupted; run the same command to resume", file=sys.stderr)
            exits.fast_exit(130)
        signal.raise_signal(signum)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
