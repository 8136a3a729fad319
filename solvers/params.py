"""The problem's parameters as data: one table, read by `Problem`, `SVMClassifier` and the
pipeline's config alike, so that a bad value gets the same message from each of them.

A `Param` declares one parameter: its default, its type and its range or options (in the spirit
of scikit-learn's ``_parameter_constraints`` with ``Interval`` and ``StrOptions``), and which
solvers take it. `Param.reason` says why a value is refused, in words ("must be a finite number
> -1"); `Param.check` raises with ``<key>=<value>: <reason>``, the key as the caller names it
(``huber_k`` for the estimator and `Problem`, ``solvers.dcd.params.huber_k`` on the command line).

The tables:

- `PROBLEM_PARAMS`: what defines the optimisation problem (DESIGN.md, "The problem")

      P(w, b) = 1/2 ||w||^2 + C sum_i s_i loss(y_i (w . phi(x_i) + b));

- `BUDGET_PARAMS`: a fit's stopping rule and caps (`base.Budget`);
- `TASK_PARAMS`: how more than two classes are reduced to binary problems (`multiclass`).

A solver's own parameters are `Param`s too, declared next to its driver (`registry.SolverSpec`)
and checked by the same code. This module imports nothing else of `solvers`.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable


class SolverError(ValueError):
    """A solver name, parameter or problem setting that the solver cannot take."""


def _number(v: float) -> str:
    return f"{v:g}"


def _among(options) -> str:
    return "a str among {" + ", ".join(repr(o) for o in sorted(options)) + "}"


def estimator_message(owner: str, key: str, value, why: str, constraint: str | None = None) -> str:
    """scikit-learn's sentence for a refused parameter value ("The 'C' parameter of SVC must be
    a float in the range (0.0, inf]. Got nan instead."), so that a drop-in estimator refuses a
    value in the words its users' code and scikit-learn's own tests expect. constraint: what
    the parameter takes (`Param.constraint`); None: the table's own reason `why`, for a value
    a rule refused (a class_weight's label)."""
    said = f"must be {constraint}" if constraint is not None else (why if why.startswith("must ") else f"is refused: {why}")
    return f"The {key!r} parameter of {owner} {said}. Got {value!r} instead."


@dataclass(frozen=True)
class Param:
    """One parameter: default, type and allowed range or options, and which solvers take it.

    kind: "int", "float", "bool", "str" or "any". ``low``/``high`` bound numbers
    (``open_low``/``open_high`` exclude the bound); ``finite`` refuses +-inf; ``words`` are
    strings taken beside a number (gamma's "scale" and "auto"); ``options`` lists allowed
    strings; ``none_ok`` allows None. ``rule``: for kind "any", a function value -> the reason it
    is refused, or None. ``takes``: the `SolverSpec` attribute holding the values a solver
    takes ("losses", "intercepts", "kernels"), "" when every solver takes every value;
    ``solvers`` says which solvers take the parameter, in words, for the reference table
    (docs/reference/configuration.md).
    """

    default: Any
    kind: str = "float"
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    options: tuple | None = None
    none_ok: bool = False
    doc: str = ""
    finite: bool = False
    words: tuple = ()
    rule: Callable[[Any], str | None] | None = None
    takes: str = ""
    solvers: str = "every solver"

    # ------------------------------------------------------------------ words
    def allowed(self) -> str:
        """What the parameter takes, in words: "a finite number > -1", "one of ['hinge', ...]"."""
        if self.kind == "bool":
            what = "true or false"
        elif self.kind == "str":
            what = f"one of {list(self.options or [])}"
        elif self.kind in ("int", "float"):
            noun = "an integer" if self.kind == "int" else ("a finite number" if self.finite else "a number")
            what = noun + self._bounds()
            if self.words:
                what = ", ".join(repr(w) for w in self.words) + " or " + what
        else:
            what = "any value"
        return what + (" or null" if self.none_ok else "")

    def constraint(self) -> str:
        """What the parameter takes in scikit-learn's words, as its parameter validation says them
        ("a float in the range (0.0, inf]", "a str among {'auto', 'scale'} or a float in the range
        (0.0, inf)", "an int in the range [1, inf) or None"): the estimator's message for a
        refused value is scikit-learn's sentence around these words (`estimator_message`)."""
        if self.kind == "bool":
            parts = ["an instance of 'bool'"]
        elif self.kind == "str":
            parts = [_among(self.options) if self.options else "an instance of 'str'"]
        elif self.kind in ("int", "float"):
            parts = [_among(self.words)] if self.words else []
            as_bound = int if self.kind == "int" else float
            left = "-inf" if self.low is None else repr(as_bound(self.low))
            right = "inf" if self.high is None else repr(as_bound(self.high))
            opened_left = self.open_low or self.low is None
            # An unbounded side includes inf unless the parameter is finite (C = inf: a hard margin).
            opened_right = self.open_high if self.high is not None else (self.finite or self.kind == "int")
            parts.append(f"{'an int' if self.kind == 'int' else 'a float'} in the range "
                         f"{'(' if opened_left else '['}{left}, {right}{')' if opened_right else ']'}")
        else:
            parts = ["any value"]
        if self.none_ok:
            parts.append("None")
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]

    def _bounds(self) -> str:
        low, high = self.low, self.high
        if low is not None and high is not None:
            return (f" in {'(' if self.open_low else '['}{_number(low)}, {_number(high)}"
                    f"{')' if self.open_high else ']'}")
        if low is not None:
            return f" {'>' if self.open_low else '>='} {_number(low)}"
        if high is not None:
            return f" {'<' if self.open_high else '<='} {_number(high)}"
        return ""

    # ------------------------------------------------------------------ checks
    def reason(self, value) -> str | None:
        """Why `value` is refused ("must be ..."), or None if it is allowed."""
        if value is None and self.none_ok:
            return None
        if self.rule is not None:
            return self.rule(value)
        if value is None:
            return f"must be {self.allowed()}"
        if self.kind == "bool":
            ok = isinstance(value, bool) or (isinstance(value, numbers.Integral) and value in (0, 1))
            return None if ok else f"must be {self.allowed()}"
        if self.kind == "str":
            ok = isinstance(value, str) and not (self.options and value not in self.options)
            return None if ok else f"must be {self.allowed()}"
        if self.kind in ("int", "float"):
            if isinstance(value, str) and value in self.words:
                return None
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                return f"must be {self.allowed()}"
            if self.kind == "int" and not float(value).is_integer():
                return f"must be {self.allowed()}"
            if self.finite and not math.isfinite(value):
                return f"must be {self.allowed()}"
            low, high = self.low, self.high
            if low is not None and (value < low or (self.open_low and value == low)):
                return f"must be {self.allowed()}"
            if high is not None and (value > high or (self.open_high and value == high)):
                return f"must be {self.allowed()}"
        return None

    def check(self, where: str, value, error: type[Exception] = SolverError):
        """`value` as the parameter holds it (an int, a float, a bool), or `error` with
        ``<where>=<value>: <reason>``."""
        why = self.reason(value)
        if why is not None:
            raise error(f"{where}={value!r}: {why}")
        if value is None or (isinstance(value, str) and value in self.words):
            return value
        if self.kind == "bool":
            return bool(value)
        if self.kind == "int":
            return int(value)
        if self.kind == "float":
            return float(value)
        return value

    def solver_reason(self, spec, value) -> str | None:
        """Why solver `spec` does not take `value` of this parameter (`takes`), or None."""
        if not self.takes or value is None:
            return None
        have = getattr(spec, self.takes)
        return None if value in have else f"solver {spec.name!r} takes {list(have)}"


