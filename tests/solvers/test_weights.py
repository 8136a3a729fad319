"""Per-sample weights inside the solvers (issue 31): a row of weight 2 is that row taken twice.

For every solver that declares ``sample_weight``, on every loss and kernel it takes, the weighted
problem and the problem with those rows duplicated must give the same optimum (P, the model)
to the solver's tolerance, and the weighted fit's own certificates (P from objectives, the dual
D and gap P - D, the KKT violation) must certify it; the certificates themselves are checked
against the duplicated problem's. Solvers that cannot weight refuse by name.
"""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import Budget, Problem, ProblemError, SolverError, fit, get_solver, solver_names
from solvers import objectives as obj
from solvers.kernels import Kernel

# Each solver's tolerance for the comparison (its own stopping quantity) and how close its P and
# model come to the duplicated problem's: exact methods to 1e-6, SGD (stochastic: other samples
# are drawn for a weight than for a copy) to its statistical accuracy.
TOL = {"dcd": (1e-9, 1e-6), "smo": (1e-9, 1e-6), "svmlight": (1e-9, 1e-6), "qp": (1e-9, 1e-6),
       "smooth_newton": (1e-12, 1e-6), "gd": (1e-10, 1e-6), "newton": (1e-14, 1e-7),
       "liblinear": (1e-9, 1e-6), "libsvm": (1e-9, 1e-5), "sgd": (1e-4, 2e-2),
       "pegasos": (1e-4, 2e-2)}
WEIGHTED = [n for n in solver_names() if get_solver(n).sample_weight]
UNWEIGHTED = [n for n in solver_names() if not n.startswith("_") and not get_solver(n).sample_weight]


def _data():
    rng = np.random.default_rng(3)
    n, d = 50, 4
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.6 * rng.normal(size=n) > 0, 1.0, -1.0)
    rows = np.arange(0, n, 4)           # these rows weigh 2
    sw = np.ones(n)
    sw[rows] = 2.0
    return X, y, sw, np.vstack([X, X[rows]]), np.concatenate([y, y[rows]])


def _cases():
    for name in WEIGHTED:
        spec = get_solver(name)
        for loss in spec.losses:
            if name == "sgd" and loss == "squared_hinge":
                # SGDClassifier's "optimal" rate diverges on this problem unweighted too (P ~ 1e15
                # either way): there is no optimum to compare.
                continue
            for kern in ("linear", "rbf"):
                if kern in spec.kernels:
                    yield pytest.param(name, loss, kern, id=f"{name}-{loss}-{kern}")


# Stochastic solvers run long enough for their statistical error to fall below the comparison's.
PARAMS = {"pegasos": {"epochs": 300, "iterate": "average", "random_state": 1}}


