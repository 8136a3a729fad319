"""Distributed fits: one problem trained across the Dask workers, each holding a block of its rows
(CoCoA+, solvers/cocoa.py), for a solver whose spec says ``distributed``.

The driver (`run_distributed`) runs in the client, in a thread of `execute` beside the sweep's
own loop (`DistributedFits`): it holds no worker slot, so a distributed fit and the sweep's other
tasks share the cluster without deadlock; its rounds are ordinary Dask tasks, pinned to the
worker that holds their partition, sent ahead of queued sweep tasks (a higher priority), each
waiting at most for the task its worker is running.

Data path. The driver reads the labels alone (the ``y`` column), cuts the fold's training rows
into K blocks of consecutive rows of the entry (`solvers.cocoa.partition_bounds`) and sends each
worker a bit mask of its block's rows (n / 8 bytes); the worker reads those rows from the store's
Parquet row groups itself (`store.read_row_subsets`: only the row groups holding them, each
verified against its digest) and keeps them with their dual variables (`_PARTS`) until the fit
ends. Nothing of X passes through the client or the scheduler: a round sends w (d + 1 numbers)
to each worker and brings back its v_k; a certificate brings back a partition's eight sums.

Clock. A distributed fit's times are the driver's wall clock (`time.perf_counter` in the
client, across the workers' processes), with trace points paused as any solver's are; the
record says so (``clock = "wall"``), and the timing fits of the single-process solvers that
share its problem are timed on their own process's wall clock too (`plan`), so the report puts
them in one ratio.

Resuming. Every `CHECKPOINT_S` of the driver's clock the partitions' alpha come back to the
client (8 bytes a row) and are written to ``<run dir>/checkpoints/<key>.npz`` with the round, the
trace and the seconds so far. A fit that dies mid-round (a worker lost: the driver notices its
address gone from the scheduler, or its task failing) starts again on the workers present, from
the checkpoint if there is one (w recomputed from alpha: one round), else from zero, up to
``run.retries`` times; a run started again in the same directory does the same. The record says
which (``start``, ``start_from``).
"""
from __future__ import annotations

import math
import os
import threading
import time
import traceback
import uuid
import warnings
from pathlib import Path

import numpy as np

from ..data.store import dataset_info, read_labels, read_row_subsets
from .rss import peak_rss_mb

# Driver seconds between checkpoints of the partitions' alpha (module docstring).
CHECKPOINT_S = 30.0
# How often a driver waiting on a round looks for its workers (and for a stop).
POLL_S = 0.5
# Round tasks go before the sweep's queued tasks on their worker.
PRIORITY = 100
# How long a fit waits for a first worker on a cluster that has none (an adaptive one's start).
WORKER_WAIT_S = 600


class WorkerLost(RuntimeError):
    """A worker holding a partition left the cluster, or its task failed."""


class Stopped(RuntimeError):
    """The run is ending (Ctrl-C): the driver stops where it is, its checkpoint kept."""


# ------------------------------------------------------------------ the workers' side
# Partitions held by this worker process, by (fit id, partition): a `solvers.cocoa.LocalSubproblem`
# and the partition's test rows (X, y).
_PARTS: dict = {}


def _rows_of(mask: bytes, lo: int, count: int) -> np.ndarray:
    """Entry rows lo.. whose bit is set in `mask` (np.packbits of count bits)."""
    bits = np.unpackbits(np.frombuffer(mask, dtype=np.uint8), count=count)
    return lo + np.flatnonzero(bits)


