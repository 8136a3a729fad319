"""Shared data and the LIBSVM reference of the kernel dual tests (test_qp, test_smo, test_svmlight).

On sys.path through pytest's `pythonpath` setting (pyproject.toml)."""
import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.svm import SVC

from solvers import Problem
from solvers.kernels import kernel_block

KERNELS = {"rbf": dict(kernel="rbf", gamma=0.5), "poly": dict(kernel="poly", gamma=0.1, degree=3, coef0=1.0)}


def breast_cancer_data():
    X, y = load_breast_cancer(return_X_y=True)
    return np.ascontiguousarray(X / X.max(axis=0)), np.where(y == 1, 1.0, -1.0)


def digits17_data():
    X, y = load_digits(return_X_y=True)
    keep = (y == 1) | (y == 7)
    return np.ascontiguousarray(X[keep] / 16.0), np.where(y[keep] == 7, 1.0, -1.0)


def svc_reference(X, y, C, kw):
    """SVC at a tight tolerance: its dual objective sum|dual_coef| - 1/2 dual_coef K dual_coef'
    and its decision values (LIBSVM keeps Q in float32, hence kernels with values of order 1)."""
    svc = SVC(C=C, tol=1e-10, **kw).fit(X, y)
    beta = np.zeros(len(y))
    beta[svc.support_] = svc.dual_coef_[0]
    K = kernel_block(Problem.build(X, y, intercept="free", **kw).kernel, X, X)
    return float(np.abs(beta).sum() - 0.5 * beta @ K @ beta), svc.decision_function(X), K


def digits38_data():
    """Every third image of digits 3 vs 8 with pixels as they are (0..16), as in the bertini
    reproduction: the degree-2 kernel (x'z + 1)^2 reaches ~1e6, so at C = 1000 the optimal alphas
    (~1e-8 to 1e-6) sit in a tiny corner of the box; at rbf gamma = 1e-4, C = 0.05 every alpha
    of the optimum is at a bound."""
    X, y = load_digits(return_X_y=True)
    keep = (y == 3) | (y == 8)
    return np.ascontiguousarray(X[keep][::3]), np.where(y[keep][::3] == 8, 1.0, -1.0)


DIGITS38_POLY2 = dict(kernel="poly", gamma=1.0, coef0=1.0, degree=2)
