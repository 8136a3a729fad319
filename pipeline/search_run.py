"""A search as rounds of plans run by the engine (`run_search`, called by run.py for
``search.kind`` certified or halving).

Each (dataset, solver entry) is searched on its own: a `CertifiedSearch` or `HalvingSearch`
says which points its next round fits (a pure function of its fits so far, `certified.decide`,
`halving.promote`). A round's points of every search become one plan (`plan.build_plan` per
dataset, joined by `plan.concat_plans`), with each spec's round in its ``search`` field (outside
its key), and the engine runs it into the run directory's shards (`execute.execute`): each
round's fits are Dask tasks, a fold each (a C path per fold when a round has several C values),
folds in parallel. The records are read back from the new shards (`Records`) and handed to the
searches. A killed search is run again by the same command: its rounds' plans ask for the same
keys, which the shards hold, so it refits nothing and goes on from its first unfinished round.

``search.json`` in the run directory holds what the report shows (pipeline/report/search.py):
each search's rounds, its CV errors, its bound (certified) or rungs (halving), and how it ended.
"""
from __future__ import annotations

import base64
import contextlib
import dataclasses
import math
import time
from pathlib import Path
from types import MappingProxyType

import numpy as np

import solvers
from solvers.cv_bounds import Certificate

from .experiment.config import ConfigError, grid_points
from .experiment.experiment import Experiment, freeze, thaw
from .experiment.plan import Plan, build_plan, concat_plans
from .results.searches import write_state
from .results.shards import read_shard
from .results.tables import shard_files
from .search import halving
from .search.certified import FoldFit, Settings, decide, first_points


class Records:
    """The records a search reads back, by key: only the fields it needs, from shard files not
    read before (a shard is written once; a retried task's newer shard comes later in
    `shard_files`' order and replaces the record)."""

    FIELDS = ("key", "status", "test_accuracy", "n_iter", "cv_bound", "state")

    def __init__(self, run_dir: Path):
        self.run_dir, self.seen, self.by_key = Path(run_dir), set(), {}

    def update(self) -> None:
        """Read the shard files not read yet: every fit's record (a resumed search asks for keys
        of later rounds that the first read already met)."""
        for path in shard_files(self.run_dir):
            if path.name in self.seen:
                continue
            self.seen.add(path.name)
            for rec in read_shard(path):
                if rec.get("kind") == "fit":
                    self.by_key[rec["key"]] = {k: rec.get(k) for k in self.FIELDS}

    def take(self, key: str) -> dict | None:
        """A key's record, handed over (each fit is read by its search once)."""
        return self.by_key.pop(key, None)


