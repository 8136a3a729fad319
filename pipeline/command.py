"""The run command, `python -m pipeline [hydra overrides]` and `svmbench run`: a Hydra front around
`pipeline.run.run`. Its fronts (pipeline/__main__.py, pipeline/cli.py) hand a ``cluster=kept``
command to the kept cluster's launcher first (`pipeline.kept.handoff`), whose child runs this same
`command`.

Exit codes: 0 when every task of the plan has a result, 1 when some ended in `error` (after
shards, tables and report are written), 2 for bad input (an invalid configuration, a dataset the
run cannot use, a run directory in use, a cluster that cannot be reached or started), 130 when
interrupted (Ctrl-C). Bad input is one line on stderr, `error: ...`, never a traceback; so is an
installation that cannot run (configs missing, or `pipeline`/`solvers` not svmbench's:
`pipeline.installation.check`), exit 2 too.

Hydra through its public API only. A single run (no ``-m``, no Hydra flag) is composed once with
the compose API (`hydra.initialize_config_dir`, `hydra.compose` with its ``hydra`` node), checked
once by `pipeline.preflight.preflight` before any directory exists (so a refused configuration
leaves none behind; ``run.dry_run=true`` is answered there and writes nothing), and handed to
`hydra.core.utils.run_job`, the call Hydra's launchers make: it creates the run directory, writes
``.hydra/`` and configures run.log, as ``@hydra.main`` would, without composing again. A multirun
and Hydra's own flags (``--cfg``, ``--help``, ``-m``) go through ``@hydra.main``.
"""
from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import hydra
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import run_job
from hydra.errors import HydraException
from hydra.types import HydraContext, RunMode
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

from pipeline import exits, preflight as checks, run as running
from pipeline.data.store import StoreError
from pipeline.engine.clusters import ClusterError, keep_clusters
from pipeline.engine.execute import Interrupted
from pipeline.engine.rss import process_start
from pipeline.engine.runlock import LockError
from pipeline.experiment.config import CONF_DIR, ConfigError, prepare_overrides, register_schema
from pipeline.installation import InstallationError, check
from pipeline.results.shards import ShardError
from pipeline.results.tables import TablesFailed

INTERRUPTED = "interrupted; run the same command to resume"
# Bad input: one `error:` line and exit 2 (`Command.refuse`).
BAD_INPUT = (ConfigError, StoreError, LockError, ClusterError, ShardError, TablesFailed)
# The name Hydra gives the job (hydra.job.name in .hydra/hydra.yaml), as `@hydra.main` named it
# from this module.
JOB_NAME = "command"


