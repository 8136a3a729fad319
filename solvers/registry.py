"""Solvers by name, their parameters declared as data, and `fit`, the functional core.

Each solver module ends with ``register(SolverSpec(...))``. Its parameters are declared next to
its driver as `Param`s and checked here by one piece of code, so that every bad value, from the
estimator or from a sweep, gets the same kind of message naming the solver, the key and the value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from .base import Budget, Fit, Recorder
from .objectives import basis_intercept
from .params import Param, SolverError  # noqa: F401  (declared there, used by every solver module)
from .problem import Problem


_MISSING = object()


@dataclass(frozen=True)
class SolverSpec:
    """A registered solver: its driver, what problems it takes, and its parameters."""

    name: str
    family: str
    fit: Callable[..., Fit]
    params: dict = field(default_factory=dict)
    losses: tuple = ("hinge", "squared_hinge")
    intercepts: tuple = ("none", "regularized")
    kernels: tuple = ("linear",)
    warm_start: bool = False
    # Whether the driver takes warm_start={"path": kernel_dual.KernelPath}: the fits of one C
    # path share its kernel cache and seed each other's alpha (tasks.run_path).
    kernel_path: bool = False
    hard_margin: bool = False
    # Whether the driver stops on budget.time_limit_s (status "timeout"); False for a wrapped
    # library that cannot be interrupted (scikit-learn's LIBLINEAR and LIBSVM).
    time_limit: bool = True
    # Whether the driver weighs rows (Problem.sample_weight: per-row box C s_i in a dual, s_i
    # times the loss term in a primal); a weighted problem given to one that does not is refused.
    sample_weight: bool = False
    # Whether the pipeline trains each fit across the Dask workers, each holding a block of
    # the rows, its driver in the client (pipeline/engine/distributed.py), rather than in one
    # task; `fit` is then the same algorithm over blocks in one process (cluster=sequential,
    # the estimator).
    distributed: bool = False
    default_max_iter: int = 1000
    # budget.tol when none is given (solvers.fit without a budget, SVMClassifier(tol=None)): each
    # solver's own stopping quantity, set so that default sweeps end `converged` (DESIGN.md).
    default_tol: float = 1e-4
    version: str = "1"
    description: str = ""
    # Compiles the numba kernels (or loads numba's cache) on tiny inputs; None: `default_warmup`.
    warmup: Callable[[], None] | None = None
    # Why a combination of problem settings and the solver's own parameters is refused, or None:
    # refuse(loss, params) for a pair no method of the solver solves (LIBLINEAR has no primal
    # method for the hinge), checked wherever the two meet (`check_combination`).
    refuse: Callable[[str, dict], str | None] | None = None

    def check_params(self, params: dict) -> dict:
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            valid = ", ".join(sorted(self.params)) or "(none)"
            raise SolverError(f"solver {self.name!r} has no parameter {unknown[0]!r}; its parameters: {valid}")
        out = {}
        for key, p in self.params.items():
            v = params.get(key, p.default)
            out[key] = p.check(f"{self.name}.{key}", v)
        return out

    def check_combination(self, loss: str, params: dict) -> None:
        """SolverError with the solver's reason (`refuse`) when it solves no problem of this loss
        with these parameters: the estimator, the config and `fit` ask it before any work."""
        why = self.refuse(loss, params) if self.refuse is not None else None
        if why is not None:
            raise SolverError(why)

    def check_problem(self, problem: Problem) -> None:
        if problem.loss not in self.losses:
            raise SolverError(f"solver {self.name!r} does not handle loss={problem.loss!r}; it takes {list(self.losses)}")
        if problem.intercept not in self.intercepts:
            raise SolverError(f"solver {self.name!r} does not handle intercept={problem.intercept!r}; it takes {list(self.intercepts)}")
        if problem.kernel.name not in self.kernels:
            raise SolverError(f"solver {self.name!r} does not handle kernel={problem.kernel.name!r}; it takes {list(self.kernels)}")
        if problem.sample_weight is not None and not self.sample_weight:
            raise SolverError(f"solver {self.name!r} does not take sample weights (class_weight or sample_weight); "
                              f"the solvers that do: {', '.join(n for n in solver_names() if _REGISTRY[n].sample_weight)}")
        if math.isinf(problem.C) and not self.hard_margin:
            raise SolverError(f"solver {self.name!r} needs a finite C (C=inf, a hard margin, is not supported)")


_REGISTRY: dict[str, SolverSpec] = {}
# Where each registered solver came from (`origin`): "builtin solvers.dcd", "entry point
# dist:name", "file /abs/path.py" or "python module.name" (a `register` call of its own).
_ORIGINS: dict[str, str] = {}
_WARM: set[str] = set()
# The origin given to `register` calls made while a plugin loads (a module that registers on
# import), with a file plugin's sha256 and the names it registers; empty: the caller's own, from
# the fit function's module.
_LOADING: list[tuple[str, str | None, list[str]]] = []
# The sha256 of the file each registered solver came from (a file plugin's bytes), where known:
# what makes two registrations of one name one plugin (`register`).
_SOURCES: dict[str, str] = {}
# Entry points of the group `ENTRY_POINT_GROUP` loaded so far in this process, by "dist:name".
_LOADED_ENTRY_POINTS: set[str] = set()
_DISCOVERED = False
# File and module plugins loaded in this process: a file by the sha256 of its bytes (the same
# file reached by two roads, its path and the copy a run ships to a worker, is one plugin), a
# module by its dotted name.
_PLUGINS: dict[str, "Plugin"] = {}

ENTRY_POINT_GROUP = "svmbench.solvers"


def _default_origin(spec: SolverSpec) -> str:
    module = getattr(spec.fit, "__module__", None) or "?"
    return f"builtin {module}" if module.split(".")[0] == __name__.split(".")[0] else f"python {module}"


def register(spec: SolverSpec, *, origin: str | None = None) -> SolverSpec:
    """Add a solver to the registry under ``spec.name``.

    origin: where it came from, shown by ``python -m solvers list``; by default the plugin being
    loaded (`load_plugin`, an entry point), else the fit function's module. The same name from
    the same origin replaces the earlier spec (a plugin file loaded again after an edit). From
    the same file's bytes by another road (a worker's `--preload` of the file the run also ships,
    or the file imported by hand and then named in ``plugins=``) it is the same plugin: the first
    registration stays. From two different sources it is refused, naming both, since which one a
    sweep ran would depend on import order.
    """
    if not isinstance(spec, SolverSpec):
        raise SolverError(f"register() takes a SolverSpec, got {type(spec).__name__}")
    loading, sha, names = _LOADING[-1] if _LOADING else (None, None, [])
    origin = origin or loading or _default_origin(spec)
    names.append(spec.name)
    if spec.name in _REGISTRY and _REGISTRY[spec.name].fit is not spec.fit:
        before = _ORIGINS.get(spec.name, "?")
        if before != origin:
            first = _SOURCES.get(spec.name) or _module_sha256(_REGISTRY[spec.name])
            if first is not None and first == (sha or _module_sha256(spec)):
                return _REGISTRY[spec.name]
            raise SolverError(f"solver {spec.name!r} is registered twice: by {before} and by {origin}")
        _WARM.discard(spec.name)
    _REGISTRY[spec.name] = spec
    _ORIGINS[spec.name] = origin
    if sha is not None:
        _SOURCES[spec.name] = sha
    else:
        _SOURCES.pop(spec.name, None)
    return spec


def _module_sha256(spec: SolverSpec) -> str | None:
    """The sha256 of the file that defines the spec's fit function (its module's ``__file__``),
    or None (no such file): what identifies a registration made outside `load_plugin`."""
    import hashlib
    import sys

    path = getattr(sys.modules.get(getattr(spec.fit, "__module__", None) or ""), "__file__", None)
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except (OSError, TypeError):
        return None


def origin(name: str) -> str:
    """Where the named solver was registered from (see `register`)."""
    get_solver(name)
    return _ORIGINS.get(name, "?")


def get_solver(name: str) -> SolverSpec:
    if name not in _REGISTRY and isinstance(name, str):
        # An unknown name may be an installed plugin's: look through the entry points once.
        discover()
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise SolverError(f"unknown solver {name!r}; available: {', '.join(solver_names())}") from None


def solver_names() -> list[str]:
    discover()
    return sorted(_REGISTRY)


def registered_names() -> list[str]:
    """The solvers registered in this process so far, without looking through the entry points
    (`discover`, which imports installed plugins): what a pure check of a config reads."""
    return sorted(_REGISTRY)


# ------------------------------------------------------------------ plugins
@dataclass(frozen=True)
class Plugin:
    """A file or module plugin loaded into this process: what it registered, and for a file the
    sha256 of its bytes (a run records it in the task keys of its fits, so that an edit reruns
    them)."""

    source: str
    names: tuple[str, ...]
    sha256: str | None = None


def import_error(what: str, exc: BaseException, own: str | None, error: type = SolverError) -> Exception:
    """One error (SolverError by default) for a plugin that failed to import: the exception's last traceback line
    and the file:line where it was raised, preferring the deepest frame in the plugin's own
    file(s) (`own`, a path or directory) over library frames it called into."""
    import os
    import traceback

    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen") and os.path.abspath(f.filename) != os.path.abspath(__file__)]
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        # A file that does not compile raised before any of its lines ran: where it failed is
        # the error's own file and line, not a frame of the traceback (the import machinery's).
        frames.append((exc.filename, exc.lineno))
    mine = [f for f in frames if own and os.path.abspath(f[0]).startswith(own)]
    where = (mine or frames or [None])[-1]
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    at = f" ({where[0]}:{where[1]})" if where is not None else ""
    return error(f"{what} failed to import: {last}{at}")


def _registered_during(origin: str, load: Callable[[], Any], sha: str | None = None) -> tuple[Any, list[str]]:
    """load() with `register` calls attributed to origin (and a file's sha256); (its value, the
    names it registered)."""
    names: list[str] = []
    _LOADING.append((origin, sha, names))
    try:
        value = load()
    finally:
        _LOADING.pop()
    return value, sorted(set(names))


def _register_object(obj, origin: str) -> list[str]:
    """An entry point's object: a SolverSpec, an iterable of them, a module (importing it has
    registered its solvers), or a callable returning any of these (None: it registered them)."""
    import types

    if isinstance(obj, types.ModuleType):
        return []
    if callable(obj) and not isinstance(obj, SolverSpec):
        obj = obj()
    if obj is None:
        return []
    specs = [obj] if isinstance(obj, SolverSpec) else list(obj)
    for spec in specs:
        if not isinstance(spec, SolverSpec):
            raise SolverError(f"{origin} gave {type(spec).__name__}, not a SolverSpec")
        register(spec, origin=origin)
    return [s.name for s in specs]


def discover() -> None:
    """Load every installed entry point of the group ``svmbench.solvers``, once per process (a
    failed one is retried, and raises again, at the next lookup)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "?"
        key = f"{dist}:{ep.name}"
        if key in _LOADED_ENTRY_POINTS:
            continue
        where = f"entry point {key}"

        def load(ep=ep, where=where):
            try:
                obj = ep.load()
            except SolverError:
                raise
            except Exception as exc:
                raise import_error(f"plugin {where} ({ep.value})", exc, module_dir(ep.module)) from exc
            return _register_object(obj, where)

        _registered_during(where, load)
        _LOADED_ENTRY_POINTS.add(key)
    _DISCOVERED = True


