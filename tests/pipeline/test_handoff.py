"""The command's side of the kept cluster's hand-off (pipeline/kept/handoff.py), in this process:
each decision of `hand_off` (whether to ask, whom to trust, what to send, what a reply means,
which signals it holds and where they go) against a socket served by a thread of this test that
reads the request with the launcher's own `launcher._receive`. `exits.fast_exit` raises
SystemExit here instead of ending pytest. The real launcher process and real commands handed to
it are tests/pipeline/test_launcher.py's; another user refused, test_cluster_access.py's."""
import os
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

from pipeline.kept import handoff, launcher

ARGV = ["+experiment=bench_fixed", "cluster=kept"]


@pytest.fixture
def state(tmp_path, monkeypatch):
    """The kept cluster's state directory (short: a Unix socket's path has at most 107 bytes)."""
    import tempfile
    d = tempfile.mkdtemp(prefix="svmbench-handoff-")
    monkeypatch.setenv("SVMBENCH_CLUSTER_DIR", d)
    monkeypatch.delenv("SVMBENCH_LAUNCHER", raising=False)
    yield d
    import shutil
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(autouse=True)
def handlers(monkeypatch):
    """The handed signals' handlers at the test's start (restored after it: a hand-off that ends in
    `fast_exit` leaves its own), and fast_exit as a SystemExit carrying its code."""
    before = {sig: signal.getsignal(sig) for sig in handoff.HANDED_SIGNALS}
    # As a terminal's command starts, none ignored (a runner may start its tests with some ignored:
    # mutmut's does), the tests that ignore one say so
    start = {sig: signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
             for sig in handoff.HANDED_SIGNALS}
    for sig, handler in start.items():
        signal.signal(sig, handler)

    def fast_exit(code, forked=False):
        raise SystemExit(code)
    monkeypatch.setattr(handoff.exits, "fast_exit", fast_exit)
    yield start
    for sig, handler in before.items():
        signal.signal(sig, handler)


@contextmanager
def serving(state, answer):
    """A thread accepting one connection on the launcher's socket in `state`, reading its request
    with the launcher's `_receive` and calling answer(conn, request, fds); what it saw in `seen`
    (the request, the descriptors' (device, inode), or the error that ended the read)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(os.path.join(state, handoff.SOCKET))
    server.listen(1)
    server.settimeout(30)
    seen = {}

    def serve():
        try:
            conn, _ = server.accept()
        except OSError as exc:
            seen["error"] = exc
            return
        with conn:
            try:
                request, fds = launcher._receive(conn)
            except OSError as exc:
                seen["error"] = exc
                return
            seen["request"] = request
            seen["fds"] = [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in fds]
            for fd in fds:
                os.close(fd)
            answer(conn, request, fds)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        thread.join(30)       # every test here connects (or its accept times out)
        server.close()
        os.unlink(os.path.join(state, handoff.SOCKET))


def _hand_off(argv=ARGV):
    handoff.hand_off(list(argv), 12.5)


def _signal_here(signum):
    """signum to the main thread (where hand_off waits): its wait is interrupted and the handler
    runs at once, before the launcher's next line is read."""
    signal.pthread_kill(threading.main_thread().ident, signum)


def _lines(*lines):
    return lambda conn, request, fds: conn.sendall("".join(f"{x}\n" for x in lines).encode())


