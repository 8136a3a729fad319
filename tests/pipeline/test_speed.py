"""pipeline/report/speed.py at its exact values: a timing fit's setup seconds are part of every
time read on the call clock (its trace points, its own stop, its time to target, through the
report's engine and through frames alike), and the headline's percentiles are numpy's. Each
test fails with its rule taken away (a setup of 0 in a fixture, or p n for p (n - 1), would
let either through). No solver runs."""
import math

import numpy as np
import pandas as pd
import pytest

from pipeline.report import speed
from pipeline.report.registry import ReportData
from pipeline.report.speed import fit_times, headline, quantiles, speed_rows, speed_view

from .report_data import folds, rows, traces_for

SETUP_S = 0.25          # dcd's problem build, far above its solver's seconds: a loss shows


def _timed_run():
    """dcd and liblinear on one problem, 3 folds; their timing fits: dcd with its setup seconds,
    liblinear (a library: its input checks are inside its own call) with 0. Each trace first
    reaches 1e-3 at its third of six points, at half the fit's seconds (`traces_for`)."""
    res = rows(folds({"solver_entry": "dcd", "fit_time_s": 0.01})
               + folds({"solver_entry": "liblinear", "solver": "liblinear", "family": "reference",
                        "fit_time_s": 0.02}))
    timing = res.assign(key=[f"t{k}" for k in res["key"]], start="cold", timing_method="trace",
                        setup_s=np.where(res["solver_entry"] == "dcd", SETUP_S, 0.0))
    return res, timing, traces_for(timing, timed=True)


def test_a_timing_fits_setup_seconds_are_in_every_time_on_the_call_clock():
    res, timing, ttr = _timed_run()
    data = ReportData(res, traces_for(res), pd.DataFrame(), name="t", timing=timing, timing_traces=ttr)
    out = speed_rows(data, target=1e-3, bases=["liblinear"]).set_index("solver_entry")
    assert (out["clock"] == "call").all() and (out["source"] == "timing").all()
    # dcd: half of its 0.01 s plus its 0.25 s of setup; liblinear: half of its 0.02 s, no setup.
    assert out.loc["dcd", "t_target_s"] == pytest.approx(0.005 + SETUP_S, rel=1e-12)
    assert out.loc["liblinear", "t_target_s"] == pytest.approx(0.01, rel=1e-12)
    assert out.loc["dcd", "own_stop_s"] == pytest.approx(0.01 + SETUP_S, rel=1e-12)
    assert out.loc["dcd", "ratio_vs_liblinear"] == pytest.approx((0.005 + SETUP_S) / 0.01, rel=1e-12)
    # The view the figures draw: trace seconds and fit seconds moved to the call clock, setup then 0.
    view = speed_view(data)
    fits = view.fits.set_index("key")
    dcd = timing.loc[timing["solver_entry"] == "dcd", "key"]
    assert fits.loc[dcd, "fit_time_s"].tolist() == pytest.approx([0.01 + SETUP_S] * 3, rel=1e-12)
    assert (fits.loc[dcd, "setup_s"] == 0).all()
    tr = view.traces
    first = tr[tr["key"] == dcd.iloc[0]].sort_values("iteration")["time_s"].to_numpy()
    assert first == pytest.approx(0.01 * np.arange(1, 7) / 6 + SETUP_S, rel=1e-12)
    # The same rule over frames (a paper's writer): fit_times adds the setup to its trace time.
    ft = fit_times(timing, ttr, target=1e-3).set_index("key")
    assert ft.loc[dcd, "t_target_s"].tolist() == pytest.approx([0.005 + SETUP_S] * 3, rel=1e-12)
    assert ft.loc[dcd, "own_stop_s"].tolist() == pytest.approx([0.01 + SETUP_S] * 3, rel=1e-12)
    assert set(ft["clock"]) == {"call"}


