"""`python -m pipeline.bench`: the sweep benchmark, ours beside its anchor in one run, as one
table of ratios (docs/benchmarks/sweep.md reads them).

Every measurement is a whole command a user waits for, run as a subprocess from a cold start:
``python -m pipeline +experiment=bench_sweep ...`` (Python start, Hydra, planning, the Dask
cluster, data loading, fits, tables and report). The anchor, GridSearchCV(LinearSVC), is timed
around its ``fit`` call alone (data already in memory, ``refit=False``), which favours it.
Ours and the anchor alternate, so machine load drifts through both alike.

Scenarios (each an override of conf/experiment/bench_sweep.yaml):
  a  8 C x 5 folds, squared hinge, tol 0.1, 100k rows: ours against GridSearchCV, n_jobs=2.
  b  200 fits, 4 C x 50 random splits of 100k rows (50 warm C paths), on 1 and on 2 workers:
     sized so the fits outweigh the command's fixed costs; beside the speedup, where it goes:
     the fits' own scaling (summed fit time, 1 over 2 workers), the CPU seconds of the task
     processes, of the client (with scheduler and nannies) and of the Dask workers, the workers'
     imbalance; and GridSearchCV's own speedup on the same 200 fits, n_jobs=1 against 2 (what
     two processes get on this machine).
  c  2000 short fits (8 C x 250 random splits of 26k rows, folds sized so a fit takes tens of
     milliseconds, not a few), cold: execute phase against the summed fit times over the
     workers: what the engine adds around a short fit.
  d  10,000 tiny fits: scheduling overhead and the client's peak memory against 1,000.
  e  8 C x 5 folds on sparse text, the shape a linear SVM is mostly used on: rcv1_like at RCV1's
     shape (100k rows, 47,236 features, 76 nonzeros a row), squared hinge, tol 0.1, no
     intercept, C 0.01..30: ours against GridSearchCV(LinearSVC, n_jobs=2), and beside it
     LIBLINEAR's own warm-started parameter search, ``train -C -v 5 -s 2`` (liblinear-official,
     the `bench` extra), timed around ``train`` on a prebuilt problem.
  u  dcd against upstream LIBLINEAR, solver against solver without the pipeline around it: one
     solve at C = 1, eps 0.1, no bias, squared hinge (-s 1) and hinge (-s 3), on rcv1_like at
     80k rows and at RCV1's size (804,414 rows, conf/datasets/rcv1_full.yaml; ``--full``), timed
     whole call against whole call in alternation in one process: ``solvers.fit(Problem(X, y,
     ...), "dcd")`` (checks, copies, the certificates) against ``train(prob, "-s 1 -c 1 -e
     0.1")`` on a prebuilt ``prob`` (which favours LIBLINEAR), with both primal objectives.
  g  50,000 tiny fits (conf/experiment/bench_large.yaml: 5,000 C values x 10 folds of dcd on
     toy_blobs, no references): the whole command against its own execute phase (goal <= 2x),
     the dry run (compose and plan), the tables, the shards' bytes a fit (goal <= 200) and the
     client's peak memory (goal <= 600 MB), from the command's timing line in run.log.
  h  scenario g at 1,000,000 fits (5,000 C values x 200 random splits): the plan and the tables
     (goal <= 30 s each) and the client's peak memory.
  t  scenario g with traces on, as a new user runs it (conf/experiment/bench_large_traced.yaml:
     5,000 C values from 0.001 x 10 folds, dcd's defaults): the whole command against its execute
     phase (goal <= 2x), the report's seconds (goal <= 10 s), the client's peak over the whole
     command (goal <= 600 MB), the figure files (goal <= 30) and the interactive page's size.
  f  the kernel grid (conf/experiment/bench_kernel_grid.yaml): smo, rbf, 8 C x 6 gamma x 5 folds
     on 10,000 rows of MNIST ones vs sevens, standardised per training fold: the whole command
     against GridSearchCV(make_pipeline(StandardScaler, SVC), n_jobs=2) on the same rows, folds,
     grid, tol and cache size (its fit call alone).
  k  the fixed cost of a command, what a user waits for beyond the fits themselves
     (conf/experiment/bench_fixed.yaml: 10 fits of milliseconds): the whole command on a fresh
     local cluster and on kept ones (`svmbench cluster start`, cluster=kept), with TLS (the
     default) and plain tcp:// (`--security none`) in turn, there by its launcher and by itself
     (SVMBENCH_LAUNCHER=0), split by its timing line's phases.
  cs  the certified C search (conf/experiment/bench_search_linear.yaml: scenario e's sparse text, C
     in [1e-3, 1e3], epsilon 0.5 points of CV error) against a dense 200-point grid over the same
     range (the same command with search=grid: the check of the chosen C) and LIBLINEAR's own
     ``train -C -v 5 -s 2 -c 0.001`` (its C search from 0.001 up, to its own cap of 1024),
     whole command against whole command (LIBLINEAR: its train call on a prebuilt problem); the
     fits and passes each spent, and the search's guarantee reached or not.
  hs  successive halving over scenario f's kernel grid (conf/experiment/bench_search_kernel.yaml:
     factor 3, each rung on a share of the training rows) against the full grid
     (bench_kernel_grid) and HalvingGridSearchCV(StandardScaler + SVC, factor=3, n_jobs=2) on
     the same rows, folds, grid, tol and cache size (its fit call); the chosen (C, gamma)'s CV
     error against the full grid's best and its standard error over the folds.
  libsvm  smo's whole call (`SVMClassifier(solver="smo").fit`) against LIBSVM's own `svm_train`
     (libsvm-official, the `bench` extra) on a problem built beforehand, on the same standardised
     MNIST rows (digits 0-4 against 5-9, stratified 5,000 and 20,000 rows: `--libsvm-rows`): rbf,
     gamma 1 / 784, C in {1, 10}, eps 1e-3, 200 MB cache, shrinking on; in one process, the two
     alternating `--reps` times, the minimum of each kept.
  dist  one problem larger than a worker (pipeline/bench_distributed.py): rcv1_like at `--dist-rows`
     rows (2,000,000), hinge, C = 1: cocoa on 2 `dask worker` processes of 1 GB each, beside
     single-process dcd and Spark MLlib's LinearSVC on local[2] (pyspark, the `bench` extra), to
     (P - f*)/|f*| <= 1e-3 against dcd's certified f*; cocoa's rounds and bytes at K = 2, 4, 8
     and a time-per-round model.

The datasets are built into the store before anything is timed (`prebuild`).

    python -m pipeline.bench [--only a,b,c,d,e,f,g,h,k,t,u,cs,hs,libsvm,dist] [--reps 2] [--full] [--out bench.md]
                             [--set KEY=VALUE ...] [--libsvm-rows 5000,20000] [--dist-rows 2000000]

--set adds Hydra overrides to every run of scenarios f and hs (ours and the anchors alike), e.g.
a smaller kernel grid: ``--only f --set 'solvers.smo.grid.gamma=[0.001,0.01]'``, or another
data shape: ``--only hs --set datasets.mnist_1v7.builder=mnist_3v8``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .bench_distributed import scenario_dist
from .report import markdown_table

A_CS = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 50.0]
SMALL = ["datasets.rcv1_like.params.n_samples=26000"]
SCENARIOS = {
    # 50 paths of 4 points: 25 tasks per worker, so the last task leaves little imbalance (25
    # paths of 8 left one worker 13 of them: at most 25/13 = 1.92x). The experiment's 100k
    # rows: the fits, not a command's fixed costs (Python, Hydra, the cluster and its warm-up,
    # tables, report), must dominate for 1.8x; at 20k rows the fits were too short for any
    # speedup of them to get the whole command there (The sweep benchmark, "How to read it").
    "b": ["cv=repeated", "cv.rounds=50", "cv.test_size=0.2", "solvers.dcd.grid.C=[0.01,0.1,1,10]"],
    # 20,800 training rows, so that dcd's fits are tens of milliseconds, the short fits a sweep
    # is made of; dcd got faster twice and the folds grew with it (The sweep benchmark, "How to
    # read it" and "What is left").
    "c": SMALL + ["cv=repeated", "cv.rounds=250", "cv.test_size=0.2", "run.warm_start=false"],
    # RCV1's shape (bench_linear's), no intercept, C up to 30.
    "e": ["++datasets.rcv1_like.params.n_features=47236", "++datasets.rcv1_like.params.mean_nnz=76.0",
          "++datasets.rcv1_like.params.margin=0.5", "solvers.dcd.params.intercept=none",
          "solvers.dcd.grid.C=[0.01,0.03,0.1,0.3,1,3,10,30]"],
    "d": ["datasets.rcv1_like.params.n_samples=2000", "datasets.rcv1_like.max_rows=200", "cv=repeated",
          "cv.test_size=0.5",
          "solvers.dcd.grid.C=[0.1,0.3,1,3,10,30,100,300,1000,3000]", "run.warm_start=false"],
}


# How often `_cpu_by_role` reads the command's processes' CPU times (cheap in our own CPU; a
# task process's last SAMPLE_S before it exits is lost, against minutes of fits).
SAMPLE_S = 0.5


def _role(proc, command_pid: int) -> str:
    """What a process of the command is (cluster=local): `client` (the command itself, which
    also runs the scheduler and the nannies), `task` (a sandbox child: fits, data loading,
    fold extraction) or `worker` (a Dask worker process, which relays to its sandbox)."""
    if proc.pid == command_pid:
        return "client"
    return "task" if "pipeline.engine.sandbox" in " ".join(proc.cmdline()) else "worker"


def _cpu_by_role(proc: subprocess.Popen) -> dict:
    """Run the command to its end, reading the CPU seconds (user + system) of it and each of its
    descendants, summed per role (`_role`); and `imbalance_s`, how many more CPU seconds the
    busiest task process used than the least busy: the work one worker still has when the
    other is done (idle, the tail's length). CPU time is what each process used, whatever else
    loads the machine."""
    import psutil
    root = psutil.Process(proc.pid)
    cpu, roles = {}, {}
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    if p.pid not in roles:
                        roles[p.pid] = _role(p, proc.pid)
                    cpu[p.pid] = sum(p.cpu_times()[:2])
        # Waited on, not slept: the command's wall is read as soon as it ends, not up to
        # SAMPLE_S later (a visible share of a short command's wall).
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=SAMPLE_S)
    totals = {f"cpu_{r}_s": sum(c for pid, c in cpu.items() if roles[pid] == r) for r in ("client", "worker", "task")}
    tasks = [c for pid, c in cpu.items() if roles[pid] == "task"]
    return {**totals, "imbalance_s": max(tasks) - min(tasks) if tasks else float("nan")}


def run_ours(overrides: list[str], work: Path, tag: str, experiment: str = "bench_sweep", launcher: bool = True) -> dict:
    """One whole `python -m pipeline +experiment=bench_sweep` command: its wall time, the
    cluster's start and warm-up (and how much of it planning did not cover), the execute
    phase's wall (which starts once the workers are warm), Dask task count, the client's peak
    RSS and the workers' dataset reads and fold extractions (from run.log), the summed fit and
    task times (from results.parquet), the CPU seconds of its processes by role and the task
    processes' imbalance (`_cpu_by_role`), and the load average (1 min) as it started.
    launcher=False: a kept cluster's command runs by itself (the launcher's child is not the
    command's descendant, so its client CPU is not counted with the launcher)."""
    run_dir = work / tag
    cmd = [sys.executable, "-m", "pipeline", f"+experiment={experiment}", f"hydra.run.dir={run_dir}", *overrides]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "SVMBENCH_LAUNCHER": "1" if launcher else "0"})
    cpu = _cpu_by_role(proc)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    log = (run_dir / "run.log").read_text()
    m = re.search(r"(\d+) tasks: .* ([\d.]+) s wall \((\d+) Dask tasks; client peak RSS (\d+) MB\)", log)
    res = pd.read_parquet(run_dir / "results.parquet")
    loads = re.search(r"workers read (\d+) datasets and extracted (\d+) folds", log)
    # The cluster's start and warm-up, before the execute phase's clock (overlapping planning).
    startup = re.search(r"cluster start and warm-up ([\d.]+) s \(([\d.]+) s of it after planning\)", log)
    timing = {phase: float(sec) for phase, sec in re.findall(r"(?<=[:,;] )([a-z -]+) ([\d.]+) s", _line(log, "timing: "))}
    # Over the whole command: the client's own peak plus its report's processes' own memory.
    peak = re.search(r"(\d+) MB with the report's processes' own memory", log) or \
        re.search(r"client peak RSS (\d+) MB over the run", log)
    shard_bytes = sum(p.stat().st_size for p in (run_dir / "shards").iterdir())
    return {"timing": timing, "client_peak_mb": float(peak.group(1)) if peak else None,
            "shard_bytes": shard_bytes,
            "startup_s": float(startup.group(1)) if startup else None,
            "startup_wait_s": float(startup.group(2)) if startup else None, "wall_s": wall, "dataset_reads": int(loads.group(1)), "fold_extractions": int(loads.group(2)), "execute_s": float(m.group(2)), "fits": int(m.group(1)), "dask_tasks": int(m.group(3)),
            "client_rss_mb": float(m.group(4)), "fit_s": float(res["fit_time_s"].sum()),
            "task_s": float(res["task_time_s"].sum()), "converged": int((res["status"] == "converged").sum()),
            "test_accuracy": float(res["test_accuracy"].mean()), "load": load, **cpu}


