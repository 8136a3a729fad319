"""Report: ``report.md``, ``report.html`` and ``figures/`` rebuilt from the Parquet tables alone.

    python -m pipeline.report RUN_DIR

Contents: the CV table (mean and spread over folds per dataset x solver x parameters), the best
parameters per dataset x solver, the statuses (every non-converged one named, with what to
change), a timing table, failures, and the primal suboptimality
(P_k - f*) / |f*| against solver time per dataset (a line per solver and C, log scale), where
f* is the certified reference optimum of the same problem (never the best run seen).
"""
from __future__ import annotations

import argparse
import html
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .results import benchmark_table, best_params, cv_summary

SUBOPT_FLOOR = 1e-12


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.3e}"
        return f"{v:.4g}"
    return str(v)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def markdown_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(none)_\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


def _drop_constant(df: pd.DataFrame, keep: list[str]) -> pd.DataFrame:
    """Hide parameter columns that never vary (they only widen the table)."""
    cols = [c for c in df.columns if c in keep or df[c].astype(str).nunique() > 1]
    return df[cols]


def timing_table(results: pd.DataFrame) -> pd.DataFrame:
    ok = results[results["status"] != "error"]
    if ok.empty:
        return pd.DataFrame()
    return ok.groupby(["dataset", "solver_entry"], sort=True).agg(
        runs=("key", "count"), fit_time_s_total=("fit_time_s", "sum"), fit_time_s_median=("fit_time_s", "median"),
        n_iter_median=("n_iter", "median"), converged=("status", lambda s: int((s == "converged").sum())),
    ).reset_index()


# What each status means, and what a user can change about it (the report's status section).
STATUS_ADVICE = {
    "max_iter": "stopped at its iteration cap before reaching its tolerance: raise max_iter, loosen tol, "
                "or scale the features (a dataset's `scale:`); large C makes every solver slower",
    "timeout": "stopped at its time limit (run.timeout_s or time_limit_s) before reaching its tolerance: "
               "raise the limit or loosen tol",
    "stalled": "stopped because it could not make further progress (the solver's warning says why; the "
               "certificates in the results show how far from the optimum it ended): try another solver "
               "for this problem or a looser tol",
    "diverged": "produced non-finite values: lower the step size or C, or scale the features",
    "error": "raised an error (see Failures for the first line, results.parquet's `error` for the traceback)",
}


def status_table(results: pd.DataFrame) -> pd.DataFrame:
    """Fits per dataset x solver entry and status, every status that occurs as its own column."""
    if results.empty:
        return pd.DataFrame()
    t = results.groupby(["dataset", "solver_entry", "status"]).size().unstack("status", fill_value=0)
    order = ["converged"] + sorted(c for c in t.columns if c != "converged")
    t = t[[c for c in order if c in t.columns]]
    t.insert(0, "fits", t.sum(axis=1))
    return t.reset_index()


def status_lines(results: pd.DataFrame) -> list[str]:
    """Every non-converged status in plain words: which fits, at which C, and what to change."""
    if results.empty:
        return []
    bad = results[results["status"] != "converged"]
    if bad.empty:
        return [f"All {len(results)} fits converged (reached their tolerance)."] + reference_lines(results)
    lines = [f"{len(results) - len(bad)} of {len(results)} fits converged; the others:"]
    for (ds, entry, status), grp in bad.groupby(["dataset", "solver_entry", "status"], sort=True):
        n_all = int(((results["dataset"] == ds) & (results["solver_entry"] == entry)).sum())
        where = ", ".join(f"C={_fmt(float(c))}" for c in sorted(grp["C"].dropna().unique()))
        advice = STATUS_ADVICE.get(status, "ended with an unrecognised status")
        lines.append(f"- {entry} on {ds}: {len(grp)} of {n_all} fits `{status}`"
                     f"{' (' + where + ')' if where else ''}: {advice}.")
    return lines + reference_lines(results)


def reference_lines(results: pd.DataFrame) -> list[str]:
    """A reference solve that stopped short of its tolerance is said so, with how uncertain its
    f* is: suboptimalities below that are floored to it (`rel_suboptimality_floored`)."""
    if "f_star_status" not in results:
        return []
    short = results[results["f_star_status"].notna() & (results["f_star_status"] != "converged")]
    if short.empty:
        return []
    where = ", ".join(f"C={_fmt(float(c))}" for c in sorted(short["C"].dropna().unique()))
    return [f"- f* not certified to its tolerance for {len(short)} fits ({where}; reference "
            f"{', '.join(sorted(short['f_star_status'].unique()))}): f* is known only to a relative gap of up to "
            f"{_fmt(float(short['f_star_rel_gap'].max()))}, and smaller suboptimalities are shown floored to it."]


