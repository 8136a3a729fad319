"""solvers/params.py: a `Param` refuses exactly the values outside its declared range, and says
what it takes in the words every front (Problem, SVMClassifier, the config) repeats."""
import math

import numpy as np
import pytest

from solvers.params import PROBLEM_PARAMS, Param, SolverError


@pytest.mark.parametrize("param, good, bad, words", [
    (Param(1.0, "float", low=0.0, open_low=True), [1e-300, 5, np.float32(2.0), math.inf],
     [0, 0.0, -1, math.nan, True, "1"], "a number > 0"),
    (Param(1.0, "float", low=-1.0, open_low=True, finite=True), [-0.999, 0, 3], [-1, -1.5, math.inf],
     "a finite number > -1"),
    (Param(3, "int", low=1), [1, 7, 2.0, np.int64(4)], [0, 1.5, "3", None], "an integer >= 1"),
    (Param(None, "int", low=1, none_ok=True), [None, 1], [0], "an integer >= 1 or null"),
    (Param(0.5, "float", low=0.0, high=1.0, open_low=True), [1.0, 0.5], [0.0, 1.01], "a number in (0, 1]"),
    (Param(0.5, "float", low=0.0, high=1.0, open_high=True), [0.0, 0.5], [-0.01, 1.0], "a number in [0, 1)"),
    (Param(0.5, "float", high=1.0), [1.0, -5], [1.01, math.nan], "a number <= 1"),
    (Param(0.5, "float", high=1.0, open_high=True), [0.99, -5], [1.0, 2], "a number < 1"),
    (Param(0.5, "float"), [-1e300, 0, math.inf], [math.nan, None, "0.5"], "a number"),
    (Param(3, "int", low=1, open_low=True), [2], [1, 0], "an integer > 1"),
    (Param("scale", "float", low=0.0, open_low=True, finite=True, words=("scale", "auto")), ["scale", "auto", 0.1],
     ["big", 0, math.inf], "'scale', 'auto' or a finite number > 0"),
    (Param("a", "str", options=("a", "b")), ["a", "b"], ["c", 1, None], "one of ['a', 'b']"),
    (Param(False, "bool"), [True, False, 0, 1], [2, "yes"], "true or false"),
    (Param(None, "any", rule=lambda v: None if v != "bad" else "must be any value"), [1, "x"], ["bad"], "any value"),
])
def test_a_param_refuses_exactly_what_is_outside_its_range(param, good, bad, words):
    assert param.allowed() == words
    for v in good:
        assert param.reason(v) is None, v
    for v in bad:
        assert param.reason(v) == f"must be {words}", v
        with pytest.raises(SolverError, match=f"^x={v!r}: must be "):
            param.check("x", v)


def test_check_returns_the_value_as_the_param_holds_it():
    assert Param(3, "int", low=1).check("d", 2.0) == 2 and isinstance(Param(3, "int").check("d", 2.0), int)
    assert isinstance(Param(1.0).check("C", 2), float) and Param(False, "bool").check("p", 1) is True
    assert PROBLEM_PARAMS["gamma"].check("gamma", "auto") == "auto"
    with pytest.raises(ValueError, match=r"^huber_k=-1: must be a finite number > -1$"):
        PROBLEM_PARAMS["huber_k"].check("huber_k", -1, ValueError)


def test_a_word_is_taken_as_it_is_and_only_a_listed_word():
    """`check` hands a listed word back unconverted; any other string is refused, never passed on."""
    gamma = PROBLEM_PARAMS["gamma"]
    assert gamma.check("gamma", "scale") == "scale" and gamma.check("gamma", 2) == 2.0
    with pytest.raises(SolverError, match=r"^gamma='big': must be 'scale', 'auto' or a finite number > 0$"):
        gamma.check("gamma", "big")


def test_a_solver_takes_a_loss_only_if_it_declares_it():
    """`solver_reason` reads the solver's own list (`takes`): None for a value it holds, for None
    (the solver's default) and for a parameter no solver declares; else the solver and its list."""
    from types import SimpleNamespace
    spec = SimpleNamespace(name="s", losses=("hinge",))
    loss, C = PROBLEM_PARAMS["loss"], PROBLEM_PARAMS["C"]
    assert loss.solver_reason(spec, "hinge") is None and loss.solver_reason(spec, None) is None
    assert loss.solver_reason(spec, "squared_hinge") == "solver 's' takes ['hinge']"
    assert C.solver_reason(spec, 5.0) is None


def test_the_module_check_finds_each_table_and_names_the_place():
    from solvers import params
    assert params.check("degree", 2.0) == 2 and params.check("max_iter", None) is None
    assert params.check("multi_class", "ovo") == "ovo"
    with pytest.raises(ValueError, match=r"^budget.tol=0: must be a number > 0$") as raised:
        params.check("tol", 0, where="budget.tol", error=ValueError)
    assert type(raised.value) is ValueError         # the caller's class, not SolverError (a ValueError too)
    with pytest.raises(SolverError, match=r"^C=-1: must be a number > 0$"):
        params.check("C", -1)


