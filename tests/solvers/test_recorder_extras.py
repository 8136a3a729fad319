"""Recorder's extra per-point quantities: notes from the solver and the caller's extras of the
current model, one dict per point, computed with the solver's clock paused."""
import time
from types import SimpleNamespace

import numpy as np

import solvers
from solvers.base import Recorder


def test_notes_and_extras_align_with_points_and_cost_no_solver_time():
    state = {"w": np.zeros(2)}

    def slow_extra(m):
        time.sleep(0.02)                     # an expensive test error, say
        return float(m.w.sum())

    rec = Recorder(per_decade=1, extras={"w_sum": slow_extra}).start()
    rec.model(lambda: SimpleNamespace(w=state["w"], alpha=None, b=0.0))
    for k in range(1, 21):
        state["w"] = state["w"] + 1.0
        if rec.due(k):
            rec.note(n_active=k)
            rec.record(k, lambda: (1.0, 0.0, 1.0))
    rec.note(ignored=1.0)                    # a note no point takes is dropped at the next start
    assert [p[0] for p in rec.points] == [1, 10]
    assert rec.extra_points == [{"n_active": 1.0, "w_sum": 2.0}, {"n_active": 10.0, "w_sum": 20.0}]
    assert rec.seconds() < 0.02              # two sleeps of 20 ms, none of it the solver's
    assert rec.start().extra_points == [] and rec._notes == {}


def test_fit_returns_the_extras_of_a_real_solver():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    rec = Recorder(extras={"train_error": lambda m: float(np.mean(np.sign(X @ m.w + m.b) != y))})
    fit = solvers.fit(solvers.Problem.build(X, y, C=1.0), "dcd", recorder=rec)
    assert len(fit.trace_extra) == len(fit.trace) > 1
    assert all("train_error" in e for e in fit.trace_extra)
    assert all("w_change" in e for e in fit.trace_extra[:-1])
