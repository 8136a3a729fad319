"""The kept cluster's launcher: a process that has imported what a run's client imports and
forks a child for each `python -m pipeline ... cluster=kept`, which runs the command there.

Why. On a kept cluster the workers are warm, and what is left of a small command's seconds is
the client alone, and about half of that is its imports: Hydra, pandas, pyarrow, Dask's client,
numba and the solvers' registry, matplotlib and plotly, paid again by every command. The
launcher pays them once, when `svmbench cluster start` starts it; a command forked from it
starts with them done (measured by scenario k of `python -m pipeline.bench`:
docs/benchmarks/sweep.md). This is
multiprocessing's forkserver, or a build tool's daemon (Gradle's, Bazel's server), for one command.

The hand-off (`handoff.hand_off`, called at the top of `python -m pipeline` before any heavy import):
the command connects to the launcher's Unix socket (``launcher.sock`` in the kept cluster's state
directory) and sends its argv, working directory, environment, sys.path and start time, with its
stdin, stdout and stderr as file descriptors (SCM_RIGHTS). The launcher checks that it would run
the command as the command itself would (`fingerprint`: the same interpreter, the same
`pipeline` and `solvers` source files unchanged since it started, the same environment variables
that libraries read at import, e.g. NUMBA_*, OMP_*, DASK_*), and forks. The child takes the
descriptors as its 0, 1 and 2, the directory, the environment and argv, and runs
`pipeline.command.command`: its output goes to the user's terminal or pipes as before, a
terminal is still a terminal (progress bars), and the timing line counts from the command's own
start. The launcher answers ``ok PID``, then ``exit CODE`` once it has reaped the child (a
signal's death is 128 + its number, as a shell says it). The command forwards SIGINT, SIGTERM,
SIGHUP and SIGQUIT to the child, so Ctrl-C interrupts the run as it would in the command's own
process (exit 130, resumable); if the command itself dies (killed), the child sees its socket
close and interrupts itself the same way.

What the launcher refuses, and the command then runs in its own process as without a launcher
(one line on stderr says why): a fingerprint that differs (the source edited since `cluster
start`, a package installed, another interpreter or BLAS setting). ``SVMBENCH_LAUNCHER=0`` skips
the hand-off. Only a command line that names ``cluster=kept`` is handed off: a kept cluster
chosen inside an experiment's yaml is only known once composed, after the imports.

Only its user: a command runs with the launcher's uid, so a connection from another user would
run code as this one. The socket is mode 0600 in the state directory (0700, refused if another
user can write to it), and on every connection the launcher asks the kernel who connected
(SO_PEERCRED) and refuses another uid; the command checks the launcher's uid the same way
before it sends its environment and descriptors, so a socket another user placed gets nothing.

The launcher holds no thread when it forks (a fork copies only the forking thread; a lock held
by another would stay held in the child): it preloads in its main thread and checks that none
was left running; it serves in one thread, with SIGCHLD written to a self-pipe
(`signal.set_wakeup_fd`) to reap its children without polling. It ends with the kept cluster's
scheduler (checked every second), on SIGTERM (`svmbench cluster stop`), and removes its socket.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time

from .handoff import SOCKET, fingerprint, peer

_MAX_REQUEST = 16 * 2**20     # bytes of one request (argv, environment, sys.path)

# What a run's client imports (found by listing sys.modules at the end of one), imported once here.
PRELOAD = ("pipeline.command", "pipeline.run", "pipeline.engine.execute", "pipeline.engine.tasks",
           "pipeline.results.tables", "pipeline.report.build", "pipeline.report.tables", "distributed", "solvers")




# ---------------------------------------------------------------- the launcher's side
def preload() -> None:
    """Import what a run's client imports, and build what its report builds first (plotly's
    template); in this thread, leaving none behind (`serve` checks)."""
    import importlib
    for name in PRELOAD:
        importlib.import_module(name)
    from pipeline.report import preload as report_imports
    report_imports(True)


def serve(directory, scheduler_pid: int) -> None:
    """Accept commands on ``directory/launcher.sock`` until the scheduler `scheduler_pid` ends or
    SIGTERM; each is forked (`_child`), and its exit status sent back once reaped."""
    import select
    import threading
    from pathlib import Path
    from ..engine.kept import alive
    from ..engine.security import not_private
    if not hasattr(socket, "SO_PEERCRED"):
        raise SystemExit("launcher: this system does not say who connects to a Unix socket (SO_PEERCRED); not serving")
    why = not_private(directory)
    if why is not None:
        raise SystemExit(f"launcher: its directory {directory} is not its user's alone ({why}); not serving")
    own = os.getpid()
    fp = fingerprint()
    preload()
    if threading.active_count() != 1:
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.current_thread())
        raise SystemExit(f"launcher: threads left running after the imports ({names}); not serving")
    path = Path(directory) / SOCKET
    tmp = path.with_name(f".{SOCKET}.{own}")
    tmp.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp))
    os.chmod(tmp, 0o600)         # its user alone may connect (the directory is 0700 too)
    listener.listen(16)
    inode = tmp.stat().st_ino
    os.replace(tmp, path)        # the socket appears when it accepts
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    running: dict[int, socket.socket] = {}
    print(f"launcher: pid {own} serving on {path}", flush=True)
    try:
        while not stop and alive(scheduler_pid):
            ready, _, _ = select.select([listener, wake_r], [], [], 1.0)
            if wake_r in ready:
                os.read(wake_r, 512)
            if listener in ready:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    conn = None
                if conn is not None and not _same_user(conn):
                    conn = None
                if conn is not None:
                    pid = _take(conn, fp, (listener, wake_r, wake_w, running))
                    if pid is not None:
                        running[pid] = conn
            _reap(running)
    finally:
        if os.getpid() == own:
            with_ours = path.exists() and path.stat().st_ino == inode    # not a newer launcher's
            if with_ours:
                path.unlink()
            listener.close()


def _same_user(conn: socket.socket) -> bool:
    """Whether the process that connected runs as this launcher's user; if not, it is told so
    and the connection closed (its child would run the command as this user)."""
    pid, uid = peer(conn)
    if uid == os.geteuid():
        return True
    print(f"launcher: refused a connection from uid {uid} (pid {pid}): it serves uid {os.geteuid()} alone", flush=True)
    try:
        conn.sendall(b"no this launcher serves the user who started it alone\n")
    except OSError:
        pass
    conn.close()
    return False


def _reap(running: dict) -> None:
    """Send ``exit CODE`` for each child that has ended (128 + n for death by signal n)."""
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
        print(f"launcher: command pid {pid} exited {code}", flush=True)
        try:
            conn.sendall(f"exit {code}\n".encode())
        except OSError:
            pass      # the command has gone (killed): nobody to tell
        conn.close()


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request and the descriptors it came with."""
    conn.settimeout(10)
    msg, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    try:
        if len(msg) < 4:
            raise OSError("short request")
        size = struct.unpack("!I", msg[:4])[0]
        if size > _MAX_REQUEST:
            raise OSError(f"request of {size} bytes")
        body = msg[4:]
        while len(body) < size:
            chunk = conn.recv(min(65536, size - len(body)))
            if not chunk:
                raise OSError("request cut short")
            body += chunk
        request = json.loads(body[:size])
        if len(fds) != len(request.get("fds", ())):
            raise OSError(f"{len(fds)} descriptors for {request.get('fds')}")
    except BaseException:
        for fd in fds:        # what came with a bad request is not kept open here
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, fds


