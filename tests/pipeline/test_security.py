"""Who a cluster's files and sockets belong to, at their edges: a state directory that its group
can write to is not private (mode 0770 as surely as 0777; 0750 and 0755 are), and the launcher's
SO_PEERCRED reads the peer's uid, never its gid (a client whose uid differs from its gid: gid 0
is not root). The end-to-end checks with a second user are in test_cluster_access.py."""
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

import pytest

from pipeline.engine import security
from pipeline.kept.handoff import peer

NOBODY = 65534


@pytest.mark.parametrize("mode, why", [
    (0o700, None), (0o750, None), (0o755, None), (0o500, None),
    (0o770, "its group or other users can write to it (mode 0770)"),
    (0o720, "its group or other users can write to it (mode 0720)"),
    (0o702, "its group or other users can write to it (mode 0702)"),
    (0o777, "its group or other users can write to it (mode 0777)")])
def test_a_directory_its_group_or_others_can_write_is_not_private(tmp_path, mode, why):
    d = tmp_path / "state"
    d.mkdir()
    os.chmod(d, mode)
    assert security.not_private(d) == why
    # private_dir tightens one that only its owner can write to 0700, and leaves any other alone.
    assert security.private_dir(d) == why
    assert stat.S_IMODE(os.stat(d).st_mode) == (0o700 if why is None else mode)


def test_a_file_is_not_a_private_directory(tmp_path):
    (tmp_path / "f").write_text("")
    assert security.not_private(tmp_path / "f") == "not a directory"


def _python_for(uid: int, gid: int) -> str:
    """An interpreter that uid:gid can run (this venv's may live under a home it cannot enter), or skip."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("running a client as another uid and gid needs root and setpriv")
    for python in (sys.executable, shutil.which("python3", path="/usr/bin:/bin")):
        if python and subprocess.run(_as(uid, gid, python, "-c", "pass"), capture_output=True).returncode == 0:
            return python
    pytest.skip(f"no Python interpreter that uid {uid} can run")


def _as(uid: int, gid: int, *cmd) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *cmd]


@pytest.mark.parametrize("uid, gid", [(NOBODY, 0), (0, NOBODY)])
def test_the_launchers_peer_check_reads_the_uid_not_the_gid(uid, gid):
    """A client connects as uid:gid with uid != gid (nobody in root's group; root in nobody's):
    `peer` gives its pid and its uid, so nobody with gid 0 is never taken for root."""
    python = _python_for(uid, gid)
    # The client must reach the socket: pytest's own temporary directories are 0700.
    where = tempfile.mkdtemp(prefix="svmbench-peer-")
    os.chmod(where, 0o711)
    path = os.path.join(where, "s")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o777)
    server.listen(1)
    server.settimeout(30)
    client = subprocess.Popen(_as(uid, gid, python, "-c",
                                  "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                                  "s.recv(1)", path))
    try:
        conn, _ = server.accept()
        with conn:
            assert peer(conn) == (client.pid, uid)
            conn.sendall(b"x")
        assert client.wait(timeout=30) == 0
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        server.close()
        shutil.rmtree(where)
