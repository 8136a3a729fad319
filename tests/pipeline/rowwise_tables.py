"""The tables as pandas built them, one dict per record and one row per fit, and wrote them with
`DataFrame.to_parquet`: the oracle tests/pipeline/test_tables.py holds `results.tables.write_tables`
(DuckDB, from the shard files, never a frame of every fit) to, file for file: column names, Arrow
types and pandas' metadata, the rows' order, every value and every missing one. Kept apart from
the pipeline's code on purpose (its helpers are its own), so that the two are two readings of the
shards, not one.

What the tables hold, as this builder makes it: the sweep's fits (results.parquet) and the timing
fits (a spec with `timing`: timing.parquet, TIMING_FIT_COLUMNS last), each sorted by dataset,
solver entry, C, fold and key; the trace points of each (traces.parquet, timing_traces.parquet) by
key and point; the kept models by key (models.parquet, only where a fit kept one)."""
import json
import math

import pandas as pd

from pipeline.results.tables import read_shards

RESULT_COLUMNS = [
    "key", "dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version", "family",
    "loss", "kernel", "intercept", "C", "lambda_pegasos", "lambda_svmmaj", "gamma", "degree", "coef0",
    "fold", "seed", "status", "error", "n_iter", "fit_time_s", "primal_objective", "dual_objective",
    "duality_gap", "kkt_violation", "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test",
    "f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap", "rel_suboptimality",
    "rel_suboptimality_floored", "warm_from", "start", "start_from", "task_time_s",
]
TIMING_FIT_COLUMNS = ["timing_method", "setup_s"]
TRACE_COLUMNS = ["key", "iteration", "time_s", "primal", "dual", "gap"]
ORDER = ["dataset", "solver_entry", "C", "fold", "key"]


def f_star_columns(P, ref: dict | None) -> dict:
    """f*, its certificate (status and relative gap) and the suboptimality it can resolve."""
    nan = math.nan
    if ref is None or ref.get("status") == "error" or "f_star" not in ref:
        return {"f_star": nan, "f_star_gap": nan, "f_star_solver": None, "f_star_status": None,
                "f_star_rel_gap": nan, "rel_suboptimality": nan, "rel_suboptimality_floored": None}
    fs, gap = ref["f_star"], ref["f_star_gap"]
    rel_gap = max(gap, 0.0) / abs(fs) if fs else nan
    raw = (P - fs) / abs(fs) if P is not None and fs and not math.isnan(fs) else nan
    floored = bool(raw < rel_gap) if not (math.isnan(raw) or math.isnan(rel_gap)) else None
    return {"f_star": fs, "f_star_gap": gap, "f_star_solver": ref["f_star_solver"],
            "f_star_status": ref["status"], "f_star_rel_gap": rel_gap,
            "rel_suboptimality": max(raw, rel_gap) if floored else raw, "rel_suboptimality_floored": floored}


def info_columns(info: dict) -> dict:
    return {f"info_{k}": json.dumps(v) if isinstance(v, (list, tuple, dict)) else v
            for k, v in info.items() if k not in ("solver", "solver_version")}


def _mixed(col: pd.Series) -> bool:
    if col.dtype != object:
        return False
    kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
             for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))}
    return len(kinds) > 1


def finish_results(results: pd.DataFrame) -> pd.DataFrame:
    """The columns in their order (RESULT_COLUMNS, then the others sorted), a column of mixed
    kinds as strings, the rows sorted by ORDER."""
    extra = [c for c in results.columns if c not in RESULT_COLUMNS]
    results = results.reindex(columns=RESULT_COLUMNS + sorted(extra))
    for c in results.columns:
        if ((c.startswith("param_") and results[c].map(type).nunique() > 1)
                or ((c.startswith("info_") or c in ("gamma", "degree", "coef0")) and _mixed(results[c]))):
            results[c] = results[c].map(lambda v: None if v is None else str(v))
    return results.sort_values(ORDER, kind="stable").reset_index(drop=True)


def traces_frame(rows: list[dict]) -> pd.DataFrame:
    traces = pd.DataFrame(rows)
    extra_cols = sorted(c for c in traces.columns if c not in TRACE_COLUMNS)
    traces = traces.reindex(columns=TRACE_COLUMNS + extra_cols)
    return traces.astype({"iteration": "int64", "time_s": "float64", "primal": "float64",
                          "dual": "float64", "gap": "float64", **{c: "float64" for c in extra_cols}})


