"""Input that would overflow is refused before fitting with one message, and a fit never returns
a non-finite model (issue 31). Before: X near 1e308 with gamma="scale" said "gamma=0.0 must be a
finite number > 0" (the user gave no 0), and with a numeric gamma smo returned a NaN dual_coef_
that predicted one class."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from solvers import SVMClassifier


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("params", [dict(solver="smo", kernel="rbf"), dict(solver="smo", kernel="rbf", gamma=0.5),
                                    dict(solver="dcd"), dict(solver="newton", kernel="poly")],
                         ids=["rbf-scale", "rbf-0.5", "dcd", "newton-poly"])
def test_overflowing_X_is_refused_naming_the_value(params, fmt):
    X, y = make_classification(60, 4, random_state=0)
    X = X * 1e153           # squares of 1e306 and more: a 4-feature norm overflows above 6.7e153
    X[7, 2] = 3e154
    Xf = sp.csr_matrix(X) if fmt == "csr" else X
    with pytest.raises(ValueError, match=r"X has a value of magnitude 3e\+154 \(row 7, column 2\): with 4 "
                                         r"features, squared norms and kernel values overflow float64 above 6.7e\+153"):
        SVMClassifier(**params).fit(Xf, y)
    # Just below the limit the fit runs and its model is finite.
    clf = SVMClassifier(**params).fit(Xf / 10.0, y)
    assert np.isfinite(clf.intercept_).all()


def test_a_non_finite_model_is_never_returned():
    """A degree-40 polynomial kernel with gamma 1e10 overflows inside the solver (K = inf):
    smo and qp end 'diverged' with NaN dual variables, which the estimator refuses by name."""
    X, y = make_classification(60, 4, random_state=0)
    for solver in ("smo", "qp"):
        with pytest.warns(Warning), pytest.raises(ValueError, match=f"solver '{solver}' returned a non-finite "
                                                                     r"model \(status 'diverged'"):
            SVMClassifier(solver=solver, kernel="poly", degree=40, gamma=1e10).fit(X, y)


def test_a_diverging_primal_step_reports_diverged_not_a_traceback():
    """gd with a fixed step of 1e10 overflows P's intercept term: Python's float ** 2 raised
    OverflowError there; P is now inf and the status 'diverged' (a finite, useless model, with
    the warning)."""
    X, y = make_classification(60, 4, random_state=0)
    with pytest.warns(Warning, match="diverged"):
        clf = SVMClassifier(solver="gd", solver_params={"step": "fixed", "eta": 1e10}).fit(X, y)
    assert clf.status_ == "diverged" and np.isfinite(clf.coef_).all()
