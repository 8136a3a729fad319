"""What the engine adds around fits, `make run`'s report, and a command's fixed cost
(docs/benchmarks/sweep.md).

  c  2000 short fits (8 C x 250 random splits of 26k rows, folds sized so a fit takes tens of
     milliseconds, not a few), cold: execute phase against the summed fit times over the
     workers: what the engine adds around a short fit.
  d  10,000 tiny fits: scheduling overhead and the client's peak memory against 1,000.
  m  `make run` (the default experiment: 525 tasks, 21 problems): its report and the whole
     command against its execute phase, the report's CPU seconds beside its wall seconds.
  k  the fixed cost of a command, what a user waits for beyond the fits themselves
     (conf/experiment/bench_fixed.yaml: 10 fits of milliseconds): the whole command on a fresh
     local cluster and on kept ones (`svmbench cluster start`, cluster=kept), with TLS (the
     default) and plain tcp:// (`--security none`) in turn, there by its launcher and by itself
     (SVMBENCH_LAUNCHER=0), split by its timing line's phases.

c and d are overrides of conf/experiment/bench_sweep.yaml; their reference is the fits' own
time, summed from results.parquet (no library anchor).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ..engine.materialise import materialise_datasets
from ..experiment.config import compose, validate
from .harness import Options, kept_cluster, last_line, prebuild, run_ours, timing_phases

# 20,800 training rows, so that dcd's fits are tens of milliseconds, the short fits a sweep
# is made of; dcd got faster twice and the folds grew with it (The sweep benchmark, "How to
# read it" and "What is left").
OVERRIDES_C = ["datasets.rcv1_like.params.n_samples=26000", "cv=repeated", "cv.rounds=250", "cv.test_size=0.2",
               "run.warm_start=false"]
GRID_C = "solvers.dcd.grid.C=[0.1,0.2,0.3,0.5,0.7,1,1.5,2]"
OVERRIDES_D = ["datasets.rcv1_like.params.n_samples=2000", "datasets.rcv1_like.max_rows=200", "cv=repeated",
               "cv.test_size=0.5", "solvers.dcd.grid.C=[0.1,0.3,1,3,10,30,100,300,1000,3000]",
               "run.warm_start=false"]


def overhead_row(name: str, run: dict, workers: int = 2) -> dict:
    """One command's execute phase against its fits' and tasks' summed times over the workers."""
    ideal = run["fit_s"] / workers
    return {"scenario": name, "fits": run["fits"], "dask_tasks": run["dask_tasks"], "wall_s": run["wall_s"],
            "startup_s": run["startup_s"], "startup_wait_s": run["startup_wait_s"], "execute_s": run["execute_s"],
            "sum_fit_s": run["fit_s"], "sum_task_s": run["task_s"],
            "mean_fit_ms": 1000 * run["fit_s"] / run["fits"],
            "execute_over_fits_per_worker": run["execute_s"] / ideal,
            "scheduling_overhead": 1 - (run["task_s"] / workers) / run["execute_s"],
            "client_rss_mb": run["client_rss_mb"], "dataset_reads": run["dataset_reads"],
            "fold_extractions": run["fold_extractions"],
            # CPU seconds over the whole command, by process role (`harness._cpu_by_role`): where
            # the execute phase's overhead goes on cores the fits share.
            **{k: run[k] for k in ("cpu_client_s", "cpu_worker_s", "cpu_task_s", "load")}}


def scenario_c(opts: Options) -> list[dict]:
    """2,000 fits of tens of milliseconds, cold: the execute phase against the fits' time per worker."""
    prebuild("bench_sweep", OVERRIDES_C)
    return [overhead_row("c", run_ours(OVERRIDES_C + [GRID_C], opts.work, f"c{r}")) for r in range(opts.reps)]


def scenario_d(opts: Options) -> list[dict]:
    """1,000 and 10,000 tiny fits: scheduling overhead and the client's peak memory."""
    prebuild("bench_sweep", OVERRIDES_D)
    rows = []
    for r in range(opts.reps):
        for rounds in (100, 1000):
            run = run_ours(OVERRIDES_D + [f"cv.rounds={rounds}"], opts.work, f"d{rounds}_{r}")
            rows.append(overhead_row(f"d{rounds * 10}", run))
    return rows


