"""The experiment schema (structured configs) and its validation.

Hydra composes `conf/`; the dataclasses below are registered as the schema ``base_config``, so
OmegaConf already refuses a wrong type or an unknown top-level key. `validate` then checks every
value against what the code accepts (solver names and their declared parameters, dataset
builders, CV settings, cluster kinds) before any task runs, and names the key and the value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

from omegaconf import DictConfig, ListConfig, OmegaConf

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"

# Problem-level keys of a solver entry (they define the optimisation problem), budget keys,
# and bookkeeping keys; everything else in params/grid is a solver parameter checked against
# the solver's own declaration in the registry.
PROBLEM_KEYS = ("C", "loss", "intercept", "intercept_scaling", "kernel", "gamma", "degree", "coef0",
                "huber_k", "lambda", "lambda_convention")
BUDGET_KEYS = ("tol", "max_iter", "time_limit_s")
TASK_KEYS = ("multi_class",)
CV_KINDS = ("kfold", "holdout", "repeated", "none")
CLUSTER_KINDS = ("local", "sequential", "address", "slurm")
SCALINGS = ("none", "standard", "maxabs", "minmax")
REFERENCE_MODES = ("auto", True, False)


class ConfigError(ValueError):
    """An invalid experiment setting; the message names the key and the value."""


@dataclass
class DatasetConf:
    builder: Optional[str] = None           # built-in builder name; default: the entry's key
    params: Dict[str, Any] = field(default_factory=dict)
    scale: str = "none"                      # fitted on the training fold only
    max_rows: Optional[int] = None           # stratified subsample before the folds (smoke, tests)
    positive: Optional[Any] = None           # label that becomes +1 (default: the larger label)


@dataclass
class SolverConf:
    solver: Optional[str] = None             # registered solver; default: the entry's key
    params: Dict[str, Any] = field(default_factory=dict)
    grid: Dict[str, Any] = field(default_factory=dict)


@dataclass
class CVConf:
    kind: str = "kfold"
    folds: int = 5
    shuffle: bool = True
    test_size: float = 0.1
    rounds: int = 10


@dataclass
class ClusterConf:
    kind: str = "local"
    n_workers: Optional[int] = None          # local: default = cores
    threads_per_worker: int = 1
    address: Optional[str] = None            # address: tcp://host:8786
    memory_limit: str = "auto"
    dashboard_address: Optional[str] = ":0"
    jobqueue: Dict[str, Any] = field(default_factory=dict)   # slurm: dask-jobqueue's SLURMCluster kwargs
    jobs: int = 1


@dataclass
class StoreConf:
    root: Optional[str] = None               # default: $SVMBENCH_STORE or the user cache dir


@dataclass
class RunConf:
    timeout_s: Optional[float] = 600.0       # solver time limit per task (status "timeout")
    retries: int = 1                         # re-run of a task whose worker died
    trace: bool = True
    trace_per_decade: int = 10
    # Certified f* per problem for suboptimality: "auto" solves one only for problems that two
    # or more solver entries fit (what the comparison tables need), true for all, false none.
    reference: Any = "auto"
    reference_tol: float = 1e-9
    reference_max_iter: int = 100_000
    reference_time_limit_s: Optional[float] = 60.0   # per reference; a stop is flagged, not hidden
    warm_start: bool = True                  # C paths of warm-start solvers run in one task, warm
    chunk: Any = "auto"                      # fits per task for short fits: "auto" or an int >= 1
    progress: bool = True


@dataclass
class Config:
    name: str = "default"
    # Entries are typed by `typed` (below) rather than by Dict[str, DatasetConf]: OmegaConf
    # cannot add a new typed entry from the command line (+solvers.dcd_l2={solver: dcd, ...}).
    datasets: Dict[str, Any] = field(default_factory=dict)
    solvers: Dict[str, Any] = field(default_factory=dict)
    cv: CVConf = field(default_factory=CVConf)
    cluster: ClusterConf = field(default_factory=ClusterConf)
    store: StoreConf = field(default_factory=StoreConf)
    run: RunConf = field(default_factory=RunConf)
    seed: int = 0
    smoke: bool = False
    report: Dict[str, Any] = field(default_factory=dict)


def register_schema() -> None:
    """Register `Config` as ``base_config`` (conf/config.yaml lists it first in its defaults)."""
    from hydra.core.config_store import ConfigStore
    ConfigStore.instance().store(name="base_config", node=Config)


GROUPS = ("datasets", "solvers", "cv", "cluster", "experiment")


def group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def check_group_choices(overrides: list[str]) -> None:
    """Refuse an unknown option of a config group (``solvers=[dcd,nosuch]``) with the list of
    valid ones, before Hydra composes (its own message does not list them for multi-selects)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:   # Hydra reports malformed overrides itself, with their position
        return
    for ov in parsed:
        group = ov.key_or_group.lstrip("+~")
        if group not in GROUPS or ov.is_delete():
            continue
        value = ov.value()
        values = value if isinstance(value, list) else [value]
        valid = group_options(group)
        for v in values:
            if isinstance(v, str) and v not in valid:
                raise ConfigError(f"{group}={v!r}: no such option; available: {', '.join(valid)}")