class CertifiedSearch:
    """The certified C search of one (dataset, solver entry)."""

    kind = "certified"

    def __init__(self, exp: Experiment, dkey: str, skey: str, n_folds: int):
        self.dkey, self.skey, self.n_folds = dkey, skey, n_folds      # n_folds: set by its first round
        self.settings = Settings.of(exp.search)
        entry = exp.solvers[skey]
        params = thaw(entry.params)
        self.base_tol = float(params.get("tol") or _default_tol())
        intercept = params.get("intercept", solvers.get_solver(entry.solver).intercepts[0])
        self.B = float(params.get("intercept_scaling", 1.0)) if intercept == "regularized" else 0.0
        self.rounds: list[list[dict]] = []       # each round's points
        self.fits: list[FoldFit] = []
        self.states: dict = {}                   # (C, tol, fold) -> (its certificate, its key)
        self.pairs: dict = {}                    # the bound's pairs of fits, computed once
        self.decision = None
        self.done = False

    def next_points(self) -> list[dict]:
        if not self.rounds:
            return first_points(self.settings)
        self.decision = decide(self.settings, self.fits, self.n_folds, len(self.rounds), self.pairs)
        self.done = self.decision.done
        return [] if self.done else self.decision.points

    def take(self, round_: int, point: dict, fold: int, record: dict | None) -> None:
        tol = float(point.get("tol", self.base_tol))
        ok = record is not None and record.get("status") != "error" and record.get("cv_bound") is not None
        error = 1.0 - record["test_accuracy"] if ok and record.get("test_accuracy") is not None else math.nan
        cert = Certificate.from_dict(record["cv_bound"]) if ok else None
        self.fits.append(FoldFit(C=float(point["C"]), tol=tol, fold=fold, error=error, certificate=cert,
                                 round=round_, status=(record or {}).get("status") or "error"))
        if ok and cert.v32 is not None:
            self.states[(float(point["C"]), tol, fold)] = (cert, record["key"])

    def warm(self, point: dict) -> dict:
        """The warm starts of a point, per fold: the model of the fitted C nearest it in log C (a
        refit's own C first, its tightest tol), so a new C starts where its neighbour ended."""
        C = float(point["C"])
        out = {}
        for (C2, tol, fold), state in self.states.items():
            rank = (abs(math.log(C2 / C)), tol, C2)
            if fold not in out or rank < out[fold][0]:
                out[fold] = (rank, state)
        # The certificate's v (float32, the intercept's coordinate u last) as a linear model:
        # w = v, b = B u (`tasks.start_of`).
        return {"warm_state": {fold: {"w64": base64.b64encode(cert.v32[:-1].astype("<f4").tobytes()).decode("ascii"),
                                      "b": self.B * float(cert.v32[-1]), "key": key}
                               for fold, (_, (cert, key)) in out.items()}} if out else {}

    def state(self) -> dict:
        d = self.decision
        out = {"dataset": self.dkey, "solver_entry": self.skey, "kind": self.kind,
               "settings": dataclasses.asdict(self.settings), "base_tol": self.base_tol,
               "rounds": [{"round": r, "points": pts} for r, pts in enumerate(self.rounds)], "done": self.done}
        if d is None:
            return out
        out.update(certified=d.certified, reason=d.reason, best_C=d.best_C, best_error=d.best_error,
                   bound_min=d.bound_min, bound_min_C=d.bound_min_C,
                   errors=[{"C": C, "cv_error": e, "tol": t, "round": self._round_of(C, t)}
                           for C, (e, t) in sorted(d.errors.items())])
        if d.bound is not None:
            s = self.settings
            # A step function: its value between consecutive breaks (at a break itself it may be
            # lower, the ends of the open intervals; `bound_min` counts those).
            x = d.bound.breaks(s.C_min, s.C_max)
            out["bound"] = {"log_breaks": x.tolist(), "between": d.bound.at(np.exp((x[1:] + x[:-1]) / 2)).tolist()}
        return out

    def _round_of(self, C: float, tol: float) -> int:
        return min((f.round for f in self.fits if f.C == C and f.tol == tol), default=-1)


class HalvingSearch:
    """Successive halving over the grid of one (dataset, solver entry)."""

    kind = "halving"

    def __init__(self, exp: Experiment, dkey: str, skey: str, n_folds: int):
        from .experiment.search_points import halving_rungs
        self.dkey, self.skey, self.n_folds = dkey, skey, n_folds
        entry = exp.solvers[skey]
        plain = {"grid": thaw(entry.grid), "params": thaw(entry.params), "solver": entry.solver}
        self.candidates = grid_points(plain["grid"], f"solvers.{skey}.grid")
        self.search = exp.search
        self.resource = exp.search.resource
        self.rungs = halving_rungs({f.name: getattr(exp.search, f.name) for f in dataclasses.fields(exp.search)},
                                   plain, skey, len(self.candidates))
        self.alive = list(range(len(self.candidates)))      # the current rung's candidates
        self.rounds: list[list[dict]] = []
        self.errors: list[dict] = []        # per rung: candidate -> {fold: error}
        self.states: list[dict] = []        # per rung: candidate -> {fold: state}
        self.done = False

    def _point(self, c: int, rung: int) -> dict:
        return {**self.candidates[c], self.resource: self.rungs[rung].resource}

    def next_points(self) -> list[dict]:
        r = len(self.rounds)
        if r:
            cv = [self.cv_error(r - 1, c) for c in range(len(self.candidates))]
            if r >= len(self.rungs):
                self.done = True
                return []
            self.alive = halving.promote([cv[c] if c in self.alive else None for c in range(len(cv))],
                                         self.rungs[r].n_candidates)
            if not self.alive:
                self.done = True
                return []
        self.errors.append({})
        self.states.append({})
        return [self._point(c, r) for c in self.alive]

    def cv_error(self, rung: int, c: int) -> float | None:
        errs = self.errors[rung].get(c, {})
        return float(np.mean(list(errs.values()))) if errs and len(errs) == self.n_folds else None

    def warm(self, point_index: int) -> dict:
        """The warm starts of a point of the current rung: its candidate's models per fold."""
        r = len(self.rounds) - 1
        if r == 0:
            return {}
        c = self.alive[point_index]
        return {"warm_state": self.states[r - 1].get(c, {})}

    def take(self, round_: int, point: dict, fold: int, record: dict | None) -> None:
        c = self.candidates.index(_strip(point, self.resource))
        if record is None or record.get("status") == "error" or record.get("test_accuracy") is None:
            return
        self.errors[round_].setdefault(c, {})[fold] = 1.0 - record["test_accuracy"]
        if record.get("state") is not None:     # with its key: the next rung's fit names it (warm_from)
            self.states[round_].setdefault(c, {})[fold] = {**record["state"], "key": record["key"]}

    def state(self) -> dict:
        rungs = []
        for r, rung in enumerate(self.rungs[:len(self.rounds)]):
            ran = [self.candidates.index(_strip(p, self.resource)) for p in self.rounds[r]]
            rungs.append({"rung": r, "resource": rung.resource, "n_candidates": len(ran),
                          "candidates": [{"point": self.candidates[c], "cv_error": self.cv_error(r, c)}
                                         for c in ran]})
        best = None
        if rungs:
            last = [c for c in rungs[-1]["candidates"] if c["cv_error"] is not None]
            if last:
                best = min(last, key=lambda c: c["cv_error"])
        return {"dataset": self.dkey, "solver_entry": self.skey, "kind": self.kind, "resource": self.resource,
                "factor": float(self.search.factor), "min_resources": self.search.min_resources,
                "schedule": [dataclasses.asdict(r) for r in self.rungs], "rungs": rungs, "done": self.done,
                "best": best}


