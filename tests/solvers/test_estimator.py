"""SVMClassifier: scikit-learn's estimator checks, and every primal/reference solver behind it."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.utils.estimator_checks import parametrize_with_checks

import solvers
from solvers import Budget, Problem, SolverError, SVMClassifier


# The default fit stops at LIBLINEAR's eps of 0.1 (dcd's default_tol): two fits of one optimum
# (weights, and the rows repeated) then differ by far more than these checks' rtol of 1e-7. They
# run below on fits converged to 1e-10, for every solver that weighs rows.
_WEIGHT_CHECKS = {"check_sample_weight_equivalence_on_dense_data": "the default tol is 0.1; checked converged below",
                  "check_sample_weight_equivalence_on_sparse_data": "the default tol is 0.1; checked converged below"}


@parametrize_with_checks([SVMClassifier()], expected_failed_checks=lambda est: _WEIGHT_CHECKS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("params", [
    dict(solver="dcd", tol=1e-10, max_iter=10**6),
    dict(solver="smo", kernel="rbf", gamma=0.5, tol=1e-12),   # "scale" reads X.var(), which repeats change
    dict(solver="gd", tol=1e-12, max_iter=10**6),
    dict(solver="newton", tol=1e-14),
    dict(solver="svmlight", kernel="rbf", gamma=0.5, tol=1e-12),
    dict(solver="libsvm", tol=1e-12),
], ids=lambda p: p["solver"])
@pytest.mark.parametrize("fmt", ["dense", "sparse"])
def test_sample_weight_equivalence_checks_when_converged(params, fmt):
    """scikit-learn's own weight checks: integer weights (0 included) against the rows repeated
    and removed, predictions equal to 1e-7, on fits converged far below that."""
    from sklearn.utils import estimator_checks as ec
    check = getattr(ec, f"check_sample_weight_equivalence_on_{fmt}_data")
    check("SVMClassifier", SVMClassifier(**params))


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(150, 6, n_informative=4, random_state=4)
    return X, np.where(y == 1, "yes", "no")


CASES = [
    dict(solver="gd", loss="squared_hinge", intercept="free", tol=1e-8, max_iter=20000),
    dict(solver="newton", loss="squared_hinge", intercept="regularized", tol=1e-10),
    dict(solver="newton", loss="squared_hinge", intercept="free", kernel="rbf", tol=1e-10),
    dict(solver="pegasos", loss="hinge", intercept="regularized", C=0.05,
         solver_params={"epochs": 200, "iterate": "average"}),
    dict(solver="liblinear", loss="squared_hinge", intercept="regularized", tol=1e-8, max_iter=100000),
    dict(solver="sgd", loss="hinge", intercept="none", C=0.05),
    dict(solver="libsvm", loss="hinge", intercept="free", kernel="poly", degree=2, coef0=1.0),
]


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"{p['solver']}-{p.get('kernel', 'linear')}")
def test_each_solver_through_the_estimator(data, params):
    """fit/predict/decision_function agree with a direct solve of the same Problem, dense and CSR."""
    X, y = data
    params = dict(params, random_state=0)
    clf = SVMClassifier(**params).fit(X, y)
    clf_sparse = SVMClassifier(**params).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(clf.decision_function(X), clf_sparse.decision_function(sp.csr_matrix(X)),
                               rtol=1e-7, atol=1e-7)
    assert clf.score(X, y) > 0.8
    # pegasos runs a fixed schedule: "budget", never "converged".
    assert clf.status_ == ("budget" if params["solver"] == "pegasos" else "converged")
    kernel = params.get("kernel", "linear")
    ybin = np.where(y == clf.classes_[1], 1.0, -1.0)
    pr = Problem.build(X, ybin, C=params.get("C", 1.0), loss=params["loss"], intercept=params["intercept"],
                       kernel=kernel, degree=params.get("degree", 3), coef0=params.get("coef0", 0.0))
    spec = solvers.get_solver(params["solver"])
    sp_params = dict(params.get("solver_params") or {})
    if "random_state" in spec.params:
        sp_params["random_state"] = 0
    r = solvers.fit(pr, params["solver"], budget=Budget(tol=params.get("tol", spec.default_tol), max_iter=params.get("max_iter")),
                    **sp_params)
    assert clf.objective_ == pytest.approx(r.primal, rel=1e-9)
    if kernel == "linear":
        np.testing.assert_allclose(clf.coef_.ravel(), r.w, rtol=1e-7, atol=1e-10)
    else:
        assert clf.dual_coef_.shape == (1, clf.support_.size)
        # SVC's order: the support vectors of classes_[0], then of classes_[1], each by row.
        np.testing.assert_array_equal(np.sort(clf.support_), np.flatnonzero(r.alpha != 0))
        assert np.all(np.diff(ybin[clf.support_]) >= 0)
        np.testing.assert_allclose(clf.dual_coef_.ravel(), (r.alpha * ybin)[clf.support_], rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name", [n for n in solvers.solver_names() if not n.startswith("_")])
def test_every_solver_fits_with_the_estimator_defaults(data, name):
    """Issue 10: defaults work together. loss/intercept/tol None resolve at fit to the solver's
    first declared loss and intercept and its default_tol; get_params keeps the None."""
    X, y = data
    clf = SVMClassifier(solver=name).fit(X, y)
    spec = solvers.get_solver(name)
    assert clf.get_params()["intercept"] is None and clf.get_params()["loss"] is None
    assert (clf._loss, clf._intercept) == (spec.losses[0], spec.intercepts[0])
    assert clf.status_ in ("converged", "budget", "stalled") and clf.score(X, y) > 0.8
    # The same model as the solver's declared defaults given explicitly.
    explicit = SVMClassifier(solver=name, loss=spec.losses[0], intercept=spec.intercepts[0],
                             tol=spec.default_tol).fit(X, y)
    assert clf.objective_ == explicit.objective_


def test_kernel_duals_fit_with_the_default_intercept(data):
    """SVMClassifier(solver="smo", kernel="rbf") used to fail until intercept="free" was given;
    the kernel duals' default is their free intercept, and all reach LIBSVM's objective."""
    X, y = data
    ref = SVMClassifier(solver="libsvm", kernel="rbf", tol=1e-8).fit(X, y).objective_
    for name in ("smo", "svmlight", "qp"):
        clf = SVMClassifier(solver=name, kernel="rbf").fit(X, y)
        assert clf._intercept == "free" and clf.status_ == "converged"
        assert clf.objective_ == pytest.approx(ref, rel=1e-3)


def test_solver_params_are_checked_with_the_key(data):
    X, y = data
    with pytest.raises(SolverError, match="pegasos.k"):
        SVMClassifier(solver="pegasos", solver_params={"k": 0}).fit(X, y)
    with pytest.raises(SolverError, match="newton.max_cg"):
        SVMClassifier(solver="newton", loss="squared_hinge", solver_params={"max_cg": -1}).fit(X, y)


def test_multiclass_kernel_models_predict(data):
    X, _ = data
    y = np.arange(len(X)) % 3
    X = X + 3.0 * np.eye(3)[y] @ np.ones((3, X.shape[1])) * np.arange(X.shape[1])[None, :] / X.shape[1]
    for mc in ("ovr", "ovo", "ordinal"):
        clf = SVMClassifier(solver="newton", loss="squared_hinge", intercept="free", kernel="rbf",
                            multi_class=mc, tol=1e-8).fit(X, y)
        shape = {"ovr": 3, "ovo": 3, "ordinal": 2}[mc]
        D = clf.decision_function(X)
        assert D.shape == (len(y), shape)
        assert set(clf.predict(X)) == {0, 1, 2}
        # Each column is its binary kernel model, evaluated here by hand:
        # sum_i dual_coef_i exp(-gamma |x - sv_i|^2) + b.
        g = clf._kernel.gamma
        for j, m in enumerate(clf.multiclass_.models):
            sq = ((X[:, None, :] - m["support_vectors"][None, :, :]) ** 2).sum(axis=2)
            np.testing.assert_allclose(D[:, j], np.exp(-g * sq) @ m["dual_coef"] + m["b"], rtol=0, atol=1e-10)
        if mc == "ovr":
            np.testing.assert_array_equal(clf.predict(X), clf.classes_[[max(range(3), key=r.__getitem__) for r in D]])


def test_default_sweep_statuses_on_a_small_case():
    """A default sweep over C ends converged for the solvers with a stopping test, and `budget`
    (never `converged`) for pegasos's fixed schedule (README "Defaults" has the full sweep)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler
    X, y = load_breast_cancer(return_X_y=True)
    X, y = StandardScaler().fit_transform(X[::3]), y[::3]
    for name in ("dcd", "liblinear", "newton", "gd", "smo", "svmlight", "qp", "pegasos"):
        statuses = [SVMClassifier(solver=name, C=C).fit(X, y).status_ for C in (0.01, 0.1, 1.0, 10.0, 100.0)]
        assert statuses == ["budget" if name == "pegasos" else "converged"] * 5, (name, statuses)


