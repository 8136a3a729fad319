"""`solvers.fit`'s own mechanisms: the once-per-process warmup that keeps compilation out of
the solver's clock (issue 10)."""
import time

import numpy as np
import pytest

import solvers
from solvers import Fit, Problem, Recorder, fit, registry
from solvers.registry import SolverSpec


class LoggingRecorder(Recorder):
    def __init__(self, log):
        super().__init__(enabled=False)
        self.log = log

    def start(self):
        self.log.append("start")
        return super().start()


def _fake(name, log, warmup=None, first_call_s=0.0):
    """A solver that logs its calls; its first call on a tiny (warmup) problem sleeps
    ``first_call_s``, standing in for numba compiling its kernels."""
    def fit_fake(problem, *, budget, recorder, warm_start=None):
        if problem.n_samples <= 6 and not any(e[0] == "fit" and e[1] <= 6 for e in log if isinstance(e, tuple)):
            time.sleep(first_call_s)
        log.append(("fit", problem.n_samples, problem.loss, problem.intercept, problem.is_sparse))
        return Fit(b=0.0, status="converged", n_iter=1, primal=0.0, w=np.zeros(problem.n_features))
    return SolverSpec(name=name, family="test", fit=fit_fake, warmup=warmup)


@pytest.fixture
def fresh_registry(monkeypatch):
    monkeypatch.setattr(registry, "_WARM", set())
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def _problem(n=20):
    rng = np.random.default_rng(0)
    return Problem(rng.standard_normal((n, 3)), np.where(np.arange(n) % 2, 1.0, -1.0))


def test_declared_warmup_runs_once_per_process_per_solver_before_the_clock(fresh_registry):
    log = []
    registry.register(_fake("_a", log, warmup=lambda: log.append("warmup _a")))
    registry.register(_fake("_b", log, warmup=lambda: log.append("warmup _b")))
    p = _problem()
    for name in ("_a", "_a", "_b", "_a"):
        fit(p, name, recorder=LoggingRecorder(log))
    fits = [("fit", 20, "hinge", "none", False)]
    assert log == (["warmup _a", "start"] + fits + ["start"] + fits
                   + ["warmup _b", "start"] + fits + ["start"] + fits)


def test_default_warmup_fits_tiny_problems_of_every_declared_form_outside_fit_time(fresh_registry):
    log = []
    registry.register(_fake("_c", log, first_call_s=0.3))
    p = _problem()
    res = fit(p, "_c", recorder=LoggingRecorder(log))
    user = ("fit", 20, "hinge", "none", False)
    assert log[-2:] == ["start", user]
    warm = log[:-2]
    # Dense and CSR x losses x intercepts (x the one kernel), before the clock starts.
    assert sorted(warm) == sorted(("fit", 6, loss, icpt, sparse) for sparse in (False, True)
                                  for loss in ("hinge", "squared_hinge") for icpt in ("none", "regularized"))
    # The 0.3 s "compilation" happened in the warmup, not inside the timed fit.
    assert res.fit_time_s < 0.1
    log.clear()
    fit(p, "_c", recorder=LoggingRecorder(log))
    assert log == ["start", user]


def test_estimator_goes_through_the_same_warmup(fresh_registry):
    from solvers import SVMClassifier
    log = []
    registry.register(_fake("_d", log, warmup=lambda: log.append("warmup _d")))
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.arange(20) % 3    # multiclass: several binary fits, one warmup
    SVMClassifier(solver="_d", intercept="none").fit(X, y)
    assert log.count("warmup _d") == 1 and log[0] == "warmup _d"
    assert sum(isinstance(e, tuple) for e in log) == 3


def test_warm_all_warms_every_public_solver_once(fresh_registry, monkeypatch):
    """`make test` calls warm_all before the suite: every public solver's warmup, none twice,
    test-only solvers ("_x") left alone."""
    calls = []
    monkeypatch.setattr(registry, "_REGISTRY", {})
    for name in ("a1", "b2"):
        registry.register(_fake(name, [], warmup=lambda name=name: calls.append(name)))
    registry.register(_fake("_hidden", [], warmup=lambda: calls.append("_hidden")))
    assert registry.warm_all() == ["a1", "b2"]
    registry.warm_all()
    assert calls == ["a1", "b2"]


