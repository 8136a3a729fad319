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
from solvers.cv_bounds import Certificate, lower_bound

from .experiment.config import ConfigError, grid_points
from .experiment.experiment import Experiment, freeze, thaw
from .experiment.plan import Plan, build_plan, concat_plans
from .results.searches import write_state
from .results.shards import read_shard
from .results.tables import shard_files
from .search import halving, path
from .search.certified import FoldFit, Settings, decide, estimate, first_points, heldout_points


class Records:
    """The records a search reads back, by key: only the fields it needs, from shard files not
    read before (a shard is written once; a retried task's newer shard comes later in
    `shard_files`' order and replaces the record)."""

    FIELDS = ("key", "status", "test_accuracy", "n_test", "n_iter", "cv_bound", "state", "info")

    def __init__(self, run_dir: Path):
        self.run_dir, self.seen, self.by_key = Path(run_dir), set(), {}
        self.status: dict = {}          # every record's key -> its newest status (what a round skips)

    def update(self) -> None:
        """Read the shard files not read yet: every fit's record (a resumed search asks for keys
        of later rounds that the first read already met)."""
        for path in shard_files(self.run_dir):
            if path.name in self.seen:
                continue
            self.seen.add(path.name)
            for rec in read_shard(path):
                self.status[rec["key"]] = rec.get("status")
                if rec.get("kind") == "fit":
                    self.by_key[rec["key"]] = {k: rec.get(k) for k in self.FIELDS}

    def finished(self, plan: Plan, with_errors: bool) -> tuple[set, set]:
        """`sink.finished_in_plan` from the records read so far (call `update` first): the plan's
        keys with a record, and those whose newest record is an error, if with_errors."""
        keys = list(self.status)
        mine = (plan.fits.rows(keys) >= 0) | (plan.references.rows(keys) >= 0) if keys else []
        have = {k for k, m in zip(keys, list(mine)) if m}
        return have, ({k for k in have if self.status[k] == "error"} if with_errors else set())

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
        self.estimate = None                     # epsilon -> C values it needs (after the first round)
        self.news: list[str] = []                # lines for the log, said once (run_search)
        self.done = False

    def next_points(self) -> list[dict]:
        if not self.rounds:
            return first_points(self.settings)
        self.decision = decide(self.settings, self.fits, self.n_folds, len(self.rounds), self.pairs)
        self._estimate(self.n_folds)
        self.done = self.decision.done
        return [] if self.done else self.decision.points

    def _estimate(self, n_folds: int) -> None:
        """After the first round: how many C values each epsilon would need over the range, from
        its fits' certificates (`certified.estimate`), said in the log once (`news`)."""
        d = self.decision
        if self.estimate is not None or len(self.rounds) != 1 or d is None or not math.isfinite(d.best_error):
            return
        by_C: dict = {}
        for f in self.fits:
            if f.certificate is not None and f.fold < n_folds:
                by_C.setdefault(f.C, []).append(f.certificate)
        by_C = {C: certs for C, certs in by_C.items() if len(certs) == n_folds}
        if len(by_C) < 2:
            return
        self.estimate = estimate(self.settings, by_C, d.best_error)
        s, fits = self.settings, n_folds
        words = "; ".join(f"epsilon={eps:g}: " + (f"about {n} C values ({n * fits} fits)" if n is not None else
                                                  "no spacing (the rows reach the level nowhere)")
                          for eps, n in self.estimate.items())
        self.news.append(f"search {self.kind} of solvers.{self.skey} on datasets.{self.dkey}: the first round's "
                         f"certificates say the bound over [{s.C_min:g}, {s.C_max:g}] needs, from single balls of "
                         f"fits whose gaps hide no row (the bound between two fits needs fewer; loose fits more): "
                         f"{words}; search.epsilon and the range are yours to choose")

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
                                      "b": self.B * float(cert.v32[-1]), "key": key, "C": cert.C}
                               for fold, (_, (cert, key)) in out.items()}} if out else {}

    def state(self) -> dict:
        d = self.decision
        out = {"dataset": self.dkey, "solver_entry": self.skey, "kind": self.kind,
               "settings": dataclasses.asdict(self.settings), "base_tol": self.base_tol,
               "rounds": [{"round": r, "points": pts} for r, pts in enumerate(self.rounds)], "done": self.done}
        if d is None:
            return out
        if self.estimate is not None:
            out["estimate"] = [{"epsilon": eps, "C_values": n} for eps, n in self.estimate.items()]
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