@pytest.mark.parametrize("kind", ["csr_matrix", "csr_array"])
def test_a_canonical_csr_reaches_the_solver_uncopied(data, monkeypatch, kind):
    """Issue 10 point 3 / 18: no copy of a CSR already in the solvers' form (sorted int32
    indices, float64 values): the solver reads the caller's own data and indices buffers."""
    from dataclasses import replace

    from solvers import registry
    X, y = data
    Xs = getattr(sp, kind)(np.where(np.abs(X) > 0.5, X, 0.0))
    assert Xs.has_canonical_format and Xs.indices.dtype == np.int32
    spec = registry.get_solver("pegasos")
    seen = []

    def spy(problem, **kw):
        seen.append(problem.X_csr)
        return spec.fit(problem, **kw)

    monkeypatch.setitem(registry._REGISTRY, "pegasos", replace(spec, fit=spy))
    registry._WARM.add("pegasos")  # the spy needs no warmup of its own
    clf = SVMClassifier(solver="pegasos", solver_params={"epochs": 2}).fit(Xs, y)
    (Xp,) = seen
    assert Xp.data is Xs.data and Xp.indices is Xs.indices
    assert np.shares_memory(Xp.indptr, Xs.indptr)
    direct = solvers.fit(Problem(Xs, np.where(y == clf.classes_[1], 1.0, -1.0), intercept="regularized"),
                         "pegasos", epochs=2)
    assert clf.objective_ == direct.primal