def _solve(problem, name):
    tol = TOL[name][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(problem, name, budget=Budget(tol=tol, max_iter=None), **PARAMS.get(name, {}))


@pytest.mark.parametrize("name,loss,kern", list(_cases()))
def test_weight_two_equals_the_row_duplicated(name, loss, kern):
    X, y, sw, Xd, yd = _data()
    spec = get_solver(name)
    kw = dict(C=0.7, loss=loss, intercept=spec.intercepts[0], kernel=Kernel(kern, 0.3))
    pw = Problem(X, y, sample_weight=sw, **kw)
    pd = Problem(Xd, yd, **kw)
    a, b = _solve(pw, name), _solve(pd, name)
    rel = TOL[name][1]
    assert a.status in ("converged", "budget"), a.status
    # The optimum: equal objective values, and the same model (w, or decision values on X).
    assert a.primal == pytest.approx(b.primal, rel=rel)
    if a.w is not None and kern == "linear":
        np.testing.assert_allclose(a.w, b.w, atol=rel * max(1.0, np.abs(b.w).max()) * 10)
    fa = pw.decision(a)
    fb = pd.decision(b)[:X.shape[0]]
    np.testing.assert_allclose(fa, fb, atol=rel * 100)
    # The weighted fit's P is the weighted objective at its model (objectives, independently of
    # the solver), and equals the duplicated problem's P at the same decision values.
    wnorm2 = a.w @ a.w if a.w is not None and kern == "linear" else None
    if wnorm2 is not None:
        assert a.primal == pytest.approx(obj.primal_objective(pw, a.w, a.b), rel=1e-12)
        fd = np.concatenate([fa, fa[np.arange(0, X.shape[0], 4)]])
        assert obj.primal_from_decision(pd, wnorm2, a.b, fd) == pytest.approx(a.primal, rel=1e-12)
    # Certificates where the solver has them: D <= P, a small gap, a small KKT violation, and the
    # dual value equal to the duplicated problem's (it is the same dual, split per copy).
    if not math.isnan(a.dual):
        assert a.gap >= -1e-9 * max(1.0, abs(a.primal))
        assert a.gap <= 1e3 * rel * max(1.0, abs(a.primal))
        assert a.dual == pytest.approx(b.dual, rel=1e3 * rel)
    if not math.isnan(a.kkt_violation):
        assert a.kkt_violation <= max(100 * TOL[name][0], 1e3 * rel)
    if a.alpha is not None and spec.family in ("dual_cd", "kernel_dual", "reference") and loss == "hinge":
        # The box is C s_i: the doubled rows may reach 2C, the others C.
        assert np.all(a.alpha <= pw.C_i * (1 + 1e-12)) and np.all(a.alpha >= 0)
        if spec.name != "libsvm":
            assert np.any(a.alpha[sw == 2] > pw.C * (1 + 1e-6)), "no doubled row used its wider box"


@pytest.mark.parametrize("name", WEIGHTED)
def test_weights_of_one_change_nothing(name):
    """All-ones weights take the weighted code paths; the fit is bit for bit the unweighted one."""
    X, y, _, _, _ = _data()
    spec = get_solver(name)
    kw = dict(C=0.7, loss=spec.losses[0], intercept=spec.intercepts[0])
    a = _solve(Problem(X, y, **kw), name)
    b = _solve(Problem(X, y, sample_weight=np.ones(len(y)), **kw), name)
    assert (a.primal, a.b, a.n_iter) == (b.primal, b.b, b.n_iter)
    for u, v in ((a.w, b.w), (a.alpha, b.alpha)):
        if u is not None:
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", UNWEIGHTED)
def test_solvers_that_cannot_weight_refuse_by_name(name):
    X, y, sw, _, _ = _data()
    spec = get_solver(name)
    p = Problem(X, y, loss=spec.losses[0], intercept=spec.intercepts[0], sample_weight=sw)
    with pytest.raises(SolverError, match=f"solver '{name}' does not take sample weights.*dcd"):
        fit(p, name)


def test_weighted_dual_certificates_against_the_duplicated_problem():
    """objectives' weighted dual (box C s_i, diagonal 1/(2 C s_i)) equals the duplicated
    problem's at alpha split evenly over the copies."""
    X, y, sw, Xd, yd = _data()
    rows = np.arange(0, len(y), 4)
    rng = np.random.default_rng(0)
    for loss in ("hinge", "squared_hinge"):
        pw = Problem(X, y, C=0.7, loss=loss, sample_weight=sw)
        pd = Problem(Xd, yd, C=0.7, loss=loss)
        alpha = rng.uniform(0, 0.7, size=len(y)) * sw
        # Each copy of a doubled row takes half its alpha: the same sum alpha_i y_i x_i.
        ad = np.concatenate([alpha, alpha[rows] / 2])
        ad[rows] /= 2
        w = X.T @ (alpha * y)
        assert obj.dual_objective(pw, alpha, w @ w) == pytest.approx(obj.dual_objective(pd, ad, w @ w), rel=1e-12)
        diag, U = obj.dual_box_i(pw)
        if loss == "hinge":
            np.testing.assert_array_equal(U, 0.7 * sw)
        else:
            np.testing.assert_allclose(diag, 0.5 / (0.7 * sw))
    # The KKT map of the squared hinge, and its certificates, at an arbitrary w.
    w = rng.normal(size=X.shape[1])
    pw = Problem(X, y, C=0.7, loss="squared_hinge", intercept="regularized", sample_weight=sw)
    pd = Problem(Xd, yd, C=0.7, loss="squared_hinge", intercept="regularized")
    cw, cd = obj.linear_certificates(pw, w, 0.3), obj.linear_certificates(pd, w, 0.3)
    assert cw["primal"] == pytest.approx(cd["primal"], rel=1e-12)
    assert cw["dual"] == pytest.approx(cd["dual"], rel=1e-12)
    assert cw["gap"] >= 0


def test_problem_validates_and_carries_weights():
    X, y, sw, _, _ = _data()
    with pytest.raises(ProblemError, match=r"sample_weight\[3\] = 0.0 must be a finite number > 0"):
        Problem(X, y, sample_weight=np.where(np.arange(len(y)) == 3, 0.0, 1.0))
    with pytest.raises(ProblemError, match=r"sample_weight\[1\] = nan"):
        Problem(X, y, sample_weight=np.where(np.arange(len(y)) == 1, np.nan, 1.0))
    with pytest.raises(ProblemError, match="50 rows but sample_weight has 3"):
        Problem(X, y, sample_weight=[1.0, 2.0, 3.0])
    p = Problem(sp.csr_matrix(X), y, sample_weight=list(sw))
    assert not p.sample_weight.flags.writeable
    with pytest.raises(ProblemError, match=r"sample_weight\[0\] = -1.0"):
        p.with_(sample_weight=-np.ones(len(y)))
    sub = p.subset(np.arange(10))
    np.testing.assert_array_equal(sub.sample_weight, sw[:10])
    assert p.with_(C=3.0).sample_weight is p.sample_weight
    np.testing.assert_array_equal(p.C_i, p.C * sw)


# ------------------------------------------------------------------ the estimator
def _imbalanced():
    from sklearn.datasets import make_classification
    return make_classification(160, 5, n_informative=3, weights=[0.8, 0.2], random_state=0)


@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 4.0}])
def test_class_weight_matches_svc_and_linearsvc(class_weight):
    """class_weight against scikit-learn's on the same data: SVC (LIBSVM) for smo, LinearSVC
    (LIBLINEAR, its dual CD with the hinge and bias feature) for dcd; both converged tightly."""
    from sklearn.svm import SVC, LinearSVC
    from solvers import SVMClassifier
    X, y = _imbalanced()
    ours = SVMClassifier(solver="smo", kernel="rbf", gamma=0.2, tol=1e-10, class_weight=class_weight).fit(X, y)
    ref = SVC(kernel="rbf", gamma=0.2, tol=1e-10, class_weight=class_weight).fit(X, y)
    np.testing.assert_allclose(ours.class_weight_, ref.class_weight_, rtol=1e-15)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-6)
    ours = SVMClassifier(solver="dcd", loss="hinge", tol=1e-8, max_iter=10**6, class_weight=class_weight).fit(X, y)
    ref = LinearSVC(loss="hinge", dual=True, tol=1e-8, max_iter=10**6, class_weight=class_weight).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-5)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-5)
    # And it changes the model: the minority class gets more of the decisions.
    plain = SVMClassifier(solver="dcd", loss="hinge", tol=1e-8, max_iter=10**6).fit(X, y)
    assert (ours.predict(X) == 1).sum() > (plain.predict(X) == 1).sum()


