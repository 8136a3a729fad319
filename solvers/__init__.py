"""svmbench's numerics: every SVM solver behind one contract (numpy, scipy, numba only).

    from solvers import SVMClassifier           # scikit-learn estimator over every solver
    from solvers import Problem, fit, Budget    # the functional core the pipeline calls
"""
from .base import Budget, Fit, Recorder, STATUSES
from .kernels import Kernel
from .problem import Problem, ProblemError
from .registry import (Param, Plugin, SolverError, SolverSpec, fit, get_solver, load_plugin, origin, register,
                       registered_names, solver_names, warm_all)

# Importing a solver module registers it.
from . import dcd, gd, newton, pegasos, references, qp, svmlight, smo, majorization, cpm, smooth_newton, cocoa  # noqa: F401


def __getattr__(name):
    # SVMClassifier is a scikit-learn estimator: importing sklearn takes about a second, which
    # every process of a run (client, workers, task processes) would pay at `import solvers`
    # without using it. PEP 562: imported on first access.
    if name == "SVMClassifier":
        from .estimator import SVMClassifier
        return SVMClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["Budget", "Fit", "Recorder", "STATUSES", "Kernel", "Problem", "ProblemError", "Param",
           "SolverError", "SolverSpec", "fit", "get_solver", "load_plugin", "origin", "Plugin", "register",
           "registered_names", "solver_names", "SVMClassifier", "warm_all"]
