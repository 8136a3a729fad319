"""Clusters only their owner can use (pipeline/engine/security.py): a local cluster and the kept
cluster listen on loopback only, dashboard included (read from /proc/net/tcp and tcp6); the kept
cluster takes TLS clients with its own credentials alone (0600 files in its 0700 state
directory); another user (the probe `other_user.py`, run as `nobody`) can use neither its
scheduler nor its launcher's socket, and a command does not hand itself to a launcher of
another user; a state directory another user can write to is refused; cluster=address to a
plain tcp:// scheduler on another machine is warned about once. The SLURM side is in
test_slurm.py."""
import atexit
import contextlib
import functools
import io
import ipaddress
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import psutil
import pytest

from pipeline.engine import security as tls
from pipeline.engine.clusters import address_security, ClusterError, dashboard_line, open_client
from pipeline.engine.warmup import warm_workers
from pipeline.engine.kept import kept_security, read_state
from pipeline.experiment.config import compose, validate
from pipeline.run import run

PROBE = Path(__file__).with_name("other_user.py")
NOBODY = 65534


def _socket_inodes(pids) -> dict[str, int]:
    inodes = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes[link[8:-1]] = pid
    return inodes


def listening(pids) -> set[tuple[str, int, int]]:
    """(address, port, pid) of every TCP socket in LISTEN state that one of these processes
    holds: /proc/net/tcp and tcp6 list each socket's local address and inode, and a process's
    descriptors name the inodes of its sockets."""
    inodes = _socket_inodes(pids)
    found = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/net/{table}") as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:      # 0A: TCP_LISTEN
                    continue
                hexaddr, port = local.split(":")
                raw = bytes.fromhex(hexaddr)      # 32-bit words in host (little-endian) order
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                found.add((str(ipaddress.ip_address(raw)), int(port, 16), inodes[inode]))
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_loopback or getattr(ip, "ipv4_mapped", None) is not None and ip.ipv4_mapped.is_loopback


def _tree(*pids) -> list[int]:
    out = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            out += [pid, *(c.pid for c in proc.children(recursive=True))]
        except psutil.NoSuchProcess:
            pass
    return out


TINY = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=120", "cv=holdout", "solvers=[dcd]",
        "solvers.dcd.grid.C=[0.1,1]", "run.progress=false", "run.reference=false"]


@pytest.mark.parametrize("processes", [False, True], ids=["worker-threads", "worker-processes"])
def test_a_local_cluster_listens_on_loopback_only(processes):
    """Scheduler, workers (their HTTP servers included), nannies, dashboard and sandboxes: every
    socket the cluster opens listens on loopback; worker processes talk TLS. The dashboard's
    line says how to reach it over SSH. Sockets the test process held before are not the cluster's."""
    me = os.getpid()
    before = listening(_tree(me))
    cluster = validate(compose(["cluster=local", "cluster.n_workers=2", f"cluster.processes={str(processes).lower()}"])).cluster
    with open_client(cluster) as client:
        assert all(r is not None for r in client.gather(warm_workers(client, ["dcd"], 1)))    # sandboxes up
        opened = listening(_tree(me)) - before
        line = dashboard_line(client, cluster)
        address = client.scheduler.address
    ports = {port for _, port, _ in opened}
    assert opened and all(_loopback(host) for host, _, _ in opened), opened
    dashboard = urlsplit(line.split()[2])
    assert dashboard.hostname == "127.0.0.1" and dashboard.port in ports, (line, opened)
    assert f"ssh -L {dashboard.port}:127.0.0.1:{dashboard.port} " in line
    if processes:
        # scheduler, and per worker its process, its nanny and its HTTP server; TLS between them
        assert address.startswith("tls://127.0.0.1:") and len(ports) >= 1 + 3 * 2, opened
    else:
        assert address.startswith("inproc://") and len(ports) == 1 + 2, opened     # dashboard, 2 worker HTTP servers


def test_without_a_dashboard_the_scheduler_s_http_server_stays_on_loopback():
    """cluster.dashboard_address=null: distributed still starts the scheduler's HTTP server
    (health, metrics), given no address at port 8787 on every interface; here on loopback, and
    the log names no dashboard."""
    me = os.getpid()
    before = listening(_tree(me))
    cluster = validate(compose(["cluster=local", "cluster.n_workers=1", "cluster.dashboard_address=null"])).cluster
    with open_client(cluster) as client:
        opened = listening(_tree(me)) - before
        assert dashboard_line(client, cluster) is None
    assert len(opened) == 2 and all(_loopback(host) for host, _, _ in opened), opened    # scheduler's, worker's


