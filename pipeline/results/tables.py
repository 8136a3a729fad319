"""Results: shards -> ``results.parquet`` and ``traces.parquet``, and the CV summary.

Shards describe themselves (each record holds its spec), so the tables are rebuilt from the shard
folder alone: one file per Dask task, one record per line (DESIGN.md, "Shards"). One row per fit in
results; the certified f* of each fit's problem is joined from its reference shard with the
certificate it actually reached (`f_star_status`, and `f_star_rel_gap` = gap / |f*|: f* lies in
[P_ref - gap, P_ref]), and the relative suboptimality (P - f*) / |f*| is computed here, never finer
than that certainty: below f_star_rel_gap it is floored to it and `rel_suboptimality_floored` says
so.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from .shards import ShardError, read_shard, read_statuses  # noqa: F401 - ShardError: its readers' error

RESULT_COLUMNS = [
    "key", "dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version", "family",
    "loss", "kernel", "intercept", "C", "lambda_pegasos", "lambda_svmmaj", "gamma", "degree", "coef0",
    "fold", "seed", "status", "error", "n_iter", "fit_time_s", "primal_objective", "dual_objective",
    "duality_gap", "kkt_violation", "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test",
    "f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap", "rel_suboptimality",
    "rel_suboptimality_floored", "warm_from", "task_time_s",
]
TRACE_COLUMNS = ["key", "iteration", "time_s", "primal", "dual", "gap"]


def shard_files(run_dir: Path) -> list[Path]:
    """The run dir's shard files in the order they were written: by generation (the number in
    ``<first key>.<generation>.parquet``; none is 0), then by name. A name starting with "." is a
    temporary file of a write in progress or cut short, never a shard. Shards of one
    generation never share a key, so this order decides which record of a key is the newest."""
    shards = Path(run_dir) / "shards"
    if not shards.is_dir():
        return []
    files = [p for p in shards.iterdir() if not p.name.startswith(".") and p.suffix in SHARD_SUFFIXES]
    return sorted(files, key=lambda p: (shard_generation(p), p.name))


# ".parquet": a task's records as columns (`results.shards`); ".jsonl": a task's records, one per
# line, and ".json": one record (the earlier layouts, still read).
SHARD_SUFFIXES = (".parquet", ".jsonl", ".json")


def shard_generation(path: Path) -> int:
    parts = path.name.split(".")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0


def iter_records(run_dir: Path):
    """Every record of every shard, oldest first (`shard_files`): a key met again later (a
    retried error) replaces what came before it."""
    for p in shard_files(run_dir):
        yield from read_shard(p)


def iter_statuses(run_dir: Path):
    """(key, status, error) of every record, oldest first, as `iter_records` orders them: from a
    Parquet shard only those three columns are read."""
    for p in shard_files(run_dir):
        yield from read_statuses(p)


def read_shards(run_dir: Path, keys=None) -> list[dict]:
    """The newest record of each key in the run dir's shards, by key; with keys, only those (a
    run's tables hold only its own plan's tasks, while shards of other configs stay on disk for
    when those are run again)."""
    latest = {}
    for rec in iter_records(run_dir):
        if keys is None or rec["key"] in keys:
            latest[rec["key"]] = rec
    return [latest[k] for k in sorted(latest)]


def _fit_row(rec: dict, refs: dict) -> dict:
    spec = rec["spec"]
    prob = spec["problem"]
    data = spec["data"]
    C = rec.get("C", prob.get("C", math.nan))
    n_train = rec.get("n_train")
    row = {
        "key": rec["key"], "dataset": data["entry"], "dataset_name": data["name"],
        "fingerprint": data["fingerprint"], "solver": spec["solver"], "solver_entry": spec["solver_entry"],
        "solver_version": spec["solver_version"], "family": spec["family"], "loss": prob["loss"],
        "kernel": prob.get("kernel", "linear"), "intercept": prob["intercept"], "C": C,
        "lambda_pegasos": 1.0 / (C * n_train) if n_train and C and not math.isinf(C) else math.nan,
        "lambda_svmmaj": 1.0 / (2.0 * C) if C and not math.isinf(C) else math.nan,
        "gamma": prob.get("gamma"), "degree": prob.get("degree"), "coef0": prob.get("coef0"),
        "fold": spec["fold"], "seed": spec["seed"], "status": rec["status"], "error": rec.get("error"),
    }
    if "class_weight" in prob:      # a column only where a sweep weighs classes: other tables as before
        cw = prob["class_weight"]
        row["class_weight"] = cw if isinstance(cw, str) else json.dumps(cw, sort_keys=True)
    row["warm_from"] = rec.get("warm_from")
    for col in ("n_iter", "fit_time_s", "primal_objective", "dual_objective", "duality_gap", "kkt_violation",
                "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test", "task_time_s"):
        row[col] = rec.get(col)
    if rec.get("n_heldout"):
        # cv.kind=kfold_test: the fold's model also scored on the held-out test rows.
        row["heldout_accuracy"], row["n_heldout"] = rec["heldout_accuracy"], rec["n_heldout"]
        if rec.get("confusion_heldout") is not None:
            row["confusion_heldout"] = json.dumps(rec["confusion_heldout"])
    if rec.get("n_classes"):
        # Multiclass: the strategy, and the test confusion matrix as JSON (rows: true class).
        row["n_classes"] = rec["n_classes"]
        row["confusion_test"] = json.dumps(rec.get("confusion_test"))
    row.update(_f_star_columns(row["primal_objective"], refs.get(spec.get("reference_key"))))
    # The grid point and the solver's own parameters, as param_* columns (strings for mixed types);
    # a problem given by lambda keeps it (a fixed one too): its C = 1/(lambda n) moves with each
    # fold's n, so lambda is what names the point (report/common.py `point_C`).
    given = {k: prob[k] for k in ("lambda", "lambda_convention") if k in prob}
    for k, v in {**given, **spec.get("solver_params", {}), **spec.get("task", {}), **spec.get("grid_point", {})}.items():
        if k not in row:   # C, loss, kernel... already have their own columns
            row[f"param_{k}"] = v
    for k, v in rec.items():
        if k.startswith("env_"):
            row[k] = v
    row.update(info_columns(rec.get("info") or {}))
    return row


def _f_star_columns(P, ref: dict | None) -> dict:
    """f*, its certificate (status and relative gap) and the suboptimality it can resolve."""
    nan = math.nan
    # No f* at all: the reference failed, or its sandbox was killed at its hard limit (timeout).
    if ref is None or ref.get("status") == "error" or "f_star" not in ref:
        return {"f_star": nan, "f_star_gap": nan, "f_star_solver": None, "f_star_status": None,
                "f_star_rel_gap": nan, "rel_suboptimality": nan, "rel_suboptimality_floored": None}
    fs, gap = ref["f_star"], ref["f_star_gap"]
    rel_gap = max(gap, 0.0) / abs(fs) if fs else nan
    raw = (P - fs) / abs(fs) if P is not None and fs and not math.isnan(fs) else nan
    # f* is only known to within rel_gap: a smaller suboptimality cannot be told from 0.
    floored = bool(raw < rel_gap) if not (math.isnan(raw) or math.isnan(rel_gap)) else None
    return {"f_star": fs, "f_star_gap": gap, "f_star_solver": ref["f_star_solver"],
            "f_star_status": ref["status"], "f_star_rel_gap": rel_gap,
            "rel_suboptimality": max(raw, rel_gap) if floored else raw, "rel_suboptimality_floored": floored}


# Info keys the results already hold in their own columns (registry.fit adds them to every fit).
_INFO_DUPLICATES = {"solver", "solver_version"}


def info_columns(info: dict) -> dict:
    """A solver's `info` as ``info_<key>`` columns: scalars as they are, lists and dicts
    (Newton's per-level times, an interval of b) as JSON strings, so a Parquet column keeps one
    type and `json.loads` gives the value back."""
    out = {}
    for k, v in info.items():
        if k in _INFO_DUPLICATES:
            continue
        out[f"info_{k}"] = json.dumps(v) if isinstance(v, (list, tuple, dict)) else v
    return out


def build_tables(run_dir: Path, keys=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, traces) from the shards of a run directory (only those of `keys` if given)."""
    records = read_shards(run_dir, keys)
    refs = {r["key"]: r for r in records if r.get("kind") == "reference"}
    fits = [r for r in records if r.get("kind") == "fit"]
    rows = [_fit_row(r, refs) for r in fits]
    results = pd.DataFrame(rows)
    if results.empty:
        results = pd.DataFrame(columns=RESULT_COLUMNS)
    extra = [c for c in results.columns if c not in RESULT_COLUMNS]
    results = results.reindex(columns=RESULT_COLUMNS + sorted(extra))
    for c in results.columns:
        # gamma is "scale"/"auto" for one entry and a number for another in one sweep.
        if ((c.startswith("param_") and results[c].map(type).nunique() > 1)
                or ((c.startswith("info_") or c in ("gamma", "degree", "coef0")) and _mixed(results[c]))):
            results[c] = results[c].map(lambda v: None if v is None else str(v))
    results = results.sort_values(["dataset", "solver_entry", "C", "fold", "key"], kind="stable").reset_index(drop=True)
    return results, _traces(fits)


def _mixed(col: pd.Series) -> bool:
    """Values of more than one kind (numbers count as one; missing ones are not counted), which
    one Parquet column cannot hold: such a column is written as strings."""
    kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
             for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))}
    return len(kinds) > 1