def test_a_command_without_cluster_kept_or_with_the_launcher_off_asks_nobody(state, monkeypatch, handlers):
    """Only a `cluster=kept` command is handed off (not one naming it in another key's value),
    and SVMBENCH_LAUNCHER=0 keeps it here; neither connects, nor touches a signal handler."""
    monkeypatch.setattr(handoff, "REPLY_TIMEOUT_S", 0.5)     # a wrong connect costs no more
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with server:
        server.bind(os.path.join(state, handoff.SOCKET))
        server.listen(4)
        _hand_off(["+experiment=bench_fixed", "cluster=local"])
        _hand_off(["run.note=cluster=kept"])
        monkeypatch.setenv("SVMBENCH_LAUNCHER", "0")
        _hand_off()
        assert {sig: signal.getsignal(sig) for sig in handoff.HANDED_SIGNALS} == handlers
        server.setblocking(False)
        with pytest.raises(BlockingIOError):      # nobody connected
            server.accept()
    os.unlink(os.path.join(state, handoff.SOCKET))
    monkeypatch.setenv("SVMBENCH_LAUNCHER", "1")
    with serving(state, _lines("ok 1", "exit 0")) as seen, pytest.raises(SystemExit):
        _hand_off()
    assert seen["request"]["argv"] == ARGV


def test_no_socket_no_hand_off(state):
    """No launcher has served here (no socket): the command runs here, at once."""
    assert not os.path.exists(os.path.join(state, handoff.SOCKET))
    assert _hand_off() is None


def test_a_command_handed_off_exits_with_the_launchers_status_having_sent_what_it_runs_with(state, monkeypatch):
    """The request: argv, argv0, cwd, environment, sys.path, the start time, the open standard
    descriptors themselves (passed, not named), the fingerprint and no ignored signal; the
    command then ends with the status the launcher reports, as given (`exit 3`: 3)."""
    monkeypatch.setenv("SVMBENCH_HANDOFF_PROBE", "x y")
    # sys.path as the command has it when it asks (a copy: an import afterwards may add to it)
    path = [str(p) for p in sys.path] + ["/probe/of/the/path"]
    monkeypatch.setattr(sys, "path", list(path))
    with serving(state, _lines("ok 1", "exit 3")) as seen, pytest.raises(SystemExit) as ended:
        _hand_off()
    assert ended.value.code == 3
    r = seen["request"]
    assert r["argv"] == ARGV and r["argv0"] == sys.argv[0] and r["cwd"] == os.getcwd()
    assert r["env"]["SVMBENCH_HANDOFF_PROBE"] == "x y" and r["env"] == dict(os.environ)
    # every entry, in order (a runner that wraps functions, mutmut's, may add its own as it calls them)
    sent = iter(r["path"])
    assert all(entry in sent for entry in path) and r["started"] == 12.5 and r["ignored"] == []
    assert r["fingerprint"] == handoff.fingerprint()
    assert r["fds"] == [0, 1, 2]
    assert seen["fds"] == [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (0, 1, 2)]


def test_a_closed_standard_descriptor_is_not_sent(state, monkeypatch):
    """A command started with stdin closed sends the two it has, and says which they are."""
    real = handoff._is_open
    monkeypatch.setattr(handoff, "_is_open", lambda fd: fd != 0 and real(fd))
    with serving(state, _lines("ok 1", "exit 0")) as seen, pytest.raises(SystemExit) as ended:
        _hand_off()
    assert ended.value.code == 0 and seen["request"]["fds"] == [1, 2] and len(seen["fds"]) == 2


def test_is_open_tells_an_open_descriptor_from_a_closed_one():
    r, w = os.pipe()
    os.close(w)
    assert handoff._is_open(r) and not handoff._is_open(w)
    os.close(r)


def test_a_launcher_that_ends_mid_command_is_an_error_naming_its_pid_and_log(state, capsys):
    """`ok PID` and then the socket closes without an `exit` line: the launcher died under the
    run; the command says so, naming the child and the launcher's log, and exits 1."""
    with serving(state, _lines("ok 4242")), pytest.raises(SystemExit) as ended:
        _hand_off()
    assert ended.value.code == 1
    err = capsys.readouterr().err
    assert err == (f"error: the kept cluster's launcher ended while running this command (pid 4242); its log: "
                   f"{os.path.join(state, 'cluster.log')}\n")


