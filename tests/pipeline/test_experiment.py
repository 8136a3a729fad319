"""The typed experiment: `config.validate` reads the composed DictConfig once and returns a frozen
`Experiment`; every stage after it takes that object (pipeline/experiment/experiment.py)."""
import dataclasses
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pipeline.experiment.config import compose, typed, validate
from pipeline.experiment.experiment import Experiment, SolverEntry
from pipeline.experiment.plan import build_plan

PIPELINE = Path(__file__).resolve().parents[2] / "pipeline"


def _exp(tmp_path, *overrides):
    return validate(compose([f"store.root={tmp_path}", *overrides]))


def test_validate_returns_a_frozen_experiment(tmp_path):
    exp = _exp(tmp_path, "solvers=[dcd,smo]", "solvers.smo.grid.gamma=[0.1,1]", "solvers.smo.params.kernel=rbf")
    assert isinstance(exp, Experiment) and isinstance(exp.solvers["smo"], SolverEntry)
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.seed = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        exp.run.timeout_s = 1.0
    with pytest.raises(TypeError):
        exp.solvers["smo"].params["kernel"] = "linear"
    with pytest.raises(TypeError):
        exp.datasets["toy_blobs"] = None
    assert isinstance(exp.solvers["smo"].grid["gamma"], tuple)      # lists are tuples


def test_the_experiment_resolves_defaults_and_grid_points(tmp_path):
    exp = _exp(tmp_path, "solvers=[dcd,liblinear]", "grid.C=[0.5,2]", "++solvers.dcd.params.tol=0.01",
               f"store.root={tmp_path / 'elsewhere'}")
    assert exp.store_root == str(tmp_path / "elsewhere")
    assert {e.solver for e in exp.solvers.values()} == {"dcd", "liblinear"} and exp.solver_names() == ["dcd", "liblinear"]
    assert [dict(p) for p in exp.solvers["dcd"].points] == [{"C": 0.5}, {"C": 2}]   # the shared grid applied
    assert exp.datasets["toy_blobs"].builder == "toy_blobs"


def test_smoke_reduces_the_experiment_and_config_yaml_keeps_what_was_composed(tmp_path):
    cfg = compose([f"store.root={tmp_path}", "smoke=true", "solvers=[dcd]", "solvers.dcd.grid.C=[0.1,1,10]"])
    exp = validate(cfg)
    assert len(exp.solvers["dcd"].points) == 2 and exp.cv.folds == 2
    assert all(ds.max_rows == 300 for ds in exp.datasets.values())
    # The run dir's config.yaml: the validated config as composed, byte for byte as before.
    assert exp.to_yaml() == OmegaConf.to_yaml(typed(cfg))
    assert OmegaConf.create(exp.to_yaml()).solvers.dcd.grid.C == [0.1, 1, 10]


def test_a_stage_refuses_the_raw_config(tmp_path):
    cfg = compose([f"store.root={tmp_path}"])
    with pytest.raises(TypeError, match="build_plan takes the Experiment that config.validate returns, not a DictConfig"):
        build_plan(cfg, {})


def test_no_stage_after_validation_reads_the_dictconfig():
    """The engine, results, report, papers, data layer and the plan take no DictConfig and make
    none; run.py names it only in `run`'s signature (the composed config it hands to the preflight).
    The command lines (`command.py`, `data/cli.py`, reading yaml files of their own) and the
    preflight (`preflight.py`, the validation step's impure half) are outside."""
    uses = re.compile(r"OmegaConf\.(create|to_container|merge|structured)\(|[:>]\s*DictConfig\b|import .*\bDictConfig\b")
    offenders = []
    for path in sorted(PIPELINE.rglob("*.py")):
        rel = path.relative_to(PIPELINE).as_posix()
        if rel in ("command.py", "preflight.py", "cli.py", "data/cli.py", "experiment/config.py",
                   "experiment/experiment.py"):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if uses.search(line) and not (rel == "run.py" and re.search(r"def run\(|^from omegaconf import DictConfig$", line)):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