def _traces(fits: list[dict]) -> pd.DataFrame:
    """One row per trace point; a point's extra quantities (test_error, w_change, n_active...,
    Recorder.note and Recorder(extras=)) become further float columns, NaN where a fit has none."""
    rows = []
    for r in fits:
        extra = r.get("trace_extra") or []
        for i, p in enumerate(r.get("trace") or []):
            row = dict(zip(TRACE_COLUMNS, (r["key"], *p)))
            if i < len(extra):
                row.update(extra[i])
            rows.append(row)
    traces = pd.DataFrame(rows)
    extra_cols = sorted(c for c in traces.columns if c not in TRACE_COLUMNS)
    traces = traces.reindex(columns=TRACE_COLUMNS + extra_cols)
    return traces.astype({"iteration": "int64", "time_s": "float64", "primal": "float64",
                          "dual": "float64", "gap": "float64", **{c: "float64" for c in extra_cols}})


def models_table(run_dir: Path, keys=None) -> pd.DataFrame:
    """Each kept model (run.keep_models) as a row: key, b, w, support, alpha (lists), and for a
    2-D dataset its training rows X and labels y."""
    rows = [{"key": r["key"], **r["model"]} for r in read_shards(run_dir, keys)
            if r.get("kind") == "fit" and r.get("model")]
    return pd.DataFrame(rows, columns=["key", "b", "w", "support", "alpha", "X", "y"])


def write_tables(run_dir: Path, keys=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write results.parquet and traces.parquet (atomically) and return them."""
    results, traces = build_tables(run_dir, keys)
    tables = [(results, "results.parquet"), (traces, "traces.parquet")]
    models = models_table(run_dir, keys)
    if len(models):
        tables.append((models, "models.parquet"))
    for df, name in tables:
        write_parquet(df, Path(run_dir) / name)
    return results, traces


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """Atomically: a temporary file renamed into place, so a reader never sees half a table."""
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(path)


TIMING_COLUMNS = ("fit_time_s", "task_time_s")


def outcomes(results: pd.DataFrame) -> pd.DataFrame:
    """The results without what may differ between two runs of one config and seed (timings and
    the env_* columns: where it ran), sorted by key: the part that must be the same on every
    cluster kind and after a resume (tests/pipeline/test_cluster.py checks it)."""
    keep = [c for c in results.columns if c not in TIMING_COLUMNS and not c.startswith("env_")]
    return results[keep].sort_values("key").reset_index(drop=True)
