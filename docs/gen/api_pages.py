"""Generate the API reference pages, at build time: one page per public module.

Run by mkdocs-gen-files (mkdocs.yml). Each page is a mkdocstrings directive (``::: module``);
mkdocstrings-python reads the sources statically through griffe, so nothing here imports or
runs the modules. A module listed below that no longer exists fails the build with its name
(griffe cannot find it), which keeps this list honest when the tree moves.
"""
from __future__ import annotations

import mkdocs_gen_files

# (section, module, one line on what it is for). Public: what a user or a plugin author calls,
# and the stages of the pipeline a contributor reads first. Private helpers stay out.
MODULES = [
    ("solvers", "solvers", "the package: what `from solvers import ...` gives"),
    ("solvers", "solvers.estimator", "`SVMClassifier`, the scikit-learn estimator over every solver"),
    ("solvers", "solvers.problem", "`Problem`: what a solver sees, validated once"),
    ("solvers", "solvers.base", "the contract: `Budget`, `Fit`, `Recorder`, statuses"),
    ("solvers", "solvers.registry", "`SolverSpec`, `Param`, `register`, `fit`"),
    ("solvers", "solvers.objectives", "the primal and dual objectives, lambda conventions"),
    ("solvers", "solvers.kernels", "kernels and the kernel-column cache"),
    ("solvers", "solvers.multiclass", "one-vs-rest, one-vs-one and the ordinal chain"),
    ("pipeline", "pipeline.run", "the composition root: `run(cfg, run_dir)`"),
    ("pipeline", "pipeline.cli", "the `svmbench` command: run, data, report, solvers, cluster"),
    ("pipeline", "pipeline.command", "the run command: `python -m pipeline`, `svmbench run`"),
    ("pipeline", "pipeline.preflight", "the one preflight: every check that reads beyond the config, once"),
    ("pipeline", "pipeline.exits", "`fast_exit`: how a process ends once its work is written"),
    ("pipeline", "pipeline.kept", "a local cluster kept between commands (`svmbench cluster`)"),
    ("pipeline", "pipeline.kept.cluster", "start, status, stop: the kept cluster's one entry point"),
    ("pipeline", "pipeline.installation", "where the configs come from; the import-name check"),
    ("pipeline", "pipeline.experiment.schema", "the config schema: sections, their fields and defaults"),
    ("pipeline", "pipeline.experiment.config", "composing and validating: the one reader of the DictConfig"),
    ("pipeline", "pipeline.experiment.experiment", "the typed, frozen `Experiment` every later stage takes"),
    ("pipeline", "pipeline.experiment.plan", "the plan: specs, folds, task keys"),
    ("pipeline", "pipeline.data.store", "the dataset store: entries, reads, verification"),
    ("pipeline", "pipeline.data.datasets", "dataset builders and ingest"),
    ("pipeline", "pipeline.engine.tasks", "the task bodies that run on workers"),
    ("pipeline", "pipeline.engine.execute", "the execute loop: submit, gather, refill"),
    ("pipeline", "pipeline.engine.clusters", "the clusters a plan runs on, and how they are reached"),
    ("pipeline", "pipeline.engine.cutting", "specs into units and tasks (pure)"),
    ("pipeline", "pipeline.engine.warmup", "the workers warmed and checked before the clock starts"),
    ("pipeline", "pipeline.engine.sink", "records to shards as fits end"),
    ("pipeline", "pipeline.engine.sandbox", "the child process each worker thread can kill"),
    ("pipeline", "pipeline.engine.kept", "the kept cluster's state: `cluster=kept`'s address"),
    ("pipeline", "pipeline.kept.launcher", "the kept cluster's launcher: a command forked with its imports done"),
    ("pipeline", "pipeline.results.tables", "shards to Parquet tables"),
    ("pipeline", "pipeline.report.build", "the report from the Parquet tables"),
    ("pipeline", "pipeline.report.registry", "registering a table or a figure"),
    ("pipeline", "pipeline.papers.common", "what every paper reproduction's writer shares"),
    ("pipeline", "pipeline.bench", "the benchmark (`python -m pipeline.bench`): its package"),
    ("pipeline", "pipeline.bench.harness", "what every benchmark scenario shares: our whole command run and read"),
    ("pipeline", "pipeline.bench.anchors", "the benchmark's references as functions, run by name"),
]


def main() -> None:
    index = ["# API reference", "",
             "Rendered from the docstrings (numpydoc) of the public modules at build time; the sources "
             "are read, not imported. Generated pages: edit the docstrings, not these pages.", ""]
    summary = ["* [Overview](index.md)"]
    section = None
    for sec, module, what in MODULES:
        if sec != section:
            index += ["", f"## `{sec}`", "", "| module | what |", "|---|---|"]
            summary.append(f"* {sec}")
            section = sec
        path = module.replace(".", "/") + ".md"
        index.append(f"| [`{module}`]({path}) | {what} |")
        summary.append(f"    * [{module}]({path})")
        with mkdocs_gen_files.open(f"reference/api/{path}", "w") as f:
            f.write(f"# `{module}`\n\n{what[0].upper() + what[1:]}.\n\n::: {module}\n    options:\n"
                    "      show_root_heading: false\n      show_root_toc_entry: false\n")
        source = module.replace(".", "/")
        mkdocs_gen_files.set_edit_path(f"reference/api/{path}", f"../{source}.py")
    with mkdocs_gen_files.open("reference/api/index.md", "w") as f:
        f.write("\n".join(index) + "\n")
    with mkdocs_gen_files.open("reference/api/SUMMARY.md", "w") as f:
        f.write("\n".join(summary) + "\n")


main()
