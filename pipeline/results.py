"""Results: shards -> ``results.parquet`` and ``traces.parquet``, and the CV summary.

Shards describe themselves (each holds its spec), so the tables are rebuilt from the shard
folder alone. One row per fit in results; the certified f* of each fit's problem is joined
from its reference shard with the certificate it actually reached (`f_star_status`, and
`f_star_rel_gap` = gap / |f*|: f* lies in [P_ref - gap, P_ref]), and the relative suboptimality
(P - f*) / |f*| is computed here, never finer than that certainty: below f_star_rel_gap it is
floored to it and `rel_suboptimality_floored` says so.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

RESULT_COLUMNS = [
    "key", "dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version", "family",
    "loss", "kernel", "intercept", "C", "lambda_pegasos", "lambda_svmmaj", "gamma", "degree", "coef0",
    "fold", "seed", "status", "error", "n_iter", "fit_time_s", "primal_objective", "dual_objective",
    "duality_gap", "kkt_violation", "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test",
    "f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap", "rel_suboptimality",
    "rel_suboptimality_floored", "warm_from", "task_time_s",
]
TRACE_COLUMNS = ["key", "iteration", "time_s", "primal", "dual", "gap"]


def read_shards(run_dir: Path) -> list[dict]:
    shards = Path(run_dir) / "shards"
    out = []
    for p in sorted(shards.glob("*.json")):
        if p.name.startswith("."):
            continue
        try:
            out.append(json.loads(p.read_text()))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}: not a valid shard ({exc}); delete it to recompute that task") from None
    return out


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
    row["warm_from"] = rec.get("warm_from")
    for col in ("n_iter", "fit_time_s", "primal_objective", "dual_objective", "duality_gap", "kkt_violation",
                "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test", "task_time_s"):
        row[col] = rec.get(col)
    if rec.get("n_classes"):
        # Multiclass: the strategy, and the test confusion matrix as JSON (rows: true class).
        row["n_classes"] = rec["n_classes"]
        row["confusion_test"] = json.dumps(rec.get("confusion_test"))
    row.update(_f_star_columns(row["primal_objective"], refs.get(spec.get("reference_key"))))
    # The grid point and the solver's own parameters, as param_* columns (strings for mixed types).
    for k, v in {**spec.get("solver_params", {}), **spec.get("task", {}), **spec.get("grid_point", {})}.items():
        if k not in row:   # C, loss, kernel... already have their own columns
            row[f"param_{k}"] = v
    for k, v in rec.items():
        if k.startswith("env_"):
            row[k] = v
    return row


def _f_star_columns(P, ref: dict | None) -> dict:
    """f*, its certificate (status and relative gap) and the suboptimality it can resolve."""
    nan = math.nan
    if ref is None or ref.get("status") == "error":
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


def build_tables(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, traces) from the shards of a run directory."""
    records = read_shards(run_dir)
    refs = {r["key"]: r for r in records if r.get("kind") == "reference"}
    fits = [r for r in records if r.get("kind") == "fit"]
    rows = [_fit_row(r, refs) for r in fits]
    results = pd.DataFrame(rows)
    if results.empty:
        results = pd.DataFrame(columns=RESULT_COLUMNS)
    extra = [c for c in results.columns if c not in RESULT_COLUMNS]
    results = results.reindex(columns=RESULT_COLUMNS + sorted(extra))
    for c in results.columns:
        if c.startswith("param_") and results[c].map(type).nunique() > 1:
            results[c] = results[c].map(lambda v: None if v is None else str(v))
    results = results.sort_values(["dataset", "solver_entry", "C", "fold", "key"], kind="stable").reset_index(drop=True)
    trace_rows = [(r["key"], *p) for r in fits for p in (r.get("trace") or [])]
    traces = pd.DataFrame(trace_rows, columns=TRACE_COLUMNS)
    traces = traces.astype({"iteration": "int64", "time_s": "float64", "primal": "float64",
                            "dual": "float64", "gap": "float64"})
    return results, traces


