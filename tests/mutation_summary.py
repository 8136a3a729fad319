"""`make mutate`'s last step: mutmut's verdicts (mutants/**/*.meta) as a table per module, and
the survivors set against the ones docs/development/testing.md explains.

    python tests/mutation_summary.py [--root DIR] [MODULE ...]   # e.g. pipeline.report.speed; default: all

DIR holds mutmut's mutants/ (the tree's root by default; tests/mutate.py's project for a subset).

Per module: mutants, killed (a test failed, or timed out), survived, without a test (no listed
test runs the function), not run yet, the kill rate (killed over those run) and the seconds its
mutants took (each one's tests, in a forked process; `--max-children 2` halves the wall time).
Then every survivor the testing docs do not name (by mutmut's name, `mutmut show NAME` prints its
diff), and every name the docs list that no longer survives. Exit 1 if there are unexplained
survivors or mutants without a test among the modules asked for: the habit is that each one is
either killed by a new test or explained as equivalent there."""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "development" / "testing.md"
# mutmut's exit codes (mutmut.stats.status_by_exit_code): a test failed (1; 3, pytest's internal
# error), the tests passed (0), no test runs the function (33, 5), timed out (SIGXCPU and its
# relatives), the run killed (segfault: a test's process died of the mutant).
KILLED = {1, 3, 36, 24, -24, 152, 255, -9, -11}
SURVIVED = {0}
NO_TESTS = {5, 33}


def verdicts(root: Path) -> dict[str, dict]:
    """module -> {"codes": {mutant: exit code}, "seconds": {mutant: seconds}}."""
    out = {}
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        rel = meta.relative_to(root / "mutants").with_suffix("").with_suffix("")
        data = json.loads(meta.read_text())
        out[".".join(rel.parts)] = {"codes": data.get("exit_code_by_key", {}),
                                    "seconds": data.get("durations_by_key", {})}
    return out


def explained(docs: Path) -> set[str]:
    """The mutant names the testing docs list (each in backquotes, as mutmut spells it)."""
    return set(re.findall(r"`([\w.ǁ]+__mutmut_\d+)`", docs.read_text())) if docs.exists() else set()


def main(argv: list[str]) -> int:
    root = ROOT
    if argv[:1] == ["--root"]:
        root, argv = Path(argv[1]), argv[2:]
    found = verdicts(root)
    if not found:
        print("no mutmut results under mutants/: run `make mutate` first")
        return 1
    wanted = [m for m in found if not argv or any(m == a or m.startswith(a + ".") for a in argv)]
    listed = explained(DOCS)
    rows, survivors, untested = [], [], []
    total = Counter()
    for module in wanted:
        codes, seconds = found[module]["codes"], found[module]["seconds"]
        c = Counter()
        for name, code in codes.items():
            kind = ("not run" if code is None else "killed" if code in KILLED else "survived" if code in SURVIVED
                    else "no test" if code in NO_TESTS else "other")
            c[kind] += 1
            if kind == "survived":
                survivors.append(name)
            elif kind == "no test":
                untested.append(name)
        c["mutants"] = len(codes)
        c["seconds"] = round(sum(seconds.values()))
        total.update(c)
        rows.append((module, c))
    rows.append(("all", total))
    print(f"{'module':34} {'mutants':>7} {'killed':>7} {'survived':>8} {'no test':>7} {'not run':>7} "
          f"{'rate':>6} {'seconds':>8}")
    for module, c in rows:
        run = c["killed"] + c["survived"] + c["no test"] + c["other"]
        rate = f"{100 * c['killed'] / run:5.1f}%" if run else "    -"
        print(f"{module:34} {c['mutants']:7} {c['killed']:7} {c['survived']:8} {c['no test']:7} {c['not run']:7} "
              f"{rate:>6} {c['seconds']:8}")
    new = sorted(set(survivors) - listed)
    modules = tuple(m + "." for m in wanted)
    gone = sorted(n for n in listed - set(survivors) if n.startswith(modules))
    if new:
        print(f"\n{len(new)} survivors the testing docs do not explain (`mutmut show NAME`):")
        print("\n".join(f"  {n}" for n in new))
    if untested:
        print(f"\n{len(untested)} mutants in functions no listed test runs:")
        print("\n".join(f"  {n}" for n in sorted(untested)))
    if gone:
        print(f"\n{len(gone)} names the testing docs list that no longer survive (killed now, or renamed):")
        print("\n".join(f"  {n}" for n in gone))
    return 1 if new or untested else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
