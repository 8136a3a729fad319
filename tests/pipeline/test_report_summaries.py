"""The summaries of a large sweep (pipeline/report/scaled.py) on hand-made results whose every
number is known: each measure's centre and spread over folds against a pandas group-by of the
same rows, the keys drawn against, the lines kept, the figures' panels (titles, scales, what is
left out), the map's cells, and the interactive page's data (its thinned traces, its problems,
its escaping) decoded back from the page."""
import base64
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from pipeline.report import scaled
from pipeline.report.common import MAX_LINES
from pipeline.report.registry import ReportData, Skip
from tests.pipeline.report_data import rows, traces_for

CS = (0.1, 1.0, 10.0, 100.0)
ETAS = (1.0, 2.0)


def _sweep(datasets=("a", "b"), folds=2, entries=("dcd",), extra=None):
    """Every dataset x entry x eta x C, `folds` folds each: accuracy, fit time, passes and gap
    that differ by fold, C, eta, entry and dataset, each exactly representable."""
    specs = []
    for d, ds in enumerate(datasets):
        for e, entry in enumerate(entries):
            for eta in ETAS:
                for i, C in enumerate(CS):
                    for f in range(folds):
                        specs.append({"dataset": ds, "solver_entry": entry, "solver": entry, "C": C, "param_eta": eta,
                                      "fold": f, "test_accuracy": 0.5 + 0.0625 * i + 0.03125 * f - 0.125 * e + d / 64,
                                      "fit_time_s": 0.25 * (i + 1) * eta * (1 + f) + e, "n_iter": 8 * (i + 1) + f,
                                      "duality_gap": 2.0 ** -(i + f), "primal_objective": 4.0 * eta,
                                      **(extra or {})})
    return rows(specs)


def _data(res, traces=None):
    return ReportData(res, traces_for(res) if traces is None else traces, pd.DataFrame(), name="t")


def _f32(s):
    return np.frombuffer(base64.b64decode(s), dtype="<f4")


def test_the_swept_numeric_keys_drawn_against_at_most_three():
    """C and eta (numeric, swept), not a random start, not a key swept as text only, lambda
    instead of C (C moves with the fold), the first three."""
    data = _data(_sweep())
    assert scaled.swept_numeric(data) == ["C", "param_eta"]
    res = _sweep()
    res["param_random_state"] = res["fold"]
    res["param_kind"] = np.where(res["fold"] == 0, "x", "y")
    assert scaled.swept_numeric(_data(res)) == ["C", "param_eta"]
    res = _sweep()
    res["param_lambda"] = 1.0 / res["C"]
    assert scaled.swept_numeric(_data(res)) == ["param_lambda", "param_eta"]
    res = _sweep()
    res["param_a"], res["param_b"] = res["fold"] + 1.0, res["fold"] * 2.0
    assert len(scaled.swept_numeric(_data(res))) == scaled.MAX_KEYS == 3
    assert scaled._axis_label("C") == "C" and scaled._axis_label("param_lambda") == "lambda"
    assert scaled._axis_label("param_eta") == "eta" and scaled._axis_label("rows") == "rows"


def test_the_summary_rows_are_the_mean_median_least_and_largest_over_folds():
    """Against pandas over the same rows: test accuracy's mean, the others' median (fit time,
    passes, the final relative gap |P - D| / |P|), each with its least and largest fold."""
    res = _sweep(folds=3)
    out, line_keys, shown = scaled.summaries(_data(res), "C")
    assert line_keys[0] == "solver_entry" and "param_eta" in line_keys and "C" not in line_keys
    assert shown == ["param_eta"]
    res["_rel_gap"] = res["duality_gap"].abs() / res["primal_objective"].abs()
    g = res.groupby(["dataset", "solver_entry", "param_eta", "C"])
    want = pd.DataFrame({"test_accuracy": g["test_accuracy"].mean(), "fit_time_s": g["fit_time_s"].median(),
                         "n_iter": g["n_iter"].median(), "_rel_gap": g["_rel_gap"].median(), "_folds": g.size()})
    for col in ("test_accuracy", "fit_time_s", "n_iter", "_rel_gap"):
        want[f"{col}_lo"], want[f"{col}_hi"] = g[col].min(), g[col].max()
    got = out.set_index(["dataset", "solver_entry", "param_eta", "C"]).sort_index()
    assert len(got) == len(want) == 2 * 2 * 4
    for col in want.columns:
        assert np.allclose(got[col].to_numpy(float), want[col].to_numpy(float), rtol=1e-12, atol=0), col
    # Each row names one of its problems' fits (a click opens its traces).
    assert (got["_pid"].str.split(" | ").str[0] == got.index.get_level_values("dataset")).all()


