"""The report's status section: every non-converged status is named, counted and explained."""
import pandas as pd

from pipeline.report import STATUS_ADVICE, status_lines, status_table


def _results(statuses, Cs, solver="dcd", dataset="breast_cancer"):
    return pd.DataFrame({"dataset": dataset, "solver_entry": solver, "status": statuses, "C": Cs,
                         "key": [f"k{i}" for i in range(len(statuses))]})


def test_all_converged_says_what_converged_means():
    res = _results(["converged"] * 4, [0.1, 0.1, 1.0, 1.0])
    lines = status_lines(res)
    assert lines[0] == "4 fits: 4 reached their own stopping tolerance (`converged`), 0 stopped otherwise, 0 failed."
    assert "none is certified" in lines[1] and not any(line.startswith("All ") for line in lines)
    t = status_table(res)
    assert list(t.columns) == ["dataset", "solver_entry", "fits", "converged"]
    assert t.iloc[0].tolist() == ["breast_cancer", "dcd", 4, 4]


def test_every_non_converged_status_is_named_with_its_C_and_advice():
    res = pd.concat([
        _results(["converged", "max_iter", "max_iter", "converged"], [0.1, 10.0, 1.0, 1.0]),
        _results(["stalled", "converged"], [5.0, 1.0], solver="svmlight"),
        _results(["error"], [float("nan")], solver="qp", dataset="digits"),
    ], ignore_index=True)
    lines = status_lines(res)
    assert lines[0] == "7 fits: 3 reached their own stopping tolerance (`converged`), 3 stopped otherwise, 1 failed."
    assert "The 4 fits that did not reach their own tolerance:" in lines
    by_solver = {line.split(" on ")[0].lstrip("- "): line for line in lines if line.startswith("- ")}
    assert set(by_solver) == {"dcd", "svmlight", "qp"}
    # Counts out of the entry's own fits, the C values it happened at (sorted), plain advice.
    assert "2 of 4 fits `max_iter` (C=1, C=10)" in by_solver["dcd"]
    assert STATUS_ADVICE["max_iter"] in by_solver["dcd"]
    assert "1 of 2 fits `stalled` (C=5)" in by_solver["svmlight"]
    assert "1 of 1 fits `error`:" in by_solver["qp"]          # no C: none shown
    t = status_table(res).set_index(["dataset", "solver_entry"])
    assert list(t.columns) == ["fits", "converged", "error", "max_iter", "stalled"]
    assert t.loc[("breast_cancer", "dcd")].tolist() == [4, 2, 0, 2, 0]


def test_empty_results():
    empty = pd.DataFrame(columns=["dataset", "solver_entry", "status", "C", "key"])
    assert status_lines(empty) == [] and status_table(empty).empty


# ---------------------------------------------------------------- registry tables and figures
import math

import numpy as np
import pytest

from pipeline.report import REGISTRY, ReportData, Skip, items
from pipeline.report.build import sections, to_html
from pipeline.report.common import certainty_floor, styles, swept_keys
from pipeline.report.tables import best_params, certificates, cv_table, time_to_target, iterations_to_target, methods_table

from .report_data import confusion, default_run, folds, rows, traces_for

REG = {it.name: it for it in REGISTRY}


def _data(results, baseline=None, traces=None, models=None, timing=None, target=None, search=None):
    return ReportData(results, traces_for(results) if traces is None else traces,
                      pd.DataFrame() if models is None else models, baseline=baseline, name="t",
                      timing=pd.DataFrame() if timing is None else timing,
                      timing_traces=pd.DataFrame() if timing is None else traces_for(timing, timed=True),
                      target=target, search=search)


def test_best_params_keep_C_when_only_C_is_swept():
    # Every entry's best C is 1: today's rule dropped C as constant across the best rows.
    best = best_params(_data(default_run()))
    assert "C" in best.columns and best["C"].tolist() == [1.0, 1.0]
    # C is named even when a run has one C: it is the parameter a reader looks for first.
    assert "C" in best_params(_data(rows(folds({"C": 1.0})))).columns


def test_best_params_keep_gamma_of_a_C_x_gamma_sweep_and_loss_of_a_multirun():
    specs = []
    for C in (1.0, 10.0):
        for g in (0.1, 1.0):
            specs += folds({"solver_entry": "smo", "kernel": "rbf", "C": C, "gamma": g,
                            "test_accuracy": 0.9 if (C, g) == (10.0, 0.1) else 0.7})
    for loss in ("hinge", "squared_hinge"):       # one entry, two losses: what a multirun gives
        specs += folds({"solver_entry": "dcd", "loss": loss, "test_accuracy": 0.9 if loss == "hinge" else 0.8})
    best = best_params(_data(rows(specs))).set_index("solver_entry")
    assert {"C", "gamma", "loss"} <= set(best.columns)
    assert best.loc["smo", ["C", "gamma"]].tolist() == [10.0, 0.1]
    assert best.loc["dcd", "loss"] == "hinge"
    # A key fixed per entry (dcd's loss in a plain run) is not "swept"...
    assert "loss" not in swept_keys(rows(folds({"solver_entry": "a", "loss": "hinge"})
                                         + folds({"solver_entry": "b", "loss": "squared_hinge"})))


