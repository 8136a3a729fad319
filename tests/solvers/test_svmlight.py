"""svmlight against LIBSVM (scikit-learn's SVC), its proximal-point path, and its certificates."""
import itertools

import numpy as np
import pytest

import solvers.svmlight as svmlight
from solvers import Budget, Problem, SolverError, fit
from solvers.base import Recorder
from kernel_refs import DIGITS38_POLY2, KERNELS, breast_cancer_data, digits17_data, digits38_data, svc_reference
from solvers.svmlight import STALL_ITERS, _age, _carry, select_working_set

@pytest.fixture(scope="module")
def breast_cancer():
    return breast_cancer_data()


@pytest.fixture(scope="module")
def digits17():
    return digits17_data()


@pytest.mark.parametrize("data", ["breast_cancer", "digits17"])
@pytest.mark.parametrize("kname", ["rbf", "poly"])
@pytest.mark.parametrize("q", [2, 20])
def test_reaches_svc(request, data, kname, q):
    X, y = request.getfixturevalue(data)
    kw = KERNELS[kname]
    C = 10.0
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    res = fit(Problem.build(X, y, C=C, intercept="free", **kw), "svmlight", budget=Budget(tol=1e-9), q=q)
    assert res.status == "converged"
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4
    assert abs(res.gap) <= 1e-6 * abs(res.primal)
    assert res.kkt_violation < 1e-9
    assert abs(res.alpha @ y) < 1e-9 and res.alpha.min() >= 0 and res.alpha.max() <= C
    assert res.info["q"] == q and res.info["n_sv"] == np.count_nonzero(res.alpha)


def test_singular_Q_WW_takes_the_proximal_path(digits17):
    """Every point twice: Q_WW is singular whenever W holds both copies. With proximal="auto"
    the proximal-point subproblem (bertini II.B) is used and the optimum is still SVC's."""
    X, y = digits17
    X2, y2 = np.vstack([X[:120], X[:120]]), np.concatenate([y[:120], y[:120]])
    kw = KERNELS["rbf"]
    D_ref, f_ref, K = svc_reference(X2, y2, 10.0, kw)
    problem = Problem.build(X2, y2, C=10.0, intercept="free", **kw)
    res = fit(problem, "svmlight", budget=Budget(tol=1e-9), q=40)
    assert res.status == "converged" and res.info["n_proximal"] > 0
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y2) + res.b - f_ref).max() < 1e-4
    always = fit(problem, "svmlight", budget=Budget(tol=1e-9), q=40, proximal="always", tau=0.5)
    assert always.info["n_proximal"] == always.n_iter
    assert abs(always.dual - D_ref) <= 1e-6 * abs(D_ref)
    never = fit(Problem.build(X[:120], y[:120], C=10.0, intercept="free", **kw), "svmlight",
                budget=Budget(tol=1e-9), q=10, proximal="never")
    assert never.info["n_proximal"] == 0


def test_small_cache_same_result(digits17):
    X, y = digits17
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    full = fit(problem, "svmlight", budget=Budget(tol=1e-8), q=10)
    small = fit(problem, "svmlight", budget=Budget(tol=1e-8), q=10, cache_size=8 * len(y) * 12 / 2**20)
    assert small.info["cache_columns"] == 12 and small.info["cache_misses"] > full.info["cache_misses"]
    assert small.n_iter == full.n_iter
    np.testing.assert_allclose(small.alpha, full.alpha, atol=1e-10)


def test_every_sv_at_bound(breast_cancer):
    X, y = breast_cancer
    keep = np.concatenate([np.flatnonzero(y > 0)[:100], np.flatnonzero(y < 0)[:100]])
    X, y = X[keep], y[keep]
    kw = dict(kernel="rbf", gamma=0.1)
    D_ref, f_ref, K = svc_reference(X, y, 1e-3, kw)
    res = fit(Problem.build(X, y, C=1e-3, intercept="free", **kw), "svmlight", budget=Budget(tol=1e-10))
    assert res.info["b_rule"] == "bound_only"
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4


