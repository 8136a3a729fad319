"""Real server processes for tests (a `dask scheduler` and `dask worker`, an S3 server), each in
its own process group so that stopping it also stops the children it forks (a worker's nanny)."""
import os
import signal
import subprocess
import time
from contextlib import contextmanager


@contextmanager
def running(*commands, env, ready, timeout=60):
    """Start the commands, wait until ready() is true (or one of them exits), and stop them all
    at the end: SIGTERM to each process group, SIGKILL to those still up 20 s later."""
    procs = []
    try:
        for cmd in commands:
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
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
