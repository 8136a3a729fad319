"""An a9a-like problem made from a seed: the shape of LIBSVM's a9a (Adult, 32,561 x 123) with its
structure: 14 categorical attributes one-hot encoded (binary 0/1 features, exactly 14 nonzeros per
row, many duplicate rows), skewed category frequencies, and labels from a noisy linear rule (about
15% of the labels disagree with the rule, as a linear SVM errs on a9a), so the hinge problem is
far from separable and, at large C, highly degenerate: the case where dual coordinate descent
crawls (issue #10).

On sys.path through pytest's `pythonpath` setting; the certify benchmark (docs/benchmarks/linear.md) also runs
``python tests/solvers/a9a_like.py``.
"""
import numpy as np
import scipy.sparse as sp

# Category counts of the 14 attributes (sum 123, as a9a's binarised Adult features).
GROUPS = (5, 8, 16, 7, 14, 6, 5, 2, 5, 5, 5, 41, 2, 2)


def a9a_like(n=32_561, seed=0, noise=1.0):
    """(X CSR n x 123 with 0/1 values, y in {-1, +1})."""
    rng = np.random.default_rng(seed)
    cols = []
    offset = 0
    for k in GROUPS:
        # Zipf-like frequencies in a random order: a few common categories, a long tail.
        p = rng.permutation(1.0 / np.arange(1, k + 1) ** 1.2)
        cols.append(offset + rng.choice(k, size=n, p=p / p.sum()))
        offset += k
    indices = np.sort(np.stack(cols, axis=1), axis=1).astype(np.int32).ravel()
    indptr = np.arange(0, len(GROUPS) * n + 1, len(GROUPS), dtype=np.int32)
    X = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, offset))
    w = rng.normal(size=offset)
    score = X @ w
    score -= np.quantile(score, 0.76)          # a9a: 24% positive
    y = np.where(score + noise * rng.logistic(size=n) > 0, 1.0, -1.0)
    return X, y


def _bench(Cs=(0.01, 0.1, 1, 10, 50), tol=1e-9):
    """The certify table of docs/benchmarks/linear.md: whole-call times of smooth_newton, dcd and LinearSVC on the
    a9a-like set (hinge, intercept regularized), each to tol, with the final relative duality gap
    (ours and dcd's own certificates) or, for LinearSVC (no dual returned), the relative distance
    (P - f*) / f* to the f* that smooth_newton certified."""
    import time
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    from solvers import Budget, Problem, fit
    from solvers.objectives import primal_objective

    X, y = a9a_like()
    small = Problem(X[:200], y[:200], C=1.0, intercept="regularized")
    for name in ("smooth_newton", "dcd"):   # compile / load the numba kernels outside the clocks
        fit(small, name, budget=Budget(max_iter=5))
    print("| C | smooth_newton | dcd (10^5 passes) | LinearSVC (max_iter 10^5) |")
    print("|---|---|---|---|")
    for C in Cs:
        p = Problem(X, y, C=C, loss="hinge", intercept="regularized")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t = time.perf_counter()
            ours = fit(p, "smooth_newton", budget=Budget(tol=tol, max_iter=1000))
            t_ours = time.perf_counter() - t
            t = time.perf_counter()
            dcd = fit(p, "dcd", budget=Budget(tol=tol, max_iter=100_000))
            t_dcd = time.perf_counter() - t
            t = time.perf_counter()
            ref = LinearSVC(C=C, loss="hinge", dual=True, tol=tol, max_iter=100_000, random_state=0).fit(X, y)
            t_ref = time.perf_counter() - t
        f_star = ours.primal if ours.status == "converged" else float("nan")
        P_ref = primal_objective(p, ref.coef_.ravel(), float(ref.intercept_[0]))
        print(f"| {C:g} | {t_ours:.2f} s, {ours.status}, {ours.n_iter} steps, gap {ours.gap / ours.primal:.1e} "
              f"| {t_dcd:.1f} s, {dcd.status}, {dcd.n_iter} passes, gap {dcd.gap / dcd.primal:.1e} "
              f"| {t_ref:.1f} s, {ref.n_iter_} iter., (P - f*)/f* {(P_ref - f_star) / f_star:.1e} |", flush=True)


if __name__ == "__main__":
    _bench()
