"""smo against LIBSVM (scikit-learn's SVC) on 5,000 standardised 2-D blobs, as a user calls them
(docs/benchmarks/). Not a test: speed is never asserted.

    SVMBENCH_STORE=... OPENBLAS_NUM_THREADS=1 python tests/solvers/bench_smo.py [n] [repeats]

rbf and poly (gamma "scale", degree 3, coef0 1), C in {1, 10}, tol 1e-3, cache 200 MB: the grid of
`+experiment=bench_kernel`. Each case alternates `SVMClassifier(solver="smo").fit` and `SVC.fit`
in this one process `repeats` times (default 5) and keeps the minimum of each whole call, so the
ratio is robust to the load of a shared machine. Prints a Markdown table with the ratio and the
counts that explain it: pair updates (SVC's n_iter_ counts the same), support vectors, kernel
values computed, entries scanned (the active set's size summed over the pair updates: the work of
selection and gradient update) and reconstructions of the gradient.
"""
import sys
import time
import warnings

import numpy as np

CASES = [("rbf", 1.0), ("rbf", 10.0), ("poly", 1.0), ("poly", 10.0)]


def _blobs(n):
    """`toy_blobs` scaled as the pipeline's `scale: standard` does (the same bits, hence the same
    iteration counts as bench_kernel's rows)."""
    from sklearn.preprocessing import StandardScaler
    from pipeline.data.datasets import get_builder
    X, y, _ = get_builder("toy_blobs")(n_samples=n)
    return StandardScaler().fit_transform(X), np.where(y == y.max(), 1.0, -1.0)


def _timed(make, X, y):
    t = time.perf_counter()
    est = make().fit(X, y)
    return time.perf_counter() - t, est


def main(n=5000, repeats=5):
    from sklearn.svm import SVC
    from solvers import Budget, Problem, SVMClassifier, fit
    warnings.simplefilter("ignore")
    X, y = _blobs(n)
    kw = dict(gamma="scale", coef0=1.0, tol=1e-3)
    kw_problem = dict(gamma="scale", coef0=1.0)
    SVMClassifier(solver="smo", kernel="poly", **kw).fit(X[:100], y[:100])  # compile outside the clock
    print(f"n = {n}, min of {repeats} alternating whole calls")
    print("| case | smo s | SVC s | ratio | smo pairs | SVC pairs | smo SVs | SVC SVs | kernel values | entries scanned | reconstructions |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for kernel, C in CASES:
        ours, theirs = [], []
        for _ in range(repeats):
            t, smo = _timed(lambda: SVMClassifier(solver="smo", kernel=kernel, C=C,
                                                  solver_params={"cache_size": 200.0}, **kw), X, y)
            ours.append(t)
            t, svc = _timed(lambda: SVC(kernel=kernel, C=C, cache_size=200, **kw), X, y)
            theirs.append(t)
        # the counts from one more solve of the same problem (the estimator keeps no solver info)
        info = fit(Problem.build(X, y, C=C, intercept="free", kernel=kernel, **kw_problem), "smo",
                   budget=Budget(tol=1e-3), cache_size=200.0).info
        print(f"| {kernel} C={C:g} | {min(ours):.3f} | {min(theirs):.3f} | **{min(ours) / min(theirs):.2f}** "
              f"| {smo.n_iter_} | {int(np.ravel(svc.n_iter_)[0])} | {smo.support_.size} | {svc.support_.size} "
              f"| {info['kernel_evaluations'] / 1e6:.1f}M | {info['n_scanned'] / 1e6:.1f}M | {info['n_reconstruct']} |", flush=True)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*args)
