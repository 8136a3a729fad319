"""The run log's timing line gives the client's peak memory phase by phase (`run.Timing`): each
phase's own peak, not the process's worst so far, and over the run the worst of them."""
import re
import time

from pipeline.run import Timing


def _hold(mb: int) -> bytearray:
    block = bytearray(mb * 2**20)
    block[::4096] = b"x" * len(block[::4096])        # every page touched: resident
    return block


def test_each_phase_reports_its_own_peak_and_the_run_the_worst():
    timing = Timing(time.perf_counter(), 0.5)
    timing.mark("plan")
    block = _hold(300)
    del block                                         # freed within the phase: its peak stays
    timing.mark("tables")
    timing.mark("report")
    line = timing.line()
    peaks = {phase: float(mb) for phase, mb in
             re.findall(r"(\w+) (\d+)", line.split("the client's peak by phase, MB: ")[1])}
    assert list(peaks) == ["start", "plan", "tables", "report"]
    assert peaks["tables"] >= peaks["plan"] + 280, line
    assert peaks["report"] <= peaks["tables"] - 250, line          # a new peak once the phase ended
    run_peak = float(re.search(r"client peak RSS (\d+) MB over the run", line).group(1))
    assert run_peak == max(peaks.values()), line
