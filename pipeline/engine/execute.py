"""Execute: run a plan's tasks on Dask (or in-process) and write one shard per finished task.

- ``local``: a LocalCluster of as many workers as cores, one thread each, threads of this process
  (``cluster.processes=true``: processes of their own); the fits run in sandbox processes either way;
  ``address``: an existing scheduler (plain or TLS), probed first so that a dead address is one
  line; ``slurm``: dask-jobqueue, ``kubernetes``: dask-kubernetes, both adaptive; ``sequential``:
  no Dask.
- Specs are grouped into units (one spec, or the missing points of one C path, run warm in one
  unit) and units into tasks (`TaskCutter`): short fits share a task so that Dask's per-task
  cost stays a small part of the sweep; on Dask each next task is cut by the pace of the last
  (`paced_chunk`), three per worker thread in flight (`IN_FLIGHT`), one once a unit lasts half
  a second (`in_flight`).
- Tasks are submitted under their first spec's key and gathered with ``as_completed``. The
  client writes each task's records, each with the spec that produced it (so shards describe
  themselves), as one shard, ``shards/<first key>[.<generation>].parquet`` (`ShardWriter`: temp
  file, one sync, rename), and a rerun into the same run directory skips finished records. A
  file and a sync per fit could not keep up with fits of a few ms (issue 10, scenario d). The
  records of fits that end while their task still runs come to the client on a Dask queue
  (`RecordStream`) and are written within WRITE_S (`RecordSink`), so an interrupted run loses
  only the fits that were running.
- The cluster is usually open already, its workers warming (`warm_workers`): run.py starts it
  while it plans. The execute phase's clock starts once they are warm (`WarmUp`).
- On Dask, each task runs in its worker thread's sandbox (`pipeline.engine.sandbox`): a spec past its
  hard time limit becomes a ``timeout`` row, one whose process dies or outgrows its memory is
  retried, then an error row naming the cause. A worker that dies is retried by Dask
  (``run.retries``); a task that still fails becomes error rows.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import pickle
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..experiment.experiment import Experiment, as_dict, thaw
from ..experiment.plan import Plan, made
from ..results import shards as shard_format
from ..results.tables import iter_statuses, shard_files, shard_generation
from . import security as tls
from .kept import KEPT
from .kept import connection as kept_connection
from .kept import resolve as resolve_address
from .sandbox import FLUSH_S, call_in_sandboxes, run_sandboxed, warm_sandboxed
from .tasks import load_counts, run_task, thread_limits

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
# Tasks per worker thread submitted ahead: one runs, one waits on its worker (Dask's
# worker-saturation sends two to a one-thread worker), one waits on the scheduler, which sends
# it as a worker's task ends. The client refills as tasks return, but it also unpickles their
# records and writes their shards (tens of ms for a task of 2,000 fits, on cores the fits
# share): with only two in flight, a worker whose next task was short sometimes waited for it.
IN_FLIGHT = 3
# Once a unit (a spec, or a C path, which no task splits) takes this long, one task per worker
# thread is in flight, none queued: Dask sends a one-thread worker a second task to hold while
# the first runs, and at a sweep's end the other worker, done, cannot take it (scenario (b)'s 50
# C paths of 2.9 s: one worker ran a held path alone, 3.1 s of imbalance in 77 s). Tasks of
# shorter units shrink towards the end (`paced_chunk`), so a held one costs little, and they
# keep three in flight: the client's round trip between tasks would cost them more.
LONG_UNIT_S = 0.5
# The client writes the records it holds as one shard when a task ends, and once the oldest is
# this old (`RecordSink`): a fit's record is on disk within WRITE_S of reaching the client, and a
# task shorter than WRITE_S is one shard, as before. A shard per batch a sandbox sends (every
# FLUSH_S per worker thread) made a sweep of tiny fits many times more files than Dask tasks,
# each with its Parquet footer: more bytes a fit and slower tables (the sweep benchmark's
# scenario (g)).
WRITE_S = 2.0


def in_flight(workers: int, unit_s: float | None) -> int:
    """Tasks to keep submitted: IN_FLIGHT per worker thread, one once units last LONG_UNIT_S."""
    return workers if unit_s is not None and unit_s >= LONG_UNIT_S else IN_FLIGHT * workers


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


class ShardWriter:
    """Writes a run dir's shards: one Parquet file per Dask task holding its records as columns
    (`results.shards`), named ``<first key>.parquet``, or ``<first key>.<generation>.parquet`` after the first
    `execute` into the run dir. Each execute writes one generation, above every one on disk, so
    that a key written again (a retried error) is newest in a later generation (`results.shard_files`),
    and a name is never reused: no write replaces a file that holds other finished records."""

    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir) / "shards"
        files = shard_files(run_dir)
        self.generation = shard_generation(files[-1]) + 1 if files else 0

    def write(self, records: list[dict]) -> Path:
        """Write one task's records as one shard, atomically: to a temporary file, synced to disk,
        then renamed into place. A reader sees all of the task's records or none, after a killed
        process (rename is atomic) and after a power cut (the data is on disk before the rename
        makes it visible); one file and one sync per task, not per fit (issue 10, scenario d)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        suffix = f".{self.generation}" if self.generation else ""
        path = self.dir / f"{records[0]['key']}{suffix}.parquet"
        # The temporary name starts with "." and does not end in a shard suffix, so neither a rerun
        # (finished_keys) nor the results reader ever takes a half-written file for a shard.
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            _write_file(records, tmp)
            _sync_file(tmp)
            os.replace(tmp, path)
        except BaseException:
            # Invisible to readers, but a run that keeps failing here would pile them up.
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return path


