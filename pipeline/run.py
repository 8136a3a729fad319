"""`run(cfg)`: one experiment from composed config to report, the function behind
`python -m pipeline` (a Hydra shim) and the one tests call directly.

    validate -> plan (datasets built on first use) -> execute (shards) -> results -> report
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .config import store_root, validate
from .execute import execute, failure_lines
from .plan import build_plan
from .report import build_report, status_lines
from .results import write_tables

log = logging.getLogger("svmbench")


def run(cfg: DictConfig, run_dir: str | Path, echo=None) -> dict:
    """Run the experiment into run_dir (resuming if it has shards). Returns a summary dict."""
    t0 = time.perf_counter()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)

    def say(msg):
        # Under `python -m pipeline`, Hydra's logging prints this and writes run.log; callers
        # without Hydra (tests, notebooks) may pass echo=print.
        log.info(msg)
        if echo is not None:
            echo(msg)

    cfg = validate(cfg)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    root = store_root(cfg)
    plan = build_plan(cfg)
    say(f"plan: {len(plan.fits)} fits and {len(plan.references)} reference solves over "
        f"{len(plan.datasets)} datasets (store: {root})")
    summary = execute(plan, run_dir, cfg, root, log=say)
    say(summary.line())
    if summary.failed:
        say("failures:")
        for line in failure_lines(run_dir, list(plan.references) + list(plan.fits)):
            say(line)
    results, traces = write_tables(run_dir)
    for line in status_lines(results):
        say(line)
    report = build_report(run_dir)
    say(f"results: {run_dir / 'results.parquet'} ({len(results)} rows), traces: {len(traces)} points")
    say(f"report: {report}  ({time.perf_counter() - t0:.1f} s)")
    return {"run_dir": str(run_dir), "report": str(report), "summary": summary,
            "results": results, "traces": traces}
