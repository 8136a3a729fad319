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
    for attr in ("_REGISTRY", "_ORIGINS", "_PLUGINS"):
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


def test_one_name_from_two_plugins_is_refused_naming_both(fresh, tmp_path):
    a = _write(tmp_path / "a.py", PLUGIN.format(name="_twice"))
    b = _write(tmp_path / "b.py", PLUGIN.format(name="_twice"))
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
    assert check_solver("bcfw") == []


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
