"""Config semantics (issue #10, points 5 and 6): store entries are options of the `datasets`
group, a shared top-level grid sweeps every solver that takes its keys, params/grid take keys
their yaml does not list (checked by validate), and nothing is silently ignored: unknown keys
and keys that a higher level would override are refused, naming them."""
from pathlib import Path

import numpy as np
import pytest

from pipeline.experiment.config import ConfigError, compose, grid_points, validate
from pipeline.data.cli import main as data_main
from pipeline.experiment.plan import build_plan
from pipeline.run import run


def _cfg(tmp_path, *overrides):
    return compose([f"store.root={tmp_path}", *overrides])


def _plan(cfg, n=20):
    """A plan from hand-made labels (no store), for the datasets of cfg."""
    y = np.array([1.0, -1.0] * (n // 2))
    labels = {d: ({"name": d, "fingerprint": "f" * 64, "n_features": 2}, y) for d in cfg.datasets}
    return build_plan(validate(cfg), labels)


def _swept(plan, entry, key):
    """The values of `key` over the fit specs of one solver entry."""
    out = set()
    for spec in plan.fits.values():
        if spec["solver_entry"] == entry:
            merged = {**spec["problem"], **spec["solver_params"], **spec["budget"]}
            out.add(merged.get(key))
    return out


# ------------------------------------------------------------------ store entries by name
@pytest.fixture(scope="module")
def my_store(tmp_path_factory):
    """A store holding one ingested file, `mine`, as `python -m pipeline.data ingest` makes it."""
    from sklearn.datasets import dump_svmlight_file, make_classification
    root = tmp_path_factory.mktemp("store")
    X, y = make_classification(n_samples=60, n_features=4, n_informative=3, n_redundant=0, random_state=0)
    path = root.parent / "mine.svm"
    dump_svmlight_file(X, np.where(y > 0, 1, -1), str(path))
    assert data_main(["ingest", str(path), "--name", "mine", "--store", str(root)]) == 0
    return root


def test_an_ingested_entry_is_selected_by_name_and_runs(my_store, tmp_path):
    cfg = compose([f"store.root={my_store}", "datasets=[mine]", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]",
                   "cv.folds=2", "cluster=sequential", "run.progress=false", "datasets.mine.scale=standard"])
    assert list(cfg.datasets) == ["mine"] and cfg.datasets.mine.builder == "mine"
    out = run(cfg, tmp_path / "run")
    res = out["results"]
    assert len(res) == 2 and set(res["dataset"]) == {"mine"} and set(res["dataset_name"]) == {"mine"}
    assert (res["status"] == "converged").all() and (res["n_train"] + res["n_test"] == 60).all()
    with pytest.raises(ConfigError, match=r"datasets.mine.params=\{'n_samples': 5\}: 'mine' is a store entry, "
                                           r"not a builder: it takes no parameters"):
        validate(compose([f"store.root={my_store}", "datasets=[mine]", "datasets.mine.params.n_samples=5"]))


def test_unknown_dataset_option_lists_builtins_and_store_entries(my_store, tmp_path):
    with pytest.raises(ConfigError, match=r"datasets='nope': no such option; available: .*breast_cancer.*mine.*toy_blobs"):
        compose([f"store.root={my_store}", "datasets=[nope]"])
    # The options follow the store named on the command line: another store has no `mine`.
    from hydra.core.config_store import ConfigStore
    assert "mine" in compose([f"store.root={my_store}", "datasets=[mine,toy_blobs]"]).datasets
    with pytest.raises(ConfigError, match=r"datasets='mine': no such option"):
        compose([f"store.root={tmp_path}", "datasets=[mine]"])
    # ... and the process-wide ConfigStore no longer offers it (a yaml selecting it would fail).
    assert not [n for n in ConfigStore.instance().repo["datasets"] if n.startswith("mine")]


# ------------------------------------------------------------------ keys not in the yaml
def test_a_grid_key_the_yaml_does_not_list_needs_no_plus(tmp_path):
    plan = _plan(_cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[smo]", "cv.folds=2",
                      "solvers.smo.grid.gamma=[0.1,1.0]", "solvers.smo.grid.C=[1.0]"))
    assert _swept(plan, "smo", "gamma") == {0.1, 1.0} and len(plan.fits) == 4


def test_the_readme_zip_example_pairs_and_replaces_the_product_key(tmp_path):
    cfg = _cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[smo]", "cv.folds=2",
               "solvers.smo.grid.zip={C: [1, 10], gamma: [0.1, 0.01]}")
    plan = _plan(cfg)
    pairs = {(s["problem"]["C"], s["problem"]["gamma"]) for s in plan.fits.values()}
    assert pairs == {(1.0, 0.1), (10.0, 0.01)} and len(plan.fits) == 4   # not x3 from the yaml's C
    assert grid_points({"C": [1, 2, 3], "zip": {"C": [5, 6], "gamma": [1, 2]}}, "g") == [
        {"C": 5, "gamma": 1}, {"C": 6, "gamma": 2}]


