"""Scenario ``dist`` of `python -m pipeline.bench` (and `python -m pipeline.bench.distributed` with
its own knobs): one problem larger than a worker, trained by
CoCoA+ across Dask workers (cocoa, pipeline/engine/distributed.py), beside single-process dcd and
Spark MLlib's LinearSVC on ``local[K]``, to the same relative suboptimality against one
certified f*, in one run (docs/benchmarks/distributed.md reads its rows).

- Data: rcv1_like at RCV1's shape (47,236 features, 76 nonzeros a row) and ``rows`` rows, built
  into the store once; the hinge, no intercept, one C.
- f*: single-process dcd at a projected-gradient spread of 1e-5, certified by its duality gap.
- dcd: a cold fit traced at every due point, its clock the process's wall clock from the arrays
  to a model (the Problem's checks inside), trace points paused: the time to target is read off
  its trace, as the report reads a timing fit.
- cocoa: a `dask scheduler` and K `dask worker` processes on 127.0.0.1, each with
  ``--nthreads 1 --memory-limit`` (`MEMORY_LIMIT`, below the data's CSR), the fit the pipeline's own
  (`distributed.run_distributed` on the spec `build_plan` makes), traced at every due round;
  its clock the driver's wall clock. Each worker's peak resident memory against its partition.
- Spark MLlib LinearSVC, ``local[K]``: the same rows read from the store's Parquet file,
  labels 0/1, ``standardization=False``, ``fitIntercept=False``, ``regParam = 1/(C n)``, so that
  its objective, mean hinge + regParam/2 ||w||^2, is P/(C n): the same problem, its minimiser
  ours. Its training summary's objective history gives the first iteration within the target;
  a cold fit capped there is timed alone around ``fit`` on the cached DataFrame (the JVM's start
  and the data's load and caching outside), its P recomputed here from its coefficients.
- K scaling: cocoa's rounds to the target and bytes a round at K = 2, 4, 8 workers (time is
  the machine's cores', not the algorithm's, past 2), and a time-per-round model at a stated
  bandwidth (`round_model`).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

SHAPE = {"n_features": 47236, "mean_nnz": 76.0, "margin": 0.1}
# Each worker's limit: below the whole CSR at 2,000,000 rows (1.84 GB), so that no worker could
# hold the data, and above what one holding half of it needs (its block, 0.92 GB, x 1.1 and its
# process's own ~450 MB of Python, Dask, pyarrow and numba).
MEMORY_LIMIT = "1700MB"
TARGET = 1e-3


def dataset(root: str, rows: int) -> str:
    """The store entry of rcv1_like at `rows` rows (built once)."""
    from ..data.datasets import ensure_dataset
    return ensure_dataset(root, "rcv1_like", {"n_samples": rows, **SHAPE})["name"]


def first_within(trace, f_star: float, target: float = TARGET):
    """(iteration, seconds) of the first trace point within target of f*, or (None, inf)."""
    for k, t, P, *_ in trace:
        if (P - f_star) / abs(f_star) <= target:
            return k, t
    return None, math.inf


def run_dcd(root: str, name: str, C: float, loss: str = "hinge"):
    """f* (dcd at tol 1e-5, its gap) and a traced cold dcd fit's time to target (wall clock)."""
    import solvers
    from ..data.store import read_dataset

    ds = read_dataset(root, name)
    y = np.where(ds.y == ds.y.max(), 1.0, -1.0)
    solvers.fit(solvers.Problem(ds.X[:1000], y[:1000], loss=loss), "dcd")      # compiled before any clock
    ref = solvers.fit(solvers.Problem(ds.X, y, C=C, loss=loss), "dcd",
                      budget=solvers.Budget(tol=1e-5, max_iter=100_000))
    rec = solvers.Recorder(per_decade=10, max_overhead=None)
    t0 = time.perf_counter()
    problem = solvers.Problem(ds.X, y, C=C, loss=loss)
    setup = time.perf_counter() - t0
    fit = solvers.fit(problem, "dcd", budget=solvers.Budget(tol=1e-4, max_iter=10_000), recorder=rec)
    k, t = first_within(fit.trace, ref.primal)
    return ds, y, ref, {"solver": "dcd (1 process)", "iterations_to_target": k, "t_target_s": t + setup,
                        "clock": "wall, this process", "f_star_rel_gap": ref.gap / ref.primal,
                        "csr_mb": (ds.X.data.nbytes + ds.X.indices.nbytes + ds.X.indptr.nbytes) / 2**20}


