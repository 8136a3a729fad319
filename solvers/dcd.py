"""Dual coordinate descent for the linear L1- and L2-SVM.

Hsieh, Chang, Lin, Keerthi and Sundararajan, "A Dual Coordinate Descent Method for Large-scale
Linear SVM", ICML 2008, Algorithm 1 with the shrinking of Section 3.2 (LIBLINEAR's
``solve_l2r_l1l2_svc``). roethel_brynda (A. Roethel and M. Brynda, "Dual Coordinate Descent Method
for Linear SVM", 2021) reproduces it: Algorithm 1 of its Section 2 stops on the change of w, and its
Section 3.2 adds the shrinking and the projected-gradient rule.

The dual solved is

    min_alpha f(alpha) = 1/2 alpha' Qbar alpha - e' alpha,   0 <= alpha_i <= U,
    Qbar = Q + D,  Q_ij = y_i y_j (x_i . x_j + B^2),  D = diag * I,

with (diag, U) = (0, C) for the hinge and (1/(2C), inf) for the squared hinge: the loss reaches
the one kernel below as these two numbers, held per row (diag_i, U_i) so that sample weights
s_i enter as C_i = C s_i (objectives.dual_box_i; equal entries when unweighted). A regularized intercept is the constant feature
B = intercept_scaling with weight w_b, never materialised as a column of X. The primal is
kept as w = sum_i alpha_i y_i x_i, so one coordinate step is

    G = y_i (w . x_i + B w_b) - 1 + diag alpha_i,   alpha_i <- min(max(alpha_i - G / Qbar_ii, 0), U)

at O(nnz(x_i)) cost. Stopping (``stop``):

- ``pg``: the projected gradients of one pass, each as met during the pass, lie within tol of
  each other and of zero: M - m <= tol, M <= tol and m >= -tol (LIBLINEAR's rule as of its
  current ``solve_l2r_l1l2_svc``; the older copy inside scikit-learn tests only M - m <= eps,
  which can also pass when every PG of a pass has one sign, e.g. all near -1 at alpha = 0; the
  two agree whenever some visited PG is 0). tol is absolute, as LIBLINEAR's eps (default 0.1).
  Compare with ``LinearSVC(dual=True)``: its default ``dual="auto"`` picks the primal Newton
  solver (-s 2) whenever n_samples > n_features, whose tol bounds ||grad P(w)|| relative to
  ||grad P(0)||, another quantity: at the same tol it can stop far above the optimum that dcd
  certifies (an example in the Linear solvers benchmark, "dcd against LinearSVC, the whole
  call");
- ``w_change``: ||w_{k+1} - w_k|| < tol between passes (roethel_brynda Section 2, Algorithm 1).

The passes run inside one compiled call (`dcd_passes`) until the stopping test passes, the pass
cap, the recorder's next scheduled point or, under a time limit, about 0.05 s: on small problems a
pass costs microseconds, less than the interpreter work around it. The pass order is a
Fisher-Yates shuffle of the active set from a splitmix64 generator seeded by ``random_state``.

Memory. A pass visits rows in a random order, so each step's per-row numbers and the start of
its row are reads the hardware cannot predict: at RCV1's size, where the CSR is far larger than
the caches, each is a miss to memory. The numbers a step reads, y_i, Qbar_ii, diag_i and U_i,
sit in one 32-byte record of a table aligned to cache lines (`row_table`; five arrays cost five
misses, LIBLINEAR's three), and the pass asks for the records, alpha_i and indptr 16 steps ahead
and the rows' data and column indices 6 steps ahead (`_prefetch_rows`, LLVM's prefetch hint),
where the CSR outgrows the caches. The iterates are bit for bit those without; what the prefetch
buys against LIBLINEAR's ``train`` is measured by ``python -m pipeline.bench --only u`` (the
Linear solvers benchmark, "dcd against upstream LIBLINEAR").

Warm starts along a C path (``warm_start={"alpha": ..., "ray": True}``, `_ray_step`): the
previous point's alpha is moved to the dual's minimiser along its ray before the first pass,
where LIBLINEAR's scale C_to / C_from overshoots at large C.

Shrinking runs under both rules: a variable at a bound whose gradient points outward beyond the
extremes M, m of the previous pass's projected gradients is moved out of the active set. Either
test passing on a shrunken set certifies only that set (a shrunken pass that moves w by less than
tol says nothing of the variables it skipped), so, as LIBLINEAR does, the solver then restores all
variables and stops only when the test passes on a pass that visited every variable.

Two departures from LIBLINEAR's recheck, both about variables shrunk wrongly, i.e.
whose gradient turns inward after they left: (1) under ``pg`` the full set is rechecked not only
when the shrunken set reaches tol but each time its spread M - m has fallen two decades below
that of the last full pass (`_RECHECK_DROP`): a wrongly shrunk variable found only at tol costs
the shrunken set's whole slow tail again (on MNIST 1 vs 7 at tol 1e-4 that ran some pass orders,
LIBLINEAR's among them, into the pass cap), found two decades earlier it joins a set that is
still converging.
(2) The recheck pass shrinks with the thresholds of the pass before it rather than none: a
variable it shrinks has projected gradient 0, so the check reads the same, and LIBLINEAR's second
pass over every variable (the one that reshrinks) is saved.

Gram mode. Late in a solve the active set A is often small and stable: on MNIST 1 vs 7 it holds
a small fraction of the rows for most of the passes (Design: deviations, Gram mode), and a
sparse step there costs a dot and an update over x_i, 2 nnz_i gathered or scattered values. A
step needs only G_i, and a step d on alpha_i changes the gradient of every j by a known amount,

    G_j += d Qbar_ji,   Qbar_ji = y_j y_i (x_j . x_i + B^2) + diag [j = i],

so a pass can run on the dual alone: keep G_E and the dense block Qbar_EE for a set E that holds
A, read G_i from G_E, take the same projected Newton step in the same order, and add d Qbar_Ei
(|E| dense multiply-adds, vectorised) to G_E. The iterates are those of the sparse pass up to
rounding (G accumulated instead of recomputed from w; on roethel_brynda's cells the passes,
updates and status are those of the sparse solver: Linear solvers benchmark, "dcd against
LinearSVC, the whole call"). w = sum_i alpha_i y_i x_i is folded back,
w += sum_E (alpha_i - alpha_i^0) y_i x_i over the rows that moved, when the mode ends: before a
full pass (a recheck; A changes) and when a quarter of E has shrunk (the mode is then entered
again on A: a shrunk variable stays in E until then, its G kept current). Where a compiled call
ends (a trace point, a time check, the end of the solve) the caller is shown a folded copy while
the solver keeps its own w, so where the clock or the trace cut the passes never changes the
rounding; ||w_k+1 - w_k|| (the w_change rule, the trace) is built from the pass's alpha changes.

When it pays, in units of one sparse nonzero visited, with a dense multiply-add costing 1/R of
one (R = `_GRAM_DENSE_SPEED`, measured on sets of a few hundred rows; the timings are in the
Linear solvers benchmark, "Older measurements from the solvers' comments"): a sparse pass costs
2 |A| nnz_A, a Gram pass |A|^2 / R, so a pass saves where |A| < 2 R nnz_A; entering costs |A|
nnz_A per row of Qbar_AA not yet held, plus G_A from w. Qbar depends on X alone, so the rows of
the last E are kept and reused after a recheck (on MNIST about one set's worth of rows is
computed in a whole solve, not one per entry). The mode is entered by ski rental: once the
saving passed up since the last entry covers the cost of entering, which spends at most twice
what the best choice knowing the future would. It never engages where A is large (text:
rcv1_like's active sets are thousands, its rows 76 nonzeros), nor on short solves, nor without
shrinking (every pass is then full). The rechecks stay: each costs a full pass, many passes of a
small shrunken set, and at the pass cap they leave the full set's spread orders of magnitude
below LIBLINEAR's, which never rechecks there (Linear solvers benchmark, "dcd against LinearSVC,
the whole call").
"""
from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .base import Budget, Fit, Recorder, finish
from .objectives import decision_linear, dual_box_i, dual_objective, primal_from_decision
from .problem import Problem
from .registry import Param, SolverSpec, register

