"""Pegasos: primal estimated sub-gradient solver for the linear L1-SVM.

Shalev-Shwartz, Singer and Srebro, "Pegasos: Primal Estimated sub-GrAdient SOlver for SVM",
ICML 2007; rupnik Section 3.2; duros_katzman Algorithm 2.
It minimises

    f(w) = lambda/2 ||w||^2 + 1/n sum_i (1 - y_i w . x_i)_+  =  P(w) / (C n),   lambda = 1/(C n)

(objectives.C_from_lambda / lambda_from_C, convention "pegasos"), so it solves the problem of
DESIGN.md with the hinge. Step t (t = 1, 2, ...), with a batch A_t of k examples:

    A+ = {i in A_t : y_i w_t . x_i < 1},   eta_t = 1 / (lambda t)
    w_{t+1/2} = (1 - eta_t lambda) w_t + eta_t / k sum_{i in A+} y_i x_i
    w_{t+1}   = min(1, 1 / (sqrt(lambda) ||w_{t+1/2}||)) w_{t+1/2}      (optional projection)

Implementation: w is held as s * v (a scalar times a vector), so the shrink and the projection
cost O(1) and a step costs O(nnz of the batch) (Shalev-Shwartz et al. Section 4; what
scikit-learn's WeightVector does); ||v||^2 is kept up to date with each sparse change. The
averaged iterate wbar = (1/T) sum_t w_{t+1} is held as (Pa + Qa v) / T, with Pa corrected on
each sparse change of v, again O(nnz) per step.

Variants (parameters): batch size k; T steps (budget.max_iter) or a number of ``epochs`` of
ceil(n/k) steps; lambda directly (``lam``: the fit then solves, certifies and reports the problem
with C = 1/(lambda n), not the Problem's own C; the pipeline moves ``lam`` into the problem, as
its ``lambda`` key, so a sweep's C column, f* and reference are of that same problem) or from C;
the projection; ``lazy_t`` (rupnik 4.5: a step whose batch has no
violator changes neither w nor t, so the step size does not decay while the sampler draws
well-classified points); the last or the averaged iterate; a zero start or a seeded random start
inside the ball ||w|| <= 1/sqrt(lambda) (rupnik 4.2; ``init_seed`` seeds the start on its own, so
runs that differ only in it draw the same batches, and only the start varies, as in rupnik's
Figure 2); batches drawn with replacement or from a
fresh permutation each epoch. A regularized intercept is the constant feature B (weight
penalised with w, like LIBLINEAR).

Sample weights s_i (`Problem.sample_weight`) enter by weighted sampling: a batch's rows are
drawn with probability s_i / S (S = sum_i s_i), so a step's expected subgradient is that of

    f(w) = lambda/2 ||w||^2 + 1/S sum_i s_i (1 - y_i w . x_i)_+  =  P(w) / (C S),   lambda = 1/(C S),

the weighted P: the same process as uniform draws from the rows repeated s_i times (integer s_i),
and the kernel unchanged. Weights need ``sampling="replacement"`` (a permutation visits each row
once per epoch whatever its weight) and are refused by name otherwise.

Pegasos has no stopping test of its own: its output is w_{T+1}, so a run that completes its
schedule has status ``budget`` (the schedule ran as planned; nothing was tested, so it is not
``converged``; info["schedule_complete"]); its certificate is the primal objective P; how far P
is from f* is for the pipeline to measure against a reference solve. Iterations (n_iter, trace) are steps t.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from llvmlite import ir
from numba import njit, types, uint64
from numba.core import cgutils
from numba.extending import intrinsic

from .base import Budget, Fit, Recorder, finish
from .objectives import C_from_lambda, lambda_from_C, linear_certificates, primal_at
from .problem import Problem
from .registry import Param, SolverError, SolverSpec, register

# st (state) layout, a float64 array shared between the kernel and the driver.
_S, _VSQ, _T, _QA, _NAVG = 0, 1, 2, 3, 4
# Fold s into v below this scale: early for the averaged iterate (see the fold in the kernel),
# late otherwise (v alone is exact at any scale as long as it does not overflow).
_RESCALE_AVG = 1e-3
_RESCALE = 1e-9


@intrinsic
def _prefetch(typingctx, arr, i):
    """Ask the CPU to load the cache line of arr[i] (LLVM's prefetch: read, keep in all levels;
    nothing on a CPU without one). A hint only: it never faults, never changes a result, and
    does not hold up the steps."""
    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(arr, i), codegen


@njit(inline="always")
def _prefetch_row(data, indices, indptr, i):
    """Prefetch row i of the CSR, every cache line of its values and of its column indices."""
    p = uint64(indptr[i])
    p_end = uint64(indptr[i + uint64(1)])
    q = p
    while q < p_end:
        _prefetch(data, q)
        q += uint64(8)     # 8 float64 values per 64-byte line
    while p < p_end:
        _prefetch(indices, p)
        p += uint64(16)    # 16 int32 indices per line


@njit(cache=True, nogil=True, error_model="numpy")
def _pegasos_steps(data, indices, indptr, y, B, idx, k, lam, project, lazy, average, v, st, Pa, viol):
    """Run the steps whose batches are idx[0:k], idx[k:2k], ... (the last may be shorter).

    v has n_features (+1 for the intercept slot, if B > 0) entries; w = st[_S] * v. The state
    is read into locals once per call (stores into v could alias st otherwise). Returns the
    number of steps taken (lazy steps included)."""
    # Unsigned indices: numba omits the negative-index wraparound test on them, which is most of
    # the cost of these gather/scatter loops otherwise.
    d = uint64(v.shape[0] - (1 if B > 0.0 else 0))
    m = idx.shape[0]
    radius_sq = 1.0 / lam
    s = st[_S]
    vsq = st[_VSQ]
    t = st[_T]
    Qa = st[_QA]
    navg = st[_NAVG]
    steps = 0
    start = 0
    while start < m:
        end = min(start + k, m)
        kb = end - start
        nv = 0
        for j in range(start, end):
            # The rows come in random order, so each is a cache miss, three deep (idx -> indptr ->
            # data/indices) and from DRAM when X is larger than the cache: fetch the next row, and
            # the indptr entry of the one after it, while this one is worked on (what it saves
            # an epoch: the Linear solvers benchmark, "Pegasos against SGDClassifier").
            if j + 2 < m:
                _prefetch(indptr, uint64(idx[j + 2]))
            if j + 1 < m:
                _prefetch_row(data, indices, indptr, uint64(idx[j + 1]))
            i = uint64(idx[j])
            p = uint64(indptr[i])
            p_end = uint64(indptr[i + uint64(1)])
            dot = 0.0
            while p < p_end:
                dot += v[uint64(indices[p])] * data[p]
                p += uint64(1)
            if B > 0.0:
                dot += v[d] * B
            if y[i] * s * dot < 1.0:
                viol[nv] = idx[j]
                nv += 1
        steps += 1
        start = end
        if nv == 0 and lazy:
            continue
        t += 1.0
        eta = 1.0 / (lam * t)
        shrink = 1.0 - eta * lam
        if shrink <= 0.0:
            # t = 1: w_{3/2} forgets w_1 (eta lambda = 1). Reset v; the averaged sum keeps its value.
            if average:
                for j in range(v.shape[0]):
                    Pa[j] += Qa * v[j]
                Qa = 0.0
            for j in range(v.shape[0]):
                v[j] = 0.0
            s = 1.0
            vsq = 0.0
        else:
            s *= shrink
        coef = eta / kb
        for a in range(nv):
            # A batch of k rows outgrows the cache (rupnik's k = 8000 on RCV1), so the
            # violators' rows are fetched again: the next one while this one is added.
            if a + 1 < nv:
                _prefetch_row(data, indices, indptr, uint64(viol[a + 1]))
            i = uint64(viol[a])
            c = coef * y[i] / s
            p = uint64(indptr[i])
            p_end = uint64(indptr[i + uint64(1)])
            if average:
                while p < p_end:
                    jj = uint64(indices[p])
                    old = v[jj]
                    dv = c * data[p]
                    v[jj] = old + dv
                    vsq += dv * (2.0 * old + dv)
                    Pa[jj] -= Qa * dv
                    p += uint64(1)
            else:
                while p < p_end:
                    jj = uint64(indices[p])
                    old = v[jj]
                    dv = c * data[p]
                    v[jj] = old + dv
                    vsq += dv * (2.0 * old + dv)
                    p += uint64(1)
            if B > 0.0:
                old = v[d]
                dv = c * B
                v[d] = old + dv
                vsq += dv * (2.0 * old + dv)
                if average:
                    Pa[d] -= Qa * dv
        if project:
            wsq = s * s * vsq
            if wsq > radius_sq:
                s *= math.sqrt(radius_sq / wsq)
        if average:
            Qa += s
            navg += 1.0
        if s < (_RESCALE_AVG if average else _RESCALE):
            # Fold the scale into v (O(d); rare: s decays like 1/t times the projections). The averaged sum
            # Pa + Qa v is folded into Pa at the same time: expressing old iterates in units of a
            # v that keeps growing would make Pa and Qa v cancel catastrophically.
            if average:
                for j in range(v.shape[0]):
                    Pa[j] += Qa * v[j]
                Qa = 0.0
            for j in range(v.shape[0]):
                v[j] *= s
            vsq *= s * s
            s = 1.0
    # ||v||^2 is updated incrementally; recompute it once per call so rounding cannot build up
    # (here, not with numpy in the driver: a BLAS call between kernel calls can leave BLAS
    # threads spinning against this one).
    vsq = 0.0
    for j in range(v.shape[0]):
        vsq += v[j] * v[j]
    st[_S] = s
    st[_VSQ] = vsq
    st[_T] = t
    st[_QA] = Qa
    st[_NAVG] = navg
    return steps


def fit_pegasos(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
                k: int = 1, epochs: int | None = None, lam: float | None = None, project: bool = True,
                lazy_t: bool = False, iterate: str = "last", init: str = "zero", init_seed: int | None = None,
                sampling: str = "replacement", random_state: int | None = 0) -> Fit:
    """Pegasos (Shalev-Shwartz et al. 2007; rupnik 3.2; duros_katzman Alg. 2; module docstring).

    T = epochs * ceil(n / k) steps when `epochs` is given, else budget.max_iter steps, else 10
    epochs. lam: lambda (None: 1 / (C n) from the problem's C). init_seed: the random start's own
    seed (None: drawn from random_state's generator, before the batches).
    """
    X = problem.X_csr
    y = problem.y
    n, d = problem.n_samples, problem.n_features
    B = float(problem.B)
    sw = problem.sample_weight
    if sw is not None and sampling != "replacement":
        raise SolverError("pegasos takes sample weights by weighted sampling: it needs "
                          f"sampling='replacement', not {sampling!r}")
    # The total weight S replaces n in lambda = 1/(C S) (module docstring): n when unweighted.
    n_w = n if sw is None else float(sw.sum())
    # Equal weights draw uniformly, as unweighted (the same draws; only lambda scales).
    p_draw = None if sw is None or np.all(sw == sw[0]) else sw / sw.sum()
    if lam is None:
        lam = lambda_from_C(problem.C, "pegasos", n_w)
        C = problem.C
    else:
        C = C_from_lambda(lam, "pegasos", n_w)
    spe = -(-n // k)  # steps per epoch
    T = epochs * spe if epochs is not None else budget.iterations(10 * spe)
    rng = np.random.default_rng(random_state)

    dim = d + (1 if B > 0 else 0)
    v = np.zeros(dim)
    if init_seed is not None and init != "random":
        raise ValueError(f"init_seed={init_seed} seeds a random start: it needs init='random', not {init!r}")
    if init == "random":
        # rupnik 4.2: a random w_1 with ||w_1|| <= 1/sqrt(lambda): a uniform direction, a uniform radius.
        # With init_seed the start has its own generator and the sampler's stream is untouched.
        start_rng = rng if init_seed is None else np.random.default_rng(init_seed)
        g = start_rng.standard_normal(dim)
        v[:] = g * (start_rng.uniform() / math.sqrt(lam) / max(np.linalg.norm(g), 1e-300))
    st = np.array([1.0, float(v @ v), 0.0, 0.0, 0.0])
    Pa = np.zeros(dim)
    viol = np.empty(k, dtype=np.int64)
    average = iterate == "average"

    def current_w():
        if average and st[_NAVG] > 0:
            full = (Pa + st[_QA] * v) / st[_NAVG]
        else:
            full = st[_S] * v
        return full[:d], (B * full[d] if B > 0 else 0.0)

    def trace_point():
        w, b = current_w()
        f = np.asarray(X @ w).ravel() + b
        return primal_at(problem, C, float(w @ w), b, f), math.nan, math.nan

    # The current model (the averaged iterate where averaging) for the caller's trace extras.
    recorder.model(lambda: SimpleNamespace(w=current_w()[0], alpha=None, b=current_w()[1]))
    # A trace point passes over all n rows, a step reads k of them: a point costs about n/k steps
    # (fewer: its pass is sequential, the steps' rows random), so none is taken blind at step 1
    # (on a one-epoch solve that one pass is a large share of the whole).
    recorder.expect_point_cost(n / k)
    status = "budget"
    it = 0
    epoch_idx = None
    pos = 0
    while it < T:
        if epoch_idx is None or pos >= epoch_idx.size:
            if sampling == "permutation":
                epoch_idx = rng.permutation(n)
            elif p_draw is None:
                epoch_idx = rng.integers(0, n, size=spe * k)
            else:
                epoch_idx = rng.choice(n, size=spe * k, p=p_draw)
            epoch_idx = epoch_idx.astype(np.int64, copy=False)
            pos = 0
        # Run up to the end of the epoch, of the budget, or the next trace point.
        n_steps = min(-(-(epoch_idx.size - pos) // k), T - it)
        next_rec = recorder.next_due()
        if next_rec is not None and next_rec > it:
            n_steps = min(n_steps, next_rec - it)
        chunk = epoch_idx[pos:pos + n_steps * k]
        taken = _pegasos_steps(X.data, X.indices, X.indptr, y, B, chunk, k, lam, project, lazy_t,
                               average, v, st, Pa, viol)
        pos += chunk.size
        it += taken
        if not np.isfinite(st).all():      # before its trace point, which would read a non-finite w
            status = "diverged"
            break
        if end := recorder.after(it, trace_point, budget):
            status = end
            break
    fit_time = recorder.seconds()
    w, b = current_w()
    if status != "diverged" and np.isfinite(w).all():
        # The certificate is the recorder's time (its share covers it: a pass over X, as a trace
        # point), and the closing trace point is its P: one pass over X, not two.
        cert = recorder.certify(lambda: linear_certificates(problem, w, b, C=C))
        recorder.close(it, lambda: (cert["primal"],))
    else:
        status = "diverged"
        cert = {"primal": math.nan, "dual": math.nan, "gap": math.nan, "kkt_violation": math.nan}
    finish(status, "pegasos", it, "non-finite iterate" if status == "diverged" else "")
    return Fit(b=float(b), status=status, n_iter=it, primal=cert["primal"], w=np.ascontiguousarray(w),
               dual=cert["dual"], gap=cert["gap"], kkt_violation=cert["kkt_violation"],
               fit_time_s=fit_time,
               info={"lambda": lam, "C": C, "t": int(st[_T]), "T": int(T), "epochs": it / spe,
                     "schedule_complete": status == "budget", "w_norm": float(np.linalg.norm(w)),
                     "objective_pegasos": cert["primal"] / (C * n_w)})


register(SolverSpec(
    name="pegasos",
    family="primal",
    sample_weight=True,
    fit=fit_pegasos,
    params={
        "k": Param(1, "int", low=1, doc="mini-batch size"),
        "epochs": Param(None, "int", low=1, none_ok=True,
                        doc="run epochs * ceil(n/k) steps (otherwise budget.max_iter steps)"),
        "lam": Param(None, "float", low=0.0, open_low=True, none_ok=True,
                     doc="lambda; None: 1/(C n) from the problem's C (convention 'pegasos')"),
        "project": Param(True, "bool", doc="project onto the ball of radius 1/sqrt(lambda)"),
        "lazy_t": Param(False, "bool", doc="t does not advance on steps without violators (rupnik 4.5)"),
        "iterate": Param("last", "str", options=("last", "average"), doc="return w_{T+1} or the average"),
        "init": Param("zero", "str", options=("zero", "random"), doc="w_1 = 0 or random in the ball"),
        "init_seed": Param(None, "int", low=0, none_ok=True,
                           doc="seed of the random start alone (None: from random_state, before the sampling)"),
        "sampling": Param("replacement", "str", options=("replacement", "permutation"),
                          doc="batches drawn with replacement or from a per-epoch permutation"),
        "random_state": Param(0, "int", low=0, none_ok=True,
                              doc="seed of the sampling (and of the start, unless init_seed)"),
    },
    losses=("hinge",),
    # The first declared intercept is the default (estimator and sweeps): LIBLINEAR's bias feature.
    intercepts=("regularized", "none", "basis"),
    kernels=("linear",),
    warm_start=False,
    default_max_iter=100_000,
    # 2: a completed schedule is status "budget" (was "converged"); shards of 1 are not reused.
    version="2",
    description="Pegasos stochastic sub-gradient (Shalev-Shwartz et al. 2007)",
))
