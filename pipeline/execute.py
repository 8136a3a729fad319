"""Execute: run a plan's tasks on Dask (or in-process) and write one shard per finished task.

- ``local``: a LocalCluster of processes with one thread each, as many workers as cores;
  ``address``: an existing scheduler; ``slurm``: dask-jobqueue; ``sequential``: no Dask.
- Tasks are submitted under their plan keys and gathered with ``as_completed``. The client writes
  each result, with the spec that produced it (so shards describe themselves), as
  ``shards/<key>.json`` atomically (temp file + rename), so an interrupted run
  loses nothing already written and a rerun into the same run directory skips finished shards.
- A worker that dies is retried (``run.retries``); a task that still fails becomes an error row.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from .plan import Plan
from .tasks import run_spec


@dataclass
class Summary:
    total: int
    done: int
    skipped: int
    failed: int
    wall_s: float
    dashboard: str | None = None

    def line(self) -> str:
        return (f"{self.total} tasks: {self.done} run, {self.skipped} skipped (already done), "
                f"{self.failed} failed, {self.wall_s:.1f} s wall")


def shard_path(run_dir: Path, key: str) -> Path:
    return Path(run_dir) / "shards" / f"{key}.json"


def write_shard(run_dir: Path, record: dict) -> None:
    """Write one task's record atomically: a reader sees the whole shard or none."""
    path = shard_path(run_dir, record["key"])
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary name starts with "." and does not end in ".json", so neither a rerun
    # (finished_keys) nor the results reader ever takes a half-written file for a shard.
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w") as fh:
            json.dump(record, fh, allow_nan=True, default=_json_default)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        # Invisible to readers, but a run that keeps failing here would pile them up.
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _json_default(obj):
    import numpy as np
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def finished_keys(run_dir: Path) -> set[str]:
    shards = Path(run_dir) / "shards"
    if not shards.is_dir():
        return set()
    return {p.name[:-5] for p in shards.glob("*.json") if not p.name.startswith(".")}


@contextlib.contextmanager
def open_client(cluster):
    """A Dask client for the cluster config (None for sequential)."""
    kind = cluster.kind
    if kind == "sequential":
        yield None
        return
    from distributed import Client
    # Dask's INFO lines (workers starting and stopping, comms closing) are not the run's story.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    if kind == "address":
        with Client(cluster.address, timeout="30s") as client:
            yield client
        return
    if kind == "slurm":
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError:
            raise RuntimeError("cluster=slurm needs dask-jobqueue: pip install 'svmbench[slurm]'") from None
        with SLURMCluster(**dict(cluster.jobqueue)) as slurm:
            slurm.scale(jobs=int(cluster.jobs))
            with Client(slurm) as client:
                yield client
        return
    from distributed import LocalCluster
    n = cluster.n_workers or os.cpu_count() or 1
    with LocalCluster(n_workers=n, threads_per_worker=int(cluster.threads_per_worker), processes=True,
                      memory_limit=cluster.memory_limit, dashboard_address=cluster.dashboard_address,
                      silence_logs=logging.ERROR) as local:
        with Client(local) as client:
            yield client


def _progress(total: int, enabled: bool):
    from tqdm.auto import tqdm
    # disable=None: no bar when stderr is not a terminal (CI logs), as tqdm does by default.
    return tqdm(total=total, disable=None if enabled and total else True, unit="task", dynamic_ncols=True,
                file=sys.stderr, smoothing=0.1)


def execute(plan: Plan, run_dir: Path, cfg, root: str, log=print) -> Summary:
    """Run every task of the plan whose shard is missing; write shards as tasks finish."""
    t0 = time.perf_counter()
    specs = {**plan.references, **plan.fits}
    have = finished_keys(run_dir)
    errors = error_keys(run_dir, have & specs.keys()) if cfg.run.retry_errors else set()
    if errors:
        # A fixed environment must be able to finish the run; write_shard replaces atomically.
        log(f"retrying {len(errors)} tasks that ended in error (run.retry_errors=false keeps them)")
        have -= errors
    todo = [spec for key, spec in specs.items() if key not in have]
    skipped = len(specs) - len(todo)
    if skipped:
        log(f"resuming: {skipped} of {len(specs)} tasks already have shards in {run_dir}/shards; skipping them")
    failed = 0
    dashboard = None
    cluster = cfg.cluster if todo else OmegaConf.create({"kind": "sequential"})
    with open_client(cluster) as client:
        bar = _progress(len(todo), bool(cfg.run.progress))
        if client is None:
            for spec in todo:
                record = run_spec(spec, root)
                failed += record["status"] == "error"
                write_shard(run_dir, {**record, "spec": spec})
                bar.update()
        else:
            from distributed import as_completed
            dashboard = client.dashboard_link
            if dashboard:
                log(f"dask dashboard: {dashboard}")
            futures = {}
            for spec in todo:
                fut = client.submit(run_spec, spec, root, key=spec["key"], retries=int(cfg.run.retries), pure=False)
                futures[fut] = spec
            for fut in as_completed(futures):
                spec = futures[fut]
                try:
                    record = fut.result()
                except Exception as exc:  # worker lost beyond retries, or unpicklable result
                    record = {"key": spec["key"], "kind": spec["kind"], "status": "error",
                              "error": f"{type(exc).__name__}: {exc} (the task did not return; "
                                       f"retried {cfg.run.retries} times)"}
                failed += record["status"] == "error"
                write_shard(run_dir, {**record, "spec": spec})
                fut.release()
                bar.update()
        bar.close()
    return Summary(total=len(specs), done=len(todo), skipped=skipped, failed=failed,
                   wall_s=time.perf_counter() - t0, dashboard=dashboard)


def _errors(run_dir: Path, keys):
    """(key, error text) of each task among keys whose shard says status=error."""
    for key in keys:
        p = shard_path(run_dir, key)
        if p.exists():
            rec = json.loads(p.read_text())
            if rec.get("status") == "error":
                yield key, rec.get("error")


def error_keys(run_dir: Path, keys) -> set[str]:
    """The keys among keys whose shard records a failed task."""
    return {key for key, _ in _errors(run_dir, sorted(keys))}


def failure_lines(run_dir: Path, keys, limit: int = 10) -> list[str]:
    """One line per failed task (its key and the error's first line), for the closing summary."""
    out = []
    for key, error in _errors(run_dir, keys):
        first = ((error or "").strip().splitlines() or ["?"])[0]
        out.append(f"  {key}: {first}")
        if len(out) >= limit:
            break
    return out