def test_sparse_non_finite_values_are_refused_naming_the_row(data):
    """Sparse X is checked for NaN and inf once, by Problem (scikit-learn's pass is skipped for
    it): still refused, with the row."""
    X, y = data
    Xs = sp.csr_matrix(X)
    Xs.data[Xs.indptr[7] + 1] = np.nan
    for kernel in ("linear", "rbf"):
        solver = "pegasos" if kernel == "linear" else "smo"
        with pytest.raises(ValueError, match=r"non-finite value \(nan\) in row 7"):
            SVMClassifier(solver=solver, kernel=kernel).fit(Xs, y)


def test_linear_models_keep_no_copy_of_their_support_vectors():
    """A linear model predicts from coef_: copying X[support_] (half of full RCV1's rows) would
    cost the whole call more than the passes; a kernel model needs them to predict."""
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    lin = SVMClassifier(solver="dcd").fit(X, y)
    assert lin.support_.size > 0 and not hasattr(lin, "support_vectors_")
    ker = SVMClassifier(solver="smo", kernel="rbf").fit(X, y)
    np.testing.assert_array_equal(ker.support_vectors_, X[ker.support_])


def test_a_convergence_warning_points_at_the_callers_line():
    """The warning's file and line are the caller's own (`clf.fit(X, y)`, `solvers.fit(...)`),
    not a line inside the solvers package, however deep the call: a binary fit, a one-vs-rest
    fit through the multiclass wrapper, the functional core."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    X, y = make_classification(n_samples=60, n_features=5, random_state=0)
    X3, y3 = make_classification(n_samples=90, n_features=5, n_informative=3, n_classes=3, random_state=0)
    fits = [
        lambda: SVMClassifier(solver="dcd", max_iter=1).fit(X, y),
        lambda: SVMClassifier(solver="dcd", max_iter=1).fit(X3, y3),      # a warning per class
        lambda: solvers.fit(Problem(X, np.where(y > 0, 1.0, -1.0)), "dcd", budget=Budget(max_iter=1, tol=1e-9)),
    ]
    for fit in fits:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", ConvergenceWarning)
            fit()
        assert said and {(w.filename, w.lineno) for w in said} == {(__file__, fit.__code__.co_firstlineno)}


@pytest.fixture(scope="module")
def wide_csr():
    """A CSR whose values (8 MB) dwarf anything of one entry per row or feature: 10,000 rows x
    2,000 features, 100 nonzeros a row."""
    rng = np.random.default_rng(0)
    n, d, k = 10_000, 2_000, 100
    # Row i's columns 7 i + 19 j mod d, j < k: distinct, as 19 is prime to d.
    indices = np.sort((7 * np.arange(n)[:, None] + 19 * np.arange(k)[None, :]) % d, axis=1).ravel().astype(np.int32)
    X = sp.csr_matrix((rng.random(n * k) + 0.1, indices, np.arange(0, n * k + 1, k, dtype=np.int32)), shape=(n, d))
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > np.median(X @ w), 1.0, -1.0)
    return X, y


class _Phases:
    """The most memory traced at once in each phase of a fit, above the level it began at:
    `switch` closes the phase running (its peak kept, the larger if it ran before) and opens
    another."""

    def __init__(self):
        self.label, self.base, self.peaks = "around", 0, {}

    def switch(self, label):
        import tracemalloc
        level, peak = tracemalloc.get_traced_memory()
        self.peaks[self.label] = max(self.peaks.get(self.label, 0), peak - self.base)
        tracemalloc.reset_peak()
        self.label, self.base = label, level

    def around(self, fn, label):
        def wrapped(*args, **kwargs):
            outer = self.label
            self.switch(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self.switch(outer)
        return wrapped


@pytest.mark.parametrize("front, solver, loss", [
    ("estimator", "pegasos", "hinge"), ("estimator", "dcd", "hinge"), ("estimator", "dcd", "squared_hinge"),
    ("fit", "dcd", "hinge"), ("fit", "dcd", "squared_hinge"), ("estimator", "gd", "squared_hinge"),
    ("estimator", "newton", "squared_hinge"),
])
def test_nothing_around_a_fit_copies_X(wide_csr, monkeypatch, front, solver, loss):
    """What a fit does around its solver's iterations (checks, canonical forms, the magnitude
    test, labels, the trace points and final certificates, the fitted attributes) allocates no
    copy of X: the most memory it holds at once there, above the level each part began at,
    traced by tracemalloc, stays under a quarter of X's values (np.abs(X.data) for a max |x|
    was a copy of them all; the benchmark page lists these passes). What the solver's own
    iterations allocate (dcd's packed rows) is not bounded here."""
    import dataclasses
    import tracemalloc

    from solvers import base, registry
    X, y = wide_csr
    spec = registry.get_solver(solver)
    registry.warm(spec)
    phases = _Phases()
    monkeypatch.setitem(registry._REGISTRY, solver, dataclasses.replace(spec, fit=phases.around(spec.fit, "solver")))
    for name in ("certify", "record"):      # the final certificate and the trace points
        monkeypatch.setattr(base.Recorder, name, phases.around(getattr(base.Recorder, name), "certificate"))
    budget = dict(max_iter=2, tol=1e-12)
    call = {"estimator": lambda: SVMClassifier(solver=solver, loss=loss, intercept="none", **budget).fit(X, y),
            "fit": lambda: solvers.fit(Problem(X, y, loss=loss), solver, budget=Budget(**budget))}[front]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tracemalloc.start()
        try:
            call()
            phases.switch("around")
        finally:
            tracemalloc.stop()
    # (solvers.fit's default recorder is off: there the closing certificate is the solver's own.)
    assert "solver" in phases.peaks and ("certificate" in phases.peaks) == (front == "estimator")
    bound = 0.25 * X.data.nbytes
    assert phases.peaks["around"] < bound and phases.peaks.get("certificate", 0) < bound, (phases.peaks, X.data.nbytes)
