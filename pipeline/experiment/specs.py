"""Task specs, typed: what the plan makes and a task runs (`FitSpec`: a fit of the sweep, or a
timing fit, whose `timing` is set; `ReferenceSpec`: a certified solve of a fit's problem), and
what a spec's data settings make of a dataset's labels: its rows and folds (`data_split`).

Both the plan (pipeline/experiment/plan.py), which keys specs and checks the folds before any
task, and the task bodies (pipeline/engine/tasks.py), which extract a fold's rows on a worker,
read the folds here: the worker recomputes exactly the client's folds from the data settings
and the seed instead of receiving index arrays inside every task, and neither imports the other.

A spec is a `typing.NamedTuple`: immutable, with no per-instance dict (its class has empty
``__slots__``), its fields named and typed. Not a frozen dataclass: its ``__init__`` sets every
field through ``object.__setattr__``, and the client makes a spec per fit as it cuts tasks
(a million in a large sweep): a frozen dataclass of these fields costs several times the dict
it replaces, a tuple made from its values (`tuple.__new__`, as `_make` does) less than it.

A spec also reads as the dict it is written as: `as_dict()` (the shards' ``spec.<field>``
columns, `results.shards`), ``spec["path"]``, ``spec.get("timing")``, ``"timing" in spec``,
`keys()` and `items()`,
with a field that is None left out unless it is one of the fields every spec of its kind
carries (`ALWAYS`): the dict the plan's specs were, key for key and in that order, which the
keys hash (`plan.canonical_json`) and the shards store. Sub-dicts (data, problem, budget, ...)
are plain dicts shared by the specs of a grid point: read them, never change them.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class FitSpec(NamedTuple):
    """One fit: a solver entry's grid point on one fold of one dataset (a timing fit: `timing` set)."""

    data: dict                  # the data settings (`data_split`): entry, name, fingerprint, scale, cv, seeds
    fold: int
    solver_entry: str
    solver: str
    solver_version: str
    family: str
    problem: dict               # C or lambda, loss, intercept, kernel and its parameters
    budget: dict                # tol, max_iter, time_limit_s (time_repeats, train_fraction when set)
    solver_params: dict
    task: dict                  # multi_class and the like
    grid_point: dict
    trace: dict                 # enabled, per_decade (test_error, max_overhead when set)
    warm_start: bool            # a point of a C path, warm from the one before
    keep_model: bool | None = None
    cv_bound: bool | str | None = None  # a certified search reads its CV bound's certificate ("single": no pair bound)
    keep_state: bool | None = None     # a halving search starts its next rung from its model
    path_stop: dict | None = None      # search=path: the settings of LIBLINEAR's stopping test
    gap_rule: dict | None = None       # search=heldout: each fit's tolerance from epsilon
    plugin: dict | None = None         # the plugin that registers its solver: source, sha256
    timing: dict | None = None         # a timing fit: method (trace or ladder), per_decade, ...
    key: str = ""
    seed: int = 0
    path: str | None = None            # its C path (the specs that differ only in C)
    # Outside the key: what travels with the spec to its worker.
    plugin_text: str | None = None     # the plugin's file, for a worker that lacks it
    search: dict | None = None         # a search's round and point
    warm_state: dict | None = None     # a search's warm start per fold
    reference_key: str | None = None
    ladder: dict | None = None         # what a timing ladder is handed (engine/handover.py)
    template: int = -1                 # its grid point's index in the plan (written nowhere)

    kind = "fit"

    @property
    def is_timing(self) -> bool:
        return self.timing is not None

    @property
    def is_ladder(self) -> bool:
        return self.timing is not None and self.timing.get("method") == "ladder"


