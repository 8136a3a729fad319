"""The C sweep against GridSearchCV(LinearSVC) and LIBLINEAR's own search (docs/benchmarks/sweep.md).

Each scenario is an override of conf/experiment/bench_sweep.yaml (8 C x 5 folds of dcd, squared
hinge, tol 0.1, 100k rcv1_like rows). The anchor, GridSearchCV(LinearSVC), is timed around its
``fit`` call alone (`anchors.gridsearch_linear`: data already in memory, ``refit=False``), which
favours it. Ours and the anchor alternate, so machine load drifts through both alike.

  a  the experiment as it is: ours against GridSearchCV, n_jobs=2.
  b  200 fits, 4 C x 50 random splits of 100k rows (50 warm C paths), on 1 and on 2 workers:
     sized so the fits outweigh the command's fixed costs; beside the speedup, where it goes:
     the fits' own scaling (summed fit time, 1 over 2 workers), the CPU seconds of the task
     processes, of the client (with scheduler and nannies) and of the Dask workers, the workers'
     imbalance; and GridSearchCV's own speedup on the same 200 fits, n_jobs=1 against 2 (what
     two processes get on this machine).
  e  8 C x 5 folds on sparse text, the shape a linear SVM is mostly used on: rcv1_like at RCV1's
     shape (100k rows, 47,236 features, 76 nonzeros a row), squared hinge, tol 0.1, no
     intercept, C 0.01..30: ours (on a fresh local cluster, and on a kept one by its launcher
     and by itself) against GridSearchCV(LinearSVC, n_jobs=2), and beside it LIBLINEAR's own
     warm-started parameter search, ``train -C -v 5 -s 2`` (`anchors.liblinear_search`).
"""
from __future__ import annotations

from . import anchors
from .harness import Options, kept_cluster, prebuild, run_ours

# 50 paths of 4 points: 25 tasks per worker, so the last task leaves little imbalance (25
# paths of 8 left one worker 13 of them: at most 25/13 = 1.92x). The experiment's 100k
# rows: the fits, not a command's fixed costs (Python, Hydra, the cluster and its warm-up,
# tables, report), must dominate for 1.8x; at 20k rows the fits were too short for any
# speedup of them to get the whole command there (The sweep benchmark, "How to read it").
OVERRIDES_B = ["cv=repeated", "cv.rounds=50", "cv.test_size=0.2", "solvers.dcd.grid.C=[0.01,0.1,1,10]"]
# RCV1's shape (bench_linear's), no intercept, C up to 30.
OVERRIDES_E = ["++datasets.rcv1_like.params.n_features=47236", "++datasets.rcv1_like.params.mean_nnz=76.0",
               "++datasets.rcv1_like.params.margin=0.5", "solvers.dcd.params.intercept=none",
               "solvers.dcd.grid.C=[0.01,0.03,0.1,0.3,1,3,10,30]"]


def scenario_a(opts: Options) -> list[dict]:
    """8 C x 5 folds of 100k rows: our whole command against GridSearchCV(LinearSVC, n_jobs=2)'s fit."""
    prebuild("bench_sweep")
    rows = []
    for r in range(opts.reps):
        ours = run_ours([], opts.work, f"a{r}")
        gs = anchors.run("gridsearch_linear")
        rows.append({"scenario": "a", "rep": r, "ours_wall_s": ours["wall_s"], "ours_fit_s": ours["fit_s"],
                     "ours_task_s": ours["task_s"], "dask_tasks": ours["dask_tasks"],
                     "gridsearch_fit_s": gs["fit_s"], "gridsearch_process_s": gs["process_s"],
                     "ratio_wall_vs_gridsearch_fit": ours["wall_s"] / gs["fit_s"],
                     "ours_accuracy": ours["test_accuracy"], "gridsearch_accuracy": gs["test_accuracy"]})
    return rows