# The sweep's dataset as our run reads it (argv[1]: the overrides as JSON): X, y, d (the plan's entry).
SWEEP_DATA = r"""
import json, sys, time, warnings
import numpy as np
from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import binary_labels, build_plan
from pipeline.run import materialise_datasets
from pipeline.engine.tasks import load_dataset

exp = validate(compose(["+experiment=bench_sweep", *json.loads(sys.argv[1])]))
plan = build_plan(exp, materialise_datasets(exp))
d = next(iter(plan.datasets.values()))
ds = load_dataset(exp.store_root, d["name"], d["fingerprint"])
y, _ = binary_labels(ds.y, d["positive"])
X = ds.X
"""

ANCHOR = SWEEP_DATA + r"""
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVC

folds = d["folds"]                                   # the very folds our sweep uses
p = dict(exp.solvers["dcd"].params)
est = LinearSVC(dual=True, loss=p["loss"], tol=p["tol"], max_iter=p["max_iter"],
                fit_intercept=p.get("intercept", "regularized") != "none")
gs = GridSearchCV(est, {"C": list(exp.solvers["dcd"].grid["C"])}, cv=folds, n_jobs=int(sys.argv[2]), refit=False)
warnings.simplefilter("ignore")
t0 = time.perf_counter()
gs.fit(X, y)
fit_s = time.perf_counter() - t0
print(json.dumps({"fit_s": fit_s, "test_accuracy": float(np.mean(gs.cv_results_["mean_test_score"]))}))
"""


