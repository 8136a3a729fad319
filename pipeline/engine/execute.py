"""Execute: run a plan's tasks on Dask (or in-process) and write one shard per finished task.

The engine in its parts, each a module:

- `clusters`: where the tasks run and how this process reaches it (local, address, kept,
  slurm, kubernetes, sequential), loopback-only listening, TLS, Ctrl-C around a cluster's start;
- `cutting`: specs into units (a spec, or the missing points of one C path, run warm) and units
  into tasks (`TaskCutter`), pure functions of the specs: short fits share a task so that
  Dask's per-task cost stays a small part of the sweep; each next task is cut by the pace of the
  last, and as many kept in flight as the pace says (`Pacer`: three per worker thread,
  `IN_FLIGHT`; one once a unit lasts half a second, `in_flight`), a pure object the loop tells
  what ended;
- `warmup`: the workers warmed for the plan's solvers before the clock starts (`WarmUp`), their
  plugins checked, their sandboxes' events;
- `sink`: every record to disk as shards (`RecordSink`, `ShardWriter`: temporary file, one sync,
  rename), within WRITE_S of its coming, also while its task still runs (`RecordStream`), so an
  interrupted run loses only the fits that were running; records come in one way
  (`RecordSink.receive`), whether streamed or returned with their task, and each is taken once;
  what a rerun skips (`finished_in_plan`);
- this module: `Dispatcher`, which owns the futures of the tasks in flight (submits, yields
  each task as it ends, hands its records to the sink); `execute`, the loop that cuts tasks at
  the pacer's size, keeps the pacer's count in flight and tells it what ended; and the
  `Summary` it returns.

The fits of a distributed solver (cocoa) are not cut into tasks: each is driven from a thread of
this process beside the loop, across all the workers (`pipeline.engine.distributed`).

On Dask, each task runs in its worker thread's sandbox (`pipeline.engine.sandbox`): a spec past
its hard time limit becomes a ``timeout`` row, one whose process dies or outgrows its memory is
retried, then an error row naming the cause. A worker that dies is retried by Dask
(``run.retries``); a task that still fails becomes error rows.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..experiment.experiment import Experiment
from ..experiment.plan import Plan, made
from .sandbox import call_in_sandboxes, run_sandboxed
from .tasks import load_counts, run_task, thread_limits
from .clusters import dashboard_line, quiet_on_interrupt, shared_client
from .distributed import DistributedFits, is_distributed
from .cutting import IN_FLIGHT, Pacer, TaskCutter, first_chunk, hard_limits, make_tasks, make_units
from .handover import Handover
from .progress import ProgressLines, phase_of, wanted as progress_wanted, write_line
from .sink import RecordSink, RecordStream, ShardWriter, finished_in_plan, latest_status
from .warmup import WarmUp, WorkerEvents, check_worker_plugins, task_modules

# The worker's peak is given over the CSR only for data this large: below, the processes' own
# imports (~350 MB) are most of it and the ratio says nothing about the data path.
RATIO_CSR_MB = 100


@dataclass
class Summary:
    total: int
    done: int
    skipped: int
    failed: int
    wall_s: float
    dashboard: str | None = None
    tasks: int = 0            # Dask tasks the runs were packed into
    client_rss_mb: float = 0.0   # this process's peak resident memory so far
    loads: dict | None = None    # summed over workers: datasets read from the store, folds extracted
    worker_rss_mb: tuple | None = None   # (task process, worker) peak RSS of the task that held most, its solver
    csr_mb: float | None = None          # the largest dataset's CSR, what worker_rss_mb is measured against
    startup_s: float | None = None       # cluster start and warm-up, before wall_s's clock (WarmUp)
    startup_wait_s: float | None = None  # of which after planning ended
    threads_of_client: bool | None = None   # the workers were threads of this process (None: sequential)

    def line(self) -> str:
        loads = (f"; workers read {self.loads['datasets']} datasets and extracted {self.loads['folds']} folds"
                 if self.loads else "")
        memory = ""
        if self.worker_rss_mb and self.csr_mb:
            task, relay, solver = self.worker_rss_mb
            parts = (f"task process {task:.0f} + worker {relay:.0f}" if relay else
                     "in this process" if self.threads_of_client is None else
                     f"task process {task:.0f}; its worker is a thread of this process")
            memory = f"; worker peak RSS {task + relay:.0f} MB ({solver}: {parts})"
            if self.csr_mb >= RATIO_CSR_MB:
                memory += f" = {(task + relay) / self.csr_mb:.2f}x the largest dataset's CSR ({self.csr_mb:.0f} MB)"
        startup = (f"; before it, cluster start and warm-up {self.startup_s:.1f} s "
                   f"({self.startup_wait_s:.1f} s of it after planning)" if self.startup_s is not None else "")
        return (f"{self.total} tasks: {self.done} run, {self.skipped} skipped (already done), "
                f"{self.failed} failed, {self.wall_s:.2f} s wall ({self.tasks} Dask tasks; "
                f"client peak RSS {self.client_rss_mb:.0f} MB){startup}{loads}{memory}")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during execute, carrying the line for the user: how many tasks are saved where."""


