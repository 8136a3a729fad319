"""Task bodies: pure functions of a spec (and the store) that return a record.

They run on Dask workers (or in-process for ``cluster=sequential``). A worker loads each dataset
from the store once and keeps it, keyed by its fingerprint, and extracts (and scales) each
fold's rows once and keeps them too (`fold_data`), so every point of a C path, and every later
task on the same fold, reuses them; the client never ships a matrix inside a task. A task is a
list of units (`run_task`): a unit is one spec, or the points of one C path, run in increasing
C, each warm-started from the last (`run_path`).

A task never raises into the scheduler: a solver error comes back as a record
with ``status="error"`` and its traceback, and the sweep goes on.
"""
from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import importlib
import json
import math
import os
import platform
import sys
import time
import traceback
import warnings
from collections import OrderedDict
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from ..experiment.specs import data_split
from ..experiment.schema import REPORT_TARGET, TIMING_BUDGET_S
from .rss import peak_rss_mb, reset_peak_rss
from ..data.store import csr_nbytes, dataset_info, read_dataset, read_labels, read_row_subsets

_DATASETS: "OrderedDict[str, object]" = OrderedDict()
_MAX_CACHED = 4
# Extracted folds, by (data settings, fold): bounded by bytes, since a 100k-row fold of a
# text set is ~100 MB and a worker may see every fold of several datasets. Tasks run a fold's
# fits together (execute.make_units), so a fold is rarely wanted again once the next ones come,
# and the bound is kept small: each fold the cache keeps is fresh memory for the next, and
# touching fresh memory costs more than copying the rows into it (16,000 of 20,000 rcv1_like
# rows: 8-14 ms into fresh pages, 1-3 ms into the pages of an evicted fold; at 1 GiB, 100 of
# scenario (c)'s 125 folds per worker paid it, 19% of its fits' time outside the solver, at 256
# MiB 15-18%: README, "Benchmarks").
_FOLDS: "OrderedDict[str, tuple]" = OrderedDict()
FOLD_CACHE_BYTES = 1 << 28
_FOLD_BYTES = 0
# A Problem of each cached fold's training rows, by the fold's key, evicted with it: X and y
# checked once per fold, not once per C (`_train_problem`).
# A dense fold's CSR form, made by the first linear coordinate
# fit that asks for it, lives with that Problem (`Problem.X_csr`), and goes with it.
_TRAIN_PROBLEMS: dict = {}
# What this process has loaded: datasets read from the store, folds extracted (execute's summary).
_LOADS = {"datasets": 0, "folds": 0}
# A dataset whose CSR is larger is never held whole: each fold's rows are read from the store
# (`store.read_row_subsets`), so a worker holds the fold alone, not the dataset beside it (twice
# the data: 1.4 GB for full RCV1's 0.7 GB). Smaller ones are read once and cut in memory, which
# is faster when there are many folds.
STREAM_DATASET_BYTES = 256 << 20


def load_counts() -> dict:
    """Datasets read and folds extracted by this process so far (a copy)."""
    return dict(_LOADS)


def load_dataset(root: str, name: str, fingerprint: str):
    """The dataset from this worker's cache, reading it from the store on first use."""
    ds = _DATASETS.get(fingerprint)
    if ds is None:
        ds = read_dataset(root, name)
        _LOADS["datasets"] += 1
        _check_plan_fingerprint(ds.meta, root, fingerprint)
        _DATASETS[fingerprint] = ds
        while len(_DATASETS) > _MAX_CACHED:
            _DATASETS.popitem(last=False)
    else:
        _DATASETS.move_to_end(fingerprint)
    return ds


def _scale(kind: str, X_train, *X_others):
    """Fit the scaler on the training fold only, so nothing leaks from the test fold (nor from
    the held-out rows): (X_train, *X_others) scaled, in place (copy=False: they are the fold's own
    copies, and a scaled copy beside each would hold the fold twice)."""
    if kind == "none":
        return (X_train, *X_others)
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler
    if kind == "standard":
        scaler = StandardScaler(with_mean=not sp.issparse(X_train), copy=False)
    elif kind == "maxabs":
        scaler = MaxAbsScaler(copy=False)
    else:
        if sp.issparse(X_train):
            raise ValueError("scale=minmax would densify a sparse dataset; use maxabs")
        scaler = MinMaxScaler(copy=False)
    X_train = scaler.fit_transform(X_train)
    return (X_train, *(scaler.transform(X) if X.shape[0] else X for X in X_others))


def fold_data(root: str, data: dict, fold: int):
    """(X_train, y_train, X_test, y_test, classes) of one fold, labels as -1/+1 for two classes,
    from this worker's fold cache (the same objects on every call: solvers do not write to
    their input). Dense storage is kept dense: a dataset whose density is over 50% is handed
    over as an array."""
    return _cached_fold(root, data, fold)[:5]


def heldout_data(root: str, data: dict, fold: int):
    """(X, y) of the held-out test rows (cv.kind=kfold_test), scaled by the fold's training
    rows' scaler as the fold's own test rows are; (None, empty) for the other schemes."""
    return tuple(_cached_fold(root, data, fold)[5:]) or (None, np.empty(0))


def _data_key(data: dict) -> str:
    """The data settings as a cache key. Not `plan.spec_key` (which normalises numbers for a
    stable hash: 0.17 ms, twice per fit, a third of a 1 ms fit's time outside its solver): equal
    settings from one plan serialise alike, and a mismatch would only miss the cache. The specs
    of a task share one data dict (the plan's, kept by the task's pickle), so the last one's key
    is reused; the dict is held, so its id cannot be taken by another meanwhile."""
    if _LAST_DATA and _LAST_DATA[0] is data:
        return _LAST_DATA[1]
    _LAST_DATA[:] = [data, _settings_key(data)]
    return _LAST_DATA[1]


def _settings_key(data: dict) -> str:
    return json.dumps(data, sort_keys=True, default=str)


_LAST_DATA: list = []


def _fold_key(data: dict, fold: int) -> str:
    return f"{_data_key(data)}#{fold}"