def _strip(point: dict, resource: str) -> dict:
    return {k: v for k, v in point.items() if k != resource}


def _default_tol() -> float:
    from .experiment.plan import DEFAULT_TOL
    return DEFAULT_TOL


def _searches(exp: Experiment, labels: dict) -> list:
    """One search per (dataset, solver entry that runs on it); a multiclass dataset is refused
    (the bound and the CV errors the searches compare are binary)."""
    make = CertifiedSearch if exp.search_kind == "certified" else HalvingSearch
    out = []
    for dkey in exp.datasets:
        meta, y = labels[dkey]
        classes = len(np.unique(y))
        if classes != 2:
            raise ConfigError(f"search.kind={exp.search_kind}: datasets.{dkey} ({meta['name']}) has {classes} "
                              f"classes; a search compares binary CV errors")
        for skey, entry in exp.solvers.items():
            if entry.datasets is None or dkey in entry.datasets:
                out.append(make(exp, dkey, skey, 0))
    return out


def run_search(exp: Experiment, run_dir: Path, root: str, log=print, client=None, warmup=None):
    """Every round of every search of the experiment, executed into run_dir; returns (the plan of
    all rounds, joined: what the tables take, and a `Summary` of all rounds)."""
    from .engine.clusters import shared_client
    from .engine.execute import execute, Summary
    from .engine.sink import finished_in_plan
    from .engine.warmup import task_modules, WarmUp
    from .engine.materialise import materialise_datasets

    run_dir = Path(run_dir)
    labels = materialise_datasets(exp)
    searches = _searches(exp, labels)
    records = Records(run_dir)
    plans, summaries = [], []
    with contextlib.ExitStack() as stack:
        round_ = 0
        while True:
            wanted = {}
            for s in searches:
                if not s.done:
                    points = s.next_points()
                    if points:
                        s.rounds.append(points)
                        wanted[s] = points
            _write_state(run_dir, exp, searches)
            if not wanted:
                break
            plan, owners = _round_plan(exp, labels, wanted, round_)
            have, errors = finished_in_plan(run_dir, plan, exp.run.retry_errors)
            work = len(plan.fits) + len(plan.references) - len(have) + len(errors)
            if work and client is None and exp.cluster.kind != "sequential":
                started = time.perf_counter()
                client = stack.enter_context(shared_client(exp.cluster))
                warmup = WarmUp([], started=started, planned=started)
            if client is not None and warmup is not None:
                warmup.warm(client, exp.solver_names(), int(exp.cluster.blas_threads), task_modules(exp, plan))
            n_points = sum(len(p) for p in wanted.values())
            log(f"search round {round_}: {n_points} points of {len(wanted)} searches, {len(plan.fits)} fits"
                + (f" ({work} to run)" if work != len(plan.fits) else ""))
            summaries.append(execute(plan, run_dir, exp, root, log=log, client=client if work else None,
                                     warmup=warmup if work else None))
            plans.append(plan)
            records.update()
            for key, (s, point, fold) in owners.items():
                s.take(round_, point, fold, records.take(key))
            round_ += 1
    for s in searches:
        line = _closing_line(s)
        if line:
            log(line)
    return concat_plans(plans), _summary(summaries, Summary)


