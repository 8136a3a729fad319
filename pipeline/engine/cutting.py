"""Cutting a plan's specs into what Dask runs, as pure functions of the specs: units (one spec,
or the points of one C path on one fold, run warm in increasing C; a few paths cut into segments
so that the workers finish together: `make_units`), and tasks of units (`TaskCutter`: as many as
`first_chunk` says before the sweep's pace is known, then each cut to last about TASK_S by the
last task's pace, `paced_chunk`); how many tasks are in flight and how big the next one is,
from the tasks that ended (`Pacer`, which holds no future and no clock: the dispatcher in
`execute` tells it what ended); and each spec's hard time limit (`hard_limits`)."""
from __future__ import annotations

import json
import math

from ..experiment.plan import Plan

# Tasks per worker that run.chunk=auto cuts before the sweep's pace is known (and everywhere
# under cluster=sequential): enough that the last tasks balance the load (the tail is
# ~1/TASKS_PER_WORKER of a worker's share), few enough that Dask's per-task cost (a few ms on
# the client and the scheduler) stays well under 5% of fits of ~50 ms.
TASKS_PER_WORKER = 40
# On Dask, once tasks have ended, run.chunk=auto cuts each next task to last about TASK_S by the
# last task's seconds per spec, and at most 1/(2 x workers) of the specs left (guided
# self-scheduling: tasks shrink towards the end, so the last ones balance the workers), but not
# under MIN_TASK_S. A Dask task boundary costs a worker 2-10 ms (its result back, the next task
# out: scenario (d) measured 3 ms a task with both cores busy); at 40 tasks per worker, fits of
# half a millisecond paid it every 70 ms. A task is also what an interrupted run loses. The
# last tasks are short, since a worker may finish while the other still has one queued.
TASK_S = 2.0
MIN_TASK_S = 0.04

def make_units(specs: list[dict], workers: int = 1, interleave: bool = False) -> list[list[dict]]:
    """Specs grouped into units: the specs of one C path together (run warm, in increasing C),
    every other spec alone. References come first: they are the longest solves. Then the units
    of one fold sit together (in order of first appearance), so that a task packs the fits of a
    few folds rather than one C over many (the plan's order): a worker then extracts only the
    folds its tasks use, not nearly every fold of the sweep. `interleave` (run.interleave) takes
    a fold's solver entries in turn, the i-th unit of each entry before the (i+1)-th of any, so
    that the fits a timing verdict pairs run back to back. With several workers, a sweep of
    few paths has some of them cut into segments (`cut_paths`), so that the workers finish
    together."""
    units, paths = [], {}
    for spec in specs:
        if spec.path:
            if spec.path not in paths:
                paths[spec.path] = []
                units.append(paths[spec.path])
            paths[spec.path].append(spec)
        else:
            units.append([spec])
    ids = _fold_ids(units)
    turn = [0] * len(units)          # the unit's place among its fold's units of its entry
    if interleave:
        seen: dict = {}
        for i, unit in enumerate(units):
            slot = (ids[i], unit[0].solver_entry)
            turn[i] = seen[slot] = seen.get(slot, -1) + 1
    order = sorted(range(len(units)), key=lambda i: (units[i][0].get("kind") != "reference", ids[i], turn[i]))
    return cut_paths([units[i] for i in order], workers)


# Paths are cut into segments only while the sweep has fewer than this many paths per worker:
# beyond, the last round's idle worker waits for at most 1/PATH_ROUNDS of the sweep.
PATH_ROUNDS = 4


def _point_cost(C: float, C_first: float) -> float:
    """A path point's relative cost before any was measured: 1 + log10(C / C_first). A dual
    solver's passes grow with C (dcd on an 80k-row rcv1_like path, C = 0.01..30 at tol 0.1,
    warm: 6, 5, 5, 6, 9, 15, 26, 31 passes); the log keeps one point from weighing the rest
    down, and cuts that path after C = 1, within 15% of its measured halves."""
    return 1.0 + math.log10(max(C / C_first, 1.0)) if C_first > 0 and C > 0 else 1.0


