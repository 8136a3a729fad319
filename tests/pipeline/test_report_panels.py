"""Convergence figures as small multiples: one panel per problem (dataset and every problem key),
a line per solver, every problem shown (a large grid pages into several figures), the colour of
a solver the same in every panel; time against n never joins two datasets."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from pipeline.report import REGISTRY, figures
from pipeline.report.figures import MAX_PANELS
from pipeline.report.registry import ReportData

from .report_data import folds, rows

REG = {it.name: it for it in REGISTRY}


def grid_axes(datasets=("a", "b"), Cs=(0.1, 1.0), rbf_Cs=(1.0,)):
    """dcd and liblinear on linear problems over Cs, smo and libsvm on rbf problems over rbf_Cs,
    on each dataset. Problem p's traces end at (P - f*)/|f*| = 10^-(p+2): a panel showing any
    other problem's line would show another value."""
    specs, level = [], {}
    for ds in datasets:
        for C in Cs:
            level[(ds, "linear", C)] = len(level)
            for entry in ("dcd", "liblinear"):
                specs += folds({"dataset": ds, "solver_entry": entry, "solver": entry, "C": C,
                                "loss": "squared_hinge", "f_star": 10.0 + len(level)}, 2)
        for C in rbf_Cs:
            level[(ds, "rbf", C)] = len(level)
            for entry in ("smo", "libsvm"):
                specs += folds({"dataset": ds, "solver_entry": entry, "solver": entry, "C": C, "kernel": "rbf",
                                "gamma": 0.5, "intercept": "free", "f_star": 10.0 + len(level)}, 2)
    res = rows(specs)
    tr = []
    for r in res.itertuples(index=False):
        eps = 10.0 ** -(level[(r.dataset, r.kernel, r.C)] + 2)
        for k in (1, 2, 3):
            tr.append({"key": r.key, "iteration": k, "time_s": 1e-3 * k, "primal": r.f_star * (1 + eps * (4 - k)),
                       "dual": np.nan, "gap": np.nan})
    return ReportData(res, pd.DataFrame(tr), name="t"), level


def _axes(out):
    figs = out if isinstance(out, list) else [out]
    return figs, [ax for fig in figs for ax in fig.axes if ax.get_visible()]


def test_one_problem_per_panel_every_problem_once_in_grid_order():
    data, level = grid_axes()
    figs, axes = _axes(figures.suboptimality_vs_time(data))
    titles = [ax.get_title() for ax in axes]
    # Grid order: dataset, then kernel, then C along a row; the titles name what differs.
    assert titles == ["a\nkernel=linear C=0.1", "a\nkernel=linear C=1", "a\nkernel=rbf C=1",
                      "b\nkernel=linear C=0.1", "b\nkernel=linear C=1", "b\nkernel=rbf C=1"]
    # What comes with each kernel is said once, above the figure.
    assert "kernel=rbf: loss=hinge intercept=free gamma=0.5" in figs[0]._suptitle.get_text()
    for ax, (ds, kernel, C) in zip(axes, level):
        eps = 10.0 ** -(level[(ds, kernel, C)] + 2)
        lines = [line for line in ax.get_lines() if line.get_label() != "f* certainty"]
        # Every line of the panel ends at its own problem's value: no other problem shares it.
        assert {line.get_label() for line in lines} == ({"dcd", "liblinear"} if kernel == "linear" else {"smo", "libsvm"})
        for line in lines:
            assert np.isclose(line.get_ydata()[-1], eps, rtol=1e-6), (ax.get_title(), line.get_label())
    # A solver is drawn alike in every panel, and the legend names each solver once.
    colour = {}
    for ax in axes:
        for line in ax.get_lines():
            assert colour.setdefault(line.get_label(), line.get_color()) == line.get_color()
    assert sorted(t.get_text() for t in figs[0].legends[0].get_texts()) == ["dcd", "liblinear", "libsvm", "smo"]
    for fig in figs:
        plt.close(fig)


def test_a_large_grid_pages_into_several_figures_and_drops_no_problem():
    Cs = tuple(10.0 ** k for k in range(-3, 4))                  # 7 linear + 1 rbf problems per dataset
    data, level = grid_axes(Cs=Cs)
    assert len(level) == 16 > MAX_PANELS
    figs, axes = _axes(figures.suboptimality_vs_iterations(data))
    assert len(figs) == 2 and [len([a for a in f.axes if a.get_visible()]) for f in figs] == [MAX_PANELS, 4]
    assert len({ax.get_title() for ax in axes}) == 16
    assert "problems 1-12 of 16 (figure 1 of 2)" in figs[0]._suptitle.get_text()
    # Every page lists the solvers in one order (page 2 starts with b's rbf panel: smo first drawn there).
    legends = [[t.get_text() for t in fig.legends[0].get_texts()] for fig in figs]
    assert legends[1] == [x for x in legends[0] if x in legends[1]]
    for fig in figs:
        plt.close(fig)


