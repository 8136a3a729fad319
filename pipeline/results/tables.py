"""Results: shards -> ``results.parquet`` and ``traces.parquet``, and the CV summary.

Shards describe themselves (each record holds its spec), so the tables are rebuilt from the shard
folder alone: one Parquet file per Dask task, its records as columns (`results.shards`; DESIGN.md,
"Shards"), read once, as columns (`_latest_columns`), with what a row takes from its spec derived
once per distinct spec, not once per fit. One row per fit in results; the certified f* of each
fit's problem is joined from its reference shard with the certificate it actually reached
(`f_star_status`, and `f_star_rel_gap` = gap / |f*|: f* lies in [P_ref - gap, P_ref]), and the
relative suboptimality (P - f*) / |f*| is computed here, never finer than that certainty: below
f_star_rel_gap it is floored to it and `rel_suboptimality_floored` says so.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from .shards import ABSENT, SPEC_PREFIX, ShardError, read_columns, read_shard, read_statuses  # noqa: F401 - ShardError: its readers' error

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


# The record fields that are result columns as they are (None where a record lacks one).
_RECORD_COLUMNS = ("n_iter", "fit_time_s", "primal_objective", "dual_objective", "duality_gap", "kkt_violation",
                   "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test", "task_time_s")
# The columns every row has before its param_* columns: a parameter of one of these names (C,
# loss, kernel...) is not repeated as param_<name>.
_BASE_COLUMNS = frozenset(["key", "dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version",
                           "family", "loss", "kernel", "intercept", "C", "lambda_pegasos", "lambda_svmmaj", "gamma",
                           "degree", "coef0", "fold", "seed", "status", "error", "warm_from", *_RECORD_COLUMNS,
                           "f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap",
                           "rel_suboptimality", "rel_suboptimality_floored"])


# Columns only some rows have, which a parameter of the same name then does not repeat.
_CONDITIONAL_COLUMNS = ("heldout_accuracy", "n_heldout", "confusion_heldout", "n_classes", "confusion_test")


def _latest_columns(run_dir: Path, keys=None) -> dict[str, list]:
    """The newest record of each key (only those of `keys` if given), sorted by key, as columns
    (`shards.read_columns`: `ABSENT` where a record lacks a field): the shards are read once,
    as columns, not as one dict per record."""
    parts = [read_columns(p)[1] for p in shard_files(run_dir)]
    latest = {}
    for part, cols in enumerate(parts):
        latest.update((k, (part, j)) for j, k in enumerate(cols["key"]))
    chosen = [latest[k] for k in sorted(latest) if keys is None or k in keys]
    del latest
    out = {}
    for name in dict.fromkeys(name for cols in parts for name in cols):
        columns = [cols.get(name) for cols in parts]
        out[name] = [ABSENT if columns[part] is None else columns[part][j] for part, j in chosen]
        for cols in parts:      # each column of the shards is let go once taken
            cols.pop(name, None)
    return out


def _record(cols: dict[str, list], i: int) -> dict:
    """Row i of the columns as the record it was."""
    return {name: values[i] for name, values in cols.items() if values[i] is not ABSENT}


def _results(cols: dict[str, list], refs: dict) -> dict[str, list]:
    """The results' columns (name -> values, NaN where a row lacks a column) from the fits'
    record columns: one row per fit. What a row takes from its spec (the dataset, the problem,
    the parameters) is derived once per distinct spec text, not once per fit: the specs of a
    sweep share their data, solver and budget, and a C path its problem but for C."""
    nan = math.nan
    n = len(cols.get("key", ()))

    def col(name):
        values = cols.get(name)
        return [None] * n if values is None else [None if v is ABSENT else v for v in values]

    parsed: dict = {}

    def spec(field, default=None):
        texts = cols.get(SPEC_PREFIX + field) or [ABSENT] * n
        return [default if t is ABSENT else (parsed[t] if t in parsed else parsed.setdefault(t, json.loads(t)))
                for t in texts]

    data, prob = spec("data"), spec("problem")
    rec_C = cols.get("C") or [ABSENT] * n
    C = [p.get("C", nan) if c is ABSENT else c for c, p in zip(rec_C, prob)]
    n_train = col("n_train")
    out = {
        "key": col("key"), "dataset": [d["entry"] for d in data], "dataset_name": [d["name"] for d in data],
        "fingerprint": [d["fingerprint"] for d in data], "solver": spec("solver"), "solver_entry": spec("solver_entry"),
        "solver_version": spec("solver_version"), "family": spec("family"), "loss": [p["loss"] for p in prob],
        "kernel": [p.get("kernel", "linear") for p in prob], "intercept": [p["intercept"] for p in prob], "C": C,
        "lambda_pegasos": [1.0 / (c * m) if m and c and not math.isinf(c) else nan for c, m in zip(C, n_train)],
        "lambda_svmmaj": [1.0 / (2.0 * c) if c and not math.isinf(c) else nan for c in C],
        "gamma": [p.get("gamma") for p in prob], "degree": [p.get("degree") for p in prob],
        "coef0": [p.get("coef0") for p in prob], "fold": spec("fold"), "seed": spec("seed"),
        "status": col("status"), "error": col("error"),
    }
    optional: dict[str, list] = {}

    def put(name, i, value):
        # A column only some rows have (NaN in the others, as a table of dicts gives it).
        values = optional.get(name)
        if values is None:
            values = optional[name] = [nan] * n
        values[i] = value

    for i, p in enumerate(prob):
        if "class_weight" in p:      # a column only where a sweep weighs classes: other tables as before
            cw = p["class_weight"]
            put("class_weight", i, cw if isinstance(cw, str) else json.dumps(cw, sort_keys=True))
    out["warm_from"] = col("warm_from")
    for name in _RECORD_COLUMNS:
        out[name] = col(name)
    held, confusion_held = col("n_heldout"), col("confusion_heldout")
    accuracy_held, classes, confusion = col("heldout_accuracy"), col("n_classes"), col("confusion_test")
    for i in range(n):
        if held[i]:
            # cv.kind=kfold_test: the fold's model also scored on the held-out test rows.
            put("heldout_accuracy", i, accuracy_held[i])
            put("n_heldout", i, held[i])
            if confusion_held[i] is not None:
                put("confusion_heldout", i, json.dumps(confusion_held[i]))
        if classes[i]:
            # Multiclass: the strategy, and the test confusion matrix as JSON (rows: true class).
            put("n_classes", i, classes[i])
            put("confusion_test", i, json.dumps(confusion[i]))
    P = out["primal_objective"]
    stars = [_f_star_columns(P[i], refs.get(r)) for i, r in enumerate(spec("reference_key"))]
    for name in ("f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap", "rel_suboptimality",
                 "rel_suboptimality_floored"):
        out[name] = [f[name] for f in stars]
    # The grid point and the solver's own parameters, as param_* columns (strings for mixed types);
    # a problem given by lambda keeps it (a fixed one too): its C = 1/(lambda n) moves with each
    # fold's n, so lambda is what names the point (report/common.py `point_C`). Once per distinct
    # (problem, parameters, task, grid point, optional columns of the row).
    texts = [cols.get(SPEC_PREFIX + f) or [ABSENT] * n for f in ("problem", "solver_params", "task", "grid_point")]
    params: dict = {}
    conditional = [optional.get(c) or [nan] * n for c in _CONDITIONAL_COLUMNS]
    present = zip(*([v is not nan for v in values] for values in conditional))
    for i, group in enumerate(zip(*texts, present)):
        if group not in params:
            p = prob[i]
            given = {k: p[k] for k in ("lambda", "lambda_convention") if k in p}
            row = _BASE_COLUMNS | {c for c, has in zip(_CONDITIONAL_COLUMNS, group[-1]) if has}
            row |= {"class_weight"} if "class_weight" in p else set()
            merged = {**given, **_parsed(group[1], parsed, {}), **_parsed(group[2], parsed, {}),
                      **_parsed(group[3], parsed, {})}
            params[group] = {f"param_{k}": v for k, v in merged.items() if k not in row}
        for name, v in params[group].items():
            put(name, i, v)
    for name, values in cols.items():
        if name.startswith("env_"):
            out[name] = [nan if v is ABSENT else v for v in values]
    for i, info in enumerate(cols.get("info") or ()):
        if info is not ABSENT and info:
            for name, v in info_columns(info).items():
                put(name, i, v)
    return {**out, **optional}


def _parsed(text, parsed: dict, default):
    if text is ABSENT:
        return default
    return parsed[text] if text in parsed else parsed.setdefault(text, json.loads(text))


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


def build_tables(run_dir: Path, keys=None, reference_of: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, traces) from the shards of a run directory (only those of `keys` if given).
    `reference_of` (fit key -> reference key, from the current plan) overrides the reference a
    fit's shard names (see `_tables`)."""
    return _tables(_latest_columns(run_dir, keys), reference_of)