def write_tables(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write results.parquet and traces.parquet (atomically) and return them."""
    results, traces = build_tables(run_dir)
    for df, name in ((results, "results.parquet"), (traces, "traces.parquet")):
        path = Path(run_dir) / name
        tmp = path.with_name(f".{name}.tmp")
        df.to_parquet(tmp, index=False)
        tmp.replace(path)
    return results, traces


def param_columns(results: pd.DataFrame) -> list[str]:
    """The columns that identify one configuration (all but fold, seed and outcomes)."""
    fixed = ["loss", "kernel", "intercept", "C", "gamma", "degree", "coef0"]
    return [c for c in fixed if c in results.columns] + sorted(c for c in results.columns if c.startswith("param_"))


def cv_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over folds per dataset x solver x parameters."""
    ok = results[results["status"] != "error"]
    if ok.empty:
        return pd.DataFrame()
    keys = ["dataset", "solver_entry"] + [c for c in param_columns(ok) if ok[c].notna().any()]
    ok = ok.copy()
    for c in keys:
        ok[c] = ok[c].map(lambda v: "-" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
    agg = ok.groupby(keys, dropna=False, sort=True).agg(
        folds=("fold", "count"),
        test_accuracy_mean=("test_accuracy", "mean"), test_accuracy_std=("test_accuracy", "std"),
        train_accuracy_mean=("train_accuracy", "mean"),
        fit_time_s_mean=("fit_time_s", "mean"), fit_time_s_std=("fit_time_s", "std"),
        n_iter_mean=("n_iter", "mean"), primal_objective_mean=("primal_objective", "mean"),
        rel_suboptimality_max=("rel_suboptimality", "max"),
        converged=("status", lambda s: int((s == "converged").sum())),
    ).reset_index()
    return agg


def best_params(summary: pd.DataFrame) -> pd.DataFrame:
    """Per dataset x solver, the configuration with the best mean test accuracy (ties: faster)."""
    if summary.empty:
        return summary
    s = summary.copy()
    s["_acc"] = s["test_accuracy_mean"].fillna(-np.inf)
    s = s.sort_values(["dataset", "solver_entry", "_acc", "fit_time_s_mean"], ascending=[True, True, False, True])
    return s.groupby(["dataset", "solver_entry"], sort=True).head(1).drop(columns="_acc").reset_index(drop=True)


TARGETS = (1e-2, 1e-3, 1e-4, 1e-6)


def time_to_targets(results: pd.DataFrame, traces: pd.DataFrame, targets=TARGETS) -> pd.DataFrame:
    """Per fit, the solver seconds at which (P - f*)/|f*| first falls to each target.

    From the trace where the solver records one; a solver without a trace (the references
    run as one call) reaches a target at its fit time if its final model is within it."""
    cols = ["key", "f_star", "fit_time_s", "rel_suboptimality"]
    out = results[cols + ["f_star_rel_gap"]].copy() if "f_star_rel_gap" in results else results[cols].assign(f_star_rel_gap=0.0)
    tr = traces.merge(out[["key", "f_star"]], on="key", how="inner")
    tr["rel"] = (tr["primal"] - tr["f_star"]) / tr["f_star"].abs()
    for eps in targets:
        col = f"t_{eps:g}"
        hit = tr[tr["rel"] <= eps].groupby("key")["time_s"].min()
        out[col] = out["key"].map(hit)
        no_trace = ~out["key"].isin(tr["key"])
        reached = no_trace & (out["rel_suboptimality"] <= eps)
        out.loc[reached, col] = out.loc[reached, "fit_time_s"]
        # A target finer than f*'s certainty cannot be said to be reached.
        out.loc[out["f_star_rel_gap"].fillna(0.0) > eps, col] = math.nan
    return out.drop(columns=cols[1:] + ["f_star_rel_gap"])


def benchmark_table(results: pd.DataFrame, traces: pd.DataFrame, targets=TARGETS,
                    ratio_targets=(1e-3, 1e-4)) -> pd.DataFrame:
    """Per dataset x problem x solver entry: median fit time, iterations and final
    suboptimality over its runs, and for each target the least time any of its runs needed to
    reach it (a reference solver swept over tol reaches a target at the first tol that gets
    there). Ratios put each entry's times over those of every reference-family entry (LIBLINEAR,
    LIBSVM, SGD) that solved the same problems in the same run: fit time, and time to target."""
    ok = results[results["status"] != "error"]
    if ok.empty:
        return pd.DataFrame()
    ok = ok.merge(time_to_targets(ok, traces, targets), on="key", how="left")
    problem = ["dataset", "loss", "kernel", "C"]
    tcols = [f"t_{eps:g}" for eps in targets]
    agg = ok.groupby(problem + ["solver_entry", "family"], dropna=False, sort=True).agg(
        runs=("key", "count"), fit_time_s=("fit_time_s", "median"), n_iter=("n_iter", "median"),
        rel_subopt=("rel_suboptimality", "median"), **{c: (c, "min") for c in tcols}).reset_index()
    refs = agg[agg["family"] == "reference"]
    idx = pd.MultiIndex.from_frame(agg[problem])
    for ref_entry in sorted(refs["solver_entry"].unique()):
        base = refs[refs["solver_entry"] == ref_entry].set_index(problem)
        for col in ["fit_time_s"] + [f"t_{eps:g}" for eps in ratio_targets]:
            name = f"ratio_{'fit' if col == 'fit_time_s' else col}_vs_{ref_entry}"
            agg[name] = agg[col].to_numpy() / base[col].reindex(idx).to_numpy()
    return agg
