"""The tables' memory does not grow with the fits: DuckDB sorts and joins in a buffer pool of
`source.MEMORY_MB` (spilling past it) and the rows reach the Parquet writer in record batches,
so past the fixed part (imports, the connection, the profiles) a run of eight times the fits adds
at most the pool and a few batches. A frame of every fit (the pandas path, or the rows made one
pandas frame before the write) adds about a kilobyte a fit."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.bench.synthetic import write_run
from pipeline.results import source

ROOT = Path(__file__).resolve().parents[2]
# The tables of a run dir in a process of their own: its peak RSS, as the kernel counts it.
CHILD = """
import json, resource, sys
from pipeline.results.tables import write_tables
written = write_tables(sys.argv[1])
print(json.dumps({"rows": written.results, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _tables_peak(run_dir: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(run_dir)], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.slow
def test_the_tables_peak_memory_does_not_grow_with_the_fits(tmp_path):
    small = _tables_peak(write_run(tmp_path / "small", 50_000))
    large = _tables_peak(write_run(tmp_path / "large", 400_000))
    assert (small["rows"], large["rows"]) == (50_000, 400_000)
    # 350,000 more fits: the pool and a few record batches at most, where a pandas frame of
    # them made before the write is about 170 MB more.
    bound = source.MEMORY_MB + 64
    grown = large["peak_mb"] - small["peak_mb"]
    assert grown < bound, f"the tables' peak grew by {grown:.0f} MB from 50,000 to 400,000 fits (bound {bound} MB)"
