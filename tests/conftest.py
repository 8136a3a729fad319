"""The suite ends its own processes however it is stopped (docs/development/testing.md, "Stopping
the suite").

Each test ends what it starts: a real `dask scheduler` or `dask worker` is started in a process
group of its own and ended by group (`pipeline/processes.py`), a kept cluster by its stop, a
SLURM's daemons by theirs, a LocalCluster's workers and every sandbox with their parent. Those
ends are `finally` blocks and fixture teardowns, which Python runs on Ctrl-C (SIGINT raises
KeyboardInterrupt) but not on SIGTERM, whose default ends the process at once: `timeout make
test` or a CI runner's stop left four scheduler and worker trees behind, orphaned. So SIGTERM is
turned into the same interruption here, in the controller and in each pytest-xdist worker, once
(a second, from `make` passing its own on, does not cut the teardown short).

Behind that, one sweep. Every pytest process (the controller and each xdist worker) notes its
descendants, each by pid and start time, every WATCH_S in a file of the run's own folder
(`processes`); every process the suite starts also carries SESSION in its environment (set in
the controller, inherited by the workers, the servers they start, and those servers' children),
for what is started and orphaned between two notes (a process that sets its title, as Dask's and
xdist's do, hides its environment: the notes find those). When the controller ends, any noted or
marked process still running is killed and named. A test stuck where Python cannot raise (a
numba loop holding the GIL) is ended by pytest-xdist after its grace, and its children by this
sweep. tests/pipeline/test_stop.py stops a real `make test`
mid-run and counts what is left.

And a test over SLOW_S seconds (setup, call and teardown) must carry the `slow` mark: the run's
summary names each one that does not, with the load average it ran at (a test that is slow only
on a loaded machine is slow there, not here)."""
import os
import signal
import sys
import threading
import time
import uuid

SESSION = "SVMBENCH_TEST_SESSION"
# A test that runs the suite itself (test_stop.py) names the inner session's mark here, so that
# it can count the inner run's processes and the inner sweep never touches the outer run's.
NEXT_SESSION = "SVMBENCH_TEST_SESSION_NEXT"


SLOW_S = 10.0
_seconds: dict = {}       # nodeid -> seconds so far (setup, call, teardown), in the controller
_marked_slow: set = set()


def pytest_runtest_logreport(report):
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    if "slow" in report.keywords:
        _marked_slow.add(report.nodeid)


# SVMBENCH_TEST_CPU=DIR: each pytest process appends, per test, the CPU seconds it and the
# children it waited for spent (setup, call and teardown), and the wall seconds, to
# DIR/<worker>.jsonl; `python tests/cpu_seconds.py DIR` sums them by file. CPU seconds move less
# with the machine's load than wall seconds do, so a loaded machine can still say where the
# suite's time goes (a server a module starts is counted when it is reaped, at the module's end).
CPU_DIR = "SVMBENCH_TEST_CPU"


def pytest_runtest_logstart(nodeid, location):
    # xdist's controller hears of each test too, after the fact: only the process running it counts
    if os.environ.get(CPU_DIR) and (os.environ.get("PYTEST_XDIST_WORKER") or not _distributing):
        _cpu_before[nodeid] = (_cpu_now(), time.perf_counter())