def load_partition(part_id: str, root: str, name: str, fingerprint: str, block: dict, problem: dict,
                   sigma: float, shrinking: bool, seed, alpha=None) -> dict:
    """Read a partition's training and test rows from the store into this worker and keep them
    (`_PARTS`); what it holds and what the read cost."""
    import solvers
    from solvers.cocoa import LocalSubproblem
    from solvers.problem import canonical_X
    from solvers.registry import warm

    # The kernels compiled (or loaded from numba's cache) here, before the fit's clock starts.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm(solvers.get_solver("cocoa"))
    t0 = time.perf_counter()
    train = _rows_of(block["train"], block["lo"], block["count"])
    test = _rows_of(block["test"], block["lo"], block["count"])
    (X, y_raw), (X_te, y_te_raw) = read_row_subsets(root, name, [train, test], fingerprint=fingerprint)
    y, y_te = _signs(y_raw, problem["positive"]), _signs(y_te_raw, problem["positive"])
    # The store's CSR is canonical already: taken as it is (its buffers, no copy).
    X = canonical_X(X)
    part = LocalSubproblem(X, y, C=problem["C"], loss=problem["loss"], B=problem["B"], sigma=sigma,
                           shrinking=shrinking, random_state=seed, alpha=alpha)
    _PARTS[part_id] = (part, X_te, y_te)
    return {"rows": int(len(y)), "test_rows": int(len(y_te)), "bytes": int(X.data.nbytes + X.indices.nbytes
            + X.indptr.nbytes), "load_s": time.perf_counter() - t0, "peak_rss_mb": peak_rss_mb(),
            "worker": _address()}


def _signs(y_raw: np.ndarray, positive) -> np.ndarray:
    """Labels as +1 (the positive class) and -1 (`plan.binary_labels` for a known positive)."""
    return np.where(y_raw == positive, 1.0, -1.0)


def _address() -> str | None:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return None


def solve_part(part_id: str, w: np.ndarray, passes: int, tol: float):
    """One round's local passes: (v_k with its w_b part last, finite, seconds)."""
    t0 = time.perf_counter()
    part = _PARTS[part_id][0]
    v, vb, finite = part.solve(w[:-1], float(w[-1]), passes, tol)
    return np.append(v, vb), finite, time.perf_counter() - t0


def sums_part(part_id: str, w: np.ndarray):
    """The partition's certificate sums at w (`LocalSubproblem.sums`) and its seconds."""
    t0 = time.perf_counter()
    return _PARTS[part_id][0].sums(w[:-1], float(w[-1])), time.perf_counter() - t0


def w_of_part(part_id: str) -> np.ndarray:
    """X_k' (alpha_k y_k) with its w_b part last: a resumed fit's w from its alpha."""
    part = _PARTS[part_id][0]
    ay = part.alpha * part.y
    return np.append(np.asarray(part.X.T @ ay).ravel(), part.B * ay.sum())


def alpha_part(part_id: str) -> np.ndarray:
    """The partition's alpha (a checkpoint)."""
    return _PARTS[part_id][0].alpha.copy()


def score_part(part_id: str, w: np.ndarray) -> tuple[int, int, float]:
    """(right, rows) on the partition's test rows at w, and this process's peak RSS."""
    part, X_te, y_te = _PARTS[part_id]
    if len(y_te) == 0:
        return 0, 0, peak_rss_mb()
    f = np.asarray(X_te @ w[:-1]).ravel() + float(w[-1]) * part.B
    return int(np.count_nonzero((f > 0) == (y_te > 0))), int(len(y_te)), peak_rss_mb()


def drop_part(part_id: str) -> None:
    _PARTS.pop(part_id, None)


