"""The results' columns (``results.parquet``, ``timing.parquet``) as SQL over the newest records
(`source.Source`), each of the type the table has always had.

The tables were once a pandas frame of every fit written by `DataFrame.to_parquet`; readers (the
report, the papers, a user's notebook) read the types that gave, and they stay: a column's type
is what pandas makes of its values, which depends only on which kinds of value it holds (ints
alone are int64, ints beside a missing value float64, booleans beside one objects written as
booleans, None alone an untyped column...), never on how many. So each column is two things:

- its values, as SQL: a record's typed field as it is, a JSON field cast to the type
  (``CAST(x::JSON AS DOUBLE)``, ``json_extract_string``), the spec's fields through `_profiles`;
- a prototype: a small pandas Series holding one value of each kind the column holds (the kinds
  counted by one scan of the rows, `_scan`), built as the frame built that column. pandas then
  gives its type; `pa.Schema.from_pandas` of the prototypes gives the table's schema, pandas'
  own metadata included, to which each record batch is cast.

What a row takes from its spec (the dataset, the loss, the param_* columns...) is made in Python
once per distinct spec (a *profile*: the spec's texts and the three flags that decide which
param_* names a row keeps), as pandas made it, and joined to the rows by DuckDB. Two kinds of
value are made in Python per row, in the record batches: an `info_*` column of lists or dicts
(JSON text as `json.dumps` writes it), and one of mixed kinds (written as strings, ``str(v)``).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field as dataclass_field
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from .shards import SPEC_PREFIX
from .source import Field, Source, lit, q

RESULT_COLUMNS = [
    "key", "dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version", "family",
    "loss", "kernel", "intercept", "C", "lambda_pegasos", "lambda_svmmaj", "gamma", "degree", "coef0",
    "fold", "seed", "status", "error", "n_iter", "fit_time_s", "primal_objective", "dual_objective",
    "duality_gap", "kkt_violation", "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test",
    "f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap", "rel_suboptimality",
    "rel_suboptimality_floored", "warm_from", "start", "start_from", "task_time_s",
]
# A timing fit's own columns (timing.parquet; plan.timing_template): how it was timed ("trace",
# a dense trace; "ladder", cold solves capped at 1, 2, 3, ... iterations) and the seconds its
# problem took to build from the fold's arrays (0 for a library, whose call does that inside).
TIMING_FIT_COLUMNS = ["timing_method", "setup_s"]
# The order of the results' rows.
ORDER = ["dataset", "solver_entry", "C", "fold", "key"]
# The record fields that are result columns as they are (None where a record lacks one).
RECORD_COLUMNS = ("n_iter", "fit_time_s", "primal_objective", "dual_objective", "duality_gap", "kkt_violation",
                  "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test", "task_time_s")
# The columns every row has before its param_* columns: a parameter of one of these names (C,
# loss, kernel...) is not repeated as param_<name>.
BASE_COLUMNS = frozenset(["key", "dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version",
                          "family", "loss", "kernel", "intercept", "C", "lambda_pegasos", "lambda_svmmaj", "gamma",
                          "degree", "coef0", "fold", "seed", "status", "error", "warm_from", "start", "start_from",
                          *TIMING_FIT_COLUMNS, *RECORD_COLUMNS,
                          "f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap",
                          "rel_suboptimality", "rel_suboptimality_floored"])
# Info keys the results already hold in their own columns (registry.fit adds them to every fit).
INFO_DUPLICATES = {"solver", "solver_version"}
# The spec fields a profile is made of (what a row takes from its spec), in the profile's key.
PROFILE_FIELDS = ("data", "problem", "solver", "solver_entry", "solver_version", "family", "solver_params", "task",
                  "grid_point", "timing", "search")
# The scalar record fields a row has as they are (missing: None where a record lacks one).
_SCALARS = ("status", "error", "warm_from", "start", "start_from", *RECORD_COLUMNS)


class TablesError(ValueError):
    """Shards whose values no table column can hold (a field of several kinds: numbers in one
    record, text in another): the message names the column and the kinds."""


# One value of each kind a field may hold: JSON's kinds (DuckDB's json_type) and a typed field's.
_REP = {"BIGINT": 1, "UBIGINT": 1, "int": 1, "DOUBLE": 0.5, "float": 0.5, "VARCHAR": "a", "str": "a",
        "BOOLEAN": True, "bool": True, "NULL": None, "ARRAY": [1], "OBJECT": {"a": 1}}
# A kind of JSON value a Parquet column of these tables holds as written: lists and dicts are
# JSON text where a table holds them (confusion matrices, info), never here.
_SCALAR_KINDS = {"BIGINT", "UBIGINT", "DOUBLE", "VARCHAR", "BOOLEAN", "NULL", "absent", "int", "float", "str", "bool"}


def _rep(kind: str):
    return _REP[kind]


def column_proto(field: Field | None, kinds: set, missing=None) -> pd.Series:
    """The prototype of a record field as a column: its values where a record has it, `missing`
    where it lacks it (None, or NaN for a column only some records have); for a typed field,
    the Series Arrow's to_pandas makes of its values, for a JSON field the one pandas makes of
    the parsed values."""
    if field is None:
        return pd.Series([missing])
    values = sorted(kinds - {"absent"})
    if not field.json:
        arr = pa.array([_rep(field.kind)] * bool(values) + [None] * ("absent" in kinds), type=field.arrow_type)
        if missing is None or arr.null_count == 0 or field.kind in ("int", "float", "str"):
            return arr.to_pandas()
        return pd.Series([missing if v is None else v for v in arr.to_pylist()])
    return pd.Series([_rep(k) for k in values] + [missing] * ("absent" in kinds))


def masked_proto(field: Field | None, pairs: set) -> pd.Series:
    """A column only the rows of a mask have (`pairs`: (in the mask, the field's kind) of the
    rows): the record's value there (None where it lacks it), NaN elsewhere."""
    inside = {k for m, k in pairs if m}
    outside = any(not m for m, _ in pairs)
    if field is not None and not field.json and field.kind in ("int", "float", "str"):
        arr = pa.array([_rep(field.kind)] * bool(inside - {"absent"}) + [None] * ("absent" in inside or outside),
                       type=field.arrow_type)
        return arr.to_pandas()
    values = sorted(inside - {"absent"})
    rep = (lambda k: _rep(field.kind)) if field is not None and not field.json else _rep
    return pd.Series([rep(k) for k in values] + [None] * ("absent" in inside or field is None) + [math.nan] * outside)


def info_columns(info: dict) -> dict:
    """A solver's `info` as ``info_<key>`` columns: scalars as they are, lists and dicts
    (Newton's per-level times, an interval of b) as JSON strings, so a Parquet column keeps one
    type and `json.loads` gives the value back."""
    return {f"info_{k}": json.dumps(v) if isinstance(v, (list, tuple, dict)) else v
            for k, v in info.items() if k not in INFO_DUPLICATES}


def as_strings(col: pd.Series) -> pd.Series:
    """A column of mixed kinds as strings (None kept): one Parquet column cannot hold both."""
    return col.map(lambda v: None if v is None else str(v))


def mixed(name: str, col: pd.Series) -> bool:
    """Whether a column is written as strings: a param_* column of more than one Python type,
    or an info_* or kernel parameter (gamma is "scale" for one entry and a number for another
    in one sweep) column of more than one kind of value (numbers count as one; missing values
    are not counted)."""
    if name.startswith("param_"):
        return col.map(type).nunique() > 1
    if not (name.startswith("info_") or name in ("gamma", "degree", "coef0")) or col.dtype != object:
        return False
    kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
             for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))}
    return len(kinds) > 1


