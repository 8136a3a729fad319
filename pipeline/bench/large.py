"""Large sweeps: the whole command against its own phases (docs/benchmarks/sweep.md).

  g  50,000 tiny fits (conf/experiment/bench_large.yaml: 5,000 C values x 10 folds of dcd on
     toy_blobs, no references): the whole command against its own execute phase (goal <= 2x),
     the dry run (compose and plan), the tables, the shards' bytes a fit (goal <= 200) and the
     client's peak memory (goal <= 600 MB), from the command's timing line in run.log.
  h  scenario g at 1,000,000 fits (5,000 C values x 200 random splits): the plan and the tables
     (goal <= 30 s each) and the client's peak memory.
  t  scenario g with traces on, as a new user runs it (conf/experiment/bench_large_traced.yaml:
     5,000 C values from 0.001 x 10 folds, dcd's defaults): the whole command against its execute
     phase (goal <= 2x), the report's seconds (goal <= 10 s), the client's peak over the whole
     command (goal <= 600 MB), the figure files (goal <= 30) and the interactive page's size.

The reference of each is the command's own execute phase (no library anchor).
"""
from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

from .harness import Options, prebuild, run_ours

# 5,000 C values x 200 random splits of toy_blobs' 2,000 rows: 1,000,000 fits.
OVERRIDES_H = ["cv=repeated", "cv.rounds=200", "cv.test_size=0.2"]


def dry_run_s(overrides: list[str], experiment: str) -> float:
    """A dry run's wall time (`run.dry_run=true`: compose, validate, plan; nothing run or written)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", f"+experiment={experiment}", "run.dry_run=true", *overrides],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def large_row(name: str, overrides: list[str], work: Path, tag: str, experiment: str = "bench_large") -> dict:
    """One whole command of a large experiment beside its own phases (the timing line of its run.log)."""
    dry = dry_run_s(overrides, experiment)
    run = run_ours(overrides, work, tag, experiment=experiment)
    t = run["timing"]
    figures = work / tag / "figures"
    page = work / tag / "interactive.html"
    return {"scenario": name, "fits": run["fits"], "dask_tasks": run["dask_tasks"], "whole_s": run["wall_s"],
            "execute_s": run["execute_s"], "whole_over_execute": run["wall_s"] / run["execute_s"],
            "dry_run_s": dry, "start_s": t.get("start"), "plan_s": t.get("plan"), "warmup_wait_s": t.get("warm-up wait"),
            "around_execute_s": t.get("around execute", 0.0), "tables_s": t.get("tables"), "report_s": t.get("report"),
            "exit_s": run["wall_s"] - t.get("total", math.nan), "bytes_per_fit": run["shard_bytes"] / run["fits"],
            "client_peak_mb": run["client_peak_mb"], "client_execute_peak_mb": run["client_rss_mb"],
            "sum_fit_s": run["fit_s"], "figure_files": len(list(figures.iterdir())) if figures.exists() else 0,
            "page_mb": page.stat().st_size / 2**20 if page.exists() else 0.0, "load": run["load"]}


def scenario_g(opts: Options) -> list[dict]:
    """50,000 tiny fits: the whole command against its execute phase; plan, tables, bytes a fit, memory."""
    prebuild("bench_large")
    return [large_row("g", [], opts.work, f"g{r}") for r in range(opts.reps)]


def scenario_h(opts: Options) -> list[dict]:
    """1,000,000 tiny fits: the plan, the tables and the client's peak memory."""
    prebuild("bench_large")
    return [large_row("h", OVERRIDES_H, opts.work, f"h{r}") for r in range(opts.reps)]


def scenario_t(opts: Options) -> list[dict]:
    """50,000 tiny fits with traces on: whole against execute, the report, its figure files and page."""
    prebuild("bench_large_traced")
    return [large_row("t", [], opts.work, f"t{r}", experiment="bench_large_traced") for r in range(opts.reps)]
