"""Config validation and planning: bad settings fail before any task runs, naming the key;
task keys are deterministic hashes pinned here."""
import numpy as np
import pytest
from hydra.errors import ConfigCompositionException, HydraException
from omegaconf.errors import ValidationError

from pipeline.experiment.config import ConfigError, compose, grid_points, validate
from pipeline.experiment.plan import build_plan, canonical_json, spec_key
from pipeline.experiment.specs import make_folds
from pipeline.run import materialise_datasets


def _cfg(tmp_path, *overrides):
    return compose([f"store.root={tmp_path}", *overrides])


def test_default_config_composes_and_validates(tmp_path):
    cfg = _cfg(tmp_path)
    assert set(cfg.datasets) == {"toy_blobs", "breast_cancer", "digits_1v7"}
    assert set(cfg.solvers) == {"dcd", "liblinear", "smo", "libsvm"} and cfg.cv.kind == "kfold" and cfg.cluster.kind == "local"
    validate(cfg)


def test_unknown_solver_group_option_lists_choices(tmp_path):
    with pytest.raises(ConfigError, match=r"solvers='nosuch': no such option; available: .*dcd"):
        _cfg(tmp_path, "solvers=[dcd,nosuch]")
    with pytest.raises(ConfigError, match=r"datasets='nope': no such option; available: .*toy_blobs"):
        _cfg(tmp_path, "datasets=nope")


@pytest.mark.parametrize("override, match", [
    ("solvers.dcd.grid.C=[1,-2]", r"solvers.dcd.grid.C=-2: must be a number > 0"),
    ("solvers.dcd.params.loss=log", r"solvers.dcd.params.loss='log'"),
    ("+solvers.dcd.params.shrink=true", r"no parameter 'shrink'"),
    ("solvers.dcd.params.stop=never", r"dcd.stop='never'"),
    ("solvers.dcd.params.intercept=free", r"intercept='free': solver 'dcd' takes"),
    ("cv.folds=1", r"cv.folds=1"),
    ("cv.kind=loo", r"cv.kind='loo'"),
    ("cluster.kind=mpi", r"cluster.kind='mpi'"),
    ("datasets.toy_blobs.scale=log", r"datasets.toy_blobs.scale='log'"),
    ("run.timeout_s=0", r"run.timeout_s=0"),
])
def test_invalid_values_name_key_and_value(tmp_path, override, match):
    cfg = _cfg(tmp_path, override)
    with pytest.raises(ConfigError, match=match):
        validate(cfg)


def test_a_store_entry_the_store_lacks_is_refused_by_the_preflight(tmp_path):
    """`validate` reads the config only; whether the store holds an entry is asked once, by the
    preflight, before any directory or task, with one line naming the entry, the builders and
    what the store holds."""
    from pipeline.preflight import preflight
    cfg = _cfg(tmp_path, "datasets.toy_blobs.builder=nosuch")
    assert validate(cfg).datasets["toy_blobs"].builder == "nosuch"
    with pytest.raises(ConfigError, match=r"^datasets.toy_blobs.builder='nosuch': unknown dataset; builders: "
                                          r".*toy_blobs.*; in the store: \(none\)$"):
        preflight(cfg)


def test_wrong_type_is_refused_by_the_schema(tmp_path):
    with pytest.raises((ValidationError, ConfigCompositionException, HydraException), match="folds"):
        _cfg(tmp_path, "cv.folds=five")


def test_new_solver_entry_from_the_command_line(tmp_path):
    cfg = validate(_cfg(tmp_path, "+solvers.dcd_l2={solver: dcd, params: {loss: squared_hinge}, grid: {C: [1, 2]}}"))
    assert cfg.solvers["dcd_l2"].solver == "dcd" and list(cfg.solvers["dcd_l2"].grid["C"]) == [1, 2]
    with pytest.raises(ConfigError, match=r"solvers.bad.colour: unknown key; valid: solver, params, grid"):
        validate(_cfg(tmp_path, "+solvers.bad={solver: dcd, colour: red}"))