class ReferenceSpec(NamedTuple):
    """The certified solve of a problem on one fold: its f* and certificate (plan.py, "references")."""

    data: dict
    fold: int
    problem: dict
    solver: str
    solver_version: str
    budget: dict
    key: str = ""
    seed: int = 0
    path: str | None = None
    template: int = -1

    kind = "reference"

    # A fit's fields a reference has none of, read as a fit's unset ones (never in its dict).
    solver_entry = family = solver_params = task = grid_point = trace = None
    keep_model = cv_bound = keep_state = plugin = timing = None
    plugin_text = search = warm_state = reference_key = ladder = None
    is_timing = is_ladder = False


Spec = FitSpec | ReferenceSpec

# Fields every spec of a kind carries, None or not; the others only when set. `template` is the
# plan's own bookkeeping: never in a spec's dict.
ALWAYS = {
    FitSpec: frozenset(FitSpec._fields[:13] + ("key", "seed", "path", "reference_key")),
    ReferenceSpec: frozenset(ReferenceSpec._fields[:-1]),
}
# Fields that travel to the workers only: a file plugin's text (its sha256 names it), a search's
# warm starts (the models they come from are in their own records) and what a timing ladder is
# handed (f* and its sweep twin, in theirs): never in a shard.
TRANSPORT_ONLY = frozenset({"plugin_text", "warm_state", "ladder"})
# A field's place in its spec, by name (`template` is none of the dict's).
_INDEX = {cls: {name: i for i, name in enumerate(cls._fields) if name != "template"} for cls in ALWAYS}


def _as_dict(self, stored: bool = False) -> dict:
    """The spec as the dict it is written as (module docstring); stored: as a shard stores it,
    without its key (the record's own) and the fields that travel to the workers only."""
    always = ALWAYS[type(self)]
    out = {"kind": self.kind}
    for name, value in zip(self._fields, self):
        if (value is not None or name in always) and name != "template":
            out[name] = value
    if stored:
        out.pop("key")
        for name in TRANSPORT_ONLY & out.keys():
            del out[name]
    return out


def _getitem(self, name):
    """spec["field"] as the spec's dict reads (module docstring); an int indexes the tuple."""
    if not isinstance(name, str):
        return tuple.__getitem__(self, name)
    if name == "kind":
        return self.kind
    index = _INDEX[type(self)].get(name)
    if index is None:
        raise KeyError(name)
    value = tuple.__getitem__(self, index)
    if value is None and name not in ALWAYS[type(self)]:
        raise KeyError(name)
    return value


def _contains(self, name) -> bool:
    try:
        _getitem(self, name)
    except (KeyError, TypeError):
        return False
    return True


def _get(self, name: str, default=None):
    try:
        return _getitem(self, name)
    except KeyError:
        return default


def _keys(self):
    return self.as_dict().keys()


def _items(self):
    return self.as_dict().items()


for _cls in (FitSpec, ReferenceSpec):
    _cls.as_dict, _cls.__getitem__, _cls.__contains__, _cls.get = _as_dict, _getitem, _contains, _get
    _cls.keys, _cls.items = _keys, _items
del _cls


def spec_from_dict(spec: dict) -> Spec:
    """The typed spec of a spec's dict (as `as_dict` gives it, or a shard's ``spec`` read back
    with its record's key): for a caller that holds the dict, a test or a notebook."""
    cls = ReferenceSpec if spec.get("kind") == "reference" else FitSpec
    unknown = spec.keys() - set(cls._fields) - {"kind"}
    if unknown:
        raise TypeError(f"a {cls.kind} spec has no field {', '.join(sorted(unknown))}")
    return cls(**{k: v for k, v in spec.items() if k != "kind"})


# ------------------------------------------------------------------------ rows and folds
def data_split(y: np.ndarray, data: dict):
    """(the rows used, their labels as -1/+1 for two classes, the classes, the folds, the held-out
    rows) of a data setting over a dataset's labels y: its stratified subsample (max_rows, from
    rows_seed), binary labels (positive) and its CV scheme's folds and held-out rows (cv, from
    folds_seed). What the plan checks, and what a worker extracts a fold's rows by."""
    index = subsample_rows(y, data["max_rows"], data["rows_seed"])
    y_bin, classes = binary_labels(y[index], data["positive"])
    return (index, y_bin, classes, make_folds(y_bin, data["cv"], data["folds_seed"]),
            heldout_rows(y_bin, data["cv"], data["folds_seed"]))