def test_sample_weight_zero_rows_are_left_out_and_support_indexes_the_given_rows():
    from sklearn.svm import SVC
    from solvers import SVMClassifier
    X, y = _imbalanced()
    sw = np.random.default_rng(1).integers(0, 3, size=len(y)).astype(float)
    ours = SVMClassifier(solver="smo", kernel="rbf", gamma=0.2, tol=1e-10).fit(X, y, sample_weight=sw)
    ref = SVC(kernel="rbf", gamma=0.2, tol=1e-10).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-6)
    # SVC's support_ indexes the rows left after dropping weight 0; ours the rows given to fit.
    kept = np.flatnonzero(sw > 0)
    assert set(ours.support_) == set(kept[ref.support_])
    assert np.all(sw[ours.support_] > 0)
    # The same fit as the zero rows removed by hand.
    alone = SVMClassifier(solver="smo", kernel="rbf", gamma=0.2, tol=1e-10).fit(X[kept], y[kept], sample_weight=sw[kept])
    np.testing.assert_array_equal(ours.dual_coef_, alone.dual_coef_)


def test_estimator_weight_errors_are_clear():
    from solvers import SVMClassifier
    X, y = _imbalanced()
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        SVMClassifier().fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        SVMClassifier().fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="all samples with positive weights belong to the same class"):
        SVMClassifier().fit(X, y, sample_weight=(y == 1).astype(float))
    with pytest.raises(ValueError, match=r"class_weight has the label 7, which is not in y"):
        SVMClassifier(class_weight={7: 2.0}).fit(X, y)
    with pytest.raises(ValueError, match=r"The 'class_weight' parameter of SVMClassifier must be null, 'balanced' or a "
                                         r"mapping {label: weight > 0}. Got 'heavy' instead."):
        SVMClassifier(class_weight="heavy").fit(X, y)
    with pytest.raises(SolverError, match="solver 'svmmaj' does not take sample weights"):
        SVMClassifier(solver="svmmaj", class_weight="balanced").fit(X, y)
    with pytest.raises(SolverError, match="pegasos takes sample weights by weighted sampling: it needs "
                                          "sampling='replacement', not 'permutation'"):
        SVMClassifier(solver="pegasos", class_weight="balanced", solver_params={"sampling": "permutation"}).fit(X, y)
    # Weights that are all 1 are no weights: every solver takes them.
    SVMClassifier(solver="svmmaj").fit(X, y, sample_weight=np.ones(len(y)))


