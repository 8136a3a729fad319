"""Each record's peak memory (`env_peak_rss_mb`, pipeline/engine/rss.py): VmHWM since the fit's reset,
read through getrusage where that equals it, and from /proc/self/status where it does not (a
process exec'd from a larger one carries that one's peak in getrusage)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from pipeline.engine import rss

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux's VmHWM")


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        return int(fh.read().split(f"{field}:")[1].split("kB")[0]) / 1024


def _vmhwm_mb() -> float:
    status = open("/proc/self/status").read()
    return int(status.split("VmHWM:")[1].split("kB")[0]) / 1024


def test_the_peak_is_vmhwm_since_the_reset():
    rss.reset_peak_rss()
    assert rss._OWN_PEAK[os.getpid()]          # getrusage is this process's peak: the fast path
    base = rss.peak_rss_mb()
    # The resident size just before the block, not the peak at the reset: memory another thread
    # of the suite's process gives back meanwhile lowers where the block's pages start.
    before = _status_mb("VmRSS")
    block = np.ones(25_000_000)                # 200 MB, every page written
    del block
    peak = rss.peak_rss_mb()
    assert peak >= base and peak > before + 180 and abs(peak - _vmhwm_mb()) < 2
    rss.reset_peak_rss()
    assert rss.peak_rss_mb() < peak - 180 and abs(rss.peak_rss_mb() - _vmhwm_mb()) < 2


CHECK = """
import os
from pipeline.engine import rss
rss.reset_peak_rss()
status = open("/proc/self/status").read()
print(rss._OWN_PEAK[os.getpid()], rss.peak_rss_mb(), int(status.split("VmHWM:")[1].split("kB")[0]) / 1024)
"""


def test_a_process_execd_from_a_larger_one_reads_vmhwm_not_getrusage():
    """A 400 MB process execs a small one: getrusage still says 400 MB there; the peak does not."""
    parent = ("import os, sys, numpy as np; a = np.ones(50_000_000); "
              f"os.execv(sys.executable, [sys.executable, '-c', {CHECK!r}])")
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout.split()
    own, peak, vmhwm = out[0] == "True", float(out[1]), float(out[2])
    assert not own and peak < 200 and abs(peak - vmhwm) < 2, out


def test_the_peak_is_read_without_the_process_cpu_times(monkeypatch):
    """getrusage(RUSAGE_SELF) sums the process's CPU times, which updates the scheduler's
    accounting: with more runnable processes than cores, a fit's preemptions gathered in that
    call, outside its clock. The peak asks for RUSAGE_THREAD (the same ru_maxrss)."""
    import resource
    asked = []
    real = resource.getrusage
    monkeypatch.setattr(resource, "getrusage", lambda who: asked.append(who) or real(who))
    rss.reset_peak_rss()
    rss.peak_rss_mb()
    assert asked and set(asked) == {resource.RUSAGE_THREAD}
