"""Bad input (issue #11): each is refused with one line naming the thing (file, line, key,
value), a non-zero exit before any work where it can be, no traceback, and nothing partial left
in the store or the run directory."""
import contextlib
import io
import os
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.data import cli as data, store
from pipeline.experiment.config import ConfigError, compose, validate
from pipeline.run import run
from pipeline.data.store import StoreError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def my_store(tmp_path_factory):
    """A store with: `few` (classes +1: 5 rows, -1: 2 rows), `onec` (one class), `lone` (one row of -1), `tampered`
    (its data changed after ingest)."""
    root = tmp_path_factory.mktemp("store")
    src = tmp_path_factory.mktemp("src")
    files = {"few": "1 1:1\n1 1:2\n1 1:3\n-1 1:4\n-1 1:5\n1 1:2\n1 1:3\n",
             "onec": "1 1:1\n1 1:2\n1 1:3\n1 1:4\n",
             "lone": "1 1:1\n1 1:2\n1 1:3\n1 1:5\n-1 1:4\n",
             "tampered": "".join(f"{1 if i % 2 else -1} 1:{i}\n" for i in range(20))}
    for name, text in files.items():
        (src / f"{name}.svm").write_text(text)
        assert data.main(["ingest", str(src / f"{name}.svm"), "--name", name, "--store", str(root)]) == 0
    # Flip the labels behind the store's back: a valid Parquet file whose fingerprint is wrong.
    path = store.dataset_path(root, "tampered") / store.DATA_FILE
    table = pq.read_table(path)
    pq.write_table(table.set_column(0, "y", [(-table["y"].to_numpy()).tolist()]), path)
    return root


def _cli(run_dir, *overrides, store_root=None):
    """`python -m pipeline ...` as its command runs it (`pipeline.command.Command`), in this
    process: its exit code and both streams. Each refusal here is decided before any fit, in the
    command's own code, so a process of its own would prove nothing more (the installation check
    and the exit itself are test_install.py's and test_run_dir.py's)."""
    from pipeline.command import Command
    out, err = io.StringIO(), io.StringIO()
    env = {"SVMBENCH_STORE": str(store_root)} if store_root is not None else {}
    with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = Command(["cluster=sequential", "run.progress=false", f"hydra.run.dir={run_dir}", *overrides]).run()
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def _one_error_line(p, *words):
    """The process refused in one `error:` line on stderr naming every word, without a traceback."""
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr + p.stdout, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for w in words:
        assert w in lines[0], (w, lines[0])


# ----------------------------------------------------------------- configuration, through the CLI
@pytest.mark.parametrize("override, words", [
    ("solvers=[nosuch]", ["solvers='nosuch'", "available: alpha_maj"]),
    ("foo=1", ["foo: unknown key", "valid: name"]),
    ("run.dryrun=true", ["run.dryrun: unknown key", "dry_run"]),
    ("cv.folds=abc", ["cv.folds=abc"]),
])
def test_the_cli_refuses_a_bad_config_in_one_line_and_makes_no_run_dir(tmp_path, override, words):
    p = _cli(tmp_path / "run", "solvers=[dcd]", "datasets=[toy_blobs]", override)
    _one_error_line(p, *words)
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------- configuration, in-process
def _validate(tmp_path, *overrides):
    return validate(compose([f"store.root={tmp_path}", "cluster=sequential", *overrides]))


