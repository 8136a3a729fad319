"""`make mutate`'s two lists agree: the modules a subset run may name (tests/mutate.py's RELATED)
are the ones `[tool.mutmut]` mutates, their related tests are its test list; and a subset's
project mutates those modules with their tests only. Whether a related test runs its module is
mutmut's to say: a mutant in a function none of them runs is counted "no test" and fails the
summary (tests/mutation_summary.py)."""
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import mutate  # noqa: E402


def _mutmut(path):
    return tomllib.loads(path.read_text())["tool"]["mutmut"]


def test_the_subsets_modules_and_tests_are_the_whole_runs():
    whole = _mutmut(ROOT / "pyproject.toml")
    assert sorted(whole["only_mutate"]) == sorted(m.replace(".", "/") + ".py" for m in mutate.RELATED)
    assert sorted(whole["pytest_add_cli_args_test_selection"]) == \
        sorted({t for tests in mutate.RELATED.values() for t in tests})


def test_a_subsets_project_mutates_its_modules_against_their_tests_only(monkeypatch, tmp_path):
    monkeypatch.setattr(mutate, "ROOT", tmp_path)
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    for name in mutate.LINKED:
        (tmp_path / name).mkdir()
    where = mutate.project(["pipeline.kept.handoff", "solvers.params"])
    assert where == tmp_path / ".mutate" / "handoff+params"
    assert all((where / name).resolve() == tmp_path / name for name in mutate.LINKED)
    sub, whole = _mutmut(where / "pyproject.toml"), _mutmut(ROOT / "pyproject.toml")
    assert sub["only_mutate"] == ["pipeline/kept/handoff.py", "solvers/params.py"]
    assert sub["pytest_add_cli_args_test_selection"] == [
        "tests/pipeline/test_handoff.py", "tests/pipeline/test_param_table.py", "tests/pipeline/test_security.py",
        "tests/solvers/test_params.py"]
    assert sub["pytest_add_cli_args"] == whole["pytest_add_cli_args"]
    # the rest of pyproject.toml (pytest's own settings among them) as it was
    assert tomllib.loads((where / "pyproject.toml").read_text())["tool"]["pytest"] == \
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    assert mutate.main(["pipeline.nothing"]) == 2
