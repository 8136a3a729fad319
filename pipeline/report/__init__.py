"""Report: ``report.md``, ``report.html`` and ``figures/`` rebuilt from the Parquet tables alone.

    python -m pipeline.report RUN_DIR [--compare OTHER_RUN_DIR] [--baseline ENTRY] [--target EPS]
    python -m pipeline.report SWEEP_DIR          (a Hydra multirun: its jobs gathered into one report)

Each table and figure is a small function registered with the columns it needs (registry.py);
the report walks the registry and says, for each item it cannot draw, why (tables.py, figures.py).
Every time a comparison reads goes through speed.py (to one target, one clock, one problem and one
start per ratio): a paper's writer calls it as the tables do.
"""
from .build import build_report, compare_table, gather, main, preload
from .common import markdown_table
from .registry import REGISTRY, ReportData, Skip, figure, items, table
from .speed import CLOCKS, fit_times, headline, speed_rows, speed_view
from .tables import STATUS_ADVICE, status_lines, status_table

__all__ = ["build_report", "compare_table", "gather", "main", "preload", "markdown_table", "REGISTRY", "ReportData", "Skip",
           "figure", "items", "table", "STATUS_ADVICE", "status_lines", "status_table", "CLOCKS", "fit_times", "headline",
           "speed_rows", "speed_view"]
