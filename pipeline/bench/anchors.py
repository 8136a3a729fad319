"""The reference sides ("anchors") of the benchmark scenarios, as plain functions.

Two kinds, by what they are compared with:

- **Whole-process anchors** (`ANCHORS`), beside our whole command: each runs in a fresh Python
  process of its own, by name, ``python -m pipeline.bench.anchors NAME --json '{"overrides":
  [...], ...}'`` (the JSON object is its keyword arguments), and prints its record as one JSON
  line, the last of its output. `run(NAME, **kwargs)` starts that process and adds `process_s`,
  its wall time from start to exit. Each loads the rows our run reads (the experiment composed
  with the same overrides, planned, read from the store: the plan's rows, labels and folds) and
  times the library's own call alone (`fit_s`: data in memory, ``refit=False``), which favours it.
- **Solver-call anchors** (`liblinear_train`, `libsvm_rbf`), beside one call of our solver: called
  in the scenario's own process, in alternation with ours, on a problem built beforehand in the
  library's own format (`liblinear_problem`, `libsvm_problem`), which favours them too.

LIBLINEAR and LIBSVM are the `bench` extra (liblinear-official, libsvm-official): they are
imported where they are used, so that the scenarios without them run without them.
"""
from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.experimental import enable_halving_search_cv  # noqa: F401  (HalvingGridSearchCV)
from sklearn.model_selection import GridSearchCV, HalvingGridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from ..engine.materialise import materialise_datasets
from ..engine.tasks import split_data
from ..experiment.config import compose, validate
from ..experiment.plan import build_plan

MODULE = "pipeline.bench.anchors"


def fold_rows(experiment: str, overrides, scale: str) -> tuple:
    """(exp, X, y in {-1, +1}, folds) of the experiment's fits, as its workers read them
    (`tasks.split_data`: the max_rows subsample, the labels, the plan's folds). The anchors fit
    them unscaled or standardised per training fold: the experiment's scale must say the same."""
    exp = validate(compose([f"+experiment={experiment}", *overrides]))
    data = next(iter(build_plan(exp, materialise_datasets(exp)).fits.values()))["data"]
    if data["scale"] != scale:
        raise ValueError(f"{experiment}: datasets.{data['entry']}.scale={data['scale']}, and this anchor fits "
                         f"its rows as scale={scale} does")
    rows, y, _, folds, _ = split_data(exp.store_root, data)
    if rows.stream:
        raise ValueError(f"{experiment}: datasets.{data['entry']} is read from the store fold by fold (too large "
                         f"to hold), and the anchors take the rows in memory")
    return exp, rows.X, y, folds


def _scaled_rbf(exp, X) -> tuple:
    """SVC(rbf) behind a StandardScaler fitted on each training fold, as our workers scale it
    (without centring for sparse rows: tasks._scale), smo's tol and cache size; and the C x gamma
    grid of the experiment's smo entry."""
    solver = exp.solvers["smo"]
    p, grid = dict(solver.params), dict(solver.grid)
    est = make_pipeline(StandardScaler(with_mean=not sp.issparse(X)),
                        SVC(kernel="rbf", tol=p["tol"], cache_size=p["cache_size"]))
    return est, {"svc__C": list(grid["C"]), "svc__gamma": list(grid["gamma"])}


def _timed_fit(search, X, y) -> float:
    """search.fit(X, y)'s seconds; its convergence warnings silenced (ours report a status)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        search.fit(X, y)
        return time.perf_counter() - t0


def gridsearch_linear(overrides=(), n_jobs: int = 2, experiment: str = "bench_sweep") -> dict:
    """GridSearchCV(LinearSVC(dual=True)) over the experiment's dcd grid of C, on its rows and the
    very folds our sweep uses, with dcd's loss, tol, max_iter and intercept: `fit_s` and the
    mean test accuracy over the grid."""
    exp, X, y, folds = fold_rows(experiment, overrides, "none")
    dcd = exp.solvers["dcd"]
    p = dict(dcd.params)
    est = LinearSVC(dual=True, loss=p["loss"], tol=p["tol"], max_iter=p["max_iter"],
                    fit_intercept=p.get("intercept", "regularized") != "none", random_state=0)
    gs = GridSearchCV(est, {"C": list(dcd.grid["C"])}, cv=folds, n_jobs=n_jobs, refit=False)
    fit_s = _timed_fit(gs, X, y)
    return {"fit_s": fit_s, "fits": len(gs.cv_results_["params"]) * len(folds),
            "test_accuracy": float(np.mean(gs.cv_results_["mean_test_score"]))}


def gridsearch_kernel(overrides=(), n_jobs: int = 2, experiment: str = "bench_kernel_grid") -> dict:
    """GridSearchCV(StandardScaler + SVC(rbf)) over the kernel grid's rows, folds, C x gamma grid,
    tol and cache size (`_scaled_rbf`): `fit_s`, its fits and the mean test accuracy."""
    exp, X, y, folds = fold_rows(experiment, overrides, "standard")
    est, grid = _scaled_rbf(exp, X)
    gs = GridSearchCV(est, grid, cv=folds, n_jobs=n_jobs, refit=False)
    fit_s = _timed_fit(gs, X, y)
    return {"fit_s": fit_s, "fits": len(gs.cv_results_["params"]) * len(folds),
            "test_accuracy": float(np.mean(gs.cv_results_["mean_test_score"]))}


def halving_kernel(overrides=(), n_jobs: int = 2, experiment: str = "bench_kernel_grid") -> dict:
    """HalvingGridSearchCV over `gridsearch_kernel`'s setup, factor 3, its default resource
    (n_samples, min_resources="exhaust"): `fit_s`, its fits, each rung's candidates and rows,
    and its pick."""
    exp, X, y, folds = fold_rows(experiment, overrides, "standard")
    est, grid = _scaled_rbf(exp, X)
    gs = HalvingGridSearchCV(est, grid, cv=folds, factor=3, random_state=0, n_jobs=n_jobs, refit=False)
    fit_s = _timed_fit(gs, X, y)
    return {"fit_s": fit_s, "fits": int(sum(gs.n_candidates_)) * len(folds),
            "n_candidates": [int(n) for n in gs.n_candidates_], "n_resources": [int(n) for n in gs.n_resources_],
            "best_C": gs.best_params_["svc__C"], "best_gamma": gs.best_params_["svc__gamma"],
            "best_score": float(gs.best_score_)}


def liblinear_problem(X, y):
    """LIBLINEAR's own problem of (X, y): built outside any clock."""
    from liblinear.liblinearutil import problem
    return problem(np.asarray(y, dtype=float), X)


