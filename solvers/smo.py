"""Sequential minimal optimization for the kernel SVM dual.

Platt 1998 (the two-variable closed form); working-set selection by the most violating pair
(bertini III; Keerthi et al. 2001) or by the second-order rule (Fan, Chen & Lin, "Working set
selection using second order information for training SVM", JMLR 6, 2005, WSS 2, the default);
shrinking with gradient reconstruction and a bounded LRU kernel-column cache as in LIBSVM
(Chang & Lin 2011, Sections 4.1 and 5). bertini = N. Bertini et al., "Project #2 - Support Vector
Machines", Optimization Methods for Machine Learning, Fall 2022 (Sapienza, Rome); the dual solved
(bertini I):

    min f(alpha) = 1/2 alpha' Q alpha - e' alpha,  0 <= alpha_i <= C,  y' alpha = 0,
    Q_ij = y_i y_j K(x_i, x_j),  G = grad f = Q alpha - e,

with the box 0 <= alpha_i <= C_i = C s_i under sample weights (LIBSVM's per-sample C: the pair
update clips each variable to its own bound, Solver::Solve's C_i and C_j); the bounds travel
with the variables through the shrinking's swaps.

One iteration picks a pair (i, j) with i in I_up = R, j in I_low = S (see kernel_dual), and
minimises f along d = (y_i e_i - y_j e_j) in closed form, clipped to the box (bertini III's
t* = -G'd / d'Qd and t_max). Stop when m(alpha) - M(alpha) < tol on the whole set (after the
shrunken variables' gradients are rebuilt). As in LIBSVM (Solver::swap_index, do_shrinking), the
shrunken variables are swapped behind the active ones, so the active set is a prefix of positions
and every loop of an iteration (selection, gradient update, the kernel column it computes) runs
over that prefix only, contiguously; the kernel-column cache follows the same positions
(kernels.PrefixQColumnCache). The loop over pairs, shrinking and the reconstruction of G run in
numba, in chunks the Python driver owns (time limit, trace).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .base import Budget, Fit, Recorder
from .kernel_dual import (INTERCEPTS, KERNELS, LOSSES, box, certificates, check_separable, dual_f, finish_fit, gradient,
                          path_seed, warm_alpha)
from .kernels import PrefixQColumnCache, prefix_get, prefix_swaps
from .problem import Problem
from .registry import Param, SolverSpec, register

TAU = 1e-12  # LIBSVM's floor for a non-positive curvature a_ij along the pair direction
_LOWER, _UPPER, _FREE = 0, 1, 2

# Return codes of _smo_chunk
_RAN, _OPTIMAL = 0, 1


@njit(cache=True, nogil=True, inline="always")
def _status(a, C):
    if a >= C:
        return _UPPER
    if a <= 0.0:
        return _LOWER
    return _FREE


@njit(cache=True, nogil=True, error_model="numpy")
def _select(G, y, up, low, QD, n_active, eps, wss, cache, data, ker):
    """Working set (i, j) among the active positions [0, n_active): i = argmax_{t in I_up} -y_t G_t;
    j by the most violating pair (wss=1) or by the largest second-order decrease b_ij^2 / a_ij
    (wss=2, Fan et al. WSS 2). Returns (i, j, m - M) with j = -1 when m - M < eps (optimal on the
    active set).

    The loops run over a contiguous prefix and are branch-free on the data (masks up/low select
    with conditional moves): labels and bounds come in no order, so branches on them would
    mispredict about half the time."""
    Gmax = -np.inf
    i = -1
    for k in range(n_active):
        v = -y[k] * G[k]
        v = v if up[k] else -np.inf
        if v >= Gmax:
            Gmax = v
            i = k
    if i < 0:
        return -1, -1, 0.0
    Gmax2 = -np.inf
    j = -1
    if wss == 1:
        for k in range(n_active):
            v = y[k] * G[k]
            v = v if low[k] else -np.inf
            if v >= Gmax2:
                Gmax2 = v
                j = k
    else:
        Qi = prefix_get(i, n_active, cache, data, ker)
        yi = y[i]
        qdi = QD[i]
        obj_min = np.inf
        for k in range(n_active):
            v = y[k] * G[k]  # -(-y_k G_k): M = min_{I_low} -y G = -max_{I_low} y G
            v = v if low[k] else -np.inf
            Gmax2 = max(Gmax2, v)
            b = Gmax + v     # b_ij = m - (-y_k G_k) > 0 for a violating pair
            a = qdi + QD[k] - 2.0 * yi * y[k] * Qi[k]  # a_ij = K_ii + K_jj - 2 K_ij
            a = a if a > 0.0 else TAU
            obj = -(b * b) / a
            obj = obj if b > 0.0 else np.inf
            if obj <= obj_min:
                j = k
                obj_min = obj
    gap = Gmax + Gmax2
    if gap < eps or j < 0:
        return i, -1, gap
    return i, j, gap


@njit(cache=True, nogil=True, inline="always")
def _set_status(k, a, C, y, st, up, low):
    """st_k from alpha_k, and membership of I_up / I_low."""
    s = _status(a, C)
    st[k] = s
    if y[k] > 0:
        up[k] = s != _UPPER
        low[k] = s != _LOWER
    else:
        up[k] = s != _LOWER
        low[k] = s != _UPPER


@njit(cache=True, nogil=True)
def _be_shrunk(k, Gmax1, Gmax2, G, y, st):
    if st[k] == _UPPER:
        if y[k] > 0:
            return -G[k] > Gmax1
        return -G[k] > Gmax2
    if st[k] == _LOWER:
        if y[k] > 0:
            return G[k] > Gmax2
        return G[k] > Gmax1
    return False


@njit(cache=True, nogil=True, inline="always")
def _swap(i, j, v):
    v[i], v[j] = v[j], v[i]


@njit(cache=True, nogil=True)
def _reconstruct(alpha, G, G_bar, st, n_active, cache, data, ker):
    """G_k = G_bar_k - 1 + sum_{j free} alpha_j Q_kj on the shrunken positions k >= n_active
    (LIBSVM's reconstruct_gradient; every free variable is active, as only bounded ones shrink).
    Like LIBSVM, by the cheaper of two orders: the columns of the shrunken variables on the
    active prefix, or the free variables' columns extended to full length (which the iterations
    after the unshrink read again)."""
    n = alpha.shape[0]
    if n_active == n:
        return
    for k in range(n_active, n):
        G[k] = G_bar[k] - 1.0
    n_free = 0
    for k in range(n_active):
        n_free += st[k] == _FREE
    if n_free * n > 2 * n_active * (n - n_active):
        for i in range(n_active, n):
            Qi = prefix_get(i, n_active, cache, data, ker)
            s = 0.0
            for k in range(n_active):
                if st[k] == _FREE:
                    s += alpha[k] * Qi[k]
            G[i] += s
    else:
        for i in range(n_active):
            if st[i] == _FREE:
                Qi = prefix_get(i, n, cache, data, ker)
                ai = alpha[i]
                for k in range(n_active, n):
                    G[k] += ai * Qi[k]


@njit(cache=True, nogil=True)
def _shrink(n_active, unshrunk, eps, alpha, G, G_bar, st, up, low, y, QD, Cb, swaps, cache, data, ker):
    """LIBSVM's do_shrinking: move the bounded variables whose gradient says they will stay at
    their bound behind the active prefix, by swaps (Solver::swap_index) applied to the solver's
    arrays here and to the cache and data in one batch (`prefix_swaps`). Once, when m - M first
    falls below 10 eps, the gradient is rebuilt and every variable is active again before
    shrinking, so the final iterations see every variable. Returns (n_active, unshrunk now)."""
    Gmax1 = -np.inf  # max_{I_up} -y G
    Gmax2 = -np.inf  # max_{I_low} y G
    for k in range(n_active):
        if y[k] > 0:
            if st[k] != _UPPER and -G[k] >= Gmax1:
                Gmax1 = -G[k]
            if st[k] != _LOWER and G[k] >= Gmax2:
                Gmax2 = G[k]
        else:
            if st[k] != _UPPER and -G[k] >= Gmax2:
                Gmax2 = -G[k]
            if st[k] != _LOWER and G[k] >= Gmax1:
                Gmax1 = G[k]
    n = G.shape[0]
    if not unshrunk and Gmax1 + Gmax2 <= eps * 10.0:
        unshrunk = True
        _reconstruct(alpha, G, G_bar, st, n_active, cache, data, ker)
        n_active = n
    m = 0
    i = 0
    while i < n_active:
        if _be_shrunk(i, Gmax1, Gmax2, G, y, st):
            n_active -= 1
            while n_active > i:
                if not _be_shrunk(n_active, Gmax1, Gmax2, G, y, st):
                    for v in (alpha, G, G_bar, y, QD, Cb):
                        _swap(i, n_active, v)
                    for w in (up, low):
                        _swap(i, n_active, w)
                    _swap(i, n_active, st)
                    swaps[0, m] = i
                    swaps[1, m] = n_active
                    m += 1
                    break
                n_active -= 1
        i += 1
    prefix_swaps(swaps[0], swaps[1], m, cache, data)
    return n_active, unshrunk


@njit(cache=True, nogil=True, error_model="numpy")
def _smo_chunk(max_steps, eps, wss, shrinking, C, alpha, G, G_bar, st, up, low, y, QD, ctl, swaps,
               cache, data, ker):
    """Up to max_steps pair updates (Platt 1998 / LIBSVM Solver::Solve) on the positions of
    the cache's layout: the active set is the prefix [0, ctl[0]). C: each position's bound C_i.

    ctl = [n_active, shrink counter, unshrunk flag, reconstructions, smallest n_active, entries
    scanned (the sum of n_active over the pair updates: each is one selection pass and one
    gradient-update pass)].
    Returns (code, steps): _RAN (budget of steps used) or _OPTIMAL (m - M < eps with every
    variable active, after the shrunken variables' gradients were rebuilt)."""
    n = alpha.shape[0]
    n_active = ctl[0]
    steps = 0
    while steps < max_steps:
        ctl[1] -= 1
        if ctl[1] == 0:
            ctl[1] = min(n, 1000)
            if shrinking:
                n_before = n_active
                n_active, unshrunk = _shrink(n_active, ctl[2] != 0, eps, alpha, G, G_bar, st, up,
                                             low, y, QD, C, swaps, cache, data, ker)
                if unshrunk and ctl[2] == 0:
                    ctl[2] = 1
                    ctl[3] += n_before < n
                ctl[4] = min(ctl[4], n_active)
        i, j, gap = _select(G, y, up, low, QD, n_active, eps, wss, cache, data, ker)
        if j < 0:
            if n_active < n:
                # LIBSVM: optimal on the active set; rebuild G and select again on everything.
                _reconstruct(alpha, G, G_bar, st, n_active, cache, data, ker)
                ctl[3] += 1
                n_active = n
                i, j, gap = _select(G, y, up, low, QD, n_active, eps, wss, cache, data, ker)
            if j < 0:
                ctl[0] = n_active
                return _OPTIMAL, steps
            ctl[1] = 1  # shrink again at the next iteration
        steps += 1
        ctl[5] += n_active
        Qi = prefix_get(i, n_active, cache, data, ker)
        Qj = prefix_get(j, n_active, cache, data, ker)
        Ci = C[i]
        Cj = C[j]
        ai_old = alpha[i]
        aj_old = alpha[j]
        ai = ai_old
        aj = aj_old
        if y[i] != y[j]:
            quad = QD[i] + QD[j] + 2.0 * Qi[j]
            if quad <= 0.0:
                quad = TAU
            delta = (-G[i] - G[j]) / quad
            diff = ai - aj
            ai += delta
            aj += delta
            if diff > 0.0:
                if aj < 0.0:
                    aj = 0.0
                    ai = diff
            else:
                if ai < 0.0:
                    ai = 0.0
                    aj = -diff
            if diff > Ci - Cj:
                if ai > Ci:
                    ai = Ci
                    aj = Ci - diff
            else:
                if aj > Cj:
                    aj = Cj
                    ai = Cj + diff
        else:
            quad = QD[i] + QD[j] - 2.0 * Qi[j]
            if quad <= 0.0:
                quad = TAU
            delta = (G[i] - G[j]) / quad
            s = ai + aj
            ai -= delta
            aj += delta
            if s > Ci:
                if ai > Ci:
                    ai = Ci
                    aj = s - Ci
            else:
                if aj < 0.0:
                    aj = 0.0
                    ai = s
            if s > Cj:
                if aj > Cj:
                    aj = Cj
                    ai = s - Cj
            else:
                if ai < 0.0:
                    ai = 0.0
                    aj = s
        alpha[i] = ai
        alpha[j] = aj
        dai = ai - ai_old
        daj = aj - aj_old
        for k in range(n_active):  # contiguous: vectorises
            G[k] += Qi[k] * dai + Qj[k] * daj
        # G_bar = sum_{alpha_k = C_k} C_k Q_k needs the full column of a variable entering or
        # leaving the upper bound.
        ui = st[i] == _UPPER
        uj = st[j] == _UPPER
        _set_status(i, ai, Ci, y, st, up, low)
        _set_status(j, aj, Cj, y, st, up, low)
        if ui != (st[i] == _UPPER):
            Qf = prefix_get(i, n, cache, data, ker)
            sgn = -Ci if ui else Ci
            for k in range(n):
                G_bar[k] += sgn * Qf[k]
        if uj != (st[j] == _UPPER):
            Qf = prefix_get(j, n, cache, data, ker)
            sgn = -Cj if uj else Cj
            for k in range(n):
                G_bar[k] += sgn * Qf[k]
    ctl[0] = n_active
    return _RAN, steps


def _start(cache: PrefixQColumnCache, alpha, C):
    """The solver's own arrays, in position order (cache.perm: the identity until the first
    shrink, or the layout a cache carried along a C path was left in): labels, diagonal of Q,
    bound status and I_up / I_low masks of alpha, the control block of _smo_chunk and the buffer
    of one shrink's swaps. alpha and C come in position order."""
    n = alpha.shape[0]
    y = cache.y[cache.perm]
    st = np.where(alpha >= C, _UPPER, np.where(alpha <= 0, _LOWER, _FREE)).astype(np.int8)
    up = np.where(y > 0, st != _UPPER, st != _LOWER).astype(np.uint8)
    low = np.where(y > 0, st != _LOWER, st != _UPPER).astype(np.uint8)
    ctl = np.array([n, min(n, 1000) + 1, 0, 0, n, 0], dtype=np.int64)
    return y, cache.QD[cache.perm], st, up, low, ctl, np.empty((2, n), dtype=np.int64)


def fit_smo(problem: Problem, *, budget: Budget, recorder: Recorder, warm_start=None,
            wss: str = "second_order", shrinking: bool = True, cache_size: float = 200.0,
            chunk: int = 20000) -> Fit:
    """SMO (see the module docstring). An iteration is one pair update; budget.tol is the
    tolerance on m(alpha) - M(alpha); cache_size is the kernel-column cache in MB.

    The iterations run on LIBSVM's layout (kernels.PrefixQColumnCache): the variables are
    permuted so that the active set is a prefix; alpha and G are put back in the order of the
    rows at every trace point and at the end.

    warm_start: ``alpha``, projected onto the feasible set first (kernel_dual.warm_alpha); or
    ``path``, a kernel_dual.KernelPath shared by the fits of one C path in increasing C: the
    fit takes the kernel cache the last fit left (same rows, kernel and cache size; its columns
    and its layout) and starts from that fit's alpha, scaled to this C or kept, with G and G_bar
    scaled along (kernel_dual.path_seed: no kernel evaluation), then leaves its own for the next.
    info: f_alpha0, f_alpha, m_minus_M, n_sv / n_bounded_sv / n_free_sv, b_rule, cache_hits,
    cache_misses (column requests that computed entries), kernel_evaluations (entries computed;
    all three by this fit, not the fits before it on a shared cache), cache_columns (slots),
    seeded ("path": from the last fit of a KernelPath, seed_scale its factor c; "alpha": a warm
    start; "" cold), n_active_min (the smallest active set), n_scanned (entries of G read by
    the selections, the sum of the active set's size over the pair updates), n_reconstruct.
    """
    n = problem.n_samples
    if math.isinf(problem.C):
        # The hard margin: the box has no top (C_i = inf: no variable is ever at its upper
        # bound, G_bar stays 0), which only separable data keep bounded.
        check_separable(problem)
    eps = budget.tol
    max_iter = budget.iterations(10_000_000)
    path = (warm_start or {}).get("path")
    prev = path.take() if path is not None else None
    if prev is not None and not (math.isfinite(problem.C) and _serves(prev["cache"], problem, cache_size)):
        prev = None
    cache = prev["cache"] if prev else PrefixQColumnCache(problem.kernel, problem.X, problem.y, cache_size,
                                                           problem.row_norms_sq)
    counts0 = (cache.hits, cache.misses, cache.kernel_evaluations)
    # One bound per position (C_i = C s_i; all C unweighted: the same steps as a scalar C),
    # permuted with alpha by the shrinking; every array below is in position order.
    C = problem.C_i[cache.perm]
    G, seed_scale = None, None
    if prev is not None:
        alpha, G, G_bar, seed_scale = path_seed(prev["alpha"], prev["G"], prev["G_bar"], cache.y[cache.perm],
                                                prev["C"], C, problem.C / prev["C_scalar"])
        alpha_rows = np.empty_like(alpha)
        alpha_rows[cache.perm] = alpha
        seeded = "path"
    else:
        alpha_rows = warm_alpha(problem, warm_start)
        alpha = alpha_rows[cache.perm]
        seeded = "alpha" if alpha.any() else ""
    if G is None:
        if alpha.any():
            G, G_bar = (v[cache.perm] for v in gradient(cache, alpha_rows, box(problem)))
        else:
            G, G_bar = -np.ones(n), np.zeros(n)
    f0 = dual_f(alpha, G)
    y, QD, st, up, low, ctl, swaps = _start(cache, alpha, C)
    wss_code = 2 if wss == "second_order" else 1

    def in_row_order(v):
        out = np.empty_like(v)
        out[cache.perm] = v
        return out

    def trace_point():
        G_ex = G.copy()
        _reconstruct(alpha, G_ex, G_bar, st, int(ctl[0]), cache.state, cache.data, cache.ker)
        P, D, gap, *_ = certificates(problem, in_row_order(alpha), in_row_order(G_ex))
        return P, D, gap

    status = "max_iter"
    it = 0
    while it < max_iter:
        # Run the compiled kernel up to the next trace point, the chunk size or the budget.
        nxt = recorder.next_due()
        stop_at = it + min(chunk, max_iter - it)
        if nxt is not None and it < nxt < stop_at:
            stop_at = nxt
        code, steps = _smo_chunk(stop_at - it, eps, wss_code, shrinking, C, alpha, G, G_bar, st,
                                 up, low, y, QD, ctl, swaps, cache.state, cache.data, cache.ker)
        it += steps
        if code == _OPTIMAL:
            status = "converged"
            break
        if recorder.due(it) and steps:
            recorder.record(it, trace_point)
        if not np.isfinite(G[:ctl[0]]).all():
            status = "diverged"
            break
        if recorder.out_of_time(budget):
            status = "timeout"
            break

    fit_time = recorder.seconds()
    if ctl[0] < n:
        _reconstruct(alpha, G, G_bar, st, int(ctl[0]), cache.state, cache.data, cache.ker)
        ctl[0] = n
    alpha_pos, G_pos = alpha, G
    alpha, G = in_row_order(alpha), in_row_order(G)
    recorder.close(it, lambda: certificates(problem, alpha, G)[:3])
    hits, misses, evals = (now - then for now, then in zip((cache.hits, cache.misses, cache.kernel_evaluations), counts0))
    fit = finish_fit("smo", problem, alpha, G, status, it, eps, fit_time, f_alpha0=f0,
                     cache_hits=hits, cache_misses=misses, kernel_evaluations=evals, cache_columns=cache.n_slots,
                     n_active_min=int(ctl[4]), n_scanned=int(ctl[5]), n_reconstruct=int(ctl[3]), seeded=seeded,
                     **({"seed_scale": seed_scale} if seed_scale is not None else {}))
    # The decision values on the training rows, K beta = y (G + e) (kernel_dual): from the exact
    # gradient at hand, not from an n x n_sv kernel block computed once more (Problem.decision).
    fit.train_Xw = problem.y * (G + 1.0)
    if path is not None and fit.status != "diverged" and math.isfinite(problem.C):
        path.keep(cache=cache, alpha=alpha_pos, G=G_pos, G_bar=G_bar, C=C, C_scalar=float(problem.C))
    return fit


def _serves(cache: PrefixQColumnCache, problem: Problem, cache_size: float) -> bool:
    """Whether a cache another fit left serves this problem: the same rows (the same X object:
    a fold's fits share its arrays, tasks._train_problem), labels, kernel and cache size."""
    return (cache.X is problem.X and cache.kernel == problem.kernel and cache.cache_mb == float(cache_size)
            and np.array_equal(cache.y, problem.y))


register(SolverSpec(
    name="smo",
    family="kernel_dual",
    sample_weight=True,
    hard_margin=True,   # C = inf on separable data (kernel_dual.check_separable)
    fit=fit_smo,
    params={
        "wss": Param("second_order", "str", options=("second_order", "mvp"),
                     doc="working-set selection: Fan et al. 2005 WSS 2, or the most violating pair"),
        "shrinking": Param(True, "bool", doc="LIBSVM shrinking with gradient reconstruction"),
        "cache_size": Param(200.0, "float", low=0.0, open_low=True, doc="kernel-column cache, MB"),
        "chunk": Param(20000, "int", low=1, doc="pair updates per call of the numba kernel"),
    },
    losses=LOSSES,
    intercepts=INTERCEPTS,
    kernels=KERNELS,
    warm_start=True,
    kernel_path=True,
    default_max_iter=10_000_000,
    default_tol=1e-3,   # LIBSVM's eps on m(alpha) - M(alpha)
    version="3",  # 3: kernel values in one summation order for dense and CSR rows (kernels.py); dense X in panels
    description="SMO with WSS 2 / MVP, shrinking and an LRU kernel cache (Platt 1998; Fan et al. 2005)",
))
