"""Solvers by name, their parameters declared as data, and `fit`, the functional core.

Each solver module ends with ``register(SolverSpec(...))``. Its parameters are declared next to
its driver as `Param`s and checked here by one piece of code, so that every bad value, from the
estimator or from a sweep, gets the same kind of message naming the solver, the key and the value.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from .base import Budget, Fit, Recorder
from .objectives import basis_intercept
from .problem import Problem


class SolverError(ValueError):
    """A solver name, parameter or problem setting that the solver cannot take."""


_MISSING = object()


@dataclass(frozen=True)
class Param:
    """One solver parameter: default, type and allowed range or options.

    kind: "int", "float", "bool", "str" or "any". ``low``/``high`` bound numbers
    (``open_low``/``open_high`` exclude the bound); ``options`` lists allowed strings;
    ``none_ok`` allows None.
    """

    default: Any
    kind: str = "float"
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    options: tuple | None = None
    none_ok: bool = False
    doc: str = ""

    def check(self, where: str, value):
        if value is None:
            if self.none_ok:
                return None
            raise SolverError(f"{where}=None is not allowed")
        if self.kind == "bool":
            if isinstance(value, bool) or (isinstance(value, numbers.Integral) and value in (0, 1)):
                return bool(value)
            raise SolverError(f"{where}={value!r} must be true or false")
        if self.kind == "str":
            if not isinstance(value, str) or (self.options and value not in self.options):
                raise SolverError(f"{where}={value!r} must be one of {list(self.options or [])}")
            return value
        if self.kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise SolverError(f"{where}={value!r} must be a number")
            if self.kind == "int":
                if isinstance(value, float) and not value.is_integer():
                    raise SolverError(f"{where}={value!r} must be an integer")
                value = int(value)
            else:
                value = float(value)
                if math.isnan(value):
                    raise SolverError(f"{where}=nan is not allowed")
            if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
                op = ">" if self.open_low else ">="
                raise SolverError(f"{where}={value!r} must be {op} {self.low}")
            if self.high is not None and (value > self.high or (self.open_high and value == self.high)):
                op = "<" if self.open_high else "<="
                raise SolverError(f"{where}={value!r} must be {op} {self.high}")
            return value
        return value


@dataclass(frozen=True)
class SolverSpec:
    """A registered solver: its driver, what problems it takes, and its parameters."""

    name: str
    family: str
    fit: Callable[..., Fit]
    params: dict = field(default_factory=dict)
    losses: tuple = ("hinge", "squared_hinge")
    intercepts: tuple = ("none", "regularized")
    kernels: tuple = ("linear",)
    warm_start: bool = False
    hard_margin: bool = False
    # Whether the driver weighs rows (Problem.sample_weight: per-row box C s_i in a dual, s_i
    # times the loss term in a primal); a weighted problem given to one that does not is refused.
    sample_weight: bool = False
    default_max_iter: int = 1000
    # budget.tol when none is given (solvers.fit without a budget, SVMClassifier(tol=None)): each
    # solver's own stopping quantity, set so that default sweeps end `converged` (DESIGN.md).
    default_tol: float = 1e-4
    version: str = "1"
    description: str = ""
    # Compiles the numba kernels (or loads numba's cache) on tiny inputs; None: `default_warmup`.
    warmup: Callable[[], None] | None = None

    def check_params(self, params: dict) -> dict:
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            valid = ", ".join(sorted(self.params)) or "(none)"
            raise SolverError(f"solver {self.name!r} has no parameter {unknown[0]!r}; its parameters: {valid}")
        out = {}
        for key, p in self.params.items():
            v = params.get(key, p.default)
            out[key] = p.check(f"{self.name}.{key}", v)
        return out

    def check_problem(self, problem: Problem) -> None:
        if problem.loss not in self.losses:
            raise SolverError(f"solver {self.name!r} does not handle loss={problem.loss!r}; it takes {list(self.losses)}")
        if problem.intercept not in self.intercepts:
            raise SolverError(f"solver {self.name!r} does not handle intercept={problem.intercept!r}; it takes {list(self.intercepts)}")
        if problem.kernel.name not in self.kernels:
            raise SolverError(f"solver {self.name!r} does not handle kernel={problem.kernel.name!r}; it takes {list(self.kernels)}")
        if problem.sample_weight is not None and not self.sample_weight:
            raise SolverError(f"solver {self.name!r} does not take sample weights (class_weight or sample_weight); "
                              f"the solvers that do: {', '.join(n for n in solver_names() if _REGISTRY[n].sample_weight)}")
        if math.isinf(problem.C) and not self.hard_margin:
            raise SolverError(f"solver {self.name!r} needs a finite C (C=inf, a hard margin, is not supported)")


_REGISTRY: dict[str, SolverSpec] = {}
_WARM: set[str] = set()


def register(spec: SolverSpec) -> SolverSpec:
    if spec.name in _REGISTRY and _REGISTRY[spec.name].fit is not spec.fit:
        raise SolverError(f"solver {spec.name!r} is registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def get_solver(name: str) -> SolverSpec:
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise SolverError(f"unknown solver {name!r}; available: {', '.join(solver_names())}") from None


def solver_names() -> list[str]:
    return sorted(_REGISTRY)


def _warmup_problems(spec: SolverSpec):
    """Tiny problems covering what selects a compiled specialisation or code path: dense and
    CSR X, every declared loss, intercept and kernel (6 rows, 3 features, both classes, not
    separable)."""
    import numpy as np
    import scipy.sparse as sp

    from .kernels import Kernel

    X = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0],
                  [0.0, 0.5, 1.0], [0.5, 0.0, 1.0], [1.0, 0.5, 0.5]])
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    for Xf in (X, sp.csr_matrix(X)):
        for loss in spec.losses:
            # "basis" runs the solver on the problem without intercept (`fit`): no path of its own.
            for intercept in (i for i in spec.intercepts if i != "basis"):
                for kernel in spec.kernels:
                    yield Problem(Xf, y, C=1.0, loss=loss, intercept=intercept,
                                  kernel=Kernel(kernel, 0.5, 2, 1.0))


def default_warmup(spec: SolverSpec) -> None:
    """Run the solver on tiny problems (`_warmup_problems`), with its default parameters and,
    one at a time, each other option of its string parameters (which select kernels/paths), so
    that numba compilation -- seconds on a cold cache, tens of ms to load a warm one -- and
    other first-call costs happen here and not inside the first timed fit."""
    import warnings

    variants = [{}] + [{k: o} for k, p in spec.params.items() if p.kind == "str" and p.options
                       for o in p.options if o != p.default]
    budget = Budget(max_iter=5, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for problem in _warmup_problems(spec):
            for extra in variants if problem.loss == spec.losses[0] else [{}]:
                try:
                    spec.fit(problem, budget=budget, recorder=Recorder(per_decade=1).start(),
                             warm_start=None, **spec.check_params(extra))
                except ValueError:
                    # An option that does not apply to this problem (newton's primal
                    # formulation with a kernel) is refused by name; the default must not be.
                    if not extra:
                        raise


def warm(spec: SolverSpec) -> None:
    """The solver's warmup, once per process (memoised by name)."""
    if spec.name not in _WARM:
        (spec.warmup or (lambda: default_warmup(spec)))()
        _WARM.add(spec.name)



