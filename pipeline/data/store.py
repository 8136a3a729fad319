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
group size, so that experiment plans can key results on the data rather than on a name. It is
computed in one streaming pass, so an entry larger than memory can be written chunk by chunk
(:func:`write_dataset_chunks`); each row group also carries its own digest in ``meta.json`` so
that a reader of a few rows (``read_dataset(rows=...)``) fetches and verifies only the row
groups holding them. A large entry is never needed whole in memory: :func:`read_row_subsets`
reads a fold's rows straight into arrays of their size, and :func:`read_labels` verifies the
whole entry a batch at a time while keeping only ``y``.

Writes are atomic: an entry is assembled in a hidden temporary folder inside the root and
renamed into place, so a reader (or a second writer racing for the same name) sees either
no entry or a complete one. On an object store (``s3://bucket/prefix``), where a folder cannot
be renamed, the entry's ``meta.json`` is written last instead (see :func:`_publish_by_copy`).
All filesystem access goes through the ``_fs_*`` helpers of ``store_fs.py``, over one pyarrow
filesystem (local, S3 and the others pyarrow opens, or any fsspec filesystem); the canonical form
and the fingerprint are ``store_csr.py``'s.

This module imports no other pipeline module but those two parts of itself, so that solver-side
tools and workers can read the store with nothing but numpy, scipy and pyarrow.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import json
import os
import re
import uuid
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import scipy.sparse as sp

from .cache import user_cache_dir  # noqa: F401  (store.user_cache_dir, as before)
from .store_csr import (
    Fingerprinter,
    indptr_dtype,
    make_csr,
    row_group_digest,
    canonicalize,
    csr_nbytes,
    fingerprint,
)
from .store_fs import (
    fs_copy,
    fs_delete,
    fs_exists,
    fs_isdir,
    fs_isfile,
    fs_listdir,
    fs_makedirs,
    fs_open,
    fs_read_text,
    fs_rename,
    fs_rmtree,
    fs_write_text,
    Loc,
    is_remote,
)

__all__ = [
    "DATA_FILE",
    "META_FILE",
    "Dataset",
    "DatasetExistsError",
    "StoreError",
    "arrow_to_csr",
    "canonicalize",
    "csr_nbytes",
    "dataset_info",
    "dataset_path",
    "default_store_root",
    "exists",
    "fingerprint",
    "list_datasets",
    "read_dataset",
    "read_labels",
    "read_row_subsets",
    "remove_dataset",
    "write_dataset",
    "write_dataset_chunks",
]

DATA_FILE = "data.parquet"
META_FILE = "meta.json"

#: Bumped when the layout of ``data.parquet``/``meta.json`` changes incompatibly. Version 2
#: changed the fingerprint to a streamable form and added per-row-group digests; an entry of
#: version 1 is refused with the command that rebuilds it (`_format_error`).
FORMAT_VERSION = 2

#: Rows per Parquet row group unless the caller says otherwise: large enough that Parquet's
#: per-group overhead is negligible, small enough that a reader of a few rows fetches little.
DEFAULT_ROW_GROUP_SIZE = 65536

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
        "row_group_digests",
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
    X = make_csr(
        np.ascontiguousarray(data, dtype=np.float64),
        np.ascontiguousarray(indices, dtype=np.int32),
        indptr.astype(indptr_dtype(nnz)),
        (len(y), int(n_features)),
    )
    # Rows written by someone else may be unsorted; only we can vouch for our own files.
    X.has_sorted_indices = False
    return X, y


# --------------------------------------------------------------------------------------------
# Public store operations
# --------------------------------------------------------------------------------------------


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file, read in 1 MiB blocks (source files and wheels of dataset entries)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_store_root() -> Path | str:
    """The store root used when none is given.

    ``$SVMBENCH_STORE`` if set (a folder, or a URI such as ``s3://bucket/prefix``, returned as
    it is), else ``svmbench/datasets`` under :func:`user_cache_dir`.
    """
    env = os.environ.get("SVMBENCH_STORE")
    if env:
        return env if is_remote(env) else Path(env).expanduser()
    return user_cache_dir() / "datasets"


def dataset_path(root: str | os.PathLike, name: str) -> Path | str:
    """Folder of dataset ``name`` in store ``root`` (whether or not it exists): a Path for a
    local root, the URI (``s3://bucket/prefix/name``) for a remote one.

    Raises
    ------
    StoreError
        If ``name`` is not a valid entry name.
    """
    return _entry(root, name).public()


def _entry(root: str | os.PathLike, name: str) -> Loc:
    _check_name(name)
    return _fs_root(root) / name


def exists(root: str | os.PathLike, name: str) -> bool:
    """Whether the store holds a complete dataset ``name`` (its ``meta.json``, written last)."""
    return fs_isfile(_entry(root, name) / META_FILE)


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
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
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
    X, y = canonicalize(X, y)
    return write_dataset_chunks(
        root,
        name,
        [(X, y)],
        X.shape[1],
        source=source,
        license=license,
        citation=citation,
        preprocessing=preprocessing,
        extra=extra,
        row_group_size=row_group_size,
        overwrite=overwrite,
    )


def write_dataset_chunks(
    root: str | os.PathLike,
    name: str,
    chunks: Iterable[tuple[Any, Any]],
    n_features: int,
    *,
    source: dict,
    license: str = "",
    citation: str = "",
    preprocessing: list | dict | None = None,
    extra: dict | None = None,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    overwrite: bool = False,
) -> dict:
    """Write a dataset given as consecutive row blocks, holding at most about one row group.

    Each block is canonicalised, cut into row groups of exactly ``row_group_size`` rows
    (the last one may be shorter) whatever the block sizes, written, and fed to a running
    fingerprint; so the entry, its fingerprint and its row group digests are the same as
    :func:`write_dataset` would give for the stacked rows. Arguments are those of
    :func:`write_dataset`, except:

    Parameters
    ----------
    chunks : iterable of (X_block, y_block)
        Row blocks in order; each ``X_block`` has ``n_features`` columns. Consumed once,
        lazily: a generator that produces blocks on demand keeps memory bounded.
    n_features : int
        Number of columns (also of an empty dataset).

    Returns
    -------
    dict
        The metadata written to ``meta.json``.
    """
    target = _entry(root, name)
    row_group_size = int(row_group_size)
    if row_group_size < 1:
        raise ValueError(f"row_group_size must be >= 1, got {row_group_size}")
    n_features = int(n_features)
    if not 0 <= n_features <= np.iinfo(np.int32).max:
        raise ValueError(f"n_features={n_features} does not fit the store's int32 indices")
    if not isinstance(source, dict):
        raise ValueError(f"source must be a dict, got {type(source).__name__}")
    extra = dict(extra or {})
    clash = sorted(_RESERVED_META_KEYS.intersection(extra))
    if clash:
        raise ValueError(f"extra metadata may not redefine store keys: {', '.join(clash)}")
    if not overwrite and exists(root, name):
        raise _exists_error(root, name)

    root_path = _fs_root(root)
    try:
        fs_makedirs(root_path)
    except OSError as exc:  # a read-only folder, a bucket that does not exist, no credentials
        raise StoreError(f"store root {root_path}: cannot write to it: {exc}") from exc
    tmp = root_path / f".{name}.tmp-{uuid.uuid4().hex}"
    fs_makedirs(tmp)
    try:
        fp = Fingerprinter(n_features)
        digests: list[str] = []
        label_counts: dict[float, int] = {}
        data_file = tmp / DATA_FILE
        with pq.ParquetWriter(data_file.path, _SCHEMA, compression="zstd", filesystem=data_file.fs) as writer:
            for X_group, y_group in _row_groups(chunks, n_features, row_group_size):
                writer.write_table(
                    _csr_to_table(X_group, y_group, 0, X_group.shape[0]),
                    row_group_size=row_group_size,
                )
                fp.update(X_group, y_group)
                digests.append(row_group_digest(X_group, y_group))
                # Counting per group keeps memory flat; more than _MAX_LISTED_CLASSES distinct
                # labels are not listed, so stop collecting them then.
                if len(label_counts) <= _MAX_LISTED_CLASSES:
                    for c, n in zip(*np.unique(y_group, return_counts=True), strict=True):
                        label_counts[float(c)] = label_counts.get(float(c), 0) + int(n)
        n_rows, nnz = fp.n_rows, fp.nnz
        listed = len(label_counts) <= _MAX_LISTED_CLASSES
        classes = sorted(label_counts)
        n_classes = len(classes) if listed else _count_distinct_labels(tmp / DATA_FILE)
        meta = {
            "name": name,
            "format_version": FORMAT_VERSION,
            "n_rows": int(n_rows),
            "n_features": n_features,
            "nnz": int(nnz),
            "density": float(nnz / (n_rows * n_features)) if n_rows * n_features else 0.0,
            "n_classes": int(n_classes),
            "classes": classes if listed else None,
            "class_counts": [label_counts[c] for c in classes] if listed else None,
            "fingerprint": fp.hexdigest(),
            "source": source,
            "license": license,
            "citation": citation,
            "preprocessing": [] if preprocessing is None else preprocessing,
            "svmbench_version": _svmbench_version(),
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "row_group_size": row_group_size,
            "row_group_digests": digests,
            **extra,
        }
        try:
            meta_text = json.dumps(meta, indent=2, allow_nan=False, default=_json_default) + "\n"
        except (TypeError, ValueError) as exc:
            raise StoreError(f"dataset {name!r}: metadata is not JSON-serialisable: {exc}") from exc
        fs_write_text(tmp / META_FILE, meta_text)
        _publish(tmp, target, root, name, overwrite)
    finally:
        if fs_exists(tmp):
            fs_rmtree(tmp)
    return json.loads(meta_text)


def _row_groups(chunks, n_features: int, row_group_size: int):
    """Re-cut canonicalised row blocks into row groups of exactly ``row_group_size`` rows."""
    pending: list[tuple[sp.csr_matrix, np.ndarray]] = []
    n_pending = 0
    for position, (X_block, y_block) in enumerate(chunks):
        X_block, y_block = canonicalize(X_block, y_block)
        if X_block.shape[1] != n_features:
            raise ValueError(
                f"row block {position} has {X_block.shape[1]} columns, expected {n_features}"
            )
        pending.append((X_block, y_block))
        n_pending += X_block.shape[0]
        if n_pending >= row_group_size:
            X_all, y_all = _vstack_canonical(pending, n_features)
            start = 0
            while n_pending - start >= row_group_size:
                yield (
                    _slice_rows(X_all, start, start + row_group_size),
                    y_all[start : start + row_group_size],
                )
                start += row_group_size
            pending = [(_slice_rows(X_all, start, X_all.shape[0]), y_all[start:])]
            n_pending -= start
    if n_pending:
        yield _vstack_canonical(pending, n_features)


def _slice_rows(X: sp.csr_matrix, start: int, stop: int) -> sp.csr_matrix:
    """Rows ``start:stop`` of a canonical CSR as a canonical CSR (arrays copied)."""
    lo, hi = int(X.indptr[start]), int(X.indptr[stop])
    indptr = np.asarray(X.indptr[start : stop + 1], dtype=np.int64) - lo
    return make_csr(
        X.data[lo:hi].copy(),
        X.indices[lo:hi].copy(),
        indptr.astype(indptr_dtype(hi - lo)),
        (stop - start, X.shape[1]),
    )


def _vstack_canonical(blocks, n_features: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Stack canonical CSR blocks without scipy's re-validation (and index upcasting)."""
    if len(blocks) == 1:
        return blocks[0]
    nnz = sum(int(X.nnz) for X, _ in blocks)
    indptr_parts = [np.zeros(1, dtype=np.int64)]
    base = 0
    for X, _ in blocks:
        indptr_parts.append(np.asarray(X.indptr[1:], dtype=np.int64) + base)
        base += int(X.nnz)
    X = make_csr(
        np.concatenate([X.data for X, _ in blocks]),
        np.concatenate([X.indices for X, _ in blocks]).astype(np.int32, copy=False),
        np.concatenate(indptr_parts).astype(indptr_dtype(nnz)),
        (sum(X.shape[0] for X, _ in blocks), n_features),
    )
    return X, np.concatenate([y for _, y in blocks])


def _count_distinct_labels(data_file: Loc) -> int:
    # Only reached with more than _MAX_LISTED_CLASSES labels (regression targets): one
    # extra pass over the label column alone, which is small.
    table = pq.read_table(data_file.path, columns=["y"], filesystem=data_file.fs)
    labels = table.column("y").to_numpy()
    return int(np.unique(labels).size)


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
        Check the data against ``meta.json``: the content fingerprint for a whole read, or
        the digests of the row groups read when ``rows`` is given. Costs one pass of sha256
        over what was read; turn off only where the same entry was verified before.
    rows : array-like of int or bool, optional
        Return only these rows (in this order; negative indices count from the end). Only
        the row groups holding them are read, so a task that needs a fold of a large entry
        reads little more than that fold.

    Returns
    -------
    Dataset

    Raises
    ------
    StoreError
        If the entry is missing, unreadable, inconsistent with its metadata, or fails
        verification.
    IndexError
        If ``rows`` holds an index out of range.

    Notes
    -----
    A whole read fills preallocated CSR arrays a batch of rows at a time, so the peak memory
    is the CSR itself plus one decoded batch, not twice the matrix.
    """
    with _open_entry(root, name) as (pf, meta, data_file, path):
        return _read_entry(pf, meta, verify, rows, data_file, name, path)


def read_row_subsets(
    root: str | os.PathLike,
    name: str,
    subsets: Iterable[Any],
    *,
    verify: bool = True,
    fingerprint: str | None = None,
) -> list[tuple[sp.csr_matrix, np.ndarray]]:
    """Several row subsets of a dataset (a fold's training and test rows) in one pass.

    Each subset comes back as ``(X, y)`` with its rows in the order given (repeats allowed),
    as ``read_dataset(root, name, rows=subset)`` would return it, but the whole entry is never
    held: each row group holding a wanted row is read once, verified against its digest, and
    its rows are copied straight into each subset's arrays, which are allocated at their exact
    size from the rows' lengths (read first from the ``indices`` column alone, about a third of
    the bytes). So the peak is the subsets plus one row group: a fold of a dataset is read in
    about the memory of the fold, where reading the dataset and then indexing it held the
    dataset and the fold together (twice the data), and stacking per-group pieces would hold a
    subset twice.

    ``fingerprint``, if given, is the content the caller planned with: an entry rebuilt since
    (another fingerprint) is refused rather than read.

    Raises
    ------
    StoreError, IndexError
        As :func:`read_dataset`.
    """
    with _open_entry(root, name) as (pf, meta, data_file, path):
        if fingerprint is not None and meta["fingerprint"] != fingerprint:
            raise StoreError(
                f"dataset {name!r} at {path} has fingerprint {meta['fingerprint'][:12]}, "
                f"expected {fingerprint[:12]}: it was rebuilt since"
            )
        if verify and _layout(pf, meta, name, path)[2] is None:
            # Only the whole-entry fingerprint can verify (format 1, or a rewritten layout).
            ds = _read_entry(pf, meta, verify, None, data_file, name, path)
            return [(ds.X[rows], ds.y[rows]) for rows in _all_rows(subsets, meta, name)]
        return _read_subsets(pf, meta, subsets, verify, data_file, name, path)


def _all_rows(subsets, meta: dict, name: str) -> list[np.ndarray]:
    return [_normalise_rows(rows, int(meta["n_rows"]), name) for rows in subsets]


def _read_subsets(pf, meta: dict, subsets, verify: bool, data_file: Loc, name: str, path: Loc):
    """The body of :func:`read_row_subsets`, given the open file whose digests apply (or
    ``verify`` false)."""
    subsets = _all_rows(subsets, meta, name)
    _, starts, digests = _layout(pf, meta, name, path)
    n_features = int(meta["n_features"])
    wanted = np.unique(np.concatenate([np.zeros(0, np.int64), *subsets]))
    groups = np.unique(np.searchsorted(starts, wanted, side="right") - 1)
    lengths = _row_lengths(pf, groups, starts, data_file, name, path)
    fillers = [_SubsetFiller(rows, lengths, n_features) for rows in subsets]
    for g in groups:
        X, y = _read_group(pf, g, n_features, data_file, name, path, lengths[starts[g] : starts[g + 1]])
        _check_group(X, y, g, digests if verify else None, name, path)
        for filler in fillers:
            filler.take(X, y, int(starts[g]))
        del X, y
    return [filler.result() for filler in fillers]


def read_labels(root: str | os.PathLike, name: str, *, verify: bool = True) -> np.ndarray:
    """The labels ``y`` of a dataset, without holding its matrix.

    With ``verify``, every row is read a batch at a time and fed to the content fingerprint,
    which is checked as :func:`read_dataset` checks it: the same guarantee for about the
    memory of one batch instead of the whole matrix (a planning client needs only the labels,
    and holding an RCV1-sized matrix for them made the client as large as a worker: Linear
    solvers benchmark, "Full RCV1 size: time and memory"). Without, only the ``y`` column is
    read.
    """
    with _open_entry(root, name) as (pf, meta, data_file, path):
        if not verify:
            try:
                column = pf.read(columns=["y"], use_threads=False).column("y")
            except (OSError, pa.ArrowException) as exc:
                raise StoreError(f"dataset {name!r} at {path}: cannot read {DATA_FILE}: {exc}") from exc
            return np.asarray(column.to_numpy(), dtype=np.float64).copy()
        group_rows, _, _ = _layout(pf, meta, name, path)
        n_features = int(meta["n_features"])
        fp = Fingerprinter(n_features)
        y = np.empty(int(meta["n_rows"]))
        for g in range(len(group_rows)):
            for Xb, yb in _group_batches(pf, g, n_features, data_file, name, path):
                if fp.n_rows + len(yb) > len(y):
                    raise StoreError(f"dataset {name!r} at {path}: {DATA_FILE} holds more rows "
                                     f"than the {len(y)} {META_FILE} says")
                y[fp.n_rows : fp.n_rows + len(yb)] = yb
                fp.update(Xb, yb)
        _check_fingerprint(fp.hexdigest(), meta, name, path)
        return y


@contextlib.contextmanager
def _open_entry(root, name: str):
    """(Parquet file, meta, data file, entry path) of an entry, open for reading."""
    meta = dataset_info(root, name)
    path = _entry(root, name)
    if int(meta.get("format_version", 1)) < FORMAT_VERSION:
        raise _format_error(name, path, meta)
    data_file = path / DATA_FILE
    try:
        source = fs_open(data_file)
    except OSError as exc:
        if not fs_isfile(data_file):
            raise _data_missing_error(name, path, meta) from None
        raise StoreError(f"dataset {name!r} at {path}: cannot read {DATA_FILE}: {exc}") from exc
    with source:
        try:
            # A buffered stream reads a column chunk piece by piece instead of whole. Pre-buffering
            # (coalesced reads of whole column chunks) pays on an object store, where each read
            # is a round trip; locally it only holds a row group's whole chunks in memory.
            pf = pq.ParquetFile(source, buffer_size=1 << 20, pre_buffer=not data_file.local)
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(f"dataset {name!r} at {path}: cannot read {DATA_FILE}: {exc}") from exc
        yield pf, meta, data_file, path


def _layout(pf, meta: dict, name: str, path: Loc):
    """(rows per row group, first row of each group and the total, the per-group digests or
    None when they do not apply to the file's layout)."""
    n_rows = int(meta["n_rows"])
    group_rows = np.array(
        [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)],
        dtype=np.int64,
    )
    starts = np.concatenate([[0], np.cumsum(group_rows)])
    if starts[-1] != n_rows:
        raise StoreError(
            f"dataset {name!r} at {path}: {DATA_FILE} has {starts[-1]} rows, {META_FILE} says "
            f"{n_rows} rows"
        )
    digests = meta.get("row_group_digests")
    if digests is not None and not _layout_matches(group_rows, digests, meta.get("row_group_size")):
        # The file was rewritten with another row group layout (same data or not): the
        # per-group digests no longer apply, the whole-entry fingerprint still does. Comparing
        # the group sizes, not only their count, matters: a rewrite into as many groups with
        # other boundaries would otherwise report intact data as corrupted.
        digests = None
    return group_rows, starts, digests


def _check_fingerprint(computed: str, meta: dict, name: str, path: Loc) -> None:
    if computed != meta["fingerprint"]:
        raise StoreError(
            f"dataset {name!r} at {path}: fingerprint mismatch: stored "
            f"{meta['fingerprint']}, computed {computed}; the data were modified or "
            f"corrupted: rebuild or re-ingest it"
        )


def _read_entry(pf, meta: dict, verify: bool, rows: Any, data_file: Loc, name: str, path: Loc):
    """The body of :func:`read_dataset`, given the open Parquet file."""
    n_features = int(meta["n_features"])
    group_rows, starts, digests = _layout(pf, meta, name, path)
    if rows is not None:
        rows = _normalise_rows(rows, int(meta["n_rows"]), name)
    if rows is not None and (not verify or digests is not None):
        # Without usable per-group digests, verifying means reading everything (below).
        X, y = _read_subsets(pf, meta, [rows], verify, data_file, name, path)[0]
        return Dataset(X=X, y=y, meta=meta)

    X, y, fp = _read_all(pf, group_rows, n_features, int(meta["nnz"]), data_file, name, path)
    if verify:
        _check_fingerprint(fp.hexdigest(), meta, name, path)
    if rows is not None:
        X, y = X[rows], y[rows]
    return Dataset(X=X, y=y, meta=meta)


def _layout_matches(group_rows: np.ndarray, digests: list, row_group_size: Any) -> bool:
    """Whether the file's row groups are the ones the writer made and digested.

    The writer cuts row groups of exactly ``row_group_size`` rows, the last one shorter.
    """
    if len(digests) != len(group_rows):
        return False
    if row_group_size is None:  # not recorded: the count is all there is to compare
        return True
    rgs = int(row_group_size)
    if rgs < 1:
        return False
    n_rows = int(group_rows.sum())
    expected = [rgs] * (n_rows // rgs) + ([n_rows % rgs] if n_rows % rgs else [])
    return [int(n) for n in group_rows] == expected


def _normalise_rows(rows: Any, n_rows: int, name: str) -> np.ndarray:
    rows = np.asarray(rows)
    if rows.dtype == bool:
        if rows.shape != (n_rows,):
            raise IndexError(
                f"dataset {name!r}: boolean rows mask has shape {rows.shape}, the entry has "
                f"{n_rows} rows"
            )
        return np.flatnonzero(rows)
    if rows.size and not np.issubdtype(rows.dtype, np.integer):
        raise IndexError(f"dataset {name!r}: rows must be integers or a boolean mask")
    rows = rows.astype(np.int64).ravel()
    bad = rows[(rows < -n_rows) | (rows >= n_rows)]
    if bad.size:
        raise IndexError(f"dataset {name!r}: row {bad[0]} out of range for {n_rows} rows")
    return np.where(rows < 0, rows + n_rows, rows)


#: Rows decoded at a time. Decoding a whole 65,536-row group of RCV1-sized rows at once makes
#: pyarrow hold buffers several times the size of the data it decodes; batches of this size
#: hold less than half as much (Linear solvers benchmark, "Full RCV1 size: time and memory").
_READ_BATCH_ROWS = 8192


def _group_batches(pf, g: int, n_features: int, data_file: Loc, name: str, path: Loc):
    """Yield row group ``g`` as (CSR, y) batches of at most ``_READ_BATCH_ROWS`` rows."""
    what = f"{data_file} (row group {g})"
    try:
        batches = pf.iter_batches(
            batch_size=_READ_BATCH_ROWS,
            row_groups=[int(g)],
            columns=["y", "indices", "values"],
            use_threads=False,
        )
        for batch in batches:
            X, y = arrow_to_csr(pa.Table.from_batches([batch]), n_features, what=what)
            # Solvers rely on sorted indices; checking is O(nnz) and far cheaper than the
            # hash, so it is done even without verify.
            if not _rows_strictly_increasing(X.indptr, X.indices):
                raise StoreError(
                    f"dataset {name!r} at {path}: feature indices not sorted within rows "
                    f"(row group {g} of {DATA_FILE})"
                )
            X.has_sorted_indices = True
            yield X, y
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(
            f"dataset {name!r} at {path}: cannot read row group {g} of {DATA_FILE}: {exc}"
        ) from exc


def _read_group(pf, g: int, n_features: int, data_file: Loc, name: str, path: Loc, lengths):
    """Row group ``g`` as one canonical CSR and its labels, filled batch by batch into arrays
    of the size its rows' ``lengths`` give (stacking the batches would hold the group twice)."""
    nnz = int(lengths.sum())
    indptr = np.zeros(len(lengths) + 1, dtype=indptr_dtype(nnz))
    np.cumsum(lengths, out=indptr[1:])
    data, indices = np.empty(nnz), np.empty(nnz, dtype=np.int32)
    y = np.empty(len(lengths))
    row = 0
    for Xb, yb in _group_batches(pf, g, n_features, data_file, name, path):
        n = Xb.shape[0]
        if row + n > len(lengths) or not np.array_equal(np.diff(Xb.indptr), lengths[row : row + n]):
            raise StoreError(f"dataset {name!r} at {path}: {DATA_FILE} changed while it was read")
        lo, hi = int(indptr[row]), int(indptr[row + n])
        data[lo:hi], indices[lo:hi], y[row : row + n] = Xb.data, Xb.indices, yb
        row += n
    if row != len(lengths):
        raise StoreError(f"dataset {name!r} at {path}: row group {g} of {DATA_FILE} is short")
    return make_csr(data, indices, indptr, (len(lengths), n_features)), y


def _check_group(X, y, g: int, digests, name: str, path: Loc) -> None:
    """Row group ``g`` matches its digest, when ``digests`` are given."""
    if digests is not None and row_group_digest(X, y) != digests[g]:
        raise StoreError(
            f"dataset {name!r} at {path}: row group {g} of {DATA_FILE} does not match its "
            f"digest in {META_FILE}; the data were modified or corrupted: rebuild or "
            f"re-ingest it"
        )


def _row_lengths(pf, groups, starts, data_file: Loc, name: str, path: Loc) -> np.ndarray:
    """Entries per row of the given row groups (0 elsewhere), from the list offsets of the
    ``indices`` column alone (the float64 ``values``, two thirds of the bytes, are not read)."""
    lengths = np.zeros(int(starts[-1]), dtype=np.int64)
    for g in groups:
        at = int(starts[g])
        try:
            batches = pf.iter_batches(batch_size=_READ_BATCH_ROWS, row_groups=[int(g)],
                                      columns=["indices"], use_threads=False)
            for batch in batches:
                offsets = batch.column(0).offsets.to_numpy()
                lengths[at : at + batch.num_rows] = np.diff(offsets)
                at += batch.num_rows
        except (OSError, pa.ArrowException) as exc:
            raise StoreError(
                f"dataset {name!r} at {path}: cannot read row group {g} of {DATA_FILE}: {exc}"
            ) from exc
    return lengths


class _SubsetFiller:
    """The CSR of some rows (in their given order), filled row group by row group into arrays
    allocated once at their exact size."""

    #: Rows copied per vectorised step: bounds the int64 index temporaries to a few MB.
    STEP_ROWS = 8192

    def __init__(self, rows: np.ndarray, lengths: np.ndarray, n_features: int):
        # Rows sorted by stored position (ties keep their order), with their output positions.
        self.order = np.argsort(rows, kind="stable")
        self.sorted_rows = rows[self.order]
        row_nnz = lengths[rows]
        nnz = int(row_nnz.sum())
        self.indptr = np.zeros(len(rows) + 1, dtype=indptr_dtype(nnz))
        np.cumsum(row_nnz, out=self.indptr[1:])
        self.data = np.empty(nnz, dtype=np.float64)
        self.indices = np.empty(nnz, dtype=np.int32)
        self.y = np.empty(len(rows), dtype=np.float64)
        self.shape = (len(rows), n_features)

    def take(self, X: sp.csr_matrix, y: np.ndarray, first: int) -> None:
        """Copy the wanted rows among (``X``, ``y``), stored rows ``first`` onwards, into place."""
        lo, hi = np.searchsorted(self.sorted_rows, [first, first + X.shape[0]])
        for a in range(int(lo), int(hi), self.STEP_ROWS):
            b = min(a + self.STEP_ROWS, int(hi))
            local = self.sorted_rows[a:b] - first
            out = self.order[a:b]
            self.y[out] = y[local]
            # Row j's entries go from X.indptr[local[j]] + k to self.indptr[out[j]] + k.
            src = np.asarray(X.indptr[local], dtype=np.int64)
            n = np.asarray(X.indptr[local + 1], dtype=np.int64) - src
            within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            dst = np.repeat(np.asarray(self.indptr[out], dtype=np.int64), n) + within
            src = np.repeat(src, n) + within
            self.data[dst] = X.data[src]
            self.indices[dst] = X.indices[src]

    def result(self) -> tuple[sp.csr_matrix, np.ndarray]:
        return make_csr(self.data, self.indices, self.indptr, self.shape), self.y


def _read_all(pf, group_rows, n_features, nnz, data_file, name, path):
    """Read every row group into preallocated CSR arrays; return X, y and the fingerprint."""
    n_rows = int(group_rows.sum())
    data = np.empty(nnz, dtype=np.float64)
    indices = np.empty(nnz, dtype=np.int32)
    indptr = np.empty(n_rows + 1, dtype=indptr_dtype(nnz))
    indptr[0] = 0
    y = np.empty(n_rows, dtype=np.float64)
    fp = Fingerprinter(n_features)
    row = at = 0
    for g in range(len(group_rows)):
        group_start = row
        for Xg, yg in _group_batches(pf, g, n_features, data_file, name, path):
            k = int(Xg.nnz)
            if at + k > nnz or row + Xg.shape[0] > n_rows:
                raise StoreError(
                    f"dataset {name!r} at {path}: {DATA_FILE} holds more rows or entries than "
                    f"the {n_rows} rows and {nnz} entries {META_FILE} says"
                )
            fp.update(Xg, yg)
            data[at : at + k] = Xg.data
            indices[at : at + k] = Xg.indices
            indptr[row + 1 : row + 1 + Xg.shape[0]] = np.asarray(Xg.indptr[1:], dtype=np.int64) + at
            y[row : row + Xg.shape[0]] = yg
            row += Xg.shape[0]
            at += k
        if row - group_start != group_rows[g]:
            raise StoreError(f"dataset {name!r} at {path}: row group {g} of {DATA_FILE} is short")
    if at != nnz:
        raise StoreError(
            f"dataset {name!r} at {path}: {DATA_FILE} has {n_rows} rows and {at} entries, "
            f"{META_FILE} says {n_rows} rows and {nnz} entries"
        )
    return make_csr(data, indices, indptr, (n_rows, n_features)), y, fp


def dataset_info(root: str | os.PathLike, name: str) -> dict:
    """The metadata (``meta.json``) of dataset ``name``.

    Raises
    ------
    StoreError
        If the entry is missing (the message lists the available ones) or its metadata is
        unreadable.
    """
    path = _entry(root, name)
    if not fs_isfile(path / META_FILE):
        raise _missing_error(root, name)
    try:
        return json.loads(fs_read_text(path / META_FILE))
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

    Readers see the entry vanish at once rather than half-deleted (see :func:`_unpublish`).

    Raises
    ------
    StoreError
        If the entry does not exist.
    """
    path = _entry(root, name)
    if not exists(root, name):
        raise _missing_error(root, name)
    try:
        _unpublish(path, name)
    except FileNotFoundError as exc:  # removed concurrently
        raise _missing_error(root, name) from exc


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _publish(tmp: Loc, target: Loc, root, name: str, overwrite: bool) -> None:
    """Move a finished temporary entry into place.

    Locally, ``rename`` of a folder onto an existing non-empty folder fails, which makes it
    the arbiter between concurrent writers: exactly one wins, the others get
    :class:`DatasetExistsError` (or, with ``overwrite``, move the winner aside and retry).
    An object store has no folder rename: see :func:`_publish_by_copy`.
    """
    if not target.local:
        _publish_by_copy(tmp, target, root, name, overwrite)
        return
    for _ in range(10):
        try:
            fs_rename(tmp, target)
            return
        except OSError as exc:
            if not fs_exists(target):
                raise StoreError(f"dataset {name!r}: cannot move {tmp} to {target}: {exc}") from exc
            if not overwrite:
                raise _exists_error(root, name) from exc
        trash = target.parent / f".{name}.trash-{uuid.uuid4().hex}"
        try:
            fs_rename(target, trash)
        except FileNotFoundError:
            continue  # someone else moved it away first; try again
        fs_rmtree(trash)
    raise StoreError(f"dataset {name!r}: gave up replacing {target} (concurrent writers?)")


def _publish_by_copy(tmp: Loc, target: Loc, root, name: str, overwrite: bool) -> None:
    """Publish on an object store, where a folder cannot be renamed but each object appears
    whole (a PUT or copy is atomic) and an entry exists exactly when its ``meta.json`` does.

    So ``meta.json`` goes first out (an overwritten entry vanishes before its data change) and
    last in (after the data it describes): a reader sees no entry or a complete one, never new
    data under old metadata. What this cannot do is arbitrate two writers racing for one name
    (no conditional PUT here): the last ``meta.json`` wins, and should it describe the other
    writer's data, the fingerprint check of every read says so.
    """
    if fs_isfile(target / META_FILE):
        if not overwrite:
            raise _exists_error(root, name)
        _unpublish(target, name)
    for part in fs_listdir(tmp):
        if part != META_FILE:
            fs_copy(tmp / part, target / part)
    fs_copy(tmp / META_FILE, target / META_FILE)


def _unpublish(path: Loc, name: str) -> None:
    """Remove an entry so that readers see it vanish at once: locally it is renamed to a
    hidden trash name first; on an object store its ``meta.json`` is deleted first."""
    if path.local:
        trash = path.parent / f".{name}.trash-{uuid.uuid4().hex}"
        fs_rename(path, trash)
        fs_rmtree(trash)
    else:
        fs_delete(path / META_FILE)
        fs_rmtree(path)


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


def check_entry_name(name: str) -> None:
    """Raise StoreError if ``name`` is not a valid entry name (one that stays inside the store:
    ``../x`` or ``a/b`` would reach past its root). A check of the name alone: no store is opened."""
    _check_name(name)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in {".", ".."}:
        raise StoreError(
            f"invalid dataset name {name!r}: use letters, digits, '_', '.' and '-', "
            f"starting with a letter, digit or '_'"
        )


def _entry_names(root) -> list[str]:
    root_path = _fs_root(root)
    if not fs_isdir(root_path):
        return []
    return sorted(
        n
        for n in fs_listdir(root_path)
        if not n.startswith(".") and fs_isfile(root_path / n / META_FILE)
    )


def _missing_error(root, name: str) -> StoreError:
    available = ", ".join(_entry_names(root)) or "(none)"
    return StoreError(
        f"dataset {name!r} not found in store {_fs_root(root)}; available: {available}; "
        f"build it with `python -m pipeline.data build {name}` (built-in datasets) or add "
        f"your own with `python -m pipeline.data ingest PATH --name {name}`"
    )


def _exists_error(root, name: str) -> DatasetExistsError:
    # The API's spelling; the command line says --force (pipeline/data/cli.py).
    return DatasetExistsError(
        f"dataset {name!r} already exists in store {_fs_root(root)}; pass overwrite=True to replace it"
    )


def _data_missing_error(name: str, path, meta: dict) -> StoreError:
    """An entry whose meta.json is there but not its data (deleted by hand, or a copy cut
    short): what to do about it, not the file system's "no such file"."""
    return StoreError(f"dataset {name!r} at {path}: its {DATA_FILE} is missing, though its {META_FILE} is there "
                      f"(deleted, or a copy cut short); {_again(name, meta)}")


def _format_error(name: str, path, meta: dict) -> StoreError:
    """An entry an earlier svmbench wrote in a layout this one no longer reads."""
    version = meta.get("format_version", 1)
    return StoreError(f"dataset {name!r} at {path}: store format {version}, written by an earlier svmbench "
                      f"(this one reads format {FORMAT_VERSION}); {_again(name, meta)}")


def _again(name: str, meta: dict) -> str:
    """The command that writes an entry anew: ingest for a user's file, build otherwise."""
    source = (meta.get("source") or {}).get("file")
    return (f"ingest it again: `python -m pipeline.data ingest {source} --name {name} --force`" if source else
            f"build it again: `python -m pipeline.data remove {name}`, and a run builds it on first use "
            f"(or `python -m pipeline.data build {name}`)")


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


# --------------------------------------------------------------------------------------------
# Opening the store's root (the file system primitives are in store_fs.py)
# --------------------------------------------------------------------------------------------


def _fs_root(root: str | os.PathLike) -> Loc:
    text = os.fspath(root)
    if not is_remote(text):
        local = text.removeprefix("file://")
        return Loc(_local_filesystem(), os.path.abspath(os.path.expanduser(local)), "")
    # Credentials and endpoint come from the environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL,
    # ...) as every S3 client reads them, or from the URI's query (?endpoint_override=...); the
    # environment is part of the cache key so that a changed endpoint opens a new filesystem.
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_CREDENTIAL_ENV)))
    fs, path = _open_filesystem(text, env)
    return Loc(fs, path.rstrip("/"), text.split("://", 1)[0])


_CREDENTIAL_ENV = ("AWS_", "GOOGLE_", "GCS_", "AZURE_")


@functools.lru_cache(maxsize=1)
def _local_filesystem():
    return pafs.LocalFileSystem()


@functools.lru_cache(maxsize=16)
def _open_filesystem(uri: str, env: tuple) -> tuple[Any, str]:
    """(filesystem, path on it) of a store URI; cached, since opening an S3 filesystem may ask
    the server for the bucket's region and every store operation opens its root."""
    try:
        return pafs.FileSystem.from_uri(uri)
    except pa.ArrowInvalid as exc:  # a scheme pyarrow has no filesystem for: fsspec's, if any
        unknown = exc
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"store root {uri!r}: cannot open it: {exc}") from exc
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(uri)
    except (ImportError, ValueError, OSError) as exc:
        raise StoreError(
            f"store root {uri!r}: neither pyarrow ({unknown}) nor fsspec ({exc}) opens it; use a "
            f"local folder, s3://bucket/prefix, or a URI of an installed fsspec filesystem"
        ) from exc
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path