def test_a_run_without_a_measure_is_skipped_and_one_without_a_gap_has_none():
    res = _sweep().drop(columns=["test_accuracy", "fit_time_s", "n_iter", "duality_gap"])
    with pytest.raises(Skip, match="none of test accuracy, fit time, iterations, duality gap"):
        scaled.summaries(_data(res), "C")
    res = _sweep().drop(columns=["duality_gap"])
    out, _, _ = scaled.summaries(_data(res), "C")
    assert "_rel_gap" not in out.columns and {"test_accuracy", "fit_time_s", "n_iter"} <= set(out.columns)
    assert scaled._measure_sql(_data(_sweep().drop(columns=["primal_objective"])), "_rel_gap", "median") is None
    assert scaled._measure_sql(_data(_sweep()), "nosuch", "median") is None
    assert scaled._measure_sql(_data(_sweep()), "n_iter", "median") == ('median(num("n_iter"))', 'min(num("n_iter"))',
                                                                         'max(num("n_iter"))')


def test_a_panel_keeps_the_best_lines_by_accuracy_or_else_the_least_time():
    """12 lines of one dataset (12 values of eta): the MAX_LINES of the best accuracy at any C,
    in their own order, and the words saying so; by fit time (least first) when asked; a line at
    one C only is no line."""
    specs = [{"C": C, "param_eta": float(eta), "test_accuracy": 0.5 + eta / 100 + C / 1000,
              "fit_time_s": float(20 - eta)} for eta in range(12) for C in (1.0, 10.0)]
    specs.append({"C": 1.0, "param_eta": 99.0, "test_accuracy": 0.99})        # one C: not a line
    out, keys, _ = scaled.summaries(_data(rows(specs)), "C")
    lines, cut = scaled._lines(out, keys, "C", "test_accuracy", True)
    assert [g["param_eta"].iloc[0] for g in lines] == list(range(2, 12))
    assert cut == f"{MAX_LINES} best of 12 configurations by best test_accuracy"
    assert all(g["C"].is_monotonic_increasing for g in lines)
    lines, cut = scaled._lines(out, keys, "C", "fit_time_s", False)
    assert [g["param_eta"].iloc[0] for g in lines] == list(range(2, 12)) and cut.endswith("by least fit_time_s")
    assert scaled._lines(out[out["param_eta"] == 99.0], keys, "C", "test_accuracy", True) == ([], "")


def _titles(fig):
    return [ax.get_title() for ax in fig.axes if ax.get_visible()]


def test_the_summary_figure_has_a_panel_per_dataset_and_measure_a_page_per_key():
    """Two keys (C, eta): two figures; each a row of four panels per dataset (mean accuracy,
    median fit time, passes, gap), a line per other value with its band over folds, log scales
    where the values span more than a decade, the legend once per row."""
    pages = scaled.sweep_summary(_data(_sweep()))
    try:
        assert len(pages) == 2
        along_C, along_eta = pages
        assert _titles(along_C) == [f"{ds}: {what}" for ds in ("a", "b") for what in (
            "mean test accuracy", "median fit time", "median iterations", "median final gap")]
        first = along_C.axes[0]
        assert first.get_xlabel() == "C" and first.get_ylabel() == "test accuracy" and first.get_xscale() == "log"
        assert [line.get_label() for line in first.get_lines()] == ["dcd eta=1", "dcd eta=2"]
        xs, ys = first.get_lines()[0].get_data()
        assert list(xs) == list(CS) and np.allclose(ys, [0.515625 + 0.0625 * i for i in range(4)])
        assert len(first.collections) == 2                       # a band per line
        assert first.get_legend() is not None and all(ax.get_legend() is None for ax in along_C.axes[1:4])
        gap = along_C.axes[3]
        assert gap.get_yscale() == "log" and along_C.axes[0].get_yscale() == "linear"
        assert along_C.axes[2].get_yscale() == "linear"         # passes from 8 to 33: within a decade... of 8
        assert along_eta.axes[0].get_xlabel() == "eta" and along_eta.axes[0].get_xscale() == "log"
        assert along_C._suptitle is None
    finally:
        plt.close("all")


