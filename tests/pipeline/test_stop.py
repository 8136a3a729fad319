"""`make test` stopped mid-run leaves no process behind: a real `make test` over a test that
blocks in a sandbox on a real `dask scheduler` and `dask worker` (stop_target.py) is sent SIGTERM
(as `timeout` sends it: to the whole process group) or SIGINT (a terminal's Ctrl-C) once the fit
surely runs; every process of that run (make's descendants, and the processes tests/conftest.py
counts as the run's: pytest, its two xdist workers, the scheduler, the worker's nanny and
process, the sandbox) is counted before and must be gone within the teardown's grace after, make
with them. The teardowns do it, not the sweep behind them: the inner run must not say it killed
anything."""
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.conftest import NEXT_SESSION, marked

ROOT = Path(__file__).resolve().parents[2]


def _still_running(procs) -> list[str]:
    """Of these processes (psutil, as they were counted), those still running: the same pid and
    start time (a pid reused since is another process)."""
    left = []
    for proc in procs:
        try:
            if psutil.Process(proc.pid).create_time() == proc.create_time():
                left.append(f"{proc.pid} {proc.name()}")
        except psutil.Error:
            continue
    return left


# A whole `make test` of its own (two xdist workers importing the suite, a scheduler and a
# worker) started and stopped: `make test-all` and CI run it, by SIGTERM (`timeout`, a CI
# runner's stop) and by Ctrl-C, the interruption Python raises by itself.
@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_make_test_stopped_mid_run_leaves_no_process(tmp_path, signum):
    session, pidfile, procs = uuid.uuid4().hex, tmp_path / "worker.pid", {}
    env = {**os.environ, NEXT_SESSION: session, "SVMBENCH_STOP_PIDFILE": str(pidfile),
           "SVMBENCH_STORE": str(tmp_path / "store")}
    make = subprocess.Popen(["make", "--no-print-directory", "test", "TEST_WORKERS=2",
                             "PYTEST_ARGS=-q -p no:cacheprovider tests/pipeline/stop_target.py"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        end = time.monotonic() + 120
        while not (pidfile.exists() and pidfile.stat().st_size):
            assert make.poll() is None, make.stdout.read()
            assert time.monotonic() < end, "the blocked fit never started"
            time.sleep(0.1)
        procs.update((p.pid, p) for p in [psutil.Process(make.pid), *marked(session),
                                          *psutil.Process(make.pid).children(recursive=True)])
        running = {pid: " ".join(p.cmdline()) for pid, p in procs.items()}
        # pytest, its two workers, the scheduler, the worker's nanny and process, the sandbox.
        assert sum("pipeline.engine.sandbox" in c for c in running.values()) == 1, running
        assert sum("dask scheduler" in c for c in running.values()) == 1 and len(running) >= 7, running
        os.killpg(make.pid, signum)
        out, _ = make.communicate(timeout=60)
        assert _still_running(procs.values()) == []
        assert "were still running and were killed" not in out, out
        assert make.returncode != 0
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
        for p in [*procs.values(), *marked(session)]:      # a failed test leaves nothing either
            try:
                if psutil.Process(p.pid).create_time() == p.create_time():
                    p.kill()
            except psutil.Error:
                pass
