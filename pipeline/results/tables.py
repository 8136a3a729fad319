"""Results: shards -> ``results.parquet`` and ``traces.parquet``, and the CV summary.

Shards describe themselves (each record holds its spec), so the tables are rebuilt from the shard
folder alone: one Parquet file per Dask task, its records as columns (`results.shards`; DESIGN.md,
"Shards"), read once, as Arrow columns (`_Shards`), with what a row takes from its spec derived
once per distinct spec, not once per fit. One row per fit in results; the certified f* of each
fit's problem is joined from its reference shard with the certificate it actually reached
(`f_star_status`, and `f_star_rel_gap` = gap / |f*|: f* lies in [P_ref - gap, P_ref]), and the
relative suboptimality (P - f*) / |f*| is computed here, never finer than that certainty: below
f_star_rel_gap it is floored to it and `rel_suboptimality_floored` says so.
"""
from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .shards import SPEC_PREFIX, ShardError, dumps, read_shard, read_statuses, read_table  # noqa: F401 - ShardError: its readers' error

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
TRACE_COLUMNS = ["key", "iteration", "time_s", "primal", "dual", "gap"]


def shard_files(run_dir: Path) -> list[Path]:
    """The run dir's shard files in the order they were written: by generation (the number in
    ``<first key>.<generation>.parquet``; none is 0), then by name. A name starting with "." is a
    temporary file of a write in progress or cut short, never a shard. Shards of one
    generation never share a key, so this order decides which record of a key is the newest."""
    shards = Path(run_dir) / "shards"
    if not shards.is_dir():
        return []
    files = [p for p in shards.iterdir() if not p.name.startswith(".")]
    earlier = sorted(p for p in files if p.suffix in EARLIER_SUFFIXES)
    if earlier:
        # Read around, their tasks would be computed again beside them, and the rows they hold
        # would leave the tables without a word.
        raise ShardError(f"{earlier[0]}: a shard in the JSON layout of an earlier svmbench ({len(earlier)} such files "
                         f"in {shards}), which this one does not read; delete them to compute their tasks again, "
                         f"or run in a new folder")
    return sorted((p for p in files if p.suffix == SHARD_SUFFIX), key=lambda p: (shard_generation(p), p.name))


# A task's records as columns (`results.shards`).
SHARD_SUFFIX = ".parquet"
# The earlier layouts: one JSON record per line (".jsonl"), one record (".json").
EARLIER_SUFFIXES = (".jsonl", ".json")


def shard_generation(path: Path) -> int:
    parts = path.name.split(".")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0


def iter_records(run_dir: Path):
    """Every record of every shard, oldest first (`shard_files`): a key met again later (a
    retried error) replaces what came before it."""
    for p in shard_files(run_dir):
        yield from read_shard(p)


def iter_statuses(run_dir: Path):
    """(key, status, error) of every record, oldest first, as `iter_records` orders them: from a
    Parquet shard only those three columns are read."""
    for p in shard_files(run_dir):
        yield from read_statuses(p)


def read_shards(run_dir: Path, keys=None) -> list[dict]:
    """The newest record of each key in the run dir's shards, by key; with keys, only those (a
    run's tables hold only its own plan's tasks, while shards of other configs stay on disk for
    when those are run again)."""
    latest = {}
    for rec in iter_records(run_dir):
        if keys is None or rec["key"] in keys:
            latest[rec["key"]] = rec
    return [latest[k] for k in sorted(latest)]


# The record fields that are result columns as they are (None where a record lacks one).
_RECORD_COLUMNS = ("n_iter", "fit_time_s", "primal_objective", "dual_objective", "duality_gap", "kkt_violation",
                   "train_accuracy", "test_accuracy", "n_sv", "n_train", "n_test", "task_time_s")
# The columns every row has before its param_* columns: a parameter of one of these names (C,
# loss, kernel...) is not repeated as param_<name>.
_BASE_COLUMNS = frozenset(["key", "dataset", "dataset_name", "fingerprint", "solver", "solver_entry", "solver_version",
                           "family", "loss", "kernel", "intercept", "C", "lambda_pegasos", "lambda_svmmaj", "gamma",
                           "degree", "coef0", "fold", "seed", "status", "error", "warm_from", "start", "start_from",
                           *TIMING_FIT_COLUMNS, *_RECORD_COLUMNS,
                           "f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap",
                           "rel_suboptimality", "rel_suboptimality_floored"])



# --- The newest records, as columns --------------------------------------------------------------
#
# The shards are read once, as Arrow tables (`shards.read_table`), and a field of the records is
# one of two things over the rows a table takes:
# - a typed Arrow array (int, float, bool or string; null where a record lacks the field): the
#   numbers and keys, one value per record and no Python object per record;
# - `_Json`: a field stored as JSON text (the spec's fields, the solver's info, a value that was
#   None somewhere), as a code per row into the distinct texts the rows hold, each parsed once:
#   the specs of a sweep share their data, solver and budget, a C path its problem, and tiny fits
#   their info.
# A result column is derived once per distinct value and spread to the rows by their codes
# (`_spread`), with the dtype pandas gives the list of the rows' values, so that the tables are
# those a row-by-row builder makes (tests/pipeline/rowwise_tables.py).

