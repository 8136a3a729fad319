"""`plugins=[file.py]` in a run: the plugin's solvers are `solvers=[name]` options, its sha256 is in
the task keys of its fits (an edit reruns exactly those), and a Dask worker that never imported
it runs them (a real `dask scheduler` and `dask worker` on 127.0.0.1, no preload)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.engine.clusters import ClusterError
from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.run import run

from .processes import running, written

BASE = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=120", "cv=holdout", "run.progress=false",
        "run.reference=false"]
DASK = str(Path(sys.executable).parent / "dask")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

PLUGIN = '''\
"""dcd under another name: a solver plugin file."""
import solvers
from solvers.dcd import fit_dcd

_d = solvers.get_solver("dcd")


def fit_{name}(problem, **kw):
    return fit_dcd(problem, **kw)


solvers.register(solvers.SolverSpec(name="{name}", family="test", fit=fit_{name}, params=_d.params,
                                    losses=_d.losses, intercepts=_d.intercepts))
'''


def _plugin(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(PLUGIN.format(name=name))
    return path


def _keys(out, solver):
    res = out["results"]
    return set(res.loc[res["solver"] == solver, "key"])


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plugin_solver"


@pytest.fixture
def registry_restored(monkeypatch):
    from solvers import registry
    for attr in ("_REGISTRY", "_ORIGINS", "_PLUGINS", "_SOURCES"):
        monkeypatch.setattr(registry, attr, dict(getattr(registry, attr)))


def test_every_registered_solver_and_an_experiments_plugins_are_options(registry_restored, monkeypatch):
    """A solver without a yaml in conf/solvers/ is selected by name with its declared defaults;
    an experiment yaml's plugins are imported before Hydra composes its solver list."""
    exp = validate(compose([*BASE, "solvers=[smooth_newton]"]))
    from solvers import get_solver
    assert exp.solvers["smooth_newton"].solver == "smooth_newton"
    assert dict(exp.solvers["smooth_newton"].params) == {"loss": get_solver("smooth_newton").losses[0]}
    monkeypatch.syspath_prepend(str(EXAMPLE))
    exp = validate(compose(["+experiment=compare_plugin"]))
    assert sorted(exp.solvers) == ["bcfw", "dcd", "liblinear"]
    assert [dict(p) for p in exp.plugins] == [{"source": "svmbench_bcfw", "sha256": None, "names": ("bcfw",)}]


def test_every_registered_solver_is_selected_by_name(registry_restored):
    """Each solver of the registry (the test-only ones, named "_...", aside) is a `solvers=`
    option under its own name, with a yaml in conf/solvers/ or without one, in one run."""
    from solvers import get_solver, solver_names
    names = [n for n in solver_names() if not n.startswith("_")]
    assert {"smooth_newton", "dcd", "liblinear", "smo"} <= set(names)
    exp = validate(compose([*BASE, f"solvers=[{','.join(names)}]"]))
    assert {key: entry.solver for key, entry in exp.solvers.items()} == {n: n for n in names}
    for name in names:     # each solves a problem it declares
        assert dict(exp.solvers[name].params).get("loss", "hinge") in get_solver(name).losses, name


def _readme_recipe() -> list[str]:
    """The commands of the README's recipe "Compare your solver", continuation lines joined."""
    text = (EXAMPLE.parents[1] / "README.md").read_text()
    block = text[text.index("### 3. Compare your solver"):].split("```")[1]
    return [line for line in block.replace("\\\n", " ").splitlines() if line and not line.startswith("#")]


