"""The sandbox: a child process in which a Dask worker thread runs its tasks, so that the worker
can enforce from outside what a solver may not enforce itself.

A numba loop holds the GIL and never looks at a clock, a bug can abort or segfault its process,
and a fit can allocate past the worker's memory: none of this can be stopped from inside the
process that runs it (a watchdog thread needs the GIL; the worker's event loop stops too). So
each worker thread keeps one long-lived child (`python -m pipeline.engine.sandbox`, started on its first
task, keeping the dataset and fold caches of `tasks` across tasks) and waits on it, polling:

- the child writes the index of each spec and its start time into a page of memory both map
  (`_Slot`) before it runs it: no message and no system call per spec. The records of ended
  specs come over its stdout, at most every `FLUSH_S` and at the task's end, so the parent
  wakes for them a few times a second at most, not once per fit; it passes each batch on to
  the client at once, on the run's Dask queue (`run_sandboxed`'s stream), so that a fit that
  ended is kept even if the task never does;
- a spec that runs past its hard limit (the solver's time limit x binary problems + a grace,
  computed by the client: `cutting.hard_limits`) is ended: the child is killed, the spec
  becomes a ``timeout`` row, and the task's other specs go on in a fresh child;
- a child whose resident memory passes the worker's share of its memory limit is killed, and
  one that dies (abort, segfault, the OS's OOM killer) is noticed by its exit status: the spec
  its slot names is retried in a fresh child (``run.retries``), then becomes an ``error`` row
  naming the cause; specs that ended but whose records were not yet sent run again, uncharged.

The child exits with its parent thread (Linux's PR_SET_PDEATHSIG), so a SIGKILLed worker
leaves no child spinning; elsewhere it exits when its stdin closes, i.e. between tasks.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib
import importlib.util
import mmap
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

from .. import exits

# Per-process thread counts of the numeric libraries, set before the child imports them.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
POLL_S = 0.1                 # how often the waiting thread checks the clock and the memory
# The child sends the records of ended specs at most this often (and at the task's end): each
# message wakes the waiting thread, a context switch on the cores the fits need, and short fits
# end hundreds of times a second. A child that dies loses at most this much of finished work,
# which its successor runs again.
# A spec's preparation before its solver starts (reading its data, importing its plugin,
# compiling) is bounded apart from its solver's hard limit, by this or that limit if longer: a
# hung read is ended, a slow one on a busy machine is not charged to the solver.
PREPARE_LIMIT_S = 600.0
FLUSH_S = 0.5
READ_BYTES = 1 << 20         # at most this much of the child's messages per read
# The pipes' kernel buffers (Linux's default is 64 kB; 1 MB is its default most for a user).
# Half a second of records of fits of a third of a millisecond is 330 kB: through 64 kB the
# child waited in write() for the worker thread to drain it, with both cores busy (scenario (d),
# sampled: 1.8% of the child's task time in _send, outside every spec's clock; 0.9% with 1 MB,
# most of it the pickling). A task's specs go the other way.
PIPE_BYTES = 1 << 20
MEMORY_FRACTION = 0.95       # of the worker's share, as distributed's nanny terminates at 95%
# A streamed batch of records (`_streamer`) waits at most this long for the scheduler: past it,
# the batch is left to the task's result, and the task goes on.
STREAM_TIMEOUT_S = 10
_HEADER = struct.Struct("<Q")


class _Slot:
    """The spec the child runs: its index in the task's specs as sent (-1: none yet) and its
    start on the monotonic clock (system-wide on Linux and macOS), in a page of memory that
    parent and child both map (a memfd, or an unlinked temporary file, passed to the child as a
    descriptor). The child writes it before each spec: two aligned 8-byte stores, the time
    first, so a reader that sees the new index sees its time; no message, no system call. The
    parent reads it when it wakes (every POLL_S: the spec's hard limit and memory) and when the
    child dies (whose spec it was). One message per spec would cost the child a pickle and a
    write and the parent a wake-up per fit, a real share of the cores' time with fits of a
    millisecond.

    Each field is one 8-byte store and one 8-byte load, through memoryviews cast to int64 and
    double (CPython copies a single item with one `memcpy` of its size). `struct.pack_into`,
    used before, is not: it zeroes the field and then writes it byte by byte, so a parent that
    read while the child wrote could see the start as 0.0, i.e. the spec as running since the
    machine booted, and killed a fit of milliseconds as past its hard limit: 5 and 7 of
    1,000,000 fits in two runs of scenario (h) ("killed after 0.0 s"; tests/pipeline/
    test_sandbox.py reads the slot while a child writes it).

    The child also notes when the spec's solver starts (`solving`, 0.0 until then): the spec's
    hard limit counts from there, so that reading its data or loading its plugin in a fresh
    child on a busy machine is not charged to the solver (it has a limit of its own,
    PREPARE_LIMIT_S).
    """

    SIZE = 24

    def __init__(self, fd: int):
        self.fd = fd
        self._map = mmap.mmap(fd, self.SIZE)
        self._view = memoryview(self._map)
        self._index, self._started = self._view[:8].cast("q"), self._view[8:16].cast("d")
        self._solving = self._view[16:].cast("d")

    @classmethod
    def create(cls) -> _Slot:
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("svmbench-sandbox-slot")
        else:
            with tempfile.TemporaryFile() as fh:     # unlinked at once where memfd is missing
                fd = os.dup(fh.fileno())
        os.ftruncate(fd, cls.SIZE)
        return cls(fd)

    def write(self, index: int, started: float = 0.0) -> None:
        self._solving[0] = 0.0
        self._started[0] = started
        self._index[0] = index

    def solving(self, when: float) -> None:
        """The running spec's solver starts (its first, for a spec of several binary problems)."""
        if self._solving[0] == 0.0:
            self._solving[0] = when

    def read(self) -> tuple[int, float, float]:
        """(index, started, solving): solving read first, so that a new spec's index and start are
        never paired with the solver start of the spec before it."""
        solving = self._solving[0]
        index, started = self._index[0], self._started[0]
        return index, started, solving

    def close(self) -> None:
        for view in (self._index, self._started, self._solving, self._view):     # an exported view keeps the map open
            view.release()
        self._map.close()
        os.close(self.fd)


class _Ended(Exception):
    """The child was stopped or died while running a spec: why, and whether it is a timeout."""

    def __init__(self, why: str, timeout: bool = False):
        super().__init__(why)
        self.why, self.timeout = why, timeout


def _send(fh, obj) -> int:
    """Write one message; returns its size in bytes."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_HEADER.pack(len(data)) + data)
    fh.flush()
    return _HEADER.size + len(data)


def _read_exact(fh, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = fh.read(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _recv(fh):
    (size,) = _HEADER.unpack(_read_exact(fh, _HEADER.size))
    return pickle.loads(_read_exact(fh, size))


def plugin_files() -> list[tuple[str, str | None, str | None]]:
    """(module, file, sha256) of every module outside the solvers package that registered a
    solver in this process (a plugin package, or a `dask worker --preload` script), the sha256
    for a plugin file (`solvers.load_plugin`): the child loads them too, so it knows the same
    solvers. A process that never imported `solvers` (a worker, whose tasks run in its sandbox)
    has registered nothing: importing it here would only cost the worker a second of imports
    (numba, sklearn) that delays its child's start."""
    solvers = sys.modules.get("solvers")
    if solvers is None:
        return []
    from solvers.registry import plugin_of
    out = set()
    for name in solvers.solver_names():
        module = solvers.get_solver(name).fit.__module__
        if module.split(".")[0] != "solvers":
            plugin = plugin_of(name)
            if plugin is not None and plugin.sha256 is not None:
                out.add((module, plugin.source, plugin.sha256))
            else:
                out.add((module, getattr(sys.modules.get(module), "__file__", None), None))
    return sorted(out, key=str)


def _import_plugin(module: str, path: str | None, sha256: str | None = None) -> None:
    if sha256 is not None:
        # A plugin file, loaded as the parent loaded it (by its content, `registry.ensure_plugin`):
        # the same file the specs then ship is the same plugin, not a second registration. An
        # importlib import of its module would register its solvers under another origin.
        from solvers.registry import ensure_plugin
        ensure_plugin(path, sha256)
        return
    try:
        importlib.import_module(module)
    except ImportError:
        if path is None:
            raise
        spec = importlib.util.spec_from_file_location(module, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[module] = mod
        spec.loader.exec_module(mod)


def signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"{signal.Signals(-returncode).name} (signal {-returncode})"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class Sandbox:
    """One child process and the loop that runs tasks in it under hard limits."""

    def __init__(self, threads: int = 1, owner: str | None = None):
        self.threads = int(threads)
        self.owner = owner               # the address of the Dask worker whose thread made it
        self.stopping = False            # its worker is closing (`stop`): no retry, no new child
        self.proc: subprocess.Popen | None = None
        self.busy = threading.Lock()     # held while a task runs in the child
        # Bytes written to the child: specs only, since the child reads the data from the store
        # itself (a task's matrices never cross the pipe).
        self.sent_bytes = 0
        self.received = 0                # messages read from the child
        self._buffer = bytearray()       # read from the child, not yet a whole message
        self._slot: _Slot | None = None  # the spec the child runs (shared memory)

    def _start(self) -> None:
        if self.stopping:
            raise SandboxStopped("its worker is closing")
        self._slot = _Slot.create()
        env = {**os.environ, **{v: str(self.threads) for v in THREAD_VARS},
               "SVMBENCH_SANDBOX_PARENT": str(os.getpid()), "SVMBENCH_SANDBOX_SLOT": str(self._slot.fd)}
        # Unbuffered: `select` sees the pipe, so no message may wait unseen in a read buffer.
        self.proc = subprocess.Popen([sys.executable, "-m", "pipeline.engine.sandbox"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, bufsize=0, pass_fds=(self._slot.fd,))
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, AttributeError):    # not Linux, or a lower limit
                fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self._write(("plugins", plugin_files()))

    def _write(self, message) -> None:
        try:
            self.sent_bytes += _send(self.proc.stdin, message)
        except BrokenPipeError:     # it died before reading (at start-up, or a kill between tasks)
            raise _Ended(f"its process died of {signal_name(self.proc.wait())}") from None

    def warm(self, solver_names: list[str], modules: list[str] = ()) -> dict | None:
        """Start the child if it is not running and warm it for these solvers (`tasks.warm`):
        the worker's warm-up, run while the client plans, so that no task pays for the child's
        start, its imports or numba's compilation. Returns its seconds (start included) and the
        child's load counts once warm (`tasks.load_counts`: what the tasks after it add are the
        run's), or None if the child died (the next task starts a fresh one)."""
        with self.busy:
            t0 = time.monotonic()
            try:
                if self.proc is None:
                    self._start()
                self._write(("warm", list(solver_names), list(modules)))
                loads = self._next()[1]
                return {"seconds": time.monotonic() - t0, "loads": loads}
            except _Ended:
                self.close()
                return None

    def call(self, fn):
        """fn() in the child, between tasks (what the child holds: tests, debugging); None while
        a task runs in it (their messages must not interleave) or when there is no child. fn may
        be named ("module:function"), so that the worker relaying it need not import it."""
        import cloudpickle
        if self.proc is None or not self.busy.acquire(blocking=False):
            return None
        try:
            self._write(("call", cloudpickle.dumps(fn)))
            return self._next()[1]
        except _Ended:
            self.close()
            return None
        finally:
            self.busy.release()

    def stop(self) -> None:
        """End the child from another thread, for good: the task it runs (if any) raises
        SandboxStopped in its own thread instead of retrying its spec in a fresh child."""
        self.stopping = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.kill()
        if self.busy.acquire(blocking=False):    # idle: nobody else will reap it
            try:
                self.close()
            finally:
                self.busy.release()

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for fh in (self.proc.stdin, self.proc.stdout):
                fh.close()
            self.proc = None
            self._slot.close()
            self._slot = None
        self._buffer.clear()

    def _take(self):
        """The first whole message in the read buffer (taken out of it), or None."""
        buf = self._buffer
        if len(buf) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(buf)
        end = _HEADER.size + size
        if len(buf) < end:
            return None
        message = pickle.loads(memoryview(buf)[_HEADER.size:end])
        del buf[:end]
        self.received += 1
        return message

    def _next(self, watch=None):
        """The child's next message, (kind, payload); `watch()` runs every POLL_S while none
        comes (it raises _Ended when the running spec passes a limit); _Ended when the child dies.
        The pipe is read in bulk into a buffer: a message of many records is one read."""
        message = self._take()
        if message is not None:
            return message
        fd = self.proc.stdout.fileno()
        while True:
            ready, _, _ = select.select([fd], [], [], POLL_S)
            if ready:
                chunk = os.read(fd, READ_BYTES)
                if not chunk:
                    code = self.proc.wait()
                    raise _Ended(f"its process died of {signal_name(code)}")
                self._buffer += chunk
                message = self._take()
                if message is not None:
                    return message
                continue
            if watch is not None:
                watch()

    def run(self, units: list[list[dict]], root: str, limits: dict, retries: int = 1,
            memory_limit: float | None = None, on_records=None) -> list[dict]:
        """The records of every spec of the task, in order; limits: spec key -> hard seconds."""
        by_key = {r["key"]: r for r in records_of(self.run_pickled(
            pickle.dumps(units, protocol=pickle.HIGHEST_PROTOCOL), root, limits, retries, memory_limit, on_records))}
        return [by_key[s.key] for u in units for s in u]

    def run_pickled(self, payload: bytes, root: str, limits: dict, retries: int = 1,
                    memory_limit: float | None = None, on_records=None) -> list[tuple[list[str], bytes]]:
        """`run` for units that come pickled (a Dask task's argument) and records that go on
        pickled: a list of (keys, pickled list of their records), each spec's record in one of
        them (`records_of`). The payload goes to the child as it is, before this thread unpickles
        it for its own bookkeeping; the child's records are passed on as the child pickled them.
        Pickling and unpickling them here again sat between a task's end and the next one's
        start: 20 ms for a task of 2,000 fits (scenario (d)), on cores the fits share.

        on_records(keys, blob), if given, hears each batch of records as it comes while the task
        runs (the child sends the records of ended specs every FLUSH_S; a spec that timed out or
        whose process died, as it ends), but not the task's last batch, which comes with the
        result: `sink.RecordStream` makes them durable before the task ends."""
        with self.busy:
            return self._run(payload, root, limits, retries, memory_limit, on_records)

    def _running(self, specs: list[dict], ended: set) -> tuple[dict, float, float] | None:
        """(spec, started, solving) that the slot names, unless its record came already (between
        specs); solving 0.0 while its solver has not started."""
        index, started, solving = self._slot.read()
        if 0 <= index < len(specs) and specs[index].key not in ended:
            return specs[index], started, (solving if solving >= started else 0.0)
        return None

    def _watch(self, specs, ended, limits, memory_limit) -> None:
        """_Ended if the running spec is past its hard limit or the child past its memory."""
        now = self._running(specs, ended)
        if now is None:
            return
        limit = limits.get(now[0].key)
        # From the solver's start; before it, the spec's preparation has a limit of its own.
        if limit and time.monotonic() > (now[2] or now[1]) + (limit if now[2] else max(limit, PREPARE_LIMIT_S)):
            raise _Ended("ran past its hard time limit", timeout=True)
        if memory_limit is not None:
            rss = _rss(self.proc.pid)
            if rss > memory_limit:
                raise _Ended(f"its process used {rss / 2**20:.0f} MB, over the limit of "
                             f"{memory_limit / 2**20:.0f} MB (the worker's memory limit per thread), "
                             f"and was killed")

    def _run(self, payload, root, limits, retries, memory_limit, on_records=None) -> list[tuple[list[str], bytes]]:
        blobs: list[tuple[list[str], bytes]] = []
        ended: set[str] = set()          # keys with a record, in the blobs
        attempts: dict[str, int] = {}
        todo = None                      # the units left to run; None: all, as in the payload
        while todo is None or todo:
            try:
                if self.proc is None:
                    self._start()
                self._slot.write(-1)
                self._write(("task", payload if todo is None else todo, root))
                todo = todo or pickle.loads(payload)     # while the child starts on it
                specs = [s for u in todo for s in u]     # the slot's index is into this list
                watch = functools.partial(self._watch, specs, ended, limits, memory_limit)
                while True:
                    kind, keys, blob = self._next(watch)
                    ended.update(keys)
                    blobs.append((keys, blob))
                    if kind == "done":
                        break
                    if on_records is not None:
                        on_records(keys, blob)
                todo = []
            except _Ended as end:
                if self.stopping:
                    self.close()
                    raise SandboxStopped(f"its worker is closing ({end.why})") from None
                todo = todo or pickle.loads(payload)
                specs = [s for u in todo for s in u]
                now = self._running(specs, ended) if self._slot is not None else None
                self.close()
                # The spec the slot names; dead between specs (at start-up): the next one due.
                spec, started, solving = now or (next(s for s in specs if s.key not in ended), None, 0.0)
                elapsed = time.monotonic() - started if started else 0.0
                record = None
                if end.timeout and solving:
                    record = _ended_record(
                        spec, "timeout", elapsed,
                        f"killed {time.monotonic() - solving:.1f} s after its solver started: the solver did not "
                        f"stop at its time limit (hard limit {limits[spec.key]:.1f} s = time limit x problems "
                        f"+ grace); its process was replaced")
                elif end.timeout:
                    record = _ended_record(
                        spec, "timeout", elapsed,
                        f"killed after {elapsed:.1f} s before its solver started (reading its data, loading its "
                        f"solver): past the limit of "
                        f"{max(limits[spec.key], PREPARE_LIMIT_S):.1f} s on a fit's preparation; its process was replaced")
                else:
                    n = attempts[spec.key] = attempts.get(spec.key, 0) + 1
                    if n > retries:
                        record = _ended_record(
                            spec, "error", elapsed, f"WorkerProcessDied: {end.why} while running this "
                            f"task ({n} attempt{'s' * (n > 1)}, run.retries={retries})")
                if record is not None:
                    ended.add(spec.key)
                    blobs.append(([spec.key], pickle.dumps([record], protocol=pickle.HIGHEST_PROTOCOL)))
                    if on_records is not None:
                        on_records(*blobs[-1])
                todo = [r for r in ([s for s in u if s.key not in ended] for u in todo) if r]
        return blobs


class SandboxStopped(RuntimeError):
    """A sandbox's worker closed while a task ran in it (`stop_sandboxes`)."""


def records_of(blobs: list[tuple[list[str], bytes]]) -> list[dict]:
    """The records in `Sandbox.run_pickled`'s (keys, blob) pairs."""
    return [record for _, blob in blobs for record in pickle.loads(blob)]


def _ended_record(spec: dict, status: str, elapsed: float, why: str) -> dict:
    from .tasks import environment
    record = {"key": spec.key, "kind": spec.kind, "status": status, "error": why, "task_time_s": elapsed}
    if spec.kind == "fit":
        record.update(environment())
    return record


def _rss(pid: int) -> float:
    import psutil
    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return 0.0


_LOCAL = threading.local()
# This process's sandboxes, one per worker thread that ran a task: of one worker, or of every
# worker of a local cluster whose workers are threads of the client (cluster.processes=false).
SANDBOXES: list[Sandbox] = []


def call_in_sandboxes(fn, dask_worker=None) -> list:
    """fn() (or the function named "module:function") in each idle sandbox of this worker (a None
    result is left out): `client.run(call_in_sandboxes, fn)` shows what the
    children hold (their caches), which a plain `client.run(fn)` cannot see. Dask passes the
    worker it runs on; a process that holds several (threads of the client) answers for its own."""
    mine = dask_worker.address if dask_worker is not None else None
    return [out for out in (box.call(fn) for box in SANDBOXES if mine is None or box.owner in (None, mine))
            if out is not None]


def stop_sandboxes(owners: set[str]) -> None:
    """End the sandboxes of these workers (addresses), before they close: a worker that is a
    thread of this process closes only once its running task returns (distributed waits for its
    executor), and a fit may run for minutes. Their tasks raise SandboxStopped."""
    for box in [box for box in SANDBOXES if box.owner in owners]:
        box.stop()
        SANDBOXES.remove(box)


def _thread_box(threads: int) -> Sandbox:
    """This worker thread's sandbox (made on first use; its child starts on first task or warm-up)."""
    box = getattr(_LOCAL, "box", None)
    if box is None:
        box = _LOCAL.box = Sandbox(threads, _worker_address())
        SANDBOXES.append(box)
    return box


def _worker_address() -> str | None:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return None


def run_sandboxed(units: bytes, root: str, limits: dict, retries: int, threads: int,
                  stream: str | None = None) -> tuple[list[tuple[list[str], bytes]], float]:
    """The Dask task body: `tasks.run_task` in this worker thread's sandbox; the units come and
    the records go pickled (`execute.execute` says why; `Sandbox.run_pickled`), with the
    worker's own peak RSS, which the client records beside the sandbox's (env_peak_rss_mb).
    stream: the client's Dask queue (`sink.RecordStream`) that each batch of records goes to
    as the task runs, so that a fit that ended is the client's before the task ends."""
    blobs = _thread_box(threads).run_pickled(units, root, limits, retries, _memory_share(), _streamer(stream))
    from .rss import peak_rss_mb
    return blobs, peak_rss_mb()


def _streamer(name: str | None):
    """on_records for `Sandbox.run_pickled` that puts each batch (keys, blob) on the client's
    Dask queue `name`, through the scheduler, or None (no queue, or not on a Dask worker).
    Best effort: the task's result carries every record anyway; a put that fails (the client
    gone, its queue closed) only leaves that batch to the result."""
    if name is None:
        return None
    try:
        from distributed import get_client
        client = get_client()
    except (ImportError, ValueError):
        return None

    def put(keys: list[str], blob: bytes) -> None:
        with contextlib.suppress(Exception):
            client.sync(client.scheduler.queue_put, name=name, data=[keys, blob], timeout=None,
                        callback_timeout=STREAM_TIMEOUT_S)
    return put


def warm_sandboxed(solver_names: list[str], threads: int, modules: list[str] = ()) -> dict | None:
    """The warm-up's Dask task body (`warmup.warm_workers`): this worker thread's sandbox
    started and warmed for the solvers and modules (`Sandbox.warm`)."""
    return _thread_box(threads).warm(solver_names, modules)


def _memory_share() -> float | None:
    """This thread's share of its Dask worker's memory limit (None: no limit, or no worker)."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):
        return None
    limit = worker.memory_manager.memory_limit
    return MEMORY_FRACTION * limit / max(1, worker.state.nthreads) if limit else None


def dask_setup(worker) -> None:
    """This module as a Dask worker's preload (`clusters._worker_preload`, cluster.processes=
    true): the worker process ignores SIGINT, so that a Ctrl-C in the terminal, which reaches
    the whole process group, is the client's alone to act on (one line, exit 130), not each
    worker's to print a KeyboardInterrupt traceback. A worker the nanny restarts runs it too."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the thread that started it ends (a SIGKILLed
    worker must not leave a child spinning in a numba loop); then check the parent is alive."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if str(os.getppid()) != os.environ.get("SVMBENCH_SANDBOX_PARENT"):
        exits.fast_exit(1, forked=True)     # the parent is gone: nothing of this child's to finish