@contextmanager
def dask_cluster(work: Path, workers: int, memory_limit: str | None):
    """A `dask scheduler` and `workers` one-thread `dask worker` processes on 127.0.0.1."""
    import json
    from distributed import Client

    dask = str(Path(sys.executable).parent / "dask")
    sched = work / f"scheduler-{workers}-{time.monotonic_ns()}.json"      # a fresh file: never a stopped one's
    limit = ["--memory-limit", memory_limit] if memory_limit else []
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
                               "--scheduler-file", str(sched)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    try:
        while not (sched.exists() and sched.stat().st_size):
            time.sleep(0.1)
        # A worker pauses (runs no task) once its memory passes Dask's pause fraction, 0.8 of its
        # limit by default: a block held in a worker is unmanaged memory no spilling frees, so the
        # workers pause only where they would be terminated (0.95).
        env = {**os.environ, "DASK_DISTRIBUTED__WORKER__MEMORY__PAUSE": "0.95"}
        procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(sched), "--nthreads", "1",
                                       "--nworkers", str(workers), "--host", "127.0.0.1", "--no-dashboard", *limit],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                      env=env))
        with Client(json.loads(sched.read_text())["address"], timeout="60s") as client:
            client.wait_for_workers(workers, timeout=300)
            yield client
    finally:
        import signal
        for p in reversed(procs):
            with_group = getattr(os, "killpg", None)
            try:
                with_group(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)


def cocoa_spec(root: str, rows: int, C: float, K: int, max_rounds: int, tol: float = 1e-3, loss: str = "hinge"):
    """The spec the pipeline plans for cocoa on this problem (cv=none), traced at every due round,
    stopped by its gap at the target (which bounds its distance to f*) or at max_rounds."""
    from ..engine.materialise import materialise_datasets
    from ..experiment.config import compose, validate
    from ..experiment.plan import build_plan

    exp = validate(compose([f"store.root={root}", "datasets=[rcv1_like]", "solvers=[cocoa]", "cv=none",
                            *[f"++datasets.rcv1_like.params.{k}={v}" for k, v in {"n_samples": rows, **SHAPE}.items()],
                            f"solvers.cocoa.grid.C=[{C}]", f"solvers.cocoa.params.loss={loss}",
                            "solvers.cocoa.params.intercept=none", f"solvers.cocoa.params.tol={tol}",
                            f"solvers.cocoa.params.partitions={K}", "solvers.cocoa.params.check_every=10",
                            f"solvers.cocoa.params.max_iter={max_rounds}",
                            "run.reference=false"]))
    spec = next(iter(build_plan(exp, materialise_datasets(exp)).fits.values()))
    return spec._replace(trace={**spec.trace, "enabled": True, "max_overhead": None})


