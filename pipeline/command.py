"""The run command, `python -m pipeline [hydra overrides]` and `svmbench run`: a Hydra shim
around `pipeline.run.run`. Its fronts (pipeline/__main__.py, pipeline/cli.py) hand a
``cluster=kept`` command to the kept cluster's launcher first (`pipeline.kept.handoff`), whose
child runs this same `command`.

Exit codes: 0 when every task of the plan has a result, 1 when some ended in `error` (after
shards, tables and report are written), 2 for bad input (an invalid configuration, a dataset the
run cannot use, a run directory in use, a cluster that cannot be reached or started), 130 when interrupted (Ctrl-C). Bad input is one line
on stderr, `error: ...`, never a traceback; so is an installation that cannot run (configs
missing, or `pipeline`/`solvers` not svmbench's: `pipeline.installation.check`), exit 2 too.

Before Hydra creates the run directory, a single run (not `-m`, no Hydra flags) is composed and
validated here, so a refused configuration leaves no directory behind; `run.dry_run=true` is
answered here too, and writes nothing. A single run is composed once (`run_single`), and that
config is handed to Hydra's own `run_job`; a multirun and Hydra's flags go through `@hydra.main`."""
import os
import shutil
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from pipeline.experiment.config import CONF_DIR, ConfigError, prepare_overrides, register_schema
from pipeline.engine.clusters import ClusterError
from pipeline.engine.rss import process_start
from pipeline.engine.runlock import LockError
from pipeline.data.store import StoreError

register_schema()
OVERRIDES: list[str] = []     # the command line as the user gave it (before prepare_overrides)
FAILED: list[int] = []        # failed task counts of the runs of this process (one per multirun job)
SWEEPS: set[str] = set()      # a multirun's sweep dir, for the command that gathers its jobs' report
STARTED: list[float] = []     # when this process started (time.time()), for the first run's timing line
VALIDATED: list = []          # a single run's Experiment, validated once by `preflight`, for `main` to run


def refuse(exc: Exception, run_dir: Path | None = None) -> None:
    """Bad input: one line, exit 2; a run directory that holds nothing but what Hydra wrote on
    the way in (its .hydra/ and run.log) is removed, so a refused run leaves nothing behind."""
    what = "invalid configuration: " if isinstance(exc, ConfigError) else ""
    print(f"error: {what}{exc}", file=sys.stderr)
    discard_unused(run_dir)
    sys.exit(2)


def discard_unused(run_dir: Path | None) -> None:
    """Remove a run directory that holds nothing but what Hydra wrote on the way in (its .hydra/
    and run.log): the run ended before it wrote anything of its own (before planning ended)."""
    if run_dir is not None and run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {".hydra", "run.log"}:
        shutil.rmtree(run_dir, ignore_errors=True)


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from pipeline.experiment.config import check_composed
    from pipeline.engine.execute import Interrupted
    from pipeline.results.tables import ShardError
    from pipeline.run import run
    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        SWEEPS.add(hydra_cfg.sweep.dir)
    try:
        if VALIDATED:      # a single run: composed, checked and validated once, by `preflight`
            experiment = VALIDATED.pop()
        else:              # a multirun's job: Hydra composed it; `run` validates it
            check_composed(cfg, OVERRIDES)
            experiment = cfg
        out = run(experiment, run_dir, started=STARTED.pop() if STARTED else None, frames=False)
    except (ConfigError, StoreError, LockError, ClusterError, ShardError) as exc:
        refuse(exc, run_dir)
    except Interrupted as exc:
        interrupted(str(exc))
    except BaseException:
        # A crash (its traceback follows) or Ctrl-C before the run wrote anything of its own.
        discard_unused(run_dir)
        raise
    # Not sys.exit here: in a multirun it would end the sweep before its other jobs.
    FAILED.append(out["failed"] or out.get("report_failed") is not None)


def interrupted(message: str) -> None:
    """Ctrl-C's one line on stderr, then exit 130. Where the streams are gone (a command killed
    while its kept cluster's launcher ran it in a child: its pipes closed, and the child
    interrupted itself), the line is lost but not the status: the write's BrokenPipeError, and
    the interpreter's flush of the same streams at exit (status 120), would have replaced it."""
    try:
        print(message, file=sys.stderr, flush=True)
        sys.stdout.flush()
    except OSError:
        mute_streams()
    sys.exit(130)


def mute_streams() -> None:
    """Point stdout and stderr (descriptors 1 and 2) at /dev/null: their reader is gone, and
    what is still written, the streams' flush at exit among it, must not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def finish(code: int) -> None:
    """Exit with `code` once everything is written: the atexit handlers run (logging's among
    them, then the streams are flushed), but not the interpreter's teardown, which frees every
    module and object one by one: 0.7 s of a 13 s command (numba, pandas, matplotlib, Dask),
    after the last result and the cluster were closed."""
    import atexit
    import logging
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None:      # not CPython: the ordinary exit
        sys.exit(code)
    run_exit_handlers()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def preflight(overrides: list[str], composed=None):
    """Compose and validate a single run before Hydra makes its directory; refuse a run directory
    another run holds before Hydra writes its .hydra/ into it; answer run.dry_run=true. Returns
    the validated experiment and its run dir (None: Hydra makes a new one). composed: the run's
    config as `_compose_run` made it (with its `hydra` node), composed here when None."""
    from pipeline.experiment.config import override_value, validate
    from pipeline.engine.runlock import check_free
    if composed is None:
        composed = _compose_run(prepare_overrides(overrides))[1]
    exp = validate(_task_config(composed, overrides))
    run_dir = override_value(overrides, "hydra.run.dir")
    if exp.run.dry_run:
        from pipeline.run import dry_run
        dry_run(exp, Path(run_dir) if run_dir else None, print)
        sys.exit(0)
    if run_dir:
        check_free(run_dir)
    return exp, Path(run_dir) if run_dir else None


def _hydra_errors():
    """The exceptions Hydra and OmegaConf raise for a bad override or config."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException
    return HydraException, OmegaConfBaseException


