"""`svmbench COMMAND ...`: one console command over the `python -m` forms, which stay.

    svmbench run [hydra overrides]    = python -m pipeline [hydra overrides]
    svmbench data ...                 = python -m pipeline.data ...
    svmbench report RUN_DIR ...       = python -m pipeline.report RUN_DIR ...
    svmbench solvers [NAME ...]       the registered solvers: family, losses, kernels, parameters, origin
    svmbench cluster start|status|stop = python -m pipeline.kept ...: a local cluster kept between
                                      commands, run on with cluster=kept

Each command is the same function its `python -m` form calls, with its own arguments and exit
codes (run: pipeline/command.py's docstring); this module only picks the command. Before it
runs, `pipeline.installation.check` makes sure the configs are there and that the import names
`pipeline` and `solvers` are this svmbench's (exit 2 and one line naming both files if not).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence


def run(argv: list[str], prog: str) -> int:
    """`python -m pipeline`'s own `command` (its preflight, Hydra, exit codes); handed to a
    kept cluster's launcher first, as `python -m pipeline` does."""
    from pipeline.engine.rss import process_start
    from pipeline.kept.handoff import hand_off
    hand_off(argv, process_start())
    from pipeline.command import command
    command(argv)      # exits (Hydra, then `finish` with the run's code)
    return 0


def data(argv: list[str], prog: str) -> int:
    from pipeline.data.cli import main
    return main(argv, prog=prog)


def report(argv: list[str], prog: str) -> int:
    from pipeline.report.build import main
    return main(argv, prog=prog)


def cluster(argv: list[str], prog: str) -> int:
    from pipeline.kept.cluster import main
    return main(argv, prog=prog)


def list_solvers(argv: list[str], prog: str) -> int:
    """Every registered solver (built-in, entry point, plugin): `python -m solvers list`."""
    from solvers.__main__ import main
    return main(["list", *argv], prog=prog)


COMMANDS: dict[str, tuple[Callable[[list[str], str], int], str]] = {
    "run": (run, "run an experiment: Hydra overrides, e.g. smoke=true 'solvers=[dcd]' (= python -m pipeline)"),
    "data": (data, "list, build, ingest, inspect, remove datasets in the store (= python -m pipeline.data)"),
    "report": (report, "rebuild a run's report from its tables (= python -m pipeline.report)"),
    "solvers": (list_solvers, "list the registered solvers"),
    "cluster": (cluster, "start, show or stop a local cluster kept between commands (run with cluster=kept)"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """The `svmbench` console script; returns (or exits with) the command's exit status."""
    from pipeline.installation import InstallationError, check, version
    parser = argparse.ArgumentParser(
        prog="svmbench", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train and compare SVM solvers in batch experiments (Hydra config -> plan -> Dask -> report).",
        epilog="commands:\n" + "\n".join(f"  {name:<9}{text}" for name, (_, text) in COMMANDS.items())
        + "\n\n`svmbench COMMAND --help` for a command's options; `svmbench run --help` lists the config"
          "\ngroups and the most used commands. Documentation: docs/ in the repository (`make docs`).")
    parser.add_argument("--version", action="version", version=version())
    parser.add_argument("command", choices=COMMANDS, metavar="COMMAND", help="one of: " + ", ".join(COMMANDS))
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        check()
    except InstallationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    fn, _ = COMMANDS[args.command]
    return fn(args.args, f"svmbench {args.command}")
