"""Plan: the validated experiment becomes immutable run specs with deterministic keys.

A run spec is plain JSON data (dataset fingerprint, solver and version, resolved problem and
solver parameters, budget, CV scheme and fold, seed). Its key is the hash of its canonical JSON:
equal specs give equal keys on every machine, so a rerun into the same run directory finds the
shards it already has. The hashing rules live here and nowhere else (`canonical_json`,
`spec_key`) and are pinned by tests.

`build_plan` is a pure function of the `Experiment` and the datasets' metadata and labels: it builds
nothing and reads nothing. `run.py` materialises the datasets first (`run.materialise_datasets`
builds what the store lacks) and hands their (meta, labels) in, so a plan can be made,
inspected and tested without a store.

Folds are index arrays computed by `make_folds` from the labels, the CV settings and the seed;
the function is pure, so a worker recomputes exactly the client's folds instead of receiving
index arrays inside every task.

Each fit spec may name a reference spec: a certified solve of the same problem (same data rows,
C, loss, intercept, kernel) at tight tolerance, whose objective is the f* of suboptimality
plots. Reference specs are keyed by the problem alone, so every solver and every parameter
that leaves the problem unchanged shares one. `run.reference=auto` (the default) plans one only
for problems that two or more solver entries fit: a plain CV sweep pays for none.

Specs that differ only in C share a `path` key: the executor runs the points of one path in one
task in increasing C, each warm-started from the last (`run.warm_start`). Neither the path nor
the reference is part of a spec's key: a point keeps its key when a neighbour is added or
removed, so a resumed run recomputes only missing points (see DESIGN.md, "C paths").

A plan holds its specs as columns (`Specs`): the templates the specs of a grid point share, and
per spec its fold, its key's digest, its path and its reference, about 35 bytes a fit; a spec's
dict is made when it is read. `execute` groups and cuts views of the specs to run (`SpecView`)
and makes the dicts of a task as it cuts it (`made`).
"""
from __future__ import annotations

import hashlib
import json
import math
from array import array
from collections.abc import ItemsView, Mapping, ValuesView
from dataclasses import dataclass

import numpy as np

from .config import ConfigError, apply_dataset_problem
from .experiment import Experiment, as_dict, thaw
from ..search.path import EPS as PATH_EPS
from .specs import FitSpec, ReferenceSpec, binary_labels, heldout_rows, make_folds, subsample_rows
from .schema import (BUDGET_KEYS, DEFAULT_TOL, PROBLEM_KEYS, REPORT_TARGET, SUBSAMPLE_KEY, TASK_KEYS,  # noqa: F401 (DEFAULT_TOL: the plan's)
                     TIMING_BUDGET_S)

KEY_LENGTH = 16
# A certified solver per problem type: (kernel is linear, loss, intercept) -> candidates in order.
# Only registered solvers are used; with none, f* is unknown (NaN) and said so in the report.
# Hook: dcd certifies the hinge slowly at large C; the certifying primal solver for linear hinge
# problems (smoothed-hinge Newton with continuation, branch w10cert) goes first in the two linear
# hinge rows once it is registered under its name.
REFERENCE_SOLVERS = {
    # The linear hinge at large C is degenerate for dcd (it crawls, and ends at its pass cap
    # with a gap); smooth_newton certifies it to rounding in seconds, but only with few features
    # (its Newton systems are (d+1) x (d+1); see SMOOTH_NEWTON_MAX_FEATURES).
    (True, "hinge", "none"): ["smooth_newton", "dcd"], (True, "hinge", "regularized"): ["smooth_newton", "dcd"],
    (True, "squared_hinge", "none"): ["dcd"], (True, "squared_hinge", "regularized"): ["dcd"],
    (True, "hinge", "free"): ["smo", "qp"], (False, "hinge", "free"): ["smo", "qp"],
    (True, "squared_hinge", "free"): ["newton", "svmmaj"],
    (True, "huber_hinge", "free"): ["svmmaj"], (True, "huber_hinge", "none"): ["svmmaj"],
}