def warm_all() -> list[str]:
    """Every registered solver's warmup (compiles numba's kernels into its on-disk cache). `make
    test` runs it once before the suite, so no test pays a cold compile (tens of seconds for the
    kernel duals on a fresh clone) inside its own time."""
    names = [n for n in solver_names() if not n.startswith("_")]
    for name in names:
        warm(get_solver(name))
    return names

def fit(problem: Problem, solver: str, *, budget: Budget | None = None, recorder: Recorder | None = None,
        warm_start=None, **params) -> Fit:
    """Solve `problem` with the named solver: the functional core under the estimator and the
    pipeline. Parameters are checked against the solver's declaration before any work.

    warm_start: a previous `Fit`, or a dict with ``w``/``b`` or ``alpha``, for solvers that
    can use one (others refuse it).
    """
    spec = get_solver(solver)
    spec.check_problem(problem)
    checked = spec.check_params(params)
    budget = budget or Budget(tol=spec.default_tol)
    if warm_start is not None and not spec.warm_start:
        raise SolverError(f"solver {spec.name!r} does not take a warm start")
    if isinstance(warm_start, Fit):
        warm_start = {"w": warm_start.w, "b": warm_start.b, "alpha": warm_start.alpha}
    recorder = recorder if recorder is not None else Recorder(enabled=False)
    # JIT compilation (or loading numba's cache) happens once per process, before the solver's
    # clock starts, so that the first fit of a process is timed like the others (issue 10).
    warm(spec)
    # duros_katzman's "basis": solve without intercept, then set b from the margin violators.
    basis = problem.intercept == "basis"
    solved = problem.with_(intercept="none") if basis else problem
    if basis:
        # Traced extras (the test error) see each model with its basis b, as the returned one.
        recorder.model_map = lambda m: SimpleNamespace(
            w=m.w, alpha=m.alpha, b=basis_intercept(problem.y, solved.decision(m))[0])
    recorder.start()
    result = spec.fit(solved, budget=budget, recorder=recorder, warm_start=warm_start, **checked)
    if basis:
        result.b, n_violators = basis_intercept(problem.y, solved.decision(result))
        result.info["basis_n_violators"] = n_violators
    if math.isnan(result.fit_time_s):
        result.fit_time_s = recorder.seconds()
    result.trace = list(recorder.points)
    result.trace_extra = list(recorder.extra_points)
    result.info.setdefault("solver", spec.name)
    result.info.setdefault("solver_version", spec.version)
    return result
