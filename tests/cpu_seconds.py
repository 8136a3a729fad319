"""Where the suite's time goes, in CPU seconds: the per-test records a run wrote with
SVMBENCH_TEST_CPU=DIR (tests/conftest.py), summed by test file, slowest first, and what they say
of the suite's idle time on that many workers.

    d=$(mktemp -d); SVMBENCH_TEST_CPU=$d make test; python tests/cpu_seconds.py $d [TOP]

CPU seconds move less with the machine's load than wall seconds: a run on a loaded machine
still ranks the files. The estimate: on W idle cores, the suite takes at least its CPU seconds
over W, and at least the wall seconds a test waits beyond its CPU (a sleep, a clock, a process
it waits for), which a loaded run cannot tell from contention; the idle run says which."""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    top = int(argv[1]) if len(argv) > 1 else 25
    tests = [json.loads(line) for f in sorted(Path(argv[0]).glob("*.jsonl")) for line in f.read_text().splitlines()]
    by_file = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for t in tests:
        row = by_file[t["test"].split("::")[0]]
        row[0] += 1
        row[1] += t["own"]
        row[2] += t["children"]
        row[3] += t["wall"]
    cpu = sum(r[1] + r[2] for r in by_file.values())
    workers = max(1, len(list(Path(argv[0]).glob("*.jsonl"))))
    print(f"{len(tests)} tests, {cpu:.0f} CPU seconds (own {sum(r[1] for r in by_file.values()):.0f}, "
          f"children {sum(r[2] for r in by_file.values()):.0f}), {sum(r[3] for r in by_file.values()):.0f} "
          f"wall seconds over {workers} worker(s): at least {cpu / workers:.0f} s on {workers} idle cores")
    print(f"{'tests':>5} {'own':>7} {'children':>8} {'cpu':>7} {'wall':>7}  file")
    for name, (n, own, children, wall) in sorted(by_file.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))[:top]:
        print(f"{n:5d} {own:7.1f} {children:8.1f} {own + children:7.1f} {wall:7.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
