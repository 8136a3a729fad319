"""`python -m pipeline.bench`: the command lines the docs give are the command's own, a bad
scenario name is refused before anything runs, and a reference ("anchor") run by name in a process
of its own fits the very problems our run plans (rows, labels, folds, C grid, loss). No timing is
asserted: speed is the benchmark's to measure."""
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from pipeline.bench import anchors
from pipeline.bench.__main__ import SCENARIOS, parser
from pipeline.engine.materialise import materialise_datasets
from pipeline.engine.tasks import load_dataset
from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan
from pipeline.experiment.specs import binary_labels

ROOT = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"python -m pipeline\.bench(?![.\w])([^`#|\n]*)")


def documented_commands() -> list[tuple[str, str]]:
    """(file:line, arguments) of every `python -m pipeline.bench ...` the repository writes."""
    files = [ROOT / "README.md", ROOT / "DESIGN.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("conf/**/*.yaml"),
             *ROOT.glob("pipeline/**/*.py"), *ROOT.glob("solvers/*.py"), *ROOT.glob("tests/**/*.py")]
    return [(f"{path.relative_to(ROOT)}:{n}", m.group(1))
            for path in files if path != Path(__file__).resolve()
            for n, line in enumerate(path.read_text().splitlines(), 1) for m in COMMAND.finditer(line)]


