"""The workers before and while they run: warming their sandboxes for the plan's solvers and
task modules (`warm_workers`, waited for by `WarmUp`, which says how far a long warm-up is),
checking that every worker has the plugins the specs name (`check_worker_plugins`), and the
events the sandboxes send while a task runs (`WorkerEvents`)."""
from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass, field

from ..experiment.experiment import Experiment
from ..experiment.plan import Plan
from .clusters import ClusterError
from .sandbox import call_in_sandboxes, warm_sandboxed

def task_modules(exp: Experiment, plan: Plan | None = None) -> list[str]:
    """The scikit-learn modules this run's tasks import, which their warm-up imports ahead
    (`tasks.warm`): none for a binary k-fold fit without scaling (its folds are numpy's,
    `plan._kfold`), so two sandboxes on two cores no longer import it for nothing (a second of
    CPU each, before the first task). A subsample (max_rows) or a split other
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
    names = sorted(solver_names)
    k = 0
    for address, info in client.scheduler_info()["workers"].items():
        for thread in range(int(info.get("nthreads", 1))):
            # Each thread starts at another solver: on a first run, where each solver's warm-up
            # compiles its kernels under a lock (`solvers.registry.warm`), the threads compile
            # different solvers at once and load the others' from numba's cache after.
            order = names[k % len(names):] + names[:k % len(names)] if names else names
            k += 1
            futures.append(client.submit(warm_sandboxed, order, int(threads), sorted(modules),
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
    texts = {spec.plugin["sha256"]: spec.plugin_text for spec in specs if spec.plugin_text}
    needs = plugin_needs({spec.solver for spec in specs}, texts)
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
    # Of those, the ones numba's cache lacked before the warm-ups were submitted (`uncompiled_solvers`):
    # compiled now, and said at once. None: look now.
    compiling: set | None = None

    def __post_init__(self):
        if self.compiling is None:
            self.compiling = uncompiled_solvers(self.solvers)
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
            self.compiling.update(uncompiled_solvers(solvers))     # before the sandboxes write the cache
            self.extend(warm_workers(client, sorted(solvers), threads, sorted(modules)))
            self.solvers.update(solvers)
            self.modules.update(modules)

    def wait(self, log=None) -> None:
        """Wait for every warm-up (at most WARMUP_WAIT_S: a worker lost meanwhile is Dask's to
        replace, and its replacement warms on its first task). Tasks submitted before it ends
        would start on the first warm worker thread while the others still warm, slowing their
        warm-up (2 cores: up to 160 ms later, against 3-13 ms apart when they warm alone).

        A warm-up that outlasts WARMUP_QUIET_S is said, then how far it is every
        WARMUP_PROGRESS_S; one that compiles (numba's cache lacks some solvers' kernels: a
        machine's first run) is said at once, naming those solvers, since the command would
        otherwise print nothing while it lasts."""
        from distributed import wait
        deadline = time.perf_counter() + WARMUP_WAIT_S
        # A compile ahead is said at once: it is the wait of a first run, not a slow start.
        say_at, first = self.started + (0.0 if self.compiling else WARMUP_QUIET_S), True
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
        if first and self.compiling:
            line = (f"warming {len(self.futures)} worker threads for {', '.join(sorted(self.solvers))}: compiling the "
                    f"numba kernels of {', '.join(sorted(self.compiling))} into numba's cache, which has none of them "
                    f"yet (a first run's cost, some seconds of CPU a solver, the threads taking different solvers at "
                    f"once; later runs load them in a second); {ready} ready after {now - self.started:.0f} s")
        elif first:
            line = (f"warming {len(self.futures)} worker threads for {', '.join(sorted(self.solvers)) or 'the solvers'}: "
                    f"{ready} ready after {now - self.started:.0f} s (each starts its sandbox and loads the solvers' "
                    f"numba kernels from numba's cache)")
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


def uncompiled_solvers(names) -> set:
    """The solvers whose numba kernels this machine's cache lacks (`solvers.registry.uncompiled`),
    named in the warm-up's first line; none where that cannot be told (an unknown plugin)."""
    from solvers.registry import uncompiled
    try:
        return set(uncompiled(sorted(names)))
    except Exception:  # noqa: BLE001 - a hint for a log line, never a reason to fail the run
        return set()


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