def _sql_type(arrow_type: pa.DataType) -> str | None:
    """The SQL type a column's values are read as before the cast to its Arrow type (None: an
    untyped column, all null)."""
    if pa.types.is_null(arrow_type):
        return None
    if pa.types.is_integer(arrow_type):
        return "BIGINT"
    if pa.types.is_floating(arrow_type):
        return "DOUBLE"
    if pa.types.is_boolean(arrow_type):
        return "BOOLEAN"
    return "VARCHAR"


def _arrow(name: str, proto: pd.Series) -> pa.DataType:
    try:
        return pa.Array.from_pandas(proto).type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        kinds = sorted({type(v).__name__ for v in proto})
        raise TablesError(f"column {name!r} holds values of several kinds ({', '.join(kinds)}) in the shards, "
                          f"which one Parquet column cannot hold") from None


@dataclass
class Column:
    """One column of a table: its prototype (its type), and how its values are made: `sql`, a
    function of its SQL type (None for an untyped column) over the query's row, or `python`, a
    function of a record batch (the query's helper columns) made per batch."""
    name: str
    proto: pd.Series
    sql: Callable[[str | None], str] | None = None
    python: Callable | None = None
    reads_info: bool = False


@dataclass
class Query:
    """A table as one query: its columns in order, its rows (the FROM and ORDER BY of the query)
    and the helper columns the Python-made columns read from each batch."""
    columns: list[Column]
    rows: str
    order: str = ""
    helpers: dict[str, str] = dataclass_field(default_factory=dict)

    def schema(self) -> pa.Schema:
        """The table's schema, pandas' metadata included, from the columns' prototypes (each
        repeated to one length: a frame of them is the table in kinds)."""
        n = max(len(c.proto) for c in self.columns)
        frame = pd.DataFrame({c.name: c.proto.iloc[np.arange(n) % len(c.proto)].reset_index(drop=True)
                              for c in self.columns})
        for c in self.columns:
            _arrow(c.name, c.proto)       # the error naming the column, before pandas' own
        return pa.Schema.from_pandas(frame, preserve_index=False)

    def sql(self, schema: pa.Schema) -> str:
        cols = []
        for c in self.columns:
            kind = _sql_type(schema.field(c.name).type)
            if c.sql is None or kind is None:
                cols.append(f"NULL AS {q(c.name)}")
            else:
                value = c.sql(kind)
                # NaN is a missing number, as pandas writes it (Parquet null).
                if kind == "DOUBLE":
                    value = f"(CASE WHEN isnan(({value})::DOUBLE) THEN NULL ELSE ({value})::DOUBLE END)"
                cols.append(f"({value})::{kind} AS {q(c.name)}")
        cols += [f"{sql} AS {q(name)}" for name, sql in self.helpers.items()]
        return f"SELECT {', '.join(cols)} {self.rows}{' ORDER BY ' + self.order if self.order else ''}"


