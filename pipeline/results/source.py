"""A run dir's shards as one DuckDB relation of their newest records, read where they lie.

The tables (`results.tables`) are written from it by DuckDB, never from a frame of every fit: a
query names the columns it reads (a shard's Parquet columns are read only when named), DuckDB
sorts and joins in a buffer pool bounded by `MEMORY_MB` (spilling past it to a folder of the run
dir, removed after) and hands the rows on in record batches.

Each shard describes itself (`results.shards`): a field is a typed column (bool, int, float or
string) or JSON text, and may be typed in one shard and JSON in another (a None among its values
there). `Source` reads every shard's schema (its footer only) and gives each field one form over
all of them, as the tables always did: JSON wherever one shard has it as JSON or two shards type
it differently (ints and floats are floats); a typed shard's values of a JSON field are then
their JSON text (`to_json`, which parses to the same value). Shards of one form are read by one
`read_parquet`, and the forms are stacked (`UNION ALL`) into the view ``rec``: every record, with
its shard's place in `shard_files`' order (``_f``) and its row there (``_r``).

``newest`` is each key's newest record (the last in that order: a retried error replaced by its
later record), only of the run's keys where given: the relation every table reads.
"""
from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .shards import FORMAT_KEY, JSON_KEY, ShardError

# DuckDB's buffer pool (MB) and threads while the tables are written: past the pool, sorts and
# joins spill to files, so the tables' memory does not grow with the run. Not every operator
# spills: the distinct trace extras of a run traced at every pass (json_keys over every point)
# ran out of a 256 MB pool on a paper's run, so the pool is a cap with room, not a target.
MEMORY_MB = 1024
THREADS = 2
# Rows of a record batch (DuckDB -> Arrow -> the Parquet writer), and keys per Arrow chunk of
# the run's keys handed to DuckDB.
BATCH_ROWS = 65_536
# Where DuckDB spills, in the run dir (a system temporary folder may be memory, tmpfs).
SPILL_DIR = ".tables-spill"


def q(name: str) -> str:
    """A column or table name quoted for SQL (any field name a record may hold)."""
    return '"' + str(name).replace('"', '""') + '"'


def lit(text: str) -> str:
    """A string as a SQL literal."""
    return "'" + str(text).replace("'", "''") + "'"


# A typed field's kind -> (SQL type, Arrow type).
_TYPES = {"int": ("BIGINT", pa.int64()), "float": ("DOUBLE", pa.float64()), "bool": ("BOOLEAN", pa.bool_()),
          "str": ("VARCHAR", pa.string())}


def _kind(arrow_type: pa.DataType) -> str:
    if pa.types.is_dictionary(arrow_type) or pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "str"
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_floating(arrow_type):
        return "float"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    return str(arrow_type)


@dataclass(frozen=True)
class Field:
    """A record field over every shard: JSON text (`json`), or typed of `kind` (int, float,
    bool, str). SQL over it names the column ``alias.name``."""
    name: str
    json: bool
    kind: str | None = None

    def col(self, alias: str = "") -> str:
        return f"{alias}.{q(self.name)}" if alias else q(self.name)

    @property
    def sql_type(self) -> str:
        return "VARCHAR" if self.json else _TYPES[self.kind][0]

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.string() if self.json else _TYPES[self.kind][1]

    def kind_sql(self, alias: str = "") -> str:
        """The kind of a row's value: "absent" where the record lacks the field; for JSON, DuckDB's
        json_type (NULL, BOOLEAN, BIGINT, UBIGINT, DOUBLE, VARCHAR, ARRAY, OBJECT); else the kind."""
        c = self.col(alias)
        if self.json:
            return f"coalesce(json_type({c}), 'absent')"
        return f"(CASE WHEN {c} IS NULL THEN 'absent' ELSE {lit(self.kind)} END)"

    def value_sql(self, sql_type: str, alias: str = "") -> str:
        """A row's value as that SQL type (NULL where absent, or JSON null)."""
        c = self.col(alias)
        if not self.json:
            return c if sql_type == self.sql_type else f"CAST({c} AS {sql_type})"
        if sql_type == "VARCHAR":
            return f"json_extract_string({c}, '$')"
        return f"CAST({c}::JSON AS {sql_type})"

    def present_sql(self, alias: str = "") -> str:
        """Whether the record has the field (a JSON null is a value it has)."""
        return f"({self.col(alias)} IS NOT NULL)"

    def truthy_sql(self, alias: str = "") -> str:
        """Whether the value is true as Python tests it (0, None, "", [], {} and a lacking value
        are not; NaN is)."""
        c = self.col(alias)
        if not self.json:
            test = {"int": f"{c} <> 0", "float": f"{c} <> 0", "bool": c, "str": f"{c} <> ''"}[self.kind]
            return f"coalesce({test}, false)"
        return (f"coalesce(CASE json_type({c}) WHEN 'NULL' THEN false WHEN 'BOOLEAN' THEN {c} = 'true' "
                f"WHEN 'VARCHAR' THEN json_extract_string({c}, '$') <> '' WHEN 'ARRAY' THEN json_array_length({c}) > 0 "
                f"WHEN 'OBJECT' THEN {c} <> '{{}}' ELSE CAST({c}::JSON AS DOUBLE) <> 0 END, false)")