def _progress(total: int, enabled: bool):
    from tqdm.auto import tqdm
    # disable=None: no bar when stderr is not a terminal (CI logs), as tqdm does by default.
    return tqdm(total=total, disable=None if enabled and total else True, unit="task", dynamic_ncols=True,
                file=sys.stderr, smoothing=0.1)


def _n_workers(client, cluster) -> int:
    """The worker threads the tasks are cut and submitted for: those the cluster has now, and on
    SLURM at least those of `adapt.maximum` jobs. Adaptive scaling asks for jobs by the work the
    scheduler holds; with only the present workers' tasks in flight it saw one job's worth
    and never grew past the first job (a sweep ran on one of two jobs' cores)."""
    if client is None:
        return 1
    present = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    if cluster.kind == "slurm":
        present = max(present, int(cluster.adapt["maximum"]) * int(cluster.jobqueue.get("cores") or 1))
    return max(1, present)


def _worker_loads(client) -> dict:
    """Datasets read and folds extracted so far, summed over the workers (this process under
    sequential): the counts that show a worker loads each dataset and fold once, not per task."""
    if client is None:
        per_process = [load_counts()]
    else:   # the caches, and so the counts, live in the workers' task processes (pipeline/engine/sandbox.py)
        # By name: unpickling the function itself would import `tasks` into each worker.
        per_process = [c for counts in client.run(call_in_sandboxes, "pipeline.engine.tasks:load_counts").values()
                       for c in counts]
    return {k: sum(c[k] for c in per_process) for k in ("datasets", "folds")}


class Dispatcher:
    """The Dask tasks in flight: `submit` sends one (its units pickled, with their hard limits,
    to `sandbox.run_sandboxed`) and keeps its future; iterating yields each task's units as it
    ends, and `take` then hands the sink what the task returned, on the one channel its streamed
    records came by (`RecordSink.receive`); a task that did not return (a worker lost beyond
    run.retries, a result that cannot be unpickled) becomes an error record for each of its specs
    that has no record yet. The futures are its own: released as their tasks are taken."""

    def __init__(self, client, sink: RecordSink, root: str, retries: int, threads: int, stream: str | None,
                 threads_of_client: bool):
        from distributed import as_completed
        self.client, self.sink, self.root, self.retries, self.threads, self.stream = \
            client, sink, root, retries, threads, stream
        self.threads_of_client = threads_of_client
        self.futures: dict = {}
        self.done: dict = {}          # units (by id) -> their ended future, until taken
        self.pending = as_completed()
        self.ended = 0

    def __len__(self) -> int:
        return len(self.futures)

    def submit(self, task) -> None:
        units, payload, limits = task
        self.sink.expect(units)
        fut = self.client.submit(run_sandboxed, payload, self.root, limits, self.retries, self.threads, self.stream,
                                 key=units[0][0].key, retries=self.retries, pure=False)
        self.futures[fut] = units
        self.pending.add(fut)

    def __iter__(self):
        for fut in self.pending:
            units = self.futures.pop(fut)
            self.done[id(units)] = fut
            yield units

    def take(self, units) -> None:
        """The ended task's records to the sink (see the class), and its future let go."""
        fut = self.done.pop(id(units))
        try:
            blobs, worker_peak = fut.result()
        except Exception as exc:  # worker lost beyond retries, or unpicklable result
            self.sink.add([{"key": spec.key, "kind": spec.kind, "status": "error",
                            "error": f"{type(exc).__name__}: {exc} (the task did not return; "
                                     f"retried {self.retries} times)"} for u in units for spec in u])
        else:
            # The worker's own peak, beside its sandbox's; none where the worker is a thread of
            # this process (its peak is the client's, in the closing line).
            self.sink.receive(blobs, env_worker_peak_rss_mb=math.nan if self.threads_of_client else worker_peak)
        fut.release()
        self.ended += 1