def test_a_free_key_of_an_unselected_entry_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"solvers.smo.grid.C: solvers.smo is not selected \(selected: dcd\)"):
        _cfg(tmp_path, "solvers=[dcd]", "solvers.smo.grid.C=[1]")


# ------------------------------------------------------------------ the shared grid
def test_the_shared_grid_applies_to_each_solver_that_takes_the_key(tmp_path):
    cfg = _cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[dcd,smo,pegasos]", "cv.folds=2",
               "grid.C=[0.5,2.0]", "grid.gamma=[0.1,1.0]", "grid.shrinking=[false]")
    plan = _plan(cfg)
    for entry in ("dcd", "smo", "pegasos"):
        assert _swept(plan, entry, "C") == {0.5, 2.0}, entry
    assert _swept(plan, "smo", "gamma") == {0.1, 1.0}       # a kernel key: only the kernel solver
    assert "gamma" not in validate(cfg).solvers["dcd"].grid
    assert _swept(plan, "dcd", "shrinking") == {False} and _swept(plan, "smo", "shrinking") == {False}
    assert _swept(plan, "pegasos", "shrinking") == {None}   # pegasos has no such parameter
    assert len(plan.fits) == (2 + 2 * 2 + 2) * 2           # dcd, smo (C x gamma), pegasos; 2 folds


def test_a_shared_grid_key_no_solver_takes_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"grid.gamma=\[0.1\]: no selected solver takes this key \(selected: dcd\)"):
        validate(_cfg(tmp_path, "solvers=[dcd]", "grid.gamma=[0.1]"))


def test_a_shared_C_replaces_an_entrys_lambda_axis(tmp_path):
    cfg = validate(_cfg(tmp_path, "+experiment=bench_majorization", "grid.C=[1.0]"))
    for entry, sc in cfg.solvers.items():
        assert list(sc.grid["C"]) == [1.0] and "lambda" not in sc.grid and "lambda" not in sc.params, entry


# ------------------------------------------------------------------ nothing silently ignored
@pytest.mark.parametrize("override, message", [
    ("+cv.nfolds=3", "cv.nfolds: unknown key; valid: kind, folds, shuffle, test_size, rounds"),
    ("+cluster.workers=3", "cluster.workers: unknown key; valid: kind, n_workers,"),
    ("+run.retry=false", "run.retry: unknown key; valid: timeout_s,"),
    ("+store.path=/x", "store.path: unknown key; valid: root"),
    ("+seeds=3", "seeds: unknown key; valid: name, datasets, solvers, grid,"),
    ("+datasets.toy_blobs.scaling=standard", "datasets.toy_blobs.scaling: unknown key; valid: builder, params, scale,"),
    ("+solvers.dcd.param={C: 1}", "solvers.dcd.param: unknown key; valid: solver, params, grid"),
    ("solvers.dcd.params.shrink=true", r"solvers.dcd.params.shrink: unknown key \(solver 'dcd' has no parameter 'shrink'\); "
                                       r"valid: its parameters random_state, record_active_at, shrinking, stop; problem keys C, loss"),
    ("solvers.dcd.grid.shrink=[true]", r"solvers.dcd.grid.shrink: unknown key"),
    ("solvers.smo.grid.zip={C: [1], gama: [1]}", r"solvers.smo.grid.zip.gama: unknown key"),
    ("+report.title=x", r"report.title: unknown key; valid: baseline"),
    ("datasets.toy_blobs.params.n=5", r"datasets.toy_blobs.params: dataset 'toy_blobs': unknown parameter\(s\) n; "
                                      r"valid parameters: n_samples"),
])
def test_unknown_keys_are_refused_naming_the_valid_ones(tmp_path, override, message):
    with pytest.raises(ConfigError, match=message):
        validate(_cfg(tmp_path, override))