def test_time_vs_n_joins_only_the_sizes_of_one_dataset_and_keeps_every_solver():
    specs = []
    for ds, n in (("small", 100), ("large", 1000)):
        for entry in ("dcd", "libsvm"):
            specs += folds({"dataset": ds, "solver_entry": entry, "n_train": n, "fit_time_s": n * 1e-5}, 2)
    # One dataset at two max_rows (two jobs of a multirun): its sizes make a line.
    for job, n in (("0", 200), ("1", 400)):
        specs += folds({"dataset": "grown", "solver_entry": "dcd", "n_train": n, "fit_time_s": n * 1e-5, "job": job}, 2)
    res = rows(specs)
    res["job"] = res["job"].fillna("")
    fig = figures.time_vs_n(ReportData(res, pd.DataFrame(), name="t"))
    (ax,) = [a for a in fig.axes if a.get_visible()]
    drawn = [(line.get_label(), len(line.get_xdata()), line.get_linestyle()) for line in ax.get_lines()]
    joined = [d for d in drawn if d[2] != "None"]
    # The only line through two points is "grown" at its two sizes; small and large are points.
    assert [(n, sorted(line.get_xdata())) for line in ax.get_lines() if line.get_linestyle() != "None"
            for n in [len(line.get_xdata())]] == [(2, [200.0, 400.0])], drawn
    assert len(joined) == 1
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"dcd", "libsvm"}
    assert any("small" in t.get_text() for t in ax.get_xticklabels())     # each point's dataset is named
    plt.close(fig)


def test_w_change_ticks_over_a_few_passes_are_plain_numbers():
    res = rows(folds({"solver_entry": "dcd"}, 2))
    tr = pd.DataFrame([{"key": k, "iteration": i, "time_s": 1e-3 * i, "w_change": 1.0 / i}
                       for k in res["key"] for i in range(1, 6)])
    fig = figures.w_change_per_pass(ReportData(res, tr, name="t"))
    fig.canvas.draw()
    (ax,) = [a for a in fig.axes if a.get_visible()]
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels and all("times" not in x and "^" not in x for x in labels), labels   # no 3x10^0 4x10^0
    assert [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()] == []
    plt.close(fig)


def test_the_gap_figure_is_drawn_without_f_star_for_a_single_solver_sweep():
    """dcd alone (no reference, no f*): the relative duality gap (P - D)/|P| of its own iterates,
    a panel per C; a solver that certifies no gap (the linear hinge) draws no line."""
    res = rows(folds({"C": 0.1, "f_star": np.nan}, 2) + folds({"C": 1.0, "f_star": np.nan}, 2)
               + folds({"solver_entry": "pegasos", "C": 1.0, "f_star": np.nan}, 2))
    tr = pd.DataFrame([{"key": r.key, "iteration": k, "time_s": 1e-3 * k, "primal": 4.0,
                        "gap": np.nan if r.solver_entry == "pegasos" else 4.0 * 10.0 ** -k}
                       for r in res.itertuples() for k in (1, 2, 3)])
    data = ReportData(res, tr, name="t")
    assert REG["suboptimality_vs_time"].missing(data) == "results have no `f_star`"
    for fn in (figures.gap_vs_time, figures.gap_vs_iterations):
        figs, axes = _axes(fn(data))
        assert [ax.get_title() for ax in axes] == ["toy\nC=0.1", "toy\nC=1"]
        for ax in axes:
            (line,) = ax.get_lines()
            assert line.get_label() == "dcd" and np.isclose(line.get_ydata()[-1], 1e-3)
        plt.close(figs[0])


