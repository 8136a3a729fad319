"""The kernel grid against GridSearchCV(StandardScaler + SVC) (docs/benchmarks/kernel.md).

  f  the kernel grid (conf/experiment/bench_kernel_grid.yaml): smo, rbf, 8 C x 6 gamma x 5 folds
     on 10,000 rows of MNIST ones vs sevens, standardised per training fold: the whole command
     against GridSearchCV(make_pipeline(StandardScaler, SVC), n_jobs=2) on the same rows, folds,
     grid, tol and cache size (`anchors.gridsearch_kernel`, its fit call alone).

``--set KEY=VALUE`` adds Hydra overrides to every run, ours and the anchor alike (a smaller grid,
another data shape).
"""
from __future__ import annotations

from . import anchors
from .harness import Options, prebuild, run_ours

KERNEL_GRID = "bench_kernel_grid"


def scenario_f(opts: Options) -> list[dict]:
    """The kernel C x gamma grid: our whole command against GridSearchCV(StandardScaler + SVC)'s fit."""
    extra = list(opts.extra)
    prebuild(KERNEL_GRID, extra)
    rows = []
    for r in range(opts.reps):
        ours = run_ours(extra, opts.work, f"f{r}", experiment=KERNEL_GRID)
        gs = anchors.run("gridsearch_kernel", overrides=extra, experiment=KERNEL_GRID)
        rows.append({"scenario": "f", "rep": r, "fits": ours["fits"], "dask_tasks": ours["dask_tasks"],
                     "ours_wall_s": ours["wall_s"], "ours_execute_s": ours["execute_s"],
                     "ours_fit_s": ours["fit_s"], "ours_task_s": ours["task_s"],
                     "gridsearch_fit_s": gs["fit_s"], "gridsearch_process_s": gs["process_s"],
                     "ratio_wall_vs_gridsearch_fit": ours["wall_s"] / gs["fit_s"],
                     "ours_accuracy": ours["test_accuracy"], "gridsearch_accuracy": gs["test_accuracy"],
                     "converged": ours["converged"], "load": ours["load"]})
    return rows
