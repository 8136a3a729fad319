"""Synthetic run dirs: the shards of a large C sweep of tiny fits, written as columns without
running a fit, so that the tables and the report are measured at sizes nobody waits the fits for.

Each record is what scenario (g)'s dcd fits write (`python -m pipeline +experiment=bench_large`):
its spec (the dataset, the problem and grid point of its C, its fold and seed, its C path), its
results (iterations, times, objectives, accuracies: a value of its own per fit), the solver's
info (five counts of its own per fit), where it ran (env_*), how it started (warm from the fit
before it on its C path); with `traced`, a trace of one point and its extra quantity, as
scenario (t)'s fits record. C takes `n_c` log-spaced values from 0.01 to 100 and the folds are
as many as the fits need (scenario (h): 5,000 C values x 200 splits is 1,000,000 fits). Shards
hold `per_shard` records each, as a task's.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..results.shards import FORMAT_KEY, FORMAT_VERSION, JSON_KEY

DATA = {"entry": "toy_blobs", "name": "toy_blobs", "fingerprint": "b18aa525212875364e2ad4730ebff050a0d04e801888aa0679b79bf405785b2a",
        "scale": "none", "max_rows": None, "rows_seed": 720615502, "positive": None,
        "cv": {"kind": "repeated", "rounds": 200, "test_size": 0.2, "shuffle": True, "seed": 0}}
ENV = {"env_host": "vm", "env_python": "3.11.7", "env_numpy": "2.4.6", "env_scipy": "1.17.1", "env_numba": "0.68.1",
       "env_sklearn": "1.9.1", "env_svmbench": "0.1.0"}
JSON_COLUMNS = ["error", "trace", "trace_extra", "info", "warm_from", "start_from", "spec.kind", "spec.data",
                "spec.fold", "spec.solver_entry", "spec.solver", "spec.solver_version", "spec.family", "spec.problem",
                "spec.budget", "spec.solver_params", "spec.task", "spec.grid_point", "spec.trace", "spec.warm_start",
                "spec.seed", "spec.path", "spec.reference_key"]


def _same(text: str, n: int) -> pa.Array:
    """One text for every record, dictionary-encoded as a shard stores what its records share."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([text]))


def _texts(texts: list[str], codes: np.ndarray) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(texts))


def _hex(values: np.ndarray) -> np.ndarray:
    return np.array([f"{v:016x}" for v in values.tolist()])


