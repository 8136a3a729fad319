"""The workers' warm-up and the sandbox's data path (issue 10, point 7 b-d), guarded by counts
and by a solver whose first call is deliberately slow (tests/pipeline/warm_solvers.py), never by
a sweep's speed:

- each worker thread's sandbox is started and warmed while the client plans, so no task's
  time (`task_time_s`, `fit_time_s`) carries the child's start or a solver's first-call cost;
- the sandbox child reads the dataset from the store and extracts folds itself: only specs
  cross the pipe, a bounded number of bytes per spec, and the worker holds no dataset."""
import contextlib
import importlib.util
import sys
import time
from pathlib import Path

import pytest

from pipeline.engine import cutting as cutting_module
from pipeline.engine import warmup as warmup_module
from pipeline.engine import tasks
from pipeline.experiment.config import compose, validate
from pipeline.engine.execute import execute
from pipeline.experiment.plan import build_plan
from pipeline.results import shards
from pipeline.results.tables import read_shards
from pipeline.run import _plan_while_starting, materialise_datasets
from pipeline.engine.sandbox import Sandbox

WARM = Path(__file__).with_name("warm_solvers.py")
if "warm_solvers" not in sys.modules:       # the client validates solver names against its registry
    _spec = importlib.util.spec_from_file_location("warm_solvers", WARM)
    sys.modules["warm_solvers"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["warm_solvers"])
WARM_S = sys.modules["warm_solvers"].WARM_S

SWEEP = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=120", "cv=holdout", "run.progress=false",
         "run.trace=false", "run.reference=false", "run.warm_start=false"]


def test_workers_warm_while_planning_and_no_task_carries_it(store, tmp_path, monkeypatch):
    """`_slow_warm`'s warmup sleeps WARM_S, as a cold numba compile would take, in the sandbox
    child of the one worker. Warmed while the client plans, no task's time holds it; warmed by
    the first task instead (no warm-up), that task's task_time_s would be >= WARM_S. Nor does
    the execute phase's clock: it starts once the warm-up has ended, which planning these 3
    specs does not cover, and the summary reports the start-up apart; the first tasks are cut
    meanwhile. A resumed run dir plans first and starts no cluster ahead (it may have nothing
    left to do)."""
    cfg = validate(compose([f"store.root={store}", *SWEEP, "cluster=local", "cluster.n_workers=1", "solvers=[]",
                   "+solvers._slow_warm={solver: _slow_warm, params: {loss: hinge, intercept: none}}",
                   "solvers._slow_warm.grid.C=[0.1,1,10]"]))
    run_dir = tmp_path / "run"
    cuts = []
    real_next = cutting_module.TaskCutter.next
    monkeypatch.setattr(cutting_module.TaskCutter, "next",
                        lambda self, size: cuts.append(time.perf_counter()) or real_next(self, size))
    # The workers are threads of this process, which registered _slow_warm: their sandboxes
    # import it as any plugin (a Dask preload would import a copy into this process).
    with contextlib.ExitStack() as stack:
        plan, client, warmup = _plan_while_starting(cfg, run_dir, stack)
        assert client is not None and len(warmup.futures) == 1
        summary = execute(plan, run_dir, cfg, str(store), log=lambda m: None, client=client, warmup=warmup)
        assert warmup.thread_seconds()[0] >= WARM_S    # the child's start and the solver's warmup
        assert cuts and cuts[0] < min(warmup._done)     # the first task was cut while it warmed
    assert summary.done == 3
    shards = read_shards(run_dir)
    assert [s["status"] for s in shards] == ["converged"] * 3
    assert max(s["task_time_s"] for s in shards) < WARM_S / 2, [s["task_time_s"] for s in shards]
    assert summary.startup_s >= WARM_S and summary.startup_wait_s > 0 and summary.wall_s < WARM_S / 2
    assert "cluster start and warm-up" in summary.line()
    with contextlib.ExitStack() as stack:
        plan, client, warmup = _plan_while_starting(cfg, run_dir, stack)
    assert client is None and warmup is None and len(plan.fits) == 3