def run_anchor(overrides: list[str], n_jobs: int = 2, script: str = ANCHOR) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", script, json.dumps(overrides), str(n_jobs)], check=True,
                         capture_output=True, text=True).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    rec["process_s"] = time.perf_counter() - t0
    return rec


KERNEL_GRID = "bench_kernel_grid"

# GridSearchCV(SVC) over the kernel grid's rows, folds, C x gamma grid, tol and cache size. The
# rows are the sweep's own (`tasks.split_data`: the max_rows subsample, labels as -1/+1, the folds),
# and a pipeline scales each training fold as the sweep's workers do (StandardScaler, without
# centring for sparse rows: tasks._scale), so both fit the same problems.
KERNEL_ANCHOR = r"""
import json, sys, time, warnings
import numpy as np
import scipy.sparse as sp
from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.run import materialise_datasets
from pipeline.engine.tasks import split_data
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

exp = validate(compose(["+experiment=bench_kernel_grid", *json.loads(sys.argv[1])]))
plan = build_plan(exp, materialise_datasets(exp))
spec = next(iter(plan.fits.values()))
rows, y, _, folds, _ = split_data(exp.store_root, spec["data"])
X = rows.X
assert spec["data"]["scale"] == "standard", spec["data"]["scale"]
solver = exp.solvers["smo"]
p, grid = dict(solver.params), dict(solver.grid)
est = make_pipeline(StandardScaler(with_mean=not sp.issparse(X)),
                    SVC(kernel="rbf", tol=p["tol"], cache_size=p["cache_size"]))
gs = GridSearchCV(est, {"svc__C": list(grid["C"]), "svc__gamma": list(grid["gamma"])}, cv=folds,
                  n_jobs=int(sys.argv[2]), refit=False)
warnings.simplefilter("ignore")
t0 = time.perf_counter()
gs.fit(X, y)
fit_s = time.perf_counter() - t0
print(json.dumps({"fit_s": fit_s, "fits": len(gs.cv_results_["params"]) * len(folds),
                  "test_accuracy": float(np.mean(gs.cv_results_["mean_test_score"]))}))
"""