def test_skipped_items_are_listed_once_with_what_to_set(tmp_path):
    import pipeline.report.build as build
    res = rows(folds({"f_star": np.nan}, 2))
    tr = pd.DataFrame([{"key": k, "iteration": 1, "time_s": 1e-3, "primal": 1.0, "gap": 1e-3} for k in res["key"]])
    secs = build.sections(ReportData(res, tr, name="t"), tmp_path / "figures", formats=("png",))
    md = build.to_markdown("t", [], secs, tmp_path)
    page = build.to_html("t", [], secs)
    assert md.count("run.reference=true") == 1 and page.count("run.reference=true") == 1
    line = next(x for x in md.splitlines() if "run.reference=true" in x)
    for title in ("Suboptimality against time", "Suboptimality against iterations", "Time to target suboptimality"):
        assert title in line
    assert "_Skipped" not in md and "## Suboptimality against time" not in md
    assert "## Relative duality gap against time" in md       # the convergence figure without f*


def test_a_fold_that_starts_late_does_not_make_the_median_rise():
    """Every fold decreases, so their median must not rise: a fold whose first point comes late
    (a slow first pass) counts from the start at its first value, not as absent until it joins."""
    from pipeline.report.figures import fold_band
    early = (np.array([1e-3, 2e-3]), np.array([1.0, 1e-6]))
    late = (np.array([5e-3, 6e-3]), np.array([1.0, 1e-6]))
    grid, med, low, high = fold_band([early, late], log_x=True)
    assert np.all(np.diff(med) <= 0), med
    assert med[-1] == pytest.approx(1e-6) and np.all(low <= med) and np.all(med <= high)


def _label_overlaps(fig):
    """Pairs of tick labels of one axis whose drawn extents (matplotlib's own, after the draw)
    intersect: the labels a reader sees run together. save_figure closed the figure: it is drawn
    again, as saved (same size, locators and formatters), on a canvas of its own."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    bad = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in axis.get_ticklabels()
                     if t.get_visible() and t.get_text()]
            lo, hi = sorted(axis.get_view_interval())
            locs = [v for v in axis.get_majorticklocs() if lo <= v <= hi]
            boxes = boxes[:len(locs)] if len(boxes) >= len(locs) else boxes
            for (ta, a), (tb, b) in zip(boxes, boxes[1:]):
                if a.overlaps(b):
                    bad.append((ax.get_title(), ta, tb))
    return bad


@pytest.mark.parametrize("span, width", [(0.0012, 1.2), (2e-4, 0.9), (1500.0, 1.0), (1e6, 1.1)])
def test_tick_labels_of_a_saved_figure_never_overlap(tmp_path, span, width):
    """A narrow panel of a linear time axis (0.0005 beside 0.001 ran together) and of a log axis:
    after save_figure draws it, no two tick labels' extents intersect, on either axis."""
    from pipeline.report.build import save_figure
    fig, (ax,) = figures.panel_grid(1, width=width, height=1.0)
    x = np.linspace(0, span, 50)
    ax.plot(x, 1 + x / span)
    fig2, (ax2,) = figures.panel_grid(1, width=width, height=1.2)
    ax2.plot(np.geomspace(1e-6, 1e2, 30), np.geomspace(1e-9, 1, 30))
    figures.decorate(ax2, "log", "s", "P", 0, logx=True, logy=True)
    figures.log_ticks(ax2)
    # A time axis over less than a decade: log_ticks labels 1, 1.5, 2, 3, 4, 5, 7 x 10^k plainly
    # (0.0004 0.0005 0.0007 0.001), wider than the panel has room for.
    fig3, (ax3,) = figures.panel_grid(1, width=1.6, height=1.0)
    ax3.plot([4e-4 * (1 + span / 1e7), 1.3e-3], [1.0, 0.1])
    figures.decorate(ax3, "short", "s", "P", 0, logx=True, logy=True)
    figures.log_ticks(ax3)
    for f, name in ((fig, "lin"), (fig2, "log"), (fig3, "short")):
        save_figure(f, tmp_path, name)
        assert _label_overlaps(f) == [], name
        assert len([t for t in f.axes[0].get_xticklabels() if t.get_text()]) >= 2     # still labelled


def test_report_figures_tick_labels_never_overlap(tmp_path):
    """Every convergence figure of a grid, saved as the report saves it: no overlapping tick labels."""
    from pipeline.report.build import save_figures
    data, _ = grid_axes(datasets=("a", "b"), Cs=(0.1, 1.0), rbf_Cs=(1.0,))
    for name in ("suboptimality_vs_time", "time_vs_n"):
        try:
            value = REG[name].fn(data)
        except Exception as exc:          # noqa: BLE001  a figure this grid cannot draw is not this test's
            if type(exc).__name__ == "Skip":
                continue
            raise
        figs = value if isinstance(value, list) else [value]
        save_figures(value, tmp_path, name)
        for f in figs:
            assert _label_overlaps(f) == [], name
