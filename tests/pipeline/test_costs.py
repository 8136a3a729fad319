"""What a run says before it costs anything (pipeline/engine/costs.py) and while it runs without a
terminal (pipeline/engine/progress.py): the cost estimate of its fits, timing fits and reference
solves from the cost history earlier runs left, the line that timing fits would cost more than the
sweep, and progress lines in a log that is not a terminal. Each test fails with its mechanism
taken away (the break is named in its docstring)."""
import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline.engine import costs
from pipeline.engine.progress import ProgressLines
from pipeline.experiment.config import compose
from pipeline.experiment.specs import ReferenceSpec
from pipeline.results.shards import Record
from pipeline.run import run

from .typed_specs import DATA, fit_spec

ROOT = Path(__file__).resolve().parents[2]
TINY = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80", "cv.folds=2", "run.progress=false",
        "cluster=sequential", "solvers=[dcd,liblinear]", "grid.C=[0.1,1]", "report.figures=false"]


def _estimate_line(lines: list[str]) -> str:
    return next(line.strip() for line in lines if line.strip().startswith("cost estimate:"))


def test_the_plan_says_what_the_run_will_cost_from_what_earlier_runs_measured(tmp_path):
    """A first run knows nothing ("unknown"); it leaves its seconds in the store's cost history, one
    entry per grid point named by its first fold's key, with the CPU seconds its records hold. A
    dry run with one more C value then estimates the fits of the first run's points from them
    (each point's own: given 1, 10 and 100 s a fit for the sweep's, the timing fits' and the
    references', it says 8, 80 and 400 s) and says the new point's fits are unknown. Break:
    `template_ids` naming a point by another row than its first fold's, or `record` not called
    after execute."""
    store = tmp_path / "store"
    first = []
    run(compose([f"store.root={store}", *TINY]), tmp_path / "a", echo=first.append)
    assert _estimate_line(first) == (f"cost estimate: 8 fits unknown; 8 timing fits unknown; 4 reference solves "
                                     f"unknown (from no earlier run of these fits; the history in {store / '.costs'} "
                                     f"fills as runs end)")
    assert any(line.startswith("timing fits: each within run.timing_budget_s=0.5 s") and
               "run.timing=false turns them off" in line for line in first)
    shards = pd.concat([pd.read_parquet(p) for p in glob.glob(str(tmp_path / "a" / "shards" / "*.parquet"))])
    phase = {k: ("references" if kind == "reference" else "timing" if isinstance(t, str) else "sweep")
             for k, kind, t in zip(shards["key"], shards["kind"], shards["spec.timing"])}
    fold0 = set(shards.loc[shards["spec.fold"].astype(str) == "0", "key"])      # spec fields are JSON text
    (history,) = (store / ".costs").glob("*.json")
    data = json.loads(history.read_text())
    # Its grid points: 4 of the sweep, 4 of the timing fits, and a reference per C, each with its 2 folds.
    assert set(data["points"]) <= fold0 and len(data["points"]) == 4 + 4 + 2
    cpu = shards.assign(phase=shards["key"].map(phase)).groupby("phase")["task_cpu_s"].sum()
    assert sum(s for _, s in data["points"].values()) == pytest.approx(cpu.sum(), rel=1e-9)
    assert all(n == 2 for n, _ in data["points"].values())
    per_fit = {"sweep": 1.0, "timing": 10.0, "references": 100.0}
    history.write_text(json.dumps({**data, "points": {tid: [n, n * per_fit[phase[tid]]]
                                                      for tid, (n, _) in data["points"].items()}}))
    again = []
    run(compose([f"store.root={store}", *TINY, "grid.C=[0.1,1,10]", "run.dry_run=true"]), tmp_path / "b",
        echo=again.append)
    assert _estimate_line(again) == (
        f"cost estimate: 12 fits about 8.0 CPU s for 8 of them, 4 unknown; 12 timing fits about 80.0 CPU s for 8 of "
        f"them, 4 unknown; 6 reference solves about 400.0 CPU s for 4 of them, 2 unknown (from earlier runs "
        f"({store / '.costs'}))")


