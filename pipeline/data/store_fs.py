"""The store's file system access: every byte `pipeline.data.store` reads or writes goes through one
pyarrow FileSystem, held with the path on it by a `Loc`.

A `Loc` is a local folder (LocalFileSystem), an object store pyarrow opens itself (s3://, gs://,
hdfs://, abfs://) or anything fsspec opens (wrapped by pyarrow's FSSpecHandler). The store only asks
the questions below; the one difference between the two kinds of file system that matters to it,
whether a folder can be renamed atomically, is `Loc.local`, consulted by its _publish and
_unpublish alone. Opening a root (credentials, fsspec fallback) is the store's `_fs_root`.

Split from store.py along its seam: this part knows nothing of datasets, only of paths.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs


@dataclasses.dataclass(frozen=True)
class Loc:
    """A path in the store's filesystem: ``/`` joins, and it prints as the user would write it."""

    fs: Any  # pyarrow.fs.FileSystem
    path: str  # the path on fs: "/abs/folder" or "bucket/prefix"
    scheme: str  # "" for a local folder, else the URI scheme it was opened from

    def __truediv__(self, part: str) -> Loc:
        return dataclasses.replace(self, path=f"{self.path.rstrip('/')}/{part}")

    @property
    def parent(self) -> Loc:
        return dataclasses.replace(self, path=self.path.rstrip("/").rsplit("/", 1)[0] or "/")

    @property
    def local(self) -> bool:
        """A local (or mounted shared) folder: POSIX rename of a folder is atomic there."""
        return self.scheme == ""

    def public(self) -> Path | str:
        """What :func:`dataset_path` hands out: a Path for a local folder, else the URI."""
        return Path(self.path) if self.local else str(self)

    def __str__(self) -> str:
        return self.path if self.local else f"{self.scheme}://{self.path.lstrip('/')}"


def is_remote(root: str | os.PathLike) -> bool:
    """Whether ``root`` is a URI (``s3://bucket/prefix``, ...) rather than a local folder."""
    return "://" in os.fspath(root) and not os.fspath(root).startswith("file://")


def _fs_type(path: Loc):
    return path.fs.get_file_info(path.path).type


def fs_exists(path: Loc) -> bool:
    return _fs_type(path) != pafs.FileType.NotFound


def fs_isfile(path: Loc) -> bool:
    return _fs_type(path) == pafs.FileType.File


def fs_isdir(path: Loc) -> bool:
    return _fs_type(path) == pafs.FileType.Directory


def fs_listdir(path: Loc) -> Iterable[str]:
    return [i.base_name for i in path.fs.get_file_info(pafs.FileSelector(path.path, allow_not_found=True))]


def fs_makedirs(path: Loc) -> None:
    path.fs.create_dir(path.path, recursive=True)


def fs_rename(src: Loc, dst: Loc) -> None:
    # POSIX rename: fails, rather than merging, when dst is a non-empty folder (see _publish).
    src.fs.move(src.path, dst.path)


def fs_copy(src: Loc, dst: Loc) -> None:
    src.fs.copy_file(src.path, dst.path)


def fs_delete(path: Loc) -> None:
    path.fs.delete_file(path.path)


def fs_rmtree(path: Loc) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.fs.delete_dir(path.path)


def fs_write_text(path: Loc, text: str) -> None:
    with path.fs.open_output_stream(path.path, compression=None) as fh:
        fh.write(text.encode("utf-8"))


def fs_read_text(path: Loc) -> str:
    with path.fs.open_input_stream(path.path, compression=None) as fh:
        return fh.read().decode("utf-8")


def fs_open(path: Loc):
    """A random-access file, for Parquet's reader (which fetches only the row groups it needs)."""
    return path.fs.open_input_file(path.path)