class RecordSink:
    """Where the records of one `execute` go: shards (`ShardWriter`), each record with the spec
    that produced it, each key once, whichever way its record came first: a task's result, or
    the records its sandbox sent while the task still ran (`RecordStream`; under
    cluster=sequential, the task's own notify). A record is the client's as soon as it comes
    (`add`), and on disk when its task ends or within WRITE_S, whichever is first (`flush`):
    the records that came meanwhile are one shard, and all of them when the execute ends,
    however it ends (Ctrl-C, an error). So Ctrl-C or a killed worker (SIGKILL, a job's
    walltime) loses only the fits that were running (and at most FLUSH_S of those that had
    just ended, still in their sandbox), and a killed client at most WRITE_S more; the next run
    into the directory computes exactly the rest. Thread-safe: the stream's thread and the main
    thread both add and flush."""

    def __init__(self, shards: ShardWriter):
        self.shards = shards
        self.lock = threading.Lock()
        # Keys of the tasks in flight whose record is written or held to write: a task's are let
        # go when it ends (`ended`), after which a copy is refused by `specs` alone, so the sink
        # holds a few tasks' keys, not a million fits'.
        self.taken: set[str] = set()
        self.specs: dict[str, dict] = {}      # key -> spec, of the tasks sent and not yet ended
        self.failed = 0
        self.worker_rss = (0.0, 0.0, None)    # (task process, worker, solver) of the largest peak
        self.bar = None
        self._held: list[dict] = []            # records to write, oldest first
        self._since: float | None = None       # when the oldest of them came
        self._seconds: dict[str, float] = {}   # key -> its task seconds, of the tasks not yet ended

    def expect(self, units: list[list[dict]]) -> None:
        """A task's specs, before it is sent: its records may come from then on."""
        with self.lock:
            self.specs.update((spec["key"], spec) for u in units for spec in u)

    def ended(self, units: list[list[dict]]) -> tuple[float, int]:
        """A task has ended and its records are added: what comes of it later is a copy.
        Returns (the seconds its specs took, how many have a record), whichever way their
        records came: the sweep's pace (`execute`)."""
        seconds, n = 0.0, 0
        with self.lock:
            for u in units:
                for spec in u:
                    self.specs.pop(spec["key"], None)
                    self.taken.discard(spec["key"])
                    took = self._seconds.pop(spec["key"], None)
                    if took is not None:
                        seconds, n = seconds + took, n + 1
        return seconds, n

    def wanted(self, keys) -> bool:
        """Whether any of these keys is of a task in flight and has no record yet (a batch worth
        unpickling)."""
        return any(key in self.specs and key not in self.taken for key in keys)

    def add(self, records: list[dict]) -> int:
        """Take the records of keys this execute expects and has no record of, each with its
        spec, to write (`flush`); returns how many."""
        with self.lock:
            batch = [{**r, "spec": _without_plugin_text(self.specs[r["key"]])} for r in records
                     if r["key"] not in self.taken and r["key"] in self.specs]
            if not batch:
                return 0
            if not self._held:
                self._since = time.monotonic()
            self._held += batch
            self.taken.update(r["key"] for r in batch)
            self._seconds.update((r["key"], r.get("task_time_s") or 0.0) for r in batch)
            self.failed += sum(r["status"] == "error" for r in batch)
            self.worker_rss = max(
                [self.worker_rss, *((r["env_peak_rss_mb"], _measured(r.get("env_worker_peak_rss_mb")),
                                     r["spec"]["solver"]) for r in batch if r.get("env_peak_rss_mb"))],
                key=lambda m: m[0] + m[1])
            if self.bar is not None:
                if self.failed:
                    self.bar.set_postfix(failed=self.failed, refresh=False)
                self.bar.update(len(batch))
            return len(batch)

    def flush(self, force: bool = False) -> None:
        """Write the records held as one shard, if the oldest is WRITE_S old (or force). A write
        that fails (Ctrl-C in it, a full disk) gives them back, so that the next flush writes
        them: under the same name (their first key), should the failed one have been renamed
        into place already, so no key is ever in two shards of one execute."""
        with self.lock:
            if not self._held or not force and time.monotonic() - self._since < WRITE_S:
                return
            batch, since, self._held = self._held, self._since, []
        try:
            self.shards.write(batch)
        except BaseException:
            with self.lock:
                self._held, self._since = batch + self._held, since
            raise


class RecordStream:
    """The records that running tasks' sandboxes send (`sandbox.run_sandboxed`'s stream: each
    batch the child sends every FLUSH_S), taken from a Dask queue on the scheduler by a thread
    of the client and handed to the sink (`RecordSink`). A queue, not Dask's events: the
    scheduler hands each batch over once and keeps nothing, where an event topic and the
    batched streams it travels through each keep their last 1,000 messages, which at a sweep of
    tiny fits is most of its records, in the scheduler's and every worker's memory."""

    def __init__(self, client, sink: RecordSink):
        from distributed import Queue
        self.sink = sink
        self.queue = Queue(f"svmbench-records-{uuid.uuid4().hex}", client=client)
        self.name = self.queue.name
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="svmbench-record-stream", daemon=True)
        self._thread.start()

    def _take(self, timeout: float | None) -> list:
        """The batches on the queue: waiting up to timeout for the first (None: not waiting)."""
        first = [] if timeout is None else [self.queue.get(timeout=timeout, callback_timeout=timeout + 10)]
        return first + self.queue.get(batch=True, callback_timeout=10)

    def _add(self, batches: list) -> None:
        records = [r for keys, blob in batches if self.sink.wanted(keys) for r in pickle.loads(blob)]
        self.sink.add(records)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                self._add(self._take(FLUSH_S))
            except TimeoutError:
                pass
            except Exception:  # noqa: BLE001 - the client closing: `close` takes what is left
                return
            self.sink.flush()

    def close(self) -> None:
        """Stop the thread, then take what is still on the queue (after Ctrl-C too: what the
        tasks sent until now), and let the queue go; the sink writes it (`execute`)."""
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(Exception):
            self._add(self._take(None))
        with contextlib.suppress(Exception):
            self.queue.close()


def write_shard(run_dir: Path, records: list[dict] | dict) -> Path:
    """One shard of these records (one record, or a task's list), as the next `execute` would."""
    return ShardWriter(run_dir).write(records if isinstance(records, list) else [records])


