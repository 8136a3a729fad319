"""What a report costs around its figures, cut without changing what it draws:

- a convergence figure's pages are drawn on kept figures of their layout (axes and ticks made
  once per process), cleared between figures, the PNG the same bytes as on a new figure;
- a tick locator thins its ticks once per draw, and again when the axis changes;
- the watcher reads the report's memory from smaps only when due or when the cheap bound
  passes the limit (an outgrown report is still ended at the next tick);
- the timing line gives the report's CPU seconds beside its wall seconds.
"""
import hashlib

import numpy as np
import pytest

from pipeline.report import figures
from pipeline.report.build import MemoryWatch, close_all, save_figure, sections
from pipeline.report.registry import ReportData

from .report_data import default_run, traces_for


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _data():
    res = default_run()
    return ReportData(res, traces_for(res), name="t")


def test_a_kept_page_is_reused_cleared_and_draws_the_same_png(tmp_path, monkeypatch):
    data = _data()
    close_all()
    first = figures.suboptimality_vs_time(data)
    axes = list(first.axes)
    save_figure(first, tmp_path, "first")
    # The next figure of the layout: the same figure and axes, drawn again (their ticks kept).
    again = figures.gap_vs_time(data)
    assert again is first and list(again.axes) == axes
    save_figure(again, tmp_path / "kept", "gap")
    # The same figure drawn on a new one (no figure kept): the same bytes.
    monkeypatch.setattr(figures, "page_figure", lambda *layout: figures._panels(*layout))
    save_figure(figures.gap_vs_time(data), tmp_path / "new", "gap")
    assert _digest(tmp_path / "kept" / "gap.png") == _digest(tmp_path / "new" / "gap.png")
    # A report's figures over: every kept page is empty (nothing drawn held), pyplot holds none.
    close_all()
    assert not any(ax.lines or ax.collections or ax.get_title() for ax in first.axes)
    assert not first.legends and not first.texts
    import matplotlib.pyplot as plt
    assert plt.get_fignums() == []


def test_a_page_still_drawing_is_not_handed_out_again():
    close_all()
    a, _ = figures.page_figure(3, 4.2, 3.3, 4)
    b, _ = figures.page_figure(3, 4.2, 3.3, 4)
    assert a is not b
    figures.saved(a)
    c, _ = figures.page_figure(3, 4.2, 3.3, 4)
    assert c is a
    close_all()


def test_a_report_of_a_small_run_leaves_its_kept_pages_empty(tmp_path):
    secs = sections(_data(), tmp_path / "figures", processes=1)
    assert any(s.name == "suboptimality_vs_time" and s.figures for s in secs)
    kept = [entry[0] for layout in figures._KEPT.values() for entry in layout]
    assert kept and not any(ax.lines or ax.collections for fig in kept for ax in fig.axes)


def test_ticks_are_thinned_once_a_draw_and_again_when_the_axis_changes(tmp_path, monkeypatch):
    fig, (ax,) = figures._panels(1, width=1.6, height=1.2)
    ax.plot([4e-4, 1.3e-3], [1.0, 0.1])
    figures._decorate(ax, "short", "s", "P", 0, logx=True, logy=True)
    figures._log_ticks(ax)
    figures.space_ticks(fig)
    cls = type(ax.xaxis.get_major_locator())
    calls = []
    real = cls._spaced
    monkeypatch.setattr(cls, "_spaced", lambda self, *a: calls.append(self.axis.axis_name) or real(self, *a))
    fig.canvas.draw()
    # Each axis is asked for its ticks several times a draw (ticks, label place, offset text).
    assert sorted(calls) == ["x", "y"]
    before = list(ax.xaxis.get_majorticklocs())
    ax.set_xlim(3e-4, 2e-3)
    fig.canvas.draw()
    assert sorted(calls) == ["x", "x", "y"]
    assert list(ax.xaxis.get_majorticklocs()) != before
    close_all()


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _watch(limit=1000.0, bound=500.0, own=300.0, read_s=0.0):
    clock, reads = _Clock(), []

    def read(pid):
        reads.append(clock.t)
        clock.t += read_s
        return own
    return MemoryWatch(1, limit, clock=clock, own=read, bound=lambda pid: bound), clock, reads


def test_the_watch_reads_smaps_for_the_peak_every_half_second():
    watch, clock, reads = _watch()
    for tick in range(16):                  # 4 s of the watcher's 0.25 s ticks
        assert watch.over() is None
        clock.t += 0.25
    assert reads == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5] and watch.peak == 300.0


def test_a_slow_read_is_made_at_most_a_tenth_of_the_time():
    watch, clock, reads = _watch(read_s=0.2)
    for tick in range(16):
        watch.over()
        clock.t += 0.25
    # A read of 0.2 s: the next one 1.8 s after it ends (ticks at 0.45, 0.7, ...: the first at 2.2).
    assert reads == pytest.approx([0.0, 2.2])


def test_past_the_cheap_bound_the_watch_reads_at_every_tick_and_ends_an_outgrown_report():
    watch, clock, reads = _watch(bound=1500.0, own=900.0)
    for tick in range(4):
        assert watch.over() is None
        clock.t += 0.25
    assert len(reads) == 4
    over, clock, reads = _watch(bound=1500.0, own=1200.0)
    assert over.over() == 1200.0


def test_the_timing_line_gives_the_reports_cpu_seconds():
    import time
    from pipeline.run import Timing
    t = Timing(time.perf_counter())
    t.mark("tables")
    t.mark("report")
    line = t.line(report_cpu=3.5)
    assert ", report 0.0 s (CPU 3.5 s in its processes);" in line
    assert "(CPU" not in Timing(time.perf_counter()).line()


def test_a_bounded_report_says_its_cpu_seconds(tmp_path):
    from pipeline.report.build import build_bounded
    res = default_run()
    run = tmp_path / "run"
    run.mkdir()
    res.to_parquet(run / "results.parquet", index=False)
    traces_for(res).to_parquet(run / "traces.parquet", index=False)
    _, info = build_bounded(run, figures=False)
    assert info["cpu_s"] > 0 and np.isfinite(info["cpu_s"])