def scenario_b(opts: Options) -> list[dict]:
    """200 fits on 1 and on 2 workers: the speedup, where a shortfall goes, and GridSearchCV's own."""
    prebuild("bench_sweep", OVERRIDES_B)
    rows = []
    for r in range(opts.reps):
        # Alternate which goes first, so a drifting load weighs on both alike.
        order = (1, 2) if r % 2 == 0 else (2, 1)
        runs = {n: run_ours(OVERRIDES_B + [f"cluster.n_workers={n}"], opts.work, f"b{n}_{r}") for n in order}
        # The anchor's own scaling on the same 200 fits: what this machine allows two processes.
        anchor = {n: anchors.run("gridsearch_linear", overrides=OVERRIDES_B, n_jobs=n)["fit_s"] for n in order}
        one, two = runs[1], runs[2]
        # Where a shortfall from 2x comes from: the fits' own scaling (summed fit time on one
        # worker over that on two: 1.0 when two fits at a time run as fast as one), the task
        # processes' CPU (fits, data, folds: the same work on 1 and 2 workers), the CPU of the
        # processes that are not fits (client with scheduler and nannies; Dask workers), taken
        # from the fits' cores on 2 workers, and the imbalance (one worker done, one running).
        row = {"scenario": "b", "rep": r, "fits": two["fits"], "dask_tasks": two["dask_tasks"],
               "load_1": one["load"], "load_2": two["load"]}
        for key in ("wall", "execute", "fit", "cpu_task", "cpu_client", "cpu_worker"):
            row.update({f"{key}_1_s": one[f"{key}_s"], f"{key}_2_s": two[f"{key}_s"]})
        rows.append({**row, "imbalance_2_s": two["imbalance_s"], "speedup_wall": one["wall_s"] / two["wall_s"],
                     "speedup_execute": one["execute_s"] / two["execute_s"],
                     "fit_scaling": one["fit_s"] / two["fit_s"],
                     "gridsearch_1_s": anchor[1], "gridsearch_2_s": anchor[2],
                     "gridsearch_speedup": anchor[1] / anchor[2]})
    return rows


def scenario_e(opts: Options) -> list[dict]:
    """8 C x 5 folds of RCV1-shaped text: ours (fresh, kept) against GridSearchCV and LIBLINEAR's search.

    Each rep: ours on a fresh local cluster, ours on a kept one (`kept_cluster`, started once
    and warmed for dcd before the reps: its first rep's command reads the data into its
    sandboxes, later ones find it there, as GridSearchCV's fit finds it in memory) run by its
    launcher and by itself, GridSearchCV and LIBLINEAR's search, in turn."""
    prebuild("bench_sweep", OVERRIDES_E)
    rows = []
    with kept_cluster(["dcd"]):
        run_ours([*OVERRIDES_E, "cluster=kept"], opts.work, "e-kept-first")    # its sandboxes read the data
        for r in range(opts.reps):
            ours = run_ours(OVERRIDES_E, opts.work, f"e{r}")
            kept = run_ours([*OVERRIDES_E, "cluster=kept"], opts.work, f"e{r}-kept")
            itself = run_ours([*OVERRIDES_E, "cluster=kept"], opts.work, f"e{r}-kept-self", launcher=False)
            gs = anchors.run("gridsearch_linear", overrides=OVERRIDES_E)
            ll = anchors.run("liblinear_search", overrides=OVERRIDES_E)
            rows.append({"scenario": "e", "rep": r, "load": ours["load"], "ours_wall_s": ours["wall_s"],
                         "ours_kept_wall_s": kept["wall_s"], "ours_kept_execute_s": kept["execute_s"],
                         "ours_kept_no_launcher_wall_s": itself["wall_s"],
                         "ratio_kept_vs_gridsearch_fit": kept["wall_s"] / gs["fit_s"],
                         "ours_execute_s": ours["execute_s"], "ours_fit_s": ours["fit_s"], "ours_task_s": ours["task_s"],
                         "dask_tasks": ours["dask_tasks"], "imbalance_s": ours["imbalance_s"],
                         "gridsearch_fit_s": gs["fit_s"], "liblinear_search_s": ll["fit_s"],
                         "ratio_wall_vs_gridsearch_fit": ours["wall_s"] / gs["fit_s"],
                         "ratio_wall_vs_liblinear_search": ours["wall_s"] / ll["fit_s"],
                         "ours_accuracy": ours["test_accuracy"], "gridsearch_accuracy": gs["test_accuracy"],
                         "liblinear_best_C": ll["best_C"], "liblinear_cv_accuracy": ll["cv_accuracy"]})
    return rows
