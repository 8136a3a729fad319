"""The searches against a grid and their references (docs/benchmarks/search.md).

  cs  the certified C search (conf/experiment/bench_search_linear.yaml: scenario e's sparse text,
     C in [1e-3, 1e3], epsilon 0.5 points of CV error) against a dense 200-point grid over the same
     range (the same command with search=grid: the check of the chosen C) and LIBLINEAR's own
     ``train -C -v 5 -s 2 -c 0.001`` (`anchors.liblinear_search`: its C search from 0.001 up, to
     its own cap of 1024), whole command against whole command (LIBLINEAR: its train call on a
     prebuilt problem); the fits and passes each spent, and the search's guarantee reached or not.
  ps  LIBLINEAR's C search, ours (conf/experiment/bench_search_path.yaml: search=path, scenario
     e's sparse text, dcd on the squared hinge, 5 folds, each fold's path a Dask task) against
     LIBLINEAR's own ``train -s 2 -C -v 5`` (`anchors.liblinear_search`: its own start, folds and
     stopping rule) on the same rows, whole command against its train call; the C values each
     walked, the best C and CV accuracy each chose; and the same on a dense shape, 20,000 x 300
     rows of make_classification (`dense_file`).
  ho  the held-out certified C search (conf/experiment/bench_search_heldout.yaml: scenario e's
     sparse text, C in [1e-3, 1e3], epsilon one point of the first fold's validation error)
     against LIBLINEAR's own ``train -s 2 -C -v 5`` on the same rows: the fits it took (goal: <=
     250) and whether it certified, whole command against LIBLINEAR's train call (goal: <= 1x).
  cf  the certified search on a new user's small file (`dense_file(4000, 60)`, 20 rounds, the
     search's defaults otherwise): the whole command against its execute phase (goal: <= 1.5x)
     and the driver's seconds between rounds ("around execute" of the timing line) against the
     execute phase (goal: <= 0.1x).
  hs  successive halving over scenario f's kernel grid (conf/experiment/bench_search_kernel.yaml:
     factor 3, each rung on a share of the training rows) against the full grid
     (bench_kernel_grid) and HalvingGridSearchCV(StandardScaler + SVC, factor=3, n_jobs=2) on
     the same rows, folds, grid, tol and cache size (`anchors.halving_kernel`, its fit call); the
     chosen (C, gamma)'s CV error against the full grid's best and its standard error over the folds.
"""
from __future__ import annotations

import math
import resource
from pathlib import Path

import numpy as np
import pandas as pd

from ..results.searches import read_state
from . import anchors
from .harness import Options, prebuild, run_ours
from .kernel import KERNEL_GRID

SEARCH_LINEAR = "bench_search_linear"
SEARCH_PATH = "bench_search_path"
SEARCH_HELDOUT = "bench_search_heldout"
SEARCH_KERNEL = "bench_search_kernel"
DENSE_GRID = ["search=grid", "solvers.dcd.grid.C='geomspace(0.001, 1000, 200)'"]


def _search_outcome(run_dir: Path) -> dict:
    """What a search's search.json says of its (one) search, and the fits' passes and CV errors."""
    res = pd.read_parquet(run_dir / "results.parquet")
    cv = 1.0 - res.groupby("C")["test_accuracy"].mean()
    out = {"fits": len(res), "passes": int(res["n_iter"].sum()), "best_C": float(cv.idxmin()),
           "best_cv_error": float(cv.min()), "cv": cv}
    state = read_state(run_dir)
    if state:
        s = state["searches"][0]
        out.update(rounds=len(s.get("rounds") or s.get("rungs") or []), certified=s.get("certified"),
                   bound_min=s.get("bound_min"), reason=s.get("reason"))
    return out


def scenario_cs(opts: Options) -> list[dict]:
    """The certified C search against a dense 200-point grid and LIBLINEAR's `train -C` search."""
    prebuild(SEARCH_LINEAR)
    rows = []
    for r in range(opts.reps):
        ours = run_ours([], opts.work, f"cs{r}", experiment=SEARCH_LINEAR)
        mine = _search_outcome(opts.work / f"cs{r}")
        dense = run_ours(DENSE_GRID, opts.work, f"cs-dense{r}", experiment=SEARCH_LINEAR)
        grid = _search_outcome(opts.work / f"cs-dense{r}")
        ll = anchors.run("liblinear_search", experiment=SEARCH_LINEAR, start_C=0.001)
        # The search's chosen C scored on the dense grid's fits: the grid C nearest it.
        nearest = grid["cv"].index[np.argmin(np.abs(np.log(grid["cv"].index / mine["best_C"])))]
        rows.append({"scenario": "cs", "rep": r, "load": ours["load"], "ours_wall_s": ours["wall_s"],
                     "ours_execute_s": ours["execute_s"], "ours_fits": mine["fits"], "ours_passes": mine["passes"],
                     "ours_rounds": mine.get("rounds"), "certified": mine.get("certified"),
                     "ours_best_C": mine["best_C"], "ours_best_cv_error": mine["best_cv_error"],
                     "bound_min": mine.get("bound_min"),
                     "dense_wall_s": dense["wall_s"], "dense_fits": grid["fits"], "dense_passes": grid["passes"],
                     "dense_best_C": grid["best_C"], "dense_best_cv_error": grid["best_cv_error"],
                     "dense_cv_error_at_ours": float(grid["cv"][nearest]),
                     "liblinear_s": ll["fit_s"], "liblinear_fits": 5 * ll["c_values"], "liblinear_best_C": ll["best_C"],
                     "liblinear_cv_error": 1.0 - ll["cv_accuracy"],
                     "ratio_vs_dense": ours["wall_s"] / dense["wall_s"], "ratio_vs_liblinear": ours["wall_s"] / ll["fit_s"],
                     "within_epsilon": mine["best_cv_error"] - grid["best_cv_error"] <= 0.005,
                     "reason": mine.get("reason")})
        print(rows[-1], flush=True)
    return rows


