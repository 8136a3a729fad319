"""C paths, chunked tasks, the fold cache and honest references: each test fails when its
mechanism is taken away (warm starts, per-point shards, resume of only the missing points, the
worker's fold cache, the packing of short fits, the flag on a reference that stopped short)."""
import numpy as np
import pandas as pd
import pytest

from pipeline.engine import tasks
from pipeline.experiment.config import compose, validate
from pipeline.engine.cutting import make_tasks, make_units
from pipeline.engine.sink import finished_keys
from pipeline.run import materialise_datasets, run
from pipeline.experiment.plan import build_plan

from .shard_edit import drop_records
from .typed_specs import fit_spec

C_PATH = [0.1, 1.0, 10.0, 100.0]
SWEEP = ["datasets=[rcv1_like]", "+datasets.rcv1_like.params.n_samples=1000",
         "+datasets.rcv1_like.params.n_features=300", "cv.folds=2", "solvers=[dcd]",
         "solvers.dcd.params.loss=squared_hinge", "solvers.dcd.params.tol=1e-3", f"solvers.dcd.grid.C={C_PATH}",
         "cluster=sequential", "run.progress=false",
         # One pass order for every fit: by default a fit's seed comes from its task key, which
         # differs between a warm and a cold fit (warm_from) and changes with the solver's
         # version, so the pass counts compared below would mix the warm start's gain with
         # seed noise.
         "+solvers.dcd.params.random_state=0"]


def _run(store, run_dir, *overrides):
    return run(compose([f"store.root={store}", *SWEEP, *overrides]), run_dir)


@pytest.fixture(scope="module")
def warm_cold(store, tmp_path_factory):
    warm = _run(store, tmp_path_factory.mktemp("warm"), "run.reference=true")
    cold = _run(store, tmp_path_factory.mktemp("cold"), "run.reference=true", "run.warm_start=false")
    return warm, cold


def test_warm_and_cold_paths_reach_the_same_optima_with_a_row_and_shard_per_point(warm_cold):
    warm, cold = warm_cold
    w, c = warm["results"], cold["results"]
    assert len(w) == len(c) == 2 * len(C_PATH) and (w["status"] == "converged").all()
    assert {k for k in finished_keys(warm["run_dir"]) if k.startswith("fit-")} == set(w["key"])
    # Every point but the first of each fold's path started from its predecessor, and says so.
    assert (w["warm_from"].notna()).sum() == 2 * (len(C_PATH) - 1) and c["warm_from"].isna().all()
    assert (w["start"] == np.where(w["warm_from"].notna(), "warm", "cold")).all() and (c["start"] == "cold").all()
    assert w.loc[w["start"] == "warm", "start_from"].str.match(r"C=\d+(\.\d+)?: its alpha scaled by 10").all()
    # Same optima within what each certifies: P - f* <= gap for both, so the two objectives
    # differ by at most the sum of their gaps (dcd's tol bounds the PG spread, not P).
    w, c = (d.sort_values(["fold", "C"]).reset_index(drop=True) for d in (w, c))
    assert (abs(w["primal_objective"] - c["primal_objective"]) <= w["duality_gap"] + c["duality_gap"]).all()
    for d in (w, c):
        assert (d["primal_objective"] - d["f_star"] <= d["duality_gap"] + d["f_star_gap"] + 1e-9).all()
    np.testing.assert_allclose(w["primal_objective"], c["primal_objective"], rtol=1e-2)
    # The warm start was used: the large-C points need fewer passes than from zero (squared
    # hinge; for the hinge, dcd gains little from a warm start: see DESIGN.md). Pass counts are
    # deterministic (seeded pass order), so a path whose warm start is lost gives about the cold
    # count (tried: 660 against 663). With one pass order for both (random_state 0): 610
    # against 650 passes; over random_state 1-4 the warm path takes 0.945-0.959 of the cold
    # one. Seeded from the task keys instead, the two paths ran other orders and the ratio
    # was luck: 605 against 663 under dcd version 4, 676 against 656 under version 5.
    big = w["C"] >= 10
    assert w.loc[big, "n_iter"].sum() < 0.95 * c.loc[big, "n_iter"].sum()


def test_references_run_as_a_warm_path_too(warm_cold):
    warm, _ = warm_cold
    from pipeline.results.tables import read_shards
    refs = [r for r in read_shards(warm["run_dir"]) if r["kind"] == "reference"]
    assert len(refs) == 2 * len(C_PATH) and sum(r.get("warm_from") is not None for r in refs) == 2 * (len(C_PATH) - 1)


