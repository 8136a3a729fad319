"""LIBLINEAR's C search as a warm path per fold (search=path, pipeline/search/path.py): its C
values are LIBLINEAR's own (start, doubling, cap), its walk ends by LIBLINEAR's counter, a fold
keeps its model exactly where LIBLINEAR's -s 2 test says it would not move, each fold's fits run
warm one after another, and its settings are checked."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from pipeline.data.datasets import ingest_file
from pipeline.engine.tasks import fold_data
from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.results.searches import read_state
from pipeline.run import materialise_datasets, run
from pipeline.search import path

RUN = ["solvers=[dcd]", "solvers.dcd.params.loss=squared_hinge", "solvers.dcd.params.intercept=none",
       "search=path", "cluster=sequential", "run.trace=false", "run.reference=false", "run.progress=false",
       "report.figures=false"]


def _file(tmp, name, X, y):
    from sklearn.datasets import dump_svmlight_file
    f = tmp / f"{name}.svm"
    dump_svmlight_file(X, np.where(y > 0, 1, -1), str(f))
    return f


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two small files in a store of their own: blobs (separable, where LIBLINEAR's rule ends the
    walk early) and make_classification (where LIBLINEAR walks to its cap)."""
    from sklearn.datasets import make_blobs, make_classification
    tmp = tmp_path_factory.mktemp("path")
    store = tmp / "store"
    X, y = make_blobs(400, 5, centers=[[-3] * 5, [3] * 5], random_state=0)
    blobs = _file(tmp, "blobs", X, y)
    X, y = make_classification(400, 20, random_state=0, class_sep=2.0)
    mc = _file(tmp, "mc", X, y)
    for f in (blobs, mc):
        ingest_file(store, f, f.stem)
    return store, {"blobs": blobs, "mc": mc}


def _ours(store, name, run_dir, *extra):
    cfg = compose([f"store.root={store}", f"datasets=[{name}]", f"+datasets.{name}={{builder: {name}}}", *RUN, *extra])
    out = run(cfg, run_dir)
    return read_state(run_dir)["searches"][0], out


def _liblinears(file, options="-s 2 -C -v 5"):
    """LIBLINEAR's own C search on the file (its train, its folds): the C values it printed, in
    order, and (best C, CV accuracy)."""
    script = ("import sys; from sklearn.datasets import load_svmlight_file; "
              "from liblinear.liblinearutil import problem, train; "
              "X, y = load_svmlight_file(sys.argv[1]); print(train(problem(y, X), sys.argv[2]))")
    out = subprocess.run([sys.executable, "-c", script, str(file), options], capture_output=True, text=True,
                         check=True).stdout
    Cs = [2.0 ** float(line.split()[1]) for line in out.splitlines() if line.startswith("log2c=")]
    return Cs, out


@pytest.fixture(scope="module")
def walks(files, tmp_path_factory):
    store, paths = files
    return {name: _ours(store, name, tmp_path_factory.mktemp(name)) for name in paths}


@pytest.mark.slow
def test_the_path_walks_liblinears_C_values(files, walks):
    """The same start (its calc_start_C on the same rows), doubling and cap as LIBLINEAR's own
    `train -C`: where LIBLINEAR walks to its cap, its list is start .. 1024, which is ours up to
    our stop; where its rule ends its walk, both lists are prefixes of one doubling sequence."""
    _, paths = files
    for name, file in paths.items():
        theirs, _ = _liblinears(file)
        state = walks[name][0]
        ours = state["walked"]
        assert ours[0] == theirs[0] == state["start_C"], (name, ours[0], theirs[0])
        assert ours == theirs[:len(ours)] or theirs == ours[:len(theirs)], (name, ours, theirs)
        assert path.path_Cs(state["start_C"])[:len(theirs)] == theirs
    # mc: LIBLINEAR walks to its cap, and so is the whole list ours would walk.
    theirs, out = _liblinears(paths["mc"])
    assert theirs[-1] == 1024.0 and "maximum C reached" in out
    assert theirs == path.path_Cs(walks["mc"][0]["start_C"])


def _liblinear_counter(flags):
    """find_parameter_C's own bookkeeping, transcribed line for line: num_unchanged_w after each
    C (flags[f][k]: fold f's w did not move at C_k), break at 5; the index of the last C walked."""
    num_unchanged_w = 0
    prev = [None] * len(flags)
    for k in range(len(flags[0])):
        for i in range(len(flags)):
            if prev[i] is None:
                prev[i] = True
            elif num_unchanged_w >= 0:
                if not flags[i][k]:
                    num_unchanged_w = -1
        num_unchanged_w += 1
        if num_unchanged_w == 5:
            return k
    return None


def test_the_stop_is_liblinears_counter():
    rng = np.random.default_rng(0)
    cases = [np.ones((3, 5), bool), np.ones((3, 4), bool), np.ones((1, 12), bool)]
    cases += [rng.random((rng.integers(1, 6), rng.integers(1, 30))) < p for p in (0.5, 0.8, 0.95) for _ in range(300)]
    one = np.ones((2, 12), bool)
    one[1, 3] = False       # one fold moving at C_3 resets every fold's run: C_4 .. C_8 end it
    cases.append(one)
    for flags in cases:
        assert path.stop_index(flags.tolist()) == _liblinear_counter(flags.tolist()), flags.astype(int)
    assert path.stop_index(np.ones((3, 5), bool).tolist()) == 4      # the first C counts as one
    assert path.stop_index(one.tolist()) == 8