def _segments(path: list[dict], k: int) -> list[list[dict]]:
    """A path (in increasing C) cut into up to k runs of consecutive points of about equal
    `_point_cost`; each segment after the first starts cold (run_path)."""
    path = sorted(path, key=lambda s: s.problem["C"])
    costs = [_point_cost(s.problem["C"], path[0].problem["C"]) for s in path]
    k = min(k, len(path))
    total, out, acc, start = sum(costs), [], 0.0, 0
    for i, c in enumerate(costs):
        # A segment ends before the point whose middle passes the segment's share of the cost,
        # or before the points left are only as many as the segments still to come.
        if i > start and len(out) < k - 1 and (acc + c / 2 >= total * (len(out) + 1) / k
                                                or len(path) - i == k - 1 - len(out)):
            out.append(path[start:i])
            start = i
        acc += c
    out.append(path[start:])
    return out


def cut_paths(units: list[list[dict]], workers: int) -> list[list[dict]]:
    """Units with the last few C paths cut so that `workers` finish together. A path is one
    task (its points warm, in order), so P paths of like cost on W workers run in ceil(P / W)
    rounds, the last with P mod W = r busy workers and W - r idle (5 folds on 2 workers: the third
    round ran one path, and execute took 15.1 s for 11 s of work a worker). Cutting the last r
    paths into W segments each (`_segments`) gives the last round r segments a worker; a
    segment after the first of its path starts cold, which costs its first point (on the 80k
    path above, 0.28M coordinate steps of 5.2M). The segments go last, so that they fill
    the round the whole paths leave. Only while the sweep has fewer than PATH_ROUNDS paths per
    worker: with more, the last round is a small part of the sweep."""
    # A path search's walk (``path_stop``: LIBLINEAR's -C, pipeline/search/path.py) is never cut:
    # each of its points is tested from the one before, which a cold segment would not have.
    paths = [i for i, u in enumerate(units) if len(u) > 1 and not u[0].get("path_stop")]
    r = len(paths) % workers if workers > 1 else 0
    if not r or len(paths) >= PATH_ROUNDS * workers:
        return units
    cut = set(paths[-r:])
    segments = [seg for i in paths[-r:] for seg in _segments(units[i], workers)]
    return [u for i, u in enumerate(units) if i not in cut] + segments


def _fold_ids(units: list[list[dict]]) -> list[int]:
    """Each unit's fold (its data settings and fold number) as an index, in order of first appearance."""
    folds, data_ids, out = {}, {}, []
    for unit in units:
        spec = unit[0]
        data = spec.data
        # The plan shares one data dict among a dataset's specs: its id stands for its content.
        if id(data) not in data_ids:
            data_ids[id(data)] = json.dumps(data, sort_keys=True, default=str)
        out.append(folds.setdefault((data_ids[id(data)], spec.fold), len(folds)))
    return out


class TaskCutter:
    """Cuts units, in `make_units`' order, into tasks one at a time (`next`), each of at least
    `size` specs. A path is never split: its points run warm in order. A full task takes the
    rest of its last fold too (`make_units` keeps a fold's units together) when that keeps it
    under twice `size`: the fits of a fold then run on one worker, which extracts it once, not
    on two; a fold larger than that is cut, so that a sweep of few folds still spreads over the
    workers."""

    def __init__(self, units: list[list[dict]]):
        self.units = units
        self.left = sum(len(u) for u in units)      # specs not yet in a task
        self._pos = 0
        ids = _fold_ids(units)
        self._rest = [0] * len(units)                # specs of unit i's fold after unit i
        for i in range(len(units) - 2, -1, -1):
            self._rest[i] = self._rest[i + 1] + len(units[i + 1]) if ids[i + 1] == ids[i] else 0

    def next(self, size: int) -> list[list[dict]] | None:
        """The next task (its units), or None when every unit is in one."""
        if self._pos == len(self.units):
            return None
        task, count = [], 0
        while self._pos < len(self.units):
            i, unit = self._pos, self.units[self._pos]
            task.append(unit)
            count += len(unit)
            self._pos += 1
            if count >= size and (self._rest[i] == 0 or count + self._rest[i] >= 2 * size):
                break
        self.left -= count
        return task