def _take(conn: socket.socket, fp: str, close_in_child) -> int | None:
    """Read one command, fork its child, answer ``ok PID`` (or ``no WHY``); the child's pid."""
    try:
        request, fds = _receive(conn)
    except (OSError, ValueError) as exc:
        print(f"launcher: a bad request ({exc})", flush=True)
        conn.close()
        return None
    try:
        if request.get("fingerprint") != fp:
            print("launcher: refused a command whose fingerprint differs", flush=True)
            conn.sendall(b"no the package's source, its interpreter or the environment differ from when "
                         b"`svmbench cluster start` started it; `svmbench cluster stop` and `start` renew it\n")
            conn.close()
            return None
        pid = os.fork()
        if pid == 0:
            _child(request, fds, conn, close_in_child)     # never returns
        conn.sendall(f"ok {pid}\n".encode())
        print(f"launcher: command pid {pid} runs {' '.join(request['argv'])} in {request['cwd']}", flush=True)
        return pid
    except OSError:
        conn.close()
        return None
    finally:
        for fd in fds:      # the child has its own copies (only the parent gets here)
            os.close(fd)


def _child(request: dict, fds: list[int], conn: socket.socket, close_in_child) -> None:
    """Become the command: its descriptors, directory, environment, argv and sys.path, the
    signals of a new process; run it; exit with its status (never return)."""
    code = 1
    held = []
    try:
        listener, wake_r, wake_w, others = close_in_child
        signal.set_wakeup_fd(-1)
        for other in others.values():      # the other commands' sockets: theirs, not this run's
            other.close()
        ignored = set(request.get("ignored", ()))
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_IGN if int(sig) in ignored else signal.SIG_DFL)
        # Held until the command runs (below): a Ctrl-C forwarded now, or this child's own when
        # its command was killed at once (`_watch`), would otherwise end it before its try.
        signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
        listener.close()
        os.close(wake_r)
        os.close(wake_w)
        for fd, target in zip(fds, request["fds"]):
            os.dup2(fd, target)
            os.close(fd)
        _streams()
        os.chdir(request["cwd"])
        launcher = os.getppid()
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ["SVMBENCH_LAUNCHED_BY"] = str(launcher)    # the run's timing line says so
        sys.path[:] = request["path"]
        sys.argv[:] = [request["argv0"], *request["argv"]]
        import numpy as np
        np.random.seed()         # numpy's global generator, fresh as in a new process
        gone = _watch(conn)
        from pipeline import command as entry, exits
        try:
            signal.signal(signal.SIGINT, _sigint_handler(int(signal.SIGINT) in ignored, gone))
            if held and (int(signal.SIGINT) not in ignored or gone.is_set()):
                entry.Command.interrupted(entry.INTERRUPTED)      # before the command's first line: its line, 130
            entry.command(request["argv"], started=request["started"])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except KeyboardInterrupt:
            code = 130
        except BrokenPipeError:
            # The command's output closed under the run: killed, its reader gone with it, a
            # write can fail before the socket's end interrupts the run. Interrupted all the
            # same (the shards written are whole), not a crash.
            try:
                code = 130 if gone.wait(5) else 1
            except KeyboardInterrupt:     # `_watch`'s interrupt, arriving meanwhile
                code = 130
            exits.mute_streams()          # so that the streams' flush at exit has somewhere to go
        exits.fast_exit(code)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        exits.fast_exit(code, forked=True)     # a fork of the launcher: its handlers are the launcher's