# ---------------------------------------------------------------------- the problem
LOSSES = ("hinge", "squared_hinge", "huber_hinge")
INTERCEPTS = ("none", "regularized", "free", "basis")
# Kernels by name; `kernels.Kernel` holds one with its parameters.
KERNEL_NAMES = ("linear", "rbf", "poly")
MULTI_CLASS = ("ovr", "ovo", "ordinal")

CLASS_WEIGHT_ALLOWED = "null, 'balanced' or a mapping {label: weight > 0}"


def class_weight_reason(cw) -> str | None:
    """Why a class_weight is refused, or None: null (no weights), "balanced" (n / (n_classes
    count(class)), scikit-learn's rule) or a mapping label -> a finite weight > 0. Which labels
    are valid is the caller's (a binary problem's -1 and 1, the estimator's classes)."""
    if cw is None or cw == "balanced":
        return None
    if not isinstance(cw, Mapping):
        return f"must be {CLASS_WEIGHT_ALLOWED}"
    for label, w in cw.items():
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not (math.isfinite(w) and w > 0):
            return f"the weight of label {label} must be a finite number > 0"
    return None


PROBLEM_PARAMS: dict[str, Param] = {
    # C = inf is a hard margin, for the solvers that declare one (`SolverSpec.hard_margin`).
    "C": Param(1.0, "float", low=0.0, open_low=True, doc="penalty of the loss term; inf: a hard margin"),
    "loss": Param("hinge", "str", options=LOSSES, takes="losses", solvers="solvers whose `losses` hold it",
                  doc="hinge (L1-SVM), squared_hinge (L2-SVM) or huber_hinge (Groenen et al. 2008, eq. (4))"),
    "intercept": Param("none", "str", options=INTERCEPTS, takes="intercepts",
                       solvers="solvers whose `intercepts` hold it",
                       doc="none, regularized (a constant feature), free (unpenalised) or basis (set after training)"),
    "intercept_scaling": Param(1.0, "float", low=0.0, open_low=True, finite=True,
                               solvers="solvers with intercept=regularized",
                               doc="the constant feature B of a regularized intercept (LIBLINEAR's bias)"),
    "kernel": Param("linear", "str", options=KERNEL_NAMES, takes="kernels", solvers="solvers whose `kernels` hold it",
                    doc="k(x, z): x.z, exp(-gamma ||x - z||^2) or (gamma x.z + coef0)^degree"),
    "gamma": Param("scale", "float", low=0.0, open_low=True, finite=True, words=("scale", "auto"),
                   solvers="kernel solvers, kernel rbf or poly",
                   doc="scale: 1 / (n_features var(X)); auto: 1 / n_features (SVC's)"),
    "degree": Param(3, "int", low=1, solvers="kernel solvers, kernel poly", doc="the polynomial kernel's degree"),
    "coef0": Param(0.0, "float", finite=True, solvers="kernel solvers, kernel poly",
                   doc="the polynomial kernel's constant"),
    # Groenen, Nalbantov and Bioch 2008, eq. (4): the Huber hinge is quadratic on -k < y f <= 1,
    # defined for every k > -1 (k = -1 would make that interval empty and the loss non-smooth).
    "huber_k": Param(1.0, "float", low=-1.0, open_low=True, finite=True, solvers="solvers with loss=huber_hinge",
                     doc="the Huber hinge's k: quadratic on -k < y f <= 1"),
    "class_weight": Param(None, "any", none_ok=True, rule=class_weight_reason,
                          solvers="solvers that weigh rows (`sample_weight`)",
                          doc="each row's loss term times its class's weight (a box C w_y in the dual)"),
}

BUDGET_PARAMS: dict[str, Param] = {
    "tol": Param(1e-4, "float", low=0.0, open_low=True, doc="the solver's own stopping tolerance"),
    "max_iter": Param(None, "int", low=1, none_ok=True, doc="iteration cap in the solver's unit (null: its default)"),
    "time_limit_s": Param(None, "float", low=0.0, open_low=True, finite=True, none_ok=True,
                          doc="wall-clock cap of one fit, in seconds (status timeout)"),
}

TASK_PARAMS: dict[str, Param] = {
    "multi_class": Param("ovr", "str", options=MULTI_CLASS,
                         doc="more than two classes: one-vs-rest, one-vs-one or the ordinal chain"),
}


def check(key: str, value, where: str | None = None, error: type[Exception] = SolverError):
    """`value` of the problem, budget or task parameter `key` checked against the tables,
    the message naming it as `where` (default: key)."""
    param = PROBLEM_PARAMS.get(key) or BUDGET_PARAMS.get(key) or TASK_PARAMS[key]
    return param.check(where or key, value, error)