def test_timing_fits_estimated_to_cost_more_than_the_sweep_are_said_to_before_any_fit(tmp_path):
    """The history says a timing fit costs 10 s and a sweep fit 1 s: one line says so, with the
    way to turn them off; the other way round, no such line. Break: the comparison in
    `costs.lines` (or the line left out): the first assertion fails."""
    store = tmp_path / "store"
    run(compose([f"store.root={store}", *TINY]), tmp_path / "a")
    (history,) = (store / ".costs").glob("*.json")
    data = json.loads(history.read_text())
    shards = pd.concat([pd.read_parquet(p) for p in glob.glob(str(tmp_path / "a" / "shards" / "*.parquet"))])
    timed_keys = set(shards.loc[shards["spec.timing"].notna(), "key"])

    def said(timing_s: float, sweep_s: float) -> list[str]:
        # A point's name is its first fold's key: a timing point is one whose first fold is timed.
        points = {tid: [n, n * (timing_s if tid in timed_keys else sweep_s)] for tid, (n, _) in data["points"].items()}
        history.write_text(json.dumps({**data, "points": points}))
        lines = []
        run(compose([f"store.root={store}", *TINY, "run.dry_run=true"]), tmp_path / "dry", echo=lines.append)
        return [line.strip() for line in lines if "cost more than the sweep" in line]

    assert said(10.0, 1.0) == ["timing fits are estimated to cost more than the sweep (80.0 against 8.0 CPU s): "
                               "run.timing=false turns them off (the report then compares the sweep's own fits, warm "
                               "with warm and cold with cold)"]
    assert said(1.0, 10.0) == []


def test_progress_lines_count_each_phase_with_a_rough_eta():
    """The line itself: fits done of planned per phase, elapsed, ETA from the pace so far."""
    lines = ProgressLines({"sweep": 90, "timing": 90, "references": 30}, print, 15.0)
    lines.t0 = 0.0
    reference = ReferenceSpec(DATA, 0, {"C": 1.0}, "dcd", "1", {}, key="ref-1")
    lines.take([Record({"key": "ref-1", "kind": "reference"}, reference)] * 30
               + [Record({"key": "fit-1", "kind": "fit"}, fit_spec("fit-1", timing={"method": "trace"}))] * 10
               + [Record({"key": "fit-2", "kind": "fit"}, fit_spec("fit-2"))] * 20)
    assert lines.line(now=30.0) == ("progress: sweep 20/90 fits, timing 10/90, references 30/30; 30 s elapsed, "
                                    "about 75 s left (rough: fits differ in cost)")


@pytest.mark.slow
def test_a_run_without_a_terminal_writes_progress_lines_to_its_log(tmp_path):
    """`python -m pipeline` with stderr to a file (not a terminal): progress lines in that file
    and in run.log, at the interval asked (run.progress_every_s). Break: `progress.wanted`
    false, or the lines' thread not started: no line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    err = tmp_path / "stderr.txt"
    args = [sys.executable, "-m", "pipeline", f"store.root={tmp_path / 'store'}", *TINY, "run.progress=true",
            "run.progress_every_s=0.05", "grid.C=[0.01,0.1,1,10]", f"hydra.run.dir={tmp_path / 'run'}"]
    with open(err, "w") as fh:
        proc = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=fh, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0
    pattern = re.compile(r"progress: sweep \d+/16 fits, timing \d+/16, references \d+/8; \d+ s elapsed, ")
    said = [line for line in err.read_text().splitlines() if pattern.search(line)]
    logged = [line for line in (tmp_path / "run" / "run.log").read_text().splitlines() if pattern.search(line)]
    assert said and len(logged) == len(said)
