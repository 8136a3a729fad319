"""search.json, a searching run's state (every search's rounds, rungs and decisions): written
by the search driver (`pipeline.search_run`) after each round, read by the report and the
benchmarks. Its own module below both, so that neither reader imports the driver."""
from __future__ import annotations

import json
from pathlib import Path

from .shards import json_default

STATE_FILE = "search.json"


def write_state(run_dir: Path, data: dict) -> None:
    """Write search.json atomically (a temporary file, then a rename): a reader sees the last
    round's whole state or the one before."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / f".{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(data, indent=1, default=json_default, allow_nan=True))
    tmp.replace(run_dir / STATE_FILE)


def read_state(run_dir: Path) -> dict | None:
    """search.json of a run dir, or None for a grid's run."""
    path = Path(run_dir) / STATE_FILE
    return json.loads(path.read_text()) if path.exists() else None