def test_grid_product_and_zip():
    pts = grid_points({"C": [1, 10], "loss": ["hinge", "squared_hinge"]}, "g")
    assert len(pts) == 4 and {"C": 10, "loss": "hinge"} in pts
    pts = grid_points({"C": [1, 2], "zip": {"gamma": [0.1, 0.2, 0.3], "degree": [2, 3, 4]}}, "g")
    assert len(pts) == 6 and {"C": 2, "gamma": 0.3, "degree": 4} in pts
    with pytest.raises(ConfigError, match="differ in length"):
        grid_points({"zip": {"a": [1, 2], "b": [1]}}, "g")


def test_keys_are_pinned_and_canonical():
    # Equal configs give equal keys however they were written; a change gives another key.
    assert canonical_json({"b": 1.0, "a": [1, float("inf")]}) == '{"a":[1,"inf"],"b":1.0}'
    assert spec_key({"a": 1, "b": 2.0}) == spec_key({"b": 2.0, "a": 1})
    assert spec_key({"a": 1, "b": 2.0}) != spec_key({"a": 1, "b": 2.5})
    # Pinned: changing the hashing rules would orphan every existing run directory's shards.
    assert spec_key({"solver": "dcd", "C": 1.0}) == "931ab9fe4bdbd0d6"


def test_plan_is_deterministic_and_complete(tmp_path):
    overrides = ["datasets=[toy_blobs]", "solvers=[dcd]", "datasets.toy_blobs.max_rows=100", "cv.folds=3",
                 "run.reference=true", "solvers.dcd.grid.C=[0.1,1]"]
    cfg = _cfg(tmp_path, *overrides)
    exp = validate(cfg)
    data = materialise_datasets(exp)
    p1 = build_plan(exp, data)
    p2 = build_plan(validate(_cfg(tmp_path, *overrides)), materialise_datasets(exp))
    assert list(p1.fits) == list(p2.fits) and len(p1.fits) == 2 * 3
    # One reference per (C, fold): the solver's own settings do not change the problem.
    assert len(p1.references) == 2 * 3
    assert all(f["reference_key"] in p1.references for f in p1.fits.values())
    p3 = build_plan(validate(_cfg(tmp_path, *overrides[:-1], "solvers.dcd.grid.C=[0.1,2]")), data)
    assert len(set(p1.fits) & set(p3.fits)) == 3


def test_reference_auto_only_where_two_solver_entries_share_a_problem(tmp_path):
    """run.reference=auto: a plain CV sweep (one solver entry) plans no reference solve; a
    problem fitted by two entries gets one, shared; false plans none. The fits' keys do not
    depend on the setting, so switching it later reuses every finished fit."""
    base = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=100", "cv.folds=2",
            "solvers.dcd.grid.C=[0.1,1]", "solvers.dcd.params.loss=hinge", "solvers.dcd.params.intercept=regularized"]
    lib = ["solvers.liblinear.grid.C=[1]", "solvers.liblinear.params.loss=hinge",
           "solvers.liblinear.params.intercept=regularized"]
    data = materialise_datasets(validate(_cfg(tmp_path, *base, "solvers=[dcd]")))
    plain = build_plan(validate(_cfg(tmp_path, *base, "solvers=[dcd]")), data)
    assert plain.references == {} and all(f["reference_key"] is None for f in plain.fits.values())
    both = build_plan(validate(_cfg(tmp_path, *base, *lib, "solvers=[dcd,liblinear]")), data)
    # Only C=1 is fitted by both entries: 2 folds -> 2 references, and the C=0.1 fits have none.
    assert len(both.references) == 2
    shared = [f for f in both.fits.values() if f["problem"]["C"] == 1.0]
    assert {f["reference_key"] for f in shared} == set(both.references)
    assert all(f["reference_key"] is None for f in both.fits.values() if f["problem"]["C"] == 0.1)
    assert set(plain.fits) <= set(both.fits)
    assert build_plan(validate(_cfg(tmp_path, *base, *lib, "solvers=[dcd,liblinear]", "run.reference=false")),
                      data).references == {}
    every = build_plan(validate(_cfg(tmp_path, *base, "solvers=[dcd]", "run.reference=true")), data)
    assert len(every.references) == 4 and set(every.fits) == set(plain.fits)