def _fit_row(rec: dict, refs: dict, reference_of: dict | None) -> dict:
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
    if "class_weight" in prob:
        cw = prob["class_weight"]
        row["class_weight"] = cw if isinstance(cw, str) else json.dumps(cw, sort_keys=True)
    row["warm_from"] = rec.get("warm_from")
    row["start"] = rec.get("start") or ("warm" if rec.get("warm_from") else "cold")
    row["start_from"] = rec.get("start_from")
    for col in ("n_iter", "fit_time_s", "primal_objective", "dual_objective", "duality_gap", "kkt_violation",
                "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test", "task_time_s"):
        row[col] = rec.get(col)
    if "timing" in spec:
        t = spec["timing"]
        row["timing_method"] = t["method"] if t else None
        row["setup_s"] = rec.get("setup_s", math.nan)
        if t and t.get("clock"):
            row["clock"] = t["clock"]
    if "search" in spec:
        s = spec["search"]
        row["search_round"] = s.get("round") if isinstance(s, dict) else math.nan
    if rec.get("n_heldout"):
        row["heldout_accuracy"], row["n_heldout"] = rec.get("heldout_accuracy"), rec["n_heldout"]
        if rec.get("confusion_heldout") is not None:
            row["confusion_heldout"] = json.dumps(rec["confusion_heldout"])
    if rec.get("n_classes"):
        row["n_classes"] = rec["n_classes"]
        row["confusion_test"] = json.dumps(rec.get("confusion_test"))
    ref_key = reference_of[rec["key"]] if reference_of and rec["key"] in reference_of else spec.get("reference_key")
    row.update(f_star_columns(row["primal_objective"], refs.get(ref_key)))
    given = {k: prob[k] for k in ("lambda", "lambda_convention") if k in prob}
    for k, v in {**given, **spec.get("solver_params", {}), **spec.get("task", {}), **spec.get("grid_point", {})}.items():
        if k not in row:
            row[f"param_{k}"] = v
    for k, v in rec.items():
        if k.startswith("env_"):
            row[k] = v
    row.update(info_columns(rec.get("info") or {}))
    return row


def _results(fits: list[dict], refs: dict, reference_of: dict | None) -> pd.DataFrame:
    results = pd.DataFrame([_fit_row(r, refs, reference_of) for r in fits])
    if results.empty:
        results = pd.DataFrame(columns=RESULT_COLUMNS)
    return finish_results(results)


def _traces(fits: list[dict]) -> pd.DataFrame:
    rows = []
    for r in fits:
        extra = r.get("trace_extra") or []
        for i, p in enumerate(r.get("trace") or []):
            row = dict(zip(TRACE_COLUMNS, (r["key"], *p)))
            if i < len(extra):
                row.update(extra[i])
            rows.append(row)
    return traces_frame(rows)


def build(run_dir, keys=None, reference_of=None) -> dict[str, pd.DataFrame]:
    """The run dir's tables by file name (no timing tables without timing fits, no models.parquet
    without a kept model)."""
    records = read_shards(run_dir, keys)
    refs = {r["key"]: r for r in records if r.get("kind") == "reference"}
    fits = [r for r in records if r.get("kind") == "fit"]
    sweep = [r for r in fits if "timing" not in r["spec"]]
    timed = [r for r in fits if "timing" in r["spec"]]
    out = {"results.parquet": _results(sweep, refs, reference_of), "traces.parquet": _traces(sweep)}
    if timed:
        timing = _results(timed, refs, reference_of)
        out["timing.parquet"] = timing[[c for c in timing.columns if c not in TIMING_FIT_COLUMNS] + TIMING_FIT_COLUMNS]
        out["timing_traces.parquet"] = _traces(timed)
    models = [{"key": r["key"], **r["model"]} for r in sweep if r.get("model")]
    if models:
        out["models.parquet"] = pd.DataFrame(models, columns=["key", "b", "w", "support", "alpha", "X", "y"])
    return out


def write(run_dir, out_dir, keys=None, reference_of=None) -> dict[str, pd.DataFrame]:
    """`build`'s tables written into out_dir as the pandas builder wrote them."""
    tables = build(run_dir, keys, reference_of)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_parquet(out_dir / name, index=False)
    return tables
