"""The searches against a grid and their references (docs/benchmarks/search.md).

  cs  the certified C search (conf/experiment/bench_search_linear.yaml: scenario e's sparse text,
     C in [1e-3, 1e3], epsilon 0.5 points of CV error) against a dense 200-point grid over the same
     range (the same command with search=grid: the check of the chosen C) and LIBLINEAR's own
     ``train -C -v 5 -s 2 -c 0.001`` (`anchors.liblinear_search`: its C search from 0.001 up, to
     its own cap of 1024), whole command against whole command (LIBLINEAR: its train call on a
     prebuilt problem); the fits and passes each spent, and the search's guarantee reached or not.
  hs  successive halving over scenario f's kernel grid (conf/experiment/bench_search_kernel.yaml:
     factor 3, each rung on a share of the training rows) against the full grid
     (bench_kernel_grid) and HalvingGridSearchCV(StandardScaler + SVC, factor=3, n_jobs=2) on
     the same rows, folds, grid, tol and cache size (`anchors.halving_kernel`, its fit call); the
     chosen (C, gamma)'s CV error against the full grid's best and its standard error over the folds.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..results.searches import read_state
from . import anchors
from .harness import Options, prebuild, run_ours
from .kernel import KERNEL_GRID

SEARCH_LINEAR = "bench_search_linear"
SEARCH_KERNEL = "bench_search_kernel"
DENSE_GRID = ["search=grid", "solvers.dcd.grid.C='geomspace(0.001, 1000, 200)'"]


def _search_outcome(run_dir: Path) -> dict:
    """What a search's search.json says of its (one) search, and the fits' passes and CV errors."""
    res = pd.read_parquet(run_dir / "results.parquet")
    cv = 1.0 - res.groupby("C")["test_accuracy"].mean()
    out = {"fits": len(res), "passes": int(res["n_iter"].sum()), "best_C": float(cv.idxmin()),
           "best_cv_error": float(cv.min()), "cv": cv}
    state = read_state(run_dir)
    if state:
        s = state["searches"][0]
        out.update(rounds=len(s.get("rounds") or s.get("rungs") or []), certified=s.get("certified"),
                   bound_min=s.get("bound_min"), reason=s.get("reason"))
    return out


def scenario_cs(opts: Options) -> list[dict]:
    """The certified C search against a dense 200-point grid and LIBLINEAR's `train -C` search."""
    prebuild(SEARCH_LINEAR)
    rows = []
    for r in range(opts.reps):
        ours = run_ours([], opts.work, f"cs{r}", experiment=SEARCH_LINEAR)
        mine = _search_outcome(opts.work / f"cs{r}")
        dense = run_ours(DENSE_GRID, opts.work, f"cs-dense{r}", experiment=SEARCH_LINEAR)
        grid = _search_outcome(opts.work / f"cs-dense{r}")
        ll = anchors.run("liblinear_search", experiment=SEARCH_LINEAR, start_C=0.001)
        # The search's chosen C scored on the dense grid's fits: the grid C nearest it.
        nearest = grid["cv"].index[np.argmin(np.abs(np.log(grid["cv"].index / mine["best_C"])))]
        rows.append({"scenario": "cs", "rep": r, "load": ours["load"], "ours_wall_s": ours["wall_s"],
                     "ours_execute_s": ours["execute_s"], "ours_fits": mine["fits"], "ours_passes": mine["passes"],
                     "ours_rounds": mine.get("rounds"), "certified": mine.get("certified"),
                     "ours_best_C": mine["best_C"], "ours_best_cv_error": mine["best_cv_error"],
                     "bound_min": mine.get("bound_min"),
                     "dense_wall_s": dense["wall_s"], "dense_fits": grid["fits"], "dense_passes": grid["passes"],
                     "dense_best_C": grid["best_C"], "dense_best_cv_error": grid["best_cv_error"],
                     "dense_cv_error_at_ours": float(grid["cv"][nearest]),
                     "liblinear_s": ll["fit_s"], "liblinear_fits": 5 * ll["c_values"], "liblinear_best_C": ll["best_C"],
                     "liblinear_cv_error": 1.0 - ll["cv_accuracy"],
                     "ratio_vs_dense": ours["wall_s"] / dense["wall_s"], "ratio_vs_liblinear": ours["wall_s"] / ll["fit_s"],
                     "within_epsilon": mine["best_cv_error"] - grid["best_cv_error"] <= 0.005,
                     "reason": mine.get("reason")})
        print(rows[-1], flush=True)
    return rows


def scenario_hs(opts: Options) -> list[dict]:
    """Successive halving over the kernel grid against the full grid and HalvingGridSearchCV."""
    extra = list(opts.extra)
    prebuild(KERNEL_GRID, extra)
    rows = []
    for r in range(opts.reps):
        ours = run_ours(extra, opts.work, f"hs{r}", experiment=SEARCH_KERNEL)
        state = read_state(opts.work / f"hs{r}")["searches"][0]
        res = pd.read_parquet(opts.work / f"hs{r}" / "results.parquet")
        full = run_ours(extra, opts.work, f"hs-full{r}", experiment=KERNEL_GRID)
        grid = pd.read_parquet(opts.work / f"hs-full{r}" / "results.parquet")
        err = (1.0 - grid.set_index(["C", "gamma"])["test_accuracy"]).groupby(level=[0, 1])
        mean, se = err.mean(), err.std() / np.sqrt(err.size())
        best = tuple(float(x) for x in mean.idxmin())
        pick = (float(state["best"]["point"]["C"]), float(state["best"]["point"]["gamma"]))
        hgs = anchors.run("halving_kernel", overrides=extra, experiment=KERNEL_GRID)
        rows.append({"scenario": "hs", "rep": r, "load": ours["load"], "ours_wall_s": ours["wall_s"],
                     "ours_execute_s": ours["execute_s"], "ours_fits": len(res), "ours_passes": int(res["n_iter"].sum()),
                     "ours_rungs": " -> ".join(f"{x['n_candidates']}@{x['resource']:.3g}" for x in state["rungs"]),
                     "ours_pick": str(pick), "ours_pick_full_grid_cv_error": float(mean[pick]),
                     "full_wall_s": full["wall_s"], "full_fits": len(grid), "full_passes": int(grid["n_iter"].sum()),
                     "full_best": str(best), "full_best_cv_error": float(mean[best]), "full_best_se": float(se[best]),
                     "within_one_se": float(mean[pick]) <= float(mean[best] + se[best]),
                     "hgs_fit_s": hgs["fit_s"], "hgs_fits": hgs["fits"],
                     "hgs_rungs": " -> ".join(f"{n}@{m}" for n, m in zip(hgs["n_candidates"], hgs["n_resources"])),
                     "hgs_pick": str((hgs["best_C"], hgs["best_gamma"])),
                     "hgs_pick_full_grid_cv_error": float(mean.get((hgs["best_C"], hgs["best_gamma"]), np.nan)),
                     "ratio_vs_full": ours["wall_s"] / full["wall_s"], "ratio_vs_hgs": ours["wall_s"] / hgs["fit_s"]})
        print(rows[-1], flush=True)
    return rows
