"""What a run will cost, said before any fit: its fits, timing fits and reference solves, each
with an estimate of CPU seconds from what earlier runs measured of the same fits.

**What is known.** Every record carries the CPU seconds of its task (`task_cpu_s`, tasks.py:
the thread's CPU time, so a busy machine's waits are not in it). After execute, a run adds what
it measured to a small *cost history* per dataset (`record`), keyed by grid point: the specs
of one grid point differ only in their fold, so a point is named by the key of its first fold
(`template_ids`), which every run that plans the same point (same data settings, solver, version,
parameters, budget, trace, timing) makes again. The estimate of a planned point is its fits to
run times its last measured seconds per fit; what the run dir's own shards hold (a resumed run)
comes first. A point never measured is *unknown*, and the line says how many fits are.

**Where it is kept.** Beside the dataset's store entry for a local store
(`<store root>/.costs/<fingerprint>.json`: a dot folder, which the store's listing skips), so
that every run on that store, any user's, feeds it; in the user cache
(`~/.cache/svmbench/costs/`) for a store on an object store, which a run may not write beside.
At most `MAX_POINTS` points a dataset, the oldest dropped first. The seconds are the machine's
that measured them: an estimate, not a bound.

The one bound known before any measurement is the timing budget: a traced timing fit stops at
`run.timing_budget_s` of CPU, and a ladder runs no rung past it (each rung at most B).
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.cache import user_cache_dir
from ..data.store_fs import is_remote
from ..results.shards import read_columns
from ..results.tables import shard_files
from .progress import PHASES

# Points kept per dataset in the history (a sweep of more keeps its latest).
MAX_POINTS = 20_000
HISTORY_VERSION = 1


def history_dir(store_root: str) -> Path:
    """Where the cost history of a store's datasets is kept (module docstring)."""
    if is_remote(store_root):
        return user_cache_dir() / "costs"
    root = os.fspath(store_root)
    return Path(root.removeprefix("file://")) / ".costs"


def template_ids(specs) -> tuple[list[str], np.ndarray]:
    """(each template's id: the key of its first row, the template index of each row) of a plan's
    `Specs`: the name of a grid point in every run that plans it."""
    template = np.asarray(specs._template, dtype=np.int64)
    ids = [""] * len(specs._templates)
    if len(template):
        first = np.unique(template, return_index=True)
        for t, row in zip(first[0].tolist(), first[1].tolist()):
            ids[t] = specs._key(specs._digest[row])
    return ids, template


def _phase(template: dict) -> str:
    return "references" if template.get("kind") == "reference" else ("timing" if "timing" in template else "sweep")


def _history_file(folder: Path, fingerprint: str) -> Path:
    return folder / f"{fingerprint[:24]}.json"


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data.get("points", {}) if isinstance(data, dict) and data.get("version") == HISTORY_VERSION else {}


def measured(run_dir: Path, plan) -> dict:
    """Template id -> [fits, CPU seconds] of the plan's records in the run dir's shards (their
    newest record of each key, errors left out)."""
    out: dict = {}
    files = shard_files(run_dir) if run_dir is not None else []
    if not files:
        return out
    keys, status, cpu = [], [], []
    for path in files:          # in the order written: a key's last record is its newest
        got = read_columns(path, ("status", "task_cpu_s"))
        n = len(got["key"])
        keys += got["key"]
        status += got.get("status", [None] * n)
        cpu += got.get("task_cpu_s", [None] * n)
    frame = pd.DataFrame({"key": keys, "status": status, "cpu": pd.to_numeric(pd.Series(cpu), errors="coerce")})
    frame = frame.drop_duplicates("key", keep="last")
    frame = frame[(frame["status"] != "error") & frame["cpu"].notna()]
    keys, seconds = frame["key"].tolist(), frame["cpu"].to_numpy(dtype=float)
    for specs in (plan.fits, plan.references):
        ids, template = template_ids(specs)
        rows = specs.rows(keys)
        mine = rows >= 0
        if not mine.any():
            continue
        t = template[rows[mine]]
        n = np.bincount(t, minlength=len(ids))
        s = np.bincount(t, weights=seconds[mine], minlength=len(ids))
        for i in np.flatnonzero(n).tolist():
            out[ids[i]] = [int(n[i]), float(s[i])]
    return out


