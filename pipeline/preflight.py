"""The preflight: every check of a run that reaches beyond its config, in one step, once, before
any work.

`config.validate` is pure (the config and what this process has registered, nothing else); what
needs user code or the disk is here, in the order a user meets it:

1. the checks between the composed config and the command line (`config.check_composed`);
2. user code: installed entry points (solvers, dataset builders) and the run's plugins imported
   (`config.load_plugins`), so that `validate` finds their solvers;
3. `validate`: every key and value;
4. the paper a run reproduces is registered (`pipeline.papers`);
5. TLS files given in ``cluster.security`` are there;
6. the user's store entries the run names are in the store;
7. each plugin solver an entry runs passes its smoke fits (`solvers.testing.smoke_check`);
8. a run directory another run holds is refused, before Hydra writes anything into it (not for
   ``run.dry_run=true``, which writes nothing).

Each failure is one line naming what and where (a `ConfigError`, `StoreError` or `LockError`:
`python -m pipeline` prints it and exits 2). `python -m pipeline` calls `preflight` once, before
its run directory exists; `run.run` calls it when handed a composed config rather than the
`Experiment` a preflight returned.
"""
from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import solvers
from solvers.registry import is_plugin, origin

from .data import store
from .data.datasets import dataset_names, discover_builders
from .engine.runlock import check_free
from .experiment import config
from .experiment.config import ConfigError
from .experiment.experiment import Experiment


def preflight(cfg: DictConfig, overrides: list[str] | None = None) -> tuple[Experiment, Path | None]:
    """(the validated experiment, its run dir if the command line gave one): every check above,
    in that order. overrides: the command line as the user typed it (None: a config composed
    elsewhere, whose overrides were checked there)."""
    if overrides is not None:
        config.check_composed(cfg, overrides)
    load_user_code(cfg)
    exp = config.validate(cfg)
    check_paper(exp)
    check_tls_files(exp.cluster)
    check_store_entries(exp)
    check_plugin_solvers(exp)
    run_dir = config.override_value(overrides or [], "hydra.run.dir")
    run_dir = Path(run_dir) if run_dir else None
    if run_dir is not None and not exp.run.dry_run:
        check_free(run_dir)
    return exp, run_dir


def load_user_code(cfg: DictConfig) -> None:
    """Import what the run may name beyond svmbench itself: installed entry points of solvers
    and dataset builders (once per process) and the plugins of ``plugins:`` (once per content)."""
    solvers.solver_names()        # the entry points of svmbench.solvers
    discover_builders()
    plugins = cfg.get("plugins")
    config.load_plugins(OmegaConf.to_container(plugins, resolve=True) if plugins is not None else [])


def check_paper(exp: Experiment) -> None:
    """``paper:`` names a registered reproduction (pipeline/papers/)."""
    if exp.paper is None:      # the reproductions' modules only for a paper's run
        return
    from .papers import PAPERS, names
    if exp.paper not in PAPERS:
        raise ConfigError(f"paper={exp.paper!r}: no such reproduction; registered: {', '.join(names())}")


def check_tls_files(cluster) -> None:
    """The PEM files of ``cluster.security`` exist, before any connection (their shape, three
    together, is `validate`'s)."""
    sec = cluster.security
    if not hasattr(sec, "get"):      # "none"
        return
    for k in ("ca_file", "cert", "key"):
        v = sec.get(k)
        if v and not Path(v).is_file():
            raise ConfigError(f"cluster.security.{k}={v!r}: no such file")


def check_store_entries(exp: Experiment) -> None:
    """Each dataset entry that is no builder names an entry the store holds (the user's
    ingested files); built-ins the store lacks are built when the datasets are materialised."""
    builders = set(dataset_names())
    for dkey, ds in exp.datasets.items():
        if ds.builder in builders or store.exists(exp.store_root, ds.builder):
            continue
        stored = sorted(m["name"] for m in store.list_datasets(exp.store_root))
        raise ConfigError(f"datasets.{dkey}.builder={ds.builder!r}: unknown dataset; builders: "
                          f"{', '.join(sorted(builders))}; in the store: {', '.join(stored) or '(none)'}")


def check_plugin_solvers(exp: Experiment) -> None:
    """Each plugin solver an entry runs passes its smoke fits (`solvers.testing.smoke_check`: one
    per declared loss on a small conformance problem, certificates checked; a pass is remembered
    under the plugin's sha256 in the user's cache directory): a fit that raises or certifies
    wrongly is refused naming the entry, the solver and the check, not discovered as an error
    row per fit once the run has started. Built-in solvers pass the whole check in the test
    suite, and one registered by the caller's own `register` is the caller's."""
    entries = [(key, e.solver) for key, e in exp.solvers.items() if is_plugin(e.solver)]
    if not entries:
        return
    from solvers.testing import SolverCheckError, smoke_check
    for key, name in entries:
        try:
            smoke_check(name, cache_dir=store.user_cache_dir() / "smoke-checks")
        except SolverCheckError as exc:
            raise ConfigError(f"solvers.{key}: solver {name!r} (from {origin(name)}) fails its smoke check: "
                              f"{exc}") from None