def test_the_summary_figure_names_the_datasets_past_four_and_draws_one_page_for_one_key():
    res = _sweep(datasets=("a", "b", "c", "d", "e", "f"))
    res = res[res["param_eta"] == 1.0]
    fig = scaled.sweep_summary(_data(res))
    try:
        assert not isinstance(fig, list)
        assert len([ax for ax in fig.axes if ax.get_visible()]) == 4 * 4
        assert fig._suptitle.get_text() == "2 more datasets not drawn: e, f"
    finally:
        plt.close("all")
    with pytest.raises(Skip, match="no numeric key was swept"):
        scaled.sweep_summary(_data(rows([{"fold": 0}, {"fold": 1}]).drop(columns=["C"])))


def test_the_map_is_the_mean_accuracy_and_median_time_at_each_pair_of_values():
    res = _sweep(datasets=("a",), folds=3)
    fig = scaled.sweep_map(_data(res))
    try:
        acc, time = fig.axes[0], fig.axes[1]
        assert acc.get_title() == "a, dcd: mean test accuracy" and time.get_title() == "a, dcd: median fit time (log10)"
        assert (acc.get_xlabel(), acc.get_ylabel()) == ("C", "eta")
        assert acc.get_xscale() == "log" and acc.get_yscale() == "log"
        want = res.groupby(["param_eta", "C"])["test_accuracy"].mean().unstack().to_numpy()
        assert np.allclose(np.asarray(acc.collections[0].get_array()).reshape(want.shape), want)
        want_t = np.log10(res.groupby(["param_eta", "C"])["fit_time_s"].median().unstack().to_numpy())
        assert np.allclose(np.asarray(time.collections[0].get_array()).reshape(want_t.shape), want_t)
        assert len(fig.axes) == 4                              # the two panels and their colour bars
    finally:
        plt.close("all")
    with pytest.raises(Skip, match="fewer than two numeric keys were swept"):
        scaled.sweep_map(_data(_sweep()[lambda r: r["param_eta"] == 1.0]))
    # Both keys swept, but no entry at more than one value of each: x along eta, y along C.
    one_each = rows([{"solver_entry": "x", "C": 0.1, "param_eta": eta} for eta in ETAS]
                    + [{"solver_entry": "y", "C": C, "param_eta": 1.0} for C in CS])
    with pytest.raises(Skip, match="no solver entry was run at more than one C and param_eta"):
        scaled.sweep_map(_data(one_each))


def test_the_map_draws_at_most_four_entries_side_by_side():
    fig = scaled.sweep_map(_data(_sweep(datasets=("a", "b", "c"), entries=("dcd", "smo"))))
    try:
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert titles == [f"{p}: {m}" for p in ("a, dcd", "a, smo", "b, dcd", "b, smo")
                          for m in ("mean test accuracy", "median fit time (log10)")]
    finally:
        plt.close("all")


def test_the_page_traces_are_thinned_log_spaced_within_the_budget(monkeypatch):
    """A line of 100 points kept at per = PAGE_POINTS // lines points (clipped to [4, 40]): its
    first, its last, and where floor(per ln(rn) / ln(n)) steps up; lines past the budget cut and
    counted; the metric the relative gap where the traces have a gap, else the primal."""
    res = rows([{"C": C, "fold": f} for C in (1.0, 10.0) for f in (0, 1)])
    tr = traces_for(res, n_points=100, decay=1.05)
    data = _data(res, tr)
    pids = [str(p) for p in data.sql(f"SELECT DISTINCT {data.pid('fits')} AS p FROM {data.table('fits')} ORDER BY p")["p"]]
    out = scaled.page_traces(data, pids)
    assert out["metric"] == "(P - D) / |P|" and out["per"] == scaled.MAX_POINTS and out["cut"] == 0
    assert [line["p"] for line in out["lines"]] == [0, 1] and {line["name"] for line in out["lines"]} == {"dcd"}
    it = _f32(out["lines"][0]["k"])
    per, n = scaled.MAX_POINTS, 100
    want = [rn for rn in range(1, n + 1) if rn in (1, n) or np.floor(per * np.log(rn) / np.log(n))
            > np.floor(per * np.log(rn - 1) / np.log(n))]
    assert it.tolist() == want
    first = tr[tr["key"] == "k000"].set_index("iteration")
    assert np.allclose(_f32(out["lines"][0]["t"]), first.loc[want, "time_s"])
    assert np.allclose(_f32(out["lines"][0]["y"]), (first.loc[want, "gap"] / first.loc[want, "primal"].abs()),
                       rtol=1e-6)
    monkeypatch.setattr(scaled, "PAGE_POINTS", 5)          # one line of MIN_POINTS points fits
    out = scaled.page_traces(data, pids)
    assert out["per"] == scaled.MIN_POINTS and len(out["lines"]) == 1 and out["cut"] == 1
    assert len(_f32(out["lines"][0]["k"])) >= scaled.MIN_POINTS
    no_gap = _data(res, tr.drop(columns=["gap"]))
    assert scaled.page_traces(no_gap, pids)["metric"] == "primal objective P"
    assert scaled.page_traces(_data(res, tr.drop(columns=["gap", "primal"])), pids) == {"lines": [], "metric": ""}
    assert scaled.page_traces(_data(res, tr.iloc[:0]), pids) == {"lines": [], "metric": ""}