def record(run_dir: Path, plan, store_root: str) -> None:
    """Add what this run measured to its datasets' cost histories (best effort: a history that
    cannot be written is left as it was)."""
    got = measured(run_dir, plan)
    if not got:
        return
    by_dataset: dict = {}
    for specs in (plan.fits, plan.references):
        ids, _ = template_ids(specs)
        for i, t in enumerate(specs._templates):
            if ids[i] in got:
                by_dataset.setdefault(t["data"]["fingerprint"], {})[ids[i]] = got[ids[i]]
    folder = history_dir(store_root)
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        for fingerprint, points in by_dataset.items():
            path = _history_file(folder, fingerprint)
            kept = _load(path)
            for tid, value in points.items():     # the latest measure of a point is kept, moved last
                kept.pop(tid, None)
                kept[tid] = value
            kept = dict(list(kept.items())[-MAX_POINTS:])
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                json.dump({"version": HISTORY_VERSION, "updated": time.strftime("%Y-%m-%d %H:%M:%S"),
                           "points": kept}, fh)
            os.replace(tmp, path)


def estimate(plan, done_keys, run_dir: Path | None, store_root: str) -> dict:
    """Per phase (sweep, timing, references): {fits, known, seconds} of the specs to run (the
    plan's but `done_keys`), and `basis`, what the known seconds come from."""
    here = measured(run_dir, plan) if run_dir is not None else {}
    folder = history_dir(store_root)
    histories: dict = {}
    out = {p: {"fits": 0, "known": 0, "seconds": 0.0} for p in PHASES}
    sources = set()
    for specs in (plan.fits, plan.references):
        ids, template = template_ids(specs)
        counts = np.bincount(template, minlength=len(ids))
        if done_keys:
            rows = specs.rows(list(done_keys))
            counts = counts - np.bincount(template[rows[rows >= 0]], minlength=len(ids))
        for i in np.flatnonzero(counts).tolist():
            t = specs._templates[i]
            phase = out[_phase(t)]
            phase["fits"] += int(counts[i])
            fingerprint = t["data"]["fingerprint"]
            if fingerprint not in histories:
                histories[fingerprint] = _load(_history_file(folder, fingerprint))
            got = here.get(ids[i])
            if got is not None:
                sources.add("this run dir's shards")
            else:
                got = histories[fingerprint].get(ids[i])
                if got is not None:
                    sources.add(f"earlier runs ({folder})")
            if got and got[0]:
                phase["known"] += int(counts[i])
                phase["seconds"] += int(counts[i]) * got[1] / got[0]
    out["basis"] = " and ".join(sorted(sources))
    out["history"] = str(folder)
    return out


def lines(est: dict, run) -> list[str]:
    """What a run says of its cost before any fit (and a dry run): each phase's fits with their
    estimated CPU seconds (or unknown), the timing budget, how to turn timing off, and a line of
    its own when the timing fits are estimated to cost more than the sweep."""
    parts = []
    for phase in PHASES:
        p = est[phase]
        if not p["fits"]:
            continue
        if p["known"] == p["fits"]:
            cost = f"about {p['seconds']:.1f} CPU s"
        elif p["known"]:
            cost = f"about {p['seconds']:.1f} CPU s for {p['known']} of them, {p['fits'] - p['known']} unknown"
        else:
            cost = "unknown"
        name = {"sweep": "fits", "timing": "timing fits", "references": "reference solves"}[phase]
        parts.append(f"{p['fits']} {name} {cost}")
    if not parts:
        return []
    basis = est["basis"] or f"no earlier run of these fits; the history in {est['history']} fills as runs end"
    out = [f"cost estimate: {'; '.join(parts)} (from {basis})"]
    timing, sweep = est["timing"], est["sweep"]
    if timing["fits"]:
        budget = run.timing_budget_s
        bound = (f"each within run.timing_budget_s={budget:g} s of CPU on its own curve (a ladder: each rung)"
                 if budget is not None else "no budget (run.timing_budget_s=null): each runs to its solver's own stop")
        out.append(f"timing fits: {bound}; run.timing=false turns them off")
        whole = timing["known"] == timing["fits"] and sweep["known"] == sweep["fits"]
        if whole and timing["seconds"] > sweep["seconds"]:
            out.append(f"timing fits are estimated to cost more than the sweep ({timing['seconds']:.1f} against "
                       f"{sweep['seconds']:.1f} CPU s): run.timing=false turns them off (the report then compares the "
                       f"sweep's own fits, warm with warm and cold with cold)")
    return out
