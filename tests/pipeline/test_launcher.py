"""The kept cluster's launcher (pipeline/kept/launcher.py): a real launcher process, and real
`python -m pipeline` commands handed to it over its socket. Without Dask: the commands are
refused configurations and dry runs, which need no cluster, so each mechanism (the hand-off of
argv, streams and exit status; the fingerprint's refusal; Ctrl-C forwarded; a killed command's
run interrupted; the launcher's end) is seen in a few seconds."""
import os
import signal
import subprocess
import sys
import time

import pytest

from pipeline.kept import handoff, launcher

# 5,000 C values x 100 random splits of toy_blobs planned, not run: a dry run of a few seconds.
LONG_DRY_RUN = ["+experiment=bench_large", "run.dry_run=true", "cv=repeated", "cv.rounds=100", "cluster=kept"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with the datasets the commands below plan over (a dry run plans nothing over a
    dataset the store lacks): bench_fixed's and bench_large's toy_blobs."""
    from pipeline.experiment.config import compose, validate
    from pipeline.run import materialise_datasets
    root = tmp_path_factory.mktemp("store")
    for experiment in ("bench_fixed", "bench_large"):
        materialise_datasets(validate(compose([f"+experiment={experiment}", f"store.root={root}"])))
    return root


@pytest.fixture
def served(tmp_path, store):
    """A launcher serving on tmp_path/state for as long as this test's process lives (the
    "scheduler" it watches); its output in tmp_path/launcher.log. The commands' store: `store`."""
    yield from _serve(tmp_path, store, ["-m", "pipeline.kept.launcher"])


def _serve(tmp_path, store, how):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)       # the launcher serves only from a directory its user alone can write to
    env = {**os.environ, "SVMBENCH_CLUSTER_DIR": str(state), "SVMBENCH_STORE": str(store)}
    log = open(tmp_path / "launcher.log", "w")
    proc = subprocess.Popen([sys.executable, *how, str(state), str(os.getpid())],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (state / launcher.SOCKET).exists():
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "launcher.log").read_text()
        time.sleep(0.05)
    yield env, proc, tmp_path / "launcher.log"
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    log.close()


# A launcher whose children get SIGINT while they set themselves up, before the command's first
# line: where a Ctrl-C forwarded at once, or the child's own when its command was killed at once
# (`launcher._watch`), used to land, ending the child with a traceback and exit 1.
INTERRUPTED_IN_SETUP = """
import os, signal, sys
from pipeline.kept import launcher
streams = launcher._streams

def interrupted_streams():
    streams()
    os.kill(os.getpid(), signal.SIGINT)

launcher._streams = interrupted_streams
sys.exit(launcher.main(sys.argv[1:]))
"""


def _as_from_a_terminal():
    # A command typed in a terminal starts with SIGINT at its default, not with whatever this
    # test's process has: SIG_IGN is inherited across exec, and a suite started in the background
    # by a non-interactive shell (`nohup make test &`, some CI runners) has SIGINT ignored in every
    # process, so the command named SIGINT as ignored, as a background job's, and ran on through
    # the Ctrl-C these tests send. The ignored case is tested on its own (test_handoff.py).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _command(env, *args, **kw):
    return subprocess.Popen([sys.executable, "-m", "pipeline", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, preexec_fn=_as_from_a_terminal, **kw)


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(p) for p in fh.read().split()]


def test_a_command_runs_in_the_launchers_child_with_its_streams_and_exit_status(served, tmp_path):
    """stdout, stderr and the exit status are the command's own, as run in its own process; the
    launcher's log names the child and its status; a refused configuration is one line, exit 2.
    A connection that sends garbage is logged and dropped, and the launcher serves on."""
    env, proc, log = served
    import socket
    junk = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    junk.connect(os.path.join(env["SVMBENCH_CLUSTER_DIR"], launcher.SOCKET))
    junk.sendall(b"\x00\x00\x00\x05hello")
    junk.close()
    bad = _command(env, "cluster=kept", "nosuchkey=1")
    out, err = bad.communicate(timeout=30)
    assert bad.returncode == 2 and err.startswith("error: invalid configuration: nosuchkey: unknown key"), err
    assert "launcher" not in err
    dry = _command(env, "+experiment=bench_fixed", "run.dry_run=true", "cluster=kept")
    out, err = dry.communicate(timeout=30)
    assert dry.returncode == 0 and "fits: 10 (dcd 10)" in out, (out, err)
    text = log.read_text()
    assert text.count("exited 2") == 1 and text.count("exited 0") == 1 and "a bad request" in text, text
    assert "runs +experiment=bench_fixed run.dry_run=true cluster=kept" in text


def test_commands_at_once_each_get_their_own_output_and_status(served):
    """Three commands handed off together: each exit status and output reaches the command that
    ran it (the launcher answers on each command's own socket, as it reaps each child)."""
    env, proc, log = served
    cmds = [_command(env, "+experiment=bench_fixed", "run.dry_run=true", "cluster=kept", "solvers.dcd.grid.C=[1,2,3]"),
            _command(env, "cluster=kept", "nosuchkey=1"),
            _command(env, "+experiment=bench_fixed", "run.dry_run=true", "cluster=kept")]
    outs = [c.communicate(timeout=60) for c in cmds]
    assert [c.returncode for c in cmds] == [0, 2, 0], outs
    assert "fits: 15 (dcd 15)" in outs[0][0] and "fits: 10 (dcd 10)" in outs[2][0]
    assert "nosuchkey" in outs[1][1] and not outs[0][1].strip() and not outs[2][1].strip()
    assert log.read_text().count("exited") == 3