def test_a_refusal_runs_the_command_here_saying_why_with_its_own_handlers_back(state, capsys, handlers):
    """`no WHY`: one line naming the launcher's reason, the handlers restored, and the command
    runs here (hand_off returns)."""
    with serving(state, _lines("no the package's source differs")):
        assert _hand_off() is None
    assert capsys.readouterr().err == ("note: the kept cluster's launcher does not run this command (the package's "
                                       "source differs); it runs here, with its own imports\n")
    assert {sig: signal.getsignal(sig) for sig in handoff.HANDED_SIGNALS} == handlers


def test_a_launcher_that_says_nothing_runs_the_command_here_without_a_word(state, capsys, monkeypatch, handlers):
    """A socket left by a launcher that closes at once, or one that does not answer within the
    reply timeout: the command runs here, silently, its handlers as they were."""
    with serving(state, lambda conn, request, fds: None):
        assert _hand_off() is None
    assert capsys.readouterr().err == ""
    assert {sig: signal.getsignal(sig) for sig in handoff.HANDED_SIGNALS} == handlers
    monkeypatch.setattr(handoff, "REPLY_TIMEOUT_S", 0.2)
    release, held = threading.Event(), []
    with serving(state, lambda conn, request, fds: held.append(release.wait(10))):
        assert _hand_off() is None
        release.set()
    assert held == [True]       # the command gave up at its timeout, not when the silent launcher let go
    assert {sig: signal.getsignal(sig) for sig in handoff.HANDED_SIGNALS} == handlers


def test_a_socket_without_a_launcher_runs_the_command_here(state, handlers):
    """A socket file whose launcher has ended (nothing listens: connect refused)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(state, handoff.SOCKET))
    s.close()
    assert _hand_off() is None
    assert {sig: signal.getsignal(sig) for sig in handoff.HANDED_SIGNALS} == handlers


@pytest.mark.parametrize("who", ["another uid", "no peer credentials"])
def test_a_launcher_of_another_user_gets_nothing_and_the_command_keeps_its_handlers(state, monkeypatch, handlers, who):
    """The socket's server is not this user's (its uid differs from our effective uid), or the
    system says nobody: not one byte of the request (the environment, the streams) is sent,
    and the command runs here with its own signal handlers, so that Ctrl-C still stops it."""
    if who == "another uid":
        euid = os.geteuid()
        monkeypatch.setattr(handoff.os, "geteuid", lambda: euid + 1)
    else:
        monkeypatch.setattr(handoff, "peer", lambda sock: None)
    with serving(state, _lines("ok 1", "exit 0")) as seen:
        assert _hand_off() is None
    assert "request" not in seen and "short request" in str(seen["error"])
    assert {sig: signal.getsignal(sig) for sig in handoff.HANDED_SIGNALS} == handlers


def test_a_signal_during_the_hand_off_is_held_then_forwarded_to_the_child(state):
    """SIGTERM after the request is sent but before `ok PID`: held (not acted on here), then sent
    to the child once the launcher names it; the exit status is then the child's, 128 + 15."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

    def answer(conn, request, fds):
        _signal_here(signal.SIGTERM)
        conn.sendall(f"ok {child.pid}\n".encode())
        code = child.wait(10)
        conn.sendall(f"exit {128 - code if code < 0 else code}\n".encode())
    try:
        with serving(state, answer), pytest.raises(SystemExit) as ended:
            _hand_off()
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGTERM and ended.value.code == 128 + signal.SIGTERM


def test_a_ctrl_c_held_during_a_refused_hand_off_is_the_interrupted_line_and_130(state, capsys):
    with serving(state, lambda conn, request, fds: (_signal_here(signal.SIGINT),
                                                    conn.sendall(b"no busy\n"))), \
            pytest.raises(SystemExit) as ended:
        _hand_off()
    assert ended.value.code == 130
    assert capsys.readouterr().err.endswith("\ninterrupted; run the same command to resume\n")


