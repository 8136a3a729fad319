"""The report's registry: every table and figure is a small function that declares the columns
it needs, registered here in the order the report shows them (like solvers/registry.py for
solvers). `build.py` walks the registry; a paper reproduction adds a figure by registering one
more function, without touching the others.

A function takes a `ReportData` and returns a DataFrame (a table) or a matplotlib Figure (a
figure). The registry checks the declared columns first (a missing one skips the item with a note
naming it); a function that finds its columns but nothing to show in them raises `Skip(reason)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd


class Skip(Exception):
    """Raised by a table or figure function with nothing to show; the message goes in the report,
    with `hint` (what to set to get the item) in place of the item's own where given."""

    def __init__(self, reason: str, hint: str | None = None):
        super().__init__(reason)
        self.hint = hint


@dataclass
class ReportData:
    """What every table and figure reads: the run's Parquet tables and the report options."""

    results: pd.DataFrame
    traces: pd.DataFrame
    models: pd.DataFrame = field(default_factory=pd.DataFrame)
    baseline: str | None = None          # report.baseline: the solver entry ratios are taken against
    name: str = ""
    search: dict | None = None           # a search's state (the run's search.json; None: a grid's run)
    # The timing fits (timing.parquet, timing_traces.parquet): what speed is read from (speed.py).
    timing: pd.DataFrame = field(default_factory=pd.DataFrame)
    timing_traces: pd.DataFrame = field(default_factory=pd.DataFrame)
    target: float | None = None          # report.target: the (P - f*)/|f*| speed is timed to (None: 1e-3)
    _arrays: dict | None = field(default=None, init=False, repr=False, compare=False)
    # What several items derive alike, made once (speed.py: the speed rows and the view of the
    # fits speed is read from).
    cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def fits(self) -> pd.DataFrame:
        """The fits that finished (any status but `error`)."""
        return self.results[self.results["status"] != "error"]

    def trace_arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """Each fit's trace as NumPy columns, by key, in the table's row order; split once and kept:
        a figure drawing a hundred panels read its traces through pandas' indexing, a third of its
        time."""
        if self._arrays is None:
            tr = self.traces
            keys = tr["key"].to_numpy()
            order = np.argsort(keys, kind="stable")
            cuts = np.flatnonzero(keys[order][1:] != keys[order][:-1]) + 1
            cols = {c: tr[c].to_numpy()[order] for c in tr.columns if c != "key"}
            self._arrays = {str(keys[order[idx[0]]]): {c: v[idx] for c, v in cols.items()}
                            for idx in np.split(np.arange(len(order)), cuts) if idx.size}
        return self._arrays


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

    def missing(self, data: ReportData) -> str | None:
        """Why the item cannot be drawn from these tables (None: it can be tried)."""
        def absent(df, cols):
            return [c for c in cols if c not in df.columns or not df[c].notna().any()]
        if data.results.empty:
            return "no results"
        lacking = absent(data.results, self.needs)
        if lacking:
            return "results have no " + ", ".join(f"`{c}`" for c in lacking)
        lacking = absent(data.traces, self.trace_needs)
        if lacking:
            return "traces have no " + ", ".join(f"`{c}`" for c in lacking)
        if self.models and data.models.empty:
            return "no models.parquet (run with run.keep_models=true)"
        return None


REGISTRY: list[Item] = []


def _register(kind, name, title, needs=(), trace_needs=(), models=False, note="", lines=None, hint=""):
    def deco(fn):
        if any(it.name == name for it in REGISTRY):
            raise ValueError(f"report item {name!r} registered twice")
        REGISTRY.append(Item(name, title, kind, fn, tuple(needs), tuple(trace_needs), models, note, lines, hint))
        return fn
    return deco


def table(name, title, needs=(), trace_needs=(), models=False, note="", lines=None, hint=""):
    """Register a table function (ReportData -> DataFrame); `lines` adds prose after it, `hint`
    says what to set to get it where it is skipped."""
    return _register("table", name, title, needs, trace_needs, models, note, lines, hint)


def figure(name, title, needs=(), trace_needs=(), models=False, note="", hint=""):
    """Register a figure function (ReportData -> a matplotlib Figure, or a list of them: the pages
    of a grid too large for one)."""
    return _register("figure", name, title, needs, trace_needs, models, note, hint=hint)


def items(kind: str | None = None) -> list[Item]:
    """Registered items in report order: the tables, then the figures, each in registration order."""
    if kind is None:
        return items("table") + items("figure")
    return [it for it in REGISTRY if it.kind == kind]