@pytest.mark.parametrize("overrides, message", [
    (["cluster=nosuch"], "cluster='nosuch': no such option"),
    (["cv=nosuch"], "cv='nosuch': no such option"),
    (["datasets=[nosuch]"], "datasets='nosuch': no such option"),
    (["cv.nfolds=3"], "cv.nfolds: unknown key; valid: kind, folds"),
    (["+solvers.dcd.params.nosuch=1", "solvers=[dcd]"], "solvers.dcd.params.nosuch: unknown key"),
    (["solvers=[dcd]", "solvers.dcd.grid.C=[0]"], "solvers.dcd.grid.C=0: must be a number > 0"),
    (["solvers=[dcd]", "solvers.dcd.grid.C=[abc]"], "solvers.dcd.grid.C='abc': must be a number > 0"),
    (["solvers=[dcd]", "solvers.dcd.grid.C=[]"], "solvers.dcd.grid.C is an empty list"),
    (["cv.folds=1"], "cv.folds=1: k-fold needs at least 2 folds"),
    (["solvers=[smo]", "solvers.smo.grid.gamma=[-1]"], "solvers.smo.grid.gamma=-1"),
    (["solvers=[dcd]", "solvers.dcd.params.random_state=-3"], "random_state"),          # a solver's own parameter
    (["solvers=[dcd]", "solvers.dcd.params.tol=0"], "solvers.dcd.params.tol=0"),              # a budget key, in the defaults
    (["solvers=[dcd]", "solvers.dcd.params.time_limit_s=-1"], "solvers.dcd.params.time_limit_s=-1"),
    (["solvers=[dcd]", "solvers.dcd.params.intercept=regularized",
      "solvers.dcd.params.intercept_scaling=0"], "solvers.dcd.params.intercept_scaling=0"),
    (["solvers=[dcd]", "solvers.dcd.grid.degree=[2]"], "solvers.dcd.grid.degree=2: solver 'dcd' is linear-only"),
    (["solvers=[dcd]", "solvers.dcd.params.gamma=0.5"], "solvers.dcd.params.gamma=0.5: solver 'dcd' is linear-only"),
    (["solvers=[smo]", "solvers.smo.params.kernel=poly", "solvers.smo.params.coef0=abc"], "solvers.smo.params.coef0='abc'"),
    (["+datasets.x={builder: ../x}"], "datasets.x.builder='../x': not a store entry name"),
    # A combination no method of the solver solves, in LinearSVC's words, before any fit.
    (["solvers=[liblinear]", "solvers.liblinear.params.loss=hinge", "solvers.liblinear.params.dual=false"],
     "solvers.liblinear: Unsupported set of arguments: The combination of penalty='l2' and loss='hinge'"),
])
def test_a_bad_value_is_refused_naming_key_and_value(tmp_path, overrides, message):
    with pytest.raises(ConfigError) as err:
        _validate(tmp_path, *overrides)
    assert message in str(err.value)


# ----------------------------------------------------------------- data the run cannot use
def _run(my_store, run_dir, *overrides):
    cfg = compose([f"store.root={my_store}", "cluster=sequential", "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]",
                   "run.progress=false", "run.reference=false", *overrides])
    return run(cfg, run_dir)


@pytest.mark.parametrize("overrides, error, message", [
    (["datasets=[onec]", "cv.folds=2"], ConfigError, "dataset 'onec' has one class (1: 4 rows)"),
    (["datasets=[few]", "cv.folds=3"], ConfigError,
     "cv.folds=3 needs at least 3 rows of each class, but class -1 of dataset 'few' has 2"),
    (["datasets=[few]", "cv=holdout", "datasets.few.max_rows=4"], ConfigError, "after max_rows=4"),
    # Checked on all rows first: the stratified subsample itself would fail in scikit-learn.
    (["datasets=[lone]", "cv=holdout", "datasets.lone.max_rows=4"], ConfigError,
     "a stratified holdout needs at least 2 rows of each class, but class -1 of dataset 'lone' has 1"),
    (["datasets=[tampered]", "cv.folds=2"], StoreError, "'tampered'"),
    (["datasets=[few]", "cv.folds=2", "datasets.few.positive=7"], ConfigError,
     "datasets.few.positive: positive=7 is not one of the labels [-1.0, 1.0]"),
])
def test_data_the_run_cannot_use_is_refused_before_the_run_dir_gets_anything(my_store, tmp_path, overrides,
                                                                              error, message):
    with pytest.raises(error) as err:
        _run(my_store, tmp_path, *overrides)
    assert message in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []     # no config.yaml, no shards, no lock


def test_a_fingerprint_mismatch_through_the_cli_is_one_line(my_store, tmp_path):
    p = _cli(tmp_path / "run", f"store.root={my_store}", "datasets=[tampered]", "solvers=[dcd]", "cv.folds=2")
    _one_error_line(p, "dataset 'tampered'", "fingerprint mismatch", "re-ingest")
    assert not (tmp_path / "run").exists()      # Hydra's .hydra/ and run.log removed with it