def _shifted_blobs():
    """Two blobs whose boundary misses the origin: a model without intercept needs a b."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(3.0, 1.0, (120, 2)), rng.normal(1.0, 1.0, (120, 2))])
    return X, np.r_[np.ones(120), -np.ones(120)]


@pytest.mark.parametrize("solver, loss", [("gd", "squared_hinge"), ("newton", "squared_hinge"),
                                          ("pegasos", "hinge")])
def test_basis_intercept_is_set_after_solving_without_one(solver, loss):
    """duros_katzman's basis: the solver solves the problem without intercept (same w, same
    certificates), then b = -mean(w.x_i) over the margin violators y_i w.x_i < 1."""
    X, y = _shifted_blobs()
    none = solvers.fit(Problem(X, y, C=1.0, loss=loss, intercept="none"), solver)
    basis = solvers.fit(Problem(X, y, C=1.0, loss=loss, intercept="basis"), solver)
    np.testing.assert_array_equal(basis.w, none.w)
    assert basis.primal == none.primal
    f = X @ none.w
    viol = y * f < 1
    assert basis.b == pytest.approx(-f[viol].mean(), rel=1e-12)
    assert basis.info["basis_n_violators"] == viol.sum() > 0
    # It is what makes the shifted boundary reachable: accuracy rises over no intercept.
    assert np.mean(np.sign(f + basis.b) == y) > np.mean(np.sign(f) == y) + 0.05


def test_basis_intercept_is_refused_by_solvers_that_do_not_declare_it():
    X, y = _shifted_blobs()
    with pytest.raises(solvers.SolverError, match="intercept='basis'"):
        solvers.fit(Problem(X, y, intercept="basis"), "dcd")


def test_basis_intercept_reaches_the_traced_extras():
    """The test error traced along a basis run is that of the model with its basis b: at the
    closing point it is the returned model's."""
    X, y = _shifted_blobs()
    pr = Problem(X, y, C=1.0, loss="squared_hinge", intercept="basis")
    err = lambda m: float(np.mean(np.sign(X @ m.w + m.b) != y))   # noqa: E731
    rec = Recorder(max_overhead=None, extras={"err": err})
    r = solvers.fit(pr, "gd", recorder=rec)
    assert r.trace_extra[-1]["err"] == err(r) < float(np.mean(np.sign(X @ r.w) != y))


def test_two_processes_never_warm_one_solver_at_once(tmp_path):
    """The warm-up holds a lock per solver (`registry.warm`): a second process that reaches a
    solver another one is compiling waits for it and then loads numba's cache, instead of
    compiling the same kernels at the same time. Two processes warm one solver whose warm-up
    takes 0.5 s: their warm-ups do not overlap."""
    import subprocess
    import sys
    import textwrap

    log = tmp_path / "warm.log"
    code = textwrap.dedent(f"""
        import os, time
        from solvers import registry
        from solvers.registry import SolverSpec

        def warmup():
            start = time.time()
            time.sleep(0.5)
            with open({str(log)!r}, "a") as fh:
                fh.write(f"{{start}} {{time.time()}}\\n")

        spec = SolverSpec(name="_locked_{tmp_path.name}", family="test", fit=None, warmup=warmup)
        registry.warm(spec)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    (a0, a1), (b0, b1) = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert a1 <= b0, ((a0, a1), (b0, b1))


def test_uncompiled_names_a_solver_whose_kernels_numbas_cache_lacks(fresh_registry, tmp_path, monkeypatch):
    """What the warm-up's line names as compiled now: a solver whose driver's module has cached
    numba kernels but no index file in its __pycache__ (nor under NUMBA_CACHE_DIR); once one is
    there, none; a solver without numba kernels never."""
    import importlib.util

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "kernels_mod.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef step(x):\n    return x + 1\n\n"
        "def fit_mod(problem, *, budget, recorder, warm_start=None):\n    raise NotImplementedError\n")
    spec_ = importlib.util.spec_from_file_location("kernels_mod", tmp_path / "kernels_mod.py")
    module = importlib.util.module_from_spec(spec_)
    monkeypatch.setitem(__import__("sys").modules, "kernels_mod", module)
    spec_.loader.exec_module(module)
    registry.register(SolverSpec(name="_kernels_mod", family="test", fit=module.fit_mod))
    assert registry.uncompiled(["_kernels_mod", "liblinear"]) == ["_kernels_mod"]
    (tmp_path / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "__pycache__" / "kernels_mod.step-3.py311.nbi").write_bytes(b"")
    assert registry.uncompiled(["_kernels_mod"]) == []


def test_uncompiled_reads_an_imported_kernels_index_where_it_is_defined(fresh_registry, tmp_path, monkeypatch):
    """A driver whose kernels are another module's (cocoa runs dcd's): compiled once the defining
    module's index is there, whatever the driver's own __pycache__ holds. Named uncompiled
    before, whose index the driver's folder can never have (a first-run line said every run)."""
    import importlib.util
    import sys

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "base_kernels.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef step(x):\n    return x + 1\n")
    (tmp_path / "borrower.py").write_text(
        "from base_kernels import step\n\n"
        "def fit_b(problem, *, budget, recorder, warm_start=None):\n    raise NotImplementedError\n")
    for name, path in (("base_kernels", tmp_path / "lib" / "base_kernels.py"), ("borrower", tmp_path / "borrower.py")):
        spec_ = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec_)
        monkeypatch.setitem(sys.modules, name, module)
        spec_.loader.exec_module(module)
    registry.register(SolverSpec(name="_borrower", family="test", fit=sys.modules["borrower"].fit_b))
    assert registry.uncompiled(["_borrower"]) == ["_borrower"]
    (tmp_path / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "__pycache__" / "borrower.step-3.py311.nbi").write_bytes(b"")   # not where it is defined
    assert registry.uncompiled(["_borrower"]) == ["_borrower"]
    (tmp_path / "lib" / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "lib" / "__pycache__" / "base_kernels.step-3.py311.nbi").write_bytes(b"")
    assert registry.uncompiled(["_borrower"]) == []
