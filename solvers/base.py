"""The solver contract: `Budget` in, `Recorder` alongside, `Fit` out.

A driver ``fit_<name>(problem, *, budget, recorder, warm_start, **params) -> Fit`` owns its loop
and calls the recorder at log-spaced iterations. The recorder owns the solver's clock: the time
spent computing a trace point (a full primal objective, say) is excluded from the solver's
seconds, so traces and fit times measure the optimiser alone.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

# "budget": a fixed-schedule method (pegasos: T steps, no convergence test) ran its schedule as
# planned; it is not "converged" (nothing was tested) and not a failure (nothing was cut short).
STATUSES = ("converged", "budget", "max_iter", "timeout", "diverged", "stalled")


@dataclass(frozen=True)
class Budget:
    """How long a solver may run: iterations (the solver's own unit: passes, epochs, Newton
    steps, pairs), a tolerance on its own stopping quantity, and wall seconds."""

    max_iter: int | None = None
    tol: float = 1e-4
    time_limit_s: float | None = None

    def __post_init__(self):
        if self.max_iter is not None and (int(self.max_iter) != self.max_iter or self.max_iter < 1):
            raise ValueError(f"max_iter={self.max_iter!r} must be an integer >= 1 or None")
        if not (self.tol > 0 and math.isfinite(self.tol)):
            raise ValueError(f"tol={self.tol!r} must be a finite number > 0")
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s={self.time_limit_s!r} must be > 0 or None")

    def iterations(self, default: int) -> int:
        return int(self.max_iter) if self.max_iter is not None else int(default)


@dataclass
class Fit:
    """What a solver returns.

    A linear model has ``w`` (n_features,) and ``b``; a dual model has ``alpha`` (n_samples,),
    from which ``support`` (indices with alpha_i > 0) and ``dual_coef`` (alpha_i y_i on the
    support) follow, and ``b``. Certificates are NaN where the solver has none.
    """

    b: float
    status: str
    n_iter: int
    primal: float
    w: np.ndarray | None = None
    alpha: np.ndarray | None = None
    dual: float = math.nan
    gap: float = math.nan
    kkt_violation: float = math.nan
    fit_time_s: float = math.nan
    info: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)
    # Extra per-point quantities (one dict per trace point, aligned with `trace`): what the
    # solver noted (Recorder.note) and what the caller's extras computed from the model.
    trace_extra: list = field(default_factory=list)
    # X w on the training rows, where the solver computed it for its closing certificate (dcd):
    # `Problem.decision(fit)` adds b to it instead of computing the product once more, a good
    # part of the work outside a short fit's clock in a sweep (The sweep benchmark, "What is
    # left", scenario (c)'s pieces).
    # Without b, so that an intercept set after the solve (basis) cannot leave it stale.
    train_Xw: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status={self.status!r} is not one of {STATUSES}")

    @property
    def support(self) -> np.ndarray | None:
        if self.alpha is None:
            return None
        return np.flatnonzero(self.alpha != 0)


class Recorder:
    """Clock and trace of one solve.

    ``due(k)`` is true at log-spaced iterations (1, 2, ..., 10, 12, 15, ... about
    ``per_decade`` points per decade), ``record(k, fn)`` calls ``fn() -> (primal, dual, gap)``
    with the clock paused. ``seconds()`` is the solver's time so far, recorder time excluded.

    The recorder keeps its own cost within ``max_overhead`` (default 5%) of the solver's seconds: a
    trace point is a full objective, a pass over the data, while a solver's iteration may cost far
    less (a Pegasos step is one row), so a fixed 10 points per decade can cost many times the solve
    itself (a one-epoch Pegasos solve spent most of its call tracing: Linear solvers benchmark,
    "Older measurements from the solvers' comments"). A due point is deferred while the recorder's
    time so far plus the last point's cost would exceed ``max_overhead`` x the solver's seconds, and
    taken at the first due check that can afford it. The closing point is always taken, and the
    final certificate it records counts as the recorder's time (`certify`), so room for it is kept
    from the start: a due point must leave the share enough for one more point of its cost, and the
    budget holds for the whole call, not only the loop. Before any point is timed its cost is the
    driver's estimate (`expect_point_cost`), or unknown: then the first point is taken blind.
    ``max_overhead=None`` records every due point. ``clock`` is injectable for tests.
    """

    def __init__(self, per_decade: int = 10, enabled: bool = True, max_points: int = 10_000, extras=None,
                 max_overhead: float | None = 0.05, clock=time.perf_counter):
        self.per_decade = per_decade
        self.enabled = enabled
        self.max_points = max_points
        self.max_overhead = max_overhead
        self.clock = clock
        self.points: list[tuple[int, float, float, float, float]] = []
        self.extras = dict(extras or {})
        self.extra_points: list[dict] = []
        self._model = None
        # What the caller's extras see of the solver's model (solvers.fit: the basis intercept).
        self.model_map = None
        self._notes: dict = {}
        self._t0 = None
        self._paused = 0.0
        self._last_cost = 0.0
        self._next = 1
        self._point_iters = None

    def start(self) -> "Recorder":
        self._t0 = self.clock()
        self._paused = 0.0
        self._last_cost = 0.0
        self._next = 1
        self._point_iters = None
        self.points = []
        self.extra_points = []
        self._notes = {}
        return self

    def seconds(self) -> float:
        return self.clock() - self._t0 - self._paused

    def overhead_s(self) -> float:
        """The recorder's own seconds so far (trace points and the final certificate), excluded
        from `seconds`."""
        return self._paused

    def expect_point_cost(self, iterations: float) -> None:
        """The driver's estimate of one point's cost (a full objective, and the final
        certificate), in its own iterations: a pass over X is n/k Pegasos steps of k rows. Until
        a point is timed, its cost is taken as `iterations` x the solver's seconds per iteration
        so far, so even the first point waits for the share to afford it."""
        self._point_iters = float(iterations)

    def _point_cost(self, k: int) -> float | None:
        """Seconds one more point is expected to cost: the last point's, else the driver's
        estimate at iteration k, else None (unknown)."""
        if self.points:
            return self._last_cost
        if self._point_iters is not None and k > 0:
            return self._point_iters * self.seconds() / k
        return None

    def affordable(self, k: int = 0) -> bool:
        """Whether one more point at iteration k, with the closing point's certificate still to
        pay (about as much again), keeps the recorder's own time within max_overhead of the
        solver's seconds so far. A first point of unknown cost is taken."""
        if self.max_overhead is None:
            return True
        cost = self._point_cost(k)
        return cost is None or self._paused + 2.0 * cost <= self.max_overhead * self.seconds()

    def seconds_until_affordable(self, k: int = 0) -> float:
        """Solver seconds still to run before `affordable(k)` holds (0 if it holds, or if the
        point's cost is unknown): a driver whose compiled loop must stop to take a deferred point
        runs this long in one call rather than retrying every few iterations."""
        cost = None if self.max_overhead is None else self._point_cost(k)
        if cost is None:
            return 0.0
        return max(0.0, (self._paused + 2.0 * cost) / self.max_overhead - self.seconds())

    def due(self, k: int) -> bool:
        return (self.enabled and k >= self._next and len(self.points) < self.max_points
                and self.affordable(k))

    def next_due(self) -> int | None:
        """The next iteration at which a point is wanted (None when recording is off or full),
        so a driver can run its compiled kernel in chunks that end exactly there."""
        if not self.enabled or len(self.points) >= self.max_points:
            return None
        return self._next

    def out_of_time(self, budget: "Budget") -> bool:
        """True once the solver's own seconds exceed the budget's time limit."""
        return budget.time_limit_s is not None and self.seconds() > budget.time_limit_s

    def after(self, k: int, point, budget: "Budget", *, diverged: bool = False, converged: bool = False,
              notes: dict | None = None) -> str | None:
        """The tail every driver's iteration k ends with, in one order: the trace point if due
        (point() as `record` takes it, with `notes` noted first), then the status that ends the
        loop: "diverged" (a non-finite iterate; first, since NaN fails every convergence rule
        too), "converged" (the driver's own rule), "timeout" (the budget's time limit on the
        solver's own clock); None to go on. A driver writes ``if (end := recorder.after(...)):
        status = end; break``."""
        if self.due(k):
            if notes:
                self.note(**notes)
            self.record(k, point)
        if diverged:
            return "diverged"
        if converged:
            return "converged"
        if self.out_of_time(budget):
            return "timeout"
        return None

    def certify(self, fn):
        """fn(), the driver's final certificate (a pass over the data, as a point is), with the
        clock paused and its time counted as the recorder's: the closing point is recorded
        from it (`close(k, lambda: ...)` reusing the values), so the share covers it."""
        t = self.clock()
        out = fn()
        self._paused += self.clock() - t
        return out

    def close(self, k: int, fn) -> float:
        """End of the solve: the solver's seconds, then the last iteration's trace point if
        it was not due (so every trace ends at the returned model)."""
        seconds = self.seconds()
        if self.enabled and (not self.points or self.points[-1][0] != k):
            self.record(k, fn)
        return seconds

    def record(self, k: int, fn) -> None:
        t = self.clock()
        solver_s = t - self._t0 - self._paused
        vals = fn()
        primal, dual, gap = (tuple(vals) + (math.nan, math.nan))[:3]
        self.points.append((int(k), solver_s, float(primal), float(dual), float(gap)))
        self._record_extra()
        # The next due iteration: the smallest integer > k on the 10^(j/per_decade) grid.
        step = 10 ** (1.0 / self.per_decade)
        nxt = max(k + 1, int(math.ceil(k * step - 1e-9)))
        self._next = nxt
        self._last_cost = self.clock() - t
        self._paused += self._last_cost

    # Extra per-point quantities: a small API beside the schedule above. A solver that can say
    # more than (primal, dual, gap) at a trace point notes it (``note(w_change=..., n_active=...)``
    # just before ``record``) and tells the recorder how to read its current model (``model(fn)``,
    # fn() -> an object with ``w``, ``alpha``, ``b``); the caller asks for quantities of the model
    # (``Recorder(extras={"test_error": fn(model)})``), evaluated at each point with the clock
    # paused, so they never count as solver time.
    def note(self, **values) -> None:
        """Quantities the solver measured for the next recorded point (dropped if none is)."""
        self._notes.update(values)

    def model(self, fn) -> None:
        """How to read the solver's current model, for the caller's extras."""
        self._model = fn

    def _record_extra(self) -> None:
        row = {k: float(v) for k, v in self._notes.items()}
        self._notes = {}
        if self.extras and self._model is not None:
            m = self._model()
            if self.model_map is not None:
                m = self.model_map(m)
            for name, fn in self.extras.items():
                row[name] = float(fn(m))
        self.extra_points.append(row)


