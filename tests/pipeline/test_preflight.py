"""The preflight and `validate`'s purity: validate reads the config and what the process has
registered, and nothing else (no user code imported, no file touched); every check that needs
either is the preflight's, one line each, before any directory."""
import os
import sys
import threading
import textwrap

import pytest

from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.preflight import preflight

PLUGIN = textwrap.dedent('''
    """dcd under another name, counting its imports."""
    import solvers
    from solvers.dcd import fit_dcd

    IMPORTS = [1]
    _d = solvers.get_solver("dcd")


    def fit_pre_dcd(problem, **kw):
        return fit_dcd(problem, **kw)


    solvers.register(solvers.SolverSpec(name="pre_dcd", family="test", fit=fit_pre_dcd, params=_d.params,
                                        losses=_d.losses, intercepts=_d.intercepts))
''')


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    from solvers import registry
    for attr in ("_REGISTRY", "_ORIGINS", "_PLUGINS", "_SOURCES"):
        monkeypatch.setattr(registry, attr, dict(getattr(registry, attr)))


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "pre_plugin.py"
    path.write_text(PLUGIN)
    return path


_WATCHING: list = []      # [the list the audit hook fills, the thread it watches], while a test watches


def _audit(event, args):
    # The watching test's own thread only: the suite's process watcher (tests/conftest.py) lists
    # /proc from a thread of its own every second, which is not the code under test.
    if _WATCHING and event in ("open", "os.listdir", "os.scandir", "import") \
            and threading.get_ident() == _WATCHING[1]:
        _WATCHING[0].append((event, str(args[0])[:200]))


sys.addaudithook(_audit)     # once per process: an audit hook cannot be removed


def _touches(monkeypatch):
    """What the code run after this call opens, lists, stats or imports anew: a list it fills
    until `_WATCHING` is emptied."""
    seen = []
    _WATCHING[:] = [seen, threading.get_ident()]
    real_stat = os.stat

    def stat(path, *a, **k):
        seen.append(("os.stat", str(path)))
        return real_stat(path, *a, **k)
    monkeypatch.setattr(os, "stat", stat)
    return seen


def test_validate_imports_no_user_code_and_touches_no_file(tmp_path, plugin, monkeypatch):
    """Composing loads the run's plugin (its solver is a group option); validating it again reads
    neither the plugin file (its sha256 comes from the registry), nor TLS files, nor the store."""
    cfg = compose([f"store.root={tmp_path / 'store'}", f"plugins=[{plugin}]", "solvers=[pre_dcd]",
                   "datasets=[toy_blobs]", "datasets.toy_blobs.builder=an_ingested_entry",
                   "cluster.security.ca_file=/nowhere/ca.pem", "cluster.security.cert=/nowhere/c.pem",
                   "cluster.security.key=/nowhere/k.pem", "cluster=address", "cluster.address=tls://127.0.0.1:1"])
    module = next(m for n, m in sys.modules.items() if n.startswith("svmbench_plugin_pre_plugin_"))
    validate(cfg)                      # the project's own lazy imports, once
    seen = _touches(monkeypatch)
    try:
        exp = validate(cfg)
        touched = list(seen)
    finally:
        _WATCHING.clear()
    assert touched == [], touched
    assert module.IMPORTS == [1]       # imported once, by composing
    assert exp.plugins[0]["sha256"] and tuple(exp.plugins[0]["names"]) == ("pre_dcd",)


def test_validate_refuses_a_plugin_no_one_loaded(tmp_path):
    """validate never imports a plugin itself: one named in the config but not loaded in this
    process (a config composed elsewhere) is one line, and the preflight is what loads it."""
    path = tmp_path / "late_plugin.py"
    path.write_text(PLUGIN.replace("pre_dcd", "late_dcd"))
    cfg = compose([f"store.root={tmp_path / 'store'}", "solvers=[dcd]"])
    from omegaconf import open_dict
    with open_dict(cfg):
        cfg.plugins = [str(path)]
    with pytest.raises(ConfigError, match=r"^plugins\[0\]=.*late_plugin.py': not loaded in this process"):
        validate(cfg)
    exp, _ = preflight(cfg)
    assert tuple(exp.plugins[0]["names"]) == ("late_dcd",)


@pytest.mark.parametrize("case, overrides, message", [
    ("tls", ["cluster=address", "cluster.address=tls://127.0.0.1:1", "cluster.security.ca_file={d}/ca.pem",
             "cluster.security.cert={d}/c.pem", "cluster.security.key={d}/k.pem"],
     r"^cluster.security.ca_file='.*/ca.pem': no such file$"),
    ("store entry", ["datasets.toy_blobs.builder=not_ingested"],
     r"^datasets.toy_blobs.builder='not_ingested': unknown dataset; builders: .*; in the store: \(none\)$"),
    ("paper", ["paper=nosuch_study"], r"^paper='nosuch_study': no such reproduction; registered: .*troyan"),
])
def test_the_preflight_refuses_in_one_line_what_validate_cannot_see(tmp_path, case, overrides, message):
    cfg = compose([f"store.root={tmp_path / 'store'}", "datasets=[toy_blobs]", "solvers=[dcd]",
                   *(o.format(d=tmp_path) for o in overrides)])
    validate(cfg)                      # the config itself is fine
    with pytest.raises(ConfigError, match=message):
        preflight(cfg)
    assert not (tmp_path / "store").exists()