def scenario_f(work: Path, reps: int, extra: list[str] = ()) -> list[dict]:
    rows = []
    for r in range(reps):
        ours = run_ours([*extra], work, f"f{r}", experiment=KERNEL_GRID)
        gs = run_anchor([*extra], script=KERNEL_ANCHOR)
        rows.append({"scenario": "f", "rep": r, "fits": ours["fits"], "dask_tasks": ours["dask_tasks"],
                     "ours_wall_s": ours["wall_s"], "ours_execute_s": ours["execute_s"],
                     "ours_fit_s": ours["fit_s"], "ours_task_s": ours["task_s"],
                     "gridsearch_fit_s": gs["fit_s"], "gridsearch_process_s": gs["process_s"],
                     "ratio_wall_vs_gridsearch_fit": ours["wall_s"] / gs["fit_s"],
                     "ours_accuracy": ours["test_accuracy"], "gridsearch_accuracy": gs["test_accuracy"],
                     "converged": ours["converged"], "load": ours["load"]})
    return rows


def mnist_halves(n_rows: int, seed: int = 0):
    """(X dense, y in {-1, +1}) of n_rows MNIST images from the store, digits 0-4 against 5-9,
    stratified, standardised (a column that is constant in these rows stays 0)."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from .data.datasets import ensure_dataset
    from .data.store import default_store_root, read_dataset
    root = str(default_store_root())
    ds = read_dataset(root, ensure_dataset(root, "mnist", {})["name"])
    y = np.where(ds.y >= 5, 1.0, -1.0)
    rows, _ = train_test_split(np.arange(len(y)), train_size=n_rows, stratify=y, random_state=seed)
    rows = np.sort(rows)
    return StandardScaler().fit_transform(ds.X[rows].toarray()), y[rows]


def scenario_libsvm(reps: int, sizes=(5000, 20000), Cs=(1.0, 10.0)) -> list[dict]:
    """smo's whole estimator call against svm_train (see the module docstring)."""
    import warnings

    from libsvm.svmutil import svm_parameter, svm_problem, svm_train

    from solvers import SVMClassifier
    warnings.simplefilter("ignore")
    out = []
    for n in sizes:
        X, y = mnist_halves(n)
        gamma = 1.0 / X.shape[1]
        prob = svm_problem(y, X)    # LIBSVM's own nodes, built outside the clock
        SVMClassifier(solver="smo", kernel="rbf", gamma=gamma).fit(X[:200], y[:200])  # numba loaded
        for C in Cs:
            param = svm_parameter(f"-s 0 -t 2 -c {C} -g {gamma} -e 0.001 -m 200 -h 1 -q")
            ours, theirs = [], []
            for _ in range(reps):
                load = os.getloadavg()[0]
                t = time.perf_counter()
                est = SVMClassifier(solver="smo", kernel="rbf", gamma=gamma, C=C, tol=1e-3,
                                    solver_params={"cache_size": 200.0, "shrinking": True}).fit(X, y)
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                model = svm_train(prob, param)
                theirs.append(time.perf_counter() - t)
            out.append({"scenario": "libsvm", "rows": n, "C": C, "smo_s": min(ours), "svm_train_s": min(theirs),
                        "ratio": min(ours) / min(theirs), "smo_sv": int(len(est.support_)),
                        "libsvm_sv": int(model.get_nr_sv()), "load": load})
            print(out[-1], flush=True)   # each case as it ends: the 20k cases take minutes
    return out


def scenario_a(work: Path, reps: int) -> list[dict]:
    rows = []
    for r in range(reps):
        ours = run_ours([], work, f"a{r}")
        gs = run_anchor([])
        rows.append({"scenario": "a", "rep": r, "ours_wall_s": ours["wall_s"], "ours_fit_s": ours["fit_s"],
                     "ours_task_s": ours["task_s"], "dask_tasks": ours["dask_tasks"],
                     "gridsearch_fit_s": gs["fit_s"], "gridsearch_process_s": gs["process_s"],
                     "ratio_wall_vs_gridsearch_fit": ours["wall_s"] / gs["fit_s"],
                     "ours_accuracy": ours["test_accuracy"], "gridsearch_accuracy": gs["test_accuracy"]})
    return rows


