"""Tests for the data command line (pipeline.data)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from pipeline.data import cli as data, store

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    code = data.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_build_info_remove_round_trip(tmp_path, capsys):
    root = tmp_path / "store"
    code, out, _ = run(capsys, "list", "--store", root)
    assert code == 0 and "no datasets" in out and "toy_blobs" in out

    code, out, _ = run(capsys, "build", "toy_blobs", "--store", root)
    assert code == 0 and out.startswith("built toy_blobs") and "2,000 rows x 2 features" in out
    code, out, _ = run(capsys, "build", "toy_blobs", "--store", root)
    assert code == 0 and "already in store" in out

    code, out, _ = run(capsys, "list", "--store", root)
    table = out.splitlines()
    assert table[0].split() == ["name", "rows", "features", "nnz", "classes"]
    assert table[1].split() == ["toy_blobs", "2,000", "2", "4,000", "-1,", "1"]

    code, out, _ = run(capsys, "info", "toy_blobs", "--store", root)
    meta = store.dataset_info(root, "toy_blobs")
    assert code == 0
    for field in ["rows:", "features:", "nnz:", "density:", "fingerprint:", "source:", "license:"]:
        assert field in out
    assert "100.0000%" in out and meta["fingerprint"] in out and "-1: 1,000, 1: 1,000" in out

    code, out, _ = run(capsys, "remove", "toy_blobs", "--store", root)
    assert code == 0 and "removed toy_blobs" in out
    assert not store.exists(root, "toy_blobs")
    code, _, err = run(capsys, "remove", "toy_blobs", "--store", root)
    assert code == 2 and err.startswith("error: dataset 'toy_blobs' not found")


def test_build_with_params_and_force(tmp_path, capsys):
    code, out, _ = run(
        capsys,
        "build",
        "rcv1_like",
        "--param",
        "n_samples=200",
        "--param",
        "n_features=600",
        "--store",
        tmp_path,
    )
    assert code == 0
    entry = out.split()[1]
    assert entry.startswith("rcv1_like-") and store.exists(tmp_path, entry)
    assert store.dataset_info(tmp_path, entry)["n_rows"] == 200
    fingerprint = store.dataset_info(tmp_path, entry)["fingerprint"]
    code, out, _ = run(
        capsys,
        "build",
        "rcv1_like",
        "--param",
        "n_samples=200",
        "--param",
        "n_features=600",
        "--force",
        "--store",
        tmp_path,
    )
    assert code == 0 and out.startswith(f"rebuilt {entry}")
    assert store.dataset_info(tmp_path, entry)["fingerprint"] == fingerprint

    code, _, err = run(
        capsys, "build", "toy_blobs", "--param", "n_samples=lots", "--store", tmp_path
    )
    assert code == 2 and "n_samples must be an integer" in err
    code, _, err = run(capsys, "build", "toy_blobs", "--param", "oops", "--store", tmp_path)
    assert code == 2 and "KEY=VALUE" in err


def test_unknown_dataset_gives_a_clean_message(tmp_path, capsys):
    code, out, err = run(capsys, "build", "cifar10", "--store", tmp_path)
    assert code == 2 and out == ""
    assert err.startswith("error: unknown dataset 'cifar10'; built-in datasets: australian")
    assert "Traceback" not in err and err.count("\n") == 1
    code, _, err = run(capsys, "info", "cifar10", "--store", tmp_path)
    assert code == 2 and "not found in store" in err and "available: (none)" in err


def test_ingest_libsvm_matches_sklearn_loader(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = sp.random(40, 25, density=0.2, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz) * 10.0 ** rng.integers(-5, 5, X.nnz)
    y = rng.choice([-1.0, 1.0], 40)
    path = tmp_path / "train.libsvm"
    dump_svmlight_file(X, y, str(path), zero_based=False, comment="written by the test")

    code, out, _ = run(capsys, "ingest", path, "--name", "mine", "--store", tmp_path / "s")
    assert code == 0 and out.startswith(f"ingested {path.resolve()} as mine")

    expected_X, expected_y = load_svmlight_file(str(path))
    ds = store.read_dataset(tmp_path / "s", "mine")
    assert ds.X.shape == expected_X.shape
    assert (ds.X != expected_X).nnz == 0
    np.testing.assert_array_equal(ds.y, expected_y)
    assert ds.meta["source"]["format"] == "libsvm"

    code, _, err = run(capsys, "ingest", path, "--name", "mine", "--store", tmp_path / "s")
    # In the command line's own spelling; the API's error says overwrite=True.
    assert code == 2 and err == (f"error: dataset 'mine' already exists in store {tmp_path / 's'}; "
                                 f"pass --force to replace it\n")
    with pytest.raises(store.DatasetExistsError, match=r"already exists in store .*; pass overwrite=True to replace it$"):
        store.write_dataset(tmp_path / "s", "mine", expected_X, expected_y, source={})
    code, _, _ = run(capsys, "ingest", path, "--name", "mine", "--force", "--store", tmp_path / "s")
    assert code == 0


def test_a_libsvm_file_cut_off_mid_line_is_said_to_be_perhaps_truncated(tmp_path, capsys):
    """A LIBSVM file ends every line with a newline, its last one too; one that stops inside a
    line was most likely cut short (a download or copy interrupted). Its last line still parses
    here (a value cut after a digit): ingested, with one warning line naming the file and line;
    cut inside a value, the error says so too. A file that ends with its newline says nothing."""
    whole = "+1 1:0.5 2:1\n-1 3:2\n+1 2:1 4:3.25\n-1 1:1 5:2\n"
    (tmp_path / "whole.svm").write_text(whole)
    (tmp_path / "cut.svm").write_text(whole[:-5])          # "-1 1:1 5" lost ":2\n": "-1 1:1" parses
    (tmp_path / "cut_in_value.svm").write_text(whole[:-2])  # "-1 1:1 5:" does not
    code, out, err = run(capsys, "ingest", tmp_path / "whole.svm", "--name", "whole", "--store", tmp_path / "s")
    assert code == 0 and err == ""
    code, out, err = run(capsys, "ingest", tmp_path / "cut.svm", "--name", "cut", "--store", tmp_path / "s")
    assert code == 0 and out.startswith(f"ingested {tmp_path / 'cut.svm'} as cut: 4 rows")
    assert err == (f"warning: {tmp_path / 'cut.svm'}:4: the file ends inside this line, with no newline after it: "
                   f"it may be truncated (a download or copy cut short); compare it with its source\n")
    code, out, err = run(capsys, "ingest", tmp_path / "cut_in_value.svm", "--name", "cut2", "--store", tmp_path / "s")
    assert code == 2 and err == (f"error: {tmp_path / 'cut_in_value.svm'}:4: value '' for feature 5 is not a number "
                                 f"(the file's last line, with no newline after it: the file may be truncated)\n")


def test_an_entry_whose_data_file_was_deleted_says_how_to_replace_it(tmp_path, capsys):
    """Its meta.json is there, its data.parquet not (deleted by hand, a copy cut short): the
    error says so and gives the command that replaces the entry, not the file system's "no
    such file"; the command it gives works."""
    path = tmp_path / "few.svm"
    path.write_text("+1 1:0.5 2:1\n-1 3:2\n+1 2:1\n-1 1:1\n")
    root = tmp_path / "s"
    assert run(capsys, "ingest", path, "--name", "few", "--store", root)[0] == 0
    (root / "few" / "data.parquet").unlink()
    with pytest.raises(store.StoreError) as err:
        store.read_dataset(root, "few")
    assert str(err.value) == (f"dataset 'few' at {root / 'few'}: its data.parquet is missing, though its meta.json "
                              f"is there (deleted, or a copy cut short); ingest it again: `python -m pipeline.data "
                              f"ingest {path} --name few --force`")
    assert run(capsys, "ingest", path, "--name", "few", "--force", "--store", root)[0] == 0
    assert store.read_dataset(root, "few").X.shape == (4, 3)


