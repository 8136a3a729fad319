"""Whole-call timing of dcd against LIBLINEAR (scikit-learn's LinearSVC), alternating in one
process, min of `repeats` (docs/benchmarks/). Not a test: speed is never asserted.

    SVMBENCH_STORE=... OPENBLAS_NUM_THREADS=1 python tests/solvers/bench_dcd.py [small|rcv1|full|all]

small: roethel_brynda's four datasets (banknote, heart as 13 codes, both standardised; MNIST
1 vs 7, 10,853 rows; toy blobs), squared hinge, intercept regularized, tol 1e-4, at most 1000
passes, C in {1, 10, 100}, dcd with and without shrinking (stop=pg). rcv1: an 80,000 x 47,236
rcv1_like CSR, C = 1, tol 0.1 (LIBLINEAR's defaults), hinge (-s 1... -s 3) and squared hinge.
full: the same at RCV1's size, the store's rcv1_full (conf/datasets/rcv1_full.yaml: 804,414 x
47,236, 61M nnz; built into the store if missing, about a minute), min of 2; not part of `all`.
Each timed call is the whole call a user waits for: ``solvers.fit(Problem(X, y, ...), "dcd")``,
``SVMClassifier(solver="dcd").fit(X, y)`` and ``LinearSVC(...).fit(X, y)``.
"""
import sys
import time
import warnings

import numpy as np


def _small_sets():
    from pipeline.data.datasets import ensure_dataset, get_builder
    from pipeline.data.store import default_store_root, read_dataset
    sets = {}
    root = default_store_root()
    for name, params in (("banknote", {}), ("cleveland_heart", {"categorical": "codes"})):
        # The entry with these parameters (heart's 13 codes have their own store name), built if missing.
        ds = read_dataset(root, ensure_dataset(root, name, params)["name"])
        X, y = ds.X, ds.y
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
        sets[name] = (np.ascontiguousarray(X), np.where(y == y.max(), 1.0, -1.0))
    ds = read_dataset(root, "mnist_1v7")
    rng = np.random.default_rng(0)
    keep = np.sort(rng.choice(ds.X.shape[0], 10853, replace=False))
    X = ds.X[keep]
    y = ds.y[keep]
    sets["mnist_1v7"] = (X, np.where(y == y.max(), 1.0, -1.0))
    X, y, _ = get_builder("toy_blobs")()
    sets["toy_blobs"] = (np.asarray(X.toarray() if hasattr(X, "toarray") else X), np.where(y == y.max(), 1.0, -1.0))
    return sets


def _time(fn, repeats):
    best = np.inf
    out = None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def bench(sets, Cs, loss, tol, max_iter, repeats, variants):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    from solvers import Budget, Problem, SVMClassifier, fit

    rows = []
    for name, (X, y) in sets.items():
        for C in Cs:
            def ours(shrinking):
                p = Problem(X, y, C=C, loss=loss, intercept="regularized")
                return fit(p, "dcd", budget=Budget(tol=tol, max_iter=max_iter), shrinking=shrinking)

            def est():
                return SVMClassifier(solver="dcd", C=C, loss=loss, intercept="regularized", tol=tol,
                                     max_iter=max_iter, random_state=0).fit(X, y)

            def ref():
                return LinearSVC(C=C, loss=loss, dual=True, tol=tol, max_iter=max_iter,
                                 random_state=0).fit(X, y)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                best = {}
                outs = {}
                calls = {"ref": ref, "est": est}
                for v in variants:
                    calls[f"fit_shr{int(v)}"] = (lambda v=v: ours(v))
                for k, f in calls.items():
                    f()  # one untimed call of each
                for _ in range(repeats):  # alternate: each round times every call once
                    for k, f in calls.items():
                        t, o = _time(f, 1)
                        best[k] = min(best.get(k, np.inf), t)
                        outs[k] = o
            r = outs["ref"]
            line = {"data": name, "C": C, "ref_s": best["ref"], "ref_iter": int(np.max(r.n_iter_))}
            for v in variants:
                o = outs[f"fit_shr{int(v)}"]
                line[f"shr{int(v)}_s"] = best[f"fit_shr{int(v)}"]
                line[f"shr{int(v)}_iter"] = o.n_iter
                line[f"shr{int(v)}_status"] = o.status
            line["est_s"] = best["est"]
            rows.append(line)
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in line.items()),
                  " ratios:", " ".join(f"{k[:-2]}={line[k] / line['ref_s']:.2f}" for k in line
                                       if k.endswith("_s") and k != "ref_s"), flush=True)
    return rows


def main(which="all", repeats=7):
    if which in ("small", "all"):
        sets = _small_sets()
        rows = bench(sets, (1.0, 10.0, 100.0), "squared_hinge", 1e-4, 1000, repeats, (True, False))
        for v in ("shr1", "shr0", "est"):
            r = np.array([row[f"{v}_s"] / row["ref_s"] for row in rows])
            print(f"{v}: median ratio {np.median(r):.2f}, range {r.min():.2f}-{r.max():.2f}, "
                  f"<= 1.0 in {int((r <= 1.0).sum())} of {r.size}")
    if which in ("rcv1", "all"):
        from pipeline.data.datasets import get_builder
        X, y, _ = get_builder("rcv1_like")(n_samples=80000, n_features=47236, mean_nnz=76.0, margin=0.5)
        y = np.where(y == y.max(), 1.0, -1.0)
        for loss in ("hinge", "squared_hinge"):
            bench({"rcv1_like_80k": (X, y)}, (1.0,), loss, 0.1, 1000, max(3, repeats // 2), (True,))
    if which == "full":
        X, y = _rcv1_full()
        for loss in ("hinge", "squared_hinge"):
            bench({"rcv1_full": (X, y)}, (1.0,), loss, 0.1, 1000, 2, (True,))


def _rcv1_full():
    from pathlib import Path

    from omegaconf import OmegaConf

    from pipeline.data.datasets import ensure_dataset
    from pipeline.data.store import default_store_root, read_dataset
    conf = OmegaConf.load(Path(__file__).parents[2] / "conf/datasets/rcv1_full.yaml")
    root = default_store_root()
    meta = ensure_dataset(root, conf.builder, OmegaConf.to_container(conf.params))
    ds = read_dataset(root, meta["name"])
    return ds.X, np.where(ds.y == ds.y.max(), 1.0, -1.0)


if __name__ == "__main__":
    main(*(sys.argv[1:2] or ["all"]))
