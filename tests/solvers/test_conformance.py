"""`solvers.testing`: every built-in solver passes `check_solver`'s checks, and deliberately broken
solvers (registered here only) are caught, each by the check and with the message that names
what is wrong."""
import time
import warnings

import numpy as np
import pytest

import solvers
from solvers import Budget, Fit, registry
from solvers.dcd import fit_dcd
from solvers.registry import SolverSpec
from solvers.testing import CHECKS, SolverCheckError, check_solver, solver_checks

NAMES = [n for n in solvers.solver_names() if not n.startswith("_")]
# How close to f* a stochastic method's "converged" (sgd: SGDClassifier's loss-change test) or
# completed schedule (pegasos, with EXTRA's epochs) comes: test_common's REACHES, measured.
ACCURACY = {"pegasos": 0.03, "sgd": 0.05}
EXTRA = {"pegasos": {"epochs": 300}}


def _checks(name):
    return solver_checks(name, accuracy=ACCURACY.get(name, 1e-6), params=EXTRA.get(name))


@pytest.mark.parametrize("name, check_name, check",
                         [(n, c, fn) for n in NAMES for c, fn in _checks(n)],
                         ids=[f"{n}-{c}" for n in NAMES for c in CHECKS])
def test_builtin_solver_conforms(name, check_name, check):
    note = check()
    if note:
        # Only what the solver declares it cannot do, or a problem it solves before the limit.
        assert note.startswith("not exercised") or note.startswith("refused by name"), note


def test_solver_checks_are_cheap_to_list_and_cover_every_check():
    t = time.perf_counter()
    pairs = list(solver_checks("dcd"))
    assert time.perf_counter() - t < 0.05
    assert [c for c, _ in pairs] == list(CHECKS)


# ------------------------------------------------------------------ broken solvers
def _dcd_spec(name, fit, **kw):
    spec = solvers.get_solver("dcd")
    return SolverSpec(name=name, family="test", fit=fit, params=spec.params, losses=spec.losses,
                      intercepts=spec.intercepts, warm_start=True, default_tol=spec.default_tol,
                      warmup=lambda: None, **kw)


def _wrong_dual(problem, *, budget, recorder, warm_start=None, **params):
    """dcd with its dual's quadratic term added instead of subtracted (D = e'a + 1/2 ||w||^2), and
    no alpha returned to recompute it from."""
    res = fit_dcd(problem, budget=budget, recorder=recorder, warm_start=warm_start, **params)
    res.dual = res.dual + float(res.w @ res.w)
    res.gap = res.primal - res.dual
    res.alpha = None
    return res


def _false_converged(problem, *, budget, recorder, warm_start=None, **params):
    """One pass of dcd, reported as converged."""
    res = fit_dcd(problem, budget=Budget(max_iter=1, tol=budget.tol), recorder=recorder,
                  warm_start=warm_start, **params)
    res.status = "converged"
    return res


def _no_time_limit(problem, *, budget, recorder, warm_start=None, **params):
    """dcd with the budget's time limit dropped, running its 10000 passes whatever the tolerance
    (so that on the check's 3000-row problem it runs 1-2 s, well past the 0.1 s limit, however
    fast the machine's passes are today)."""
    return fit_dcd(problem, budget=Budget(max_iter=budget.max_iter or 10000, tol=1e-300),
                   recorder=recorder, warm_start=warm_start, **params)


def _own_clock(problem, *, budget, recorder, warm_start=None, **params):
    """dcd timed with its own clock, trace evaluation included."""
    t = time.perf_counter()
    res = fit_dcd(problem, budget=budget, recorder=recorder, warm_start=warm_start, **params)
    res.fit_time_s = time.perf_counter() - t
    return res


@pytest.fixture
def broken(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_ORIGINS", dict(registry._ORIGINS))
    for name, fn in (("_wrong_dual", _wrong_dual), ("_false_converged", _false_converged),
                     ("_no_time_limit", _no_time_limit), ("_own_clock", _own_clock)):
        registry.register(_dcd_spec(name, fn))


def _run(name, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SolverCheckError) as err:
            dict(solver_checks(name))[check]()
    return str(err.value)


def test_a_wrong_dual_is_caught(broken):
    msg = _run("_wrong_dual", "certificates")
    assert msg.startswith("check_solver('_wrong_dual') [certificates]: reported dual D=")
    assert "exceeds the optimum" in msg and "not a lower bound" in msg


def test_a_false_converged_is_caught(broken):
    msg = _run("_false_converged", "converged")
    assert "[converged]: says converged at tol=1e-08 after 1 iterations" in msg
    assert "above f* (relative; accuracy 1e-06)" in msg


def test_an_ignored_time_limit_is_caught(broken):
    msg = _run("_no_time_limit", "time_limit")
    assert "[time_limit]: time_limit_s=0.1 ignored: status 'max_iter'" in msg


def test_trace_time_counted_as_solver_time_is_caught(broken):
    msg = _run("_own_clock", "trace")
    assert "[trace]: fit_time_s=" in msg and "includes the trace's evaluation time" in msg


def test_check_solver_lists_every_failed_check(broken):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SolverCheckError) as err:
            check_solver("_wrong_dual")
    msg = str(err.value)
    assert msg.startswith("3 of 10 checks failed:")
    assert "[certificates]" in msg and "[converged]" in msg and "[warm_start]" in msg


def test_an_unchecked_parameter_is_caught(monkeypatch):
    """With the declared ranges not enforced (Param.check passing every value through), the
    params check names the first value that was accepted."""
    from solvers.registry import Param

    def fit_zero(problem, *, budget, recorder, warm_start=None, shrinking=True):
        return Fit(b=0.0, status="max_iter", n_iter=1, primal=problem.C * problem.n_samples,
                   w=np.zeros(problem.n_features))

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.register(SolverSpec(name="_loose", family="test", fit=fit_zero, warmup=lambda: None,
                                 params={"shrinking": Param(True, "bool")}))
    assert dict(solver_checks("_loose"))["params"]() is None    # the declared range refuses: passes
    monkeypatch.setattr(Param, "check", lambda self, where, value, error=None: value)
    msg = _run("_loose", "params")
    assert "[params]: shrinking='maybe' was accepted; it must raise SolverError naming 'shrinking'" in msg
