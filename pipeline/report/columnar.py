"""The report's columnar engine: a run's Parquet tables as DuckDB views, asked for summaries.

A report reads a run through SQL over its files (``results.parquet``, ``traces.parquet``,
``timing.parquet``, ``timing_traces.parquet``, ``models.parquet``), never a frame of every fit:
DuckDB reads only the columns and row groups a query needs, aggregates in a bounded buffer pool
(``memory_limit``; past it, to temporary files) and hands back the small result, a row per
configuration, problem or dataset. Why DuckDB rather than pyarrow's dataset and compute modules:
the design section "The report at scale" (docs/design/execution.md).

The same views stand over in-memory frames (`Engine.frames`: the tests' hand-made tables, a
paper's filtered frames, a bounded subset of a run), so that one query serves both.

The grouping columns follow the report's one rule for a missing value (`common.key_value`): NaN,
None and the strings "nan", "None" and "" are one value, shown as "-". `norm` writes that rule in
SQL (NULL for all of them: GROUP BY keeps NULLs as one group), and `point_c` the rule that a
problem given by lambda has one C, the mean over its fits (`common.point_C`). Aggregates that a
table shows are those pandas computes digit for digit: `favg` and `fsum` (compensated sums, as
pandas' grouped mean and sum), `stddev_samp` (Welford's, as pandas' grouped std), `median`.
"""
from __future__ import annotations

import os
import tempfile
import weakref
from pathlib import Path

import numpy as np
import pandas as pd

# The run's tables by the name queries use, and their files.
FILES = {"results": "results.parquet", "traces": "traces.parquet", "models": "models.parquet",
         "timing": "timing.parquet", "timing_traces": "timing_traces.parquet"}
# An empty traces table's columns (a frame given without any): what every trace query names.
TRACE_SCHEMA = {"key": "VARCHAR", "iteration": "BIGINT", "time_s": "DOUBLE", "primal": "DOUBLE",
                "dual": "DOUBLE", "gap": "DOUBLE"}
# The engine's buffer pool (MB) and threads: aggregates past it spill to temporary files, so a
# report's memory does not grow with the run; two threads leave the figure processes their cores.
MEMORY_MB = 256
# Fits up to which the tables derived for several queries are made once (`Engine.view(keep=True)`).
MATERIALISE_ROWS = 20_000
THREADS = 2


def q(name: str) -> str:
    """A column or table name quoted for SQL (`param_huber_k`, `info_b_rule`, any user key)."""
    return '"' + str(name).replace('"', '""') + '"'


def lit(value) -> str:
    """A Python value as a SQL literal (strings quoted; None as NULL; floats exactly)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "NULL"
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return f"'{v!r}'::DOUBLE" if np.isfinite(v) else ("'inf'::DOUBLE" if v > 0 else "'-inf'::DOUBLE")
    return "'" + str(value).replace("'", "''") + "'"


# Every engine of this process: a forked figure process gives each a connection of its own.
_ENGINES: "weakref.WeakSet[Engine]" = weakref.WeakSet()
# A forked process's copies of its parent's connections, kept from their destructors (`reopen`).
_INHERITED: list = []


def reopen_all() -> None:
    """In a forked process: every engine on a connection of the process's own (`Engine.reopen`)."""
    for engine in list(_ENGINES):
        engine.reopen()


