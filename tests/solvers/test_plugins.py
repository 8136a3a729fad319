"""Solvers from outside the package (`solvers.registry`): plugin files and modules
(`load_plugin`), installed entry points of the group ``svmbench.solvers`` (`discover`), where
each came from, and the one clear error for each bad plugin."""
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import solvers
from solvers import Problem, SolverError, registry
from solvers.testing import check_solver

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin_solver"

PLUGIN = '''\
"""A plugin file: dcd under another name."""
import solvers
from solvers.dcd import fit_dcd

spec = solvers.get_solver("dcd")


def fit(problem, **kw):
    return fit_dcd(problem, **kw)


solvers.register(solvers.SolverSpec(name="{name}", family="test", fit=fit, params=spec.params,
                                    losses=spec.losses, intercepts=spec.intercepts, warmup=lambda: None))
'''


@pytest.fixture
def fresh(monkeypatch):
    """The registry as it is, restored afterwards; entry points not yet looked at."""
    for attr in ("_REGISTRY", "_ORIGINS", "_PLUGINS", "_SOURCES"):
        monkeypatch.setattr(registry, attr, dict(getattr(registry, attr)))
    monkeypatch.setattr(registry, "_LOADED_ENTRY_POINTS", set())
    monkeypatch.setattr(registry, "_DISCOVERED", False)


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def _problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    return Problem(X, np.where(X[:, 0] + 0.3 * rng.standard_normal(30) > 0, 1.0, -1.0))


def test_a_plugin_file_registers_with_its_path_and_content_hash(fresh, tmp_path):
    path = _write(tmp_path / "my_solver.py", PLUGIN.format(name="_mine"))
    plugin = solvers.load_plugin(str(path))
    assert plugin.names == ("_mine",)
    assert plugin.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert solvers.origin("_mine") == f"file {path}"
    assert solvers.fit(_problem(), "_mine").status == "converged"
    # Loaded again: the same plugin, nothing registered twice.
    assert solvers.load_plugin(str(path)) is plugin
    # Edited: imported anew (a new hash), and its solver replaced, since the source is the same.
    path.write_text(path.read_text() + "\n# edited\n")
    edited = solvers.load_plugin(str(path))
    assert edited.sha256 != plugin.sha256 and edited.names == ("_mine",)