@pytest.mark.slow
def test_a_command_the_launcher_would_not_run_as_itself_runs_in_its_own_process(served):
    """A setting read at import (here numba's NUMBA_OPT) that differs from the launcher's: the
    fingerprint differs, the launcher refuses, and the command runs with its own imports, saying
    why in one line; SVMBENCH_LAUNCHER=0 skips the launcher without a word."""
    env, proc, log = served
    assert handoff.fingerprint() == handoff.fingerprint()
    other = _command({**env, "NUMBA_OPT": "1"}, "cluster=kept", "nosuchkey=1")
    out, err = other.communicate(timeout=60)
    assert other.returncode == 2
    assert err.startswith("note: the kept cluster's launcher does not run this command (the package's source"), err
    assert "error: invalid configuration: nosuchkey" in err
    skipped = _command({**env, "SVMBENCH_LAUNCHER": "0"}, "cluster=kept", "nosuchkey=1")
    out, err = skipped.communicate(timeout=60)
    assert skipped.returncode == 2 and err.startswith("error: invalid configuration"), err
    text = log.read_text()
    assert "refused a command" in text and "exited" not in text, text


def test_ctrl_c_reaches_the_run_and_a_killed_command_interrupts_it(served):
    """SIGINT to the command is forwarded to the child, which stops as a run stops on Ctrl-C
    (exit 130, one line); a command killed outright (SIGKILL: it forwards nothing) closes its
    socket, and the child interrupts itself the same way instead of running on unseen."""
    env, proc, log = served
    cmd = _command(env, *LONG_DRY_RUN)
    deadline = time.monotonic() + 20
    while "runs +experiment=bench_large" not in log.read_text():
        assert time.monotonic() < deadline and cmd.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)
    cmd.send_signal(signal.SIGINT)
    out, err = cmd.communicate(timeout=30)
    assert cmd.returncode == 130 and "interrupted" in err, (cmd.returncode, err)

    killed = _command(env, *LONG_DRY_RUN)
    while "runs +experiment=bench_large" not in log.read_text().split("exited 130")[-1]:
        assert time.monotonic() < deadline + 20 and killed.poll() is None
        time.sleep(0.05)
    child = _children(proc.pid)[0]
    killed.kill()
    killed_err = killed.communicate(timeout=10)[1]
    while child in _children(proc.pid):
        assert time.monotonic() < deadline + 40, "the killed command's run went on"
        time.sleep(0.05)
    assert log.read_text().count("exited 130") == 2, log.read_text() + "\nERR:" + killed_err


def test_a_ctrl_c_before_the_commands_first_line_interrupts_it_all_the_same(tmp_path, store):
    """SIGINT in the launcher's child while it sets itself up (its streams, directory,
    environment, the watch of its socket): held, and the command ends as an interrupted one,
    its line and 130, not a traceback and 1."""
    for env, proc, log in _serve(tmp_path, store, ["-c", INTERRUPTED_IN_SETUP]):
        cmd = _command(env, "+experiment=bench_fixed", "run.dry_run=true", "cluster=kept")
        out, err = cmd.communicate(timeout=60)
        assert (cmd.returncode, err) == (130, "interrupted; run the same command to resume\n"), err
        assert "exited 130" in log.read_text()


def test_an_edit_to_a_source_file_changes_the_fingerprint(tmp_path, monkeypatch):
    """The launcher would run code imported before an edit: a file of the package edited in
    place (same name, same size, other bytes) changes the fingerprint, as a file added does; an
    unedited tree gives the same one. (The package folders are a copy here, not the checkout.)"""
    package = tmp_path / "pipeline"
    (package / "engine").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    source = package / "engine" / "execute.py"
    source.write_text("TASK_S = 2.0\n")
    monkeypatch.setattr(handoff, "_package_dirs", lambda: [str(package)])
    before = handoff.fingerprint()
    assert handoff.fingerprint() == before
    stat = source.stat()
    source.write_text("TASK_S = 9.0\n")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))    # an editor's save, a moment later
    assert source.stat().st_size == stat.st_size and handoff.fingerprint() != before
    edited = handoff.fingerprint()
    (package / "engine" / "new.py").write_text("")
    assert handoff.fingerprint() != edited


def test_the_launcher_ends_on_sigterm_and_removes_its_socket(served):
    """`svmbench cluster stop` sends SIGTERM: the launcher removes its socket and exits 0."""
    env, proc, log = served
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    state = env["SVMBENCH_CLUSTER_DIR"]
    assert not os.path.exists(os.path.join(state, launcher.SOCKET))
    # With no launcher, a command runs in its own process, and says nothing about one.
    bad = _command(env, "cluster=kept", "nosuchkey=1")
    out, err = bad.communicate(timeout=60)
    assert bad.returncode == 2 and err.startswith("error: invalid configuration"), err