def test_the_readme_recipe_makes_a_solver_file_and_sweeps_it_on_the_problems_of_all_three(
        tmp_path, registry_restored, monkeypatch):
    """Its file step, run as written (in a directory with the checkout's examples/), gives a
    plugin file registering `my_solver`; its sweep's overrides give the three entries the same
    problems (loss, intercept, C), which the report compares on one f*. (Running the sweep and
    check_solver themselves, from a fresh clone, is in the plugin notes: minutes, not a test.)"""
    import shlex
    lines = _readme_recipe()
    make = next(line for line in lines if line.startswith("sed "))
    sweep = next(line for line in lines if line.startswith("python -m pipeline "))
    assert "solvers.load_plugin('my_solver.py')" in " ".join(lines) and "check_solver('my_solver')" in " ".join(lines)
    (tmp_path / "examples").symlink_to(EXAMPLE.parent)
    subprocess.run(make, shell=True, cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    args = shlex.split(sweep)
    exp = validate(compose([*BASE, *args[3:]]))
    problems = {key: sorted((q.get("loss"), q.get("intercept"), q.get("C"))
                            for q in ({**entry.params, **point} for point in entry.points))
                for key, entry in exp.solvers.items()}
    assert sorted(problems) == ["dcd", "liblinear", "my_solver"]
    assert problems["my_solver"] == problems["dcd"] == problems["liblinear"] == [
        ("hinge", "none", 0.1), ("hinge", "none", 1), ("hinge", "none", 10)]
    from solvers import origin
    assert origin("my_solver") == f"file {tmp_path / 'my_solver.py'}"


def _fit_keys(args):
    from pipeline.experiment.plan import build_plan
    from pipeline.run import materialise_datasets
    exp = validate(compose(args))
    plan = build_plan(exp, materialise_datasets(exp))
    keys = {}
    for key, spec in plan.fits.items():
        keys.setdefault(spec["solver"], set()).add(key)
    return keys


def test_a_plugin_solver_is_selected_by_name_and_an_edit_changes_exactly_its_keys(store, tmp_path, registry_restored):
    """A rerun into the same run directory skips the keys it finished (test_run), so an edited
    plugin file reruns its own fits and nothing else."""
    path = _plugin(tmp_path, "plug_edit")
    args = [f"store.root={store}", *BASE, f"plugins=[{path}]", "solvers=[plug_edit,dcd]", "cluster=sequential"]
    before = _fit_keys(args)
    # dcd.yaml's four C values; the plugin's entry, from no yaml, one point with its defaults
    assert len(before["plug_edit"]) == 1 and len(before["dcd"]) == 4
    assert _fit_keys(args) == before
    path.write_text(path.read_text() + "\n# edited\n")
    after = _fit_keys(args)
    assert after["dcd"] == before["dcd"] and not after["plug_edit"] & before["plug_edit"]


def test_a_bad_plugin_is_one_config_error_before_any_task(tmp_path, registry_restored):
    bad = tmp_path / "bad_plugin.py"
    bad.write_text("import solvers\n\nraise RuntimeError('not today')\n")
    with pytest.raises(ConfigError) as err:
        compose([*BASE, f"plugins=[{bad}]", "solvers=[dcd]"])
    assert str(err.value) == (f"plugins[0]={str(bad)!r}: plugin file {bad} failed to import: "
                              f"RuntimeError: not today ({bad}:3)")
    with pytest.raises(ConfigError, match=r"plugins\[1\]='/nowhere/x\.py': plugin file '/nowhere/x\.py' does not exist"):
        compose([*BASE, f"plugins=[{_plugin(tmp_path, 'plug_ok')},/nowhere/x.py]", "solvers=[dcd]"])


def test_a_plugin_solver_whose_fit_raises_is_refused_before_any_task(tmp_path, registry_restored):
    """The smoke check (`solvers.testing.smoke_check`) in the preflight, before any directory or
    task (`validate` fits nothing): the entry, the solver and its origin, the check and the fit's
    own error; the same names twice from two plugins are refused naming both."""
    from pipeline.preflight import preflight
    path = tmp_path / "plug_raises.py"
    path.write_text(PLUGIN.format(name="plug_raises").replace(
        "    return fit_dcd(problem, **kw)", "    raise FloatingPointError('my bug')"))
    cfg = compose([*BASE, f"plugins=[{path}]", "solvers=[plug_raises]"])
    validate(cfg)
    with pytest.raises(ConfigError) as err:
        preflight(cfg)
    assert str(err.value) == (f"solvers.plug_raises: solver 'plug_raises' (from file {path}) fails its smoke check: "
                              f"check_solver('plug_raises') [certificates]: fit raised FloatingPointError: my bug on "
                              f"dense 40x5, loss=hinge, intercept=regularized, kernel=linear, C=1")
    (tmp_path / "other").mkdir()
    a, b = _plugin(tmp_path / "other", "plug_twice"), tmp_path / "plug_twice.py"
    b.write_text(a.read_text() + "# another file: other bytes\n")
    with pytest.raises(ConfigError, match=rf"plugins\[1\]='{b}': solver 'plug_twice' is registered twice: "
                                          rf"by file {a} and by file {b}"):
        compose([*BASE, f"plugins=[{a},{b}]", "solvers=[dcd]"])


@pytest.mark.slow    # a fresh process's imports and warm-up: 15 s at load average 8 on 2 cores
def test_a_task_process_without_the_file_runs_the_shipped_copy(store, tmp_path, registry_restored):
    """A task spec of a plugin solver carries the file's text beside its key: a fresh process
    (as on a remote worker) where the file's path does not exist runs the fit from it."""
    from pipeline.experiment.plan import build_plan
    from pipeline.run import materialise_datasets
    path = _plugin(tmp_path, "plug_ship")
    exp = validate(compose([f"store.root={store}", *BASE, f"plugins=[{path}]", "solvers=[plug_ship]",
                            "cluster=sequential"]))
    plan = build_plan(exp, materialise_datasets(exp))
    spec = next(s for s in plan.fits.values() if s.get("solver") == "plug_ship")
    assert spec["plugin"]["sha256"] and spec["plugin_text"] == path.read_text()
    path.unlink()                                   # the worker's machine has no copy
    code = ("import json, sys; from pipeline.engine.tasks import run_task\n"
            "from pipeline.experiment.specs import spec_from_dict\n"
            "spec = spec_from_dict(json.loads(sys.stdin.read()))\n"
            f"rec = run_task([[spec]], {str(store)!r})[0]\n"
            "print(rec['status'], rec['error'])\n")
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(spec.as_dict()), capture_output=True, text=True,
                         env=ENV, check=True, cwd=tmp_path)
    assert out.stdout.split()[0] == "converged", out.stdout + out.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A real `dask scheduler` and one `dask worker` on 127.0.0.1 that never imported a plugin:
    (scheduler address, a directory on the worker's PYTHONPATH). Shared by the tests below (its
    start is most of their time); each uses plugin names of its own, since the worker's sandbox
    child keeps what it imported."""
    tmp = tmp_path_factory.mktemp("cluster")
    shared = tmp / "shared"
    shared.mkdir()
    sched = tmp / "scheduler.json"
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(shared), ENV["PYTHONPATH"]])}
    with running([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
                  "--scheduler-file", str(sched)],
                 [DASK, "worker", "--scheduler-file", str(sched), "--nthreads", "1", "--host", "127.0.0.1",
                  "--no-dashboard"], env=env, ready=written(sched)):
        yield json.loads(sched.read_text())["address"], shared


@pytest.mark.slow    # the cluster's start (module fixture) and a run: 24 s at load average 8 on 2 cores
def test_a_worker_that_never_imported_the_plugin_runs_its_fits(store, tmp_path, registry_restored, cluster):
    address, _ = cluster
    path = _plugin(tmp_path, "plug_remote")
    out = run(compose([f"store.root={store}", *BASE, f"plugins=[{path}]", "solvers=[plug_remote]",
                       "cluster=address", f"cluster.address={address}"]), tmp_path / "run")
    res = out["results"]
    assert list(res["solver"].unique()) == ["plug_remote"] and set(res["status"]) == {"converged"}


@pytest.mark.slow    # a run on the shared cluster: 10 s at load average 10 on 2 cores
def test_a_file_plugin_is_shipped_to_a_worker_that_has_no_copy(store, tmp_path, registry_restored, cluster):
    """The file is gone once the run is planned (as on a cluster whose machines never had it):
    the worker's check and its fits load the text the specs carry."""
    from pipeline.engine.execute import execute
    from pipeline.experiment.plan import build_plan
    from pipeline.run import materialise_datasets
    address, _ = cluster
    path = _plugin(tmp_path, "plug_shipped")
    exp = validate(compose([f"store.root={store}", *BASE, f"plugins=[{path}]", "solvers=[plug_shipped]",
                            "cluster=address", f"cluster.address={address}"]))
    plan = build_plan(exp, materialise_datasets(exp))
    path.unlink()
    summary = execute(plan, tmp_path / "run", exp, str(store), log=lambda _: None)
    assert summary.failed == 0 and summary.done == len(plan.fits) > 0
    # The shards name the file by its sha256 and do not store its text once a fit.
    from pipeline.results.tables import read_shards
    specs = [r["spec"] for r in read_shards(tmp_path / "run")]
    assert specs and all("plugin_text" not in s and s["plugin"]["sha256"] for s in specs)