def liblinear_search(overrides=(), experiment: str = "bench_sweep", start_C: float | None = None) -> dict:
    """LIBLINEAR's own warm-started C search, ``train -C -v 5 -s 2 [-c start_C]`` (its own 5
    folds: -v draws them; from start_C, or its own start, doubling to its cap of 1024), on the
    experiment's rows, timed around `train` on a prebuilt problem: `fit_s`, its best C and CV
    accuracy, and `c_values`, the C values it tried (its "log2c=" lines)."""
    from liblinear.liblinear import PRINT_STRING_FUN, parameter
    from liblinear.liblinearutil import train

    _, X, y, _ = fold_rows(experiment, overrides, "none")
    prob = liblinear_problem(X, y)
    said = []
    param = parameter(f"-C -v 5 -s 2{'' if start_C is None else f' -c {start_C}'}")
    param.print_func = PRINT_STRING_FUN(said.append)      # its lines, not the process's output
    t0 = time.perf_counter()
    best_C, _, best_accuracy = train(prob, param)          # (C, p: SVR's, CV accuracy)
    fit_s = time.perf_counter() - t0
    return {"fit_s": fit_s, "best_C": best_C, "cv_accuracy": best_accuracy,
            "c_values": sum(1 for line in said if line.startswith(b"log2c="))}


def liblinear_train(prob, loss: str, C: float = 1.0, eps: float = 0.1) -> dict:
    """LIBLINEAR's `train` on a prebuilt problem, dual coordinate descent (-s 1: squared hinge,
    -s 3: hinge), no bias: its `seconds` and `w` (signed for the label +1)."""
    from liblinear.liblinearutil import train
    solver = {"squared_hinge": 1, "hinge": 3}[loss]
    t0 = time.perf_counter()
    model = train(prob, f"-s {solver} -c {C} -e {eps} -q")
    seconds = time.perf_counter() - t0
    w = np.asarray(model.get_decfun()[0]) * (1.0 if model.get_labels()[0] == 1 else -1.0)
    return {"seconds": seconds, "w": w}


def libsvm_problem(X, y):
    """LIBSVM's own problem (its nodes) of (X, y): built outside any clock."""
    from libsvm.svmutil import svm_problem
    return svm_problem(y, X)


def libsvm_rbf(prob, C: float, gamma: float, eps: float = 1e-3, cache_mb: float = 200.0) -> dict:
    """LIBSVM's `svm_train` on a prebuilt problem: C-SVC, rbf, shrinking on: its `seconds` and
    its support vectors' count."""
    from libsvm.svmutil import svm_parameter, svm_train
    param = svm_parameter(f"-s 0 -t 2 -c {C} -g {gamma} -e {eps} -m {cache_mb} -h 1 -q")
    t0 = time.perf_counter()
    model = svm_train(prob, param)
    return {"seconds": time.perf_counter() - t0, "n_sv": int(model.get_nr_sv())}


# The whole-process anchors, by the name `python -m pipeline.bench.anchors NAME` takes.
ANCHORS = {f.__name__: f for f in (gridsearch_linear, gridsearch_kernel, halving_kernel, liblinear_search)}


class AnchorError(RuntimeError):
    """A whole-process anchor's process failed: its name, exit status and last lines of stderr."""


def run(name: str, **kwargs) -> dict:
    """Anchor `name` (of `ANCHORS`) in a fresh Python process, with these keyword arguments: its
    record, and `process_s`, the process's wall time from start to exit."""
    cmd = [sys.executable, "-m", MODULE, name, "--json", json.dumps(kwargs)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    process_s = time.perf_counter() - t0
    if proc.returncode:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise AnchorError(f"anchor {name} exited with status {proc.returncode}: {' '.join(cmd)}\n{tail}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process_s": process_s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                 description="Run one whole-process anchor; print its record as a JSON line.")
    ap.add_argument("name", choices=sorted(ANCHORS))
    ap.add_argument("--json", default="{}", metavar="ARGS", help="its keyword arguments, a JSON object")
    args = ap.parse_args(argv)
    fn = ANCHORS[args.name]
    takes = inspect.signature(fn)
    try:
        kwargs = json.loads(args.json)
        takes.bind(**kwargs)
    except json.JSONDecodeError as e:
        ap.error(f"--json {args.json!r}: not JSON ({e})")
    except TypeError as e:   # not an object, or not the anchor's arguments
        ap.error(f"--json {args.json!r}: {args.name} takes a JSON object of its arguments "
                 f"({', '.join(takes.parameters)}): {e}")
    print(json.dumps(fn(**kwargs)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
