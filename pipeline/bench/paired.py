"""The solver scenarios paired against a base commit: each a whole call a user makes
(`SVMClassifier(...).fit`, `solvers.fit(Problem(...), ...)`), timed in processes of this
checkout and of the base (a git worktree of it, made for the run and removed after), the two
alternating, and a whole call that got more than `SLOWER` slower flagged.

    python -m pipeline.bench --only paired --against main [--full] [--reps 3] [--out paired.md]

--against takes a commit, branch or tag (a worktree of it is made, and removed after) or the
folder of another checkout.

Each measurement is a whole process: Python starts, imports `solvers` from its side's tree
(``PYTHONPATH``; ``python -P`` so that nothing else of this folder is on its path), loads the
case's data from a file written once before any clock (numpy and scipy only, so both sides read
the same bytes), calls the case once on a slice of the rows (numba's compiled kernels loaded or
compiled, outside the clock), then times the whole call `calls` times and prints the minimum of
its wall and CPU seconds. One untimed process per side comes first (a base checkout compiles its
kernels into its own numba cache there). The sides alternate, base first then this one, then the
other way round, so a drifting load weighs on both; the minimum over `reps` processes per side is
compared, and a case is flagged when both its wall and its CPU ratio exceed 1 + SLOWER (idle the two
agree on these one-thread calls; on a machine shared with other work the wall swings and the CPU
seconds hold). Rerun idle for a verdict.

The cases (`CASES`), at 80,000 rows of rcv1_like (RCV1's shape: 47,236 features, 76 nonzeros a
row) and, with ``--full``, at RCV1's size (the store's rcv1_full, 804,414 rows, 61M nonzeros):
one Pegasos epoch through the estimator, dcd on both losses through `solvers.fit` (scenario u's
call), and smo through the estimator on 5,000 standardised 2-D blobs (rbf and poly, C 1 and 10,
tests/solvers/bench_smo.py's cases).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# A whole call this much slower than the base's is flagged.
SLOWER = 0.10
# This checkout: the tree whose `solvers` the head side imports.
_ROOT = Path(__file__).resolve().parents[2]

# name: (data, call). The calls are the public API every commit of solvers has had.
CASES = {
    "pegasos_epoch_80k": ("rcv1_80k", "pegasos_epoch"),
    "dcd_squared_hinge_80k": ("rcv1_80k", "dcd_squared_hinge"),
    "dcd_hinge_80k": ("rcv1_80k", "dcd_hinge"),
    "smo_rbf_C1": ("blobs_5k", "smo_rbf_C1"),
    "smo_rbf_C10": ("blobs_5k", "smo_rbf_C10"),
    "smo_poly_C1": ("blobs_5k", "smo_poly_C1"),
    "smo_poly_C10": ("blobs_5k", "smo_poly_C10"),
}
FULL_CASES = {
    "pegasos_epoch_full": ("rcv1_full", "pegasos_epoch"),
    "dcd_squared_hinge_full": ("rcv1_full", "dcd_squared_hinge"),
    "dcd_hinge_full": ("rcv1_full", "dcd_hinge"),
}


# ---------------------------------------------------------------------- the worker (either side)
def _call(name: str, X, y):
    """The whole call of case `name` on (X, y): what a user's line runs."""
    import solvers
    from solvers import Budget, Problem, SVMClassifier

    if name == "pegasos_epoch":
        # lambda = 1e-4, k = 1, no intercept: tests/solvers/bench_pegasos.py's epoch.
        return lambda: SVMClassifier(solver="pegasos", C=1.0 / (1e-4 * X.shape[0]), intercept="none",
                                     solver_params={"epochs": 1}).fit(X, y)
    if name.startswith("dcd_"):
        loss = name[len("dcd_"):]
        # Scenario u's call: C = 1, LIBLINEAR's eps 0.1, no bias, at most 1000 passes.
        return lambda: solvers.fit(Problem(X, y, C=1.0, loss=loss, intercept="none"), "dcd",
                                   budget=Budget(tol=0.1, max_iter=1000))
    kernel, C = name.split("_")[1], float(name.split("_C")[1])
    return lambda: SVMClassifier(solver="smo", kernel=kernel, C=C, gamma="scale", coef0=1.0, tol=1e-3,
                                 solver_params={"cache_size": 200.0}).fit(X, y)


def worker(call: str, data_file: str, calls: int) -> dict:
    """In a side's process: the case's data read, the call made once on a slice (compiled
    kernels loaded), then `calls` whole calls timed; their minimum wall and CPU seconds."""
    import warnings

    import numpy as np
    import scipy.sparse as sp

    started = time.perf_counter()
    import solvers
    imported = time.perf_counter() - started
    with np.load(data_file) as z:
        X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])) if "indptr" in z \
            else z["X"]
        y = z["y"]
    warnings.simplefilter("ignore")
    head = min(X.shape[0], 2000)
    _call(call, X[:head], y[:head])()
    wall, cpu = [], []
    for _ in range(calls):
        t, c = time.perf_counter(), time.process_time()
        _call(call, X, y)()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {"wall_s": min(wall), "cpu_s": min(cpu), "import_s": imported, "solvers": solvers.__file__}