def _schema(path: Path) -> tuple[dict[str, str], list[str]]:
    """(field -> its kind, or "json"; the fields in the shard's order) of one shard file, from
    its footer; ShardError naming the file for one that is not a shard."""
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise ShardError(f"{path}: not a valid shard file ({exc}); delete the file to recompute its tasks") from None
    meta = schema.metadata or {}
    if meta.get(FORMAT_KEY) is None or "key" not in schema.names:
        raise ShardError(f"{path}: a Parquet file that is not an svmbench shard (no records with a 'key'); "
                         f"delete the file to recompute its tasks")
    json_columns = set(json.loads(meta.get(JSON_KEY, b"[]")))
    return {f.name: "json" if f.name in json_columns else _kind(f.type) for f in schema}, schema.names


def unify(shards: list[dict[str, str]], order: list[str]) -> dict[str, Field]:
    """Each field's one form over every shard (field -> kind or "json" in each): JSON where a
    shard has it as JSON or the shards' kinds differ (ints and floats: floats)."""
    out = {}
    for name in order:
        here = [s[name] for s in shards if name in s]
        kinds = {k for k in here if k != "json"}
        if "json" in here or not (len(kinds) == 1 or kinds == {"int", "float"}) or not kinds <= set(_TYPES):
            out[name] = Field(name, True)
        else:
            out[name] = Field(name, False, "float" if len(kinds) > 1 else kinds.pop())
    return out