# The pass cap when the budget names none: a sweep's (conf/solvers/dcd.yaml), so that
# SVMClassifier and the pipeline end the same fit alike and warn alike. LIBLINEAR's own 1000 left
# standardised breast_cancer's squared hinge at C = 10 short of tol (Linear solvers benchmark,
# "dcd against LinearSVC, the whole call").
DEFAULT_MAX_ITER = 10_000

_INF = np.inf
# The full set is rechecked once the shrunken set's projected-gradient spread is this factor
# below the last full pass's (module docstring, departure 1). Chosen over seeds on MNIST 1 vs 7
# and heart against LIBLINEAR's rule (recheck at tol only) and a recheck every decade: every two
# decades took the fewest passes and the narrowest spread of pass counts, where every decade
# touches more data, a full pass costing many passes of a small shrunken set; where no rule
# reaches tol within the cap, the rechecks touch somewhat more data and leave a full-set spread
# orders of magnitude smaller. The counts are in the Linear solvers benchmark ("dcd against
# LinearSVC, the whole call", Passes, and "Older measurements from the solvers' comments").
_RECHECK_DROP = 100.0
# Gram mode (module docstring): how many elements of a dense row update cost as much as one
# sparse nonzero visited (a gathered read or a scattered add), and the largest set it runs on.
_GRAM_DENSE_SPEED = 6.0
_GRAM_MAX = 1024


# The per-row numbers a step reads, packed (`row_table`): [y_i, Qbar_ii, diag_i, U_i] in one
# 32-byte record, one cache line where five arrays cost five random reads (module docstring).
_ROW = 4
# Prefetch distances, in steps ahead of the pass (`_prefetch_rows`): the rows' records and
# their indptr entries first, the rows' data and column indices once indptr has arrived.
_PF_FAR = 16
_PF_NEAR = 6
# At most this many cache lines of a row's data are requested ahead (8 doubles each; rcv1's
# rows of 76 nonzeros take 10); the hardware's stream prefetcher follows a longer row.
_PF_LINES = 16
# Prefetching pays only where the rows miss the caches: below this much CSR (data and indices)
# the hints are instructions spent for nothing and slow a small solve down (Linear solvers
# benchmark, "Older measurements from the solvers' comments").
PREFETCH_BYTES = 4 << 20


