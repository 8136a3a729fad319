"""``python -m solvers list [NAME ...] [--plugin FILE_OR_MODULE ...]``: every registered solver
(built-in, installed entry points of the group ``svmbench.solvers``, and the plugins given) with
its family, losses, intercepts, kernels, parameters and where it came from, as plain text that
reads in 100 columns."""
from __future__ import annotations

import argparse
import os
import sys
import textwrap

from . import registry
from .registry import Param, SolverError

WIDTH = 100


def param_range(p: Param) -> str:
    """A parameter's allowed values as text: ``float > 0``, ``one of pg, w_change``, ..."""
    if p.kind == "str" and p.options:
        text = "one of " + ", ".join(p.options)
    elif p.kind in ("int", "float"):
        parts = []
        if p.low is not None:
            parts.append(f"{'>' if p.open_low else '>='} {p.low:g}")
        if p.high is not None:
            parts.append(f"{'<' if p.open_high else '<='} {p.high:g}")
        text = p.kind + (" " + " and ".join(parts) if parts else "")
    else:
        text = p.kind
    return text + (", or None" if p.none_ok else "")


def describe(name: str) -> str:
    """One solver's block of the listing."""
    spec = registry.get_solver(name)
    head = f"{spec.name}  [{spec.family}]  from {registry.origin(name)}"
    lines = [head]
    if spec.description:
        lines += textwrap.wrap(spec.description, WIDTH - 2, initial_indent="  ", subsequent_indent="  ")
    what = (f"losses: {', '.join(spec.losses)} | intercepts: {', '.join(spec.intercepts)} | "
            f"kernels: {', '.join(spec.kernels)} | warm start: {'yes' if spec.warm_start else 'no'}"
            f"{' | hard margin' if spec.hard_margin else ''}{'' if spec.time_limit else ' | no time limit'} | max_iter {spec.default_max_iter}, "
            f"tol {spec.default_tol:g}")
    lines += textwrap.wrap(what, WIDTH - 2, initial_indent="  ", subsequent_indent="    ")
    if spec.params:
        width = max(len(k) for k in spec.params) + 2
        dwidth = max(len("default"), *(len(repr(p.default)) for p in spec.params.values())) + 2
        lines.append(f"  {'parameter':<{width}}{'default':<{dwidth}}range")
        for key, p in spec.params.items():
            row = f"  {key:<{width}}{p.default!r:<{dwidth}}{param_range(p)}"
            lines += textwrap.wrap(row, WIDTH, subsequent_indent=" " * (2 + width + dwidth))
    else:
        lines.append("  (no parameters)")
    return "\n".join(lines)


def main(argv=None, prog: str = "python -m solvers") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="every registered solver, its parameters and origin")
    ls.add_argument("names", nargs="*", help="only these solvers")
    ls.add_argument("--plugin", action="append", default=[], metavar="FILE_OR_MODULE",
                    help="import a plugin file (path.py) or module (a.b) first; repeatable")
    args = parser.parse_args(argv)
    try:
        for source in args.plugin:
            registry.load_plugin(source)
        names = args.names or registry.solver_names()
        blocks = [describe(n) for n in names]
    except SolverError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    try:
        print("\n\n".join(blocks))
        sys.stdout.flush()
    except BrokenPipeError:     # `python -m solvers list | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