def test_cv_table_is_cv_results_shaped_and_says_folds_converged():
    res = rows(folds({"C": 1.0}, test_accuracy=[0.8, 0.9, 1.0], status=["converged", "max_iter", "converged"])
               + folds({"C": 10.0}, test_accuracy=[0.5, 0.5, 0.5]))
    cv = cv_table(_data(res)).set_index("C")
    assert cv.loc[1.0, "mean_test_score"] == pytest.approx(0.9) and cv.loc[1.0, "std_test_score"] == pytest.approx(0.1)
    assert cv["rank_test_score"].tolist() == [1, 2]
    assert cv.loc[1.0, "converged_folds"] == "2/3" and cv.loc[10.0, "converged_folds"] == "3/3"


def test_rank_test_score_is_within_each_dataset_and_solver_entry():
    """scikit-learn ranks the configurations of one search: here one dataset x solver entry. Two
    entries over two C each, dcd better than liblinear at both: ranked per dataset, liblinear's
    ranks would be 3 and 4 (and dcd's 1, 2 only by chance of the values)."""
    res = rows(folds({"solver_entry": "dcd", "C": 0.1}, test_accuracy=[0.90] * 3)
               + folds({"solver_entry": "dcd", "C": 1.0}, test_accuracy=[0.95] * 3)
               + folds({"solver_entry": "liblinear", "C": 0.1}, test_accuracy=[0.60] * 3)
               + folds({"solver_entry": "liblinear", "C": 1.0}, test_accuracy=[0.50] * 3)
               + folds({"dataset": "other", "solver_entry": "dcd", "C": 0.1}, test_accuracy=[0.99] * 3))
    cv = cv_table(_data(res)).set_index(["dataset", "solver_entry", "C"])["rank_test_score"]
    assert cv.to_dict() == {("other", "dcd", 0.1): 1, ("toy", "dcd", 0.1): 2, ("toy", "dcd", 1.0): 1,
                            ("toy", "liblinear", 0.1): 1, ("toy", "liblinear", 1.0): 2}


def test_nan_parameters_group_as_one_value():
    # gamma NaN (linear) and param_q None (not set) must neither drop rows nor split groups.
    res = rows(folds({"solver_entry": "svmlight", "param_q": None}) + folds({"solver_entry": "svmlight", "param_q": 10}))
    cv = cv_table(_data(res))
    assert len(cv) == 2 and sorted(map(str, cv["param_q"])) == ["-", "10.0"]


def _problems():
    """liblinear (regularized) and pegasos (none) on one C; smo at two gammas and two intercepts."""
    specs = []
    specs += folds({"solver_entry": "liblinear", "family": "reference", "fit_time_s": 0.02})
    specs += folds({"solver_entry": "dcd", "fit_time_s": 0.01})
    specs += folds({"solver_entry": "pegasos", "intercept": "none", "fit_time_s": 0.04})
    for g in (0.1, 1.0):
        for icpt in ("free", "regularized"):
            specs += folds({"solver_entry": "smo", "kernel": "rbf", "gamma": g, "intercept": icpt,
                            "fit_time_s": 0.1 if g == 0.1 else 0.3})
    return rows(specs)


def test_time_to_target_keeps_every_problem_apart():
    t = time_to_target(_data(_problems(), traces=traces_for(_problems(), timed=True)))
    smo = t[t["solver_entry"] == "smo"]
    # Two gammas x two intercepts are four problems, not one row of C=1.
    assert len(smo) == 4 and {"gamma", "intercept"} <= set(t.columns)
    assert sorted(smo["own_stop_s"]) == [0.1, 0.1, 0.3, 0.3]
    it = iterations_to_target(_data(_problems()))
    assert len(it[it["solver_entry"] == "smo"]) == 4 and "it_0.001" in it.columns