def test_the_sandbox_child_reads_the_data_and_only_specs_cross_the_pipe(store):
    """Three tasks on 3,000 rows in one sandbox: the child reads the dataset once and each fold
    once, the bytes written to it are under 4 kB per spec (the specs, never a matrix: a fold's
    training rows alone are 32 kB), and this process, the worker's stand-in, has loaded no
    dataset."""
    cfg = validate(compose([f"store.root={store}", "datasets=[toy_blobs]", "datasets.toy_blobs.params.n_samples=3000",
                   "cv=kfold", "cv.folds=3", "solvers=[dcd]",
                   "solvers.dcd.grid.C=[0.1,1]", "run.reference=false", "run.warm_start=false",
                   "run.trace=false", "cluster=sequential"]))
    exp = cfg
    plan = build_plan(exp, materialise_datasets(exp))
    specs = sorted(plan.fits.values(), key=lambda s: s["fold"])
    tasks.clear_caches()
    tasks._DATASETS.clear()
    box = Sandbox()
    try:
        records = [r for i in range(3) for r in box.run([[s] for s in specs[2 * i:2 * i + 2]], str(store), {})]
        loads = box.call(tasks.load_counts)
    finally:
        box.close()
    assert [r["status"] for r in records] == ["converged"] * 6
    assert loads == {"datasets": 1, "folds": 3}
    per_spec = box.sent_bytes / len(specs)
    assert per_spec < 4000, per_spec
    assert not tasks._DATASETS and not tasks._FOLDS


def test_python_m_pipeline_starts_the_cluster_ahead_and_the_run_takes_its_warm_up(store, tmp_path, monkeypatch):
    """`start_ahead` (called by `python -m pipeline` once preflight has validated the config)
    opens the kept cluster and submits the warm-up before Hydra composes again; the run's
    `_plan_while_starting` then takes that warm-up over on the same client instead of starting
    and warming a cluster of its own. A run dir that holds shards gets no head start."""
    from pipeline import run as run_module
    from pipeline.engine.clusters import keep_clusters
    cfg = validate(compose([f"store.root={store}", *SWEEP, "cluster=local", "cluster.n_workers=1", "solvers=[dcd]",
                   "solvers.dcd.grid.C=[1]"]))
    calls = []
    real_warm = run_module.warm_workers
    monkeypatch.setattr(run_module, "warm_workers", lambda *a, **k: calls.append(a[1]) or real_warm(*a, **k))
    # What numba's cache lacks is looked up before the warm-up is submitted, and the head start's
    # warm-up says it (a fresh clone's first run once said "loads ... from numba's cache").
    monkeypatch.setattr(run_module, "uncompiled_solvers", lambda names: calls.append(("looked", list(names))) or {"dcd"})
    with keep_clusters(), contextlib.ExitStack() as stack:
        run_module.start_ahead(cfg, tmp_path / "new")
        assert len(run_module._AHEAD) == 1 and calls == [("looked", ["dcd"]), ["dcd"]]
        calls.remove(("looked", ["dcd"]))
        client, ahead = run_module._AHEAD[0]
        assert ahead.compiling == {"dcd"} and ahead.progress_line(0.0, first=True).startswith(
            "warming 1 worker threads for dcd: compiling the numba kernels of dcd")
        plan, planned_client, warmup = run_module._plan_while_starting(cfg, tmp_path / "new", stack)
        assert planned_client is client and warmup is ahead and calls == [["dcd"]] and not run_module._AHEAD
        warmup.wait()
        assert warmup.thread_seconds() and len(plan.fits) == 1
    (tmp_path / "old" / "shards").mkdir(parents=True)
    shards.write([{"key": "fit-0", "status": "converged"}], tmp_path / "old" / "shards" / "fit-0.parquet")
    with keep_clusters():
        run_module.start_ahead(cfg, tmp_path / "old")
        assert not run_module._AHEAD and calls == [["dcd"]]


def test_a_long_warm_up_says_how_far_it_is(monkeypatch):
    """A first run compiles numba's kernels in the warm-up: the command says so at once, naming
    what numba's cache lacks; a warm-up that outlasts WARMUP_QUIET_S is said, and how many
    threads are ready every WARMUP_PROGRESS_S (here scaled down), on a real in-process Dask
    cluster."""
    import time as _time

    from distributed import Client, LocalCluster
    monkeypatch.setattr(warmup_module, "WARMUP_QUIET_S", 0.3)
    monkeypatch.setattr(warmup_module, "WARMUP_PROGRESS_S", 0.4)
    lines = []
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        futures = [client.submit(_time.sleep, s, pure=False) for s in (0.8, 2.5)]
        warmup = warmup_module.WarmUp(futures, started=_time.perf_counter(), solvers={"dcd", "smo"}, compiling=set())
        warmup.wait(lines.append)
        # A first run's warm-up, whose solvers numba's cache lacks: said at once, naming them.
        said = []
        futures = [client.submit(_time.sleep, 0.5, pure=False)]
        compiling = warmup_module.WarmUp(futures, started=_time.perf_counter(), solvers={"dcd", "smo"},
                                         compiling={"smo"})
        compiling.wait(said.append)
    assert len(lines) >= 3, lines
    assert lines[0].startswith("warming 2 worker threads for dcd, smo: 0 ready after")
    assert any(": 1 ready after" in line for line in lines[1:]), lines
    assert "loads the solvers' numba kernels from numba's cache" in lines[0]
    assert said[0].startswith("warming 1 worker threads for dcd, smo: compiling the numba kernels of smo into "
                              "numba's cache, which has none of them yet (a first run's cost"), said
    assert said[0].endswith("; 0 ready after 0 s"), said
    quiet = []
    warmup = warmup_module.WarmUp([], started=_time.perf_counter())
    warmup.wait(quiet.append)
    assert quiet == []        # nothing to wait for: nothing said