class _Json:
    """A JSON field over some rows: row i holds ``texts[codes[i]]`` (nothing where codes[i] < 0:
    the record lacks the field); `texts` (Arrow strings) are the distinct texts the rows hold."""

    def __init__(self, codes: np.ndarray, texts):
        self.codes, self.texts, self._values = codes, texts, None

    def values(self) -> list:
        """The texts parsed, each once."""
        if self._values is None:
            self._values = [json.loads(t) for t in self.texts.to_pylist()]
        return self._values


def _no_json(n: int) -> _Json:
    return _Json(np.full(n, -1, dtype=np.int64), pa.array([], type=pa.string()))


class _Shards:
    """Every shard of a run dir read once (`shards.read_table`), as one column per field over all
    their records in `shard_files`' order (null in a shard that lacks the field)."""

    def __init__(self, run_dir: Path):
        parts = [read_table(p) for p in shard_files(run_dir)]
        lengths = [t.num_rows for t, _ in parts]
        self.columns = {}
        for name in list(dict.fromkeys(name for t, _ in parts for name in t.column_names)):
            self.columns[name] = _unified([(t.column(name), name in js) if name in t.column_names else None
                                          for t, js in parts], lengths)
            # Each field of the shards is let go once unified.
            parts = [(t.drop_columns([name]) if name in t.column_names else t, js) for t, js in parts]
        _release()

    def newest(self, keys=None) -> np.ndarray:
        """The rows (ascending) of the newest record of each key, only those of `keys` if given:
        shards of one generation never share a key, and `shard_files` orders them oldest first,
        so a key's newest record is its last row."""
        if "key" not in self.columns:
            return np.zeros(0, dtype=np.int64)
        codes, texts = _codes(self.columns["key"][0])
        last = np.full(len(texts), -1, dtype=np.int64)
        np.maximum.at(last, codes, np.arange(len(codes), dtype=np.int64))
        if keys is not None:
            wanted = pc.is_in(texts, value_set=pa.array(list(keys), type=pa.string()))
            last = last[wanted.to_numpy(zero_copy_only=False)]
        return np.sort(last)

    def field(self, name: str, rows: np.ndarray, last: bool = False):
        """The field at those rows: a typed Arrow array or `_Json`, None if no shard has it;
        with last, the shards' column is let go."""
        if name not in self.columns:
            return None
        column, is_json = self.columns.pop(name) if last else self.columns[name]
        every = len(rows) == len(column) and (len(rows) == 0 or rows[-1] == len(rows) - 1)
        out = _taken(column if every else column.take(rows), is_json)
        if last:
            del column
            _release()
        return out


