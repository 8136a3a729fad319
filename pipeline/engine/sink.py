"""The records' way to disk: `RecordSink` takes every record of an `execute` (a task's result,
or what its sandbox sent while it ran, `RecordStream`) and writes them as shards (`ShardWriter`:
temporary file, one sync, rename), within WRITE_S of their coming; and what a rerun reads back
of a run directory's shards (`finished_keys`, `finished_in_plan`). The shard format itself is
`pipeline.results.shards`."""
from __future__ import annotations

import contextlib
import math
import os
import pickle
import threading
import time
import uuid
from pathlib import Path

from ..experiment.plan import Plan
from ..results import shards as shard_format
from ..results.shards import Record
from ..results.tables import iter_statuses, shard_files, shard_generation
from .sandbox import FLUSH_S

# The client writes the records it holds as one shard when a task ends, and once the oldest is
# this old (`RecordSink`): a fit's record is on disk within WRITE_S of reaching the client, and a
# task shorter than WRITE_S is one shard, as before. A shard per batch a sandbox sends (every
# FLUSH_S per worker thread) made a sweep of tiny fits many times more files than Dask tasks,
# each with its Parquet footer: more bytes a fit and slower tables (the sweep benchmark's
# scenario (g)).
WRITE_S = 2.0


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

    def write(self, records: list) -> Path:
        """Write one task's records as one shard, atomically: to a temporary file, synced to disk,
        then renamed into place. A reader sees all of the task's records or none, after a killed
        process (rename is atomic) and after a power cut (the data is on disk before the rename
        makes it visible); one file and one sync per task, not per fit (scenario d of the sweep benchmark)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        suffix = f".{self.generation}" if self.generation else ""
        first = records[0]
        path = self.dir / f"{first.key if isinstance(first, Record) else first['key']}{suffix}.parquet"
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
        # Who else hears each record taken (with its spec), outside the lock: a timing ladder's
        # hand-over (`handover.Handover.take`), the progress lines (`progress.ProgressLines.take`).
        self.listeners: list = []

    def expect(self, units: list[list[dict]]) -> None:
        """A task's specs, before it is sent: its records may come from then on."""
        with self.lock:
            self.specs.update((spec.key, spec) for u in units for spec in u)

    def ended(self, units: list[list[dict]]) -> tuple[float, int]:
        """A task has ended and its records are added: what comes of it later is a copy.
        Returns (the seconds its specs took, how many have a record), whichever way their
        records came: the sweep's pace (`execute`)."""
        seconds, n = 0.0, 0
        with self.lock:
            for u in units:
                for spec in u:
                    self.specs.pop(spec.key, None)
                    self.taken.discard(spec.key)
                    took = self._seconds.pop(spec.key, None)
                    if took is not None:
                        seconds, n = seconds + took, n + 1
        return seconds, n

    def wanted(self, keys) -> bool:
        """Whether any of these keys is of a task in flight and has no record yet (a batch worth
        unpickling)."""
        return any(key in self.specs and key not in self.taken for key in keys)

    def receive(self, batches: list[tuple[list[str], bytes]], **fields) -> int:
        """The one way a sandbox's records come in, whichever way they travelled: batches (their
        keys, their records pickled), from the stream while the task runs (`RecordStream`) or
        with the task's result when it ends (`execute.Dispatcher`). A batch none of whose keys
        is still wanted is not unpickled; a record already taken is not taken again (`add`), so
        a record is written once whichever way comes first. fields: set on every record taken
        (the worker's peak, which only the task's result carries); returns how many."""
        records = [r for keys, blob in batches if self.wanted(keys) for r in pickle.loads(blob)]
        for record in records if fields else ():
            record.update(fields)
        return self.add(records)

    def add(self, records: list[dict]) -> int:
        """Take the records of keys this execute expects and has no record of, each with its
        spec, to write (`flush`); returns how many."""
        batch = self._take(records)
        for listener in self.listeners if batch else ():
            listener(batch)
        return len(batch)

    def _take(self, records: list[dict]) -> list[Record]:
        with self.lock:
            batch = [Record(r, self.specs[r["key"]]) for r in records
                     if r["key"] not in self.taken and r["key"] in self.specs]
            if not batch:
                return []
            if not self._held:
                self._since = time.monotonic()
            self._held += batch
            self.taken.update(r.key for r in batch)
            self._seconds.update((r.key, r.get("task_time_s") or 0.0) for r in batch)
            self.failed += sum(r.status == "error" for r in batch)
            self.worker_rss = max(
                [self.worker_rss, *((r.get("env_peak_rss_mb"), _measured(r.get("env_worker_peak_rss_mb")),
                                     r.spec.solver) for r in batch if r.get("env_peak_rss_mb"))],
                key=lambda m: m[0] + m[1])
            if self.bar is not None:
                if self.failed:
                    self.bar.set_postfix(failed=self.failed, refresh=False)
                self.bar.update(len(batch))
            return batch

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


_WAKE = "wake"      # not a batch: put by `RecordStream.close` to end its thread's wait


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
        self.sink.receive([b for b in batches if b != _WAKE])

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
        # The thread waits up to FLUSH_S on the queue: woken at once, each execute ends that much
        # sooner, which a search pays once a round.
        with contextlib.suppress(Exception):
            self.queue.put(_WAKE)
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


def _write_file(records: list[dict], path: Path) -> None:
    """One shard file (`results.shards.write`): the writer's one step that puts bytes on disk."""
    shard_format.write(records, path)


def _sync_file(path: Path) -> None:
    """Flush one file's data to disk (fsync) before its rename makes it visible. Not syncfs,
    used while a shard was a file per fit: it flushes every file of the file system that other
    writes left dirty (the previous command's report, other processes' files), tens of
    milliseconds a shard beside another command, against one file's bytes here."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _measured(mb: float | None) -> float:
    """A worker's peak (MB) as a number: 0 where none was measured (None, NaN: no worker process)."""
    return 0.0 if mb is None or math.isnan(mb) else mb



def finished_keys(run_dir: Path) -> set[str]:
    """The keys that have a record in the run dir's shards (whatever its status)."""
    return {key for key, _, _ in iter_statuses(run_dir)}


def finished_in_plan(run_dir: Path, plan: Plan, with_errors: bool) -> tuple[set[str], set[str]]:
    """(the plan's keys that have a record in the shards, those of them whose newest record is
    an error, if with_errors): what a run skips and retries, and what a dry run counts. The
    shards' statuses are read once and the keys looked up in the plan in bulk (`Specs.rows`): at
    1,000,000 finished keys, two reads and a search per key took about 20 s of a resumed run."""
    latest = latest_status(run_dir)
    done = list(latest)
    ours = (plan.fits.rows(done) >= 0) | (plan.references.rows(done) >= 0)
    have = {key for key, mine in zip(done, ours.tolist()) if mine}
    errors = {key for key in have if latest[key][0] == "error"} if with_errors else set()
    return have, errors


def latest_status(run_dir: Path) -> dict[str, tuple[str, str | None]]:
    """key -> (status, error) of its newest record: the tables' view of it (`results.read_shards`)."""
    return {key: (status, error) for key, status, error in iter_statuses(run_dir)}