def test_warm_start(breast_cancer):
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["rbf"])
    cold = fit(problem, "svmlight", budget=Budget(tol=1e-8))
    again = fit(problem, "svmlight", budget=Budget(tol=1e-8), warm_start=cold)
    assert again.n_iter == 0 and again.dual == pytest.approx(cold.dual, rel=1e-12)
    bad = {"alpha": np.random.default_rng(1).uniform(-5, 20, size=len(y))}
    warm = fit(problem, "svmlight", budget=Budget(tol=1e-8), warm_start=bad)
    assert warm.status == "converged" and warm.dual == pytest.approx(cold.dual, rel=1e-9)


def test_working_set_is_the_most_violating():
    v = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    up = np.array([1, 1, 0, 1, 1, 1], bool)
    low = np.array([1, 1, 1, 1, 1, 0], bool)
    W, m, M = select_working_set(v, up, low, 4)
    assert m == 5.0 and M == 1.0
    assert sorted(W[:2]) == [0, 1] and sorted(W[2:]) == [3, 4]
    assert len(set(W)) == len(W)


def test_ties_go_to_the_lower_index():
    """At alpha = 0 every v_i = y_i: I_up and I_low are one tie each. W must not depend on a
    partition's tie order (an ordering that changes W changes the whole run)."""
    v = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0])
    W, m, M = select_working_set(v, v > 0, v < 0, 4)
    assert list(W) == [0, 2, 1, 4] and m == 1.0 and M == -1.0
    v = np.array([2.0, 3.0, 3.0, 0.0, 0.0, 1.0])
    W, m, M = select_working_set(v, np.ones(6, bool), np.ones(6, bool), 4)
    assert list(W) == [1, 2, 3, 4]  # most violating first, equal values by index


def _duplicate_pair_problem():
    """Four 2-D points, one of them twice with opposite labels (so the optimum keeps both copies
    at C and Q_WW of that pair is singular), poly kernel of degree 3, C = 100. The old loop
    (interior point subproblem at q = 2, no descent test), with qp's solver before its fixes,
    cycled here on every OpenBLAS core type tried (SkylakeX, Haswell, Zen, Nehalem, Prescott): the IPM answer came back as
    alpha_W itself, and the same W was selected forever (m - M = 1.6e-8 after 20,000 iterations)."""
    X = np.array([[-0.1, -0.9], [0.1, 0.1], [-0.3, -1.5], [0.1, 0.1]])
    y = np.array([-1.0, -1.0, -1.0, 1.0])
    return X, y, dict(kernel="poly", gamma=1.0, degree=3, coef0=1.0), 100.0


def test_degenerate_duplicated_point_does_not_cycle():
    X, y, kw, C = _duplicate_pair_problem()
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    res = fit(Problem.build(X, y, C=C, intercept="free", **kw), "svmlight",
              budget=Budget(tol=1e-9, max_iter=20_000), q=2)
    assert res.status == "converged" and res.n_iter < 1000
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert res.info["n_pair_solves"] == res.n_iter and res.info["sub_steps"] == res.n_iter


@pytest.mark.parametrize("q", [2, 20])
def test_dual_never_decreases(breast_cancer, q):
    """Every accepted step decreases f (the closed form at q = 2, the sufficient decrease test at
    q > 2): the traced dual D = -f is non-decreasing at every iteration."""
    X, y = breast_cancer
    rec = Recorder(per_decade=100_000, max_overhead=None)  # a point at every iteration
    res = fit(Problem.build(X, y, C=10.0, intercept="free", **KERNELS["poly"]), "svmlight",
              budget=Budget(tol=1e-9), recorder=rec, q=q)
    assert res.status == "converged"
    its = np.array([p[0] for p in res.trace])
    D = np.array([p[3] for p in res.trace])
    assert np.array_equal(its, np.arange(1, res.n_iter + 1))
    assert np.diff(D).min() >= -1e-12 * abs(D[-1])
    assert res.info["max_df"] <= 1e-12 * abs(res.dual)  # G'd + 1/2 d'Qd: zero up to rounding