@pytest.mark.slow
def test_a_resumed_path_recomputes_only_its_missing_points(store, warm_cold, tmp_path):
    import shutil
    warm, _ = warm_cold
    shutil.copytree(f"{warm['run_dir']}/shards", tmp_path / "shards")
    res = warm["results"]
    victim = res[(res["fold"] == 0) & (res["C"] == 10.0)]["key"].item()
    drop_records(tmp_path, [victim])
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "shards").iterdir()}
    out = _run(store, tmp_path, "run.reference=true")
    assert out["summary"].done == 1
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "shards").iterdir()}
    assert {k: v for k, v in after.items() if k in before} == before and set(after) - set(before) == {f"{victim}.1.parquet"}
    row = out["results"].set_index("key").loc[victim]
    # Its predecessor's model is not stored: the lone missing point starts cold, same optimum.
    assert row["status"] == "converged" and pd.isna(row["warm_from"])
    assert row["primal_objective"] == pytest.approx(res.set_index("key").loc[victim, "primal_objective"], rel=1e-3)


def test_reference_stopped_early_is_flagged_and_floors_suboptimality(store, tmp_path):
    out = _run(store, tmp_path, "run.reference=true", "run.reference_max_iter=2", "run.warm_start=false")
    res = out["results"]
    assert (res["f_star_status"] == "max_iter").all()
    assert (res.loc[res["C"] >= 10, "f_star_rel_gap"] > 1e-3).all()
    # Never finer than f*'s certainty, and marked where the raw value was below it.
    assert (res["rel_suboptimality"] >= res["f_star_rel_gap"] - 1e-15).all()
    raw = (res["primal_objective"] - res["f_star"]) / res["f_star"].abs()
    assert (res["rel_suboptimality_floored"] == (raw < res["f_star_rel_gap"])).all()
    assert res["rel_suboptimality_floored"].any()
    assert "f* not certified" in (tmp_path / "report.md").read_text()


def test_a_resume_with_a_new_reference_budget_links_the_reused_fits_to_the_new_references(store, tmp_path):
    """The reference's budget is in its key but the reference key is not in a fit's: a rerun
    after changing it reuses every fit and solves new references, and the fits' f* must come
    from those (the shards name the old ones)."""
    first = _run(store, tmp_path, "run.reference=true", "run.reference_max_iter=2", "run.warm_start=false")
    assert (first["results"]["f_star_status"] == "max_iter").all()
    again = _run(store, tmp_path, "run.reference=true", "run.warm_start=false")
    res = again["results"]
    assert again["summary"].skipped == len(res) > 0          # every fit reused
    assert res["f_star"].notna().all() and (res["f_star_status"] == "converged").all()


def test_plain_cv_sweep_solves_no_reference_under_auto(store, tmp_path):
    out = _run(store, tmp_path)
    assert out["summary"].total == 2 * len(C_PATH)
    assert not any(k.startswith("ref-") for k in finished_keys(tmp_path)) and out["results"]["f_star"].isna().all()


def test_fold_cache_returns_the_same_arrays_and_folds_do_not_collide(store, monkeypatch):
    cfg = compose([f"store.root={store}", *SWEEP])
    exp = validate(cfg)
    plan = build_plan(exp, materialise_datasets(exp))
    data = next(iter(plan.fits.values()))["data"]
    tasks.clear_caches()
    first = tasks.fold_data(str(store), data, 0)
    again = tasks.fold_data(str(store), data, 0)
    assert all(a is b for a, b in zip(first[:4], again[:4]))
    other = tasks.fold_data(str(store), data, 1)
    # Another fold is another entry, with other rows (its training set is the first's test set).
    assert other[0] is not first[0] and other[0].shape == first[2].shape and (other[0] != first[2]).nnz == 0
    scaled = tasks.fold_data(str(store), {**data, "scale": "maxabs"}, 0)
    assert scaled[0] is not first[0] and len(tasks._FOLDS) == 3
    # The byte bound evicts the oldest fold first, and keeps the total it counts exact.
    monkeypatch.setattr(tasks, "FOLD_CACHE_BYTES", tasks._nbytes(first) + tasks._nbytes(other))
    tasks.fold_data(str(store), {**data, "scale": "standard"}, 0)
    assert len(tasks._FOLDS) == 2 and tasks._FOLD_BYTES == sum(map(tasks._nbytes, tasks._FOLDS.values()))
    assert tasks.fold_data(str(store), data, 0)[0] is not first[0]      # the oldest went first


