"""A test-only solver whose first call is slow, as a numba solver's is on a cold cache: `_slow_warm`
fits with dcd, and its warmup sleeps WARM_S (standing in for a JIT compile) before warming dcd.
Loaded by the tests and, through distributed's `distributed.worker.preload`, by the workers of
a LocalCluster, whose sandboxes import it again (pipeline.engine.sandbox.plugin_files)."""
import time

import solvers
from solvers.registry import warm

WARM_S = 2.0


def _warmup():
    time.sleep(WARM_S)
    warm(solvers.get_solver("dcd"))


def _fit(problem, *, budget, recorder, warm_start=None):
    return solvers.get_solver("dcd").fit(problem, budget=budget, recorder=recorder, warm_start=warm_start)


if "_slow_warm" not in solvers.solver_names():     # a preload may import the file twice
    solvers.register(solvers.SolverSpec(name="_slow_warm", family="test", fit=_fit, warmup=_warmup,
                                        losses=("hinge",), intercepts=("none",)))
