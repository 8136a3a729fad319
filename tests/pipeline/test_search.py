"""Sweeps that search (pipeline/search/): the certified C search stops with its guarantee where
the best C lies between the first round's points, and the guarantee holds against exact CV
errors on a dense grid; halving promotes the best candidates of each rung and ends on the full
grid's best; a search killed mid-way resumes without refitting anything; bad settings are
refused in one line; the grid's keys are unchanged."""
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import solvers
from pipeline.engine.tasks import fold_data
from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.experiment.plan import build_plan, concat_plans
from pipeline.results.tables import iter_records
from pipeline.run import materialise_datasets, run
from pipeline.search import halving
from pipeline.results.searches import read_state

ROOT = Path(__file__).resolve().parents[2]
# breast_cancer (standardised on each training fold), squared hinge: the best C lies between
# the first round's 0.001, 0.01, 0.1 and 1 (about 0.015).
CERTIFIED = ["datasets=[breast_cancer]", "solvers=[dcd]", "solvers.dcd.params.loss=squared_hinge", "cv.folds=3",
             "search=certified", "search.C_max=1", "search.initial=4", "search.per_round=3", "search.epsilon=0.01",
             "run.trace=false", "run.reference=false", "run.progress=false"]
FIRST = [0.001, 0.01, 0.1, 1.0]
HALVING = ["datasets=[breast_cancer]", "solvers=[smo]", "solvers.smo.params.kernel=rbf", "solvers.smo.params.tol=1e-3",
           "solvers.smo.grid.C=[0.1,1,10,100]", "solvers.smo.grid.gamma=[0.001,0.01,0.1]", "cv.folds=3",
           "run.trace=false", "run.reference=false", "run.progress=false"]


