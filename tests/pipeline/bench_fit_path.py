"""Where a fit's time outside its solver goes (issue 10, point 7 (c)): scenario (c)'s fits of
`python -m pipeline.bench` (8 C x 250 random splits of 26,000 rcv1_like rows, dcd, squared
hinge, tol 0.1, cold starts) run in this one process through `tasks.run_task`, with a timer
around each piece of the fit path. Prints per fit the solver's time, the time outside it
(task_time_s - fit_time_s) and each piece's share of that, and a digest of every record
without its timings: the same digest before and after a change means bit-identical results
(status, iterations, objectives, gap, accuracies, n_sv, ...).

    SVMBENCH_STORE=... OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python tests/pipeline/bench_fit_path.py [--folds 250]

(PYTHONPATH names the code measured: another checkout's gives its digest and pieces; a piece it
does not have is skipped.) Timings are from one process at whatever load the machine has
(printed); the digest is exact. Not a test: speed is never asserted.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
from collections import Counter, defaultdict

import pandas as pd

import solvers.dcd as dcd
import solvers.problem as problem_module
import solvers.registry as registry
from pipeline.engine import tasks
from pipeline.bench.overhead import GRID_C, OVERRIDES_C
from pipeline.experiment.config import compose, store_root, validate
from pipeline.engine.cutting import make_units
from pipeline.experiment.plan import build_plan
from pipeline.report import markdown_table
from pipeline.run import materialise_datasets

DCD = "dcd: after its clock (certificate, Fit)"
WITHIN = "  of which dcd's closing"                                  # parts of DCD's time
# (piece, module, attribute): each timed where the fit path calls it; nested calls of the
# same piece are not counted twice.
PIECES = [
    ("dataset read (once per worker)", tasks, "load_dataset"),
    ("folds' split (once per worker)", tasks, "data_split"),
    ("fold rows copied (once per fold)", tasks._Rows, "take"),
    ("Problem: X and y checked", problem_module, "_checked_data"),
    ("Problem: settings of each C", tasks, "_problem"),
    (f"{WITHIN} KKT spread", dcd, "_pg_spread"),
    (f"{WITHIN} P (losses summed)", dcd, "primal_from_decision"),
    ("decision values (train reuses X w; test)", problem_module.Problem, "decision"),
    ("accuracies", tasks, "_accuracy"),
    ("info as JSON", tasks, "json_safe"),
    ("peak-RSS reads", tasks, "peak_rss_mb"),
    ("peak-RSS reset", tasks, "reset_peak_rss"),
]
TIMINGS = {"fit_time_s", "task_time_s", "task_cpu_s", "env_peak_rss_mb"}


def _timed(fn, label, seconds, calls, active):
    def timed(*args, **kwargs):
        if label in active:
            return fn(*args, **kwargs)
        active.add(label)
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[label] += time.perf_counter() - t0
            calls[label] += 1
            active.discard(label)
    return timed


def instrument(seconds: dict, calls: Counter) -> None:
    """Timers around each piece, and around dcd's whole driver: its time beyond its own clock
    (`fit_time_s`) is the closing certificate (X w, P, D, gap, KKT spread) and the Fit."""
    active: set = set()
    for label, owner, name in PIECES:
        if hasattr(owner, name):          # a piece the code under test does not have is skipped
            setattr(owner, name, _timed(getattr(owner, name), label, seconds, calls, active))
    spec = registry.get_solver("dcd")

    def fit_dcd(*args, **kwargs):
        t0 = time.perf_counter()
        fit = spec.fit(*args, **kwargs)
        seconds[DCD] += time.perf_counter() - t0 - fit.fit_time_s
        calls[DCD] += 1
        return fit
    registry._REGISTRY["dcd"] = dataclasses.replace(spec, fit=fit_dcd)


def digest(records: list[dict]) -> str:
    """sha256 of the records without their timings: equal digests, bit-identical results."""
    out = [{k: v for k, v in r.items() if k not in TIMINGS and not k.startswith("env_")} for r in records]
    return hashlib.sha256(json.dumps(out, sort_keys=True, default=repr).encode()).hexdigest()[:16]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=250, help="the first N of the 250 splits")
    args = ap.parse_args(argv)
    cfg = compose(["+experiment=bench_sweep", *OVERRIDES_C, GRID_C])
    exp = validate(cfg)
    plan = build_plan(exp, materialise_datasets(exp))
    units = [u for u in make_units(list(plan.fits.values())) if u[0]["fold"] < args.folds]
    tasks.warm(["dcd"])                   # as the sandbox's warm-up does, before any task
    seconds, calls = defaultdict(float), Counter()
    instrument(seconds, calls)
    load = os.getloadavg()[0]
    records = [r for u in units for r in tasks.run_task([u], store_root(cfg))]
    n = len(records)
    fit = sum(r["fit_time_s"] for r in records)
    outside = sum(r["task_time_s"] for r in records) - fit
    rest = outside - sum(s for k, s in seconds.items() if not k.startswith(WITHIN))
    # Largest first, each of dcd's parts under it.
    order = sorted((k for k in seconds if not k.startswith(WITHIN)), key=lambda k: -seconds[k])
    order = [j for k in order for j in [k, *([w for w in seconds if w.startswith(WITHIN)] if k == DCD else [])]]
    rows = [{"piece": k, "calls": calls[k], "ms per fit": 1e3 * seconds[k] / n, "share of outside": seconds[k] / outside}
            for k in order]
    rows.append({"piece": "the rest (record, registry, recorder, ...)", "calls": None,
                 "ms per fit": 1e3 * rest / n, "share of outside": rest / outside})
    print(markdown_table(pd.DataFrame(rows)))
    print(f"\n{n} fits: solver {1e3 * fit / n:.2f} ms per fit, outside it {1e3 * outside / n:.3f} ms "
          f"(sum(task_time_s - fit_time_s) / sum(fit_time_s) = {outside / fit:.4f}); load average "
          f"{load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; outcomes digest {digest(records)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
