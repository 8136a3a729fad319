"""Progress a log can read: on a terminal the execute phase draws tqdm's bar on stderr; without
one (nohup, a SLURM job's log, a CI job) the bar is off and nothing else moved for minutes while
fits ran. `ProgressLines` writes a line every `run.progress_every_s` instead, where the bar
would be (stderr) and to run.log (`write_line`), e.g.

    progress: sweep 41/90 fits, timing 12/90, references 30/30; 42 s elapsed, about 31 s left

fits done of planned per phase (the sweep's fits, the timing fits, the reference solves, or a
search round's), the execute phase's seconds so far, and a rough ETA: the seconds per fit so far
times the fits left (the phases' fits differ in cost, so it is rough, and said so).
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path

# The phases in the order a line names them.
PHASES = ("sweep", "timing", "references")


def phase_of(spec) -> str:
    """The phase a spec (typed, or a plan's view) counts in."""
    if spec.kind == "reference":
        return "references"
    return "timing" if spec.is_timing else "sweep"


def write_line(run_dir: Path | None):
    """A progress line's writer: to stderr, and appended to the run dir's run.log (as the run's
    log writes it: "[time] line"), not through the console logger, which writes to stdout."""
    def write(line: str) -> None:
        text = f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {line}"
        print(text, file=sys.stderr, flush=True)
        if run_dir is not None:
            with contextlib.suppress(OSError), open(Path(run_dir) / "run.log", "a") as fh:
                fh.write(text + "\n")
    return write


def wanted(enabled: bool, stream=None) -> bool:
    """Progress lines are for a run whose stderr is not a terminal (where tqdm's bar is not drawn)."""
    stream = sys.stderr if stream is None else stream
    return bool(enabled) and not (hasattr(stream, "isatty") and stream.isatty())


class ProgressLines:
    """Counts records by phase (`take`, a sink listener) and, once `start`ed, logs a line every
    `every_s` seconds from a thread of its own until `stop`. planned: phase -> fits to run.
    sweep: what the sweep's phase is called (a search's round)."""

    def __init__(self, planned: dict, log, every_s: float, sweep: str = "sweep"):
        self.planned = {p: n for p, n in planned.items() if n}
        self.done = dict.fromkeys(self.planned, 0)
        self.log, self.every_s, self.sweep = log, float(every_s), sweep
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self.t0 = None

    def take(self, records: list) -> None:
        """Count these records (`results.shards.Record`, each with its spec) by phase."""
        with self.lock:
            for r in records:
                phase = phase_of(r.spec)
                if phase in self.done:
                    self.done[phase] += 1

    def line(self, now: float | None = None) -> str:
        elapsed = (time.perf_counter() if now is None else now) - self.t0
        with self.lock:
            done = dict(self.done)
        parts = []
        for phase in PHASES:
            if phase in self.planned:
                name = self.sweep if phase == "sweep" else phase
                unit = " fits" if not parts else ""
                parts.append(f"{name} {done[phase]}/{self.planned[phase]}{unit}")
        finished, total = sum(done.values()), sum(self.planned.values())
        eta = (f"about {elapsed / finished * (total - finished):.0f} s left (rough: fits differ in cost)"
               if finished else "no fit finished yet")
        return f"progress: {', '.join(parts)}; {elapsed:.0f} s elapsed, {eta}"

    def start(self) -> "ProgressLines":
        self.t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="svmbench-progress", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.log(self.line())

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