# ------------------------------------------------------------------ the driver's side
def fold_blocks(root: str, data: dict, fold: int, K: int):
    """The fold's training and test rows as K blocks of consecutive entry rows, each a bit mask
    over its range (module docstring), from the labels alone; and (classes, the positive label,
    training and test row counts). The same rows, labels and folds as `tasks.split_data`."""
    from solvers.cocoa import partition_bounds
    from ..experiment.specs import data_split

    y = read_labels(root, data["name"], verify=False)
    index, _, classes, folds, _ = data_split(y, data)
    if len(classes) != 2:
        raise ValueError(f"dataset {data['entry']!r} has {len(classes)} classes: a distributed fit takes two")
    train, test = folds[fold]
    positive = classes[1] if data["positive"] is None else data["positive"]
    tr, te = np.sort(index[train]), np.sort(index[test])
    cuts = partition_bounds(len(tr), K)
    # Block k covers entry rows [edges[k], edges[k + 1]): its training rows and the test rows between.
    edges = np.r_[0, tr[cuts[1:-1]], len(y)]
    blocks = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        lo, hi = int(lo), int(hi)
        count = hi - lo
        blocks.append({"lo": lo, "count": count, "train": _mask(tr, lo, hi), "test": _mask(te, lo, hi)})
    return blocks, classes, positive, len(tr), len(te)


def _mask(rows: np.ndarray, lo: int, hi: int) -> bytes:
    bits = np.zeros(hi - lo, dtype=np.uint8)
    inside = rows[(rows >= lo) & (rows < hi)]
    bits[inside - lo] = 1
    return np.packbits(bits).tobytes()


class DaskPartitions:
    """`solvers.cocoa.run_rounds`'s partitions on Dask workers: each call is one task per
    partition, pinned to its worker, gathered while the workers are watched (`_gather`). Counts
    the rounds' bytes (the numbers sent and brought back, 8 bytes each; Dask's framing aside) and
    each worker's seconds."""

    def __init__(self, client, parts: list, workers: list, n_features: int, B: float, stop: threading.Event):
        self.client, self.parts, self.workers, self.stop = client, parts, workers, stop
        self.n_features, self.B = n_features, B
        self.bytes_sent = self.bytes_received = 0
        self.worker_s = {w: 0.0 for w in set(workers)}
        self.rounds = 0

    def _each(self, fn, *args):
        futures = [self.client.submit(fn, part, *args, workers=[w], allow_other_workers=False, pure=False,
                                      priority=PRIORITY, key=f"{fn.__name__}-{uuid.uuid4().hex}")
                   for part, w in zip(self.parts, self.workers)]
        return _gather(self.client, futures, self.workers, self.stop)

    def solve(self, w, wb, passes, tol):
        full = np.append(w, wb)
        out = self._each(solve_part, full, int(passes), float(tol))
        self.rounds += 1
        self.bytes_sent += full.nbytes * len(self.parts)
        self.bytes_received += sum(v.nbytes for v, _, _ in out)
        for (v, _, seconds), worker in zip(out, self.workers):
            self.worker_s[worker] += seconds
        total = np.sum([v for v, _, _ in out], axis=0)
        return total[:-1], float(total[-1]), all(ok for _, ok, _ in out)

    def sums(self, w, wb):
        full = np.append(w, wb)
        out = self._each(sums_part, full)
        self.bytes_sent += full.nbytes * len(self.parts)
        self.bytes_received += sum(s.nbytes for s, _ in out)
        for (_, seconds), worker in zip(out, self.workers):
            self.worker_s[worker] += seconds
        return [s for s, _ in out]

    def w_of_alpha(self) -> np.ndarray:
        out = self._each(w_of_part)
        self.bytes_received += sum(v.nbytes for v in out)
        return np.sum(out, axis=0)

    def alpha(self) -> np.ndarray:
        return np.concatenate(self._each(alpha_part))

    def score(self, w, wb):
        return self._each(score_part, np.append(w, wb))

    def drop(self) -> None:
        for part, w in zip(self.parts, self.workers):
            self.client.submit(drop_part, part, workers=[w], pure=False, priority=PRIORITY,
                               key=f"drop_part-{uuid.uuid4().hex}")