def compose(overrides: list[str] | None = None, config_name: str = "config") -> DictConfig:
    """Compose the config as `python -m pipeline` would, without running (tests, tools)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    check_group_choices(list(overrides or []))
    register_schema()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name=config_name, overrides=list(overrides or []), return_hydra_config=False)


def _plain(node):
    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    return node


def grid_points(grid: dict, where: str) -> list[dict]:
    """The points of a grid: the product over its keys, with ``zip`` holding keys whose value
    lists are paired element by element (all the same length); null keys are dropped."""
    import itertools
    # A key set to null is dropped: an experiment removes a swept key of the solver's own
    # config this way (grid: {C: null, lambda: [...]}), since Hydra merges cannot delete keys.
    grid = {k: v for k, v in dict(_plain(grid) or {}).items() if v is not None}
    zipped = grid.pop("zip", None) or {}
    axes = []
    for key, values in grid.items():
        values = values if isinstance(values, list) else [values]
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
    `SolverConf` (unknown keys and wrong types refused, defaults filled in)."""
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
            try:
                entries[key] = OmegaConf.merge(OmegaConf.structured(schema), entry)
            except OmegaConfBaseException as exc:
                msg = str(exc).splitlines()[0]
                raise ConfigError(f"{group}.{key}: {msg}") from None
    return out


def validate(cfg: DictConfig) -> DictConfig:
    """Check every setting before any work starts and return the typed config.
    Raises ConfigError naming key and value."""
    import solvers
    from solvers.problem import INTERCEPTS, LOSSES

    from .datasets import dataset_names

    cfg = typed(cfg)

    def fail(key, value, why):
        raise ConfigError(f"{key}={value!r}: {why}")

    if not cfg.datasets:
        fail("datasets", [], "select at least one dataset, e.g. datasets=[toy_blobs]")
    if not cfg.solvers:
        fail("solvers", [], "select at least one solver, e.g. solvers=[dcd]")
    builders = dataset_names()
    from .store import list_datasets
    stored = None
    for key, ds in cfg.datasets.items():
        builder = ds.builder or key
        if builder not in builders:
            # Not a builder: an entry already in the store (e.g. ingested) is fine too.
            if stored is None:
                try:
                    stored = sorted(m["name"] for m in list_datasets(store_root(cfg)))
                except Exception:  # an unreadable store is reported by the plan with its path
                    stored = []
            if builder not in stored:
                fail(f"datasets.{key}.builder", builder,
                     f"unknown dataset; builders: {', '.join(builders)}; in the store: {', '.join(stored) or '(none)'}")
        if ds.scale not in SCALINGS:
            fail(f"datasets.{key}.scale", ds.scale, f"must be one of {list(SCALINGS)}")
        if ds.max_rows is not None and ds.max_rows < 4:
            fail(f"datasets.{key}.max_rows", ds.max_rows, "must be >= 4 or null")
    names = solvers.solver_names()
    for key, sc in cfg.solvers.items():
        name = sc.solver or key
        if name not in names:
            fail(f"solvers.{key}.solver", name, f"unknown solver; available: {', '.join(names)}")
        spec = solvers.get_solver(name)
        base = dict(_plain(sc.params) or {})
        for point in grid_points(sc.grid, f"solvers.{key}.grid"):
            merged = {**base, **point}
            where = f"solvers.{key}"
            _check_problem_keys(where, merged, LOSSES, INTERCEPTS, spec, fail)
            solver_params = {k: v for k, v in merged.items()
                             if k not in PROBLEM_KEYS + BUDGET_KEYS + TASK_KEYS and k != "seed"}
            try:
                spec.check_params(solver_params)
            except solvers.SolverError as exc:
                raise ConfigError(f"{where}: {exc}") from None
    cv = cfg.cv
    if cv.kind not in CV_KINDS:
        fail("cv.kind", cv.kind, f"must be one of {list(CV_KINDS)}")
    if cv.kind == "kfold" and cv.folds < 2:
        fail("cv.folds", cv.folds, "k-fold needs at least 2 folds")
    if cv.kind in ("holdout", "repeated") and not 0 < cv.test_size < 1:
        fail("cv.test_size", cv.test_size, "must be in (0, 1)")
    if cv.kind == "repeated" and cv.rounds < 1:
        fail("cv.rounds", cv.rounds, "must be >= 1")
    cl = cfg.cluster
    if cl.kind not in CLUSTER_KINDS:
        fail("cluster.kind", cl.kind, f"must be one of {list(CLUSTER_KINDS)}")
    if cl.kind == "address" and not cl.address:
        fail("cluster.address", cl.address, "cluster=address needs cluster.address=tcp://host:port")
    if cl.n_workers is not None and cl.n_workers < 1:
        fail("cluster.n_workers", cl.n_workers, "must be >= 1")
    if cl.threads_per_worker < 1:
        fail("cluster.threads_per_worker", cl.threads_per_worker, "must be >= 1")
    run = cfg.run
    if run.timeout_s is not None and not run.timeout_s > 0:
        fail("run.timeout_s", run.timeout_s, "must be > 0 or null")
    if run.retries < 0:
        fail("run.retries", run.retries, "must be >= 0")
    if not run.reference_tol > 0:
        fail("run.reference_tol", run.reference_tol, "must be > 0")
    if run.reference not in REFERENCE_MODES:
        fail("run.reference", run.reference, "must be auto, true or false")
    if run.reference_max_iter < 1:
        fail("run.reference_max_iter", run.reference_max_iter, "must be >= 1")
    if run.reference_time_limit_s is not None and not run.reference_time_limit_s > 0:
        fail("run.reference_time_limit_s", run.reference_time_limit_s, "must be > 0 or null")
    if run.chunk != "auto" and not (isinstance(run.chunk, int) and not isinstance(run.chunk, bool) and run.chunk >= 1):
        fail("run.chunk", run.chunk, "must be auto or an integer >= 1")
    if run.trace_per_decade < 1:
        fail("run.trace_per_decade", run.trace_per_decade, "must be >= 1")
    return cfg


