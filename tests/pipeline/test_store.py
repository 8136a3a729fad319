"""Tests for pipeline.data.store: round trips, fingerprints, corruption, errors, atomic writes."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.data import store
from pipeline.data.store import StoreError

# Finite floats over the whole double range, including subnormals and negatives; zero is
# excluded from matrix values because the store drops explicit zeros by design (tested apart).
_values = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True).filter(
    lambda v: v != 0.0
)
_labels = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def sparse_problems(draw):
    """A random CSR matrix with labels, covering the shapes that break naive codecs."""
    n_rows = draw(st.integers(0, 12))
    # Extra columns beyond any possibly-occupied one: trailing all-zero columns must survive.
    n_used = draw(st.integers(0, 8))
    n_features = n_used + draw(st.integers(0, 4))
    rows, cols, vals = [], [], []
    full_row = draw(st.integers(-1, n_rows - 1)) if n_rows and n_used else -1
    for i in range(n_rows):
        if i == full_row:
            cs = list(range(n_used))
        else:
            cs = (
                sorted(draw(st.sets(st.integers(0, n_used - 1), max_size=n_used))) if n_used else []
            )
        rows += [i] * len(cs)
        cols += cs
        vals += [draw(_values) for _ in cs]
    X = sp.csr_matrix(
        (np.array(vals, dtype=np.float64), (np.array(rows, int), np.array(cols, int))),
        shape=(n_rows, n_features),
    )
    y = np.array(draw(st.lists(_labels, min_size=n_rows, max_size=n_rows)), dtype=np.float64)
    return X, y


def _assert_bit_equal(ds: store.Dataset, X: sp.csr_matrix, y: np.ndarray) -> None:
    assert ds.X.shape == X.shape
    np.testing.assert_array_equal(ds.X.indptr.astype(np.int64), X.indptr.astype(np.int64))
    np.testing.assert_array_equal(ds.X.indices, X.indices)
    assert ds.X.indices.dtype == np.int32
    assert ds.X.data.dtype == np.float64 and ds.y.dtype == np.float64
    # Compare the bits, not the values: -0.0 vs 0.0 or a rounded subnormal must not pass.
    np.testing.assert_array_equal(ds.X.data.view(np.int64), X.data.view(np.int64))
    np.testing.assert_array_equal(ds.y.view(np.int64), y.view(np.int64))


@settings(max_examples=60, deadline=None)
@given(sparse_problems())
def test_round_trip_is_bit_exact_for_every_row_group_size(problem):
    X, y = problem
    fingerprints = set()
    with tempfile.TemporaryDirectory() as root:
        for i, rgs in enumerate([1, 3, 1 << 16]):
            meta = store.write_dataset(
                root, f"d{i}", X, y, source={"test": True}, row_group_size=rgs
            )
            ds = store.read_dataset(root, f"d{i}")
            _assert_bit_equal(ds, X, y)
            assert meta["n_rows"] == X.shape[0] and meta["n_features"] == X.shape[1]
            assert meta["nnz"] == X.nnz
            fingerprints.add(meta["fingerprint"])
            pf = pq.ParquetFile(Path(root) / f"d{i}" / store.DATA_FILE)
            assert pf.metadata.num_rows == X.shape[0]
            if X.shape[0]:
                assert pf.metadata.num_row_groups == -(-X.shape[0] // rgs)
    assert len(fingerprints) == 1
    assert fingerprints == {store.fingerprint(X, y)}


def test_fingerprint_stable_across_rewrites_and_input_forms(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(50, 20, density=0.2, format="csr", random_state=rng)
    y = rng.integers(0, 2, 50).astype(float)
    fp1 = store.write_dataset(tmp_path, "a", X, y, source={})["fingerprint"]
    fp2 = store.write_dataset(tmp_path, "a", X, y, source={}, overwrite=True)["fingerprint"]
    fp_dense = store.write_dataset(tmp_path, "b", X.toarray(), y, source={})["fingerprint"]
    fp_coo = store.write_dataset(tmp_path, "c", X.tocoo(), list(y), source={})["fingerprint"]
    assert fp1 == fp2 == fp_dense == fp_coo
    # and it does depend on the content
    y2 = y.copy()
    y2[0] = 1 - y2[0]
    assert store.fingerprint(X, y2) != fp1
    assert store.fingerprint(sp.csr_matrix(X, shape=(50, 21)), y) != fp1  # extra column


def test_canonical_form_sums_duplicates_sorts_and_drops_zeros(tmp_path):
    # Row 0 has an explicit zero, unsorted indices and a duplicate entry.
    X = sp.csr_matrix(
        (np.array([0.0, 2.0, 1.0, 3.0]), np.array([1, 4, 0, 0]), np.array([0, 4, 4])),
        shape=(2, 6),
    )
    meta = store.write_dataset(tmp_path, "c", X, [1, 2], source={})
    ds = store.read_dataset(tmp_path, "c")
    assert meta["nnz"] == 2
    np.testing.assert_array_equal(ds.X.indices, [0, 4])
    np.testing.assert_array_equal(ds.X.data, [4.0, 2.0])
    assert ds.X.shape == (2, 6) and ds.X.has_sorted_indices


def test_meta_contents(tmp_path):
    X = sp.csr_matrix(np.eye(4))
    meta = store.write_dataset(
        tmp_path,
        "m",
        X,
        [1, -1, 1, 1],
        source={"generator": "eye"},
        license="CC0-1.0",
        citation="nobody",
        preprocessing=["none"],
        extra={"feature_names": np.array(["a", "b", "c", "d"]), "weight": np.float32(0.5)},
        row_group_size=2,
    )
    on_disk = json.loads((tmp_path / "m" / store.META_FILE).read_text())
    assert on_disk == meta
    assert meta["classes"] == [-1.0, 1.0] and meta["class_counts"] == [1, 3]
    assert meta["density"] == 0.25
    assert meta["source"] == {"generator": "eye"}
    assert meta["license"] == "CC0-1.0" and meta["citation"] == "nobody"
    assert meta["preprocessing"] == ["none"]
    assert meta["feature_names"] == ["a", "b", "c", "d"] and meta["weight"] == 0.5
    assert meta["svmbench_version"] and meta["created"]
    assert meta["row_group_size"] == 2
    with pytest.raises(ValueError, match="fingerprint"):
        store.write_dataset(tmp_path, "m2", X, [1, 1, 1, 1], source={}, extra={"fingerprint": 1})


def test_invalid_inputs(tmp_path):
    with pytest.raises(ValueError, match="NaN"):
        store.write_dataset(tmp_path, "x", np.array([[np.nan]]), [1], source={})
    with pytest.raises(ValueError, match="NaN"):
        store.write_dataset(tmp_path, "x", np.ones((1, 1)), [np.inf], source={})
    with pytest.raises(ValueError, match="one label per row"):
        store.write_dataset(tmp_path, "x", np.ones((2, 1)), [1], source={})
    for bad in ["", ".hidden", "../escape", "a/b", "-x"]:
        with pytest.raises(StoreError, match="invalid dataset name"):
            store.write_dataset(tmp_path, bad, np.ones((1, 1)), [1], source={})
    assert not any(tmp_path.iterdir())


def test_corrupted_value_is_detected(tmp_path):
    rng = np.random.default_rng(1)
    X = sp.random(30, 10, density=0.3, format="csr", random_state=rng)
    y = np.ones(30)
    store.write_dataset(tmp_path, "c", X, y, source={}, row_group_size=7)
    data_file = tmp_path / "c" / store.DATA_FILE
    table = pq.read_table(data_file)
    values = table.column("values").combine_chunks()
    flat = values.values.to_numpy().copy()
    flat[5] += 1.0  # one value changed, structure intact
    tampered = pa.ListArray.from_arrays(values.offsets, pa.array(flat))
    pq.write_table(table.set_column(2, "values", tampered), data_file)

    with pytest.raises(StoreError, match="fingerprint mismatch") as info:
        store.read_dataset(tmp_path, "c")
    assert str(tmp_path / "c") in str(info.value)
    assert store.read_dataset(tmp_path, "c", verify=False).X.nnz == X.nnz


def test_structural_corruption_is_detected_without_verify(tmp_path):
    X = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]))
    store.write_dataset(tmp_path, "s", X, [0, 1], source={})
    data_file = tmp_path / "s" / store.DATA_FILE
    table = pq.read_table(data_file)
    # Swap the indices of row 0 so they are no longer sorted.
    offsets = pa.array(np.array([0, 2, 4], dtype=np.int32))
    bad = pa.ListArray.from_arrays(offsets, pa.array(np.array([1, 0, 1, 2], dtype=np.int32)))
    pq.write_table(table.set_column(1, "indices", bad), data_file)
    with pytest.raises(StoreError, match="not sorted"):
        store.read_dataset(tmp_path, "s", verify=False)

    # Rows dropped from the parquet file disagree with meta.json.
    pq.write_table(table.slice(0, 1), data_file)
    with pytest.raises(StoreError, match="meta.json says 2 rows"):
        store.read_dataset(tmp_path, "s", verify=False)


def test_missing_dataset_lists_available(tmp_path):
    for name in ["beta", "alpha"]:
        store.write_dataset(tmp_path, name, np.ones((1, 1)), [1], source={})
    with pytest.raises(StoreError) as info:
        store.read_dataset(tmp_path, "gamma")
    message = str(info.value)
    assert "'gamma' not found" in message and str(tmp_path) in message
    assert "available: alpha, beta" in message
    assert "python -m pipeline.data build gamma" in message
    with pytest.raises(StoreError, match="available: alpha, beta"):
        store.dataset_info(tmp_path, "gamma")
    with pytest.raises(StoreError, match="not found"):
        store.remove_dataset(tmp_path, "gamma")
    with pytest.raises(StoreError, match=r"available: \(none\)"):
        store.read_dataset(tmp_path / "nowhere", "x")


def test_list_info_exists_remove(tmp_path):
    assert store.list_datasets(tmp_path / "absent") == []
    store.write_dataset(tmp_path, "b", np.ones((2, 3)), [0, 1], source={})
    store.write_dataset(tmp_path, "a", np.ones((1, 1)), [1], source={})
    (tmp_path / "not_a_dataset").mkdir()  # stray folders are not entries
    assert [m["name"] for m in store.list_datasets(tmp_path)] == ["a", "b"]
    assert store.dataset_info(tmp_path, "b")["n_features"] == 3
    assert store.exists(tmp_path, "a") and not store.exists(tmp_path, "zzz")
    store.remove_dataset(tmp_path, "a")
    assert not store.exists(tmp_path, "a")
    assert sorted(os.listdir(tmp_path)) == ["b", "not_a_dataset"]


def test_overwrite_is_atomic_and_leaves_no_debris(tmp_path):
    store.write_dataset(tmp_path, "d", np.ones((3, 2)), [1, 1, 1], source={})
    with pytest.raises(store.DatasetExistsError, match="pass overwrite=True to replace it"):
        store.write_dataset(tmp_path, "d", np.ones((4, 2)), [1, 1, 1, 1], source={})
    assert store.read_dataset(tmp_path, "d").X.shape == (3, 2)
    meta = store.write_dataset(
        tmp_path, "d", np.ones((4, 2)), [1, 1, 1, 1], source={}, overwrite=True
    )
    assert meta["n_rows"] == 4 and store.read_dataset(tmp_path, "d").X.shape == (4, 2)
    assert os.listdir(tmp_path) == ["d"]


def test_losing_a_write_race_keeps_the_winner(tmp_path, monkeypatch):
    store.write_dataset(tmp_path, "r", np.ones((3, 2)), [1, 1, 1], source={"who": "winner"})
    # Pretend the entry appeared only after our existence check, as with a concurrent writer.
    monkeypatch.setattr(store, "exists", lambda root, name: False)
    with pytest.raises(store.DatasetExistsError):
        store.write_dataset(tmp_path, "r", np.ones((5, 2)), np.ones(5), source={"who": "loser"})
    assert os.listdir(tmp_path) == ["r"]  # the loser's temporary folder is gone
    assert store.dataset_info(tmp_path, "r")["source"] == {"who": "winner"}


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store, "fs_write_text", boom)
    with pytest.raises(OSError, match="disk full"):
        store.write_dataset(tmp_path, "f", np.ones((3, 2)), [1, 1, 1], source={})
    assert os.listdir(tmp_path) == []


def test_rows_subselect(tmp_path):
    X = sp.csr_matrix(np.arange(12, dtype=float).reshape(6, 2))
    y = np.arange(6, dtype=float)
    store.write_dataset(tmp_path, "s", X, y, source={}, row_group_size=4)
    ds = store.read_dataset(tmp_path, "s", rows=[5, 0, 3])
    np.testing.assert_array_equal(ds.X.toarray(), X.toarray()[[5, 0, 3]])
    np.testing.assert_array_equal(ds.y, [5, 0, 3])
    assert ds.meta["n_rows"] == 6 and ds.name == "s" and len(ds.fingerprint) == 64


def test_arrow_to_csr_handles_sliced_and_chunked_columns():
    rng = np.random.default_rng(3)
    X = sp.random(20, 9, density=0.4, format="csr", random_state=rng)
    y = rng.normal(size=20)
    Xc, yc = store.canonicalize(X, y)
    table = store._csr_to_table(Xc, yc, 0, 20)
    # Slices keep their parent's offsets and child arrays; chunks must be rebased.
    chunked = pa.concat_tables(
        [table.slice(0, 3), table.slice(3, 0), table.slice(3, 10), table.slice(13)]
    )
    assert chunked.column("indices").num_chunks == 4
    X2, y2 = store.arrow_to_csr(chunked, 9)
    assert (X2 != Xc).nnz == 0 and X2.shape == (20, 9)
    np.testing.assert_array_equal(y2, yc)
    with pytest.raises(StoreError, match="missing column"):
        store.arrow_to_csr(table.drop_columns(["values"]))
    with pytest.raises(StoreError, match="out of range"):
        store.arrow_to_csr(table, 2)


def test_default_store_root(monkeypatch, tmp_path):
    from pipeline.data import cache     # where user_cache_dir reads the platform
    monkeypatch.setenv("SVMBENCH_STORE", str(tmp_path / "s"))
    assert store.default_store_root() == tmp_path / "s"
    monkeypatch.delenv("SVMBENCH_STORE")
    monkeypatch.setattr(cache.sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert store.default_store_root() == tmp_path / "cache" / "svmbench" / "datasets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert store.default_store_root() == Path.home() / ".cache" / "svmbench" / "datasets"
    monkeypatch.setattr(cache.sys, "platform", "darwin")
    assert (
        store.default_store_root() == Path.home() / "Library" / "Caches" / "svmbench" / "datasets"
    )
    monkeypatch.setattr(cache.sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert store.default_store_root() == tmp_path / "local" / "svmbench" / "datasets"


def test_chunked_write_equals_whole_write(tmp_path):
    rng = np.random.default_rng(5)
    X = sp.random(103, 17, density=0.3, format="csr", random_state=rng)
    y = rng.integers(0, 3, 103).astype(float)
    whole = store.write_dataset(tmp_path, "w", X, y, source={}, row_group_size=10)
    for sizes in ([103], [1] * 103, [7, 0, 50, 46], [33, 70]):
        bounds = np.cumsum([0, *sizes])
        blocks = ((X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True))
        meta = store.write_dataset_chunks(
            tmp_path, "c", blocks, 17, source={}, row_group_size=10, overwrite=True
        )
        assert meta["fingerprint"] == whole["fingerprint"] == store.fingerprint(X, y)
        assert meta["row_group_digests"] == whole["row_group_digests"]
        assert meta["class_counts"] == whole["class_counts"] and meta["nnz"] == X.nnz
        assert pq.ParquetFile(tmp_path / "c" / store.DATA_FILE).metadata.num_row_groups == 11
    with pytest.raises(ValueError, match="row block 0 has 3 columns, expected 17"):
        store.write_dataset_chunks(tmp_path, "bad", [(np.ones((2, 3)), [1, 1])], 17, source={})
    assert not store.exists(tmp_path, "bad")


def test_rows_read_only_the_row_groups_holding_them(tmp_path, monkeypatch):
    rng = np.random.default_rng(6)
    X = sp.random(100, 9, density=0.4, format="csr", random_state=rng)
    y = np.arange(100, dtype=float)
    store.write_dataset(tmp_path, "g", X, y, source={}, row_group_size=10)
    read = []
    original = store._read_group

    def spy(pf, g, *args):
        read.append(int(g))
        return original(pf, g, *args)

    monkeypatch.setattr(store, "_read_group", spy)
    rows = [57, 3, -1, 55, 3]
    ds = store.read_dataset(tmp_path, "g", rows=rows)
    assert sorted(set(read)) == [0, 5, 9]
    np.testing.assert_array_equal(ds.y, [57, 3, 99, 55, 3])
    assert (ds.X != X[[57, 3, 99, 55, 3]]).nnz == 0 and ds.X.has_sorted_indices
    mask = np.zeros(100, dtype=bool)
    mask[[12, 14]] = True
    np.testing.assert_array_equal(store.read_dataset(tmp_path, "g", rows=mask).y, [12, 14])
    with pytest.raises(IndexError, match="row 100 out of range for 100 rows"):
        store.read_dataset(tmp_path, "g", rows=[100])


def test_partial_read_verifies_the_row_groups_it_reads(tmp_path):
    X = sp.csr_matrix(np.arange(1, 41, dtype=float).reshape(20, 2))
    store.write_dataset(tmp_path, "p", X, np.ones(20), source={}, row_group_size=5)
    data_file = tmp_path / "p" / store.DATA_FILE
    table = pq.read_table(data_file)
    values = table.column("values").combine_chunks()
    flat = values.values.to_numpy().copy()
    flat[30] += 1.0  # row 15, in row group 3
    tampered = table.set_column(
        2, "values", pa.ListArray.from_arrays(values.offsets, pa.array(flat))
    )
    pq.write_table(tampered, data_file, row_group_size=5)
    assert store.read_dataset(tmp_path, "p", rows=[0, 6]).X.shape == (2, 2)  # groups 0, 1 ok
    with pytest.raises(StoreError, match="row group 3 of data.parquet does not match its digest"):
        store.read_dataset(tmp_path, "p", rows=[16])
    with pytest.raises(StoreError, match="fingerprint mismatch"):
        store.read_dataset(tmp_path, "p")


def test_an_entry_of_an_earlier_format_is_refused_with_the_command_that_rebuilds_it(tmp_path):
    """Format 1 (its whole-matrix fingerprint, no row group digests) is no longer read: one
    line, naming the entry and what writes it anew; the current format reads and verifies."""
    X = sp.csr_matrix(np.eye(3))
    y = np.array([1.0, -1.0, 1.0])
    store.write_dataset(tmp_path, "old", X, y, source={})
    assert store.read_dataset(tmp_path, "old").fingerprint == store.dataset_info(tmp_path, "old")["fingerprint"]
    np.testing.assert_array_equal(store.read_labels(tmp_path, "old", verify=True), y)
    meta_file = tmp_path / "old" / store.META_FILE
    meta = json.loads(meta_file.read_text())
    meta.update(format_version=1)
    del meta["row_group_digests"]
    meta_file.write_text(json.dumps(meta))
    for read in (lambda: store.read_dataset(tmp_path, "old"), lambda: store.read_dataset(tmp_path, "old", rows=[2]),
                 lambda: store.read_labels(tmp_path, "old", verify=True)):
        with pytest.raises(StoreError, match=r"dataset 'old' at .*: store format 1, written by an earlier svmbench "
                                             r"\(this one reads format 2\); build it again: `python -m pipeline.data remove old`"):
            read()


def _rewrite(data_file, group_sizes, change_value_at=None):
    """Rewrite ``data_file`` in row groups of ``group_sizes`` rows (the layout need not be the
    writer's), optionally with the stored value at flat position ``change_value_at`` changed;
    meta.json is left as it was."""
    table = pq.read_table(data_file)
    if change_value_at is not None:
        values = table.column("values").combine_chunks()
        flat = values.values.to_numpy().copy()
        flat[change_value_at] += 1.0
        tampered = pa.ListArray.from_arrays(values.offsets, pa.array(flat))
        table = table.set_column(2, "values", tampered)
    assert sum(group_sizes) == table.num_rows
    with pq.ParquetWriter(data_file, table.schema) as writer:
        start = 0
        for size in group_sizes:
            writer.write_table(table.slice(start, size), row_group_size=size)
            start += size
    metadata = pq.ParquetFile(data_file).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == group_sizes


def _entry_of_four_groups(tmp_path):
    """20 rows written as 4 row groups of 5; row r holds the values 2r + 1 and 2r + 2."""
    X = sp.csr_matrix(np.arange(1, 41, dtype=float).reshape(20, 2))
    store.write_dataset(tmp_path, "p", X, np.arange(20.0), source={}, row_group_size=5)
    return X, tmp_path / "p" / store.DATA_FILE


_REFUSED = "dataset 'p' at .*(fingerprint mismatch|does not match its digest)"


@pytest.mark.parametrize(
    "layout",
    [[5, 5, 5, 5], [7, 7, 6], [3, 5, 5, 7]],
    ids=["writers-layout", "fewer-groups", "same-count-other-boundaries"],
)
def test_partial_read_of_a_corrupted_row_is_refused_whatever_the_layout(tmp_path, layout):
    _, data_file = _entry_of_four_groups(tmp_path)
    meta_before = (tmp_path / "p" / store.META_FILE).read_text()
    _rewrite(data_file, layout, change_value_at=31)  # row 15's second value: 32 -> 33
    assert (tmp_path / "p" / store.META_FILE).read_text() == meta_before

    with pytest.raises(StoreError, match=_REFUSED):
        store.read_dataset(tmp_path, "p", rows=[15])
    mask = np.zeros(20, dtype=bool)
    mask[[14, 15]] = True
    with pytest.raises(StoreError, match=_REFUSED):
        store.read_dataset(tmp_path, "p", rows=mask)
    # Without verification the changed value comes back: the refusal above is the check.
    assert store.read_dataset(tmp_path, "p", rows=[15], verify=False).X[0, 1] == 33.0


def test_partial_read_after_a_relayout_verifies_the_whole_entry(tmp_path):
    # With the writer's layout gone, the per-group digests say nothing about the new groups:
    # a verified partial read falls back to the whole-entry fingerprint, so even a row far
    # from the changed one is refused (reading its group alone would go unverified).
    _, data_file = _entry_of_four_groups(tmp_path)
    _rewrite(data_file, [7, 7, 6], change_value_at=31)
    with pytest.raises(StoreError, match="dataset 'p' at .*fingerprint mismatch"):
        store.read_dataset(tmp_path, "p", rows=[0])


@pytest.mark.parametrize(
    "layout", [[7, 7, 6], [3, 5, 5, 7], [20]], ids=["fewer-groups", "same-count", "one-group"]
)
def test_intact_rows_relaid_out_still_read_verified(tmp_path, layout):
    # Other row groups holding the same rows are not corruption: the digests no longer apply
    # (also with as many groups as before, whose digests would all mismatch), the
    # fingerprint does.
    X, data_file = _entry_of_four_groups(tmp_path)
    _rewrite(data_file, layout)
    ds = store.read_dataset(tmp_path, "p", rows=[15, 2])
    np.testing.assert_array_equal(ds.X.toarray(), X.toarray()[[15, 2]])
    np.testing.assert_array_equal(ds.y, [15, 2])
    assert (store.read_dataset(tmp_path, "p").X != X).nnz == 0


def test_a_write_failing_midway_leaves_the_previous_entry_whole(tmp_path):
    # The rows come from a generator that fails after two row groups are on disk, as a
    # builder that runs out of memory or a full disk would: the old entry must survive intact
    # (it is replaced only by the final rename) and no temporary folder may remain.
    X = sp.csr_matrix(np.arange(1, 41, dtype=float).reshape(20, 2))
    old = store.write_dataset(tmp_path, "w", X, np.ones(20), source={"v": 1}, row_group_size=5)

    def rows_then_failure():
        yield X[:12], np.zeros(12)
        raise MemoryError("builder ran out of memory")

    with pytest.raises(MemoryError):
        store.write_dataset_chunks(
            tmp_path, "w", rows_then_failure(), 2, source={"v": 2}, row_group_size=5, overwrite=True
        )
    assert os.listdir(tmp_path) == ["w"]
    assert sorted(os.listdir(tmp_path / "w")) == [store.DATA_FILE, store.META_FILE]
    ds = store.read_dataset(tmp_path, "w")
    assert ds.meta == old and (ds.X != X).nnz == 0


def test_row_subsets_come_in_one_pass_in_their_order_in_exact_arrays(tmp_path, monkeypatch):
    rng = np.random.default_rng(8)
    X = sp.random(100, 9, density=0.4, format="csr", random_state=rng)
    X.data[X.indptr[7] : X.indptr[8]] = 0.0      # an empty row once stored (zeros are dropped)
    y = np.arange(100, dtype=float)
    store.write_dataset(tmp_path, "g", X, y, source={}, row_group_size=10)
    Xc, _ = store.canonicalize(X, y)
    read = []
    original = store._read_group
    monkeypatch.setattr(store, "_read_group", lambda pf, g, *a: read.append(int(g)) or original(pf, g, *a))
    subsets = [rng.permutation(100)[:70], [57, 3, -1, 55, 3, 7], [], np.arange(100) % 3 == 0]
    out = store.read_row_subsets(tmp_path, "g", subsets)
    assert sorted(read) == list(range(10))       # each row group once for all subsets
    for rows, (Xs, ys) in zip([subsets[0], [57, 3, 99, 55, 3, 7], [], np.flatnonzero(subsets[3])], out, strict=True):
        rows = np.asarray(rows, dtype=int)
        assert Xs.shape == (len(rows), 9) and (Xs != Xc[rows]).nnz == 0
        np.testing.assert_array_equal(ys, y[rows])
        # Canonical and exact (no slack at the end), as a Problem takes it without a copy.
        assert Xs.indices.dtype == np.int32 and Xs.indptr.dtype == np.int32 and Xs.has_sorted_indices
        assert Xs.data.size == Xs.indices.size == Xs.nnz == Xc[rows].nnz
    with pytest.raises(StoreError, match="expected 000000000000: it was rebuilt since"):
        store.read_row_subsets(tmp_path, "g", [[1]], fingerprint="0" * 64)


def test_labels_are_read_without_the_matrix_and_verified_as_a_whole_read(tmp_path):
    X, data_file = _entry_of_four_groups(tmp_path)
    np.testing.assert_array_equal(store.read_labels(tmp_path, "p"), np.arange(20.0))
    _rewrite(data_file, [5, 5, 5, 5], change_value_at=33)      # a value, not a label, changed
    with pytest.raises(StoreError, match="fingerprint mismatch"):
        store.read_labels(tmp_path, "p")
    np.testing.assert_array_equal(store.read_labels(tmp_path, "p", verify=False), np.arange(20.0))


def test_no_copy_of_the_matrix_from_a_store_read_to_the_problem(tmp_path):
    """A canonical CSR read from the store is what every solver reads: building the Problem (and
    the fold read that a task makes) shares its buffers instead of copying them per fit."""
    from solvers import Problem
    rng = np.random.default_rng(9)
    X = sp.random(60, 7, density=0.5, format="csr", random_state=rng)
    store.write_dataset(tmp_path, "n", X, np.where(np.arange(60) % 2, 1.0, -1.0), source={})
    ds = store.read_dataset(tmp_path, "n")
    (X_fold, y_fold), = store.read_row_subsets(tmp_path, "n", [np.arange(0, 60, 3)[::-1]])
    for Xs, ys in ((ds.X, ds.y), (X_fold, y_fold)):
        problem = Problem.build(Xs, ys, C=1.0, intercept="regularized")
        assert problem.X_csr is problem.X
        for part in ("data", "indices", "indptr"):
            assert np.shares_memory(getattr(problem.X, part), getattr(Xs, part)), part
