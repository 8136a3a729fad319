"""The report on a paper-sized run: a lambda grid point over folds of two training sizes is one
configuration everywhere, a panel draws at most MAX_LINES lines and says how many it left out, a
dataset with nothing to draw gets no panel, and no figure call warns."""
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pipeline.report import status_lines
from pipeline.report.build import sections
from pipeline.report.common import MAX_LINES
from pipeline.report import figures
from pipeline.report.registry import ReportData
from pipeline.report.tables import certificates, cv_table
from tests.pipeline.report_data import folds, lambda_run, rows, traces_for


def _data(res, traces=None):
    return ReportData(res, traces_for(res) if traces is None else traces, name="t")


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else []


def test_a_lambda_point_over_two_training_sizes_is_one_line_row_and_status_value():
    res = lambda_run()
    assert res.loc[res["solver_entry"] == "pegasos"].groupby("param_lambda")["C"].nunique().min() == 2
    data = _data(res)
    for table in (cv_table(data), certificates(data)):
        peg = table[table["solver_entry"] == "pegasos"]
        assert len(peg) == 2 and "lambda" in [c.replace("param_", "") for c in table.columns]
        # Its C is the mean over its folds; a C-given entry keeps its own C.
        assert np.allclose(sorted(peg["C"]), sorted(res[res["solver_entry"] == "pegasos"].groupby("param_lambda")["C"].mean()))
        assert sorted(table.loc[table["solver_entry"] == "dcd", "C"]) == [0.1, 1.0]
    assert cv_table(data).loc[lambda t: t["solver_entry"] == "pegasos", "converged_folds"].tolist() == ["0/4", "0/4"]
    line = next(x for x in status_lines(res) if x.startswith("- pegasos"))
    assert "(lambda=0.001, lambda=0.01)" in line and "C=" not in line.split(":")[0]

    fig = figures.test_error_vs_iterations(data)
    # A lambda point is one problem (one panel, its C a mean over folds): named by its lambda.
    assert [a.get_title() for a in fig.axes if a.get_visible()] == ["toy\nlambda=0.001", "toy\nlambda=0.01",
                                                                    "toy\nC=0.1", "toy\nC=1"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["pegasos", "dcd"]
    plt.close(fig)
    fig = figures.accuracy_vs_C(data)
    ax = fig.axes[0]
    assert _legend(ax) == ["dcd", "pegasos"]      # lambda is the C axis: one line, not a line per lambda
    # The pegasos line has one point per lambda, and one x tick each beside dcd's 0.1 and 1.
    handles = dict(zip(*ax.get_legend_handles_labels()[::-1]))      # errorbar containers by label
    assert len(handles["pegasos"].lines[0].get_xdata()) == 2
    assert len(ax.get_xticks()) == 4
    plt.close(fig)


def _many(n_cfg=15):
    """n_cfg configurations of dcd on one dataset (eta x C), final test error i/100 for the i-th."""
    specs = [{"C": C, "param_eta": eta, "test_accuracy": 0.5 + i / 100, "key": None}
             for i, (eta, C) in enumerate((eta, C) for eta in range(1, -(-n_cfg // 3) + 1) for C in (0.1, 1.0, 10.0))][:n_cfg]
    res = rows([f for i, s in enumerate(specs) for f in folds({**s, "seed": i}, 2)])
    res["key"] = [f"k{i:03d}" for i in range(len(res))]
    tr = traces_for(res)
    final = dict(zip(res["key"], (res.index // 2) / 100 + 0.01))       # config i ends at (i + 1) / 100
    tr["test_error"] = tr["test_error"] * 0 + tr["key"].map(final)
    return res, tr


def test_a_panel_draws_at_most_the_cap_and_says_how_many_it_left_out():
    res, tr = _many(15)
    data = _data(res, tr)
    # 15 step sizes of one problem: 15 lines of one panel (eta is the entry's own key, not the problem's).
    one = _data(res.assign(C=1.0, param_eta=res.index // 2), tr)
    fig = figures.test_error_vs_iterations(one)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    labels = [line.get_label() for line in ax.get_lines()]
    assert len(labels) == MAX_LINES
    assert f"{MAX_LINES} best of 15 configurations by final test error" in ax.get_title()
    # The best: the configurations of least final error, eta 0..9 (configuration i ends at (i+1)/100).
    assert labels == [f"dcd eta={i}" for i in range(10)]
    plt.close(fig)
    fig = figures.accuracy_vs_C(data)         # 5 lines (one per eta) stay: nothing cut, nothing said
    assert len(_legend(fig.axes[0])) == 5 and "best of" not in fig.axes[0].get_title()
    plt.close(fig)
    res2 = res.assign(param_eta=res.index % 15, C=[(0.1, 1.0)[i // 15 % 2] for i in range(len(res))])
    fig = figures.accuracy_vs_C(_data(res2, tr))      # 15 lines of two C each: cut to the cap
    assert len(_legend(fig.axes[0])) == MAX_LINES and "best of 15" in fig.axes[0].get_title()
    plt.close(fig)


def test_a_dataset_with_nothing_to_draw_has_no_panel_and_the_report_never_warns(tmp_path, monkeypatch):
    import pipeline.report.build as build
    from tests.pipeline.test_report import _rich
    monkeypatch.setattr(build, "DPI", 30)         # what is checked is the warnings, not the pixels
    res = pd.concat([lambda_run(), rows([{"dataset": "empty", "solver_entry": "dcd", "C": 1.0}])],
                    ignore_index=True)
    res["key"] = [f"k{i:03d}" for i in range(len(res))]
    tr = traces_for(res)
    tr.loc[tr["key"] == res["key"].iloc[-1], "test_error"] = np.nan    # a trace, but nothing finite
    data = _data(res, tr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = figures.test_error_vs_iterations(data)
        assert {a.get_title().split("\n")[0] for a in fig.axes if a.get_visible()} == {"toy"}
        assert "No panel: empty (C=1: nothing finite)" in fig._suptitle.get_text()
        plt.close(fig)
        secs = sections(data, tmp_path / "figures", formats=("png",))
        assert any(s.figure is not None for s in secs)
        secs = sections(_rich(small=True), tmp_path / "rich", formats=("png",))     # every figure drawn
        assert all(s.figure is not None for s in secs if s.name in ("accuracy_vs_C", "suboptimality_vs_time"))


def test_status_lines_name_the_swept_values_of_the_fits_they_count():
    # gd diverges at its large steps only: the line says which (the C alone would not tell them apart).
    res = rows(folds({"solver_entry": "gd", "param_eta": 0.1}, 2) + folds({"solver_entry": "gd", "param_eta": 5.0, "status": "diverged"}, 2)
               + folds({"solver_entry": "gd", "param_eta": 9.0, "status": "diverged"}, 2))
    line = next(x for x in status_lines(res) if "diverged" in x)
    assert "(C=1; eta=5, 9)" in line


def test_a_fixed_problem_lambda_reaches_the_results(tmp_path):
    # duros_katzman's gd: lambda in its params, not its grid; its folds' C differ, its lambda does not.
    from pipeline.results.shards import encode
    from pipeline.results.tables import write_tables
    import pyarrow.parquet as pq
    spec = {"problem": {"loss": "squared_hinge", "intercept": "basis", "lambda": 1e-3, "lambda_convention": "pegasos"},
            "data": {"entry": "d", "name": "d", "fingerprint": "f"}, "solver": "gd", "solver_entry": "gd",
            "solver_version": "1", "family": "primal", "fold": 0, "seed": 1, "solver_params": {"eta": 0.1},
            "grid_point": {"eta": 0.1}}
    (tmp_path / "shards").mkdir()
    pq.write_table(encode([{"key": "k", "kind": "fit", "status": "max_iter", "C": 1 / (1e-3 * 90), "n_train": 90,
                            "spec": spec}]), tmp_path / "shards" / "k.parquet")
    write_tables(tmp_path)
    row = pd.read_parquet(tmp_path / "results.parquet").iloc[0]
    assert row["param_lambda"] == 1e-3 and row["param_lambda_convention"] == "pegasos" and row["param_eta"] == 0.1


def test_a_long_c_sweep_is_a_readable_line_with_round_ticks():
    """400 C values over four decades, 2 folds each: the accuracy panel draws the mean as a line
    and the spread over folds as a band (bars at every C were one solid block), and labels its
    ticks at round values, the powers of ten (each value a tick ran 40 turned labels into each
    other, and ticks at grid points read 0.01023); a sweep of a few C values keeps its bars and a
    tick per value."""
    Cs = np.geomspace(0.01, 100, 400)
    res = rows([s for C in Cs for s in folds({"C": float(C)}, n=2, test_accuracy=[0.9, 0.92])])
    fig = figures.accuracy_vs_C(_data(res))
    ax = fig.axes[0]
    assert len(ax.collections) == 1 and len(ax.lines) == 1 and len(ax.lines[0].get_xdata()) == 400
    # Ticks at round values (the powers of ten the sweep spans), not at its grid points (0.01023).
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert np.allclose(ticks, [0.01, 0.1, 1.0, 10.0, 100.0])
    plt.close(fig)
    few = rows([s for C in (0.1, 1.0, 10.0) for s in folds({"C": C}, n=2, test_accuracy=[0.9, 0.92])])
    fig = figures.accuracy_vs_C(_data(few))
    ax = fig.axes[0]
    assert ax.containers and np.allclose(ax.get_xticks(), [0.1, 1.0, 10.0])
    plt.close(fig)


def _problems(n):
    """n problems (n values of C of dcd on one dataset), two folds each."""
    specs = []
    for i in range(n):
        specs += folds({"C": 10 ** (i / 8 - 1), "test_accuracy": 0.5 + i / 100}, 2)
    res = rows(specs)
    return ReportData(res, traces_for(res), pd.DataFrame(), name="t")


def test_the_summaries_start_past_24_problems_not_at_24():
    """MAX_PROBLEMS = 24: a run of 24 problems is drawn a panel per problem, every one, with no
    summary over the swept keys; at 25 the summaries are drawn, the panels are the few chosen
    (each saying why) and run.log counts the problems left out of them."""
    from pipeline.report.build import left_out
    from pipeline.report.registry import MAX_PROBLEMS, items
    assert MAX_PROBLEMS == 24
    scale = [it for it in items() if it.scale]
    assert scale
    at, past = _problems(24), _problems(25)
    assert (at.n_problems(), past.n_problems()) == (24, 25)
    assert not any(it.applies(at) for it in scale) and all(it.applies(past) for it in scale)
    assert figures.panel_data(at).fits["C"].nunique() == 24
    pids = pd.DataFrame({"_pid": ["a", "b"]})
    assert figures.chosen_rows(at, pids)["_why"].tolist() == ["", ""]       # every row, none chosen
    chosen = figures.panel_data(past).fits
    n_chosen = chosen["C"].nunique()
    assert 0 < n_chosen <= figures.MAX_CHOSEN and (chosen["_why"] != "").all()
    assert left_out(at, [], figures=True) == []
    (line,) = left_out(past, [], figures=True)
    assert line.startswith(f"{25 - n_chosen} of 25 problems from the figures of one panel per problem")