def test_no_ratio_across_intercepts():
    t = time_to_target(_data(_problems(), traces=traces_for(_problems(), timed=True))).set_index("solver_entry")
    assert t.loc["dcd", "baseline"] == "liblinear" and t.loc["dcd", "ratio"] == pytest.approx(0.5)
    # pegasos solves intercept=none: liblinear's regularized problem is another problem.
    assert t.loc["pegasos", "baseline"] == "" and math.isnan(t.loc["pegasos", "ratio"])
    lines = REG["time_to_target"].lines(_data(_problems()))
    assert any("No problem in common with a baseline (liblinear): pegasos, smo" in line for line in lines)
    # An entry alone on its problems has no f* (run.reference=auto): said untimed, not left out unsaid.
    lone = pd.concat([_problems(), rows(folds({"solver_entry": "sgd", "loss": "squared_hinge", "f_star": np.nan}))])
    assert any(line.startswith("- Not timed: sgd") for line in REG["time_to_target"].lines(_data(lone)))


def test_ratios_against_a_named_baseline():
    data = lambda base: _data(_problems(), baseline=base, traces=traces_for(_problems(), timed=True))  # noqa: E731
    t = time_to_target(data("dcd")).set_index("solver_entry")
    assert set(t["baseline"]) == {"dcd", ""} and t.loc["liblinear", "ratio"] == pytest.approx(2.0)
    m = methods_table(data("dcd")).set_index("solver_entry")
    assert m.loc["liblinear", "toy"] == "x2 over 1" and m.loc["pegasos", "toy"] == "no problem shared with dcd"
    with pytest.raises(Skip, match="not a solver entry"):
        time_to_target(data("nosuch"))


def test_no_suboptimality_finer_than_f_star_certainty():
    res = rows(folds({"rel_suboptimality": 1e-12}, f_star_rel_gap=[1e-3, 1e-4, 1e-5]))
    assert certainty_floor(res).tolist() == [1e-3, 1e-4, 1e-5]
    # Without f_star_rel_gap: |f_star_gap| / |f*|.
    assert certainty_floor(rows([{"f_star_gap": 1e-4, "f_star": -10.0}])).tolist() == [pytest.approx(1e-5)]
    data = _data(res)
    assert certificates(data)["rel_subopt_max"].iloc[0] == pytest.approx(1e-3)
    t = time_to_target(data)
    assert t["reached"].tolist() == ["3/3"] and t["rel_subopt"].iloc[0] >= 1e-4
    it = iterations_to_target(data)
    assert it["it_0.01"].notna().all()
    assert it["it_1e-06"].isna().all()          # finer than every fold's f*: never claimed
    # A target finer than two folds' f*: only the fold whose f* is certain to it is told.
    assert time_to_target(_data(res, target=5e-5))["reached"].tolist() == ["1/1"]
    fig = REG["suboptimality_vs_time"].fn(data)
    ys = np.concatenate([line.get_ydata() for ax in fig.axes for line in ax.get_lines()])
    assert ys.min() >= 1e-3 * (1 - 1e-12)     # the panel's coarsest certainty


def test_styles_never_repeat():
    st = styles(45)
    assert len({(s["color"], s["linestyle"], s["marker"]) for s in st}) == 45
    assert len({(s["color"], s["linestyle"]) for s in st[:40]}) == 40


def _rich(small=False):
    """Every figure's columns: a C x gamma smo sweep, svmlight over q, pegasos over k at fixed kT
    from three random starts, multiclass confusion matrices, two dataset sizes (small: fewer
    values of each, two folds, for a test that draws every figure)."""
    n = 2 if small else 3
    Cs, gammas, ks, starts = ((0.1, 1.0), (0.1, 1.0), (1, 4), (0, 1)) if small else \
        ((0.1, 1.0, 10.0), (0.1, 1.0), (1, 4, 16), (0, 1, 2))
    specs = []
    for C in Cs:
        for g in gammas:
            specs += folds({"solver_entry": "smo", "kernel": "rbf", "C": C, "gamma": g,
                            "test_accuracy": 0.5 + C / 40 + g / 10}, n)
    for q in (2, 10, 40)[:n]:
        specs += folds({"solver_entry": "svmlight", "kernel": "rbf", "gamma": 0.1, "param_q": q, "fit_time_s": 0.01 * q}, n)
    for k in ks:
        for rs in starts:
            specs += folds({"solver_entry": "pegasos", "intercept": "none", "param_k": k, "info_T": 1200 // k,
                            "param_random_state": rs, "primal_objective": 10 + k / 10}, n)
    for size, ds in ((100, "toy"), (1000, "big")):
        specs += folds({"solver_entry": "dcd", "dataset": ds, "n_train": size, "fit_time_s": size * 1e-5}, n)
    specs += folds({"solver_entry": "dcd", "dataset": "iris", "f_star": np.nan, "confusion_test": confusion(1)}, n)
    # A certified search of dcd on toy (two rounds) and a halving search of smo on toy (two rungs).
    for r, C in ((0, 0.1), (0, 10.0), (1, 1.0)):
        specs += folds({"solver_entry": "dcd", "C": C, "search_round": r, "test_accuracy": 0.9 - abs(np.log10(C)) / 20}, n)
    res = rows(specs)
    res["confusion_test"] = res["confusion_test"].where(res["confusion_test"].notna(), None)
    models = pd.DataFrame([{"key": "k000", "b": 0.0, "w": None, "support": [0, 1], "alpha": [0.5, 0.5],
                            "X": [[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]], "y": [1.0, -1.0, 1.0]}])
    return _data(res, models=models, search=SEARCH)


