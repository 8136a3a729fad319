"""Composing and validating an experiment: the one place that reads the DictConfig.

Hydra composes `conf/` over the schema (`schema.Config`, registered as ``base_config``), so
OmegaConf already refuses a wrong type or an unknown top-level key. `validate` then checks every
value against what the code accepts (solver names and their declared parameters, dataset
builders, CV settings, cluster kinds) before any task runs, names the key and the value, and
returns the typed, frozen `experiment.Experiment` that every later stage takes instead.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from ..installation import CONF_DIR   # the checkout's conf/, or the wheel's pipeline/conf/
from .experiment import CV, Cluster, DatasetEntry, Experiment, Run, Search, SolverEntry, freeze, section
from .schema import (  # noqa: F401  (the schema's names are part of this module's interface)
    BUDGET_KEYS,
    CLUSTER_KINDS,
    CV_KINDS,
    HALVING_RESOURCES,
    PROBLEM_KEYS,
    REFERENCE_MODES,
    REPORT_FORMATS,
    REPORT_KEYS,
    SCALINGS,
    SEARCH_KINDS,
    TIMING_MODES,
    TASK_KEYS,
    ClusterConf,
    Config,
    ConfigError,
    CVConf,
    DatasetConf,
    ReportConf,
    RunConf,
    SearchConf,
    SolverConf,
    StoreConf,
)


def register_schema() -> None:
    """Register `Config` as ``base_config`` (conf/config.yaml lists it first in its defaults)."""
    from hydra.core.config_store import ConfigStore
    ConfigStore.instance().store(name="base_config", node=Config)


GROUPS = ("datasets", "solvers", "cv", "cluster", "search", "experiment")
# Overrides of these mappings may name any key: a plain `solvers.smo.grid.gamma=[0.1,1]` is sent
# to Hydra as `++...` (add or replace), and `validate` checks the key against what the solver
# or builder declares. Hydra's struct mode would otherwise demand `+` for keys a yaml lacks.
FREE_KEYS = (("grid",), ("solvers", None, "params"), ("solvers", None, "grid"), ("datasets", None, "params"),
             ("datasets", None, "problem"))


def group_options(group: str, root: str | None = None) -> list[str]:
    """The options of a config group; for `datasets`, the built-ins and every store entry; for
    `solvers`, every registered solver (plugins included)."""
    options = set(_yaml_options(group))
    if group == "datasets":
        from ..data.datasets import dataset_names
        options |= set(store_entries(root)) | set(dataset_names())
    if group == "solvers":
        import solvers
        options |= {n for n in solvers.solver_names() if not n.startswith("_")}
    return sorted(options)


def load_plugins(sources, where: str = "plugins") -> tuple:
    """Import each plugin (`solvers.load_plugin`) for this process: ({source, sha256, names}, ...),
    or a ConfigError naming ``plugins[i]`` and the plugin's own error."""
    from solvers import SolverError, load_plugin
    out = []
    for i, source in enumerate(sources or []):
        try:
            plugin = load_plugin(str(source))
        except SolverError as exc:
            raise ConfigError(f"{where}[{i}]={source!r}: {exc}") from None
        out.append({"source": plugin.source, "sha256": plugin.sha256, "names": list(plugin.names)})
    return tuple(out)


def loaded_plugins(sources, where: str = "plugins") -> tuple:
    """The plugins of `sources` as `load_plugins` loaded them in this process, ({source, sha256,
    names}, ...), read from the registry without importing or reading anything; a ConfigError
    naming ``plugins[i]`` for one that was not loaded (the preflight loads them first)."""
    from solvers.registry import loaded_plugin
    out = []
    for i, source in enumerate(sources or []):
        plugin = loaded_plugin(str(source))
        if plugin is None:
            raise ConfigError(f"{where}[{i}]={source!r}: not loaded in this process (pipeline.preflight "
                              f"loads a run's plugins before validating it)")
        out.append({"source": plugin.source, "sha256": plugin.sha256, "names": list(plugin.names)})
    return tuple(out)


def register_solver_options() -> None:
    """Offer every registered solver without a yaml in conf/solvers/ as an option of the
    `solvers` group, ``{solver: <name>}``: its parameters take their declared defaults (the
    registry's `Param`s), its problem the solver's first declared loss and intercept, as an
    entry that sets nothing. A yaml only adds a default grid and its comments."""
    import solvers
    from hydra.core.config_store import ConfigStore
    repo = ConfigStore.instance().repo.setdefault("solvers", {})
    with_yaml = set(_yaml_options("solvers"))
    for name in solvers.solver_names():
        if name.startswith("_") or name in with_yaml or f"{name}.yaml" in repo:
            continue
        spec = solvers.get_solver(name)
        # Its own first loss: the plan's default loss (hinge, which every yaml entry's keys were
        # made with) is not every solver's (gd and newton declare the squared hinge first).
        ConfigStore.instance().store(group="solvers", name=name,
                                     node={"solver": name, "params": {"loss": spec.losses[0]}, "grid": {}},
                                     package=f"solvers.{name}", provider="svmbench-registry")


def _yaml_options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def store_entries(root: str | None) -> list[str]:
    """Names of the entries in the store at root (default root if None) that can be config
    keys ('.' would nest: such an entry is used by `builder:` in an entry of another name);
    [] if the store is unreadable."""
    from ..data.store import default_store_root, list_datasets
    try:
        return [m["name"] for m in list_datasets(root or default_store_root()) if "." not in m["name"]]
    except Exception:  # an unreadable store is reported later, with its path, by the plan
        return []


def _parse(overrides: list[str]) -> list:
    """The overrides Hydra's parser accepts, each on its own (Hydra reports malformed ones
    itself, with their position; a flag's value such as `--cfg job` is not an override)."""
    return [ov for text in overrides for ov in _parse_one(text)]