def _cached_fold(root: str, data: dict, fold: int):
    key = _fold_key(data, fold)
    global _FOLD_BYTES
    out = _FOLDS.get(key)
    if out is None:
        # Room first: the fold cached after extracting it would otherwise sit beside the others
        # while it is cut (two RCV1 folds at once). A fold holds at most its dataset's bytes.
        while _FOLDS and _FOLD_BYTES + split_data(root, data)[0].nbytes_bound > FOLD_CACHE_BYTES:
            _evict_oldest_fold()
        out = _extract_fold(root, data, fold)
        _FOLDS[key] = out
        # A running total: summing every entry on each insert was quadratic in cached folds.
        _FOLD_BYTES += _nbytes(out)
        while len(_FOLDS) > 1 and _FOLD_BYTES > FOLD_CACHE_BYTES:
            _evict_oldest_fold()
    else:
        _FOLDS.move_to_end(key)
    return out


def _evict_oldest_fold() -> None:
    global _FOLD_BYTES
    key, fold = _FOLDS.popitem(last=False)
    _FOLD_BYTES -= _nbytes(fold)
    _TRAIN_PROBLEMS.pop(key, None)
    for share in [k for k in _SHARES if k[0] == key]:
        _FOLD_BYTES -= _array_bytes(_SHARES.pop(share).X)


# A halving rung's rows of each cached fold (`share_rows`), by (the fold's key, the share), evicted
# with the fold and counted in its bytes: the rung's candidates fit the very same arrays, so a
# kernel path's cache serves them all (smo._serves: the same X object), and the rows are copied
# once a rung, not once a fit.
_SHARES: dict = {}


def _share_problem(data: dict, fold: int, share: float, rows):
    """The Problem of a fold's training rows restricted to a rung's share, in their stratified
    order: made once per (fold, share) by this process (`_SHARES`)."""
    global _FOLD_BYTES
    key = (_fold_key(data, fold), float(share))
    problem = _SHARES.get(key)
    if problem is None:
        problem = _SHARES[key] = rows.subset(share_rows(rows.y, share, data["folds_seed"], fold))
        _FOLD_BYTES += _array_bytes(problem.X)
    return problem


def _train_problem(root: str, data: dict, fold: int):
    """The fold's training rows (two classes) as a `Problem` with default settings, checked once
    and kept with the fold: each C of the fold derives its own from it without checking X and y
    again (`Problem.with_settings`; the check is a pass over X's values, 0.3 ms of a 50 ms fit
    of scenario (c)). The fold's arrays are this worker's own, which no solver writes."""
    key = _fold_key(data, fold)
    problem = _TRAIN_PROBLEMS.get(key)
    if problem is None:
        import solvers
        X, y = _cached_fold(root, data, fold)[:2]
        problem = _TRAIN_PROBLEMS[key] = solvers.Problem(X, y)
    return problem


def clear_caches() -> None:
    """Forget this process's folds and splits (tests; a worker never needs to)."""
    global _FOLD_BYTES
    _FOLDS.clear()
    _SPLITS.clear()
    _TRAIN_PROBLEMS.clear()
    _SHARES.clear()
    _FOLD_BYTES = 0


def _nbytes(fold) -> int:
    return sum(_array_bytes(a) for a in fold[:4] + fold[5:])


def _array_bytes(a) -> int:
    return sum(p.nbytes for p in ((a.data, a.indices, a.indptr) if sp.issparse(a) else (a,)))


def _extract_fold(root: str, data: dict, fold: int):
    _LOADS["folds"] += 1
    rows, y, classes, folds, heldout = split_data(root, data)
    train, test = folds[fold]
    if not heldout.size:     # the fold alone: no held-out arrays cached for the other schemes
        X_train, X_test = _scale(data["scale"], *rows.take(train, test))
        return X_train, y[train], X_test, y[test], classes
    X_train, X_test, X_held = _scale(data["scale"], *rows.take(train, test, heldout))
    return X_train, y[train], X_test, y[test], classes, X_held, y[heldout]


class _Rows:
    """The rows a data setting uses (after max_rows: `index`, its rows among the dataset's), whole
    in memory or left in the store; `y`, the dataset's labels, from which the setting's rows and
    folds are made (`specs.data_split`)."""

    def __init__(self, root: str, data: dict):
        meta = dataset_info(root, data["name"])
        self.stream = csr_nbytes(meta) > STREAM_DATASET_BYTES
        if self.stream:
            _check_plan_fingerprint(meta, root, data["fingerprint"])
            self.y = read_labels(root, data["name"], verify=False)   # the fold reads verify their rows
            _LOADS["datasets"] += 1
            self.root, self.name, self.fingerprint = root, data["name"], meta["fingerprint"]
            self.dense = meta["density"] > 0.5
            self.nbytes_bound = csr_nbytes(meta)
        else:
            self.ds = load_dataset(root, data["name"], data["fingerprint"])
            self.y = self.ds.y

    def use(self, index: np.ndarray) -> None:
        """Keep the rows `index` of the dataset, positions into them from now on (`take`)."""
        self.index, self.y = index, None
        if not self.stream:
            ds = self.__dict__.pop("ds")
            X = ds.X[index] if len(index) < ds.X.shape[0] else ds.X
            self.X = X.toarray() if X.nnz > 0.5 * X.shape[0] * X.shape[1] else X
            self.nbytes_bound = _array_bytes(self.X)

    def take(self, *parts):
        """X of each part (positions among the rows used), each its own copy."""
        if not self.stream:
            return [self.X[p] for p in parts]
        read = read_row_subsets(self.root, self.name, [self.index[p] for p in parts],
                                fingerprint=self.fingerprint)
        return [X.toarray() if self.dense else X for X, _ in read]


def _check_plan_fingerprint(meta: dict, root: str, fingerprint: str) -> None:
    if meta["fingerprint"] != fingerprint:
        raise RuntimeError(f"dataset {meta['name']!r} in {root} has fingerprint {meta['fingerprint'][:12]}, "
                           f"the plan expected {fingerprint[:12]}: it was rebuilt since the plan was made")


_SPLITS: "OrderedDict[str, tuple]" = OrderedDict()


def split_data(root: str, data: dict):
    """(rows, y, classes, folds, held-out rows) of the data settings, once per worker: the folds are computed
    all at once (a repeated split of 250 rounds draws all 250), so each fold must not redo them."""
    key = _settings_key({k: v for k, v in data.items() if k != "scale"})
    out = _SPLITS.get(key)
    if out is None:
        rows = _Rows(root, data)
        index, y, classes, folds, heldout = data_split(rows.y, data)
        rows.use(index)
        out = _SPLITS[key] = (rows, y, classes, folds, heldout)
        while len(_SPLITS) > _MAX_CACHED:
            _SPLITS.popitem(last=False)
    else:
        _SPLITS.move_to_end(key)
    return out


