"""Conformance checks for a registered solver, like scikit-learn's ``check_estimator``.

    from solvers.testing import check_solver
    check_solver("my_solver")          # raises SolverCheckError naming each failed check

or, one pytest test per check::

    @pytest.mark.parametrize("check_name, check", list(solver_checks("my_solver")))
    def test_my_solver(check_name, check):
        note = check()                 # raises SolverCheckError on failure
        if note:
            pytest.skip(note)          # the check could not be exercised (says why)

Each check runs the solver through `solvers.fit`, as the estimator and the pipeline do, on small
problems (40 rows, 5 features, some zeros) of every loss, intercept and kernel it declares, dense
and CSR, and says what is wrong and in which check:

- ``params``: an unknown parameter and every out-of-range value raise SolverError naming the key;
  a loss the solver does not declare is refused by name.
- ``certificates``: the reported P is the objective of the returned model (w, or alpha through the
  kernel) evaluated here by `objectives` alone; no model is below f*; a reported dual D is at most
  f* (a lower bound) and, where alpha is returned, is D(alpha); gap = P - D >= 0; KKT >= 0.
  f* is bracketed independently of every solver (`reference_bounds`: scipy on the dual QP, or
  L-BFGS on a smooth primal).
- ``converged``: a fit that says ``converged`` at ``Budget(tol=tol)`` is within ``accuracy``
  (relative) of f*, the accuracy the solver's stated criterion reaches at that tol.
- ``dense_csr``: dense and CSR input end with the same status and the same optimum.
- ``max_iter``: ``Budget(max_iter=2)`` ends after at most 2 iterations, with status max_iter,
  budget or stalled (or converged, at the optimum).
- ``time_limit``: ``time_limit_s=0.1`` on a harder problem (C = 1000, tol 1e-12; 400 rows, then
  3000) ends with status ``timeout``, or with another one before the limit (two average iterations
  of slack); a timeout may overrun by at most 20 x the limit + 1 s. A solver that declares
  ``time_limit=False`` (a library that cannot be interrupted) is not exercised.
- ``warm_start``: accepted when declared (and a converged start is not left worse, nor costs more
  iterations than a cold start), refused by name otherwise.
- ``trace``: the recorder gets points that end at the returned model, and the time spent
  evaluating them is excluded from ``fit_time_s``.
- ``random_state``: the same seed gives the same model.
- ``bad_input``: NaN in X and a single class are refused with a message that says so.
"""
from __future__ import annotations

import contextlib
import math
import time
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterator

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from . import objectives as obj
from .base import Budget, Fit, Recorder
from .kernels import Kernel, kernel_block
from .problem import Problem
from .registry import SolverError, fit, get_solver

CHECKS = ("params", "certificates", "converged", "dense_csr", "max_iter", "time_limit", "warm_start",
          "trace", "random_state", "bad_input")


class SolverCheckError(AssertionError):
    """A solver broke its contract; the message names the solver, the check and what is wrong."""


@dataclass(frozen=True)
class Options:
    """tol: the tolerance of the ``converged``/``dense_csr``/``warm_start`` fits; accuracy: how
    close to f* (relative) a fit that says ``converged`` at that tol must be; params: extra solver
    parameters for every fit but ``max_iter``'s (a fixed schedule, say, that ignores max_iter)."""

    tol: float = 1e-8
    accuracy: float = 1e-6
    params: dict = field(default_factory=dict)