# search.json of the two searches of `_rich` (pipeline/search_run.py writes it).
SEARCH = {"kind": "certified", "searches": [
    {"dataset": "toy", "solver_entry": "dcd", "kind": "certified", "done": True, "certified": False,
     "settings": {"C_min": 0.01, "C_max": 100.0, "epsilon": 0.01},
     "rounds": [{"round": 0, "points": [{"C": 0.1}, {"C": 10.0}]}, {"round": 1, "points": [{"C": 1.0}]}],
     "reason": "not certified: max_rounds=1 reached", "best_C": 1.0, "best_error": 0.1, "bound_min": 0.02,
     "bound_min_C": 50.0, "errors": [{"C": 0.1, "cv_error": 0.15, "tol": 0.1, "round": 0},
                                     {"C": 1.0, "cv_error": 0.1, "tol": 0.1, "round": 1},
                                     {"C": 10.0, "cv_error": 0.15, "tol": 0.1, "round": 0}],
     "bound": {"log_breaks": np.log([0.01, 0.08, 0.12, 0.9, 1.1, 8.0, 12.0, 100.0]).tolist(),
               "between": [0.05, 0.14, 0.06, 0.09, 0.06, 0.14, 0.02]}},
    {"dataset": "toy", "solver_entry": "smo", "kind": "halving", "resource": "tol", "factor": 3.0,
     "min_resources": None, "done": True, "schedule": [{"index": 0, "n_candidates": 4, "resource": 0.003},
                                                      {"index": 1, "n_candidates": 2, "resource": 0.001}],
     "rungs": [{"rung": 0, "resource": 0.003, "n_candidates": 4,
                "candidates": [{"point": {"C": C, "gamma": g}, "cv_error": 0.1 + C / 100 + g}
                               for C in (0.1, 1.0) for g in (0.1, 1.0)]},
               {"rung": 1, "resource": 0.001, "n_candidates": 2,
                "candidates": [{"point": {"C": 0.1, "gamma": 0.1}, "cv_error": 0.2},
                               {"point": {"C": 1.0, "gamma": 0.1}, "cv_error": 0.21}]}],
     "best": {"point": {"C": 0.1, "gamma": 0.1}, "cv_error": 0.2}}]}


@pytest.mark.parametrize("name", [it.name for it in items("figure")])
def test_each_figure_draws_from_a_hand_made_table_with_labels_naming_swept_keys(name):
    data = _rich()
    it = REG[name]
    assert it.missing(data) is None, it.missing(data)
    out = it.fn(data)
    figs = out if isinstance(out, list) else [out]
    legends = [[t.get_text() for t in leg.get_texts()] for fig in figs
               for leg in [ax.get_legend() for ax in fig.axes] + fig.legends if leg]
    for names in legends:
        assert len(names) == len(set(names)), names          # a legend never names one line twice
    labels = [x for names in legends for x in names]
    texts = " ".join(labels + [ax.get_title() for fig in figs for ax in fig.axes])
    expect = {"accuracy_vs_C": "gamma=0.1", "C_gamma_heatmap": "smo", "time_vs_q": "svmlight",
              "pegasos_k_vs_T": "kT~1200", "objective_random_starts": "3 starts",
              "suboptimality_vs_time": "gamma=0.1 C=0.1", "active_points_2d": "support vectors"}
    if name in expect:
        assert expect[name] in texts, texts
    import matplotlib.pyplot as plt
    for fig in figs:
        plt.close(fig)


@pytest.mark.parametrize("name", [it.name for it in items()])
def test_every_item_on_empty_partial_and_all_failed_results(name):
    it = REG[name]
    empty = rows([]).reindex(columns=rows([{}]).columns)
    failed = rows([{"status": "error", "error": "RuntimeError: boom\nTraceback", "test_accuracy": np.nan}] * 2)
    partial = rows([{"f_star": np.nan, "gamma": None}, {"status": "error", "error": "E: x"}])
    for res in (empty, failed, partial):
        data = _data(res)
        why = it.missing(data)
        if why is not None:
            assert isinstance(why, str) and why
            continue
        try:
            out = it.fn(data)
        except Skip as exc:
            assert str(exc)
            continue
        if it.kind == "table":
            assert isinstance(out, pd.DataFrame)
    if name == "failures":
        t = it.fn(_data(failed))
        assert t["error"].tolist() == ["RuntimeError: boom"] * 2