# LIBLINEAR's own C search on the same rows (its own 5 folds: -v draws them), timed around train.
LIBLINEAR_SEARCH = SWEEP_DATA + r"""
from liblinear.liblinearutil import problem, train

prob = problem(np.asarray(y, dtype=float), X)
t0 = time.perf_counter()
best_C, _, best_accuracy = train(prob, "-C -v 5 -s 2 -q")     # (C, p: SVR's, CV accuracy)
print(json.dumps({"fit_s": time.perf_counter() - t0, "best_C": best_C, "cv_accuracy": best_accuracy}))
"""


def run_liblinear_search(overrides: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", LIBLINEAR_SEARCH, json.dumps(overrides)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def scenario_e(work: Path, reps: int) -> list[dict]:
    """Each rep: ours on a fresh local cluster, ours on a kept one (`kept_cluster`, started once
    and warmed for dcd before the reps: its first rep's command reads the data into its
    sandboxes, later ones find it there, as GridSearchCV's fit finds it in memory) run by its
    launcher and by itself, GridSearchCV and LIBLINEAR's search, in turn."""
    rows = []
    with kept_cluster(["dcd"]):
        run_ours([*SCENARIOS["e"], "cluster=kept"], work, "e-kept-first")    # its sandboxes read the data
        for r in range(reps):
            ours = run_ours(SCENARIOS["e"], work, f"e{r}")
            kept = run_ours([*SCENARIOS["e"], "cluster=kept"], work, f"e{r}-kept")
            itself = run_ours([*SCENARIOS["e"], "cluster=kept"], work, f"e{r}-kept-self", launcher=False)
            gs = run_anchor(SCENARIOS["e"])
            ll = run_liblinear_search(SCENARIOS["e"])
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


SEARCH_LINEAR = "bench_search_linear"
SEARCH_KERNEL = "bench_search_kernel"
DENSE_GRID = ["search=grid", "solvers.dcd.grid.C='geomspace(0.001, 1000, 200)'"]

# LIBLINEAR's own C search on the rows our search reads (its own 5 folds: -v draws them), from
# C = 0.001 (-c) doubling to its cap, 1024; its lines "log2c= ... rate= ..." count the C values.
LIBLINEAR_C_SEARCH = SWEEP_DATA.replace("bench_sweep", SEARCH_LINEAR) + r"""
from liblinear.liblinearutil import problem, train

prob = problem(np.asarray(y, dtype=float), X)
t0 = time.perf_counter()
best_C, _, best_accuracy = train(prob, "-C -v 5 -s 2 -c 0.001")
print(json.dumps({"fit_s": time.perf_counter() - t0, "best_C": best_C, "cv_accuracy": best_accuracy}))
"""


def _search_outcome(run_dir: Path) -> dict:
    """What a search's search.json says of its (one) search, and the fits' passes and CV errors."""
    from .results.searches import read_state
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


def scenario_cs(work: Path, reps: int) -> list[dict]:
    rows = []
    for r in range(reps):
        ours = run_ours([], work, f"cs{r}", experiment=SEARCH_LINEAR)
        mine = _search_outcome(work / f"cs{r}")
        dense = run_ours(DENSE_GRID, work, f"cs-dense{r}", experiment=SEARCH_LINEAR)
        grid = _search_outcome(work / f"cs-dense{r}")
        proc = subprocess.run([sys.executable, "-c", LIBLINEAR_C_SEARCH, json.dumps([])], check=True,
                              capture_output=True, text=True)
        ll = json.loads(proc.stdout.strip().splitlines()[-1])
        ll_Cs = sum(1 for line in proc.stdout.splitlines() if line.startswith("log2c="))
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
                     "liblinear_s": ll["fit_s"], "liblinear_fits": 5 * ll_Cs, "liblinear_best_C": ll["best_C"],
                     "liblinear_cv_error": 1.0 - ll["cv_accuracy"],
                     "ratio_vs_dense": ours["wall_s"] / dense["wall_s"], "ratio_vs_liblinear": ours["wall_s"] / ll["fit_s"],
                     "within_epsilon": mine["best_cv_error"] - grid["best_cv_error"] <= 0.005,
                     "reason": mine.get("reason")})
        print(rows[-1], flush=True)
    return rows


# HalvingGridSearchCV(SVC) over the kernel grid's rows, folds and grid (KERNEL_ANCHOR's setup),
# factor 3, its default resource (n_samples, min_resources="exhaust").
HALVING_ANCHOR = KERNEL_ANCHOR.replace("from sklearn.model_selection import GridSearchCV",
                                       "from sklearn.experimental import enable_halving_search_cv  # noqa: F401\n"
                                       "from sklearn.model_selection import HalvingGridSearchCV").replace(
    """gs = GridSearchCV(est, {"svc__C": list(grid["C"]), "svc__gamma": list(grid["gamma"])}, cv=folds,
                  n_jobs=int(sys.argv[2]), refit=False)""",
    """gs = HalvingGridSearchCV(est, {"svc__C": list(grid["C"]), "svc__gamma": list(grid["gamma"])}, cv=folds,
                         factor=3, random_state=0, n_jobs=int(sys.argv[2]), refit=False)""").replace(
    """print(json.dumps({"fit_s": fit_s, "fits": len(gs.cv_results_["params"]) * len(folds),
                  "test_accuracy": float(np.mean(gs.cv_results_["mean_test_score"]))}))""",
    """print(json.dumps({"fit_s": fit_s, "fits": int(sum(gs.n_candidates_)) * len(folds),
                  "n_candidates": [int(n) for n in gs.n_candidates_], "n_resources": [int(n) for n in gs.n_resources_],
                  "best_C": gs.best_params_["svc__C"], "best_gamma": gs.best_params_["svc__gamma"],
                  "best_score": float(gs.best_score_)}))""")


