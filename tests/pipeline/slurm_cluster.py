"""A real single-node SLURM for tests: `munged`, `slurmctld` and `slurmd` (Debian's `munge` and
`slurm-wlm`) started in a temporary directory of their own, and stopped by pid at the end.

The generated slurm.conf describes one node on loopback with this machine's CPUs and memory,
without cgroups (`proctrack/linuxproc`, `task/none`: a container has no cgroup delegation), its
own state, spool, log and pid files, free ports, and a munge socket of its own (`AuthInfo`), so
it touches nothing of a SLURM or munge the machine may run. Client commands (sbatch, squeue,
scancel) find it through `SLURM_CONF`, which `Slurm.env` sets.

slurmd starts jobs as their submitting user, which only root may do: without root, or without
the binaries, `unavailable()` says why and the tests that need SLURM are skipped with it.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .processes import running

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo")
NODE = "node1"
PARTITION = "debug"


def unavailable() -> str | None:
    """Why a SLURM cannot be started here, or None."""
    missing = [name for name in DAEMONS if not _which(name)]
    if missing:
        return (f"SLURM tests need Debian's slurm-wlm and munge packages (missing: {', '.join(missing)}; "
                f"`apt-get install -y slurm-wlm munge`, as .ci/run does)")
    if os.geteuid() != 0:
        return "SLURM tests need root: slurmd starts each job as its submitting user"
    return None


def _which(name: str) -> str | None:
    # The daemons live in /usr/sbin, often not on a user's PATH.
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mb() -> int:
    with open("/proc/meminfo") as fh:
        kb = next(int(line.split()[1]) for line in fh if line.startswith("MemTotal:"))
    return kb // 1024


@dataclass
class Slurm:
    """A running SLURM: its directory, config file, and the environment its commands need."""
    root: Path
    conf: Path
    cpus: int
    memory_mb: int
    partition: str = PARTITION

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def command(self, *args: str, check: bool = True) -> str:
        out = subprocess.run([_which(args[0]), *args[1:]], env=self.env, capture_output=True, text=True,
                             timeout=30)
        if check and out.returncode:
            raise RuntimeError(f"{' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def jobs(self) -> dict[int, str]:
        """Jobs in the queue: {job id: state} (PENDING, RUNNING, COMPLETING, ...)."""
        rows = (line.split() for line in self.command("squeue", "-h", "-o", "%i %T").splitlines())
        return {int(job): state for job, state in rows}

    def job(self, job_id: int) -> dict[str, str]:
        """scontrol's fields of a job (kept MinJobAge after it ends): JobState, Reason, TimeLimit, ..."""
        text = self.command("scontrol", "-o", "show", "job", str(job_id))
        return dict(field.split("=", 1) for field in text.split() if "=" in field)

    def cancel_all(self, timeout: float = 20.0) -> None:
        """Cancel every job and wait until the queue is empty."""
        self.command("scancel", "--full", f"--partition={self.partition}", check=False)
        end = time.monotonic() + timeout
        while self.jobs() and time.monotonic() < end:
            time.sleep(0.2)

    def idle(self) -> bool:
        try:
            return self.command("sinfo", "-h", "-n", NODE, "-o", "%t", check=False).strip() == "idle"
        except (OSError, subprocess.TimeoutExpired):
            return False


def write_config(root: Path, munge_socket: Path) -> Slurm:
    """slurm.conf for one node on loopback with this machine's CPUs and memory."""
    cpus, memory = os.cpu_count() or 1, _memory_mb()
    for sub in ("state", f"spool/slurmd.{NODE}", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    conf = root / "slurm.conf"
    host = socket.gethostname()
    conf.write_text("\n".join([
        "ClusterName=svmbenchtest",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool/slurmd.%n",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd.%n.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd.log",
        # No cgroups: a container has no delegated cgroup tree; processes are tracked by parentage.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        # Cores are the consumable resource: a job of `cores: 1` leaves the others to the next job.
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/builtin",
        "MpiDefault=none",
        "ReturnToService=2",
        # A job cancelled or past its walltime gets SIGTERM, then SIGKILL KillWait s later.
        "KillWait=2",
        # Ended jobs stay visible to `scontrol show job` for the tests' whole session.
        "MinJobAge=3600",
        "InactiveLimit=0",
        f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} RealMemory={memory} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
        "",
    ]))
    return Slurm(root, conf, cpus, memory)


@contextlib.contextmanager
def slurm(root: Path, timeout: float = 60.0):
    """munged, slurmctld and slurmd running in root (a fresh directory) for the block; the jobs
    left are cancelled and the daemons stopped (SIGTERM, then SIGKILL, by process group) at its end."""
    munge = root / "munge"
    munge.mkdir(parents=True)
    key, sock = munge / "munge.key", munge / "munge.socket"
    subprocess.run([_which("mungekey"), "--create", f"--keyfile={key}"], check=True, capture_output=True)
    key.chmod(0o400)
    cluster = write_config(root, sock)
    # --force: munged refuses a socket in a directory it cannot prove private to it otherwise
    # (the temporary directory's parents are world-writable, with the sticky bit).
    munged = [_which("munged"), "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
              f"--pid-file={munge}/munged.pid", f"--log-file={root}/log/munged.log", f"--seed-file={munge}/seed"]
    daemons = [[_which("slurmctld"), "-D", "-i", "-f", str(cluster.conf)],
               [_which("slurmd"), "-D", "-N", NODE, "-f", str(cluster.conf)]]
    with running(munged, env=cluster.env, ready=sock.exists, timeout=timeout):
        with running(*daemons, env=cluster.env, ready=cluster.idle, timeout=timeout):
            try:
                yield cluster
            finally:
                # Jobs first: their processes (slurmstepd and the job's own) are not in the
                # daemons' process groups.
                cluster.cancel_all()