def suboptimality_figure(results: pd.DataFrame, traces: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One panel per dataset: (P - f*)/|f*| against solver seconds, fold 0, a line per
    solver and C. Returns the files written (PNG and PDF)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator, NullLocator

    fits = results[(results["status"] != "error") & results["f_star"].notna() & (results["fold"] == 0)]
    if fits.empty or traces.empty:
        return []
    datasets = sorted(fits["dataset"].unique())
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        sub = fits[fits["dataset"] == ds]
        for row in sub.sort_values(["solver_entry", "C"]).itertuples():
            tr = traces[traces["key"] == row.key]
            if tr.empty:
                continue
            # Never finer than f*'s own certainty (its relative duality gap).
            floor = max(SUBOPT_FLOOR, getattr(row, "f_star_rel_gap", 0.0) or 0.0)
            gap = np.maximum((tr["primal"].to_numpy() - row.f_star) / abs(row.f_star), floor)
            label = f"{row.solver_entry} C={_fmt(row.C)}" + ("" if row.loss == "hinge" else f" {row.loss}")
            if getattr(row, "f_star_status", "converged") not in ("converged", None):
                label += f" (f* {row.f_star_status})"
            ax.loglog(np.maximum(tr["time_s"].to_numpy(), 1e-6), gap, marker=".", label=label)
        ax.set_title(ds)
        ax.set_xlabel("solver time (s)")
        ax.set_ylabel("(P - f*) / |f*|")
        ax.grid(True, which="major", alpha=0.3)
        # Minor ticks over many log decades dominate drawing time and add nothing.
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(numticks=8))
            axis.set_minor_locator(NullLocator())
        ax.legend(fontsize=7)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "suboptimality_vs_time.png", out_dir / "suboptimality_vs_time.pdf"]
    for p in paths:
        fig.savefig(p, dpi=120)
    plt.close(fig)
    return paths


def build_report(run_dir: Path) -> Path:
    """Write report.md, report.html and figures/ from results.parquet and traces.parquet."""
    run_dir = Path(run_dir)
    res_path, tr_path = run_dir / "results.parquet", run_dir / "traces.parquet"
    for p in (res_path, tr_path):
        if not p.exists():
            raise FileNotFoundError(f"{p} not found: is {run_dir} a svmbench run directory?")
    results = pd.read_parquet(res_path)
    traces = pd.read_parquet(tr_path)
    summary = cv_summary(results)
    keep = ["dataset", "solver_entry", "folds", "test_accuracy_mean", "test_accuracy_std",
            "train_accuracy_mean", "fit_time_s_mean", "n_iter_mean", "converged", "rel_suboptimality_max"]
    shown = _drop_constant(summary, keep) if not summary.empty else summary
    best = _drop_constant(best_params(summary), keep) if not summary.empty else summary
    figures = suboptimality_figure(results, traces, run_dir / "figures")
    failed = results[results["status"] == "error"]
    n_ok = int((results["status"] != "error").sum())
    parts = [
        f"# svmbench report: {run_dir.name}\n",
        f"{_count(len(results), 'fit')} ({n_ok} finished, {len(failed)} failed) over "
        f"{_count(results['dataset'].nunique(), 'dataset')} and "
        f"{_count(results['solver_entry'].nunique(), 'solver')}.\n",
        "## Cross-validation (mean and std over folds)\n", markdown_table(shown),
        "## Best parameters per dataset and solver (by mean test accuracy)\n", markdown_table(best),
        "## Status\n", markdown_table(status_table(results)), "\n".join(status_lines(results)) + "\n",
        "## Timing\n", markdown_table(timing_table(results)),
    ]
    bench = benchmark_table(results, traces)
    if not bench.empty and (results["f_star"].notna().any() or (results["family"] == "reference").any()):
        parts += ["## Time to target suboptimality\n",
                  "`fit_time_s`, `n_iter`, `rel_subopt`: medians over an entry's runs. `t_eps`: the least "
                  "solver seconds any of its runs needed until (P - f*)/|f*| <= eps (empty: never). "
                  "`ratio_X_vs_R`: that time over reference R's on the same problem.\n",
                  markdown_table(_drop_constant(bench, ["dataset", "solver_entry", "fit_time_s"]))]
    if figures:
        parts += ["## Suboptimality against time\n",
                  "Relative primal suboptimality against a certified reference solve of the same problem "
                  "(fold 0).\n", f"![suboptimality](figures/{figures[0].name})\n"]
    if len(failed):
        rows = failed[["dataset", "solver_entry", "C", "fold", "error"]].copy()
        rows["error"] = rows["error"].map(lambda e: (e or "").strip().splitlines()[0] if e else "")
        parts += ["## Failures\n", markdown_table(rows)]
    md = "\n".join(parts)
    (run_dir / "report.md").write_text(md)
    html_parts = [f"<h1>svmbench report: {html.escape(run_dir.name)}</h1>",
                  f"<p>{html.escape(parts[1])}</p>", "<h2>Cross-validation</h2>", shown.to_html(index=False, na_rep=""),
                  "<h2>Best parameters</h2>", best.to_html(index=False, na_rep=""),
                  "<h2>Status</h2>", status_table(results).to_html(index=False, na_rep=""),
                  "<ul>" + "".join(f"<li>{html.escape(x.lstrip('- '))}</li>" for x in status_lines(results)) + "</ul>",
                  "<h2>Timing</h2>", timing_table(results).to_html(index=False, na_rep="")]
    if figures:
        html_parts += ["<h2>Suboptimality against time</h2>", f'<img src="figures/{figures[0].name}">']
    (run_dir / "report.html").write_text("<!doctype html><meta charset=utf-8><title>svmbench report</title>\n"
                                         + "\n".join(html_parts))
    return run_dir / "report.md"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.report",
                                     description="Rebuild a run's report from its Parquet tables.")
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args(argv)
    try:
        path = build_report(args.run_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
