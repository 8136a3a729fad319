"""A kernel C path (issue 30, scenario f): the fits of one (fold, gamma) share smo's kernel cache
and are seeded from each other (tasks.run_path hands them one KernelPath); each fails a count when
its mechanism is taken away, and every point still reaches its certified optimum."""

from pipeline.experiment.config import compose
from pipeline.run import run

C_PATH = [0.3, 3.0, 30.0]
SWEEP = ["datasets=[toy_blobs]", "datasets.toy_blobs.params.n_samples=400", "datasets.toy_blobs.scale=standard",
         "cv.folds=2", "solvers=[smo]", "solvers.smo.params.tol=1e-6", f"solvers.smo.grid.C={C_PATH}",
         "+solvers.smo.grid.gamma=[2.0]", "cluster=sequential", "run.progress=false", "run.reference=false"]


def test_kernel_paths_share_the_cache_and_reach_the_certified_optima(tmp_path):
    w = run(compose([f"store.root={tmp_path / 'store'}", *SWEEP]), tmp_path / "run")["results"]
    assert len(w) == 2 * len(C_PATH) and (w["status"] == "converged").all()
    # certified: m - M below tol, primal and dual meet
    assert (w["kkt_violation"] <= 1e-6).all() and (abs(w["duality_gap"]) <= 1e-4 * abs(w["primal_objective"])).all()
    first = w["C"] == min(C_PATH)
    # Every point after the first of its (fold, gamma) path started from the one before it ...
    assert w.loc[~first, "warm_from"].notna().all() and w.loc[first, "warm_from"].isna().all()
    # ... and found most of its columns in the cache the points before it filled (the kernel does
    # not depend on C). Counted: the later points computed 3,400 entries against the first
    # point's 21,200 (a fold's path); a fit given a cache of its own (tasks.run_path without its
    # KernelPath) computes about as much as the first point again (its support vectors' columns).
    for _, p in w.groupby("fold"):
        e = p.sort_values("C")["info_kernel_evaluations"].tolist()
        assert sum(e[1:]) < 0.2 * e[0] * (len(e) - 1), e
    assert (w.loc[~first, "info_seeded"] == "path").all()
