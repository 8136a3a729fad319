"""A process's peak resident memory, per task: what each result row records (`env_peak_rss_mb`);
and when the process started (`process_start`), which a run's timing line counts from.

Its own module, importing nothing beyond the standard library: the Dask worker records its own
peak beside its sandbox's (`sandbox.run_sandboxed`), and importing `tasks` there (numpy, scipy,
the planner) would put a second of imports into the first task of every worker.
"""
from __future__ import annotations

import os
import sys
import time


def reset_peak_rss() -> None:
    """Start a new peak (Linux: VmHWM back to the current RSS), so each task's record says what
    that task held, not the worst task its process ran before (LIBLINEAR's copy of the data);
    elsewhere the peak stays the process's."""
    pid = os.getpid()
    try:
        os.write(_proc_fd("clear_refs", os.O_WRONLY), b"5")
    except OSError:
        _OWN_PEAK[pid] = False
        return
    # getrusage's ru_maxrss is max(VmHWM, the process's recorded maxrss), and the latter holds
    # the peak of the image before exec (the worker a sandbox child was forked from) and of
    # threads that exited. Once that is below the RSS the reset left, ru_maxrss is VmHWM until
    # the next reset (a thread exiting later records a peak reached since the reset, so at most
    # VmHWM): one system call at the end of a fit instead of /proc/self/status, which the kernel
    # regenerates whole at each read (a visible share of the smallest fits' time).
    _OWN_PEAK[pid] = _ru_maxrss_kb() <= _rss_kb()


_PROC_FDS: dict = {}
_OWN_PEAK: dict = {}       # pid -> ru_maxrss is VmHWM since the last reset (`reset_peak_rss`)


def _proc_fd(name: str, flags: int) -> int:
    """A descriptor of /proc/self/<name> kept open for this process: these files are read once
    per fit, and opening and parsing them as text cost 0.2 ms (a fifth of a 1 ms fit's time
    outside its solver). Keyed by pid too: a forked child's "self" is not its parent's."""
    key = (os.getpid(), name)
    if key not in _PROC_FDS:
        _PROC_FDS[key] = os.open(f"/proc/self/{name}", flags)
    return _PROC_FDS[key]


def _ru_maxrss_kb() -> int:
    """ru_maxrss in kB (Linux). RUSAGE_THREAD: the same ru_maxrss as RUSAGE_SELF (the process's
    memory), without summing the process's CPU times, which makes the kernel update its
    scheduling accounting and hand the core to a waiting process right there: with more
    runnable processes than cores, the preemptions that would fall anywhere in a fit gathered in
    that call, outside the fit's clock (3 processes on 2 cores: 4 s of 7.5 s, against 0.1 s)."""
    import resource
    return resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)).ru_maxrss


def _rss_kb() -> float:
    """The resident set now, from /proc/self/statm (pages; a few numbers, cheap to make)."""
    return int(os.pread(_proc_fd("statm", os.O_RDONLY), 256, 0).split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024


def peak_rss_mb() -> float:
    """This process's peak resident memory since `reset_peak_rss`, in MiB: recorded with each
    task, so a run shows what its workers held (README, bench_scale). Linux's VmHWM (through
    getrusage where that equals it: `reset_peak_rss`); getrusage's ru_maxrss alone survives exec
    and cannot be reset."""
    if _OWN_PEAK.get(os.getpid()):
        return _ru_maxrss_kb() / 1024
    try:
        status = os.pread(_proc_fd("status", os.O_RDONLY), 1 << 16, 0)   # regenerated at offset 0
        at = status.index(b"VmHWM:") + 6
        return int(status[at:status.index(b"kB", at)]) / 1024
    except (OSError, ValueError):
        import resource     # elsewhere: the best there is (kB on Linux, bytes on macOS)
        scale = 2**20 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def process_start() -> float:
    """When this process started (time.time()), the interpreter's own start included: from
    /proc where there is one (Linux), else now. A run's timing line counts from it (in the
    launcher's child, from the command's)."""
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rpartition(")")[2].split()[19])   # field 22: starttime, in clock ticks
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()
