"""Results: shards -> ``results.parquet``, ``traces.parquet``, ``timing.parquet``,
``timing_traces.parquet`` and ``models.parquet``, written by DuckDB from the shard files.

Shards describe themselves (each record holds its spec), so the tables are rebuilt from the shard
folder alone: one Parquet file per Dask task, its records as columns (`results.shards`; DESIGN.md,
"Shards"). The tables are never a frame of every fit: DuckDB reads the shards where they lie
(`source.Source`: the newest record of each key, as SQL), each table is one query whose rows it
sorts and joins in a bounded buffer pool, and its result reaches the Parquet writer in record
batches, each cast to the table's schema (`columns`: the types pandas gave these tables when they
were frames, so that every reader sees the tables it saw). One row per fit in results; the
certified f* of each fit's problem is joined from its reference with the certificate it actually
reached (`f_star_status`, and `f_star_rel_gap` = gap / |f*|: f* lies in [P_ref - gap, P_ref]),
and the relative suboptimality (P - f*) / |f*| is computed here, never finer than that
certainty: below f_star_rel_gap it is floored to it and `rel_suboptimality_floored` says so.
Every table is written to a temporary file and all are renamed into place once all are written:
a write that fails leaves the tables before it whole.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .columns import (ORDER, RESULT_COLUMNS, TIMING_FIT_COLUMNS, Column, FitTables, Query,  # noqa: F401 - the tables' names
                      TablesError)
from .shards import SPEC_PREFIX, ShardError, read_shard, read_statuses  # noqa: F401 - ShardError: its readers' error
from .source import Source, lit, q

TRACE_COLUMNS = ["key", "iteration", "time_s", "primal", "dual", "gap"]
MODEL_COLUMNS = ["key", "b", "w", "support", "alpha", "X", "y"]
# Kept models' JSON text per batch: a kept model holds its dual (a linear fit's alpha at RCV1's
# size is 16 MB of text), so the batches are cut by bytes, with at least one model each.
MODEL_BYTES = 64 * 2**20


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
    """The newest record of each key in the run dir's shards, by key; with keys, only those: a
    few records as dicts (a paper's chosen fits, tests), not the way to the tables."""
    latest = {}
    for rec in iter_records(run_dir):
        if keys is None or rec["key"] in keys:
            latest[rec["key"]] = rec
    return [latest[k] for k in sorted(latest)]


# The timing fits' rows (the results' columns and TIMING_FIT_COLUMNS) and their traces.
TIMING_TABLE, TIMING_TRACES = "timing.parquet", "timing_traces.parquet"


@dataclass(frozen=True)
class Written:
    """What `write_tables` wrote and counted, all a run's closing lines need of the tables:
    results' rows, trace points, timing fits, the run's tasks whose newest record failed (fits of
    the results, and references), and records in the shards of keys not the run's."""
    results: int
    points: int
    timing: int
    failed: int
    others: int


class TablesFailed(RuntimeError):
    """The tables could not be written (the engine out of memory, a full disk): the shards, and
    the tables written before, are whole; the same command run again writes them."""


def write_tables(run_dir: Path, keys=None, reference_of=None) -> Written:
    """`_write_tables`, its engine's failures said in one line (`TablesFailed`)."""
    import duckdb
    try:
        return _write_tables(run_dir, keys, reference_of)
    except (duckdb.Error, OSError, MemoryError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise TablesFailed(f"the tables of {run_dir} were not written ({type(exc).__name__}: {first}); every "
                           f"fit is kept in its shards and the tables before are whole: run the same command "
                           f"again with hydra.run.dir={run_dir} to write them (its fits are not run again)") from None


def _write_tables(run_dir: Path, keys=None, reference_of=None) -> Written:
    """Write results.parquet and traces.parquet, timing.parquet and timing_traces.parquet where
    the shards hold timing fits (else an earlier run's are removed) and models.parquet where
    they hold kept models, each from the newest record of each key (only of `keys`, an
    iterable of the run's task keys, if given: shards of other configs stay on disk for when
    those are run again). `reference_of` (fit key -> reference key, the current plan's: a mapping
    or (key, reference) pairs) overrides the reference a fit's shard names: the reference key is
    left out of a fit's own key (plan.py, `spec_key`), so a resumed run whose reference budget
    changed reuses the fit but plans a new reference, and the fit would lose its f*."""
    run_dir = Path(run_dir)
    with Source(run_dir, shard_files(run_dir), keys, reference_of) as src:
        fits = FitTables(src) if "key" in src.fields else None
        results = fits.query(False) if fits else None
        timing = fits.query(True) if fits else None
        tables = [("results.parquet", lambda path: _write_query(src, results, path) if results else
                   _write_frame(pd.DataFrame(columns=RESULT_COLUMNS), path)),
                  ("traces.parquet", lambda path: _write_traces(src, False, path))]
        if timing is not None:
            tables += [(TIMING_TABLE, lambda path: _write_query(src, timing, path)),
                       (TIMING_TRACES, lambda path: _write_traces(src, True, path))]
        tables.append(("models.parquet", lambda path: _write_models(src, path)))
        counts = _write_all(run_dir, tables)
        if timing is None:      # no timing fits in this plan: none of an earlier one's is left to be read
            for name in (TIMING_TABLE, TIMING_TRACES):
                (run_dir / name).unlink(missing_ok=True)
        return Written(results=counts["results.parquet"], points=counts["traces.parquet"],
                       timing=counts.get(TIMING_TABLE, 0), failed=_failed(src, fits), others=src.others())


def _write_all(run_dir: Path, tables: list) -> dict[str, int]:
    """Each table to a temporary file, then all renamed into place: a table whose write fails
    (a full disk, an interrupt) leaves every table as it was. A table a writer gives no rows of
    (None: no kept models) is left as it was."""
    done: list[tuple[Path, Path]] = []
    counts = {}
    try:
        for name, write in tables:
            path = run_dir / name
            tmp = path.with_name(f".{name}.tmp")
            n = write(tmp)
            if n is not None:
                done.append((tmp, path))
                counts[name] = n
    except BaseException:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)
        for name, _ in tables:
            (run_dir / f".{name}.tmp").unlink(missing_ok=True)
        raise
    for tmp, path in done:
        tmp.replace(path)
    return counts


def _failed(src: Source, fits: FitTables | None) -> int:
    """The run's tasks whose newest record failed: fits of the results and references."""
    status, kind = src.field("status"), src.field("kind")
    if status is None or kind is None:
        return 0
    timed = src.field(SPEC_PREFIX + "timing")
    sweep = f"NOT {timed.present_sql()}" if timed is not None else "true"
    k = kind.value_sql("VARCHAR")
    return int(src.scalar(f"SELECT count(*) FROM newest WHERE {status.value_sql('VARCHAR')} = 'error' "
                          f"AND (({k} = 'fit' AND {sweep}) OR {k} = 'reference')"))


def _writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    # pandas' to_parquet compression: the files are those it wrote.
    return pq.ParquetWriter(path, schema, compression="snappy")


def _cast(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A query's batch as the table's schema (large strings, untyped columns of nulls)."""
    arrays = []
    for f in schema:
        col = batch.column(f.name)
        arrays.append(pa.nulls(len(col), f.type) if pa.types.is_null(f.type) else col.cast(f.type))
    return pa.record_batch(arrays, schema=schema)


def _write_query(src: Source, query: Query, path: Path) -> int:
    """A table's query written batch by batch; the Python-made columns filled per batch."""
    schema = query.schema()
    n = 0
    with _writer(path, schema) as out:
        for batch in src.batches(query.sql(schema)):
            if query.helpers:
                batch = _fill(batch, query.columns, schema)
            out.write_batch(_cast(batch, schema))
            n += batch.num_rows
    return n


def _fill(batch: pa.RecordBatch, columns: list[Column], schema: pa.Schema) -> pa.RecordBatch:
    """The columns made in Python (`Column.python`: a profile's, an info column of lists or of
    mixed kinds), from the batch's helper columns."""
    out = {name: batch.column(name) for name in batch.schema.names if not name.startswith("_")}
    for c in columns:
        if c.python is not None:
            kind = schema.field(c.name).type
            made = c.python(batch)
            if pa.types.is_null(kind):
                out[c.name] = pa.nulls(batch.num_rows)
            elif isinstance(made, pa.Array):
                out[c.name] = made if made.type == kind else made.cast(kind)
            else:
                out[c.name] = pa.array(made, type=kind, from_pandas=True)
    return pa.record_batch(list(out.values()), names=list(out))


def _write_frame(df: pd.DataFrame, path: Path) -> int:
    """A table of no rows, as pandas wrote it (its untyped columns)."""
    df.to_parquet(path, index=False)
    return len(df)


# ------------------------------------------------------------------------------------------ traces
def _traces_sql(src: Source, timed: bool) -> tuple[str, str] | None:
    """(the trace points of the fits (or of the timing fits), one row per point, the fits in the
    order of their keys; the point's extra quantities as JSON, `_e`) as two query parts: the
    point rows, and the ORDER BY."""
    trace, kind = src.field("trace"), src.field("kind")
    if trace is None or not trace.json or kind is None:
        return None
    extra = src.field("trace_extra")
    timing = src.field(SPEC_PREFIX + "timing")
    cond = (f"NOT {timing.present_sql('n')}" if not timed else timing.present_sql("n")) if timing is not None \
        else ("true" if not timed else "false")
    ext = f"json_extract({extra.col('n')}, '$[*]')" if extra is not None and extra.json else "NULL::VARCHAR[]"
    pts = (f"SELECT n.key, json_extract({trace.col('n')}, '$[*]') AS _pts, {ext} AS _ext FROM newest n "
           f"WHERE {kind.value_sql('VARCHAR', 'n')} = 'fit' AND {cond} AND json_type({trace.col('n')}) = 'ARRAY' "
           f"AND json_array_length({trace.col('n')}) > 0")
    rows = (f"WITH t AS ({pts}), u AS (SELECT key, unnest(_pts) AS _pt, generate_subscripts(_pts, 1) AS _i, _ext FROM t), "
            f"v AS (SELECT key, _i, json_extract(_pt, ['/0', '/1', '/2', '/3', '/4']) AS _p, _ext[_i] AS _e FROM u)")
    return rows, "key, _i"


def _write_traces(src: Source, timed: bool, path: Path) -> int:
    """One row per trace point, the fits in the order of their keys; a point's extra quantities
    (test_error, w_change, n_active..., Recorder.note and Recorder(extras=)) become further float
    columns, NaN where a fit has none. A table of no points is written as pandas wrote it."""
    parts = _traces_sql(src, timed)
    # As pandas made a frame of no rows: columns added to an empty frame are floats, the key too.
    empty = pd.DataFrame([]).reindex(columns=TRACE_COLUMNS).astype(
        {"iteration": "int64", "time_s": "float64", "primal": "float64", "dual": "float64", "gap": "float64"})
    if parts is None:
        return _write_frame(empty, path)
    rows, order = parts
    if not src.scalar(f"{rows} SELECT count(*) FROM v"):
        return _write_frame(empty, path)
    extras = sorted(r[0] for r in src.rows(f"{rows} SELECT DISTINCT unnest(json_keys(_e)) FROM v "
                                           f"WHERE json_type(_e) = 'OBJECT'"))
    cols = ["v.key AS key"]
    for i, name in enumerate(TRACE_COLUMNS[1:]):
        value = f"CAST(_p[{i + 1}] AS {'BIGINT' if name == 'iteration' else 'DOUBLE'})"
        if name in extras:      # a quantity a point's extras name as one of the point's own
            pointer = lit("/" + name)
            value = (f"CASE WHEN json_type(_e) = 'OBJECT' AND json_exists(_e, {pointer}) "
                     f"THEN CAST(json_extract(_e, {pointer}) AS {'BIGINT' if name == 'iteration' else 'DOUBLE'}) "
                     f"ELSE {value} END")
        cols.append(f"{value} AS {q(name)}")
    added = [e for e in extras if e not in TRACE_COLUMNS]
    for name in added:
        pointer = lit("/" + name.replace("~", "~0").replace("/", "~1"))
        cols.append(f"CAST(json_extract(_e, {pointer}) AS DOUBLE) AS {q(name)}")
    proto = pd.DataFrame({"key": ["k"], "iteration": np.array([1], dtype="int64"),
                          **{c: [0.5] for c in [*TRACE_COLUMNS[2:], *added]}})
    schema = pa.Schema.from_pandas(proto, preserve_index=False)
    nan_free = ", ".join(f"(CASE WHEN isnan({q(c)}) THEN NULL ELSE {q(c)} END) AS {q(c)}" if c not in ("key", "iteration")
                         else q(c) for c in schema.names)
    sql = f"{rows} SELECT {nan_free} FROM (SELECT {', '.join(cols)}, _i FROM v) ORDER BY {order}"
    n = 0
    with _writer(path, schema) as out:
        for batch in src.batches(sql):
            out.write_batch(_cast(batch, schema))
            n += batch.num_rows
    return n


# ------------------------------------------------------------------------------------------ models
class _ModelTexts:
    """Kept models' JSON texts read from their shards with Arrow, outside DuckDB's buffer pool: a
    row group's `model` column is read whole, and the last few read are kept (up to MODEL_BYTES),
    so a shard whose models come in key order is read once."""

    def __init__(self):
        self.groups: dict[tuple, pa.ChunkedArray] = {}
        self.starts: dict[Path, np.ndarray] = {}

    def text(self, path: Path, row: int):
        if path not in self.starts:
            meta = pq.ParquetFile(path).metadata
            self.starts[path] = np.cumsum([0] + [meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
        starts = self.starts[path]
        g = int(np.searchsorted(starts, row, side="right") - 1)
        column = self.groups.pop((path, g), None)
        if column is None:
            column = pq.ParquetFile(path).read_row_group(g, columns=["model"]).column(0)
            while self.groups and sum(c.nbytes for c in self.groups.values()) + column.nbytes > MODEL_BYTES:
                self.groups.pop(next(iter(self.groups)))
        self.groups[path, g] = column          # the newest last: evicted last
        return column[int(row - starts[g])].as_py()


def _write_models(src: Source, path: Path) -> int | None:
    """Each kept model (run.keep_models) as a row, by key: key, b, w, support, alpha (lists), and
    for a 2-D dataset its training rows X and labels y. Read twice in batches: once for the type
    of each column over all of them (a column of lists is as wide as its widest values), then
    written. None where no fit kept one (the file is not written)."""
    model, kind = src.field("model"), src.field("kind")
    if model is None or kind is None:
        return None
    timing = src.field(SPEC_PREFIX + "timing")
    sweep = f"NOT {timing.present_sql()}" if timing is not None else "true"
    # DuckDB sorts the keys and their places alone and never reads a model: a paper's 222 kept
    # models (172 MB of JSON, 16 MB the largest) ran out of its buffer pool when sorted, tested
    # with its JSON functions, or even measured (a row group's column is read whole into it).
    places = (f"SELECT key, _f, _r FROM newest WHERE {kind.value_sql('VARCHAR')} = 'fit' AND {sweep} "
              f"AND {model.present_sql()} ORDER BY key")
    keyed = [(key, src.files[f], r) for part in src.batches(places)
             for key, f, r in zip(*(part.column(c).to_pylist() for c in ("key", "_f", "_r")))]

    def tables():
        texts, rows, size = _ModelTexts(), [], 0
        for key, path, r in keyed:
            text = texts.text(path, r)
            value = json.loads(text) if isinstance(text, (str, bytes)) else None
            if not value:           # a model field that holds null, or nothing (kept falsy: not a model)
                continue
            rows.append({"key": key, **value})
            size += len(text)
            if size >= MODEL_BYTES:
                yield pa.Table.from_pandas(pd.DataFrame(rows, columns=MODEL_COLUMNS), preserve_index=False)
                rows, size = [], 0
        if rows:
            yield pa.Table.from_pandas(pd.DataFrame(rows, columns=MODEL_COLUMNS), preserve_index=False)
    schemas = [t.schema for t in tables()]
    if not schemas:
        return None
    schema = pa.unify_schemas(schemas, promote_options="permissive")
    # pandas' metadata of each column from a batch whose column has the whole table's type.
    meta = json.loads(schemas[0].metadata[b"pandas"])
    entries = []
    for i, f in enumerate(schema):
        entries.append(next((json.loads(s.metadata[b"pandas"])["columns"][i] for s in schemas
                             if s.field(f.name).type == f.type), meta["columns"][i]))
    meta["columns"] = entries
    schema = schema.with_metadata({b"pandas": json.dumps(meta).encode()})
    n = 0
    with _writer(path, schema) as out:
        for table in tables():
            out.write_table(table.cast(schema))
            n += table.num_rows
    return n


TIMING_COLUMNS = ("fit_time_s", "task_time_s")


def outcomes(results: pd.DataFrame) -> pd.DataFrame:
    """The results without what may differ between two runs of one config and seed (timings and
    the env_* columns: where it ran), sorted by key: the part that must be the same on every
    cluster kind and after a resume (tests/pipeline/test_cluster.py checks it)."""
    keep = [c for c in results.columns if c not in TIMING_COLUMNS and not c.startswith("env_")]
    return results[keep].sort_values("key").reset_index(drop=True)