class Command:
    """One `python -m pipeline ARGV`: what it was given, the runs it made, and how it ends.

    ``run()`` returns the exit code without exiting (tests call it in their own process);
    `command` is ``fast_exit(Command(argv).run())``."""

    def __init__(self, argv: list[str], started: float | None = None):
        self.argv = list(argv)
        # The command line as the user gave it (before `prepare_overrides`): its Hydra overrides.
        self.overrides = [a for a in self.argv if not a.startswith("-")]
        self.started = process_start() if started is None else started   # for the first run's timing line
        self.failed: list[bool] = []        # per run (one per multirun job): some task failed, or the report
        self.sweeps: set[str] = set()       # a multirun's sweep dirs, for the line naming their combined report
        self.checked = None                 # a single run's Experiment, from its preflight

    # ------------------------------------------------------------------------------------ run
    def run(self) -> int:
        """Check the installation, run the single run or hand the rest to ``@hydra.main``; the
        exit code (above)."""
        try:
            return self._run()
        except SystemExit as exc:    # `refuse`, `interrupted` and Hydra's own exits
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)

    def _run(self) -> int:
        try:
            check()
            with keep_clusters():   # the jobs of a multirun share one Dask cluster
                if len(self.overrides) == len(self.argv):    # no Hydra flag (-m, --cfg, --config-name, ...)
                    self.run_single()
                else:
                    self.run_hydra_main()
        except (*BAD_INPUT, InstallationError) as exc:
            self.refuse(exc)
        except KeyboardInterrupt:
            # Outside the tasks (composing, planning, building a dataset, the report): one line too.
            self.interrupted(INTERRUPTED)
        for sweep in sorted(self.sweeps):   # each job wrote its own report; side by side is one command away
            print(f"multirun: {len(self.failed)} jobs in {sweep}; their combined report: "
                  f"python -m pipeline.report {sweep}")
        return 1 if any(self.failed) else 0

    def run_single(self) -> None:
        """A single run: composed once (`compose_run`), checked once (`preflight`), the cluster
        started ahead (`run.start_ahead`), then Hydra's `run_job` on that config."""
        cfg = compose_run(prepare_overrides(self.overrides))
        try:
            exp, run_dir = checks.preflight(task_config(cfg), self.overrides)
            if exp.run.dry_run:       # answered before Hydra makes a directory: a dry run writes nothing
                running.dry_run(exp, run_dir, print)
                return
            self.checked = exp
            running.start_ahead(exp, run_dir)     # the cluster starts and warms while Hydra sets up the run
            callbacks = HydraCallbacks(cfg)
            callbacks.notify("on_run_start", config=cfg, config_name="config")
            ret = run_job(hydra_context=HydraContext(config_loader=GlobalHydra.instance().config_loader(),
                                                     callbacks=callbacks),
                          task_function=self.job, config=cfg, job_dir_key="hydra.run.dir",
                          job_subdir_key=None, configure_logging=True)
            callbacks.notify("on_run_end", config=cfg, config_name="config", job_return=ret, reverse=True)
            _ = ret.return_value     # raises what the job raised, as Hydra's own run does
        finally:
            GlobalHydra.instance().clear()

    def run_hydra_main(self) -> None:
        """A multirun or a Hydra flag: ``@hydra.main`` parses the command line, composes each job
        and calls `job` for it (with ``--cfg`` or ``--help``, none)."""
        prepared = iter(prepare_overrides(self.overrides))
        register_schema()
        sys.argv[1:] = [a if a.startswith("-") else next(prepared) for a in self.argv]
        hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")(self.job)()

    def job(self, cfg: DictConfig) -> None:
        """One run inside Hydra's job: its directory made, run.log configured."""
        hydra_cfg = HydraConfig.get()
        run_dir = Path(hydra_cfg.runtime.output_dir)
        if hydra_cfg.mode == RunMode.MULTIRUN:
            self.sweeps.add(hydra_cfg.sweep.dir)
        try:
            if self.checked is not None:      # a single run: checked once, before its directory
                experiment, self.checked = self.checked, None
            else:                             # a multirun's job: Hydra composed it; its preflight is here
                experiment, _ = checks.preflight(cfg, self.overrides)
            out = running.run(experiment, run_dir, started=self.started, frames=False)
            self.started = None               # a multirun's later jobs start when they start
        except BAD_INPUT as exc:
            self.refuse(exc, run_dir)
        except Interrupted as exc:
            self.interrupted(str(exc))
        except BaseException:
            # A crash (its traceback follows) or Ctrl-C before the run wrote anything of its own.
            discard_unused(run_dir)
            raise
        # Not an exit here: in a multirun it would end the sweep before its other jobs.
        self.failed.append(bool(out["failed"]) or out.get("report_failed") is not None)

    # ------------------------------------------------------------------------------- endings
    @staticmethod
    def refuse(exc: Exception, run_dir: Path | None = None) -> None:
        """Bad input: one line, exit 2; a run directory that holds nothing but what Hydra wrote
        on the way in is removed, so a refused run leaves nothing behind."""
        what = "invalid configuration: " if isinstance(exc, ConfigError) else ""
        print(f"error: {what}{exc}", file=sys.stderr)
        discard_unused(run_dir)
        sys.exit(2)

    @staticmethod
    def interrupted(message: str) -> None:
        """Ctrl-C's one line on stderr, then exit 130. Where the streams are gone (a command killed
        while its kept cluster's launcher ran it in a child: its pipes closed), the line is lost but
        not the status: the write's BrokenPipeError, and the interpreter's flush of the same
        streams at exit (status 120), would have replaced it."""
        try:
            print(message, file=sys.stderr, flush=True)
            sys.stdout.flush()
        except OSError:
            exits.mute_streams()
        sys.exit(130)

    @staticmethod
    def finish(code: int) -> None:
        """The process ends with `code`, everything written (`exits.fast_exit`)."""
        exits.fast_exit(code)