def test_path_keys_group_c_values_and_keys_ignore_neighbours(tmp_path):
    """The points of one C path (same data, fold, solver entry and other parameters) share a
    path key; each keeps its own key whatever its neighbours are; a solver without warm start
    or run.warm_start=false has no path."""
    base = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=100", "cv.folds=2", "solvers=[dcd,pegasos]",
            "solvers.pegasos.grid.C=[1,10]"]
    data = materialise_datasets(validate(_cfg(tmp_path, *base)))
    plan = build_plan(validate(_cfg(tmp_path, *base, "solvers.dcd.grid.C=[0.1,1,10]")), data)
    dcd = [f for f in plan.fits.values() if f["solver"] == "dcd"]
    paths = {}
    for f in dcd:
        paths.setdefault(f["path"], set()).add((f["fold"], f["problem"]["C"]))
    assert len(paths) == 2 and all(len({fold for fold, _ in pts}) == 1 and len(pts) == 3 for pts in paths.values())
    fewer = build_plan(validate(_cfg(tmp_path, *base, "solvers.dcd.grid.C=[0.1,10]")), data)
    assert {k for k, f in fewer.fits.items() if f["solver"] == "dcd"} < {f["key"] for f in dcd}
    cold = build_plan(validate(_cfg(tmp_path, *base, "solvers.dcd.grid.C=[0.1,1,10]", "run.warm_start=false")), data)
    assert all(f["path"] is None for f in cold.fits.values())
    assert all(f["path"] is None for f in plan.fits.values() if f["solver"] == "pegasos")   # no warm start
    # A warm-started point may differ from a cold one within tol: they are different results;
    # pegasos (no warm start) keeps its keys.
    assert set(cold.fits) & set(plan.fits) == {k for k, f in plan.fits.items() if f["solver"] == "pegasos"}


def test_plan_is_a_pure_function_of_config_and_labels(tmp_path):
    """No store is read or written by build_plan: hand-made (meta, labels) are enough, and the
    keys follow the fingerprint, not where the data live."""
    cfg = _cfg(tmp_path / "no_such_store", "datasets=[toy_blobs]", "solvers=[dcd]", "cv.folds=2",
               "solvers.dcd.grid.C=[1]")
    y = np.array([1.0, -1.0] * 10)
    meta = {"name": "toy_blobs", "fingerprint": "f" * 64, "n_features": 2}
    plan = build_plan(validate(cfg), {"toy_blobs": (meta, y)})
    assert len(plan.fits) == 2 and not (tmp_path / "no_such_store").exists()
    other = build_plan(validate(cfg), {"toy_blobs": ({**meta, "fingerprint": "e" * 64}, y)})
    assert not set(plan.fits) & set(other.fits)
    with pytest.raises(ValueError, match="datasets.toy_blobs: not materialised"):
        build_plan(validate(cfg), {})


def test_folds_are_stratified_and_partition_the_rows():
    y = np.array([1.0] * 30 + [-1.0] * 12)
    folds = make_folds(y, {"kind": "kfold", "folds": 3, "shuffle": True}, seed=5)
    tests = np.concatenate([te for _, te in folds])
    assert sorted(tests) == list(range(42))
    for tr, te in folds:
        assert not set(tr) & set(te) and (y[te] < 0).sum() == 4
    again = make_folds(y, {"kind": "kfold", "folds": 3, "shuffle": True}, seed=5)
    assert all((a[1] == b[1]).all() for a, b in zip(folds, again))
    rep = make_folds(y, {"kind": "repeated", "rounds": 4, "test_size": 0.1}, seed=1)
    assert len(rep) == 4 and all(len(te) == 5 for _, te in rep)


def test_reference_solver_certifies_the_linear_hinge_with_smooth_newton_only_for_few_features():
    """dcd crawls on the linear hinge at large C; smooth_newton certifies it, but its Newton
    systems are dense in the features, so beyond SMOOTH_NEWTON_MAX_FEATURES dcd stays."""
    from pipeline.experiment.plan import SMOOTH_NEWTON_MAX_FEATURES, reference_solver
    hinge = {"loss": "hinge", "intercept": "regularized", "kernel": "linear"}
    assert reference_solver(hinge, 123) == "smooth_newton"
    assert reference_solver(hinge, SMOOTH_NEWTON_MAX_FEATURES + 1) == "dcd"
    assert reference_solver(hinge) == "dcd"
    assert reference_solver({**hinge, "loss": "squared_hinge"}, 123) == "dcd"
    assert reference_solver({**hinge, "intercept": "free"}, 123) == "smo"