def main() -> None:
    """The child: read tasks from stdin; per task, write each spec's index and start into the
    slot (`_Slot`) before running it, send the records of ended specs at most every FLUSH_S
    (`records`), and the rest with `done` at the task's end."""
    _die_with_parent()
    # Ctrl-C in a terminal reaches the whole process group; the client acts on it and ends this
    # child (its worker may be a thread of the client, whose SIGINT a child does not inherit
    # ignored, as it does from a worker process that ignores it).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)          # a print in a solver goes to stderr, never into the message stream
    inp = sys.stdin.buffer
    slot = _Slot(int(os.environ["SVMBENCH_SANDBOX_SLOT"]))
    from .tasks import load_counts, run_task, warm
    while True:
        try:
            kind, *args = _recv(inp)
        except EOFError:
            return
        if kind == "call":
            fn = pickle.loads(args[0])
            if isinstance(fn, str):
                module, _, name = fn.partition(":")
                fn = getattr(importlib.import_module(module), name)
            _send(out, ("result", fn()))
            continue
        if kind == "plugins":
            for plugin in args[0]:
                # Ahead of the tasks, best effort: a file the parent loaded may be gone (edited,
                # or a temporary one), and a fit of its solver carries the file's text and loads
                # it itself (`tasks`, `registry.ensure_plugin`); a child that died here would
                # take every other solver's fits with it.
                with contextlib.suppress(ImportError, OSError, ValueError):
                    _import_plugin(*plugin)
            continue
        if kind == "warm":
            warm(*args)
            _send(out, ("warmed", load_counts()))
            continue
        units, root = args
        _child_task(pickle.loads(units) if isinstance(units, bytes) else units, root, slot, out, run_task)


def _child_task(units, root, slot: _Slot, out, run_task) -> None:
    """One task in the child: each spec named in the slot before it runs, the records of ended
    specs sent at most every FLUSH_S, the rest with `done`."""
    index = {spec.key: i for i, spec in enumerate(s for u in units for s in u)}
    ended, flushed = [], time.monotonic()

    def notify(what, payload):
        nonlocal flushed
        if what == "start":
            # Before the spec runs: a death or a kill from now on is this spec's.
            slot.write(index[payload], time.monotonic())
            return
        if what == "solving":
            slot.solving(time.monotonic())
            return
        ended.append(payload)
        now = time.monotonic()
        if now - flushed >= FLUSH_S:
            _send_records(out, "records", ended)
            ended.clear()
            flushed = now

    run_task(units, root, notify=notify)
    _send_records(out, "done", ended)


def _send_records(out, kind: str, records: list[dict]) -> None:
    """(kind, their keys, the records pickled): the parent keeps the keys and passes the
    pickled records on to the client without unpickling them."""
    _send(out, (kind, [r["key"] for r in records], pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL)))


if __name__ == "__main__":
    main()
