"""The on-disk dataset store.

A dataset is a folder ``<root>/<name>/`` holding two files:

``data.parquet``
    One row per sample, written in row groups, with the columns ``y`` (float64 label),
    ``indices`` (list<int32>, strictly increasing within a row) and ``values``
    (list<float64>). The list offsets of a row group *are* the CSR ``indptr`` of those rows,
    so reading never loops over rows in Python.
``meta.json``
    What the data are and where they came from: shape, nnz, classes and their counts, a
    content fingerprint, source, license, citation, preprocessing and the svmbench version.

The content fingerprint is a sha256 over a canonical byte serialisation of the CSR arrays and
the labels (see :func:`fingerprint`), independent of Parquet's encoding, compression and row
group size, so that experiment plans can key results on the data rather than on a name.

Writes are atomic: an entry is assembled in a hidden temporary folder inside the root and
renamed into place, so a reader (or a second writer racing for the same name) sees either
no entry or a complete one. Filesystem access goes through the ``_fs_*`` helpers at the end of
this module, which is the one place to change when remote (fsspec) roots are supported.

This module imports no other pipeline module, so that solver-side tools and workers can read
the store with nothing but numpy, scipy and pyarrow.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import re
import shutil
import struct
import sys
import uuid
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

__all__ = [
    "DATA_FILE",
    "META_FILE",
    "Dataset",
    "DatasetExistsError",
    "StoreError",
    "arrow_to_csr",
    "canonicalize",
    "dataset_info",
    "dataset_path",
    "default_store_root",
    "exists",
    "fingerprint",
    "list_datasets",
    "read_dataset",
    "remove_dataset",
    "write_dataset",
]

DATA_FILE = "data.parquet"
META_FILE = "meta.json"

#: Bumped when the layout of ``data.parquet``/``meta.json`` changes incompatibly.
FORMAT_VERSION = 1

# Prefix of the fingerprinted byte stream: changing the canonical serialisation must change
# every fingerprint, so the version is part of the hashed bytes.
_FINGERPRINT_TAG = b"svmbench-dataset-fingerprint-v1\x00"

# Above this many distinct label values the data are not a classification set; listing every
# value in meta.json would only bloat it, so classes/class_counts are left null.
_MAX_LISTED_CLASSES = 1000

# Names become folder names: keep them portable and unable to escape the root. Names starting
# with "." are reserved for the store's own temporary and trash folders.
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")

_SCHEMA = pa.schema(
    [
        pa.field("y", pa.float64()),
        pa.field("indices", pa.list_(pa.int32())),
        pa.field("values", pa.list_(pa.float64())),
    ]
)

_RESERVED_META_KEYS = frozenset(
    {
        "name",
        "format_version",
        "n_rows",
        "n_features",
        "nnz",
        "density",
        "n_classes",
        "classes",
        "class_counts",
        "fingerprint",
        "source",
        "license",
        "citation",
        "preprocessing",
        "svmbench_version",
        "created",
        "row_group_size",
    }
)


class StoreError(Exception):
    """A dataset store operation failed; the message names the dataset or path and the problem."""


class DatasetExistsError(StoreError):
    """A dataset of that name is already in the store and overwriting was not asked for."""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A dataset read from the store.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix of shape (n_rows, n_features)
        Sorted int32 column indices, float64 values, no explicit zeros.
    y : ndarray of shape (n_rows,), float64
        Labels as stored (the solver side maps two classes to -1/+1).
    meta : dict
        The contents of ``meta.json``; it describes the stored dataset, also when only some
        ``rows`` were read.
    """

    X: sp.csr_matrix
    y: np.ndarray
    meta: dict

    @property
    def name(self) -> str:
        """Store entry name."""
        return self.meta["name"]

    @property
    def fingerprint(self) -> str:
        """Content fingerprint of the stored dataset (hex sha256)."""
        return self.meta["fingerprint"]


# --------------------------------------------------------------------------------------------
# Canonical form and fingerprint
# --------------------------------------------------------------------------------------------