def test_a_plugin_module_registers_by_its_name(fresh, tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg_plugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    _write(pkg / "solvers.py", PLUGIN.format(name="_by_module"))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = solvers.load_plugin("mypkg_plugins.solvers")
    assert plugin.names == ("_by_module",) and plugin.sha256 is None
    assert solvers.origin("_by_module") == "module mypkg_plugins.solvers"


def test_a_plugin_file_is_one_plugin_by_its_content_whatever_the_road(fresh, tmp_path, monkeypatch):
    """The same bytes at another path (the copy a run ships to a worker) are the plugin already
    loaded; the file imported by another road first (a worker's --preload, an import by hand:
    origin `python <module>`) and then loaded by path is one plugin too, not a second one."""
    a = _write(tmp_path / "a.py", PLUGIN.format(name="_same"))
    (tmp_path / "shipped").mkdir()
    copy = tmp_path / "shipped" / "a.py"
    copy.write_bytes(a.read_bytes())
    plugin = solvers.load_plugin(str(a))
    assert solvers.load_plugin(str(copy)) is plugin and solvers.origin("_same") == f"file {a}"
    preloaded = _write(tmp_path / "pre_plug.py", PLUGIN.format(name="_preloaded"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "pre_plug", raising=False)
    import pre_plug  # noqa: F401 - registers `_preloaded` as `python pre_plug`
    assert solvers.origin("_preloaded") == "python pre_plug"
    assert solvers.load_plugin(str(preloaded)).names == ("_preloaded",)
    assert solvers.origin("_preloaded") == "python pre_plug"


def test_one_name_from_two_plugins_is_refused_naming_both(fresh, tmp_path):
    a = _write(tmp_path / "a.py", PLUGIN.format(name="_twice"))
    b = _write(tmp_path / "b.py", PLUGIN.format(name="_twice") + "# another file: other bytes\n")
    solvers.load_plugin(str(a))
    with pytest.raises(SolverError) as err:
        solvers.load_plugin(str(b))
    assert str(err.value).startswith(f"solver '_twice' is registered twice: by file {a} and by file {b}")
    # and a built-in's name is refused the same way
    c = _write(tmp_path / "c.py", PLUGIN.format(name="dcd"))
    with pytest.raises(SolverError, match=f"'dcd' is registered twice: by builtin solvers.dcd and by file {c}"):
        solvers.load_plugin(str(c))


def test_a_missing_plugin_file_or_module_is_named(fresh, tmp_path):
    with pytest.raises(SolverError, match=r"plugin file '.*nothing_here\.py' does not exist"):
        solvers.load_plugin(str(tmp_path / "nothing_here.py"))
    with pytest.raises(SolverError, match=r"plugin module 'no_such_pkg_xyz\.solvers' cannot be found"):
        solvers.load_plugin("no_such_pkg_xyz.solvers")


def test_a_plugin_that_fails_to_import_gives_its_last_line_and_file_line(fresh, tmp_path):
    bad = _write(tmp_path / "bad.py", """\
        import numpy as np

        import a_module_nobody_has_xyz
        """)
    with pytest.raises(SolverError) as err:
        solvers.load_plugin(str(bad))
    assert str(err.value) == (f"plugin file {bad} failed to import: ModuleNotFoundError: No module named "
                              f"'a_module_nobody_has_xyz' ({bad}:3)")
    # An error raised inside a library it calls is placed at the plugin's own line.
    lib = _write(tmp_path / "lib_error.py", """\
        import numpy as np

        shape = (2, 3)
        grid = np.zeros(6).reshape(4, 4)
        """)
    with pytest.raises(SolverError) as err:
        solvers.load_plugin(str(lib))
    assert "failed to import: ValueError: cannot reshape array of size 6" in str(err.value)
    assert str(err.value).endswith(f"({lib}:4)")
    assert "lib_error" not in sys.modules
    # A file that does not compile: no line of it ran, its own file:line is the error's.
    syntax = _write(tmp_path / "badplug.py", """\
        import solvers


        def fit(problem)
            return None
        """)
    with pytest.raises(SolverError) as err:
        solvers.load_plugin(str(syntax))
    assert str(err.value) == f"plugin file {syntax} failed to import: SyntaxError: expected ':' ({syntax}:4)"


# ------------------------------------------------------------------ entry points
def _dist(site, name, entry_points, files):
    """An installed distribution as importlib.metadata finds one on sys.path: a dist-info
    directory with METADATA and entry_points.txt (what pip writes), and its modules."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[svmbench.solvers]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    for rel, text in files.items():
        _write(site / rel, text)


SPEC_MODULE = '''\
import solvers
from solvers.dcd import fit_dcd

_d = solvers.get_solver("dcd")

def _spec(name):
    return solvers.SolverSpec(name=name, family="test", fit=fit_dcd, params=_d.params,
                              losses=_d.losses, intercepts=_d.intercepts, warmup=lambda: None)

SPEC = _spec("_ep_spec")

def make():
    return [_spec("_ep_made_1"), _spec("_ep_made_2")]
'''
SELF_REGISTERING = '''\
import solvers
from ep_specs_xyz import _spec

solvers.register(_spec("_ep_module"))
'''


def test_entry_points_are_found_on_first_lookup_with_their_origin(fresh, tmp_path, monkeypatch):
    """An entry point's object is a SolverSpec, a callable returning specs, or a module that
    registers on import; each solver's origin is the entry point "dist:name"."""
    _dist(tmp_path, "ep-demo", {"spec": "ep_specs_xyz:SPEC", "made": "ep_specs_xyz:make",
                                "module": "ep_module_xyz"},
          {"ep_specs_xyz.py": SPEC_MODULE, "ep_module_xyz.py": SELF_REGISTERING})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "_ep_spec" not in registry._REGISTRY          # nothing loaded before a lookup
    assert solvers.get_solver("_ep_spec").name == "_ep_spec"
    assert {n: solvers.origin(n) for n in solvers.solver_names() if n.startswith("_ep")} == {
        "_ep_spec": "entry point ep-demo:spec", "_ep_made_1": "entry point ep-demo:made",
        "_ep_made_2": "entry point ep-demo:made", "_ep_module": "entry point ep-demo:module"}
    assert solvers.fit(_problem(), "_ep_made_2").status == "converged"


def test_a_broken_entry_point_is_one_clear_error(fresh, tmp_path, monkeypatch):
    _dist(tmp_path, "ep-broken", {"bad": "ep_broken_xyz:SPEC"},
          {"ep_broken_xyz.py": "import solvers\nSPEC = solvers.SolverSpec(name='x', family='f')\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SolverError) as err:
        solvers.get_solver("anything")
    msg = str(err.value)
    assert msg.startswith("plugin entry point ep-broken:bad (ep_broken_xyz:SPEC) failed to import: TypeError: ")
    assert "missing 1 required positional argument: 'fit'" in msg
    assert msg.endswith(f"({tmp_path / 'ep_broken_xyz.py'}:2)")


# ------------------------------------------------------------------ the example package
def test_example_plugin_passes_check_solver(fresh, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    plugin = solvers.load_plugin("svmbench_bcfw")
    assert plugin.names == ("bcfw",)
    report = check_solver("bcfw")
    # Printed, it says so (the README's recipe prints it), not a bare [].
    assert report == [] and str(report) == "check_solver('bcfw'): all 10 checks passed"


@pytest.mark.slow
def test_example_package_installed_is_found_by_a_fresh_process(tmp_path):
    """pip installs the example (its entry point) into a directory of its own; a new process
    with that directory on its path lists the solver with its origin, having imported nothing of
    it by hand. (Fitting with it is `test_example_plugin_passes_check_solver`; a fresh process
    would add its numba compilation, 10 s and more on a loaded machine.)"""
    target = tmp_path / "site"
    # Built as pip builds any package (an isolated build environment from the configured index):
    # about 12 s of the 22 s this test took at load average 8 on 2 cores, hence `slow`.
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--disable-pip-version-check", "--target", str(target), str(EXAMPLE)],
                   check=True, cwd=tmp_path, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    listing = subprocess.run([sys.executable, "-m", "solvers", "list"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True).stdout
    block = listing[listing.index("bcfw  [dual_fw]"):].split("\n\n")[0].splitlines()
    assert block[0] == "bcfw  [dual_fw]  from entry point svmbench-bcfw:bcfw"
    assert any(line.split()[:2] == ["averaging", "'weighted'"] and line.endswith("one of weighted, none")
               for line in block)
    assert "dcd  [dual_cd]  from builtin solvers.dcd" in listing
    assert max(len(line) for line in listing.splitlines()) <= 100


# ------------------------------------------------------------------ the smoke check (validation)
BROKEN = '''\
"""dcd under another name, broken as {how}."""
import solvers
from solvers.dcd import fit_dcd

spec = solvers.get_solver("dcd")


def fit(problem, **kw):
    res = fit_dcd(problem, **kw)
    if {how!r} == "raise" and problem.loss == "squared_hinge":
        raise ZeroDivisionError("my bug")
    if {how!r} == "wrong_primal":
        res.primal *= 0.5
    return res


solvers.register(solvers.SolverSpec(name="{name}", family="test", fit=fit, params=spec.params,
                                    losses=spec.losses, intercepts=spec.intercepts, warmup=lambda: None))
'''


def test_smoke_check_refuses_a_fit_that_raises_or_certifies_wrongly(fresh, tmp_path):
    """The fit's own exception (on its second declared loss: every loss is tried) and a P that
    is not the returned model's objective, each named with the solver and the check."""
    from solvers.testing import SolverCheckError, smoke_check
    solvers.load_plugin(str(_write(tmp_path / "raises.py", BROKEN.format(name="_raises", how="raise"))))
    with pytest.raises(SolverCheckError) as err:
        smoke_check("_raises", cache_dir=tmp_path / "cache")
    assert str(err.value).startswith("check_solver('_raises') [certificates]: fit raised ZeroDivisionError: my bug "
                                     "on dense 40x5, loss=squared_hinge")
    solvers.load_plugin(str(_write(tmp_path / "halves.py", BROKEN.format(name="_halves", how="wrong_primal"))))
    with pytest.raises(SolverCheckError, match=r"check_solver\('_halves'\) \[certificates\]: reported P=.* is not "
                                               r"the objective of the returned model"):
        smoke_check("_halves", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())   # no pass remembered


def test_smoke_check_passes_are_remembered_by_the_plugins_content(fresh, tmp_path, monkeypatch):
    """A pass is kept in the process and on disk under the plugin's sha256: a fresh process (the
    in-process memo cleared) skips the fits, an edited plugin runs them again."""
    from solvers import testing
    path = _write(tmp_path / "fine.py", BROKEN.format(name="_fine", how="nothing"))
    cache = tmp_path / "cache"
    solvers.load_plugin(str(path))
    monkeypatch.setattr(testing, "_SMOKED", {})
    assert testing.smoke_check("_fine", cache_dir=cache) is True          # the fits ran
    assert testing.smoke_check("_fine", cache_dir=cache) is False         # this process remembers
    monkeypatch.setattr(testing, "_SMOKED", {})
    assert testing.smoke_check("_fine", cache_dir=cache) is False         # the disk does
    path.write_text(path.read_text() + "\n# edited\n")
    solvers.load_plugin(str(path))
    assert testing.smoke_check("_fine", cache_dir=cache) is True


def test_a_module_plugins_content_hash_covers_its_package(fresh, tmp_path, monkeypatch):
    pkg = tmp_path / "hashed_pkg_xyz"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "helper.py").write_text("X = 1\n")
    _write(pkg / "solvers.py", PLUGIN.format(name="_hashed"))
    monkeypatch.syspath_prepend(str(tmp_path))
    solvers.load_plugin("hashed_pkg_xyz.solvers")
    before = registry.plugin_sha256("_hashed")
    assert before and registry.plugin_sha256("_hashed") == before
    (pkg / "sub" / "helper.py").write_text("X = 2\n")
    assert registry.plugin_sha256("_hashed") != before
    assert registry.plugin_sha256("dcd") is None


# ------------------------------------------------------------------ what a worker lacks
def test_missing_plugins_names_each_plugin_a_process_cannot_load(fresh, tmp_path, monkeypatch):
    """What a worker's sandbox answers before the first task (`execute.check_worker_plugins`):
    nothing for plugins it loads; one line per plugin it cannot, with the import's last line and
    file:line, for a module, an entry point and a file (loaded from the text it carries)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    _write(tmp_path / "present_xyz.py", PLUGIN.format(name="_present"))
    solvers.load_plugin("present_xyz")
    good = _write(tmp_path / "good_file.py", PLUGIN.format(name="_good_file"))
    solvers.load_plugin(str(good))
    needs = registry.plugin_needs(["_present", "_good_file", "dcd"])
    assert [n["solver"] for n in needs] == ["_good_file", "_present"]        # no built-in
    assert needs[0]["text"] == good.read_text() and needs[1]["sha256"] is None
    assert registry.missing_plugins(needs) == []
    broken = _write(tmp_path / "broken_dep_xyz.py", "import solvers\nimport only_on_the_client_xyz\n")
    text = "import solvers\nraise RuntimeError('no GPU here')\n"
    gone = {"solver": "_f", "origin": "file /elsewhere/f.py", "source": "/elsewhere/f.py",
            "sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text}
    lines = registry.missing_plugins([
        {"solver": "_m", "origin": "module not_here_xyz", "source": "not_here_xyz", "sha256": None},
        {"solver": "_d", "origin": "module broken_dep_xyz", "source": "broken_dep_xyz", "sha256": None},
        {"solver": "_e", "origin": "entry point dist-xyz:e"}, gone])
    assert lines[0] == ("solver _m (module not_here_xyz): plugin module 'not_here_xyz' cannot be found: "
                        "No module named 'not_here_xyz'")
    assert lines[1] == (f"solver _d (module broken_dep_xyz): plugin module broken_dep_xyz failed to import: "
                        f"ModuleNotFoundError: No module named 'only_on_the_client_xyz' ({broken}:2)")
    assert lines[2] == ("solver _e (entry point dist-xyz:e): solver '_e' is not registered here: the package of "
                        "entry point dist-xyz:e is not installed")
    assert lines[3].startswith("solver _f (file /elsewhere/f.py): plugin file ")
    assert lines[3].endswith("f.py failed to import: RuntimeError: no GPU here (" + lines[3].split("plugin file ")[1]
                             .split(" failed")[0] + ":2)")
