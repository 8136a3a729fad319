"""Real server processes for tests (a `dask scheduler` and `dask worker`, an S3 server), each in
its own process group so that stopping it also stops the children it forks (a worker's nanny)."""
import os
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def running(*commands, env, ready, timeout=60, logs=None):
    """Start the commands, wait until ready() is true (or one of them exits), and stop them all
    at the end: SIGTERM to each process group, SIGKILL to those still up 20 s later. With `logs` (a
    folder), each command's stderr goes to `logs/<i>.log` (what a failed test's message can quote:
    a worker's nanny says there why it restarted or lost a worker)."""
    procs = []
    try:
        for i, cmd in enumerate(commands):
            err = open(Path(logs) / f"{i}.log", "wb") if logs is not None else subprocess.DEVNULL
            try:
                procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                              start_new_session=True))
            finally:
                if logs is not None:
                    err.close()
        end = time.time() + timeout
        while not ready():
            if time.time() > end or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"{commands} did not come up within {timeout} s")
            time.sleep(0.1)
        yield
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def written(path):
    """A ready() for `running`: the file (a scheduler file) exists and is not empty."""
    return lambda: path.exists() and path.stat().st_size > 0