def test_html_holds_every_section_and_embeds_figures(tmp_path, monkeypatch):
    import pipeline.report.build as build
    monkeypatch.setattr(build, "DPI", 30)         # what is checked is the page, not the pixels
    data = _rich(small=True)
    secs = sections(data, tmp_path / "figures", formats=("png",))    # PDFs: checked by the run tests
    # Every item that belongs in a report of this size (the summaries of a large sweep do not).
    assert [s.name for s in secs] == [it.name for it in items() if it.applies(data)]
    page = to_html("t", ["intro"], secs)
    assert "`" not in page                      # markdown's code marks are <code> in the page
    for s in secs:
        if s.skipped:       # listed once under "Not drawn", with why
            assert s.title in page.split('<h2 id="not_drawn">')[1]
        else:
            assert f'<h2 id="{s.name}">' in page
    drawn = [s for s in secs if s.figure is not None]
    assert len(drawn) == len([it for it in items("figure") if it.applies(data)])
    pngs = [png for s in drawn for png in s.figures]
    assert page.count("data:image/png;base64,") == len(pngs) and 'src="figures/' not in page
    for png in pngs:
        assert png.exists()
    # A figure whose columns are absent is named with the reason.
    stale = tmp_path / "figures" / "time_vs_q.png"
    assert stale.exists()
    sections(_data(rows([])), tmp_path / "figures", formats=("png",))   # a rebuild with nothing to draw
    assert not stale.exists()
    skipped = {it.name: it.missing(_data(default_run())) for it in items()}
    assert "param_q" in skipped["time_vs_q"] and "confusion_test" in skipped["confusion_matrices"]
    page = to_html("t", [], [build.Section("x", "X", skipped="results have no `param_q`", hint="sweep `q`")])
    assert "X: results have no <code>param_q</code>; to get it, sweep <code>q</code>." in page
    assert "`" not in page                      # markdown's code marks become <code>, never shown raw


def test_multirun_jobs_that_differ_only_in_their_overrides_stay_apart():
    # Two jobs, same columns (a dataset's scale differs, which no column shows).
    res = rows(folds({"test_accuracy": 0.9, "job_overrides": "datasets.toy.scale=standard"})
               + folds({"test_accuracy": 0.6, "job_overrides": "datasets.toy.scale=none"}))
    cv = cv_table(_data(res))
    assert len(cv) == 2 and "job_overrides" in cv.columns
    assert best_params(_data(res))["job_overrides"].tolist() == ["datasets.toy.scale=standard"]


def test_init_seed_starts_are_one_line_like_random_state():
    """Random starts of the majorization solvers (param_init_seed) are runs of one line with a
    band, not a line each (troyan's 5 starts x 6 methods would be 30 lines a panel)."""
    from pipeline.report.figures import _configs
    res = rows([{"solver_entry": e, "param_init_seed": s, "key": f"{e}{s}"} for e in ("a", "b") for s in range(3)])
    fits, cfg, shown = _configs(ReportData(res, traces_for(res)), res)
    assert "param_init_seed" not in cfg + shown and fits.groupby(cfg).ngroups == 2


def test_figure_legend_lists_each_line_once_for_panels_that_share_them():
    """Panels of the same methods on several datasets get one legend, each label once, in the
    order first drawn (the reproductions' figures listed the same lines under every panel)."""
    from pipeline.report.figures import _panels, figure_legend
    fig, axes = _panels(3)
    for ax in axes:
        for name in ("a", "b"):
            ax.plot([0, 1], [0, 1], label=name)
    axes[2].plot([0, 1], [1, 0], label="c")
    figure_legend(fig, axes)
    assert [ax.get_legend() for ax in axes] == [None, None, None]
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b", "c"]