def _engine():
    return ReportData(rows([{}]), pd.DataFrame(), name="q").engine


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 10, 11])
def test_quantiles_are_numpys_at_every_position(n):
    """The engine's order statistics and numpy's linear interpolation give np.quantile exactly,
    both ends included (p = 0 and p = 1), on values with ties and in no order."""
    values = np.round(np.random.default_rng(n).lognormal(size=n), 1 if n > 4 else 3)
    sql = "SELECT * FROM (VALUES " + ", ".join(f"({v!r}::DOUBLE)" for v in values.tolist()) + ") t(x)"
    ps = (0.0, 0.1, 0.25, 0.5, 0.9, 1.0)
    assert quantiles(_engine(), sql, ps) == [float(np.quantile(values, p)) for p in ps]
    assert all(math.isnan(v) for v in quantiles(_engine(), f"{sql} WHERE x < 0", ps))


def test_the_headline_quotes_numpys_median_and_90th_percentile():
    """Eight fits whose (P - f*)/|f*| are 1..8 x 1e-4: numpy's median is 4.5e-4 and its 90th
    percentile 7.3e-4 (position 0.9 x 7 = 6.3); at p n they would be 5e-4 and 8e-4."""
    rel = [k * 1e-4 for k in range(1, 9)]
    res = rows([{"C": float(k), "rel_suboptimality": r, "primal_objective": 10 * (1 + r)} for k, r in enumerate(rel)])
    line = headline(ReportData(res, traces_for(res), pd.DataFrame(), name="h"), target=1e-3)[1]
    med, p90 = np.quantile(rel, 0.5), np.quantile(rel, 0.9)
    assert f"median {speed.fmt(med)}, 90th percentile {speed.fmt(p90)}, max {speed.fmt(8e-4)}." in line
    assert speed.fmt(med) == "4.500e-04" and speed.fmt(p90) == "7.300e-04"


def test_a_ratio_is_taken_within_one_start_and_one_clock_against_the_bases_fastest():
    """`ratios` over hand-made speed rows: a row of one start and one clock against the base's
    fastest configuration of the same problem, start and clock; a row whose folds mix starts
    ("warm 2, cold 1") or clocks is in no ratio, nor is one whose base did not reach the target."""
    r = pd.DataFrame([
        ("dcd", 1.0, "cold", "call", 2.0), ("base", 1.0, "cold", "call", 1.0), ("base", 1.0, "cold", "call", 0.5),
        ("dcd", 10.0, "warm 2, cold 1", "call", 2.0), ("base", 10.0, "cold", "call", 1.0),
        ("base", 10.0, "warm 2, cold 1", "call", 1.0),
        ("dcd", 100.0, "cold", "call 2, solver 1", 2.0), ("base", 100.0, "cold", "call", 1.0),
        ("dcd", 5.0, "warm", "call", 4.0), ("base", 5.0, "warm", "call", 2.0), ("base", 5.0, "cold", "call", 1.0),
        ("dcd", 50.0, "cold", "call", 1.0), ("base", 50.0, "cold", "call", np.inf)],
        columns=["solver_entry", "C", "start", "clock", "t_target_s"]).assign(dataset="toy")
    out = speed.ratios(r, ["dataset", "C"], "base")
    got = {(e, C, s, c): v for e, C, s, c, v in zip(r["solver_entry"], r["C"], r["start"], r["clock"], out)
           if e == "dcd"}
    assert got[("dcd", 1.0, "cold", "call")] == 4.0                      # against the base's fastest, 0.5
    assert got[("dcd", 5.0, "warm", "call")] == 2.0                      # warm against warm, never cold
    assert all(math.isnan(got[k]) for k in [("dcd", 10.0, "warm 2, cold 1", "call"),
                                            ("dcd", 100.0, "cold", "call 2, solver 1"), ("dcd", 50.0, "cold", "call")])
    assert speed.single("cold") and not speed.single("warm 2, cold 1")


