"""The results tables as they were built before the columnar reader (one dict per record, one
row per fit): the oracle `test_tables` holds `results.tables.build_tables` to, column for column
and dtype for dtype, so that the report and every reader of results.parquet see the same table."""
import json
import math

import pandas as pd

from pipeline.results.tables import RESULT_COLUMNS, TRACE_COLUMNS, _f_star_columns, finish_results, info_columns, read_shards, traces_frame


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
    row["start"] = rec.get("start") or ("warm" if rec.get("warm_from") else "cold")
    row["start_from"] = rec.get("start_from")
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


def build_tables(run_dir, keys=None):
    """(results, traces) as the row-by-row builder made them."""
    records = read_shards(run_dir, keys)
    refs = {r["key"]: r for r in records if r.get("kind") == "reference"}
    # The timing fits (a spec with `timing`) make their own table, not the results.
    fits = [r for r in records if r.get("kind") == "fit" and "timing" not in r["spec"]]
    rows = [_fit_row(r, refs) for r in fits]
    results = pd.DataFrame(rows)
    if results.empty:
        results = pd.DataFrame(columns=RESULT_COLUMNS)
    results = finish_results(results)
    return results, _traces(fits)


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
    return traces_frame(rows)


