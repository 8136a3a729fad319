"""What every benchmark scenario shares: its options (`Options`), our whole command run and read
back (`run_ours`), the datasets built before any clock starts (`prebuild`) and a kept cluster
(`kept_cluster`).

Every measurement of ours is a whole command a user waits for, run as a subprocess from a cold
start: ``python -m pipeline +experiment=bench_... ...`` (Python start, Hydra, planning, the Dask
cluster, data loading, fits, tables and report).
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import psutil

from ..engine.materialise import materialise_datasets
from ..experiment.config import compose, validate
from ..kept import cluster as kept

# How often `_cpu_by_role` reads the command's processes' CPU times (cheap in our own CPU; a
# task process's last SAMPLE_S before it exits is lost, against minutes of fits).
SAMPLE_S = 0.5


@dataclass(frozen=True)
class Options:
    """What the command line gives every scenario (each reads the fields it needs)."""
    work: Path                          # a temporary folder for our commands' run folders
    reps: int = 2
    extra: tuple[str, ...] = ()         # --set: Hydra overrides for every run of f and hs, ours and anchors
    full: bool = False                  # --full: scenarios u and paired at RCV1's size too
    libsvm_rows: tuple[int, ...] = (5000, 20000)
    against: str = "main"               # --against: the base commit (or checkout) of scenario paired
    dist_rows: int = 2_000_000          # --dist-rows: scenario dist's rows


def prebuild(experiment: str, overrides=()) -> None:
    """Build the experiment's datasets into the store before any run is timed: the first run
    would otherwise carry the build (and a speedup of 1 over 2 workers would count it)."""
    materialise_datasets(validate(compose([f"+experiment={experiment}", *overrides])))


def _role(proc, command_pid: int) -> str:
    """What a process of the command is (cluster=local): `client` (the command itself, which
    also runs the scheduler and the nannies), `task` (a sandbox child: fits, data loading,
    fold extraction) or `worker` (a Dask worker process, which relays to its sandbox)."""
    if proc.pid == command_pid:
        return "client"
    return "task" if "pipeline.engine.sandbox" in " ".join(proc.cmdline()) else "worker"


def _cpu_by_role(proc: subprocess.Popen) -> dict:
    """Run the command to its end, reading the CPU seconds (user + system) of it and each of its
    descendants, summed per role (`_role`); and `imbalance_s`, how many more CPU seconds the
    busiest task process used than the least busy: the work one worker still has when the
    other is done (idle, the tail's length). CPU time is what each process used, whatever else
    loads the machine."""
    root = psutil.Process(proc.pid)
    cpu, roles = {}, {}
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    if p.pid not in roles:
                        roles[p.pid] = _role(p, proc.pid)
                    cpu[p.pid] = sum(p.cpu_times()[:2])
        # Waited on, not slept: the command's wall is read as soon as it ends, not up to
        # SAMPLE_S later (a visible share of a short command's wall).
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=SAMPLE_S)
    totals = {f"cpu_{r}_s": sum(c for pid, c in cpu.items() if roles[pid] == r) for r in ("client", "worker", "task")}
    tasks = [c for pid, c in cpu.items() if roles[pid] == "task"]
    return {**totals, "imbalance_s": max(tasks) - min(tasks) if tasks else float("nan")}


def last_line(log: str, prefix: str) -> str:
    """The last line of run.log that holds prefix ("" if none)."""
    return next((ln for ln in reversed(log.splitlines()) if prefix in ln), "")


def timing_phases(log: str) -> dict[str, float]:
    """The phases of run.log's timing line (`pipeline.run.Timing.line`), name -> seconds:
    "start", "plan", "warm-up wait", "execute", "around execute", "tables", "report", "total"."""
    return {phase.strip(): float(sec)
            for phase, sec in re.findall(r"(?<=[:,;] )([a-z -]+) ([\d.]+) s", last_line(log, "timing: "))}


def run_ours(overrides: list[str], work: Path, tag: str, experiment: str = "bench_sweep", launcher: bool = True) -> dict:
    """One whole `python -m pipeline +experiment=EXPERIMENT` command: its wall time, the
    cluster's start and warm-up (and how much of it planning did not cover), the execute
    phase's wall (which starts once the workers are warm), Dask task count, the client's peak
    RSS and the workers' dataset reads and fold extractions (from run.log), the summed fit and
    task times (from results.parquet), the CPU seconds of its processes by role and the task
    processes' imbalance (`_cpu_by_role`), and the load average (1 min) as it started.
    launcher=False: a kept cluster's command runs by itself (the launcher's child is not the
    command's descendant, so its client CPU is not counted with the launcher)."""
    run_dir = work / tag
    cmd = [sys.executable, "-m", "pipeline", f"+experiment={experiment}", f"hydra.run.dir={run_dir}", *overrides]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "SVMBENCH_LAUNCHER": "1" if launcher else "0"})
    cpu = _cpu_by_role(proc)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    log = (run_dir / "run.log").read_text()
    m = re.search(r"(\d+) tasks: .* ([\d.]+) s wall \((\d+) Dask tasks; client peak RSS (\d+) MB\)", log)
    res = pd.read_parquet(run_dir / "results.parquet")
    loads = re.search(r"workers read (\d+) datasets and extracted (\d+) folds", log)
    # The cluster's start and warm-up, before the execute phase's clock (overlapping planning).
    startup = re.search(r"cluster start and warm-up ([\d.]+) s \(([\d.]+) s of it after planning\)", log)
    # Over the whole command: the client's own peak plus its report's processes' own memory.
    peak = re.search(r"(\d+) MB with the report's processes' own memory", log) or \
        re.search(r"client peak RSS (\d+) MB over the run", log)
    shard_bytes = sum(p.stat().st_size for p in (run_dir / "shards").iterdir())
    return {"timing": timing_phases(log), "client_peak_mb": float(peak.group(1)) if peak else None,
            "shard_bytes": shard_bytes,
            "startup_s": float(startup.group(1)) if startup else None,
            "startup_wait_s": float(startup.group(2)) if startup else None, "wall_s": wall,
            "dataset_reads": int(loads.group(1)), "fold_extractions": int(loads.group(2)),
            "execute_s": float(m.group(2)), "fits": int(m.group(1)), "dask_tasks": int(m.group(3)),
            "client_rss_mb": float(m.group(4)), "fit_s": float(res["fit_time_s"].sum()),
            "task_s": float(res["task_time_s"].sum()), "converged": int((res["status"] == "converged").sum()),
            "test_accuracy": float(res["test_accuracy"].mean()), "load": load, **cpu}


@contextlib.contextmanager
def kept_cluster(warm: list[str], security: str = "tls"):
    """A kept cluster (`pipeline.kept.cluster`) for the commands run inside, warmed for these
    solvers, its state in a directory of its own (SVMBENCH_CLUSTER_DIR, which the commands
    inherit, or a command's own `state`); stopped after. Yields its state directory.
    security: "tls" (its default) or "none" (plain tcp://)."""
    with tempfile.TemporaryDirectory(prefix="svmbench-kept-") as state:
        before = os.environ.get("SVMBENCH_CLUSTER_DIR")
        os.environ["SVMBENCH_CLUSTER_DIR"] = state
        try:
            kept.start(warm=warm, log=lambda line: print(line, flush=True), security=security)
            try:
                yield state
            finally:
                os.environ["SVMBENCH_CLUSTER_DIR"] = state      # a kept cluster opened inside restored another
                kept.stop()
        finally:
            if before is None:
                os.environ.pop("SVMBENCH_CLUSTER_DIR")
            else:
                os.environ["SVMBENCH_CLUSTER_DIR"] = before