def test_a_sandbox_warms_and_runs_a_binary_kfold_fit_without_scikit_learn():
    """scikit-learn's import (about a second of CPU) was half of a sandbox's warm-up, paid by
    two sandboxes at once on two cores before the first task: the warm-up's tiny fits stop at
    their 5 iterations and their ConvergenceWarning imported it, and the folds were its
    StratifiedKFold. Under an ignore-all filter (the tasks' and warmups') no warning class is
    imported, the folds are numpy's, and the environment reads its version from the metadata.
    A fit outside such a filter still warns with scikit-learn's ConvergenceWarning. Nor does
    `import solvers` import scipy.optimize (0.2 s): cpm and smooth_newton import it in their fits,
    which their warmups run first."""
    import subprocess
    code = ("import sys, warnings, numpy as np\n"
            "from pipeline.engine import tasks\n"
            "from pipeline.experiment.specs import make_folds\n"
            "tasks.warm(['dcd', 'smo'])\n"
            "make_folds(np.repeat([1.0, -1.0], 50), {'kind': 'kfold', 'folds': 5, 'shuffle': True}, 3)\n"
            "env = tasks.environment()\n"
            "print('sklearn' in sys.modules, env['env_sklearn'], 'scipy.optimize' in sys.modules)\n"
            "from solvers import get_solver\n"
            "from solvers.base import Budget, Recorder\n"
            "from solvers.registry import _warmup_problems\n"
            ""
            "dcd = get_solver('dcd')\n"
            "problem = next(_warmup_problems(dcd))\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    warnings.simplefilter('always')\n"
            "    dcd.fit(problem, budget=Budget(max_iter=1, tol=1e-12), recorder=Recorder(per_decade=1).start(), warm_start=None)\n"
            "print([type(w.message).__module__ + '.' + type(w.message).__name__ for w in seen])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    import sklearn
    assert out[0] == f"False {sklearn.__version__} False"     # nor scipy.optimize (cpm's and smooth_newton's, lazily)
    assert out[1] == "['sklearn.exceptions.ConvergenceWarning']"


def test_the_warm_up_imports_the_scikit_learn_modules_the_plan_s_tasks_import_and_only_those(store):
    """`task_modules`: none for binary k-fold without scaling; model_selection for a subsample or
    another split (the test above fails without it: its first task paid the import, 1.4 s);
    preprocessing for a scaler; metrics once the plan shows a multiclass dataset."""
    from pipeline.engine.warmup import task_modules
    from pipeline.run import materialise_datasets

    def modules(*overrides):
        exp = validate(compose([f"store.root={store}", "solvers=[dcd]", *overrides]))
        return task_modules(exp), task_modules(exp, build_plan(exp, materialise_datasets(exp)))

    assert modules("datasets=[toy_blobs]") == ([], [])
    assert modules("datasets=[toy_blobs]", "cv=holdout") == (["sklearn.model_selection"],) * 2
    assert modules("datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=100") == (["sklearn.model_selection"],) * 2
    assert modules("datasets=[toy_blobs]", "datasets.toy_blobs.scale=standard") == (["sklearn.preprocessing"],) * 2
    assert modules("datasets=[digits_bertini_3class]", "datasets.digits_bertini_3class.scale=none") == ([], ["sklearn.metrics"])


def test_the_worker_threads_start_their_warm_ups_at_different_solvers():
    """On a first run each solver's warm-up compiles its kernels under a lock (one process
    compiles, the others wait and load): thread k begins at the k-th solver, so two threads
    compile two solvers at once instead of queueing on the first."""
    submitted = []

    class Client:
        def scheduler_info(self):
            return {"workers": {"tcp://a": {"nthreads": 1}, "tcp://b": {"nthreads": 2}}}

        def submit(self, fn, order, threads, modules, **kw):
            submitted.append(order)

    warmup_module.warm_workers(Client(), ["smo", "dcd", "libsvm"], 1)
    assert submitted == [["dcd", "libsvm", "smo"], ["libsvm", "smo", "dcd"], ["smo", "dcd", "libsvm"]]

