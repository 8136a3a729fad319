"""smo's whole estimator call on dense and on CSR rows, for A/B timing against another checkout
(docs/benchmarks/kernel.md). Not a test: speed is never asserted.

    SVMBENCH_STORE=... OPENBLAS_NUM_THREADS=1 python tests/solvers/bench_smo_storage.py CASE [REPEATS] [LOG]

CASE: ``mnist<n>_c<C>`` (n MNIST rows, digits 0-4 against 5-9, stratified, standardised: dense,
rbf, gamma 1/784, as ``python -m pipeline.bench --only libsvm``), ``raw<n>_c<C>`` (the same rows
as stored, pixels / 255, as CSR: 19% nonzero; rbf, gamma "scale") or ``blobs_<kernel>_C<C>``
(5,000 standardised 2-D blobs, rbf or poly, gamma "scale", coef0 1, as tests/solvers/bench_smo.py).
The data are built before the clock starts and the numba cache is loaded by a fit of 200 rows;
then ``SVMClassifier(solver="smo", tol=1e-3, cache_size 200 MB).fit`` is timed REPEATS times
(default 3), wall and CPU seconds, and one JSON line is appended to LOG (default stdout) with
the pair updates, the support vectors and the load average. To compare two checkouts, run this
file alternately under each (``PYTHONPATH=<checkout>``, one virtualenv, both numba caches warm),
as many times as the load asks, the order flipped each pair, and take the ratios pair by pair:

    git worktree add --detach ../base <commit>
    for p in 1 2 3 4 5 6 7 8; do
        [ $((p % 2)) = 1 ] && order="$PWD ../base" || order="../base $PWD"
        for tree in $order; do
            PYTHONPATH=$tree python tests/solvers/bench_smo_storage.py blobs_rbf_C1 15 ab.$(basename $tree)
        done
    done
"""
import json
import os
import sys
import time
import warnings


def data(case):
    import numpy as np
    import scipy.sparse as sp
    if case.startswith(("mnist", "raw")):
        from pipeline.bench.upstream import mnist_halves
        n, C = case.removeprefix("mnist").removeprefix("raw").split("_c")
        if case.startswith("mnist"):
            X, y = mnist_halves(int(n))
            return X, y, dict(kernel="rbf", gamma=1.0 / 784, C=float(C))
        from sklearn.model_selection import train_test_split

        from pipeline.data.datasets import ensure_dataset
        from pipeline.data.store import default_store_root, read_dataset
        root = str(default_store_root())
        ds = read_dataset(root, ensure_dataset(root, "mnist", {})["name"])
        y = np.where(ds.y >= 5, 1.0, -1.0)
        rows, _ = train_test_split(np.arange(len(y)), train_size=int(n), stratify=y, random_state=0)
        rows = np.sort(rows)
        return sp.csr_matrix(ds.X[rows]), y[rows], dict(kernel="rbf", gamma="scale", C=float(C))
    from bench_smo import _blobs   # this file's folder is the script's path
    _, kernel, C = case.split("_")
    X, y = _blobs(5000)
    return X, y, dict(kernel=kernel, gamma="scale", coef0=1.0, C=float(C[1:]))


def main(case, repeats=3, log=None):
    from solvers import SVMClassifier
    warnings.simplefilter("ignore")
    X, y, kw = data(case)
    SVMClassifier(solver="smo", **kw).fit(X[:200], y[:200])   # numba's cache loaded outside the clock
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        est = SVMClassifier(solver="smo", tol=1e-3, solver_params={"cache_size": 200.0}, **kw).fit(X, y)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    line = json.dumps({"case": case, "fit_s": wall, "cpu_s": cpu, "n_iter": int(est.n_iter_.sum()),
                       "n_sv": int(len(est.support_)), "load": os.getloadavg()[0]})
    if log:
        with open(log, "a") as f:
            f.write(line + "\n")
    else:
        print(line)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]), *sys.argv[3:4])