def test_short_fits_are_packed_and_paths_never_split():
    specs = [fit_spec(f"fit-{i}") for i in range(2000)]
    path = [fit_spec(f"fit-p{i}", path="path-x") for i in range(8)]
    units = make_units(specs[:5] + path + specs[5:])
    assert len(units) == 2001 and [len(u) for u in units[:7]] == [1] * 5 + [8, 1]
    packed = make_tasks(units, n_workers=2, chunk="auto")
    assert 70 <= len(packed) <= 90                      # ~40 tasks per worker
    assert sum(len(u) for t in packed for u in t) == 2008
    assert any(u is units[5] for t in packed for u in t)  # the path stays one unit
    assert len(make_tasks(units[:10], n_workers=2, chunk="auto")) == 10   # few fits: one per task
    assert len(make_tasks(units, n_workers=2, chunk=1)) == 2001


def test_folds_are_split_once_per_worker(store, monkeypatch):
    """A repeated split draws all its rounds at once: extracting fold after fold must not redo it."""
    cfg = compose([f"store.root={store}", *SWEEP, "cv=repeated", "cv.rounds=5"])
    exp = validate(cfg)
    plan = build_plan(exp, materialise_datasets(exp))
    data = next(iter(plan.fits.values()))["data"]
    calls = []
    real = tasks.data_split
    monkeypatch.setattr(tasks, "data_split", lambda *a: calls.append(1) or real(*a))
    tasks.clear_caches()
    for fold in range(5):
        tasks.fold_data(str(store), data, fold)
    assert len(calls) == 1


def test_a_warm_path_at_large_C_takes_fewer_steps_than_cold():
    """The path's warm start (tasks._scaled_start, taken along its ray by dcd) pays where the
    time goes, at the largest C. Counted in coordinate steps (n_updates), seeded pass order.
    With alpha scaled by C_to / C_from alone (the ray taken away), C = 30 took 1.02x the cold
    steps and the path 0.91x; along the ray, 0.44x and 0.68x."""
    import solvers
    from pipeline.data.datasets import get_builder
    X, y, _ = get_builder("rcv1_like")(n_samples=5000, n_features=3000, mean_nnz=40.0, margin=0.5)
    y = np.where(y == y.max(), 1.0, -1.0)
    warm, cold, prev = [], [], None
    for C in [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0]:
        problem = solvers.Problem(X, y, C=C, loss="squared_hinge")
        budget = solvers.Budget(tol=0.1)
        start = tasks._scaled_start(prev[0], prev[1], C) if prev else None
        fit = solvers.fit(problem, "dcd", budget=budget, warm_start=start, random_state=0)
        warm.append(fit.info["n_updates"])
        cold.append(solvers.fit(problem, "dcd", budget=budget, random_state=0).info["n_updates"])
        prev = (fit, C)
    assert warm[-1] < 0.6 * cold[-1]
    assert sum(warm) < 0.8 * sum(cold)


def _path_specs(folds, Cs):
    return [fit_spec(f"fit-{f}-{C}", path=f"path-{f}", fold=f, problem={"C": C}) for f in range(folds) for C in Cs]


def test_paths_are_cut_so_that_the_workers_finish_together():
    """5 folds' paths of 8 C on 2 workers: whole, the third round runs one path while the other
    worker idles (3 against 2 paths); with the last path cut in two, the greedy schedule (each
    free worker takes the next task, as Dask's queue does) loads both within 10%, counted in
    `_point_cost` units with each cut segment's cold first point counted twice."""
    from pipeline.engine.cutting import _point_cost
    Cs = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0]
    specs = _path_specs(5, Cs)

    def loads(units, workers):
        busy = [0.0] * workers
        for unit in units:
            cs = sorted(s["problem"]["C"] for s in unit)
            cost = sum(_point_cost(c, Cs[0]) for c in cs) + (_point_cost(cs[0], Cs[0]) if cs[0] != Cs[0] else 0.0)
            busy[busy.index(min(busy))] += cost
        return busy

    whole = make_units(specs)
    assert len(whole) == 5 and max(loads(whole, 2)) / (sum(loads(whole, 2)) / 2) > 1.15
    cut = make_units(specs, workers=2)
    assert sorted(len(u) for u in cut) == [3, 5, 8, 8, 8, 8]
    assert sorted(s["key"] for u in cut for s in u) == sorted(s["key"] for s in specs)
    assert max(loads(cut, 2)) / (sum(loads(cut, 2)) / 2) < 1.1
    # Enough paths to keep both workers busy: none is cut; nor on one worker.
    assert all(len(u) == 8 for u in make_units(_path_specs(9, Cs), workers=2))
    assert all(len(u) == 8 for u in make_units(specs, workers=1))