def discard_unused(run_dir: Path | None) -> None:
    """Remove a run directory that holds nothing but what Hydra wrote on the way in (its .hydra/
    and run.log): the run ended before it wrote anything of its own (before planning ended)."""
    if run_dir is not None and run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {".hydra", "run.log"}:
        shutil.rmtree(run_dir, ignore_errors=True)


def compose_run(prepared: list[str]) -> DictConfig:
    """The single run's config with its ``hydra`` node, composed once by Hydra's compose API (as
    `Hydra.run` composes it: ``hydra.mode=RUN`` for a config that leaves it unset, as ours does).
    Hydra stays initialised for `run_job` (its config loader); `Command.run_single` clears it.
    A composition error is one ConfigError line."""
    register_schema()
    GlobalHydra.instance().clear()
    hydra.initialize_config_dir(config_dir=str(CONF_DIR), job_name=JOB_NAME, version_base=None)
    try:
        return hydra.compose(config_name="config", overrides=[*prepared, "hydra.mode=RUN"], return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as exc:
        GlobalHydra.instance().clear()
        # Hydra's own composition errors (a malformed override, a wrong type): their lines, joined.
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        if exc.__cause__ is not None:
            lines.append(str(exc.__cause__).splitlines()[0])
        raise ConfigError("; ".join(lines)) from None


def task_config(cfg: DictConfig) -> DictConfig:
    """The config the job sees (`run_job` hands it over without its ``hydra`` node)."""
    task = copy.deepcopy(cfg)
    with read_write(task), open_dict(task):
        del task["hydra"]
    return task


class HydraCallbacks:
    """The ``hydra.callbacks`` a config declares, instantiated and told of the run and its job, as
    Hydra's own runner tells them (`hydra.experimental.callback.Callback`'s methods; an exception
    of one is a warning, as there). `run_job` calls ``on_job_start``/``on_job_end``."""

    def __init__(self, cfg: DictConfig):
        declared = OmegaConf.select(cfg, "hydra.callbacks") or {}
        self.callbacks = [instantiate(params) for params in declared.values()]

    def notify(self, method: str, reverse: bool = False, **kwargs) -> None:
        import warnings
        for callback in (reversed(self.callbacks) if reverse else self.callbacks):
            try:
                getattr(callback, method)(**kwargs)
            except Exception as exc:    # noqa: BLE001 - a user's callback must not end the run
                warnings.warn(f"Callback {type(callback).__name__}.{method} raised {type(exc).__name__}: {exc}")

    def on_job_start(self, **kwargs) -> None:
        self.notify("on_job_start", **kwargs)

    def on_job_end(self, **kwargs) -> None:
        self.notify("on_job_end", reverse=True, **kwargs)


def command(argv: list[str], started: float | None = None) -> None:
    """`python -m pipeline ARGV` and `svmbench run ARGV`: the run command, then the exit with its
    code (never returns)."""
    cmd = Command(argv, started)
    code = cmd.run()
    try:
        Command.finish(code)
    except KeyboardInterrupt:
        # At the very end (the atexit handlers, the streams' flush): every Ctrl-C is exit 130.
        try:
            Command.interrupted(INTERRUPTED)
        except SystemExit as exc:
            exits.fast_exit(exc.code)