def test_certificates_say_where_D_comes_from_and_why_a_rebuilt_gap_can_be_large():
    """liblinear returns w only: its D is rebuilt from w, and at large C its gap can exceed P while
    it is `converged` and close to f*; the table says so beside the gap, the lines say why."""
    res = rows(folds({"solver_entry": "dcd", "family": "dual_cd", "duality_gap": 1e-3, "primal_objective": 10.0}, 2)
               + folds({"solver_entry": "liblinear", "solver": "liblinear", "family": "reference", "C": 10.0,
                        "duality_gap": 1991.0, "primal_objective": 131.0, "rel_suboptimality": 3e-3}, 2)
               + folds({"solver_entry": "libsvm", "solver": "libsvm", "family": "reference", "kernel": "rbf",
                        "duality_gap": 1e-4, "primal_objective": 10.0}, 2))
    data = _data(res)
    cert = certificates(data).set_index("solver_entry")
    assert cert.loc["dcd", "dual_from"] == "own alpha" and cert.loc["libsvm", "dual_from"] == "own alpha"
    assert cert.loc["liblinear", "dual_from"] == "rebuilt from w"
    assert cert.loc["liblinear", "rel_gap_max"] == pytest.approx(1991.0 / 131.0)
    assert cert.loc["dcd", "rel_gap_max"] == pytest.approx(1e-4)
    lines = REG["certificates"].lines(data)
    assert "2C (1 - y_i f_i)_+" in lines[0] and "own stopping test" in lines[0]
    assert "liblinear on toy at C=10, has gap 1991 (relative 15.2) while (P - f*)/|f*| is 0.003" in lines[1]
    # Without a rebuilt D there is nothing to explain.
    assert REG["certificates"].lines(_data(res[res["solver_entry"] != "liblinear"])) == []


def test_a_wide_table_is_split_into_parts_that_each_name_their_rows(tmp_path):
    from pipeline.report.build import Section, to_markdown
    from pipeline.report.common import MAX_TABLE_COLUMNS
    wide = pd.DataFrame([{"dataset": "toy", "solver_entry": "dcd", "C": 1.0, **{f"m{i}": float(i) for i in range(18)}}])
    md = to_markdown("t", [], [Section("w", "W", table=wide)], tmp_path)
    headers = [line for line in md.splitlines() if line.startswith("| dataset")]
    assert len(headers) == 3
    for h in headers:
        cols = h.strip("|").split("|")
        assert len(cols) <= MAX_TABLE_COLUMNS and [c.strip() for c in cols[:3]] == ["dataset", "solver_entry", "C"]
    assert sum(h.count("| m") for h in headers) == 18          # every column once


def test_multirun_overrides_as_typed_and_only_those_that_vary(tmp_path):
    from pipeline.report.build import _overrides, varied_overrides
    from pipeline.report.common import label
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "overrides.yaml").write_text("- ++solvers.smo.grid.gamma=[0.1]\n- cv.folds=2\n")
    assert _overrides(tmp_path) == ["solvers.smo.grid.gamma=[0.1]", "cv.folds=2"]
    by_job = varied_overrides({"a": ["solvers.smo.grid.gamma=[0.1]", "cv.folds=2"],
                               "b": ["solvers.smo.grid.gamma=[1]", "cv.folds=2"]})
    assert by_job == {"a": "solvers.smo.grid.gamma=[0.1]", "b": "solvers.smo.grid.gamma=[1]"}
    assert label({"solver_entry": "smo", "job_overrides": by_job["b"]}, ["job_overrides"]) == "smo solvers.smo.grid.gamma=[1]"


def test_time_against_q_draws_one_problem_a_panel():
    """Two kernels' q sweeps on one dataset are two problems: two panels, each naming its kernel,
    never one panel mixing them (bertini's Figures 2 and 4 were drawn in one)."""
    from pipeline.report.figures import time_vs_q
    specs = []
    for entry, kernel, C in (("sv_rbf", "rbf", 5000.0), ("sv_poly", "poly", 1000.0)):
        for q in (2, 10, 40):
            specs += folds({"solver_entry": entry, "kernel": kernel, "C": C, "param_q": q, "fit_time_s": 0.01 * q}, 2)
    fig = time_vs_q(_data(rows(specs)))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 2 and any("kernel=rbf" in t for t in titles) and any("kernel=poly" in t for t in titles), titles
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_keyed_maps_each_distinct_value_once_and_copies_no_other_column():
    """`keyed` gives grouping columns key_value's markers, as mapping every row would (same
    values, same dtype, over numbers, strings, missing values, mixed and unhashable ones), and
    shares the other columns with the results instead of copying them (at 1,000,000 fits a deep
    copy was 540 MB of the report's peak); the results are left as they were."""
    from pipeline.report.common import key_values, key_value, keyed
    cases = [pd.Series([1.0, np.nan, 2.0, 1.0]), pd.Series([1.0, 2.0]), pd.Series(["a", None, "nan", "b", ""]),
             pd.Series([None, None]), pd.Series([1, 2, 2]), pd.Series([{"a": 1}, None], dtype=object),
             pd.Series([True, False, None], dtype=object), pd.Series(["x", 1.5, None], dtype=object),
             pd.Series(pd.array([1, None], dtype="Int64")), pd.Series([0.5, np.nan], index=[7, 3], name="C")]
    for col in cases:
        pd.testing.assert_series_equal(key_values(col), col.map(key_value))
    res = pd.DataFrame({"gamma": [np.nan, 0.1, np.nan], "metric": np.arange(3.0), "C": [1.0, 1.0, 2.0]})
    before = res.copy()
    out = keyed(res, ["gamma"])
    assert out["gamma"].tolist() == ["-", 0.1, "-"]
    assert np.shares_memory(out["metric"].to_numpy(), res["metric"].to_numpy())
    pd.testing.assert_frame_equal(res, before)