def canonicalize(X: Any, y: Any) -> tuple[sp.csr_matrix, np.ndarray]:
    """Return copies of ``X`` and ``y`` in the store's canonical form.

    The canonical ``X`` is a CSR matrix with duplicate entries summed, column indices sorted
    and stored as int32, values stored as float64, and explicit zeros removed
    (``eliminate_zeros``): a stored zero and an absent entry mean the same to every solver,
    and dropping them makes ``nnz`` and the fingerprint independent of how the caller
    happened to represent zeros. No other value is changed.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_rows, n_features)
        Dense ndarray, or any scipy sparse matrix/array.
    y : array-like of shape (n_rows,)
        Labels, convertible to float64.

    Returns
    -------
    X : scipy.sparse.csr_matrix
    y : ndarray of float64, C-contiguous

    Raises
    ------
    ValueError
        If shapes disagree, or if ``X`` or ``y`` contain NaN or infinity.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    else:
        dense = np.asarray(X, dtype=np.float64)
        if dense.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got shape {dense.shape}")
        X = sp.csr_matrix(dense)
    X.sum_duplicates()  # also sorts the indices of every row
    X.eliminate_zeros()
    n_rows, n_features = X.shape
    if n_features > np.iinfo(np.int32).max:
        raise ValueError(f"n_features={n_features} does not fit the store's int32 indices")
    if not np.all(np.isfinite(X.data)):
        raise ValueError("X contains NaN or infinite values")
    indices = np.ascontiguousarray(X.indices, dtype=np.int32)
    indptr = np.ascontiguousarray(X.indptr, dtype=_indptr_dtype(X.nnz))
    data = np.ascontiguousarray(X.data, dtype=np.float64)
    X = _make_csr(data, indices, indptr, (n_rows, n_features))

    y = np.array(y, dtype=np.float64, copy=True)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(f"y must be one label per row: X has {n_rows} rows, y has shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    return X, np.ascontiguousarray(y)


def fingerprint(X: Any, y: Any) -> str:
    """Content fingerprint of a dataset, as the store records it.

    The sha256 of: a version tag; n_rows, n_features and nnz as little-endian int64; then
    ``indptr`` as little-endian int64, ``indices`` as int32, ``values`` as float64 and ``y``
    as float64, all of the canonical form (:func:`canonicalize`). It therefore depends only on
    the matrix and the labels, not on row groups, compression or how ``X`` was passed.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_rows, n_features)
    y : array-like of shape (n_rows,)

    Returns
    -------
    str
        64 hex digits.
    """
    Xc, yc = canonicalize(X, y)
    return _fingerprint_canonical(Xc, yc)


def _fingerprint_canonical(X: sp.csr_matrix, y: np.ndarray) -> str:
    # Caller guarantees canonical form; only byte order and width are fixed here.
    n_rows, n_features = X.shape
    h = hashlib.sha256()
    h.update(_FINGERPRINT_TAG)
    h.update(struct.pack("<qqq", n_rows, n_features, X.nnz))
    for arr, dtype in ((X.indptr, "<i8"), (X.indices, "<i4"), (X.data, "<f8"), (y, "<f8")):
        h.update(memoryview(np.ascontiguousarray(arr, dtype=dtype)).cast("B"))
    return h.hexdigest()


def _indptr_dtype(nnz: int) -> type:
    return np.int32 if nnz <= np.iinfo(np.int32).max else np.int64


def _make_csr(data, indices, indptr, shape) -> sp.csr_matrix:
    # The constructor may otherwise re-derive an index dtype and copy; our arrays are already
    # canonical, and the sorted flag saves scipy a later O(nnz) check.
    X = sp.csr_matrix((data, indices, indptr), shape=shape, copy=False)
    X.has_sorted_indices = True
    return X


# --------------------------------------------------------------------------------------------
# Arrow <-> CSR
# --------------------------------------------------------------------------------------------


def _csr_to_table(X: sp.csr_matrix, y: np.ndarray, start: int, stop: int) -> pa.Table:
    """Rows ``start:stop`` of a canonical CSR as an Arrow table, without a per-row loop."""
    lo, hi = int(X.indptr[start]), int(X.indptr[stop])
    # List offsets are int32 in list<...>: rebasing each row group at zero keeps them in
    # range even when the whole matrix has more than 2**31 entries.
    offsets = pa.array((X.indptr[start : stop + 1] - lo).astype(np.int32))
    indices = pa.ListArray.from_arrays(offsets, pa.array(X.indices[lo:hi], type=pa.int32()))
    values = pa.ListArray.from_arrays(offsets, pa.array(X.data[lo:hi], type=pa.float64()))
    return pa.Table.from_arrays([pa.array(y[start:stop]), indices, values], schema=_SCHEMA)


def _list_column_parts(column: pa.ChunkedArray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (rebased, int64, length n+1) and flattened child values of a list column.

    Loops over Arrow chunks (row groups), never over rows. A chunk may be a slice of a larger
    list array, so its offsets need not start at zero and its child array may extend beyond
    the slice: both are cut to the slice before concatenating.
    """
    offset_parts = [np.zeros(1, dtype=np.int64)]
    child_parts = []
    base = 0
    for chunk in column.chunks:
        if chunk.null_count:
            raise StoreError(f"{what}: {chunk.null_count} null rows")
        offs = chunk.offsets.to_numpy().astype(np.int64)
        lo, hi = int(offs[0]), int(offs[-1])
        child = chunk.values.slice(lo, hi - lo)
        if child.null_count:
            raise StoreError(f"{what}: {child.null_count} null list items")
        offset_parts.append(offs[1:] - lo + base)
        child_parts.append(child.to_numpy(zero_copy_only=False))
        base += hi - lo
    offsets = np.concatenate(offset_parts)
    child = np.concatenate(child_parts) if child_parts else np.empty(0)
    return offsets, child


