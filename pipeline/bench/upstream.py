"""Our solvers against upstream LIBLINEAR and LIBSVM, solver call against solver call, without the
pipeline around them (docs/benchmarks/linear.md, kernel.md).

  u  dcd against upstream LIBLINEAR: one solve at C = 1, eps 0.1, no bias, squared hinge (-s 1)
     and hinge (-s 3), on rcv1_like at 80k rows and at RCV1's size (804,414 rows,
     conf/datasets/rcv1_full.yaml; ``--full``), timed whole call against whole call in
     alternation in one process: ``solvers.fit(Problem(X, y, ...), "dcd")`` (checks, copies, the
     certificates) against `anchors.liblinear_train` on a prebuilt problem (which favours
     LIBLINEAR), with both primal objectives.
  libsvm  smo's whole call (`SVMClassifier(solver="smo").fit`) against LIBSVM's own `svm_train`
     (`anchors.libsvm_rbf`) on a problem built beforehand, on the same standardised MNIST rows
     (digits 0-4 against 5-9, stratified 5,000 and 20,000 rows: `--libsvm-rows`): rbf, gamma
     1 / 784, C in {1, 10}, eps 1e-3, 200 MB cache, shrinking on; in one process, the two
     alternating `--reps` times, the minimum of each kept.

Both need the `bench` extra (liblinear-official, libsvm-official).
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import solvers
from solvers import Budget, Problem, SVMClassifier

from ..data.datasets import ensure_dataset, get_builder
from ..data.store import default_store_root, read_dataset
from ..engine.materialise import materialise_datasets
from ..experiment.config import compose, validate
from . import anchors
from .harness import Options


def mnist_halves(n_rows: int, seed: int = 0):
    """(X dense, y in {-1, +1}) of n_rows MNIST images from the store, digits 0-4 against 5-9,
    stratified, standardised (a column that is constant in these rows stays 0)."""
    root = str(default_store_root())
    ds = read_dataset(root, ensure_dataset(root, "mnist", {})["name"])
    y = np.where(ds.y >= 5, 1.0, -1.0)
    rows, _ = train_test_split(np.arange(len(y)), train_size=n_rows, stratify=y, random_state=seed)
    rows = np.sort(rows)
    return StandardScaler().fit_transform(ds.X[rows].toarray()), y[rows]


def upstream_data(full: bool):
    """(X, y) of scenario u: rcv1_like at 80k rows (bench_linear's shape), or the store's rcv1_full
    (conf/datasets/rcv1_full.yaml, built into the store the first time)."""
    if not full:
        X, y, _ = get_builder("rcv1_like")(n_samples=80000, n_features=47236, mean_nnz=76.0, margin=0.5)
        return X, np.where(y == y.max(), 1.0, -1.0)
    exp = validate(compose(["datasets=[rcv1_full]"]))
    (meta, _), = materialise_datasets(exp).values()
    ds = read_dataset(exp.store_root, meta["name"])
    return ds.X, np.where(ds.y == ds.y.max(), 1.0, -1.0)


def scenario_u(opts: Options) -> list[dict]:
    """dcd against LIBLINEAR's train, whole call against whole call, alternating in one process.

    The primal objectives show that both stopped at the same point: the same projected-gradient
    rule at the same eps (solvers/dcd.py, ``stop="pg"``), on other pass orders."""
    rows = []
    for size in (["80k", "full"] if opts.full else ["80k"]):
        X, y = upstream_data(size == "full")
        prob = anchors.liblinear_problem(X, y)

        def primal(w, loss):
            xi = np.maximum(1.0 - y * (X @ w), 0.0)
            return 0.5 * float(w @ w) + float(xi.sum() if loss == "hinge" else xi @ xi)

        for loss in ("squared_hinge", "hinge"):
            solvers.fit(Problem(X[:1000], y[:1000], loss=loss), "dcd")      # compiled before the clock
            for r in range(opts.reps):
                ll = anchors.liblinear_train(prob, loss, C=1.0, eps=0.1)
                t0 = time.perf_counter()
                fit = solvers.fit(Problem(X, y, C=1.0, loss=loss, intercept="none"), "dcd",
                                  budget=Budget(tol=0.1, max_iter=1000))
                ours_s = time.perf_counter() - t0
                train_primal = primal(ll["w"], loss)
                rows.append({"scenario": "u", "data": size, "loss": loss, "rep": r, "load": os.getloadavg()[0],
                             "dcd_s": ours_s, "dcd_fit_s": fit.fit_time_s, "train_s": ll["seconds"],
                             "ratio": ours_s / ll["seconds"], "dcd_passes": fit.n_iter, "dcd_primal": fit.primal,
                             "train_primal": train_primal, "primal_rel_diff": fit.primal / train_primal - 1})
                print(rows[-1], flush=True)
    return rows


def scenario_libsvm(opts: Options, Cs=(1.0, 10.0)) -> list[dict]:
    """smo's whole estimator call against LIBSVM's svm_train, MNIST 0-4 vs 5-9, rbf, C = 1 and 10."""
    warnings.simplefilter("ignore")
    out = []
    for n in opts.libsvm_rows:
        X, y = mnist_halves(n)
        gamma = 1.0 / X.shape[1]
        prob = anchors.libsvm_problem(X, y)    # LIBSVM's own nodes, built outside the clock
        SVMClassifier(solver="smo", kernel="rbf", gamma=gamma).fit(X[:200], y[:200])  # numba loaded
        for C in Cs:
            ours, theirs = [], []
            for _ in range(opts.reps):
                load = os.getloadavg()[0]
                t = time.perf_counter()
                est = SVMClassifier(solver="smo", kernel="rbf", gamma=gamma, C=C, tol=1e-3,
                                    solver_params={"cache_size": 200.0, "shrinking": True}).fit(X, y)
                ours.append(time.perf_counter() - t)
                model = anchors.libsvm_rbf(prob, C, gamma, eps=1e-3, cache_mb=200.0)
                theirs.append(model["seconds"])
            out.append({"scenario": "libsvm", "rows": n, "C": C, "smo_s": min(ours), "svm_train_s": min(theirs),
                        "ratio": min(ours) / min(theirs), "smo_sv": int(len(est.support_)),
                        "libsvm_sv": model["n_sv"], "load": load})
            print(out[-1], flush=True)   # each case as it ends: the 20k cases take minutes
    return out