def scenario_m(opts: Options) -> list[dict]:
    """`make run`: its report and the whole command against its execute phase (goal: <= 1x, <= 2x).

    The default experiment (no +experiment), once first for numba's cache and the store (not
    counted), then `reps` times, each a fresh local cluster, waited for directly. The report's
    goal is its execute phase (and 3 s): `report_over_execute`; the command's is twice it:
    `wall_over_execute`. `report_cpu_s`: the report's processes' CPU seconds (the timing line's),
    what it costs whatever the load."""
    import re
    materialise_datasets(validate(compose([])))
    rows = []
    for r in range(-1, opts.reps):
        run_dir = opts.work / f"m{r}"
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pipeline", f"hydra.run.dir={run_dir}"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - t0
        if r < 0:
            continue
        log = (run_dir / "run.log").read_text()
        phases = timing_phases(log)
        cpu = re.search(r"report [\d.]+ s \(CPU ([\d.]+) s in its processes\)", last_line(log, "timing: "))
        rows.append({"scenario": "m", "rep": r, "load": load, "wall_s": wall,
                     **{f"{k.replace(' ', '_')}_s": v for k, v in phases.items() if k != "total"},
                     "report_cpu_s": float(cpu.group(1)) if cpu else None, "exit_s": wall - phases["total"],
                     "report_over_execute": phases["report"] / phases["execute"],
                     "wall_over_execute": wall / phases["execute"]})
    return rows


def fixed_cost_row(cluster: str, work: Path, tag: str, launcher: bool = True, state: str | None = None,
                   security: str | None = None) -> dict:
    """One whole `python -m pipeline +experiment=bench_fixed cluster=CLUSTER` command, waited
    for directly (no CPU sampling: its wall is seconds), and its timing line's phases; `exit_s`
    is the whole command's wall less the line's total (the cluster's closing, the interpreter's
    exit). The command's start before `run` is the line's `start` (from the process's start).
    launcher=False: a kept cluster's command runs by itself, not in its launcher's child; state:
    the kept cluster's state directory (default: $SVMBENCH_CLUSTER_DIR), security its kind (a column)."""
    run_dir = work / tag
    cmd = [sys.executable, "-m", "pipeline", "+experiment=bench_fixed", f"hydra.run.dir={run_dir}", f"cluster={cluster}"]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "SVMBENCH_LAUNCHER": "1" if launcher else "0",
                        **({"SVMBENCH_CLUSTER_DIR": state} if state else {})})
    wall = time.perf_counter() - t0
    log = (run_dir / "run.log").read_text()
    phases = timing_phases(log)
    by = "launcher" if "by the kept cluster's launcher" in last_line(log, "timing: ") else "itself"
    return {"cluster": cluster, "security": security or "", "run_by": by, "load": load, "wall_s": wall,
            **{f"{k.replace(' ', '_')}_s": v for k, v in phases.items()
               if k in ("start", "plan", "warm-up wait", "execute", "tables", "report")},
            "exit_s": wall - phases["total"]}


def scenario_k(opts: Options) -> list[dict]:
    """10 fits of milliseconds: a command's fixed cost, fresh and kept cluster, TLS and plain tcp://.

    bench_fixed's 10 fits, `reps` times on a fresh local cluster, then `reps` times on two kept
    clusters started (and warmed for dcd) before them and stopped after, one with TLS (the
    default) and one plain tcp:// (`cluster start --security none`), each rep run on both in
    turn, by the launcher and by itself: what TLS costs a command, beside the same command
    without."""
    prebuild("bench_fixed")
    rows = [{"rep": r, **fixed_cost_row("local", opts.work, f"k-local-{r}")} for r in range(opts.reps)]
    with kept_cluster(["dcd"]) as with_tls, kept_cluster(["dcd"], security="none") as plain:
        kinds = (("tls", with_tls), ("none", plain))
        for security, state in kinds:    # the sandboxes' first task: its datasets read
            fixed_cost_row("kept", opts.work, f"k-kept-first-{security}", state=state)
        for r in range(opts.reps):
            for security, state in kinds:
                for launcher in (True, False):
                    tag = f"k-kept-{security}-{'launcher' if launcher else 'self'}-{r}"
                    rows.append({"rep": r, **fixed_cost_row("kept", opts.work, tag, launcher, state, security)})
    return rows
