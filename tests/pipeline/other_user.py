"""A probe that a test runs as another user (`setpriv --reuid=nobody`): what that user gets from
a cluster's files and sockets. The standard library only, and pipeline/kept/handoff.py, which
imports nothing else (that user may not be able to run the venv's interpreter, nor import its
packages); one JSON line on stdout, each attempt's outcome "ok ..." or "refused: ...".

    python other_user.py '{"read": [paths], "unix": path, "plain": "host:port",
                           "tls": "host:port", "tls_as": ["cert.pem", "key.pem"], "listen": path}'

- read: each file's first byte;
- unix: connect to a launcher's socket and send a well-formed request, its reply line;
- plain: a Dask handshake over plain TCP: a scheduler that takes it writes its handshake first;
- tls: the same over TLS with no client certificate, and tls_as: with this certificate and key
  (of another CA). A scheduler that refuses the client's certificate ends the connection with
  a TLS alert where one that takes it would have written its handshake;
- listen: serve a Unix socket there (a launcher's socket another user placed), accept one
  connection and count the bytes it sends before it closes ("ready" on stderr once listening).
"""
import json
import os
import socket
import ssl
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from pipeline.kept.handoff import _read_line as read_line  # noqa: E402 - the repository's, by path

TIMEOUT_S = 10


def _read(path):
    try:
        with open(path, "rb") as fh:
            fh.read(1)
        return "ok: read"
    except OSError as exc:
        return f"refused: {type(exc).__name__}"


def _unix(path):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(TIMEOUT_S)
    try:
        conn.connect(path)
        body = json.dumps({"argv": ["cluster=kept", "run.dry_run=true"], "argv0": "pipeline", "cwd": "/",
                           "env": {}, "path": [], "started": 0, "fds": [], "fingerprint": "x"}).encode()
        try:
            conn.sendall(struct.pack("!I", len(body)) + body)
        except OSError:
            pass      # a server that answered and closed before reading: its answer is still to be read
        reply = read_line(conn)
        return f"ok: {reply}" if reply else "refused: closed"
    except OSError as exc:
        return f"refused: {type(exc).__name__}"
    finally:
        conn.close()


def _handshake(address, context=None):
    """Whether the server writes anything (a Dask server writes its handshake first) before it
    ends the connection or the timeout passes."""
    host, port = address.rsplit(":", 1)
    try:
        raw = socket.create_connection((host, int(port)), timeout=TIMEOUT_S)
    except OSError as exc:
        return f"refused: {type(exc).__name__}"
    try:
        conn = context.wrap_socket(raw) if context is not None else raw
        if context is None:
            conn.sendall(struct.pack("<Q", 0))     # what a plain client would send: a frame count
        data = conn.recv(64)
        return f"ok: {len(data)} bytes" if data else "refused: closed"
    except (OSError, ssl.SSLError) as exc:
        return f"refused: {type(exc).__name__}: {exc}"
    finally:
        raw.close()


def _listen(path):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    server.settimeout(TIMEOUT_S * 3)
    print("ready", file=sys.stderr, flush=True)
    try:
        conn, _ = server.accept()
    except OSError:
        return "no connection"
    conn.settimeout(TIMEOUT_S)
    got = 0
    try:
        while chunk := conn.recv(65536):
            got += len(chunk)
    except OSError:
        pass
    return f"received {got} bytes"


def main(spec):
    out = {}
    if spec.get("listen"):
        out["listen"] = _listen(spec["listen"])
    if spec.get("read"):
        out["read"] = {path: _read(path) for path in spec["read"]}
    if spec.get("unix"):
        out["unix"] = _unix(spec["unix"])
    if spec.get("plain"):
        out["plain"] = _handshake(spec["plain"])
    if spec.get("tls"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        out["tls"] = _handshake(spec["tls"], context)
        if spec.get("tls_as"):
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            context.load_cert_chain(*spec["tls_as"])
            out["tls_as"] = _handshake(spec["tls"], context)
    print(json.dumps(out))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