def test_ingest_malformed_libsvm_reports_the_line(tmp_path, capsys):
    path = tmp_path / "bad.svm"
    path.write_text("+1 1:0.5 2:1\n-1 3:2\n+1 2:1 x:3\n-1 1:1\n")
    code, out, err = run(capsys, "ingest", path, "--name", "bad", "--store", tmp_path / "s")
    assert code == 2 and out == ""
    assert ":3:" in err and f"{path}:3: feature index 'x' is not an integer" in err
    assert "Traceback" not in err
    assert not (tmp_path / "s").exists() or not os.listdir(tmp_path / "s")


def test_ingest_csv_with_label(tmp_path, capsys):
    path = tmp_path / "table.csv"
    path.write_text("f1,outcome,f2\n0.5,1,0\n0,0,2\n1.5,1,-3\n")
    code, _, err = run(capsys, "ingest", path, "--name", "tab", "--store", tmp_path)
    assert code == 2 and "no label column" in err and "columns: f1, outcome, f2" in err
    code, out, _ = run(
        capsys, "ingest", path, "--name", "tab", "--label", "outcome", "--store", tmp_path
    )
    assert code == 0
    ds = store.read_dataset(tmp_path, "tab")
    np.testing.assert_array_equal(ds.X.toarray(), [[0.5, 0], [0, 2], [1.5, -3]])
    np.testing.assert_array_equal(ds.y, [1, 0, 1])
    assert ds.meta["feature_names"] == ["f1", "f2"] and ds.meta["label_column"] == "outcome"


