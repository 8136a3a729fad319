"""The `Recorder`'s own mechanisms, on an injected clock (deterministic): the log-spaced
schedule and the budget that keeps trace recording within a share of the solver's time."""
import math

import pytest

from solvers import Recorder


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _run(rec, clock, n_iter, step_s, point_s, chunk=1):
    """A solver loop: each iteration costs step_s, each trace point point_s (a full objective);
    the due test runs every `chunk` iterations (a driver running compiled chunks)."""
    calls = []

    def point():
        calls.append(len(calls))
        clock.t += point_s
        return 1.0, math.nan, math.nan

    rec.start()
    for k in range(chunk, n_iter + 1, chunk):
        clock.t += step_s * chunk
        if rec.due(k):
            rec.record(k, point)
    before_close = rec.overhead_s()
    fit_s = rec.close(n_iter, point)
    return calls, before_close, fit_s


def _grid(n_iter, per_decade=10):
    """The schedule's iterations without a budget (1, 2, ..., 10, 13, 16, ...)."""
    rec = Recorder(per_decade=per_decade, max_overhead=None, clock=FakeClock())
    _run(rec, rec.clock, n_iter, 0.0, 0.0)
    return [p[0] for p in rec.points]


def test_cheap_points_follow_the_log_schedule():
    clock = FakeClock()
    rec = Recorder(clock=clock)
    _run(rec, clock, 10_000, step_s=1e-3, point_s=1e-6)
    ks = [p[0] for p in rec.points]
    assert ks == _grid(10_000) and ks[:4] == [1, 2, 3, 4] and ks[-1] == 10_000


def test_expensive_points_are_deferred_to_stay_within_the_budget():
    # Issue 10's case: a point costs 4000 iterations (a pass over the data against one row's
    # step), so the 10-per-decade schedule alone would spend 8% of the solver's time tracing.
    n, step_s, point_s, chunk = 2_000_000, 5e-7, 2e-3, 100
    unbudgeted = Recorder(max_overhead=None, clock=FakeClock())
    _run(unbudgeted, unbudgeted.clock, n, step_s, point_s, chunk)
    assert unbudgeted.overhead_s() > 0.05 * n * step_s

    clock = FakeClock()
    rec = Recorder(clock=clock)
    calls, before_close, fit_s = _run(rec, clock, n, step_s, point_s, chunk)
    assert fit_s == pytest.approx(n * step_s)          # the recorder's time is not the solver's
    # Within 5% of the solver's seconds (the first point, whose cost is unknown until taken,
    # is the one allowance), and the closing point is always kept.
    assert before_close <= 0.05 * n * step_s + 1e-12
    ks = [p[0] for p in rec.points]
    assert ks[0] == chunk and ks[-1] == n
    # Deferred, not dropped: points keep coming to the end, each a due iteration or later,
    # as the solver's growing time affords them.
    assert len(ks) > 10 and ks[-2] > n // 2
    assert all(b > a for a, b in zip(ks, ks[1:]))
    assert len(ks) < len(unbudgeted.points)
    # Every point records the solver's seconds at its iteration (trace time excludes the recorder).
    for k, s, *_ in rec.points[:-1]:
        assert s == pytest.approx(k * step_s)


def test_budget_is_a_share_of_solver_time_and_none_records_every_due_point():
    n, step_s, point_s = 20_000, 1e-5, 2e-3
    counts = {}
    for share in (None, 0.5, 0.05, 0.01):
        clock = FakeClock()
        rec = Recorder(max_overhead=share, clock=clock)
        _, before_close, _ = _run(rec, clock, n, step_s, point_s)
        counts[share] = len(rec.points)
        if share is not None:
            assert before_close <= max(share * n * step_s, point_s) + 1e-12
    assert counts[None] == len(_grid(n)) + (0 if _grid(n)[-1] == n else 1)
    assert counts[None] > counts[0.5] > counts[0.05] > counts[0.01] >= 2