class HeldoutSearch(CertifiedSearch):
    """The certified C search of one held-out fold (the first) of one (dataset, solver entry): its
    rounds run that fold alone (the entry's ``folds`` = 1), each round's C values placed by
    `certified.heldout_points` and walked warm from each other, each fit tightened until its gap
    hides at most epsilon/2 of the fold's rows (`tasks._gap_for_epsilon`); once it ends, the
    other folds fit the best C and their CV error is reported beside it."""

    kind = "heldout"
    # C values a round may add at most (its ranges' needs, summed): a bound on one round's cost.
    MAX_POINTS = 400

    def __init__(self, exp: Experiment, dkey: str, skey: str, n_folds: int):
        super().__init__(exp, dkey, skey, n_folds)
        self.folds = 1                     # the plan's folds for the next round: the held-out fold
        self.others: dict = {}             # fold -> validation error at the best C
        self.final = False                 # the other folds' round has been planned

    def next_points(self) -> list[dict]:
        if not self.rounds:
            return first_points(self.settings)
        if self.final:
            self.done = True
            return []
        self.decision = decide(self.settings, [f for f in self.fits if f.fold == 0], 1, len(self.rounds),
                               self.pairs, place=lambda s, fits, d: heldout_points(s, fits, d, self.MAX_POINTS))
        self._estimate(1)
        if not self.decision.done:
            return self.decision.points
        if not math.isfinite(self.decision.best_C):
            self.done = True
            return []
        self.final, self.folds = True, None          # every fold at the best C
        return [{"C": self.decision.best_C}]

    def take(self, round_: int, point: dict, fold: int, record: dict | None) -> None:
        if self.final:
            if fold == 0:       # the held-out fold's fit at the best C is one of its rounds' (read there)
                return
            ok = record is not None and record.get("test_accuracy") is not None and record.get("status") != "error"
            self.others[fold] = 1.0 - record["test_accuracy"] if ok else math.nan
            return
        super().take(round_, point, fold, record)

    def state(self) -> dict:
        out = super().state()
        out["fold"] = 0
        if self.others:
            at_best = {0: self.decision.best_error, **self.others}
            out["folds_at_best"] = {str(k): e for k, e in sorted(at_best.items())}
            errors = list(at_best.values())
            out["cv_error_at_best"] = float(np.mean(errors)) if all(math.isfinite(e) for e in errors) else None
        return out