def _newton_test(X, y, w, C):
    """-s 2's stopping test at (w, C) on the fold's rows, written out: ||grad P_C(w)|| against
    0.01 min(l+, l-)/l ||grad P_C(0)||."""
    m = y * (X @ w)
    I = m < 1
    g = w + 2 * C * X[I].T @ ((m[I] - 1) * y[I])
    g0 = 2 * C * np.linalg.norm(X.T @ y)
    return np.linalg.norm(g) <= 0.01 * min((y > 0).sum(), (y < 0).sum()) / len(y) * g0


def test_a_fold_keeps_its_model_where_liblinear_would_not_move(files, walks, tmp_path):
    store, _ = files
    state, out = _ours(store, "blobs", tmp_path, "run.keep_models=true")
    res = out["results"].sort_values(["fold", "C"])
    import pandas as pd
    models = pd.read_parquet(tmp_path / "models.parquet").set_index("key")
    # The folds as the search's tasks cut them (a start given, so that the plan has specs to read).
    exp = validate(compose([f"store.root={store}", "datasets=[blobs]", "+datasets.blobs={builder: blobs}", *RUN,
                            "search.C_start=1"]))
    data = next(iter(build_plan(exp, materialise_datasets(exp)).fits.values()))["data"]
    kept = moved = 0
    for fold, rows in res.groupby("fold"):
        X, y = fold_data(str(store), data, int(fold))[:2]
        X = X.toarray() if hasattr(X, "toarray") else X
        prev = None
        for _, r in rows.iterrows():
            w = np.asarray(models.loc[r["key"], "w"], dtype=float)
            if prev is not None:
                same = _newton_test(X, y, prev, r["C"])
                assert bool(r["info_unchanged"] is True) == same, (fold, r["C"])
                if same:         # no solve: the last model, as LIBLINEAR's init_sol left untouched
                    assert r["n_iter"] == 0 and np.array_equal(w, prev)
                    kept += 1
                else:
                    assert r["n_iter"] > 0
                    moved += 1
            prev = w if r["info_unchanged"] is not True else prev
    assert kept and moved
    # The walk: LIBLINEAR's counter over the folds' flags, and its best C among the C walked.
    flags = [list(rows["info_unchanged"].eq(True)) for _, rows in res.groupby("fold")]
    stop = _liblinear_counter(flags)
    Cs = sorted(res["C"].unique())
    assert state["walked"] == Cs[:stop + 1] and state["stopped_at"] == Cs[stop]
    walked = res[res["C"] <= Cs[stop]]
    wrong = walked.assign(w=(1 - walked["test_accuracy"]) * walked["n_test"]).groupby("C")[["w", "n_test"]].sum()
    rate = 1 - wrong["w"] / wrong["n_test"]
    assert state["best_C"] == rate.index[np.flatnonzero(np.isclose(rate, rate.max()))[0]]


def test_each_folds_path_is_one_warm_walk(files, walks):
    """Each fold's C values run as one unit, in increasing C, each warm from the one before: one
    Dask task a fold (never cut into segments, whose first point would start cold), the folds in
    parallel."""
    from pipeline.engine.cutting import make_units
    from pipeline.search_run import _round_plan, _searches
    state, out = walks["mc"]
    res = out["results"].sort_values(["fold", "C"])
    for fold, rows in res.groupby("fold"):
        keys = list(rows["key"])
        assert rows["start"].iloc[0] == "cold" and (rows["start"].iloc[1:] == "warm").all()
        assert list(rows["warm_from"].iloc[1:]) == keys[:-1], fold      # each C from the one before
    store, _ = files
    exp = validate(compose([f"store.root={store}", "datasets=[mc]", "+datasets.mc={builder: mc}", *RUN]))
    labels = materialise_datasets(exp)
    search = _searches(exp, labels)[0]
    plan, _ = _round_plan(exp, labels, {search: search.next_points()}, 0)
    for workers in (1, 2, 3):
        units = make_units(plan.fits.select(set()), workers)
        assert len(units) == 5 and all(len({s["fold"] for s in u}) == 1 for u in units)
        assert sorted(len(u) for u in units) == [len(search.Cs)] * 5


@pytest.mark.parametrize("overrides, words", [
    (["solvers.dcd.params.loss=hinge"], ["solvers.dcd.params.loss='hinge'", "squared hinge"]),
    (["solvers=[liblinear]", "~solvers.dcd", "solvers.liblinear.params.loss=squared_hinge"],
     ["solvers.liblinear.solver='liblinear'", "takes a warm start"]),
    (["search.C_start=2048"], ["search.C_start=2048.0", "must be <= search.C_max=1024.0"]),
    (["search.C_max=0"], ["search.C_max=0.0", "> 0"]),
    (["run.warm_start=false"], ["run.warm_start=False", "walks each fold's C values warm"]),
    (["solvers.dcd.grid.tol=[0.1,0.01]"], ["solvers.dcd.grid.tol=[0.1, 0.01]", "searches C alone"]),
])
def test_bad_path_settings_are_refused_in_one_line(tmp_path, overrides, words):
    base = [f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd]", "solvers.dcd.params.loss=squared_hinge",
            "search=path", "cluster=sequential"]
    with pytest.raises(ConfigError) as exc:
        validate(compose([*base, *overrides]))
    message = str(exc.value)
    assert "\n" not in message
    for w in words:
        assert w in message, (w, message)