@functools.lru_cache(maxsize=256)
def _parse_one(text: str) -> tuple:
    """One override parsed, once per process: the checks before composing each parse the command
    line again, and Hydra's parser takes time quadratic in a list's length (a C list of thousands
    of values: seconds a parse, scenario g of `python -m pipeline.bench`). The parsed overrides
    are only read."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    try:
        return tuple(OverridesParser.create().parse_overrides([text]))
    except Exception:
        return ()


def override_value(overrides: list[str], key: str) -> str | None:
    """The string an override list sets for key (`store.root=...`), else None."""
    for ov in _parse(overrides):
        if ov.key_or_group.lstrip("+") == key and not ov.is_delete() and isinstance(ov.value(), str):
            return ov.value()
    return None


def store_root_of(overrides: list[str]) -> str | None:
    """The store root an override list sets (`store.root=...`), else None (the default)."""
    return override_value(overrides, "store.root")


def check_group_choices(overrides: list[str]) -> None:
    """Refuse an unknown option of a config group (``solvers=[dcd,nosuch]``) with the list of
    valid ones, before Hydra composes (its own message does not list them for multi-selects)."""
    root = store_root_of(overrides)
    for ov in _parse(overrides):
        group = ov.key_or_group.lstrip("+~")
        if group not in GROUPS or ov.is_delete():
            continue
        value = ov.value()
        values = value if isinstance(value, list) else [value]
        valid = group_options(group, root)
        for v in values:
            if isinstance(v, str) and v not in valid:
                raise ConfigError(f"{group}={v!r}: no such option; available: {', '.join(valid)}")


SECTIONS = {"cv": "CVConf", "cluster": "ClusterConf", "store": "StoreConf", "run": "RunConf", "search": "SearchConf"}


def check_override_keys(overrides: list[str]) -> None:
    """Refuse a key the schema lacks (`foo=1`, `run.dryrun=true`) in one line naming the valid
    keys, before Hydra composes (its own message is five lines and points at HYDRA_FULL_ERROR)."""
    top = [f.name for f in dataclasses.fields(Config)]
    for ov in _parse(overrides):
        parts = ov.key_or_group.lstrip("+~").split(".")
        if parts[0] == "hydra" or (len(parts) == 1 and parts[0] in GROUPS):
            continue
        if parts[0] not in top:
            raise ConfigError(f"{parts[0]}: unknown key; valid: {', '.join(top)} (and the groups "
                              f"{', '.join(GROUPS)})")
        if parts[0] in SECTIONS and len(parts) > 1:
            valid = [f.name for f in dataclasses.fields(globals()[SECTIONS[parts[0]]])]
            if parts[1] not in valid:
                raise ConfigError(f"{parts[0]}.{parts[1]}: unknown key; valid: {', '.join(valid)}")


def register_store_entries(root: str | None) -> None:
    """Offer every store entry and every builder without a yaml as an option of the `datasets` group,
    ``{builder: <name>}`` with the dataset defaults, so ``datasets=[mydata]`` selects an
    ingested file exactly as it selects a built-in. Entries of an earlier call (another store)
    are withdrawn first: the ConfigStore is process-wide."""
    from hydra.core.config_store import ConfigStore
    repo = ConfigStore.instance().repo.setdefault("datasets", {})
    for name in [n for n, node in repo.items() if getattr(node, "provider", None) == "svmbench-store"]:
        del repo[name]
    from ..data.datasets import dataset_names
    builtins = set(_yaml_options("datasets"))
    # Builders without a yaml (an installed plugin's, `datasets.discover_builders`) and store
    # entries alike: ``{builder: <name>}`` with the dataset defaults.
    for name in sorted(set(store_entries(root)) | set(dataset_names())):
        if name not in builtins:
            node = {"builder": name, "params": {}, "scale": "none", "max_rows": None, "positive": None}
            ConfigStore.instance().store(group="datasets", name=name, node=node,
                                         package=f"datasets.{name}", provider="svmbench-store")


def _free_key(key: str) -> bool:
    parts = key.split(".")
    return any(len(parts) >= len(pat) and all(p is None or p == q for p, q in zip(pat, parts))
               for pat in FREE_KEYS)


# An override whose value is a grid range as an experiment's YAML writes it, unquoted: Hydra's
# override grammar reads `name(...)` as a call of one of its own functions (range, choice, ...).
UNQUOTED_RANGE = re.compile(r"^[+~]*([\w.\-]+)=\s*((?:geomspace|linspace)\(.*\))\s*$")


def check_ranges_quoted(overrides: list[str]) -> None:
    """A grid range typed on the command line as the YAML shows it (grid.C=geomspace(0.01,30,16))
    is refused with the quoting that works, before Hydra's "Unknown function 'geomspace'"."""
    for text in overrides:
        match = UNQUOTED_RANGE.match(text)
        if match:
            key, value = match.groups()
            raise ConfigError(f"{key}={value}: on the command line a range must be quoted twice, once for the shell "
                              f"and once for Hydra, which otherwise reads {value.partition('(')[0]}(...) as a function "
                              f"of its own: {key}=\"'{value}'\" (in an experiment's YAML it is written as it is)")


def prepare_overrides(overrides: list[str]) -> list[str]:
    """What `compose` and `python -m pipeline` do before Hydra composes: refuse unknown group
    options, offer the store's entries as datasets, and let free mappings take new keys."""
    overrides = list(overrides)
    check_ranges_quoted(overrides)
    check_override_keys(overrides)
    register_store_entries(store_root_of(overrides))
    # Plugins on the command line or in the selected experiment yaml are imported first, so that
    # their solvers are group options when Hydra composes.
    for ov in _parse(overrides):
        key = ov.key_or_group.lstrip("+")
        if ov.is_delete():
            continue
        if key == "plugins":
            value = ov.value()
            load_plugins(value if isinstance(value, list) else [value])
        elif key == "experiment" and isinstance(ov.value(), str):
            path = CONF_DIR / "experiment" / f"{ov.value()}.yaml"
            if path.is_file():
                load_plugins(_plain(OmegaConf.load(path).get("plugins")) or [],
                             where=f"experiment {ov.value()}: plugins")
    register_solver_options()
    check_group_choices(overrides)
    out = []
    for text in overrides:
        ov = next(iter(_parse([text])), None)
        plain = ov is not None and not (ov.is_add() or ov.is_force_add() or ov.is_delete())
        out.append(f"++{text}" if plain and _free_key(ov.key_or_group) else text)
    return out