# ---------------------------------------------------------------------- the driver (this checkout)
def write_data(name: str, folder: Path) -> Path:
    """The case data `name` as a file both sides read alike (CSR arrays or a dense X, y in
    {-1, +1}), written once before any clock."""
    import numpy as np
    import scipy.sparse as sp

    path = folder / f"{name}.npz"
    if path.exists():
        return path
    if name == "rcv1_80k":
        from ..data.datasets import get_builder
        X, y, _ = get_builder("rcv1_like")(n_samples=80000, n_features=47236, mean_nnz=76.0, margin=0.5)
    elif name == "rcv1_full":
        # The store's rcv1_full, as scenario u reads it (built into the store the first time).
        from .upstream import upstream_data
        X, y = upstream_data(full=True)
    elif name == "blobs_5k":
        from sklearn.preprocessing import StandardScaler

        from ..data.datasets import get_builder
        X, y, _ = get_builder("toy_blobs")(n_samples=5000)
        X = StandardScaler().fit_transform(X)
    else:
        raise ValueError(f"no case data {name!r}")
    y = np.where(np.asarray(y) == np.max(y), 1.0, -1.0)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y)
    else:
        np.savez(path, X=np.ascontiguousarray(X, dtype=np.float64), y=y)
    return path


def _side(tree: Path, call: str, data: Path, calls: int) -> dict:
    """One whole process of a side: its wall beside the worker's own report."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1"}
    load = os.getloadavg()[0]
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-P", __file__, "worker", call, str(data), str(calls)], env=env, cwd=tree,
                         check=True, capture_output=True, text=True).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    if not rec["solvers"].startswith(str(tree)):
        raise RuntimeError(f"a process for {tree} imported solvers from {rec['solvers']}")
    return {**rec, "process_s": time.perf_counter() - t, "load": load}


def worktree(base: str, folder: Path) -> Path:
    """A git worktree of `base` (a commit, branch or tag) in `folder`, detached."""
    path = folder / "base"
    subprocess.run(["git", "-C", str(_ROOT), "worktree", "add", "--detach", str(path), base], check=True,
                   capture_output=True, text=True)
    return path


def _remove(tree: Path) -> None:
    subprocess.run(["git", "-C", str(_ROOT), "worktree", "remove", "--force", str(tree)], check=False,
                   capture_output=True)
    subprocess.run(["git", "-C", str(_ROOT), "worktree", "prune"], check=False, capture_output=True)


def compare(base: str, reps: int = 3, full: bool = False, calls: int = 3, cases: list[str] | None = None) -> list[dict]:
    """Each case in `reps` processes per side, alternating (module docstring): one row per case
    with both sides' minima, their ratios (this checkout over the base) and `slower`, whether the
    whole call got more than SLOWER slower (wall)."""
    head = _ROOT
    chosen = {**CASES, **(FULL_CASES if full else {})}
    chosen = {k: v for k, v in chosen.items() if cases is None or k in cases}
    rows = []
    with tempfile.TemporaryDirectory(prefix="svmbench-paired-") as tmp:
        tmp = Path(tmp)
        # A folder is a checkout already (another clone); anything else names a commit.
        made = not Path(base).is_dir()
        base_tree = worktree(base, tmp) if made else Path(base).resolve()
        try:
            commit = subprocess.run(["git", "-C", str(base_tree), "rev-parse", "--short", "HEAD"], check=False,
                                    capture_output=True, text=True).stdout.strip() or "not a git checkout"
            for case, (data_name, call) in chosen.items():
                data = write_data(data_name, tmp)
                for tree in (base_tree, head):       # untimed: each side's numba cache compiled or loaded
                    _side(tree, call, data, 1)
                runs = {"base": [], "head": []}
                for r in range(reps):
                    order = (("base", base_tree), ("head", head)) if r % 2 == 0 else (("head", head), ("base", base_tree))
                    for side, tree in order:
                        runs[side].append(_side(tree, call, data, calls))
                best = {side: {k: min(x[k] for x in rs) for k in ("wall_s", "cpu_s", "process_s")}
                        for side, rs in runs.items()}
                ratio = best["head"]["wall_s"] / best["base"]["wall_s"]
                cpu = best["head"]["cpu_s"] / best["base"]["cpu_s"]
                rows.append({"case": case, "base": f"{base} ({commit})",
                             "base_wall_s": best["base"]["wall_s"], "head_wall_s": best["head"]["wall_s"],
                             "ratio_wall": ratio, "ratio_cpu": cpu,
                             "base_cpu_s": best["base"]["cpu_s"], "head_cpu_s": best["head"]["cpu_s"],
                             "base_process_s": best["base"]["process_s"], "head_process_s": best["head"]["process_s"],
                             # Both clocks past the bound: idle they agree on these one-thread
                             # calls; under load the wall swings and the CPU seconds hold.
                             "slower": min(ratio, cpu) > 1.0 + SLOWER,
                             "load": max(x["load"] for rs in runs.values() for x in rs)})
                print(rows[-1], flush=True)
        finally:
            if made:
                _remove(base_tree)
    return rows


def scenario_paired(opts) -> list[dict]:
    """The solver scenarios' whole calls, here and in a base commit (--against): >10% slower flagged."""
    return compare(opts.against, reps=opts.reps, full=opts.full)


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "worker":
    print(json.dumps(worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))), flush=True)