def finish(status: str, solver: str, n_iter: int, detail: str = "", *, kernel_dual: bool = False) -> None:
    """Non-convergence is a status and a ConvergenceWarning, never an exception.

    A fit stopped by its iteration cap or its time limit is said in scikit-learn's sentences,
    so that its users' warning filters and its tests' matches apply to the drop-in estimator:
    SVC's ("Solver terminated early (max_iter=N).  Consider pre-processing your data with
    StandardScaler or MinMaxScaler.") for the kernel duals (`kernel_dual`: smo, svmlight, qp,
    libsvm), LinearSVC's ("... failed to converge, increase the number of iterations.", with
    the solver's name for its "Liblinear") for the others; then the solver, its status and
    the reason in our words."""
    if status in ("max_iter", "timeout", "diverged", "stalled"):
        if _everything_ignored():
            return
        ours = f"{solver} stopped with status {status!r} after {n_iter} iterations" + (f": {detail}" if detail else "")
        if status == "max_iter" and kernel_dual:
            msg = (f"Solver terminated early (max_iter={n_iter}).  Consider pre-processing your data with "
                   f"StandardScaler or MinMaxScaler. ({ours})")
        elif status == "max_iter":
            msg = f"{solver} failed to converge, increase the number of iterations. ({ours})"
        elif status == "timeout":
            msg = f"{solver} failed to converge within its time limit, increase the time limit. ({ours})"
        else:
            msg = ours
        # scikit-learn's class, so that its users' filters apply; imported here, since importing
        # sklearn costs about a second and most fits converge (every worker imports solvers).
        from sklearn.exceptions import ConvergenceWarning

        warnings.warn(msg, ConvergenceWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """warnings.warn's stacklevel, from `finish`, of the first frame outside this package: the
    user's own line (`clf.fit(X, y)`, `solvers.fit(...)`), however deep the estimator, the
    multiclass wrapper and the driver call (Python 3.12's skip_file_prefixes, by hand)."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(2), 2       # 1: finish itself
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def _everything_ignored() -> bool:
    """An ignore-all filter in front (`warnings.simplefilter("ignore")`, as the pipeline's tasks
    and the solvers' warmups set around their fits): a warning of any category would be
    dropped, so scikit-learn's class is not imported for it. That import (much of scikit-learn)
    would otherwise fall inside the clock of a process's first fit that stops early, and was a
    large part of a sandbox's warm-up, whose tiny fits all stop at their 5 iterations: a cost
    paid before a command's first task (The sweep benchmark, "The fixed cost of a command")."""
    first = warnings.filters[0] if warnings.filters else None
    return first is not None and first[0] == "ignore" and first[1] is None and first[2] is Warning \
        and first[3] is None and first[4] == 0


def import_optimize() -> None:
    """scipy.optimize (its lsq_linear, for the rare bounded least-squares steps of cpm and
    smooth_newton), imported by their fit functions instead of with their modules: it was a
    visible part of every process's `import solvers` (the client's and each sandbox's, on the
    way to a command's first task: The sweep benchmark, "The fixed cost of a command"), and is
    now paid by those solvers' warmups, before any timed fit (`registry.fit` warms a solver
    first)."""
    import scipy.optimize  # noqa: F401


def split_warm_start(problem, warm_start) -> tuple[np.ndarray, float]:
    """(w, b) from a warm start dict (``w``/``b``), zeros otherwise."""
    d = problem.n_features
    w = np.zeros(d)
    b = 0.0
    if warm_start is not None and warm_start.get("w") is not None:
        w = np.array(warm_start["w"], dtype=np.float64).ravel()
        if w.shape != (d,):
            raise ValueError(f"warm_start w has shape {w.shape}, expected ({d},)")
        b = float(warm_start.get("b") or 0.0) if problem.intercept != "none" else 0.0
    return w, b