def _entry_plan(exp: Experiment, labels: dict, dkey: str, points: dict, round_: int, tails: dict) -> Plan:
    """The plan of one dataset's searches in one round: each entry with its round's points, each
    spec marked with its round and the index of its point (``search``, outside its key);
    tails: (entry, point index) -> further fields its specs carry outside their keys."""
    entries = {k: dataclasses.replace(exp.solvers[k], points=freeze(pts)) for k, pts in points.items()}
    one = dataclasses.replace(exp, datasets=MappingProxyType({dkey: exp.datasets[dkey]}),
                              solvers=MappingProxyType(entries))

    def tail_of(d, skey, i):
        return {"search": {"kind": exp.search_kind, "round": round_, "point": i}, **tails.get((skey, i), {})}
    return build_plan(one, {dkey: labels[dkey]}, tail_of=tail_of)


def _round_plan(exp: Experiment, labels: dict, wanted: dict, round_: int) -> tuple[Plan, dict]:
    """(the round's plan, fit key -> (its search, point, fold)); each search learns its number
    of folds (the entry's `folds` caps the dataset's)."""
    by_dataset: dict = {}
    for s, points in wanted.items():
        by_dataset.setdefault(s.dkey, {})[s.skey] = (s, points)
    plans, owners = [], {}
    for dkey, entries in by_dataset.items():
        tails = {}
        for skey, (s, points) in entries.items():
            # Warm starts where the run wants them and the solver takes one (a reference
            # solver, LIBLINEAR or LIBSVM through scikit-learn, refuses a start).
            if not (exp.run.warm_start and solvers.get_solver(exp.solvers[skey].solver).warm_start):
                continue
            for i, point in enumerate(points):
                tails[(skey, i)] = s.warm(i) if isinstance(s, HalvingSearch) else s.warm(point)
        plan = _entry_plan(exp, labels, dkey, {k: v[1] for k, v in entries.items()}, round_, tails)
        n_folds = len(plan.datasets[dkey]["folds"])
        for skey, (s, _) in entries.items():
            s.n_folds = min(n_folds, exp.solvers[skey].folds or n_folds)
        for spec in plan.fits.values():
            s, points = entries[spec.solver_entry]
            owners[spec.key] = (s, points[spec.search["point"]], spec.fold)
        plans.append(plan)
    return concat_plans(plans), owners


def _summary(parts: list, Summary):
    """The rounds' execute summaries as one (counts and seconds summed; the first round's
    cluster start and warm-up; the largest memory; the workers' loads of the last round that
    ran any, which count from the cluster's warm-up, so hold every round's)."""
    first = next((p for p in parts if p.startup_s is not None), parts[0])
    worker = max((p.worker_rss_mb for p in parts if p.worker_rss_mb), key=lambda m: m[0] + m[1], default=None)
    loads = [p.loads for p in parts if p.loads][-1:]
    return Summary(total=sum(p.total for p in parts), done=sum(p.done for p in parts),
                   skipped=sum(p.skipped for p in parts), failed=sum(p.failed for p in parts),
                   wall_s=sum(p.wall_s for p in parts), dashboard=first.dashboard,
                   tasks=sum(p.tasks for p in parts), client_rss_mb=max(p.client_rss_mb for p in parts),
                   loads=loads[0] if loads else None,
                   worker_rss_mb=worker, csr_mb=max((p.csr_mb or 0.0 for p in parts), default=None) or None,
                   startup_s=first.startup_s, startup_wait_s=first.startup_wait_s,
                   threads_of_client=first.threads_of_client)


def _closing_line(s) -> str:
    st = s.state()
    who = f"search {st['kind']} of solvers.{st['solver_entry']} on datasets.{st['dataset']}"
    if st["kind"] == "certified":
        return f"{who}: {len(st['rounds'])} rounds; {st.get('reason', '')}"
    best = st.get("best")
    rungs = ", ".join(f"rung {r['rung']}: {r['n_candidates']} at {st['resource']}={r['resource']:g}" for r in st["rungs"])
    pick = f"; best {best['point']} (CV error {best['cv_error']:.4f})" if best else ""
    return f"{who}: {rungs}{pick}"


def _write_state(run_dir: Path, exp: Experiment, searches: list) -> None:
    """search.json: every search's state, written atomically after each round's decisions."""
    write_state(run_dir, {"kind": exp.search_kind, "searches": [s.state() for s in searches]})