def test_the_page_data_names_problems_lines_and_the_chosen_as_text():
    res = _sweep(datasets=("<b>",))
    data = _data(res)
    out = scaled.page_data(data)
    assert [k["key"] for k in out["keys"]] == ["C", "eta"]
    assert out["measures"] == [{"col": "test_accuracy", "label": "mean test accuracy", "log": False},
                               {"col": "fit_time_s", "label": "median fit time (s, solver clock)", "log": True},
                               {"col": "n_iter", "label": "median iterations (passes for dcd)", "log": True},
                               {"col": "_rel_gap", "label": "median final (P - D) / |P|", "log": True}]
    assert all(p.startswith("&lt;b&gt;") and " - " not in p and "| -" not in p for p in out["problems"])
    along_C = out["keys"][0]["lines"]
    assert [line["name"] for line in along_C] == ["&lt;b&gt;: dcd eta=1", "&lt;b&gt;: dcd eta=2"]
    assert _f32(along_C[0]["x"]).tolist() == pytest.approx(list(CS))
    assert _f32(along_C[0]["test_accuracy"]).tolist() == pytest.approx([0.515625 + 0.0625 * i for i in range(4)])
    assert _f32(along_C[0]["test_accuracy_lo"]).tolist() == pytest.approx([0.5 + 0.0625 * i for i in range(4)])
    # Each point names its problem (eta is the solver's, not the problem's: both lines share them).
    assert out["problems"] == [f"&lt;b&gt; | hinge | regularized | linear | {C}" for C in CS]
    assert along_C[0]["p"] == along_C[1]["p"] == [0, 1, 2, 3]
    assert out["chosen"] and all(0 <= c["p"] < len(out["problems"]) for c in out["chosen"])


def test_a_long_line_on_the_page_is_thinned_evenly(monkeypatch):
    monkeypatch.setattr(scaled, "PAGE_ROWS", 2 * MAX_LINES)          # two rows a line
    out = scaled.page_data(_data(_sweep(datasets=("a",))))
    line = out["keys"][0]["lines"][0]
    assert _f32(line["x"]).tolist() == pytest.approx([CS[0], CS[-1]]) and len(line["p"]) == 2


def test_the_page_is_one_file_its_user_strings_text_and_nothing_when_nothing_to_draw(tmp_path):
    path = tmp_path / "page.html"
    res = _sweep(datasets=("</script><b>x",))
    assert scaled.write_scaled_page(_data(res), path, "run <i>")
    text = path.read_text()
    assert "<title>run &lt;i&gt;</title>" in text and "<h2>run &lt;i&gt;</h2>" in text
    blob = text.split("<script type=application/json id=svmbench-data>")[1].split("</script>")[0]
    assert "</" not in blob
    data = json.loads(blob.replace("<\\/", "</"))
    assert data["problems"][0].startswith("&lt;/script&gt;&lt;b&gt;x")
    assert text.count("<script") == 3 and not list(tmp_path.glob(".*.tmp"))
    assert f"{len(data['problems'])} problems." in text and "at most 40 log-spaced points each" in text
    # Nothing to draw (no numeric key swept, no trace): no page, and an older one is removed.
    flat = rows([{"C": 1.0, "fold": f} for f in range(2)])
    assert not scaled.write_scaled_page(_data(flat, traces_for(flat).iloc[:0]), path, "t") and not path.exists()
    path.write_text("old")
    no_measure = _sweep().drop(columns=["test_accuracy", "fit_time_s", "n_iter", "duality_gap"])
    assert not scaled.write_scaled_page(_data(no_measure), path, "t") and not path.exists()


def test_b64_is_little_endian_float32_and_esc_leaves_no_markup():
    assert _f32(scaled._b64([1.5, np.nan, -2.0])).tolist()[::2] == [1.5, -2.0]
    assert base64.b64decode(scaled._b64([1.0])) == np.array([1.0], dtype="<f4").tobytes()
    assert scaled._esc("<a href='x'>&</a>") == "&lt;a href='x'&gt;&amp;&lt;/a&gt;" and scaled._esc(3) == "3"
