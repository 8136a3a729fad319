"""Who may use a cluster the pipeline starts: TLS credentials made for one cluster, the private
directories that hold them, and the warnings where a connection is not protected.

A Dask client can run any Python function on a scheduler's workers (`Client.submit`,
`Client.run`), so whoever reaches a scheduler runs code as the user who started it, for as long
as it runs. The clusters svmbench starts are therefore their user's alone:

- ``slurm``: the scheduler runs in the command's process on the login node and listens on its
  network for the compute nodes. It and its workers use TLS with credentials made for this
  cluster (`temporary`: a key and a self-signed certificate that is also the cluster's CA),
  written mode 0600 in a 0700 directory on the file system the jobs read (`credentials_dir`,
  `write`) and deleted when the cluster closes.
- the kept cluster (`svmbench cluster start`): the same, in its state directory (0700).
- ``local``: on loopback; with worker processes (``cluster.processes=true``), whose scheduler
  listens on a loopback port any local user could reach, TLS with in-memory credentials too.

Distributed's TLS checks the peer's certificate at both ends (``CERT_REQUIRED`` for the server as
for the client), so a client without the cluster's key, or with a certificate of another CA, is
refused by the scheduler and the workers. ``cluster.security`` (ca_file, cert, key) gives your
own files instead; ``cluster.security=none`` turns TLS off (`NONE`), with a warning naming the risk.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

NONE = "none"     # cluster.security=none: no TLS, an explicit choice
# The credential files in a credentials directory: one key and one certificate serve every role
# (scheduler, workers, client); the certificate is its own CA.
FILES = {"ca_file": "ca.pem", "cert": "cert.pem", "key": "key.pem"}
log = logging.getLogger("svmbench")


def mode(cluster) -> str:
    """How cluster.security asks a cluster to be protected: "files" (its ca_file, cert and key),
    "none" (no TLS, asked for), or "temporary" (the default: credentials made per cluster where
    the pipeline starts it; none for an address it is given)."""
    conf = cluster.security
    if conf == NONE:
        return NONE
    return "files" if conf and conf.get("ca_file") else "temporary"


def temporary():
    """distributed's Security with credentials made now, in memory, for every role, encryption
    required. As distributed's `Security.temporary`: one key, and a self-signed certificate that
    is the cluster's CA too (whoever holds the key is one of this user's processes), but an ECDSA
    P-256 key instead of a 2048-bit RSA one, whose prime search takes a random and, on a loaded
    machine, long time (docs/benchmarks/sweep.md), where a SLURM or local cluster makes a key
    each command; its handshakes are cheaper too."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    from distributed.security import Security
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "svmbench cluster")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))      # clocks of other nodes, a little behind
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    pem_cert = cert.public_bytes(serialization.Encoding.PEM).decode()
    return Security(tls_ca_file=pem_cert, tls_client_cert=pem_cert, tls_client_key=pem_key,
                    tls_scheduler_cert=pem_cert, tls_scheduler_key=pem_key, tls_worker_cert=pem_cert,
                    tls_worker_key=pem_key, require_encryption=True)


def from_files(files: dict) -> "Security":
    """Security for every role (scheduler, workers, client) from PEM files ca_file, cert and
    key, encryption required: a component started with it refuses plain tcp:// peers."""
    from distributed.security import Security
    ca, cert, key = (str(files[k]) for k in ("ca_file", "cert", "key"))
    return Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, tls_scheduler_cert=cert,
                    tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)


def write(security, directory: Path) -> dict[str, Path]:
    """The in-memory credentials of `security` (from `temporary`) as files in `directory` (which
    must be private: `private_dir`), each mode 0600, created anew (O_EXCL: never one another
    user placed there): {ca_file, cert, key: path}."""
    contents = {"ca_file": security.tls_ca_file, "cert": security.tls_client_cert, "key": security.tls_client_key}
    files = {}
    for key, name in FILES.items():
        path = Path(directory) / name
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(contents[key])
        files[key] = path
    return files


def files_in(directory: Path) -> dict[str, Path]:
    """The credential files `write` wrote in directory."""
    return {key: Path(directory) / name for key, name in FILES.items()}


def not_private(path: Path) -> str | None:
    """Why `path` (a directory) is not this user's alone, or None: another owner, or writable by
    its group or others (they could place a socket, a state file or credentials of their own)."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"its group or other users can write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def private_dir(path: Path) -> str | None:
    """Make `path` a directory for this user alone (0700: created so, or an existing one of
    ours that only we can write tightened to it); None, or why it cannot be (`not_private`),
    in which case nothing was changed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    why = not_private(path)
    if why is None and stat.S_IMODE(os.stat(path).st_mode) != 0o700:
        os.chmod(path, 0o700)      # ours, and nobody else could write to it: read or listed before
    return why


@contextlib.contextmanager
def credentials_dir(parent: Path):
    """A new directory of this user's alone (0700, a random name: `tempfile.mkdtemp`) under
    `parent`, with the credentials of a new `temporary` Security in it (0600 each), removed with
    its files when the block ends. Yields (the Security of those files, the directory)."""
    parent = Path(parent).absolute()
    parent.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix=".svmbench-tls-", dir=parent))
    try:
        files = write(temporary(), directory)
        yield from_files(files), directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


_WARNED: set = set()


def warn_once(key, line: str) -> None:
    """Log `line` (a warning, on the console and in run.log) once per process for `key`: a
    multirun's jobs share the cluster and need not repeat it."""
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning(line)


def is_loopback(host: str | None) -> bool:
    """Whether host (an address's host part) names this machine's loopback interface only."""
    import ipaddress
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def warn_plain_address(address: str) -> None:
    """The one warning for cluster=address to a scheduler on another machine over plain tcp://:
    the connection is neither authenticated nor encrypted."""
    from urllib.parse import urlsplit
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme != "tcp" or is_loopback(parts.hostname):
        return
    warn_once(("address", address),
              f"warning: cluster.address={address}: a plain tcp:// connection is neither authenticated nor "
              f"encrypted: anyone who can reach this scheduler can run code as the user who started its workers, "
              f"and read the tasks and results on the way. Start the scheduler and workers with TLS "
              f"(`dask scheduler --protocol tls --tls-ca-file ... --tls-cert ... --tls-key ...`) and use "
              f"cluster.address=tls://{parts.netloc} with cluster.security.ca_file, .cert and .key (docs: "
              f"Operation, TLS)")


def warn_none(kind: str) -> None:
    """The warning of cluster.security=none, naming what it exposes for this kind of cluster."""
    where = {"slurm": "its scheduler listens on the login node's network for the jobs",
             "local": "its scheduler listens on a loopback port every user of this machine can reach"}.get(
                 kind, "its scheduler accepts any connection")
    warn_once(("none", kind),
              f"warning: cluster.security=none: cluster={kind} runs without TLS: {where}, and anyone who "
              f"connects can run code as you for as long as it runs; drop cluster.security=none for TLS with "
              f"credentials made for this cluster alone")