@intrinsic
def _prefetch(typingctx, arr, idx):
    """A read prefetch of &arr[idx] (LLVM's llvm.prefetch, temporal locality 3): a hint that
    never faults, so an index past the end costs nothing. numba exposes no prefetch of its own."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def _prefetch_rows(data, indices, indptr, rinfo, alpha, index, s, active):
    """Ask for what the pass reads _PF_FAR and _PF_NEAR steps ahead. A pass visits rows in a
    random order, so each row's record, alpha_i, indptr entry and the start of its data are
    cache misses that the hardware cannot predict (at RCV1's size the CSR and the records are
    far larger than the caches); asked for early, they arrive while the rows before are being
    worked. Shrinking may swap another row into a prefetched slot: a wasted hint, not an
    error."""
    if s + _PF_FAR < active:
        j = index[s + _PF_FAR]
        _prefetch(rinfo, _ROW * j)
        _prefetch(alpha, j)
        _prefetch(indptr, j)
    if s + _PF_NEAR < active:
        j = index[s + _PF_NEAR]
        p = indptr[j]
        end = min(indptr[j + 1], p + 8 * _PF_LINES)
        while p < end:
            _prefetch(data, p)
            if indices is not None:
                _prefetch(indices, p)
            p += 8


@njit(cache=True, nogil=True)
def _dcd_pass(data, indices, indptr, rinfo, alpha, w, wb, B, index, active,
              PGmax_old, PGmin_old, shrinking, loc, Q, Gs, m, prefetch, sigma=1.0):
    """One pass over index[:active] in its current order. Shrinks (moves to the tail of
    `index`) variables at a bound whose gradient points outward beyond last pass's extremes.

    indices None: every row stores all its columns in order (`rows_are_full`), read without
    index loads. Q not None: the pass runs on the dual alone (Gram mode, module docstring): G_i is read
    from Gs[loc[i]] and a step d on alpha_i adds d Qbar[E, i] (row loc[i] of Q, m long) to Gs,
    where the sparse pass computes G_i from w (a dot over x_i) and adds d y_i x_i to w. Q = None
    compiles the sparse pass alone (numba prunes the `Q is None` branches of a None argument):
    one pass with a run-time test per step was measurably slower on short rows (heart's,
    banknote's), where the test is a large share of a step.

    sigma scales the quadratic term's step on w: a step d on alpha_i adds sigma d y_i x_i to w
    (and Qbar_ii, in rinfo, holds sigma (||x_i||^2 + B^2) + diag_i: `q_diag`). 1 is the dual
    above; sigma' > 1 makes the pass a pass of the CoCoA+ local subproblem, w then holding
    w_global + sigma' v_k (solvers/cocoa.py). A multiplication by 1.0 is exact, so dcd's own
    iterates are bit for bit those without it.

    Returns (active, PGmax_new, PGmin_new, finite): finite is False once a step wrote a
    non-finite alpha (the divergence check, O(1) per step instead of O(n) per pass)."""
    PGmax_new = -_INF
    PGmin_new = _INF
    finite = True
    s = 0
    while s < active:
        if Q is None and prefetch:
            _prefetch_rows(data, indices, indptr, rinfo, alpha, index, s, active)
        i = index[s]
        r = _ROW * i
        yi = rinfo[r]
        if Q is not None:
            k = loc[i]
            G = Gs[k]
        else:
            start = indptr[i]
            end = indptr[i + 1]
            # Two partial sums: the adds of one sum form a chain of dependent latencies (about
            # 4 cycles each) that bounds a short dense row; two chains run side by side.
            d0 = wb[0] * B
            d1 = 0.0
            p = start
            if indices is None:
                # Every row stores all its columns in order (x_ij at data[start + j]): the same
                # sums in the same order, without the index loads.
                while p + 1 < end:
                    d0 += w[p - start] * data[p]
                    d1 += w[p + 1 - start] * data[p + 1]
                    p += 2
                if p < end:
                    d0 += w[p - start] * data[p]
            else:
                while p + 1 < end:
                    d0 += w[indices[p]] * data[p]
                    d1 += w[indices[p + 1]] * data[p + 1]
                    p += 2
                if p < end:
                    d0 += w[indices[p]] * data[p]
            dot = d0 + d1
            G = yi * dot - 1.0 + rinfo[r + 2] * alpha[i]
        PG = 0.0
        a = alpha[i]
        Ui = rinfo[r + 3]
        QDi = rinfo[r + 1]
        if a == 0.0:
            if shrinking and G > PGmax_old:
                active -= 1
                index[s] = index[active]
                index[active] = i
                continue
            if G < 0.0:
                PG = G
        elif a == Ui:
            if shrinking and G < PGmin_old:
                active -= 1
                index[s] = index[active]
                index[active] = i
                continue
            if G > 0.0:
                PG = G
        else:
            PG = G
        if PG > PGmax_new:
            PGmax_new = PG
        if PG < PGmin_new:
            PGmin_new = PG
        if abs(PG) > 1e-12:
            if QDi > 0.0:
                new = a - G / QDi
            else:
                # An empty row under the hinge with no intercept: f(alpha) is linear in
                # alpha_i (G = -1 < 0), so the minimiser is the upper bound, as LIBLINEAR's
                # division by zero gives.
                new = Ui if G < 0.0 else 0.0
            if new < 0.0:
                new = 0.0
            elif new > Ui:
                new = Ui
            if not math.isfinite(new):
                finite = False
            alpha[i] = new
            if Q is not None:
                d = new - a
                row = Q[k]
                for j in range(m):
                    Gs[j] += d * row[j]
            else:
                d = (new - a) * yi * sigma
                if indices is None:
                    for p in range(start, end):
                        w[p - start] += d * data[p]
                else:
                    for p in range(start, end):
                        w[indices[p]] += d * data[p]
                wb[0] += d * B
        s += 1
    return active, PGmax_new, PGmin_new, finite


@njit(cache=True, nogil=True)
def _gram_fold(data, indices, indptr, y, alpha, w, wb, B, gram_ids, astart, m, commit):
    """w += sum_E (alpha_i - astart_i) y_i x_i (and w_b with B): the steps Gram mode took on
    the dual alone, applied to the primal at once; with commit, astart is then the current
    alpha. O(nnz) of the rows that moved, less than one sparse pass over E."""
    for k in range(m):
        i = gram_ids[k]
        d = alpha[i] - astart[k]
        if d != 0.0:
            if commit:
                astart[k] = alpha[i]
            d *= y[i]
            for p in range(indptr[i], indptr[i + 1]):
                w[indices[p]] += d * data[p]
            wb[0] += d * B


@njit(cache=True, nogil=True)
def _gram_enter(data, indices, indptr, y, alpha, w, wb, B, QD, diag, index, active, gram_ids, loc,
                Qbuf, cur, Gs, astart, m_old):
    """Gram mode's set E becomes index[:active] (w must be exact: folded). Its block
    Qbar_EE = y_i y_j (x_i . x_j + B^2) + diag [i = j] depends on X alone, so the rows of
    variables already in the last E are copied and only the new ones computed (each a scatter of
    x_i into a dense vector and |E| sparse dots); G_E is computed from w as a sparse pass does.

    Returns (the Qbuf slot now holding Qbar_EE, rows computed)."""
    nxt = 1 - cur
    Qo = Qbuf[cur]
    Qn = Qbuf[nxt]
    old = np.empty(active, dtype=np.int64)
    for k in range(active):
        old[k] = loc[index[k]]
    for k in range(m_old):
        loc[gram_ids[k]] = -1
    for k in range(active):
        i = index[k]
        gram_ids[k] = i
        loc[i] = k
    for k in range(active):
        if old[k] >= 0:
            for l in range(active):
                if old[l] >= 0:
                    Qn[k, l] = Qo[old[k], old[l]]
    rows = 0
    v = np.zeros(w.shape[0])
    for k in range(active):
        if old[k] >= 0:
            continue
        rows += 1
        i = gram_ids[k]
        for p in range(indptr[i], indptr[i + 1]):
            v[indices[p]] = data[p]
        for l in range(active):
            # Each pair once: a new row fills its column too, so a new l < k is already done.
            if l < k and old[l] < 0:
                continue
            j = gram_ids[l]
            if l == k:
                q = QD[i]  # the same Qbar_ii as the step's denominator
            else:
                s = 0.0
                for p in range(indptr[j], indptr[j + 1]):
                    s += v[indices[p]] * data[p]
                q = y[i] * y[j] * (s + B * B)
            Qn[k, l] = q
            Qn[l, k] = q
        for p in range(indptr[i], indptr[i + 1]):
            v[indices[p]] = 0.0
    for k in range(active):
        i = gram_ids[k]
        s = wb[0] * B
        for p in range(indptr[i], indptr[i + 1]):
            s += w[indices[p]] * data[p]
        Gs[k] = y[i] * s - 1.0 + diag[i] * alpha[i]
        astart[k] = alpha[i]
    return nxt, rows


@njit(cache=True, nogil=True)
def q_diag(data, indptr, extra, sigma=1.0):
    """Qbar_ii = sigma ||x_i||^2 + extra_i from the CSR arrays: dcd's extra_i = B^2 + diag_i
    (sigma 1, exact), the CoCoA+ subproblem's sigma' B^2 + diag_i (`_dcd_pass`'s sigma)."""
    n = indptr.shape[0] - 1
    out = np.empty(n)
    for i in range(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * data[p]
        out[i] = sigma * s + extra[i]
    return out


@njit(cache=True, nogil=True)
def _pg_spread(y, f, diag, alpha, U):
    """objectives.pg_violation of the gradient G_i = y_i f_i - 1 + diag alpha_i, bit for bit
    (the same sums; NaN if any projected gradient is), in one pass: numpy's temporaries for G,
    the masks and the projection were a visible share of a sweep's short fits, spent outside
    their clock."""
    M = 0.0       # max(max_i PG_i, 0)
    m = 0.0       # min(min_i PG_i, 0)
    for i in range(y.shape[0]):
        g = y[i] * f[i] - 1.0 + diag[i] * alpha[i]
        if g != g:
            return np.nan
        if alpha[i] <= 0.0:
            g = min(g, 0.0)
        elif alpha[i] >= U[i]:
            g = max(g, 0.0)
        M = max(M, g)
        m = min(m, g)
    return M - m


# splitmix64 (Steele, Lea and Flood 2014): a 64-bit state advanced by a constant and hashed, so
# the pass permutations are drawn inside the compiled loop from a state the driver owns (one
# uint64 per fit, seeded by random_state): reproducible per seed, independent of numba's and
# numpy's global generators and of which thread runs the fit.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True)
def _next_u64(rng):
    z = rng[0] + _GOLDEN
    rng[0] = z
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _shuffle(index, active, rng):
    """Fisher-Yates over index[:active], as LIBLINEAR draws its pass order (Hsieh et al. 3.1:
    a random permutation of the active variables each pass). Each swap takes the top 32 bits
    of a draw times the range, shifted down (Lemire 2019): a multiply, not a 64-bit division,
    which on a small dense problem costs a good part of a pass; bias at most range / 2^32, as
    LIBLINEAR's rand() % range."""
    for j in range(active - 1):
        r = _next_u64(rng) >> np.uint64(32)
        k = j + np.int64((r * np.uint64(active - j)) >> np.uint64(32))
        t = index[j]
        index[j] = index[k]
        index[k] = t


@njit(cache=True, nogil=True)
def _within(PGmax, PGmin, eps):
    """LIBLINEAR's test on one pass's projected gradients: M - m <= eps, M <= eps, m >= -eps."""
    return PGmax - PGmin <= eps and PGmax <= eps and PGmin >= -eps


@njit(cache=True, nogil=True)
def _gram_gain(indptr, index, active, loc, cap, dense_speed):
    """Gram mode's cost model for the active set index[:active] (module docstring), in units
    of one sparse nonzero visited: (saving per pass, cost of entering), or (0, 0) where a pass
    on the dual alone would not be cheaper. A sparse pass visits each row twice (the dot, and
    the update of w for the variables that move: nearly all of them in a tail),
    2 |A| nnz_A; a Gram pass adds one dense row of |A| per step, |A|^2 / dense_speed; entering
    computes the rows not cached, |A| sparse dots each, and G_A from w, one dot per row.
    `cap` (`_gram_arrays`) bounds |A| where even the longest rows could not make it pay, so
    the O(|A|) count below runs only where it might (on a small dense problem it is a
    visible share of a pass)."""
    if active == 0 or active > cap or dense_speed <= 0.0:
        return 0.0, 0.0
    nnz = 0
    new_rows = 0
    for s in range(active):
        i = index[s]
        nnz += indptr[i + 1] - indptr[i]
        if loc[i] < 0:
            new_rows += 1
    nnz_a = nnz / active
    saving = 2.0 * active * nnz_a - active * active / dense_speed
    if saving <= 0.0:
        return 0.0, 0.0
    return saving, (new_rows + 1) * active * nnz_a


# What the compiled passes of one fit carry from call to call, named: one record of a numpy
# structured dtype, which numba reads and writes by field inside the compiled loop and caches
# (a jitclass would name them too, but numba cannot cache a jitclass, and the passes are
# compiled once per install, not once per process).
PASS_STATE = np.dtype([
    ("active", np.int64),          # |A|: the variables the next pass visits (index[:active])
    ("n_updates", np.int64),       # coordinate steps taken, the sum of |A| over the passes
    ("finite", np.int64),          # 0 once a step left alpha, w or w_b non-finite
    ("active_after", np.int64),    # |A| after the last pass (a recheck restores the count)
    ("gram", np.int64),            # 1 while in Gram mode (module docstring)
    ("gram_size", np.int64),       # |E|: the variables whose Qbar rows Qbuf holds
    ("gram_slot", np.int64),       # the Qbuf slot holding them
    ("gram_passes", np.int64),     # passes run in Gram mode
    ("gram_rows", np.int64),       # Qbar rows computed
    ("pg_max_old", np.float64),    # the shrinking thresholds of the next pass
    ("pg_min_old", np.float64),
    ("w_change", np.float64),      # ||w_k+1 - w_k|| of the last pass, NaN if not measured
    ("recheck_at", np.float64),    # the spread at which a shrunken set is rechecked on the full set
    ("credit", np.float64),        # Gram mode's saving passed up so far (ski rental)
    ("wb_base", np.float64),       # w_b of w_base, the solver's own w in Gram mode
], align=True)


def pass_state(n: int, finite: bool = True) -> np.ndarray:
    """A fresh `PASS_STATE` for n variables: all active, no shrinking threshold yet."""
    state = np.zeros(1, dtype=PASS_STATE)
    state["active"] = state["active_after"] = n
    state["finite"] = int(finite)
    state["pg_max_old"], state["pg_min_old"] = _INF, -_INF
    state["w_change"] = np.nan
    state["recheck_at"] = _INF
    return state


@njit(cache=True, nogil=True)
def dcd_passes(data, indices, indptr, y, alpha, w, wb, B, QD, diag, rinfo, index, state,
                rng, w_prev, n_passes, stop_w, tol, shrinking, dw_last, gram_ids, loc, Qbuf, Gs,
                astart, alpha_pre, w_base, dense_speed, dense_rows, prefetch, sigma=1.0):
    """Up to `n_passes` passes of Algorithm 1 in one compiled call, with the shrinking, the
    full-set recheck and both stopping rules of the Python loop this replaces; on small
    problems a pass costs microseconds, so the per-pass interpreter work (permutation, trace and
    divergence checks, copies) cost more than the pass itself.

    state: the one record of `PASS_STATE` (`pass_state`) that the calls of one fit share.
    w_prev (d) is scratch for w before a pass, copied only when the
    w_change rule needs it or, with dw_last, before the last pass (for the trace's w_change).
    Gram mode's arrays (`_gram_arrays`) and its state persist between calls; w is exact
    (folded) whenever this returns. dense_speed <= 0 keeps every pass sparse. dense_rows:
    every row stores all its columns (`rows_are_full`), so the sparse passes run the pass
    compiled for indices = None; chosen per pass, not per compiled call, so that one
    compilation (and the warm-up's tiny problems) covers all three passes. sigma: `_dcd_pass`'s;
    Gram mode needs sigma 1 (its Qbar_EE and G_E hold the plain dual's), so a caller with
    another sigma passes dense_speed 0.

    Returns (passes done, code): code 0 ran all n_passes, 1 converged (the test passed on a
    pass that started with every variable active), 2 diverged."""
    n = alpha.shape[0]
    st = state[0]
    active = st.active
    n_updates = st.n_updates
    gram = st.gram == 1
    m = st.gram_size
    slot = st.gram_slot
    cap = gram_ids.shape[0]
    PGmax_old = st.pg_max_old
    PGmin_old = st.pg_min_old
    recheck_at = st.recheck_at
    credit = st.credit
    st.w_change = np.nan
    if gram:
        # The solver's own w, as the last call found it before showing the caller a folded copy.
        w[:] = w_base
        wb[0] = st.wb_base
    code = 0
    done = 0
    while done < n_passes:
        _shuffle(index, active, rng)
        # A pass that starts with every variable active is a check of the full problem even if
        # it shrinks some: a variable is shrunk only where its projected gradient is 0 (at a
        # bound, gradient pointing outward), and it is left unchanged, as a plain pass would.
        full_pass = active == n
        if gram and (full_pass or 4 * active <= 3 * m):
            # Leave Gram mode for a full pass, and for a set a quarter smaller than E (each step
            # adds a row of |E|, not |A|): re-entered at once, its rows all in Qbuf.
            _gram_fold(data, indices, indptr, y, alpha, w, wb, B, gram_ids, astart, m, True)
            gram = False
            enter = not full_pass
        elif not gram and not full_pass:
            # Ski rental: enter once the saving passed up covers the cost of entering.
            gain, enter_cost = _gram_gain(indptr, index, active, loc, cap, dense_speed)
            enter = gain > 0.0 and credit >= enter_cost
            credit += 0.0 if enter else gain
        else:
            enter = False
        if enter:
            slot, rows = _gram_enter(data, indices, indptr, y, alpha, w, wb, B, QD, diag, index,
                                     active, gram_ids, loc, Qbuf, slot, Gs, astart, m)
            m = active
            gram = True
            credit = 0.0
            st.gram_rows += rows
        n_updates += active
        measure = stop_w or (dw_last and done == n_passes - 1)
        wb_prev = wb[0]
        if measure:
            if gram:
                for k in range(m):
                    alpha_pre[k] = alpha[gram_ids[k]]
            else:
                w_prev[:] = w
        if gram:
            active, PGmax_new, PGmin_new, ok = _dcd_pass(
                data, indices, indptr, rinfo, alpha, w, wb, B, index, active,
                PGmax_old, PGmin_old, shrinking, loc, Qbuf[slot], Gs, m, False, 1.0)
        elif dense_rows:
            active, PGmax_new, PGmin_new, ok = _dcd_pass(
                data, None, indptr, rinfo, alpha, w, wb, B, index, active,
                PGmax_old, PGmin_old, shrinking, loc, None, Gs, m, prefetch, sigma)
        else:
            active, PGmax_new, PGmin_new, ok = _dcd_pass(
                data, indices, indptr, rinfo, alpha, w, wb, B, index, active,
                PGmax_old, PGmin_old, shrinking, loc, None, Gs, m, prefetch, sigma)
        done += 1
        if gram:
            st.gram_passes += 1
        st.active_after = active
        dw = np.nan
        if measure:
            if gram:
                # w_k+1 - w_k = sum_E (alpha_i - alpha_pre_i) y_i x_i, built in w_prev; w itself
                # is folded only where the pass sequence says (never where a call ends), so the
                # iterates do not depend on where the trace or the clock cut the passes.
                w_prev[:] = 0.0
                dwb = np.zeros(1)
                _gram_fold(data, indices, indptr, y, alpha, w_prev, dwb, B, gram_ids, alpha_pre, m, False)
                s = dwb[0] ** 2
                for j in range(w.shape[0]):
                    s += w_prev[j] ** 2
            else:
                s = (wb[0] - wb_prev) ** 2
                for j in range(w.shape[0]):
                    s += (w[j] - w_prev[j]) ** 2
            dw = math.sqrt(s)
            st.w_change = dw
        if not ok:
            st.finite = 0
        if st.finite == 0 or not math.isfinite(wb[0]):
            code = 2
            break
        if active == 0:
            # Every visited variable was shrunk: no projected gradient was seen.
            PGmax_new, PGmin_new = 0.0, 0.0
        if stop_w:
            passed = dw < tol
            recheck = passed
        else:
            passed = _within(PGmax_new, PGmin_new, tol)
            if full_pass:
                recheck_at = max(tol, (PGmax_new - PGmin_new) / _RECHECK_DROP)
            recheck = _within(PGmax_new, PGmin_new, recheck_at)
        if passed and full_pass:
            code = 1
            break
        if recheck and not full_pass:
            # Restore every variable; the recheck pass shrinks with this pass's thresholds.
            active = n
        # The shrinking thresholds of the next pass, under either stopping rule.
        PGmax_old = PGmax_new if PGmax_new > 0 else _INF
        PGmin_old = PGmin_new if PGmin_new < 0 else -_INF
    if gram:
        # The caller sees w = sum_i alpha_i y_i x_i; the solver resumes from w_base.
        w_base[:] = w
        st.wb_base = wb[0]
        _gram_fold(data, indices, indptr, y, alpha, w, wb, B, gram_ids, astart, m, False)
    st.active = active
    st.n_updates = n_updates
    st.gram = 1 if gram else 0
    st.gram_size = m
    st.gram_slot = slot
    st.pg_max_old = PGmax_old
    st.pg_min_old = PGmin_old
    st.recheck_at = recheck_at
    st.credit = credit
    return done, code


def row_table(y, QD, diag, U) -> np.ndarray:
    """The per-row numbers of a step packed, [y_i, Qbar_ii, diag_i, U_i] in row i's 32 bytes
    (`_ROW`), flat and starting on a 64-byte boundary, so that no record straddles two cache
    lines: a step reads one line where four arrays cost four random reads (at RCV1's size each
    array is larger than the caches; LIBLINEAR's are three, y as one byte)."""
    n = y.shape[0]
    buf = np.empty(_ROW * n + 8)
    off = (-buf.ctypes.data % 64) // 8
    out = buf[off:off + _ROW * n]
    table = out.reshape(n, _ROW)
    table[:, 0], table[:, 1], table[:, 2], table[:, 3] = y, QD, diag, U
    return out


def pass_seed(random_state) -> int:
    """The generator's starting state: random_state itself (splitmix64 decorrelates
    consecutive seeds), or 64 fresh bits of OS entropy for None."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
    return int(random_state) & 0xFFFFFFFFFFFFFFFF


def _alpha_from_w(problem: Problem, w, b, diag, U):
    """Dual variables consistent with a primal warm start (the KKT conditions at an optimum:
    hinge: alpha_i = U where y_i f_i < 1, 0 where > 1; squared hinge: alpha_i = 2C (1 - y_i f_i)_+)."""
    m = problem.y * decision_linear(problem, np.asarray(w, dtype=np.float64), b)
    if problem.loss == "squared_hinge":
        return np.maximum(1.0 - m, 0.0) / diag
    return np.where(m < 1.0, U, 0.0)


def _ray_step(alpha, w, wb, diag, U) -> float:
    """The exact minimiser of the dual along the ray through a warm start, t* = argmin_t
    f(t alpha) over t >= 0 with t alpha in the box: f(t alpha) = t^2/2 alpha' Qbar alpha - t e'alpha
    and alpha' Qbar alpha = ||w||^2 + w_b^2 + sum_i diag_i alpha_i^2 (w = sum_i alpha_i y_i x_i
    given), so t* = e'alpha / alpha' Qbar alpha, capped at min_i U_i / alpha_i.

    Where a C path's last alpha is scaled by C_to / C_from (LIBLINEAR's C search; Chu et al.,
    KDD 2015, Section 3), the scale is right only while alpha_i grows with C: at large C a
    nearly separable problem's w, and alpha with it, barely move, and scaled alpha overshoots
    (the step counts of both starts on a C path: docs/benchmarks/code-notes.md). f(t* alpha) <=
    f(alpha), so the step never hurts the dual."""
    quad = float(w @ w) + wb * wb + float(diag @ (alpha * alpha))
    lin = float(alpha.sum())
    if not (quad > 0.0 and lin > 0.0 and math.isfinite(quad)):
        return 1.0
    t = lin / quad
    pos = alpha > 0.0
    if np.isfinite(U[pos]).any():
        t = min(t, float(np.min(U[pos] / alpha[pos])))
    return t


def _gram_arrays(X, n):
    """Gram mode's arrays for sets E of up to `cap` variables: gram_ids (E), loc (each
    variable's position in E, or -1), Qbuf (two cap x cap slots: Qbar_EE and the next one built
    from it), Gs (G_E), astart (alpha_E as w last had it), alpha_pre (alpha_E before a measured
    pass) and w_base (the solver's own w while the caller is shown a folded one). `cap` is
    the largest set whose pass could run cheaper on the dual, |A| < 2 dense_speed nnz_A, were
    its rows the longest of X, and at most _GRAM_MAX (Qbuf: 2 cap^2 doubles, 16 MiB at 1024, of
    which only the |E|^2 in use is ever touched)."""
    max_nnz = int(np.diff(X.indptr).max()) if n else 0
    cap = min(n, _GRAM_MAX, math.ceil(2.0 * _GRAM_DENSE_SPEED * max_nnz) - 1) if _GRAM_DENSE_SPEED > 0 else 0
    return (np.zeros(cap, dtype=np.int64), np.full(n, -1, dtype=np.int64), np.empty((2, cap, cap)),
            np.empty(cap), np.empty(cap), np.empty(cap), np.empty(X.shape[1] if cap else 0))


def rows_are_full(X) -> bool:
    """Whether every row stores all of its columns (dense input without zeros, e.g. heart,
    banknote, toy): a canonical CSR row is then columns 0..d-1 in order, x_ij =
    data[indptr[i] + j], and `_dcd_pass` compiled for indices = None reads it without the index
    loads, the same sums in the same order, and faster for the loads it skips."""
    return X.nnz == X.shape[0] * X.shape[1]


def _passes_until_affordable(recorder: Recorder, it: int, pass_s: float | None) -> int:
    """Passes (at pass_s each, the last chunk's) until the recorder's budget affords a point."""
    if pass_s is None:
        return 1
    return max(1, math.ceil(recorder.seconds_until_affordable(it) / max(pass_s, 1e-9)))


def fit_dcd(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
            shrinking: bool = True, stop: str = "pg", random_state: int | None = 0,
            record_active_at=None) -> Fit:
    """Dual coordinate descent (Hsieh et al. 2008, Algorithm 1; see the module docstring).

    Iterations are passes over the (active) data; budget.tol is the stopping tolerance of `stop`.
    warm_start: ``alpha`` (exact) or ``w``/``b`` (alpha recovered from the KKT conditions);
    with ``ray`` true, alpha is first moved to the dual's minimiser along its ray (`_ray_step`).
    info: n_active_end (active-set size at exit), n_sv, and n_updates, the coordinate steps
    taken (the active-set sizes at the start of each pass summed over passes; each costs one
    gradient, O(nnz(x_i))), the measure of what shrinking saves; gram_passes, the passes run in
    Gram mode, and gram_rows, the rows of Qbar it computed (module docstring).
    record_active_at: pass numbers after which the members of the active set A are kept, in
    info ``active_at`` ([[pass, [row, ...]], ..., ["end", [...]]]; roethel_brynda's Figure 4
    draws them). Off (None, the default) it costs nothing: the passes and their cuts are those
    of a fit without it, and on they are the same steps (the iterates do not depend on where a
    compiled call ends).
    """
    X = problem.X_csr
    y = problem.y
    n = problem.n_samples
    # Per row (a weighted problem's C_i = C s_i, objectives.dual_box_i); equal entries otherwise,
    # so an unweighted solve takes the very steps it took with the two numbers.
    diag, U = dual_box_i(problem)
    B = float(problem.B)
    # Norms from the CSR itself, so dense and sparse input take bit-identical paths; one
    # compiled loop, not scipy's X.multiply(X) (a copy of X, for one number a row).
    QD = q_diag(X.data, X.indptr, B * B + diag)
    tol = budget.tol
    max_iter = budget.iterations(DEFAULT_MAX_ITER)

    alpha = np.zeros(n)
    if warm_start is not None:
        if warm_start.get("alpha") is not None:
            alpha = np.clip(np.asarray(warm_start["alpha"], dtype=np.float64).copy(), 0.0, U)
            if alpha.shape != (n,):
                raise ValueError(f"warm_start alpha has shape {alpha.shape}, expected ({n},)")
        elif warm_start.get("w") is not None:
            w0 = np.asarray(warm_start["w"], dtype=np.float64)
            if w0.shape != (problem.n_features,):
                raise ValueError(f"warm_start w has shape {w0.shape}, expected ({problem.n_features},)")
            alpha = _alpha_from_w(problem, w0, float(warm_start.get("b") or 0.0), diag, U)
    if warm_start is None:
        w = np.zeros(problem.n_features)
        wb = np.zeros(1)
    else:
        ay = alpha * y
        w = np.asarray(X.T @ ay).ravel()
        wb = np.array([B * ay.sum()])
        if warm_start.get("ray"):
            t = _ray_step(alpha, w, wb[0], diag, U)
            alpha *= t
            w *= t
            wb *= t

    recorder.model(lambda: SimpleNamespace(w=w, alpha=alpha, b=wb[0] * B))

    last_f = []

    def certificates():
        # decision_linear's sum in two steps, so that the product X w is kept for the Fit.
        Xw = np.asarray(problem.X @ w).ravel()
        f = Xw + wb[0] * B
        last_f[:] = [f, Xw]
        P = primal_from_decision(problem, float(w @ w), wb[0] * B, f)
        D = dual_objective(problem, alpha, float(w @ w) + wb[0] ** 2)
        return P, D, P - D

    rinfo = row_table(y, QD, diag, U)
    # Unsigned views (same bits; every index is >= 0) let numba drop its negative-index
    # wraparound test in the two inner loops, the hot path of the whole solver.
    indices_u = X.indices.view(np.uint32)
    index = np.arange(n, dtype=np.uint64)
    # [active, n_updates, alpha finite, active after the last pass, then Gram mode's five
    # (`dcd_passes`)]; a non-finite warm start is reported as divergence after the first
    # pass, as the per-pass check did.
    state = pass_state(n, bool(np.isfinite(alpha).all()))
    rng = np.array([pass_seed(random_state)], dtype=np.uint64)
    w_prev = np.empty_like(w)
    gram = _gram_arrays(X, n)
    stop_w = stop == "w_change"
    track = _passes_to_track(record_active_at)
    active_at = []
    timed = budget.time_limit_s is not None
    pass_s = None
    status = "max_iter"
    it = 0
    while it < max_iter:
        # One compiled call runs passes until the stopping test passes, the pass cap, the next
        # scheduled trace point, or (with a time limit) about 0.05 s of passes.
        chunk = max_iter - it
        nxt = recorder.next_due()
        if nxt is not None:
            # A point scheduled but deferred by the recorder's cost budget (nxt <= it) is
            # taken after the passes that make it affordable, not retried every few passes
            # (each return from the compiled loop costs about a pass on heart's 297 rows).
            chunk = min(chunk, nxt - it if nxt > it else _passes_until_affordable(recorder, it, pass_s))
        if timed:
            chunk = min(chunk, 1 if pass_s is None else max(1, int(0.05 / max(pass_s, 1e-9))))
        if track:
            # record_active_at: the compiled call returns after each pass whose A is kept.
            chunk = min(chunk, min((p for p in track if p > it), default=max_iter) - it)
        t0 = time.perf_counter()
        done, code = dcd_passes(
            X.data, indices_u, X.indptr, y, alpha, w, wb, B, QD, diag, rinfo, index, state,
            rng, w_prev, chunk, stop_w, tol, shrinking, nxt is not None, *gram, _GRAM_DENSE_SPEED,
            rows_are_full(X), PREFETCH_BYTES < X.data.nbytes + X.indices.nbytes)
        pass_s = (time.perf_counter() - t0) / done
        it += done
        if track and it in track:
            # A after the pass: index[:active_after] (a recheck restores the count, not the order).
            active_at.append([it, np.sort(index[:state["active_after"][0]]).astype(np.int64).tolist()])
        # The trace's w_change is the last pass's.
        if end := recorder.after(it, certificates, budget, diverged=code == 2, converged=code == 1,
                                 notes={"w_change": float(state["w_change"][0]),
                                        "n_active": int(state["active_after"][0])}):
            status = end
            break
    active = int(state["active"][0])
    n_updates = int(state["n_updates"][0])

    fit_time = recorder.seconds()
    # The closing trace point is the final certificate: one product X w, not two.
    P, D, gap = certificates()
    recorder.close(it, lambda: (P, D, gap))
    # The final certificates and the KKT spread share one product X w (the decision values).
    kkt = _pg_spread(y, last_f[0], diag, alpha, U)
    if not math.isfinite(P):
        status = "diverged"
    finish(status, "dcd", it, f"projected-gradient spread {kkt:.3g} > tol {tol:g}" if status == "max_iter" else "")
    return Fit(b=float(wb[0] * B), status=status, n_iter=it, primal=P, w=w, alpha=alpha, dual=D,
               gap=gap, kkt_violation=kkt, fit_time_s=fit_time, train_Xw=last_f[1],
               info={"n_active_end": int(active), "n_sv": int(np.count_nonzero(alpha)),
                     "n_updates": int(n_updates), "gram_passes": int(state["gram_passes"][0]),
                     "gram_rows": int(state["gram_rows"][0]),
                     **({"active_at": active_at + [["end", np.sort(index[:active]).astype(np.int64).tolist()]]}
                        if track else {})})


def _passes_to_track(record_active_at) -> frozenset:
    """record_active_at as a set of pass numbers (each an int >= 1); empty when off."""
    if not record_active_at:
        return frozenset()
    passes = list(record_active_at) if isinstance(record_active_at, (list, tuple)) else [record_active_at]
    if not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) and p >= 1 for p in passes):
        raise ValueError(f"record_active_at={record_active_at!r}: pass numbers, each an int >= 1")
    return frozenset(int(p) for p in passes)


register(SolverSpec(
    name="dcd",
    family="dual_cd",
    sample_weight=True,
    fit=fit_dcd,
    params={
        "shrinking": Param(True, "bool", doc="shrink bounded variables (Hsieh et al. 3.2)"),
        "stop": Param("pg", "str", options=("pg", "w_change"), doc="stopping rule"),
        "random_state": Param(0, "int", low=0, none_ok=True, doc="seed of the pass permutations"),
        "record_active_at": Param(None, "any", none_ok=True,
                                  doc="passes after which the active set's members are kept (info active_at); "
                                      "off by default, at no cost"),
    },
    losses=("hinge", "squared_hinge"),
    # The first declared intercept is the default (estimator and sweeps): LIBLINEAR's bias feature.
    intercepts=("regularized", "none"),
    kernels=("linear",),
    warm_start=True,
    default_max_iter=DEFAULT_MAX_ITER,
    # LIBLINEAR's default for its dual solvers: stop at a projected-gradient spread M - m of
    # 0.1 (README "Defaults": every fit of the default sweep converges).
    default_tol=0.1,
    # 2: shrinking also under stop="w_change" (it shrank nothing), and a stopping test is final
    # on a pass that started with all variables; cached fits and references of 1 are not reused.
    # 3: the pass order comes from a splitmix64 generator inside the compiled loop (not numpy's
    # Generator), so every seed takes other passes; Qbar_ii is summed in row order.
    # 4: the full set is rechecked every two decades of the shrunken set's spread, and the
    # recheck pass shrinks (module docstring): other passes from the first recheck on.
    # 5: Gram mode (module docstring): passes over a small active set run on the dual alone;
    # the same steps, other rounding, so fits of 4 are not reused. (Rows that store every
    # column are read without their index arrays: bit for bit the same solve.)
    version="5",
    description="dual coordinate descent, Hsieh et al. 2008 (LIBLINEAR -s 1 / -s 3)",
))
