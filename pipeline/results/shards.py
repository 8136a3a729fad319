"""The shard format: one Parquet file per Dask task, its records as columns.

A record is a flat dict of the task's results (status, certificates, timings, the ``env_*``
columns of where it ran) with a few nested values (the trace, the solver's info, a kept model,
confusion matrices) and the spec that produced it (``record["spec"]``, so that a shard describes
itself). Written one JSON object per line, a record repeated its whole spec and environment,
many times the bytes of its results, parsed again in full by every read (The sweep benchmark,
"Large sweeps", scenario (g)'s shard bytes a fit). As columns, what the records of a task share
(the dataset, the solver, the budget, the environment) is one dictionary entry per column, and a
reader that wants the keys and statuses alone (a rerun's skip list) reads those columns only.

- A scalar field whose values are all of one type (bool, int, float or str) is a column of that
  type; a field a record lacks is null there (read back: the record lacks it again).
- Anything else (lists, dicts, None given as a value, mixed types) is a column of JSON text
  (``json_columns`` in the file's metadata): null for a record that lacks it, ``"null"`` for one
  that holds None, so that a reader sees exactly the dict that was written.
- The spec's fields are ``spec.<field>`` columns of JSON text, but for its key, which is the
  record's own.

A run folder holding shards of the earlier JSON layout (``.jsonl``, ``.json``) is refused in one
line by `results.tables.shard_files`, which names them; nothing here reads them.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

# File metadata: the format's version and the columns stored as JSON text.
FORMAT_KEY = b"svmbench.shard"
FORMAT_VERSION = b"1"
JSON_KEY = b"svmbench.json_columns"
SPEC_PREFIX = "spec."
_NATIVE = (bool, int, float, str)
_ABSENT = object()     # a field the record lacks (`encode`)


class ShardError(ValueError):
    """A shard file that does not hold records: the message names the file (and the line)."""


def json_default(obj):
    """JSON for what records carry that JSON lacks: numpy scalars and arrays as numbers and
    lists, anything else as its text (a record is never refused for one odd value)."""
    import numpy as np
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def dumps(value) -> str:
    """A nested record value as the JSON text its column holds (NaN and inf kept)."""
    return json.dumps(value, allow_nan=True, default=json_default)


class Record(NamedTuple):
    """One spec's result as a shard stores it: what its task returned (`fields`: key, kind,
    status, error, certificates, timings, ``env_*``; plain values, as the task made them) and
    the spec that produced it (a typed spec, `experiment.specs`, whose `as_dict(stored=True)`
    is its ``spec.<field>`` columns; None for none). The engine's sink makes one per record it
    takes and hands it to its listeners and to the shard writer (`encode`)."""

    fields: dict
    spec: Any = None

    @property
    def key(self) -> str:
        return self.fields["key"]

    @property
    def kind(self) -> str | None:
        return self.fields.get("kind")

    @property
    def status(self) -> str | None:
        return self.fields.get("status")

    def get(self, name: str, default=None):
        """A field of the task's result (`fields`), or default."""
        return self.fields.get(name, default)

    def row(self) -> dict:
        """The record as one flat row: its fields, then its spec's as ``spec.<field>``."""
        return _row(self.fields, self.spec)


def _row(fields: dict, spec) -> dict:
    row = {k: v for k, v in fields.items() if k != "spec"}
    if spec is not None:
        stored = spec.as_dict(stored=True) if hasattr(spec, "as_dict") else \
            {k: v for k, v in spec.items() if k != "key"}
        row.update((SPEC_PREFIX + k, v) for k, v in stored.items())
    return row


def encode(records: list):
    """The records as one Arrow table (see the module's docstring for the columns): `Record`s,
    or dicts of a record's fields with its spec's dict under ``spec``, as `decode` returns them."""
    import pyarrow as pa

    rows = [record.row() if isinstance(record, Record) else _row(record, record.get("spec")) for record in records]
    names = list(dict.fromkeys(k for row in rows for k in row))
    arrays, json_columns = [], []
    for name in names:
        values = [row.get(name, _ABSENT) for row in rows]
        array = None if name.startswith(SPEC_PREFIX) else _native(values)
        if array is None:
            # The specs of a task share their sub-dicts (one data dict, one budget...): each
            # object is serialised once.
            text: dict[int, str] = {}
            array = pa.array([None if v is _ABSENT else (text.get(id(v)) or text.setdefault(id(v), dumps(v)))
                              for v in values], type=pa.string())
            json_columns.append(name)
        arrays.append(array)
    meta = {FORMAT_KEY: FORMAT_VERSION, JSON_KEY: json.dumps(json_columns).encode()}
    return pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(meta)


