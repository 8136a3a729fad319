"""`make test` stopped mid-run leaves no process behind: a real `make test` over a test that
blocks in a sandbox on a real `dask scheduler` and `dask worker` (stop_target.py) is sent SIGTERM
(as `timeout` sends it: to the whole process group) or SIGINT (a terminal's Ctrl-C) once the fit
surely runs; every process of that run (make's pytest, its xdist workers, the scheduler, the
worker's nanny and process, the sandbox: each carries the run's mark, tests/conftest.py) is
counted before and must be gone within the teardown's grace after. The teardowns do it, not the
sweep behind them: the inner run must not say it killed anything."""
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import NEXT_SESSION, marked

ROOT = Path(__file__).resolve().parents[2]


# SIGTERM in `make test`; Ctrl-C, the interruption Python raises by itself, in `make test-all`.
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.long)],
                         ids=["SIGTERM", "SIGINT"])
def test_make_test_stopped_mid_run_leaves_no_process(tmp_path, signum):
    session, pidfile = uuid.uuid4().hex, tmp_path / "worker.pid"
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
        running = {p.pid: " ".join(p.cmdline()) for p in marked(session)}
        # pytest, its two workers, the scheduler, the worker's nanny and process, the sandbox.
        assert sum("pipeline.engine.sandbox" in c for c in running.values()) == 1
        assert sum(" scheduler " in c for c in running.values()) == 1 and len(running) >= 7
        os.killpg(make.pid, signum)
        out, _ = make.communicate(timeout=60)
        left = marked(session)
        assert left == [], [" ".join(p.cmdline()) for p in left]
        assert "were still running and were killed" not in out, out
        assert make.returncode != 0
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
        for p in marked(session):
            p.kill()