def test_ascent_answers_of_the_subproblem_are_refused(breast_cancer, monkeypatch):
    """A subproblem solver returning feasible points that increase f (what the interior point
    method of versions 1-3 did on ill-conditioned Q_WW, poly kernel in 2-D at q = 10; injected
    into the compiled loop by `_FAULT`): every answer fails the decrease test, the pair step is
    taken instead, and the solve still reaches SVC's optimum with a monotone dual."""
    monkeypatch.setattr(svmlight, "_FAULT", 1)
    X, y = breast_cancer
    X, y = X[:200], y[:200]
    kw = KERNELS["poly"]
    D_ref, _, _ = svc_reference(X, y, 10.0, kw)
    rec = Recorder(per_decade=100_000)
    res = fit(Problem.build(X, y, C=10.0, intercept="free", **kw), "svmlight",
              budget=Budget(tol=1e-9, max_iter=50_000), recorder=rec, q=10)
    assert res.status == "converged"
    assert res.info["n_pair_solves"] == res.n_iter and res.info["max_df"] <= 1e-12 * abs(res.dual)
    D = np.array([p[3] for p in res.trace])
    assert np.diff(D).min() >= -1e-12 * abs(D[-1])
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)


def test_no_step_from_the_subproblem_falls_back_to_the_pair(breast_cancer, monkeypatch):
    """The failure seen under SkylakeX: the subproblem answer is alpha_W itself. The pair step
    on W makes the progress instead (no repeated W)."""
    monkeypatch.setattr(svmlight, "_FAULT", 2)
    X, y = breast_cancer
    kw = KERNELS["poly"]
    D_ref, _, _ = svc_reference(X, y, 10.0, kw)
    res = fit(Problem.build(X, y, C=10.0, intercept="free", **kw), "svmlight",
              budget=Budget(tol=1e-9, max_iter=50_000), q=10)
    assert res.status == "converged" and res.info["n_pair_solves"] == res.n_iter
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)


@pytest.mark.parametrize("q", [2, 10])
def test_stalls_instead_of_spinning(breast_cancer, monkeypatch, q):
    """With both the subproblem answer and the pair step crippled (no step at all), f cannot
    decrease: the solve must end `stalled` after STALL_ITERS iterations, saying why, not run to
    max_iter."""
    monkeypatch.setattr(svmlight, "_FAULT", 3)
    X, y = breast_cancer
    problem = Problem.build(X, y, C=10.0, intercept="free", **KERNELS["poly"])
    with pytest.warns(Warning, match="stalled.*did not decrease"):
        res = fit(problem, "svmlight", budget=Budget(tol=1e-9, max_iter=100_000), q=q)
    assert res.status == "stalled" and res.n_iter == STALL_ITERS
    assert "did not decrease" in res.info["stop_reason"]


