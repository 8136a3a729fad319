"""The sandbox's protocol (pipeline/engine/sandbox.py), on a real child process: the child names the
spec it runs in shared memory (its slot) instead of a message per spec, and sends records in
batches; a death is charged to the spec the slot names, not to one that ended before it."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.run import materialise_datasets
from pipeline.engine.sandbox import FLUSH_S, Sandbox

FAULTS = Path(__file__).with_name("fault_solvers.py")
if "fault_solvers" not in sys.modules:       # the child imports the solvers this process registered
    _spec = importlib.util.spec_from_file_location("fault_solvers", FAULTS)
    sys.modules["fault_solvers"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["fault_solvers"])


def _fits(store, *overrides) -> list[dict]:
    cfg = compose([f"store.root={store}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=120",
                   "cv=holdout", "solvers=[dcd]", "run.reference=false", "run.warm_start=false",
                   "run.trace=false", *overrides])
    exp = validate(cfg)
    plan = build_plan(exp, materialise_datasets(exp))
    return sorted(plan.fits.values(), key=lambda s: (s["solver"] != "dcd", s["problem"]["C"]))


@pytest.mark.slow
def test_a_death_is_charged_to_the_spec_running_not_to_those_that_ended_before(store):
    """One task: dcd, dcd, `_abort`, dcd. The child dies in `_abort`, twice (run.retries=1):
    `_abort` is the error row with 2 attempts, and every dcd spec converges, also the two that
    ended before the death in the same child, whose records had not been sent yet (they are
    run again, uncharged)."""
    specs = _fits(store, "solvers.dcd.grid.C=[0.1,1,10]", "+solvers._abort={solver: _abort, params: {loss: hinge}}")
    dcd, abort = [s for s in specs if s["solver"] == "dcd"], [s for s in specs if s["solver"] == "_abort"]
    units = [[dcd[0]], [dcd[1]], [abort[0]], [dcd[2]]]
    box = Sandbox()
    try:
        records = box.run(units, str(store), {}, retries=1)
    finally:
        box.close()
    assert [r["key"] for r in records] == [u[0]["key"] for u in units]
    assert [r["status"] for r in records] == ["converged", "converged", "error", "converged"], records
    assert "died of SIGABRT" in records[2]["error"] and "2 attempts" in records[2]["error"]


def test_a_task_of_many_short_specs_is_a_few_messages_not_one_per_spec(store):
    """60 fits of a few ms in one task: the child sends its records at most every FLUSH_S and
    at the end, so the worker thread wakes a handful of times, not once per fit."""
    specs = _fits(store, "solvers.dcd.grid.C=" + str([round(0.01 * 1.1 ** i, 6) for i in range(60)]).replace(" ", ""))
    box = Sandbox()
    try:
        box.warm(["dcd"])
        before = box.received
        records = box.run([[s] for s in specs], str(store), {})
        messages = box.received - before
    finally:
        box.close()
    assert len(records) == 60 and all(r["status"] == "converged" for r in records)
    seconds = sum(r["task_time_s"] for r in records)
    assert messages <= 2 + seconds / FLUSH_S, (messages, seconds)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_GETPIPE_SZ is Linux's")
def test_the_pipes_hold_half_a_second_of_records_without_the_child_waiting(store):
    """Records of fits of a third of a millisecond fill a flush of 330 kB: through Linux's default
    64 kB pipe the child waited in write() for the worker to drain it. Both pipes hold PIPE_BYTES."""
    import fcntl

    from pipeline.engine.sandbox import PIPE_BYTES
    box = Sandbox()
    try:
        box.warm(["dcd"])
        sizes = [fcntl.fcntl(p.fileno(), fcntl.F_GETPIPE_SZ) for p in (box.proc.stdin, box.proc.stdout)]
    finally:
        box.close()
    assert sizes == [PIPE_BYTES, PIPE_BYTES] and PIPE_BYTES >= 330_000


def test_the_worker_passes_the_childs_records_on_without_unpickling_them(store, monkeypatch):
    """The worker thread unpickles the units (its bookkeeping) and the child's messages, but the
    records inside them go on to the client as the child pickled them: unpickling and pickling
    2,000 records again sat between a task's end and the next one's start (20 ms)."""
    import pickle as real

    from pipeline.engine import sandbox
    specs = _fits(store, "solvers.dcd.grid.C=[0.1,1,10]")
    decoded = []

    class Spy:
        HIGHEST_PROTOCOL = real.HIGHEST_PROTOCOL
        dumps = staticmethod(real.dumps)

        @staticmethod
        def loads(data):
            out = real.loads(data)
            if isinstance(out, list) and out and isinstance(out[0], dict) and "status" in out[0]:
                decoded.append(out)
            return out

    box = Sandbox()
    try:
        box.warm(["dcd"])
        monkeypatch.setattr(sandbox, "pickle", Spy)
        blobs = box.run_pickled(real.dumps([[s] for s in specs]), str(store), {})
    finally:
        box.close()
    assert not decoded and all(isinstance(b, bytes) for _, b in blobs)
    assert sorted(r["key"] for r in sandbox.records_of(blobs)) == sorted(s["key"] for s in specs)


def test_the_slot_is_never_read_half_written():
    """The parent reads the slot while the child writes it, and a start it reads is a start the
    child wrote: with `struct.pack_into` (which zeroes a field, then writes it byte by byte) the
    parent read 0.0 thousands of times a second here, a spec running since boot, and killed fits
    of milliseconds as past their hard limit (5 and 7 of scenario (h)'s 1,000,000 fits)."""
    import subprocess
    import time

    from pipeline.engine.sandbox import _Slot
    slot = _Slot.create()
    slot.write(-1)
    t0 = time.monotonic()
    writer = ("import sys, time\n"
              "from pipeline.engine.sandbox import _Slot\n"
              "slot = _Slot(int(sys.argv[1]))\n"
              "end = time.monotonic() + 1.5\n"
              "while time.monotonic() < end:\n"
              "    for k in range(1000):\n"
              "        slot.write(k, time.monotonic())\n")
    child = subprocess.Popen([sys.executable, "-c", writer, str(slot.fd)], pass_fds=(slot.fd,))
    reads, bad = 0, []
    try:
        while child.poll() is None:
            index, started, _ = slot.read()
            reads += 1
            if index >= 0 and not t0 <= started <= time.monotonic():
                bad.append((index, started))
    finally:
        child.wait()
        slot.close()
    assert child.returncode == 0 and reads > 10_000
    assert bad == [], f"{len(bad)} of {reads} reads half written, e.g. {bad[:3]}"


SLOW_PLUGIN = '''
import os
import time
from pathlib import Path

import solvers

# A slow preparation: a fit imports its plugin file, in the sandbox's child, after the spec
# started and before its solver does.
if os.environ.get("SVMBENCH_SANDBOX_PARENT"):
    time.sleep(float(os.environ.get("SLOW_PLUGIN_S", "0")))


def _loop(problem, *, budget, recorder, warm_start=None, pidfile=""):
    if not os.environ.get("SVMBENCH_SANDBOX_PARENT"):     # the plugin's checks, outside a sandbox
        return solvers.fit(problem, "dcd", budget=budget, recorder=recorder)
    Path(pidfile).write_text(str(os.getpid()))
    while True:       # never looks at the clock
        pass


if "_slowloop" not in solvers.solver_names():
    solvers.register(solvers.SolverSpec(name="_slowloop", family="test", fit=_loop,
                                        params={"pidfile": solvers.Param("", "str")}, warmup=lambda: None))
'''


def test_a_specs_hard_limit_counts_from_its_solvers_start_not_its_preparation(store, tmp_path, monkeypatch):
    """A spec's hard limit counts from its solver's start (the slot's `solving`), not from its
    preparation (here: importing its plugin file, 0.7 s of a 1 s limit): its solver runs for the
    whole limit and is killed past it, the row saying so. A preparation past its own limit
    (PREPARE_LIMIT_S, here cut to 0.5 s; the spec's 1 s is the longer) ends before the solver
    starts, and the row says that instead."""
    from pipeline.engine import sandbox
    plugin = tmp_path / "slow_plugin.py"
    plugin.write_text(SLOW_PLUGIN)
    pidfile = tmp_path / "loop.pid"
    spec = next(s for s in _fits(store, f"plugins=[{plugin}]",
                                 f"+solvers._slowloop={{solver: _slowloop, params: {{loss: hinge, pidfile: '{pidfile}'}}}}")
                if s["solver"] == "_slowloop")
    # As a worker that never imported the plugin: its child imports it for the spec, not at start.
    monkeypatch.setattr(sandbox, "plugin_files", lambda: [])
    box = Sandbox()
    try:
        # Each child reads the import's length from its environment (a killed child's successor anew).
        monkeypatch.setenv("SLOW_PLUGIN_S", "0.7")
        record, = box.run([[spec]], str(store), {spec["key"]: 1.0}, retries=0)
        assert record["status"] == "timeout", record
        ran = re.match(r"killed ([\d.]+) s after its solver started: the solver did not stop", record["error"])
        assert ran and float(ran.group(1)) >= 0.95, record["error"]      # the whole limit, after the import
        assert pidfile.exists()
        pidfile.unlink()
        monkeypatch.setenv("SLOW_PLUGIN_S", "1.5")
        monkeypatch.setattr(sandbox, "PREPARE_LIMIT_S", 0.5)
        record, = box.run([[spec]], str(store), {spec["key"]: 1.0}, retries=0)
        assert record["status"] == "timeout", record
        assert "before its solver started (reading its data, loading its solver): past the limit of 1.0 s" in \
            record["error"], record
        assert not pidfile.exists()
    finally:
        box.close()