def run_cocoa(root: str, rows: int, C: float, K: int, f_star: float, work: Path, memory_limit: str | None,
              max_rounds: int = 1000, loss: str = "hinge") -> dict:
    from ..engine.distributed import run_distributed

    spec = cocoa_spec(root, rows, C, K, max_rounds, loss=loss)
    with dask_cluster(work, K, memory_limit) as client:
        record = run_distributed(spec, root, client, work, threading.Event())
    if record["status"] == "error":
        raise RuntimeError(record["error"])
    info = record["info"]
    k, t = first_within(record["trace"], f_star)
    part_mb = max(info["partition_bytes"]) / 2**20
    return {"solver": f"cocoa ({K} workers)", "iterations_to_target": k, "t_target_s": t,
            "clock": "wall, the driver", "rounds": info["rounds"], "bytes_per_round": info["bytes_per_round"],
            "worker_peak_mb": info["worker_peak_rss_mb"], "partition_mb": part_mb,
            "memory_goal_mb": 1.5 * part_mb + 300, "worker_s": info["worker_s"],
            "status": record["status"], "memory_limit": memory_limit}


def run_spark(root: str, name: str, C: float, K: int, X, y, positive, f_star: float, max_iter: int = 1000) -> dict:
    """MLlib LinearSVC on local[K] to the target (module docstring). Its objective per iteration
    (the training summary's history, mean hinge + regParam/2 ||w||^2 = P/(C n)) finds the first
    iteration k within the target of f*; a cold fit capped at k is then timed alone around `fit`
    (Spark's own clock is not read), and its P recomputed here from its coefficients."""
    from pyspark.ml.classification import LinearSVC
    from pyspark.ml.linalg import SparseVector
    from pyspark.sql import SparkSession

    from ..data.store import dataset_path

    d, n = X.shape[1], X.shape[0]
    # Loopback only: the JVM binds to this, not to the machine's first interface.
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (SparkSession.builder.master(f"local[{K}]").appName("svmbench-dist")
             .config("spark.driver.memory", "10g").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    top = float(positive)

    def svc(cap):
        return LinearSVC(maxIter=cap, regParam=1.0 / (C * n), fitIntercept=False, standardization=False, tol=1e-12)

    def primal(model):
        w = model.coefficients.toArray()
        return 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - y * (X @ w)).sum())

    try:
        rows = (spark.read.parquet(str(Path(dataset_path(root, name)) / "data.parquet")).rdd
                .map(lambda r: (1.0 if r.y == top else 0.0, SparseVector(d, r.indices, r.values))))
        df = spark.createDataFrame(rows, ["label", "features"]).cache()
        assert df.count() == n
        t0 = time.perf_counter()
        long = svc(max_iter).fit(df)
        long_s = time.perf_counter() - t0
        summary = long.summary() if callable(long.summary) else long.summary     # a method in pyspark 4
        history = np.asarray(summary.objectiveHistory) * (C * n)      # P at each iteration
        P_long = primal(long)
        hit = np.flatnonzero((history - f_star) / abs(f_star) <= TARGET)
        row = {"solver": f"Spark MLlib LinearSVC (local[{K}])", "clock": "wall, around fit",
               "spark_iterations": len(history), "spark_long_s": long_s,
               "spark_final_rel_subopt": (P_long - f_star) / abs(f_star),
               "spark_history_vs_P": history[-1] / P_long - 1}
        if not hit.size:
            return {**row, "iterations_to_target": None, "t_target_s": math.inf}
        k = int(hit[0]) + 1
        t0 = time.perf_counter()
        capped = svc(k).fit(df)
        seconds = time.perf_counter() - t0
        return {**row, "iterations_to_target": k, "t_target_s": seconds,
                "rel_subopt_at_target": (primal(capped) - f_star) / abs(f_star)}
    finally:
        spark.stop()


def round_model(rows: list[dict], n_features: int, bandwidths=(1e9, 10e9), latency_s: float = 1e-3) -> list[dict]:
    """Projected seconds a round and to the target at K workers: each worker's compute (the K = 2
    run's seconds a round, its rows split K ways instead of 2) plus the driver's link moving
    K x 2 x (d + 1) x 8 bytes at `bandwidth` bits/s, plus a round trip of `latency_s`."""
    base = next(r for r in rows if r["K"] == 2)
    out = []
    for r in rows:
        compute = base["worker_s_per_round"] * 2 / r["K"]
        for bw in bandwidths:
            comm = r["bytes_per_round"] * 8 / bw
            per_round = compute + comm + latency_s
            out.append({"K": r["K"], "rounds_to_target": r["rounds_to_target"], "bytes_per_round": r["bytes_per_round"],
                        "bandwidth_gbit": bw / 1e9, "compute_s": compute, "network_s": comm,
                        "round_s": per_round, "to_target_s": per_round * (r["rounds_to_target"] or math.nan)})
    return out