def test_multiclass_weights_reach_every_binary_problem():
    """ovo: each pair's problem carries its rows' weights; with the ovo strategy smo matches
    SVC's multiclass decision values (SVC is one-vs-one)."""
    from sklearn.datasets import load_iris
    from sklearn.svm import SVC
    from solvers import SVMClassifier
    X, y = load_iris(return_X_y=True)
    ours = SVMClassifier(solver="smo", kernel="rbf", gamma=0.5, tol=1e-10, multi_class="ovo",
                         class_weight="balanced").fit(X, y, sample_weight=1 + (np.arange(150) % 3))
    ref = SVC(kernel="rbf", gamma=0.5, tol=1e-10, decision_function_shape="ovo",
              class_weight="balanced").fit(X, y, sample_weight=1 + (np.arange(150) % 3))
    # SVC's ovo columns are (0,1), (0,2), (1,2) with the first class positive, as ours.
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-6)


def test_pegasos_weighted_sampling_reaches_the_weighted_optimum():
    """Weights that matter (the minority class weighs 6): pegasos's weighted draws approach the
    weighted optimum (dcd's, certified), where uniform draws (the unweighted problem) end 40%
    above it; a weight of 2 on a quarter of the rows (above) moves P too little to tell apart
    from pegasos's own sampling noise."""
    from sklearn.datasets import make_classification
    X, y = make_classification(300, 5, n_informative=3, weights=[0.85, 0.15], random_state=0)
    y = np.where(y == 1, 1.0, -1.0)
    kw = dict(C=0.5, loss="hinge", intercept="regularized")
    pw = Problem(X, y, sample_weight=np.where(y > 0, 6.0, 1.0), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fit(pw, "dcd", budget=Budget(tol=1e-6, max_iter=10**5))
        peg = fit(pw, "pegasos", epochs=100, iterate="average", random_state=0)
        plain = fit(Problem(X, y, **kw), "pegasos", epochs=100, iterate="average", random_state=0)
    assert ref.status == "converged" and ref.gap < 1e-5 * ref.primal
    assert peg.primal == pytest.approx(obj.primal_objective(pw, peg.w, peg.b), rel=1e-12)
    assert ref.primal <= peg.primal <= 1.02 * ref.primal
    assert obj.primal_objective(pw, plain.w, plain.b) > 1.2 * ref.primal


def test_class_weight_as_a_problem_key():
    """class_weight on a binary Problem (the key a sweep's `problem:` can set): "balanced" is
    scikit-learn's n / (2 count), a mapping weighs each label, and the weighted problem is the
    one the estimator solves with the same class_weight."""
    from sklearn.utils.class_weight import compute_class_weight

    from solvers import SVMClassifier
    from solvers.problem import class_weight_rows
    X, y01 = _imbalanced()
    y = np.where(y01 == 1, 1.0, -1.0)
    cw = compute_class_weight("balanced", classes=np.array([-1.0, 1.0]), y=y)
    np.testing.assert_allclose(class_weight_rows(y, "balanced"), np.where(y > 0, cw[1], cw[0]), rtol=1e-15)
    np.testing.assert_array_equal(class_weight_rows(y, {1: 3.0}), np.where(y > 0, 3.0, 1.0))
    assert class_weight_rows(y, {-1: 1.0, 1: 1.0}) is None and class_weight_rows(y, None) is None
    with pytest.raises(ProblemError, match="class_weight has the label 2; the labels of a binary problem are -1 and 1"):
        class_weight_rows(y, {2: 1.0})
    p = Problem.build(X, y, C=0.5, intercept="free", kernel="rbf", gamma=0.2, class_weight="balanced")
    np.testing.assert_array_equal(p.with_settings(C=0.5, intercept="free", kernel="rbf", gamma=0.2,
                                                  class_weight="balanced").sample_weight, p.sample_weight)
    r = fit(p, "smo", budget=Budget(tol=1e-10))
    est = SVMClassifier(solver="smo", C=0.5, kernel="rbf", gamma=0.2, tol=1e-10, class_weight="balanced").fit(X, y01)
    assert est.objective_ == pytest.approx(r.primal, rel=1e-9)


def test_smooth_newton_identifies_the_weighted_optimum():
    """smooth_newton's exact step on the margin set (v_L = C Z_L' (s y)_L, alpha_S in [0, C_i])
    finds the weighted hinge optimum; with the weights left out of v_L it never does and the
    continuation crawls to the rounding level (63 steps instead of 19, measured)."""
    X, y, sw, _, _ = _data()
    p = Problem(X, y, C=0.7, loss="hinge", intercept="none", sample_weight=sw)
    r = fit(p, "smooth_newton", budget=Budget(tol=1e-12))
    assert r.status == "converged" and r.info["identified"]
    assert r.gap <= 1e-12 * r.primal
