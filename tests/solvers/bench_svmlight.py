"""svmlight at q in {10, 20, 40} and n_new in {q, q/2, q/5} (SVMlight's -n) against smo on 5,000
2-D blobs (docs/benchmarks/). Not a test: speed is never asserted.

    SVMBENCH_STORE=... OPENBLAS_NUM_THREADS=1 python tests/solvers/bench_svmlight.py [N] [REPS]

The `toy_blobs` points of `+experiment=bench_kernel` (N = 5000 by default, standardised), rbf and
poly (degree 3, coef0 = 1, gamma "scale"), C in {1, 10}, tol 1e-3 on m - M, both solvers at their
defaults otherwise (smo: WSS 2 and shrinking). The whole call as a user makes it,
`SVMClassifier(...).fit(X, y)`, with the runs alternating in one process (smo, then each (q, n),
REPS rounds, 3 by default) and the minimum per solver reported: under load only a ratio measured
this way means anything. Prints a Markdown table: smo's time and pair steps, svmlight's time and
subproblems per (q, n), and svmlight over smo at its best q with n = q/2 (the default) and at its
best (q, n).
"""
import sys
import time
import warnings

import numpy as np

QS = (10, 20, 40)
NEW = (1, 2, 5)  # n_new = q / NEW: every variable new each iteration (SVMlight before -n), the default, fewer
CASES = [(k, C) for k in ("rbf", "poly") for C in (1.0, 10.0)]


def blobs(n):
    from pipeline.data.datasets import get_builder
    X, y, _ = get_builder("toy_blobs")(n_samples=n)
    X = (X - X.mean(0)) / X.std(0)
    return np.ascontiguousarray(X), np.where(y == y.max(), 1, -1)


def main(n=5000, reps=3):
    from solvers import SVMClassifier
    warnings.simplefilter("ignore")
    X, y = blobs(n)
    runs = [("smo", {})] + [(f"svmlight q={q} n={q // d}", {"q": q, "n_new": q // d}) for q in QS for d in NEW]
    for name, sp in runs:  # compile outside the clock
        SVMClassifier(solver=name.split()[0], kernel="poly", coef0=1.0, solver_params=sp).fit(X[:60], y[:60])
    print(f"n = {n}, tol 1e-3, min of {reps} alternating whole calls (SVMClassifier.fit), seconds (iterations)\n")
    print("| kernel, C | smo | " + " | ".join(name.split(" ", 1)[1] for name, _ in runs[1:])
          + " | n = q/2: best q / smo | best (q, n) / smo |")
    print("|---|---|" + "---|" * (len(runs) + 1))
    for kernel, C in CASES:
        best = {name: np.inf for name, _ in runs}
        iters = {}
        for _ in range(reps):
            for name, sp in runs:
                est = SVMClassifier(solver=name.split()[0], kernel=kernel, C=C, coef0=1.0, tol=1e-3,
                                    solver_params=sp)
                t = time.perf_counter()
                est.fit(X, y)
                best[name] = min(best[name], time.perf_counter() - t)
                iters[name] = f"{est.n_iter_}" + ("" if est.status_ == "converged" else f" {est.status_}")
        half = min((best[f"svmlight q={q} n={q // 2}"], f"q={q}") for q in QS)
        top = min((best[name], name.split(" ", 1)[1]) for name, _ in runs[1:])
        print(f"| {kernel}, C={C:g} | " + " | ".join(f"{best[name]:.3f} ({iters[name]})" for name, _ in runs)
              + "".join(f" | {t / best['smo']:.2f} ({where})" for t, where in (half, top)) + " |", flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