def execute(plan: Plan, run_dir: Path, exp: Experiment, root: str, log=print, client=None,
            warmup: WarmUp | None = None, finished: tuple[set, set] | None = None) -> Summary:
    """Run every task of the plan whose shard is missing; write a shard per task as tasks
    finish. client: a Dask client already open for exp.cluster, and warmup its warm-up
    (`warm_workers`), which run.py starts while it plans; without one, execute opens the
    cluster itself when there is work, and warms it. The phase's clock starts once every
    worker thread is warm: the cluster's start and warm-up are the command's fixed cost, reported
    apart (Summary.startup_s), not a per-task cost."""
    # The plan stores its specs as columns (`plan.Specs`): the tasks to run are views of them
    # (`plan.SpecView`), grouped and cut into tasks, and each task's specs are made as it is cut.
    total = len(plan.references) + len(plan.fits)
    # finished: (have, errors) as `finished_in_plan` gives them, from a caller that knows them
    # already (a search's driver, which reads every shard as it comes: each round would read
    # all the shards of the rounds before again).
    have, errors = finished if finished is not None else finished_in_plan(run_dir, plan, exp.run.retry_errors)
    have, errors = set(have), set(errors)
    if errors:
        # A fixed environment must be able to finish the run; the newer shard replaces its record.
        log(f"retrying {len(errors)} tasks that ended in error (run.retry_errors=false keeps them)")
        have -= errors
    todo = plan.references.select(have) + plan.fits.select(have)
    skipped = total - len(todo)
    if skipped:
        log(f"resuming: {skipped} of {total} tasks already have shards in {run_dir}/shards; skipping them")
    dashboard = None
    cluster = exp.cluster if todo else dataclasses.replace(exp.cluster, kind="sequential")
    threads_of_client = cluster.kind == "local" and not cluster.processes
    n_tasks = 0
    loads = None
    started = time.perf_counter()
    sink = RecordSink(ShardWriter(run_dir))
    # A library's timing ladders wait for their reference's and sweep twin's records (handover.py).
    handover = Handover(plan, todo, run_dir, have)
    sink.listeners.append(handover.take)
    opened = contextlib.nullcontext(client) if client is not None and todo else shared_client(cluster)
    # However the phase ends (Ctrl-C, an error), the records the client holds are written last.
    with _finally(sink.flush, True), opened as client, quiet_on_interrupt(), contextlib.ExitStack() as stack:
        if client is not None and warmup is None:    # opened here (a resumed run): warmed as well
            warmup = WarmUp([], started=started, planned=started)
            warmup.warm(client, {s.solver for s in todo}, int(cluster.blas_threads), task_modules(exp, plan))
        chunk = exp.run.chunk

        if client is None:
            before = _worker_loads(None) if todo else None
            t0 = time.perf_counter()
            bar = sink.bar = _progress(len(todo), bool(exp.run.progress))
            stack.enter_context(_progress_lines(todo, exp, run_dir, sink))

            def tasks():
                yield from make_tasks(make_units(handover.rest, interleave=bool(exp.run.interleave)), 1, chunk)
                while len(handover):     # the ladders last: every record they wait for is in
                    yield handover.ready(first_chunk(len(handover), 1, chunk), force=True)

            with thread_limits(int(cluster.blas_threads)):     # as a sandbox child runs, by its environment
                for units in tasks():
                    units = handover.hand(made(units))
                    sink.expect(units)
                    run_task(units, root, notify=_flushed(sink))
                    sink.ended(units)
                    sink.flush(force=True)
                    n_tasks += 1
        else:
            dashboard = dashboard_line(client, cluster)
            if dashboard:
                log(dashboard)
            workers = _n_workers(client, cluster)
            # Fits trained across the workers run in a thread of this process beside the loop
            # below, holding no worker slot (pipeline/engine/distributed.py); no ladder is one.
            # Their specs are made whole here: the driver reads them and the sink stores them.
            spread = DistributedFits(made([[s for s in todo if is_distributed(s)]])[0], root, client, run_dir,
                                     sink, int(exp.run.retries), log)
            stack.push(lambda kind, *_: spread.finish(interrupted=kind is not None))
            cutter = TaskCutter(make_units([s for s in handover.rest if not is_distributed(s)], workers,
                                           bool(exp.run.interleave)))
            pacer = Pacer(cutter.left + len(handover), workers, chunk)
            counted = time.monotonic()

            def cut(last: bool = False):
                """The next task, cut by the pace so far: (units, pickled units, hard limits), or None.
                Ladders whose records have come go first; `last`: nothing is in flight and every
                record that came is taken, so a ladder still waiting goes without what it waits for."""
                size = pacer.size(cutter.left + len(handover))
                units = handover.ready(size) or cutter.next(size) or (handover.ready(size, force=True) if last else None)
                if not units:
                    return None
                units = handover.hand(made(units))
                # The units go pickled, and the records come back pickled: Dask walks every
                # nested dict and list of a task's arguments looking for futures (seconds for a
                # sweep's specs on the client) and of its result to size it; bytes it passes
                # through. The pickle also keeps the one data dict that the task's specs share.
                return (units, pickle.dumps(units, protocol=pickle.HIGHEST_PROTOCOL),
                        hard_limits(plan, float(exp.run.timeout_grace_s), [s for u in units for s in u]))

            # The records of ended fits, streamed while their tasks run, taken as they come.
            stream = stack.enter_context(contextlib.closing(RecordStream(client, sink)))
            dispatcher = Dispatcher(client, sink, root, int(exp.run.retries), int(cluster.blas_threads), stream.name,
                                    threads_of_client)

            def refill(records_in: bool = True):
                while len(dispatcher) < pacer.in_flight() and \
                        (task := cut(records_in and not len(dispatcher))) is not None:
                    dispatcher.submit(task)

            # The first tasks are cut while the workers warm (which each worker would otherwise
            # wait for at the clock's start), and sent once all are warm.
            first_wave = []
            while len(first_wave) < IN_FLIGHT * workers and (task := cut(last=not first_wave)) is not None:
                first_wave.append(task)
            stack.enter_context(contextlib.closing(WorkerEvents(client, log)))
            warmup.wait(log)
            check_worker_plugins(client, todo)
            t0 = time.perf_counter()
            if spread.specs:
                spread.start()
            for task in first_wave:
                dispatcher.submit(task)
            bar = sink.bar = _progress(len(todo), bool(exp.run.progress))     # after the first tasks are out
            stack.enter_context(_progress_lines(todo, exp, run_dir, sink))
            for units in dispatcher:
                if pacer.paced:
                    refill(False)    # before this task's records and shard: the workers' queues first
                dispatcher.take(units)
                # The pace: this task's seconds per spec, over its records however they came (most
                # of a long task's by the stream, before it ended).
                pacer.ended(*sink.ended(units), len(units))
                if time.monotonic() - counted > 1.0:     # workers join and leave (adaptive clusters)
                    pacer.workers, counted = _n_workers(client, cluster), time.monotonic()
                # The pace and unit length this task gave decide the next cuts and how many are
                # in flight: the first task back sets both (the refill above waited for it).
                refill()
                sink.flush(force=True)     # a task's end writes what is held, as ever
            n_tasks = dispatcher.ended
            if spread.specs:
                spread.finish(interrupted=False)
        wall = time.perf_counter() - t0
        bar.close()
        if todo:
            # The workers' load counts: a round trip to every sandbox after the clock stops.
            after = _worker_loads(client)
            before = warmup.loads() if client is not None else before
            loads = {k: after[k] - before[k] for k in after}
    import resource
    worker_rss = sink.worker_rss
    return Summary(total=total, done=len(todo), skipped=skipped, failed=sink.failed,
                   wall_s=wall, dashboard=dashboard, tasks=n_tasks, loads=loads,
                   client_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                   worker_rss_mb=worker_rss if worker_rss[2] else None, csr_mb=_largest_csr_mb(plan, root),
                   startup_s=warmup.seconds if warmup else None, startup_wait_s=warmup.waited if warmup else None,
                   threads_of_client=None if client is None else threads_of_client)


