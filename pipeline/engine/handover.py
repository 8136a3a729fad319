"""What a library's timing ladder is handed before it runs: f* and its sweep twin's solve.

A ladder (pipeline/engine/ladder.py) stops at the first rung that reaches the report's target,
(P - f*)/|f*| <= report.target, so it needs f*, the certified objective of its problem's
reference solve; and it takes its sweep twin's solve (the library's own sweep fit of the same
problem and fold: for a library the same cold solve) as its top rung instead of running it
again. Both are records of the same run. `Handover` keeps each ladder out of the tasks until
the records it needs have come (`take`, which hears every record the sink gets), or are on disk
already (a resumed run: `read_columns` of its shards), then hands them over in its spec
(`spec.ladder`, outside its key) with the twin's seed, so that its rungs are the twin's
iterates. A ladder whose records never come (a failed reference) goes last, without them: it
then climbs every rung to its own stop, as it always did.

Why records through the client rather than a Dask dependency between tasks: the records reach
the client anyway (as fits end, `RecordStream`), a resumed run finds them in its shards, and the
tasks stay what they were (lists of specs, cut by `cutting`), on every cluster kind and under
`cluster=sequential`. The price is that a ladder waits for both records: the references come
first in every run (`cutting.make_units`), and a library's sweep fit is a single cold solve.
"""
from __future__ import annotations

import math
import threading
from pathlib import Path

from ..experiment.plan import ladder_twins, seed_from_key
from ..results.shards import Record, read_columns
from ..results.tables import shard_files
from .tasks import TWIN_FIELDS


class Handover:
    """The ladders among `todo` (views of a plan's specs), held back until their reference's and
    sweep twin's records have come; `rest` is every other spec of `todo`, in order."""

    def __init__(self, plan, todo: list, run_dir: Path, done: set):
        self.lock = threading.Lock()
        self.known: dict[str, dict] = {}
        # By template: a run without ladders pays one pass over its templates, not one per spec.
        marked = [j for j, t in enumerate(plan.fits._templates) if (t.get("timing") or {}).get("method") == "ladder"]
        self.held: dict = {}        # key -> (its view, its reference's key, its twin's key)
        self.twins: dict = {}       # ladder key -> its sweep twin's key
        self.rest, self.needed = todo, set()
        if not marked:
            return
        marked = set(marked)
        ladders = [v for v in todo if v.specs is plan.fits and int(plan.fits._template[v.row]) in marked]
        if not ladders:
            return
        self.twins = ladder_twins(plan.fits)
        rows = {v.row for v in ladders}
        self.rest = [v for v in todo if v.specs is not plan.fits or v.row not in rows]
        self.held = {v.key: (v, v.reference_key, self.twins.get(v.key)) for v in ladders}
        self.needed = {k for _, ref, twin in self.held.values() for k in (ref, twin) if k is not None}
        self._read(run_dir, self.needed & done)

    def __len__(self) -> int:
        return len(self.held)

    def _read(self, run_dir: Path, keys: set) -> None:
        """The records of `keys` already on disk (a resumed run), newest last."""
        if not keys:
            return
        columns = ("status", "f_star", "info", *TWIN_FIELDS)
        for path in shard_files(run_dir):
            got = read_columns(path, columns)
            mine = [i for i, key in enumerate(got["key"]) if key in keys]
            self.take([Record({name: got[name][i] for name in got if got[name][i] is not None}) for i in mine])

    def take(self, records: list) -> None:
        """Keep what a held ladder needs of these records (`results.shards.Record`s: the sink's
        listener), their fields alone."""
        mine = [r.fields for r in records if r.key in self.needed]
        if mine:
            with self.lock:
                self.known.update((r["key"], r) for r in mine)

    def ready(self, size: int, force: bool = False) -> list[list]:
        """Up to `size` held ladders whose records have come, as units of one spec view each (with
        `force`, any: nothing more will come)."""
        out = []
        with self.lock:
            for key, (view, ref, twin) in list(self.held.items()):
                if force or all(k is None or k in self.known for k in (ref, twin)):
                    out.append([view])
                    del self.held[key]
                    if len(out) >= size:
                        break
        return out

    def hand(self, units: list[list]) -> list[list]:
        """These units (made specs) with each ladder given what it is handed: f* and its twin."""
        return [[spec._replace(**handed(self.known.get(spec.reference_key), self.known.get(self.twins.get(spec.key)),
                                        self.twins.get(spec.key))) if spec.is_ladder else spec for spec in unit]
                for unit in units]


def handed(reference: dict | None, twin: dict | None, twin_key: str | None = None) -> dict:
    """The fields a ladder spec gets (`ladder`, and `seed` from its twin): f* where its reference
    ended without error, and the twin's solve as the top where it ended with its call's CPU
    seconds noted (`tasks._call_recorder`)."""
    given: dict = {}
    if reference is not None and reference.get("status") != "error" and _finite(reference.get("f_star")):
        given["f_star"] = float(reference["f_star"])
    out = {"ladder": given}
    cpu = ((twin or {}).get("info") or {}).get("call_cpu_s")
    if twin is not None and twin.get("status") not in (None, "error") and _finite(cpu) \
            and all(_finite(twin.get(k)) for k in ("n_iter", "primal_objective")):
        given["top"] = {"n_iter": int(twin["n_iter"]), "seconds": float(cpu), "primal": float(twin["primal_objective"]),
                        "dual": float(twin.get("dual_objective", math.nan)), "gap": float(twin.get("duality_gap", math.nan)),
                        "status": twin["status"]}
        given["record"] = {k: twin[k] for k in TWIN_FIELDS if k in twin}
        if twin_key is not None:
            out["seed"] = seed_from_key(twin_key)     # the twin's iterates (its random_state)
    return out


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
