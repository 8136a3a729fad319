"""Whole-call timing of Pegasos against scikit-learn's SGDClassifier, alternating in one process,
min of `repeats` (docs/benchmarks/). Not a test: speed is never asserted.

    SVMBENCH_STORE=... OPENBLAS_NUM_THREADS=1 python tests/solvers/bench_pegasos.py [80k|full|all] [repeats]

repeats (default 7) for 80k; full runs half as many (at least 2).

80k: one epoch on an 80,000 x 47,236 rcv1_like CSR (6.2M nonzeros), lambda = 1e-4, k = 1, no
intercept: ``SVMClassifier(solver="pegasos", C=1/(lambda n), intercept="none",
solver_params={"epochs": 1}).fit(X, y)`` (n single-example steps) against
``SGDClassifier(loss="hinge", alpha=lambda, max_iter=1, tol=None, fit_intercept=False).fit(X, y)``
(one epoch: n single-example steps), the same work.

full: `rcv1_full` (rcv1_like at RCV1's size, 804,414 x 47,236, 61M nonzeros; built into the store
if missing, about 2 min and 0.7 GB). f* of the same problem (lambda = 1e-4, C = 1/(lambda n)) is
certified by dcd (duality gap printed); a traced Pegasos run (every due point, 20 per decade)
finds the first step count T at which (P - f*)/f* <= 1e-2; then the estimator's whole call with
``max_iter=T`` (the same steps: the epoch's draws come first, so T steps are their prefix), the
whole call for one epoch, 200 steps of k = 8000 (rupnik 4.3's setting) and SGDClassifier's one
epoch for scale are timed, alternating.
"""
import sys
import time
import warnings

import numpy as np

LAM = 1e-4
TARGET = 1e-2


def _alternate(calls, repeats):
    """Min over `repeats` rounds of each call's wall time, one untimed call of each first; each
    round times every call once, so ours and the reference share the machine's state. Also the
    min of each call's CPU time (process_time): every call here runs on one thread, so on a
    machine shared with other work it is the nearer estimate of the wall time alone."""
    outs = {k: f() for k, f in calls.items()}
    best = {k: (np.inf, np.inf) for k in calls}
    for _ in range(repeats):
        for k, f in calls.items():
            t, c = time.perf_counter(), time.process_time()
            outs[k] = f()
            t, c = time.perf_counter() - t, time.process_time() - c
            best[k] = (min(best[k][0], t), min(best[k][1], c))
    return best, outs


def _s(best, key):
    return f"{best[key][0]:.3f} s (CPU {best[key][1]:.3f} s)"


def _calls(X, y, T=None):
    from sklearn.linear_model import SGDClassifier

    from solvers import SVMClassifier

    n = X.shape[0]
    C = 1.0 / (LAM * n)

    def pegasos(max_iter=None, k=1):
        return lambda: SVMClassifier(solver="pegasos", C=C, intercept="none", max_iter=max_iter,
                                     solver_params={"k": k} if max_iter else {"epochs": 1}).fit(X, y)

    def sgd():
        return SGDClassifier(loss="hinge", alpha=LAM, max_iter=1, tol=None, fit_intercept=False,
                             random_state=0).fit(X, y)

    calls = {"pegasos_epoch": pegasos(), "sgd_epoch": sgd}
    if T is not None:
        calls["pegasos_T"] = pegasos(T)
        # rupnik 4.3's setting: 200 steps of k = 8000 (0.3% of f* in their run).
        calls["pegasos_k8000"] = pegasos(200, 8000)
    return calls


def bench_80k(repeats):
    from pipeline.data.datasets import get_builder
    import solvers
    from solvers import Problem

    X, y, _ = get_builder("rcv1_like")(n_samples=80000, n_features=47236, mean_nnz=76.0, margin=0.5)
    y = np.where(y == y.max(), 1.0, -1.0)
    best, outs = _alternate(_calls(X, y), repeats)
    # The solver's own seconds (steps only) beside the whole call: what the call adds.
    fit = solvers.fit(Problem(X, y, C=1.0 / (LAM * X.shape[0])), "pegasos", epochs=1)
    clf = outs["pegasos_epoch"]
    print(f"80k one epoch ({X.shape[0]} steps, {X.nnz} nnz): pegasos whole call {_s(best, 'pegasos_epoch')} "
          f"(solver's steps {fit.fit_time_s:.3f} s; trace points {len(clf.trace_)}: the final certificate), "
          f"SGDClassifier {_s(best, 'sgd_epoch')} ({int(outs['sgd_epoch'].t_ - 1)} steps): ratio "
          f"{best['pegasos_epoch'][0] / best['sgd_epoch'][0]:.2f} (CPU "
          f"{best['pegasos_epoch'][1] / best['sgd_epoch'][1]:.2f})", flush=True)


def _rcv1_full():
    from pipeline.data.cli import config_entry
    from pipeline.data.datasets import ensure_dataset
    from pipeline.data.store import default_store_root, read_dataset

    root = default_store_root()
    builder, params = config_entry("rcv1_full", {})
    ds = read_dataset(root, ensure_dataset(root, builder, params)["name"])
    return ds.X, np.where(ds.y == ds.y.max(), 1.0, -1.0)


def bench_full(repeats):
    import solvers
    from solvers import Budget, Problem, Recorder

    X, y = _rcv1_full()
    n = X.shape[0]
    problem = Problem(X, y, C=1.0 / (LAM * n))
    ref = solvers.fit(problem, "dcd", budget=Budget(tol=1e-3, max_iter=1000))
    fstar = ref.primal
    print(f"full RCV1-like {X.shape[0]} x {X.shape[1]}, {X.nnz} nnz; f* = {fstar:.10g} (dcd {ref.status}, "
          f"{ref.n_iter} passes, relative duality gap {ref.gap / ref.primal:.1e})", flush=True)
    traced = solvers.fit(problem, "pegasos", epochs=1, recorder=Recorder(per_decade=20, max_overhead=None))
    T = next(k for k, _, P, _, _ in traced.trace if (P - fstar) / fstar <= TARGET)
    best, outs = _alternate(_calls(X, y, T), repeats)
    for key, what in (("pegasos_T", f"{T} steps ({T / n:.2f} epoch)"), ("pegasos_epoch", "one epoch"),
                      ("pegasos_k8000", "200 steps of k = 8000 (1.99 epochs)")):
        gap = (outs[key].objective_ - fstar) / fstar
        print(f"pegasos {what} through SVMClassifier: whole call {_s(best, key)}, relative gap "
              f"{gap:.2e}, trace points {len(outs[key].trace_)}", flush=True)
    print(f"SGDClassifier one epoch, whole call: {_s(best, 'sgd_epoch')}", flush=True)


def main(which="all", repeats=7):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if which in ("80k", "all"):
            bench_80k(int(repeats))
        if which in ("full", "all"):
            bench_full(max(2, int(repeats) // 2))


if __name__ == "__main__":
    main(*sys.argv[1:3])