def _gather(client, futures, workers, stop: threading.Event):
    """The futures' results, raising WorkerLost as soon as a worker they are pinned to has left
    the scheduler (its pinned tasks would otherwise wait for it forever) or one of them failed,
    and Stopped when the run is ending."""
    from distributed import wait

    while True:
        if stop.is_set():
            client.cancel(futures)
            raise Stopped("the run is ending")
        try:
            wait(futures, timeout=POLL_S)
            break
        except TimeoutError:
            pass
        present = client.scheduler_info()["workers"]
        gone = sorted(set(workers) - set(present))
        if gone:
            client.cancel(futures)
            raise WorkerLost(f"worker {gone[0]} left the cluster during the fit")
        paused = sorted(w for w in set(workers) if present[w].get("status") == "paused")
        if paused:
            # A paused worker runs no task, so its block's rounds would wait for ever: its
            # memory passed Dask's pause fraction while it holds the block (unmanaged memory,
            # which no spilling frees).
            client.cancel(futures)
            raise RuntimeError(f"worker {paused[0]} paused: its memory passed Dask's pause fraction "
                               f"(distributed.worker.memory.pause, 0.8 of its --memory-limit by default) while it "
                               f"holds its block of rows; give the workers a larger --memory-limit, more "
                               f"partitions, or a higher pause fraction")
    try:
        return client.gather(futures)
    except Exception as exc:  # noqa: BLE001 - a task that failed on its worker
        raise WorkerLost(f"a partition's task failed: {type(exc).__name__}: {exc}") from exc


def checkpoint_path(run_dir: Path, key: str) -> Path:
    return Path(run_dir) / "checkpoints" / f"{key}.npz"


def _write_checkpoint(path: Path, rounds: int, alpha: np.ndarray, trace: list, seconds: float) -> None:
    """The checkpoint, atomically (temporary file, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, rounds=rounds, alpha=alpha, trace=np.array(trace, dtype=np.float64).reshape(-1, 5),
                 seconds=seconds)
    os.replace(tmp, path)


def _read_checkpoint(path: Path, n_train: int):
    """(rounds, alpha, trace, seconds) of a checkpoint of this fold's rows, or None."""
    if not path.is_file():
        return None
    with np.load(path) as ck:
        if ck["alpha"].shape != (n_train,):
            return None
        return int(ck["rounds"]), ck["alpha"], [tuple(r) for r in ck["trace"].tolist()], float(ck["seconds"])