def scenario_hs(work: Path, reps: int, extra: list[str] = ()) -> list[dict]:
    from .results.searches import read_state
    rows = []
    for r in range(reps):
        ours = run_ours([*extra], work, f"hs{r}", experiment=SEARCH_KERNEL)
        state = read_state(work / f"hs{r}")["searches"][0]
        res = pd.read_parquet(work / f"hs{r}" / "results.parquet")
        full = run_ours([*extra], work, f"hs-full{r}", experiment=KERNEL_GRID)
        grid = pd.read_parquet(work / f"hs-full{r}" / "results.parquet")
        err = (1.0 - grid.set_index(["C", "gamma"])["test_accuracy"]).groupby(level=[0, 1])
        mean, se = err.mean(), err.std() / np.sqrt(err.size())
        best = tuple(float(x) for x in mean.idxmin())
        pick = (float(state["best"]["point"]["C"]), float(state["best"]["point"]["gamma"]))
        hgs = run_anchor([*extra], script=HALVING_ANCHOR)
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


def _upstream_data(full: bool):
    """(X, y) of scenario u: rcv1_like at 80k rows (bench_linear's shape), or the store's rcv1_full."""
    import numpy as np
    from omegaconf import OmegaConf

    from .data.datasets import ensure_dataset, get_builder
    from .data.store import default_store_root, read_dataset
    if not full:
        X, y, _ = get_builder("rcv1_like")(n_samples=80000, n_features=47236, mean_nnz=76.0, margin=0.5)
        return X, np.where(y == y.max(), 1.0, -1.0)
    conf = OmegaConf.load(Path(__file__).parents[1] / "conf/datasets/rcv1_full.yaml")
    root = default_store_root()
    ds = read_dataset(root, ensure_dataset(root, conf.builder, OmegaConf.to_container(conf.params))["name"])
    return ds.X, np.where(ds.y == ds.y.max(), 1.0, -1.0)


def scenario_u(reps: int, full: bool) -> list[dict]:
    """dcd against LIBLINEAR's train, whole call against whole call, alternating (module docstring).
    The primal objectives show that both stopped at the same point: the same projected-gradient
    rule at the same eps (solvers/dcd.py, ``stop="pg"``), on other pass orders."""
    import numpy as np
    from liblinear.liblinearutil import problem as ll_problem, train

    import solvers
    from solvers import Budget, Problem

    rows = []
    for size in (["80k", "full"] if full else ["80k"]):
        X, y = _upstream_data(size == "full")
        prob = ll_problem(y, X)

        def primal(w, loss):
            xi = np.maximum(1.0 - y * (X @ w), 0.0)
            return 0.5 * float(w @ w) + float(xi.sum() if loss == "hinge" else xi @ xi)

        for loss, s in (("squared_hinge", 1), ("hinge", 3)):
            solvers.fit(Problem(X[:1000], y[:1000], loss=loss), "dcd")      # compiled before the clock
            for r in range(reps):
                t0 = time.perf_counter()
                model = train(prob, f"-s {s} -c 1 -e 0.1 -q")
                ll_s = time.perf_counter() - t0
                w = np.asarray(model.get_decfun()[0]) * (1.0 if model.get_labels()[0] == 1 else -1.0)
                t0 = time.perf_counter()
                fit = solvers.fit(Problem(X, y, C=1.0, loss=loss, intercept="none"), "dcd",
                                  budget=Budget(tol=0.1, max_iter=1000))
                ours_s = time.perf_counter() - t0
                rows.append({"scenario": "u", "data": size, "loss": loss, "rep": r, "load": os.getloadavg()[0],
                             "dcd_s": ours_s, "dcd_fit_s": fit.fit_time_s, "train_s": ll_s,
                             "ratio": ours_s / ll_s, "dcd_passes": fit.n_iter, "dcd_primal": fit.primal,
                             "train_primal": primal(w, loss), "primal_rel_diff": fit.primal / primal(w, loss) - 1})
                print(rows[-1], flush=True)
    return rows


def scenario_b(work: Path, reps: int) -> list[dict]:
    rows = []
    for r in range(reps):
        # Alternate which goes first, so a drifting load weighs on both alike.
        order = (1, 2) if r % 2 == 0 else (2, 1)
        runs = {n: run_ours(SCENARIOS["b"] + [f"cluster.n_workers={n}"], work, f"b{n}_{r}") for n in order}
        # The anchor's own scaling on the same 200 fits: what this machine allows two processes.
        anchor = {n: run_anchor(SCENARIOS["b"], n_jobs=n)["fit_s"] for n in order}
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


