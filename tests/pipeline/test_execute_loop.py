"""The execute loop's parts without Dask: the pacer's decisions on scripted completions
(`cutting.Pacer`), and the one way records come into the sink (`RecordSink.receive`), which
takes a record once whichever way it comes first: streamed while its task runs, or with the
task's result."""
import pickle

import pytest

from pipeline.engine import cutting, sink
from pipeline.results.tables import iter_records

from .typed_specs import fit_spec


def test_the_pacer_cuts_by_the_last_timed_task_and_keeps_one_task_per_worker_once_units_are_long():
    pacer = cutting.Pacer(8000, 2, "auto")
    # Before any task ends: 1/40 of a worker's share, three tasks per worker thread in flight.
    assert (pacer.size(8000), pacer.in_flight(), pacer.paced) == (100, 6, False)
    pacer.ended(0.0, 100, 100)              # a task of no measured seconds (all skipped): nothing learnt
    assert (pacer.size(7900), pacer.in_flight(), pacer.paced) == (100, 6, False)
    pacer.ended(1.0, 100, 100)              # 10 ms a spec: TASK_S of work
    assert (pacer.size(7000), pacer.in_flight(), pacer.paced) == (200, 6, True)
    assert pacer.size(300) == 75            # near the end: 1/(2 x workers) of what is left
    assert pacer.size(10) == 4              # but at least MIN_TASK_S of work
    pacer.ended(4.99, 10, 10)               # units just under LONG_UNIT_S: still three a worker
    assert pacer.in_flight() == 6
    pacer.ended(5.0, 10, 10)                # units of exactly LONG_UNIT_S: one task per worker thread
    assert (pacer.in_flight(), pacer.size(100)) == (2, 4)
    pacer.ended(5.0, 10, 2)                 # the same specs as two C paths: the unit is what counts
    assert pacer.in_flight() == 2 and pacer.pace == 0.5
    pacer.workers = 4                       # the cluster grew
    assert pacer.in_flight() == 4


def test_a_fixed_chunk_is_kept_whatever_the_pace():
    pacer = cutting.Pacer(8000, 2, 7)
    pacer.ended(1.0, 100, 100)
    assert (pacer.size(8000), pacer.size(3), pacer.in_flight()) == (7, 7, 6)


def _batch(records):
    return [r["key"] for r in records], pickle.dumps(records)


def _record(key):
    return {"key": key, "kind": "fit", "status": "converged", "error": None, "task_time_s": 0.25}


@pytest.mark.parametrize("stream_first", [True, False])
def test_a_record_is_written_once_whichever_way_it_comes_first(tmp_path, stream_first):
    into = sink.RecordSink(sink.ShardWriter(tmp_path))
    specs = [fit_spec(f"fit-{c}") for c in "abc"]
    into.expect([specs])
    streamed = [_batch([_record("fit-a")])]
    returned = [_batch([_record("fit-a"), _record("fit-b")]), _batch([_record("fit-c")])]
    if stream_first:
        assert into.receive(streamed) == 1
        # The task's result holds fit-a again, in a batch with fit-b: fit-a is not taken twice.
        assert into.receive(returned, env_worker_peak_rss_mb=512.0) == 2
        # A batch whose every key is taken is not even unpickled.
        assert into.receive([(["fit-a", "fit-b"], b"not a pickle")]) == 0
    else:
        assert into.receive(returned, env_worker_peak_rss_mb=512.0) == 3
        assert into.receive(streamed) == 0
    assert into.ended([specs]) == (0.75, 3)
    into.flush(force=True)
    written = sorted((r["key"], r.get("env_worker_peak_rss_mb")) for r in iter_records(tmp_path))
    assert written == [("fit-a", None if stream_first else 512.0), ("fit-b", 512.0), ("fit-c", 512.0)]
    # A record that comes after its task has ended is a copy: not taken.
    assert into.receive(returned) == 0