def scaling(root: str, rows: int, C: float, f_star: float, work: Path, Ks=(2, 4, 8), max_rounds: int = 500,
            loss: str = "hinge") -> list[dict]:
    """Rounds to the target and bytes a round of cocoa at each K (workers without a memory limit),
    each fit capped at max_rounds (rounds_to_target None: not reached there)."""
    out = []
    for K in Ks:
        r = run_cocoa(root, rows, C, K, f_star, work, None, max_rounds, loss)
        out.append({"K": K, "rounds_to_target": r["iterations_to_target"], "bytes_per_round": r["bytes_per_round"],
                    "worker_s_per_round": max(r["worker_s"].values()) / max(r["rounds"], 1)})
    return out


def scenario_dist(opts) -> list[dict]:
    """one problem across workers: cocoa on 2 workers of 1.7 GB beside dcd and Spark MLlib local[2]"""
    return dist_rows(opts.work, rows=opts.dist_rows)


def dist_rows(work: Path, rows: int = 2_000_000, C: float = 1.0, K: int = 2, memory_limit: str = MEMORY_LIMIT,
              scaling_rows: int = 200_000, spark: bool = True, loss: str = "hinge") -> list[dict]:
    """The scenario's rows (module docstring): dcd, cocoa and Spark to the target, the ratios, and
    the K scaling table with its time model. Spark's LinearSVC takes the hinge alone: with
    loss=squared_hinge it is left out."""
    spark = spark and loss == "hinge"
    from ..data.store import default_store_root
    root = str(default_store_root())
    name = dataset(root, rows)
    ds, y, ref, dcd_row = run_dcd(root, name, C, loss)
    f_star = ref.primal
    out = [dict(dcd_row, load=os.getloadavg()[0])]
    print(out[-1], flush=True)
    out.append(dict(run_cocoa(root, rows, C, K, f_star, work, memory_limit, loss=loss), load=os.getloadavg()[0]))
    print(out[-1], flush=True)
    if spark:
        out.append(dict(run_spark(root, name, C, K, ds.X, y, ds.y.max(), f_star), load=os.getloadavg()[0]))
        print(out[-1], flush=True)
    del ds
    for r in out[1:]:
        r["ratio_vs_dcd"] = r["t_target_s"] / out[0]["t_target_s"]
    if spark:
        out[1]["ratio_vs_spark"] = out[1]["t_target_s"] / out[2]["t_target_s"]
    if not scaling_rows:       # --scaling-rows 0: no K scaling
        return out
    small = dataset(root, scaling_rows)
    _, _, ref_small, _ = run_dcd(root, small, C, loss)
    table = scaling(root, scaling_rows, C, ref_small.primal, work, loss=loss)
    for r in round_model(table, SHAPE["n_features"]):
        out.append({"solver": "model", **r, "load": os.getloadavg()[0]})
    return out


def main(argv=None) -> int:
    import argparse
    import pandas as pd
    ap = argparse.ArgumentParser(prog="python -m pipeline.bench.distributed", description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--scaling-rows", type=int, default=200_000, help="rows of the K scaling runs (0: none)")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default=MEMORY_LIMIT)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--loss", default="hinge", choices=("hinge", "squared_hinge"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="svmbench-dist-") as tmp:
        rows = dist_rows(Path(tmp), args.rows, args.C, args.workers, args.memory_limit, args.scaling_rows,
                             not args.no_spark, args.loss)
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
