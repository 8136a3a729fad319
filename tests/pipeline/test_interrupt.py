"""Ctrl-C at any moment of a run: the command prints its one "interrupted" line and exits 130,
whatever it was doing (composing, planning, taking the lock, starting the cluster, warming it,
checking the workers, the fits, the tables, the report, the last line, the exit), and a command
that starts with SIGINT ignored (a background job of a non-interactive shell) keeps ignoring it.

Each case is a real `python -m pipeline` command (`pipeline.command.command`) in a process of
its own, where one function of the run sends the process SIGINT as it is entered, once: the
signal lands at that point, every time, instead of at a moment a timer hopes for."""
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
RUN = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80", "cv.folds=2", "solvers=[dcd]",
       "solvers.dcd.grid.C=[1.0]", "run.reference=false", "run.progress=false", "report.figures=false"]

# Sends SIGINT to its own process when `module:attribute` (a function, or a class's method) is
# first called, then runs the command line that follows.
INTERRUPT_AT = """
import importlib, os, signal, sys
where, argv = sys.argv[1], sys.argv[2:]
module, _, path = where.partition(":")
owner = importlib.import_module(module)
*parents, name = path.split(".")
for part in parents:
    owner = getattr(owner, part)
real, sent = getattr(owner, name), []

def hooked(*args, **kwargs):
    if not sent:
        sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
    return real(*args, **kwargs)

setattr(owner, name, hooked)
from pipeline.command import command
command(argv)
"""


def _command(point: str, run_dir: Path, store: Path, *overrides, ignore_sigint: bool = False):
    """The command interrupted at point: (exit code, stderr)."""
    # A background job of a non-interactive shell starts with SIGINT ignored; otherwise as a terminal gives it.
    disposition = signal.SIG_IGN if ignore_sigint else signal.SIG_DFL
    out = subprocess.run([sys.executable, "-c", INTERRUPT_AT, point, f"store.root={store}", *RUN,
                          f"hydra.run.dir={run_dir}", *overrides], cwd=ROOT, env=ENV, capture_output=True,
                         text=True, timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT, disposition))
    return out.returncode, out.stderr


def _interrupted(code: int, err: str, run_dir: Path) -> None:
    assert code == 130, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(r"interrupted(: \d+ of \d+ tasks saved in .*)?; run the same command to resume", last), \
        err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert not (run_dir / ".lock").exists()       # a lock taken is given back


@pytest.mark.parametrize("point", [
    "pipeline.experiment.config:validate",              # composing and checking the config
    "pipeline.run:materialise_datasets",                # planning: the datasets
    "pipeline.run:run_lock",                            # taking the run directory
    "pipeline.run:execute",                             # the execute phase's first line
    "pipeline.run:write_tables",                        # the tables
    "pipeline.report.build:build_bounded",              # the report (its own process)
    "pipeline.run:Timing.line",                         # the closing line
    "pipeline.command:Command.finish",                 # the exit
])
@pytest.mark.slow
def test_ctrl_c_anywhere_in_a_sequential_run_is_one_line_and_130(store, tmp_path, point):
    run_dir = tmp_path / "run"
    _interrupted(*_command(point, run_dir, store, "cluster=sequential"), run_dir)
    # Before the run holds its lock it has nothing of its own: no folder is left (Hydra's is removed).
    assert run_dir.exists() == (point not in ("pipeline.experiment.config:validate",
                                              "pipeline.run:materialise_datasets", "pipeline.run:run_lock"))


def test_a_run_that_crashes_before_planning_leaves_no_folder(store, tmp_path):
    """Not only bad input (an `error:` line, exit 2): any exception before the run directory
    holds anything of its own removes what Hydra wrote on the way in."""
    run_dir = tmp_path / "run"
    crash = INTERRUPT_AT.replace("os.kill(os.getpid(), signal.SIGINT)", "raise RuntimeError('a bug of ours')")
    out = subprocess.run([sys.executable, "-c", crash, "pipeline.run:materialise_datasets", f"store.root={store}",
                          *RUN, f"hydra.run.dir={run_dir}", "cluster=sequential"], cwd=ROOT, env=ENV,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "RuntimeError: a bug of ours" in out.stderr, out.stderr[-3000:]
    assert not run_dir.exists()


@pytest.mark.slow   # a LocalCluster started and stopped in each: about 8 s each at load 10 on 2 cores
@pytest.mark.parametrize("point", [
    "distributed:LocalCluster.__init__",                # starting the cluster
    "pipeline.engine.warmup:WarmUp.wait",              # waiting for the workers' warm-up
    "pipeline.engine.execute:check_worker_plugins",     # checking the workers before any task
    "pipeline.engine.sink:RecordSink.flush",         # the fits: the first records written
])
def test_ctrl_c_anywhere_on_a_local_cluster_is_one_line_and_130(store, tmp_path, point):
    _interrupted(*_command(point, tmp_path, store, "cluster=local", "cluster.n_workers=1"), tmp_path)


@pytest.mark.slow   # two commands, one with a LocalCluster
def test_ctrl_c_while_a_resumed_run_starts_its_cluster_is_not_lost(store, tmp_path):
    """A resumed run plans first and starts its cluster after (execute opens it): a Ctrl-C in
    that start was once lost, the run going on to exit 0, while the workers were started with
    SIGINT ignored in the whole process."""
    from pipeline.command import Command       # the first run only makes shards: in this process
    assert Command([f"store.root={store}", *RUN, f"hydra.run.dir={tmp_path}", "cluster=sequential"]).run() == 0
    code, err = _command("distributed:LocalCluster.__init__", tmp_path, store, "cluster=local",
                         "cluster.n_workers=1", "solvers.dcd.grid.C=[1.0,10.0]")
    _interrupted(code, err, tmp_path)
    assert "resuming: 2 of 4 tasks already have shards" in (tmp_path / "run.log").read_text()


@pytest.mark.slow   # a LocalCluster started and stopped
def test_a_command_that_starts_with_sigint_ignored_keeps_ignoring_it(store, tmp_path):
    """A background job of a non-interactive shell (`cmd &` in a script) starts with SIGINT
    ignored, as Unix intends, so that the terminal's Ctrl-C is not its: the run goes on through
    the signal, here sent as its cluster starts and as it writes its records, and ends 0."""
    for point in ("distributed:LocalCluster.__init__", "pipeline.engine.sink:RecordSink.flush"):
        run_dir = tmp_path / point.rpartition(":")[2]
        code, err = _command(point, run_dir, store, "cluster=local", "cluster.n_workers=1", ignore_sigint=True)
        assert code == 0, err[-3000:]
        assert (run_dir / "results.parquet").exists()
