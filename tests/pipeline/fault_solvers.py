"""Test-only solvers that fail the way real ones can (names start with "_": test_common and
test_references skip them). Loaded by the tests and, through `dask worker --preload`, by the
workers, whose sandboxes import it again (pipeline.engine.sandbox.plugin_files).

- `_abort`: the process aborts (SIGABRT), as a segfault or a failed assertion in C code would;
- `_hog`: allocates 50 MB at a time, as a fit on data too big for its worker would;
- `_spin`: a numba loop that never looks at the clock, holding the GIL;
- `_block`: writes its process's parent (the worker) pid to `pidfile` and waits for `release`
  to exist, then fits with dcd: the test kills that worker while the task is surely running;
- `_pause`: sleeps `seconds`, then fits with dcd: a deterministic fit that lasts long enough
  for a cluster to lose a worker (a SLURM job ending) while it runs.
"""
import os
import time
from pathlib import Path

import numba
import numpy as np

import solvers


def _abort(problem, *, budget, recorder, warm_start=None):
    os.abort()


def _hog(problem, *, budget, recorder, warm_start=None, mb=3000):
    blocks = []
    for _ in range(mb // 50):
        blocks.append(np.ones(50 * 2**17))      # 50 MB of float64, every page written
        time.sleep(0.02)
    raise RuntimeError(f"allocated {mb} MB and nobody stopped it")


@numba.njit(cache=False)
def _lcg(n):
    x = 1
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2147483648
    return x


def _spin(problem, *, budget, recorder, warm_start=None, pidfile=""):
    Path(pidfile).write_text(str(os.getpid()))
    _lcg(10**15)      # hours; a numba loop holds the GIL and has no clock to look at
    raise RuntimeError("the loop ended")


def _block(problem, *, budget, recorder, warm_start=None, pidfile="", release=""):
    Path(pidfile).write_text(str(os.getppid()))
    while not Path(release).exists():
        time.sleep(0.05)
    return solvers.fit(problem, "dcd", budget=budget, recorder=recorder)


def _pause(problem, *, budget, recorder, warm_start=None, seconds=0.5):
    time.sleep(seconds)
    return solvers.fit(problem, "dcd", budget=budget, recorder=recorder)


for _name, _fit, _params in [
        ("_abort", _abort, {}),
        ("_hog", _hog, {"mb": solvers.Param(3000, "int", low=50)}),
        ("_spin", _spin, {"pidfile": solvers.Param("", "str")}),
        ("_block", _block, {"pidfile": solvers.Param("", "str"), "release": solvers.Param("", "str")}),
        ("_pause", _pause, {"seconds": solvers.Param(0.5, "float", low=0.0)})]:
    if _name not in solvers.solver_names():     # dask's --preload imports a file, then reloads it
        # No warmup: the default one would run the fault on a tiny problem before the real fit.
        solvers.register(solvers.SolverSpec(name=_name, family="test", fit=_fit, params=_params,
                                            warmup=lambda: None))