def module_dir(module: str) -> str | None:
    """The directory holding a module's top-level package, for `import_error`'s own frames."""
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return os.path.dirname(os.path.abspath(spec.origin))


def plugin_of(name: str) -> Plugin | None:
    """The file or module plugin loaded in this process that registered the named solver last."""
    found = None
    for plugin in _PLUGINS.values():
        if name in plugin.names:
            found = plugin
    return found


def loaded_plugin(source: str) -> Plugin | None:
    """The plugin `load_plugin(source)` loaded in this process, found without reading the file or
    importing anything (None if none was): a file by its absolute path (the last loaded, if its
    bytes changed between loads), a module by its name. What a pure check of a config reads."""
    import os

    source = os.fspath(source)
    if source.endswith(".py") or os.sep in source or (os.altsep or os.sep) in source:
        path = os.path.abspath(source)
        found = None
        for plugin in _PLUGINS.values():
            if plugin.source == path:
                found = plugin
        return found
    return _PLUGINS.get(source)


def ensure_plugin(source: str, sha256: str | None = None, text: str | None = None,
                  cache_dir: str | None = None) -> Plugin:
    """The plugin a task names, in a process that may not have it (a Dask worker's task process):
    a module is imported; a file is loaded from its path when it is there with the same content
    (sha256), else written from `text` (the copy the run shipped) to ``cache_dir/<sha256>/<name>``
    and loaded from there, under the same module name as in the client (stem and hash), so its
    functions unpickle alike. Raises SolverError naming the plugin when neither is possible."""
    import hashlib
    import os
    import tempfile

    if sha256 is None:
        return load_plugin(source)
    if os.path.isfile(source):
        with open(source, "rb") as fh:
            if hashlib.sha256(fh.read()).hexdigest() == sha256:
                return load_plugin(source)
    if text is None:
        raise SolverError(f"plugin file {source!r} (sha256 {sha256[:12]}) is not on this machine and the "
                          f"task did not ship it")
    if hashlib.sha256(text.encode()).hexdigest() != sha256:
        raise SolverError(f"plugin file {source!r}: the shipped copy does not have sha256 {sha256[:12]}")
    folder = os.path.join(cache_dir or os.path.join(tempfile.gettempdir(), f"svmbench-plugins-{os.getuid()}"), sha256)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, os.path.basename(source))
    if not os.path.isfile(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    return load_plugin(path)


PLUGIN_ORIGINS = ("file ", "module ", "entry point ")


def is_plugin(name: str) -> bool:
    """Whether the named solver came from a plugin (a file, a module or an installed entry
    point), not from this package or a `register` call of the caller's own."""
    return origin(name).startswith(PLUGIN_ORIGINS)


def plugin_sha256(name: str) -> str | None:
    """The sha256 of the source a plugin solver came from: a file plugin's bytes; for a module
    or an entry point, every ``.py`` file of its top-level package (or its one module file),
    paths and bytes. None for a solver that is not a plugin's (`is_plugin`)."""
    import hashlib
    import importlib.util
    import os
    from pathlib import Path

    if not is_plugin(name):
        return None
    plugin = plugin_of(name)
    if plugin is not None and plugin.sha256 is not None:
        return plugin.sha256
    top = getattr(_REGISTRY[name].fit, "__module__", "").split(".")[0]
    spec = importlib.util.find_spec(top) if top else None
    if spec is None or spec.origin is None:
        return None
    folders = list(spec.submodule_search_locations or [])
    files = sorted(p for folder in folders for p in Path(folder).rglob("*.py")) if folders else [Path(spec.origin)]
    digest = hashlib.sha256()
    for path in files:
        digest.update(os.fsencode(path.relative_to(folders[0]) if folders else path.name) + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def plugin_needs(names, texts: dict | None = None) -> list[dict]:
    """What a process that runs fits of these solvers must load, for `missing_plugins` there:
    one dict per plugin solver, {solver, origin} and, for a file or module plugin, its source
    (a file's sha256 and text too: the run ships a file, `ensure_plugin`). texts: file texts by
    sha256 (those a plan's specs carry, read when it was built: the file may have changed or
    gone since); another file is read now. Built-in solvers and those a caller registered
    itself need nothing and are left out."""
    texts = texts or {}
    out = []
    for name in sorted(set(names)):
        if not is_plugin(name):
            continue
        need = {"solver": name, "origin": origin(name)}
        plugin = plugin_of(name)
        if plugin is not None:
            need.update(source=plugin.source, sha256=plugin.sha256)
            if plugin.sha256 in texts:
                need["text"] = texts[plugin.sha256]
            elif plugin.sha256 is not None:
                with open(plugin.source, encoding="utf-8") as fh:
                    need["text"] = fh.read()
        out.append(need)
    return out


def missing_plugins(needs: list[dict]) -> list[str]:
    """In a process about to run tasks (a Dask worker's sandbox, before the first one): load
    each plugin of `plugin_needs` and look its solver up. One line per plugin that fails here,
    naming it and its error (for an import, the last line and file:line, `import_error`); []
    when all load. Never raises: the caller collects the lines of every worker."""
    out = []
    for need in needs:
        name, where = need["solver"], need["origin"]
        try:
            if need.get("sha256") is not None:
                ensure_plugin(need["source"], need["sha256"], need.get("text"))
            elif need.get("source") is not None:
                load_plugin(need["source"])
            else:
                discover()      # an entry point: installed here too, or not
            if name not in _REGISTRY:
                raise SolverError(f"it does not register solver {name!r} here (the client's does: a different "
                                  f"version installed?)" if need.get("source") else
                                  f"solver {name!r} is not registered here: the package of {where} is not installed")
        except Exception as exc:  # noqa: BLE001 - reported, with the plugin, to the client
            line = str(exc) if isinstance(exc, SolverError) else f"{type(exc).__name__}: {exc}"
            out.append(f"solver {name} ({where}): {line}")
    return out


def load_plugin(source: str) -> Plugin:
    """Import a plugin for this process: a ``.py`` file by path, or a dotted module name.

    What it registers (``register(...)`` at import, or a module-level ``SOLVERS`` list of
    SolverSpecs) gets the origin ``file <path>`` or ``module <name>``. A file is imported under a
    module name made of its stem and content hash, the same in every process that loads the same
    bytes (the pipeline's workers, where its functions are unpickled by reference). Loading the
    same module, or a file of the same bytes from any path, again returns the first result: a
    file is one plugin by its content; an edited file is imported anew and replaces its solvers.

    Raises SolverError for a file that does not exist, or a plugin that fails to import (its
    exception's last line and file:line).
    """
    import hashlib
    import importlib
    import importlib.util
    import os
    import sys

    source = os.fspath(source)
    is_file = source.endswith(".py") or os.sep in source or (os.altsep or os.sep) in source
    if is_file:
        path = os.path.abspath(source)
        if not os.path.isfile(path):
            raise SolverError(f"plugin file {source!r} does not exist")
        with open(path, "rb") as fh:
            data = fh.read()
        sha = hashlib.sha256(data).hexdigest()
        # By content: the same bytes at another path (the copy a run ships to a worker, beside
        # the file itself) are the plugin already loaded, not a second one.
        key = f"sha256:{sha}"
        if key in _PLUGINS:
            return _PLUGINS[key]
        stem = "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3])
        module_name = f"svmbench_plugin_{stem}_{sha[:12]}"
        where = f"file {path}"

        def load():
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except SolverError:
                del sys.modules[module_name]
                raise
            except Exception as exc:
                del sys.modules[module_name]
                raise import_error(f"plugin file {path}", exc, path) from exc
            return module
    else:
        key, sha, where = source, None, f"module {source}"
        if key in _PLUGINS:
            return _PLUGINS[key]

        def load():
            try:
                return importlib.import_module(source)
            except SolverError:
                raise
            except ModuleNotFoundError as exc:
                if exc.name and (source == exc.name or source.startswith(exc.name + ".")):
                    raise SolverError(f"plugin module {source!r} cannot be found: {exc}") from None
                raise import_error(f"plugin module {source}", exc, module_dir(source)) from exc
            except Exception as exc:
                raise import_error(f"plugin module {source}", exc, module_dir(source)) from exc

    module, names = _registered_during(where, load, sha)
    names += [n for n in _registered_during(where, lambda: _register_object(getattr(module, "SOLVERS", None) or (), where),
                                            sha)[1] if n not in names]
    plugin = Plugin(source=path if is_file else source, names=tuple(sorted(names)), sha256=sha)
    _PLUGINS[key] = plugin
    return plugin


def _warmup_problems(spec: SolverSpec):
    """Tiny problems covering what selects a compiled specialisation or code path: dense and
    CSR X, every declared loss, intercept and kernel (6 rows, 3 features, both classes, not
    separable)."""
    import numpy as np
    import scipy.sparse as sp

    from .kernels import Kernel

    X = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0],
                  [0.0, 0.5, 1.0], [0.5, 0.0, 1.0], [1.0, 0.5, 0.5]])
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    for Xf in (X, sp.csr_matrix(X)):
        for loss in spec.losses:
            # "basis" runs the solver on the problem without intercept (`fit`): no path of its own.
            for intercept in (i for i in spec.intercepts if i != "basis"):
                for kernel in spec.kernels:
                    yield Problem(Xf, y, C=1.0, loss=loss, intercept=intercept,
                                  kernel=Kernel(kernel, 0.5, 2, 1.0))