def arrow_to_csr(
    table: pa.Table, n_features: int | None = None, *, what: str = "table"
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Convert a table with the store's columns (``y``, ``indices``, ``values``) to CSR.

    Parameters
    ----------
    table : pyarrow.Table
        Columns ``y`` (numeric), ``indices`` (list of integers) and ``values`` (list of
        numbers); each row's ``indices`` and ``values`` must have the same length.
    n_features : int, optional
        Number of columns of the result. Defaults to the largest index plus one (so trailing
        all-zero columns are lost unless given).
    what : str
        How to name the table in error messages (a path, typically).

    Returns
    -------
    X : scipy.sparse.csr_matrix
        Indices int32 and values float64 as read; not re-sorted or otherwise canonicalised.
    y : ndarray of float64

    Raises
    ------
    StoreError
        On missing columns, nulls, mismatched list lengths or out-of-range indices.
    """
    missing = [c for c in ("y", "indices", "values") if c not in table.column_names]
    if missing:
        raise StoreError(
            f"{what}: missing column(s) {', '.join(missing)}; "
            f"columns present: {', '.join(table.column_names)}"
        )
    y_col = table.column("y")
    if y_col.null_count:
        raise StoreError(f"{what}: column y has {y_col.null_count} nulls")
    y = np.asarray(y_col.to_numpy(), dtype=np.float64).copy()
    indptr, indices = _list_column_parts(table.column("indices"), f"{what}: column indices")
    indptr_v, data = _list_column_parts(table.column("values"), f"{what}: column values")
    if not np.array_equal(indptr, indptr_v):
        raise StoreError(f"{what}: rows have different numbers of indices and values")
    nnz = int(indptr[-1])
    if indices.size and (indices.min() < 0 or indices.max() > np.iinfo(np.int32).max):
        raise StoreError(f"{what}: feature indices out of the int32 range")
    max_index = int(indices.max()) if indices.size else -1
    if n_features is None:
        n_features = max_index + 1
    elif max_index >= n_features:
        raise StoreError(
            f"{what}: feature index {max_index} out of range for n_features={n_features}"
        )
    X = _make_csr(
        np.ascontiguousarray(data, dtype=np.float64),
        np.ascontiguousarray(indices, dtype=np.int32),
        indptr.astype(_indptr_dtype(nnz)),
        (len(y), int(n_features)),
    )
    # Rows written by someone else may be unsorted; only we can vouch for our own files.
    X.has_sorted_indices = False
    return X, y


# --------------------------------------------------------------------------------------------
# Public store operations
# --------------------------------------------------------------------------------------------


def default_store_root() -> Path:
    """The store root used when none is given.

    ``$SVMBENCH_STORE`` if set, else ``svmbench/datasets`` under the user's cache directory:
    ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux and other Unix systems,
    ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows.
    """
    env = os.environ.get("SVMBENCH_STORE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "svmbench" / "datasets"


def dataset_path(root: str | os.PathLike, name: str) -> Path:
    """Folder of dataset ``name`` in store ``root`` (whether or not it exists).

    Raises
    ------
    StoreError
        If ``name`` is not a valid entry name.
    """
    _check_name(name)
    return _fs_root(root) / name


def exists(root: str | os.PathLike, name: str) -> bool:
    """Whether the store holds a complete dataset ``name``."""
    return _fs_isfile(dataset_path(root, name) / META_FILE)


def write_dataset(
    root: str | os.PathLike,
    name: str,
    X: Any,
    y: Any,
    *,
    source: dict,
    license: str = "",
    citation: str = "",
    preprocessing: list | dict | None = None,
    extra: dict | None = None,
    row_group_size: int = 65536,
    overwrite: bool = False,
) -> dict:
    """Write a dataset into the store, atomically.

    Parameters
    ----------
    root : str or path-like
        Store root; created if missing.
    name : str
        Entry name: letters, digits, ``_``, ``.`` and ``-``, not starting with ``.`` or ``-``.
    X : array-like or sparse matrix of shape (n_rows, n_features)
        Canonicalised on a copy (see :func:`canonicalize`): explicit zeros are dropped,
        duplicates summed, indices sorted.
    y : array-like of shape (n_rows,)
        Labels, stored as float64.
    source : dict
        Where the data came from, e.g. ``{"generator": ..., "params": {...}}`` or
        ``{"file": ..., "sha256": ...}``.
    license, citation : str
        Recorded verbatim.
    preprocessing : list or dict, optional
        The preprocessing applied before storing, for the record.
    extra : dict, optional
        Further metadata merged into ``meta.json`` (vocabulary, feature names, ...). It may
        not redefine the store's own keys.
    row_group_size : int
        Rows per Parquet row group: the unit a reader can fetch alone.
    overwrite : bool
        Replace an existing entry of that name.

    Returns
    -------
    dict
        The metadata written to ``meta.json``.

    Raises
    ------
    DatasetExistsError
        If the entry exists (or appears while writing) and ``overwrite`` is false.
    StoreError
        On an invalid name or metadata that is not JSON-serialisable.
    ValueError
        On invalid ``X``/``y`` or arguments.
    """
    target = dataset_path(root, name)
    row_group_size = int(row_group_size)
    if row_group_size < 1:
        raise ValueError(f"row_group_size must be >= 1, got {row_group_size}")
    if not isinstance(source, dict):
        raise ValueError(f"source must be a dict, got {type(source).__name__}")
    extra = dict(extra or {})
    clash = sorted(_RESERVED_META_KEYS.intersection(extra))
    if clash:
        raise ValueError(f"extra metadata may not redefine store keys: {', '.join(clash)}")
    if not overwrite and exists(root, name):
        raise _exists_error(root, name)

    X, y = canonicalize(X, y)
    n_rows, n_features = X.shape
    classes, counts = np.unique(y, return_counts=True)
    listed = len(classes) <= _MAX_LISTED_CLASSES
    meta = {
        "name": name,
        "format_version": FORMAT_VERSION,
        "n_rows": int(n_rows),
        "n_features": int(n_features),
        "nnz": int(X.nnz),
        "density": float(X.nnz / (n_rows * n_features)) if n_rows * n_features else 0.0,
        "n_classes": int(len(classes)),
        "classes": [float(c) for c in classes] if listed else None,
        "class_counts": [int(c) for c in counts] if listed else None,
        "fingerprint": _fingerprint_canonical(X, y),
        "source": source,
        "license": license,
        "citation": citation,
        "preprocessing": [] if preprocessing is None else preprocessing,
        "svmbench_version": _svmbench_version(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "row_group_size": row_group_size,
        **extra,
    }
    try:
        meta_text = json.dumps(meta, indent=2, allow_nan=False, default=_json_default) + "\n"
    except (TypeError, ValueError) as exc:
        raise StoreError(f"dataset {name!r}: metadata is not JSON-serialisable: {exc}") from exc

    root_path = _fs_root(root)
    _fs_makedirs(root_path)
    tmp = root_path / f".{name}.tmp-{uuid.uuid4().hex}"
    _fs_makedirs(tmp)
    try:
        with pq.ParquetWriter(str(tmp / DATA_FILE), _SCHEMA, compression="zstd") as writer:
            for start in range(0, n_rows, row_group_size):
                stop = min(start + row_group_size, n_rows)
                writer.write_table(_csr_to_table(X, y, start, stop), row_group_size=row_group_size)
        _fs_write_text(tmp / META_FILE, meta_text)
        _publish(tmp, target, root, name, overwrite)
    finally:
        if _fs_exists(tmp):
            _fs_rmtree(tmp)
    return json.loads(meta_text)


def read_dataset(
    root: str | os.PathLike,
    name: str,
    *,
    verify: bool = True,
    rows: Any = None,
) -> Dataset:
    """Read a dataset from the store.

    Parameters
    ----------
    root : str or path-like
        Store root.
    name : str
        Entry name.
    verify : bool
        Recompute the content fingerprint and compare it with ``meta.json``. Costs one pass
        of sha256 over the data; turn off only where the same entry was verified before.
    rows : array-like of int or bool, optional
        Return only these rows (in this order). The whole entry is read (and verified) first.

    Returns
    -------
    Dataset

    Raises
    ------
    StoreError
        If the entry is missing, unreadable, inconsistent with its metadata, or fails
        verification.
    """
    meta = dataset_info(root, name)
    path = dataset_path(root, name)
    data_file = path / DATA_FILE
    try:
        table = pq.ParquetFile(str(data_file)).read(columns=["y", "indices", "values"])
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"dataset {name!r} at {path}: cannot read {DATA_FILE}: {exc}") from exc
    X, y = arrow_to_csr(table, int(meta["n_features"]), what=str(data_file))
    if X.shape[0] != meta["n_rows"] or X.nnz != meta["nnz"]:
        raise StoreError(
            f"dataset {name!r} at {path}: {DATA_FILE} has {X.shape[0]} rows and {X.nnz} "
            f"entries, {META_FILE} says {meta['n_rows']} rows and {meta['nnz']} entries"
        )
    # Solvers rely on sorted indices; checking is O(nnz) and far cheaper than the hash, so it
    # is done even without verify.
    if not _rows_strictly_increasing(X.indptr, X.indices):
        raise StoreError(f"dataset {name!r} at {path}: feature indices not sorted within rows")
    X.has_sorted_indices = True
    if verify:
        computed = _fingerprint_canonical(X, y)
        if computed != meta["fingerprint"]:
            raise StoreError(
                f"dataset {name!r} at {path}: fingerprint mismatch: stored "
                f"{meta['fingerprint']}, computed {computed}; the data were modified or "
                f"corrupted: rebuild or re-ingest it"
            )
    if rows is not None:
        rows = np.asarray(rows)
        X, y = X[rows], y[rows]
    return Dataset(X=X, y=y, meta=meta)


def dataset_info(root: str | os.PathLike, name: str) -> dict:
    """The metadata (``meta.json``) of dataset ``name``.

    Raises
    ------
    StoreError
        If the entry is missing (the message lists the available ones) or its metadata is
        unreadable.
    """
    path = dataset_path(root, name)
    if not _fs_isfile(path / META_FILE):
        raise _missing_error(root, name)
    try:
        return json.loads(_fs_read_text(path / META_FILE))
    except (OSError, ValueError) as exc:
        raise StoreError(f"dataset {name!r} at {path}: unreadable {META_FILE}: {exc}") from exc


def list_datasets(root: str | os.PathLike) -> list[dict]:
    """Metadata of every dataset in the store, sorted by name.

    Entries whose ``meta.json`` cannot be read are skipped with a warning; a missing root is
    an empty store.
    """
    metas = []
    for name in _entry_names(root):
        try:
            metas.append(dataset_info(root, name))
        except StoreError as exc:
            warnings.warn(str(exc), stacklevel=2)
    return metas


def remove_dataset(root: str | os.PathLike, name: str) -> None:
    """Remove dataset ``name`` from the store.

    The entry is first renamed to a hidden trash name, so readers see it vanish at once
    rather than half-deleted.

    Raises
    ------
    StoreError
        If the entry does not exist.
    """
    path = dataset_path(root, name)
    if not exists(root, name):
        raise _missing_error(root, name)
    trash = path.parent / f".{name}.trash-{uuid.uuid4().hex}"
    try:
        _fs_rename(path, trash)
    except FileNotFoundError as exc:  # removed concurrently
        raise _missing_error(root, name) from exc
    _fs_rmtree(trash)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _publish(tmp: Path, target: Path, root, name: str, overwrite: bool) -> None:
    """Move a finished temporary entry into place.

    ``rename`` of a folder onto an existing non-empty folder fails, which makes it the
    arbiter between concurrent writers: exactly one wins, the others get
    :class:`DatasetExistsError` (or, with ``overwrite``, move the winner aside and retry).
    """
    for _ in range(10):
        try:
            _fs_rename(tmp, target)
            return
        except OSError as exc:
            if not _fs_exists(target):
                raise StoreError(f"dataset {name!r}: cannot move {tmp} to {target}: {exc}") from exc
            if not overwrite:
                raise _exists_error(root, name) from exc
        trash = target.parent / f".{name}.trash-{uuid.uuid4().hex}"
        try:
            _fs_rename(target, trash)
        except FileNotFoundError:
            continue  # someone else moved it away first; try again
        _fs_rmtree(trash)
    raise StoreError(f"dataset {name!r}: gave up replacing {target} (concurrent writers?)")


def _rows_strictly_increasing(indptr: np.ndarray, indices: np.ndarray) -> bool:
    """Whether every row's indices are strictly increasing (vectorised over all rows)."""
    nnz = indices.size
    if nnz < 2:
        return True
    increasing = np.diff(indices.astype(np.int64)) > 0
    # A decrease between the last entry of one row and the first of the next is fine.
    starts = np.asarray(indptr[1:-1], dtype=np.int64)
    starts = starts[(starts > 0) & (starts < nnz)]
    increasing[starts - 1] = True
    return bool(increasing.all())


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in {".", ".."}:
        raise StoreError(
            f"invalid dataset name {name!r}: use letters, digits, '_', '.' and '-', "
            f"starting with a letter, digit or '_'"
        )


def _entry_names(root) -> list[str]:
    root_path = _fs_root(root)
    if not _fs_isdir(root_path):
        return []
    return sorted(
        n
        for n in _fs_listdir(root_path)
        if not n.startswith(".") and _fs_isfile(root_path / n / META_FILE)
    )


def _missing_error(root, name: str) -> StoreError:
    available = ", ".join(_entry_names(root)) or "(none)"
    return StoreError(
        f"dataset {name!r} not found in store {_fs_root(root)}; available: {available}; "
        f"build it with `python -m pipeline.data build {name}` (built-in datasets) or add "
        f"your own with `python -m pipeline.data ingest PATH --name {name}`"
    )


def _exists_error(root, name: str) -> DatasetExistsError:
    return DatasetExistsError(
        f"dataset {name!r} already exists in store {_fs_root(root)}; pass overwrite=True "
        f"(on the command line: --force) to replace it"
    )


def _svmbench_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("svmbench")
    except PackageNotFoundError:
        return "0+unknown"


def _json_default(obj: Any) -> Any:
    # Builders hand over numpy scalars and arrays (vocabularies, weights); JSON has no such
    # types, so convert them instead of making every builder remember to.
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (Path, os.PathLike)):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return sorted(obj) if isinstance(obj, (set, frozenset)) else list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


# Filesystem access. Local paths only for now; a remote (fsspec/pyarrow.fs) root would
# replace these helpers and nothing else.


def _fs_root(root: str | os.PathLike) -> Path:
    text = os.fspath(root)
    if "://" in text:
        raise StoreError(f"store root {text!r}: remote filesystem roots are not supported yet")
    return Path(text).expanduser()


def _fs_exists(path: Path) -> bool:
    return path.exists()


def _fs_isfile(path: Path) -> bool:
    return path.is_file()


def _fs_isdir(path: Path) -> bool:
    return path.is_dir()


def _fs_listdir(path: Path) -> Iterable[str]:
    return os.listdir(path)


def _fs_makedirs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def _fs_rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)  # not os.replace: must fail, not merge, when dst exists (see _publish)


def _fs_rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _fs_write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _fs_read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")