def test_trace_overhead_reaches_the_spec_only_when_changed(tmp_path):
    """run.trace_overhead=null records every due point (a figure per pass); the default 5% stays
    out of the spec so existing keys are unchanged, and a value outside (0, 1] is refused."""
    base = ["datasets=[toy_blobs]", "solvers=[dcd]", "datasets.toy_blobs.max_rows=60", "cv.folds=2",
            "solvers.dcd.grid.C=[1]"]
    cfg = _cfg(tmp_path, *base)
    exp = validate(cfg)
    labels = materialise_datasets(exp)
    default = build_plan(exp, labels)
    every = build_plan(validate(_cfg(tmp_path, *base, "run.trace_overhead=null")), labels)
    assert all("max_overhead" not in s["trace"] for s in default.fits.values())
    assert all(s["trace"]["max_overhead"] is None for s in every.fits.values())
    assert not set(default.fits) & set(every.fits)
    with pytest.raises(ConfigError, match="run.trace_overhead"):
        validate(_cfg(tmp_path, *base, "run.trace_overhead=0"))


def _two_sets():
    y = np.array([1.0, -1.0] * 10)
    return {k: ({"name": k, "fingerprint": k[0] * 64, "n_features": 2}, y) for k in ("toy_blobs", "breast_cancer")}


def test_a_dataset_problem_key_replaces_the_solver_grid_on_that_dataset_only(tmp_path):
    """datasets.X.problem (troyan's lambda per dataset): on X every solver point takes X's value
    and drops the C axis it replaces, so points that differed only in C become one spec; the
    other dataset keeps the solver's C sweep; the key follows the value."""
    base = ["datasets=[toy_blobs,breast_cancer]", "solvers=[svmmaj]", "cv=none", "run.reference=false",
            "solvers.svmmaj.grid.C=[0.5,5]"]
    lam = ["datasets.toy_blobs.problem={lambda: 2.0, lambda_convention: svmmaj}"]
    plan = build_plan(validate(_cfg(tmp_path, *base, *lam)), _two_sets())
    by = {}
    for f in plan.fits.values():
        by.setdefault(f["data"]["entry"], []).append(f["problem"])
    assert len(by["toy_blobs"]) == 1 and by["toy_blobs"][0]["lambda"] == 2.0 and "C" not in by["toy_blobs"][0]
    assert sorted(p["C"] for p in by["breast_cancer"]) == [0.5, 5.0]
    other = build_plan(validate(_cfg(tmp_path, *base, "datasets.toy_blobs.problem={lambda: 4.0, lambda_convention: svmmaj}")),
                       _two_sets())
    assert len(set(plan.fits) & set(other.fits)) == 2          # breast_cancer's two points are unchanged
    # A dataset's C replaces a solver's lambda the same way (one axis).
    flip = build_plan(validate(_cfg(tmp_path, "datasets=[toy_blobs,breast_cancer]", "solvers=[svmmaj]", "cv=none",
                           "run.reference=false",
                           "solvers.svmmaj.grid={C: null, lambda: [1, 2], lambda_convention: [svmmaj]}",
                           "datasets.toy_blobs.problem.C=3.0")), _two_sets())
    toy = [f["problem"] for f in flip.fits.values() if f["data"]["entry"] == "toy_blobs"]
    assert [p.get("C") for p in toy] == [3.0] and all("lambda" not in p for p in toy)