# ------------------------------------------------------------------------------------- profiles
def _loads_cache():
    cache: dict = {}

    def loads(text):
        if text is None:
            return _ABSENT
        if text not in cache:
            cache[text] = json.loads(text)
        return cache[text]
    return loads


_ABSENT = object()


def _derive(values: list, fn, missing=None) -> pd.Series:
    """fn of each profile's value of a spec field (`missing` where its spec lacks the field)."""
    return pd.Series([missing if v is _ABSENT else fn(v) for v in values])


def profile_frame(profiles: list[dict]) -> pd.DataFrame:
    """What rows take from their spec, one row per profile (a dict: each spec field's parsed
    value, or _ABSENT; and the flags held, confusion, classes), the columns as pandas made them
    over every fit: their kinds are the profiles'."""
    def values(name):
        return [p[name] for p in profiles]
    data, prob = values("data"), values("problem")
    out = {"dataset": _derive(data, lambda d: d["entry"]), "dataset_name": _derive(data, lambda d: d["name"]),
           "fingerprint": _derive(data, lambda d: d["fingerprint"])}
    for name in ("solver", "solver_entry", "solver_version", "family"):
        out[name] = _derive(values(name), lambda v: v)
    out["loss"] = _derive(prob, lambda p: p["loss"])
    out["kernel"] = _derive(prob, lambda p: p.get("kernel", "linear"))
    out["intercept"] = _derive(prob, lambda p: p["intercept"])
    out["_C"] = _derive(prob, lambda p: p.get("C", math.nan), math.nan)
    for name in ("gamma", "degree", "coef0"):
        out[name] = _derive(prob, lambda p, name=name: p.get(name))
    if any(p is not _ABSENT and "class_weight" in p for p in prob):    # a column only where a sweep weighs classes
        out["class_weight"] = _derive(prob, lambda p: (p["class_weight"] if isinstance(p["class_weight"], str) else
                                                       json.dumps(p["class_weight"], sort_keys=True))
                                      if "class_weight" in p else math.nan, math.nan)
    timing = values("timing")
    if any(t is not _ABSENT for t in timing):
        out["timing_method"] = _derive(timing, lambda t: t["method"] if t else None)
        if any(isinstance(t, dict) and t.get("clock") for t in timing):
            # Timed on the wall clock, beside a distributed fit (plan._add_timing_fits).
            out["clock"] = _derive(timing, lambda t: t.get("clock") if t else None)
    # A search's fits (pipeline/search/): the round (a halving rung) that asked for each.
    search = values("search")
    if any(s is not _ABSENT for s in search):
        out["search_round"] = _derive(search, lambda s: s.get("round") if isinstance(s, dict) else math.nan, math.nan)
    out.update(_params(profiles))
    for name, col in out.items():
        if mixed(name, col):
            out[name] = as_strings(col)
    return pd.DataFrame(out)


