"""The report's registry: every table and figure is a small function that declares the columns
it needs, registered here in the order the report shows them (like solvers/registry.py for
solvers). `build.py` walks the registry; a paper reproduction adds a figure by registering one
more function, without touching the others.

A function takes a `ReportData` and returns a DataFrame (a table) or a matplotlib Figure (a
figure). The registry checks the declared columns first (a missing one skips the item with a note
naming it); a function that finds its columns but nothing to show in them raises `Skip(reason)`.

The data contract: a function asks `ReportData` for summaries, never for a frame of every fit.
The run's Parquet tables stand in a columnar engine (columnar.py, DuckDB) and a function asks it

- `data.summary(by, aggs)`: a group-by over configuration or problem keys (`by`), each aggregate
  a SQL expression (`favg(test_accuracy)`, `median(fit_time_s)`, `quantile_cont(x, 0.75)`,
  `count_if(status = 'converged')`), the groups keyed and ordered as the report keys every
  table (a missing value is one group, "-"; C one per lambda point);
- `data.sql(query)`: any other query over `data.table("fits")`, `data.table("traces")`, ... whose
  result is small (top-k by a measure: ORDER BY ... LIMIT k);
- `data.subset(pids)`: the fits of a few problems (their rows, traces, timing fits and models) as
  a small in-memory `ReportData`, whose `.fits`, `.traces` and `trace_arrays()` a figure of one
  panel per problem draws from; past `MAX_PROBLEMS` problems `data.panels()` picks which
  (`figures.chosen_problems`: the best, the slowest, the largest gap, those that did not converge).

`.results`, `.fits`, `.traces`, `.timing`, `.timing_traces` and `.models` are frames only on a small
`ReportData` (made from frames, or a subset): on a run's files they raise `WholeTable`, so that no
item reads every fit by mistake.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from .columnar import Engine, norm, q
from .common import LAMBDA, PROBLEM_COLUMNS, key_values, point_c, swept_keys_sql


class Skip(Exception):
    """Raised by a table or figure function with nothing to show; the message goes in the report,
    with `hint` (what to set to get the item) in place of the item's own where given."""

    def __init__(self, reason: str, hint: str | None = None):
        super().__init__(reason)
        self.hint = hint


# Past this many problems (a dataset and every problem key: one panel of a convergence figure),
# the figures of one panel per problem draw a named selection of them and the report adds
# summaries over the swept keys (figures.py); at or below it, every problem, as always.
MAX_PROBLEMS = 24
# Fits (rows of results and timing) a subset may hold: the problems a figure draws one panel
# each are a few, but a problem may have thousands of folds; past it the figure says so.
SUBSET_ROWS = 200_000
# Trace points a subset may hold (a bounded number a fit: solvers.Recorder's max_points).
SUBSET_POINTS = 2_000_000


class WholeTable(AttributeError):
    """A frame of a whole table asked of a run's files: items ask for summaries or a subset."""


