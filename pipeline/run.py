"""`run(cfg)`: one experiment from composed config to report, the function behind
`python -m pipeline` (a Hydra shim) and the one tests call directly.

    validate -> materialise datasets (built on first use) -> plan (pure) -> execute (shards)
    -> results -> report
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .config import store_root, validate
from .execute import error_keys, execute, failure_lines, finished_keys
from .datasets import dataset_names, ensure_dataset
from .plan import build_plan, effective_config
from .report import build_report, status_lines
from .results import write_tables
from .store import dataset_info, read_dataset

log = logging.getLogger("svmbench")


def materialise_datasets(cfg: DictConfig) -> dict:
    """Each dataset entry of the config -> (meta, labels), building a built-in dataset the store
    lacks (or holds with other parameters) and reading its labels (a verified read). The one step of
    planning that touches the store; `run` calls it before `build_plan`."""
    cfg = effective_config(cfg)
    root = store_root(cfg)
    out = {}
    for dkey, ds in cfg.datasets.items():
        builder = ds.builder or dkey
        params = OmegaConf.to_container(ds.params, resolve=True) or {}
        if builder in dataset_names():
            meta = ensure_dataset(root, builder, params)
        else:   # a store entry of the user's (ingested), used as it is
            meta = dataset_info(root, builder)
        out[dkey] = (meta, read_dataset(root, meta["name"]).y)
    return out


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
    plan = build_plan(cfg, materialise_datasets(cfg))
    say(f"plan: {len(plan.fits)} fits and {len(plan.references)} reference solves over "
        f"{len(plan.datasets)} datasets (store: {root})")
    summary = execute(plan, run_dir, cfg, root, log=say)
    say(summary.line())
    keys = list(plan.references) + list(plan.fits)
    others = len(finished_keys(run_dir) - set(keys))
    if others:
        say(f"left out of the tables: {others} shards of other configs in {run_dir / 'shards'} "
            f"(kept: running that config here again resumes them)")
    results, traces = write_tables(run_dir, set(keys))
    # The fits' statuses are in the table; only the reference shards are read again.
    failed = set(results.loc[results["status"] == "error", "key"]) | error_keys(run_dir, plan.references)
    for line in status_lines(results):
        say(line)
    report = build_report(run_dir)
    say(f"results: {run_dir / 'results.parquet'} ({len(results)} rows), traces: {len(traces)} points")
    say(f"report: {report}  ({time.perf_counter() - t0:.1f} s)")
    if failed:
        # Last, so that it closes the log: what failed, and that a rerun retries it.
        again = "retries them" if cfg.run.retry_errors else "keeps them (run.retry_errors=false)"
        say(f"{len(failed)} of {len(keys)} tasks failed (status=error); running again into {run_dir} {again}:")
        for line in failure_lines(run_dir, keys):
            say(line)
    return {"run_dir": str(run_dir), "report": str(report), "summary": summary,
            "results": results, "traces": traces, "failed": len(failed)}
