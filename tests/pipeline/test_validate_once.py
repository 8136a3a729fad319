"""`python -m pipeline` composes, validates once and runs the typed experiment it validated:
the run does not validate the config again, and validation reads no store and fits nothing."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Counts the calls of `config.validate` in a real command (the names `run` and the preflight
# use), printed at exit by the command's own atexit handlers.
COUNTING = """
import atexit, sys
import pipeline.experiment.config as config
import pipeline.run as run
calls = []
real = config.validate
def counted(cfg):
    calls.append(1)
    return real(cfg)
config.validate = run.validate = counted
atexit.register(lambda: print(f"validate calls: {len(calls)}", file=sys.stderr))
from pipeline.command import command
command(sys.argv[1:])
"""


def test_a_single_run_is_validated_once(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SVMBENCH_STORE": str(tmp_path / "store"),
           "OPENBLAS_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-c", COUNTING, "cluster=sequential", "datasets=[toy_blobs]",
                        "datasets.toy_blobs.max_rows=60", "cv=holdout", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]",
                        "run.reference=false", "run.progress=false", "report.figures=false",
                        f"hydra.run.dir={tmp_path / 'run'}"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "validate calls: 1" in p.stderr, p.stderr[-3000:]
    assert (tmp_path / "run" / "results.parquet").is_file()


def test_validation_reads_no_store(tmp_path):
    """A store entry the store lacks passes validation (nothing is listed) and is refused by
    planning; so does a store root that does not exist."""
    from pipeline.experiment.config import compose, validate
    exp = validate(compose([f"store.root={tmp_path / 'nowhere'}", "datasets=[toy_blobs]",
                            "datasets.toy_blobs.builder=ingested_elsewhere", "solvers=[dcd]"]))
    assert exp.datasets["toy_blobs"].builder == "ingested_elsewhere"
    assert not (tmp_path / "nowhere").exists()