def test_a_fit_without_a_trace_reaches_the_target_at_its_own_stop_if_it_ends_on_it():
    """No trace point (run.trace=false, a multiclass fit): a fit whose final (P - f*)/|f*| is the
    target exactly reached it at its own stop; one just above never did. Over frames and
    through the engine alike."""
    res = rows([{"C": 1.0, "rel_suboptimality": 1e-3, "fit_time_s": 0.5, "n_iter": 7},
                {"C": 10.0, "rel_suboptimality": 1.0000001e-3, "fit_time_s": 0.5, "n_iter": 7}])
    empty = pd.DataFrame(columns=["key", "iteration", "time_s", "primal", "dual", "gap"])
    ft = fit_times(res, empty, target=1e-3).set_index("key")
    assert ft["t_target_s"].tolist() == [0.5, np.inf] and ft["it_target"].tolist() == [7.0, np.inf]
    out = speed_rows(ReportData(res, empty, pd.DataFrame(), name="t"), target=1e-3).set_index("C")
    assert out.loc[1.0, "t_target_s"] == 0.5 and out.loc[10.0, "t_target_s"] == np.inf
    assert out["reached"].tolist() == ["1/1", "0/1"]


def test_a_row_whose_folds_started_differently_says_so_and_is_in_no_ratio():
    """dcd at C = 1 started warm on two folds and cold on one (a path whose first point it was on
    one fold): its row's start is "warm 2, cold 1", in no ratio against liblinear's cold row;
    liblinear's own row says "cold"."""
    res = rows(folds({"solver_entry": "dcd"}, start=["warm", "cold", "warm"])
               + folds({"solver_entry": "liblinear", "solver": "liblinear", "family": "reference", "start": "cold",
                        "fit_time_s": 0.02}))
    out = speed_rows(ReportData(res, traces_for(res, timed=True), pd.DataFrame(), name="t"), target=1e-3,
                     bases=["liblinear"]).set_index("solver_entry")
    assert out.loc["dcd", "start"] == "warm 2, cold 1" and out.loc["liblinear", "start"] == "cold"
    assert math.isnan(out.loc["dcd", "ratio_vs_liblinear"]) and out.loc["liblinear", "ratio_vs_liblinear"] == 1.0
    assert speed.label_of({"cold": 3}) == "cold" and speed.label_of([("warm", 1), ("cold", 2)]) == "warm 1, cold 2"


T = 2.0 ** -10          # a target that (P - f*)/|f*| and (P - D)/|P| can equal exactly


def _kinds():
    """Fits of every kind fit_times tells apart, f* = 1 (so a trace point's (P - f*)/|f*| is exact):
    traced and reaching T on a point exactly at it; traced and never within; no trace and ending
    at T exactly, or above it; a ladder cut short before the target; a ladder with no rung; an f*
    too uncertain;
    timing fits with setup seconds. Their traces' gaps (P - D) reach T |P| a point later."""
    base = {"f_star": 1.0, "primal_objective": 1.0, "f_star_gap": 1e-12}
    specs = [("reach", {}), ("never", {"rel_suboptimality": 0.5}), ("untraced_at", {"rel_suboptimality": T}),
             ("untraced_above", {"rel_suboptimality": 2 * T}), ("cut", {"rel_suboptimality": 0.5}),
             ("norung", {"rel_suboptimality": 0.5}), ("unsure", {"f_star_gap": 0.1}),
             ("setup", {"setup_s": 0.25})]
    res = rows([{**base, "C": float(i), "key": name, "fit_time_s": 0.5 + i, "n_iter": 10 + i,
                 "duality_gap": T / 2, "timing_method": "ladder" if name in ("cut", "norung") else "trace",
                 "info_ladder_cut": name == "cut", **s} for i, (name, s) in enumerate(specs)])
    if "setup_s" in res.columns:
        res["setup_s"] = res["setup_s"].astype(float)
    tr = []
    for name, _ in specs:
        if name.startswith("untraced") or name == "norung":
            continue
        for k, rel in enumerate((4 * T, 2 * T, T, T / 2) if name not in ("never", "cut") else (0.5, 0.4), start=1):
            P = 1.0 + rel
            tr.append({"key": name, "iteration": k, "time_s": 0.1 * k, "primal": P, "dual": P - T * P * (k > 3)
                       - 2 * T * P * (k <= 3), "gap": T * P * (1 if k > 3 else 2)})
    return res, pd.DataFrame(tr)