def test_a_plain_tcp_address_on_another_machine_is_warned_about_once(caplog, monkeypatch):
    monkeypatch.setattr(tls, "_WARNED", set())
    caplog.set_level(logging.WARNING, logger="svmbench")

    def warned(address, *more):
        caplog.clear()
        address_security(validate(compose(["cluster=address", f"cluster.address={address}", *more])).cluster)
        return [r.getMessage() for r in caplog.records]

    first = warned("tcp://10.1.2.3:8786")
    assert len(first) == 1 and first[0].startswith("warning: cluster.address=tcp://10.1.2.3:8786: a plain tcp:// "
                                                   "connection is neither authenticated nor encrypted")
    assert "cluster.address=tls://10.1.2.3:8786 with cluster.security.ca_file" in first[0]
    assert warned("tcp://10.1.2.3:8786") == []             # once
    assert warned("tcp://127.0.0.1:8786") == [] and warned("tcp://localhost:8786") == []
    assert warned("tls://10.1.2.3:8786", *(f"cluster.security.{k}={__file__}" for k in tls.FILES)) == []


def _cluster(state, *args):
    env = {**os.environ, "SVMBENCH_CLUSTER_DIR": str(state)}
    # past the start's own limits (pipeline.cluster.START_TIMEOUT_S): it ends what it started
    return subprocess.run([sys.executable, "-m", "pipeline.cluster", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def _cluster_here(*args):
    """`svmbench cluster ARGS` in this process (`pipeline.kept.cluster.main`, which returns the
    exit code): for a refusal decided before anything starts, where a process of its own would
    prove nothing more than `_cluster`'s starts and stops do."""
    from pipeline.kept.cluster import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(args))
    return SimpleNamespace(returncode=code, stderr=err.getvalue())


@pytest.fixture(scope="module")
def kept():
    """A kept cluster of one worker, its state directory created by `cluster start` in a folder
    that other users may traverse (so that the state directory's own mode is what stops them),
    stopped at the end: (state directory, its cluster.json)."""
    parent = Path(tempfile.mkdtemp(prefix="svmbench-access-"))
    parent.chmod(0o755)
    state = parent / "state"
    try:
        up = _cluster(state, "start", "--workers", "1", "--warm", "none")
        assert up.returncode == 0, up.stderr
        yield state, read_state(state)
    finally:
        _cluster(state, "stop")
        shutil.rmtree(parent, ignore_errors=True)


@pytest.mark.slow
def test_the_kept_cluster_takes_only_clients_with_its_credentials(kept):
    """Its state directory is 0700 and its credentials 0600; a client with them is served; a
    plain tcp:// client and one with a certificate of another CA are refused by the scheduler."""
    from distributed import Client
    from distributed.security import Security
    state, info = kept
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert {name: stat.S_IMODE((state / name).stat().st_mode) for name in tls.FILES.values()} == \
        {name: 0o600 for name in tls.FILES.values()}
    address = info["address"]
    assert address.startswith("tls://127.0.0.1:")
    with Client(address, security=kept_security(info, state), timeout="20s") as client:
        assert len(client.scheduler_info()["workers"]) == 1
    for other, security in (("tcp://" + address.split("://")[1], None), (address, Security.temporary())):
        with pytest.raises((OSError, TimeoutError)):
            Client(other, security=security, timeout="2s")


def _nobody_python() -> str:
    """An interpreter user nobody can run (this venv's may live under a home it cannot enter),
    or skip."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("running a probe as user nobody needs root and setpriv")
    for python in (sys.executable, shutil.which("python3", path="/usr/bin:/bin")):
        if python and subprocess.run(_as_nobody(python, "-c", "pass"), capture_output=True).returncode == 0:
            return python
    pytest.skip("no Python interpreter that user nobody can run")


def _as_nobody(*cmd) -> list[str]:
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *cmd]


@functools.cache
def _readable_probe() -> Path:
    """The probe and the package it imports, copied where user nobody can read them: a checkout
    may live in a directory only its owner can enter (a private temporary one, a home)."""
    root = Path(tempfile.mkdtemp(prefix="svmbench-probe-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    repo = PROBE.parents[2]
    shutil.copytree(repo / "pipeline", root / "pipeline", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "tests" / "pipeline").mkdir(parents=True)
    shutil.copy(PROBE, root / "tests" / "pipeline" / PROBE.name)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root / "tests" / "pipeline" / PROBE.name


def _probe(spec: dict) -> dict:
    out = subprocess.run(_as_nobody(_nobody_python(), str(_readable_probe()), json.dumps(spec)), capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
def test_another_user_can_use_neither_the_scheduler_nor_the_launcher(kept):
    """As nobody: the credentials cannot be read, the launcher's socket not connected to, and
    the scheduler ends every connection without a certificate of its CA (plain TCP, TLS without
    a certificate, TLS with one of another CA) before it says a word."""
    state, info = kept
    other = state.parent / "other"          # nobody's own certificate, of another CA
    other.mkdir(mode=0o755)
    files = tls.write(tls.temporary(), other)
    for path in files.values():
        path.chmod(0o644)
    host_port = info["address"].split("://")[1]
    out = _probe({"read": [str(state / name) for name in tls.FILES.values()], "unix": str(state / "launcher.sock"),
                  "plain": host_port, "tls": host_port, "tls_as": [str(files["cert"]), str(files["key"])]})
    assert all(v == "refused: PermissionError" for v in out["read"].values()), out
    assert out["unix"] == "refused: PermissionError", out
    for attempt in ("plain", "tls", "tls_as"):
        assert out[attempt].startswith("refused"), out
    # The scheduler's refusal is the certificate's, not a closed port: TLS needs the client's.
    assert "CERTIFICATE_REQUIRED" in out["tls"].upper() or "CERTIFICATE REQUIRED" in out["tls"].upper(), out
    assert "UNKNOWN_CA" in out["tls_as"].upper() or "UNKNOWN CA" in out["tls_as"].upper(), out


def test_the_launcher_refuses_another_users_connection(kept):
    """With the state directory and the socket opened to others for a moment, nobody reaches
    the launcher: it asks the kernel who connected (SO_PEERCRED) and refuses, before it reads a
    request (which would be run as the launcher's user)."""
    state, info = kept
    sock = state / "launcher.sock"
    state.chmod(0o711)
    sock.chmod(0o666)
    try:
        out = _probe({"unix": str(sock)})
    finally:
        state.chmod(0o700)
        sock.chmod(0o600)
    assert out["unix"] == "ok: no this launcher serves the user who started it alone", out
    log = (state / "cluster.log").read_text()
    assert f"launcher: refused a connection from uid {NOBODY}" in log, log[-2000:]


def test_a_command_does_not_hand_itself_to_another_users_launcher(tmp_path):
    """A launcher's socket that another user placed (in a state directory others can write to):
    the command asks the kernel who listens (SO_PEERCRED), sends it nothing (neither its
    environment nor its streams), and runs by itself."""
    parent = Path(tempfile.mkdtemp(prefix="svmbench-planted-"))
    try:
        parent.chmod(0o777)
        python = _nobody_python()
        spy = subprocess.Popen(_as_nobody(python, str(_readable_probe()), json.dumps({"listen": str(parent / "launcher.sock")})),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
        assert spy.stderr.readline().strip() == "ready"
        cmd = subprocess.run([sys.executable, "-m", "pipeline", "cluster=kept", "nosuchkey=1"], capture_output=True,
                             text=True, timeout=60, env={**os.environ, "SVMBENCH_CLUSTER_DIR": str(parent)})
        assert cmd.returncode == 2 and cmd.stderr.startswith("error: invalid configuration"), cmd.stderr
        out, _ = spy.communicate(timeout=60)
        assert json.loads(out)["listen"] == "received 0 bytes", out
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_the_kept_cluster_and_its_runs_listen_on_loopback_only(kept, store, tmp_path, monkeypatch):
    """Scheduler, its dashboard, worker, nanny, the worker's HTTP server, the launcher, and the
    sandbox a run starts: every listening socket of the kept cluster's processes is on loopback."""
    state, info = kept
    monkeypatch.setenv("SVMBENCH_CLUSTER_DIR", str(state))
    out = run(compose([f"store.root={store}", *TINY, "cluster=kept"]), tmp_path / "run")
    assert out["failed"] == 0 and len(out["results"]) == 2
    pids = _tree(*(int(info[k]) for k in ("scheduler_pid", "worker_pid", "launcher_pid")))
    assert any("pipeline.engine.sandbox" in " ".join(psutil.Process(p).cmdline()) for p in pids)   # the run's sandbox
    opened = listening(pids)
    assert opened and all(_loopback(host) for host, _, _ in opened), opened
    from distributed import Client
    with Client(info["address"], security=kept_security(info, state), timeout="20s") as client:
        dashboard = client.scheduler_info()["services"]["dashboard"]
    assert dashboard in {port for _, port, _ in opened}
    assert len(opened) >= 1 + 1 + 3, opened     # scheduler and its dashboard; worker, nanny, worker HTTP


@pytest.mark.slow
def test_a_state_directory_others_can_write_to_is_refused(store, tmp_path, monkeypatch):
    """`cluster start`, `stop` and a run with cluster=kept refuse, in one line, a state directory
    that another user can write to or that is another user's: its cluster.json could name
    their scheduler, or processes for `stop` to kill. A new one is created 0700 whatever the umask."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("SVMBENCH_CLUSTER_DIR", str(state))
    try:
        for mode, owner, why in ((0o777, os.geteuid(), "its group or other users can write to it (mode 0777)"),
                                 (0o700, NOBODY, f"owned by uid {NOBODY}, not by you")):
            os.chown(state, owner, -1)
            state.chmod(mode)
            up = _cluster_here("start", "--workers", "1", "--warm", "none")
            assert up.returncode == 2 and f"state directory {state} is not yours alone: {why}" in up.stderr, up.stderr
            assert sorted(os.listdir(state)) == []          # nothing started, nothing written
            down = _cluster_here("stop")
            assert down.returncode == 2 and why in down.stderr, down.stderr
            with pytest.raises(ClusterError, match="is not yours alone: " + why.replace("(", r"\(").replace(")", r"\)")):
                run(compose([f"store.root={store}", *TINY, "cluster=kept"]), tmp_path / "run")
    finally:
        os.chown(state, os.geteuid(), -1)
        if (state / "cluster.json").exists():      # started after all: not left running
            state.chmod(0o700)
            _cluster(state, "stop")
    old = os.umask(0)
    try:
        assert tls.private_dir(tmp_path / "new" / "state") is None
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new" / "state").stat().st_mode) == 0o700
