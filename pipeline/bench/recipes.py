"""README's recipes as a user runs them, and what the pipeline adds to them (docs/benchmarks/fairness.md).

  r1  README recipe 1 on the user's own file (a 4,000 x 60 make_classification file ingested as
      `bench_recipe1`; dcd, LIBLINEAR and Pegasos, 6 C of the hinge, 5 folds, standardised), with
      its timing fits (run.timing=auto) and without (false), in turn: the whole command's ratio
      (goal <= 1.5x), the timing fits' share of the run's task CPU seconds (goal <= 25%; every
      record's `task_cpu_s`, from the shards) and the rows and ratios of its time-to-target table.

The recipe is the README's command line, not an experiment file: what a user types is what is
timed. Its reference is the same command with run.timing=false.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .harness import Options, timing_phases


# README recipe 1 as a user runs it on their own file (docs/benchmarks/fairness.md): a 4,000 x 60
# make_classification file ingested into the store, dcd, LIBLINEAR and Pegasos on 6 C values of the
# hinge, 5 folds, standardised.
RECIPE1_NAME = "bench_recipe1"
RECIPE1 = [f"datasets=[{RECIPE1_NAME}]", "solvers=[dcd,liblinear,pegasos]", f"datasets.{RECIPE1_NAME}.scale=standard",
           "grid.C=[0.001,0.01,0.1,1,10,100]", "grid.loss=[hinge]", "cv.folds=5"]


def ingest_recipe1(work: Path) -> None:
    """The recipe's file, made as the README's recipe makes it (make_classification, 4,000 rows,
    60 features, seed 0) and ingested with the data command, unless the store has the entry."""
    from ..data.store import default_store_root, exists
    if exists(default_store_root(), RECIPE1_NAME):
        return
    from sklearn.datasets import dump_svmlight_file, make_classification
    X, y = make_classification(n_samples=4000, n_features=60, random_state=0)
    path = work / "recipe1.svm"
    dump_svmlight_file(X, y, str(path))
    subprocess.run([sys.executable, "-m", "pipeline.data", "ingest", str(path), "--name", RECIPE1_NAME],
                   check=True, stdout=subprocess.DEVNULL)


def phase_seconds(run_dir: Path) -> dict:
    """CPU and wall seconds of the run's tasks by phase (sweep, timing, references), summed from
    its shards (each record's `task_cpu_s` and `task_time_s`)."""
    out = {f"{kind}_{p}": 0.0 for p in ("sweep", "timing", "references") for kind in ("cpu", "task")}
    for path in (run_dir / "shards").glob("*.parquet"):
        shard = pd.read_parquet(path)
        timed = shard["spec.timing"].notna() if "spec.timing" in shard.columns else pd.Series(False, index=shard.index)
        phase = np.where(shard["kind"] == "reference", "references", np.where(timed, "timing", "sweep"))
        for p in ("sweep", "timing", "references"):
            out[f"cpu_{p}"] += float(shard.loc[phase == p, "task_cpu_s"].sum())
            out[f"task_{p}"] += float(shard.loc[phase == p, "task_time_s"].sum())
    return out


def comparisons(run_dir: Path) -> dict:
    """What the report's time-to-target table drew: rows with a time, rows censored (`not reached
    within B`), rows not reached, rows it could not tell, and ratios."""
    from ..report.build import load
    from ..report.tables import time_to_target
    data = load(run_dir)
    try:
        table = time_to_target(data)
    finally:
        data.engine.close()
    t = table["t_target_s"].map(lambda v: "time" if isinstance(v, float) and math.isfinite(v) else
                                "censored" if str(v).startswith("not reached within") else
                                "not reached" if v == "not reached" else "unknown")
    return {"rows_time": int((t == "time").sum()), "rows_censored": int((t == "censored").sum()),
            "rows_not_reached": int((t == "not reached").sum()), "rows_unknown": int((t == "unknown").sum()),
            "ratios": int(table["ratio"].notna().sum())}


def recipe1_row(work: Path, tag: str, timing: str) -> dict:
    """One whole recipe-1 command (run.timing=`timing`): its wall, its timing line's execute and
    report, its tasks' CPU seconds by phase and the timing fits' share of them, and what its
    report's time-to-target table drew."""
    run_dir = work / tag
    cmd = [sys.executable, "-m", "pipeline", *RECIPE1, f"run.timing={timing}", f"hydra.run.dir={run_dir}"]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    phases = timing_phases((run_dir / "run.log").read_text())
    spent = phase_seconds(run_dir)
    cpu = sum(v for k, v in spent.items() if k.startswith("cpu_"))
    task = sum(v for k, v in spent.items() if k.startswith("task_"))
    return {"timing": timing, "load": load, "whole_s": wall, "execute_s": phases.get("execute"),
            "report_s": phases.get("report"), **spent,
            "timing_share_cpu": spent["cpu_timing"] / cpu if cpu else math.nan,
            "timing_share_task": spent["task_timing"] / task if task else math.nan, **comparisons(run_dir)}


def scenario_r1(opts: Options) -> list[dict]:
    """README recipe 1 with its timing fits against run.timing=false: their CPU share, the ratio.

    In turn, `reps` times: the whole command's ratio (goal <= 1.5x), the timing fits' share of
    the run's task CPU seconds (goal <= 25%), and the comparisons its report drew."""
    ingest_recipe1(opts.work)
    rows = []
    for r in range(opts.reps):
        on, off = recipe1_row(opts.work, f"r1-on-{r}", "auto"), recipe1_row(opts.work, f"r1-off-{r}", "false")
        rows += [{"rep": r, **on, "whole_over_off": on["whole_s"] / off["whole_s"]}, {"rep": r, **off}]
    return rows
