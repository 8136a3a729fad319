"""The datasets of an experiment made real: each entry built in the store if it lacks it (or
holds it with other parameters), and its labels read, before the plan is built
(`experiment.plan.build_plan` takes them). The one step of planning that touches the store;
its callers are the run (`pipeline.run`) and the search driver, between rounds."""
from __future__ import annotations

from ..data import store
from ..data.datasets import check_writable, dataset_names, ensure_dataset, store_name
from ..data.store import dataset_info, read_labels
from ..experiment.experiment import Experiment, thaw


def materialise_datasets(exp: Experiment, build: bool = True, verify: bool = True) -> dict:
    """Each dataset entry of the experiment -> (meta, labels), building a built-in dataset the store
    lacks (or holds with other parameters) and reading its labels (a verified read). The one step of
    planning that touches the store; `run` calls it before `build_plan`. With build=False (a dry
    run) an entry the store lacks is left out and named in `missing_datasets` instead. verify=False
    reads the labels alone: for a caller whose command has verified the entries already (the
    search driver, after the run's planning; the verified read hashes every row)."""
    root = exp.store_root
    out = {}
    for dkey, ds in exp.datasets.items():
        builder = ds.builder
        params = thaw(ds.params)
        if builder in dataset_names():
            if not store.exists(root, store_name(builder, params)):
                if not build:
                    continue
                check_writable(root, f"datasets.{dkey} ({builder}) is not in the store and must be built")
            meta = ensure_dataset(root, builder, params)
        else:   # a store entry of the user's (ingested), used as it is: the preflight found it there
            meta = dataset_info(root, builder)
        out[dkey] = (meta, read_labels(root, meta["name"], verify=verify))
    return out


def missing_datasets(exp: Experiment, materialised: dict) -> list[str]:
    """The dataset entries a dry run did not materialise (built-ins the store lacks)."""
    return [k for k in exp.datasets if k not in materialised]