def _params(profiles: list[dict]) -> dict[str, pd.Series]:
    """The grid point and the solver's own parameters, as param_* columns (strings for mixed
    types); a problem given by lambda keeps it (a fixed one too): its C = 1/(lambda n) moves with
    each fold's n, so lambda is what names the point (report/common.py `point_C`)."""
    params = []
    for prof in profiles:
        p = prof["problem"] if prof["problem"] is not _ABSENT else {}
        given = {k: p[k] for k in ("lambda", "lambda_convention") if k in p}
        # The columns this row has: a parameter of one of their names is not repeated.
        row = set(BASE_COLUMNS)
        row |= {"class_weight"} if "class_weight" in p else set()
        row |= {"heldout_accuracy", "n_heldout"} if prof["held"] else set()
        row |= {"confusion_heldout"} if prof["confusion"] else set()
        row |= {"n_classes", "confusion_test"} if prof["classes"] else set()
        merged = dict(given)
        for name in ("solver_params", "task", "grid_point"):
            merged.update(prof[name] if prof[name] is not _ABSENT else {})
        params.append({f"param_{k}": v for k, v in merged.items() if k not in row})
    names = dict.fromkeys(name for p in params for name in p)
    return {name: pd.Series([p.get(name, math.nan) for p in params]) for name in names}


def _ranks(frame: pd.DataFrame) -> list[int]:
    """Each profile's place in the results' order of (dataset, solver entry), a missing value
    last, as pandas sorted them; equal pairs share a rank. Python orders strings by code point,
    as DuckDB orders them by UTF-8 bytes."""
    def sort_key(v):
        missing = v is None or (isinstance(v, float) and math.isnan(v))
        return (1, "") if missing else (0, v)
    pairs = [(sort_key(d), sort_key(e)) for d, e in zip(frame["dataset"], frame["solver_entry"])]
    rank = {pair: i for i, pair in enumerate(sorted(set(pairs)))}
    return [rank[pair] for pair in pairs]