def _taken(column: pa.ChunkedArray, is_json: bool):
    """A field's column at some rows as `_Shards.field` gives it."""
    if not is_json:
        if pa.types.is_dictionary(column.type):
            column = column.cast(pa.string())
        return column.combine_chunks()
    codes, texts = _codes(column)
    # Only the texts these rows hold are kept (and parsed); remap[-1] is -1 for a row that
    # lacks the field.
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(texts)))
    remap = np.full(len(texts) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return _Json(remap[codes], texts.take(pa.array(used)))


def _unified(chunks: list, lengths: list[int]) -> tuple[pa.ChunkedArray, bool]:
    """(the field over every shard, whether JSON) of its column in each shard, (column, is JSON)
    or None where a shard lacks it. A field typed in one shard and JSON in another (a None among
    its values there), or of two types (ints and strings), is JSON text in all of them; ints and
    floats are floats, as pandas makes them."""
    present = [c for c in chunks if c is not None]
    kinds = {_kind(column.type) for column, is_json in present if not is_json}
    as_json = any(is_json for _, is_json in present) or not (len(kinds) == 1 or kinds == {"int", "float"})
    if as_json:
        kind = pa.dictionary(pa.int32(), pa.string())
        arrays = iter([column if is_json else _as_json(column) for column, is_json in present])
    else:
        kind = pa.float64() if len(kinds) > 1 else present[0][0].type
        arrays = iter([column.cast(kind) for column, _ in present])
    out = []
    for c, n in zip(chunks, lengths):
        out.extend([pa.nulls(n, kind)] if c is None else next(arrays).chunks)
    column = pa.chunked_array(out, type=kind)
    return (column.unify_dictionaries() if pa.types.is_dictionary(kind) else column), as_json


def _kind(arrow_type) -> str:
    if pa.types.is_dictionary(arrow_type) or pa.types.is_string(arrow_type):
        return "str"
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_floating(arrow_type):
        return "float"
    return str(arrow_type)


def _as_json(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A typed column as the JSON texts of its values (each distinct value dumped once)."""
    chunks = []
    for chunk in pc.dictionary_encode(column).chunks:
        texts = pa.array([dumps(v) for v in chunk.dictionary.to_pylist()], type=pa.string())
        chunks.append(pa.DictionaryArray.from_arrays(chunk.indices.cast(pa.int32()), texts))
    return pa.chunked_array(chunks, type=pa.dictionary(pa.int32(), pa.string()))


def _codes(column) -> tuple[np.ndarray, pa.Array]:
    """(a code per row, -1 where null; the distinct values) of a column."""
    if not pa.types.is_dictionary(column.type):
        # One chunk, one dictionary: encoding chunk by chunk gives each chunk the dictionary so
        # far, and unifying 200 of them of up to 1,000,000 keys each took half a minute.
        column = pc.dictionary_encode(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 0:
            return np.zeros(0, dtype=np.int64), pa.array([], type=column.type.value_type)
        if len({c.dictionary.buffers()[-1].address for c in column.chunks}) > 1:
            column = column.unify_dictionaries()    # `_unified`'s columns share theirs already
        dictionary = column.chunk(0).dictionary
        indices = pa.chunked_array([c.indices for c in column.chunks], type=column.type.index_type)
    else:
        dictionary, indices = column.dictionary, column.indices
    return np.asarray(indices.fill_null(-1).to_numpy(), dtype=np.int64), dictionary


def _spread(values: list, codes: np.ndarray, missing=None) -> pd.Series:
    """Row i's value is ``values[codes[i]]`` (`missing` where codes[i] < 0), as the column pandas
    makes of the rows' values: its dtype inferred from the distinct values the rows hold (which
    kinds occur decides it, not how often), then taken by code."""
    if len(codes) and codes.min() < 0:
        values = [*values, missing]
        codes = np.where(codes < 0, len(values) - 1, codes)
    used = np.flatnonzero(np.bincount(codes, minlength=len(values)))
    remap = np.zeros(len(values), dtype=np.int64)
    remap[used] = np.arange(len(used))
    small = pd.Series([values[i] for i in used])
    return pd.Series(small.array.take(remap[codes]), dtype=small.dtype, copy=False)


def _values(field, n: int) -> tuple[list, np.ndarray]:
    """(distinct values, a code per row, -1 where the record lacks the field) of any field."""
    if field is None:
        return [], np.full(n, -1, dtype=np.int64)
    if isinstance(field, _Json):
        return field.values(), field.codes
    codes, distinct = _codes(field)
    return distinct.to_pylist(), codes


def _present(field, n: int) -> np.ndarray:
    if field is None:
        return np.zeros(n, dtype=bool)
    if isinstance(field, _Json):
        return field.codes >= 0
    return field.is_valid().to_numpy(zero_copy_only=False)


def _column(field, n: int, missing=None) -> pd.Series:
    """A record field as a result column: its values, `missing` where a record lacks it (None
    for ``rec.get(name)``, NaN for a column only some rows have)."""
    if isinstance(field, _Json):
        # Where a lacking value reads as None, a JSON null is one too: integers and plain strings
        # are then read as a typed column, not parsed text by text.
        typed = _json_scalars(field.texts) if missing is None else None
        if typed is not None:
            return typed.take(pa.array(field.codes, mask=field.codes < 0)).to_pandas()
        return _spread(field.values(), field.codes, missing)
    if field is None:
        return _spread([], np.full(n, -1, dtype=np.int64), missing)
    numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
    if missing is None or field.null_count == 0 or numeric or pa.types.is_string(field.type):
        # pandas' own dtypes for such a list: ints with a None are floats (NaN), strings with a
        # None its str dtype (NaN), bools with a None objects (None).
        return field.to_pandas()
    return pd.Series([missing if v is None else v for v in field.to_pylist()])


def _json_scalars(texts):
    """The JSON texts as one typed Arrow array (null for "null"), where each is an integer or a
    plain string (a seed, a fold, the key a fit was warm-started from): then a field with a
    distinct text per fit is not parsed text by text. None for any other texts."""
    if len(texts) < 1000:
        return None
    null = pc.equal(texts, "null")
    rest = pc.if_else(null, pa.scalar(None, pa.string()), texts)
    if pc.all(pc.or_kleene(null, pc.match_substring_regex(rest, r"^-?(0|[1-9][0-9]*)$"))).as_py():
        try:
            return rest.cast(pa.int64())
        except pa.ArrowInvalid:     # past int64: Python's ints hold it, pandas makes it objects
            return None
    quoted = pc.and_(pc.and_(pc.starts_with(rest, '"'), pc.ends_with(rest, '"')),
                     pc.invert(pc.match_substring(rest, "\\")))
    if pc.all(pc.or_kleene(null, pc.and_(quoted, pc.greater(pc.utf8_length(rest), 1)))).as_py():
        return pc.utf8_slice_codeunits(rest, 1, -1)
    return None


def _derive(field: _Json, fn, missing=None) -> pd.Series:
    """fn of each distinct value of a JSON field (the spec's), spread to its rows."""
    return _spread([fn(v) for v in field.values()], field.codes, missing)


def _truthy(field, n: int) -> np.ndarray:
    """Where a record's value is true as Python tests it (0, None, "" and a lacking value are not)."""
    if field is None:
        return np.zeros(n, dtype=bool)
    if isinstance(field, _Json) or not (pa.types.is_integer(field.type) or pa.types.is_floating(field.type)):
        values, codes = _values(field, n)
        return np.array([bool(v) for v in values] + [False], dtype=bool)[codes]
    # NaN is true (NaN != 0), as in Python.
    return np.asarray(pc.fill_null(pc.not_equal(field, 0), False).to_numpy(zero_copy_only=False), dtype=bool)


def _masked(field, mask: np.ndarray, n: int) -> pd.Series:
    """A column only the rows of `mask` have: the record's value there (None where it lacks
    it), NaN elsewhere."""
    if isinstance(field, pa.Array) and (pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
                                        or pa.types.is_string(field.type)):
        # For numbers and strings a None and a NaN are both pandas' missing value.
        return pc.if_else(pa.array(mask), field, pa.nulls(n, field.type)).to_pandas()
    values, codes = _values(field, n)
    codes = np.where(codes >= 0, codes, len(values))
    return _spread([*values, None], np.where(mask, codes, -1), math.nan)


def _results(shards: _Shards, rows: np.ndarray, refs: dict, reference_of: dict | None,
             keep: bool = False) -> dict[str, pd.Series]:
    """The results' columns (name -> column, NaN where a row lacks a column), one row per fit
    (the records at `rows`); each field is taken from the shards when needed and let go (kept
    with `keep`: the timing fits' table is made from the same shards after the results')."""
    nan = math.nan
    n = len(rows)

    def field(name):
        # Each field but the key is taken once: the shards' column is let go.
        return shards.field(name, rows, last=not keep and name != "key")

    def spec(name):
        got = field(SPEC_PREFIX + name)
        return got if got is not None else _no_json(n)

    data, prob = spec("data"), spec("problem")
    out = {"key": _column(field("key"), n), "dataset": _derive(data, lambda d: d["entry"]),
           "dataset_name": _derive(data, lambda d: d["name"]), "fingerprint": _derive(data, lambda d: d["fingerprint"])}
    for name in ("solver", "solver_entry", "solver_version", "family"):
        out[name] = _column(spec(name), n)
    out["loss"] = _derive(prob, lambda p: p["loss"])
    out["kernel"] = _derive(prob, lambda p: p.get("kernel", "linear"))
    out["intercept"] = _derive(prob, lambda p: p["intercept"])
    out["C"] = C = _C(field("C"), prob, n)
    for name in _RECORD_COLUMNS:
        out[name] = _column(field(name), n)
    c = C.to_numpy(dtype=float, na_value=nan)
    m = out["n_train"].to_numpy(dtype=float, na_value=nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        # 1 / (C n) and 1 / (2 C) where C is finite and nonzero and n given (NaN otherwise).
        finite = (c != 0) & ~np.isinf(c)
        out["lambda_pegasos"] = pd.Series(np.where(finite & ~np.isnan(m) & (m != 0), 1.0 / (c * m), nan))
        out["lambda_svmmaj"] = pd.Series(np.where(finite, 1.0 / (2.0 * c), nan))
    for name in ("gamma", "degree", "coef0"):
        out[name] = _derive(prob, lambda p, name=name: p.get(name))
    out["fold"], out["seed"] = _column(spec("fold"), n), _column(spec("seed"), n)
    out["status"], out["error"] = _column(field("status"), n), _column(field("error"), n)
    optional = {}
    if any("class_weight" in p for p in prob.values()):     # a column only where a sweep weighs classes
        out["class_weight"] = _derive(prob, lambda p: _class_weight(p["class_weight"]) if "class_weight" in p else nan, nan)
    out["warm_from"] = warm_from = _column(field("warm_from"), n)
    # How the fit started: a record says it (tasks.run_path, run_spec); one written before it did
    # was warm exactly where it names the point it started from.
    start = _column(field("start"), n)
    derived = np.where(warm_from.notna().to_numpy(), "warm", "cold")
    # As pandas makes a column of those strings (its str dtype), as the row-by-row tables do.
    out["start"] = pd.Series(np.where(start.notna().to_numpy(), start.to_numpy(dtype=object), derived).tolist(),
                             dtype=object if not n else None)
    out["start_from"] = _column(field("start_from"), n)
    timing = spec("timing")
    if (timing.codes >= 0).any():
        optional["timing_method"] = _derive(timing, lambda t: t["method"] if t else None)
        optional["setup_s"] = _column(field("setup_s"), n, nan)
        if any(isinstance(t, dict) and t.get("clock") for t in timing.values()):
            # Timed on the wall clock, beside a distributed fit (plan._add_timing_fits).
            optional["clock"] = _derive(timing, lambda t: t.get("clock") if t else None)
    # A search's fits (pipeline/search/): the round (a halving rung) that asked for each.
    search = spec("search")
    if (search.codes >= 0).any():
        optional["search_round"] = _derive(search, lambda s: s.get("round") if isinstance(s, dict) else math.nan,
                                           math.nan)
    # cv.kind=kfold_test: the fold's model also scored on the held-out test rows.
    n_heldout = field("n_heldout")
    held = _truthy(n_heldout, n)
    has_confusion = np.zeros(n, dtype=bool)
    if held.any():
        optional["heldout_accuracy"] = _masked(field("heldout_accuracy"), held, n)
        optional["n_heldout"] = _masked(n_heldout, held, n)
        values, codes = _values(field("confusion_heldout"), n)
        has_confusion = held & (codes >= 0) & np.array([v is not None for v in values] + [False])[codes]
        if has_confusion.any():
            optional["confusion_heldout"] = _spread([json.dumps(v) for v in values], np.where(has_confusion, codes, -1), nan)
    # Multiclass: the strategy, and the test confusion matrix as JSON (rows: true class).
    n_classes = field("n_classes")
    classes = _truthy(n_classes, n)
    if classes.any():
        optional["n_classes"] = _masked(n_classes, classes, n)
        values, codes = _values(field("confusion_test"), n)
        dumped = [json.dumps(v) for v in values] + [json.dumps(None)]
        optional["confusion_test"] = _spread(dumped, np.where(classes, np.where(codes >= 0, codes, len(values)), -1), nan)
    out.update(_f_star(_reference_keys(field("key"), spec("reference_key"), reference_of, n), refs,
                       out["primal_objective"].to_numpy(dtype=float, na_value=nan)))
    optional.update(_params(prob, [spec(f) for f in ("solver_params", "task", "grid_point")],
                            [held, has_confusion, classes], n))
    for name in [name for name in shards.columns if name.startswith("env_")]:
        env = field(name)
        if _present(env, n).any():
            optional[name] = _column(env, n, nan)
    optional.update(_info(field("info"), n))
    return {**out, **optional}


def _order(shards: _Shards, rows: np.ndarray) -> np.ndarray:
    """The order of the fits at rows in the results (`ORDER`, as `finish_results` sorts them)."""
    n = len(rows)

    def spec(name):
        got = shards.field(SPEC_PREFIX + name, rows)
        return got if got is not None else _no_json(n)

    by = {"dataset": _derive(spec("data"), lambda d: d["entry"]), "solver_entry": _column(spec("solver_entry"), n),
          "C": _C(shards.field("C", rows), spec("problem"), n), "fold": _column(spec("fold"), n),
          "key": _column(shards.field("key", rows), n)}
    return pd.DataFrame(by, copy=False).sort_values(ORDER, kind="stable").index.to_numpy()


def _class_weight(cw):
    return cw if isinstance(cw, str) else json.dumps(cw, sort_keys=True)


def _C(record_C, prob: _Json, n: int) -> pd.Series:
    """The record's C, else its problem's (NaN for a problem given by lambda)."""
    given = _derive(prob, lambda p: p.get("C", math.nan), math.nan)
    if record_C is None:
        return given
    has = _present(record_C, n)
    if has.all():
        return _column(record_C, n)
    return _column(record_C, n).where(has, given)


def _reference_keys(keys, stored: _Json, reference_of: dict | None, n: int) -> tuple[list, np.ndarray]:
    """(distinct reference keys, a code per fit) of each fit's reference: the current plan's
    (`reference_of`) where it names the fit, else the one its shard names; None for none."""
    values = [*stored.values(), None]
    codes = np.where(stored.codes >= 0, stored.codes, len(values) - 1)
    if all(v is None for v in values) and all(r is None for r in (reference_of or {}).values()):
        return values, codes    # no references (run.reference=false): no fit's key is looked up
    if reference_of and n:
        at = pc.index_in(keys, value_set=pa.array(list(reference_of), type=pa.string()))
        given, distinct = _codes(pa.array(list(reference_of.values()), type=pa.string()))
        planned = [*distinct.to_pylist(), None]
        found = at.is_valid().to_numpy(zero_copy_only=False)
        code = given[np.asarray(at.fill_null(0).to_numpy(), dtype=np.int64)]
        codes = np.where(found, len(values) + np.where(code >= 0, code, len(planned) - 1), codes)
        values += planned
    return values, codes


def _f_star(reference: tuple[list, np.ndarray], refs: dict, P: np.ndarray) -> dict[str, pd.Series]:
    """`_f_star_columns` of every fit: what a reference gives (f*, its gap and certificate) once
    per distinct reference, the suboptimality per fit from its primal objective P."""
    nan = math.nan
    values, codes = reference
    stars = [_f_star_columns(None, refs.get(r)) for r in values]
    out = {name: _spread([s[name] for s in stars], codes)
           for name in ("f_star", "f_star_gap", "f_star_solver", "f_star_status", "f_star_rel_gap")}
    fs = out["f_star"].to_numpy(dtype=float, na_value=nan)
    rel_gap = out["f_star_rel_gap"].to_numpy(dtype=float, na_value=nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.where((fs != 0) & ~np.isnan(fs), (P - fs) / np.abs(fs), nan)
    # f* is only known to within rel_gap: a smaller suboptimality cannot be told from 0.
    known = ~(np.isnan(raw) | np.isnan(rel_gap))
    floored = known & (raw < rel_gap)
    out["rel_suboptimality"] = pd.Series(np.where(floored, np.maximum(raw, rel_gap), raw))
    if known.all():
        out["rel_suboptimality_floored"] = pd.Series(floored)
    else:
        flags = np.full(len(P), None, dtype=object)
        flags[known] = floored[known].tolist()
        out["rel_suboptimality_floored"] = pd.Series(flags, dtype=object)
    return out


def _params(prob: _Json, texts: list[_Json], conditional: list[np.ndarray], n: int) -> dict[str, pd.Series]:
    """The grid point and the solver's own parameters, as param_* columns (strings for mixed
    types); a problem given by lambda keeps it (a fixed one too): its C = 1/(lambda n) moves with
    each fold's n, so lambda is what names the point (report/common.py `point_C`). Once per
    distinct (problem, parameters, task, grid point, which optional columns the row has)."""
    group = np.zeros(n, dtype=np.int64)
    for codes in [prob.codes, *(t.codes for t in texts), *conditional]:
        group, _ = pd.factorize(group * (int(codes.max(initial=0)) + 2) + codes + 1)
    if not n:
        return {}
    first = np.full(group.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, group, np.arange(n, dtype=np.int64))
    held, has_confusion, classes = conditional
    params = []
    for i in first:
        p = prob.values()[prob.codes[i]] if prob.codes[i] >= 0 else {}
        given = {k: p[k] for k in ("lambda", "lambda_convention") if k in p}
        # The columns this row has: a parameter of one of their names is not repeated.
        row = set(_BASE_COLUMNS)
        row |= {"class_weight"} if "class_weight" in p else set()
        row |= {"heldout_accuracy", "n_heldout"} if held[i] else set()
        row |= {"confusion_heldout"} if has_confusion[i] else set()
        row |= {"n_classes", "confusion_test"} if classes[i] else set()
        merged = dict(given)
        for t in texts:
            merged.update(t.values()[t.codes[i]] if t.codes[i] >= 0 else {})
        params.append({f"param_{k}": v for k, v in merged.items() if k not in row})
    names = dict.fromkeys(name for p in params for name in p)
    return {name: _spread([p.get(name, math.nan) for p in params], group, math.nan) for name in names}


def _info(info, n: int) -> dict[str, pd.Series]:
    """The solvers' info as ``info_<key>`` columns (`info_columns`), once per distinct info."""
    values, codes = _values(info, n)
    columns = [info_columns(v) if v else {} for v in values]
    names = dict.fromkeys(name for c in columns for name in c)
    return {name: _spread([c.get(name, math.nan) for c in columns], codes, math.nan) for name in names}


def _records(shards: _Shards, rows: np.ndarray, names) -> list[dict]:
    """The records at those rows, as dicts of those fields (the ones they have): few rows
    (the reference solves, the kept models)."""
    out = [{} for _ in rows]
    for name in names:
        values, codes = _values(shards.field(name, rows), len(rows))
        for record, code in zip(out, codes):
            if code >= 0:
                record[name] = values[code]
    return out


def _f_star_columns(P, ref: dict | None) -> dict:
    """f*, its certificate (status and relative gap) and the suboptimality it can resolve."""
    nan = math.nan
    # No f* at all: the reference failed, or its sandbox was killed at its hard limit (timeout).
    if ref is None or ref.get("status") == "error" or "f_star" not in ref:
        return {"f_star": nan, "f_star_gap": nan, "f_star_solver": None, "f_star_status": None,
                "f_star_rel_gap": nan, "rel_suboptimality": nan, "rel_suboptimality_floored": None}
    fs, gap = ref["f_star"], ref["f_star_gap"]
    rel_gap = max(gap, 0.0) / abs(fs) if fs else nan
    raw = (P - fs) / abs(fs) if P is not None and fs and not math.isnan(fs) else nan
    # f* is only known to within rel_gap: a smaller suboptimality cannot be told from 0.
    floored = bool(raw < rel_gap) if not (math.isnan(raw) or math.isnan(rel_gap)) else None
    return {"f_star": fs, "f_star_gap": gap, "f_star_solver": ref["f_star_solver"],
            "f_star_status": ref["status"], "f_star_rel_gap": rel_gap,
            "rel_suboptimality": max(raw, rel_gap) if floored else raw, "rel_suboptimality_floored": floored}


# Info keys the results already hold in their own columns (registry.fit adds them to every fit).
_INFO_DUPLICATES = {"solver", "solver_version"}


def info_columns(info: dict) -> dict:
    """A solver's `info` as ``info_<key>`` columns: scalars as they are, lists and dicts
    (Newton's per-level times, an interval of b) as JSON strings, so a Parquet column keeps one
    type and `json.loads` gives the value back."""
    out = {}
    for k, v in info.items():
        if k in _INFO_DUPLICATES:
            continue
        out[f"info_{k}"] = json.dumps(v) if isinstance(v, (list, tuple, dict)) else v
    return out


def build_tables(run_dir: Path, keys=None, reference_of: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results, traces) from the shards of a run directory (only those of `keys` if given).
    `reference_of` (fit key -> reference key, from the current plan) overrides the reference a
    fit's shard names (see `_tables`)."""
    with _system_pool():
        return _tables(_Shards(run_dir), keys, reference_of)[:2]


def _release() -> None:
    """Freed memory back to the system (for the system pool, malloc_trim)."""
    pa.default_memory_pool().release_unused()


@contextlib.contextmanager
def _system_pool():
    """Arrow allocates from the C library's malloc while the tables are made, and what the
    shards' columns let go is given back to the system as they go (`_release`): Arrow's
    default pool (mimalloc) keeps it for Arrow's later use, while the results' numpy columns
    come from malloc, so at a million fits write_tables peaked a good part of a table higher
    with mimalloc, and higher still with malloc and no release (malloc's arenas keep what is
    freed in them): the sweep benchmark's "Older measurements from the pipeline's comments"."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


def _tables(shards: _Shards, keys=None, reference_of: dict | None = None, models: bool = False):
    """(results, traces, kept models or None, timing, timing traces) of the newest record of each
    key in the shards. The timing fits (a spec with `timing`: plan.timing_template) are kept out
    of the results, whose rows are the sweep's fits, one per grid point and fold, as every
    reader of results.parquet counts them; they make their own table (timing.parquet).

    A fit's reference is the one the current plan gives it (`reference_of`), where given: the
    reference key is left out of the fit's own key (plan.py, `spec_key`), so a resumed run whose
    reference budget changed reuses the fit but plans a new reference; the key in the fit's shard
    then names the old one, and the fit would lose its f*."""
    rows = shards.newest(keys)
    kinds, codes = _values(shards.field("kind", rows, last=True), len(rows))
    fit_rows = rows[np.array([k == "fit" for k in kinds] + [False])[codes]]
    ref_rows = rows[np.array([k == "reference" for k in kinds] + [False])[codes]]
    refs = {r["key"]: r for r in _records(shards, ref_rows, ("key", "status", "f_star", "f_star_gap", "f_star_solver"))}
    timed = _present(shards.field(SPEC_PREFIX + "timing", fit_rows), len(fit_rows))
    timing_rows, fit_rows = fit_rows[timed], fit_rows[~timed]
    traces = _traces(shards, np.sort(np.concatenate([fit_rows, timing_rows])))
    timing, timing_traces = None, None
    if len(timing_rows):
        timing_keys = set(shards.field("key", timing_rows).to_pylist())
        mine = traces["key"].isin(timing_keys).to_numpy()
        timing_traces, traces = traces[mine].reset_index(drop=True), traces[~mine].reset_index(drop=True)
        timing_rows = timing_rows[_order(shards, timing_rows)]
        timing = finish_results(pd.DataFrame(_results(shards, timing_rows, refs, reference_of, keep=True), copy=False),
                                ordered=True)
        timing = timing[[c for c in timing.columns if c not in TIMING_FIT_COLUMNS] + TIMING_FIT_COLUMNS]
    kept = None
    if models and "model" in shards.columns:
        values, codes = _values(shards.field("model", fit_rows, last=True), len(fit_rows))
        at = np.flatnonzero((codes >= 0) & np.array([bool(v) for v in values] + [False])[codes])
        keys_at = shards.field("key", fit_rows[at]).to_pylist()
        kept = _models(sorted(({"key": k, "kind": "fit", "model": values[c]} for k, c in zip(keys_at, codes[at])),
                              key=lambda r: r["key"]))
    if not len(fit_rows):
        return finish_results(pd.DataFrame(columns=RESULT_COLUMNS)), traces, kept, timing, timing_traces
    # The fits in the table's order before the table is made, which is then not sorted: sorting
    # a table copies it whole.
    fit_rows = fit_rows[_order(shards, fit_rows)]
    _release()
    results = pd.DataFrame(_results(shards, fit_rows, refs, reference_of), copy=False)
    return finish_results(results, ordered=True), traces, kept, timing, timing_traces


def finish_results(results: pd.DataFrame, ordered: bool = False) -> pd.DataFrame:
    """The results' columns in their order (RESULT_COLUMNS, then the others sorted), a column of
    mixed kinds as strings, the rows sorted by dataset, solver entry, C, fold and key (`ORDER`),
    unless they are (ordered: the caller sorted them so, as `_order` does)."""
    extra = [c for c in results.columns if c not in RESULT_COLUMNS]
    results = results.reindex(columns=RESULT_COLUMNS + sorted(extra))
    for c in results.columns:
        # gamma is "scale"/"auto" for one entry and a number for another in one sweep.
        if ((c.startswith("param_") and results[c].map(type).nunique() > 1)
                or ((c.startswith("info_") or c in ("gamma", "degree", "coef0")) and _mixed(results[c]))):
            results[c] = results[c].map(lambda v: None if v is None else str(v))
    if ordered:
        return results
    return results.sort_values(ORDER, kind="stable").reset_index(drop=True)


# The order of the results' rows.
ORDER = ["dataset", "solver_entry", "C", "fold", "key"]


def _mixed(col: pd.Series) -> bool:
    """Values of more than one kind (numbers count as one; missing ones are not counted), which
    one Parquet column cannot hold: such a column is written as strings."""
    if col.dtype != object:     # a typed column (numbers, bools, strings) holds one kind
        return False
    kinds = {"number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__
             for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))}
    return len(kinds) > 1


def _traces(shards: _Shards, rows: np.ndarray) -> pd.DataFrame:
    """One row per trace point, the fits in the order of their keys; a point's extra quantities
    (test_error, w_change, n_active..., Recorder.note and Recorder(extras=)) become further float
    columns, NaN where a fit has none. Only the fits with a trace are visited."""
    values, codes = _values(shards.field("trace", rows, last=True), len(rows))
    at = np.flatnonzero(np.array([bool(v) for v in values] + [False])[codes])
    keys = shards.field("key", rows[at]).to_pylist() if len(at) else []
    extras, extra_codes = _values(shards.field("trace_extra", rows[at], last=True), len(at))
    points = []
    for j in sorted(range(len(at)), key=keys.__getitem__):
        extra = extras[extra_codes[j]] if extra_codes[j] >= 0 else None
        extra = extra if extra is not None else []
        for i, p in enumerate(values[codes[at[j]]]):
            row = dict(zip(TRACE_COLUMNS, (keys[j], *p)))
            if i < len(extra):
                row.update(extra[i])
            points.append(row)
    return traces_frame(points)


def traces_frame(rows: list[dict]) -> pd.DataFrame:
    """The traces table of its rows: TRACE_COLUMNS, then the extra quantities sorted, as floats."""
    traces = pd.DataFrame(rows)
    extra_cols = sorted(c for c in traces.columns if c not in TRACE_COLUMNS)
    traces = traces.reindex(columns=TRACE_COLUMNS + extra_cols)
    return traces.astype({"iteration": "int64", "time_s": "float64", "primal": "float64",
                          "dual": "float64", "gap": "float64", **{c: "float64" for c in extra_cols}})


def models_table(run_dir: Path, keys=None) -> pd.DataFrame:
    """Each kept model (run.keep_models) as a row: key, b, w, support, alpha (lists), and for a
    2-D dataset its training rows X and labels y."""
    return _models(read_shards(run_dir, keys))


def _models(records: list[dict]) -> pd.DataFrame:
    rows = [{"key": r["key"], **r["model"]} for r in records if r.get("kind") == "fit" and r.get("model")]
    return pd.DataFrame(rows, columns=["key", "b", "w", "support", "alpha", "X", "y"])


# The timing fits' rows (the results' columns and TIMING_FIT_COLUMNS) and their traces.
TIMING_TABLE, TIMING_TRACES = "timing.parquet", "timing_traces.parquet"


def write_tables(run_dir: Path, keys=None, reference_of: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write results.parquet and traces.parquet (atomically) and return them, and the timing
    fits' timing.parquet and timing_traces.parquet where the plan has any: the shards are read
    once, as columns, for the tables and the kept models alike. `reference_of`: see
    `build_tables`."""
    with _system_pool():
        results, traces, models, timing, timing_traces = _tables(_Shards(run_dir), keys, reference_of, models=True)
        tables = [(results, "results.parquet"), (traces, "traces.parquet")]
        if models is not None and len(models):
            tables.append((models, "models.parquet"))
        if timing is not None:
            tables += [(timing, TIMING_TABLE), (timing_traces, TIMING_TRACES)]
        else:           # no timing fits in this plan: none of an earlier one's is left to be read
            for name in (TIMING_TABLE, TIMING_TRACES):
                (Path(run_dir) / name).unlink(missing_ok=True)
        for df, name in tables:
            write_parquet(df, Path(run_dir) / name)
        del tables, models, timing, timing_traces
        # What the shards' columns and the Parquet writer let go, and whatever else the
        # process freed before (a run's execute), back to the system before the report.
        _release()
    return results, traces


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """Atomically: a temporary file renamed into place, so a reader never sees half a table."""
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(path)


TIMING_COLUMNS = ("fit_time_s", "task_time_s")


def outcomes(results: pd.DataFrame) -> pd.DataFrame:
    """The results without what may differ between two runs of one config and seed (timings and
    the env_* columns: where it ran), sorted by key: the part that must be the same on every
    cluster kind and after a resume (tests/pipeline/test_cluster.py checks it)."""
    keep = [c for c in results.columns if c not in TIMING_COLUMNS and not c.startswith("env_")]
    return results[keep].sort_values("key").reset_index(drop=True)