class ReportData:
    """What every table and figure reads: the run's tables in the columnar engine (`Engine`),
    and the report options. Made from a run directory (`ReportData.open`) or from frames
    (`ReportData(results, traces, models, ...)`: small, its frames readable as they are)."""

    def __init__(self, results: pd.DataFrame | None = None, traces: pd.DataFrame | None = None,
                 models: pd.DataFrame | None = None, baseline: str | None = None, name: str = "",
                 timing: pd.DataFrame | None = None, timing_traces: pd.DataFrame | None = None,
                 target: float | None = None, *, engine: Engine | None = None, small: bool = True,
                 names: dict | None = None, parent: "ReportData | None" = None, root: "ReportData | None" = None,
                 search: dict | None = None):
        self._frames = None
        if engine is None:
            self._frames = {"results": results if results is not None else pd.DataFrame(), "traces": traces,
                            "models": models, "timing": timing, "timing_traces": timing_traces}
            engine = Engine.frames(**self._frames)
        self.engine = engine
        self.baseline = baseline            # report.baseline: the solver entry ratios are taken against
        self.name = name
        self.search = search                # a search's state (the run's search.json; None: a grid's run)
        self.target = target                # report.target: the (P - f*)/|f*| speed is timed to (None: 1e-3)
        self.small = small                  # frames may be read whole (made from frames, or a subset)
        self._names = dict(names or {})     # logical table -> the engine's view (a speed view's)
        self.parent = parent                # a subset's whole: its swept keys are the whole run's
        self.root = root if root is not None else self      # the run before any view or subset
        # What several items derive alike, made once (speed.py: the speed rows and the view of the
        # fits speed is read from; figures.py: the problems drawn one per panel).
        self.cache: dict = {}
        self._loaded: dict = {}
        self._arrays = None

    @classmethod
    def open(cls, run_dir, baseline: str | None = None, target: float | None = None, name: str | None = None,
             memory_mb: int | None = None, search: dict | None = None) -> "ReportData":
        """A run directory's tables, read where they lie: only summaries and subsets of them."""
        from pathlib import Path
        return cls(engine=Engine.files(Path(run_dir), memory_mb), small=False, baseline=baseline,
                   name=Path(run_dir).name if name is None else name, target=target, search=search)

    def view(self, names: dict, small: bool | None = None) -> "ReportData":
        """This data with some logical tables standing for other views of the same engine (a
        name mapped to None: the view has no such table)."""
        return ReportData(engine=self.engine, small=self.small if small is None else small,
                          names={**self._names, **names}, baseline=self.baseline, name=self.name, target=self.target,
                          root=self.root, search=self.search)

    # ------------------------------------------------------------------------------ the contract
    def table(self, name: str) -> str:
        """The engine's name of a logical table (results, fits, traces, timing, timing_traces,
        models), quoted for SQL."""
        return q(self._names.get(name, name))

    def has_table(self, name: str) -> bool:
        view = self._names.get(name, name)
        return view is not None and self.engine.exists(view)

    def types(self, name: str) -> dict[str, str]:
        return self.engine.types(self._names.get(name, name)) if self.has_table(name) else {}

    def columns(self, name: str = "results") -> list[str]:
        return list(self.types(name))

    def frame_of(self, name: str = "results") -> pd.DataFrame:
        """An empty frame with the table's columns: what the column-only helpers of common.py
        (problem_columns, config_columns) read."""
        return pd.DataFrame(columns=self.columns(name))

    def has(self, name: str, column: str) -> bool:
        """Whether the table has the column with at least one value."""
        return self.has_table(name) and self.engine.has(self._names.get(name, name), column)

    def count(self, name: str = "results", where: str | None = None) -> int:
        if not self.has_table(name):
            return 0
        return int(self.engine.scalar(f"SELECT count(*) FROM {self.table(name)}" + (f" WHERE {where}" if where else "")))

    def sql(self, query: str, params=None) -> pd.DataFrame:
        """A query's (small) result as a frame."""
        return self.engine.df(query, params)

    def norm(self, column: str, name: str = "results", alias: str = "") -> str:
        """A column as a grouping key in SQL (`columnar.norm`)."""
        return norm(column, self.types(name).get(column, ""), alias)

    def summary(self, by: list[str], aggs: dict[str, str], name: str = "fits", where: str | None = None,
                params=None, sort: bool = True) -> pd.DataFrame:
        """One row per group of `by` over a table (`fits` by default, `where` filtering it first),
        with aggs {column: SQL aggregate}: the groups keyed as `common.keyed` keys a frame (each
        missing value "-", C one per lambda point, over the rows kept), in the order pandas' sorted
        groupby gives them."""
        types = self.types(name)
        rows = f"SELECT * FROM {self.table(name)}" + (f" WHERE {where}" if where else "")
        if "C" in by and "C" in types:
            rows = f"SELECT * REPLACE ({point_c(types)} AS \"C\") FROM ({rows})"
        keys = ", ".join(f"{norm(c, 'DOUBLE' if c == 'C' else types.get(c, ''))} AS {q(c)}" for c in by)
        body = ", ".join(f"{expr} AS {q(col)}" for col, expr in aggs.items())
        out = self.engine.df(f"SELECT {keys}{', ' if body else ''}{body} FROM ({rows}) GROUP BY ALL", params)
        for c in by:
            out[c] = key_values(out[c])
        return groupby_order(out, by) if sort else out

    def swept(self) -> list[str]:
        """`common.swept_keys` of the run's results (a subset's: of its whole)."""
        if self.parent is not None:
            return self.parent.swept()
        if "swept" not in self.cache:
            self.cache["swept"] = swept_keys_sql(self)
        return self.cache["swept"]

    def pid(self, name: str = "results", alias: str = "") -> str:
        """SQL naming a fit's problem (`figures.problem_key_columns`: the dataset and every problem
        key; a point given by lambda by its lambda, its C being a mean): one text per problem."""
        types = self.types(name)
        parts = []
        for c in PROBLEM_COLUMNS:
            if c in types and c != "C":
                parts.append(f"coalesce(CAST({norm(c, types[c], alias)} AS VARCHAR), '-')")
        if "C" in types:
            c_ref = f"{alias}.\"C\"" if alias else '"C"'
            if LAMBDA in types:
                lam = norm(LAMBDA, types[LAMBDA], alias)
                parts.append(f"(CASE WHEN {lam} IS NOT NULL THEN 'lambda=' || CAST({lam} AS VARCHAR) "
                             f"ELSE coalesce(CAST({c_ref} AS VARCHAR), '-') END)")
            else:
                parts.append(f"coalesce(CAST({c_ref} AS VARCHAR), '-')")
        return "concat_ws(' | ', " + ", ".join(parts) + ")" if parts else "''"

    def n_problems(self) -> int:
        """How many problems the run's finished fits solve (panels of a convergence figure)."""
        if "n_problems" not in self.root.cache:
            root = self.root
            self.root.cache["n_problems"] = int(root.engine.scalar(
                f"SELECT count(DISTINCT {root.pid('fits')}) FROM {root.table('fits')}") or 0) \
                if root.has_table("fits") else 0
        return self.root.cache["n_problems"]

    def subset(self, pids=None, why: dict | None = None, where: str | None = None,
               max_rows: int = SUBSET_ROWS) -> "ReportData":
        """The fits of the problems `pids` (every problem, if None), with their traces, timing
        fits and kept models, as a small ReportData (`why`: pid -> the reason it was chosen, in a
        `_why` column); `where`: only the results rows it selects (a SQL condition over their
        columns; then no timing fit). Skip past `max_rows` fits or SUBSET_POINTS trace points: a
        figure of one panel per problem cannot draw them, and they are not read."""
        if pids is None and where is None and self.small:
            return self
        con = self.engine.con
        if pids is not None:
            import pyarrow as pa
            pids = list(pids)
            con.register("_chosen", pa.table({"_pid": pa.array(pids, pa.string()),
                                              "_why": pa.array([(why or {}).get(p, "") for p in pids], pa.string())}))

        def rows(name):
            if not self.has_table(name) or (where is not None and name == "timing"):
                return None
            cond = f" WHERE {where}" if where is not None else ""
            if pids is None:
                return f"SELECT * FROM {self.table(name)}{cond}"
            # In the table's own order (its rows are sorted so: results.tables.ORDER), not the join's.
            order = ", ".join(q(c) for c in ("dataset", "solver_entry", "C", "fold", "key") if c in self.types(name))
            return (f"SELECT * FROM (SELECT r.*, c._why FROM {self.table(name)} r JOIN _chosen c "
                    f"ON {self.pid(name, 'r')} = c._pid){cond} ORDER BY {order}")

        frames = {}
        for name in ("results", "timing"):
            sql = rows(name)
            if sql is None:
                continue
            n = int(self.engine.scalar(f"SELECT count(*) FROM ({sql})"))
            if n > max_rows:
                raise Skip(f"{n} fits of the problems to draw one panel each (at most {max_rows} are read)")
            frames[name] = self.engine.df(sql)
        for name, of in (("traces", "results"), ("timing_traces", "timing"), ("models", "results")):
            if not self.has_table(name) or of not in frames:
                continue
            keys = f"SELECT key FROM ({rows(of)})"
            sql = f"SELECT * FROM {self.table(name)} WHERE key IN ({keys})"
            if name != "models":
                n = int(self.engine.scalar(f"SELECT count(*) FROM ({sql})"))
                if n > SUBSET_POINTS:
                    raise Skip(f"{n} trace points of the problems to draw (at most {SUBSET_POINTS} are read)")
            frames[name] = self.engine.df(sql)
        if pids is not None:
            con.unregister("_chosen")
        sub = ReportData(frames.get("results"), frames.get("traces", pd.DataFrame()), frames.get("models"),
                         baseline=self.baseline, name=self.name, timing=frames.get("timing"),
                         timing_traces=frames.get("timing_traces"), target=self.target, parent=self, root=self.root,
                         search=self.search)
        return sub

    # ------------------------------------------------------------------- frames of small data only
    def _frame(self, name: str) -> pd.DataFrame:
        if not self.small:
            raise WholeTable(f"the run's {name} are read through summaries (data.summary, data.sql) or a "
                             f"subset of problems (data.subset), not as a frame of every fit")
        if self._frames is not None and name in self._frames:
            df = self._frames[name]
            return df if df is not None else pd.DataFrame()
        if name not in self._loaded:
            self._loaded[name] = self.sql(f"SELECT * FROM {self.table(name)}") if self.has_table(name) \
                else pd.DataFrame()
        return self._loaded[name]

    @property
    def results(self) -> pd.DataFrame:
        return self._frame("results")

    @property
    def traces(self) -> pd.DataFrame:
        return self._frame("traces")

    @property
    def models(self) -> pd.DataFrame:
        return self._frame("models")

    @property
    def timing(self) -> pd.DataFrame:
        return self._frame("timing")

    @property
    def timing_traces(self) -> pd.DataFrame:
        return self._frame("timing_traces")

    @property
    def fits(self) -> pd.DataFrame:
        """The fits that finished (any status but `error`)."""
        res = self.results
        return res[res["status"] != "error"] if "status" in res.columns else res

    def trace_arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """Each fit's trace as NumPy columns, by key, in the table's row order; split once and kept:
        a figure drawing a hundred panels read its traces through pandas' indexing, a third of its
        time."""
        if self._arrays is None:
            tr = self.traces
            if "key" not in tr.columns or tr.empty:
                self._arrays = {}
                return self._arrays
            keys = tr["key"].to_numpy()
            order = np.argsort(keys, kind="stable")
            cuts = np.flatnonzero(keys[order][1:] != keys[order][:-1]) + 1
            cols = {c: tr[c].to_numpy()[order] for c in tr.columns if c != "key"}
            self._arrays = {str(keys[order[idx[0]]]): {c: v[idx] for c, v in cols.items()}
                            for idx in np.split(np.arange(len(order)), cuts) if idx.size}
        return self._arrays