@pytest.mark.parametrize("override, match", [
    ("datasets.toy_blobs.problem.colour=red", r"datasets.toy_blobs.problem.colour='red': not a problem key; valid: C, "),
    ("datasets.toy_blobs.problem.shrinking=true", r"datasets.toy_blobs.problem.shrinking=True: not a problem key"),
    ("datasets.toy_blobs.problem.C=[1,2]", r"datasets.toy_blobs.problem.C=\[1, 2\]: must be one value"),
    ("datasets.toy_blobs.problem.C=-1", r"datasets.toy_blobs.problem.C=-1: must be a number > 0 \(with solver entry 'dcd'\)"),
    ("datasets.toy_blobs.problem.lambda=2", r"datasets.toy_blobs.problem.lambda_convention=None: lambda needs"),
    ("datasets.toy_blobs.problem.loss=huber_hinge", r"datasets.toy_blobs.problem.loss='huber_hinge': solver 'dcd' takes"),
])
def test_a_bad_dataset_problem_key_is_refused_naming_it(tmp_path, override, match):
    cfg = _cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[dcd]", override)
    with pytest.raises(ConfigError, match=match):
        validate(cfg)


def test_smoke_caps_the_reference_solves(tmp_path):
    """A study's raised reference cap (troyan: 10^7 smo steps) does not reach a smoke run."""
    cfg = _cfg(tmp_path, "run.reference_max_iter=10000000", "smoke=true")
    assert validate(cfg).run.reference_max_iter == 100_000


def test_a_command_line_key_every_dataset_problem_replaces_is_refused(tmp_path):
    """troyan sets lambda on every dataset: a command-line lambda or C for a solver would be
    ignored everywhere, so it is refused naming the datasets; on one dataset of two it is not."""
    for override in ("solvers.svmmaj.grid.lambda=[1]", "solvers.svmmaj.params.C=2", "grid.C=[1,2]"):
        with pytest.raises(ConfigError, match=r"every selected dataset's problem replaces .*datasets.sonar.problem="):
            _cfg(tmp_path, "+experiment=troyan", override)
    _cfg(tmp_path, "+experiment=troyan", "solvers.svmmaj.grid.init_seed=[7]")        # not a replaced key
    _cfg(tmp_path, "datasets=[toy_blobs,breast_cancer]", "solvers=[svmmaj]", "solvers.svmmaj.grid.C=[1]",
         "datasets.toy_blobs.problem.C=3")


def test_solver_entry_runs_on_its_datasets_and_first_folds_only(tmp_path):
    """solvers.<entry>.datasets and .folds: a costly entry (duros_katzman's kernel Newton) on a
    subset of the datasets and folds; other entries keep the whole product; bad values refused."""
    cfg = _cfg(tmp_path, "datasets=[toy_blobs,breast_cancer]", "solvers=[dcd,liblinear]", "cv.folds=3",
               "solvers.dcd.grid.C=[1]", "solvers.liblinear.grid.C=[1]", "run.reference=false",
               "+solvers.dcd.datasets=[toy_blobs]", "+solvers.dcd.folds=2")
    exp = validate(cfg)
    fits = build_plan(exp, materialise_datasets(exp)).fits.values()
    dcd = sorted((f["data"]["entry"], f["fold"]) for f in fits if f["solver_entry"] == "dcd")
    assert dcd == [("toy_blobs", 0), ("toy_blobs", 1)]
    assert sum(f["solver_entry"] == "liblinear" for f in fits) == 6
    with pytest.raises(ConfigError, match=r"solvers.dcd.datasets=\['nope'\]: 'nope' is not a selected"):
        validate(_cfg(tmp_path, "+solvers.dcd.datasets=[nope]"))
    with pytest.raises(ConfigError, match=r"solvers.dcd.folds=0: must be >= 1"):
        validate(_cfg(tmp_path, "+solvers.dcd.folds=0"))


@pytest.mark.parametrize("n, n_classes, test_size, seed, rounds", [
    (26000, 2, 0.2, 123, 40), (997, 3, 0.3, 5, 20), (50, 2, 0.5, 0, 30), (101, 2, 0.1, 7, 10),
    (9, 3, 0.34, 2, 5)])