def _sigint_handler(ignored: bool, gone):
    """SIGINT in the child as in the command's own process: a KeyboardInterrupt; where the
    command ignores SIGINT (a background job), ignored, but for this child's own when its
    command was killed (`_watch`), which must still stop the run."""
    if not ignored:
        return signal.default_int_handler

    def handler(signum, frame):
        if gone.is_set():
            raise KeyboardInterrupt
    return handler


def _streams() -> None:
    """sys.stdin/stdout/stderr anew on descriptors 0-2 (now the command's), buffered as Python
    buffers them for what they are: line by line on a terminal, stderr always."""
    import io
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        mode = "r" if fd == 0 else "w"
        tty = os.isatty(fd)
        stream = io.open(fd, mode, buffering=-1, encoding=getattr(old, "encoding", None) or "utf-8",
                         errors="backslashreplace" if fd == 2 else getattr(old, "errors", None), closefd=False,
                         newline=None if fd == 0 else "\n")
        if fd:
            stream.reconfigure(line_buffering=tty or fd == 2, write_through=unbuffered or fd == 2)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _watch(conn: socket.socket):
    """Interrupt this run (as Ctrl-C does) when the command's end of the socket closes: the
    command was killed, so nobody waits for the run and its forwarding has gone with it.
    Returns the event set when that happens."""
    import threading
    gone = threading.Event()

    def watch():
        try:
            while conn.recv(64):
                pass
        except OSError:
            pass
        gone.set()
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=watch, name="svmbench-launcher-watch", daemon=True).start()
    return gone


def main(argv: list[str] | None = None) -> int:
    """`python -m pipeline.kept.launcher STATE_DIR SCHEDULER_PID` (started by `cluster start`)."""
    args = sys.argv[1:] if argv is None else argv
    started = time.perf_counter()
    try:
        serve(args[0], int(args[1]))
    except SystemExit as exc:
        print(exc, flush=True)
        return 1
    print(f"launcher: ended after {time.perf_counter() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
