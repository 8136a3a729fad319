"""svmbench's numerics: every SVM solver behind one contract (numpy, scipy, numba only).

    from solvers import SVMClassifier           # scikit-learn estimator over every solver
    from solvers import Problem, fit, Budget    # the functional core the pipeline calls
"""
from .base import Budget, Fit, Recorder, STATUSES
from .kernels import Kernel
from .problem import Problem, ProblemError
from .registry import Param, SolverError, SolverSpec, fit, get_solver, register, solver_names

# Importing a solver module registers it.
from . import dcd  # noqa: E402,F401

from .estimator import SVMClassifier  # noqa: E402

__all__ = ["Budget", "Fit", "Recorder", "STATUSES", "Kernel", "Problem", "ProblemError", "Param",
           "SolverError", "SolverSpec", "fit", "get_solver", "register", "solver_names", "SVMClassifier"]