def test_an_unwritable_store_root_is_named_before_any_build(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")      # a root below a regular file cannot be created, even by root
    with pytest.raises(StoreError) as err:
        _run(blocker / "store", tmp_path / "run", "datasets=[toy_blobs]")
    assert f"store {blocker / 'store'}: not writable" in str(err.value)
    assert "datasets.toy_blobs (toy_blobs) is not in the store and must be built" in str(err.value)
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------- user files (ingest)
BAD_FILES = [
    ("neg.svm", b"1 1:0.5\n-1 -3:1\n", ":2: feature index -3 is negative"),
    ("nonint.svm", b"1 1:0.5\n-1 1.5:1\n", ":2: feature index '1.5' is not an integer"),
    ("repeat.svm", b"1 1:0.5 2:1\n-1 2:1 2:3\n", ":2: feature index 2 repeated in the row"),
    ("nolabel.svm", b"1 1:0.5\n1:1 2:3\n", ":2: missing label"),
    ("nonnum.svm", b"1 1:0.5\n-1 1:abc\n", ":2: value 'abc' for feature 1 is not a number"),
    ("nan.svm", b"1 1:nan\n-1 1:2\n", ":1: value 'nan' for feature 1 is not finite"),
    ("utf.svm", b"1 1:0.5\n-1 1:\xff\xfe\n", ":2: bytes that are not UTF-8 at column 6"),
    ("empty.svm", b"# only a comment\n\n", ": no data lines"),
    ("nolabel.csv", b"a,b\n1,2\n3,4\n", ": no label column"),
    ("noheader.csv", b"1,2,0\n3,4,1\n", ": no label column: pass --label COLUMN"),
    ("inf.csv", b"a,b,label\n1,inf,0\n3,4,1\n", ":2: non-finite value in feature column 'b'"),
    ("nan.csv", b"a,b,label\n1,,0\n3,4,1\n", ":2: missing value in feature column 'b'"),
]


@pytest.mark.parametrize("filename, content, message", BAD_FILES, ids=[f[0] for f in BAD_FILES])
def test_a_bad_file_is_refused_with_file_and_line_and_the_store_is_untouched(tmp_path, capsys, filename,
                                                                              content, message):
    path = tmp_path / filename
    path.write_bytes(content)
    root = tmp_path / "store"
    assert data.main(["ingest", str(path), "--name", "mine", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}{message}"), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not root.exists() or os.listdir(root) == []


def test_nan_in_a_parquet_file_in_the_stores_layout_is_refused(tmp_path, capsys):
    import pyarrow as pa
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"y": [1.0, -1.0], "indices": [[0], [0]], "values": [[np.nan], [1.0]]}), path)
    assert data.main(["ingest", str(path), "--name", "mine", "--store", str(tmp_path / "store")]) == 2
    assert "NaN or infinite" in capsys.readouterr().err
    assert not (tmp_path / "store" / "mine").exists()


def test_a_csv_without_header_is_read_with_no_header(tmp_path, capsys):
    path = tmp_path / "plain.csv"
    path.write_text("1,0.5,2\n-1,1.5,3\n1,2.5,4\n")
    root = tmp_path / "store"
    assert data.main(["ingest", str(path), "--name", "plain", "--store", str(root)]) == 2
    assert "the first line looks like data, not a header: pass --no-header" in capsys.readouterr().err
    assert data.main(["ingest", str(path), "--name", "plain", "--no-header", "--store", str(root)]) == 0
    got = store.read_dataset(root, "plain")
    assert got.y.tolist() == [1.0, -1.0, 1.0]                   # column 0 is the label by default
    assert got.X.toarray().tolist() == [[0.5, 2], [1.5, 3], [2.5, 4]]
    assert data.main(["ingest", str(path), "--name", "last", "--no-header", "--label", "2", "--store", str(root)]) == 0
    assert store.read_dataset(root, "last").y.tolist() == [2.0, 3.0, 4.0]
    assert data.main(["ingest", str(path), "--name", "bad", "--no-header", "--label", "7", "--store", str(root)]) == 2
    assert "label column '7' not found; columns: 0, 1, 2" in capsys.readouterr().err


def test_ingest_into_an_unwritable_store_names_it(tmp_path, capsys):
    path = tmp_path / "ok.svm"
    path.write_text("1 1:1\n-1 1:2\n")
    (tmp_path / "file").write_text("")
    assert data.main(["ingest", str(path), "--name", "ok", "--store", str(tmp_path / "file" / "store")]) == 2
    assert f"error: store {tmp_path / 'file' / 'store'}: not writable (Not a directory); ingesting" in capsys.readouterr().err


def test_a_name_that_would_leave_the_store_is_refused(tmp_path, capsys):
    path = tmp_path / "ok.svm"
    path.write_text("1 1:1\n-1 1:2\n")
    for name in ("../x", "a/b", ".."):
        assert data.main(["ingest", str(path), "--name", name, "--store", str(tmp_path / "store")]) == 2
        assert f"invalid dataset name {name!r}" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "store").exists()


def test_the_shards_of_a_refused_rerun_are_untouched(my_store, tmp_path):
    """A bad config run into a directory that holds results changes none of them."""
    _run(my_store, tmp_path, "datasets=[few]", "cv.folds=2")
    before = {p.name: p.read_bytes() for p in (tmp_path / "shards").iterdir()}
    with pytest.raises(ConfigError):
        _run(my_store, tmp_path, "datasets=[few]", "cv.folds=3")
    assert {p.name: p.read_bytes() for p in (tmp_path / "shards").iterdir()} == before
    from pipeline.results.shards import read_shard
    assert all(r["status"] != "error" for r in read_shard(next((tmp_path / "shards").iterdir())))