def pytest_runtest_logfinish(nodeid, location):
    if nodeid not in _cpu_before:
        return
    import json
    (own0, children0), wall0 = _cpu_before.pop(nodeid)
    own, children = _cpu_now()
    path = os.path.join(os.environ[CPU_DIR], f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl")
    with open(path, "a") as fh:
        fh.write(json.dumps({"test": nodeid, "own": own - own0, "children": children - children0,
                             "wall": time.perf_counter() - wall0}) + "\n")


_cpu_before: dict = {}
_distributing = False       # this process is xdist's controller, its tests run by workers


def _cpu_now() -> tuple[float, float]:
    import resource
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def pytest_terminal_summary(terminalreporter):
    over = sorted(((s, n) for n, s in _seconds.items() if s > SLOW_S and n not in _marked_slow), reverse=True)
    if over:
        terminalreporter.write_line(f"tests over {SLOW_S:.0f} s without the slow mark (load average "
                                    f"{os.getloadavg()[0]:.1f} now):")
        for seconds, nodeid in over:
            terminalreporter.write_line(f"  {seconds:6.1f} s  {nodeid}")


_HANDLER_PID = None      # the test process that installed `_interrupt`


def _interrupt(signum, frame):
    if os.getpid() != _HANDLER_PID:
        # A child forked from the test process (a multiprocessing pool's worker) inherited this
        # handler: it dies of the signal as it would without the suite. Raising here left a pool
        # worker blocked on its queue's lock, SIGTERM ignored, and `Pool.terminate` joining it
        # for ever (make test hung in test_concurrent_ensure_dataset_agrees).
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


WATCH_S = 1.0


def _notes_dir(session: str):
    import tempfile
    from pathlib import Path
    return Path(tempfile.gettempdir()) / f"svmbench-tests-{session}"


def _note_descendants(session: str) -> None:
    """A daemon thread's loop: this process's descendants, (pid, start time) each, appended to its
    notes file as they appear."""
    import psutil
    me, seen = psutil.Process(), set()
    path = _notes_dir(session) / f"{os.getpid()}.txt"
    while True:
        new = []
        for proc in me.children(recursive=True):
            try:
                key = (proc.pid, proc.create_time())
            except psutil.Error:
                continue
            if key not in seen:
                seen.add(key)
                new.append(key)
        if new:
            with open(path, "a") as fh:
                fh.writelines(f"{pid} {t!r}\n" for pid, t in new)
        time.sleep(WATCH_S)


def pytest_configure(config):
    global _distributing
    _distributing = bool(getattr(config.option, "numprocesses", None)) and not os.environ.get("PYTEST_XDIST_WORKER")
    if not os.environ.get("PYTEST_XDIST_WORKER"):        # the controller, or a run without workers
        os.environ[SESSION] = os.environ.pop(NEXT_SESSION, None) or uuid.uuid4().hex
        config._svmbench_controller = True
        _notes_dir(os.environ[SESSION]).mkdir(exist_ok=True)
    global _HANDLER_PID
    _HANDLER_PID = os.getpid()
    signal.signal(signal.SIGTERM, _interrupt)
    threading.Thread(target=_note_descendants, args=(os.environ[SESSION],), name="svmbench-descendants",
                     daemon=True).start()


def marked(session: str, exclude=()) -> list:
    """The processes (psutil) of this session's run still running, but `exclude` (pids): those its
    pytest processes noted (`_note_descendants`), and those whose environment carries its mark."""
    import psutil
    found, noted = {}, set()
    for notes in _notes_dir(session).glob("*.txt"):
        for line in notes.read_text().splitlines():
            pid, started = line.split()
            noted.add((int(pid), float(started)))
    for proc in psutil.process_iter(["pid"]):
        if proc.pid in exclude:
            continue
        try:
            if (proc.pid, proc.create_time()) in noted or proc.environ().get(SESSION) == session:
                found[proc.pid] = proc
        except psutil.Error:       # ended meanwhile, or another user's
            continue
    return list(found.values())


def pytest_unconfigure(config):
    if not getattr(config, "_svmbench_controller", False):
        return
    import shutil
    import psutil
    me = psutil.Process()
    session = os.environ[SESSION]
    left = marked(session, exclude={me.pid, *(p.pid for p in me.parents())})
    shutil.rmtree(_notes_dir(session), ignore_errors=True)
    if not left:
        return
    names = []
    for proc in left:
        try:
            name = f"{proc.pid} {' '.join(proc.cmdline())[:80]}"
            proc.kill()
        except psutil.Error:       # ended (or a zombie awaiting its parent) since it was listed
            continue
        names.append(name)
    psutil.wait_procs(left, timeout=10)
    if names:
        print(f"\nsvmbench tests: {len(names)} processes of this run were still running and were killed:\n  "
              + "\n  ".join(names), file=sys.stderr)