# ------------------------------------------------------------------------------------ the query
class FitTables:
    """The fits' tables of a `Source`: the results (the sweep's fits) and the timing fits (a spec
    with `timing`: plan.timing_template), each a `Query` (None: no such fits), after one scan of
    the rows for their profiles and the kinds each column holds."""

    def __init__(self, src: Source):
        self.src = src
        self.f = src.fields
        self._cte = self._rows_cte()
        self.scanned = self._scan()

    # The fields' SQL -------------------------------------------------------------------------
    def _value(self, name: str, sql_type: str, alias: str = "k") -> str:
        f = self.f.get(name)
        return "NULL" if f is None else f.value_sql(sql_type, alias)

    def _kind(self, name: str, alias: str = "k") -> str:
        f = self.f.get(name)
        return "'absent'" if f is None else f.kind_sql(alias)

    def _present(self, name: str, alias: str = "k") -> str:
        f = self.f.get(name)
        return "false" if f is None else f.present_sql(alias)

    def _truthy(self, name: str, alias: str = "k") -> str:
        f = self.f.get(name)
        return "false" if f is None else f.truthy_sql(alias)

    def _profile_keys(self) -> list[str]:
        return [SPEC_PREFIX + name for name in PROFILE_FIELDS if SPEC_PREFIX + name in self.f]

    def _rows_cte(self) -> str:
        """The fits (each with its reference's key, its flags, and whether a timing fit) and the
        references (their f* and its certificate), as two CTEs, `r` and `f`."""
        ref = self._value(SPEC_PREFIX + "reference_key", "VARCHAR", "n")
        conf = (f"({self._truthy('n_heldout', 'n')} AND {self._present('confusion_heldout', 'n')} "
                f"AND {self._kind('confusion_heldout', 'n')} <> 'NULL')")
        fits = (f"SELECT n.*, CASE WHEN o.key IS NOT NULL THEN o.ref ELSE {ref} END AS _rk, "
                f"{self._truthy('n_heldout', 'n')} AS _held, {conf} AS _conf, {self._truthy('n_classes', 'n')} AS _classes, "
                f"{self._present(SPEC_PREFIX + 'timing', 'n')} AS _timed "
                f"FROM newest n LEFT JOIN _refof o ON o.key = n.key WHERE {self._value('kind', 'VARCHAR', 'n')} = 'fit'")
        refs = (f"SELECT n.key AS _ref_key, {self._value('status', 'VARCHAR', 'n')} AS _ref_status, "
                f"{self._kind('status', 'n')} AS _ref_status_k, "
                f"{self._value('f_star', 'DOUBLE', 'n')} AS _ref_fs, {self._kind('f_star', 'n')} AS _ref_fs_k, "
                f"{self._value('f_star_gap', 'DOUBLE', 'n')} AS _ref_gap, {self._kind('f_star_gap', 'n')} AS _ref_gap_k, "
                f"{self._value('f_star_solver', 'VARCHAR', 'n')} AS _ref_solver, "
                f"{self._kind('f_star_solver', 'n')} AS _ref_solver_k, "
                # No f* at all: the reference failed, or its sandbox was killed at its hard limit.
                f"({self._value('status', 'VARCHAR', 'n')} IS DISTINCT FROM 'error' AND {self._present('f_star', 'n')}) AS _ref_ok "
                f"FROM newest n WHERE {self._value('kind', 'VARCHAR', 'n')} = 'reference'")
        # Each fit's f* from its reference, and the suboptimality it can resolve: f* is only known
        # to within rel_gap = max(gap, 0) / |f*|, so (P - f*) / |f*| below it is floored to it.
        derived = ("SELECT *, CASE WHEN _ok AND _fs <> 0 THEN greatest(_gap, 0.0) / abs(_fs) END AS _relgap, "
                   "CASE WHEN _fs <> 0 AND NOT isnan(_fs) THEN (_P - _fs) / abs(_fs) END AS _raw FROM j")
        joined = (f"SELECT r.*, f.*, coalesce(f._ref_ok, false) AS _ok, CASE WHEN f._ref_ok THEN f._ref_fs END AS _fs, "
                  f"CASE WHEN f._ref_ok THEN f._ref_gap END AS _gap, {self._value('primal_objective', 'DOUBLE', 'r')} AS _P "
                  f"FROM r LEFT JOIN f ON f._ref_key = r._rk")
        known = ("SELECT *, (_raw IS NOT NULL AND NOT isnan(_raw) AND _relgap IS NOT NULL AND NOT isnan(_relgap)) AS _known "
                 "FROM d")
        return f"WITH r AS ({fits}), f AS ({refs}), j AS ({joined}), d AS ({derived}), k AS ({known})"

    # The scan ---------------------------------------------------------------------------------
    def _stats(self) -> dict[str, str]:
        """Per row, what decides a column's kinds (gathered as the distinct values over rows)."""
        out = {name: self._kind(name) for name in _SCALARS}
        for name in ("C", "setup_s", SPEC_PREFIX + "fold", SPEC_PREFIX + "seed",
                     *(n for n in self.f if n.startswith("env_"))):
            out[name] = self._kind(name)
        for name, mask in (("heldout_accuracy", "_held"), ("n_heldout", "_held"), ("n_classes", "_classes")):
            out[name] = f"CASE WHEN {mask} THEN {self._kind(name)} ELSE '~' END"
        out["_ref"] = ("CASE WHEN _ok THEN _ref_fs_k || '|' || _ref_gap_k || '|' || _ref_solver_k || '|' || "
                       "_ref_status_k ELSE '~' END")
        out["_known"] = "_known::VARCHAR"
        info = self.f.get("info")
        if info is not None and info.json:
            out["info"] = (f"coalesce(CASE WHEN json_type({info.col('k')}) = 'OBJECT' "
                           f"THEN json_structure({info.col('k')})::VARCHAR END, '~')")
        return out

    def _scan(self) -> dict[bool, tuple[list[dict], dict[str, set]]]:
        """timed -> (its profiles, column -> the kinds its rows hold): one scan of the fits."""
        keys = self._profile_keys()
        stats = self._stats()
        group = ["_timed", *(f"k.{q(k)}" for k in keys), "_held", "_conf", "_classes"]
        # The distinct rows of (profile, kinds): one DISTINCT, where an aggregate of the distinct
        # kinds per column would keep a hash table per column.
        rows = self.src.rows(f"{self._cte} SELECT DISTINCT {', '.join(group)}, {', '.join(stats.values())} FROM k")
        out: dict[bool, tuple[list, dict]] = {}
        seen: dict[tuple, dict] = {}
        loads = _loads_cache()
        n = len(group)
        for row in rows:
            timed, texts, flags = bool(row[0]), row[1:1 + len(keys)], row[1 + len(keys):n]
            profiles, kinds = out.setdefault(timed, ([], {}))
            if (timed, texts, flags) not in seen:
                prof = {name: _ABSENT for name in PROFILE_FIELDS}
                prof.update({k[len(SPEC_PREFIX):]: loads(t) for k, t in zip(keys, texts)})
                prof.update(held=bool(flags[0]), confusion=bool(flags[1]), classes=bool(flags[2]), _texts=texts)
                seen[(timed, texts, flags)] = prof
                profiles.append(prof)
            for name, value in zip(stats, row[n:]):
                kinds.setdefault(name, set()).add(value)
        return out

    # The tables -------------------------------------------------------------------------------
    def query(self, timed: bool) -> Query | None:
        """The query of the results (timed=False) or of the timing fits (timed=True)."""
        if timed not in self.scanned:
            return None
        profiles, kinds = self.scanned[timed]
        frame = profile_frame(profiles)
        keys = self._profile_keys()
        # The profiles as a table the rows join: the spec's texts and flags, then the columns.
        table = {f"_k{i}": pa.array([p["_texts"][i] for p in profiles], pa.string()) for i in range(len(keys))}
        table.update(_kh=pa.array([p["held"] for p in profiles]), _kc=pa.array([p["confusion"] for p in profiles]),
                     _kl=pa.array([p["classes"] for p in profiles]))
        # A profile's own columns are not carried through the sort (a row holds the profile's
        # number, `_pid`): they are taken per record batch (`Column.python`), and what the sort
        # needs of them, the order of (dataset, solver entry), is the profile's rank.
        self.profile_columns = {}
        for name in frame.columns:
            values = pa.Array.from_pandas(frame[name])
            self.profile_columns[name] = values
            if name == "_C":        # C is computed per row (a record's own C, else its problem's)
                table["_p__C"] = values if not pa.types.is_null(values.type) else pa.nulls(len(frame), pa.float64())
        table["_pid"] = pa.array(range(len(profiles)), pa.int64())
        table["_rank"] = pa.array(_ranks(frame), pa.int64())
        name = f"_profiles_{int(timed)}"
        self.src.con.register(name, pa.table(table))
        on = [f"k.{q(k)} IS NOT DISTINCT FROM p._k{i}" for i, k in enumerate(keys)]
        on += ["k._held = p._kh", "k._conf = p._kc", "k._classes = p._kl"]
        rows = f"FROM ({self._cte} SELECT * FROM k WHERE _timed = {str(timed).lower()}) k JOIN {name} p ON {' AND '.join(on)}"
        columns = self._columns(frame, kinds, profiles)
        order = ", ".join(["_rank", *(f"{q(c)} ASC NULLS LAST" for c in ORDER[2:])])
        extra = sorted(c.name for c in columns if c.name not in RESULT_COLUMNS)
        by_name = {c.name: c for c in columns}
        names = RESULT_COLUMNS + extra
        if timed:
            names = [c for c in names if c not in TIMING_FIT_COLUMNS] + TIMING_FIT_COLUMNS
        helpers = {"_pid": "p._pid", "_rank": "p._rank"}
        if any(c.python and c.reads_info for c in columns):
            helpers["_info_raw"] = f"k.{q('info')}"
        return Query([by_name[n] for n in names], rows, order, helpers)

    def _columns(self, frame: pd.DataFrame, kinds: dict[str, set], profiles: list[dict]) -> list[Column]:
        f = self.f
        cols: list[Column] = []

        def add(name, proto, sql=None, python=None):
            cols.append(Column(name, proto, sql, python))

        def scalar(name, out=None, missing=None, source=None):
            fld = f.get(source or name)
            nested = kinds.get(source or name, set()) - _SCALAR_KINDS
            if nested:
                raise TablesError(f"column {out or name!r} holds {' and '.join(sorted(nested)).lower()} values in the "
                                  f"shards, where a table column holds numbers or text")
            add(out or name, column_proto(fld, kinds.get(source or name, set()), missing),
                lambda t, n=source or name: self._value(n, t, "k"))

        def profiled(name):
            add(name, frame[name], python=lambda batch, n=name, a=self.profile_columns: a[n].take(batch.column("_pid")))

        add("key", column_proto(f["key"], {"str"}), lambda t: "k.key")
        for name in ("dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version", "family",
                     "loss", "kernel", "intercept"):
            profiled(name)
        add("C", *self._c(frame, kinds))
        for name in RECORD_COLUMNS:
            scalar(name)
        c, m = f"CAST(({self._c_sql()}) AS DOUBLE)", self._value("n_train", "DOUBLE", "k")
        # 1 / (C n) and 1 / (2 C) where C is finite and nonzero and n given (NaN otherwise).
        add("lambda_pegasos", pd.Series([0.5]),
            lambda t: f"CASE WHEN {c} <> 0 AND NOT isinf({c}) AND {m} <> 0 AND NOT isnan({m}) "
                      f"THEN 1.0::DOUBLE / ({c} * {m}) END")
        add("lambda_svmmaj", pd.Series([0.5]),
            lambda t: f"CASE WHEN {c} <> 0 AND NOT isinf({c}) THEN 1.0::DOUBLE / (2.0::DOUBLE * {c}) END")
        for name in ("gamma", "degree", "coef0"):
            profiled(name)
        scalar("fold", source=SPEC_PREFIX + "fold")
        scalar("seed", source=SPEC_PREFIX + "seed")
        scalar("status")
        scalar("error")
        if "class_weight" in frame:
            profiled("class_weight")
        scalar("warm_from")
        # How the fit started: a record says it (tasks.run_path, run_spec); one written before it
        # did was warm exactly where it names the point it started from.
        add("start", pd.Series(["cold"]),
            lambda t: f"coalesce({self._value('start', 'VARCHAR', 'k')}, CASE WHEN {self._value('warm_from', 'VARCHAR', 'k')} "
                      f"IS NOT NULL THEN 'warm' ELSE 'cold' END)")
        scalar("start_from")
        cols += self._f_star(kinds)
        if "timing_method" in frame:
            profiled("timing_method")
            scalar("setup_s", missing=math.nan)
            if "clock" in frame:
                profiled("clock")
        if "search_round" in frame:
            profiled("search_round")
        cols += self._conditional(kinds, profiles)
        for name in frame.columns:
            if name.startswith("param_"):
                profiled(name)
        for name in (n for n in f if n.startswith("env_")):
            if kinds.get(name, {"absent"}) - {"absent"}:
                scalar(name, missing=math.nan)
        cols += self._info(kinds.get("info", set()))
        return cols

    def _c_sql(self) -> str:
        """C: the record's, else its problem's (NaN for a problem given by lambda)."""
        rc = self.f.get("C")
        given = f"p.{q('_p__C')}"
        if rc is None:
            return given
        return f"CASE WHEN {rc.present_sql('k')} THEN {rc.value_sql('DOUBLE', 'k')} ELSE {given} END"

    def _c(self, frame: pd.DataFrame, kinds: dict[str, set]) -> tuple[pd.Series, Callable]:
        rc = self.f.get("C")
        given = frame["_C"]
        if rc is None:
            return given, lambda t: f"p.{q('_p__C')}"
        held = kinds.get("C", set())
        record = column_proto(rc, held)
        if "absent" not in held:
            return record, lambda t: rc.value_sql(t, "k")
        # Where a record lacks C, its problem's: pandas' `where` over the two decides the type.
        has = pd.Series([True] * len(record), dtype=bool)
        has.iloc[-1] = False
        proto = record.where(has, given.iloc[np.arange(len(record)) % len(given)].reset_index(drop=True))
        return proto, lambda t: (f"CASE WHEN {rc.present_sql('k')} THEN {rc.value_sql(t, 'k')} "
                                 f"ELSE CAST(p.{q('_p__C')} AS {t}) END")

    def _f_star(self, kinds: dict[str, set]) -> list[Column]:
        """f*, its certificate (status and relative gap) and the suboptimality it can resolve."""
        held = kinds.get("_ref", set())
        ok = [k.split("|") for k in held if k != "~"]
        missing = "~" in held

        def proto(i, lost):
            # The kinds the references give where a fit has one, `lost` where it has none.
            reps = sorted({k[i] for k in ok} - {"absent"})
            return pd.Series([_rep(k) for k in reps] + ([lost] if missing or any(k[i] == "absent" for k in ok) else []))
        known = kinds.get("_known", set())
        floored = pd.Series([True]) if known <= {"true"} else pd.Series([True] * ("true" in known) + [None], dtype=object)
        cols = [Column("f_star", proto(0, math.nan), lambda t: "CASE WHEN _ok THEN _ref_fs END"),
                Column("f_star_gap", proto(1, math.nan), lambda t: "CASE WHEN _ok THEN _ref_gap END"),
                Column("f_star_solver", proto(2, None), lambda t: "CASE WHEN _ok THEN _ref_solver END"),
                Column("f_star_status", proto(3, None), lambda t: "CASE WHEN _ok THEN _ref_status END"),
                Column("f_star_rel_gap", pd.Series([0.5]), lambda t: "_relgap"),
                Column("rel_suboptimality", pd.Series([0.5]),
                       lambda t: "CASE WHEN _known AND _raw < _relgap THEN greatest(_raw, _relgap) ELSE _raw END"),
                Column("rel_suboptimality_floored", floored,
                       lambda t: "CASE WHEN _known THEN _raw < _relgap END")]
        return cols

    def _conditional(self, kinds: dict[str, set], profiles: list[dict]) -> list[Column]:
        """The columns only some fits give: a held-out test set's (cv.kind=kfold_test: the fold's
        model also scored on the held-out rows) and a multiclass fit's (the test confusion matrix
        as JSON, rows: true class)."""
        cols = []

        def text_proto(flag):
            # JSON text where the flag is set, NaN where it is not.
            every = all(p[flag] for p in profiles)
            return pd.Series(["a"] + ([] if every else [math.nan]))

        def pairs(name):
            return {(k != "~", k) for k in kinds.get(name, set())}

        def masked(name, mask):
            fld = self.f.get(name)
            cols.append(Column(name, masked_proto(fld, pairs(name)),
                               lambda t, n=name: f"CASE WHEN {mask} THEN {self._value(n, t, 'k')} END"))
        held = pairs("n_heldout")
        if any(m for m, _ in held):
            masked("heldout_accuracy", "_held")
            masked("n_heldout", "_held")
            if any(p["confusion"] for p in profiles):
                # A matrix's JSON text in the shard is json.dumps' own (`shards.dumps`).
                cols.append(Column("confusion_heldout", text_proto("confusion"),
                                   lambda t: f"CASE WHEN _conf THEN k.{q('confusion_heldout')} END"))
        if any(m for m, _ in pairs("n_classes")):
            masked("n_classes", "_classes")
            test = f"k.{q('confusion_test')}" if "confusion_test" in self.f else "NULL"
            cols.append(Column("confusion_test", text_proto("classes"),
                               lambda t: f"CASE WHEN _classes THEN coalesce({test}, 'null') END"))
        return cols

    def _info(self, structures: set) -> list[Column]:
        """The solvers' info as ``info_<key>`` columns (`info_columns`), from the kinds of value
        each key holds over the rows (DuckDB's json_structure of each row's info)."""
        if not structures:
            return []
        shapes = [None if s == "~" else json.loads(s) for s in structures]
        names = dict.fromkeys(k for s in shapes if isinstance(s, dict) for k in s if k not in INFO_DUPLICATES)
        cols = []
        for i, key in enumerate(names):
            kinds = set()
            for s in shapes:
                if not isinstance(s, dict) or key not in s:
                    kinds.add("absent")
                else:
                    # json_structure: a scalar's type name, a list's or dict's structure, "JSON"
                    # for an empty dict.
                    v = s[key]
                    kinds.add("ARRAY" if isinstance(v, list) else "OBJECT" if isinstance(v, dict) or v == "JSON" else v)
            reps = [("a" if k in ("ARRAY", "OBJECT") else _rep(k)) for k in sorted(kinds - {"absent"})]
            proto = pd.Series(reps + [math.nan] * ("absent" in kinds))
            name = f"info_{key}"
            if mixed(name, proto):
                cols.append(Column(name, as_strings(proto), python=_info_maker(key, strings=True), reads_info=True))
            elif kinds & {"ARRAY", "OBJECT"}:
                cols.append(Column(name, proto, python=_info_maker(key, strings=False), reads_info=True))
            else:
                pointer = "/" + key.replace("~", "~0").replace("/", "~1")
                cols.append(Column(name, proto, lambda t, p=pointer: self._info_value(p, t)))
        return cols

    def _info_value(self, pointer: str, sql_type: str) -> str:
        c = f"json_extract(k.{q('info')}, {lit(pointer)})"
        if sql_type == "VARCHAR":
            return f"json_extract_string({c}, '$')"
        return f"CAST({c} AS {sql_type})"


def _info_maker(key: str, strings: bool):
    """An info column made in Python from each batch's info texts: `info_columns` of the row's
    info (lists and dicts as json.dumps writes them), as strings where the column is mixed."""
    name = f"info_{key}"

    def make(batch) -> list:
        out = []
        for text in batch.column("_info_raw").to_pylist():
            info = json.loads(text) if text is not None else None
            v = info_columns(info).get(name, math.nan) if info else math.nan
            out.append((None if v is None else str(v)) if strings else v)
        return out
    return make
