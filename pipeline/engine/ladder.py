"""A library's timing ladder: the time to a target of a solver that runs as one call.

LIBLINEAR, LIBSVM and SGD through scikit-learn return their final model and nothing on the way,
so a time to (P - f*)/|f*| <= eps cannot be read off a trace of theirs, and their time to their
own stop is not one. They are timed as benchopt times a black box: cold solves capped at k
iterations ("rungs"), each timed alone, with the same start and seed, so that rung k's model is
the k-th iterate of the full solve. The rungs sit on the recorder's grid (k = 1, 2, 3, 4, 6, 8,
11, ...: about `per_decade` a decade), so that a time to target is read at the same resolution
as our solvers' traces.

What the ladder needs to know, and what it runs (`climb`):

- **f\\***, the problem's certified reference (the run hands it over once the reference solve
  has ended: pipeline/engine/handover.py). With it the ladder stops at the first rung that
  reaches the target: no rung past it is run. Without it (no reference record) it climbs every
  rung to the solver's own stop, as it always did.
- **the top**, the full solve to the solver's own stop: the sweep's own fit of the same problem,
  which for a library is the same cold solve (its `n_iter`, certificates and CPU seconds, handed
  over as well). It is not solved again: a target its end does not reach is never reached (no
  rung is run for it), and a target it reaches lies below it.
- **the resolution**: rungs climb two a decade (every `per_decade // 2`-th grid point) until one
  reaches the target, then the grid points between the last two rungs are bisected until the
  first grid point that reaches it is known (the report reads nothing finer than the grid).
  This supposes that an iterate that reached the target stays within it, where a rung-by-rung
  climb supposed nothing: a library whose primal dips below the target and comes back reads
  the start of its last stretch within it (docs/design/execution.md, "Timing fits", says how
  often that was seen).
- **the budget** B (`run.timing_budget_s`, on the rungs' own clock, CPU seconds): a rung whose
  time exceeds B is past the budget, and the search treats it as the end of the curve, as
  benchopt's timeout does: a target not reached by a rung within B is *censored*, "not reached
  within B", never a time.

It resolves the report's target alone: the report reads a ladder's time (and iterations) at
that target, and at another only where the solver's own stop says it was never reached.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

# A ladder that climbs every rung (no f*) stops past this many (a million iterations at 10
# rungs a decade) and says so.
MAX_RUNGS = 60


@dataclass
class Rung:
    """One capped solve: the iterations it ran, its seconds, its certificates, its status and the
    solve itself (None for the top handed over)."""

    k: int
    seconds: float
    primal: float
    dual: float
    gap: float
    status: str
    fit: object = None

    @property
    def own_stop(self) -> bool:
        """Stopped by its own test (or diverged) before its cap: every longer cap gives the same solve."""
        return self.status != "max_iter"


# The grid of a solver without an iteration cap (LIBSVM's SMO pairs) ends here; a ladder stops
# at MAX_RUNGS rungs long before.
MAX_K = 10**12


def grid(per_decade: int, cap: int | None, below: int | None = None) -> list[int]:
    """The recorder's due points (solvers.Recorder: k -> max(k + 1, ceil(k 10^(1/per_decade)))) up
    to `cap` (MAX_K without one), and under `below` when given."""
    out, k = [], 1
    step = 10 ** (1.0 / per_decade)
    while k <= (cap if cap is not None else MAX_K) and (below is None or k < below):
        out.append(k)
        k = max(k + 1, int(math.ceil(k * step - 1e-9)))
    if cap is not None and out and out[-1] < cap and (below is None or cap < below):
        out.append(cap)     # the cap itself, where the grid steps over it
    return out


class Ladder:
    """The rungs of one ladder: run on demand (`rung`), kept by grid index, with the time they cost.

    solve(k) -> Fit: a cold solve capped at k iterations. top: the full solve handed over (a
    `Rung` without `fit`), or None. limit_s: the budget B, or None. deadline: a wall-clock
    instant (time.perf_counter) past which no rung is started: the task's own time limit."""

    def __init__(self, solve, per_decade: int, cap: int | None, top: Rung | None = None,
                 limit_s: float | None = None, deadline: float | None = None):
        self.solve, self.limit_s, self.deadline = solve, limit_s, deadline
        self.ks = grid(per_decade, cap, below=top.k if top is not None else None)
        self.rungs: dict[int, Rung] = {}
        self.end: int | None = None          # the grid index of the solver's own stop, once known
        if top is not None:
            self.ks.append(top.k)
            self.rungs[len(self.ks) - 1] = top
            self.end = len(self.ks) - 1
        self.spent = 0.0
        self.runs = 0
        self.cut: str | None = None          # "budget", "time limit" or "rungs" once one stopped a search

    def rung(self, i: int) -> Rung | None:
        """The rung at grid index i, run if not yet (None: the task's time is up)."""
        if self.end is not None and i >= self.end:
            return self.rungs[self.end]
        if i in self.rungs:
            return self.rungs[i]
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.cut = "time limit"
            return None
        fit = self.solve(self.ks[i])
        self.runs += 1
        self.spent += float(fit.fit_time_s)
        r = Rung(int(fit.n_iter), float(fit.fit_time_s), float(fit.primal), float(fit.dual), float(fit.gap),
                 fit.status, fit)
        self.rungs[i] = r
        if r.own_stop or i == len(self.ks) - 1:
            # Its own stop (or the cap): every later grid point is this solve.
            self.end = i
        return r

    def past_budget(self, r: Rung) -> bool:
        return self.limit_s is not None and r.seconds > self.limit_s

    def first(self, reached, stride: int) -> int | None:
        """The grid index of the first rung that reaches (reached(rung) true) within the budget,
        or None: never (the solver's own stop is short of it), or past the budget, the task's time
        or MAX_RUNGS (`cut`). Climbs `stride` grid points at a time from the highest rung known
        short of it (with the top known, it bisects from the start: the top is the last rung),
        then bisects between the last two."""
        def stops(r):
            return reached(r) or self.past_budget(r)

        if self.end is not None and not reached(self.rungs[self.end]):
            return None         # the solver's own stop is known and short of it: never
        known = sorted(self.rungs)
        hi = next((i for i in known if stops(self.rungs[i])), None)
        lo = max((i for i in known if hi is None or i < hi), default=-1)
        while hi is None:
            if len(self.rungs) >= MAX_RUNGS:
                self.cut = "rungs"
                return None
            i = min(lo + stride if lo >= 0 else 0, len(self.ks) - 1)
            r = self.rung(i)
            if r is None:
                return None
            i = min(i, self.end) if self.end is not None else i
            if stops(r):
                hi = i
            elif self.end is not None and i >= self.end:
                return None     # reached its own stop short of the target
            else:
                lo = i
        while hi - lo > 1:
            mid = (lo + hi) // 2
            r = self.rung(mid)
            if r is None:
                return None
            if stops(r):
                hi = mid
            else:
                lo = mid
        if self.past_budget(self.rungs[hi]):
            self.cut = "budget"     # no rung within B reaches it (one past B may): censored
            return None
        return hi

    def trace(self) -> list[tuple]:
        """(k, seconds, P, D, gap) of every rung, in k (a rung past the budget too: it was measured;
        the report reads no time past the budget of a censored fit). A solve capped at k' > k
        passes through the k-th iterate before it ends, so each rung's seconds bound every earlier
        iterate's: the time of rung k is the least of its own and every later rung's (a rung
        slowed by the machine is bounded by a later one, and the seconds grow with k, as a
        trace's do)."""
        rungs = sorted({r.k: r for r in self.rungs.values()}.values(), key=lambda r: r.k)
        if not rungs:
            return []
        times = np.minimum.accumulate(np.array([r.seconds for r in rungs])[::-1])[::-1]
        return [(r.k, float(t), r.primal, r.dual, r.gap) for r, t in zip(rungs, times)]