def shard(first: int, n: int, n_c: int, rng: np.random.Generator, traced: bool = False) -> pa.Table:
    """Records first .. first + n - 1 of the sweep (fit i: C index i % n_c, fold i // n_c)."""
    i = np.arange(first, first + n)
    c_index, fold = i % n_c, i // n_c
    Cs = np.geomspace(0.01, 100, n_c)
    keys = _hex(rng.integers(0, 2**62, size=n, dtype=np.int64))
    used = np.unique(c_index)
    problem = [json.dumps({"C": float(Cs[c]), "loss": "squared_hinge", "intercept": "regularized", "kernel": "linear",
                           "intercept_scaling": 1.0}) for c in used]
    point = [json.dumps({"C": float(Cs[c])}) for c in used]
    pos = np.searchsorted(used, c_index)
    folds = np.unique(fold)
    paths = _hex(rng.integers(0, 2**63, size=len(folds), dtype=np.int64))
    n_iter = rng.integers(2, 40, size=n)
    primal = rng.random(n) * 10
    gap = rng.random(n) * 1e-3
    # The fit before it on its C path (its previous C, same fold), the first of a path cold.
    prev = np.concatenate([[None], keys[:-1]]).astype(object)
    first_of_path = c_index == 0
    prev[first_of_path] = None
    warm_from = [json.dumps(None if k is None else f"fit-{k}") for k in prev.tolist()]
    start_from = [json.dumps(None if k is None else f"C={Cs[c - 1]:g}: its alpha scaled by {Cs[c] / Cs[c - 1]:.4g}")
                  for k, c in zip(prev.tolist(), c_index.tolist())]
    info = [json.dumps({"n_active_end": int(a), "n_sv": int(b), "n_updates": int(u), "gram_passes": 0, "gram_rows": 0,
                        "solver": "dcd", "solver_version": "5"})
            for a, b, u in zip(rng.integers(400, 600, n).tolist(), rng.integers(300, 560, n).tolist(),
                               rng.integers(1000, 9000, n).tolist())]
    if traced:
        times = rng.random(n) * 1e-3
        trace = [json.dumps([[int(k), float(t), float(p), float(p - g), float(g)]])
                 for k, t, p, g in zip(n_iter.tolist(), times.tolist(), primal.tolist(), gap.tolist())]
        extra = [json.dumps([{"n_active": int(a)}]) for a in rng.integers(400, 600, n).tolist()]
    else:
        trace = extra = None
    cols = {
        "key": pa.array(np.char.add("fit-", keys)), "kind": _same("fit", n), "status": _same("converged", n),
        "error": _same("null", n), "trace": pa.array(trace) if traced else _same("[]", n),
        "n_iter": pa.array(n_iter), "fit_time_s": pa.array(rng.random(n) * 1e-3),
        "primal_objective": pa.array(primal), "dual_objective": pa.array(primal - gap), "duality_gap": pa.array(gap),
        "kkt_violation": pa.array(rng.random(n) * 1e-2), "train_accuracy": pa.array(0.9 + rng.random(n) * 0.05),
        "test_accuracy": pa.array(0.9 + rng.random(n) * 0.05), "n_sv": pa.array(rng.integers(300, 560, n)),
        "n_train": pa.array(np.full(n, 1600)), "n_test": pa.array(np.full(n, 400)), "n_features": pa.array(np.full(n, 2)),
        "C": pa.array(Cs[c_index]), "trace_extra": pa.array(extra) if traced else _same("[]", n), "info": pa.array(info),
        "task_time_s": pa.array(np.full(n, 30.0)), "task_cpu_s": pa.array(np.full(n, 10.0)),
        **{k: _same(v, n) for k, v in ENV.items()},
        "env_cpus": pa.array(np.full(n, 2)), "env_blas_threads": pa.array(np.full(n, 1)),
        "env_numba_threads": pa.array(np.full(n, 1)), "env_peak_rss_mb": pa.array(np.full(n, 376.9)),
        "warm_from": pa.array(warm_from), "start": pa.array(np.where(first_of_path, "cold", "warm")),
        "start_from": pa.array(start_from),
        "spec.kind": _same('"fit"', n), "spec.data": _same(json.dumps(DATA), n),
        "spec.fold": _texts([json.dumps(int(f)) for f in folds], np.searchsorted(folds, fold)),
        "spec.solver_entry": _same('"dcd"', n), "spec.solver": _same('"dcd"', n), "spec.solver_version": _same('"5"', n),
        "spec.family": _same('"dual_cd"', n), "spec.problem": _texts(problem, pos),
        "spec.budget": _same(json.dumps({"tol": 0.1, "max_iter": 1000, "time_limit_s": 600.0}), n),
        "spec.solver_params": _same(json.dumps({"shrinking": True, "stop": "pg"}), n), "spec.task": _same("{}", n),
        "spec.grid_point": _texts(point, pos), "spec.trace": _same(json.dumps({"enabled": traced, "per_decade": 10}), n),
        "spec.warm_start": _same("true", n), "spec.seed": pa.array([str(s) for s in rng.integers(0, 2**31, n).tolist()]),
        "spec.path": _texts([json.dumps(f"path-{p}") for p in paths.tolist()], np.searchsorted(folds, fold)),
        "spec.reference_key": _same("null", n),
    }
    meta = {FORMAT_KEY: FORMAT_VERSION, JSON_KEY: json.dumps(JSON_COLUMNS).encode()}
    return pa.table(cols).replace_schema_metadata(meta)


def write_run(run_dir: Path, n_fits: int, n_c: int = 5000, per_shard: int = 10_000, seed: int = 0,
              traced: bool = False) -> Path:
    """A run dir of n_fits synthetic fits' shards (`shard`); returns it."""
    shards = Path(run_dir) / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for first in range(0, n_fits, per_shard):
        table = shard(first, min(per_shard, n_fits - first), n_c, rng, traced)
        pq.write_table(table, shards / f"{table.column('key')[0].as_py()}.parquet", compression="zstd")
    return Path(run_dir)


def main(argv=None) -> None:
    """``python -m pipeline.bench.synthetic RUN_DIR FITS [--traced]``: a synthetic run dir, to
    time its tables (`results.tables.write_tables`) and its report (``python -m pipeline.report``)
    alone at sizes nobody waits the fits for."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m pipeline.bench.synthetic", description=main.__doc__)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("fits", type=int)
    parser.add_argument("--traced", action="store_true", help="a trace point per fit, as scenario (t)'s")
    args = parser.parse_args(argv)
    if (args.run_dir / "shards").exists():
        parser.error(f"{args.run_dir / 'shards'} exists: give a new folder")
    write_run(args.run_dir, args.fits, traced=args.traced)
    print(f"{args.run_dir}: {args.fits} synthetic fits' shards")


if __name__ == "__main__":
    main()