def _tables(cols: dict[str, list], reference_of: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, traces) of a run's newest records, as columns (`_latest_columns`).

    A fit's reference is the one the current plan gives it (`reference_of`), where given: the
    reference key is left out of the fit's own key (plan.py, `spec_key`), so a resumed run whose
    reference budget changed reuses the fit but plans a new reference; the key in the fit's shard
    then names the old one, and the fit would lose its f*."""
    if reference_of and "key" in cols:
        stored = cols.get(SPEC_PREFIX + "reference_key") or [ABSENT] * len(cols["key"])
        cols[SPEC_PREFIX + "reference_key"] = [
            json.dumps(reference_of[k]) if k in reference_of else s for k, s in zip(cols["key"], stored)]
    kinds = cols.get("kind") or []
    refs = {cols["key"][i]: _record(cols, i) for i, kind in enumerate(kinds) if kind == "reference"}
    fit_rows = [i for i, kind in enumerate(kinds) if kind == "fit"]
    fits = cols if len(fit_rows) == len(kinds) else {name: [values[i] for i in fit_rows] for name, values in cols.items()}
    results = pd.DataFrame(_results(fits, refs)) if fit_rows else pd.DataFrame(columns=RESULT_COLUMNS)
    results = finish_results(results)
    return results, _traces(fits)


def finish_results(results: pd.DataFrame) -> pd.DataFrame:
    """The results' columns in their order (RESULT_COLUMNS, then the others sorted), a column of
    mixed kinds as strings, the rows sorted by dataset, solver entry, C, fold and key."""
    extra = [c for c in results.columns if c not in RESULT_COLUMNS]
    results = results.reindex(columns=RESULT_COLUMNS + sorted(extra))
    for c in results.columns:
        # gamma is "scale"/"auto" for one entry and a number for another in one sweep.
        if ((c.startswith("param_") and results[c].map(type).nunique() > 1)
                or ((c.startswith("info_") or c in ("gamma", "degree", "coef0")) and _mixed(results[c]))):
            results[c] = results[c].map(lambda v: None if v is None else str(v))
    return results.sort_values(["dataset", "solver_entry", "C", "fold", "key"], kind="stable").reset_index(drop=True)


def _mixed(col: pd.Series) -> bool:
    """Values of more than one kind (numbers count as one; missing ones are not counted), which
    one Parquet column cannot hold: such a column is written as strings."""
    if col.dtype != object:     # a typed column (numbers, bools, strings) holds one kind
        return False
    kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
             for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))}
    return len(kinds) > 1


def _traces(fits: dict[str, list]) -> pd.DataFrame:
    """One row per trace point; a point's extra quantities (test_error, w_change, n_active...,
    Recorder.note and Recorder(extras=)) become further float columns, NaN where a fit has none."""
    rows = []
    extras = fits.get("trace_extra") or [ABSENT] * len(fits.get("key", ()))
    for key, trace, extra in zip(fits.get("key", ()), fits.get("trace") or (), extras):
        extra = extra if extra not in (ABSENT, None) else []
        for i, p in enumerate(trace if trace not in (ABSENT, None) else []):
            row = dict(zip(TRACE_COLUMNS, (key, *p)))
            if i < len(extra):
                row.update(extra[i])
            rows.append(row)
    return traces_frame(rows)


def traces_frame(rows: list[dict]) -> pd.DataFrame:
    """The traces table of its rows: TRACE_COLUMNS, then the extra quantities sorted, as floats."""
    traces = pd.DataFrame(rows)
    extra_cols = sorted(c for c in traces.columns if c not in TRACE_COLUMNS)
    traces = traces.reindex(columns=TRACE_COLUMNS + extra_cols)
    return traces.astype({"iteration": "int64", "time_s": "float64", "primal": "float64",
                          "dual": "float64", "gap": "float64", **{c: "float64" for c in extra_cols}})


def models_table(run_dir: Path, keys=None) -> pd.DataFrame:
    """Each kept model (run.keep_models) as a row: key, b, w, support, alpha (lists), and for a
    2-D dataset its training rows X and labels y."""
    return _models(read_shards(run_dir, keys))


def _models(records: list[dict]) -> pd.DataFrame:
    rows = [{"key": r["key"], **r["model"]} for r in records if r.get("kind") == "fit" and r.get("model")]
    return pd.DataFrame(rows, columns=["key", "b", "w", "support", "alpha", "X", "y"])


def write_tables(run_dir: Path, keys=None, reference_of: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write results.parquet and traces.parquet (atomically) and return them: the shards are
    read once, as columns, for the tables and the kept models alike. `reference_of`: see
    `build_tables`."""
    cols = _latest_columns(run_dir, keys)
    results, traces = _tables(cols, reference_of)
    tables = [(results, "results.parquet"), (traces, "traces.parquet")]
    if "model" in cols:
        kinds = cols["kind"]
        models = _models([_record(cols, i) for i, m in enumerate(cols["model"]) if m is not ABSENT and kinds[i] == "fit"])
        if len(models):
            tables.append((models, "models.parquet"))
    del cols
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
