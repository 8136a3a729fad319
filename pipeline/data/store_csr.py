"""The store's canonical form of a dataset and its content fingerprint.

`canonicalize` fixes how a (X, y) is held (CSR, sorted int32 indices, float64 values, no stored
zeros); `fingerprint` digests that form so that plans can key results on the data, not on a name.
Both are pure functions of the arrays: the store (`pipeline.data.store`) writes and verifies entries
with them, and so can anyone holding the arrays.

Split from store.py along its seam: this part knows nothing of files.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import numpy as np
import scipy.sparse as sp

# Prefixes of the fingerprinted byte streams: changing the canonical serialisation must change
# every fingerprint, so the version is part of the hashed bytes.
_FINGERPRINT_TAG = b"svmbench-dataset-fingerprint-v2\x00"
_ROW_GROUP_TAG = b"svmbench-row-group-v2\x00"



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
    indptr = np.ascontiguousarray(X.indptr, dtype=indptr_dtype(X.nnz))
    data = np.ascontiguousarray(X.data, dtype=np.float64)
    X = make_csr(data, indices, indptr, (n_rows, n_features))

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

    Let ``d(a)`` be the sha256 of array ``a``'s bytes. The fingerprint is the sha256 of: a
    version tag; n_rows, n_features and nnz as little-endian int64; then ``d(indptr)`` (int64,
    starting at 0), ``d(indices)`` (int32), ``d(values)`` (float64) and ``d(y)`` (float64),
    all of the canonical form (:func:`canonicalize`). It therefore depends only on the matrix
    and the labels, not on row groups, compression or how ``X`` was passed; and because each
    array has its own running digest it can be computed over rows streamed in chunks of any
    size (see :class:`Fingerprinter`).

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


class Fingerprinter:
    """Running :func:`fingerprint` over consecutive canonical row blocks.

    The version 1 fingerprint hashed the totals (n_rows, nnz) *before* the arrays, which
    forces holding everything until the end; version 2 hashes each array into its own
    digest and the totals last, so rows can be fed as they are produced.
    """

    def __init__(self, n_features: int):
        self.n_features = int(n_features)
        self.n_rows = 0
        self.nnz = 0
        self._h = [hashlib.sha256() for _ in range(4)]  # indptr, indices, values, y
        self._h[0].update(np.zeros(1, dtype="<i8").tobytes())

    def update(self, X: sp.csr_matrix, y: np.ndarray) -> None:
        """Feed the next rows (canonical CSR and their labels)."""
        self._h[0].update(_le_bytes(np.asarray(X.indptr[1:], dtype=np.int64) + self.nnz, "<i8"))
        self._h[1].update(_le_bytes(X.indices, "<i4"))
        self._h[2].update(_le_bytes(X.data, "<f8"))
        self._h[3].update(_le_bytes(y, "<f8"))
        self.n_rows += X.shape[0]
        self.nnz += int(X.nnz)

    def hexdigest(self) -> str:
        h = hashlib.sha256(_FINGERPRINT_TAG)
        h.update(struct.pack("<qqq", self.n_rows, self.n_features, self.nnz))
        for part in self._h:
            h.update(part.digest())
        return h.hexdigest()


def _le_bytes(arr: np.ndarray, dtype: str) -> memoryview:
    return memoryview(np.ascontiguousarray(arr, dtype=dtype)).cast("B")


def _fingerprint_canonical(X: sp.csr_matrix, y: np.ndarray) -> str:
    # Caller guarantees canonical form; only byte order and width are fixed here.
    fp = Fingerprinter(X.shape[1])
    fp.update(X, y)
    return fp.hexdigest()


def row_group_digest(X: sp.csr_matrix, y: np.ndarray) -> str:
    """sha256 of one row group's canonical rows (indptr rebased at 0), for partial reads."""
    h = hashlib.sha256(_ROW_GROUP_TAG)
    h.update(struct.pack("<qqq", X.shape[0], X.shape[1], X.nnz))
    h.update(_le_bytes(np.asarray(X.indptr, dtype=np.int64) - int(X.indptr[0]), "<i8"))
    h.update(_le_bytes(X.indices, "<i4"))
    h.update(_le_bytes(X.data, "<f8"))
    h.update(_le_bytes(y, "<f8"))
    return h.hexdigest()


def csr_nbytes(meta: dict) -> int:
    """Bytes of a dataset's CSR in memory, from its ``meta.json``: float64 values, int32
    indices, and an int32 indptr (int64 past 2**31 entries), as :func:`read_dataset` returns it."""
    nnz = int(meta["nnz"])
    return nnz * (8 + 4) + (int(meta["n_rows"]) + 1) * np.dtype(indptr_dtype(nnz)).itemsize


def indptr_dtype(nnz: int) -> type:
    return np.int32 if nnz <= np.iinfo(np.int32).max else np.int64


def make_csr(data, indices, indptr, shape) -> sp.csr_matrix:
    # The constructor may otherwise re-derive an index dtype and copy; our arrays are already
    # canonical, and the sorted flag saves scipy a later O(nnz) check.
    X = sp.csr_matrix((data, indices, indptr), shape=shape, copy=False)
    X.has_sorted_indices = True
    return X