def _overhead_row(name: str, run: dict, workers: int = 2) -> dict:
    ideal = run["fit_s"] / workers
    return {"scenario": name, "fits": run["fits"], "dask_tasks": run["dask_tasks"], "wall_s": run["wall_s"],
            "startup_s": run["startup_s"], "startup_wait_s": run["startup_wait_s"], "execute_s": run["execute_s"], "sum_fit_s": run["fit_s"], "sum_task_s": run["task_s"],
            "mean_fit_ms": 1000 * run["fit_s"] / run["fits"],
            "execute_over_fits_per_worker": run["execute_s"] / ideal,
            "scheduling_overhead": 1 - (run["task_s"] / workers) / run["execute_s"],
            "client_rss_mb": run["client_rss_mb"], "dataset_reads": run["dataset_reads"],
            "fold_extractions": run["fold_extractions"],
            # CPU seconds over the whole command, by process role (`_cpu_by_role`): where the
            # execute phase's overhead goes on cores the fits share.
            **{k: run[k] for k in ("cpu_client_s", "cpu_worker_s", "cpu_task_s", "load")}}


def scenario_c(work: Path, reps: int) -> list[dict]:
    grid = "solvers.dcd.grid.C=[0.1,0.2,0.3,0.5,0.7,1,1.5,2]"
    return [_overhead_row("c", run_ours(SCENARIOS["c"] + [grid], work, f"c{r}")) for r in range(reps)]


def _line(log: str, prefix: str) -> str:
    """The last line of run.log that holds prefix ("" if none)."""
    return next((ln for ln in reversed(log.splitlines()) if prefix in ln), "")


def dry_run_s(overrides: list[str], experiment: str) -> float:
    """A dry run's wall time (`run.dry_run=true`: compose, validate, plan; nothing run or written)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", f"+experiment={experiment}", "run.dry_run=true", *overrides],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _large_row(name: str, overrides: list[str], work: Path, tag: str, experiment: str = "bench_large") -> dict:
    """One whole command of bench_large beside its own phases (the timing line of its run.log)."""
    dry = dry_run_s(overrides, experiment)
    run = run_ours(overrides, work, tag, experiment=experiment)
    t = run["timing"]
    figures = work / tag / "figures"
    page = work / tag / "interactive.html"
    return {"scenario": name, "fits": run["fits"], "dask_tasks": run["dask_tasks"], "whole_s": run["wall_s"],
            "execute_s": run["execute_s"], "whole_over_execute": run["wall_s"] / run["execute_s"],
            "dry_run_s": dry, "start_s": t.get("start"), "plan_s": t.get("plan"), "warmup_wait_s": t.get("warm-up wait"),
            "around_execute_s": t.get("around execute", 0.0), "tables_s": t.get("tables"), "report_s": t.get("report"),
            "exit_s": run["wall_s"] - t.get("total", math.nan), "bytes_per_fit": run["shard_bytes"] / run["fits"],
            "client_peak_mb": run["client_peak_mb"], "client_execute_peak_mb": run["client_rss_mb"],
            "sum_fit_s": run["fit_s"], "figure_files": len(list(figures.iterdir())) if figures.exists() else 0,
            "page_mb": page.stat().st_size / 2**20 if page.exists() else 0.0, "load": run["load"]}


def scenario_g(work: Path, reps: int) -> list[dict]:
    return [_large_row("g", [], work, f"g{r}") for r in range(reps)]


def scenario_h(work: Path, reps: int) -> list[dict]:
    # 5,000 C values x 200 random splits of toy_blobs' 2,000 rows: 1,000,000 fits.
    rounds = ["cv=repeated", "cv.rounds=200", "cv.test_size=0.2"]
    return [_large_row("h", rounds, work, f"h{r}") for r in range(reps)]


def scenario_t(work: Path, reps: int) -> list[dict]:
    return [_large_row("t", [], work, f"t{r}", experiment="bench_large_traced") for r in range(reps)]


def scenario_d(work: Path, reps: int) -> list[dict]:
    rows = []
    for r in range(reps):
        for rounds in (100, 1000):
            row = _overhead_row(f"d{rounds * 10}", run_ours(SCENARIOS["d"] + [f"cv.rounds={rounds}"], work, f"d{rounds}_{r}"))
            rows.append(row)
    return rows


@contextlib.contextmanager
def kept_cluster(warm: list[str], security: str = "tls"):
    """A kept cluster (`pipeline.cluster`) for the commands run inside, warmed for these
    solvers, its state in a directory of its own (SVMBENCH_CLUSTER_DIR, which the commands
    inherit, or `fixed_cost_row`'s state); stopped after. Yields its state directory.
    security: "tls" (its default) or "none" (plain tcp://)."""
    from . import cluster
    with tempfile.TemporaryDirectory(prefix="svmbench-kept-") as state:
        before = os.environ.get("SVMBENCH_CLUSTER_DIR")
        os.environ["SVMBENCH_CLUSTER_DIR"] = state
        try:
            cluster.start(warm=warm, log=lambda line: print(line, flush=True), security=security)
            try:
                yield state
            finally:
                os.environ["SVMBENCH_CLUSTER_DIR"] = state      # a kept cluster opened inside restored another
                cluster.stop()
        finally:
            if before is None:
                os.environ.pop("SVMBENCH_CLUSTER_DIR")
            else:
                os.environ["SVMBENCH_CLUSTER_DIR"] = before


def fixed_cost_row(cluster: str, work: Path, tag: str, launcher: bool = True, state: str | None = None,
                   security: str | None = None) -> dict:
    """One whole `python -m pipeline +experiment=bench_fixed cluster=CLUSTER` command, waited
    for directly (no CPU sampling: its wall is seconds), and its timing line's phases; `exit_s`
    is the whole command's wall less the line's total (the cluster's closing, the interpreter's
    exit). The command's start before `run` is the line's `start` (from the process's start).
    launcher=False: a kept cluster's command runs by itself, not in its launcher's child; state:
    the kept cluster's state directory (default: $SVMBENCH_CLUSTER_DIR), security its kind (a column)."""
    run_dir = work / tag
    cmd = [sys.executable, "-m", "pipeline", "+experiment=bench_fixed", f"hydra.run.dir={run_dir}", f"cluster={cluster}"]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "SVMBENCH_LAUNCHER": "1" if launcher else "0",
                        **({"SVMBENCH_CLUSTER_DIR": state} if state else {})})
    wall = time.perf_counter() - t0
    line = _line((run_dir / "run.log").read_text(), "timing: ")
    phases = {phase.strip(): float(sec) for phase, sec in re.findall(r"(?<=[:,;] )([a-z -]+) ([\d.]+) s", line)}
    total = float(re.search(r"total ([\d.]+) s before exit", line).group(1))
    by = "launcher" if "by the kept cluster's launcher" in line else "itself"
    return {"cluster": cluster, "security": security or "", "run_by": by, "load": load, "wall_s": wall, **{f"{k.replace(' ', '_')}_s": v for k, v in phases.items()
            if k in ("start", "plan", "warm-up wait", "execute", "tables", "report")}, "exit_s": wall - total}