def _native(values: list):
    """A typed Arrow array of the values (absent ones null), or None where only JSON keeps them."""
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not _ABSENT}
    if len(kinds) != 1 or not kinds <= set(_NATIVE):
        return None
    kind = kinds.pop()
    arrow = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}[kind]
    try:
        return pa.array([None if v is _ABSENT else v for v in values], type=arrow)
    except (OverflowError, pa.ArrowException):     # an int past int64
        return None


def write(records: list, path: Path) -> None:
    """The records as a Parquet file at path (zstd: the keys and numbers are what is left)."""
    import pyarrow.parquet as pq
    pq.write_table(encode(records), path, compression="zstd")


def decode(table) -> list[dict]:
    """The records an `encode`d table holds, as they were written."""
    meta = table.schema.metadata or {}
    json_columns = set(json.loads(meta.get(JSON_KEY, b"[]")))
    n = table.num_rows
    columns = []
    for name in table.column_names:
        values = table.column(name).to_pylist()
        if name in json_columns:
            # Spec fields repeat across a task's records: each text is parsed once and the
            # records share the object (read only, as the specs of a plan share theirs).
            if name.startswith(SPEC_PREFIX):
                parsed: dict = {}
                values = [_ABSENT if v is None else (parsed[v] if v in parsed else parsed.setdefault(v, json.loads(v)))
                          for v in values]
            else:
                values = [_ABSENT if v is None else json.loads(v) for v in values]
        else:
            values = [_ABSENT if v is None else v for v in values]
        columns.append((name, values))
    records = []
    for i in range(n):
        record, spec = {}, {}
        for name, values in columns:
            v = values[i]
            if v is _ABSENT:
                continue
            if name.startswith(SPEC_PREFIX):
                spec[name[len(SPEC_PREFIX):]] = v
            else:
                record[name] = v
        if spec:
            spec["key"] = record.get("key")
            record["spec"] = spec
        records.append(record)
    return records


def _parquet(path: Path, columns=None, dictionary=False):
    """The shard's table (only those of `columns` it has, if given; with dictionary, its string
    columns dictionary-encoded as Parquet stores them); ShardError naming the file for one that
    is not a shard (torn by hand, another program's file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        shard = pq.ParquetFile(path)
        schema = shard.schema_arrow
        if dictionary:
            # The key is a record's own: one text per record, no dictionary to share.
            strings = [f.name for f in schema if f.type == pa.string() and f.name != "key"]
            shard = pq.ParquetFile(path, read_dictionary=strings)
        table = shard.read(columns=None if columns is None else [c for c in columns if c in schema.names], use_threads=False)
    except (pa.ArrowException, OSError) as exc:
        raise ShardError(f"{path}: not a valid shard file ({exc}); delete the file to recompute its tasks") from None
    if (schema.metadata or {}).get(FORMAT_KEY) is None or "key" not in schema.names:
        raise ShardError(f"{path}: a Parquet file that is not an svmbench shard (no records with a 'key'); "
                         f"delete the file to recompute its tasks")
    return table.replace_schema_metadata(schema.metadata)


def read_shard(path: Path) -> list[dict]:
    """Every record of one shard file, in the order written."""
    return decode(_parquet(Path(path)))


def read_statuses(path: Path) -> list[tuple[str, str | None, str | None]]:
    """(key, status, error) of each record of one shard file: a Parquet shard's three columns
    alone, not its records (a rerun's skip list reads every shard)."""
    table = _parquet(Path(path), ("key", "status", "error"))
    names = set(table.column_names)
    meta = table.schema.metadata or {}
    json_columns = set(json.loads(meta.get(JSON_KEY, b"[]")))
    keys = table.column("key").to_pylist()
    out = {}
    for name in ("status", "error"):
        values = table.column(name).to_pylist() if name in names else [None] * len(keys)
        out[name] = [json.loads(v) if v is not None and name in json_columns else v for v in values]
    return list(zip(keys, out["status"], out["error"]))


def read_columns(path: Path, columns) -> dict[str, list]:
    """Of one shard file, the key and those of `columns` it has, each a list over its records
    (None where a record has no value), JSON text parsed: a few columns of every record, not its
    records (a run's cost history; what a resumed run hands a timing ladder)."""
    table = _parquet(Path(path), ("key", *columns))
    meta = table.schema.metadata or {}
    json_columns = set(json.loads(meta.get(JSON_KEY, b"[]")))
    values = {name: table.column(name).to_pylist() for name in table.column_names}
    for name in values.keys() & json_columns:
        values[name] = [json.loads(v) if v is not None else None for v in values[name]]
    return values


def read_table(path: Path):
    """(table, JSON columns) of one shard file: its records as an Arrow table, every string
    column but the key dictionary-encoded (a sweep's records repeat their spec's texts: read as
    one entry per distinct text and an index per record, not a string per record), and the names of
    the columns that hold JSON text."""
    table = _parquet(Path(path), dictionary=True)
    meta = table.schema.metadata or {}
    return table, frozenset(json.loads(meta.get(JSON_KEY, b"[]")))