def problem_of(problem: dict, X, y, rows=None):
    """The spec's problem on (X, y); from `rows`, a Problem of the same X and y (`_train_problem`),
    whose check of them stands."""
    import solvers
    from solvers.objectives import C_from_lambda

    p = dict(problem)
    if "lambda" in p:
        p["C"] = C_from_lambda(p.pop("lambda"), p.pop("lambda_convention"), n_samples=len(y))
    p.pop("lambda_convention", None)
    return rows.with_settings(**p) if rows is not None else solvers.Problem.build(X, y, **p)


def warm(solver_names: list[str], modules: list[str] = ()) -> None:
    """What a task of these solvers pays once per process, paid ahead (the sandbox child's
    warm-up, while the client plans): the solvers' imports and warmups (numba compiled or loaded
    from its cache: `solvers.warm`) and the environment columns (threadpoolctl). The
    sandbox times it (`Sandbox.warm`, with the child's start). Not scikit-learn: a binary
    k-fold fit without scaling never imports it (`plan._kfold` is its StratifiedKFold in numpy),
    and its import was half of this warm-up's CPU, two sandboxes at once on two cores; a fit that needs it (a scaler, a multiclass confusion matrix, another CV scheme)
    imports it in its first task, outside the fit's clock, unless the client names it in
    `modules` (`execute.task_modules`: the scikit-learn modules its plan's tasks import)."""
    from solvers import get_solver
    from solvers.registry import warm as warm_solver

    for name in solver_names:
        # A solver this process cannot warm (unknown here, a failing warmup) is left to its
        # first fit, which warms it again and reports the failure as that fit's error row.
        with contextlib.suppress(Exception):
            warm_solver(get_solver(name))
    for module in modules:
        importlib.import_module(module)
    environment()


@lru_cache(maxsize=1)
def environment() -> dict:
    """Where a task ran: recorded in every result row."""
    import numba
    import numpy
    import scipy
    from importlib.metadata import PackageNotFoundError, version
    try:
        svmbench = version("svmbench")
    except PackageNotFoundError:
        svmbench = "0+unknown"
    # scikit-learn's version from its metadata, not its import (half a second a sandbox).
    sklearn = sys.modules.get("sklearn")
    return {"env_host": platform.node(), "env_python": platform.python_version(),
            "env_numpy": numpy.__version__, "env_scipy": scipy.__version__, "env_numba": numba.__version__,
            "env_sklearn": sklearn.__version__ if sklearn is not None else version("scikit-learn"),
            "env_svmbench": svmbench, "env_cpus": os.cpu_count(),
            **thread_counts()}