# ---------------------------------------------------------------- like for like (speed.py)
from pipeline.report import speed  # noqa: E402
from pipeline.report.profiles import _per_problem  # noqa: E402


def _warm_path():
    """dcd along a warm C path (its C = 1 point warm-started from C = 0.1) beside liblinear, cold, on
    the same problems: the sweep as `make run` records it. dcd's warm fit is 100x faster than a cold
    one would be: what a ratio must never show."""
    specs = []
    for C, start in ((0.1, "cold"), (1.0, "warm")):
        specs += folds({"solver_entry": "dcd", "C": C, "start": start, "fit_time_s": 1e-4 if start == "warm" else 0.01})
        specs += folds({"solver_entry": "liblinear", "solver": "liblinear", "family": "reference", "C": C,
                        "start": "cold", "fit_time_s": 0.02})
    return rows(specs)


def _timing(results, **changes):
    """The timing fits of results: the same problems, cold, with their setup seconds."""
    t = results.assign(key=[f"t{k}" for k in results["key"]], start="cold", setup_s=0.0, timing_method="trace")
    return t.assign(**changes)


def test_a_warm_started_entry_and_a_cold_reference_are_never_in_one_ratio():
    res = _warm_path()
    data = _data(res, traces=traces_for(res, timed=True))
    t = time_to_target(data).set_index(["solver_entry", "C"])
    # Sweep fits only (run.timing=false): C = 0.1 is cold on both sides, C = 1 is dcd warm.
    assert t.loc[("dcd", 0.1), "ratio"] == pytest.approx(0.5)
    assert t.loc[("dcd", 1.0), "start"] == "warm" and math.isnan(t.loc[("dcd", 1.0), "ratio"])
    assert "Every row: source `sweep`, clock `solver`" in " ".join(REG["time_to_target"].lines(data))
    # The figures name the warm line, and the profiles leave it out.
    view = speed.speed_view(data)
    assert "dcd (warm start)" in set(view.fits["solver_entry"])
    (_, times, _), = _per_problem(data, "subopt")
    assert "dcd (warm start)" not in times.columns
    assert "Left out, started warm (no cold timing fit): dcd (warm start)" in \
        REG["performance_profile"].fn(data)._suptitle.get_text()
    # With timing fits (cold, the run's default), the ratio is read from them, cold against cold.
    timed = _data(res, traces=traces_for(res, timed=True), timing=_timing(res.assign(fit_time_s=0.01)))
    t = time_to_target(timed).set_index(["solver_entry", "C"])
    assert "Every row: source `timing`, start `cold`, clock `call`" in " ".join(REG["time_to_target"].lines(timed))
    assert t.loc[("dcd", 1.0), "ratio"] == pytest.approx(1.0)
    assert methods_table(timed).set_index("solver_entry").loc["dcd", "toy"] == "x1 over 2"


def test_a_fit_stopping_above_the_target_is_never_ranked_by_its_own_stop():
    """pegasos stops after its epochs, fast and 5% above f*: its own stop is 10x sooner than
    liblinear's time to the target, and it is shown `not reached`, in no ratio, last in the
    profile; liblinear reaches the target."""
    res = rows(folds({"solver_entry": "pegasos", "solver": "pegasos", "family": "primal", "status": "budget",
                      "fit_time_s": 0.001, "primal_objective": 10.5, "rel_suboptimality": 0.05})
               + folds({"solver_entry": "liblinear", "solver": "liblinear", "family": "reference", "fit_time_s": 0.01}))
    tr = traces_for(res, timed=True)
    tr.loc[tr["key"].isin(res.loc[res["solver_entry"] == "pegasos", "key"]), "primal"] = 10.5   # never within
    data = _data(res, traces=tr)
    t = time_to_target(data).set_index("solver_entry")
    assert t.loc["pegasos", "t_target_s"] == "not reached" and t.loc["pegasos", "reached"] == "0/3"
    assert math.isnan(t.loc["pegasos", "ratio"])
    assert t.loc["pegasos", "own_stop_s"] < t.loc["liblinear", "t_target_s"]          # its stop is sooner...
    assert methods_table(data).set_index("solver_entry").loc["pegasos", "toy"] == "no ratio; 1 not reached"                                                      # ...and never ranked by it
    (_, times, _), = _per_problem(data, "subopt")
    assert times["pegasos"].tolist() == [np.inf] and np.isfinite(times["liblinear"]).all()


