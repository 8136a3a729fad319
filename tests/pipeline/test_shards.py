"""Shards are written atomically: a failure while writing one leaves no shard (and no temporary
file) behind, so the results reader never sees a half-written record and a rerun recomputes
exactly the tasks whose shards are missing."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import execute
from pipeline.config import compose
from pipeline.results import read_shards
from pipeline.run import run

REPO = Path(__file__).resolve().parents[2]

RECORD = {"key": "fit-abc123", "kind": "fit", "status": "converged", "trace": [[1, 0.1, 2.0, 1.0, 1.0]],
          "primal_objective": 2.0, "error": None, "spec": {"key": "fit-abc123", "data": {"name": "x" * 500}}}


def _dump_half_then_fail(obj, fh, **kwargs):
    """The shard writer's dump that gets half of the text onto disk and then fails, as a full disk would."""
    text = json.dumps(obj, **kwargs)
    fh.write(text[: len(text) // 2])
    fh.flush()
    raise OSError(28, "No space left on device")


def _files(run_dir):
    shards = run_dir / "shards"
    return sorted(os.listdir(shards)) if shards.is_dir() else []


def test_failure_mid_write_leaves_no_shard_and_no_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setattr(execute, "_dump", _dump_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        execute.write_shard(tmp_path, RECORD)
    assert not execute.shard_path(tmp_path, RECORD["key"]).exists()
    assert _files(tmp_path) == []
    assert execute.finished_keys(tmp_path) == set() and read_shards(tmp_path) == []

    monkeypatch.undo()
    execute.write_shard(tmp_path, RECORD)
    assert _files(tmp_path) == ["fit-abc123.json"]
    assert read_shards(tmp_path) == [json.loads(json.dumps(RECORD))]


def test_failed_rename_leaves_no_shard_and_no_temporary_file(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(execute.os, "replace", refuse)
    with pytest.raises(OSError, match="Input/output error"):
        execute.write_shard(tmp_path, RECORD)
    assert _files(tmp_path) == [] and execute.finished_keys(tmp_path) == set()


def test_a_failed_rewrite_keeps_the_previous_shard_whole(tmp_path, monkeypatch):
    execute.write_shard(tmp_path, RECORD)
    monkeypatch.setattr(execute, "_dump", _dump_half_then_fail)
    with pytest.raises(OSError):
        execute.write_shard(tmp_path, {**RECORD, "status": "max_iter"})
    assert _files(tmp_path) == ["fit-abc123.json"]
    assert read_shards(tmp_path)[0]["status"] == "converged"


_KILLED_MID_WRITE = """
import json, os, sys
from pipeline import execute

def dump_half_then_die(obj, fh, **kwargs):
    text = json.dumps(obj, **kwargs)
    fh.write(text[: len(text) // 2])
    fh.flush()
    os._exit(9)  # no exception handler, no cleanup: as SIGKILL or a power cut

record = json.loads(sys.argv[2])
execute.write_shard(sys.argv[1], record)   # a first, whole version of the shard
execute._dump = dump_half_then_die
execute.write_shard(sys.argv[1], {**record, "status": "max_iter"})
"""


def test_a_process_killed_mid_write_leaves_only_an_ignored_temporary_file(tmp_path):
    result = subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE, str(tmp_path), json.dumps(RECORD)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 9, result.stderr
    leftovers = [n for n in _files(tmp_path) if n != "fit-abc123.json"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".")  # the half-written temporary file
    # The shard is the first version, whole; the half-written one is not read as a result.
    assert execute.finished_keys(tmp_path) == {"fit-abc123"}
    assert read_shards(tmp_path) == [json.loads(json.dumps(RECORD))]


def test_a_crash_while_writing_a_shard_is_recomputed_on_rerun(tmp_path, monkeypatch):
    """Through run(): the third shard's write fails half-way and the run dies; the rerun
    skips the two finished tasks, recomputes the rest and ends with a complete table."""
    cfg = compose([f"store.root={tmp_path / 'store'}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80",
                   "cv.folds=2", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]", "solvers.dcd.params.tol=1e-3",
                   "cluster=sequential", "run.progress=false", "run.reference=true"])
    run_dir = tmp_path / "run"
    real_dump = execute._dump
    calls = []

    def third_fails(obj, fh, **kwargs):
        calls.append(obj["key"])
        if len(calls) == 3:
            _dump_half_then_fail(obj, fh, **kwargs)
        real_dump(obj, fh, **kwargs)

    monkeypatch.setattr(execute, "_dump", third_fails)
    with pytest.raises(OSError, match="No space left"):
        run(cfg, run_dir)
    monkeypatch.undo()
    assert len(calls) == 3
    assert _files(run_dir) == sorted(f"{k}.json" for k in calls[:2])
    assert execute.finished_keys(run_dir) == set(calls[:2])

    out = run(cfg, run_dir)
    total = out["summary"].total
    assert total >= 4  # 2 folds: references and fits
    assert out["summary"].skipped == 2 and out["summary"].done == total - 2
    assert len(_files(run_dir)) == total and calls[2] in execute.finished_keys(run_dir)
    res = out["results"]
    assert len(res) == 2 and (res["status"] == "converged").all() and res["f_star"].notna().all()


def test_hidden_files_are_never_shards(tmp_path):
    # Whatever a temporary file is named (ours end in ".tmp"; other tools' may end in
    # ".json"), a leading "." keeps it out of both the rerun's skip list and the results,
    # which must agree: a key skipped but not read would be a silently missing row.
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / ".fit-abc123.json").write_text('{"key": "fit-abc1')
    (shards / ".fit-abc123.json.0123abcd.tmp").write_text('{"key": "fit-abc1')
    assert execute.finished_keys(tmp_path) == set() and read_shards(tmp_path) == []