@pytest.mark.parametrize("overrides, message", [
    (["+solvers.dcd.params.C=5"], r"solvers.dcd.params.C=5 is set, but solvers.dcd.grid.C=\[0.01, 0.1, 1.0, 10.0\] "
                                  r"would override it .*: set the values you want in solvers.dcd.grid.C"),
    (["+solvers.dcd.params.C=-2"], r"solvers.dcd.params.C=-2 is set, but solvers.dcd.grid.C="),
    (["solvers.dcd.params={C: 5}"], r"solvers.dcd.params.C=5 is set, but solvers.dcd.grid.C="),
    (["grid.C=[1]", "solvers.smo.grid.C=[3]"], r"solvers.smo.grid.C=\[3\] is set, but grid.C=\[1\] would override it"),
    (["solvers.smo.grid.zip={C: [1], gamma: [1]}", "solvers.smo.grid.C=[5]"],
     r"solvers.smo.grid.C=\[5\] is set, but solvers.smo.grid.zip.C=\[1\] would override it"),
])
def test_a_key_that_a_higher_level_overrides_is_refused(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        _cfg(tmp_path, *overrides)


def test_a_param_is_used_once_its_grid_key_is_dropped(tmp_path):
    plan = _plan(_cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[dcd]", "cv.folds=2",
                      "solvers.dcd.grid.C=null", "+solvers.dcd.params.C=5"))
    assert _swept(plan, "dcd", "C") == {5.0}


@pytest.mark.slow
def test_every_experiment_composes_and_validates(tmp_path, monkeypatch):
    from pipeline.experiment.config import group_options
    # compare_plugin names the example plugin, a module that must be importable (installed).
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples" / "plugin_solver"))
    for name in group_options("experiment"):
        validate(_cfg(tmp_path, f"+experiment={name}"))


@pytest.mark.parametrize("override, message", [
    # The shared grid, an entry's grid, its zip, its params: each named as it was typed.
    ("grid.C=[-1]", "grid.C=-1: must be a number > 0"),
    ("solvers.dcd.grid.C=[-1]", "solvers.dcd.grid.C=-1: must be a number > 0"),
    ("grid.zip={C: [-1, 1], tol: [0.1, 0.2]}", "grid.zip.C=-1: must be a number > 0"),
    ("solvers.dcd.grid.tol=[0.1,-2]", "solvers.dcd.grid.tol=-2: must be a number > 0"),
    ("solvers.dcd.params.tol=-1", "solvers.dcd.params.tol=-1: must be a number > 0"),
])
def test_a_bad_value_is_named_by_the_key_that_set_it(tmp_path, override, message):
    """Not by the merged point's key (solvers.dcd.C), which the user did not type."""
    with pytest.raises(ConfigError) as err:
        validate(_cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[dcd]", override))
    assert str(err.value) == message


def test_a_range_typed_as_the_yaml_writes_it_says_how_to_quote_it(tmp_path):
    """On the command line Hydra reads geomspace(...) as a function of its own ("Unknown
    function 'geomspace'"); the message gives the quoting that works, which then composes."""
    with pytest.raises(ConfigError) as err:
        _cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[dcd]", "solvers.dcd.grid.C=geomspace(0.01,30,16)")
    assert str(err.value) == (
        "solvers.dcd.grid.C=geomspace(0.01,30,16): on the command line a range must be quoted twice, once for the "
        "shell and once for Hydra, which otherwise reads geomspace(...) as a function of its own: "
        "solvers.dcd.grid.C=\"'geomspace(0.01,30,16)'\" (in an experiment's YAML it is written as it is)")
    quoted = validate(_cfg(tmp_path, "datasets=[toy_blobs]", "solvers=[dcd]", "solvers.dcd.grid.C='geomspace(0.01,30,16)'"))
    assert len(quoted.solvers["dcd"].points) == 16


def test_the_estimator_and_the_pipeline_end_the_same_fit_alike(tmp_path):
    """dcd's defaults are one: SVMClassifier(solver="dcd") and a sweep's dcd (conf/solvers/dcd.yaml)
    stop a fit at the same pass cap, so a fit that needs over LIBLINEAR's 1000 passes (standardised
    breast_cancer, squared hinge, C = 100, cold) converges in both, in the same passes, and
    neither warns; the estimator once stopped it at 1000 with a ConvergenceWarning."""
    import warnings

    from pipeline.engine.tasks import fold_data
    from pipeline.run import materialise_datasets
    from solvers import SVMClassifier
    store = tmp_path / "store"
    cfg = _cfg(store, "datasets=[breast_cancer]", "datasets.breast_cancer.scale=standard", "solvers=[dcd]",
               "solvers.dcd.grid.C=[100.0]", "cv=holdout", "run.warm_start=false", "run.reference=false",
               "cluster=sequential", "run.progress=false")
    res = run(cfg, tmp_path / "run")["results"].set_index("key")
    exp = validate(cfg)
    (key, spec), = build_plan(exp, materialise_datasets(exp)).fits.items()
    X, y = fold_data(str(store), spec["data"], spec["fold"])[:2]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        clf = SVMClassifier(solver="dcd", loss="squared_hinge", C=100.0, random_state=spec["seed"]).fit(X, y)
    assert res.loc[key, "status"] == clf.status_ == "converged" and not said
    assert res.loc[key, "n_iter"] == clf.n_iter_ > 1000