def test_the_documented_commands_name_its_scenarios_and_flags():
    flags = {o for action in parser()._actions for o in action.option_strings}
    commands = documented_commands()
    assert len(commands) > 30, commands          # the pages were read
    wrong = []
    for where, args in commands:
        wrong += [f"{where}: {flag}" for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", args) if flag not in flags]
        for only in re.findall(r"--only[ =]([\w,]+)", args):
            wrong += [f"{where}: --only {name}" for name in only.split(",") if name not in SCENARIOS]
    assert not wrong, "documented but not the command's:\n" + "\n".join(wrong)


def test_an_unknown_scenario_is_refused_in_one_line_before_any_runs(capsys):
    with pytest.raises(SystemExit) as exc:
        parser().parse_args(["--only", "a,zz"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m pipeline.bench: error: argument --only: unknown scenario 'zz'; the scenarios: "
        + ", ".join(SCENARIOS))


def test_a_linear_anchor_by_name_fits_the_plans_problems(tmp_path):
    """gridsearch_linear, run as its own process, against LinearSVC fitted here on the plan's own
    folds (read from the plan, not from the anchor's module): the same fits, the same mean test
    accuracy. On 600 rows of sparse text at C = 0.01 and 1 the accuracy moves with C, the folds
    (other stratified folds give another mean) and the loss (hinge here, not LinearSVC's default)."""
    overrides = ["datasets.rcv1_like.params.n_samples=600", f"store.root={tmp_path}",
                 "solvers.dcd.grid.C=[0.01,1]", "solvers.dcd.params.loss=hinge"]
    record = anchors.run("gridsearch_linear", overrides=overrides, n_jobs=1)

    exp = validate(compose(["+experiment=bench_sweep", *overrides]))
    d, = build_plan(exp, materialise_datasets(exp)).datasets.values()
    ds = load_dataset(exp.store_root, d["name"], d["fingerprint"])
    y, _ = binary_labels(ds.y, d["positive"])
    accuracy = [LinearSVC(C=C, loss="hinge", tol=0.1, max_iter=1000, random_state=0).fit(ds.X[tr], y[tr])
                .score(ds.X[te], y[te]) for C in (0.01, 1.0) for tr, te in d["folds"]]
    assert record["fits"] == len(accuracy) == 10
    assert record["test_accuracy"] == pytest.approx(np.mean(accuracy), abs=1e-12)
    assert 0.5 < record["test_accuracy"] < 1.0
    assert record["process_s"] > record["fit_s"] > 0


def test_an_anchor_with_bad_arguments_fails_in_one_line_naming_them(tmp_path):
    with pytest.raises(anchors.AnchorError) as exc:
        anchors.run("gridsearch_linear", overrides=[f"store.root={tmp_path}"], folds=3)
    message = str(exc.value)
    assert message.startswith("anchor gridsearch_linear exited with status 2: ")
    assert message.splitlines()[-1] == (
        "python -m pipeline.bench.anchors: error: --json '{\"overrides\": [\"store.root=" + str(tmp_path)
        + "\"], \"folds\": 3}': gridsearch_linear takes a JSON object of its arguments (overrides, n_jobs, "
        "experiment): got an unexpected keyword argument 'folds'")


def test_nothing_in_the_pipeline_imports_the_benchmark():
    """The benchmark sits beside the pipeline, a user of it: no module outside pipeline/bench/
    imports it (a run never pays for it, and the package could leave the wheel unnoticed)."""
    imports = re.compile(r"^\s*(from\s+(pipeline\.bench|\.+bench)\b|import\s+pipeline\.bench\b)", re.M)
    pipeline = ROOT / "pipeline"
    offenders = [str(p.relative_to(ROOT)) for p in pipeline.rglob("*.py")
                 if pipeline / "bench" not in p.parents and imports.search(p.read_text())]
    assert not offenders


def test_a_paired_side_imports_its_own_trees_solvers(tmp_path):
    """Scenario paired times each side in a process that imports `solvers` from that side's tree
    (its PYTHONPATH): a tree whose solvers is a stand-in is the one the process runs, not this
    checkout's, which the virtualenv's editable install would give (seen failing without it)."""
    from pipeline.bench import paired
    tree = tmp_path / "tree"
    (tree / "solvers").mkdir(parents=True)
    (tree / "solvers" / "__init__.py").write_text(
        "class SVMClassifier:\n    def __init__(self, **kw):\n        self.kw = kw\n"
        "    def fit(self, X, y):\n        return self\n"
        "Budget = Problem = fit = None\n")
    data = tmp_path / "d.npz"
    np.savez(data, X=np.eye(4), y=np.array([1.0, -1.0, 1.0, -1.0]))
    rec = paired._side(tree, "pegasos_epoch", data, 2)
    assert rec["solvers"] == str(tree / "solvers" / "__init__.py")
    assert rec["wall_s"] >= 0 and rec["cpu_s"] >= 0 and rec["process_s"] > 0


def test_paired_flags_a_whole_call_more_than_ten_percent_slower(monkeypatch, tmp_path):
    """A case is flagged when its wall and its CPU minima (over processes, alternating which side
    goes first) both exceed the base's by more than 10%: at 1.11x it is, at 1.09x, or with only
    the wall past it (a loaded machine), it is not."""
    from pipeline.bench import paired
    base, head = tmp_path / "base", paired._ROOT
    base.mkdir()
    times = {"a": (1.11, 1.11), "b": (1.09, 1.09), "c": (1.30, 1.00)}      # head's (wall, cpu), base's 1
    order = []

    def side(tree, call, data, calls):
        order.append((call, "base" if tree == base else "head"))
        wall, cpu = times[call] if tree == paired._ROOT else (1.0, 1.0)
        return {"wall_s": wall, "cpu_s": cpu, "process_s": 2.0, "load": 0.5}

    monkeypatch.setattr(paired, "_side", side)
    monkeypatch.setattr(paired, "write_data", lambda name, folder: folder / f"{name}.npz")
    monkeypatch.setattr(paired, "CASES", {name: ("toy", name) for name in times})
    monkeypatch.setattr(paired, "FULL_CASES", {})
    rows = paired.compare(str(base), reps=2, calls=1)
    assert [r["slower"] for r in rows] == [True, False, False]
    assert [round(r["ratio_wall"], 2) for r in rows] == [1.11, 1.09, 1.30]
    # One untimed process each, then base first, then head first.
    assert order[:6] == [("a", "base"), ("a", "head"), ("a", "base"), ("a", "head"), ("a", "head"), ("a", "base")]