def test_shuffle_splits_are_scikit_learns_rounds_built_from_arrays(monkeypatch, n, n_classes, test_size, seed, rounds):
    """The repeated and holdout splits draw scikit-learn's StratifiedShuffleSplit rounds, row for
    row, and (in the plain case) without it: its Python lists cost 1.3 s for 250 rounds of 26k rows."""
    from sklearn import model_selection
    from pipeline.experiment.specs import shuffle_splits
    y = np.random.default_rng(seed).integers(0, n_classes, size=n).astype(float)
    want = [(np.sort(tr), np.sort(te)) for tr, te in model_selection.StratifiedShuffleSplit(
        rounds, test_size=test_size, random_state=seed).split(np.zeros(n), y)]
    monkeypatch.setattr(model_selection, "StratifiedShuffleSplit", None)    # the plain case needs none
    got = shuffle_splits(y, rounds, test_size, seed)
    assert len(got) == rounds and all(np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(got, want))


def test_shuffle_splits_outside_the_plain_case_are_scikit_learns_with_its_errors():
    from pipeline.experiment.specs import shuffle_splits
    with pytest.raises(ValueError, match="least populated class"):
        shuffle_splits(np.array([0.0, 1.0, 1.0, 1.0]), 3, 0.5, 0)


@pytest.mark.parametrize("n, n_classes, folds, shuffle, seed", [
    (26000, 2, 5, True, 123), (997, 3, 10, True, 5), (50, 2, 5, False, 0), (101, 4, 3, True, 2**32 - 1),
    (60, 2, 6, True, 7), (1000, 7, 4, False, 9)])
def test_kfold_is_scikit_learns_stratified_kfold_without_importing_it(n, n_classes, folds, shuffle, seed):
    """k-fold draws scikit-learn's StratifiedKFold folds, row for row, without importing
    scikit-learn (half a second on the way to the first task, in the client and in every
    sandbox). Labels in an order of appearance that differs from their sorted order, and
    float -1/+1 labels as `binary_labels` gives them."""
    import subprocess
    import sys
    from sklearn.model_selection import StratifiedKFold
    from pipeline.experiment.specs import make_folds
    rng = np.random.default_rng(seed % 1000)
    y = (n_classes - 1 - rng.integers(0, n_classes, size=n)).astype(float)   # the largest label first, mostly
    if n_classes == 2:
        y = np.where(y > 0, 1.0, -1.0)
    want = [(np.sort(tr), np.sort(te)) for tr, te in StratifiedKFold(
        folds, shuffle=shuffle, random_state=seed if shuffle else None).split(np.zeros(n), y)]
    got = make_folds(y, {"kind": "kfold", "folds": folds, "shuffle": shuffle}, seed)
    assert len(got) == folds and all(np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(got, want))
    if seed == 123:     # once: planning k-fold folds imports no scikit-learn
        code = ("import sys, numpy as np; from pipeline.experiment.specs import make_folds; "
                "make_folds(np.repeat([1.0, -1.0], 50), {'kind': 'kfold', 'folds': 5, 'shuffle': True}, 1); "
                "print(any(m.startswith('sklearn') for m in sys.modules))")
        assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_a_grid_range_is_its_values_and_a_bad_one_is_named(tmp_path):
    """"geomspace(start, stop, num)" (and linspace) is numpy's range, rounded to 12 digits so
    that every machine keys the same points; a malformed range names its key and the form."""
    exp = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd]",
                            "solvers.dcd.grid.C='geomspace(0.01, 100, 5)'"]))
    assert [p["C"] for p in exp.solvers["dcd"].points] == [0.01, 0.1, 1.0, 10.0, 100.0]
    exp = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd]",
                            "solvers.dcd.grid.C='linspace(1,2,3)'"]))
    assert [p["C"] for p in exp.solvers["dcd"].points] == [1.0, 1.5, 2.0]
    with pytest.raises(ConfigError, match=r"solvers\.dcd\.grid\.C=.*a range is geomspace\(start, stop, num\)"):
        validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd]",
                          "solvers.dcd.grid.C='geomspace(0, 100, 5)'"]))


def test_the_report_keys_are_the_report_sections_fields():
    """REPORT_KEYS (what the docs' reference lists) is ReportConf's fields, in order."""
    import dataclasses

    from pipeline.experiment.schema import REPORT_KEYS, ReportConf
    assert REPORT_KEYS == tuple(f.name for f in dataclasses.fields(ReportConf))