# ------------------------------------------------------------------ problems
@lru_cache(maxsize=4)
def _data(n: int = 40, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping classes off the origin (the intercept matters, nothing is separable), a
    third of the last feature zero so that CSR input has a sparsity pattern of its own."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random(n) < 0.35, -1] = 0.0
    y = np.where(X @ rng.standard_normal(d) + 0.7 + 0.8 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _problem(spec_form, fmt: str = "dense", C: float = 1.0, data=None) -> Problem:
    loss, intercept, kernel = spec_form
    X, y = data if data is not None else _data()
    return Problem(sp.csr_matrix(X) if fmt == "csr" else X, y, C=C, loss=loss, intercept=intercept,
                   kernel=Kernel(kernel, 0.5, 2, 1.0))


def forms(name: str) -> list[tuple[str, str, str]]:
    """(loss, intercept, kernel) of every problem the solver declares ("basis" is solved as
    "none" by `solvers.fit`, with no certificate of its own)."""
    spec = get_solver(name)
    return [(loss, icpt, kern) for loss in spec.losses for icpt in spec.intercepts if icpt != "basis"
            for kern in spec.kernels]


# ------------------------------------------------------------------ independent evaluation
def model_objective(problem: Problem, result: Fit) -> float:
    """P of the returned model alone (w, or alpha through the kernel), by `objectives`."""
    if result.w is not None and problem.kernel.is_linear:
        return obj.primal_objective(problem, result.w, result.b)
    sv = np.flatnonzero(result.alpha != 0)
    beta = result.alpha[sv] * problem.y[sv]
    w2 = float(beta @ kernel_block(problem.kernel, problem.X[sv], problem.X[sv]) @ beta)
    return obj.primal_from_decision(problem, w2, result.b, problem.decision(result))


def _gram(problem: Problem) -> np.ndarray:
    """K_ij = k(x_i, x_j), plus B^2 for a regularized intercept (its constant feature)."""
    K = kernel_block(problem.kernel, problem.X, problem.X)
    K = K.toarray() if sp.issparse(K) else np.asarray(K)
    return K + problem.B ** 2


def model_dual(problem: Problem, alpha: np.ndarray) -> float:
    """D(alpha) of the returned alpha (hinge and squared hinge), by `objectives.dual_objective`."""
    beta = alpha * problem.y
    return obj.dual_objective(problem, alpha, float(beta @ _gram(problem) @ beta))


@lru_cache(maxsize=256)
def _bounds_cached(loss, intercept, kernel, C, data_key) -> tuple[float, float]:
    from threadpoolctl import threadpool_limits

    data = _data(*data_key)
    # One BLAS thread: on 40 x 40 products a second one only waits for the first, and on a
    # loaded machine that waiting made one hinge reference's L-BFGS-B steps cost tens of times
    # the CPU of the steps themselves.
    with threadpool_limits(limits=1, user_api="blas"):
        return reference_bounds(_problem((loss, intercept, kernel), C=C, data=data))


def reference_bounds(problem: Problem) -> tuple[float, float]:
    """(lower, upper) with lower <= f* <= upper, found without any registered solver.

    hinge and squared hinge: the dual QP (objectives' module docstring) by L-BFGS-B on the box,
    or SLSQP with y'alpha = 0 for a free intercept; lower = D(alpha), upper = P at w(alpha) with
    the best b for a free intercept (P is piecewise quadratic in b with kinks at b = y_i - f_i:
    every kink is tried, then a 1-D polish). huber_hinge: L-BFGS on the smooth primal; lower =
    P - ||grad P||^2 / 2, as P is 1-strongly convex in w (not rigorous in a free b, whose
    gradient is ~0 there)."""
    from scipy.optimize import minimize, minimize_scalar

    y, C = problem.y, problem.C
    n = problem.n_samples
    if problem.loss == "huber_hinge":
        if not problem.kernel.is_linear:
            raise SolverCheckError("no reference for a kernel huber_hinge problem")
        X = problem.X.toarray() if problem.is_sparse else problem.X
        c, r = obj.intercept_coordinate(problem)
        d = X.shape[1]

        def f(v):
            w, b = v[:d], c * v[d]
            m = y * (X @ w + b)
            g_m = C * obj.loss_derivative("huber_hinge", m, problem.huber_k) * y
            g = np.append(w + X.T @ g_m, c * g_m.sum() + (v[d] if r else 0.0))
            return obj.primal_objective(problem, w, b), g

        res = minimize(f, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                       options={"maxiter": 20000, "gtol": 1e-13, "ftol": 1e-16})
        P, g = f(res.x)
        return P - max(0.5 * float(g @ g), 1e-14 * abs(P)), P
    diag, U = obj.dual_box(problem)
    K = _gram(problem)
    Q = (y[:, None] * y[None, :]) * K + diag * np.eye(n)

    def dual(a):
        Qa = Q @ a
        return 0.5 * a @ Qa - a.sum(), Qa - 1.0

    bounds = [(0.0, U if math.isfinite(U) else None)] * n
    if problem.intercept == "free":
        res = minimize(dual, np.zeros(n), jac=True, method="SLSQP", bounds=bounds,
                       constraints=[{"type": "eq", "fun": lambda a: a @ y, "jac": lambda a: y}],
                       options={"maxiter": 5000, "ftol": 1e-16})
    else:
        res = minimize(dual, np.zeros(n), jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": 50000, "gtol": 1e-14, "ftol": 1e-16})
    K0 = K - problem.B ** 2

    def bracket(alpha):
        beta = alpha * y
        f0 = K0 @ beta
        w2 = float(beta @ K0 @ beta)
        if problem.intercept == "free":
            P_at = lambda b: obj.primal_from_decision(problem, w2, b, f0 + b)   # noqa: E731
            b0 = min(y - f0, key=P_at)
            polished = minimize_scalar(P_at, bracket=(b0 - 1e-3, b0 + 1e-3))
            upper = min(P_at(b0), float(polished.fun))
        else:
            b = problem.B ** 2 * float(beta.sum())    # b = B w_b, w_b = B sum_i alpha_i y_i
            upper = obj.primal_from_decision(problem, w2, b, f0 + b)
        return model_dual(problem, alpha), upper

    alpha = np.clip(res.x, 0.0, U)
    lower, upper = bracket(alpha)
    if problem.loss == "hinge":
        # The QP solvers stop about 1e-8 short; the active sets they found fix the optimum as a
        # linear system (KKT with those sets), solved here. Any feasible alpha still gives a
        # valid bracket, so a wrong identification only leaves the first one in place.
        polished = _polish_hinge(Q, y, C, alpha, problem.intercept == "free")
        if polished is not None:
            lo, up = bracket(polished)
            lower, upper = max(lower, lo), min(upper, up)
    return lower, upper


def _polish_hinge(Q, y, C, alpha, free_b):
    """alpha with its free set F = {0 < alpha_i < C} solved exactly from Q_FF a_F (+ y_F b) =
    1 - C Q_FU 1 (and y'alpha = 0 with a free intercept), the bound sets kept; None when the
    solution leaves the box or y'alpha = 0 does not hold."""
    tol = 1e-6 * C
    F = (alpha > tol) & (alpha < C - tol)
    Ub = alpha >= C - tol
    nF = int(F.sum())
    A = Q[np.ix_(F, F)]
    rhs = 1.0 - C * Q[np.ix_(F, Ub)].sum(axis=1)
    if free_b:
        A = np.block([[A, y[F, None]], [y[None, F], np.zeros((1, 1))]])
        rhs = np.append(rhs, -C * y[Ub].sum())
    sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
    out = np.where(Ub, C, 0.0)
    out[F] = sol[:nF]
    if out.min() < 0.0 or out.max() > C or (free_b and abs(out @ y) > 1e-12 * C * len(y)):
        return None
    return out


def _bounds(problem: Problem, data_key=(40, 5, 0)) -> tuple[float, float]:
    """`reference_bounds` of a problem on `_data(*data_key)`, once per form (dense and CSR share it)."""
    assert problem.X.shape == data_key[:2], "the cached bounds are those of _data(*data_key)"
    return _bounds_cached(problem.loss, problem.intercept, problem.kernel.name, problem.C, data_key)


# ------------------------------------------------------------------ running
class _Check:
    """The checks of one solver, sharing its options and its fits' defaults."""

    def __init__(self, name: str, options: Options):
        self.name = name
        self.spec = get_solver(name)
        self.options = options

    def fail(self, check: str, message: str):
        raise SolverCheckError(f"check_solver({self.name!r}) [{check}]: {message}")

    def params(self, **extra) -> dict:
        out = dict(self.options.params)
        if "random_state" in self.spec.params:
            out.setdefault("random_state", 0)
        out.update(extra)
        return out

    def run(self, problem, budget=None, recorder=None, warm_start=None, params=None, check="fit"):
        params = self.params() if params is None else params
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            try:
                return fit(problem, self.name, budget=budget, recorder=recorder, warm_start=warm_start, **params)
            except Exception as exc:
                self.fail(check, f"fit raised {type(exc).__name__}: {exc} on {_describe(problem)}")

    def tight(self, **kw) -> Budget:
        return Budget(tol=self.options.tol, **kw)

    def rel_to_opt(self, value: float, problem) -> float:
        lower, upper = _bounds(problem)
        return (value - upper) / max(abs(upper), 1e-300)

    # --- checks ---------------------------------------------------------------------------
    def check_params(self):
        problem = _problem(forms(self.name)[0])
        bad_cases = [("_no_such_parameter", 1)]
        for key, p in self.spec.params.items():
            for value in _bad_values(p):
                bad_cases.append((key, value))
        for key, value in bad_cases:
            try:
                fit(problem, self.name, budget=Budget(max_iter=1), **{**self.params(), key: value})
            except SolverError as exc:
                if repr(key) not in str(exc) and f"{self.name}.{key}" not in str(exc):
                    self.fail("params", f"{key}={value!r} raised SolverError without naming the key: {exc}")
            except Exception as exc:
                self.fail("params", f"{key}={value!r} raised {type(exc).__name__}, not SolverError: {exc}")
            else:
                self.fail("params", f"{key}={value!r} was accepted; it must raise SolverError naming {key!r}")
        other = [loss for loss in ("hinge", "squared_hinge", "huber_hinge") if loss not in self.spec.losses]
        if other:
            try:
                fit(_problem((other[0],) + forms(self.name)[0][1:]), self.name, **self.params())
            except SolverError as exc:
                if repr(other[0]) not in str(exc):
                    self.fail("params", f"loss={other[0]!r} (not declared) refused without naming it: {exc}")
            else:
                self.fail("params", f"loss={other[0]!r} is not declared but was accepted")

    def certify(self, check: str, problem: Problem, res: Fit) -> None:
        """The certificate checks of one fit (module docstring, ``certificates``)."""
        where = _describe(problem)
        if res.status == "diverged":
            return
        lower, upper = _bounds(problem)
        scale = max(abs(upper), 1.0)
        eps = 1e-9 * scale + max(upper - lower, 0.0)
        if not math.isfinite(res.primal):
            self.fail(check, f"P={res.primal} is not finite (status {res.status!r}) on {where}")
        if res.w is None and res.alpha is None:
            self.fail(check, f"the fit returns neither w nor alpha on {where}")
        P_model = model_objective(problem, res)
        if not abs(res.primal - P_model) <= 1e-9 * scale:
            self.fail(check, f"reported P={res.primal!r} is not the objective of the returned model, "
                             f"{P_model!r}, on {where}")
        if P_model < lower - eps:
            self.fail(check, f"the returned model's P={P_model!r} is below the optimum f*>={lower!r} on {where}")
        D = res.dual
        if math.isfinite(D):
            if D > upper + eps:
                self.fail(check, f"reported dual D={D!r} exceeds the optimum f*<={upper!r}: not a lower bound, "
                                 f"on {where}")
            if res.alpha is not None and problem.loss != "huber_hinge":
                D_alpha = model_dual(problem, res.alpha)
                if not abs(D - D_alpha) <= 1e-8 * scale:
                    self.fail(check, f"reported dual D={D!r} is not D(alpha)={D_alpha!r} of the returned alpha "
                                     f"on {where}")
            if res.primal < D - eps:
                self.fail(check, f"P={res.primal!r} < D={D!r} on {where}")
        if math.isfinite(res.gap):
            if res.gap < -eps:
                self.fail(check, f"gap={res.gap!r} < 0 on {where}")
            if math.isfinite(D) and not abs(res.gap - (res.primal - D)) <= 1e-9 * scale:
                self.fail(check, f"gap={res.gap!r} is not P - D={res.primal - D!r} on {where}")
        if math.isfinite(res.kkt_violation) and res.kkt_violation < 0:
            self.fail(check, f"kkt_violation={res.kkt_violation!r} < 0 on {where}")
        if not (res.n_iter >= 0 and res.fit_time_s >= 0):
            self.fail(check, f"n_iter={res.n_iter!r}, fit_time_s={res.fit_time_s!r} on {where}")

    def check_certificates(self):
        for form in forms(self.name):
            for fmt in ("dense", "csr"):
                problem = _problem(form, fmt)
                self.certify("certificates", problem, self.run(problem, check="certificates"))

    def converged_near_optimum(self, check: str, problem, res, tol) -> None:
        if res.status != "converged":
            return
        rel = self.rel_to_opt(res.primal, problem)
        if rel > self.options.accuracy:
            self.fail(check, f"says converged at tol={tol:g} after {res.n_iter} iterations, but P={res.primal!r} is "
                             f"{rel:.2e} above f* (relative; accuracy {self.options.accuracy:g}) on "
                             f"{_describe(problem)}")

    def check_converged(self):
        for form in forms(self.name):
            problem = _problem(form)
            res = self.run(problem, self.tight(), check="converged")
            self.certify("converged", problem, res)
            self.converged_near_optimum("converged", problem, res, self.options.tol)

    def check_dense_csr(self):
        for form in forms(self.name):
            dense, csr = _problem(form, "dense"), _problem(form, "csr")
            a, b = (self.run(p, self.tight(), check="dense_csr") for p in (dense, csr))
            if a.status != b.status:
                self.fail("dense_csr", f"dense ends {a.status!r}, CSR {b.status!r} on {_describe(csr)}")
            if a.status in ("converged", "budget"):
                lower, upper = _bounds(dense)
                if abs(a.primal - b.primal) > 2 * self.options.accuracy * abs(upper) + (upper - lower):
                    self.fail("dense_csr", f"dense P={a.primal!r} and CSR P={b.primal!r} differ by more than the "
                                           f"accuracy {self.options.accuracy:g} on {_describe(csr)}")

    def check_max_iter(self):
        params = {k: v for k, v in self.params().items() if k not in self.options.params}
        for form in forms(self.name)[:2]:
            problem = _problem(form)
            res = self.run(problem, self.tight(max_iter=2), params=params, check="max_iter")
            if res.n_iter > 2:
                self.fail("max_iter", f"max_iter=2 ran {res.n_iter} iterations on {_describe(problem)}")
            if res.status not in ("max_iter", "budget", "stalled", "converged"):
                self.fail("max_iter", f"max_iter=2 ended with status {res.status!r} on {_describe(problem)}")
            self.converged_near_optimum("max_iter", problem, res, self.options.tol)

    def check_time_limit(self, limit: float = 0.1):
        if not self.spec.time_limit:
            return "not exercised: the solver declares it cannot stop on time_limit_s (time_limit=False)"
        # Harder problems (C = 1000, tol 1e-12) in the solver's first declared form, linear if it
        # can, at its default max_iter: 400 rows, then 3000 if it ended before the limit there.
        form = next((f for f in forms(self.name) if f[2] == "linear"), forms(self.name)[0])
        params = {k: v for k, v in self.params().items() if k not in self.options.params}
        for n, d in ((400, 20), (3000, 20)):
            problem = _problem(form, C=1000.0, data=_data(n, d, 1))
            res = self.run(problem, Budget(tol=1e-12, time_limit_s=limit), params=params, check="time_limit")
            # The time is checked between iterations, so one iteration may run past the limit:
            # another status than "timeout" is allowed two average iterations past it; "timeout",
            # which says the limit was seen, up to 20 x the limit + 1 s: iterations are not all
            # alike (svmmaj's 10th here, its active-set finish, costs hundreds of its plain
            # iterations, more on a loaded machine), and one iteration is never cut (qp's first
            # IPM step on 400 rows alone can pass the limit many times over). qp's polish
            # after a timeout, which this caught, overran by many times the limit.
            allowed = limit + 0.25 + 2.0 * res.fit_time_s / max(res.n_iter, 1)
            what = "ignored"
            if res.status == "timeout":
                allowed, what = max(allowed, 20.0 * limit + 1.0), "overrun"
            if res.fit_time_s > allowed:
                self.fail("time_limit", f"time_limit_s={limit} {what}: status {res.status!r} after {res.n_iter} "
                                        f"iterations and fit_time_s={res.fit_time_s:.3f} (allowed {allowed:.3f}) "
                                        f"on {_describe(problem)}")
            if res.status == "timeout":
                return None
        return (f"not exercised: the solver ends {res.status!r} after {res.n_iter} iterations "
                f"({res.fit_time_s:.3f} s) within the limit on {_describe(problem)}")

    def check_warm_start(self):
        problem = _problem(forms(self.name)[0])
        cold = self.run(problem, self.tight(), check="warm_start")
        if not self.spec.warm_start:
            try:
                fit(problem, self.name, warm_start=cold, **self.params())
            except SolverError as exc:
                if repr(self.name) not in str(exc):
                    self.fail("warm_start", f"refused without naming the solver: {exc}")
                return "refused by name (the solver declares warm_start=False)"
            self.fail("warm_start", "the solver declares warm_start=False but accepted one")
        for start in (cold, {"w": cold.w, "b": cold.b, "alpha": cold.alpha}):
            warm = self.run(problem, self.tight(), warm_start=start, check="warm_start")
            self.certify("warm_start", problem, warm)
            if cold.status == "converged":
                if warm.status != "converged":
                    self.fail("warm_start", f"from its own converged fit it ends {warm.status!r}")
                self.converged_near_optimum("warm_start", problem, warm, self.options.tol)
                if warm.n_iter > max(cold.n_iter, 2):
                    self.fail("warm_start", f"from its own converged fit it takes {warm.n_iter} iterations, "
                                            f"more than from cold ({cold.n_iter}): the start is not used")

    def check_trace(self, pause: float = 0.002):
        problem = _problem(forms(self.name)[0])

        class SlowRecorder(Recorder):
            """Each trace point costs `pause` more seconds: the recorder's, not the solver's."""

            def record(self, k, fn):
                return super().record(k, lambda: (time.sleep(pause), fn())[1])

        rec = SlowRecorder(per_decade=10, max_overhead=None)
        t = time.perf_counter()
        res = self.run(problem, self.tight(), recorder=rec, check="trace")
        wall = time.perf_counter() - t
        if not res.trace:
            self.fail("trace", "the recorder got no points (the driver must call recorder.record/close)")
        ks = [p[0] for p in res.trace]
        if any(b <= a for a, b in zip(ks, ks[1:])):
            self.fail("trace", f"trace iterations are not increasing: {ks[:20]}")
        if ks[-1] != res.n_iter:
            self.fail("trace", f"the trace ends at iteration {ks[-1]}, the fit at {res.n_iter}")
        last_P = res.trace[-1][2]
        if not abs(last_P - res.primal) <= 1e-9 * max(abs(res.primal), 1.0):
            self.fail("trace", f"the last trace point's P={last_P!r} is not the returned model's {res.primal!r}")
        paused = pause * len(res.trace)
        if res.fit_time_s + 0.8 * paused > wall:
            self.fail("trace", f"fit_time_s={res.fit_time_s:.4f} includes the trace's evaluation time "
                               f"({len(res.trace)} points of {pause * 1e3:.0f} ms, {wall:.4f} s in all): time "
                               f"the solver with the recorder's clock (recorder.seconds())")
        if any(p[1] > res.fit_time_s + 0.005 for p in res.trace):
            self.fail("trace", f"a trace point's seconds exceed fit_time_s={res.fit_time_s:.4f}: "
                               f"{[round(p[1], 4) for p in res.trace]}")

    def check_random_state(self):
        problem = _problem(forms(self.name)[0])
        seeded = "random_state" in self.spec.params
        a, b = (self.run(problem, self.tight(), params=self.params(**({"random_state": 7} if seeded else {})),
                         check="random_state") for _ in range(2))
        what = "random_state=7" if seeded else "default parameters (no random_state)"
        same = (a.primal == b.primal and a.n_iter == b.n_iter and a.status == b.status
                and all(np.array_equal(u, v) for u, v in ((a.w, b.w), (a.alpha, b.alpha)) if u is not None))
        if not same:
            self.fail("random_state", f"two fits with {what} differ: P {a.primal!r} vs {b.primal!r}, "
                                      f"n_iter {a.n_iter} vs {b.n_iter}")

    def check_bad_input(self):
        from .estimator import SVMClassifier

        X, y = _data()
        Xn = X.copy()
        Xn[3, 1] = np.nan
        # Through the two fronts: a Problem (the pipeline's) and the estimator.
        fronts = (("Problem", lambda Xb, yb: fit(Problem(Xb, yb, intercept=forms(self.name)[0][1]), self.name,
                                                  **self.params())),
                  ("SVMClassifier", lambda Xb, yb: SVMClassifier(solver=self.name, max_iter=5).fit(Xb, yb)))
        for front, run in fronts:
            for Xb, yb, says in ((Xn, y, ("non-finite", "NaN")), (sp.csr_matrix(Xn), y, ("non-finite", "NaN")),
                                 (X, np.ones_like(y), ("class",))):
                what = f"{'CSR ' if sp.issparse(Xb) else ''}X with NaN" if says[0] != "class" else "one class"
                try:
                    run(Xb, yb)
                except ValueError as exc:
                    if not any(w in str(exc) for w in says):
                        self.fail("bad_input", f"{front}: {what} refused with a message that does not say so: {exc}")
                else:
                    self.fail("bad_input", f"{front}: {what} was accepted")


def _describe(problem: Problem) -> str:
    return (f"{'CSR' if problem.is_sparse else 'dense'} {problem.n_samples}x{problem.n_features}, "
            f"loss={problem.loss}, intercept={problem.intercept}, kernel={problem.kernel.name}, C={problem.C:g}")


def _bad_values(p) -> list:
    """Values `p` must refuse: beyond each bound, the wrong type, a non-option, None."""
    out = []
    if p.kind in ("int", "float"):
        if p.low is not None:
            out.append(p.low if p.open_low else p.low - 1)
        if p.high is not None:
            out.append(p.high if p.open_high else p.high + 1)
        out.append("x")
        if p.kind == "int":
            out.append(1.5)
    elif p.kind == "str":
        out.append("__not_an_option__" if p.options else 3)
    elif p.kind == "bool":
        out.append("maybe")
    if not p.none_ok and p.kind != "any":
        out.append(None)
    return out


def solver_checks(name: str, *, tol: float = 1e-8, accuracy: float = 1e-6,
                  params: dict | None = None) -> Iterator[tuple[str, Callable[[], str | None]]]:
    """(check name, check) pairs for pytest parametrisation: each check takes no argument,
    raises SolverCheckError on failure and returns None, or a note when it could not be exercised
    (the time limit of a solver that ends before 0.3 s on every problem, say). Cheap: nothing
    runs until a check is called. Options as `check_solver`."""
    checker = _Check(name, Options(tol=tol, accuracy=accuracy, params=dict(params or {})))
    for check in CHECKS:
        yield check, getattr(checker, f"check_{check}")


SMOKE_TIME_LIMIT_S = 0.2
# Bumped when `smoke_check` checks more, so that passes cached by an older one are not trusted.
SMOKE_VERSION = "1"
# Solvers that passed `smoke_check` in this process, by name: the spec that passed (a plugin
# file edited and loaded again registers a new spec, which is checked again).
_SMOKED: dict[str, object] = {}


def smoke_check(name: str, cache_dir=None) -> bool:
    """The cheap part of `check_solver`, for a plugin solver at config validation (the pipeline
    runs it before any task): one fit per declared loss on the 40 x 5 dense problem, in its
    first declared intercept and kernel, with default parameters, under ``Budget(max_iter=
    default, tol=default, time_limit_s=0.2)``; each fit must return, and its certificates hold
    (``certificates``: P is the returned model's objective and not below f*, D is a lower bound,
    gap = P - D >= 0). A solver whose fit raises here would fail every task of a sweep, one
    error row at a time. Raises SolverCheckError naming the solver and the check, as
    `check_solver` would.

    The first check of a solver in a process loads its numba kernels (from numba's cache, or
    compiles them, far slower, the first time on a machine) and solves the references
    (milliseconds, on one BLAS thread). A pass is therefore remembered in the process (by spec)
    and, with `cache_dir`, on disk under the sha256 of the plugin's source
    (`registry.plugin_sha256`), so a later run of the same plugin pays nothing: an edit is
    checked again. Returns whether the fits ran (False: a remembered pass)."""
    import hashlib
    import os
    import sys

    from .registry import plugin_sha256

    spec = get_solver(name)
    if _SMOKED.get(name) is spec:
        return False
    source = plugin_sha256(name)
    marker = None
    if cache_dir is not None and source is not None:
        key = hashlib.sha256(f"{SMOKE_VERSION}|{name}|{source}|{sys.version}".encode()).hexdigest()
        marker = os.path.join(os.fspath(cache_dir), key)
        if os.path.exists(marker):
            _SMOKED[name] = spec
            return False
    from threadpoolctl import threadpool_limits

    checker = _Check(name, Options())
    budget = Budget(max_iter=spec.default_max_iter, tol=spec.default_tol,
                    time_limit_s=SMOKE_TIME_LIMIT_S if spec.time_limit else None)
    with threadpool_limits(limits=1, user_api="blas"):      # 40 x 5: see `_bounds_cached`
        for loss in spec.losses:
            problem = _problem(next(f for f in forms(name) if f[0] == loss))
            checker.certify("certificates", problem, checker.run(problem, budget, check="certificates"))
    _SMOKED[name] = spec
    if marker is not None:
        with contextlib.suppress(OSError):     # a read-only cache only costs the next run the check
            os.makedirs(os.path.dirname(marker), exist_ok=True)
            with open(marker, "w") as fh:
                fh.write(f"{name} passed smoke_check {SMOKE_VERSION}\n")
    return True


class CheckReport(list):
    """`check_solver`'s result when every check passed: the notes of the checks that could not
    be exercised (a list, as before), printed as a sentence that says the solver passed."""

    def __init__(self, name: str, notes: list[str]):
        super().__init__(notes)
        self.name = name

    def __str__(self) -> str:
        if not self:
            return f"check_solver({self.name!r}): all {len(CHECKS)} checks passed"
        return (f"check_solver({self.name!r}): {len(CHECKS) - len(self)} checks passed, none failed, "
                f"{len(self)} not exercised:\n" + "\n".join(f"  {note}" for note in self))

    __repr__ = __str__


def check_solver(name: str, *, tol: float = 1e-8, accuracy: float = 1e-6, params: dict | None = None) -> CheckReport:
    """Run every check on the named solver; raise one SolverCheckError listing each that failed.

    tol: the tolerance of the tight fits; accuracy: how close to f* (relative) a fit that says
    ``converged`` at that tol must be (what the solver's stated stopping criterion guarantees; a
    stochastic method's may be loose); params: extra solver parameters for the fits.
    Returns the notes of checks that could not be exercised, a list whose printout says that
    every check passed (`CheckReport`)."""
    failures, notes = [], []
    for check, run in solver_checks(name, tol=tol, accuracy=accuracy, params=params):
        try:
            note = run()
        except SolverCheckError as exc:
            failures.append(str(exc))
        else:
            if note:
                notes.append(f"{check}: {note}")
    if failures:
        raise SolverCheckError(f"{len(failures)} of {len(CHECKS)} checks failed:\n" + "\n".join(failures))
    return CheckReport(name, notes)