def test_the_headline_counts_certified_fits_apart_from_tolerance_reached_ones():
    """Four fits reach their own tolerance; two of them end 5% above f*: the headline says 4
    converged and 2 certified within the target, names the worst, and never says `All converged`."""
    res = rows(folds({"C": 1.0}, 2) + folds({"C": 10.0, "rel_suboptimality": 0.05, "primal_objective": 10.5}, 2))
    lines = status_lines(res, 1e-3)
    assert lines[0] == "4 fits: 4 reached their own stopping tolerance (`converged`), 0 stopped otherwise, 0 failed."
    assert lines[1].startswith("Certified against f*: 2 of the 4 fits with a certified f* end within "
                               "(P - f*)/|f*| <= 0.001, 2 above it;")
    assert "max 0.05" in lines[1]
    assert lines[2].startswith("- 2 fits reached their own tolerance but end above the target (worst: dcd on toy at "
                               "C=10, 0.05 above f*)")
    t = status_table(_data(res, target=1e-3)).iloc[0]
    assert (t["converged"], t["certified"], t["above_target"]) == (4, 2, 2)
    # A looser target certifies all four.
    assert status_lines(res, 0.1)[1].startswith("Certified against f*: 4 of the 4 fits")


def test_a_gathered_multirun_puts_no_ratio_across_its_jobs():
    """Two jobs of a multirun (max_rows=100 and 1000 of one dataset: no column tells them apart but
    their overrides) each time dcd and liblinear: a ratio is taken within a job, never across."""
    specs = []
    for job, t in (("datasets.toy.max_rows=100", 0.01), ("datasets.toy.max_rows=1000", 0.1)):
        specs += folds({"solver_entry": "dcd", "job_overrides": job, "fit_time_s": t})
        specs += folds({"solver_entry": "liblinear", "solver": "liblinear", "family": "reference",
                        "job_overrides": job, "fit_time_s": 2 * t})
    res = rows(specs)
    t = time_to_target(_data(res, traces=traces_for(res, timed=True)))
    assert t.loc[t["solver_entry"] == "dcd", "ratio"].tolist() == [pytest.approx(0.5)] * 2


def test_results_written_before_start_was_recorded_say_it_by_warm_from():
    """A results table of an earlier version has no `start`: its warm points are those that name
    the point they started from, and they are kept out of every ratio as a recorded start is."""
    res = _warm_path()
    res = res.assign(warm_from=np.where(res["start"] == "warm", "fit-earlier", None)).drop(columns="start")
    t = time_to_target(_data(res, traces=traces_for(res, timed=True))).set_index(["solver_entry", "C"])
    assert t.loc[("dcd", 1.0), "start"] == "warm" and math.isnan(t.loc[("dcd", 1.0), "ratio"])
    assert t.loc[("dcd", 0.1), "ratio"] == pytest.approx(0.5)


def test_a_ladder_cut_short_is_not_said_never_to_reach_the_target():
    """LIBLINEAR's ladder ran out of its budget before the target (`info_ladder_cut`): the report
    cannot tell when it would have got there, so it says neither a time nor `not reached`."""
    res = rows(folds({"solver_entry": "dcd"}) + folds({"solver_entry": "liblinear", "solver": "liblinear",
                                                      "family": "reference", "rel_suboptimality": 0.05}))
    timing = _timing(res).assign(timing_method=np.where(res["solver_entry"] == "liblinear", "ladder", "trace"),
                                 info_ladder_cut=res["solver_entry"] == "liblinear")
    tr = traces_for(timing, timed=True)
    tr.loc[tr["key"].isin(timing.loc[timing["solver_entry"] == "liblinear", "key"]), "primal"] = 10.5
    data = ReportData(res, traces_for(res), pd.DataFrame(), name="t", timing=timing, timing_traces=tr)
    t = time_to_target(data).set_index("solver_entry")
    assert t.loc["liblinear", "reached"] == "-" and t.loc["liblinear", "t_target_s"] != "not reached"
    assert math.isnan(t.loc["liblinear", "t_target_s"]) and math.isnan(t.loc["dcd", "ratio"])
