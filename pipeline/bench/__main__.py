"""`python -m pipeline.bench`: benchmark scenarios by name, ours beside a reference in one run.

Each scenario's rows are printed as it ends and written as one markdown table per scenario (--out).

    python -m pipeline.bench [--only a,b,c,d,e,f,g,h,k,t,u,cs,hs,libsvm,r1,dist,paired] [--reps 2] [--full]
                             [--out bench.md] [--set KEY=VALUE ...] [--libsvm-rows 5000,20000] [--dist-rows 2000000]
                             [--against main]

The datasets are built into the store before anything is timed. --set adds Hydra overrides to
every run of scenarios f and hs (ours and the anchors alike), e.g. a smaller kernel grid:
``--only f --set 'solvers.smo.grid.gamma=[0.001,0.01]'``, or another data shape:
``--only hs --set datasets.mnist_1v7.builder=mnist_3v8``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ..report import markdown_table
from . import distributed, kernel, large, overhead, paired, recipes, search, sweep, upstream
from .harness import Options

# name -> scenario: a function of the Options that returns its rows (one dict per rep or case).
SCENARIOS = {
    "a": sweep.scenario_a, "b": sweep.scenario_b, "e": sweep.scenario_e,
    "c": overhead.scenario_c, "d": overhead.scenario_d, "k": overhead.scenario_k, "m": overhead.scenario_m,
    "g": large.scenario_g, "h": large.scenario_h, "t": large.scenario_t,
    "f": kernel.scenario_f,
    "cs": search.scenario_cs, "hs": search.scenario_hs,
    "u": upstream.scenario_u, "libsvm": upstream.scenario_libsvm,
    "r1": recipes.scenario_r1,
    "dist": distributed.scenario_dist,
    "paired": paired.scenario_paired,
}
DEFAULT = "a,b,c,d"


def _names(value: str) -> list[str]:
    names = value.split(",")
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown scenario {', '.join(map(repr, unknown))}; "
                                         f"the scenarios: {', '.join(SCENARIOS)}")
    return names


def _rows(value: str) -> tuple[int, ...]:
    try:
        rows = tuple(int(n) for n in value.split(","))
    except ValueError:
        rows = ()
    if not rows or min(rows) < 2:
        raise argparse.ArgumentTypeError(f"{value!r}: row counts, comma-separated integers of at least 2")
    return rows


def parser() -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:7s} {fn.__doc__.splitlines()[0]}" for name, fn in SCENARIOS.items())
    ap = argparse.ArgumentParser(prog="python -m pipeline.bench", description=__doc__.splitlines()[0],
                                 epilog=f"scenarios:\n{listing}", formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", type=_names, default=DEFAULT, help=f"comma-separated scenarios (default {DEFAULT})")
    ap.add_argument("--libsvm-rows", type=_rows, default="5000,20000", help="row counts of scenario libsvm")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a Hydra override added to every run of scenarios f and hs (ours and the anchors)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default="bench_sweep.md")
    ap.add_argument("--full", action="store_true", help="scenarios u and paired also at RCV1's size (minutes)")
    ap.add_argument("--against", default="main",
                    help="scenario paired: the base commit, branch or tag (or another checkout's folder)")
    ap.add_argument("--dist-rows", type=int, default=2_000_000, help="rows of scenario dist")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    parts = []
    with tempfile.TemporaryDirectory(prefix="svmbench-bench-") as tmp:
        opts = Options(work=Path(tmp), reps=args.reps, extra=tuple(args.set), full=args.full,
                       libsvm_rows=args.libsvm_rows, dist_rows=args.dist_rows, against=args.against)
        for name in args.only:
            df = pd.DataFrame(SCENARIOS[name](opts))
            print(df.to_string(index=False), flush=True)
            parts.append(f"### scenario {name}\n\n{markdown_table(df)}")
    Path(args.out).write_text("\n".join(parts))
    print(f"table: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