@contextlib.contextmanager
def _progress_lines(todo: list, exp: Experiment, run_dir: Path, sink: RecordSink):
    """Progress lines to stderr and run.log while the block runs, where stderr is not a terminal (`progress`)."""
    if not todo or not progress_wanted(exp.run.progress):
        yield None
        return
    planned: dict = {}
    for spec in todo:
        phase = phase_of(spec)
        planned[phase] = planned.get(phase, 0) + 1
    search = next((s.search for s in todo if s.kind == "fit" and s.search), None)
    lines = ProgressLines(planned, write_line(run_dir), exp.run.progress_every_s,
                          sweep=f"search round {search['round']}" if search else "sweep")
    sink.listeners.append(lines.take)
    lines.start()
    try:
        yield lines
    finally:
        lines.stop()


@contextlib.contextmanager
def _finally(fn, *args):
    """fn(*args) when the block ends, however it ends."""
    try:
        yield
    finally:
        fn(*args)


def _flushed(sink: RecordSink):
    """A task's notify under cluster=sequential (`tasks.run_task`): each spec's record is the
    sink's as it ends (and on disk within WRITE_S), so a long task in this process keeps what
    it finished."""
    def notify(what, payload):
        if what == "record":
            sink.add([payload])
            sink.flush()
    return notify


def _largest_csr_mb(plan: Plan, root: str) -> float | None:
    """The CSR size of the plan's largest stored dataset, in MiB (what worker memory is measured
    against: bench_scale's "at most 2x the CSR")."""
    from ..data.store import csr_nbytes, dataset_info
    sizes = [csr_nbytes(dataset_info(root, d["name"])) for d in plan.datasets.values()]
    return max(sizes) / 2**20 if sizes else None


def _errors(run_dir: Path, keys):
    """(key, error text) of each task among keys whose newest record says status=error."""
    latest = latest_status(run_dir)
    for key in keys:
        status, error = latest.get(key, (None, None))
        if status == "error":
            yield key, error


def error_keys(run_dir: Path, keys) -> set[str]:
    """The keys among keys whose newest record is a failed task (no shard read for none)."""
    return {key for key, _ in _errors(run_dir, sorted(keys))} if keys else set()


def failure_lines(run_dir: Path, keys, limit: int = 10) -> list[str]:
    """One line per failed task (its key and the error's first line), for the closing summary."""
    out = []
    for key, error in _errors(run_dir, keys):
        first = ((error or "").strip().splitlines() or ["?"])[0]
        out.append(f"  {key}: {first}")
        if len(out) >= limit:
            break
    return out