def _chunks(values, size: int = BATCH_ROWS):
    """An iterable in lists of at most size (the run's keys, never all as one more list)."""
    chunk = []
    for v in values:
        chunk.append(v)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class Source:
    """The newest record of each key of a run dir's shards (only of `keys` if given), as DuckDB
    views over the shard files: ``rec`` (every record), ``newest``; `fields` maps each field to
    its form. `reference_of` (fit key -> reference key, the current plan's) stands as the table
    ``_refof``. Close it (or use it as a context manager): its spill folder goes."""

    def __init__(self, run_dir: Path, files: list[Path], keys=None, reference_of=None,
                 memory_mb: int | None = None, threads: int | None = None):
        import duckdb
        memory_mb, threads = memory_mb or MEMORY_MB, threads or THREADS
        self.run_dir = Path(run_dir)
        self.spill = self.run_dir / SPILL_DIR
        self.con = duckdb.connect(config={"memory_limit": f"{memory_mb}MB", "threads": threads,
                                          "temp_directory": str(self.spill), "preserve_insertion_order": False})
        self.files = [Path(p) for p in files]
        forms, order = [], {}
        for p in self.files:
            form, names = _schema(p)
            forms.append(form)
            order.update(dict.fromkeys(names))
        self.fields = unify(forms, list(order))
        self.keyed = keys is not None
        self._register("_files", pa.table({"filename": pa.array([str(p) for p in self.files], pa.string()),
                                           "_f": pa.array(range(len(self.files)), pa.int64())}))
        if keys is not None:
            self._register_chunks("_wanted", (([k] for k in chunk) for chunk in _chunks(keys)), ["key"])
        pairs = reference_of.items() if isinstance(reference_of, dict) else (reference_of or ())
        self._register_chunks("_refof", (chunk for chunk in _chunks(pairs)), ["key", "ref"])
        self._views(forms)

    def _register(self, name: str, table: pa.Table) -> None:
        self.con.register(name, table)

    def _register_chunks(self, name: str, chunks, columns: list[str]) -> None:
        """Rows given in chunks (lists of tuples) as one Arrow table of string columns."""
        batches = [pa.record_batch([pa.array(col, pa.string()) for col in zip(*chunk)], names=columns)
                   for chunk in (list(c) for c in chunks) if chunk]
        schema = pa.schema([(c, pa.string()) for c in columns])
        self._register(name, pa.Table.from_batches(batches, schema=schema))

    def _views(self, forms: list[dict[str, str]]) -> None:
        groups: dict[tuple, list[Path]] = {}
        for p, form in zip(self.files, forms):
            groups.setdefault(tuple(sorted(form.items())), []).append(p)
        parts = []
        for sig, paths in groups.items():
            here = dict(sig)
            cols = []
            for f in self.fields.values():
                kind = here.get(f.name)
                if kind is None:
                    cols.append(f"NULL::{f.sql_type} AS {q(f.name)}")
                elif f.json and kind != "json":
                    cols.append(f"to_json({q(f.name)})::VARCHAR AS {q(f.name)}")
                elif not f.json and kind != f.kind:
                    cols.append(f"CAST({q(f.name)} AS {f.sql_type}) AS {q(f.name)}")
                else:
                    cols.append(q(f.name))
            files = "[" + ", ".join(lit(str(p)) for p in paths) + "]"
            parts.append(f"SELECT _files._f, s.file_row_number AS _r, {', '.join(cols)} "
                         f"FROM read_parquet({files}, union_by_name = true, filename = true, file_row_number = true) s "
                         f"JOIN _files USING (filename)")
        if not parts:
            cols = ", ".join(f"NULL::{f.sql_type} AS {q(f.name)}" for f in self.fields.values()) or "NULL::VARCHAR AS key"
            parts = [f"SELECT NULL::BIGINT AS _f, NULL::BIGINT AS _r, {cols} WHERE false"]
        self.con.execute("CREATE TEMP VIEW rec AS " + " UNION ALL ".join(parts))
        wanted = " SEMI JOIN _wanted w ON w.key = r.key" if self.keyed else ""
        # A key met again in a later shard (a retried error): its earlier records are left out.
        self.con.execute("CREATE TEMP TABLE _last AS SELECT key, max(_f * 4294967296 + _r) AS _o FROM rec "
                         "GROUP BY key HAVING count(*) > 1")
        stale = ""
        if self.scalar("SELECT count(*) FROM _last"):
            stale = " ANTI JOIN _last l ON l.key = r.key AND l._o > r._f * 4294967296 + r._r"
        self.con.execute(f"CREATE TEMP VIEW newest AS SELECT r.* FROM rec r{wanted}{stale}")

    # ------------------------------------------------------------------------------------ reading
    def field(self, name: str) -> Field | None:
        return self.fields.get(name)

    def scalar(self, sql: str):
        rows = self.con.execute(sql).fetchall()
        return rows[0][0] if rows else None

    def rows(self, sql: str) -> list[tuple]:
        return self.con.execute(sql).fetchall()

    def batches(self, sql: str, rows: int = BATCH_ROWS) -> pa.RecordBatchReader:
        """A query's result in record batches: read without holding it whole."""
        return self.con.sql(sql).to_arrow_reader(rows)

    def others(self) -> int:
        """Keys in the shards that are not the run's (records of other configs)."""
        if not self.keyed:
            return 0
        return int(self.scalar("SELECT count(*) FROM (SELECT DISTINCT key FROM rec) r ANTI JOIN _wanted w ON w.key = r.key"))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()
        shutil.rmtree(self.spill, ignore_errors=True)

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
