"""Performance profiles (Dolan and Moré 2002) and data profiles (Moré and Wild 2009) on a case
computed by hand: three solvers, four problems, known times to the target."""
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from pipeline.report import profiles
from pipeline.report.registry import ReportData

from .report_data import folds, rows

INF = math.inf
# Seconds (x 1e-3) and iterations to the target of solvers A, B, C on problems C = 1, 2, 3, 4.
TIMES = {1.0: {"A": 1, "B": 2, "C": 4}, 2.0: {"A": 3, "B": 1, "C": INF},
         3.0: {"A": 2, "B": 2, "C": 1}, 4.0: {"A": INF, "B": INF, "C": INF}}
# By hand: r = t / min_s t per problem; rho_s(tau) = share of the 4 problems with r <= tau.
#   problem 1: A 1, B 2, C 4;  problem 2: A 3, B 1, C inf;  problem 3: A 2, B 2, C 1;  problem 4: all inf.
RHO = {1: {"A": 0.25, "B": 0.25, "C": 0.25}, 2: {"A": 0.5, "B": 0.75, "C": 0.25},
       3: {"A": 0.75, "B": 0.75, "C": 0.25}, 4: {"A": 0.75, "B": 0.75, "C": 0.5}}
# d_s(kappa): share of problems solved within kappa passes (iterations = the times' numbers; the
# three solvers are dcd, liblinear and sgd, whose iterations are passes over the data).
DATA = {1: {"A": 0.25, "B": 0.25, "C": 0.25}, 2: {"A": 0.5, "B": 0.75, "C": 0.25},
        3: {"A": 0.75, "B": 0.75, "C": 0.25}, 4: {"A": 0.75, "B": 0.75, "C": 0.5}}


PASSING = {"A": "dcd", "B": "liblinear", "C": "sgd"}


def _case():
    specs = [{"solver_entry": s, "solver": PASSING[s], "C": C, "f_star": 10.0} for C, per in TIMES.items() for s in per]
    res = rows([f for s in specs for f in folds(s, 1)])
    tr = []
    for r in res.itertuples(index=False):
        t = TIMES[r.C][r.solver_entry]
        points = [(0, 1e-4, 1.0)] + ([] if t == INF else [(t, t * 1e-3, 1e-4)])   # (iteration, s, rel)
        for it, sec, rel in points:
            P = r.f_star * (1 + rel)
            tr.append({"key": r.key, "iteration": it, "time_s": sec, "primal": P, "gap": P - r.f_star})
    return ReportData(res, pd.DataFrame(tr), name="t")


def test_ratios_and_fractions_by_hand():
    t = pd.DataFrame(TIMES).T.astype(float)
    r = profiles.performance_ratios(t)
    assert r.loc[1.0].tolist() == [1, 2, 4] and r.loc[2.0].tolist() == [3, 1, INF]
    assert np.isinf(r.loc[4.0]).all()                   # solved by none: counts against every solver
    rho = profiles.fraction_within(r, [1, 2, 3, 4])
    assert rho.to_dict("index") == RHO


def _at(line, x):
    """A step line's value at x (where='post': the value of the last step at or before x)."""
    xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    return ys[np.searchsorted(xs, x, side="right") - 1]


@pytest.mark.parametrize("fn, expect", [(profiles.performance_profile, RHO), (profiles.performance_profile_gap, RHO),
                                        (profiles.data_profile, DATA)])
def test_profile_figures_draw_the_hand_computed_curves(fn, expect):
    fig = fn(_case())
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert ax.get_title() == "4 problems\nkernel=linear loss=hinge intercept=regularized"
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"A", "B", "C"}
    for x, per in expect.items():
        for s, frac in per.items():
            assert _at(lines[s], x) == pytest.approx(frac), (fn.__name__, s, x)
    plt.close(fig)


def test_problems_of_other_solvers_are_another_profile():
    """A kernel problem run by smo and libsvm is not a failure of the linear solvers: a panel of its own."""
    data = _case()
    extra = rows([f for s in ("smo", "libsvm") for f in folds({"solver_entry": s, "kernel": "rbf", "gamma": 1.0,
                                                                  "C": 1.0, "f_star": 10.0}, 1)])
    extra["key"] = ["x0", "x1"]
    tr = pd.DataFrame([{"key": k, "iteration": 1, "time_s": 1e-3, "primal": 10.0, "gap": 0.0} for k in extra["key"]])
    data = ReportData(pd.concat([data.results, extra], ignore_index=True), pd.concat([data.traces, tr]), name="t")
    fig = profiles.performance_profile(data)
    titles = sorted(a.get_title() for a in fig.axes if a.get_visible())
    assert titles == ["1 problem\nkernel=rbf loss=hinge intercept=regularized",
                      "4 problems\nkernel=linear loss=hinge intercept=regularized"]
    plt.close(fig)


def test_profiles_state_their_target():
    """A profile means nothing without its target: the heading names the measure and the tolerance."""
    for fn, text in ((profiles.performance_profile, "Target: (P - f*)/|f*| <= 0.001"),
                     (profiles.performance_profile_gap, "Target: (P - D)/|P| <= 0.001"),
                     (profiles.data_profile, "Target: (P - f*)/|f*| <= 0.001")):
        fig = fn(_case())
        assert fig._suptitle.get_text().startswith(text), fn.__name__
        plt.close(fig)


def test_data_profile_counts_passes_and_names_solvers_that_do_not():
    """smo's iterations are pair updates, not passes: on the data profile it is left out and named,
    never drawn in its own unit beside the passes of the others (whose curves stay the hand-computed
    ones); liblinear's primal Newton steps are not passes either."""
    data = _case()
    extra = rows([f for C in TIMES for f in folds({"solver_entry": "smo", "solver": "smo", "C": C, "f_star": 10.0}, 1)])
    extra["key"] = [f"s{i}" for i in range(len(extra))]
    # smo "solves" every problem at iteration 1: drawn in its own unit it would lead the profile.
    tr = pd.DataFrame([{"key": k, "iteration": it, "time_s": 1e-3 * (it + 1), "primal": P, "gap": P - 10.0}
                       for k in extra["key"] for it, P in ((0, 20.0), (1, 10.0))])
    data = ReportData(pd.concat([data.results, extra], ignore_index=True), pd.concat([data.traces, tr]), name="t")
    fig = profiles.data_profile(data)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"A", "B", "C"}
    for x, per in DATA.items():
        for s, frac in per.items():
            assert _at(lines[s], x) == pytest.approx(frac)
    assert "Left out: smo (their iterations are not passes" in fig._suptitle.get_text()
    assert "passes" in ax.get_xlabel()
    plt.close(fig)
    res = data.results.copy()
    res["param_dual"] = [False if e == "B" else None for e in res["solver_entry"]]
    # The rule is SQL the engine evaluates over the run's columns.
    eng = ReportData(res, pd.DataFrame()).engine
    got = eng.df(f"SELECT solver_entry, bool_and({profiles.counts_passes(eng.types('results'))}) AS ok "
                 f"FROM results GROUP BY solver_entry ORDER BY solver_entry")
    assert list(got["ok"]) == [True, False, True, False]