@pytest.fixture(scope="module")
def certified(store, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("certified")
    out = run(compose([f"store.root={store}", "cluster=sequential", *CERTIFIED]), run_dir)
    return run_dir, out


def assert_bound_below(state, Cs, exact):
    """search.json's bound is at most the exact error at each C of Cs (away from its breaks,
    where the step function's value is that of the open intervals' ends)."""
    edges = np.asarray(state["bound"]["log_breaks"])
    between = np.asarray(state["bound"]["between"])
    at = np.clip(np.searchsorted(edges, np.log(Cs), side="right") - 1, 0, len(between) - 1)
    on_edge = np.isin(np.log(Cs), edges)
    assert (between[at][~on_edge] <= exact[~on_edge] + 1e-12).all()


def exact_errors(store, overrides, Cs, folds=None):
    """The validation error of the exact solution (smooth_newton, certified to rounding) at each
    C, the mean over `folds` (None: all), on the experiment's own folds and scaling (the workers'
    fold extraction)."""
    exp = validate(compose([f"store.root={store}", *overrides]))
    plan = build_plan(exp, materialise_datasets(exp))
    data = next(iter(plan.fits.values()))["data"]
    folds = range(len(next(iter(plan.datasets.values()))["folds"])) if folds is None else folds
    rows = [fold_data(str(store), data, k)[:4] for k in folds]
    out = []
    for C in Cs:
        errs = []
        for X, y, Xv, yv in rows:
            p = solvers.Problem(X, y, C=C, loss="squared_hinge", intercept="regularized")
            fit = solvers.fit(p, "smooth_newton", budget=solvers.Budget(tol=1e-12, max_iter=500))
            assert fit.gap <= 1e-8 * abs(fit.primal)
            errs.append(np.mean((p.decision(fit, Xv) > 0) != (yv > 0)))
        out.append(np.mean(errs))
    return np.array(out)


def test_the_certified_search_stops_with_its_guarantee_between_grid_points(store, certified):
    run_dir, out = certified
    state = read_state(run_dir)["searches"][0]
    assert state["certified"] and state["done"], state.get("reason")
    eps = state["settings"]["epsilon"]
    assert state["best_error"] - state["bound_min"] <= eps
    # The best C found is none of the first round's, and better than all of them.
    assert min(abs(math.log(state["best_C"] / C)) for C in FIRST) > 0.05, state["best_C"]
    first = [e["cv_error"] for e in state["errors"] if any(math.isclose(e["C"], C) for C in FIRST)]
    assert state["best_error"] < min(first)
    # The guarantee, checked independently: no exact solution on a dense grid over the range
    # has a CV error below the best found less epsilon; and the bound is below each of them.
    Cs = np.geomspace(1e-3, 1.0, 121)
    exact = exact_errors(store, ["cluster=sequential", *CERTIFIED], Cs)
    assert exact.min() >= state["best_error"] - eps, (exact.min(), state["best_error"])
    assert_bound_below(state, Cs, exact)
    # Every fit of every round is a row of the results, marked with its round.
    res = out["results"]
    rounds = res.groupby("search_round")["C"].nunique()
    assert list(rounds.index) == list(range(len(state["rounds"])))
    assert len(res) == 3 * sum(len(r["points"]) for r in state["rounds"])


def test_halving_promotes_the_best_of_each_rung_and_ends_on_the_grids_best(store, tmp_path):
    grid = run(compose([f"store.root={store}", "cluster=sequential", *HALVING]), tmp_path / "grid")["results"]
    cv = grid.groupby(["C", "gamma"])["test_accuracy"].mean()
    best = cv.idxmax()
    out = run(compose([f"store.root={store}", "cluster=sequential", "search=halving", "search.resource=tol",
                       *HALVING]), tmp_path / "halving")
    state = read_state(tmp_path / "halving")["searches"][0]
    rungs = state["rungs"]
    assert [r["n_candidates"] for r in rungs] == [12, 4, 2]          # ceil(12 / 3), ceil(4 / 3)
    assert [r["resource"] for r in rungs] == pytest.approx([9e-3, 3e-3, 1e-3])
    for r, nxt in zip(rungs, rungs[1:]):
        ranked = sorted(r["candidates"], key=lambda c: c["cv_error"])
        kept = {json.dumps(c["point"], sort_keys=True) for c in ranked[:nxt["n_candidates"]]}
        assert {json.dumps(c["point"], sort_keys=True) for c in nxt["candidates"]} == kept
    assert (state["best"]["point"]["C"], state["best"]["point"]["gamma"]) == best
    res = out["results"]
    assert len(res) == 3 * (12 + 4 + 2) and list(res.groupby("search_round").size()) == [36, 12, 6]
    # Each later rung's first candidate of a (fold, gamma) started from its own model of the rung
    # before; the next ones of that gamma from the C before on the same rows, with its kernel cache.
    later = res[res["search_round"] > 0]
    assert later["warm_from"].notna().all() and later["info_seeded"].isin(["alpha", "path"]).all()
    by_key = res.set_index("key")
    for _, r in later.iterrows():
        src = by_key.loc[r["warm_from"]]
        assert src["fold"] == r["fold"] and src["gamma"] == r["gamma"]
        if r["info_seeded"] == "alpha":
            assert src["search_round"] == r["search_round"] - 1 and src["C"] == r["C"]
        else:
            assert src["search_round"] == r["search_round"] and src["C"] < r["C"]
    for (rung, fold, gamma), g in later.groupby(["search_round", "fold", "gamma"]):
        assert list(g.sort_values("C")["info_seeded"]) == ["alpha"] + ["path"] * (len(g) - 1)
    assert (later["info_seeded"] == "path").any()


def test_halving_a_solver_that_takes_no_warm_start_runs_every_rung_cold(store, tmp_path):
    """LIBLINEAR through scikit-learn refuses a warm start: its rungs run cold, none fails."""
    out = run(compose([f"store.root={store}", "cluster=sequential", "datasets=[breast_cancer]", "solvers=[liblinear]",
                       "solvers.liblinear.grid.C=[0.01,0.1,1,10]", "cv.folds=3", "search=halving", "search.factor=2",
                       "search.resource=tol", "run.trace=false", "run.progress=false"]), tmp_path)
    res = out["results"]
    assert list(res.groupby("search_round").size()) == [12, 6, 3]
    assert (res["status"] != "error").all() and res["warm_from"].isna().all()


def test_halvings_schedule_is_halving_grid_search_cvs():
    """Candidates and resources per rung as scikit-learn's HalvingGridSearchCV makes them
    (n_candidates_, n_resources_), with a parameter as the resource."""
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier
    import warnings
    warnings.simplefilter("ignore", ConvergenceWarning)
    X = np.random.default_rng(0).normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    for n, factor, max_res in [(48, 3, 27), (10, 2, 16), (7, 3, 81)]:
        grid = {"alpha": list(np.geomspace(1e-4, 1, n))}
        hs = HalvingGridSearchCV(SGDClassifier(), grid, factor=factor, resource="max_iter", max_resources=max_res,
                                 min_resources=1, cv=2, refit=False, error_score=0.0).fit(X, y)
        ours = halving.schedule(n, factor, "max_iter", max_res, min_resources=1)
        assert [r.n_candidates for r in ours] == hs.n_candidates_
        assert [r.resource for r in ours] == hs.n_resources_


def _shards(run_dir):
    d = run_dir / "shards"
    return [p for p in d.iterdir() if not p.name.startswith(".")] if d.exists() else []


@pytest.mark.slow      # a `python -m pipeline` process, then the search again in this one
def test_a_killed_search_resumes_without_refitting(store, certified, tmp_path):
    """`python -m pipeline` killed (SIGKILL) after some of the search's shards, then run again:
    every fit has one record (none was refitted) and the search asks for exactly the points of
    one that ran through."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "pipeline", f"store.root={store}", "cluster=sequential", *CERTIFIED,
            f"hydra.run.dir={tmp_path}"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                         start_new_session=True)
    try:
        end = time.monotonic() + 120
        while len(_shards(tmp_path)) < 20:       # past the first round (4 C values x 3 folds)
            assert p.poll() is None and time.monotonic() < end, p.stderr.read() if p.poll() is not None else "timeout"
            time.sleep(0.02)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate(timeout=60)
    killed = {r["key"] for r in iter_records(tmp_path)}
    said = []
    out = run(compose([f"store.root={store}", "cluster=sequential", *CERTIFIED]), tmp_path, echo=said.append)
    keys = [r["key"] for r in iter_records(tmp_path)]
    assert len(keys) == len(set(keys)), "a fit was computed twice"
    assert killed < set(keys)
    assert out["summary"].skipped == len(killed) and out["summary"].done == len(keys) - len(killed)
    again = read_state(tmp_path)["searches"][0]
    through = read_state(certified[0])["searches"][0]
    assert again["rounds"] == through["rounds"] and again["certified"]
    assert set(out["results"]["key"]) == set(certified[1]["results"]["key"])


@pytest.mark.parametrize("overrides, words", [
    (["search=certified", "search.C_min=10", "search.C_max=1"], ["search.C_min=10.0", "must be < search.C_max=1.0"]),
    (["search=certified", "search.epsilon=0"], ["search.epsilon=0.0", "must be in (0, 1)"]),
    (["search=certified", "search.epsilon=-0.1"], ["search.epsilon=-0.1", "must be in (0, 1)"]),
    (["search=certified", "solvers=[gd]", "solvers.gd.params.loss=huber_hinge"],
     ["solvers.gd.params.loss='huber_hinge'", "covers ['hinge', 'squared_hinge']"]),
    (["search=certified", "solvers=[pegasos]"], ["solvers.pegasos.solver='pegasos'", "dcd, smooth_newton"]),
    (["search=certified", "solvers=[gd]", "solvers.gd.params.intercept=free"],
     ["solvers.gd.params.intercept='free'", "covers ['none', 'regularized']"]),
    (["search=certified", "solvers=[smo]"], ["solvers.smo.params.intercept='free'", "covers ['none', 'regularized']"]),
    (["search=halving", "search.factor=1"], ["search.factor=1.0", "must be a number > 1"]),
    (["search=halving", "search.factor=0.5"], ["search.factor=0.5", "must be a number > 1"]),
    (["search=halving", "search.resource=rows"], ["search.resource='rows'", "must be one of ['max_iter', 'tol', 'train_fraction']"]),
    (["search=halving", "search.resource=tol", "solvers.dcd.grid.tol=[0.1,0.01]"],
     ["solvers.dcd.grid.tol=[0.1, 0.01]", "sets tol per rung"]),
    (["search=certified", "cv=none"], ["cv.kind='none'", "no validation rows"]),
    (["search.kind=nosuch"], ["search.kind='nosuch'", "must be one of ['grid', 'certified', 'heldout', 'path', 'halving']"]),
])
def test_bad_search_settings_are_refused_in_one_line_naming_the_key(tmp_path, overrides, words):
    with pytest.raises(ConfigError) as exc:
        validate(compose([f"store.root={tmp_path}", "cluster=sequential", "datasets=[toy_blobs]", "solvers=[dcd]",
                          *overrides]))
    message = str(exc.value)
    assert "\n" not in message
    for w in words:
        assert w in message, (w, message)


def test_the_cli_refuses_a_bad_search_in_one_line(tmp_path):
    from .test_bad_input import _cli, _one_error_line
    p = _cli(tmp_path / "run", "solvers=[dcd]", "datasets=[toy_blobs]", "search=certified", "search.C_min=5",
             "search.C_max=5")
    _one_error_line(p, "search.C_min=5.0", "must be < search.C_max=5.0")
    assert not (tmp_path / "run").exists()


def test_the_grid_is_the_default_and_keys_the_same(tmp_path):
    base = [f"store.root={tmp_path}", "cluster=sequential", "datasets=[toy_blobs]", "solvers=[dcd,liblinear]"]
    exp = validate(compose(base))
    assert exp.search_kind == "grid"
    labels = materialise_datasets(exp)
    a, b = build_plan(exp, labels), build_plan(validate(compose([*base, "search=grid"])), labels)
    assert list(a.fits) == list(b.fits) and list(a.references) == list(b.references)
    assert all("search" not in s and "cv_bound" not in s for s in a.fits.values())


def test_plans_joined_keep_each_key_once_and_their_references(tmp_path):
    base = [f"store.root={tmp_path}", "cluster=sequential", "datasets=[toy_blobs]", "solvers=[dcd,liblinear]",
            "run.reference=true"]
    one = validate(compose([*base, "grid.C=[0.1,1]"]))
    two = validate(compose([*base, "grid.C=[1,10]"]))
    labels = materialise_datasets(one)
    p1, p2 = build_plan(one, labels), build_plan(two, labels)
    joined = concat_plans([p1, p2])
    want = {s["key"]: s["reference_key"] for p in (p1, p2) for s in p.fits.values()}
    assert list(joined.fits) == list(dict.fromkeys([*p1.fits, *p2.fits]))
    assert {s["key"]: s["reference_key"] for s in joined.fits.values()} == want
    assert list(joined.references) == list(dict.fromkeys([*p1.references, *p2.references]))
    assert len(joined.fits) == len(p1.fits) + len(p2.fits) - len(set(p1.fits) & set(p2.fits)) > len(p1.fits)


def test_closing_a_record_stream_wakes_its_wait_at_once(tmp_path, monkeypatch):
    """Each execute closes its record stream, a search once a round: closing wakes the thread
    waiting on the queue instead of waiting out its poll (FLUSH_S), and the wake is no batch."""
    from distributed import Client, LocalCluster
    from pipeline.engine import sink
    monkeypatch.setattr(sink, "FLUSH_S", 30.0)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,      # in-process: no port
                      dashboard_address=None) as cluster, Client(cluster) as client:
        records = sink.RecordSink(sink.ShardWriter(tmp_path))
        stream = sink.RecordStream(client, records)
        time.sleep(0.5)                   # the thread is in its 30 s wait
        started = time.perf_counter()
        stream.close()
        assert time.perf_counter() - started < 10.0
        assert not stream._thread.is_alive() and records.failed == 0 and not records._held
