"""`run(experiment)`: one experiment from its validated config to report, the function behind
`python -m pipeline` (a Hydra shim) and the one tests call directly.

    validate -> materialise datasets (plugin smoke fits, store entries, built on first use)
    -> plan (pure) -> execute (shards) -> results -> report

The composed DictConfig is read once, by `config.validate` (pure: it reads no store and fits
nothing); every step after it takes the typed, frozen `Experiment` it returns
(pipeline/experiment/experiment.py).

with the Dask cluster started, and its workers warmed, while the datasets are materialised and
the plan is made (`_plan_while_starting`; DESIGN.md, "Warm-up").
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path

from omegaconf import DictConfig

from .data import store
from .experiment.config import ConfigError
from .experiment.experiment import Experiment, thaw
from .engine.materialise import materialise_datasets, missing_datasets
from .engine.clusters import ClusterError, probe_cluster, shared_client
from .engine import costs
from .engine.execute import execute, failure_lines, Interrupted
from .engine.sink import clean_partial_shards, finished_in_plan, finished_keys
from .engine.warmup import task_modules, uncompiled_solvers, warm_workers, WarmUp
from .experiment.plan import build_plan, plan_lines
from .results.tables import shard_files, write_tables
from .engine.rss import peak_rss_mb, reset_peak_rss
from .engine.runlock import LockError, run_lock
from .preflight import preflight
from .results.shards import ShardError

log = logging.getLogger("svmbench")


def run(experiment: Experiment | DictConfig, run_dir: str | Path, echo=None, started: float | None = None,
        frames: bool = True) -> dict:
    """Run the experiment into run_dir (resuming if it has shards): the typed `Experiment` that
    `config.validate` returned (`python -m pipeline` validates once, before Hydra makes the run
    dir), or a composed DictConfig, which is validated here first. Returns a summary dict with
    the ``results`` and ``traces`` frames; frames=False leaves them out, and lets them go before
    the report reads the tables (`python -m pipeline`, which does not use them). With
    run.dry_run=true: the plan, and nothing is run or written. started: when the command began
    (`time.time()`: `python -m pipeline` gives its process's start), for the timing line."""
    t0 = time.perf_counter()
    timing = Timing(t0, None if started is None else max(0.0, time.time() - started))
    run_dir = Path(run_dir)

    def say(msg):
        # Under `python -m pipeline`, Hydra's logging prints this and writes run.log; callers
        # without Hydra (tests, notebooks) get run.log from `_run_log` and may pass echo=print.
        log.info(msg)
        if echo is not None:
            echo(msg)

    exp = experiment if isinstance(experiment, Experiment) else preflight(experiment)[0]
    if exp.run.dry_run:
        return dry_run(exp, run_dir, say)
    probe_cluster(exp.cluster)     # a scheduler that does not answer fails here, before any work
    with contextlib.ExitStack() as cluster:
        # Every check on the data (store entries, fingerprints, classes against folds) happens in
        # planning, before the run directory gets anything of its own (the store's writes are its own
        # and atomic: a dataset built here is whole, and kept).
        plan, client, warmup = _plan_while_starting(exp, run_dir, cluster)
        timing.mark("plan")
        preload = _preload_report(exp) if client is not None else None
        run_dir.mkdir(parents=True, exist_ok=True)
        with run_lock(run_dir, say), _run_log(run_dir):
            # Handed over, not kept here: `_run_locked` lets the plan go after execute.
            held = [plan]
            del plan
            try:
                return _run_locked(exp, held, run_dir, say, timing, client, warmup, preload, frames)
            except Exception as exc:
                # The log says how the run ended, as for Ctrl-C; the caller prints the line.
                log_line(run_dir, error_line(exc))
                raise


def error_line(exc: BaseException) -> str:
    """The one line for an error that ends a run (what `python -m pipeline` prints)."""
    if isinstance(exc, ConfigError):
        return f"error: invalid configuration: {exc}"
    ours = (store.StoreError, ClusterError, LockError, ShardError)
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"error: {exc}" if isinstance(exc, ours) else f"error: {type(exc).__name__}: {first}"


def log_line(run_dir: Path, line: str) -> None:
    """Append one line to run.log directly, not through the logger, whose console handler
    would print it a second time beside the command's own line on stderr."""
    with contextlib.suppress(OSError), open(Path(run_dir) / "run.log", "a") as fh:
        fh.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {line}\n")


class Timing:
    """Where a command's seconds went, phase by phase, for one line of run.log (a user sees the
    fixed costs beside the fits). Each `mark` closes the phase since the last."""

    def __init__(self, t0: float, before: float | None = None):
        self.last, self.t0, self.before = t0, t0, before
        self.phases: list[tuple[str, float]] = []
        # The client's peak resident memory phase by phase (MB): what the interpreter, imports
        # and config hold before the first phase (a fixed cost), then each phase's own peak.
        self.peaks: list[tuple[str, float]] = [("start", _phase_peak_mb())]

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases.append((phase, now - self.last))
        self.peaks.append((phase, _phase_peak_mb()))
        self.last = now

    def line(self, summary=None, own_mb: float | None = None, report_cpu: float | None = None) -> str:
        """"timing: start 2.1 s (...), plan 0.4 s, warm-up wait 0.3 s (...), execute 13.6 s,
        tables 1.1 s, report 0.9 s; total 18.4 s before exit": the phases add up to the total.
        start is the command's own (interpreter, imports, Hydra composing the config) up to
        `run`; the cluster starts and warms beside start and plan, and only the wait for it
        after planning delays the execute phase, whose clock starts with the workers warm."""
        launcher = os.environ.get("SVMBENCH_LAUNCHED_BY")    # set in a kept cluster launcher's child
        what = (f"interpreter and config; imports done ahead by the kept cluster's launcher, pid {launcher}"
                if launcher else "interpreter, imports, config")
        parts = [f"start {self.before:.1f} s ({what})"] if self.before is not None else []
        for phase, seconds in self.phases:
            if phase == "execute" and summary is not None:
                wait = summary.startup_wait_s or 0.0
                if summary.startup_s is not None:
                    parts.append(f"warm-up wait {wait:.1f} s (cluster start and warm-up {summary.startup_s:.1f} s "
                                 f"in all, beside start and plan)")
                parts.append(f"execute {summary.wall_s:.1f} s")
                around = seconds - summary.wall_s - wait
                if around >= 0.05:
                    parts.append(f"around execute {around:.1f} s (the skip list, the last shards, the workers' counts)")
            elif phase == "report" and report_cpu is not None:
                # The report's own processes (a fork and its figure processes) on more than one
                # core: their CPU seconds say what it costs beside what it waits.
                parts.append(f"report {seconds:.1f} s (CPU {report_cpu:.1f} s in its processes)")
            else:
                parts.append(f"{phase} {seconds:.1f} s")
        total = time.perf_counter() - self.t0 + (self.before or 0.0)
        peak = max([peak_rss_mb(), *(mb for _, mb in self.peaks)])
        phases = ", ".join(f"{phase} {mb:.0f}" for phase, mb in self.peaks)
        # The report runs in processes of its own (forks of this one, which waits meanwhile): the
        # command's memory at its worst is its own peak plus the report's private pages at theirs
        # (the pages a fork shares with the command are the command's, counted once).
        report = (f", {peak + own_mb:.0f} MB with the report's processes' own memory at its peak ({own_mb:.0f} MB)"
                  if own_mb else "")
        return (f"timing: {', '.join(parts)}; total {total:.1f} s before exit; client peak RSS {peak:.0f} MB over the "
                f"run{report}; the client's peak by phase, MB: {phases}")


def _phase_peak_mb() -> float:
    """This process's peak resident memory since the last call (MB), and a new peak started: the
    phase that just ended's own (`rss.reset_peak_rss`; where the peak cannot be reset, the
    process's so far)."""
    mb = peak_rss_mb()
    reset_peak_rss()
    return mb


class _Planning(threading.Thread):
    """`build_plan(exp, materialise_datasets(exp))` in a thread of its own; `result()` joins it
    and returns the plan or raises what planning raised. A daemon: Ctrl-C (which only the main
    thread hears) must not wait for a dataset build to end."""

    def __init__(self, exp: Experiment):
        super().__init__(name="svmbench-planning", daemon=True)
        self.exp, self.plan, self.error = exp, None, None
        self.start()

    def run(self) -> None:
        try:
            self.plan = build_plan(self.exp, materialise_datasets(self.exp))
        except BaseException as exc:   # noqa: BLE001 - re-raised in the main thread by result()
            self.error = exc

    def result(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.plan


# A warm-up `start_ahead` submitted, (client, WarmUp), for the run that opens that
# client next.
_AHEAD: list = []


def start_ahead(exp: Experiment, run_dir: Path | None) -> None:
    """`python -m pipeline`'s head start: once its config is validated, the cluster (kept by
    `clusters.keep_clusters`) starts and its workers warm while Hydra composes the config again
    and sets up the run (0.8 s), instead of after; `_plan_while_starting` takes the warm-up
    over. Only where it would start the cluster anyway: a new run dir, a local or address
    cluster (an adaptive one grows with the tasks). An address where no scheduler answers is
    refused here, as `run` would first; past that it is best effort: a failure leaves the start
    to `run`, which reports it in its order (a planning error first)."""
    if exp.cluster.kind not in ("local", "address") or (run_dir is not None and shard_files(run_dir)):
        return
    started = time.perf_counter()
    probe_cluster(exp.cluster)      # a dead address: the one line `run` would give first, not twice the wait
    try:
        names, modules = exp.solver_names(), task_modules(exp)
        compiling = uncompiled_solvers(names)       # before the sandboxes write numba's cache
        with shared_client(exp.cluster) as client:     # kept open by keep_clusters
            futures = warm_workers(client, names, int(exp.cluster.blas_threads), modules)
    except Exception:  # noqa: BLE001 - run() starts it again and reports what fails
        return
    _AHEAD[:] = [(client, WarmUp(futures, started=started, solvers=set(names), modules=set(modules),
                                 compiling=compiling))]


def _plan_while_starting(exp: Experiment, run_dir: Path, stack: contextlib.ExitStack):
    """(plan, client, warm-up: `warmup.WarmUp`): the Dask cluster starts, and its workers warm up
    (`warmup.warm_workers`: each thread's sandbox child started, solvers imported, numba's
    kernels loaded), while the client plans and materialises the datasets in a thread; the
    cluster stays open in `stack`. Both take seconds, and neither needs the other's result.
    Only a new run dir starts it ahead: a resumed run may have nothing left to do, so it plans
    first and `execute` opens the cluster only for work (client None). The cluster starts in the
    main thread, which alone can start its workers with SIGINT ignored (`clusters.open_client`)."""
    if exp.cluster.kind == "sequential" or shard_files(run_dir):
        return build_plan(exp, materialise_datasets(exp)), None, None
    started = time.perf_counter()
    planning = _Planning(exp)
    try:
        client = stack.enter_context(shared_client(exp.cluster))
    except Exception:
        planning.result()      # a planning error (bad input) is the one to report first
        raise
    threads = int(exp.cluster.blas_threads)
    ahead = _AHEAD.pop() if _AHEAD else None
    if ahead is not None and ahead[0] is client:      # started ahead by `python -m pipeline`
        warmup = ahead[1]
    else:
        warmup = WarmUp([], started=started)
    warmup.warm(client, exp.solver_names(), threads, task_modules(exp))
    plan = planning.result()
    warmup.planned = time.perf_counter()
    # Reference solves may use a solver no entry names (plan.REFERENCE_SOLVERS), and a multiclass
    # dataset's fits a module (`task_modules`): warmed as well (what is warm already is not again).
    warmup.warm(client, {spec.solver for spec in plan.references.values()}, threads, task_modules(exp, plan))
    return plan, client, warmup


def _preload_report(exp: Experiment) -> threading.Thread:
    """The report's imports (matplotlib, plotly, PIL: about 1 s of a small run's 1.5 s report,
    idle) in a thread, started once the plan is made: the client then mostly waits, for its
    workers' warm-up and for the tasks, and a small run's report no longer pays them at its end.
    `_run_locked` joins it before the report (nothing forks while it imports)."""
    def target():
        from .report import preload
        with contextlib.suppress(Exception):     # an import that fails here fails in the report, said there
            preload(exp.report.get("figures") is not False)     # unset: the default, true
    thread = threading.Thread(target=target, name="svmbench-report-imports", daemon=True)
    thread.start()
    return thread


def _machine_line(when: str) -> str:
    """The cores and load average at the execute phase's start or end: its seconds are
    measured on a machine others may share (a paper's README quotes them, pipeline/papers/common.py)."""
    one, five, fifteen = os.getloadavg()
    return (f"machine at the {when}: {os.cpu_count()} cores, load average {one:.2f}, {five:.2f}, "
            f"{fifteen:.2f} (1, 5, 15 min)")


def _run_locked(exp: Experiment, held: list, run_dir: Path, say, timing: Timing, client=None, warmup=None,
                preload: threading.Thread | None = None, frames: bool = True) -> dict:
    """The run under its lock; held: [the plan], which is let go after execute (its templates and
    columns, `plan.Specs`: 9 MB at 50,000 fits, 34 MB when it held a dict per spec). Ctrl-C at
    any moment of it, execute, tables or report, ends it with `Interrupted`, whose line counts
    the plan's tasks on disk."""
    fit_keys = list(held[0].fits)
    keys = list(held[0].references) + fit_keys
    try:
        return _run_phases(exp, held, [fit_keys], keys, run_dir, say, timing, client, warmup, preload, frames)
    except KeyboardInterrupt:
        saved = len(finished_keys(run_dir) & set(keys))
        msg = f"interrupted: {saved} of {len(keys)} tasks saved in {run_dir}; run the same command to resume"
        # Into run.log as well (the CLI prints it once, on stderr): the log says how the run ended.
        log_line(run_dir, msg)
        raise Interrupted(msg) from None


def _run_phases(exp: Experiment, held: list, held_fit_keys: list, keys: list, run_dir: Path, say, timing: Timing,
                client, warmup, preload: threading.Thread | None, frames: bool) -> dict:
    """`_run_locked`'s phases; held and held_fit_keys: [the plan], [its fit keys], let go on the way."""
    plan, fit_keys = held.pop(), held_fit_keys.pop()
    root = exp.store_root
    (run_dir / "config.yaml").write_text(exp.to_yaml())
    removed = clean_partial_shards(run_dir)
    if removed:
        say(f"removed {removed} partial shard files (temporary files of a run killed mid-write)")
    say(f"plan: {len(plan.fits)} fits and {len(plan.references)} reference solves over "
        f"{len(plan.datasets)} datasets (store: {root})")
    for line in plan_lines(plan, exp):
        say(line)
    if exp.search_kind == "grid":      # a search decides its rounds' fits as it goes
        done = finished_in_plan(run_dir, plan, exp.run.retry_errors)[0] if shard_files(run_dir) else set()
        for line in costs.lines(costs.estimate(plan, done, run_dir, root), exp.run):
            say(line)
    say(_machine_line("start"))
    if exp.search_kind == "grid":
        summary = execute(plan, run_dir, exp, root, log=say, client=client, warmup=warmup)
    else:   # rounds of plans into the same shards; the plan of them all from here on
        from .search_run import run_search
        plan, summary = run_search(exp, run_dir, root, log=say, client=client, warmup=warmup)
        fit_keys = list(plan.fits)
        # In place: the tables read these keys, and an interrupt's line counts them.
        keys[:] = list(plan.references) + fit_keys
    timing.mark("execute")
    costs.record(run_dir, plan, root)     # what this run measured, for the next one's estimate
    # What the tables and the closing lines need of the plan; the plan itself goes.
    reference_of = plan.fits.reference_of(fit_keys)
    del plan, fit_keys
    say(summary.line())
    say(_machine_line("end"))
    warmed = warmup.thread_seconds() if warmup is not None else []
    if warmed:
        say(f"warm-up while planning: {len(warmed)} worker threads started their sandbox and warmed "
            f"its solvers (longest {max(warmed):.1f} s), outside every task's time and the execute phase's")
    # Each fit's f* from the reference the current plan gives it (a reused fit's shard may name
    # an earlier one: the reference key is not part of a fit's key). The tables are written by
    # DuckDB from the shards; what this needs of them (rows, points, failed tasks, other configs'
    # records) comes back as counts, never as a frame of every fit.
    written = write_tables(run_dir, keys, reference_of)
    del reference_of
    if written.others:
        say(f"left out of the tables: {written.others} records of other configs in {run_dir / 'shards'} "
            f"(kept: running that config here again resumes them)")
    failed, rows, points = written.failed, written.results, written.points
    # The report reads the tables from their files (as `python -m pipeline.report` does), in a
    # process of its own; the API (frames=True) reads them back for its caller.
    frames = _read_frames(run_dir) if frames else None
    timing.mark("tables")
    # The report's imports were started in a thread once the plan was made (`_preload_report`);
    # joined here, so nothing forks the report's process while it imports.
    if preload is not None:
        preload.join()
    report, report_failed, info = _report(run_dir, say)
    timing.mark("report")
    say(f"results: {run_dir / 'results.parquet'} ({rows} rows), traces: {points} points")
    if report_failed is None:
        say(f"report: {report}  ({time.perf_counter() - timing.t0:.1f} s)")
    else:
        say(report_failed)
    paper = write_reproduction(exp, run_dir, root)
    if paper is not None:
        timing.mark("paper")
        say(f"paper: {paper}  ({time.perf_counter() - timing.t0:.1f} s)")
    say(timing.line(summary, info.get("own_mb"), info.get("cpu_s")))
    if failed:
        # Last, so that it closes the log: what failed, and that a rerun retries it.
        again = "retries them" if exp.run.retry_errors else "keeps them (run.retry_errors=false)"
        say(f"{failed} of {len(keys)} tasks failed (status=error); running again into {run_dir} {again}:")
        for line in failure_lines(run_dir, keys):
            say(line)
    out = {"run_dir": str(run_dir), "report": str(report), "summary": summary, "paper": paper, "failed": failed,
           "report_failed": report_failed}
    if frames is not None:
        out.update(results=frames[0], traces=frames[1])
    return out


def _read_frames(run_dir: Path) -> tuple:
    """(results, traces) read back from their files, for a caller of `run` that wants them."""
    import pandas as pd
    return pd.read_parquet(run_dir / "results.parquet"), pd.read_parquet(run_dir / "traces.parquet")


def _report(run_dir: Path, say) -> tuple:
    """(report.md or None, the one line saying why it failed or None, what it summarised): the
    status lines, then the report built in a process of its own (`report.build_bounded`), its
    progress lines and what it left out said to run.log. A report that fails leaves the results
    as they are: the command says so in one line and `python -m pipeline.report` rebuilds it."""
    from .report import status_lines
    from .report.build import ReportFailed, build_bounded, load
    data = load(run_dir)
    for line in status_lines(data):
        say(line)
    data.engine.close()         # no connection of the engine's is left open across the fork
    del data
    try:
        report, info = build_bounded(run_dir, log=say)
    except ReportFailed as exc:
        return None, str(exc), {}
    left = info.get("left_out") or []
    say(f"report: summarised {info.get('fits', 0)} fits over {info.get('problems', 0)} problems from the tables; "
        f"left out: {'; '.join(left) if left else 'nothing'}")
    return report, None, info


@contextlib.contextmanager
def _run_log(run_dir: Path):
    """run.log in the run dir for callers without Hydra (whose job logging writes it already)."""
    path = os.path.abspath(run_dir / "run.log")   # as logging.FileHandler names its file
    loggers = (log, logging.getLogger())
    if any(getattr(h, "baseFilename", None) == path for lg in loggers for h in lg.handlers):
        yield
        return
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(message)s"))
    level = log.level
    log.addHandler(handler)
    if not log.isEnabledFor(logging.INFO):
        log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        handler.close()


def dry_run(exp: Experiment, run_dir: Path | None, say) -> dict:
    """What a run would do, from the store as it is: the datasets, the tasks (fits and reference
    solves, by solver), how many the run dir already holds, and how many it would compute. Runs,
    builds and writes nothing; a built-in dataset the store lacks is named (it would be built
    first) and its tasks are not counted, since its labels decide its folds."""
    root = exp.store_root
    data = materialise_datasets(exp, build=False)
    missing = missing_datasets(exp, data)
    plan = build_plan(exp.only_datasets(data), data) if data else None
    fits, refs = (plan.fits, plan.references) if plan else ({}, {})
    # Counted from the plan's columns: a million keys as a set would be most of a dry run's memory.
    n_tasks = len(fits) + len(refs)
    have, errors = (finished_in_plan(run_dir, plan, exp.run.retry_errors) if run_dir is not None and plan is not None
                    else (set(), set()))
    todo = n_tasks - len(have) + len(errors)
    say(f"dry run (run.dry_run=true): nothing is run, built or written; store: {root}")
    for dkey, d in (plan.datasets if plan else {}).items():
        say(f"  dataset {dkey}: {d['name']} ({d['n_rows']} rows x {d['n_features']} features, "
            f"classes {d['classes']}, {len(d['folds'])} folds)")
    for dkey in missing:
        ds = exp.datasets[dkey]
        flags = "".join(f" --param {k}={v}" for k, v in thaw(ds.params).items())
        say(f"  dataset {dkey}: not in the store; the run would build it first "
            f"(`python -m pipeline.data build {ds.builder}{flags}`); its tasks are not counted below")
    by_solver = fits.count_by("solver_entry") if plan else {}
    say(f"  fits: {len(fits)} ({', '.join(f'{k} {n}' for k, n in by_solver.items()) or 'none'})")
    for line in plan_lines(plan, exp) if plan else []:
        say(f"  {line}")
    if plan is not None and exp.search_kind == "grid":
        for line in costs.lines(costs.estimate(plan, have - errors, run_dir, root), exp.run):
            say(f"  {line}")
    ref_by = refs.count_by("solver") if plan else {}
    say(f"  reference solves: {len(refs)} ({', '.join(f'{k} {n}' for k, n in ref_by.items()) or 'none'}; "
        f"run.reference={exp.run.reference})")
    retry = f", {len(errors)} of them errors to retry" if errors else ""
    where = f"run dir {run_dir}" if run_dir is not None else "a new run dir (no hydra.run.dir given)"
    say(f"  {where}: {len(have)} of {n_tasks} tasks already done{retry}; the run would compute {todo}")
    return {"dry_run": True, "plan": plan, "missing": missing, "done": len(have), "todo": todo,
            "failed": 0}


def write_reproduction(exp: Experiment, run_dir: Path, root: str) -> Path | None:
    """The last step for a paper's experiment: its writer turns the run's tables into
    outputs/papers/<name>/ (the run's own papers/<name>/ under smoke=true)."""
    if exp.paper is None:
        return None
    from .papers import out_dir, write_paper
    return write_paper(exp.paper, run_dir, out_dir(exp.paper, run_dir, exp.smoke), root)