def check_free_entries(cfg: DictConfig, overrides: list[str]) -> None:
    """A free-key override (`solvers.smo.grid.C=...`) whose entry is not selected would create
    a half entry (no `solver:`/`builder:`, which every yaml and store option sets): refuse it."""
    for ov in _parse(overrides):
        parts = ov.key_or_group.lstrip("+").split(".")
        if ov.is_delete() or len(parts) < 3 or parts[0] not in ("solvers", "datasets") or not _free_key(".".join(parts)):
            continue
        group, entry = parts[0], parts[1]
        node = (cfg.get(group) or {}).get(entry)
        marker = "solver" if group == "solvers" else "builder"
        if node is not None and marker not in node:
            selected = ", ".join(k for k, v in cfg[group].items() if marker in v)
            raise ConfigError(f"{ov.key_or_group.lstrip('+')}: {group}.{entry} is not selected (selected: {selected}); "
                              f"select it with '{group}=[...,{entry}]'")


def _explicit_settings(overrides: list[str]) -> list[tuple[str, str, str, Any]]:
    """(solver entry or "*" for the shared grid, level, key, value) for every params/grid/zip
    key an override list sets, whatever its form (`solvers.dcd.params.C=5`,
    `solvers.dcd.params={C: 5}`, `+solvers.x={params: {...}}`, `grid.C=[...]`)."""
    out = []

    def walk(entry, level, node):
        if isinstance(node, dict):
            for k, v in node.items():
                if level == "grid" and k == "zip":
                    walk(entry, "zip", v)
                else:
                    out.append((entry, level, k, v))

    for ov in _parse(overrides):
        if ov.is_delete():
            continue
        parts, value = ov.key_or_group.split("."), ov.value()
        if parts[0] == "grid":
            parts = ["solvers", "*", "grid", *parts[1:]]
        if parts[0] != "solvers" or len(parts) < 2:
            continue
        tail = parts[2:]
        node = value
        for name in reversed(tail):       # rebuild the mapping the override sets under the entry
            node = {name: node}
        if isinstance(node, dict):
            for level in ("params", "grid"):
                walk(parts[1], level, node.get(level))
    return out


LEVELS = ("params", "grid", "zip", "shared")
PRECEDENCE = "a solver's params < its grid < its grid.zip < the shared top-level grid"


def check_shadowed(cfg: DictConfig, overrides: list[str]) -> None:
    """A key set on the command line that a higher level would override is an error naming
    both: a solver's params < its grid < its grid.zip < the shared grid < every selected
    dataset's `problem`."""
    datasets = {k: _plain(d.get("problem")) or {} for k, d in (cfg.datasets or {}).items()
                if isinstance(d, (dict, DictConfig))}
    for entry, level, key, value in _explicit_settings(overrides):
        if value is None:
            continue
        if datasets and all(key in _replaced_by(p) for p in datasets.values()):
            name = "grid" if entry == "*" else f"solvers.{entry}.{level}"
            raise ConfigError(
                f"{name}.{key}={_plain(value)!r} is set, but every selected dataset's problem replaces {key} "
                f"({', '.join(f'datasets.{d}.problem={p}' for d, p in datasets.items())}): set it there "
                f"(datasets.<name>.problem.{key}=...)")
        # The shared grid is the top level of the solver levels: only a dataset's problem overrides it.
        if entry == "*" or entry not in (cfg.solvers or {}):
            continue
        sc = cfg.solvers[entry]
        grid, shared = _plain(sc.get("grid")) or {}, _plain(cfg.get("grid")) or {}
        found = {"grid": grid.get(key), "zip": _zip_of(grid).get(key),
                 "shared": shared.get(key, _zip_of(shared).get(key)) if takes_key(sc, entry, key) else None}
        where = {"params": f"solvers.{entry}.params.{key}", "grid": f"solvers.{entry}.grid.{key}",
                 "zip": f"solvers.{entry}.grid.zip.{key}", "shared": f"grid.{key}"}
        for higher in LEVELS[LEVELS.index(level) + 1:]:
            if found[higher] is not None:
                raise ConfigError(
                    f"{where[level]}={_plain(value)!r} is set, but {where[higher]}={found[higher]!r} would "
                    f"override it ({PRECEDENCE}): set the values you want in {where[higher]} "
                    f"(or drop that one with {where[higher]}=null)")


def _zip_of(grid: dict) -> dict:
    """A grid's zip mapping ({} if absent or malformed; grid_points reports the latter)."""
    return grid.get("zip") if isinstance(grid.get("zip"), dict) else {}


def check_composed(cfg: DictConfig, overrides: list[str]) -> None:
    """The checks that need both the composed config and the command line."""
    check_free_entries(cfg, overrides)
    check_shadowed(cfg, overrides)


