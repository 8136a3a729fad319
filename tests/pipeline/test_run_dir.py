"""Run-directory semantics (issue #10, point 6): a run's tables hold only its own plan's tasks
(other configs' shards stay on disk and resume when that config runs again), a rerun retries
tasks that ended in error unless `run.retry_errors=false`, and `python -m pipeline` exits 1
when tasks failed, after writing shards, tables and report."""
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import solvers
from pipeline.experiment.config import compose
from pipeline.engine.sink import finished_keys
from pipeline.results.tables import read_shards
from pipeline.run import run

from .shard_edit import edit_record

BASE = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80", "cv.folds=2", "cluster=sequential", "run.reference=true",
        "run.progress=false"]
FLAKY_ENV = "SVMBENCH_TEST_FLAKY_MARKER"


def _flaky(problem, *, budget, recorder, warm_start=None):
    """dcd, except while the file named by $SVMBENCH_TEST_FLAKY_MARKER exists (a broken
    environment that gets fixed between runs)."""
    marker = os.environ.get(FLAKY_ENV)
    if marker and Path(marker).exists():
        raise RuntimeError("flaky: the environment is broken")
    dcd = solvers.get_solver("dcd")
    return dcd.fit(problem, budget=budget, recorder=recorder, warm_start=warm_start, **dcd.check_params({}))


solvers.register(solvers.SolverSpec(name="_flaky", family="test", fit=_flaky))


def _run(store, run_dir, *overrides):
    lines = []
    out = run(compose([f"store.root={store}", *BASE, *overrides]), run_dir, echo=lines.append)
    return out, lines


def _shard_keys(run_dir):
    return finished_keys(run_dir)


def test_a_rerun_with_another_config_does_not_mix_and_switching_back_resumes(store, tmp_path):
    a = ["solvers=[dcd]", "solvers.dcd.grid.C=[1.0]"]
    b = ["solvers=[liblinear]", "solvers.liblinear.grid.C=[1.0]"]
    out_a, _ = _run(store, tmp_path, *a)
    keys_a = set(out_a["results"]["key"])
    out_b, log_b = _run(store, tmp_path, *b)
    on_disk = pd.read_parquet(tmp_path / "results.parquet")
    assert set(on_disk["solver"]) == {"liblinear"} and not keys_a & set(on_disk["key"])
    assert set(pd.read_parquet(tmp_path / "traces.parquet")["key"]) <= set(on_disk["key"])
    # Both share the reference solve (same problem), so only A's two fits are left out.
    assert keys_a <= _shard_keys(tmp_path)
    assert any("left out of the tables: 2 records of other configs" in line for line in log_b), log_b
    out_a2, _ = _run(store, tmp_path, *a)
    assert out_a2["summary"].done == 0 and set(out_a2["results"]["key"]) == keys_a
    assert "liblinear" not in (tmp_path / "report.md").read_text()


def test_a_rerun_retries_errors_unless_told_not_to(store, tmp_path, monkeypatch):
    marker = tmp_path / "broken"
    marker.touch()
    monkeypatch.setenv(FLAKY_ENV, str(marker))
    flaky = ["solvers=[dcd]", "solvers.dcd.grid.C=[1.0]",
             "+solvers._flaky={solver: _flaky, params: {loss: squared_hinge}, grid: {C: [1.0]}}"]
    run_dir = tmp_path / "run"
    out, log = _run(store, run_dir, *flaky)
    assert out["failed"] == 2 and (out["results"]["status"] == "error").sum() == 2
    assert "2 of 8 tasks failed (status=error)" in " ".join(log) and "flaky: the environment is broken" in log[-1]
    marker.unlink()                              # the environment is fixed
    # A dry run counts them as a rerun would: done, and retried unless told not to.
    dry, _ = _run(store, run_dir, *flaky, "run.dry_run=true")
    assert dry["done"] == 8 and dry["todo"] == 2
    dry, _ = _run(store, run_dir, *flaky, "run.dry_run=true", "run.retry_errors=false")
    assert dry["done"] == 8 and dry["todo"] == 0
    kept, log = _run(store, run_dir, *flaky, "run.retry_errors=false")
    assert kept["summary"].done == 0 and kept["failed"] == 2 and "keeps them (run.retry_errors=false)" in " ".join(log)
    again, log = _run(store, run_dir, *flaky)
    assert again["summary"].done == 2 and again["failed"] == 0 and any("retrying 2 tasks" in line for line in log)
    res = again["results"]
    assert (res["status"] == "converged").all() and len(res) == 4
    statuses = [r["status"] for r in read_shards(run_dir) if r["kind"] == "fit"]
    assert len(statuses) == 4 and "error" not in statuses     # the newer record, not beside the old