class Engine:
    """A DuckDB connection holding a run's tables as views (`tables`: those the run has), and
    `fits`, the results of every fit that finished (status other than `error`)."""

    def __init__(self, con, tables: set[str], script: list | None = None):
        _ENGINES.add(self)
        self.con = con
        self.tables = set(tables)
        self._columns: dict[str, dict[str, str]] = {}
        self._present: dict[str, set[str]] = {}
        self._views = 0
        self._small: bool | None = None
        # What made this connection's state, in order (("sql", text) or ("arrow", name, table)):
        # a forked figure process replays it on a connection of its own (`reopen`).
        self.script = list(script or [])
        # A number as pandas' to_numeric(errors="coerce") reads it, NaN as NULL (`nn`: DuckDB
        # orders NaN above every number, pandas' max and median skip it).
        self.run("CREATE OR REPLACE TEMP MACRO nn(x) AS (CASE WHEN isnan(x) THEN NULL ELSE x END)")
        self.run("CREATE OR REPLACE TEMP MACRO num(x) AS nn(TRY_CAST(x AS DOUBLE))")
        if "results" in self.tables:
            self.run("CREATE OR REPLACE TEMP VIEW fits AS SELECT * FROM results WHERE status IS DISTINCT FROM 'error'")
            self.tables.add("fits")

    def run(self, sql: str) -> None:
        """A statement that changes the connection's state (a view, a macro), kept in `script`."""
        self.con.execute(sql)
        self.script.append(("sql", sql))

    def register(self, name: str, table) -> None:
        """An Arrow table as a view of that name, kept in `script`."""
        self.con.register(name, table)
        self.script.append(("arrow", name, table))

    def reopen(self, threads: int = 1) -> None:
        """A connection of this process's own, in the state of the one it replaces: DuckDB's
        connection is not shared across fork, so a forked figure process replays the views."""
        con = self.connect(threads=threads)
        # The inherited connection is never closed nor freed here: its destructor would wait on
        # locks and threads of the parent's DuckDB that the fork did not copy (it hangs, or
        # crashes). Kept referenced, it dies with the process (which ends by os._exit).
        _INHERITED.append(self.con)
        for step in self.script:
            if step[0] == "sql":
                con.execute(step[1])
            else:
                con.register(step[1], step[2])
        self.con = con

    @staticmethod
    def connect(memory_mb: int | None = None, threads: int | None = None):
        """A DuckDB connection with the report's bounds (`MEMORY_MB`, `THREADS`)."""
        import duckdb
        tmp = Path(tempfile.gettempdir()) / f"svmbench-report-{os.getpid()}"
        return duckdb.connect(config={"memory_limit": f"{memory_mb or MEMORY_MB}MB", "threads": threads or THREADS,
                                      "temp_directory": str(tmp), "preserve_insertion_order": True})

    @classmethod
    def files(cls, run_dir: Path, memory_mb: int | None = None) -> "Engine":
        """The tables of a run directory, read where they lie (only the columns a query names)."""
        con = cls.connect(memory_mb)
        present, script = set(), []
        for name, file in FILES.items():
            path = Path(run_dir) / file
            if path.exists():
                src = f"read_parquet({lit(str(path))})"
                # A fit's key is text in every table; a table of no rows (traces of a run with
                # run.trace=false) is written with an untyped key, read as a number, which a
                # join or an IN with the results' keys refuses.
                kinds = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {src})").fetchall())
                fix = " REPLACE (CAST(key AS VARCHAR) AS key)" if kinds.get("key", "VARCHAR") != "VARCHAR" else ""
                script.append(("sql", f"CREATE TEMP VIEW {name} AS SELECT *{fix} FROM {src}"))
                con.execute(script[-1][1])
                present.add(name)
        return cls(con, present, script)

    @classmethod
    def frames(cls, **frames) -> "Engine":
        """In-memory tables (name -> DataFrame; None or a frame without columns: absent, but for
        traces, which is then an empty table of its usual columns)."""
        con = cls.connect()
        present, script = set(), []
        for name, df in frames.items():
            if df is None or len(df.columns) == 0:
                if name == "traces":
                    cols = ", ".join(f"{q(c)} {t}" for c, t in TRACE_SCHEMA.items())
                    script.append(("sql", f"CREATE TEMP TABLE traces ({cols})"))
                    present.add(name)
                continue
            script += [("arrow", f"_frame_{name}", arrow_table(df)),
                       ("sql", f"CREATE TEMP VIEW {name} AS SELECT * FROM _frame_{name}")]
            present.add(name)
        for step in script:
            con.execute(step[1]) if step[0] == "sql" else con.register(step[1], step[2])
        return cls(con, present, script)

    def close(self) -> None:
        self.con.close()

    # ---------------------------------------------------------------------------- what is there
    def exists(self, table: str) -> bool:
        return table in self.tables

    def types(self, table: str) -> dict[str, str]:
        """Column name -> DuckDB type of a table or view ({} if the run lacks it)."""
        if table not in self._columns:
            if not self.exists(table):
                return {}
            self._columns[table] = {r[0]: r[1] for r in self.con.execute(f"DESCRIBE {q(table)}").fetchall()}
        return self._columns[table]

    def columns(self, table: str) -> list[str]:
        return list(self.types(table))

    def present(self, table: str) -> set[str]:
        """The columns of a table with at least one value (not NULL, not NaN): one scan for all."""
        if table not in self._present:
            cols = self.columns(table)
            if not cols:
                self._present[table] = set()
            else:
                counts = self.con.execute("SELECT " + ", ".join(f"count({norm(c, self.types(table)[c])})" for c in cols)
                                          + f" FROM {q(table)}").fetchall()[0]
                self._present[table] = {c for c, n in zip(cols, counts) if n}
        return self._present[table]

    def has(self, table: str, column: str) -> bool:
        return column in self.present(table)

    # ----------------------------------------------------------------------------------- queries
    def small(self) -> bool:
        """Whether the run is small enough (at most MATERIALISE_ROWS fits) that a derived table read
        by several queries is kept whole rather than computed again by each (`view(keep=True)`)."""
        if self._small is None:
            self._small = "results" in self.tables and \
                int(self.scalar("SELECT count(*) FROM results") or 0) <= MATERIALISE_ROWS
        return self._small

    def view(self, sql: str, name: str | None = None, keep: bool = False) -> str:
        """A temporary view of a query (a name of its own unless given); returns its name. `keep`:
        a table many queries read (the speed views, each target's times) is made once, a temporary
        table, on a small run: DuckDB computes a view again for every query that names it, and the
        speed tables name each one several times over. On a large run it stays a view, read from the
        files as it is asked (a temporary table of every fit would hold them all)."""
        if name is None:
            self._views += 1
            name = f"_view_{self._views}"
        if keep and self.small():
            self.run(f"CREATE OR REPLACE TEMP TABLE {q(name)} AS {sql}")
        else:
            self.run(f"CREATE OR REPLACE TEMP VIEW {q(name)} AS {sql}")
        self.tables.add(name)
        self._columns.pop(name, None)
        self._present.pop(name, None)
        return name

    def arrow(self, sql: str, params=None):
        return self.con.sql(sql, params=params).to_arrow_table() if params else self.con.sql(sql).to_arrow_table()

    def df(self, sql: str, params=None) -> pd.DataFrame:
        """A query's result as pandas reads the same columns from Parquet (through Arrow)."""
        return self.arrow(sql, params).to_pandas()

    def scalar(self, sql: str, params=None):
        rows = self.con.execute(sql, params or []).fetchall()
        return rows[0][0] if rows else None

    def batches(self, sql: str, rows: int = 65536):
        """A query's result in record batches of about `rows` rows: read without holding it whole."""
        yield from self.con.sql(sql).to_arrow_reader(rows)


def norm(column: str, dtype: str, source: str = "") -> str:
    """The column as a grouping key: NULL for every spelling of a missing value (`key_value`)."""
    ref = f"{source}.{q(column)}" if source else q(column)
    if dtype in ("DOUBLE", "FLOAT", "REAL"):
        return f"(CASE WHEN isnan({ref}) THEN NULL ELSE {ref} END)"
    if dtype == "VARCHAR":
        return f"(CASE WHEN {ref} IN ('nan', 'None', '') THEN NULL ELSE {ref} END)"
    return ref


def arrow_table(df: pd.DataFrame):
    """A frame as Arrow (NaN as null, as Parquet stores it); a column of mixed kinds (numbers and
    strings) as strings, as the results tables write it (`results.columns.mixed`)."""
    import pyarrow as pa
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        fixed = df.copy(deep=False)
        for c in fixed.columns:
            try:
                pa.array(fixed[c], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                fixed[c] = fixed[c].map(lambda v: None if v is None or (isinstance(v, float) and np.isnan(v))
                                        else str(v))
        return pa.Table.from_pandas(fixed, preserve_index=False)
