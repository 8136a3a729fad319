"""A library's timing ladder that stops when it has its answer (pipeline/engine/ladder.py): it stops
at the first rung that reaches the target, refines only to the recorder's grid, runs no rung past
its budget (censored, shown `not reached within B`), and never solves its sweep twin's full solve
again. Each test fails with its mechanism taken away (the break is named in its docstring)."""
import math
import time
import types
import warnings

import numpy as np
import pandas as pd
import pytest

import solvers
from pipeline.engine import tasks
from pipeline.engine.ladder import Rung, climb, grid
from pipeline.experiment.config import compose
from pipeline.report.build import load
from pipeline.report.tables import time_to_target
from pipeline.run import run


def _solves(record):
    """A solve capped at k whose P - f* is 1/k (f* = 1) and whose time is k ms: the first grid
    point within 1e-3 of f* is the first k >= 1000 on the grid."""
    def solve(k):
        record.append(k)
        return types.SimpleNamespace(n_iter=k, fit_time_s=k * 1e-3, primal=1 + 1 / k, dual=1 - 1 / k, gap=2 / k,
                                     status="max_iter")
    return solve


def test_a_ladder_stops_at_the_first_rung_that_reaches_the_target():
    """Break: climb every grid point (stride 1 in `climb`), or go on past the first rung that
    reaches (`Ladder.first` treating a reached rung as short): the count of rungs fails."""
    ran = []
    ladder, info = climb(_solves(ran), per_decade=10, cap=10_000, f_star=1.0, target=1e-3)
    ks = grid(10, 10_000)
    first = next(k for k in ks if 1 / k <= 1e-3)          # what a rung-by-rung climb finds: 1223
    # Two rungs a decade up to the first that reaches it (3075), then the grid between the last
    # two bisected: 1540, then 1223. Nine solves, where a rung-by-rung climb to it ran 27.
    assert ran == [1, 8, 29, 96, 306, 971, 3075, 1540, 1223] and info["ladder_rungs"] == 9
    assert ks.index(first) + 1 == 27
    trace = ladder.trace()
    reached = [p for p in trace if p[2] - 1.0 <= 1e-3]
    assert reached[0][0] == first == 1223 and max(ran) == 3075
    assert info["ladder_end"] == "target" and info["ladder_target"] == 1e-3 and not info["ladder_own_stop"]