def compose(overrides: list[str] | None = None, config_name: str = "config") -> DictConfig:
    """Compose the config as `python -m pipeline` would, without running (tests, tools)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    overrides = list(overrides or [])
    prepared = prepare_overrides(overrides)
    register_schema()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = hydra_compose(config_name=config_name, overrides=prepared, return_hydra_config=False)
    check_composed(cfg, overrides)
    return cfg


def _plain(node):
    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    return node


# A grid key's values given as a range, numpy's function of the same name: "geomspace(0.01, 100,
# 5000)" is 5,000 log-spaced values from 0.01 to 100. A list of thousands of values costs OmegaConf
# a node per value in every copy of the config (minutes for thousands of C values: scenario g of
# `python -m pipeline.bench`) and Hydra's override parser time quadratic in its length. A
# string, not a mapping: it replaces a default list where a config merges over it.
GRID_RANGE = re.compile(r"^\s*(geomspace|linspace)\(([^,()]*),([^,()]*),([^,()]*)\)\s*$")


def grid_range(value, where: str) -> list:
    """The values of a grid key: a range ("geomspace(start, stop, num)" or linspace) expanded,
    each value rounded to 12 significant digits (so that every machine's numpy gives the same
    values, hence the same task keys), or a single value as a list of one."""
    match = GRID_RANGE.match(value) if isinstance(value, str) else None
    if match is None:
        return [value]
    kind = match.group(1)
    try:
        start, stop, num = (float(a) for a in match.groups()[1:])
    except ValueError:
        start = stop = num = math.nan
    if not (num >= 1 and num.is_integer() and math.isfinite(start) and math.isfinite(stop)
            and (kind == "linspace" or min(start, stop) > 0)):
        need = "positive start and stop" if kind == "geomspace" else "start and stop"
        raise ConfigError(f"{where}={value!r}: a range is {kind}(start, stop, num) with {need} and a whole "
                          f"num >= 1, e.g. geomspace(0.01, 100, 50)")
    import numpy as np
    values = getattr(np, kind)(start, stop, int(num))
    return [float(f"{v:.12g}") for v in values]


def grid_points(grid: dict, where: str) -> list[dict]:
    """The points of a grid: the product over its keys, with ``zip`` holding keys whose value
    lists are paired element by element (all the same length); null keys are dropped."""
    import itertools
    # A key set to null is dropped: an experiment removes a swept key of the solver's own
    # config this way (grid: {C: null, lambda: [...]}), since Hydra merges cannot delete keys.
    grid = {k: v for k, v in dict(_plain(grid) or {}).items() if v is not None}
    zipped = grid.pop("zip", None) or {}
    if isinstance(zipped, dict):   # a zipped key replaces the same key of the product
        grid = {k: v for k, v in grid.items() if k not in zipped}
    axes = []
    for key, values in grid.items():
        values = values if isinstance(values, list) else grid_range(values, f"{where}.{key}")
        if not values:
            raise ConfigError(f"{where}.{key} is an empty list")
        axes.append([(key, v) for v in values])
    if zipped:
        if not isinstance(zipped, dict):
            raise ConfigError(f"{where}.zip must map keys to equal-length lists, got {zipped!r}")
        lengths = {k: len(v) if isinstance(v, list) else 1 for k, v in zipped.items()}
        if len(set(lengths.values())) != 1:
            raise ConfigError(f"{where}.zip lists differ in length: {lengths}")
        n = next(iter(lengths.values()))
        rows = [{k: (v[i] if isinstance(v, list) else v) for k, v in zipped.items()} for i in range(n)]
        axes.append([tuple(r.items()) for r in rows])
    points = []
    for combo in itertools.product(*axes):
        point = {}
        for item in combo:
            if item and isinstance(item[0], tuple):
                point.update(dict(item))
            else:
                point[item[0]] = item[1]
        points.append(point)
    return points or [{}]


def typed(cfg: DictConfig) -> DictConfig:
    """A copy of cfg whose dataset and solver entries are checked against `DatasetConf` and
    `SolverConf` (unknown keys and wrong types refused, defaults filled in), with the shared
    `grid` applied to each solver entry that takes its keys (idempotent)."""
    from omegaconf.errors import OmegaConfBaseException
    out = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    for group, schema in (("datasets", DatasetConf), ("solvers", SolverConf)):
        entries = out.get(group) or {}
        for key in list(entries):
            entry = entries[key]
            if entry is None:
                entry = {}
            if not isinstance(entry, (dict, DictConfig)):
                raise ConfigError(f"{group}.{key}={entry!r}: must be a mapping")
            refuse_unknown_keys(entry, schema, f"{group}.{key}")
            try:
                entries[key] = OmegaConf.merge(OmegaConf.structured(schema), entry)
            except OmegaConfBaseException as exc:
                msg = str(exc).splitlines()[0]
                raise ConfigError(f"{group}.{key}: {msg}") from None
    _apply_shared_grid(out)
    for key, sc in (out.get("solvers") or {}).items():
        _lambda_param_to_problem(sc, key)
    return out


# A solver parameter that is the problem's lambda in a paper's convention: pegasos's `lam`
# (lambda/2 ||w||^2 + (1/n) sum hinge, C = 1/(lambda n)). Left a solver parameter, the fit
# would solve C = 1/(lam n) while the row's C, its reference solve and f* stayed at the entry's
# C: two problems. `typed` moves it into the problem as `lambda` with its convention, so the
# fit, the C column (from the training rows), the reference and f* are of one problem.
LAMBDA_PARAMS = {"pegasos": ("lam", "pegasos")}


def _lambda_param_to_problem(sc, entry: str) -> None:
    name = sc.get("solver") or entry
    if name not in LAMBDA_PARAMS:
        return
    param, convention = LAMBDA_PARAMS[name]
    where = f"solvers.{entry}"
    sources = {"params": sc.params, "grid": sc.grid}
    if isinstance(sc.grid.get("zip"), DictConfig):
        sources["grid.zip"] = sc.grid.zip
    given = {part: _plain(node.pop(param)) for part, node in sources.items() if param in node}
    given = {part: v for part, v in given.items() if v is not None}    # a null lam is no setting
    if not given:
        return
    part = next(iter(given))
    for other, node in sources.items():
        for clash in ("C", "lambda"):
            if node.get(clash) is not None:
                raise ConfigError(
                    f"{where}.{part}.{param}={given[part]!r}: {name}'s {param} is the problem's lambda "
                    f"(convention {convention!r}, C = 1/(lambda n_train)), and {where}.{other}.{clash}="
                    f"{_plain(node[clash])!r} sets the problem too: give one (drop the other with "
                    f"{where}.{other}.{clash}=null)")
    if sc.params.get("lambda_convention") not in (None, convention):
        raise ConfigError(f"{where}.params.lambda_convention={sc.params.lambda_convention!r}: "
                          f"{name}'s {param} is a lambda of the {convention!r} convention")
    for part, value in given.items():
        sources[part]["lambda"] = value
    sc.params["lambda_convention"] = convention


def refuse_unknown_keys(node, schema, where: str) -> None:
    """An unknown key is an error naming it and the valid ones (a `+key=` override adds keys
    past Hydra's struct check, and a misspelt key would otherwise be silently ignored)."""
    valid = [f.name for f in dataclasses.fields(schema)]
    for key in node or {}:
        if key not in valid:
            raise ConfigError(f"{where + '.' if where else ''}{key}: unknown key; valid: {', '.join(valid)}")


# ------------------------------------------------------------------ the shared grid
# The top-level `grid` is one sweep for every selected solver that takes the key. It wins over
# a solver entry's own params, grid and zip for that key: it is the experiment's statement,
# the entries' values are their defaults (conf/solvers/*.yaml all sweep C). C and lambda are one
# axis, so a shared C replaces an entry's lambda and the reverse.
AXIS_PARTNERS = {"C": ("lambda", "lambda_convention"), "lambda": ("C",)}


def _entry_values(sc, key, default):
    """The values an entry's key can take (from its grid, else its params, else default)."""
    grid = _plain(sc.get("grid")) or {}
    for source in (_zip_of(grid), grid, _plain(sc.get("params")) or {}):
        if source.get(key) is not None:
            v = source[key]
            return set(v) if isinstance(v, list) else {v}
    return {default}


def takes_key(sc, entry: str, key: str) -> bool:
    """Whether solver entry sc takes `key`: its solver declares it, or it is a problem, budget or
    task key that applies to the entry (gamma only to kernel entries, degree and coef0 only to
    polynomial ones, huber_k to the Huber loss, intercept_scaling to a regularized intercept)."""
    import solvers
    name = sc.get("solver") or entry
    if name not in solvers.solver_names():
        return False
    spec = solvers.get_solver(name)
    if key in spec.params:
        return True
    if key == "gamma":
        return bool(_entry_values(sc, "kernel", "linear") & {"rbf", "poly"})
    if key in ("degree", "coef0"):
        return "poly" in _entry_values(sc, "kernel", "linear")
    if key == "huber_k":
        return "huber_hinge" in _entry_values(sc, "loss", "hinge")
    if key == "intercept_scaling":
        return "regularized" in _entry_values(sc, "intercept", spec.intercepts[0])
    return key in PROBLEM_KEYS + BUDGET_KEYS + TASK_KEYS


def shared_grid_targets(cfg) -> dict:
    """Shared grid key (or "zip") -> the solver entries it applies to."""
    shared = {k: v for k, v in (_plain(cfg.get("grid")) or {}).items() if v is not None}
    zipped = shared.pop("zip", None) or {}
    out = {key: [e for e, sc in (cfg.solvers or {}).items() if takes_key(sc, e, key)] for key in shared}
    if zipped:
        if not isinstance(zipped, dict):
            raise ConfigError(f"grid.zip={zipped!r}: must map keys to equal-length lists")
        out["zip"] = [e for e, sc in (cfg.solvers or {}).items() if all(takes_key(sc, e, k) for k in zipped)]
    return out


def _apply_shared_grid(cfg) -> None:
    shared = _plain(cfg.get("grid")) or {}
    for key, entries in shared_grid_targets(cfg).items():
        keys = list(shared["zip"]) if key == "zip" else [key]
        for e in entries:
            sc = cfg.solvers[e]
            for k in keys:
                for drop in (k, *AXIS_PARTNERS.get(k, ())):
                    sc.params.pop(drop, None)
                    if drop != k:
                        sc.grid.pop(drop, None)
                    if isinstance(sc.grid.get("zip"), DictConfig):
                        sc.grid.zip.pop(drop, None)
            if key == "zip":
                sc.grid.zip = shared["zip"]
            else:
                sc.grid[key] = shared[key]


def _replaced_by(problem: dict) -> set:
    """The keys a dataset's problem replaces: its own, and their axis partners (C <-> lambda)."""
    return set(problem) | {p for k in problem for p in AXIS_PARTNERS.get(k, ())}


def apply_dataset_problem(base: dict, point: dict, problem: dict) -> tuple[dict, dict]:
    """(merged parameters, grid point) of one solver grid point on a dataset whose entry sets
    `problem` keys: each replaces the solver's value of that key on this dataset, above every
    solver level (params < grid < grid.zip < shared grid < the dataset's problem). C and lambda
    stay one axis: a dataset's lambda drops the solver's C, a dataset's C the solver's lambda and
    lambda_convention. The point loses the replaced keys, so solver points that differ only in
    them become one spec (one key) on this dataset."""
    if not problem:
        return {**base, **point}, point
    drop = _replaced_by(problem)
    merged = {k: v for k, v in {**base, **point}.items() if k not in drop}
    return {**merged, **problem}, {k: v for k, v in point.items() if k not in drop}


def _check_dataset_problem(key: str, problem: dict, fail) -> None:
    """A dataset's `problem` holds single values of problem keys (not swept, not solver keys)."""
    for k, v in problem.items():
        if k not in PROBLEM_KEYS:
            fail(f"datasets.{key}.problem.{k}", v, f"not a problem key; valid: {', '.join(PROBLEM_KEYS)}")
        if isinstance(v, list) or isinstance(v, dict) and k != "class_weight":
            fail(f"datasets.{key}.problem.{k}", v, "must be one value (a dataset's problem key is not swept; "
                 "sweep it in a solver's grid)")


def validate(cfg: DictConfig) -> Experiment:
    """Check every setting before any work starts and return the typed, frozen experiment that
    every later stage takes (`experiment.Experiment`). Raises ConfigError naming key and value.

    Pure: a function of the config and of what this process has registered (solvers, dataset
    builders, the plugins `load_plugins` loaded, which `prepare_overrides` and the preflight
    load before it). It imports no user code and touches no file; what needs either (plugins,
    store entries, TLS files, the paper, plugin smoke fits) is `pipeline.preflight`'s."""
    import solvers

    from ..data.datasets import BUILDERS, get_builder

    refuse_unknown_keys(cfg, Config, "")
    for group, schema in (("cv", CVConf), ("cluster", ClusterConf), ("run", RunConf), ("store", StoreConf),
                          ("search", SearchConf), ("report", ReportConf)):
        refuse_unknown_keys(cfg.get(group), schema, group)
    cfg = typed(cfg)

    def fail(key, value, why):
        raise ConfigError(f"{key}={value!r}: {why}")

    for gkey, entries in shared_grid_targets(cfg).items():
        if not entries:
            fail(f"grid.{gkey}", _plain(cfg.grid[gkey]), "no selected solver takes this key "
                 f"(selected: {', '.join(cfg.solvers)})")

    if not cfg.datasets:
        fail("datasets", [], "select at least one dataset, e.g. datasets=[toy_blobs]")
    if not cfg.solvers:
        fail("solvers", [], "select at least one solver, e.g. solvers=[dcd]")
    builders = sorted(BUILDERS)     # the built-ins and the entry points the preflight discovered
    from ..data.store import StoreError, check_entry_name
    for key, ds in cfg.datasets.items():
        builder = ds.builder or key
        if builder not in builders:
            # Not a builder: an entry of the store (e.g. ingested), whose name must stay inside
            # the store (`../x` or `a/b` would reach past the root). Whether the store holds it
            # is the store's to say, when the datasets are materialised (`run.materialise_datasets`).
            try:
                check_entry_name(builder)
            except StoreError as exc:
                fail(f"datasets.{key}.builder", builder, f"not a store entry name ({exc}); a name must not leave the store")
            if ds.params:   # a store entry is used as it is: parameters would be ignored
                fail(f"datasets.{key}.params", _plain(ds.params),
                     f"{builder!r} is a store entry, not a builder: it takes no parameters")
        else:
            try:
                get_builder(builder).resolve(_plain(ds.params))
            except ValueError as exc:
                raise ConfigError(f"datasets.{key}.params: {exc}") from None
        check_section(f"datasets.{key}", ds, DatasetConf, fail)
        _check_dataset_problem(key, _plain(ds.problem) or {}, fail)
    plugins = loaded_plugins(_plain(cfg.get("plugins")) or [])
    names = solvers.registered_names()
    for key, sc in cfg.solvers.items():
        name = sc.solver or key
        if name not in names:
            fail(f"solvers.{key}.solver", name, f"unknown solver; available: {', '.join(names)}")
        spec = solvers.get_solver(name)
        base = dict(_plain(sc.params) or {})
        for d in sc.datasets or []:
            if d not in cfg.datasets:
                fail(f"solvers.{key}.datasets", _plain(sc.datasets),
                     f"{d!r} is not a selected dataset entry ({', '.join(cfg.datasets)})")
        if sc.datasets is not None and not sc.datasets:
            fail(f"solvers.{key}.datasets", [], "name at least one dataset entry, or null for all")
        _refuse_unknown_solver_keys(f"solvers.{key}", sc, spec)
        check_section(f"solvers.{key}", sc, SolverConf, fail)
        for point in grid_points(sc.grid, f"solvers.{key}.grid"):
            merged = {**base, **point}
            where = f"solvers.{key}"

            def fail_typed(name, value, why, where=where, point=point, key=key, sc=sc):
                # Named as the user set it (grid.C, solvers.dcd.grid.C, solvers.dcd.params.C),
                # not as the merged point holds it.
                own = name[len(where) + 1:] if name.startswith(where + ".") else None
                fail(_typed_key(cfg, key, sc, own, point) if own and "." not in own else name, value, why)
            _check_problem_keys(where, merged, spec, fail_typed)
            solver_params = {k: v for k, v in merged.items()
                             if k not in PROBLEM_KEYS + BUDGET_KEYS + TASK_KEYS and k != "seed"}
            try:
                # The loss a point leaves unset is the pipeline's default, hinge (`_check_problem_keys`).
                spec.check_combination(merged.get("loss", "hinge"), spec.check_params(solver_params))
            except solvers.SolverError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            for dkey, ds in cfg.datasets.items():   # each dataset's problem keys on this point
                problem = _plain(ds.problem) or {}
                if problem:
                    on_dataset, _ = apply_dataset_problem(base, point, problem)
                    try:
                        _check_problem_keys(f"datasets.{dkey}.problem", on_dataset, spec, fail)
                    except ConfigError as exc:
                        raise ConfigError(f"{exc} (with solver entry {key!r})") from None
    for name, schema in (("cv", CVConf), ("cluster", ClusterConf), ("run", RunConf)):
        check_section(name, cfg[name], schema, fail)
    cl = cfg.cluster
    if cl.kind == "address" and not cl.address:
        fail("cluster.address", cl.address, "cluster=address needs cluster.address=tcp://host:port")
    _check_security(cl, fail)
    if not 0 <= int(cl.adapt.get("minimum", 0)) <= int(cl.adapt.get("maximum", 0)):
        fail("cluster.adapt", _plain(cl.adapt), "needs 0 <= minimum <= maximum")
    _check_search(cfg, fail)
    check_section("report", cfg.get("report") or {}, ReportConf, fail)
    baseline = (cfg.get("report") or {}).get("baseline")
    if baseline is not None and baseline not in cfg.solvers:
        fail("report.baseline", baseline, f"must be a solver entry of this run: {', '.join(sorted(cfg.solvers))}")
    return _experiment(cfg, plugins)


def check_section(where: str, node, schema: type, fail) -> None:
    """Each field of a section (cv, cluster, run, search) against the rule declared beside it in
    the schema (`schema.allowed`), in the fields' order, for the section's kind."""
    kind = node.get("kind")
    for f in dataclasses.fields(schema):
        param, when = f.metadata.get("allowed"), f.metadata.get("when")
        if param is None or (when is not None and kind not in when):
            continue
        value = _plain(node.get(f.name))
        why = param.reason(value)
        if why is not None:
            own = when.get(kind) if isinstance(when, dict) else None
            fail(f"{where}.{f.name}", value, own or f.metadata["why"] or why)


def _check_search(cfg: DictConfig, fail) -> None:
    """search: its kind, its settings, and that each solver entry is one the search covers
    (pipeline/search/; docs/guide/search.md)."""
    se = cfg.search
    check_section("search", se, SearchConf, fail)
    if se.kind == "grid":
        return
    if cfg.cv.kind == "none":
        fail("cv.kind", cfg.cv.kind, f"search.kind={se.kind} compares validation errors, and cv=none has no "
             f"validation rows: use kfold, holdout, repeated, ordered or kfold_test")
    if se.kind == "certified":
        _check_certified(cfg, se, fail)
    else:
        _check_halving(cfg, se, fail)


def _check_certified(cfg: DictConfig, se, fail) -> None:
    import solvers
    from solvers.cv_bounds import INTERCEPTS as BOUND_INTERCEPTS, LOSSES as BOUND_LOSSES
    from ..search.certified import HINGE_DUAL_SOLVERS
    if not (_positive_number(se.C_max) and se.C_max > se.C_min):
        fail("search.C_min", se.C_min, f"must be < search.C_max={se.C_max!r}: the search's range is [C_min, C_max]")
    for dkey, ds in cfg.datasets.items():
        for k in _replaced_by(_plain(ds.problem) or {}) & {"C", "lambda"}:
            fail(f"datasets.{dkey}.problem.{k}", _plain(ds.problem).get(k), "search.kind=certified searches C on "
                 "every dataset: a dataset's own C or lambda would replace it")
    for key, sc in cfg.solvers.items():
        name = sc.solver or key
        spec = solvers.get_solver(name)
        params = _plain(sc.params) or {}
        where = f"solvers.{key}"
        for point in grid_points(sc.grid, f"{where}.grid"):
            for k in point:
                if k != "C":
                    fail(f"{where}.grid.{k}", _plain(sc.grid).get(k, _zip_of(_plain(sc.grid)).get(k)),
                         f"search.kind=certified searches C alone: set {k} in {where}.params")
        if "lambda" in params:
            fail(f"{where}.params.lambda", params["lambda"], "search.kind=certified searches C: give the problem by C")
        loss = params.get("loss", "hinge")
        if loss not in BOUND_LOSSES:
            fail(f"{where}.params.loss", loss, f"the certified search's CV error bound covers {list(BOUND_LOSSES)} "
                 f"(L2-regularised, with a dual; docs/guide/search.md)")
        intercept = params.get("intercept", spec.intercepts[0])
        if intercept not in BOUND_INTERCEPTS:
            fail(f"{where}.params.intercept", intercept, f"the certified search's CV error bound covers "
                 f"{list(BOUND_INTERCEPTS)} (a free intercept is not regularised: no ball holds the solution)")
        if params.get("kernel", "linear") != "linear" or "linear" not in spec.kernels:
            fail(f"{where}.params.kernel", params.get("kernel", "linear"),
                 "the certified search's CV error bound covers the linear kernel (kernel grids: search=halving)")
        if loss == "hinge" and name not in HINGE_DUAL_SOLVERS:
            fail(f"{where}.solver", name, f"on the hinge the certified search needs the solver's dual point: "
                 f"{', '.join(HINGE_DUAL_SOLVERS)} (or loss=squared_hinge, whose dual point any solver's w gives)")


def _check_halving(cfg: DictConfig, se, fail) -> None:
    m = se.min_resources
    allowed = {"max_iter": "max_iter: an integer >= 1", "tol": "tol: a number > 0",
               "train_fraction": "share of the training rows: a number in (0, 1]"}
    if m is not None and not (_positive_number(m) and (se.resource != "max_iter" or float(m).is_integer())
                              and (se.resource != "train_fraction" or m <= 1)):
        fail("search.min_resources", m, "must be null, or the first rung's " + allowed[se.resource])
    for key, sc in cfg.solvers.items():
        grid = _plain(sc.grid) or {}
        if se.resource in grid or se.resource in _zip_of(grid):
            fail(f"solvers.{key}.grid.{se.resource}", grid.get(se.resource, _zip_of(grid).get(se.resource)),
                 f"search.kind=halving sets {se.resource} per rung (search.resource): sweep other keys")


def _experiment(cfg: DictConfig, plugins: tuple) -> Experiment:
    """The typed, frozen experiment of a validated (typed) config, with smoke's reductions."""
    composed = freeze(_plain(cfg))
    root = store_root(cfg)
    cfg = smoke(cfg) if cfg.smoke else cfg
    plain = _plain(cfg)
    datasets = {key: DatasetEntry(key=key, builder=ds["builder"] or key, params=freeze(ds["params"] or {}),
                                  scale=ds["scale"], max_rows=ds["max_rows"], positive=ds["positive"],
                                  problem=freeze(ds["problem"] or {}))
                for key, ds in plain["datasets"].items()}
    from .search_points import first_points
    entries = {key: SolverEntry(key=key, solver=sc["solver"] or key, params=freeze(sc["params"] or {}),
                                grid=freeze(sc["grid"] or {}),
                                points=freeze(first_points(plain["search"], sc, key,
                                                           grid_points(sc["grid"], f"solvers.{key}.grid"))),
                                datasets=None if sc["datasets"] is None else tuple(sc["datasets"]),
                                folds=sc["folds"])
               for key, sc in plain["solvers"].items()}
    return Experiment(name=plain["name"], datasets=freeze(datasets), solvers=freeze(entries),
                      cv=section(CV, plain["cv"]), cluster=section(Cluster, plain["cluster"]),
                      run=section(Run, plain["run"]), store_root=root, seed=plain["seed"],
                      smoke=plain["smoke"], report=freeze(plain.get("report") or {}),
                      paper=plain.get("paper"), composed=composed,
                      plugins=freeze(plugins),
                      search=section(Search, plain["search"]))


def smoke(cfg: DictConfig) -> DictConfig:
    """smoke=true: a few hundred rows, 2 folds, two grid values, few iterations."""
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    for ds in cfg.datasets.values():
        ds.max_rows = min(ds.max_rows or 300, 300)
        # Generators are shrunk at the source too: subsampling a 100k-row build is not seconds.
        if "n_samples" in ds.params:
            ds.params.n_samples = min(int(ds.params.n_samples), 2000)
    # A trace point every pass (a paper's per-epoch figure) is not what a smoke run checks.
    cfg.run.trace_per_decade = min(int(cfg.run.trace_per_decade), 10)
    # A study may raise the reference cap to certify ill-conditioned raw data (troyan: millions of
    # smo steps); a smoke run checks the pipeline, not f*, and flags it if short.
    cfg.run.reference_max_iter = min(int(cfg.run.reference_max_iter), 100_000)
    # Timing repeats make a timing verdict stable; a smoke run's verdicts are not meaningful.
    cfg.run.time_repeats = 1
    if cfg.cv.kind in ("kfold", "kfold_test"):
        cfg.cv.folds = 2
    # A search's first round and one more: what a smoke run checks is that it runs.
    cfg.search.initial = min(int(cfg.search.initial), 3)
    cfg.search.max_rounds = min(int(cfg.search.max_rounds), 1)
    if cfg.cv.kind == "repeated":
        cfg.cv.rounds = min(cfg.cv.rounds, 2)
    for sc in cfg.solvers.values():
        for key, values in list(sc.grid.items()):
            if key != "zip" and isinstance(values, list) or OmegaConf.is_list(values):
                sc.grid[key] = list(values)[:2]
        if sc.params.get("max_iter") is not None:
            sc.params.max_iter = min(int(sc.params.max_iter), 200)
    return cfg


def _check_security(cl, fail) -> None:
    """cluster.security: "none", or the three PEM files together; not for the kept cluster (its
    own, in its state directory) nor kubernetes. That the files are there is the preflight's
    (`pipeline.preflight.check_tls_files`)."""
    sec = cl.security
    if sec == "none":
        return
    if not isinstance(sec, (dict, DictConfig)) or set(sec) - {"ca_file", "cert", "key"}:
        fail("cluster.security", _plain(sec), "must be none, or ca_file, cert and key (PEM files)")
    given = {k: sec.get(k) for k in ("ca_file", "cert", "key")}
    if not any(given.values()):
        return
    if cl.kind == "kubernetes":
        fail("cluster.security", _plain(sec), "not for cluster=kubernetes: dask-kubernetes' operator starts its "
                                              "scheduler without TLS")
    if cl.kind == "address" and cl.address == "kept":
        fail("cluster.security", _plain(sec), "not for cluster=kept: the kept cluster uses its own credentials, "
                                              "in its state directory")
    for k, v in given.items():
        if not v:
            fail(f"cluster.security.{k}", v, "TLS needs ca_file, cert and key together")


def _refuse_unknown_solver_keys(where: str, sc, spec) -> None:
    """params, grid and grid.zip take any key (no `+` needed); here each must be one of the
    solver's declared parameters or a problem, budget or task key."""
    grid = dict(_plain(sc.grid) or {})
    zipped = grid.pop("zip", None)
    sources = [("params", _plain(sc.params) or {}), ("grid", grid)]
    if isinstance(zipped, dict):
        sources.append(("grid.zip", zipped))
    shared = PROBLEM_KEYS + BUDGET_KEYS + TASK_KEYS + ("seed",)
    for part, keys in sources:
        for k in keys:
            if k not in spec.params and k not in shared:
                raise ConfigError(
                    f"{where}.{part}.{k}: unknown key (solver {spec.name!r} has no parameter {k!r}); valid: "
                    f"its parameters {', '.join(sorted(spec.params)) or '(none)'}; "
                    f"problem keys {', '.join(PROBLEM_KEYS)}; budget keys {', '.join(BUDGET_KEYS)}; "
                    f"{', '.join(TASK_KEYS)}")


def _typed_key(cfg, entry: str, sc, key: str, point: dict) -> str:
    """The key a solver entry's value of `key` was set by: the shared top-level grid (`grid.C`,
    `grid.zip.C`), the entry's grid (`solvers.dcd.grid.C`, `...grid.zip.C`) or its params."""
    if key in point:
        shared = _plain(cfg.get("grid")) or {}
        if key in shared and takes_key(sc, entry, key):
            return f"grid.{key}"
        if key in (shared.get("zip") or {}) and takes_key(sc, entry, key):
            return f"grid.zip.{key}"
        zipped = (_plain(sc.get("grid")) or {}).get("zip") or {}
        return f"solvers.{entry}.grid.{'zip.' if key in zipped else ''}{key}"
    return f"solvers.{entry}.params.{key}"


def _check_problem_keys(where, p, spec, fail):
    """The problem, budget and task keys of one merged grid point: each value against the
    solvers' table (`solvers.params`: the ranges `Problem` and `SVMClassifier` check, with their
    words), then what this solver takes of them, and lambda, the pipeline's form of C."""
    from solvers.params import BUDGET_PARAMS, PROBLEM_PARAMS, TASK_PARAMS
    if "lambda" in p:
        lam = p["lambda"]
        if not isinstance(lam, (int, float)) or isinstance(lam, bool) or not lam > 0:
            fail(f"{where}.lambda", lam, "must be a number > 0")
        if "C" in p:
            fail(f"{where}.lambda", lam, "give either C or lambda, not both")
        conv = p.get("lambda_convention")
        if conv not in ("pegasos", "svmmaj"):
            fail(f"{where}.lambda_convention", conv, "lambda needs lambda_convention: pegasos or svmmaj")
    for table in (PROBLEM_PARAMS, BUDGET_PARAMS, TASK_PARAMS):
        for key, param in table.items():
            if key in p:
                value = math.inf if key == "C" and p[key] in ("inf", "Infinity") else p[key]
                why = param.reason(value)
                if why is not None:
                    fail(f"{where}.{key}", value, why)
    defaults = {"loss": "hinge", "intercept": spec.intercepts[0], "kernel": "linear"}
    for key, default in defaults.items():
        why = PROBLEM_PARAMS[key].solver_reason(spec, p.get(key, default))
        if why is not None:
            fail(f"{where}.{key}", p.get(key, default), why)
    if list(spec.kernels) == ["linear"]:
        # A kernel parameter would be dropped from the problem without a word (linear problems
        # have none), so a sweep over it would run the same fits again under other names.
        for k in ("gamma", "degree", "coef0"):
            if k in p:
                fail(f"{where}.{k}", p[k], f"solver {spec.name!r} is linear-only (kernels: ['linear']): "
                     f"it takes no kernel parameter")
    _check_class_weight(where, p.get("class_weight"), spec, fail)


def _check_class_weight(where, cw, spec, fail) -> None:
    """class_weight (its values checked with the table's): the labels of a binary problem, and
    a solver that weighs rows (each row's loss term times its class's weight: a box C w_y in the
    dual solvers, `Problem.sample_weight`)."""
    if not isinstance(cw, dict):
        if cw is not None and not spec.sample_weight:
            _refuse_weights(where, cw, spec, fail)
        return
    for label in cw:
        if str(label) not in ("-1", "1", "-1.0", "1.0"):
            fail(f"{where}.class_weight", cw, f"label {label!r}: the labels of a binary problem are -1 and 1 "
                 "(datasets.<entry>.positive says which becomes 1)")
    if not spec.sample_weight:
        _refuse_weights(where, cw, spec, fail)


def _refuse_weights(where, cw, spec, fail) -> None:
    import solvers
    weighing = [n for n in solvers.solver_names() if solvers.get_solver(n).sample_weight]
    fail(f"{where}.class_weight", cw, f"solver {spec.name!r} does not weigh rows; the solvers that do: "
         f"{', '.join(weighing)}")


def _positive_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def store_root(cfg: DictConfig) -> str:
    """The store root: the config's, else $SVMBENCH_STORE, else the user cache dir (one
    default shared with `python -m pipeline.data`)."""
    from ..data.store import default_store_root
    return str(cfg.store.root) if cfg.store.root else str(default_store_root())
