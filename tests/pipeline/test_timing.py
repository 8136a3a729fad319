"""Timing fits and the plan's word on solver entries that share no problem: each test fails when
its mechanism is taken away (the timing fits of shared problems, cold and densely traced; the
ladder of a library; the line said before any fit; timing.parquet kept apart from the results)."""
import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest

import solvers
from pipeline.engine import tasks
from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan, plan_lines
from pipeline.report.build import build_report, load
from pipeline.report.speed import speed_rows
from pipeline.report.tables import time_to_target
from pipeline.run import run

from .test_plan_keys import _labels, _plan


def _timing(plan) -> list[dict]:
    return [s for s in plan.fits.values() if "timing" in s]


def test_timing_fits_are_cold_densely_traced_and_only_where_entries_share_a_problem(tmp_path):
    plan = _plan(tmp_path, "solvers=[dcd,liblinear,smo]", "grid.C=[0.1,1]", "solvers.smo.params.kernel=rbf")
    timing = _timing(plan)
    sweep = [s for s in plan.fits.values() if "timing" not in s]
    # dcd and liblinear share their problems; smo (rbf) shares none: no timing fit of its own.
    assert plan.timing_fits == len(timing) == len([s for s in sweep if s["solver_entry"] != "smo"])
    assert {s["solver_entry"] for s in timing} == {"dcd", "liblinear"}
    for s in timing:
        assert s["warm_start"] is False and s["path"] is None and s["trace"]["max_overhead"] is None
        assert s["trace"]["enabled"] and s["timing"]["method"] == ("ladder" if s["solver"] == "liblinear" else "trace")
        assert s["reference_key"] is not None          # timed to the same certified f*
    # The same fit's twin: its sweep spec but for start, trace and `timing`, under another key.
    twin = {(s["solver_entry"], s["problem"]["C"], s["fold"]): s for s in sweep}
    for s in timing:
        other = twin[(s["solver_entry"], s["problem"]["C"], s["fold"])]
        assert s["key"] != other["key"] and s["reference_key"] == other["reference_key"]
        assert {k: v for k, v in s.items() if k not in ("key", "seed", "path", "warm_start", "trace", "timing")} == \
            {k: v for k, v in other.items() if k not in ("key", "seed", "path", "warm_start", "trace")}
    # Off with run.timing=false; for a lone entry only when asked (run.timing=true, with its f*).
    assert _plan(tmp_path, "solvers=[dcd,liblinear]", "run.timing=false").timing_fits == 0
    assert _plan(tmp_path, "solvers=[dcd]").timing_fits == 0
    lone = _plan(tmp_path, "solvers=[dcd]", "run.timing=true", "run.reference=true")
    assert lone.timing_fits == len(lone.fits) // 2
    with pytest.raises(Exception, match="run.timing"):
        validate(compose([f"store.root={tmp_path}", "run.timing=sometimes"]))


def test_solver_entries_without_a_shared_problem_are_announced_at_plan_time(tmp_path):
    """README recipe 1 as it was: pegasos takes the hinge only, dcd and liblinear default to the
    squared hinge, so pegasos shares no problem with them: the plan says so, naming the key and
    the value that makes them comparable; with that value set, it says nothing."""
    exp = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd,liblinear,pegasos]",
                            "grid.C=[0.1,1]"]))
    plan = build_plan(exp, _labels("toy_blobs"))
    (note,) = plan.notes
    assert note.startswith("solvers.pegasos shares no problem with dcd, liblinear (loss: pegasos solves hinge, "
                           "they solve squared_hinge)")
    assert "grid.loss='[hinge]'" in note
    assert f"note: {note}" in plan_lines(plan, exp)
    fixed = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd,liblinear,pegasos]",
                              "grid.C=[0.1,1]", "grid.loss=[hinge]"]))
    plan = build_plan(fixed, _labels("toy_blobs"))
    assert plan.notes == () and {s["solver_entry"] for s in _timing(plan)} == {"dcd", "liblinear", "pegasos"}
    # Kernels apart: smo (rbf) beside dcd (linear only), a key with no value both take.
    exp = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd,smo]"]))
    notes = build_plan(exp, _labels("toy_blobs")).notes
    assert any(n.startswith("solvers.smo shares no problem with dcd (kernel: smo solves rbf, they solve linear)")
               for n in notes)


def _problem(n=80, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return solvers.Problem.build(X, y, C=1.0, loss="squared_hinge", intercept="regularized")


def test_a_library_is_timed_by_a_ladder_of_cold_solves_ending_at_its_own_stop():
    problem = _problem()
    budget = solvers.Budget(max_iter=1000, tol=1e-4)

    def solve(b, enabled):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # a rung stopped at its cap: status max_iter, as meant
            return solvers.fit(problem, "liblinear", budget=b, random_state=0,
                               recorder=solvers.Recorder(enabled=enabled, clock=time.process_time))

    def hiccup(b, enabled):
        """The machine stalls during the third rung: it measures 1,000 times its time."""
        fit = solve(b, enabled)
        if b.max_iter == 3:
            fit.fit_time_s *= 1000
        return fit

    plain = solve(budget, False)
    fit = tasks._ladder(hiccup, budget, per_decade=10)
    its = [p[0] for p in fit.trace]
    times = [p[1] for p in fit.trace]
    # Rungs on the recorder's grid (k -> max(k + 1, ceil(k 10^0.1))), up to the plain fit's own
    # stop, which it is.
    assert its[:6] == [1, 2, 3, 4, 6, 8] and its == sorted(its) and its[-1] == plain.n_iter
    assert fit.status == plain.status == "converged" and fit.primal == pytest.approx(plain.primal, rel=1e-12)
    assert fit.info["ladder_rungs"] == len(its) and not fit.info["ladder_cut"]
    # Each rung is the k-th iterate of the full solve: a plain solve capped at k gives its P.
    k = its[2]
    assert fit.trace[2][2] == pytest.approx(solve(solvers.Budget(max_iter=k, tol=1e-4), False).primal, rel=1e-12)
    # A rung's time bounds every earlier iterate's: the trace's seconds never go down, and the
    # stalled rung is bounded by the later ones (its own time kept in info).
    assert times == sorted(times) and times[-1] == pytest.approx(fit.info["ladder_times"][-1])
    assert times[2] <= times[-1] < fit.info["ladder_times"][2]


TINY = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80", "cv.folds=2", "run.progress=false",
        "cluster=sequential", "solvers=[dcd,liblinear]", "grid.C=[0.1,1]", "report.figures=false"]