def _compose_run(prepared: list[str]):
    """(Hydra, the single run's config with its `hydra` node): composed once, as `Hydra.run`
    composes it. Hydra's own `@hydra.main` path composes a run twice (once only to read
    `hydra.mode`) and the preflight once more: three composes of 0.2-0.7 s each on the way
    to the first task (issue 30, point 3). A composition error is one ConfigError line."""
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import (create_automatic_config_search_path,
                                       detect_calling_file_or_module_from_task_function, detect_task_name)
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    register_schema()
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(main.__wrapped__)
    GlobalHydra.instance().clear()
    try:
        hydra_app = Hydra.create_main_hydra2(
            task_name=detect_task_name(calling_file, calling_module),
            config_search_path=create_automatic_config_search_path(None, None, str(CONF_DIR)))
        # As Hydra's `_run_app` does for a config that leaves hydra.mode unset (ours: conf/config.yaml).
        cfg = hydra_app.compose_config(config_name="config", overrides=[*prepared, "hydra.mode=RUN"],
                                       with_log_configuration=False, run_mode=RunMode.RUN)
    except _hydra_errors() as exc:
        # Hydra's own composition errors (a malformed override, a wrong type): their lines, joined.
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        cause = exc.__cause__
        if cause is not None:
            lines.append(str(cause).splitlines()[0])
        raise ConfigError("; ".join(lines)) from None
    return hydra_app, cfg


def _task_config(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The config the task sees (Hydra's `run_job` hands it over without its `hydra` node),
    checked against the command line (`config.check_composed`)."""
    import copy

    from omegaconf import open_dict, read_write

    from pipeline.experiment.config import check_composed
    task_cfg = copy.deepcopy(cfg)
    with read_write(task_cfg), open_dict(task_cfg):
        del task_cfg["hydra"]
    check_composed(task_cfg, overrides)
    return task_cfg


def run_single(overrides: list[str]) -> None:
    """A single run (no -m, no Hydra flag): composed once (`_compose_run`), validated and
    checked (`preflight`), the cluster started ahead (`run.start_ahead`), then Hydra's own
    `run_job` on that config: the run directory, .hydra/, run.log and the task, as `@hydra.main`
    does them, without composing again."""
    from hydra._internal.callbacks import Callbacks
    from hydra._internal.utils import run_and_report
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.utils import run_job
    from hydra.types import HydraContext
    from pipeline.run import start_ahead

    hydra_app, cfg = _compose_run(prepare_overrides(overrides))
    checked = preflight(overrides, cfg)
    VALIDATED[:] = [checked[0]]
    start_ahead(*checked)     # the cluster starts and warms while Hydra sets up the run
    try:
        def job():
            from hydra.core.utils import configure_log
            configure_log(cfg.hydra.hydra_logging, cfg.hydra.verbose)
            callbacks = Callbacks(cfg)
            callbacks.on_run_start(config=cfg, config_name="config")
            ret = run_job(hydra_context=HydraContext(config_loader=hydra_app.config_loader, callbacks=callbacks),
                          task_function=main.__wrapped__, config=cfg, job_dir_key="hydra.run.dir",
                          job_subdir_key=None, configure_logging=True)
            callbacks.on_run_end(config=cfg, config_name="config", job_return=ret)
            _ = ret.return_value     # raises what the task raised, as `Hydra.run` does
        run_and_report(job)
    finally:
        GlobalHydra.instance().clear()


def command(argv: list[str], started: float | None = None) -> None:
    """`python -m pipeline ARGV` and `svmbench run ARGV`: check the installation, preflight a
    single run, hand the rest to Hydra; exits with the codes above (never returns)."""
    from pipeline.installation import InstallationError, check
    sys.argv[1:] = argv
    STARTED[:] = [process_start() if started is None else started]
    OVERRIDES[:] = [a for a in argv if not a.startswith("-")]
    try:
        check()
        single = len(OVERRIDES) == len(sys.argv) - 1    # no Hydra flag (-m, --cfg, --config-name, ...)
        from pipeline.engine.clusters import keep_clusters
        with keep_clusters():   # the jobs of a multirun share one Dask cluster
            if single:
                run_single(OVERRIDES)
            else:
                prepared = prepare_overrides(OVERRIDES)
                rewritten = iter(prepared)
                sys.argv[1:] = [a if a.startswith("-") else next(rewritten) for a in sys.argv[1:]]
                main()
    except (ConfigError, StoreError, LockError, ClusterError, InstallationError) as exc:
        refuse(exc)
    except KeyboardInterrupt:
        # Outside the tasks (composing, planning, building a dataset, the report): one line too.
        interrupted(INTERRUPTED)
    try:
        for sweep in sorted(SWEEPS):   # each job wrote its own report; the jobs side by side is one command away
            print(f"multirun: {len(FAILED)} jobs in {sweep}; their combined report: python -m pipeline.report {sweep}")
        finish(1 if any(FAILED) else 0)
    except KeyboardInterrupt:
        # At the very end (the atexit handlers, the streams' flush): every Ctrl-C is exit 130.
        interrupted(INTERRUPTED)


INTERRUPTED = "interrupted; run the same command to resume"