def scenario_k(work: Path, reps: int) -> list[dict]:
    """The fixed cost of a command: bench_fixed's 10 fits, `reps` times on a fresh local cluster,
    then `reps` times on two kept clusters started (and warmed for dcd) before them and stopped
    after, one with TLS (the default) and one plain tcp:// (`cluster start --security none`), each
    rep run on both in turn, by the launcher and by itself: what TLS costs a command, beside the
    same command without."""
    rows = [{"rep": r, **fixed_cost_row("local", work, f"k-local-{r}")} for r in range(reps)]
    with kept_cluster(["dcd"]) as with_tls, kept_cluster(["dcd"], security="none") as plain:
        kinds = (("tls", with_tls), ("none", plain))
        for security, state in kinds:    # the sandboxes' first task: its datasets read
            fixed_cost_row("kept", work, f"k-kept-first-{security}", state=state)
        for r in range(reps):
            for security, state in kinds:
                for launcher in (True, False):
                    tag = f"k-kept-{security}-{'launcher' if launcher else 'self'}-{r}"
                    rows.append({"rep": r, **fixed_cost_row("kept", work, tag, launcher, state, security)})
    return rows


def prebuild(overrides: list[str], experiment: str = "bench_sweep") -> None:
    """Build the scenario's datasets into the store before any run is timed: the first run
    would otherwise carry the build (and a speedup of 1 over 2 workers would count it)."""
    from .experiment.config import compose, validate
    from .run import materialise_datasets
    materialise_datasets(validate(compose([f"+experiment={experiment}", *overrides])))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="a,b,c,d")
    ap.add_argument("--libsvm-rows", default="5000,20000", help="row counts of scenario libsvm")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a Hydra override added to every run of scenarios f and hs (ours and the anchors)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default="bench_sweep.md")
    ap.add_argument("--full", action="store_true", help="scenario u also at RCV1's size (minutes)")
    ap.add_argument("--dist-rows", type=int, default=2_000_000, help="rows of scenario dist (pipeline/bench_distributed.py)")
    args = ap.parse_args(argv)
    runners = {"a": scenario_a, "b": scenario_b, "c": scenario_c, "d": scenario_d, "e": scenario_e,
               "g": scenario_g, "h": scenario_h, "k": scenario_k, "t": scenario_t,
               "u": lambda work, reps: scenario_u(reps, args.full),
               "f": lambda work, reps: scenario_f(work, reps, args.set), "cs": scenario_cs, "hs": lambda work, reps: scenario_hs(work, reps, args.set),
               "libsvm": lambda work, reps: scenario_libsvm(reps, [int(n) for n in args.libsvm_rows.split(",")]),
               "dist": lambda work, reps: scenario_dist(work, args.dist_rows)}
    parts = []
    with tempfile.TemporaryDirectory(prefix="svmbench-bench-") as tmp:
        for name in args.only.split(","):
            if name in ("f", "hs"):
                prebuild(args.set, KERNEL_GRID)
            elif name == "cs":
                prebuild([], SEARCH_LINEAR)
            elif name not in ("u", "libsvm", "dist"):
                prebuild(SCENARIOS.get(name, []), {"g": "bench_large", "h": "bench_large", "t": "bench_large_traced",
                                                          "k": "bench_fixed"}.get(name, "bench_sweep"))
            df = pd.DataFrame(runners[name](Path(tmp), args.reps))
            print(df.to_string(index=False), flush=True)
            parts.append(f"### scenario {name}\n\n{markdown_table(df)}")
    Path(args.out).write_text("\n".join(parts))
    print(f"table: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