class PathSearch:
    """LIBLINEAR's C search (``train -C``) of one (dataset, solver entry): one round, each fold's
    C values from LIBLINEAR's start doubling to C_max as one warm C path (a Dask task a fold,
    the folds in parallel), LIBLINEAR's stopping test in the task (`tasks._kept`: a fold keeps
    its model where ``-s 2`` would not move from it); then LIBLINEAR's walk read from the
    folds' records (`path.stop_index`), its best C and CV accuracy, and the certified lower
    bound of the CV error over the C values walked, from the same fits' certificates."""

    kind = "path"

    def __init__(self, exp: Experiment, dkey: str, skey: str, n_folds: int, labels: dict | None = None):
        self.dkey, self.skey, self.n_folds = dkey, skey, n_folds
        self.exp, self.labels = exp, labels
        params = thaw(exp.solvers[skey].params)
        self.B = float(params.get("intercept_scaling", 1.0)) \
            if params.get("intercept", solvers.get_solver(exp.solvers[skey].solver).intercepts[0]) == "regularized" else 0.0
        self.start = None                  # (C_0, l, max ||x||^2 or None where C_start is given)
        self.Cs: list[float] = []
        self.rounds: list[list[dict]] = []
        self.by_fold: dict = {}            # fold -> {C: (error, unchanged, certificate, status)}
        self.result: dict | None = None
        self.done = False

    def next_points(self) -> list[dict]:
        if self.rounds:                     # one round: the walk is every fold's path
            self.result = self._decide()
            self.done = True
            return []
        se = self.exp.search
        if se.C_start is not None:
            self.start = (float(se.C_start), None, None)
        else:
            l, M = _rows_norm(self.exp, self.labels, self.dkey, self.skey)
            self.start = (path.start_C(l, M + self.B * self.B, float(se.C_max)), l, M + self.B * self.B)
        self.Cs = path.path_Cs(self.start[0], float(se.C_max))
        return [{"C": C} for C in self.Cs]

    def warm(self, point: dict) -> dict:
        return {}      # each fold's path is one task: its points start from each other (`tasks.run_path`)

    def take(self, round_: int, point: dict, fold: int, record: dict | None) -> None:
        ok = record is not None and record.get("status") != "error" and record.get("test_accuracy") is not None
        info = (record or {}).get("info") or {}
        cert = Certificate.from_dict(record["cv_bound"]) if ok and record.get("cv_bound") else None
        # The fold's misclassified rows, counted (LIBLINEAR compares counts: equal ones tie exactly).
        wrong = (round((1.0 - record["test_accuracy"]) * record["n_test"]), int(record["n_test"])) if ok else None
        self.by_fold.setdefault(fold, {})[float(point["C"])] = (
            wrong, bool(info.get("unchanged")), cert, (record or {}).get("status") or "error")

    def _decide(self) -> dict:
        folds = [self.by_fold.get(k, {}) for k in range(self.n_folds)]
        flags = [[f.get(C, (0, False))[1] for C in self.Cs] for f in folds]
        stop = path.stop_index(flags)
        last = len(self.Cs) - 1 if stop is None else stop
        walked = self.Cs[:last + 1]
        # LIBLINEAR's CV accuracy pools the folds' rows: correct predictions over all of them.
        errors = {C: sum(f[C][0][0] for f in folds) / sum(f[C][0][1] for f in folds)
                  if all(C in f and f[C][0] is not None for f in folds) else math.nan for C in walked}
        ok = {C: e for C, e in errors.items() if math.isfinite(e)}
        out = {"walked": walked, "stop": None if stop is None else walked[-1],
               "errors": errors, "unchanged": {C: sum(fl[i] for fl in flags) for i, C in enumerate(walked)},
               "beyond": sum(1 for f in folds for C in f if C > walked[-1])}
        if not ok:
            out["reason"] = "no C has a validation error on every fold (see the results' status and error columns)"
            return out
        # LIBLINEAR's best: the first C at the best CV accuracy (``current_rate > *best_score``).
        best_C = min(ok, key=lambda C: (ok[C], C))
        out.update(best_C=best_C, best_error=ok[best_C])
        certs = [[f[C][2] for C in walked if C in f and f[C][2] is not None] for f in folds]
        if all(certs):
            bound = lower_bound(certs)
            low, low_C = bound.minimum(walked[0], walked[-1])
            x = bound.breaks(walked[0], walked[-1])
            out.update(bound=bound, bound_min=low, bound_min_C=low_C,
                       bound_steps={"log_breaks": x.tolist(), "between": bound.at(np.exp((x[1:] + x[:-1]) / 2)).tolist()})
        return out

    def state(self) -> dict:
        se = self.exp.search
        out = {"dataset": self.dkey, "solver_entry": self.skey, "kind": self.kind,
               "settings": {"C_start": se.C_start, "C_max": float(se.C_max), "eps": path.EPS,
                            "unchanged_run": path.UNCHANGED_RUN},
               "rounds": [{"round": r, "points": pts} for r, pts in enumerate(self.rounds)], "done": self.done}
        if self.start is not None:
            out.update(start_C=self.start[0], n_rows=self.start[1], max_sq_norm=self.start[2])
        r = self.result
        if r is None:
            return out
        out.update(walked=r["walked"], stopped_at=r["stop"], beyond=r["beyond"], reason=_path_reason(self, r),
                   errors=[{"C": C, "cv_error": e, "round": 0, "unchanged_folds": r["unchanged"][C]}
                           for C, e in r["errors"].items()])
        for k in ("best_C", "best_error", "bound_min", "bound_min_C"):
            if k in r:
                out[k] = r[k]
        if "best_error" in r:
            out["cv_accuracy"] = 1.0 - r["best_error"]
        if "bound_steps" in r:
            out["bound"] = r["bound_steps"]
        return out


def _path_reason(s: PathSearch, r: dict) -> str:
    """How a path search ended, in one sentence (its closing line and the report)."""
    walked = r["walked"]
    start = "LIBLINEAR's start" if s.exp.search.C_start is None else "search.C_start"
    how = (f"stopped at C={walked[-1]:.4g}: every fold's model unchanged for {path.UNCHANGED_RUN} C values in a row "
           f"(LIBLINEAR's rule)" if r["stop"] is not None else f"reached C_max={s.exp.search.C_max:g}")
    text = f"{len(walked)} C values from {walked[0]:.4g} ({start}), doubling; {how}"
    if "best_error" not in r:
        return f"{text}; {r.get('reason', '')}"
    text += f"; best C={r['best_C']:.4g}, CV accuracy {100 * (1 - r['best_error']):.3f}%"
    if "bound_min" in r:
        text += (f"; certified: no C in [{walked[0]:.4g}, {walked[-1]:.4g}] has a CV error below "
                 f"{r['bound_min']:.4f} (the best found is {r['best_error'] - r['bound_min']:.4f} above it)")
    return text