@pytest.mark.parametrize("measure", ["subopt", "gap"])
def test_fit_times_over_frames_and_through_the_engine_agree_on_every_kind_of_fit(measure):
    """fit_times (a paper's writer, over frames) and fit_times_sql (the report, through DuckDB)
    are one rule: the same time, iteration, own stop and clock for every kind of fit, and the
    values the rule gives by hand."""
    res, tr = _kinds()
    frames = fit_times(res, tr, target=T, measure=measure).set_index("key")
    data = ReportData(res, tr, pd.DataFrame(), name="t")
    view = speed_view(data)
    sql = data.sql(speed.fit_times_sql(view, T, measure)).set_index("key").loc[frames.index]
    for col in ("t_target_s", "it_target", "own_stop_s"):
        assert np.allclose(frames[col].astype(float), sql[col].astype(float), equal_nan=True, rtol=1e-12), col
    assert frames["clock"].tolist() == sql["clock"].tolist()
    got = frames["t_target_s"].to_dict()
    if measure == "subopt":
        assert got["reach"] == pytest.approx(0.3) and frames.loc["reach", "it_target"] == 3      # rel = T exactly
        assert got["never"] == np.inf and got["untraced_at"] == 2.5 and got["untraced_above"] == np.inf
        assert math.isnan(got["cut"]) and math.isnan(got["norung"]) and math.isnan(got["unsure"])
        assert got["setup"] == pytest.approx(0.3 + 0.25)
    else:
        assert got["reach"] == pytest.approx(0.4) and frames.loc["reach", "it_target"] == 4      # gap/|P| = T
        assert got["never"] == np.inf and got["untraced_at"] == 2.5                  # its final (T/2)/1 <= T
        assert math.isnan(got["cut"]) and got["norung"] == 5.5 and got["untraced_above"] == 3.5   # own stops within
        assert got["unsure"] == pytest.approx(0.4) and got["setup"] == pytest.approx(0.4 + 0.25)   # no f* needed
    assert frames["clock"].to_dict() == {**{k: "solver" for k in frames.index}, "setup": "call"}
    assert frames.loc["setup", "own_stop_s"] == pytest.approx(0.5 + 7 + 0.25)


def test_reachable_is_false_without_an_f_star_and_true_at_a_certainty_equal_to_the_target():
    """Without f* no fit can tell the target (False for each, on the fits' own index); with f*,
    its certainty (the reference's relative gap) at the target exactly is certain enough, a hair
    above it is not."""
    fits = rows([{}, {}]).drop(columns=["f_star"]).set_axis([5, 7])
    out = speed.reachable(fits, T)
    assert out.dtype == bool and out.index.tolist() == [5, 7] and out.tolist() == [False, False]
    fits = rows([{"f_star_rel_gap": T}, {"f_star_rel_gap": T * (1 + 1e-12)}, {"f_star": np.nan}])
    assert speed.reachable(fits, T).tolist() == [True, False, False]


