"""The problem's parameters have one table (solvers/params.py): the estimator, `Problem` and the
pipeline's config check a value against it, so a bad value is refused by each in the table's
words (the estimator in scikit-learn's sentence around them, the config naming the key as set),
and a value one accepts the other accepts too."""

import numpy as np
import pytest

from pipeline.experiment.config import ConfigError, compose, validate
from solvers import SVMClassifier
from solvers.params import BUDGET_PARAMS, PROBLEM_PARAMS, TASK_PARAMS, estimator_message
from solvers.problem import Problem, ProblemError

from .test_bad_input import _cli

TABLE = {**PROBLEM_PARAMS, **BUDGET_PARAMS, **TASK_PARAMS}
X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [2.0, 1.0], [1.0, 2.0]])
Y = np.array([1, -1, 1, -1, 1, -1])

# (key, a bad value as the estimator takes it, the same value on the command line)
BAD = [
    ("huber_k", -2, "-2"),
    ("C", 0, "[0]"),        # dcd's yaml sweeps C: set in its grid, named so
    ("tol", -1, "-1"),
    ("loss", "log", "log"),
    ("intercept", "yes", "yes"),
    ("intercept_scaling", 0, "0"),
    ("max_iter", 0, "0"),
    ("degree", 0, "0"),
    ("class_weight", "heavy", "heavy"),
    ("multi_class", "one", "one"),
]


def _estimator_message(key, value) -> str:
    with pytest.raises(ValueError) as err:
        SVMClassifier(solver="dcd", **{key: value}).fit(X, Y)
    return str(err.value)


def _table_message(key, value) -> str:
    """What the table says of a refused value, the key named as set: `key=value: why`."""
    return f"{key}={value!r}: {TABLE[key].reason(value)}"


@pytest.mark.parametrize("key, value, text", BAD, ids=[b[0] for b in BAD])
def test_a_bad_value_is_refused_by_the_estimator_and_the_config_in_the_tables_words(tmp_path, key, value, text):
    """The estimator says it in scikit-learn's sentence around the table's words (what a drop-in
    estimator's users and scikit-learn's tests expect: "The 'C' parameter of SVMClassifier must
    be a float in the range (0.0, inf]. Got 0 instead."); the config names the key as set."""
    param = TABLE[key]
    assert param.reason(value) is not None
    said = None if param.rule is not None else param.constraint()
    assert _estimator_message(key, value) == estimator_message("SVMClassifier", key, value, param.reason(value), said)
    level = "grid" if text.startswith("[") else "params"
    with pytest.raises(ConfigError) as err:
        validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd]",
                          f"solvers.dcd.{level}.{key}={text}"]))
    assert str(err.value) == f"solvers.dcd.{level}.{_table_message(key, value)}"


def test_the_command_line_says_it_in_one_line(tmp_path):
    message = _table_message("huber_k", -2)
    p = _cli(tmp_path / "run", "datasets=[toy_blobs]", "solvers=[svmmaj]", "solvers.svmmaj.params.loss=huber_hinge",
             "solvers.svmmaj.params.huber_k=-2", store_root=tmp_path / "store")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.strip().splitlines() == [f"error: invalid configuration: solvers.svmmaj.params.{message}"]


def test_a_value_in_groenens_range_is_taken_by_every_front(tmp_path):
    """huber_k in (-1, 0]: the Huber hinge of Groenen, Nalbantov and Bioch (2008, eq. (4)) is
    defined for every k > -1; the config once asked k > 0 while the estimator took k > -1."""
    SVMClassifier(solver="svmmaj", loss="huber_hinge", huber_k=-0.5).fit(X, Y)
    Problem(X, Y.astype(float), loss="huber_hinge", huber_k=-0.5)
    exp = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[svmmaj]",
                            "solvers.svmmaj.params.loss=huber_hinge", "solvers.svmmaj.params.huber_k=-0.5"]))
    assert exp.solvers["svmmaj"].params["huber_k"] == -0.5
    with pytest.raises(ProblemError, match=r"huber_k=-1.0: must be a finite number > -1"):
        Problem(X, Y.astype(float), loss="huber_hinge", huber_k=-1.0)