def _check_problem_keys(where, p, losses, intercepts, spec, fail):
    C = p.get("C", 1.0)
    if "lambda" in p:
        lam = p["lambda"]
        if not isinstance(lam, (int, float)) or isinstance(lam, bool) or not lam > 0:
            fail(f"{where}.lambda", lam, "must be a number > 0")
        if "C" in p:
            fail(f"{where}.lambda", lam, "give either C or lambda, not both")
        conv = p.get("lambda_convention")
        if conv not in ("pegasos", "svmmaj"):
            fail(f"{where}.lambda_convention", conv, "lambda needs lambda_convention: pegasos or svmmaj")
    else:
        if isinstance(C, str) and C in ("inf", "Infinity"):
            C = math.inf
        if not isinstance(C, (int, float)) or isinstance(C, bool) or not C > 0:
            fail(f"{where}.C", C, "must be a number > 0")
    loss = p.get("loss", "hinge")
    if loss not in losses:
        fail(f"{where}.loss", loss, f"must be one of {list(losses)}")
    if loss not in spec.losses:
        fail(f"{where}.loss", loss, f"solver {spec.name!r} takes {list(spec.losses)}")
    intercept = p.get("intercept", spec.intercepts[0])
    if intercept not in intercepts:
        fail(f"{where}.intercept", intercept, f"must be one of {list(intercepts)}")
    if intercept not in spec.intercepts:
        fail(f"{where}.intercept", intercept, f"solver {spec.name!r} takes {list(spec.intercepts)}")
    kernel = p.get("kernel", "linear")
    if kernel not in ("linear", "rbf", "poly"):
        fail(f"{where}.kernel", kernel, "must be one of ['linear', 'rbf', 'poly']")
    if kernel not in spec.kernels:
        fail(f"{where}.kernel", kernel, f"solver {spec.name!r} takes {list(spec.kernels)}")
    gamma = p.get("gamma", "scale")
    if not (gamma in ("scale", "auto") or (isinstance(gamma, (int, float)) and not isinstance(gamma, bool) and gamma > 0)):
        fail(f"{where}.gamma", gamma, "must be 'scale', 'auto' or a number > 0")
    degree = p.get("degree", 3)
    if not isinstance(degree, int) or isinstance(degree, bool) or degree < 1:
        fail(f"{where}.degree", degree, "must be an integer >= 1")
    tol = p.get("tol", 1e-4)
    if not isinstance(tol, (int, float)) or not tol > 0:
        fail(f"{where}.tol", tol, "must be a number > 0")
    mi = p.get("max_iter")
    if mi is not None and (not isinstance(mi, int) or isinstance(mi, bool) or mi < 1):
        fail(f"{where}.max_iter", mi, "must be an integer >= 1 or null")
    mc = p.get("multi_class", "ovr")
    if mc not in ("ovr", "ovo", "ordinal"):
        fail(f"{where}.multi_class", mc, "must be one of ['ovr', 'ovo', 'ordinal']")


def store_root(cfg: DictConfig) -> str:
    """The store root: the config's, else $SVMBENCH_STORE, else the user cache dir (one
    default shared with `python -m pipeline.data`)."""
    from .store import default_store_root
    return str(cfg.store.root) if cfg.store.root else str(default_store_root())