def test_fit_times_reads_a_value_that_is_not_a_number_as_missing_never_an_error():
    """A results table whose columns hold text beside numbers (an older table, a hand-edited one):
    setup seconds, fit seconds, the final suboptimality, the gap, the objective and the passes
    that do not parse are missing (NaN), and the rest is read as usual."""
    res, tr = _kinds()
    res = res.astype({c: object for c in ("setup_s", "fit_time_s", "rel_suboptimality", "duality_gap",
                                          "primal_objective", "n_iter")})
    bad = res["key"] == "untraced_at"
    for c in ("setup_s", "fit_time_s", "rel_suboptimality", "duality_gap", "primal_objective", "n_iter"):
        res.loc[bad, c] = "n/a"
    for measure in ("subopt", "gap"):
        ft = fit_times(res, tr, target=T, measure=measure).set_index("key")
        # No trace and no final value: it cannot be said to have ended within the target.
        assert math.isnan(ft.loc["untraced_at", "own_stop_s"]) and ft.loc["untraced_at", "t_target_s"] == np.inf
        assert ft.loc["untraced_at", "clock"] == "solver" and ft.loc["setup", "clock"] == "call"
        assert ft.loc["setup", "own_stop_s"] == pytest.approx(7.75)
    assert math.isnan(fit_times(res, tr, target=T).set_index("key").loc["untraced_at", "rel_subopt"])


def test_fit_times_without_any_trace_table_reads_each_fits_own_stop():
    """run.trace=false: no trace table at all (not even its columns): each fit that ended within
    the target reached it at its own stop, with its own passes; the others never; every column
    a float."""
    res, _ = _kinds()
    ft = fit_times(res, pd.DataFrame(), target=T).set_index("key")
    assert ft.loc["untraced_at", "t_target_s"] == 2.5 and ft.loc["untraced_at", "it_target"] == 12
    assert ft.loc["reach", "t_target_s"] == 0.5 and ft.loc["never", "t_target_s"] == np.inf
    assert math.isnan(ft.loc["unsure", "t_target_s"])
    assert ft["t_target_s"].dtype == float and ft["it_target"].dtype == float
    assert fit_times(res.drop(columns=["setup_s"]), pd.DataFrame(), target=T)["clock"].eq("solver").all()
    no_final = fit_times(res.drop(columns=["rel_suboptimality"]), pd.DataFrame(), target=T).set_index("key")
    assert no_final["rel_subopt"].isna().all() and not np.isfinite(no_final["t_target_s"]).any()


def test_the_gap_measure_divides_by_the_objective_and_keeps_a_trace_point_at_one():
    """The relative duality gap (P - D)/|P| of a trace point whose P is 1 exactly is its gap (a
    point at P = 0 has none); a fit's final one is its gap over |P|, not times it."""
    res = rows([{"key": "one", "fit_time_s": 1.0, "duality_gap": 0.5, "primal_objective": 100.0,
                 "f_star_gap": 1e-12},
                {"key": "zero", "fit_time_s": 1.0, "duality_gap": 0.5, "primal_objective": 100.0}])
    tr = pd.DataFrame([{"key": "one", "iteration": 1, "time_s": 0.25, "primal": 1.0, "gap": T},
                       {"key": "zero", "iteration": 1, "time_s": 0.25, "primal": 0.0, "gap": 0.0}])
    ft = fit_times(res, tr, target=T, measure="gap").set_index("key")
    assert ft.loc["one", "t_target_s"] == 0.25 and ft.loc["one", "it_target"] == 1
    assert ft.loc["zero", "t_target_s"] == np.inf          # traced, and P = 0 tells nothing
    untraced = fit_times(res, tr.iloc[:0], target=0.01, measure="gap").set_index("key")
    assert untraced["t_target_s"].tolist() == [1.0, 1.0]   # 0.5 / 100 = 0.005 <= 0.01 (0.5 x 100 is not)


def test_a_ladder_whose_cut_is_not_recorded_is_not_cut():
    """A ladder fit with `info_ladder_cut` missing (NaN: not recorded) that ran its rungs and
    never reached the target never did (inf), as one recorded uncut; a recorded cut: unknown."""
    res, tr = _kinds()
    res["info_ladder_cut"] = res["info_ladder_cut"].astype(object)
    res.loc[res["key"] == "cut", "info_ladder_cut"] = None
    ft = fit_times(res, tr, target=T).set_index("key")
    assert ft.loc["cut", "t_target_s"] == np.inf and ft.loc["cut", "it_target"] == np.inf
    assert math.isnan(ft.loc["norung", "t_target_s"])      # no rung at all: still unknown
