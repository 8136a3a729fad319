"""Dataset builders from installed packages: entry points of the group ``svmbench.datasets``
(`pipeline.data.datasets.discover_builders`), found by `get_builder` on the first unknown name."""
import textwrap

import numpy as np
import pytest

from pipeline.data import datasets
from pipeline.data.store import StoreError

BUILDERS = '''\
import numpy as np
from pipeline.data.datasets import Builder


def _stripes(n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    return X, np.where(X[:, 0] > 0, 1, 0), {"source": "stripes", "license": "CC0", "citation": ""}


STRIPES = Builder("_stripes", _stripes, "two stripes", defaults={"n": 20, "seed": 0})


def more():
    return [Builder("_more", _stripes, "the same, again", defaults={"n": 20, "seed": 0})]


CLASH = Builder("toy_blobs", _stripes, "a second toy_blobs")
'''


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "BUILDERS", dict(datasets.BUILDERS))
    monkeypatch.setattr(datasets, "BUILDER_ORIGINS", {})
    monkeypatch.setattr(datasets, "_DISCOVERED", set())
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _dist(site, name, entry_points, files):
    """An installed distribution as importlib.metadata reads one: dist-info with METADATA and
    entry_points.txt, and its modules."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[svmbench.datasets]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    for rel, text in files.items():
        (site / rel).write_text(textwrap.dedent(text))


def test_an_installed_builder_is_found_by_name_and_builds(fresh):
    _dist(fresh, "ds-demo", {"stripes": "ds_demo_xyz:STRIPES", "more": "ds_demo_xyz:more"},
          {"ds_demo_xyz.py": BUILDERS})
    assert "_stripes" not in datasets.BUILDERS
    X, y, meta = datasets.get_builder("_stripes")(n=10)
    assert X.shape == (10, 2) and set(np.unique(y)) <= {0, 1}
    assert meta["extra"]["builder"] == {"name": "_stripes", "params": {"n": 10, "seed": 0}}
    assert {"_stripes", "_more"} <= set(datasets.dataset_names())
    assert datasets.BUILDER_ORIGINS == {"_stripes": "entry point ds-demo:stripes", "_more": "entry point ds-demo:more"}


def test_a_builder_named_as_a_builtin_is_refused_naming_both(fresh):
    _dist(fresh, "ds-clash", {"clash": "ds_clash_xyz:CLASH"}, {"ds_clash_xyz.py": BUILDERS})
    with pytest.raises(StoreError, match="dataset 'toy_blobs' is registered twice: by builtin and by "
                                         "entry point ds-clash:clash"):
        datasets.get_builder("anything")


def test_a_builder_that_fails_to_import_is_one_clear_error(fresh):
    _dist(fresh, "ds-bad", {"bad": "ds_bad_xyz:B"}, {"ds_bad_xyz.py": "import numpy\nB = numpy.nope\n"})
    with pytest.raises(StoreError) as err:
        datasets.dataset_names()
    assert str(err.value) == ("dataset plugin entry point ds-bad:bad (ds_bad_xyz:B) failed to import: "
                              "AttributeError: module 'numpy' has no attribute 'nope' "
                              f"({fresh / 'ds_bad_xyz.py'}:2)")