NEEDS_HELPER = """import solvers
import plug_helper_xyz
from solvers.dcd import fit_dcd

_d = solvers.get_solver("dcd")
solvers.register(solvers.SolverSpec(name="plug_needs", family="test", fit=fit_dcd, params=_d.params,
                                    losses=_d.losses, intercepts=_d.intercepts))
"""


@pytest.mark.slow    # two runs on the shared cluster: 14 s at load average 10 on 2 cores
def test_a_plugin_missing_on_a_worker_is_one_error_before_any_task(store, tmp_path, registry_restored, cluster,
                                                                  monkeypatch):
    """Two module plugins the client imports: one the worker has but whose import fails there
    (it imports a module only the client has), one the worker lacks. One ClusterError names
    both, the worker and the import's last line with file:line; the results the run directory
    held are untouched, and no task ran."""
    address, shared = cluster
    client_only = tmp_path / "client_only"
    client_only.mkdir()
    (client_only / "plug_helper_xyz.py").write_text("")
    (shared / "plug_needs_xyz.py").write_text(NEEDS_HELPER)
    (client_only / "plug_gone_xyz.py").write_text(PLUGIN.format(name="plug_gone"))
    monkeypatch.syspath_prepend(str(client_only))
    monkeypatch.syspath_prepend(str(shared))
    run_dir = tmp_path / "run"
    args = [f"store.root={store}", *BASE, f"cluster.address={address}"]
    run(compose([*args, "solvers=[dcd]", "grid.C=[1.0]", "cluster=sequential"]), run_dir)
    shards = {p.name: p.read_bytes() for p in (run_dir / "shards").iterdir()}
    assert shards
    with pytest.raises(ClusterError) as err:
        run(compose([*args, "plugins=[plug_needs_xyz,plug_gone_xyz]", "solvers=[dcd,plug_needs,plug_gone]",
                     "grid.C=[1.0]", "cluster=address"]), run_dir)
    msg = str(err.value)
    worker = re.search(r"on worker (tcp://127\.0\.0\.1:\d+): ", msg).group(1)
    assert msg.startswith("a plugin does not load where the tasks run, so no task was submitted")
    assert (f"on worker {worker}: solver plug_gone (module plug_gone_xyz): plugin module 'plug_gone_xyz' cannot "
            f"be found: No module named 'plug_gone_xyz'") in msg
    assert (f"on worker {worker}: solver plug_needs (module plug_needs_xyz): plugin module plug_needs_xyz failed "
            f"to import: ModuleNotFoundError: No module named 'plug_helper_xyz' ({shared / 'plug_needs_xyz.py'}:2)"
            ) in msg
    assert {p.name: p.read_bytes() for p in (run_dir / "shards").iterdir()} == shards


