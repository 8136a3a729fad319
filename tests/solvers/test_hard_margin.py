"""C = inf, the hard margin, for smo and qp (issue 31): on separable data both reach the hard-
margin optimum (certified: finite P = 1/2 ||w||^2 with every margin >= 1, a zero gap), which is
SVC's at a C above every alpha_i; on data that no f separates, both refuse with the reason before
solving; the other solvers refuse C = inf by name."""
import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.svm import SVC

from solvers import Budget, Problem, SolverError, SVMClassifier, fit


@pytest.fixture(scope="module")
def separable():
    X, y = make_blobs(80, 2, centers=[[-3, 0], [3, 0]], random_state=0)
    return X, np.where(y == 1, 1.0, -1.0)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("solver", ["smo", "qp"])
def test_hard_margin_optimum(separable, solver, kernel):
    X, y = separable
    p = Problem.build(X, y, C=np.inf, intercept="free", kernel=kernel, gamma=0.5)
    r = fit(p, solver, budget=Budget(tol=1e-10))
    assert r.status == "converged"
    f = p.decision(r)
    assert np.all(y * f >= 1.0 - 1e-8)                       # primal feasible
    assert np.isfinite(r.primal) and abs(r.gap) <= 1e-8 * r.primal and r.kkt_violation <= 1e-8
    # SVC with a C above the optimum's largest alpha_i solves the same problem.
    ref = SVC(kernel=kernel, gamma=0.5, C=10 * r.alpha.max() + 10, tol=1e-12).fit(X, y)
    np.testing.assert_array_equal(np.flatnonzero(r.alpha), np.sort(ref.support_))
    np.testing.assert_allclose(f, ref.decision_function(X), atol=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("solver", ["smo", "qp"])
def test_non_separable_data_are_refused_with_the_reason(separable, solver, kernel):
    X, y = separable
    X = np.vstack([X, X[:1]])          # the same point with the other label: no f separates it
    y = np.append(y, -y[0])
    what = "hyperplane" if kernel == "linear" else "rbf kernel"
    with pytest.raises(SolverError, match=f"C=inf \\(a hard margin\\) needs data separable by the {what}: no f "
                                          r"with y_i f\(x_i\) >= 1 on every one of the 81 rows exists"):
        SVMClassifier(solver=solver, kernel=kernel, C=np.inf).fit(X, y)


def test_a_loose_tol_is_stalled_not_diverged(separable):
    """At smo's default tol (1e-3) the margins end up to ~tol below 1: P = inf, said as such."""
    X, y = separable
    with pytest.warns(Warning, match="hard margin: the smallest margin is"):
        r = fit(Problem(X, y, C=np.inf, intercept="free"), "smo")
    assert r.status == "stalled" and np.isinf(r.primal)


def test_other_solvers_refuse_inf_C(separable):
    X, y = separable
    with pytest.raises(SolverError, match="solver 'svmlight' needs a finite C"):
        SVMClassifier(solver="svmlight", C=np.inf).fit(X, y)
