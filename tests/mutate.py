"""`make mutate MODULES='...'`: mutmut over some of the guarantee modules, each against its own
related tests only, in a project of its own (.mutate/<modules>/) so that mutmut's first pass
(every related test run once, to see which test runs which function) runs those tests and not
the whole list of `[tool.mutmut]` in pyproject.toml (that list serves `make mutate` without
MODULES, every module at once).

    python tests/mutate.py pipeline.kept.handoff solvers.params      # then its summary

The project is a copy of pyproject.toml whose `[tool.mutmut]` names only these modules and
their tests, beside links to the tree's pipeline/, solvers/, conf/ and tests/: mutmut copies
them into .mutate/<modules>/mutants/ and mutates the copy, never the tree. A second run with the
same modules reuses mutmut's first pass (which test runs which function) and runs every mutant
again."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the test files that exercise it (each names the module and calls into it in its own
# process: mutmut does not follow a mutant into a subprocess).
RELATED = {
    "pipeline.report.speed": ["tests/pipeline/test_speed.py", "tests/pipeline/test_report_profiles.py",
                              "tests/pipeline/test_report.py"],
    "pipeline.engine.sink": ["tests/pipeline/test_shards.py"],
    "pipeline.engine.security": ["tests/pipeline/test_security.py", "tests/pipeline/test_cluster_access.py"],
    "pipeline.kept.handoff": ["tests/pipeline/test_handoff.py", "tests/pipeline/test_security.py"],
    "pipeline.papers.claims": ["tests/pipeline/test_claims.py", "tests/pipeline/test_papers.py"],
    "solvers.cv_bounds": ["tests/solvers/test_cv_bounds.py", "tests/pipeline/test_search_rules.py"],
    "pipeline.search.certified": ["tests/pipeline/test_search_rules.py", "tests/pipeline/test_search.py"],
    "pipeline.search.halving": ["tests/pipeline/test_search_rules.py", "tests/pipeline/test_search.py"],
    "pipeline.report.scaled": ["tests/pipeline/test_report_summaries.py", "tests/pipeline/test_report_scale.py",
                               "tests/pipeline/test_report_bounded.py"],
    "solvers.params": ["tests/solvers/test_params.py", "tests/pipeline/test_param_table.py"],
    "solvers.kernels": ["tests/solvers/test_kernels.py", "tests/solvers/test_dense_sparse.py"],
}
LINKED = ["pipeline", "solvers", "conf", "tests"]


def project(modules: list[str]) -> Path:
    """.mutate/<modules>/ with its pyproject.toml and the tree's folders linked in."""
    where = ROOT / ".mutate" / "+".join(m.rsplit(".", 1)[-1] for m in modules)
    where.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        link = where / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name, target_is_directory=True)
    files = [m.replace(".", "/") + ".py" for m in modules]
    tests = sorted({t for m in modules for t in RELATED[m]})
    section = ("[tool.mutmut]\n"
               'source_paths = ["pipeline", "solvers"]\n'
               'also_copy = ["conf"]\n'
               f"only_mutate = {files!r}\n"
               'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-m", "not long"]\n'
               f"pytest_add_cli_args_test_selection = {tests!r}\n").replace("'", '"')
    text = (ROOT / "pyproject.toml").read_text()
    text, n = re.subn(r"^\[tool\.mutmut\]\n(?:(?!^\[).*\n?)*", section, text, flags=re.M)
    if n != 1:
        sys.exit("pyproject.toml: no [tool.mutmut] table to replace")
    target = where / "pyproject.toml"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    return where


def main(argv: list[str]) -> int:
    unknown = [m for m in argv if m not in RELATED]
    if not argv or unknown:
        print(f"tests/mutate.py: unknown module(s) {unknown}; one or more of: {' '.join(RELATED)}", file=sys.stderr)
        return 2
    modules = argv
    where = project(modules)
    mutmut = Path(sys.executable).with_name("mutmut")
    log = where / "mutants.log"
    print(f"mutmut in {where.relative_to(ROOT)} (its log: {log.relative_to(ROOT)})", flush=True)
    with open(log, "w") as out:
        # Each module's mutants named (a glob each): mutmut then runs every one of them again. Left
        # to itself it keeps a survivor's verdict when only its tests changed, so a new test
        # that kills it would not show.
        code = subprocess.call([str(mutmut), "run", "--max-children", "2", *(f"{m}.*" for m in modules)],
                               cwd=where, stdout=out,
                               stderr=subprocess.STDOUT)
    if code:
        print(log.read_text()[-3000:], file=sys.stderr)
        return code
    return subprocess.call([sys.executable, str(ROOT / "tests" / "mutation_summary.py"), "--root", str(where), *modules])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