def run_distributed(spec, root: str, client, run_dir: Path, stop: threading.Event, log=print, retries: int = 1) -> dict:
    """A distributed fit of one spec: its record (as `tasks.run_fit`'s, and the rounds, bytes,
    workers, per-worker seconds and start in ``info``). Never raises but for Stopped."""
    from .tasks import environment
    t0 = time.perf_counter()
    record = {"key": spec.key, "kind": "fit", "status": "error", "error": None, "trace": []}
    retries = int(retries)
    attempt = 0
    while True:
        try:
            record.update(_fit(spec, root, client, run_dir, stop))
            break
        except Stopped:
            raise
        except WorkerLost as exc:
            attempt += 1
            if attempt > retries:
                record.update(status="error", error=f"WorkerLost: {exc} (retried {retries} times)")
                break
            log(f"distributed fit {spec.key}: {exc}; starting it again ({attempt} of {retries})")
        except Exception as exc:  # noqa: BLE001 - a failed fit is a row, not a crash
            record.update(status="error", error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            break
    record["task_time_s"] = time.perf_counter() - t0
    record.update(environment())
    record.setdefault("start", "cold")
    record.setdefault("start_from", None)
    return record


def _fit(spec: dict, root: str, client, run_dir: Path, stop: threading.Event) -> dict:
    import solvers
    from solvers.cocoa import run_rounds

    data, prob = spec.data, dict(spec.problem)
    if data["scale"] != "none":
        raise ValueError(f"datasets.{data['entry']}.scale={data['scale']}: a distributed fit reads its rows "
                         f"as stored and takes scale=none (a scaler fitted on one worker's rows would not be "
                         f"the fold's)")
    if prob.get("class_weight") is not None or "lambda" in prob:
        raise ValueError("a distributed fit takes neither class_weight nor lambda: set C")
    # The settings checked by a Problem's own rules (and its B), on a stand-in of two rows: the
    # rows themselves are the workers'.
    problem = solvers.Problem(np.zeros((2, 1)), np.array([-1.0, 1.0]), C=prob["C"], loss=prob["loss"],
                              intercept=prob["intercept"], intercept_scaling=prob.get("intercept_scaling", 1.0))
    spec_solver = solvers.get_solver(spec.solver)
    spec_solver.check_problem(problem)
    params = spec_solver.check_params(spec.solver_params)
    if params.get("random_state") is None:
        params["random_state"] = spec.seed
    if not client.scheduler_info()["workers"]:
        # An adaptive cluster (SLURM) may have none yet: its first one is waited for, and the
        # fit runs on the workers present then.
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    workers = sorted(client.scheduler_info()["workers"])
    K = int(params["partitions"])
    blocks, classes, positive, n_train, n_test = fold_blocks(root, data, spec.fold, K)
    meta = dataset_info(root, data["name"])
    checkpoint = checkpoint_path(run_dir, spec.key)
    resumed = _read_checkpoint(checkpoint, n_train)
    fit_id = f"{spec.key}-{uuid.uuid4().hex[:8]}"
    part_ids = [f"{fit_id}-{k}" for k in range(K)]
    where = [workers[k % len(workers)] for k in range(K)]
    B = float(problem.B)
    local = {"C": float(problem.C), "loss": problem.loss, "B": B, "positive": positive}
    # Each partition's slice of a checkpoint's alpha (its training rows in entry order).
    counts = [int(np.unpackbits(np.frombuffer(b["train"], dtype=np.uint8), count=b["count"]).sum()) for b in blocks]
    starts = np.r_[0, np.cumsum(counts)]
    loads = [client.submit(load_partition, pid, root, data["name"], meta["fingerprint"], block, local, float(K),
                           bool(params["shrinking"]), params["random_state"] + k,
                           None if resumed is None else resumed[1][starts[k]:starts[k + 1]],
                           workers=[w], allow_other_workers=False, pure=False, priority=PRIORITY,
                           key=f"load_partition-{pid}")
             for k, (pid, block, w) in enumerate(zip(part_ids, blocks, where))]
    parts = DaskPartitions(client, part_ids, where, int(meta["n_features"]), B, stop)
    try:
        held = _gather(client, loads, where, stop)
        w0, first, offset, old_trace = None, 0, 0.0, []
        if resumed is not None:
            first, _, old_trace, offset = resumed
            full = parts.w_of_alpha()
            w0, wb0 = full[:-1], float(full[-1])
        b = spec.budget
        budget = solvers.Budget(max_iter=b.get("max_iter"), tol=b["tol"], time_limit_s=b.get("time_limit_s"))
        trace = spec.trace
        recorder = solvers.Recorder(per_decade=trace["per_decade"], enabled=trace["enabled"],
                                    max_overhead=trace.get("max_overhead", 0.05)).start()
        last = {"t": 0.0, "n": 0, "s": 0.0}

        def after_round(k, w, wb):
            if recorder.seconds() - last["t"] < CHECKPOINT_S:
                return

            def save():
                t = time.perf_counter()
                _write_checkpoint(checkpoint, k, parts.alpha(), old_trace + _shifted(recorder.points, offset),
                                  offset + recorder.seconds())
                last["n"] += 1
                last["s"] += time.perf_counter() - t
            # A checkpoint's time is the driver's, not the algorithm's: paused as a trace point is.
            recorder.certify(save)
            last["t"] = recorder.seconds()

        done = run_rounds(parts, C=problem.C, budget=budget, recorder=recorder,
                          local_passes=int(params["local_passes"]),
                          local_tol=0.0 if params["local_tol"] is None else float(params["local_tol"]),
                          check_every=int(params["check_every"]), w=w0,
                          wb=0.0 if resumed is None else wb0, first_round=first, after_round=after_round)
        scores = parts.score(done.w, done.wb)
    finally:
        parts.drop()
    cert = done.cert
    right, n_te = sum(s[0] for s in scores), sum(s[1] for s in scores)
    info = {"rounds": done.rounds, "partitions": K, "sigma": float(K), "local_passes": int(params["local_passes"]),
            "workers": sorted(set(where)), "worker_s": {w: round(s, 4) for w, s in parts.worker_s.items()},
            "bytes_sent": parts.bytes_sent, "bytes_received": parts.bytes_received,
            "bytes_per_round": round((parts.bytes_sent + parts.bytes_received) / max(parts.rounds, 1)),
            "partition_rows": [h["rows"] for h in held], "partition_bytes": [h["bytes"] for h in held],
            "partition_load_s": [round(h["load_s"], 4) for h in held],
            "worker_peak_rss_mb": max(max(h["peak_rss_mb"] for h in held), max(s[2] for s in scores)),
            "checkpoints": last["n"], "checkpoint_s": last["s"], "n_sv": cert.n_sv}
    out = dict(status=done.status, n_iter=int(done.rounds), fit_time_s=offset + float(done.fit_time_s),
               primal_objective=cert.primal, dual_objective=cert.dual, duality_gap=cert.gap,
               kkt_violation=cert.kkt, train_accuracy=cert.correct / max(cert.n, 1),
               test_accuracy=right / n_te if n_te else math.nan, n_sv=cert.n_sv, n_train=n_train,
               n_test=n_test, n_features=int(meta["n_features"]), C=float(problem.C),
               trace=[list(p) for p in old_trace + _shifted(recorder.points, offset)],
               trace_extra=[{} for _ in old_trace] + list(recorder.extra_points), info=info,
               env_peak_rss_mb=info["worker_peak_rss_mb"])
    if resumed is not None:
        out.update(start="checkpoint", start_from=f"round {first} of an earlier attempt: its alpha, w recomputed")
    if checkpoint.exists():
        checkpoint.unlink()
    return out


def _shifted(points: list, offset: float) -> list:
    return [(k, t + offset, P, D, g) for k, t, P, D, g in points]


class DistributedFits(threading.Thread):
    """The distributed specs of an `execute`, one after another in a thread of the client,
    beside the sweep's loop: each record to the sink as its fit ends (module docstring)."""

    def __init__(self, specs: list, root: str, client, run_dir: Path, sink, retries: int, log=print):
        super().__init__(name="svmbench-distributed-fits", daemon=True)
        self.specs, self.root, self.client, self.run_dir, self.sink = specs, root, client, run_dir, sink
        self.retries, self.log = retries, log
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for spec in self.specs:
                if self.stop.is_set():
                    return
                units = [[spec]]
                self.sink.expect(units)
                try:
                    record = run_distributed(spec, self.root, self.client, self.run_dir, self.stop, self.log,
                                             self.retries)
                except Stopped:
                    return
                self.sink.add([record])
                self.sink.ended(units)
                self.sink.flush()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the thread that joins
            self.error = exc

    def finish(self, interrupted: bool) -> None:
        """Wait for the fits (or, interrupted, stop them where they are) and raise what failed."""
        if self.ident is None:      # never started
            return
        if interrupted:
            self.stop.set()
        self.join()
        if self.error is not None and not interrupted:
            raise self.error


def is_distributed(spec: dict) -> bool:
    """Whether a spec's solver trains across the workers (its SolverSpec's ``distributed``)."""
    import solvers
    try:
        return bool(getattr(solvers.get_solver(spec.solver), "distributed", False))
    except Exception:  # noqa: BLE001 - an unknown solver: its own task reports it
        return False
