"""Where this svmbench runs from: its configs, its source checkout (if any), and whether the
import names `pipeline` and `solvers` are its own.

svmbench runs from a source checkout (``pip install -e .``, or the folder on ``sys.path``) or from
an installed wheel (``pip install .`` or from an index). The configs are the checkout's ``conf/``
in the first case and ``pipeline/conf/`` in the second (pyproject.toml maps ``conf/`` to the
package ``pipeline.conf`` when it builds the wheel), so that editing ``conf/`` takes effect
without a reinstall and an installed svmbench has its configs. The committed paper
reproductions go to the checkout's ``outputs/papers/``; an installed svmbench has no checkout,
and writes them under the current directory's ``outputs/papers/``, beside Hydra's run folders.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import sys
from pathlib import Path

DIST = "svmbench"
IMPORT_NAMES = ("pipeline", "solvers")

# The folder that holds this `pipeline` package (and `solvers` beside it): a checkout's root, or
# the site-packages of an installation.
ROOT = Path(__file__).resolve().parents[1]
_PACKAGED = ROOT / "pipeline" / "conf"
CHECKOUT: Path | None = ROOT if (ROOT / "conf" / "config.yaml").is_file() and (ROOT / "pyproject.toml").is_file() \
    else None
# A wheel's copy first: site-packages/conf (ROOT/conf) may be any other distribution's folder.
CONF_DIR = _PACKAGED if (_PACKAGED / "config.yaml").is_file() else ROOT / "conf"
PAPERS_DIR = (CHECKOUT if CHECKOUT is not None else Path.cwd()) / "outputs" / "papers"


class InstallationError(RuntimeError):
    """svmbench cannot run as installed: configs missing, or an import name is not its own."""


def version() -> str:
    """The installed distribution's version, with where this copy runs from."""
    from importlib.metadata import PackageNotFoundError, version as dist_version
    try:
        number = dist_version(DIST)
    except PackageNotFoundError:
        number = "(not installed)"
    return f"{DIST} {number} ({'checkout' if CHECKOUT else 'installed'} at {ROOT})"


def check() -> None:
    """Raise InstallationError, naming the files, unless the configs are there and `pipeline`
    and `solvers`, as Python imports them, are this svmbench's: the two names are generic, and
    another distribution's, or a folder of that name first on ``sys.path`` (``python -m`` puts
    the current directory first), would otherwise fail far from the cause. Cheap (two small
    files hashed, one RECORD read): it runs at every command's start."""
    if not (CONF_DIR / "config.yaml").is_file():
        raise InstallationError(
            f"the configs are missing: neither {_PACKAGED} (an installed wheel) nor {ROOT / 'conf'} "
            f"(a checkout) holds config.yaml; reinstall {DIST} (pip install --force-reinstall {DIST})")
    for name in IMPORT_NAMES:
        ours = ROOT / name / "__init__.py"
        found = _origin(name)
        if found is None:
            raise InstallationError(
                f"{ours} is missing (uninstalling another distribution that also provided {name!r} removes "
                f"it): reinstall {DIST} (pip install --force-reinstall {DIST})")
        if found != ours:
            raise InstallationError(
                f"the import name {name!r} resolves to {found}, not {DIST}'s {ours}: {_owner(name, found)} "
                f"comes first on sys.path. Run `{DIST}` from a directory without a {name}/ folder, or "
                f"uninstall the other distribution and reinstall {DIST}")
    _check_recorded()


def _origin(name: str) -> Path | None:
    """The __init__.py Python imports (or has imported) for top-level package `name`, without
    importing it (find_spec of a top-level name runs no code)."""
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None) if module is not None else None
    if origin is None and module is None:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None and spec.has_location else None
    return Path(origin).resolve() if origin else None


def _check_recorded() -> None:
    """In a wheel's installation, `pipeline` and `solvers` share their folder with any other
    distribution that installs a package of the same name (pip merges them): our __init__.py
    files must still be the ones our RECORD lists, byte for byte. Nothing to compare in a
    checkout (its files are the source) or when this copy is not the recorded one."""
    from importlib.metadata import PackageNotFoundError, distribution
    try:
        files = {str(f): f for f in distribution(DIST).files or ()}
    except PackageNotFoundError:
        return
    for name in IMPORT_NAMES:
        record = files.get(f"{name}/__init__.py")
        if record is None or record.hash is None or Path(record.locate()).resolve() != ROOT / name / "__init__.py":
            continue
        data = (ROOT / name / "__init__.py").read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.new(record.hash.mode, data).digest()).rstrip(b"=").decode()
        if digest != record.hash.value:
            raise InstallationError(
                f"{ROOT / name / '__init__.py'} is not {DIST}'s (its hash differs from {DIST}'s RECORD): "
                f"{_owner(name, ROOT / name / '__init__.py')} installed a package {name!r} over it. "
                f"Uninstall that distribution, then reinstall {DIST} (pip install --force-reinstall {DIST})")


def _owner(name: str, path: Path) -> str:
    """Who provides `path` (the error path only: reading every distribution's file list takes
    most of a second)."""
    from importlib.metadata import distribution, packages_distributions
    for other in sorted(set(packages_distributions().get(name, ())) - {DIST}):
        if any(Path(f.locate()).resolve() == path for f in distribution(other).files or ()
               if str(f) == f"{name}/__init__.py"):
            return f"the distribution {other!r}"
    return "a folder not installed by pip (the current directory, PYTHONPATH or a .pth entry)"