def first_chunk(n_specs: int, n_workers: int, chunk) -> int:
    """Specs per task before the pace is known: run.chunk, or auto's TASKS_PER_WORKER per worker."""
    return int(chunk) if chunk != "auto" else max(1, n_specs // (max(1, n_workers) * TASKS_PER_WORKER))


def paced_chunk(left: int, n_workers: int, seconds_per_spec: float) -> int:
    """run.chunk=auto's next task once the pace is known: about TASK_S of work, at most
    1/(2 x workers) of the specs left, at least MIN_TASK_S of work (see TASK_S)."""
    pace = max(seconds_per_spec, 1e-9)
    return max(1, int(max(min(TASK_S / pace, left / (2 * max(1, n_workers))), MIN_TASK_S / pace)))


# Tasks per worker thread submitted ahead: one runs, one waits on its worker (Dask's
# worker-saturation sends two to a one-thread worker), one waits on the scheduler, which sends
# it as a worker's task ends. The client refills as tasks return, but it also unpickles their
# records and writes their shards, on cores the fits share: with only two in flight, a worker
# whose next task was short sometimes waited for it.
IN_FLIGHT = 3
# Once a unit (a spec, or a C path, which no task splits) takes this long, one task per worker
# thread is in flight, none queued: Dask sends a one-thread worker a second task to hold while
# the first runs, and at a sweep's end the other worker, done, cannot take it (a sweep of long
# C paths: one worker ran a held path alone at the end). Tasks of shorter units shrink
# towards the end (`paced_chunk`), so a held one costs little, and they keep three in flight:
# the client's round trip between tasks would cost them more.
LONG_UNIT_S = 0.5


def in_flight(workers: int, unit_s: float | None) -> int:
    """Tasks to keep submitted: IN_FLIGHT per worker thread, one once units last LONG_UNIT_S."""
    return workers if unit_s is not None and unit_s >= LONG_UNIT_S else IN_FLIGHT * workers


class Pacer:
    """The execute loop's decisions, from what it is told and nothing else (no Dask, no clock):
    how many tasks to keep in flight (`in_flight`), and how many specs the next task takes
    (`size`): run.chunk's, or before any task has ended `first_chunk`'s, then under
    run.chunk=auto `paced_chunk`'s by the seconds per spec of the last task that ended with a
    measured time (`ended`). `workers` follows the cluster (adaptive clusters grow and shrink)."""

    def __init__(self, specs: int, workers: int, chunk):
        self.workers, self.chunk = workers, chunk
        self.first = first_chunk(specs, workers, chunk)
        self.pace: float | None = None       # seconds per spec, of the last task timed
        self.unit_s: float | None = None     # seconds per unit, of the same task

    @property
    def paced(self) -> bool:
        """Whether a task has ended with a measured time (the loop refills before writing then)."""
        return self.pace is not None

    def in_flight(self) -> int:
        return in_flight(self.workers, self.unit_s)

    def size(self, left: int) -> int:
        """Specs for the next task, with `left` specs not yet in a task."""
        if self.pace and self.chunk == "auto":
            return paced_chunk(left, self.workers, self.pace)
        return self.first

    def ended(self, seconds: float, specs: int, units: int) -> None:
        """A task ended: its specs' summed seconds (0: none measured, which changes nothing)."""
        if seconds > 0:
            self.pace, self.unit_s = seconds / specs, seconds / units


def make_tasks(units: list[list[dict]], n_workers: int, chunk) -> list[list[list[dict]]]:
    """All the units cut into tasks of `first_chunk` specs (`TaskCutter`): cluster=sequential's
    tasks, and what `execute` starts a Dask sweep with."""
    cutter = TaskCutter(units)
    size = first_chunk(cutter.left, n_workers, chunk)
    return list(iter(lambda: cutter.next(size), None))


def hard_limits(plan: Plan, grace_s: float, specs=None) -> dict[str, float]:
    """Spec key -> the wall time after which its sandbox is killed and it becomes a `timeout` row:
    the solver's own limit times the binary problems it solves (one; k, k-1 or k(k-1)/2 for a
    multiclass fit), plus a grace for loading data and compiling. No limit, no entry. specs:
    these (a task's), not the whole plan's."""
    from solvers.multiclass import class_pairs
    out = {}
    for spec in specs if specs is not None else [*plan.references.values(), *plan.fits.values()]:
        limit = spec.budget.get("time_limit_s")
        if limit is None:
            continue
        n_classes = len(plan.datasets[spec.data["entry"]]["classes"])
        problems = 1 if n_classes <= 2 or spec.kind == "reference" else \
            len(class_pairs(spec.task.get("multi_class", "ovr"), n_classes))
        out[spec.key] = float(limit) * problems + grace_s
    return out