def test_blobs_poly_q10_reaches_svc():
    """2-D blobs (the benchmark's toy_blobs: two unit Gaussians 3 apart, standardised), poly
    kernel of degree 3 -- a 10-dimensional feature space, so Q_WW at q = 10 is nearly singular
    and qp's interior point answers (before its polish fix) went uphill -- C = 10. The old loop
    accepted those answers: here it ended at max_iter (20,000) with the dual at 3370 (SVC: 4894);
    at 5000 points the benchmark's run hit the 10^6 cap with the dual alternating between 6101.83
    and 6121.00."""
    rng = np.random.default_rng(1)
    n = 3000
    y = np.r_[-np.ones(n // 2), np.ones(n - n // 2)]
    X = rng.normal(size=(n, 2)) + y[:, None] * (3.0 / 2 / np.sqrt(2))
    order = rng.permutation(n)
    X, y = X[order], y[order]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    kw = dict(kernel="poly", gamma=0.5, degree=3, coef0=1.0)
    D_ref, _, _ = svc_reference(X, y, 10.0, kw)
    res = fit(Problem.build(X, y, C=10.0, intercept="free", **kw), "svmlight",
              budget=Budget(tol=1e-9, max_iter=20_000), q=10)
    assert res.status == "converged" and res.kkt_violation < 1e-9
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    # (decision values: LIBSVM's float32 Q leaves SVC's 1e-3 off here, K_ii up to 42)
    assert abs(res.gap) <= 1e-6 * abs(res.primal)
    assert res.info["max_df"] <= 1e-12 * abs(res.dual)


@pytest.mark.parametrize("key, value, match", [
    ("q", 1, "q"), ("q", 7, "q"), ("tau", 0.0, "tau"), ("tau", -1.0, "tau"),
    ("cache_size", 0.0, "cache_size"), ("proximal", "sometimes", "proximal"), ("n_new", 1, "n_new"),
    ("n_new", 41, "n_new"),
])
def test_bad_params_name_the_key(breast_cancer, key, value, match):
    X, y = breast_cancer
    problem = Problem.build(X[:50], y[:50], intercept="free", kernel="rbf", gamma=1.0)
    with pytest.raises(SolverError, match=match):
        fit(problem, "svmlight", **{key: value})


def test_small_q_tiny_alpha_takes_the_exact_answers():
    """Digits 3 vs 8, degree 2, C = 1000, q = 4 (bertini reproduction): alpha ~ 1e-7 and exact
    steps ~ 1e-15 near the end. The decrease test on G_W'd multiplied the rounding of y'd by
    |b| and refused exact interior point answers: about half the subproblems fell back to pair
    steps and the solve hit max_iter (3000 here; 20000 in the reproduction). On the reduced
    gradient every answer passes. (n_new = q: at the default q/2 the first working set holds
    n_new = 2 variables, a pair answered in closed form, which n_pair_solves counts too.)"""
    X, y = digits38_data()
    P = Problem.build(X, y, C=1000.0, intercept="free", **DIGITS38_POLY2)
    res = fit(P, "svmlight", budget=Budget(tol=1e-13, max_iter=3000), q=4, n_new=4, tau=1.0)
    ref = fit(P, "smo", budget=Budget(tol=1e-13))
    assert res.status == "converged" and res.kkt_violation < 1e-13
    assert res.info["n_pair_solves"] == 0
    assert abs(res.dual - ref.dual) <= 1e-10 * abs(ref.dual)


def _brute_force_box_qp(H, c, yv, r, C):
    """min 1/2 a'Ha + c'a s.t. y'a = r, 0 <= a <= C, by enumerating every face (each a_i at 0,
    at C or free) and solving the face's KKT system: the minimum over the feasible stationary
    points is the optimum, also for a singular H (a vertex of the optimal set is the unique
    stationary point of its own face)."""
    q = c.shape[0]
    best, arg = np.inf, None
    for status in itertools.product((0, 1, 2), repeat=q):
        s = np.array(status)
        a = np.where(s == 1, C, 0.0)
        F, B = np.flatnonzero(s == 2), np.flatnonzero(s != 2)
        if F.size:
            K = np.block([[H[np.ix_(F, F)], yv[F, None]], [yv[None, F], np.zeros((1, 1))]])
            rhs = np.r_[-c[F] - H[np.ix_(F, B)] @ a[B], r - yv[B] @ a[B]]
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
            if np.abs(K @ sol - rhs).max() > 1e-9 * (1.0 + np.abs(rhs).max()):
                continue  # no stationary point on this face
            a[F] = sol[:F.size]
        if abs(yv @ a - r) > 1e-9 or a.min() < -1e-12 or a.max() > C + 1e-12:
            continue
        f = 0.5 * a @ H @ a + c @ a
        if f < best:
            best, arg = f, a
    return best, arg


@pytest.mark.parametrize("rank", [5, 2, 1])
@pytest.mark.parametrize("ptau", [0.0, 0.5])
@pytest.mark.parametrize("second_order", [True, False])
def test_subproblem_solver_against_brute_force(rank, ptau, second_order):
    """The compiled subproblem solver (pair steps on W, `_smo_subproblem`) against an exhaustive
    face enumeration on random 5-variable subproblems: Q_WW positive definite (rank 5) and
    singular (rank 2, 1), with and without the proximal term, by either pair rule (the most
    violating pair; WSS 2, what the solve uses), from feasible starts with some
    variables at their bounds. Same optimum of the model, a feasible answer."""
    rng = np.random.default_rng(rank + int(10 * ptau))
    q, C = 5, 2.0
    for _ in range(5):
        Z = rng.normal(size=(q, rank))
        yW = rng.choice([-1.0, 1.0], size=q)
        QWW = (yW[:, None] * yW[None, :]) * (Z @ Z.T)
        aW = np.clip(rng.uniform(-0.5, 2.5, size=q), 0.0, C)
        GW = rng.normal(size=q) * 3.0
        H = QWW + 2.0 * ptau * np.eye(q)
        ref, _ = _brute_force_box_qp(H, GW - H @ aW, yW, yW @ aW, C)
        a, steps, pred = svmlight._smo_subproblem(QWW, GW, aW, yW, C, ptau, 1e-12, 1_000_000, second_order)
        assert a.min() >= 0.0 and a.max() <= C and abs(yW @ (a - aW)) <= 1e-12
        got = 0.5 * a @ H @ a + (GW - H @ aW) @ a
        assert abs(got - ref) <= 1e-9 * (1.0 + abs(ref))
        # pred is the model's change in exact arithmetic: the same change, from the end point
        assert pred == pytest.approx(got - (0.5 * aW @ H @ aW + (GW - H @ aW) @ aW), abs=1e-9)
        assert svmlight._is_pd(QWW, svmlight.PD_REL) == (rank == q)


def test_shrinking_reaches_svc_after_reconstruction(breast_cancer):
    """Shrinking drops variables at a bound and rebuilds their G before the last check: the run
    must rebuild at least once (n_reconstruct) and still end at SVC's optimum, certified on the
    full problem, with the same dual as the run without shrinking."""
    X, y = breast_cancer
    kw = KERNELS["rbf"]
    D_ref, f_ref, K = svc_reference(X, y, 10.0, kw)
    problem = Problem.build(X, y, C=10.0, intercept="free", **kw)
    res = fit(problem, "svmlight", budget=Budget(tol=1e-9), q=10)
    plain = fit(problem, "svmlight", budget=Budget(tol=1e-9), q=10, shrinking=False)
    assert res.status == "converged" and res.info["n_reconstruct"] >= 1 and plain.info["n_reconstruct"] == 0
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref) and abs(res.dual - plain.dual) <= 1e-9 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4
    assert res.kkt_violation < 1e-9 and abs(res.gap) <= 1e-6 * abs(res.primal)


def test_subproblem_second_order_pair():
    """Inside the subproblem j is chosen by the largest decrease b^2 / a (WSS 2), not the largest
    violation: here the most violating j (b = 1.5) has curvature 101, the other (b = 1.2)
    curvature 2, so WSS 2 moves the other and its first step decreases the model 30x more."""
    QWW = np.diag([1.0, 100.0, 1.0])
    GW = np.array([-1.0, 0.5, 0.2])
    aW, yW = np.ones(3), np.ones(3)
    a2, _, pred2 = svmlight._smo_subproblem(QWW, GW, aW, yW, 2.0, 0.0, 1e-12, 1, True)
    a1, _, pred1 = svmlight._smo_subproblem(QWW, GW, aW, yW, 2.0, 0.0, 1e-12, 1, False)
    assert a2[1] == 1.0 and a2[2] != 1.0 and a1[1] != 1.0 and a1[2] == 1.0
    assert pred2 == pytest.approx(-1.2**2 / 2 / 2) and pred1 == pytest.approx(-1.5**2 / 101 / 2)


def test_n_new_carries_q_minus_n_variables():
    """SVMlight's -n (`_carry`, `_age`): with n_new = q/2 a variable stays two working sets, so
    each one keeps the previous one's new half and takes n_new new ones, distinct, with the most
    violating pair (m, M over all variables) among them."""
    rng = np.random.default_rng(0)
    n, q, n_new = 60, 10, 5
    age = np.zeros(n, np.int64)
    keep = np.empty(q, np.int64)
    prev, prev_new = np.empty(0, np.int64), np.empty(0, np.int64)
    for it in range(20):
        v = rng.standard_normal(n)
        up = rng.random(n) < 0.8
        low = ~up | (rng.random(n) < 0.5)
        k = _carry(prev, age, q // n_new, keep)
        W, m, M = select_working_set(v, up, low, q, keep[:k], n_new)
        _age(W, age)
        assert len(set(W)) == len(W) == (q if it else n_new)
        assert list(W[:k]) == list(prev_new) and k == (q - n_new if it else 0)
        assert m == v[W][up[W]].max() and M == v[W][low[W]].min()
        prev, prev_new = W, W[k:]
    assert set(np.flatnonzero(age)) == set(W)


def test_n_new_carry_counts_with_shrinking():
    """The carry rule by counts, with the shrinking step's reset in between: a variable that enters
    W as new stays in the next life - 1 = q // n_new - 1 working sets, unless it is shrunk (the
    compiled loop sets its age to 0 and drops it from the active set, so it must not be carried:
    carried, it entered W outside the active set, and the fit read stale gradients and crashed).
    Each working set is checked against that rule kept independently (entry step and shrink
    events), by how many variables are carried and which."""
    rng = np.random.default_rng(1)
    n, q, n_new = 80, 12, 4
    life = q // n_new
    age = np.zeros(n, np.int64)
    keep = np.empty(q, np.int64)
    prev = np.empty(0, np.int64)
    entered = {}       # variable -> the step it last entered W as new
    counts = []
    for step in range(30):
        shrunk = set(rng.choice(prev, 2, replace=False).tolist()) if step and step % 3 == 0 else set()
        for t in shrunk:           # as _chunk's shrinking step does for a variable it drops
            age[t] = 0
            entered.pop(t)
        expected = [t for t in prev if t in entered and step - entered[t] < life]
        v = rng.standard_normal(n)
        up = rng.random(n) < 0.8
        low = ~up | (rng.random(n) < 0.5)
        k = _carry(prev, age, life, keep)
        W, _, _ = select_working_set(v, up, low, q, keep[:k], n_new)
        _age(W, age)
        assert k == len(expected) and list(W[:k]) == expected, f"step {step}"
        entered = {t: s for t, s in entered.items() if t in W[:k]} | {t: step for t in W[k:].tolist()}
        prev = W
        counts.append(k)
    # The ramp-up (0, then n_new), the steady state n_new (life - 1), and shrinks below it.
    assert counts[:3] == [0, n_new, 2 * n_new] and max(counts) == q - n_new
    assert min(counts[3:]) == q - n_new - 2


@pytest.mark.parametrize("n_new, shrinking", [(10, False), (4, False), (4, True), (20, True)])
def test_n_new_fit_reaches_svc(breast_cancer, n_new, shrinking):
    """The compiled loop carries n_new (life - 1) variables into each working set
    (`info["n_kept"]`), life = q // n_new, once the first life - 1 working sets have filled W:
    exactly that without shrinking, fewer with it (a variable shrunk leaves the working set: here
    some are), none at n_new = q; and it still reaches SVC's optimum."""
    X, y = breast_cancer
    q, C, kw = 20, 10.0, KERNELS["rbf"]
    D_ref, f_ref, K = svc_reference(X, y, C, kw)
    res = fit(Problem.build(X, y, C=C, intercept="free", **kw), "svmlight", budget=Budget(tol=1e-9), q=q,
              n_new=n_new, shrinking=shrinking)
    assert res.status == "converged" and res.info["n_new"] == n_new
    life = q // n_new
    full = n_new * (life - 1) * (res.n_iter - 1) - n_new * (life - 1) * (life - 2) // 2
    kept = res.info["n_kept"]
    if n_new == q:
        assert kept == 0
    elif not shrinking:
        assert kept == full
    else:
        assert 0.5 * full < kept < full
    assert abs(res.dual - D_ref) <= 1e-6 * abs(D_ref)
    assert np.abs(K @ (res.alpha * y) + res.b - f_ref).max() < 1e-4
    assert res.kkt_violation < 1e-9 and abs(res.gap) <= 1e-6 * abs(res.primal)
