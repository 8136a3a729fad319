"""Parsing of the user's own files: LIBSVM/svmlight, CSV and Parquet into ``(X, y, extra)``.

Every reader validates what it reads and reports a problem as ``path:lineno: problem`` (or
``path: row i`` for Parquet), so that a malformed file is refused before anything reaches the
store. :func:`pipeline.data.datasets.ingest_file` writes what these readers return.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from pipeline.data import store

__all__ = ["INGEST_FORMATS", "IngestWarning", "infer_format", "read_csv", "read_libsvm", "read_parquet"]


class IngestWarning(UserWarning):
    """A file that reads, but perhaps not as its author meant (one cut short): ingested, and said."""

INGEST_FORMATS = ("libsvm", "svmlight", "csv", "parquet")

_EXTENSION_FORMATS = {
    ".svm": "libsvm",
    ".libsvm": "libsvm",
    ".svmlight": "libsvm",
    ".txt": "libsvm",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}

_LABEL_CANDIDATES = ("label", "y", "target", "class")

# A whole well-formed LIBSVM line, matched in C; only a line that fails gets the slow,
# token-by-token diagnosis. Numbers are finite decimals (sklearn's parser would accept
# nan/inf, which no solver can use).
_NUM = rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_LINE_RE = re.compile(
    rb"[ \t]*" + _NUM + rb"(?:[ \t]+qid:\d+)?((?:[ \t]+\d{1,18}:" + _NUM + rb")*)[ \t]*"
)
# Anchored on the separator: unanchored, the regex would retry at every digit of every value.
_INDEX_RE = re.compile(rb"[ \t](\d+):")


def infer_format(path: str | os.PathLike) -> str:
    """The ingest format implied by a file's extension (``.gz`` etc. are not looked through).

    Raises
    ------
    ValueError
        For an unknown extension, naming the known ones.
    """
    suffix = Path(path).suffix.lower()
    try:
        return _EXTENSION_FORMATS[suffix]
    except KeyError:
        known = ", ".join(sorted(_EXTENSION_FORMATS))
        raise ValueError(
            f"{path}: cannot tell the format from the extension {suffix or '(none)'!r} "
            f"(known: {known}); pass --format {'|'.join(INGEST_FORMATS)}"
        ) from None


def _validate_libsvm(path: Path, zero_based: str) -> bool:
    """Check every line of a LIBSVM/svmlight file; return whether indices are zero-based.

    Raises ValueError("path:lineno: problem") at the first malformed line.

    Each line's syntax is checked by one compiled regex; the order of the feature indices is
    checked with numpy for a batch of lines at a time, since converting and comparing
    indices one by one in Python would dominate the cost. Together this
    runs at roughly the speed of scikit-learn's C loader.
    """
    saw_zero = False
    last = None      # (line number, line) of the last data line, if the file ends without a newline
    with open(path, "rb") as fh:
        batch: list[tuple[int, bytes]] = []
        for lineno, raw in enumerate(fh, start=1):
            line = raw.split(b"#", 1)[0].rstrip(b"\r\n")
            if not line.strip():
                continue
            cut = not raw.endswith(b"\n")      # only the file's last line can lack one
            match = _LINE_RE.fullmatch(line)
            if match is None:
                raise ValueError(f"{path}:{lineno}: {_diagnose_libsvm(line)}{_CUT_SHORT if cut else ''}")
            if cut:
                last = lineno
            batch.append((lineno, match.group(1)))
            if len(batch) == _VALIDATE_BATCH:
                saw_zero |= _check_index_order(path, batch, zero_based)
                batch = []
        saw_zero |= _check_index_order(path, batch, zero_based)
    if last is not None:
        # LIBSVM files end each line with a newline, the last one too: a file that stops
        # inside its last line was most likely cut short (a download or copy interrupted),
        # and that line, which still parses, may have lost features, and the lines after it.
        warnings.warn(f"{path}:{last}: the file ends inside this line, with no newline after it: it may be "
                      f"truncated (a download or copy cut short); compare it with its source", IngestWarning,
                      stacklevel=3)
    if zero_based == "auto":
        return saw_zero  # sklearn's heuristic: any index 0 means zero-based
    return zero_based == "true"


_VALIDATE_BATCH = 8192
_CUT_SHORT = " (the file's last line, with no newline after it: the file may be truncated)"


def _check_index_order(path: Path, batch: list[tuple[int, bytes]], zero_based: str) -> bool:
    """Check the feature indices of a batch of syntactically valid lines; return if any is 0.

    ``batch`` holds (line number, the line's ``index:value`` part).
    """
    parts, counts = [], []
    for _, features in batch:
        found = _INDEX_RE.findall(features)
        parts.append(b" ".join(found))
        counts.append(len(found))
    if not any(counts):
        return False
    # Digits only (the line regex guarantees it), so the text parse cannot fail.
    indices = np.fromstring(b" ".join(parts), dtype=np.int64, sep=" ")
    counts = np.asarray(counts)
    indptr = np.r_[0, np.cumsum(counts)]
    line_of = np.repeat(np.arange(len(batch)), counts)

    def fail(position: int, problem: str):
        lineno = batch[line_of[position]][0]
        raise ValueError(f"{path}:{lineno}: {problem}")

    too_large = np.flatnonzero(indices > np.iinfo(np.int32).max)
    if too_large.size:
        fail(too_large[0], f"feature index {indices[too_large[0]]} is too large (max 2**31 - 1)")
    step_ok = np.diff(indices) > 0
    step_ok[indptr[1:-1][(indptr[1:-1] > 0) & (indptr[1:-1] < indices.size)] - 1] = True
    bad = np.flatnonzero(~step_ok)
    if bad.size:
        k = bad[0]
        if indices[k + 1] == indices[k]:
            fail(k + 1, f"feature index {indices[k]} repeated in the row")
        fail(
            k + 1,
            f"feature indices not strictly increasing (index {indices[k + 1]} after {indices[k]})",
        )
    zeros = np.flatnonzero(indices == 0)
    if zeros.size and zero_based == "false":
        fail(zeros[0], "feature index 0 in a file declared one-based (--zero-based false)")
    return bool(zeros.size)


def _diagnose_libsvm(line: bytes) -> str:
    """Name the first problem of a line that failed the fast whole-line match."""
    try:
        tokens = line.decode("utf-8").split()
    except UnicodeDecodeError as exc:
        return (f"bytes that are not UTF-8 at column {exc.start + 1} "
                f"({line[exc.start:exc.start + 1]!r}); is this a LIBSVM text file?")
    first, rest = tokens[0], tokens[1:]
    if ":" in first:
        return f"missing label (line starts with {first!r})"
    problem = _number_problem(first)
    if problem:
        return f"label {first!r} {problem}"
    if rest and rest[0].startswith("qid:"):
        if not rest[0][4:].isdigit():
            return f"qid {rest[0][4:]!r} is not a non-negative integer"
        rest = rest[1:]
    for token in rest:
        index, sep, value = token.partition(":")
        if not sep:
            return f"token {token!r} is not of the form index:value"
        if not index.isdigit() or not index.isascii():
            if index.startswith("-") and index[1:].isdigit():
                return f"feature index {index} is negative"
            return f"feature index {index!r} is not an integer"
        if int(index) > np.iinfo(np.int32).max:
            return f"feature index {index} is too large (max 2**31 - 1)"
        problem = _number_problem(value)
        if problem:
            return f"value {value!r} for feature {index} {problem}"
    return "malformed line"


def _number_problem(text: str) -> str:
    """Why ``text`` is not a finite decimal number, or "" if it is one."""
    if re.fullmatch(_NUM.decode(), text):
        return ""
    try:
        float(text)
    except ValueError:
        return "is not a number"
    return "is not finite" if not math.isfinite(float(text)) else "is not a plain decimal number"


def read_libsvm(
    path: str | os.PathLike, zero_based: str = "auto"
) -> tuple[sp.csr_matrix, np.ndarray, list]:
    """Read a LIBSVM/svmlight file after validating it line by line.

    Parameters
    ----------
    path : path-like
    zero_based : {"auto", "true", "false"}
        Whether feature indices start at 0. ``"auto"`` follows scikit-learn: zero-based iff
        some index is 0. One-based indices are shifted to zero-based.

    Returns
    -------
    X, y, preprocessing
        ``preprocessing`` records the index shift, if any.

    Raises
    ------
    ValueError
        ``"path:lineno: problem"`` for the first malformed line.
    FileNotFoundError
        If the file does not exist.
    """
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    zero_based = str(zero_based).lower()
    if zero_based not in ("auto", "true", "false"):
        raise ValueError(f"zero_based must be auto, true or false, got {zero_based!r}")
    is_zero_based = _validate_libsvm(path, zero_based)
    X, y = load_svmlight_file(str(path), zero_based=is_zero_based, dtype=np.float64)
    preprocessing = [] if is_zero_based else ["one-based feature indices shifted to zero-based"]
    return X, y, preprocessing


def _frame_to_xy(frame, label: str | None, where: str, locate: Callable[[int], str]):
    """Split a DataFrame into numeric features and labels, with errors a user can act on."""
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
    if label is None:
        label = next((c for c in _LABEL_CANDIDATES if c in columns), None)
        if label is None:
            # A header of numbers is a first data row taken for one.
            hint = (
                "; the first line looks like data, not a header: pass --no-header"
                if all(_number_problem(c.strip()) == "" for c in columns)
                else ""
            )
            raise ValueError(
                f"{where}: no label column: pass --label COLUMN (none of "
                f"{', '.join(_LABEL_CANDIDATES)} is present); columns: {', '.join(columns)}{hint}"
            )
    elif label not in columns:
        raise ValueError(
            f"{where}: label column {label!r} not found; columns: {', '.join(columns)}"
        )
    labels = frame[label]
    features = frame.drop(columns=[label])
    # Every row's problems are found before one is named, so that the message names the first
    # bad line of the file, whichever column or check it fails (a file with two bad lines is
    # fixed from the top).
    problems: list[tuple[int, int, str]] = []   # (row, column position, what is wrong)

    def first(mask, position: int, what) -> None:
        rows = np.flatnonzero(mask)
        if rows.size:
            problems.append((int(rows[0]), position, what(int(rows[0]))))

    first(labels.isna().to_numpy(), columns.index(label), lambda i: f"missing label in column {label!r}")
    numeric = {}
    for column in features.columns:
        values, position = features[column], columns.index(column)
        if pd.api.types.is_bool_dtype(values):
            numeric[column] = values
            continue
        missing = values.isna().to_numpy()
        if not pd.api.types.is_numeric_dtype(values):
            parsed = pd.to_numeric(values, errors="coerce")
            first(parsed.isna().to_numpy() & ~missing, position,
                  lambda i, c=column, v=values: f"feature column {c!r} is not numeric ({v.iloc[i]!r}, dtype {v.dtype}); "
                                                "encode or drop it before ingesting")
            values = parsed
        first(missing, position, lambda i, c=column: f"missing value in feature column {c!r}")
        first(np.isinf(values.to_numpy(dtype=np.float64, na_value=np.nan)), position,
              lambda i, c=column: f"non-finite value in feature column {c!r}")
        numeric[column] = values
    if problems:
        row, _, what = min(problems)
        raise ValueError(f"{locate(row)}: {what}")
    extra: dict[str, Any] = {}
    if pd.api.types.is_numeric_dtype(labels) and not pd.api.types.is_bool_dtype(labels):
        y = labels.to_numpy(dtype=np.float64)
    else:
        # Text (or boolean) classes become 0..k-1 in sorted order; the names are kept.
        codes, names = pd.factorize(labels, sort=True)
        y = codes.astype(np.float64)
        extra["label_names"] = [str(n) for n in names]
    X = pd.DataFrame(numeric).to_numpy(dtype=np.float64) if numeric else np.empty((len(frame), 0))
    extra["feature_names"] = list(features.columns)
    extra["label_column"] = label
    return X, y, extra


def read_csv(path: str | os.PathLike, label: str | None = None, header: bool = True):
    """Read a CSV file: one label column, all other columns numeric.

    With a header row (the default), ``label`` defaults to the first of ``label``, ``y``,
    ``target``, ``class`` present. Without one (``header=False``), columns are numbered from 0
    and ``label`` is a column number, by default 0 (the first column, as in LIBSVM files).
    Non-numeric labels are coded 0..k-1 in sorted order (names kept as ``label_names``).

    Returns
    -------
    X : ndarray, y : ndarray, extra : dict
    """
    import pandas as pd

    path = Path(path)
    try:
        frame = pd.read_csv(path, header=0 if header else None)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        # pandas stops at the first line of the wrong width ("Expected 3 fields in line 5,
        # saw 4"): named as path:line, as every other bad line is.
        ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if ragged:
            want, line, saw = ragged.groups()
            raise ValueError(f"{path}:{line}: {saw} fields where the first line has {want}") from exc
        raise ValueError(f"{path}: not a readable CSV file: {str(exc).strip()}") from exc
    if not header:
        label = "0" if label is None else str(label)
    # Data row i is on line i + 2 below a header, else on line i + 1.
    first = 2 if header else 1
    return _frame_to_xy(frame, label, str(path), lambda i: f"{path}:{i + first}")


def read_parquet(path: str | os.PathLike, label: str | None = None):
    """Read a Parquet file: the store's own columns, or a plain table like a CSV file.

    A table with columns ``y``, ``indices`` and ``values`` (lists) is read as the store's
    sparse layout; ``n_features`` is then the largest index plus one. Any other table is
    treated like :func:`read_csv`.

    Returns
    -------
    X : ndarray or csr_matrix, y : ndarray, extra : dict
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        table = pq.read_table(path)
    except pa.ArrowException as exc:
        raise ValueError(f"{path}: not a readable Parquet file: {exc}") from exc
    if {"y", "indices", "values"}.issubset(table.column_names):
        X, y = store.arrow_to_csr(table, what=str(path))
        return X, y, {}
    return _frame_to_xy(table.to_pandas(), label, str(path), lambda i: f"{path}: row {i}")