def thread_counts() -> dict:
    """Threads the numeric libraries use in this process (one each by default on a cluster:
    `cluster.blas_threads`), as measured, not as configured: BLAS through threadpoolctl, and numba."""
    import numba
    from threadpoolctl import threadpool_info
    blas = [lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return {"env_blas_threads": max(blas) if blas else None, "env_numba_threads": numba.get_num_threads()}


@contextlib.contextmanager
def thread_limits(threads: int):
    """BLAS (threadpoolctl) and numba held to `threads` in this process for the block, then
    restored: what `cluster.blas_threads` sets by environment in a sandbox child, for the tasks
    cluster=sequential runs in the client's own process. Unlimited, OpenBLAS hands each level-1
    call above ~10,000 elements (gd's w @ w on 20,047 features) to its second thread; with the
    other core busy that handoff waits for the scheduler: 11-28 ms a dot product instead of 5 us,
    which made duros_katzman's 300-step GD fits take 10-30 s each at load average 10."""
    import numba
    from threadpoolctl import threadpool_limits

    before = numba.get_num_threads()
    numba.set_num_threads(min(int(threads), numba.config.NUMBA_NUM_THREADS))
    environment.cache_clear()     # its thread columns are measured: under the limit, then after
    try:
        with threadpool_limits(limits=int(threads)):
            yield
    finally:
        numba.set_num_threads(before)
        environment.cache_clear()


def _accuracy(y, f) -> float:
    """The share of rows (y in {-1, +1}) on the side of f's sign (f > 0: +1, else -1), counted
    from two masks (the predictions as floats and their comparison took 0.1 ms per 20,800 rows).
    A Python float: a numpy one in the record costs 6.6 us to pickle (test_overhead)."""
    if len(y) == 0:
        return math.nan
    return int(np.count_nonzero((f > 0) == (y > 0))) / len(y)


# Who hears that the running spec's solver starts (`run_task`'s notify, as ("solving", key)): a
# sandbox counts the spec's hard limit from there, not from its start (`sandbox._Slot`).
_SOLVING: contextvars.ContextVar = contextvars.ContextVar("svmbench_solving", default=None)


def _solver_starts() -> None:
    hook = _SOLVING.get()
    if hook is not None:
        hook()


_STATUS_RANK = {"converged": 0, "budget": 1, "stalled": 2, "max_iter": 3, "timeout": 4, "diverged": 5}


def _solve_binary(spec: dict, X, y, X_test=None, y_test=None, warm_start=None, rows=None):
    """One binary problem of the spec, solved: (problem, fit). With the test rows, the trace can
    carry the test error at each point (run.trace_test_error); `rows`: as `problem_of` takes it.

    A timing fit (the spec's `timing`, plan.timing_template) builds its problem from the fold's
    arrays, timed (`info["setup_s"]`: what an estimator's fit does before its solver, so that our
    solvers' time is the whole call, as a library's fit call is; 0 for a library, whose own call
    checks its input inside its time), runs within its budget (`run.timing_budget_s`, on its own
    clock: a fit past it is cut, and a target it had not reached is censored), and a reference
    library's is a ladder (`_run_ladder`). A library's sweep fit also notes the CPU seconds of its
    call (`call_cpu_s`): its ladder reads it as its top rung's time, on the ladder's clock."""
    import solvers

    timing = spec.timing
    # A timing fit is timed in the CPU seconds of its process, not the wall's: on a shared
    # machine a millisecond fit can wait for a core longer than it runs (measured in
    # docs/benchmarks/fairness.md), and the wait is the machine's, not the solver's. Every solver
    # here runs in its task's process (LIBLINEAR and LIBSVM inside scikit-learn's call); one that
    # used k threads would be charged the k threads' seconds.
    # A timing fit compared with a distributed fit is on the wall clock, as the distributed
    # fit's driver is (plan._add_timing_fits; the results' `clock` column says so).
    clock = time.process_time if timing is not None and timing.get("clock") != "wall" else time.perf_counter
    setup_s = 0.0
    if timing is not None and timing["method"] != "ladder":
        t0 = clock()
        problem = problem_of(spec.problem, X, y)
        setup_s = clock() - t0
    else:
        problem = problem_of(spec.problem, X, y, rows)
    params = dict(spec.solver_params)
    if "random_state" in solvers.get_solver(spec.solver).params and params.get("random_state") is None:
        params["random_state"] = spec.seed
    b = spec.budget
    budget = solvers.Budget(max_iter=b.get("max_iter"), tol=b["tol"], time_limit_s=b.get("time_limit_s"))
    limit = timing_budget(timing)
    cut_at = None
    if timing is not None and timing["method"] != "ladder" and limit is not None \
            and (budget.time_limit_s is None or limit - setup_s < budget.time_limit_s):
        # The budget is on the call clock, which counts the problem's setup: the solver gets the rest.
        cut_at = max(limit - setup_s, 1e-6)
        budget = solvers.Budget(max_iter=budget.max_iter, tol=budget.tol, time_limit_s=cut_at)
    extras = {}
    if spec.trace.get("test_error") and X_test is not None and X_test.shape[0]:
        # Test error of the solver's current model at each trace point (clock paused).
        extras["test_error"] = lambda m: 1.0 - _accuracy(y_test, problem.decision(m, X_test))
    library = timing is None and spec.family == "reference"

    def solve(budget=budget, enabled=spec.trace["enabled"]):
        rec = (_call_recorder() if library else solvers.Recorder)(
            per_decade=spec.trace["per_decade"], enabled=enabled, clock=clock, extras=extras,
            max_overhead=spec.trace.get("max_overhead", 0.05))
        _solver_starts()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # non-convergence is the status column
            fit = solvers.fit(problem, spec.solver, budget=budget, recorder=rec, warm_start=warm_start, **params)
        if library:
            fit.info["call_cpu_s"] = rec.cpu_s
        return fit

    def fastest(budget=budget, enabled=spec.trace["enabled"]):
        fit = solve(budget, enabled)
        repeats = int(b.get("time_repeats", 1))
        if repeats > 1:
            # run.time_repeats: the same solve again (same start and seed: the same iterates), the
            # fastest kept, its trace with it; every time in info, so the spread stays visible.
            times = [float(fit.fit_time_s)]
            for _ in range(repeats - 1):
                again = solve(budget, enabled)
                times.append(float(again.fit_time_s))
                if again.fit_time_s < fit.fit_time_s:
                    fit = again
            fit.info["fit_time_s_repeats"] = times
        return fit

    kept = _kept(spec, problem, warm_start)
    if kept is not None:
        fit = kept
    elif timing is not None and timing["method"] == "ladder":
        fit = _run_ladder(spec, fastest, budget, timing)
    else:
        fit = fastest()
    if cut_at is not None:
        fit.info["timing_budget_s"] = float(limit)
        if fit.status == "timeout":
            fit.info["censored_at_s"] = float(limit)     # cut by the budget, not by its own time limit
    if timing is not None:
        fit.info["setup_s"] = setup_s      # the record's own column (`_binary_record`)
    return problem, fit


def _kept(spec: dict, problem, warm_start):
    """LIBLINEAR's C search (a path search's spec, ``path_stop``): where its ``-s 2`` solver,
    started from the last C's model, would stop at once, the fold keeps that model, unsolved
    (`pipeline.search.path`); None otherwise."""
    rule, last = spec.get("path_stop"), (warm_start or {}).get("last_model")
    if rule is None or last is None or last.w is None:
        return None
    from ..search.path import kept_fit, unchanged
    started = time.perf_counter()
    Xw = last.train_Xw if last.train_Xw is not None and len(last.train_Xw) == problem.n_samples else \
        np.asarray(problem.X @ last.w).ravel()
    same, grad, tol = unchanged(problem, last.w, last.b, rule["eps"], Xw)
    return kept_fit(problem, last.w, last.b, grad, tol, started, Xw) if same else None


@functools.cache
def _call_recorder():
    """A Recorder that also reads the CPU seconds of a library's call (`cpu_s`), where the
    library reads its seconds: a library's adapter (solvers/references.py) reads `seconds()`
    once its one call returns, before it records its one point. Its ladder takes that solve as
    its top rung, on the ladder's clock (`_run_ladder`), instead of solving it again."""
    import solvers

    class CallRecorder(solvers.Recorder):
        def start(self):
            self.cpu_s = math.nan
            self._cpu0 = time.process_time()
            return super().start()

        def seconds(self):
            if not self.points and self.overhead_s() == 0.0:
                self.cpu_s = time.process_time() - self._cpu0
            return super().seconds()

    return CallRecorder


def timing_budget(timing: dict | None) -> float | None:
    """A timing fit's budget B in seconds on its clock (`run.timing_budget_s`; the default stays out
    of its key, plan.timing_template), None: no budget."""
    return None if timing is None else timing.get("budget_s", TIMING_BUDGET_S)


# The sweep twin's record, as a ladder's own (`_run_ladder`): the full solve it would otherwise
# have run again as its top rung.
TWIN_FIELDS = ("status", "n_iter", "primal_objective", "dual_objective", "duality_gap", "kkt_violation",
               "train_accuracy", "test_accuracy", "n_sv", "heldout_accuracy", "n_heldout")


def _run_ladder(spec: dict, solve, budget, timing: dict):
    """A reference library's timing fit: its ladder (`_ladder`) with what the run handed over
    (`spec.ladder`, execute.py): f*, the reference's objective, and the top, the sweep's own
    fit of the same problem, the same cold solve (same seed): its iterations, certificates, CPU
    seconds and record."""
    given = spec.ladder or {}
    return _ladder(solve, budget, int(timing["per_decade"]), f_star=given.get("f_star"),
                   target=timing.get("target", REPORT_TARGET), top=given.get("top"),
                   limit_s=timing_budget(timing), record=given.get("record"))


def _ladder(solve, budget, per_decade: int, f_star=None, target=None, top=None, limit_s=None, record=None):
    """A library's ladder of cold solves (pipeline/engine/ladder.py): solve(budget, enabled) -> Fit.
    With f*, it stops at the first rung within `target` of it, within the budget B (limit_s); with
    the top (a dict of the full solve: n_iter, seconds, primal, dual, gap, status),
    that solve is not run again, and the record is the top's (`record`: the sweep twin's, as a
    ladder's record always was the full solve's). Without f*, every rung to the solver's own stop.
    The fit returned carries the rungs as its trace, its record's certificates, and in `info` the
    ladder's rungs, seconds and how it ended."""
    import solvers
    from .ladder import Rung, climb

    top = top if f_star is not None else None
    top_rung = Rung(int(top["n_iter"]), float(top["seconds"]), float(top["primal"]), float(top["dual"]),
                    float(top["gap"]), str(top["status"])) if top else None
    # The rungs, their certificates and the calls' own costs all run inside one task, which the
    # sandbox kills at the fit's time limit (and a grace): the ladder starts no rung past half of
    # it (`ladder_cut`: the report then cannot tell whether the target was reached after it).
    deadline = time.perf_counter() + budget.time_limit_s / 2 if budget.time_limit_s is not None else None
    ladder, info = climb(lambda k: solve(solvers.Budget(max_iter=k, tol=budget.tol, time_limit_s=budget.time_limit_s),
                                         False),
                         per_decade, budget.max_iter, f_star=f_star, target=target,
                         top=top_rung, limit_s=limit_s, deadline=deadline)
    end = ladder.rungs.get(ladder.end) if ladder.end is not None else None
    ran = [r for _, r in sorted(ladder.rungs.items()) if r.fit is not None]
    if end is not None and end.fit is not None:
        fit = end.fit         # its own stop, found by a rung
    elif ran:
        fit = ran[-1].fit     # the highest rung (with a top: the record's certificates are the top's, below)
    else:                     # no rung was needed: the top's end decided every target
        fit = solvers.Fit(b=0.0, status=top["status"], n_iter=int(top["n_iter"]), primal=float(top["primal"]))
    if top_rung is not None and (end is None or end.fit is None):
        fit.info["as_record"] = {**{k: v for k, v in (record or {}).items() if k in TWIN_FIELDS},
                                 "fit_time_s": float(top["seconds"])}
    fit.trace = ladder.trace()
    fit.trace_extra = [{} for _ in fit.trace]
    fit.info.update(info, ladder_top="sweep fit" if top_rung is not None else None)
    return fit


def _heldout_columns(y_ho, predicted) -> dict:
    """The fold's model scored on the held-out test rows (cv.kind=kfold_test); nothing otherwise."""
    if not len(y_ho):
        return {}
    return {"heldout_accuracy": float(np.mean(predicted == y_ho)), "n_heldout": int(len(y_ho))}


def _binary_record(spec, X_tr, y_tr, X_te, y_te, warm_start=None, X_ho=None, y_ho=(), rows=None) -> tuple[dict, object]:
    problem, fit = _solve_binary(spec, X_tr, y_tr, X_te, y_te, warm_start, rows)
    if spec.get("gap_rule") and X_te.shape[0]:
        fit = _gap_for_epsilon(spec, problem, fit, X_te, y_te,
                               lambda tol, start: _solve_binary(spec._replace(budget={**spec.budget, "tol": tol}),
                                                                X_tr, y_tr, X_te, y_te, start, rows)[1])
    setup = fit.info.pop("setup_s", None)
    # A ladder whose top is its sweep twin's solve takes that fit's record as its own (`_ladder`):
    # its model is not here to score again.
    given = fit.info.pop("as_record", None)
    if given is not None:
        return dict(n_train=int(len(y_tr)), n_test=int(len(y_te)), n_features=int(problem.n_features),
                    C=float(problem.C), trace=[list(p) for p in fit.trace], trace_extra=list(fit.trace_extra),
                    info=json_safe(fit.info), **given, **({"setup_s": setup} if setup is not None else {})), fit
    f_tr = problem.decision(fit)
    # A kernel path keeps the test rows' kernel columns for its later fits (KernelPath.decision).
    path = (warm_start or {}).get("path")
    f_te = ((path.decision(problem, fit, X_te) if path is not None else problem.decision(fit, X_te))
            if X_te.shape[0] else np.empty(0))
    held = _heldout_columns(y_ho, np.where(problem.decision(fit, X_ho) > 0, 1.0, -1.0)) if len(y_ho) else {}
    return dict(**held,
        status=fit.status, n_iter=int(fit.n_iter), fit_time_s=float(fit.fit_time_s),
        primal_objective=float(fit.primal), dual_objective=float(fit.dual),
        duality_gap=float(fit.gap), kkt_violation=float(fit.kkt_violation),
        train_accuracy=_accuracy(y_tr, f_tr), test_accuracy=_accuracy(y_te, f_te),
        n_sv=int(np.count_nonzero(fit.alpha)) if fit.alpha is not None else int(np.count_nonzero(y_tr * f_tr < 1)),
        n_train=int(len(y_tr)), n_test=int(len(y_te)), n_features=int(problem.n_features),
        C=float(problem.C), trace=[list(p) for p in fit.trace], trace_extra=list(fit.trace_extra),
        info=json_safe(fit.info), **({"model": _model(fit, X_tr, y_tr)} if spec.keep_model else {}),
        **_search_fields(spec, problem, fit, X_te, y_te),
        **({"setup_s": setup} if setup is not None else {}),
    ), fit


# A fit that stopped here cannot tighten: a smaller tol stops at the same place.
_SHORT = ("max_iter", "timeout", "diverged")


def _gap_for_epsilon(spec: dict, problem, fit, X_te, y_te, solve):
    """A held-out search's fit (``gap_rule``), its tolerance set from the search's epsilon: solved
    again, warm from itself at tol x refine, until its duality gap hides at most epsilon/2 of its
    fold's validation rows (misclassified rows whose margin t has t^2 <= G, which no ball of it
    can certify, even at its own C: docs/design/search.md), or down to min_tol, or a stop that a
    tighter tol would not move. The iterations and seconds are the solves' sum."""
    from solvers.cv_bounds import alpha_from_w, certificate
    rule = spec["gap_rule"]
    tol, refits, n_iter, seconds = float(spec["budget"]["tol"]), 0, int(fit.n_iter), float(fit.fit_time_s)
    while True:
        alpha = fit.alpha if fit.alpha is not None else alpha_from_w(problem, fit.w, fit.b)
        cert = certificate(problem, alpha, X_te, y_te, pairs=False)
        hidden = int(np.count_nonzero(cert.t * cert.t <= cert.gap))
        if hidden <= rule["epsilon"] / 2 * cert.n_val or fit.status in _SHORT or tol * rule["refine"] < rule["min_tol"]:
            break
        tol *= rule["refine"]
        refits += 1
        fit = solve(tol, {"alpha": fit.alpha, "w": fit.w, "b": fit.b})
        n_iter, seconds = n_iter + int(fit.n_iter), seconds + float(fit.fit_time_s)
    fit.n_iter, fit.fit_time_s = n_iter, seconds
    fit.info.update(tol_reached=tol, tol_refits=refits, hidden_rows=hidden)
    return fit


def _search_fields(spec: dict, problem, fit, X_te, y_te) -> dict:
    """What a search reads of a fit (pipeline/search/): ``cv_bound``, the certificate of the CV
    error bound on this fold's validation rows (solvers/cv_bounds.py), from the fit's dual point
    (alpha, or the squared hinge's KKT map of w); ``state``, the model the next halving rung
    starts from (`_state`)."""
    out = {}
    if spec.cv_bound and X_te.shape[0]:
        from solvers.cv_bounds import alpha_from_w, certificate
        alpha = fit.alpha if fit.alpha is not None else alpha_from_w(problem, fit.w, fit.b)
        # "single": each fit's own ball, no v_32 for the bound between two fits (a path search's
        # neighbours are a doubling apart, where the pair adds nothing: docs/design/search.md).
        out["cv_bound"] = certificate(problem, alpha, X_te, y_te, pairs=spec.cv_bound != "single").to_dict()
    if spec.keep_state:
        out["state"] = _state(fit)
    return out


def _state(fit) -> dict:
    """A fit's model as a warm start (`start_of`): a linear model's w, as float32 in base64 (a
    start needs no more digits, and a text of 47,236 features is a third of its JSON list), or
    a kernel model's alpha on its support; and b."""
    if fit.w is not None:
        w = np.ascontiguousarray(fit.w, dtype="<f4")
        return {"w64": base64.b64encode(w.tobytes()).decode("ascii"), "b": float(fit.b)}
    sv = np.flatnonzero(fit.alpha)
    return {"n": int(len(fit.alpha)), "support": sv.tolist(), "alpha": fit.alpha[sv].tolist(), "b": float(fit.b)}


def start_of(spec: dict, warm_start=None):
    """The warm start of a fit: a search's spec carries, per fold (``warm_state``, outside its
    key), the model it starts from: a halving candidate's of the rung before, a certified
    search's C's of the fitted C nearest it. It replaces a C path's start, scaled from a
    neighbouring C, and a kernel path's: the same problem partly solved, or the nearest C's
    solution, is the closer start. A linear model's w goes in as w (dcd maps it to the dual
    point of this C, as its own C paths' starts do not need to)."""
    state = (spec.warm_state or {}).get(spec.fold)
    if state is None or spec.kind != "fit":
        return warm_start
    if "alpha" in state:
        alpha = np.zeros(state["n"])
        alpha[np.asarray(state["support"], dtype=np.int64)] = state["alpha"]
        start = {"alpha": alpha}
    elif state.get("w64") is not None:
        start = {"w": np.frombuffer(base64.b64decode(state["w64"]), dtype="<f4").astype(np.float64), "b": state["b"]}
    else:
        return warm_start
    # The fit it starts from (the record's warm_from), and its C where a C search names one.
    return {**start, "from": state.get("key"), **({"C": state["C"]} if state.get("C") else {})}


def json_safe(v):
    """A solver's info as plain JSON values: numpy scalars and arrays become numbers and lists,
    tuples lists, non-finite floats stay floats (the shard's JSON writes them as NaN/Infinity)."""
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [json_safe(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    return v if v is None or isinstance(v, str) else str(v)


def _model(fit, X, y) -> dict:
    """The fitted model (run.keep_models): w and b of a linear model, or the support indices and
    their alpha_i of a dual one; a 2-D dataset also keeps its training rows, so the report can
    draw the points, the support vectors and the boundary from the Parquet files alone."""
    out = {"b": float(fit.b), "w": None, "support": None, "alpha": None, "X": None, "y": None}
    if X.shape[1] == 2:
        out["X"] = (X.toarray() if sp.issparse(X) else np.asarray(X)).tolist()
        out["y"] = np.asarray(y, dtype=float).tolist()
    if fit.w is not None:
        out["w"] = np.asarray(fit.w, dtype=float).tolist()
    if fit.alpha is not None:
        sv = np.flatnonzero(fit.alpha != 0)
        out["support"], out["alpha"] = sv.tolist(), fit.alpha[sv].tolist()
    return out


def _multiclass_record(spec, X_tr, y_tr, X_te, y_te, classes, X_ho=None, y_ho=()) -> dict:
    """A multiclass fit through the solvers' wrappers (ovr, ovo or the ordinal chain): the
    binary certificates are summed (objectives, iterations, time) or maximised (violations);
    the status is the worst binary status; the test confusion matrix is kept."""
    from solvers.multiclass import fit_multiclass
    from sklearn.metrics import confusion_matrix

    fits, problems = [], []

    def fit_binary(Xs, ys):
        problem, fit = _solve_binary(spec, Xs, ys)
        fits.append(fit)
        problems.append(problem)
        return (problem, fit)

    def decision(model, X):
        return model[0].decision(model[1], X)

    strategy = spec.task.get("multi_class", "ovr")
    mc = fit_multiclass(strategy, X_tr, y_tr, np.asarray(classes), fit_binary, decision)
    pred_tr = mc.predict(X_tr, decision)
    pred_te = mc.predict(X_te, decision) if X_te.shape[0] else np.empty(0)
    status = max((f.status for f in fits), key=_STATUS_RANK.get)
    held = {}
    if len(y_ho):
        pred_ho = mc.predict(X_ho, decision)
        held = {**_heldout_columns(y_ho, pred_ho),
                "confusion_heldout": confusion_matrix(y_ho, pred_ho, labels=classes).tolist()}
    return dict(**held,
        status=status, n_iter=int(sum(f.n_iter for f in fits)), fit_time_s=float(sum(f.fit_time_s for f in fits)),
        primal_objective=float(sum(f.primal for f in fits)), dual_objective=float(sum(f.dual for f in fits)),
        duality_gap=float(sum(f.gap for f in fits)), kkt_violation=float(max(f.kkt_violation for f in fits)),
        train_accuracy=float(np.mean(pred_tr == y_tr)),
        test_accuracy=float(np.mean(pred_te == y_te)) if len(y_te) else math.nan,
        n_sv=int(sum(np.count_nonzero(f.alpha) for f in fits if f.alpha is not None)),
        n_train=int(len(y_tr)), n_test=int(len(y_te)), n_features=int(X_tr.shape[1]),
        C=float(problems[0].C), trace=[],
        n_classes=len(classes), multi_class=strategy,
        confusion_test=confusion_matrix(y_te, pred_te, labels=classes).tolist() if len(y_te) else None,
        info={"n_binary": len(fits)},
    )


def share_rows(y: np.ndarray, share: float, seed: int, fold: int) -> np.ndarray:
    """The first ceil(share n) rows of one stratified random order of a training fold (at least
    two): each class's rows take evenly spaced places in the order, so every prefix keeps the
    classes' proportions, and a larger share's rows hold a smaller one's (a halving rung's
    warm start keeps its alpha, the new rows' at 0). The order is fixed by the folds' seed
    and the fold."""
    rng = np.random.default_rng([int(seed), int(fold)])
    place = np.empty(len(y))
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        place[idx] = (rng.permutation(len(idx)) + rng.random(len(idx))) / len(idx)
    order = np.argsort(place, kind="stable")
    return order[:min(len(y), max(2, math.ceil(share * len(y))))]


def _padded(warm_start, n: int):
    """A warm start's alpha of fewer rows (the last rung's share) with zeros for the rows added."""
    if not warm_start or warm_start.get("alpha") is None or len(warm_start["alpha"]) >= n:
        return warm_start
    return {**warm_start, "alpha": np.r_[warm_start["alpha"], np.zeros(n - len(warm_start["alpha"]))]}


def run_fit(spec: dict, root: str) -> dict:
    """Fit one (dataset, fold, solver, parameters) and return its result record and trace."""
    return _run_fit(spec, root)[0]


def _run_fit(spec: dict, root: str, warm_start=None) -> tuple[dict, object]:
    """(record, fit); fit is None unless a binary fit returned a model (the next path point's start)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    reset_peak_rss()
    record = {"key": spec.key, "kind": "fit", "status": "error", "error": None, "trace": []}
    fit = None
    try:
        ensure_plugin(spec)
        X_tr, y_tr, X_te, y_te, classes = fold_data(root, spec.data, spec.fold)
        X_ho, y_ho = heldout_data(root, spec.data, spec.fold)
        if len(classes) == 2:
            rows = _train_problem(root, spec.data, spec.fold)
            share = spec.budget.get("train_fraction")
            if share is not None:     # a halving rung on part of the training rows, in their stratified order
                rows = _share_problem(spec.data, spec.fold, share, rows)
                X_tr, y_tr = rows.X, rows.y
                warm_start = _padded(warm_start, len(y_tr))
            rec, fit = _binary_record(spec, X_tr, y_tr, X_te, y_te, warm_start, X_ho, y_ho, rows)
            record.update(rec)
        else:
            record.update(_multiclass_record(spec, X_tr, y_tr, X_te, y_te, classes, X_ho, y_ho))
    except Exception as exc:  # noqa: BLE001 - a failed task is a row, not a crash
        record.update(status="error", error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    record["task_time_s"] = time.perf_counter() - t0
    # Its CPU seconds beside (this thread's: the fit runs in it), what a cost estimate and a share
    # of a run's work are counted in (run.py's cost lines; the shards keep it, the tables do not).
    record["task_cpu_s"] = time.thread_time() - c0
    record.update(environment(), env_peak_rss_mb=peak_rss_mb())
    return record, fit


def run_reference(spec: dict, root: str) -> dict:
    """A certified solve of one problem at tight tolerance: f* and its certificate."""
    return _run_reference(spec, root)[0]


def _run_reference(spec: dict, root: str, warm_start=None) -> tuple[dict, object]:
    import solvers

    t0, c0 = time.perf_counter(), time.thread_time()
    reset_peak_rss()
    record = {"key": spec.key, "kind": "reference", "status": "error", "error": None}
    fit = None
    try:
        X_tr, y_tr, _, _, classes = fold_data(root, spec.data, spec.fold)
        if len(classes) != 2:
            raise ValueError(f"{len(classes)} classes: no binary reference problem")
        problem = problem_of(spec.problem, X_tr, y_tr, _train_problem(root, spec.data, spec.fold))
        b = spec.budget
        params = {}
        if "random_state" in solvers.get_solver(spec.solver).params:
            params["random_state"] = spec.seed
        budget = solvers.Budget(max_iter=b["max_iter"], tol=b["tol"], time_limit_s=b.get("time_limit_s"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _solver_starts()
            fit = solvers.fit(problem, spec.solver, budget=budget, warm_start=warm_start, **params)
        # f* is certified: the dual bounds it from below, so f* lies in [P - gap, P]. A solve
        # that stopped short (status max_iter/timeout) keeps its status: results flag that f*.
        record.update(status=fit.status, f_star=float(fit.primal), f_star_gap=float(fit.gap),
                      f_star_kkt=float(fit.kkt_violation), f_star_solver=spec.solver,
                      n_iter=int(fit.n_iter), fit_time_s=float(fit.fit_time_s), C=float(problem.C))
    except Exception as exc:  # noqa: BLE001
        record.update(status="error", error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    record["task_time_s"] = time.perf_counter() - t0
    record["task_cpu_s"] = time.thread_time() - c0
    record["env_peak_rss_mb"] = peak_rss_mb()
    return record, fit


def run_spec(spec: dict, root: str) -> dict:
    """One spec on its own: it starts cold (`start`; a C path's points are `run_path`'s)."""
    record = run_reference(spec, root) if spec.kind == "reference" else run_fit(spec, root)
    record.update(start="cold", start_from=None)
    return record


def ensure_plugin(spec: dict) -> None:
    """Load the plugin that registers the spec's solver (`plan`: a fit spec of a plugin solver
    carries ``plugin``, its source and sha256, in its key, and ``plugin_text``, the file itself,
    beside it), so that a worker that never had the file runs it. Once per process per plugin."""
    plugin = spec.plugin
    if plugin is None:
        return
    from solvers.registry import ensure_plugin as load
    load(plugin["source"], plugin.get("sha256"), spec.plugin_text)


def _scaled_start(fit, C_from: float, C_to: float) -> dict | None:
    """The warm start of the next C from the last point's model, as LIBLINEAR's C search does:
    dual variables scaled by C_to / C_from (they stay in the box [0, C] and keep sum(alpha y) = 0,
    and w = sum alpha_i y_i x_i scales with them); a primal model (w, b) as it is. ``ray``
    lets a solver that can (dcd) take the best point of that ray instead: at large C the
    scale overshoots (solvers.dcd._ray_step)."""
    if fit is None or fit.status == "diverged" or not math.isfinite(fit.primal) \
            or not (math.isfinite(C_from) and math.isfinite(C_to)):
        return None
    if fit.alpha is not None:
        return {"alpha": np.asarray(fit.alpha) * (C_to / C_from), "ray": True}
    return {"w": fit.w, "b": fit.b}


def _kernel_path(spec: dict):
    """A kernel_dual.KernelPath for a C path of a solver that shares one (smo), else None: the
    path's fits, one (fold, kernel) in increasing C, then share the kernel cache (the columns one
    C computed serve the next: the kernel does not depend on C) and each starts from the last
    one's alpha, scaled to its C (DeCoste and Wagstaff 2000) or kept, with the gradient scaled
    along, not recomputed (kernel_dual.path_seed). The path holds the cache (cache_size MB) and
    the test rows' kernel columns (KernelPath.decision) until it ends."""
    import solvers
    from solvers.kernel_dual import KernelPath

    if spec.kind != "fit":
        return None
    try:
        shares = solvers.get_solver(spec.solver).kernel_path
    except Exception:  # noqa: BLE001 - a plugin not loaded yet, or unknown: its fit reports that
        return None
    return KernelPath() if shares else None


def run_path(specs: list[dict], root: str, notify=None) -> list[dict]:
    """The points of one C path in increasing C, each warm-started from the previous one's model
    (the first cold); each point is its own record, with `warm_from` naming the point it
    started from. A point that fails or diverges gives the next one a cold start."""
    runner = _run_reference if specs[0].kind == "reference" else _run_fit
    records, prev = [], None
    kernel_path = _kernel_path(specs[0])
    for spec in sorted(specs, key=lambda s: s.problem["C"]):
        C = spec.problem["C"]
        if kernel_path is not None:
            start, seeded = {"path": kernel_path}, kernel_path.ready
        else:
            start = _scaled_start(prev[1], prev[2], C) if prev else None
            seeded = start is not None
        own = start_of(spec, start)
        # A search's own start (a halving rung's model of the rung before, a C search's nearest
        # fitted C) replaces the path's, unless the path's last point is nearer in log C than
        # the fitted C it names: a C search's new points then walk warm from each other. On a
        # kernel path it starts the path's first fit, with the path's kernel cache: the later
        # points of one (fold, kernel), a halving rung's candidates of one gamma, take the
        # columns the first computed and their seed from the C before, on the same rows.
        if own is not start and kernel_path is not None:
            if not kernel_path.ready:
                start, seeded = {**own, "path": kernel_path}, False
        elif own is not start and not (seeded and prev and own.get("C") and
                                       abs(math.log(C / prev[2])) < abs(math.log(C / own["C"]))):
            start, seeded = own, False
        if seeded and prev and spec.get("path_stop"):     # LIBLINEAR's test reads the last model (`_kept`)
            start = {**start, "last_model": prev[1]}
        _start(notify, spec.key)
        record, fit = runner(spec, root, start)
        if seeded and prev and record.get("info", {}).get("unchanged"):
            record.update(warm_from=prev[0], start="warm",
                          start_from=f"C={prev[2]:g}: its w and b, kept (LIBLINEAR's -s 2 test holds there)")
        elif seeded and prev:
            record.update(warm_from=prev[0], start="warm",
                          start_from=_start_from(start, prev[2], C, kernel_path is not None))
        elif start is not None and start.get("from"):     # a search's start: the model of the fit it names
            record.update(warm_from=start["from"], start="warm",
                          start_from=_search_start(start))
        else:
            record.update(warm_from=None, start="cold", start_from=None)
        records.append(_notify(notify, "record", record))
        prev = (spec.key, fit, C) if fit is not None else None
    return records


def _start_from(start: dict, C_from: float, C_to: float, kernel: bool) -> str:
    """What a warm-started point started from, in words (the results' `start_from`)."""
    if kernel:
        return f"C={C_from:g}: its alpha scaled by {C_to / C_from:g} and its kernel cache"
    if "alpha" in start:
        return f"C={C_from:g}: its alpha scaled by {C_to / C_from:g}" + (", then along that ray" if start.get("ray") else "")
    return f"C={C_from:g}: its w and b"


def _search_start(start: dict) -> str:
    """What a search's fit started from, in words (the results' `start_from`; `start_of`)."""
    return "its warm_from fit: its " + ("alpha" if "alpha" in start else "w and b")


def run_task(units: list[list[dict]], root: str, notify=None) -> list[dict]:
    """One Dask task: units of one spec or one C path each; one record per spec.
    notify(what, payload), if given, hears ("start", key) before each spec and ("record",
    record) after it: the sandbox names the running spec to the worker that watches it and sends the records in batches."""
    records = []
    for unit in units:
        if len(unit) > 1:
            records.extend(run_path(unit, root, notify))
        else:
            _start(notify, unit[0].key)
            spec = unit[0]
            start = start_of(spec) if spec.kind == "fit" else None
            if start is None:
                record = run_spec(spec, root)
            else:       # a search's fit, warm from the model of the fit it names
                record = _run_fit(spec, root, start)[0]
                record.update(warm_from=start.get("from"), start="warm", start_from=_search_start(start))
            records.append(_notify(notify, "record", record))
    return records


def _start(notify, key: str) -> None:
    """notify hears that spec `key` starts, and, once its solver starts, ("solving", key)."""
    _notify(notify, "start", key)
    _SOLVING.set(None if notify is None else functools.partial(notify, "solving", key))


def _notify(notify, what: str, payload):
    if notify is not None:
        notify(what, payload)
    return payload