def subsample_rows(y: np.ndarray, max_rows: int | None, seed: int) -> np.ndarray:
    """A stratified random subset of at most max_rows rows (all rows if None), sorted."""
    n = len(y)
    if max_rows is None or max_rows >= n:
        return np.arange(n)
    from sklearn.model_selection import train_test_split
    keep, _ = train_test_split(np.arange(n), train_size=max_rows, stratify=y, random_state=seed)
    return np.sort(keep)


def make_folds(y: np.ndarray, cv: dict, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) index arrays for the CV scheme: stratified k-fold, one stratified holdout,
    `rounds` repeated stratified random splits, ``none`` (train on all, empty test), ``ordered``
    (the first n_train rows train, the rest test, order kept: rupnik 4.4's RCV1 split), or
    ``kfold_test``: stratified k-fold over the rows left after a held-out test set
    (`heldout_rows`), whose folds' "test" is then the validation fold."""
    n = len(y)
    idx = np.arange(n)
    kind = cv["kind"]
    if kind == "none":
        return [(idx, idx[:0])]
    if kind == "ordered":
        return [ordered_split(n, cv["n_train"])]
    if kind == "kfold":
        return _kfold(y, cv, seed)
    if kind == "kfold_test":
        rest = np.setdiff1d(idx, heldout_rows(y, cv, seed))
        return [(rest[tr], rest[va]) for tr, va in _kfold(y[rest], cv, seed)]
    rounds = 1 if kind == "holdout" else int(cv["rounds"])
    return shuffle_splits(y, rounds, float(cv["test_size"]), seed)


def shuffle_splits(y: np.ndarray, rounds: int, test_size: float, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """StratifiedShuffleSplit(rounds, test_size=test_size, random_state=seed)'s rounds, sorted:
    the same random draws in the same order, so the same rows, with each round built from
    arrays. scikit-learn builds a round's rows as Python lists, slow for many rounds of many rows
    (scenario (c)'s 250 rounds: The sweep benchmark, "What is left"), and the client's
    planning and every worker's first task paid it.
    Anything outside the plain case (a class of one row, a test size that is not a fraction, a
    scikit-learn without `_approximate_mode`) goes to scikit-learn itself, errors included."""
    from sklearn.model_selection import StratifiedShuffleSplit
    from sklearn.utils import check_random_state
    try:
        from sklearn.utils.extmath import _approximate_mode
    except ImportError:
        _approximate_mode = None
    n = len(y)
    _, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    n_test = math.ceil(test_size * n) if 0 < test_size < 1 else 0
    n_train = n - n_test
    if _approximate_mode is None or counts.min() < 2 or min(n_train, n_test) < len(counts):
        split = StratifiedShuffleSplit(n_splits=rounds, test_size=test_size, random_state=seed)
        return [(np.sort(tr), np.sort(te)) for tr, te in split.split(np.zeros(n), y)]
    members = np.split(np.argsort(inverse, kind="stable"), np.cumsum(counts)[:-1])
    rng = check_random_state(seed)
    out = []
    for _ in range(rounds):
        # scikit-learn's _iter_indices, draw for draw: each class's share of the train and test
        # rows (ties broken anew each round), a permutation of each class, then a shuffle of the
        # round's train and of its test rows, which only the next rounds' draws depend on here.
        n_i = _approximate_mode(counts, n_train, rng)
        t_i = _approximate_mode(counts - n_i, n_test, rng)
        train, test = [], []
        for i, rows in enumerate(members):
            perm = rows.take(rng.permutation(counts[i]), mode="clip")
            train.append(perm[:n_i[i]])
            test.append(perm[n_i[i]:n_i[i] + t_i[i]])
        train, test = np.concatenate(train), np.concatenate(test)
        rng.shuffle(train)
        rng.shuffle(test)
        out.append((np.sort(train), np.sort(test)))
    return out


def _kfold(y: np.ndarray, cv: dict, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """StratifiedKFold(folds, shuffle, random_state=seed)'s folds, sorted, without importing
    scikit-learn: its `_make_test_folds`, step for step (the same draws from the same
    RandomState, so the same rows; tests/pipeline/test_folds.py holds it to scikit-learn's own).
    The import (scipy.stats, pandas-free but slow) was the only thing a binary k-fold plan and a
    worker's sandbox needed scikit-learn for, and both are on the path from command to first
    task, a command's fixed cost (The sweep benchmark, "The fixed cost of a command").

    Each class's rows go to the folds in blocks, the fold sizes of a class taken round robin
    over the sorted labels (so fold sizes differ by at most one, class by class); with shuffle
    the fold labels of each class are permuted, class after class in order of appearance."""
    folds = int(cv["folds"])
    _, first, inverse = np.unique(y, return_index=True, return_inverse=True)
    if min(np.bincount(inverse)) < folds:
        raise ValueError(f"cv.folds={folds}: the smallest class has only {min(np.bincount(inverse))} rows")
    # Classes numbered by first appearance, as scikit-learn numbers them (the order of the draws).
    encoded = np.unique(first, return_inverse=True)[1][inverse.ravel()]
    n_classes = len(first)
    ordered = np.sort(encoded)
    allocation = np.asarray([np.bincount(ordered[i::folds], minlength=n_classes) for i in range(folds)])
    rng = np.random.RandomState(seed) if cv["shuffle"] else None
    test_fold = np.empty(len(y), dtype=np.intp)
    for k in range(n_classes):
        fold_of_row = np.arange(folds).repeat(allocation[:, k])
        if rng is not None:
            rng.shuffle(fold_of_row)
        test_fold[encoded == k] = fold_of_row
    return [(np.flatnonzero(test_fold != i), np.flatnonzero(test_fold == i)) for i in range(folds)]


def heldout_rows(y: np.ndarray, cv: dict, seed: int) -> np.ndarray:
    """The rows no fold trains or validates on (``kfold_test``: a stratified `test_size` share,
    drawn from the same seed as the folds; every fold's model is also scored on them), sorted;
    empty for the other schemes."""
    if cv["kind"] != "kfold_test":
        return np.arange(0)
    from sklearn.model_selection import StratifiedShuffleSplit
    split = StratifiedShuffleSplit(n_splits=1, test_size=float(cv["test_size"]), random_state=seed)
    _, test = next(split.split(np.zeros(len(y)), y))
    return np.sort(test)


def ordered_split(n: int, n_train) -> tuple[np.ndarray, np.ndarray]:
    """The first rows train, the rest test, in their stored order (no shuffle, no stratification).
    n_train: a row count, or a fraction of n (rounded to the nearest row)."""
    rows = round(n_train * n) if isinstance(n_train, float) else int(n_train)
    if not 1 <= rows < n:
        raise ValueError(f"cv.n_train={n_train!r}: {rows} training rows of {n}; an ordered split needs at "
                         f"least one training and one test row (a fraction adapts to the data's size)")
    idx = np.arange(n)
    return idx[:rows], idx[rows:]


def binary_labels(y: np.ndarray, positive) -> tuple[np.ndarray, list]:
    """Classes and, for two classes, y as -1/+1 (`positive`, default the larger label, is +1)."""
    classes = np.unique(y)
    if len(classes) != 2:
        return y, classes.tolist()
    pos = classes[1] if positive is None else positive
    if pos not in classes:
        raise ValueError(f"positive={positive!r} is not one of the labels {classes.tolist()}")
    return np.where(y == pos, 1.0, -1.0), classes.tolist()