# ------------------------------------------------------------------------ keys
def _normalise(obj):
    """JSON-ready form with the same value for equal configs: floats that are integers stay
    floats (1.0, not 1), infinities as strings, numpy scalars as Python numbers."""
    if isinstance(obj, dict):
        return {str(k): _normalise(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_normalise(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        if math.isnan(obj):
            return "nan"
        return float(repr(obj))
    return obj


def canonical_json(obj) -> str:
    """Sorted keys, no whitespace, normalised numbers: the text that keys hash."""
    return json.dumps(_normalise(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def spec_key(obj, prefix: str = "") -> str:
    return prefix + hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:KEY_LENGTH]


def seed_from_key(key: str) -> int:
    """A 31-bit seed derived from a key, so each task's randomness is fixed by what it is."""
    digest = key.split("-")[-1]
    return int(digest[:8], 16) & 0x7FFFFFFF


# ------------------------------------------------------------------------ folds
def check_labels(where: str, name: str, y: np.ndarray, cv: dict, max_rows=None) -> None:
    """Refuse, before any task, labels the CV scheme cannot split: one class (no SVM to fit;
    every fit would end in error), or a class with fewer rows than stratified k-fold has folds
    (each fold's test part needs one of each) or than a stratified split needs (2)."""
    classes, counts = np.unique(y, return_counts=True)
    rows = f" (after max_rows={max_rows})" if max_rows is not None else ""
    if len(classes) < 2:
        raise ConfigError(f"{where}: dataset {name!r} has one class ({classes[0]:g}: {counts[0]} rows){rows}; "
                          f"a classifier needs at least two")
    smallest = int(counts.argmin())
    need, why = {"kfold": (int(cv["folds"]), f"cv.folds={cv['folds']}"),
                 # the held-out draw takes one of each class and k-fold needs `folds` of the rest
                 "kfold_test": (int(cv.get("folds", 2)) + 1, f"cv.folds={cv.get('folds')} with a held-out test set"),
                 "holdout": (2, "a stratified holdout"), "repeated": (2, "a stratified split")}.get(cv["kind"], (1, ""))
    if counts[smallest] < need:
        raise ConfigError(f"{where}: {why} needs at least {need} rows of each class, but class "
                          f"{classes[smallest]:g} of dataset {name!r} has {counts[smallest]}{rows}; "
                          f"lower cv.folds or use cv=holdout")


# ------------------------------------------------------------------------ plan
# A key's hex digits by code point: 0-9 and a-f their value, everything else -1 (`Specs.rows`).
_HEX = np.full(128, -1, dtype=np.int64)
_HEX[48:58] = np.arange(10)
_HEX[97:103] = np.arange(10, 16)


def made_by(template: dict, tail: dict, index: int):
    """A function (fold, key, seed, path, reference key) -> the typed spec (`specs.FitSpec` or
    `ReferenceSpec`) of a template (what the specs of one grid point share) and its tail (what
    they carry outside their keys): the spec's values in field order, made once, then a tuple
    per spec (a NamedTuple from its values: `specs` says why)."""
    cls = ReferenceSpec if template.get("kind") == "reference" else FitSpec
    given = {**template, **tail}
    unknown = given.keys() - set(cls._fields) - {"kind"}
    if unknown:
        raise TypeError(f"a {cls.kind} spec has no field {', '.join(sorted(unknown))}")
    base = [given.get(name, default) for name, default in
            ((name, cls._field_defaults.get(name)) for name in cls._fields)]
    base[cls._fields.index("template")] = index
    at = [cls._fields.index(name) for name in ("fold", "key", "seed", "path")]
    ref_at = cls._fields.index("reference_key") if cls is FitSpec else None
    make = cls._make

    def spec(fold, key, seed, path, reference_key=None):
        values = base.copy()
        values[at[0]], values[at[1]], values[at[2]], values[at[3]] = fold, key, seed, path
        if ref_at is not None:
            values[ref_at] = reference_key
        return make(values)
    return spec


class Specs(Mapping):
    """Run specs by key, read-only, stored as columns: each spec is a shared template (what the
    specs of one grid point have in common) and its own fold, key, C path and reference, so a
    plan holds no dict per spec. A spec is made when it is read (``specs[key]``, ``values()``,
    ``items()``), a new dict equal to the one the plan held before: at a million fits, one dict
    a spec was most of a dry run's memory (The sweep benchmark, "Large sweeps", scenario (h)).

    The key is ``prefix`` and the first 8 bytes of its sha256 in hex (`spec_key`), kept as one
    uint64; the seed is derived from it (`seed_from_key`). Order is the plan's: templates in the
    order they were planned, each with its folds in order."""

    def __init__(self, prefix: str, templates: list, tails: list, template, fold, digest, path, paths: list,
                 reference=None, references: "Specs | None" = None):
        self._prefix = prefix
        self._templates, self._tails = templates, tails    # tail: what a spec carries outside its key
        self._template = np.asarray(template, dtype=np.int32)
        self._fold = np.asarray(fold, dtype=np.int32)
        self._digest = np.asarray(digest, dtype=np.uint64)
        self._path = np.asarray(path, dtype=np.int32)       # index into paths, -1: None
        self._paths = paths
        # Fits name a reference (its row in the `references` Specs, -1: None); references do not.
        self._reference = None if reference is None else np.asarray(reference, dtype=np.int32)
        self._references = references
        self._sorted = None                                 # (digests sorted, their rows), made on a lookup
        self._makers: list = []                             # per template: how its specs are made (`made_by`)

    @classmethod
    def empty(cls, prefix: str) -> "Specs":
        none = np.zeros(0, dtype=np.int32)
        return cls(prefix, [], [], none, none, none.astype(np.uint64), none, [])

    def __len__(self) -> int:
        return len(self._digest)

    def _key(self, digest) -> str:
        return f"{self._prefix}{int(digest):016x}"

    def __iter__(self):
        for chunk in self._chunks():
            yield from (self._key(d) for d in self._digest[chunk].tolist())

    def _row(self, key) -> int:
        """The row of a key, or -1: a binary search in the digests, sorted on the first lookup."""
        n = len(self._prefix)
        if not isinstance(key, str) or len(key) != n + 16 or not key.startswith(self._prefix):
            return -1
        try:
            digest = int(key[n:], 16)
        except ValueError:
            return -1
        if digest < 0 or f"{digest:016x}" != key[n:]:     # "0X..", upper case or a sign: not a key this plan made
            return -1
        if self._sorted is None:
            order = np.argsort(self._digest, kind="stable")
            self._sorted = (self._digest[order], order)
        digests, order = self._sorted
        at = int(np.searchsorted(digests, np.uint64(digest)))
        return int(order[at]) if at < len(digests) and int(digests[at]) == digest else -1

    def __contains__(self, key) -> bool:
        return self._row(key) >= 0

    def rows(self, keys) -> np.ndarray:
        """The rows of many keys at once, -1 where a key is not one this plan made: `_row`'s
        checks and binary search, vectorised (a resumed run looks up every finished key, and at
        a million keys one Python-level search each made a resume's skip list slow: The sweep
        benchmark, "Large sweeps"). The 16 hex digits after the prefix are read as code points
        through a table that knows only 0-9 and a-f, as `_row`'s round trip through
        f"{digest:016x}" accepts only those."""
        keys = [k if isinstance(k, str) else "" for k in keys]
        out = np.full(len(keys), -1, dtype=np.int64)
        n = len(self._prefix)
        if not keys or not len(self):
            return out
        text = np.array(keys)
        at = np.flatnonzero((np.char.str_len(text) == n + 16) & np.char.startswith(text, self._prefix))
        if not at.size:
            return out
        points = text[at].view(np.uint32).reshape(at.size, -1)[:, n:n + 16]
        digits = _HEX[np.minimum(points, 127)]
        valid = (digits >= 0).all(axis=1)
        at, digits = at[valid], digits[valid].astype(np.uint64)
        digest = np.zeros(at.size, dtype=np.uint64)
        for j in range(16):
            digest = (digest << np.uint64(4)) | digits[:, j]
        if self._sorted is None:
            order = np.argsort(self._digest, kind="stable")
            self._sorted = (self._digest[order], order)
        sorted_digests, order = self._sorted
        where = np.minimum(np.searchsorted(sorted_digests, digest), len(sorted_digests) - 1)
        found = sorted_digests[where] == digest
        out[at[found]] = order[where[found]]
        return out

    def __getitem__(self, key) -> dict:
        row = self._row(key)
        if row < 0:
            raise KeyError(key)
        return next(self._specs(slice(row, row + 1)))

    def values(self):
        return _SpecValues(self)

    def items(self):
        return _SpecItems(self)

    def _chunks(self, size: int = 1 << 16):
        return (slice(i, i + size) for i in range(0, len(self), size))

    def _specs(self, rows: slice):
        """The specs of rows, made from the columns (a chunk's columns as Python lists at once)."""
        digests = self._digest[rows]
        seeds = ((digests >> np.uint64(32)) & np.uint64(0x7FFFFFFF)).tolist()    # seed_from_key
        refs = self._reference[rows].tolist() if self._reference is not None else None
        ref_digests = self._references._digest if refs is not None else None
        makers = self._makers
        for i, (t, fold, digest, path) in enumerate(zip(self._template[rows].tolist(), self._fold[rows].tolist(),
                                                        digests.tolist(), self._path[rows].tolist())):
            maker = makers[t] if t < len(makers) and makers[t] is not None else self._maker(t)
            ref = (self._references._key(ref_digests[refs[i]]) if refs[i] >= 0 else None) if refs is not None else None
            yield maker(fold, self._key(digest), seeds[i], self._paths[path] if path >= 0 else None, ref)

    def _maker(self, t: int):
        """How template t's specs are made (`made_by`), kept per template."""
        while len(self._makers) <= t:
            self._makers.append(None)
        maker = self._makers[t] = made_by(self._templates[t], self._tails[t], t)
        return maker

    def _all(self):
        for chunk in self._chunks():
            yield from self._specs(chunk)

    # What consumers need of every spec, without making the specs.
    def count_by(self, field: str) -> dict:
        """A template field's value (solver_entry, solver) -> its number of specs, in order of
        first appearance."""
        per_template = np.bincount(self._template, minlength=len(self._templates)).tolist()
        out: dict = {}
        for t, n in zip(self._templates, per_template):
            if n:
                out[t[field]] = out.get(t[field], 0) + n
        return out

    def reference_of(self, keys: list | None = None) -> dict:
        """Key -> its reference's key (None without one), for every spec. keys: these specs' keys
        in order (`list(specs)`) when the caller holds them already: the dict then shares their
        strings instead of making them again (a million keys' strings, not made twice)."""
        keys = self if keys is None else keys
        if self._reference is None:
            return dict.fromkeys(keys)
        refs, ref_keys = self._reference.tolist(), list(self._references)
        return {key: ref_keys[r] if r >= 0 else None for key, r in zip(keys, refs)}

    def select(self, keys) -> list["SpecView"]:
        """Views of the specs whose keys are not in `keys` (a set), in order: a run's work, as
        `execute` groups and cuts it into tasks before it makes the specs of each (`made`)."""
        rows = np.ones(len(self), bool)
        found = self.rows(keys or ())
        rows[found[found >= 0]] = False
        return [SpecView(self, row) for row in np.flatnonzero(rows).tolist()]


# The names a view answers as attributes, as a typed spec does (`SpecView.__getattr__`).
_VIEW_FIELDS = frozenset(FitSpec._fields) | frozenset(ReferenceSpec._fields) | {"kind", "is_timing", "is_ladder"}


class SpecView(Mapping):
    """One spec of a `Specs`, read field by field from its columns without making its dict:
    what `execute` holds for each task to run while it groups them (C paths, folds) and cuts
    them into tasks, about 60 bytes a spec where a dict is about 700. `made` makes the dicts."""

    __slots__ = ("specs", "row")

    def __init__(self, specs: Specs, row: int):
        self.specs, self.row = specs, row

    def __getitem__(self, name):
        specs, row = self.specs, self.row
        if name == "fold":
            return int(specs._fold[row])
        if name in ("key", "seed"):
            key = specs._key(specs._digest[row])
            return key if name == "key" else seed_from_key(key)
        if name == "path":
            path = int(specs._path[row])
            return specs._paths[path] if path >= 0 else None
        if name == "reference_key" and specs._reference is not None:
            ref = int(specs._reference[row])
            return specs._references._key(specs._references._digest[ref]) if ref >= 0 else None
        t = int(specs._template[row])
        tail = specs._tails[t]
        return tail[name] if name in tail else specs._templates[t][name]

    def __getattr__(self, name):
        """A field as the typed spec has it (None where the spec's dict lacks it)."""
        if name not in _VIEW_FIELDS:
            raise AttributeError(name)
        if name in ("is_timing", "is_ladder"):
            timing = self.get("timing")
            return timing is not None and (name == "is_timing" or timing.get("method") == "ladder")
        if name == "kind":
            return self["kind"]
        try:
            return self[name]
        except KeyError:
            return None

    def __iter__(self):
        return iter(made([[self]])[0][0].as_dict())

    def __len__(self) -> int:
        return len(made([[self]])[0][0].as_dict())


def made(units: list[list]) -> list[list]:
    """The units (lists of specs) with each `SpecView` made its typed spec (`specs.FitSpec`,
    `ReferenceSpec`), a Specs' rows at once; a spec already made stays as it is."""
    rows: dict = {}       # id(Specs) -> (Specs, its rows)
    for unit in units:
        for spec in unit:
            if isinstance(spec, SpecView):
                rows.setdefault(id(spec.specs), (spec.specs, []))[1].append(spec.row)
    dicts = {key: iter(specs._specs(np.array(held, dtype=np.intp))) for key, (specs, held) in rows.items()}
    return [[next(dicts[id(spec.specs)]) if isinstance(spec, SpecView) else spec for spec in unit] for unit in units]


class _SpecValues(ValuesView):
    def __iter__(self):
        return self._mapping._all()


class _SpecItems(ItemsView):
    def __iter__(self):
        return ((spec.key, spec) for spec in self._mapping._all())


@dataclass(frozen=True)
class Plan:
    """All tasks of a run: fit specs and the reference specs they point at, by key (`Specs`)."""

    fits: Specs
    references: Specs
    datasets: dict        # entry key -> {name, fingerprint, n_rows, n_features, classes, folds, heldout}
    # What the run says with the plan, before any fit: solver entries that share no problem.
    notes: tuple = ()
    timing_fits: int = 0  # of the fits, the timing fits (`timing_template`)

    def __len__(self):
        return len(self.fits)


def concat_plans(plans: list[Plan]) -> Plan:
    """One plan of several (a search's rounds, or one round's datasets), in order: their specs'
    columns joined, a key met again (a reference two rounds share) kept once, first come."""
    if len(plans) == 1:
        return plans[0]
    refs, ref_rows = _concat_specs([p.references for p in plans], "ref-")
    offsets = np.cumsum([0] + [len(p.references) for p in plans])[:-1]
    fits, _ = _concat_specs([p.fits for p in plans], "fit-", (refs, ref_rows, offsets))
    datasets = {}
    for p in plans:
        datasets.update(p.datasets)
    return Plan(fits=fits, references=refs, datasets=datasets)


def _concat_specs(parts: list[Specs], prefix: str, references=None) -> tuple[Specs, np.ndarray]:
    """(`Specs` joined column by column, each joined row's row among the kept ones): a key met
    again is kept once, at its first row. references: (the joined references, their rows'
    map, each part's offset into them), for fits: their reference rows follow the map."""
    templates, tails, paths = [], [], []
    cols = {"template": [], "fold": [], "digest": [], "path": [], "reference": []}
    for i, s in enumerate(parts):
        cols["template"].append(s._template + len(templates))
        cols["fold"].append(s._fold)
        cols["digest"].append(s._digest)
        cols["path"].append(np.where(s._path >= 0, s._path + len(paths), -1))
        if references is not None:
            ref = s._reference if s._reference is not None else np.full(len(s._digest), -1, np.int64)
            cols["reference"].append(np.where(ref >= 0, ref + references[2][i], -1))
        templates += s._templates
        tails += s._tails
        paths += s._paths
    joined = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}
    digest = joined["digest"].astype(np.uint64)
    n = len(digest)
    order = np.argsort(digest, kind="stable")
    ordered = digest[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]] if n else np.zeros(0, bool)
    first_of = np.empty(n, dtype=np.int64)
    first_of[order] = order[np.flatnonzero(starts)[np.cumsum(starts) - 1]] if n else order
    keep = np.unique(first_of)
    rank = np.full(n, -1, dtype=np.int64)
    rank[keep] = np.arange(len(keep))
    reference, refs = None, None
    if references is not None:
        refs, ref_rows, _ = references
        joined_ref = joined["reference"][keep]
        reference = (np.where(joined_ref >= 0, ref_rows[np.maximum(joined_ref, 0)], -1) if len(ref_rows)
                     else np.full(len(keep), -1, dtype=np.int64))
    out = Specs(prefix, templates, tails, joined["template"][keep], joined["fold"][keep], digest[keep],
                joined["path"][keep], paths, reference, refs)
    return out, rank[first_of]


def _problem_params(merged: dict, spec) -> dict:
    p = {k: merged[k] for k in PROBLEM_KEYS if k in merged}
    if p.get("class_weight") is None:      # unweighted stays out of the key, as before the key existed
        p.pop("class_weight", None)
    p.setdefault("loss", "hinge")
    p.setdefault("intercept", spec.intercepts[0])
    p.setdefault("kernel", "linear")
    if "lambda" not in p:
        C = p.get("C", 1.0)
        p["C"] = math.inf if C in ("inf", "Infinity") else float(C)
    if p["kernel"] == "linear":
        for k in ("gamma", "degree", "coef0"):
            p.pop(k, None)
    else:
        p.setdefault("gamma", "scale")
        if p["kernel"] == "poly":
            p.setdefault("degree", 3)
            p.setdefault("coef0", 0.0)
        else:
            p.pop("degree", None)
            p.pop("coef0", None)
    if p["intercept"] == "regularized":
        p.setdefault("intercept_scaling", 1.0)
    else:
        p.pop("intercept_scaling", None)
    if p["loss"] != "huber_hinge":
        p.pop("huber_k", None)
    return p


def build_plan(exp: Experiment, labels: dict, tail_of=None) -> Plan:
    """The folds and the solver x grid x fold product as fit and reference specs.

    labels: dataset entry -> (meta, y), as `run.materialise_datasets` returns (pure: the plan
    depends on the experiment and on the datasets only through their fingerprints and labels).
    tail_of(dataset entry, solver entry, index of the point in its entry's points) -> fields its
    fit specs carry outside their keys (a search's round, a warm start: pipeline/search/)."""
    import solvers

    if not isinstance(exp, Experiment):
        raise TypeError(f"build_plan takes the Experiment that config.validate returns, not a {type(exp).__name__}")
    cv = as_dict(exp.cv)
    if cv.get("n_train") is None:   # unset (every scheme but ordered) stays out of the keys, so they stay as they were
        cv.pop("n_train", None)
    fits, datasets = _SpecColumns("fit-"), {}
    paths: dict = {}      # C path text -> each fold's path key (`_by_fold`)
    texts: dict = {}      # id of a shared sub-dict -> (it, its canonical JSON) (`_canonical_shared`)
    for dkey, ds in exp.datasets.items():
        if dkey not in labels:
            raise ValueError(f"datasets.{dkey}: not materialised (call materialise_datasets first)")
        meta, y = labels[dkey]
        rows_seed = seed_from_key(spec_key({"rows": meta["fingerprint"], "seed": exp.seed}))
        check_labels(f"datasets.{dkey}", meta["name"], y, cv)
        rows = subsample_rows(y, ds.max_rows, rows_seed)
        check_labels(f"datasets.{dkey}", meta["name"], y[rows], cv, ds.max_rows)
        try:
            yb, classes = binary_labels(y[rows], ds.positive)
        except ValueError as exc:
            raise ConfigError(f"datasets.{dkey}.positive: {exc}") from None
        folds_seed = seed_from_key(spec_key({"folds": meta["fingerprint"], "cv": cv, "seed": exp.seed}))
        folds = make_folds(yb, cv, folds_seed)
        data = {"entry": dkey, "name": meta["name"], "fingerprint": meta["fingerprint"],
                "scale": ds.scale, "max_rows": ds.max_rows, "rows_seed": rows_seed,
                "positive": ds.positive, "cv": cv, "folds_seed": folds_seed}
        datasets[dkey] = {**data, "n_rows": int(len(rows)), "n_features": int(meta["n_features"]),
                          "classes": classes, "folds": folds, "heldout": heldout_rows(yb, cv, folds_seed)}
        for skey, sc in exp.solvers.items():
            if sc.datasets is not None and dkey not in sc.datasets:
                continue
            name = sc.solver
            spec = solvers.get_solver(name)
            plugin, plugin_text = _plugin_of(name)
            base = thaw(sc.params)
            ds_problem = thaw(ds.problem)
            for index, point in enumerate(thaw(sc.points)):
                # A dataset's own problem keys (a paper's lambda per dataset) replace the grid's.
                merged, point = apply_dataset_problem(base, point, ds_problem)
                problem = _problem_params(merged, spec)
                if "class_weight" in problem and len(classes) != 2:
                    raise ConfigError(f"solvers.{skey}: class_weight on datasets.{dkey} ({len(classes)} classes): "
                                      "class weights are for binary problems here (labels -1 and 1)")
                budget = {k: merged.get(k) for k in BUDGET_KEYS}
                budget["tol"] = float(budget["tol"] if budget["tol"] is not None else DEFAULT_TOL)
                if budget["time_limit_s"] is None:
                    budget["time_limit_s"] = exp.run.timeout_s
                if exp.run.time_repeats > 1:     # in the key (fit_time_s is measured otherwise); 1 keeps keys as they were
                    budget["time_repeats"] = int(exp.run.time_repeats)
                if merged.get(SUBSAMPLE_KEY) is not None:     # a halving rung's share of the rows
                    budget[SUBSAMPLE_KEY] = float(merged[SUBSAMPLE_KEY])
                task = {k: merged[k] for k in TASK_KEYS if k in merged}
                sparams = {k: v for k, v in merged.items()
                           if k not in PROBLEM_KEYS + BUDGET_KEYS + TASK_KEYS + (SUBSAMPLE_KEY,)}
                template = {"kind": "fit", "data": data, "fold": _FOLD_MARK, "solver_entry": skey,
                            "solver": name, "solver_version": spec.version, "family": spec.family,
                            "problem": problem, "budget": budget, "solver_params": sparams,
                            "task": task, "grid_point": _normalise(point),
                            "trace": _trace_spec(exp.run),
                            # Timing repeats need each solve to start where the first did: cold.
                            "warm_start": bool(exp.run.warm_start and spec.warm_start and exp.run.time_repeats == 1
                                               and "lambda" not in problem and len(classes) == 2)}
                if exp.run.keep_models:   # only when asked, so default keys stay as they were
                    template["keep_model"] = True
                # What a search reads of each fit (pipeline/search/): the certificate of the CV
                # error bound (certified, path; a certified fit's v is also the model a later round
                # starts from), or the model the next halving rung starts from. In the key: the records of a
                # grid's fits lack them.
                if exp.search_kind == "certified":
                    template["cv_bound"] = True
                elif exp.search_kind == "heldout":    # each fit's tolerance from epsilon (tasks._gap_for_epsilon)
                    se = exp.search
                    template.update(cv_bound=True, gap_rule={"epsilon": float(se.epsilon), "refine": float(se.refine),
                                                             "min_tol": float(se.min_tol)})
                elif exp.search_kind == "path":   # single balls; LIBLINEAR's stopping test along each fold's path
                    template.update(cv_bound="single", path_stop={"eps": PATH_EPS})
                elif exp.search_kind == "halving":
                    template["keep_state"] = True
                if plugin is not None:    # its sha256 in the key: an edited file reruns its fits
                    template["plugin"] = {"source": plugin.source, "sha256": plugin.sha256}
                # The plugin's text is shipped with the spec, outside its key.
                tail = {"plugin_text": plugin_text} if plugin_text is not None else {}
                if tail_of is not None:
                    tail.update(tail_of(dkey, skey, index))
                n_folds = min(len(folds), sc.folds or len(folds))
                fits.add(template, tail, *_by_fold(template, n_folds, "fit-", paths, texts))
    notes = tuple(shared_problem_notes(fits.templates, exp))
    n_timing = _add_timing_fits(fits, datasets, exp.run, paths, texts, exp.report.get("target"))
    fits, refs = _attach_references(fits, datasets, exp.run, paths, texts)
    return Plan(fits=fits, references=refs, datasets=datasets, notes=notes, timing_fits=n_timing)


# ------------------------------------------------------------------------ timing fits
def plan_lines(plan: "Plan", exp: Experiment) -> list[str]:
    """What the run says of its plan before any fit: how many of its fits are timing fits, and
    every solver entry that shares no problem with the others (`shared_problem_notes`)."""
    out = []
    if plan.timing_fits:
        out.append(f"timing fits: {plan.timing_fits} of these fits time the solvers on the problems they share, for "
                   f"the report's speed comparisons: cold starts, densely traced (run.timing={exp.run.timing})")
    return out + [f"note: {line}" for line in plan.notes]


def problem_text(template: dict) -> str:
    """What makes two fits' problems one (the dataset entry's rows and settings, and every
    problem key): the same text, the same problem; fits of different texts are never compared."""
    return canonical_json({"data": template["data"], "problem": template["problem"]})


def compared_problems(templates: list) -> set:
    """The problems (`problem_text`) that two or more solver entries fit: the ones a report
    compares solvers on, and the only ones `run.reference=auto` and `run.timing=auto` pay for."""
    entries: dict = {}
    for t in templates:
        entries.setdefault(problem_text(t), set()).add(t["solver_entry"])
    return {p for p, e in entries.items() if len(e) >= 2}


def timing_template(template: dict, budget_s=TIMING_BUDGET_S, target=REPORT_TARGET) -> dict:
    """The timing fit of a fit template: the same problem, solver, parameters and budget, started
    cold and traced at every due point (the recorder's overhead budget off: recording pauses the
    solver's clock, so a dense trace costs wall time, not solver time). A reference library
    (family "reference": one call, no trace) is timed by a ladder of cold solves capped at 1, 2,
    3, ... iterations (tasks._ladder), which stops at the report's target. The `timing` field is
    in the key, so a timing fit never shares a key with a sweep fit, and the keys of existing
    specs are unchanged; its budget (`run.timing_budget_s`) and a ladder's target
    (`report.target`) are in it where they differ from their defaults, so that the default keys
    are those of before and a run with another budget or target computes its timing fits again."""
    out = {k: v for k, v in template.items() if k != "keep_model"}
    trace = {**template["trace"], "enabled": True, "max_overhead": None}
    ladder = template["family"] == "reference"
    timing = {"method": "ladder" if ladder else "trace", "per_decade": int(trace["per_decade"])}
    if budget_s != TIMING_BUDGET_S:
        timing["budget_s"] = None if budget_s is None else float(budget_s)
    if ladder and target is not None and float(target) != REPORT_TARGET:
        timing["target"] = float(target)
    out.update(warm_start=False, trace=trace, timing=timing)
    return out


def _add_timing_fits(fits: "_SpecColumns", datasets: dict, run, paths: dict, texts: dict, target=None) -> int:
    """Add a timing fit (`timing_template`) for each binary fit template whose problem gets a
    certified f* and is compared (`run.timing`: auto, the problems two or more entries share;
    true, every problem with a reference; false, none). Returns how many timing fits were added."""
    if run.timing is False or run.reference is False:
        return 0
    compared = compared_problems(fits.templates)
    spread = {problem_text(t) for t in fits.templates if _distributed(t["solver"])}
    counts = np.bincount(np.frombuffer(fits.template, dtype=np.int32), minlength=len(fits.templates)).tolist()
    added = 0
    for template, tail, rows in list(zip(fits.templates, fits.tails, counts)):
        info = datasets[template["data"]["entry"]]
        shared = problem_text(template) in compared
        if len(info["classes"]) != 2 or not rows or not (shared or (run.timing is True and run.reference is True)):
            continue
        if reference_solver(template["problem"], info["n_features"]) is None:
            continue
        timed = timing_template(template, run.timing_budget_s, target)
        if problem_text(template) in spread:
            # A distributed fit is timed on its driver's wall clock, across processes: the fits
            # it is compared with are timed on their own process's wall clock, not its CPU
            # seconds, so that the report can put them in one ratio (engine/distributed.py).
            timed["timing"]["clock"] = "wall"
        fits.add(timed, tail, *_by_fold(timed, rows, "fit-", paths, texts))
        added += rows
    return added


def ladder_twins(fits: "Specs") -> dict[str, str]:
    """Each ladder timing fit's key -> its sweep twin's key: the library's own sweep fit of the same
    problem, parameters, budget and fold (the template `timing_template` made it from). For a
    library the two are the same cold solve, so the ladder takes the twin's as its top rung
    instead of solving it again (tasks._ladder). Found from the templates (the sweep templates of
    libraries, as timing templates, against the ladders' own), then row by row on the fold."""
    ladders = [j for j, t in enumerate(fits._templates) if (t.get("timing") or {}).get("method") == "ladder"]
    if not ladders:
        return {}
    libraries = {i: t for i, t in enumerate(fits._templates) if t.get("family") == "reference" and "timing" not in t}
    twin_of = {}
    by_args: dict = {}
    for j in ladders:
        timing = fits._templates[j]["timing"]
        args = (timing.get("budget_s", TIMING_BUDGET_S), timing.get("target", REPORT_TARGET))
        if args not in by_args:
            by_args[args] = {canonical_json(timing_template(t, *args)): i for i, t in libraries.items()}
        own = dict(fits._templates[j])
        # A ladder timed on the wall clock (its problem shared with a distributed entry) is still
        # its twin's solve: the clock says how it is timed, not what it solves.
        own["timing"] = {k: v for k, v in timing.items() if k != "clock"}
        i = by_args[args].get(canonical_json(own))
        if i is not None:
            twin_of[j] = i
    if not twin_of:
        return {}
    template, fold = fits._template.astype(np.int64), fits._fold.astype(np.int64)
    slot = template * (1 << 32) + fold
    twins = np.isin(template, list(twin_of.values()))
    row_of = dict(zip(slot[twins].tolist(), np.flatnonzero(twins).tolist()))
    out = {}
    for row in np.flatnonzero(np.isin(template, list(twin_of))).tolist():
        twin = row_of.get(twin_of[int(template[row])] * (1 << 32) + int(fold[row]))
        if twin is not None:
            out[fits._key(fits._digest[row])] = fits._key(fits._digest[twin])
    return out


def _distributed(solver: str) -> bool:
    import solvers
    try:
        return bool(solvers.get_solver(solver).distributed)
    except solvers.SolverError:
        return False


def shared_problem_notes(templates: list, exp: Experiment) -> list[str]:
    """One line per solver entry that shares no problem with any other selected entry, naming
    the key and the value that would make them comparable (`grid.loss='[hinge]'`): the report
    ranks an entry only against entries on the same problem, so such an entry is never timed
    against the others. Said before any fit (`run.py` prints it with the plan)."""
    import solvers

    if len({t["solver_entry"] for t in templates}) < 2:
        return []
    problems: dict = {}          # entry -> its problem texts; entry -> its problems
    of_entry: dict = {}
    for t in templates:
        problems.setdefault(t["solver_entry"], set()).add(problem_text(t))
        of_entry.setdefault(t["solver_entry"], []).append(t)
    out = []
    for entry, mine in problems.items():
        others = [e for e in problems if e != entry]
        if any(mine & problems[e] for e in others):
            continue
        out.append(_no_shared_problem(entry, others, of_entry, exp, solvers))
    return out


_CATEGORICAL = ("kernel", "loss", "intercept")


def _no_shared_problem(entry: str, others: list, of_entry: dict, exp: Experiment, solvers) -> str:
    """The line of `shared_problem_notes` for one entry: which key keeps it apart and what to set."""
    def values(e, key):
        return sorted({str(t["problem"].get(key)) for t in of_entry[e]})

    def takes(e, key):
        spec = solvers.get_solver(exp.solvers[e].solver)
        return {"kernel": spec.kernels, "loss": spec.losses, "intercept": spec.intercepts}[key]

    head = f"solvers.{entry} shares no problem with {', '.join(others)}"
    for key in _CATEGORICAL:
        mine = set(values(entry, key))
        theirs = set().union(*(values(e, key) for e in others))
        if mine & theirs:
            continue
        common = set(takes(entry, key)).intersection(*(takes(e, key) for e in others))
        fix = (f"set grid.{key}='[{sorted(common)[0]}]' (a {key} all of them take) to compare them"
               if common else f"no {key} is taken by all of them: compare {entry} with solvers of its {key}")
        return (f"{head} ({key}: {entry} solves {', '.join(sorted(mine))}, they solve {', '.join(sorted(theirs))}): "
                f"the report times it apart from them and puts it in no ratio; {fix}.")
    # Loss, intercept and kernel meet: a numeric key (C, gamma, ...) or a dataset keeps them apart.
    numeric = [k for k in ("C", "lambda", "gamma", "degree", "coef0", "huber_k", "intercept_scaling")
               if set(values(entry, k)) != set().union(*(values(e, k) for e in others))]
    key = numeric[0] if numeric else "datasets"
    fix = (f"set one sweep for all, e.g. grid.{key}='[{','.join(values(entry, key))}]'"
           if numeric and "None" not in values(entry, key) else "run them on the same datasets")
    return (f"{head} (they differ in {key}): the report times it apart from them and puts it in no ratio; "
            f"{fix}.")


class _SpecColumns:
    """`Specs` as `build_plan` makes them: a template at a time, with its folds' keys (8-byte
    digests) and path keys (`_by_fold`)."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.templates, self.tails = [], []
        self.template, self.fold, self.path = array("i"), array("i"), array("i")
        self.digests = bytearray()
        self.paths, self._path_ids, self._path_rows = [], {}, {}

    def add(self, template: dict, tail: dict, digests: bytes, path_keys: list) -> None:
        t = len(self.templates)
        self.templates.append(template)
        self.tails.append(tail)
        n = len(path_keys)
        self.template.extend([t] * n)
        self.fold.extend(range(n))
        self.digests += digests
        # The points of one C path share their list of path keys (`_by_fold`): its ids once.
        if path_keys.count(None) == n:      # no C path (no warm start, or a lambda problem)
            self.path.extend(array("i", [-1]) * n)
            return
        held = self._path_rows.get(id(path_keys))
        if held is None or held[0] is not path_keys:
            held = self._path_rows[id(path_keys)] = (path_keys, array("i", map(self._path_id, path_keys)))
        self.path.extend(held[1])

    def _path_id(self, path) -> int:
        if path is None:
            return -1
        i = self._path_ids.get(path)
        if i is None:
            i = self._path_ids[path] = len(self.paths)
            self.paths.append(path)
        return i

    def digest_array(self) -> np.ndarray:
        # The digest's bytes read as one big-endian integer: its hex is the key's.
        return np.frombuffer(self.digests, dtype=">u8").astype(np.uint64)

    def specs(self, keep=None, reference=None, references=None) -> Specs:
        """The columns as Specs, the rows `keep` only (an index array; default all, each key once:
        equal specs, two grid points made equal by a dataset's own problem, are one task, first
        come)."""
        digest = self.digest_array()
        if keep is None:
            ordered = np.sort(digest)
            keep = slice(None)
            if (ordered[1:] == ordered[:-1]).any():   # rare: find the first of each key (more memory)
                keep = np.sort(np.unique(digest, return_index=True)[1])
            del ordered
        def column(a: array) -> np.ndarray:
            return np.frombuffer(a, dtype=np.int32)[keep] if len(a) else np.zeros(0, np.int32)

        return Specs(self.prefix, self.templates, self.tails, column(self.template), column(self.fold),
                     digest[keep], column(self.path), self.paths,
                     None if reference is None else reference[keep], references)


def _trace_spec(run) -> dict:
    """What a fit's trace records. Test error at each point is added to the spec only when asked
    (run.trace_test_error), so the keys of runs without it are unchanged."""
    out = {"enabled": bool(run.trace), "per_decade": int(run.trace_per_decade)}
    if run.trace_test_error:
        out["test_error"] = True
    if run.trace_overhead != 0.05:   # the default stays out of the key, so existing shards stay valid
        out["max_overhead"] = run.trace_overhead
    return out


# smooth_newton's direct Newton systems are dense in the features: up to here (its Cholesky
# limit) it certifies a large-C hinge that dcd leaves uncertified at its pass cap; on thousands
# of sparse features dcd is the faster certifier (Linear solvers benchmark, "Certified hinge
# solves: smooth_newton").
SMOOTH_NEWTON_MAX_FEATURES = 2047


def reference_solver(problem: dict, n_features: int | None = None) -> str | None:
    """The certifying solver for a problem: the first registered candidate of REFERENCE_SOLVERS
    that takes its kernel and intercept (smooth_newton only up to SMOOTH_NEWTON_MAX_FEATURES)."""
    import solvers
    names = set(solvers.solver_names())
    if n_features is None or n_features > SMOOTH_NEWTON_MAX_FEATURES:
        names.discard("smooth_newton")
    if problem.get("kernel", "linear") == "linear" or problem["intercept"] != "free":
        cands = REFERENCE_SOLVERS.get((problem.get("kernel", "linear") == "linear", problem["loss"], problem["intercept"]), [])
    else:
        cands = REFERENCE_SOLVERS.get((False, problem["loss"], problem["intercept"]), [])
    for c in cands:
        if c in names:
            spec = solvers.get_solver(c)
            if problem.get("kernel", "linear") in spec.kernels and problem["intercept"] in spec.intercepts \
                    and (spec.sample_weight or "class_weight" not in problem):
                return c
    return None


def _plugin_of(name: str) -> tuple:
    """(plugin, file text) of a solver a plugin registered in this process, else (None, None):
    its fit specs name the plugin (its sha256 in their keys) and carry the file for workers
    that do not have it (`tasks.ensure_plugin`)."""
    from solvers.registry import plugin_of
    plugin = plugin_of(name)
    if plugin is None:
        return None, None
    if plugin.sha256 is None:
        return plugin, None
    with open(plugin.source, encoding="utf-8") as fh:
        return plugin, fh.read()


def _finish(spec: dict, prefix: str) -> None:
    """Key, seed and C path of a spec. The key hashes what determines the result; the path
    (the same spec but for C) and, for fits, the reference are added after it, so neither a
    neighbour on the path nor the reference setting changes a finished point's key."""
    spec["key"] = spec_key(spec, prefix)
    spec["seed"] = seed_from_key(spec["key"])
    spec["path"] = path_key(spec) if spec.get("warm_start", True) else None


# The fold's place in a spec's canonical JSON while the specs of one grid point are keyed together.
_FOLD_MARK = "\x00fold\x00"


def _by_fold(template: dict, n_folds: int, prefix: str, paths: dict | None = None,
             texts: dict | None = None) -> tuple[bytes, list]:
    """The keys and path keys of the template's spec for each fold 0..n_folds-1, keyed as `_finish`
    keys it, in bulk: the key of each as the first 8 bytes of its sha256 (its 16 hex digits after
    the prefix), joined, and its path key (or None). The specs of one grid point differ only in
    their fold, so their canonical JSON (and that of their C path) is made once, with a mark where
    the fold goes, and each fold's text is the mark replaced by the fold's number (as json.dumps
    writes an int). Only the sha256 is per spec: planning normalised and serialised each spec twice,
    the plan's largest cost per fit at scenario (g)'s 50,000 fits (The sweep benchmark, "Large
    sweeps"). The points of one C path share their path text, so `paths` (text -> each fold's path
    key) hashes it once per fold, not once per point; `texts` holds the canonical text of the
    sub-dicts the specs share (`_canonical_shared`). A template whose text holds the mark elsewhere
    (a parameter's value) is keyed spec by spec."""
    mark = json.dumps(_FOLD_MARK)
    texts = {} if texts is None else texts
    head, *tail = _canonical_shared(template, texts).split(mark)
    path_text = _path_text(template, texts) if template.get("warm_start", True) else None
    path_parts = path_text.split(mark) if path_text is not None else None
    if len(tail) != 1 or (path_parts is not None and len(path_parts) != 2):
        specs = [{**template, "fold": fold} for fold in range(n_folds)]
        for spec in specs:
            _finish(spec, prefix)
        return b"".join(bytes.fromhex(s["key"][len(prefix):]) for s in specs), [s["path"] for s in specs]
    folds = range(n_folds)
    path_keys = [None] * n_folds
    if path_parts is not None:
        paths = {} if paths is None else paths
        path_keys = paths.get(path_text)
        if path_keys is None or len(path_keys) < n_folds:
            path_keys = paths[path_text] = ["path-" + _digest(f"{path_parts[0]}{fold}{path_parts[1]}") for fold in folds]
    sha256 = hashlib.sha256
    digests = b"".join(sha256(f"{head}{fold}{tail[0]}".encode()).digest()[:KEY_LENGTH // 2] for fold in folds)
    return digests, path_keys if len(path_keys) == n_folds else path_keys[:n_folds]


def _canonical_shared(obj: dict, texts: dict) -> str:
    """canonical_json(obj), the text of each dict or list value made once: the specs of a plan
    share their data, budget, solver parameters and trace settings (one object each), and
    normalising them again for every grid point was most of the planning's time. json.dumps with
    sorted keys and no whitespace joins a dict's items as "key":value, so the parts' texts
    joined in key order are the whole's. `texts`: id -> (the object, kept alive so that its id
    is not reused, its text)."""
    parts = []
    for key in sorted(obj):
        value = obj[key]
        # A container by its id; a str, int or bool (and each key's own text) by its type and
        # value; a float never (-0.0 == 0.0, and nan != nan).
        slot = id(value) if isinstance(value, (dict, list)) else \
            (type(value), value) if isinstance(value, (str, int)) else None
        held = texts.get(slot) if slot is not None else None
        if held is None or held[0] is not value and isinstance(value, (dict, list)):
            held = (value, canonical_json(value))
            if slot is not None:
                texts[slot] = held
        name = texts.get(("key", key))
        if name is None:
            name = texts[("key", key)] = json.dumps(str(key))
        parts.append(f"{name}:{held[1]}")
    return "{" + ",".join(parts) + "}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


def path_key(spec: dict) -> str | None:
    """Specs with equal path keys differ only in C: one C path, run in one task in increasing C,
    each point warm-started from the last. None for a problem given by lambda (no C to scale)."""
    text = _path_text(spec)
    return None if text is None else "path-" + _digest(text)


def _path_text(spec: dict, texts: dict | None = None) -> str | None:
    """The canonical JSON a spec's path key hashes: the spec but for its key, seed, path,
    reference and C (texts: as `_canonical_shared` takes it)."""
    if "C" not in spec["problem"]:
        return None
    rest = {k: v for k, v in spec.items() if k not in ("key", "seed", "path", "reference_key")}
    rest["problem"] = {k: v for k, v in spec["problem"].items() if k != "C"}
    rest["grid_point"] = {k: v for k, v in spec.get("grid_point", {}).items() if k != "C"}
    return canonical_json(rest) if texts is None else _canonical_shared(rest, texts)


def _attach_references(fits: _SpecColumns, datasets: dict, run, paths: dict, texts: dict) -> tuple[Specs, Specs]:
    """The fits and their references as Specs: each binary fit points at the certified reference
    solve of its problem, by run.reference: true for all, false for none, auto only for problems
    that two or more solver entries fit (the comparison tables and figures; a plain CV sweep
    needs no f* and pays for none). A fit template's references are keyed in bulk, as its fits
    are (`_by_fold`); references are in order of their first fit."""
    n = len(fits.digests) // 8
    none = np.full(n, -1, np.int32)
    if run.reference is False:
        refs = Specs.empty("ref-")
        return fits.specs(reference=none, references=refs), refs
    budget = {"tol": float(run.reference_tol), "max_iter": int(run.reference_max_iter),
              "time_limit_s": run.reference_time_limit_s}
    counts = np.bincount(np.frombuffer(fits.template, dtype=np.int32), minlength=len(fits.templates))
    cands = _SpecColumns("ref-")     # the reference of each fit that has one, in the fits' order
    has, entry, entries = [], [], {}
    for template, rows in zip(fits.templates, counts.tolist()):
        info = datasets[template["data"]["entry"]]
        # f* is defined for binary problems; multiclass fits report summed certificates.
        ref = _reference(template["data"], template["problem"], budget, info["n_features"]) \
            if len(info["classes"]) == 2 else None
        has.append(ref is not None)
        entry.append(entries.setdefault(template["solver_entry"], len(entries)))
        if ref is not None:
            cands.add(ref, {}, *_by_fold(ref, rows, "ref-", paths, texts))
    has = np.repeat(np.array(has, bool), counts)
    digest = cands.digest_array()
    keep = np.ones(len(digest), bool)
    if run.reference == "auto":
        # A reference whose fits come from two or more solver entries: unique (reference, entry) pairs.
        pairs = np.unique(np.stack([digest, np.repeat(np.array(entry, np.uint64), counts)[has]], axis=1), axis=0)
        shared, n_entries = np.unique(pairs[:, 0], return_counts=True)
        keep = np.isin(digest, shared[n_entries >= 2])
    _, first, inverse = np.unique(digest[keep], return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    refs = cands.specs(keep=np.flatnonzero(keep)[first[order]])
    none[np.flatnonzero(has)[keep]] = rank[inverse.ravel()]
    return fits.specs(reference=none, references=refs), refs


def _reference(data: dict, problem: dict, budget: dict, n_features: int | None = None) -> dict | None:
    """The template of the reference solves of a problem (its fold marked, `_by_fold`), or None
    without a certified solver for it."""
    solver = reference_solver(problem, n_features)
    if solver is None:
        return None
    import solvers
    return {"kind": "reference", "data": data, "fold": _FOLD_MARK, "problem": problem, "solver": solver,
            "solver_version": solvers.get_solver(solver).version, "budget": budget}