def test_ingest_missing_file_and_unknown_extension(tmp_path, capsys):
    code, _, err = run(capsys, "ingest", tmp_path / "nope.csv", "--name", "x", "--store", tmp_path)
    assert code == 2 and "no such file" in err
    odd = tmp_path / "data.xlsx"
    odd.write_text("x")
    code, _, err = run(capsys, "ingest", odd, "--name", "x", "--store", tmp_path)
    assert code == 2 and "--format" in err


def test_default_store_comes_from_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SVMBENCH_STORE", str(tmp_path / "env-store"))
    code, out, _ = run(capsys, "build", "digits_1v7")
    assert code == 0 and store.exists(tmp_path / "env-store", "digits_1v7")


def test_module_entry_point(tmp_path):
    env = {**os.environ, "SVMBENCH_STORE": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.data", "info", "absent"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: dataset 'absent' not found")


def test_build_row_group_size(tmp_path, capsys):
    code, out, _ = run(capsys, "build", "toy_blobs", "--row-group-size", "300", "--store", tmp_path)
    assert code == 0
    assert store.dataset_info(tmp_path, "toy_blobs")["row_group_size"] == 300
    assert len(store.dataset_info(tmp_path, "toy_blobs")["row_group_digests"]) == 7


def _write_empty_parquet(path, store_layout):
    import pyarrow as pa
    import pyarrow.parquet as pq

    if store_layout:  # the store's own sparse columns
        table = pa.table(
            {
                "y": pa.array([], pa.float64()),
                "indices": pa.array([], pa.list_(pa.int32())),
                "values": pa.array([], pa.list_(pa.float64())),
            }
        )
    else:
        table = pa.table({"f1": pa.array([], pa.float64()), "label": pa.array([], pa.int64())})
    pq.write_table(table, path)


NO_DATA_LINES = "no data lines (the file is empty or holds only comments and blank lines)"
EMPTY_INPUTS = {
    "empty.svm": ("", NO_DATA_LINES),
    "comments.svm": (
        "# exported by hand\n\n   \n# 1 1:0.5 -- a commented-out row is no row\n\r\n",
        NO_DATA_LINES,
    ),
    "empty.txt": ("\n\n", NO_DATA_LINES),
    "empty.csv": ("", "no header and no data lines (the file is empty or holds only blank lines)"),
    "blank.csv": (
        "\n  \n\n",
        "no header and no data lines (the file is empty or holds only blank lines)",
    ),
    "header.csv": ("f1,f2,label\n", "a header (columns: f1, f2, label) but no data lines"),
    "header_and_blanks.csv": ("f1,label\n\n\n", "a header (columns: f1, label) but no data lines"),
    "empty.parquet": (None, "no rows (the Parquet file holds only a schema)"),
    "empty_sparse.parquet": (None, "no rows (the Parquet file holds only a schema)"),
}


@pytest.mark.parametrize("filename", sorted(EMPTY_INPUTS))
def test_ingest_refuses_a_file_without_data(tmp_path, capsys, filename):
    text, problem = EMPTY_INPUTS[filename]
    path = tmp_path / filename
    if text is None:
        _write_empty_parquet(path, store_layout="sparse" in filename)
    else:
        path.write_bytes(text.encode())
    root = tmp_path / "store"
    root.mkdir()
    code, out, err = run(capsys, "ingest", path, "--name", "e", "--store", root)
    assert code == 2 and out == ""
    assert err == f"error: {path.resolve()}: {problem}\n"  # one line: no traceback
    # Nothing reached the store: no entry and no temporary folder.
    assert not store.exists(root, "e") and os.listdir(root) == []