# ------------------------------------------------------------------ the docs' plugins, every cluster
DOCS = Path(__file__).resolve().parents[2] / "docs" / "guide" / "plugins.md"


def _docs_plugins(folder: Path) -> list[Path]:
    """The two plugin files of docs/guide/plugins.md's "The plugin contract", as they stand there
    (a solver of its own, `subgrad`; a built-in wrapped, `my_dcd`), written into folder."""
    text = DOCS.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text[text.index("## The plugin contract"):], re.S)[:2]
    assert 'name="subgrad"' in blocks[0] and 'name="my_dcd"' in blocks[1]
    folder.mkdir(exist_ok=True)
    paths = [folder / "subgrad.py", folder / "my_dcd.py"]
    for path, block in zip(paths, blocks):
        path.write_text(block)
    return paths


def _run_docs_plugins(store, tmp_path, *cluster):
    subgrad, my_dcd = _docs_plugins(tmp_path / "plugins")
    out = run(compose([f"store.root={store}", *BASE, f"plugins=[{subgrad},{my_dcd}]", "solvers=[subgrad,my_dcd]",
                       "grid.loss=[hinge]", "grid.intercept=[none]", *cluster]), tmp_path / "run")
    res = out["results"]
    # subgrad has no stopping test of its own: every fit runs its 1,000 steps.
    assert sorted(set(zip(res["solver"], res["status"]))) == [("my_dcd", "converged"), ("subgrad", "max_iter")], \
        res[["solver", "status", "error"]]
    return out


@pytest.mark.parametrize("cluster", [
    ["cluster=sequential"],
    # The default: workers that are threads of this process, whose task processes get the
    # plugin files this process loaded and the copies each spec ships: one plugin, not two.
    ["cluster=local", "cluster.n_workers=1"],
    ["cluster=local", "cluster.n_workers=1", "cluster.processes=true"],
], ids=["sequential", "local-threads", "local-processes"])
def test_the_docs_plugin_files_run_on_every_local_cluster_kind(store, tmp_path, registry_restored, cluster):
    _run_docs_plugins(store, tmp_path, *cluster)


@pytest.mark.slow    # a run on the shared cluster: about 10 s at load average 4 on 2 cores
def test_the_docs_plugin_files_run_on_a_dask_scheduler_and_worker(store, tmp_path, registry_restored, cluster):
    address, _ = cluster
    _run_docs_plugins(store, tmp_path, "cluster=address", f"cluster.address={address}")