def test_a_run_keeps_its_timing_fits_apart_and_its_report_reads_them(store, tmp_path):
    out = run(compose([f"store.root={store}", *TINY]), tmp_path / "r")
    res = out["results"]
    assert len(res) == 8 and set(res["start"]) == {"cold", "warm"}       # dcd's C = 1 points start warm
    assert (res.loc[res["start"] == "warm", "start_from"].str.startswith("C=0.1: its alpha scaled by 10")).all()
    timing = pd.read_parquet(tmp_path / "r" / "timing.parquet")
    assert len(timing) == 8 and (timing["start"] == "cold").all() and not set(timing["key"]) & set(res["key"])
    method = timing.set_index("solver_entry")["timing_method"]
    assert set(method["dcd"]) == {"trace"} and set(method["liblinear"]) == {"ladder"}
    setup = timing.set_index("solver_entry")["setup_s"]
    assert (setup["dcd"] > 0).all() and (setup["liblinear"] == 0).all()
    rows = speed_rows(load(tmp_path / "r"))
    assert (rows["source"] == "timing").all() and (rows["start"] == "cold").all() and (rows["clock"] == "call").all()
    # The same run without timing fits: no timing table of the earlier plan is left to be read.
    run(compose([f"store.root={store}", *TINY, "run.timing=false"]), tmp_path / "r")
    assert not (tmp_path / "r" / "timing.parquet").exists()
    build_report(tmp_path / "r")
    t = time_to_target(load(tmp_path / "r")).set_index(["solver_entry", "C"])
    assert t.loc[("dcd", 1.0), "start"] == "warm" and math.isnan(t.loc[("dcd", 1.0), "ratio"])   # against no cold fit
    assert t.loc[("liblinear", 1.0), "ratio"] == 1.0


NAP_S = 0.3


def _nap(problem, *, budget, recorder, warm_start=None):
    """A fit that waits NAP_S off the CPU inside its clock (a wait for a core on a busy machine,
    as the timing fit sees it), then fits with dcd on a recorder of its own."""
    time.sleep(NAP_S)
    fit = solvers.fit(problem, "dcd", budget=budget, recorder=solvers.Recorder(enabled=False))
    fit.fit_time_s = math.nan        # timed by the caller's recorder, on the clock the task chose
    return fit


if "_nap" not in solvers.solver_names():
    solvers.register(solvers.SolverSpec(name="_nap", family="test", fit=_nap, warmup=lambda: None))


def test_a_timing_fit_reads_the_cpu_clock_and_a_sweep_fit_the_wall(tmp_path):
    """The same fit, once as a timing fit and once as the sweep's: a wait off the CPU is charged
    to the sweep fit (its solver clock is the wall's) and not to the timing fit, whose clock is
    its process's CPU seconds; so is its setup (the problem's build, on the same clock)."""
    plan = _plan(tmp_path, "solvers=[dcd,liblinear]", "grid.C=[1]")
    spec = next(s for s in _timing(plan) if s["solver_entry"] == "dcd")
    twin = next(s for s in plan.fits.values() if "timing" not in s and s["solver_entry"] == "dcd")
    X, y = _problem(n=60).X, np.where(np.arange(60) % 3 == 0, 1.0, -1.0)
    nap = {"solver": "_nap", "solver_params": {}}
    tasks._solve_binary(twin, X, y)          # dcd compiled (or loaded) outside the clocks read below
    _, timed = tasks._solve_binary(spec._replace(**nap), X, y)
    _, swept = tasks._solve_binary(twin._replace(**nap), X, y)
    assert swept.fit_time_s >= NAP_S and timed.fit_time_s < NAP_S / 3
    assert "setup_s" in timed.info and "setup_s" not in swept.info
    # The setup is read on the CPU clock too: a wait inside the problem's build is not in it.
    real = tasks.problem_of

    def slow_build(*args, **kwargs):
        time.sleep(NAP_S)
        return real(*args, **kwargs)
    tasks.problem_of = slow_build
    try:
        _, timed = tasks._solve_binary(spec, X, y)
    finally:
        tasks.problem_of = real
    assert 0 <= timed.info["setup_s"] < NAP_S / 3


def test_a_multiclass_problem_gets_no_timing_fit(tmp_path):
    """Timing fits time one binary problem on one trace; a multiclass dataset's fits (one binary
    fit per class inside one task) get none, though its entries share their problems; the same
    plan on two classes gets them."""
    exp = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd,liblinear]",
                            "grid.C=[1]"]))
    info, _ = _labels("toy_blobs")["toy_blobs"]
    three = build_plan(exp, {"toy_blobs": (info, (np.arange(60) % 3).astype(float))})
    assert three.timing_fits == 0 and not _timing(three) and len(three.fits) > 0
    two = build_plan(exp, {"toy_blobs": (info, np.where(np.arange(60) % 3 == 0, 1.0, -1.0))})
    assert two.timing_fits == len(_timing(two)) > 0
