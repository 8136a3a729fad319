"""The typed experiment: what `config.validate` makes of the composed config, once.

Hydra composes a DictConfig; `validate` checks every value of it and returns an `Experiment`, a
frozen tree of dataclasses with plain values (mappings read-only, lists as tuples). Every stage
after validation takes the Experiment and never the DictConfig: the datasets are materialised
from its entries, the plan is a pure function of it and the datasets' fingerprints and labels
(`plan.build_plan`), and the engine reads its cluster and run options.

What the Experiment resolves that the composed config leaves open:

- each dataset entry's builder (default: the entry's key) and each solver entry's solver;
- the shared top-level `grid` applied to the entries that take its keys, pegasos's `lam` moved
  into the problem (`config.typed`), and `smoke=true`'s reductions (`config.smoke`);
- each solver entry's grid as its points (`SolverEntry.points`, product and zip expanded), or
  under a search (`search.kind` certified or halving) its first round's points;
- the store root (config, else ``$SVMBENCH_STORE``, else the user cache dir).

The cv, cluster and run sections are frozen copies of the schema's sections (`schema.CVConf`,
`ClusterConf`, `RunConf`): one declaration of each field, its default and its comment.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from omegaconf import OmegaConf

from .schema import ClusterConf, CVConf, RunConf, SearchConf


def freeze(value):
    """Plain data, read-only: mappings as MappingProxyType, lists as tuples (recursively)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value):
    """The inverse of `freeze`: dicts and lists again, for specs that are hashed and stored."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def _frozen_section(schema: type, doc: str) -> type:
    """A frozen dataclass with the fields of a schema section (`CV` from `CVConf`, ...)."""
    fields = [(f.name, f.type) for f in dataclasses.fields(schema)]
    cls = dataclasses.make_dataclass(schema.__name__.removesuffix("Conf"), fields, frozen=True,
                                     namespace={"__doc__": doc})
    cls.__module__ = __name__
    return cls


CV = _frozen_section(CVConf, "The cross-validation scheme (fields and defaults: `schema.CVConf`).")
Cluster = _frozen_section(ClusterConf, "Where tasks run (fields and defaults: `schema.ClusterConf`).")
Run = _frozen_section(RunConf, "How the run executes and records (fields and defaults: `schema.RunConf`).")
Search = _frozen_section(SearchConf, "How each sweep is searched (fields and defaults: `schema.SearchConf`).")


def section(cls: type, values: Mapping):
    """A frozen section from its validated values."""
    return cls(**{f.name: freeze(values[f.name]) for f in dataclasses.fields(cls)})


def as_dict(sec) -> dict:
    """A section as plain, mutable data, in its fields' order (what a spec or a library takes)."""
    return {f.name: thaw(getattr(sec, f.name)) for f in dataclasses.fields(sec)}


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset of the experiment, under its entry key (``datasets.<key>``)."""

    key: str
    builder: str                    # a built-in builder, or a store entry used as it is
    params: Mapping[str, Any]       # the builder's parameters
    scale: str                      # none, standard, maxabs or minmax: fitted on the training fold only
    max_rows: int | None            # stratified subsample before the folds
    positive: Any                   # the label that becomes +1 (None: the larger label)
    problem: Mapping[str, Any]      # problem keys that replace every solver's on this dataset


@dataclass(frozen=True)
class SolverEntry:
    """One solver entry (``solvers.<key>``): a registered solver with its parameters and grid."""

    key: str
    solver: str                     # the registered solver it runs
    params: Mapping[str, Any]       # fixed values: problem, budget, task and solver keys
    grid: Mapping[str, Any]         # swept values, as given (after the shared grid and smoke)
    points: tuple                   # the grid's points, each a mapping of key -> value
    datasets: tuple | None          # the dataset entries it runs on (None: all)
    folds: int | None               # only the first `folds` folds


@dataclass(frozen=True)
class Experiment:
    """A validated experiment: what every stage after `config.validate` reads."""

    name: str
    datasets: Mapping[str, DatasetEntry]
    solvers: Mapping[str, SolverEntry]
    cv: CV
    cluster: Cluster
    run: Run
    store_root: str
    seed: int
    smoke: bool
    report: Mapping[str, Any]
    paper: str | None
    # The validated config as plain data, before smoke's reductions: the run dir's config.yaml.
    composed: Mapping[str, Any]
    # The plugins it loaded (`solvers.load_plugin`), each {source, sha256 (files), names}.
    plugins: tuple = ()
    # How each (dataset, solver entry) sweep is searched (Search; None: the grid, every point).
    # Under a search, each entry's `points` are its first round's (pipeline/search/).
    search: Search | None = None

    @property
    def search_kind(self) -> str:
        """grid, certified or halving."""
        return "grid" if self.search is None else self.search.kind

    def to_yaml(self) -> str:
        """The run dir's config.yaml: the validated config as the user composed it."""
        return OmegaConf.to_yaml(OmegaConf.create(thaw(self.composed)))

    def solver_names(self) -> list[str]:
        """The registered solvers its entries run (what each worker warms)."""
        return sorted({e.solver for e in self.solvers.values()})

    def only_datasets(self, keys) -> "Experiment":
        """The same experiment on the dataset entries in keys (a dry run plans what the store holds)."""
        return dataclasses.replace(self, datasets=MappingProxyType(
            {k: v for k, v in self.datasets.items() if k in keys}))

    def with_cluster(self, **changes) -> "Experiment":
        """The same experiment with cluster fields changed (a test's or a benchmark's cluster)."""
        return dataclasses.replace(self, cluster=dataclasses.replace(self.cluster, **changes))