def clean_partial_shards(run_dir: Path) -> int:
    """Delete the temporary files of shard writes cut short (a client killed mid-write). Readers
    ignore them anyway; removing them is safe only under the run dir's lock (`pipeline.engine.runlock`),
    where no other client can be writing one. Returns how many."""
    removed = 0
    for tmp in (Path(run_dir) / "shards").glob(".*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during execute, carrying the line for the user: how many tasks are saved where."""


def _write_file(records: list[dict], path: Path) -> None:
    """One shard file (`results.shards.write`): the writer's one step that puts bytes on disk."""
    shard_format.write(records, path)


def _sync_file(path: Path) -> None:
    """Flush one file's data to disk (fsync) before its rename makes it visible. Not syncfs,
    used while a shard was a file per fit: it flushes every file of the file system that other
    writes left dirty (the previous command's report, other processes' files), 45 ms a shard
    on this machine's /tmp beside another command, against one file's bytes here (issue 30,
    point 3: a 10-fit command's 6 shards)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Spec fields that travel to the workers only: a file plugin's text (its sha256 names it) and a
# halving rung's warm starts (the rung before's models, in their own records).
TRANSPORT_ONLY = ("plugin_text", "warm_state")


def _without_plugin_text(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k not in TRANSPORT_ONLY} \
        if any(k in spec for k in TRANSPORT_ONLY) else spec


def finished_keys(run_dir: Path) -> set[str]:
    """The keys that have a record in the run dir's shards (whatever its status)."""
    return {key for key, _, _ in iter_statuses(run_dir)}


def finished_in_plan(run_dir: Path, plan: Plan, with_errors: bool) -> tuple[set[str], set[str]]:
    """(the plan's keys that have a record in the shards, those of them whose newest record is
    an error, if with_errors): what a run skips and retries, and what a dry run counts. The
    shards' statuses are read once and the keys looked up in the plan in bulk (`Specs.rows`): at
    1,000,000 finished keys, two reads and a search per key took about 20 s of a resumed run."""
    latest = _latest_status(run_dir)
    done = list(latest)
    ours = (plan.fits.rows(done) >= 0) | (plan.references.rows(done) >= 0)
    have = {key for key, mine in zip(done, ours.tolist()) if mine}
    errors = {key for key in have if latest[key][0] == "error"} if with_errors else set()
    return have, errors


def _latest_status(run_dir: Path) -> dict[str, tuple[str, str | None]]:
    """key -> (status, error) of its newest record: the tables' view of it (`results.read_shards`)."""
    return {key: (status, error) for key, status, error in iter_statuses(run_dir)}


class ClusterError(RuntimeError):
    """A cluster that cannot be reached or started: one line for the user, no traceback."""


# A scheduler that does not answer is reported within this time (distributed's default is 30 s).
CONNECT_TIMEOUT_S = 8

# Dask's own instruments, which wake every process of the cluster tens of times a second and so
# take CPU from the fits on the same cores (issue 10, 7b: idle, 2 workers and their client
# process spent 13% of a core on them: README, Benchmarks): the statistical profiler samples
# the task thread's stack every 10 ms (our task thread only waits on its sandbox child, where
# the fit runs unseen by it anyway); the event loop's responsiveness tick every 20 ms; the
# system monitor (CPU, memory, network, disk counters for the dashboard) every 500 ms; the
# memory monitor every 100 ms (it watches the worker process, which only relays: the sandbox
# watches its child's memory itself). A key the user's Dask config sets keeps the user's value.
# The memory thresholds of a worker that is a thread of the client (cluster.processes=false),
# all off: what they measure is the whole process.
IN_PROCESS_WORKER_MEMORY = {f"distributed.worker.memory.{key}": False for key in ("target", "spill", "pause", "terminate")}
QUIET_DASK_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def quiet_dask_config() -> dict:
    """QUIET_DASK_CONFIG without the keys the user's Dask config (yaml or DASK_* variables) sets
    to other than distributed's default."""
    import dask
    import distributed  # noqa: F401 - registers distributed's defaults with dask.config
    defaults = dask.config.merge(*dask.config.defaults)
    return {key: value for key, value in QUIET_DASK_CONFIG.items()
            if dask.config.get(key) == dask.config.get(key, config=defaults)}


def quiet_dask_env() -> dict[str, str]:
    """quiet_dask_config as the DASK_* environment variables of workers we start elsewhere
    (SLURM job scripts, Kubernetes pods), where our process's config does not reach."""
    return {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
            for key, value in quiet_dask_config().items()}


@contextlib.contextmanager
def open_client(cluster):
    """A Dask client for the cluster config (None for sequential)."""
    kind = cluster.kind
    if kind == "sequential":
        yield None
        return
    from distributed import Client
    # Dask's INFO lines (workers starting and stopping, comms closing) are not the run's story.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    if kind == "address":
        with _connect(*address_security(cluster)) as client:
            yield client
        return
    if kind == "slurm":
        import dask
        # Adaptive scaling asks for jobs by the seconds of work queued, at 0.5 s a task of a
        # kind it has not timed yet: our first tasks (cut to about TASK_S) looked like one
        # job's work, and the second job was asked for only once the first had run a few. The
        # scheduler runs in this process and reads the durations as each kind's first task
        # arrives, hence for the cluster's whole life.
        durations = {f"distributed.scheduler.default-task-durations.{prefix}": f"{TASK_S}s" for prefix in ("fit", "ref")}
        with dask.config.set(durations), \
                slurm_cluster(cluster) as managed:
            managed.adapt(**_adapt_range(kind, cluster))
            with Client(managed, security=managed.security) as client:
                yield client
        return
    if kind == "kubernetes":
        with kubernetes_cluster(cluster) as managed:
            managed.adapt(**_adapt_range(kind, cluster))
            with Client(managed) as client:
                yield client
        return
    import dask
    from distributed import LocalCluster
    n = cluster.n_workers or os.cpu_count() or 1
    processes = bool(cluster.processes)
    # Workers log at CRITICAL only: a task's failure comes back through its future (an error
    # row with the cause), and a worker's lost heartbeat when the client stops (Ctrl-C) is not news.
    # The scheduler reads its config as it starts, and each nanny hands the config of its start
    # to its worker process (and to a restarted one): set around the start, it holds for the
    # cluster's life without changing this process's config for anything else.
    config = quiet_dask_config()
    if not processes:
        # A worker that is a thread of this process would measure this process (the client's
        # tables and report) against its memory limit, and pause or spill for it. The limit
        # is the sandboxes' (`sandbox._memory_share`), which they enforce on their own child.
        config.update(IN_PROCESS_WORKER_MEMORY)
    with contextlib.ExitStack() as stack:
        # A Ctrl-C while it starts is raised once the cluster is whole and will be closed.
        with _sigint_deferred():
            with dask.config.set(config):
                local = LocalCluster(n_workers=n, threads_per_worker=int(cluster.threads_per_worker),
                                     processes=processes, memory_limit=cluster.memory_limit,
                                     silence_logs=logging.CRITICAL, **_local_listening(cluster),
                                     **_worker_preload(processes))
            stack.enter_context(local)
            client = stack.enter_context(Client(local, security=local.security))
        try:
            yield client
        finally:
            if not processes:
                # Closing a worker thread waits for the task it runs, and a fit may run for
                # minutes: after Ctrl-C or an error, the sandboxes end now, their tasks with them.
                from .sandbox import stop_sandboxes
                stop_sandboxes({worker.address for worker in local.workers.values()})


@contextlib.contextmanager
def _quiet_on_interrupt():
    """On Ctrl-C, silence Dask's shutdown (cancelled callbacks, workers killed mid-task: logged
    with tracebacks by distributed and tornado) before the cluster closes: the run's own line,
    how many tasks are saved, is what the user needs."""
    try:
        yield
    except KeyboardInterrupt:
        for name in ("distributed", "tornado", "asyncio"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        raise


@contextlib.contextmanager
def _sigint_deferred():
    """Hold a Ctrl-C that comes during the block and raise it (KeyboardInterrupt) as the block
    ends: a LocalCluster is started inside, and entered into the `with` that closes it; a
    KeyboardInterrupt in the middle of its start would leave it half made, unclosed.
    Ctrl-C is never ignored meanwhile: the workers used to be started with SIGINT ignored in
    this whole process, so that they inherited the ignore, and a Ctrl-C in those seconds was
    lost (a resumed run opens its cluster after planning: interrupted there, it ran on and
    exited 0). Worker processes now ignore it themselves (`_worker_preload`). A process that
    ignores SIGINT (a background job of a non-interactive shell) keeps ignoring it."""
    import signal
    import threading
    held = []
    if threading.current_thread() is not threading.main_thread() or not callable(signal.getsignal(signal.SIGINT)):
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        previous(signal.SIGINT, None)


def _worker_preload(processes: bool) -> dict:
    """For worker processes of their own (cluster.processes=true), their Dask preloads with
    `pipeline.engine.sandbox` (its `dask_setup`: SIGINT ignored in the worker, so that Ctrl-C,
    which reaches the whole process group, is the client's alone to act on: one line, exit 130,
    no worker's KeyboardInterrupt traceback); a worker the nanny restarts gets it too. The
    user's own preloads come first. Workers that are threads of this process need none."""
    if not processes:
        return {}
    import dask
    return {"preload": [*(dask.config.get("distributed.worker.preload") or []), "pipeline.engine.sandbox"]}


# The cluster kept open by `keep_clusters` for the later runs of this process: (config, its
# open_client context, the client), or None outside keep_clusters.
_KEPT: list | None = None


@contextlib.contextmanager
def keep_clusters():
    """Within this context, the cluster a run opens stays open for the next run with the same
    cluster config, and is closed when the context ends (or a run wants another config).

    `python -m pipeline` runs inside it, so the jobs of a Hydra multirun (run one after the other
    in this process by Hydra's basic launcher) pay one cluster start-up, not one each, and the
    workers keep the datasets they already read (tasks.py's caches). Only one cluster is kept,
    so a sweep over cluster settings does not pile up workers."""
    global _KEPT
    _KEPT = []
    try:
        yield
    finally:
        kept, _KEPT = _KEPT, None
        for _, context, _ in kept:
            context.__exit__(None, None, None)


@contextlib.contextmanager
def shared_client(cluster):
    """open_client, or the client `keep_clusters` kept for the same cluster config."""
    if _KEPT is None or cluster.kind == "sequential":
        with open_client(cluster) as client:
            yield client
        return
    config = as_dict(cluster)
    # A client that lost its scheduler (an address cluster restarted between two jobs) is
    # replaced rather than handed to the next job.
    if _KEPT and (_KEPT[0][0] != config or _KEPT[0][2].status != "running"):
        _, context, _ = _KEPT.pop()
        context.__exit__(None, None, None)
    if not _KEPT:
        context = open_client(cluster)
        _KEPT.append((config, context, context.__enter__()))
    yield _KEPT[0][2]


def probe_cluster(cluster) -> None:
    """What can be checked of the cluster before any work: a SLURM walltime, and for
    cluster=address, ClusterError naming the address unless something accepts a TCP connection
    there: a refused port is known at once, where distributed retries it for its
    whole timeout (30 s) and then prints a long traceback."""
    if cluster.kind == "slurm":
        _lifetime_s(cluster)      # a walltime that cannot hold a worker's lifetime, before any work
    if cluster.kind == "address":
        _probe_address(resolve_address(cluster.address))


def _probe_address(address: str) -> None:
    import socket
    from urllib.parse import urlsplit
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme in ("tcp", "tls") and parts.hostname and parts.port:
        try:
            socket.create_connection((parts.hostname, parts.port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise ClusterError(f"cluster.address={address}: no Dask scheduler answers there "
                               f"({exc.strerror or exc}); start one with `dask scheduler` or fix the address") from None


def _connect(address: str, sec):
    """A client of the scheduler at address, or ClusterError naming it within CONNECT_TIMEOUT_S."""
    from distributed import Client
    _probe_address(address)
    if address.startswith("tls://") and sec is None:
        raise ClusterError(f"cluster.address={address}: a tls:// scheduler needs cluster.security.ca_file, "
                           f".cert and .key (PEM files)")
    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s", security=sec)
    except (OSError, TimeoutError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ClusterError(f"cluster.address={address}: could not connect to a Dask scheduler "
                           f"within {CONNECT_TIMEOUT_S} s: {first}") from None


def address_security(cluster) -> tuple[str, object]:
    """(address, distributed's Security or None) for cluster=address: the kept cluster's own
    (its state directory's credentials), else cluster.security's files; a plain tcp:// address
    on another machine is warned about once (`security.warn_plain_address`)."""
    if cluster.address == KEPT:
        return kept_connection()
    if tls.mode(cluster) == "files":
        return cluster.address, tls.from_files(cluster.security)
    tls.warn_plain_address(cluster.address)
    return cluster.address, None


# Where the listening sockets of a cluster started here go that no one outside needs: the
# scheduler's HTTP server (its dashboard) by default, and an in-process worker's HTTP server
# (its /metrics), which distributed would otherwise open on every interface.
LOOPBACK = "127.0.0.1:0"


def _local_listening(cluster) -> dict:
    """LocalCluster's arguments for where it listens and who may connect: the scheduler, the
    workers and their nannies on loopback (LocalCluster's default host; threads of this process
    use inproc:// and open no port but their HTTP servers'), the dashboard at
    cluster.dashboard_address (loopback unless named otherwise), and, with worker processes,
    TLS (cluster.security's files, else credentials made for this cluster, in memory): their
    scheduler listens on a loopback port that every local user can reach."""
    dashboard = cluster.dashboard_address
    args = {"dashboard_address": dashboard or LOOPBACK,
            # null: no dashboard, but the scheduler's HTTP server (health, metrics) on loopback
            "scheduler_kwargs": {"dashboard": dashboard is not None}}
    if not cluster.processes:
        args["worker_dashboard_address"] = LOOPBACK
    elif tls.mode(cluster) == tls.NONE:
        tls.warn_none("local")
    else:
        args["security"] = tls.from_files(cluster.security) if tls.mode(cluster) == "files" else tls.temporary()
    return args


def dashboard_line(client, cluster) -> str | None:
    """The run log's dashboard line: where it is, and, on loopback, how to reach it from another
    machine (an SSH tunnel); None without one."""
    import socket
    from urllib.parse import urlsplit
    scheduler = getattr(getattr(client, "cluster", None), "scheduler", None)
    server = getattr(scheduler, "http_server", None)       # a scheduler in this process (local, slurm)
    if server is not None:
        if cluster.dashboard_address is None:
            return None
        host = getattr(server, "address", None)
        link = f"http://{host if host not in (None, '', '0.0.0.0', '::') else socket.gethostname()}:{server.port}/status"
    else:
        link = client.dashboard_link
    if not link:
        return None
    parts = urlsplit(link)
    if not tls.is_loopback(parts.hostname):
        return f"dask dashboard: {link}"
    return (f"dask dashboard: {link} (on this machine's loopback only; from another machine: "
            f"`ssh -L {parts.port}:127.0.0.1:{parts.port} {socket.gethostname()}`, then http://localhost:{parts.port}/status)")


def _adapt_range(kind: str, cluster) -> dict:
    a = cluster.adapt
    # dask-jobqueue scales in jobs (each `processes` workers); dask-kubernetes in workers.
    return ({"minimum_jobs": int(a["minimum"]), "maximum_jobs": int(a["maximum"])} if kind == "slurm"
            else {"minimum": int(a["minimum"]), "maximum": int(a["maximum"])})


def _walltime_s(walltime: str) -> int:
    """SLURM's time formats in seconds: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch --time)."""
    days, _, clock = str(walltime).rpartition("-")
    try:
        parts = [int(p) for p in clock.split(":")]
        if not 1 <= len(parts) <= 3 or days and not days.isdigit():
            raise ValueError
    except ValueError:
        raise ClusterError(f"cluster.jobqueue.walltime={walltime!r}: not a SLURM time "
                           f"(M, M:S, H:M:S, D-H, D-H:M or D-H:M:S)") from None
    if days:
        h, m, sec = parts + [0] * (3 - len(parts))
    else:
        h, m, sec = [0] * (3 - len(parts)) + parts if len(parts) > 1 else [0, parts[0], 0]
    return int(days or 0) * 86400 + h * 3600 + m * 60 + sec


def _lifetime_s(cluster) -> int:
    """A SLURM worker's --lifetime: the walltime less the margin, which must leave room for the stagger."""
    walltime = cluster.jobqueue.get("walltime")
    lifetime = _walltime_s(walltime) - int(cluster.lifetime_margin_s)
    if lifetime <= int(cluster.lifetime_stagger_s):
        raise ClusterError(f"cluster.jobqueue.walltime={walltime}: too short for lifetime_margin_s="
                           f"{cluster.lifetime_margin_s} + lifetime_stagger_s={cluster.lifetime_stagger_s}")
    return lifetime


@contextlib.contextmanager
def slurm_cluster(cluster):
    """dask-jobqueue's SLURMCluster for cluster=slurm (not yet scaled: `open_client` adapts it),
    open for the block (`with slurm_cluster(exp.cluster) as c: print(c.job_script())`).

    Each worker retires (`--lifetime`) `lifetime_margin_s` before the job's walltime, give or take
    `lifetime_stagger_s` (so the workers of a job do not all leave at once), and adaptive scaling
    submits new jobs: SLURM's kill at walltime would instead meet running tasks, lost with their
    worker and counted against `allowed-failures`.

    The scheduler, in this process, listens on the login node's network for the jobs' workers:
    TLS by default (`_slurm_security`), its dashboard on loopback (cluster.dashboard_address)."""
    SLURMCluster = _jobqueue_slurm()
    jq = thaw(cluster.jobqueue)
    # The job's workers run this process's python, so the venv the client plans with (svmbench,
    # numpy, numba, distributed: the versions each row records) is the one that fits; set
    # `python` for another interpreter at the same path on the nodes.
    jq["python"] = jq.get("python") or sys.executable
    lifetime = _lifetime_s(cluster)
    jq["worker_extra_args"] = [*jq.get("worker_extra_args", []),
                               "--lifetime", f"{lifetime}s", "--lifetime-stagger", f"{int(cluster.lifetime_stagger_s)}s"]
    jq["job_script_prologue"] = [*jq.get("job_script_prologue", []), *_thread_exports(cluster),
                                 *(f"export {k}={v}" for k, v in quiet_dask_env().items())]
    dashboard = cluster.dashboard_address
    jq["scheduler_options"] = {"dashboard_address": dashboard or LOOPBACK, "dashboard": dashboard is not None,
                               **(jq.get("scheduler_options") or {})}
    with _slurm_security(cluster, jq) as sec:
        if sec is not None:
            # dask-jobqueue: the scheduler on tls://, and each worker's --protocol tls:// and
            # --tls-ca-file, --tls-cert, --tls-key (the files' paths) in the job script.
            jq["security"] = sec
            jq["job_script_prologue"].append("export DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION=True")
        with SLURMCluster(**{k: v for k, v in jq.items() if v is not None}) as managed:
            yield managed


@contextlib.contextmanager
def _slurm_security(cluster, jq: dict):
    """The Security of a SLURM cluster for the block: cluster.security's files, none for
    cluster.security=none (warned about), else credentials made for this cluster alone
    (`security.credentials_dir`), in a 0700 directory under the jobs' shared file system
    (cluster.jobqueue.shared_temp_directory, else the log directory the jobs write to, else the
    working directory), deleted when the cluster closes."""
    kind = tls.mode(cluster)
    if kind == tls.NONE:
        tls.warn_none("slurm")
        yield None
    elif kind == "files":
        yield tls.from_files(cluster.security)
    else:
        shared = jq.get("shared_temp_directory") or jq.get("log_directory") or os.getcwd()
        with tls.credentials_dir(Path(shared)) as (sec, _):
            yield sec


def _jobqueue_slurm():
    """dask-jobqueue's SLURMCluster, imported without its side effect on Ctrl-C: its runner
    module (0.9) sets SIGINT's handler to `sys.exit` as it is imported, which turned Ctrl-C on a
    cluster=slurm run into a bare SystemExit instead of the run's one line and exit code 130.
    Its call is refused while it imports (`signal.signal` set aside for the import), rather than
    undone after it: a Ctrl-C in between would have met its handler and exited 0."""
    import signal
    real = signal.signal

    def keep_sigint(signum, handler):
        # Refused for SIGINT while it imports: a Ctrl-C meanwhile would run its handler
        # (a bare SystemExit, exit 0) instead of ours.
        return signal.getsignal(signum) if signum == signal.SIGINT else real(signum, handler)
    signal.signal = keep_sigint
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ClusterError("cluster=slurm needs dask-jobqueue: pip install 'svmbench[slurm]'") from None
    finally:
        signal.signal = real
    return SLURMCluster


def _thread_exports(cluster) -> list[str]:
    from .sandbox import THREAD_VARS
    return [f"export {v}={int(cluster.blas_threads)}" for v in THREAD_VARS]


def kubernetes_cluster(cluster):
    """dask-kubernetes' KubeCluster for cluster=kubernetes (the operator must run in the cluster)."""
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError:
        raise ClusterError("cluster=kubernetes needs dask-kubernetes: pip install 'svmbench[kubernetes]'") from None
    tls.warn_once(("kubernetes",), "warning: cluster=kubernetes: dask-kubernetes' operator starts its scheduler "
                  "without TLS: any pod that reaches its service can run code as the workers' user; restrict it "
                  "with a Kubernetes NetworkPolicy (docs: Clusters, Kubernetes)")
    k = thaw(cluster.kubernetes)
    from .sandbox import THREAD_VARS
    env = {**{v: str(cluster.blas_threads) for v in THREAD_VARS}, **quiet_dask_env(), **(k.get("env") or {})}
    return KubeCluster(name=k["name"], image=k["image"], resources=k.get("resources") or {}, env=env,
                       n_workers=int(cluster.adapt["minimum"]))


def _progress(total: int, enabled: bool):
    from tqdm.auto import tqdm
    # disable=None: no bar when stderr is not a terminal (CI logs), as tqdm does by default.
    return tqdm(total=total, disable=None if enabled and total else True, unit="task", dynamic_ncols=True,
                file=sys.stderr, smoothing=0.1)


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
        if spec.get("path"):
            if spec["path"] not in paths:
                paths[spec["path"]] = []
                units.append(paths[spec["path"]])
            paths[spec["path"]].append(spec)
        else:
            units.append([spec])
    ids = _fold_ids(units)
    turn = [0] * len(units)          # the unit's place among its fold's units of its entry
    if interleave:
        seen: dict = {}
        for i, unit in enumerate(units):
            slot = (ids[i], unit[0].get("solver_entry"))
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
    path = sorted(path, key=lambda s: s["problem"]["C"])
    costs = [_point_cost(s["problem"]["C"], path[0]["problem"]["C"]) for s in path]
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
    paths = [i for i, u in enumerate(units) if len(u) > 1]
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
        data = spec.get("data")
        # The plan shares one data dict among a dataset's specs: its id stands for its content.
        if id(data) not in data_ids:
            data_ids[id(data)] = json.dumps(data, sort_keys=True, default=str)
        out.append(folds.setdefault((data_ids[id(data)], spec.get("fold")), len(folds)))
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
        limit = spec["budget"].get("time_limit_s")
        if limit is None:
            continue
        n_classes = len(plan.datasets[spec["data"]["entry"]]["classes"])
        problems = 1 if n_classes <= 2 or spec["kind"] == "reference" else \
            len(class_pairs(spec["task"].get("multi_class", "ovr"), n_classes))
        out[spec["key"]] = float(limit) * problems + grace_s
    return out


def _n_workers(client, cluster) -> int:
    """The worker threads the tasks are cut and submitted for: those the cluster has now, and on
    SLURM at least those of `adapt.maximum` jobs. Adaptive scaling asks for jobs by the work the
    scheduler holds; with only the present workers' tasks in flight it saw one job's worth
    and never grew past the first job (issue 32: a sweep ran on one of two jobs' cores)."""
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


def task_modules(exp: Experiment, plan: Plan | None = None) -> list[str]:
    """The scikit-learn modules this run's tasks import, which their warm-up imports ahead
    (`tasks.warm`): none for a binary k-fold fit without scaling (its folds are numpy's,
    `plan._kfold`), so two sandboxes on two cores no longer import it for nothing (a second of
    CPU each, before the first task: issue 30, point 3). A subsample (max_rows) or a split other
    than k-fold draws with model_selection, a scaler is preprocessing's, and a multiclass fit's
    confusion matrix is metrics' (known once the plan has the classes)."""
    datasets = list(exp.datasets.values())
    modules = set()
    if exp.cv.kind in ("holdout", "repeated", "kfold_test") or any(ds.max_rows is not None for ds in datasets):
        modules.add("sklearn.model_selection")
    if any(ds.scale != "none" for ds in datasets):
        modules.add("sklearn.preprocessing")
    if plan is not None and any(len(d["classes"]) > 2 for d in plan.datasets.values()):
        modules.add("sklearn.metrics")
    return sorted(modules)


def warm_workers(client, solver_names: list[str], threads: int, modules: list[str] = ()) -> list:
    """Submit the warm-up (`sandbox.warm_sandboxed`) to every thread of every worker the cluster
    has now: each starts its sandbox child and warms it for these solvers and imports these
    modules (`task_modules`), so that no task pays
    the child's start (a second or two), its imports or numba's compilation. Returns the
    futures, which the caller keeps until its tasks are done (a released future is cancelled).
    Submitted before the tasks, they run first (Dask's priority follows submission order); a
    worker that joins later (adaptive clusters) warms on its first task, outside the fit's clock."""
    futures = []
    for address, info in client.scheduler_info()["workers"].items():
        for thread in range(int(info.get("nthreads", 1))):
            futures.append(client.submit(warm_sandboxed, sorted(solver_names), int(threads), sorted(modules),
                                         workers=[address],
                                         allow_other_workers=False, pure=False,
                                         key=f"warm-up-{uuid.uuid4().hex[:8]}-{thread}"))
    return futures


def check_worker_plugins(client, specs) -> None:
    """Raise ClusterError, before any task is submitted, when a plugin the specs' solvers come
    from (`solvers.registry.plugin_needs`: a module, an installed entry point, a file) does not
    load where the tasks run: each worker's warm sandboxes, whose environment the tasks get
    (a worker with none answering, its child dead at warm-up, is asked in a worker thread). The
    message names the plugin, each worker's address and the import error's last line with its
    file:line. Without it, every fit of that solver would end as an error row of its own, after
    the run had started. A file plugin is loaded from the text the check carries, as each of its
    fit specs does (`tasks.ensure_plugin`): a file that imports what a worker lacks is caught
    too. Workers that join later (adaptive clusters) are not checked: their fits say it."""
    from solvers.registry import plugin_needs
    texts = {spec["plugin"]["sha256"]: spec["plugin_text"] for spec in specs if spec.get("plugin_text")}
    needs = plugin_needs({spec["solver"] for spec in specs}, texts)
    if not needs:
        return

    # Defined here, so that Dask and the sandbox pickle it by value: neither the worker nor its
    # child imports this module (half a second of imports) to run it.
    def missing() -> list[str]:
        from solvers.registry import missing_plugins
        return missing_plugins(needs)

    answers = client.run(call_in_sandboxes, missing, on_error="ignore")
    unanswered = [address for address in client.scheduler_info()["workers"] if not answers.get(address)]
    threads = {address: client.submit(missing, workers=[address], allow_other_workers=False, pure=False,
                                      key=f"plugin-check-{uuid.uuid4().hex[:8]}")
               for address in unanswered}
    for address, future in threads.items():
        with contextlib.suppress(Exception):    # a worker lost meanwhile: Dask's to replace
            answers[address] = [future.result()]
    where: dict[str, list[str]] = {}
    for address in sorted(answers):
        for line in dict.fromkeys(line for lines in answers[address] for line in lines):
            where.setdefault(line, []).append(address)
    if where:
        raise ClusterError(
            "a plugin does not load where the tasks run, so no task was submitted (results already written are "
            "kept): " + "; ".join(f"on worker {', '.join(addresses)}: {line}" for line, addresses in where.items())
            + ". Install it in the workers' environment, or give it as a file (plugins=[path/to/file.py]), "
              "which the run ships to the workers")


@dataclass
class WarmUp:
    """The cluster's start and its workers' warm-up (`warm_workers`), timed: `execute` cuts its
    first tasks meanwhile and waits for it before its clock starts, so that its phase holds the
    tasks alone, and reports it apart."""
    futures: list
    started: float                  # perf_counter when the cluster began to start
    planned: float | None = None    # when planning ended (run.py plans meanwhile)
    seconds: float | None = None    # from the cluster's start until the last worker thread was warm
    waited: float = 0.0             # what the run waited for it after planning ended
    solvers: set = field(default_factory=set)   # what the workers warm for (named in the progress lines)
    modules: set = field(default_factory=set)   # what they import for the tasks (`task_modules`)

    def __post_init__(self):
        self._done = []
        futures, self.futures = self.futures, []
        self.extend(futures)

    def extend(self, futures: list) -> None:
        """More warm-ups to time and wait for (solvers only the plan names: its references')."""
        for fut in futures:         # called on the client's event loop as each warm-up ends
            fut.add_done_callback(lambda _: self._done.append(time.perf_counter()))
        self.futures += futures

    def warm(self, client, solvers, threads: int, modules=()) -> None:
        """Warm every worker thread for these solvers and modules too (`warm_workers`), timed
        with the rest; what it warmed already is not warmed again."""
        solvers, modules = set(solvers) - self.solvers, set(modules) - self.modules
        if solvers or modules:
            self.extend(warm_workers(client, sorted(solvers), threads, sorted(modules)))
            self.solvers.update(solvers)
            self.modules.update(modules)

    def wait(self, log=None) -> None:
        """Wait for every warm-up (at most WARMUP_WAIT_S: a worker lost meanwhile is Dask's to
        replace, and its replacement warms on its first task). Tasks submitted before it ends
        would start on the first warm worker thread while the others still warm, slowing their
        warm-up (2 cores: up to 160 ms later, against 3-13 ms apart when they warm alone).

        A warm-up that outlasts WARMUP_QUIET_S is said, then how far it is every
        WARMUP_PROGRESS_S: on a machine's first run numba compiles the solvers' kernels here,
        a minute or two in which the command would otherwise print nothing."""
        from distributed import wait
        deadline = time.perf_counter() + WARMUP_WAIT_S
        say_at, first = self.started + WARMUP_QUIET_S, True
        while (pending := [f for f in self.futures if not f.done()]) and (now := time.perf_counter()) < deadline:
            if log is not None and now >= say_at:
                log(self.progress_line(now, first))
                say_at, first = now + WARMUP_PROGRESS_S, False
            with contextlib.suppress(TimeoutError):
                wait(pending, timeout=max(0.01, min(say_at, deadline) - now), return_when="FIRST_COMPLETED")
        now = time.perf_counter()
        self.seconds = max(self._done, default=now) - self.started
        self.waited = max(0.0, now - (self.planned or now))

    def _results(self) -> list[dict]:
        """Each ended warm-up's result (`sandbox.warm_sandboxed`); one whose child died (None)
        or whose worker was lost (not finished) is left out."""
        return [r for r in (f.result() for f in self.futures if f.status == "finished") if r is not None]

    def progress_line(self, now: float, first: bool = False) -> str:
        """How far the warm-up is; the first line says what it does and why it can take minutes."""
        ready = sum(f.done() for f in self.futures)
        line = f"warming {len(self.futures)} worker threads: {ready} ready after {now - self.started:.0f} s"
        if first:
            line = (f"warming {len(self.futures)} worker threads for {', '.join(sorted(self.solvers)) or 'the solvers'}: "
                    f"{ready} ready after {now - self.started:.0f} s (each starts its sandbox and loads the solvers' "
                    f"numba kernels; the first run on a machine compiles them into numba's cache, a minute or two, "
                    f"and later runs load them in a second)")
        return line

    def thread_seconds(self) -> list[float]:
        """Each worker thread's warm-up seconds (its sandbox's start included); one whose child
        died (None) or whose worker was lost (not finished) is left out."""
        return [r["seconds"] for r in self._results()]

    def loads(self) -> dict:
        """The load counts (`tasks.load_counts`) the warm sandboxes held before their first task,
        summed: the run's own reads are the workers' counts at its end less these. A sandbox
        that died, or started later, began its counts at zero."""
        return {k: sum(r["loads"][k] for r in self._results()) for k in ("datasets", "folds")}


WARMUP_WAIT_S = 300
WARMUP_QUIET_S = 5.0        # a warm-up this long is said (a warm cache takes 1-3 s) ...
WARMUP_PROGRESS_S = 10.0    # ... and how far it is, this often


class WorkerEvents:
    """One log line for each worker that joins or leaves the cluster while tasks run: on an
    adaptive cluster (SLURM jobs that start, retire at their --lifetime, are cancelled or reach
    their walltime) the log then says why a task ran twice or the sweep slowed down.

    The scheduler sends its add-worker and remove-worker events (topic "all") to the client's
    event loop, where each becomes its line at once. Nothing there may wait on the scheduler,
    so a worker is named from the scheduler in this process (dask-jobqueue's, LocalCluster's),
    with its SLURM job, as it joins; elsewhere by its address."""

    def __init__(self, client, log):
        self.client, self.log = client, log
        cluster = getattr(client, "cluster", None)
        self.scheduler = getattr(cluster, "scheduler", None)    # None for a remote scheduler
        self.jobs = getattr(cluster, "workers", None)           # dask-jobqueue: {job name: job}
        self.names = {address: self._named(str(info.get("name", address)))
                      for address, info in client.scheduler_info()["workers"].items()}
        client.subscribe_topic("all", self._event)

    def _named(self, name: str) -> str:
        # dask-jobqueue names a job's workers <job name>[-<i>] (processes > 1).
        job = (self.jobs or {}).get(name) or (self.jobs or {}).get(name.rpartition("-")[0])
        job_id = getattr(job, "job_id", None)
        return f"{name} (SLURM job {job_id})" if job_id else name

    def _event(self, event) -> None:
        _, msg = event
        address = msg.get("worker")
        if msg.get("action") == "add-worker":
            state = getattr(self.scheduler, "workers", {}).get(address)
            self.names[address] = self._named(str(state.name)) if state is not None else address
        line = self.line(msg, self.names.get(address, address))
        if line:
            self.log(line)

    @staticmethod
    def line(msg: dict, who: str) -> str | None:
        """The event's line: a worker joined, retired (at its --lifetime, or by the adaptive
        scaling) or was lost (its job cancelled, past its walltime, its node gone)."""
        action = msg.get("action")
        if action == "add-worker":
            return f"worker {who} joined"
        if action != "remove-worker":
            return None
        stimulus = str(msg.get("stimulus_id", ""))
        running = len(msg.get("processing-tasks") or ())
        if stimulus.startswith("worker-close-gracefully"):
            # `dask worker --lifetime` closes the worker this way; so does one told to close.
            why = "retired (its --lifetime, before its job's walltime)"
        elif msg.get("expected"):
            why = "retired by the adaptive scaling"
        else:
            why = "lost (its job cancelled, past its walltime, or its node gone)"
        again = f"; its {running} unfinished task(s) run again elsewhere" if running else ""
        return f"worker {who} left: {why}{again}"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.unsubscribe_topic("all")


def execute(plan: Plan, run_dir: Path, exp: Experiment, root: str, log=print, client=None,
            warmup: WarmUp | None = None) -> Summary:
    """Run every task of the plan whose shard is missing; write a shard per task as tasks
    finish. client: a Dask client already open for exp.cluster, and warmup its warm-up
    (`warm_workers`), which run.py starts while it plans; without one, execute opens the
    cluster itself when there is work, and warms it. The phase's clock starts once every
    worker thread is warm: the cluster's start and warm-up are the command's fixed cost, reported
    apart (Summary.startup_s), not a per-task cost."""
    # The plan stores its specs as columns (`plan.Specs`): the tasks to run are views of them
    # (`plan.SpecView`), grouped and cut into tasks, and each task's specs are made as it is cut.
    total = len(plan.references) + len(plan.fits)
    have, errors = finished_in_plan(run_dir, plan, exp.run.retry_errors)
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
    opened = contextlib.nullcontext(client) if client is not None and todo else shared_client(cluster)
    # However the phase ends (Ctrl-C, an error), the records the client holds are written last.
    with _finally(sink.flush, True), opened as client, _quiet_on_interrupt(), contextlib.ExitStack() as stack:
        if client is not None and warmup is None:    # opened here (a resumed run): warmed as well
            warmup = WarmUp([], started=started, planned=started)
            warmup.warm(client, {s["solver"] for s in todo}, int(cluster.blas_threads), task_modules(exp, plan))
        chunk = exp.run.chunk

        if client is None:
            before = _worker_loads(None) if todo else None
            t0 = time.perf_counter()
            bar = sink.bar = _progress(len(todo), bool(exp.run.progress))
            with thread_limits(int(cluster.blas_threads)):     # as a sandbox child runs, by its environment
                for units in make_tasks(make_units(todo, interleave=bool(exp.run.interleave)), 1, chunk):
                    units = made(units)
                    sink.expect(units)
                    run_task(units, root, notify=_flushed(sink))
                    sink.ended(units)
                    sink.flush(force=True)
                    n_tasks += 1
        else:
            from distributed import as_completed
            dashboard = dashboard_line(client, cluster)
            if dashboard:
                log(dashboard)
            workers = _n_workers(client, cluster)
            cutter = TaskCutter(make_units(todo, workers, bool(exp.run.interleave)))
            first = first_chunk(cutter.left, workers, chunk)
            futures, pace, counted, unit_s = {}, None, time.monotonic(), None

            def cut():
                """The next task, cut by the pace so far: (units, pickled units, hard limits), or None."""
                units = cutter.next(paced_chunk(cutter.left, workers, pace) if pace and chunk == "auto" else first)
                if units is None:
                    return None
                units = made(units)
                # The units go pickled, and the records come back pickled: Dask walks every
                # nested dict and list of a task's arguments looking for futures (1.7 s for
                # 10,000 specs on the client) and of its result to size it; bytes it passes
                # through. The pickle also keeps the one data dict that the task's specs share.
                return (units, pickle.dumps(units, protocol=pickle.HIGHEST_PROTOCOL),
                        hard_limits(plan, float(exp.run.timeout_grace_s), [s for u in units for s in u]))

            # A few tasks per worker thread at a time, so each next one is cut knowing the pace.
            pending = as_completed()
            # The records of ended fits, streamed while their tasks run, written as they come.
            stream = stack.enter_context(contextlib.closing(RecordStream(client, sink)))

            def submit(task):
                units, payload, task_limits = task
                sink.expect(units)
                fut = client.submit(run_sandboxed, payload, root, task_limits, int(exp.run.retries),
                                    int(cluster.blas_threads), stream.name, key=units[0][0]["key"],
                                    retries=int(exp.run.retries), pure=False)
                futures[fut] = units
                pending.add(fut)

            def refill():
                while len(futures) < in_flight(workers, unit_s) and (task := cut()) is not None:
                    submit(task)

            # The first tasks are cut while the workers warm (20 ms for 10,000 specs, which each
            # worker would otherwise wait for at the clock's start), and sent once all are warm.
            first_wave = [task for task in (cut() for _ in range(IN_FLIGHT * workers)) if task is not None]
            stack.enter_context(contextlib.closing(WorkerEvents(client, log)))
            warmup.wait(log)
            check_worker_plugins(client, todo)
            t0 = time.perf_counter()
            for task in first_wave:
                submit(task)
            bar = sink.bar = _progress(len(todo), bool(exp.run.progress))     # after the first tasks are out
            for fut in pending:
                units = futures.pop(fut)
                if pace is not None:
                    refill()    # before this task's records and shard: the workers' queues first
                try:
                    blobs, worker_peak = fut.result()
                    # The batches the stream has written already are not unpickled again.
                    records = [r for keys, blob in blobs if sink.wanted(keys) for r in pickle.loads(blob)]
                    # The worker's own peak, beside its sandbox's; none where the worker is a
                    # thread of this process (its peak is the client's, in the closing line).
                    worker_peak = math.nan if threads_of_client else worker_peak
                    for record in records:
                        record["env_worker_peak_rss_mb"] = worker_peak
                except Exception as exc:  # worker lost beyond retries, or unpicklable result
                    records = [{"key": spec["key"], "kind": spec["kind"], "status": "error",
                                "error": f"{type(exc).__name__}: {exc} (the task did not return; "
                                         f"retried {exp.run.retries} times)"} for u in units for spec in u]
                fut.release()
                n_tasks += 1
                sink.add(records)
                # The pace: this task's seconds per spec, over its records however they came (most
                # of a long task's by the stream, before it ended).
                seconds, n = sink.ended(units)
                if seconds > 0:
                    pace, unit_s = seconds / n, seconds / len(units)
                if time.monotonic() - counted > 1.0:     # workers join and leave (adaptive clusters)
                    workers, counted = _n_workers(client, cluster), time.monotonic()
                # The pace and unit length this task gave decide the next cuts and how many are
                # in flight: the first task back sets both (the refill above waited for it).
                refill()
                sink.flush(force=True)     # a task's end writes what is held, as ever
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


def _measured(mb: float | None) -> float:
    """A worker's peak (MB) as a number: 0 where none was measured (None, NaN: no worker process)."""
    return 0.0 if mb is None or math.isnan(mb) else mb


def _largest_csr_mb(plan: Plan, root: str) -> float | None:
    """The CSR size of the plan's largest stored dataset, in MiB (what worker memory is measured
    against: bench_scale's "at most 2x the CSR")."""
    from ..data.store import csr_nbytes, dataset_info
    sizes = [csr_nbytes(dataset_info(root, d["name"])) for d in plan.datasets.values()]
    return max(sizes) / 2**20 if sizes else None


def _errors(run_dir: Path, keys):
    """(key, error text) of each task among keys whose newest record says status=error."""
    latest = _latest_status(run_dir)
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