def test_another_signal_held_during_a_refused_hand_off_is_acted_on_by_the_commands_own_handler(state):
    got = []
    signal.signal(signal.SIGHUP, lambda signum, frame: got.append(signum))
    with serving(state, lambda conn, request, fds: (_signal_here(signal.SIGHUP), conn.sendall(b"no busy\n"))):
        assert _hand_off() is None
    assert got == [signal.SIGHUP]


def test_a_signal_the_command_ignores_is_named_and_left_ignored(state):
    """SIGINT ignored (a background job of a non-interactive shell): the request names it, its
    handler stays SIG_IGN throughout, and a SIGINT meanwhile is neither held nor forwarded."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    during = {}

    def answer(conn, request, fds):
        during["int"], during["term"] = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        _signal_here(signal.SIGINT)
        conn.sendall(b"no busy\n")
    with serving(state, answer) as seen:
        assert _hand_off() is None
    assert seen["request"]["ignored"] == [int(signal.SIGINT)]
    assert during["int"] is signal.SIG_IGN and during["term"].__name__ == "forward"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_the_socket_is_in_the_state_directory(state):
    assert str(handoff.socket_path()) == os.path.join(state, "launcher.sock")


def test_the_package_folders_are_pipelines_and_solvers():
    import pipeline
    import solvers
    assert handoff._package_dirs() == [os.path.dirname(pipeline.__file__), os.path.dirname(solvers.__file__)]


def test_peer_is_this_process_pid_and_uid():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert handoff.peer(a) == (os.getpid(), os.getuid())


def test_a_reply_line_is_read_whole_and_alone():
    """One line however long, stripped, invalid UTF-8 replaced; the next line already sent (a
    quick command's `exit` right behind `ok`) left for the next read; '' at end of file."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        b.sendall(b"ok " + b"7" * 600 + b" \xff\nexit 3\n")
        assert handoff._read_line(a) == "ok " + "7" * 600 + " \ufffd"
        assert handoff._read_line(a) == "exit 3"
        b.close()
        assert handoff._read_line(a) == ""


def test_the_fingerprint_reads_py_files_sys_path_and_import_time_variables_only(tmp_path, monkeypatch):
    """What changes the fingerprint: a .py file's size or time, a sys.path folder's time, an
    environment variable read at import (NUMBA_, OMP_, ...). What does not: another file, a
    file under __pycache__ or conf/, another variable."""
    package = tmp_path / "pkg"
    for d in ("sub", "__pycache__", "conf"):
        (package / d).mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    monkeypatch.setattr(handoff, "_package_dirs", lambda: [str(package)])
    monkeypatch.setattr(sys, "path", [sys.path[0], str(tmp_path / "site")])
    (tmp_path / "site").mkdir()
    before = handoff.fingerprint()

    def changed(step) -> bool:
        nonlocal before
        step()
        now = handoff.fingerprint()
        out, before = now != before, now
        return out

    assert not changed(lambda: (package / "notes.txt").write_text("x"))
    assert not changed(lambda: (package / "__pycache__" / "a.py").write_text("x"))
    assert not changed(lambda: (package / "conf" / "b.py").write_text("x"))
    assert not changed(lambda: monkeypatch.setenv("SVMBENCH_SOMETHING", "1"))
    assert not changed(lambda: monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path[1:]))    # the script's own
    assert changed(lambda: (package / "sub" / "b.py").write_text(""))
    assert changed(lambda: (package / "a.py").write_text("A = 22\n"))
    assert changed(lambda: monkeypatch.setenv("NUMBA_OPT", "1"))
    assert changed(lambda: monkeypatch.setenv("OMP_NUM_THREADS", "3"))
    assert changed(lambda: os.utime(tmp_path / "site", ns=(1, 10 ** 18)))
    assert changed(lambda: monkeypatch.setattr(sys, "path", sys.path + [str(tmp_path / "gone")]))
    assert changed(lambda: monkeypatch.setattr(sys, "executable", sys.executable + "x"))