def test_class_weight_takes_null_balanced_or_positive_weights():
    cw = PROBLEM_PARAMS["class_weight"]
    for good in (None, "balanced", {-1: 2.0, 1: 0.5}, {"a": 1}):
        assert cw.reason(good) is None
    assert cw.reason("heavy") == "must be null, 'balanced' or a mapping {label: weight > 0}"
    assert cw.reason({-1: 0}) == "the weight of label -1 must be a finite number > 0"
    assert cw.reason({1: math.inf}) == "the weight of label 1 must be a finite number > 0"
    assert cw.reason({1: True}) == "the weight of label 1 must be a finite number > 0"     # a bool is no weight


@pytest.mark.parametrize("param, said, sklearn_words", [
    (Param(1.0, "float", low=0.0, open_low=True, finite=True), "a float in the range (0.0, inf)",
     ("Interval", "Real", 0.0, None, "neither")),
    (Param(1.0, "float", low=0.0, finite=True), "a float in the range [0.0, inf)", ("Interval", "Real", 0.0, None, "left")),
    # Not finite: C = inf (a hard margin) is taken, so the range closes at inf, where scikit-learn's never does.
    (Param(1.0, "float", low=0.0, open_low=True), "a float in the range (0.0, inf]", None),
    (Param(1.0, "float"), "a float in the range (-inf, inf]", None),
    (Param(0.5, "float", low=0.0, high=1.0, open_low=True), "a float in the range (0.0, 1.0]",
     ("Interval", "Real", 0.0, 1.0, "right")),
    (Param(0.5, "float", low=0.0, high=1.0, open_high=True), "a float in the range [0.0, 1.0)",
     ("Interval", "Real", 0.0, 1.0, "left")),
    (Param(0.5, "float", high=1.0, finite=True), "a float in the range (-inf, 1.0]", ("Interval", "Real", None, 1.0, "right")),
    (Param(0.5, "float", high=1.0, open_high=True), "a float in the range (-inf, 1.0)", ("Interval", "Real", None, 1.0, "neither")),
    (Param(3, "int", low=1), "an int in the range [1, inf)", ("Interval", "Integral", 1, None, "left")),
    (Param(3, "int", low=1, open_low=True), "an int in the range (1, inf)", ("Interval", "Integral", 1, None, "neither")),
    (Param(3, "int", low=1, high=9), "an int in the range [1, 9]", ("Interval", "Integral", 1, 9, "both")),
    (Param(None, "int", low=1, none_ok=True), "an int in the range [1, inf) or None", None),
    (Param("scale", "float", low=0.0, open_low=True, finite=True, words=("scale", "auto")),
     "a str among {'auto', 'scale'} or a float in the range (0.0, inf)", None),
    (Param("scale", "float", low=0.0, open_low=True, finite=True, words=("scale",), none_ok=True),
     "a str among {'scale'}, a float in the range (0.0, inf) or None", None),
    # Sorted, where scikit-learn's order is its set's (a hash's): compared with theirs on one option.
    (Param("b", "str", options=("b", "a")), "a str among {'a', 'b'}", None),
    (Param("a", "str", options=("a",)), "a str among {'a'}", ("StrOptions", {"a"})),
    (Param("b", "str"), "an instance of 'str'", ("type", str)),
    (Param(False, "bool"), "an instance of 'bool'", ("type", bool)),
    (Param(None, "any", rule=lambda v: None), "any value", None),
    (Param(None, "any", none_ok=True), "any value or None", None),
])
def test_a_params_constraint_is_said_in_scikit_learns_words(param, said, sklearn_words):
    """What the estimator's refusal says the parameter takes (`Param.constraint`): each kind,
    bound, open or closed side, words beside a number and None, pinned; where scikit-learn has the
    same constraint, its own words (`sklearn.utils._param_validation`) are ours."""
    assert param.constraint() == said
    if sklearn_words is not None:
        from numbers import Integral, Real

        from sklearn.utils._param_validation import Interval, StrOptions, make_constraint
        kind, *args = sklearn_words
        if kind == "Interval":
            number, low, high, closed = args
            theirs = Interval(Real if number == "Real" else Integral, low, high, closed=closed)
        elif kind == "StrOptions":
            theirs = StrOptions(args[0])
        else:
            theirs = make_constraint(args[0])
        assert str(theirs) == said


def test_a_refusal_is_scikit_learns_sentence_around_the_constraint_or_the_reason():
    """`estimator_message`: "The '<key>' parameter of <owner> must be <constraint>. Got <value!r>
    instead." (scikit-learn's `InvalidParameterError`); without a constraint (a value a rule
    refused), the reason where it says "must ..." itself, else after "is refused:"."""
    from solvers.params import estimator_message
    assert estimator_message("SVC", "C", 0, "must be a number > 0", "a float in the range (0.0, inf]") == \
        "The 'C' parameter of SVC must be a float in the range (0.0, inf]. Got 0 instead."
    assert estimator_message("SVMClassifier", "class_weight", {1: -1}, "must be positive weights") == \
        "The 'class_weight' parameter of SVMClassifier must be positive weights. Got {1: -1} instead."
    assert estimator_message("SVMClassifier", "class_weight", "x", "label 3 is not a class") == \
        "The 'class_weight' parameter of SVMClassifier is refused: label 3 is not a class. Got 'x' instead."