def test_ingest_of_an_empty_file_through_the_module_entry_point(tmp_path):
    path = tmp_path / "empty.svm"
    path.write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.data", "ingest", str(path), "--name", "e"],
        cwd=REPO,
        env={**os.environ, "SVMBENCH_STORE": str(tmp_path / "store")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"error: {path.resolve()}: {NO_DATA_LINES}\n"
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    "filename, text",
    [
        ("late.svm", "# header comment\n\n" * 50 + "# last\n+1 2:0.5 # the one row\n"),
        ("one_row.csv", "\nf1,label\n\n0.5,1\n"),
    ],
)
def test_ingest_accepts_a_single_data_line_after_comments_and_blanks(
    tmp_path, capsys, filename, text
):
    path = tmp_path / filename
    path.write_text(text)
    code, out, err = run(capsys, "ingest", path, "--name", "one", "--store", tmp_path / "s")
    assert code == 0, err
    assert store.dataset_info(tmp_path / "s", "one")["n_rows"] == 1


def test_ingest_refuses_an_empty_file_of_a_format_named_by_flag(tmp_path, capsys):
    path = tmp_path / "export.dat"  # no extension to infer the format from
    path.write_text("# nothing but a comment\n")
    code, _, err = run(
        capsys, "ingest", path, "--name", "e", "--format", "svmlight", "--store", tmp_path / "s"
    )
    assert code == 2 and err == f"error: {path.resolve()}: {NO_DATA_LINES}\n"
    assert not (tmp_path / "s").exists()


def test_build_a_config_entry_by_name_with_its_parameters(tmp_path, capsys):
    """`build rcv1_full` builds what a run with datasets=[rcv1_full] reads: the builder its yaml
    names (rcv1_like) with the yaml's parameters (RCV1's 47,236 features), --param on top (a
    small n_samples here, to keep the test fast)."""
    from pipeline.data import datasets
    builder, params = data.config_entry("rcv1_full", {"n_samples": "300"})
    assert builder == "rcv1_like" and params["n_features"] == 47236 and params["n_samples"] == "300"
    assert data.config_entry("rcv1_like", {}) == ("rcv1_like", {})       # a builder stays itself
    code, out, _ = run(capsys, "build", "rcv1_full", "--param", "n_samples=300", "--store", tmp_path)
    assert code == 0
    entry = out.split()[1]
    assert entry == datasets.store_name("rcv1_like", params) and store.exists(tmp_path, entry)
    assert store.dataset_info(tmp_path, entry)["n_features"] == 47236


def test_every_name_a_run_takes_works_in_the_data_command(tmp_path, capsys, monkeypatch):
    """A config entry with parameters (as rcv1_full: its store entry is rcv1_like-<hash>) in
    build, info and remove; an ingested entry in build (nothing to build: said, not 'unknown
    dataset') and info."""
    from pipeline import installation
    from pipeline.data import datasets
    conf = tmp_path / "conf"
    (conf / "datasets").mkdir(parents=True)
    (conf / "datasets" / "tiny_text.yaml").write_text(
        "builder: rcv1_like\nparams: {n_samples: 300, n_features: 50, mean_nnz: 10.0}\n")
    monkeypatch.setattr(installation, "CONF_DIR", conf)      # where the data command reads it
    root = tmp_path / "store"
    entry = datasets.store_name("rcv1_like", {"n_samples": 300, "n_features": 50, "mean_nnz": 10.0})
    assert data.store_entry("tiny_text") == entry != "tiny_text"
    code, out, _ = run(capsys, "build", "tiny_text", "--store", root)
    assert code == 0 and out.startswith(f"built {entry}")
    assert run(capsys, "info", "tiny_text", "--store", root)[1].startswith(f"name:          {entry}")
    code, out, _ = run(capsys, "remove", "tiny_text", "--store", root)
    assert code == 0 and out.startswith(f"removed {entry} (tiny_text)") and not store.exists(root, entry)

    path = tmp_path / "few.svm"
    path.write_text("1 1:1\n-1 2:1\n1 1:2\n-1 2:3\n")
    assert run(capsys, "ingest", path, "--name", "few", "--store", root)[0] == 0
    code, out, err = run(capsys, "build", "few", "--store", root)
    assert code == 0 and out.startswith(f"few is in store {root}, ingested from ") and not err
    assert run(capsys, "info", "few", "--store", root)[1].startswith("name:          few")