def default_warmup(spec: SolverSpec) -> None:
    """Run the solver on tiny problems (`_warmup_problems`), with its default parameters and,
    one at a time, each other option of its string parameters (which select kernels/paths), so
    that numba compilation -- seconds on a cold cache, far less to load a warm one -- and
    other first-call costs happen here and not inside the first timed fit."""
    import warnings

    variants = [{}] + [{k: o} for k, p in spec.params.items() if p.kind == "str" and p.options
                       for o in p.options if o != p.default]
    budget = Budget(max_iter=5, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for problem in _warmup_problems(spec):
            for extra in variants if problem.loss == spec.losses[0] else [{}]:
                try:
                    spec.fit(problem, budget=budget, recorder=Recorder(per_decade=1).start(),
                             warm_start=None, **spec.check_params(extra))
                except ValueError:
                    # An option that does not apply to this problem (newton's primal
                    # formulation with a kernel) is refused by name; the default must not be.
                    if not extra:
                        raise


def warm(spec: SolverSpec) -> None:
    """The solver's warmup, once per process (memoised by name), under a lock per solver that
    every process warming it on this machine takes (`_compile_lock`): on a first run, when
    numba compiles the solver's kernels into its cache, a second process waits for the first's
    compilation and then loads it, instead of compiling the same kernels at the same time. A
    run's sandboxes warm its solvers in different orders (`pipeline.engine.warmup`), so on two
    cores two solvers compile at once and neither is compiled twice."""
    if spec.name not in _WARM:
        with _compile_lock(spec.name):
            (spec.warmup or (lambda: default_warmup(spec)))()
        _WARM.add(spec.name)


def _compile_lock(name: str):
    """An exclusive lock on a file named for the solver and this package's folder (checkouts
    and their numba caches apart), in the temporary folder; released when its holder ends, by
    the system if the holder dies. Where no such file can be made, no lock: a process then
    compiles what it finds uncompiled, as without one."""
    import contextlib
    import hashlib
    import os
    import tempfile

    try:
        import fcntl
    except ImportError:       # not POSIX: no lock
        return contextlib.nullcontext()
    here = hashlib.sha256(os.path.dirname(os.path.abspath(__file__)).encode()).hexdigest()[:12]
    folder = os.path.join(tempfile.gettempdir(), f"svmbench-compile-{os.getuid()}-{here}")

    @contextlib.contextmanager
    def held():
        try:
            os.makedirs(folder, exist_ok=True)
            fh = open(os.path.join(folder, f"{name}.lock"), "a")
        except OSError:
            yield
            return
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
    return held()


def uncompiled(names) -> list[str]:
    """Of these solvers, those none of whose numba kernels has anything in numba's on-disk cache
    yet: what a first run compiles, and a later one loads. A kernel is each cached dispatcher the
    driver's module holds, its own or imported (cocoa's are dcd's), and its index file is
    ``<module>.<function>-<line>.py3xx.nbi`` in the defining module's __pycache__ or under
    NUMBA_CACHE_DIR. "None", not "every": a kernel only ever called from other kernels is compiled
    into them and has no index of its own. A hint, read from this process's files: a worker
    elsewhere has a cache of its own."""
    import os
    import sys

    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    out = []
    for name in names:
        module = sys.modules.get(getattr(get_solver(name).fit, "__module__", "") or "")
        kernels = _cached_kernels(module) if module is not None else []
        if kernels and not any(_indexed(kernel, cache_dir) for kernel in kernels):
            out.append(name)
    return out


def _indexed(kernel, cache_dir: str | None) -> bool:
    """Whether numba's cache holds an index of this kernel, where its module is defined."""
    import glob
    import os
    import sys

    path = getattr(sys.modules.get(kernel.py_func.__module__), "__file__", None)
    if not path:
        return False
    stem = os.path.splitext(os.path.basename(path))[0]
    pattern = f"{stem}.{kernel.py_func.__qualname__}-*.nbi"
    places = [os.path.join(os.path.dirname(path), "__pycache__", pattern)]
    if cache_dir:
        places.append(os.path.join(cache_dir, "**", pattern))
    return any(glob.glob(p, recursive=True) for p in places)


def _cached_kernels(module) -> list:
    """The numba-compiled functions that cache (`njit(cache=True)`) in the module's namespace."""
    return [value for value in vars(module).values()
            if getattr(getattr(value, "_cache", None), "__class__", type(None)).__name__ == "FunctionCache"]



def warm_all() -> list[str]:
    """Every registered solver's warmup (compiles numba's kernels into its on-disk cache). `make
    test` runs it once before the suite, so no test pays a cold compile (the kernel duals' are
    the longest, on a fresh clone) inside its own time."""
    names = [n for n in solver_names() if not n.startswith("_")]
    for name in names:
        warm(get_solver(name))
    return names

def fit(problem: Problem, solver: str, *, budget: Budget | None = None, recorder: Recorder | None = None,
        warm_start=None, **params) -> Fit:
    """Solve `problem` with the named solver: the functional core under the estimator and the
    pipeline. Parameters are checked against the solver's declaration before any work.

    warm_start: a previous `Fit`, or a dict with ``w``/``b`` or ``alpha``, for solvers that
    can use one (others refuse it).
    """
    spec = get_solver(solver)
    spec.check_problem(problem)
    checked = spec.check_params(params)
    spec.check_combination(problem.loss, checked)
    budget = budget or Budget(tol=spec.default_tol)
    if warm_start is not None and not spec.warm_start:
        raise SolverError(f"solver {spec.name!r} does not take a warm start")
    if isinstance(warm_start, Fit):
        warm_start = {"w": warm_start.w, "b": warm_start.b, "alpha": warm_start.alpha}
    recorder = recorder if recorder is not None else Recorder(enabled=False)
    # JIT compilation (or loading numba's cache) happens once per process, before the solver's
    # clock starts, so that the first fit of a process is timed like the others.
    warm(spec)
    # duros_katzman's "basis": solve without intercept, then set b from the margin violators.
    basis = problem.intercept == "basis"
    solved = problem.with_(intercept="none") if basis else problem
    if basis:
        # Traced extras (the test error) see each model with its basis b, as the returned one.
        recorder.model_map = lambda m: SimpleNamespace(
            w=m.w, alpha=m.alpha, b=basis_intercept(problem.y, solved.decision(m))[0])
    recorder.start()
    result = spec.fit(solved, budget=budget, recorder=recorder, warm_start=warm_start, **checked)
    if basis:
        result.b, n_violators = basis_intercept(problem.y, solved.decision(result))
        result.info["basis_n_violators"] = n_violators
    if math.isnan(result.fit_time_s):
        result.fit_time_s = recorder.seconds()
    result.trace = list(recorder.points)
    result.trace_extra = list(recorder.extra_points)
    result.info.setdefault("solver", spec.name)
    result.info.setdefault("solver_version", spec.version)
    return result