def _cli(store, run_dir, *overrides, flags=()):
    args = [sys.executable, "-m", "pipeline", *flags, f"store.root={store}", "datasets=[toy_blobs]",
            "datasets.toy_blobs.max_rows=60", "solvers=[qp]", "solvers.qp.grid.C=[1.0]", "cv=holdout",
            "cluster=sequential", "run.reference=false", "run.progress=false", f"hydra.run.dir={run_dir}", *overrides]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_the_cli_exits_1_after_writing_everything_when_a_task_fails(store, tmp_path):
    # qp refuses a dual larger than max_memory_mb allows: 0.01 MB holds n <= 18, and 48 rows train.
    p = _cli(store, tmp_path, "solvers.qp.params.max_memory_mb=0.01")
    assert p.returncode == 1, p.stderr[-2000:]
    res = pd.read_parquet(tmp_path / "results.parquet")
    assert list(res["status"]) == ["error"] and "max_memory_mb" in res["error"].iloc[0]
    assert (tmp_path / "report.md").exists() and len(_shard_keys(tmp_path)) == 1
    assert "1 of 1 tasks failed (status=error)" in p.stdout + p.stderr


def test_the_command_ends_0_when_every_task_succeeds(store, tmp_path):
    """The command's code for a run without a failed task, from `Command.run()` in this process:
    the exit itself (exit 1 above, through `fast_exit`) needs no second process to show it."""
    from pipeline.command import Command
    code = Command([f"store.root={store}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=60", "solvers=[qp]",
                    "solvers.qp.grid.C=[1.0]", "cv=holdout", "cluster=sequential", "run.reference=false",
                    "run.progress=false", f"hydra.run.dir={tmp_path}"]).run()
    assert code == 0
    assert list(pd.read_parquet(tmp_path / "results.parquet")["status"]) == ["converged"]


def test_a_failed_reference_solve_is_a_failure_and_is_retried(store, tmp_path):
    dcd = ["solvers=[dcd]", "solvers.dcd.grid.C=[1.0]"]
    _run(store, tmp_path, *dcd)
    ref = next(r["key"] for r in read_shards(tmp_path) if r["kind"] == "reference")
    edit_record(tmp_path, ref, status="error", error="MemoryError: on purpose")
    kept, log = _run(store, tmp_path, *dcd, "run.retry_errors=false")
    assert kept["failed"] == 1 and "MemoryError: on purpose" in log[-1]
    again, _ = _run(store, tmp_path, *dcd)
    assert again["summary"].done == 1 and again["failed"] == 0
    assert next(r for r in read_shards(tmp_path) if r["key"] == ref)["status"] != "error"


@pytest.mark.slow
def test_a_multirun_runs_every_job_then_exits_1_if_one_failed(store, tmp_path):
    p = _cli(store, tmp_path / "unused", "solvers.qp.params.max_memory_mb=0.01,2048",
             f"hydra.sweep.dir={tmp_path / 'sweep'}", flags=["-m"])
    assert p.returncode == 1, p.stderr[-2000:]
    statuses = [list(pd.read_parquet(tmp_path / "sweep" / job / "results.parquet")["status"]) for job in ("0", "1")]
    assert statuses == [["error"], ["converged"]]


@pytest.mark.parametrize("forked", [False, True])
def test_the_cli_ends_with_its_exit_handlers_run_and_no_interpreter_teardown(monkeypatch, forked):
    """`python -m pipeline` ends through `exits.fast_exit`: the atexit handlers run (Dask's,
    logging's), logs and streams are flushed, then os._exit with the run's code, skipping the
    interpreter's teardown. A forked child (the report's process, the kept launcher's command)
    leaves the handlers, which are its parent's, alone. The CLI tests above check that everything
    is written and the codes; this one, the order."""
    import atexit
    import logging

    from pipeline import exits
    calls = []

    class Exited(Exception):
        pass

    def fake_exit(code):
        calls.append(("os._exit", code))
        raise Exited
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: calls.append("atexit"))
    monkeypatch.setattr(logging, "shutdown", lambda: calls.append("logging"))
    monkeypatch.setattr(exits.os, "_exit", fake_exit)
    with pytest.raises(Exited):
        exits.fast_exit(3, forked=forked)
    assert calls == ([("os._exit", 3)] if forked else ["atexit", "logging", ("os._exit", 3)])
