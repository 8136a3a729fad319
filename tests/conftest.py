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

Behind that, one sweep: every process the suite starts carries SESSION in its environment (set
in the controller, inherited by the workers, the servers they start, and those servers'
children); when the controller ends, any such process still running is killed and named. A test
stuck where Python cannot raise (a numba loop holding the GIL) is ended by pytest-xdist after
its grace, and its children by this sweep. tests/pipeline/test_stop.py stops a real `make test`
mid-run and counts what is left.

And a test over SLOW_S seconds (setup, call and teardown) must carry the `slow` mark: the run's
summary names each one that does not, with the load average it ran at (a test that is slow only
on a loaded machine is slow there, not here)."""
import os
import signal
import sys
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


def pytest_terminal_summary(terminalreporter):
    over = sorted(((s, n) for n, s in _seconds.items() if s > SLOW_S and n not in _marked_slow), reverse=True)
    if over:
        terminalreporter.write_line(f"tests over {SLOW_S:.0f} s without the slow mark (load average "
                                    f"{os.getloadavg()[0]:.1f} now):")
        for seconds, nodeid in over:
            terminalreporter.write_line(f"  {seconds:6.1f} s  {nodeid}")


def _interrupt(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    if not os.environ.get("PYTEST_XDIST_WORKER"):        # the controller, or a run without workers
        os.environ[SESSION] = os.environ.pop(NEXT_SESSION, None) or uuid.uuid4().hex
        config._svmbench_controller = True
    signal.signal(signal.SIGTERM, _interrupt)


def marked(session: str, exclude=()) -> list:
    """The processes (psutil) whose environment carries this session's mark, but `exclude` (pids)."""
    import psutil
    found = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid in exclude:
            continue
        try:
            if proc.environ().get(SESSION) == session:
                found.append(proc)
        except psutil.Error:       # ended meanwhile, or another user's
            continue
    return found


def pytest_unconfigure(config):
    if not getattr(config, "_svmbench_controller", False):
        return
    import psutil
    me = psutil.Process()
    left = marked(os.environ[SESSION], exclude={me.pid, *(p.pid for p in me.parents())})
    if not left:
        return
    names = []
    for proc in left:
        try:
            names.append(f"{proc.pid} {' '.join(proc.cmdline())[:80]}")
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=10)
    print(f"\nsvmbench tests: {len(left)} processes of this run were still running and were killed:\n  "
          + "\n  ".join(names), file=sys.stderr)