def test_a_real_librarys_ladder_finds_the_rung_a_rung_by_rung_climb_finds():
    """LIBLINEAR on a real problem: the first rung within 1e-3 of a certified f* is the one the
    rung-by-rung ladder (every grid point to the solver's own stop) finds, with fewer solves, none
    past the next half-decade. Break: the bisection's bracket (`lo`/`hi` swapped on a reached
    rung) or the stop at the target: the rung or the count fails."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 8))
    y = np.where(X @ rng.standard_normal(8) + 0.7 * rng.standard_normal(400) > 0, 1.0, -1.0)
    problem = solvers.Problem.build(X, y, C=10.0, loss="hinge", intercept="regularized")
    f_star = solvers.fit(problem, "smooth_newton", budget=solvers.Budget(tol=1e-12, max_iter=500)).primal
    budget = solvers.Budget(max_iter=10_000, tol=1e-6)
    calls = []

    def solve(b, enabled):
        calls.append(b.max_iter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return solvers.fit(problem, "liblinear", budget=b, random_state=0,
                               recorder=solvers.Recorder(enabled=enabled, clock=time.process_time))

    def first(fit):
        return next(p[0] for p in fit.trace if (p[2] - f_star) / abs(f_star) <= 1e-3)

    dense = tasks._ladder(solve, budget, 10)
    n_dense, calls[:] = len(calls), []
    fit = tasks._ladder(solve, budget, 10, f_star=f_star, target=1e-3)
    assert first(fit) == first(dense)
    # Its answer is proven at the grid's resolution: the grid point below it was run and fell short.
    ks = grid(10, 10_000)
    below = ks[ks.index(first(fit)) - 1]
    assert [(p[2] - f_star) / abs(f_star) > 1e-3 for p in fit.trace if p[0] == below] == [True]
    assert len(calls) == fit.info["ladder_rungs"] < n_dense / 2
    assert max(calls) <= ks[min(ks.index(first(dense)) + 5, len(ks) - 1)]


def test_a_ladder_past_its_budget_runs_no_rung_beyond_it_and_is_censored():
    """B = 0.5 s on the rungs' clock: the climb meets a rung past it (971 ms) before the target,
    bisects to the first grid point past it (612 ms) and ends there, censored: no rung past the
    first beyond B. Break: `past_budget` never true: the climb goes on to the target (1223 ms,
    a time past B) and reads it."""
    ran = []
    ladder, info = climb(_solves(ran), per_decade=10, cap=10_000, f_star=1.0, target=1e-3, limit_s=0.5)
    assert ran == [1, 8, 29, 96, 306, 971, 486, 612]
    assert info["ladder_end"] == "budget" and info["censored_at_s"] == 0.5 and info["timing_budget_s"] == 0.5
    assert [p[0] for p in ladder.trace()] == sorted(ran)


def test_a_ladder_with_its_twins_solve_never_solves_it_again():
    """The top (the sweep twin's full solve, handed over) is the last rung: no rung at or past its
    iterations is run; a top short of the target decides it without a rung. Break: `Ladder`
    ignoring the top (`top=None`): the climb runs rungs up to the cap."""
    ran = []
    top = Rung(k=2000, seconds=2.0, primal=1 + 1 / 2000, dual=1.0, gap=1e-3, status="converged")
    ladder, info = climb(_solves(ran), per_decade=10, cap=10_000, f_star=1.0, target=1e-3, top=top)
    assert max(ran) < 2000 and info["ladder_own_stop"] and 1223 in ran
    short = Rung(k=700, seconds=0.7, primal=1 + 1 / 700, dual=1.0, gap=1e-2, status="converged")
    ran.clear()
    ladder, info = climb(_solves(ran), per_decade=10, cap=10_000, f_star=1.0, target=1e-3, top=short)
    assert ran == [] and info["ladder_rungs"] == 0 and info["ladder_own_stop"]
    assert ladder.trace() == [(700, 0.7, 1 + 1 / 700, 1.0, 1e-2)]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("store")


TINY = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80", "cv.folds=2", "run.progress=false",
        "cluster=sequential", "solvers=[dcd,liblinear]", "grid.C=[0.1,1]", "report.figures=false"]


def test_a_librarys_sweep_fit_is_not_solved_again_by_its_ladder(store, tmp_path, monkeypatch):
    """Every LinearSVC call of a run, counted: the full solves (uncapped, at the pass cap) are the
    sweep's, one a fit, and no ladder rung ends by LIBLINEAR's own test (it would be that solve
    again): its ladder took the sweep twin's as its top. A loose tol stops LIBLINEAR short of
    the target, where a ladder would otherwise climb to its own stop. Break: no hand-over (the
    twin's record kept from the ladder, `handover.handed` without `top`): every ladder climbs
    to its own stop and solves it again."""
    from sklearn.svm import LinearSVC
    calls = []
    fit = LinearSVC.fit

    def counted(self, X, y, sample_weight=None):
        out = fit(self, X, y, sample_weight=sample_weight)
        calls.append((self.max_iter, int(np.max(self.n_iter_))))
        return out

    monkeypatch.setattr(LinearSVC, "fit", counted)
    out = run(compose([f"store.root={store}", *TINY, "grid.loss=[hinge]", "solvers.liblinear.params.tol=1.0"]),
              tmp_path / "r")
    timing = pd.read_parquet(tmp_path / "r" / "timing.parquet")
    ladders = timing[timing["timing_method"] == "ladder"]
    sweep = out["results"][out["results"]["solver_entry"] == "liblinear"]
    assert len(ladders) == len(sweep) == 4
    full = [c for c in calls if c[0] == 10_000]
    own_stops = [c for c in calls if c[1] < c[0]]      # ended by its own test before its cap
    assert len(full) == len(own_stops) == len(sweep)
    assert (ladders["info_ladder_top"] == "sweep fit").all() and ladders["info_ladder_own_stop"].all()
    # The ladder's record is the full solve's, as a ladder's always was.
    twin = sweep.set_index(["C", "fold"])
    for r in ladders.itertuples():
        assert (r.n_iter, r.primal_objective, r.status) == tuple(twin.loc[(r.C, r.fold), ["n_iter", "primal_objective",
                                                                                           "status"]])


def test_a_timing_fit_cut_by_its_budget_reads_not_reached_within_it(store, tmp_path):
    """run.timing_budget_s far below any fit's time: dcd's traced fits are cut at it and
    LIBLINEAR's ladders run no rung within it, and the report's time-to-target table says `not
    reached within 0.0001 s` for every row, never a time. Break: the report's censored reading
    (`censored_s` in fit_times_sql) or its display (`_never` without the budget): the rows then
    say `not reached`."""
    run(compose([f"store.root={store}", *TINY, "run.timing_budget_s=1e-4"]), tmp_path / "r")
    timing = pd.read_parquet(tmp_path / "r" / "timing.parquet")
    assert (timing["info_censored_at_s"] == 1e-4).all()
    table = time_to_target(load(tmp_path / "r"))
    assert set(table["t_target_s"]) == {"not reached within 0.0001 s"} and table["ratio"].isna().all()
    assert set(table["reached"]) == {"0/2"}


def test_a_resumed_run_hands_its_ladders_the_records_already_on_disk(store, tmp_path):
    """The sweep and its references ran first (run.timing=false); the same command with timing fits
    into the same folder runs only the timing fits, and each ladder still gets f* and its sweep
    twin from the shards on disk: it resolves the target and ends on its twin's solve. Break:
    `Handover._read` reading nothing: the ladders climb without them (no target, no twin)."""
    run(compose([f"store.root={store}", *TINY, "run.timing=false"]), tmp_path / "r")
    out = run(compose([f"store.root={store}", *TINY]), tmp_path / "r")
    assert out["summary"].skipped == 12 and out["summary"].done == 8
    ladders = pd.read_parquet(tmp_path / "r" / "timing.parquet").query("timing_method == 'ladder'")
    assert len(ladders) == 4 and (ladders["info_ladder_top"] == "sweep fit").all()
    assert (ladders["info_ladder_target"] == 1e-3).all() and ladders["info_ladder_own_stop"].all()