def groupby_order(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The rows (one per group of `by`) in the order pandas' groupby(sort=True, dropna=False)
    puts those groups: the same keys, the same order, whatever their kinds."""
    if df.empty or not by:
        return df.reset_index(drop=True)
    order = df.groupby(by, sort=True, dropna=False).ngroup().to_numpy()
    return df.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)


@dataclass(frozen=True)
class Item:
    name: str                  # file stem of a figure; anchor of a section
    title: str
    kind: str                  # "table" or "figure"
    fn: Callable[[ReportData], object]
    needs: tuple = ()          # results.parquet columns with at least one value
    trace_needs: tuple = ()    # traces.parquet columns with at least one value
    models: bool = False       # needs models.parquet (run.keep_models=true)
    note: str = ""             # one line under the title: how to read it
    lines: Callable[[ReportData], list[str]] | None = None   # prose after a table (the status advice)
    hint: str = ""             # what a user sets to get the item when it is skipped (`run.reference=true`)
    top: tuple | None = None   # a table past build.MAX_TABLE_ROWS shows its rows of least (col, True) or largest (col, False) col
    scale: bool = False        # a summary of a large sweep: drawn only past MAX_PROBLEMS problems, unlisted below

    def applies(self, data: "ReportData") -> bool:
        """Whether the item belongs in this run's report at all (a `scale` item: past MAX_PROBLEMS)."""
        return not self.scale or data.n_problems() > MAX_PROBLEMS

    def missing(self, data: ReportData) -> str | None:
        """Why the item cannot be drawn from these tables (None: it can be tried): the engine
        counts the declared columns' values, one scan of each table for all of them."""
        def absent(name, cols):
            return [c for c in cols if not data.has(name, c)]
        if data.count("results") == 0:
            return "no results"
        lacking = absent("results", self.needs)
        if lacking:
            return "results have no " + ", ".join(f"`{c}`" for c in lacking)
        lacking = absent("traces", self.trace_needs)
        if lacking:
            return "traces have no " + ", ".join(f"`{c}`" for c in lacking)
        if self.models and data.count("models") == 0:
            return "no models.parquet (run with run.keep_models=true)"
        return None


REGISTRY: list[Item] = []


def _register(kind, name, title, needs=(), trace_needs=(), models=False, note="", lines=None, hint="", top=None,
              scale=False):
    def deco(fn):
        if any(it.name == name for it in REGISTRY):
            raise ValueError(f"report item {name!r} registered twice")
        REGISTRY.append(Item(name, title, kind, fn, tuple(needs), tuple(trace_needs), models, note, lines, hint, top,
                             scale))
        return fn
    return deco


def table(name, title, needs=(), trace_needs=(), models=False, note="", lines=None, hint="", top=None):
    """Register a table function (ReportData -> DataFrame); `lines` adds prose after it, `hint`
    says what to set to get it where it is skipped; `top`: (column, ascending), the rows a table
    longer than build.MAX_TABLE_ROWS shows (the whole of it goes to tables/<name>.csv)."""
    return _register("table", name, title, needs, trace_needs, models, note, lines, hint, top)


def figure(name, title, needs=(), trace_needs=(), models=False, note="", hint="", scale=False):
    """Register a figure function (ReportData -> a matplotlib Figure, or a list of them: the pages
    of a grid too large for one); `scale`: a summary drawn only past MAX_PROBLEMS problems."""
    return _register("figure", name, title, needs, trace_needs, models, note, hint=hint, scale=scale)


def items(kind: str | None = None) -> list[Item]:
    """Registered items in report order: the tables, then the figures, each in registration order."""
    if kind is None:
        return items("table") + items("figure")
    return [it for it in REGISTRY if it.kind == kind]