def dense_file(n_rows: int = 20_000, n_features: int = 300) -> list[str]:
    """A dense user file of make_classification rows (at most 30 informative features, 1% of the
    labels flipped), ingested into the store once as ``dense_<n>x<d>``; the overrides that select it in
    place of the experiment's own dataset (which its body sets: removed by name)."""
    import tempfile
    from sklearn.datasets import make_classification
    from ..data.datasets import ingest_file
    from ..data.store import default_store_root, exists
    name = f"dense_{n_rows}x{n_features}"
    root = default_store_root()
    if not exists(root, name):
        X, y = make_classification(n_rows, n_features, n_informative=min(30, n_features // 2), random_state=0)
        with tempfile.TemporaryDirectory() as tmp:
            table = pd.DataFrame(X, columns=[f"x{j}" for j in range(n_features)]).assign(y=np.where(y > 0, 1, -1))
            table.to_parquet(Path(tmp) / f"{name}.parquet")
            ingest_file(root, Path(tmp) / f"{name}.parquet", name, label="y")
    return [f"datasets=[{name}]", f"+datasets.{name}={{builder: {name}}}", "~datasets.rcv1_like"]


def scenario_ps(opts: Options) -> list[dict]:
    """LIBLINEAR's C search, ours (search=path) against LIBLINEAR's own `train -s 2 -C -v 5`."""
    prebuild(SEARCH_PATH)
    shapes = {"rcv1_like 100k": [], "dense 20k x 300": dense_file()}
    rows = []
    for r in range(opts.reps):
        for shape, overrides in shapes.items():
            tag = f"ps{r}-{shape.split()[0]}"
            ours = run_ours(overrides, opts.work, tag, experiment=SEARCH_PATH)
            state = read_state(opts.work / tag)["searches"][0]
            # The anchor reads the rows through a plan: a start given, so that the plan has a spec.
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            ll = anchors.run("liblinear_search", overrides=[*overrides, "search.C_start=1"], experiment=SEARCH_PATH)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)     # the anchor's process alone, reaped
            ll_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            doublings = abs(math.log2(state["best_C"] / ll["best_C"]))
            points = abs(state["cv_accuracy"] - ll["cv_accuracy"]) * 100
            rows.append({"scenario": "ps", "rep": r, "shape": shape, "load": ours["load"],
                         "ours_wall_s": ours["wall_s"], "ours_execute_s": ours["execute_s"],
                         "ours_cpu_s": ours["cpu_client_s"] + ours["cpu_worker_s"] + ours["cpu_task_s"],
                         "ours_fits": ours["fits"], "ours_C_values": len(state["walked"]),
                         "ours_first_last_C": f"{state['walked'][0]:.4g}..{state['walked'][-1]:.4g}",
                         "ours_best_C": state["best_C"], "ours_cv_accuracy": state["cv_accuracy"],
                         "bound_min": state.get("bound_min"),
                         "liblinear_s": ll["fit_s"], "liblinear_process_cpu_s": ll_cpu,
                         "liblinear_C_values": ll["c_values"],
                         "liblinear_best_C": ll["best_C"], "liblinear_cv_accuracy": ll["cv_accuracy"],
                         "ratio_vs_liblinear": ours["wall_s"] / ll["fit_s"],
                         "same_pick": doublings == 0 or (doublings <= 1 and points <= 0.1)})
            print(rows[-1], flush=True)
    return rows


def scenario_ho(opts: Options) -> list[dict]:
    """The held-out certified C search against LIBLINEAR's own `train -s 2 -C -v 5`."""
    prebuild(SEARCH_HELDOUT)
    rows = []
    for r in range(opts.reps):
        ours = run_ours([], opts.work, f"ho{r}", experiment=SEARCH_HELDOUT)
        state = read_state(opts.work / f"ho{r}")["searches"][0]
        res = pd.read_parquet(opts.work / f"ho{r}" / "results.parquet")
        on_fold = res[res["fold"] == 0]
        ll = anchors.run("liblinear_search", experiment=SEARCH_HELDOUT)
        rows.append({"scenario": "ho", "rep": r, "load": ours["load"], "ours_wall_s": ours["wall_s"],
                     "ours_execute_s": ours["timing"].get("execute"), "rounds": len(state["rounds"]),
                     "fits_on_fold": len(on_fold), "passes_on_fold": int(on_fold["n_iter"].sum()),
                     "fits": len(res), "certified": state.get("certified"), "best_C": state.get("best_C"),
                     "best_error": state.get("best_error"), "bound_min": state.get("bound_min"),
                     "cv_error_at_best": state.get("cv_error_at_best"),
                     "liblinear_s": ll["fit_s"], "liblinear_best_C": ll["best_C"],
                     "liblinear_cv_error": 1.0 - ll["cv_accuracy"],
                     "ratio_vs_liblinear": ours["wall_s"] / ll["fit_s"], "reason": state.get("reason")})
        print(rows[-1], flush=True)
    return rows


def scenario_cf(opts: Options) -> list[dict]:
    """The certified search on a small dense file: the whole command and the driver's seconds
    between rounds, each against the execute phase."""
    small = [*dense_file(4_000, 60), "search.max_rounds=20"]
    rows = []
    for r in range(opts.reps):
        ours = run_ours(small, opts.work, f"cf{r}", experiment=SEARCH_LINEAR)
        state = read_state(opts.work / f"cf{r}")["searches"][0]
        t = ours["timing"]
        rows.append({"scenario": "cf", "rep": r, "load": ours["load"], "ours_wall_s": ours["wall_s"],
                     **{f"{k.replace(' ', '_').replace('-', '_')}_s": v for k, v in t.items()},
                     "rounds": len(state["rounds"]), "fits": ours["fits"], "certified": state.get("certified"),
                     "wall_over_execute": ours["wall_s"] / t["execute"],
                     "around_over_execute": t.get("around execute", 0.0) / t["execute"]})
        print(rows[-1], flush=True)
    return rows


def scenario_hs(opts: Options) -> list[dict]:
    """Successive halving over the kernel grid against the full grid and HalvingGridSearchCV."""
    extra = list(opts.extra)
    prebuild(KERNEL_GRID, extra)
    rows = []
    for r in range(opts.reps):
        ours = run_ours(extra, opts.work, f"hs{r}", experiment=SEARCH_KERNEL)
        state = read_state(opts.work / f"hs{r}")["searches"][0]
        res = pd.read_parquet(opts.work / f"hs{r}" / "results.parquet")
        full = run_ours(extra, opts.work, f"hs-full{r}", experiment=KERNEL_GRID)
        grid = pd.read_parquet(opts.work / f"hs-full{r}" / "results.parquet")
        err = (1.0 - grid.set_index(["C", "gamma"])["test_accuracy"]).groupby(level=[0, 1])
        mean, se = err.mean(), err.std() / np.sqrt(err.size())
        best = tuple(float(x) for x in mean.idxmin())
        pick = (float(state["best"]["point"]["C"]), float(state["best"]["point"]["gamma"]))
        hgs = anchors.run("halving_kernel", overrides=extra, experiment=KERNEL_GRID)
        rows.append({"scenario": "hs", "rep": r, "load": ours["load"], "ours_wall_s": ours["wall_s"],
                     "ours_execute_s": ours["execute_s"], "ours_fits": len(res), "ours_passes": int(res["n_iter"].sum()),
                     "ours_rungs": " -> ".join(f"{x['n_candidates']}@{x['resource']:.3g}" for x in state["rungs"]),
                     "ours_pick": str(pick), "ours_pick_full_grid_cv_error": float(mean[pick]),
                     "full_wall_s": full["wall_s"], "full_fits": len(grid), "full_passes": int(grid["n_iter"].sum()),
                     "full_best": str(best), "full_best_cv_error": float(mean[best]), "full_best_se": float(se[best]),
                     "within_one_se": float(mean[pick]) <= float(mean[best] + se[best]),
                     "hgs_fit_s": hgs["fit_s"], "hgs_fits": hgs["fits"],
                     "hgs_rungs": " -> ".join(f"{n}@{m}" for n, m in zip(hgs["n_candidates"], hgs["n_resources"])),
                     "hgs_pick": str((hgs["best_C"], hgs["best_gamma"])),
                     "hgs_pick_full_grid_cv_error": float(mean.get((hgs["best_C"], hgs["best_gamma"]), np.nan)),
                     "ratio_vs_full": ours["wall_s"] / full["wall_s"], "ratio_vs_hgs": ours["wall_s"] / hgs["fit_s"]})
        print(rows[-1], flush=True)
    return rows
