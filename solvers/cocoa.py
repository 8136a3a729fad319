"""CoCoA+: the linear L1- and L2-SVM dual solved over K partitions of the rows, dcd passes as
the local solver, one vector of d numbers each way a round.

Ma, Smith, Jaggi, Jordan, Richtarik and Takac, "Adding vs. Averaging in Distributed
Primal-Dual Optimization", ICML 2015 (Algorithm 1 with aggregation gamma = 1, "adding", and the
safe sigma' = gamma K of its Lemma 4); Smith, Forte, Ma, Takac, Jordan and Jaggi, "CoCoA: A
General Framework for Communication-Efficient Distributed Optimization", JMLR 18(230), 2018,
Section 3 (the same subproblem for any partition of the data).

The dual is dcd's (solvers/dcd.py, objectives.py):

    min_alpha f(alpha) = 1/2 ||w(alpha)||^2 + 1/2 sum_i diag_i alpha_i^2 - e' alpha,  0 <= alpha_i <= U_i,
    w(alpha) = sum_i alpha_i y_i x_i  (with the constant feature B and its weight w_b when the
    intercept is regularized),

and the rows are split into K blocks P_1, ..., P_K. For v_k = sum_{i in P_k} dalpha_i y_i x_i,
||w + sum_k v_k||^2 <= ||w||^2 + sum_k (2 w . v_k + K ||v_k||^2) (Cauchy-Schwarz over K terms), so
the sum of the K separable problems

    G_k(dalpha_[k]) = w . v_k + sigma'/2 ||v_k||^2 + sum_{i in P_k} (1/2 diag_i (alpha_i + dalpha_i)^2 - alpha_i - dalpha_i),
    0 <= alpha_i + dalpha_i <= U_i,   sigma' = K,

bounds f(alpha + dalpha) - 1/2 ||w||^2 (1 - 1/K terms aside) from above: whatever dalpha_[k] each
partition finds that lowers its G_k, their sum lowers f, with no step size to tune (the
"adding" of the title, where CoCoA's averaging divides the update by K). Each partition's G_k
is a box-constrained quadratic of dcd's form with Qbar_ii = sigma' (||x_i||^2 + B^2) + diag_i and
a coordinate step on alpha_i moving u = w + sigma' v_k by sigma' dalpha_i y_i x_i: dcd's own
kernel with its `sigma` (`dcd._dcd_pass`), `local_passes` passes of it a round (shrinking kept
across rounds, Gram mode off: its cached gradients would go stale as w moves between rounds).

A round: the driver sends w (d + 1 numbers with w_b) to each partition; each runs its passes
from u = w and returns v_k = (u - w) / sigma'; the driver adds them, w <- w + sum_k v_k. Alpha
never leaves its partition.

Certificates from partition sums. At w, each partition returns (`LocalSubproblem.sums`)
sum_i s_i loss(y_i f_i), sum_i alpha_i, sum_i diag_i alpha_i^2, the extremes of its projected
gradients G_i = y_i f_i - 1 + diag_i alpha_i, its rows on the right side and its alpha_i > 0;
then (objectives.primal_from_sums, dual_from_sums)

    P(w) = 1/2 (||w||^2 + w_b^2) + C sum_k sum_{i in P_k} s_i loss_i,
    D(alpha) = sum_k sum alpha_i - 1/2 (||w||^2 + w_b^2) - 1/2 sum_k sum diag_i alpha_i^2,

the same P and D every fit of the project is certified by, so P - D >= 0 bounds P - f* and the
fit carries its gap, against the same f*, as a single-process fit does. Here w is the sum of
the rounds' v_k, equal to w(alpha) up to the rounding of the sums.

Stopping: the relative duality gap (P - D) / |P| <= budget.tol, tested on the rounds whose
certificate is computed: every `check_every` rounds and every trace point (a trace point's
certificate pauses the clock as any solver's does; a stopping test's is the solver's time).
Iterations are rounds.

`fit_cocoa` runs the K partitions one after another in this process (`LocalPartitions`): the
same rounds, iterates and certificates as a distributed fit of the same partitions, not its
speed. The pipeline runs them on Dask workers, each holding its rows (pipeline/engine/
distributed.py), through the same `run_rounds`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .base import Budget, Fit, Recorder, finish
from .dcd import dcd_passes, pass_state, rows_are_full, PREFETCH_BYTES, q_diag, row_table, pass_seed
from .objectives import diag_term, dual_box_i, dual_from_sums, loss_values, primal_from_sums, projected_gradient
from .problem import Problem
from .registry import Param, SolverSpec, register

# A round is one pass over each block's rows, as a dcd iteration is one pass over all rows:
# the same cap as dcd's (ill-conditioned problems, e.g. unscaled features at C = 1, need thousands).
DEFAULT_MAX_ITER = 10_000

# What `LocalSubproblem.sums` returns, by position: one float64 vector a partition, summed (or
# maximised, minimised) by `combine`.
SUMS = ("loss", "alpha", "diag", "pg_max", "pg_min", "correct", "n_sv", "n")
_SUM, _MAX, _MIN = (0, 1, 2, 5, 6, 7), 3, 4


class LocalSubproblem:
    """One partition's rows and dual variables, and dcd's kernel state over them, kept between
    rounds: the object a worker holds (pipeline/engine/distributed.py) or `LocalPartitions`
    holds K of.

    X: canonical CSR of the partition's rows (`Problem`'s form: float64, sorted int32 indices);
    y in {-1, +1}; C, loss, B (the intercept's constant feature, 0 for none) and sigma' as in the
    module docstring. No `Problem` is built: a partition may hold one class only."""

    def __init__(self, X, y, *, C: float, loss: str, B: float, sigma: float, sample_weight=None,
                 shrinking: bool = True, random_state: int | None = 0, alpha=None):
        n = X.shape[0]
        self.X, self.y, self.B, self.sigma, self.loss = X, np.asarray(y, dtype=np.float64), float(B), float(sigma), loss
        self.sample_weight = sample_weight
        self.diag, self.U = dual_box_i(SimpleNamespace(C=float(C), n_samples=n, sample_weight=sample_weight, loss=loss))
        self.QD = q_diag(X.data, X.indptr, self.sigma * self.B * self.B + self.diag, self.sigma)
        self.rinfo = row_table(self.y, self.QD, self.diag, self.U)
        self.indices_u = X.indices.view(np.uint32)
        self.alpha = np.zeros(n) if alpha is None else np.clip(np.asarray(alpha, dtype=np.float64), 0.0, self.U)
        self.index = np.arange(n, dtype=np.uint64)
        self.state = pass_state(n)
        self.rng = np.array([pass_seed(random_state)], dtype=np.uint64)
        self.shrinking = bool(shrinking)
        d = X.shape[1]
        self.u, self.ub, self.w_prev = np.zeros(d), np.zeros(1), np.empty(d)
        # Gram mode off (dense_speed 0): zero-sized arrays, never entered.
        self.gram = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.empty((2, 0, 0)),
                     np.empty(0), np.empty(0), np.empty(0), np.empty(0))
        self.dense_rows = rows_are_full(X) if n else False
        self.prefetch = PREFETCH_BYTES < X.data.nbytes + X.indices.nbytes

    def solve(self, w, wb: float, passes: int, tol: float) -> tuple[np.ndarray, float, bool]:
        """`passes` passes of dcd on G_k at w (fewer if its projected gradients lie within tol on
        a pass over every variable): (v_k, its w_b part, whether every alpha stayed finite)."""
        if self.X.shape[0] == 0:
            return np.zeros_like(self.u), 0.0, True
        self.u[:] = w
        self.ub[0] = wb
        dcd_passes(self.X.data, self.indices_u, self.X.indptr, self.y, self.alpha, self.u, self.ub, self.B,
                    self.QD, self.diag, self.rinfo, self.index, self.state, self.rng,
                    self.w_prev, int(passes), False, float(tol), self.shrinking, False, *self.gram, 0.0,
                    self.dense_rows, self.prefetch, self.sigma)
        finite = bool(self.state["finite"][0]) and math.isfinite(self.ub[0])
        return (self.u - w) / self.sigma, (self.ub[0] - wb) / self.sigma, finite

    def sums(self, w, wb: float) -> np.ndarray:
        """The partition's sums at w (`SUMS`; module docstring), one pass over its rows."""
        f = np.asarray(self.X @ w).ravel() + wb * self.B
        losses = loss_values(self.loss, self.y * f)
        if self.sample_weight is not None:
            losses = losses * self.sample_weight
        G = self.y * f - 1.0 + self.diag * self.alpha
        PG = projected_gradient(G, self.alpha, self.U) if len(G) else np.zeros(1)
        return np.array([float(losses.sum()), float(self.alpha.sum()), diag_term(self.diag, self.alpha),
                         max(float(PG.max()), 0.0), min(float(PG.min()), 0.0),
                         float(np.count_nonzero((f > 0) == (self.y > 0))), float(np.count_nonzero(self.alpha)),
                         float(len(f))])

    @property
    def passes(self) -> int:
        """Coordinate steps taken so far over the partition's size: passes, shrinking counted."""
        return int(self.state["n_updates"][0])


@dataclass
class Certificate:
    """The global certificates at one iterate, from the partitions' sums (`combine`)."""

    primal: float
    dual: float
    kkt: float
    correct: float
    n_sv: int
    n: int

    @property
    def gap(self) -> float:
        return self.primal - self.dual

    @property
    def rel_gap(self) -> float:
        return self.gap / max(abs(self.primal), 1e-300)


def combine(sums: list, w, wb: float, C: float) -> Certificate:
    """P, D and the projected-gradient spread at (w, alpha) from the partitions' `sums`."""
    s = np.vstack(sums)
    w_norm_sq = float(w @ w) + wb * wb
    total = s[:, _SUM].sum(axis=0)
    return Certificate(primal=primal_from_sums(C, w_norm_sq, total[0]),
                       dual=dual_from_sums(total[1], w_norm_sq, total[2]),
                       kkt=float(s[:, _MAX].max() - s[:, _MIN].min()),
                       correct=float(total[3]), n_sv=int(total[4]), n=int(total[5]))


@dataclass
class Rounds:
    """What `run_rounds` ends with: the model, its certificate, status and round count."""

    w: np.ndarray
    wb: float
    cert: Certificate
    status: str
    rounds: int
    fit_time_s: float


def run_rounds(parts, *, C: float, budget: Budget, recorder: Recorder, local_passes: int = 1,
               local_tol: float = 0.0, check_every: int = 1, w=None, wb: float = 0.0, first_round: int = 0,
               after_round=None) -> Rounds:
    """CoCoA+'s outer loop (module docstring) over `parts`, which offers
    ``solve(w, wb, passes, tol) -> (sum_k v_k, its w_b part, all finite)`` and
    ``sums(w, wb) -> [one `SUMS` vector a partition]``: in this process (`LocalPartitions`) or on
    Dask workers (pipeline/engine/distributed.py). ``w``, ``wb`` and ``first_round``: a start
    other than zero, the partitions' alpha being consistent with it (a resumed fit).
    after_round(k, w, wb), if given, runs after each round, on the solver's clock (a
    checkpoint: the driver's own work)."""
    d_w = np.zeros(parts.n_features) if w is None else np.array(w, dtype=np.float64)
    state = {"wb": float(wb), "cert": None, "at": -1}
    k = int(first_round)

    def certify():
        cert = combine(parts.sums(d_w, state["wb"]), d_w, state["wb"], C)
        state["cert"], state["at"] = cert, k
        return cert.primal, cert.dual, cert.gap

    recorder.model(lambda: SimpleNamespace(w=d_w, alpha=None, b=state["wb"] * parts.B))
    max_iter = budget.iterations(DEFAULT_MAX_ITER)
    status = "max_iter"
    while k < max_iter:
        v, vb, finite = parts.solve(d_w, state["wb"], local_passes, local_tol)
        d_w += v
        state["wb"] += vb
        k += 1
        if after_round is not None:
            after_round(k, d_w, state["wb"])
        diverged = not (finite and math.isfinite(state["wb"]) and np.isfinite(d_w).all())
        if not diverged and recorder.due(k):
            recorder.record(k, certify)
        elif not diverged and k % check_every == 0:
            certify()
        cert = state["cert"]
        converged = state["at"] == k and cert.gap <= budget.tol * max(abs(cert.primal), 1e-300)
        if end := recorder.after(k, certify, budget, diverged=diverged, converged=converged):
            status = end
            break
    fit_time = recorder.seconds()
    if state["at"] != k:
        recorder.certify(certify)
    cert = state["cert"]
    recorder.close(k, lambda: (cert.primal, cert.dual, cert.gap))
    if not math.isfinite(cert.primal):
        status = "diverged"
    return Rounds(w=d_w, wb=state["wb"], cert=cert, status=status, rounds=k, fit_time_s=fit_time)


def partition_bounds(n: int, K: int) -> np.ndarray:
    """K + 1 boundaries cutting n rows into K contiguous blocks of sizes differing by at most 1."""
    return (np.arange(K + 1) * n) // K


class LocalPartitions:
    """K partitions of a problem's rows in this process, run one after another."""

    def __init__(self, problem: Problem, K: int, sigma: float, shrinking: bool, random_state):
        X = problem.X_csr
        bounds = partition_bounds(problem.n_samples, K)
        sw = problem.sample_weight
        self.n_features, self.B = problem.n_features, float(problem.B)
        self.parts = [LocalSubproblem(X[lo:hi], problem.y[lo:hi], C=problem.C, loss=problem.loss, B=self.B,
                                      sigma=sigma, sample_weight=None if sw is None else sw[lo:hi],
                                      shrinking=shrinking,
                                      random_state=None if random_state is None else random_state + k)
                      for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]

    def solve(self, w, wb, passes, tol):
        out = [p.solve(w, wb, passes, tol) for p in self.parts]
        return sum(o[0] for o in out), sum(o[1] for o in out), all(o[2] for o in out)

    def sums(self, w, wb):
        return [p.sums(w, wb) for p in self.parts]


def fit_cocoa(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None, partitions: int = 2,
              local_passes: int = 1, local_tol: float | None = None, check_every: int = 5, shrinking: bool = True,
              random_state: int | None = 0) -> Fit:
    """CoCoA+ with adding (sigma' = K; the module docstring) over `partitions` blocks of the rows,
    run in this process one after another. budget.tol bounds the relative duality gap;
    iterations are rounds. local_passes: dcd passes a round on each partition's subproblem,
    fewer where its projected gradients fall within local_tol (None: never). info: rounds,
    partitions, sigma, local passes and the coordinate steps a partition took over its rows
    (``passes_per_partition``), the bytes a distributed run would send (``bytes_per_round``:
    w out and v_k back, 8 bytes a number)."""
    K = min(int(partitions), problem.n_samples)
    parts = LocalPartitions(problem, K, sigma=float(K), shrinking=shrinking, random_state=random_state)
    done = run_rounds(parts, C=problem.C, budget=budget, recorder=recorder, local_passes=local_passes,
                      local_tol=0.0 if local_tol is None else float(local_tol), check_every=check_every)
    cert = done.cert
    finish(done.status, "cocoa", done.rounds, f"relative duality gap {cert.rel_gap:.3g} > tol {budget.tol:g}"
           if done.status == "max_iter" else "")
    alpha = np.concatenate([p.alpha for p in parts.parts])
    return Fit(b=done.wb * parts.B, status=done.status, n_iter=done.rounds, primal=cert.primal, w=done.w,
               alpha=alpha, dual=cert.dual, gap=cert.gap, kkt_violation=cert.kkt, fit_time_s=done.fit_time_s,
               info={"rounds": done.rounds, "partitions": K, "sigma": float(K), "local_passes": int(local_passes),
                     "passes_per_partition": [p.passes / max(len(p.y), 1) for p in parts.parts],
                     "bytes_per_round": bytes_per_round(K, problem.n_features, problem.B != 0.0),
                     "n_sv": int(np.count_nonzero(alpha))})


def bytes_per_round(K: int, n_features: int, intercept: bool) -> int:
    """The numbers a round moves, 8 bytes each: w (and w_b) to each of K partitions, v_k back."""
    return 2 * K * 8 * (n_features + int(intercept))


register(SolverSpec(
    name="cocoa",
    family="dual_cd",
    fit=fit_cocoa,
    params={
        "partitions": Param(2, "int", low=1, doc="K, the blocks of rows (sigma' = K); in the pipeline, "
                                                 "the Dask workers the fit runs on"),
        "local_passes": Param(1, "int", low=1, doc="dcd passes a round on each partition's subproblem"),
        "local_tol": Param(None, "float", low=0.0, open_low=True, none_ok=True,
                           doc="a round's passes stop early once a partition's projected gradients lie "
                               "within this (dcd's test on its subproblem); None: never"),
        "check_every": Param(5, "int", low=1, doc="rounds between stopping tests (each half a round's work: "
                                                  "a pass over the rows for the primal); trace points are "
                                                  "tested too"),
        "shrinking": Param(True, "bool", doc="shrink bounded variables in the local passes (kept across rounds)"),
        "random_state": Param(0, "int", low=0, none_ok=True, doc="seed of the pass permutations (partition k: "
                                                                 "random_state + k)"),
    },
    losses=("hinge", "squared_hinge"),
    intercepts=("regularized", "none"),
    kernels=("linear",),
    distributed=True,
    default_max_iter=DEFAULT_MAX_ITER,
    # The relative duality gap (P - D)/|P|: at 1e-3 the fit is within the report's default
    # target of f* by its own certificate.
    default_tol=1e-3,
    description="CoCoA+ (adding, sigma' = K) over row partitions, dcd passes as the local solver "
                "(Ma et al. 2015; Smith et al. 2018)",
))
