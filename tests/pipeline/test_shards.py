"""Shards are written atomically: a failure while writing one leaves no shard (and no temporary
file) behind, so the results reader never sees a half-written record and a rerun recomputes
exactly the tasks whose shards are missing. One shard file holds one Dask task's records (as
Parquet columns; shards of the earlier layout, JSON lines, are still read); a key written again (a
retried error) is read from its newest shard."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline.engine import execute, sink
from pipeline.experiment.config import compose
from pipeline.results import shards
from pipeline.results.tables import ShardError, read_shards
from pipeline.run import run

from .typed_specs import fit_spec

REPO = Path(__file__).resolve().parents[2]

RECORD = {"key": "fit-abc123", "kind": "fit", "status": "converged", "trace": [[1, 0.1, 2.0, 1.0, 1.0]],
          "primal_objective": 2.0, "error": None, "spec": {"key": "fit-abc123", "data": {"name": "x" * 500}}}


def _half(records, path):
    """Half of the shard file's bytes onto disk, as a write cut short leaves them."""
    shards.write(records, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _write_half_then_fail(records, path):
    """The shard writer's file write that gets half of the file onto disk and then fails, as a full disk would."""
    _half(records, path)
    raise OSError(28, "No space left on device")


def _files(run_dir):
    shards = run_dir / "shards"
    return sorted(os.listdir(shards)) if shards.is_dir() else []


def test_failure_mid_write_leaves_no_shard_and_no_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sink, "_write_file", _write_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        sink.write_shard(tmp_path, RECORD)
    assert _files(tmp_path) == []
    assert sink.finished_keys(tmp_path) == set() and read_shards(tmp_path) == []

    monkeypatch.undo()
    sink.write_shard(tmp_path, RECORD)
    assert _files(tmp_path) == ["fit-abc123.parquet"]
    assert read_shards(tmp_path) == [json.loads(json.dumps(RECORD))]


def test_failed_rename_leaves_no_shard_and_no_temporary_file(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(sink.os, "replace", refuse)
    with pytest.raises(OSError, match="Input/output error"):
        sink.write_shard(tmp_path, RECORD)
    assert _files(tmp_path) == [] and sink.finished_keys(tmp_path) == set()


def test_a_failed_rewrite_keeps_the_previous_shard_whole(tmp_path, monkeypatch):
    sink.write_shard(tmp_path, RECORD)
    monkeypatch.setattr(sink, "_write_file", _write_half_then_fail)
    with pytest.raises(OSError):
        sink.write_shard(tmp_path, {**RECORD, "status": "max_iter"})
    assert _files(tmp_path) == ["fit-abc123.parquet"]
    assert read_shards(tmp_path)[0]["status"] == "converged"


_KILLED_MID_WRITE = """
import json, os, sys
from pipeline.engine import sink
from pipeline.results import shards

def write_half_then_die(records, path):
    shards.write(records, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    os._exit(9)  # no exception handler, no cleanup: as SIGKILL or a power cut

record = json.loads(sys.argv[2])
sink.write_shard(sys.argv[1], record)   # a first, whole version of the shard
sink._write_file = write_half_then_die
sink.write_shard(sys.argv[1], {**record, "status": "max_iter"})
"""


def test_a_process_killed_mid_write_leaves_only_an_ignored_temporary_file(tmp_path):
    result = subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE, str(tmp_path), json.dumps(RECORD)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 9, result.stderr
    leftovers = [n for n in _files(tmp_path) if n != "fit-abc123.parquet"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".")  # the half-written temporary file
    # The shard is the first version, whole; the half-written one is not read as a result.
    assert sink.finished_keys(tmp_path) == {"fit-abc123"}
    assert read_shards(tmp_path) == [json.loads(json.dumps(RECORD))]


def test_a_crash_while_writing_a_shard_is_recomputed_on_rerun(tmp_path, monkeypatch):
    """Through run(): the third shard's write fails half-way, and so does its retry when the
    phase ends (a full disk), and the run dies; the rerun skips the two finished tasks,
    recomputes the rest and ends with a complete table."""
    cfg = compose([f"store.root={tmp_path / 'store'}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80",
                   "cv.folds=2", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]", "solvers.dcd.params.tol=1e-3",
                   "cluster=sequential", "run.progress=false", "run.reference=true"])
    run_dir = tmp_path / "run"
    real_write = sink._write_file
    calls = []

    def third_fails(records, path):
        calls.append(records[0].key)
        if len(calls) >= 3:
            _write_half_then_fail(records, path)
        real_write(records, path)

    monkeypatch.setattr(sink, "_write_file", third_fails)
    with pytest.raises(OSError, match="No space left"):
        run(cfg, run_dir)
    monkeypatch.undo()
    assert len(calls) == 4 and calls[3] == calls[2]      # the records held are written again as the phase ends
    assert _files(run_dir) == sorted(f"{k}.parquet" for k in calls[:2])     # 4 tasks of one spec each
    assert sink.finished_keys(run_dir) == set(calls[:2])

    out = run(cfg, run_dir)
    total = out["summary"].total
    assert total >= 4  # 2 folds: references and fits
    assert out["summary"].skipped == 2 and out["summary"].done == total - 2
    assert len(_files(run_dir)) == total and calls[2] in sink.finished_keys(run_dir)
    res = out["results"]
    assert len(res) == 2 and (res["status"] == "converged").all() and res["f_star"].notna().all()


def test_records_whose_write_was_cut_short_are_written_again_under_the_same_name(tmp_path, monkeypatch):
    """Ctrl-C lands in a shard's write just after its rename, while the stream's thread adds a
    record: the records go back to the sink ahead of the new one, and its next flush (the
    phase's end) writes them again, as the same file (named by its first key), so none is lost
    and no key is in two shards of one execute."""
    into = sink.RecordSink(sink.ShardWriter(tmp_path))
    specs = [fit_spec(f"fit-{c}") for c in "abc"]
    into.expect([[s] for s in specs])
    into.add([{**RECORD, "key": s.key} for s in specs[:2]])
    real, cut = os.replace, []

    def replace_then_interrupt(src, dst):
        real(src, dst)
        if not cut:
            cut.append(dst)
            into.add([{**RECORD, "key": "fit-c"}])      # the stream's thread, while the write runs
            raise KeyboardInterrupt
    monkeypatch.setattr(sink.os, "replace", replace_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        into.flush(force=True)
    into.add([{**RECORD, "key": "fit-a", "status": "error"}])       # a copy of a: not taken
    into.flush(force=True)
    assert _files(tmp_path) == ["fit-a.parquet"] and cut == [tmp_path / "shards" / "fit-a.parquet"]
    assert [(r["key"], r["status"]) for r in read_shards(tmp_path)] == [
        ("fit-a", "converged"), ("fit-b", "converged"), ("fit-c", "converged")]


def test_hidden_files_are_never_shards(tmp_path):
    # Whatever a temporary file is named (ours end in ".tmp"; other tools' may end in
    # ".jsonl"), a leading "." keeps it out of both the rerun's skip list and the results,
    # which must agree: a key skipped but not read would be a silently missing row.
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / ".fit-abc123.jsonl").write_text('{"key": "fit-abc1')
    (shards / ".fit-abc123.json.0123abcd.tmp").write_text('{"key": "fit-abc1')
    assert sink.finished_keys(tmp_path) == set() and read_shards(tmp_path) == []


def _lines(path):
    return shards.read_shard(path)


def _sweep_args(store, *overrides):
    """12 short fits, sequential, packed 3 to a task: 4 tasks, 4 shard files."""
    return [f"store.root={store}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80", "cv.folds=4",
            "solvers=[dcd]", "solvers.dcd.grid.C=[0.1,1.0,10.0]", "solvers.dcd.params.tol=1e-2",
            "run.warm_start=false", "run.reference=false", "run.chunk=3", "cluster=sequential",
            "run.progress=false", *overrides]


_KILLED_AFTER_TWO_TASKS = """
import os, sys
from pipeline.engine import sink
from pipeline.experiment.config import compose
from pipeline.run import run

real = sink.ShardWriter.write
def write(self, records):
    if self.dir.is_dir() and len(os.listdir(self.dir)) == 2:
        os._exit(9)        # killed between two tasks: no handler runs, as under SIGKILL
    return real(self, records)
sink.ShardWriter.write = write
# A task whose fits take longer than WRITE_S is written in parts as they end (the first fit
# reads the dataset and may, on a loaded machine); here a task is one shard.
sink.WRITE_S = 1e9
run(compose(sys.argv[2:]), sys.argv[1])
"""


def test_a_task_is_one_shard_and_a_killed_sweep_resumes_only_its_unfinished_tasks(tmp_path, monkeypatch):
    monkeypatch.setattr(sink, "WRITE_S", 1e9)     # as in the killed run: a task is one shard
    args = _sweep_args(tmp_path / "store")
    run_dir = tmp_path / "run"
    result = subprocess.run([sys.executable, "-c", _KILLED_AFTER_TWO_TASKS, str(run_dir), *args],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 9, result.stderr[-3000:]
    files = sorted((run_dir / "shards").glob("*.parquet"))
    assert len(files) == 2 and [len(_lines(f)) for f in files] == [3, 3]   # a file per task, a row per fit
    kept = {f.name: f.read_bytes() for f in files}
    done = {r["key"] for f in files for r in _lines(f)}
    assert sink.finished_keys(run_dir) == done and len(done) == 6

    out = run(compose(args), run_dir)
    assert out["summary"].skipped == 6 and out["summary"].done == 6 and out["summary"].tasks == 2
    assert {f: (run_dir / "shards" / f).read_bytes() for f in kept} == kept       # untouched
    new = sorted(set(_files(run_dir)) - set(kept))
    assert len(new) == 2 and all(n.endswith(".1.parquet") for n in new)             # the resume's generation
    res = out["results"]
    assert len(res) == 12 and res["key"].is_unique and (res["status"] == "converged").all()


def test_a_retried_error_replaces_its_record_in_the_tables(tmp_path, monkeypatch):
    """A record planted as an error (a task that failed in an earlier run) is retried; the retry's
    record lands in a newer shard and the table holds it once, not beside the error."""
    monkeypatch.setattr(sink, "WRITE_S", 1e9)     # one task, one shard
    cfg = compose(_sweep_args(tmp_path / "store", "solvers.dcd.grid.C=[1.0]", "cv.folds=2", "run.chunk=2"))
    run_dir = tmp_path / "run"
    first = run(cfg, run_dir)
    (shard,) = (run_dir / "shards").glob("*.parquet")
    records = _lines(shard)
    victim = records[1]["key"]
    records[1].update(status="error", error="MemoryError: planted")
    shards.write(records, shard)
    assert execute.error_keys(run_dir, {r["key"] for r in records}) == {victim}

    again = run(cfg, run_dir)
    assert again["summary"].done == 1 and again["failed"] == 0
    res = pd.read_parquet(run_dir / "results.parquet")
    assert len(res) == 2 and res["key"].is_unique and (res["status"] == "converged").all()
    assert set(res["key"]) == set(first["results"]["key"])
    assert [r["status"] for r in _lines(shard)] == ["converged", "error"]   # the old shard is left as it was


def test_the_newest_generation_wins_whatever_the_names(tmp_path):
    """`<key>.<generation>.parquet`: a later execute's shard wins over an earlier one's for a key
    both hold, even where its name sorts first."""
    shard_dir = tmp_path / "shards"
    shard_dir.mkdir()
    shards.write([{"key": "fit-b", "status": "error", "error": "old"}, {"key": "fit-c", "status": "converged"}],
                 shard_dir / "fit-b.parquet")
    shards.write([{"key": "fit-b", "status": "converged"}], shard_dir / "fit-a.1.parquet")
    assert [r["status"] for r in read_shards(tmp_path)] == ["converged", "converged"]
    assert execute.error_keys(tmp_path, {"fit-b", "fit-c"}) == set()
    assert sink.finished_keys(tmp_path) == {"fit-b", "fit-c"}
    # The next execute writes generation 2, above every generation on disk.
    assert sink.write_shard(tmp_path, {"key": "fit-d", "status": "converged"}).name == "fit-d.2.parquet"


def test_a_parquet_shard_gives_back_exactly_the_records_written(tmp_path):
    """Columns, not JSON lines: a field a record lacks stays absent, None stays None, a field of
    mixed types or nested values comes back as written, and the spec (but for its key, the
    record's own) is stored once per column value, not once per record."""
    spec = {"key": "fit-a", "data": {"name": "x" * 500, "cv": {"kind": "kfold"}}, "fold": 0, "problem": {"C": 1.0}}
    records = [
        {**RECORD, "key": "fit-a", "spec": spec, "info": {"passes": 3, "b": [1.0, float("inf")]}, "n_sv": 2 ** 70},
        {"key": "fit-b", "kind": "fit", "status": "error", "error": "ValueError: bad\nline two", "n_sv": 3,
         "C": 1, "spec": {**spec, "key": "fit-b", "fold": 1}},
        {"key": "fit-c", "kind": "fit", "status": "converged", "error": None, "C": 2.5, "warm_from": "fit-a"},
    ]
    path = tmp_path / "shard.parquet"
    shards.write(records, path)
    back = shards.read_shard(path)
    assert back == json.loads(json.dumps(records))
    assert "f_star" not in back[1] and "trace" not in back[1] and "spec" not in back[2]
    assert back[0]["spec"]["data"] is back[1]["spec"]["data"]        # one parsed object per stored value
    assert shards.read_statuses(path) == [("fit-a", "converged", None), ("fit-b", "error", "ValueError: bad\nline two"),
                                          ("fit-c", "converged", None)]


def test_a_torn_parquet_shard_is_named_and_not_read_as_records(tmp_path):
    """A shard cut short outside our writer (copied half, a disk that lost its tail) is refused
    with its file name, before any table is built from it; so is a Parquet file of another program."""
    shard_dir = tmp_path / "shards"
    shard_dir.mkdir()
    path = shard_dir / "fit-a.parquet"
    _half([RECORD], path)
    with pytest.raises(ShardError, match=r"fit-a\.parquet: not a valid shard file .*delete the file"):
        read_shards(tmp_path)
    with pytest.raises(ShardError, match=r"fit-a\.parquet"):
        sink.finished_keys(tmp_path)
    pd.DataFrame({"key": ["fit-a"]}).to_parquet(path)
    with pytest.raises(ShardError, match=r"not an svmbench shard"):
        read_shards(tmp_path)


def test_a_run_of_the_earlier_json_layout_is_refused_and_left_as_it_was(tmp_path, monkeypatch):
    """A run dir whose shards are JSON lines (written before shards were Parquet) is refused in
    one line naming them, before any task runs: read around, its tasks would run again beside
    them and their rows leave the tables. The folder is left exactly as it was."""
    monkeypatch.setattr(sink, "WRITE_S", 1e9)     # a shard per task, however long its first fit
    args = _sweep_args(tmp_path / "store")
    run_dir = tmp_path / "run"
    run(compose(args), run_dir)
    old = sorted((run_dir / "shards").glob("*.parquet"))
    for path in old[:2]:      # two tasks as the earlier layout wrote them
        path.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in shards.read_shard(path)))
        path.unlink()
    before = {p.name: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != "run.log"}
    with pytest.raises(ShardError, match=r"\.jsonl: a shard in the JSON layout of an earlier svmbench \(2 such files "
                                         r"in .*\), which this one does not read; delete them"):
        run(compose(args), run_dir)
    assert {p.name: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != "run.log"} == before


def test_the_progress_bar_counts_records_and_names_failures_once_there_are_any(tmp_path):
    """The sink moves the run's bar by each record it takes, and adds `failed=N` only once a
    record is an error."""
    import io
    from tqdm import tqdm
    into = sink.RecordSink(sink.ShardWriter(tmp_path))
    into.bar = tqdm(total=3, file=io.StringIO())
    into.expect([[fit_spec(f"fit-{c}")] for c in "abc"])
    into.add([{**RECORD, "key": "fit-a"}])
    assert into.bar.n == 1 and into.bar.postfix is None
    into.add([{**RECORD, "key": "fit-b", "status": "error"}, {**RECORD, "key": "fit-c"}])
    assert into.bar.n == 3 and into.bar.postfix == "failed=1"