def climb(solve, per_decade: int, cap: int | None, f_star: float | None = None, target: float | None = None,
          top: Rung | None = None, limit_s: float | None = None, deadline: float | None = None) -> tuple[Ladder, dict]:
    """Run a ladder: (the `Ladder`, its info for the record). With f_star, the first rung whose
    (P - f*)/|f*| is at most `target`, within the budget; without, every rung up to the solver's
    own stop (within the budget), as a ladder always ran."""
    ladder = Ladder(solve, per_decade, cap, top, limit_s, deadline)
    if f_star is None or target is None:
        ladder.first(lambda r: False, stride=1)
    else:
        scale = abs(f_star) if f_star != 0 else 1.0
        ladder.first(lambda r: (r.primal - f_star) / scale <= target, stride=max(1, per_decade // 2))
    info = {"ladder_rungs": ladder.runs, "ladder_s": ladder.spent,
            "ladder_times": [r.seconds for i, r in sorted(ladder.rungs.items()) if r.fit is not None],
            # The target its rungs resolve (None: every rung, no target).
            "ladder_target": float(target) if f_star is not None and target is not None else None,
            # The record's end is the solver's own stop: a target it does not reach, it never reached.
            "ladder_own_stop": ladder.end is not None,
            # Cut by the task's time limit or the rung cap: the report cannot tell what came after.
            "ladder_cut": ladder.cut in ("time limit", "rungs"),
            "ladder_end": ladder.cut or ("own stop" if f_star is None or target is None else "target")}
    if limit_s is not None:
        info["timing_budget_s"] = float(limit_s)
        if ladder.cut == "budget":
            info["censored_at_s"] = float(limit_s)
    return ladder, info
