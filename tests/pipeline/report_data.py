"""Hand-made results and traces for the report tests: small, with every column the registry's
items read, so each table and figure can be checked without running a solver."""
import json

import numpy as np
import pandas as pd

BASE = dict(dataset="toy", loss="hinge", intercept="regularized", kernel="linear", gamma=np.nan, degree=np.nan,
            coef0=np.nan, family="dual_cd", status="converged", error=None, n_train=100, n_test=50,
            primal_objective=10.0, dual_objective=10.0, duality_gap=1e-8, kkt_violation=1e-6,
            train_accuracy=0.9, f_star=10.0, f_star_gap=1e-9, rel_suboptimality=1e-6, task_time_s=0.1)


def rows(specs):
    """specs: dicts of column overrides, one per fit; keys and folds are filled in."""
    out = []
    for i, s in enumerate(specs):
        r = {**BASE, "key": f"k{i:03d}", "fold": 0, "seed": i, "solver_entry": "dcd", "solver": "dcd",
             "C": 1.0, "test_accuracy": 0.8, "fit_time_s": 0.01, "n_iter": 10, **s}
        out.append(r)
    return pd.DataFrame(out)


def folds(spec, n=3, **per_fold):
    """n fits of one configuration, fold 0..n-1 (per_fold: lists of per-fold values)."""
    return [{**spec, "fold": f, **{k: v[f] for k, v in per_fold.items()}} for f in range(n)]


def traces_for(results, n_points=6, decay=10.0, timed=False):
    """A geometric approach to f* for every finished fit: primal = f* (1 + 10^-k); each point
    a millisecond apart, or (timed) the fit's fit_time_s shared out over its points, so that a
    faster fit reaches each target sooner in proportion."""
    rows_ = []
    for r in results.itertuples(index=False):
        if r.status == "error":
            continue
        for k in range(1, n_points + 1):
            P = r.f_star * (1 + decay ** (-k))
            rows_.append({"key": r.key, "iteration": k, "time_s": r.fit_time_s * k / n_points if timed else 1e-3 * k,
                          "primal": P,
                          "dual": r.f_star, "gap": P - r.f_star, "test_error": 0.5 / k, "w_change": 1.0 / k})
    return pd.DataFrame(rows_, columns=["key", "iteration", "time_s", "primal", "dual", "gap", "test_error", "w_change"])


def default_run():
    """dcd and liblinear over a C path: only C is swept."""
    specs = []
    for entry, fam in (("dcd", "dual_cd"), ("liblinear", "reference")):
        for C, acc in ((0.1, 0.7), (1.0, 0.9), (10.0, 0.85)):
            specs += folds({"solver_entry": entry, "solver": entry, "family": fam, "C": C, "test_accuracy": acc})
    return rows(specs)


def confusion(n):
    return json.dumps(np.eye(3, dtype=int).tolist() if n else None)


def lambda_run(lams=(1e-3, 1e-2), n=4, sizes=(60, 61)):
    """pegasos given by lambda over n folds of two training sizes (C = 1/(lambda n_train) differs
    per fold, as tasks.py's `_problem` makes it), beside dcd given by C."""
    specs = []
    for lam, acc in zip(lams, (0.8, 0.85, 0.9)):
        sz = [sizes[f % len(sizes)] for f in range(n)]
        specs += folds({"solver_entry": "pegasos", "solver": "pegasos", "family": "primal", "status": "budget",
                        "param_lambda": lam, "param_lambda_convention": "pegasos", "test_accuracy": acc},
                       n, n_train=sz, C=[1.0 / (lam * s) for s in sz])
    for C in (0.1, 1.0):
        specs += folds({"C": C, "param_lambda": np.nan, "param_lambda_convention": None}, n)
    return rows(specs)