def _rows_norm(exp: Experiment, labels: dict, dkey: str, skey: str) -> tuple[int, float]:
    """(l, max_i ||x_i||^2) of the rows LIBLINEAR's start reads: every row of the CV (a fold's
    training and validation rows together), as the folds see them (scaled by each training
    fold's scaler where the dataset is scaled: the largest over the folds, which reads the folds
    here). Read in the client, once per dataset: the start decides the plan's C values."""
    from solvers.kernels import row_norms_sq
    from .data.store import row_norms_sq as stored_row_norms
    from .engine.tasks import fold_data
    from .experiment.plan import subsample_rows
    plan = _entry_plan(exp, labels, dkey, {skey: [{"C": 1.0}]}, 0, {})
    data = next(iter(plan.fits.values()))["data"]
    folds = plan.datasets[dkey]["folds"]
    l = len(folds[0][0]) + len(folds[0][1])
    if data["scale"] == "none":       # the stored rows' norms, from their values alone
        norms = stored_row_norms(exp.store_root, data["name"])
        index = subsample_rows(labels[dkey][1], data["max_rows"], data["rows_seed"])
        M = float(norms[index][np.r_[folds[0][0], folds[0][1]]].max(initial=0.0))
    else:
        M = 0.0
        for k in range(len(folds)):
            X_tr, _, X_te = fold_data(exp.store_root, data, k)[:3]
            M = max(M, float(row_norms_sq(X_tr).max(initial=0.0)), float(row_norms_sq(X_te).max(initial=0.0)))
    return l, M


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
    make = {"certified": CertifiedSearch, "heldout": HeldoutSearch, "path": PathSearch,
            "halving": HalvingSearch}[exp.search_kind]
    out = []
    for dkey in exp.datasets:
        meta, y = labels[dkey]
        classes = len(np.unique(y))
        if classes != 2:
            raise ConfigError(f"search.kind={exp.search_kind}: datasets.{dkey} ({meta['name']}) has {classes} "
                              f"classes; a search compares binary CV errors")
        for skey, entry in exp.solvers.items():
            if entry.datasets is None or dkey in entry.datasets:
                out.append(PathSearch(exp, dkey, skey, 0, labels) if make is PathSearch else make(exp, dkey, skey, 0))
    return out


def run_search(exp: Experiment, run_dir: Path, root: str, log=print, client=None, warmup=None):
    """Every round of every search of the experiment, executed into run_dir; returns (the plan of
    all rounds, joined: what the tables take, and a `Summary` of all rounds)."""
    from .engine.clusters import shared_client
    from .engine.execute import execute, Summary
    from .engine.warmup import task_modules, WarmUp
    from .engine.materialise import materialise_datasets

    run_dir = Path(run_dir)
    labels = materialise_datasets(exp, verify=False)      # the run's planning verified them
    said: set = set()

    def say(line: str) -> None:
        """The log, each round's execute saying its cluster's dashboard once, not once a round."""
        if line.startswith("dask dashboard"):
            if line in said:
                return
            said.add(line)
        log(line)
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
            for s in searches:
                for line in getattr(s, "news", ()):
                    log(line)
                s.news = []
            _write_state(run_dir, exp, searches)
            if not wanted:
                break
            plan, owners = _round_plan(exp, labels, wanted, round_)
            records.update()
            have, errors = records.finished(plan, exp.run.retry_errors)
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
            summaries.append(execute(plan, run_dir, exp, root, log=say, client=client if work else None,
                                     warmup=warmup if work else None, finished=(have, errors)))
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


def _entry_plan(exp: Experiment, labels: dict, dkey: str, points: dict, round_: int, tails: dict,
                folds: dict | None = None) -> Plan:
    """The plan of one dataset's searches in one round: each entry with its round's points, each
    spec marked with its round and the index of its point (``search``, outside its key);
    tails: (entry, point index) -> further fields its specs carry outside their keys; folds:
    entry -> the folds this round fits (a held-out search's rounds: 1, the first)."""
    folds = folds or {}
    entries = {k: dataclasses.replace(exp.solvers[k], points=freeze(pts), folds=folds.get(k, exp.solvers[k].folds))
               for k, pts in points.items()}
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
        plan = _entry_plan(exp, labels, dkey, {k: v[1] for k, v in entries.items()}, round_, tails,
                           {k: v[0].folds for k, v in entries.items() if isinstance(v[0], HeldoutSearch)})
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
    if st["kind"] == "heldout":
        others = st.get("folds_at_best") or {}
        tail = (f"; at C={st['best_C']:.4g} the other folds' validation errors "
                f"{', '.join(f'{e:.4f}' for e in others.values())} (reported, not certified)" if others else "")
        return f"{who}: {len(st['rounds'])} rounds on the first fold; {st.get('reason', '')}{tail}"
    if st["kind"] == "path":
        return f"{who}: {st.get('reason', '')}"
    best = st.get("best")
    rungs = ", ".join(f"rung {r['rung']}: {r['n_candidates']} at {st['resource']}={r['resource']:g}" for r in st["rungs"])
    pick = f"; best {best['point']} (CV error {best['cv_error']:.4f})" if best else ""
    return f"{who}: {rungs}{pick}"


def _write_state(run_dir: Path, exp: Experiment, searches: list) -> None:
    """search.json: every search's state, written atomically after each round's decisions."""
    write_state(run_dir, {"kind": exp.search_kind, "searches": [s.state() for s in searches]})
