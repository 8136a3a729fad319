"""Generate one page per registered solver from the registry, at build time.

Run by mkdocs-gen-files (mkdocs.yml). Importing ``solvers`` registers every solver (each
module ends with ``register(SolverSpec(...))``); nothing is fitted and no numba kernel is
compiled (numba compiles on a kernel's first call, and none is called). Each page shows what
the `SolverSpec` declares -- family, losses, intercepts, kernels (the first of each is the
default), budget defaults, version, every `Param` with its default and range -- and the
driver's docstring, rendered by mkdocstrings from the source. The conf/solvers entries that
select the solver are listed beside it.
"""
from __future__ import annotations

import math
from pathlib import Path

import mkdocs_gen_files
import yaml

import solvers
from solvers.registry import Param

ROOT = Path(__file__).resolve().parents[2]


def cell(text) -> str:
    """Text for a table cell: pipes escaped, HTML's angle brackets shown as text."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\n", " "))


def _num(x) -> str:
    if isinstance(x, float) and (math.isinf(x) or x != int(x) or abs(x) >= 1e6):
        return f"{x:g}"
    return str(int(x)) if isinstance(x, float) else str(x)


def param_range(p: Param) -> str:
    """The values a Param accepts, as the checker (`Param.check`) tests them."""
    if p.kind == "str":
        text = "one of " + ", ".join(f"`{o}`" for o in p.options) if p.options else "a string"
    elif p.kind == "bool":
        text = "true or false"
    elif p.kind in ("int", "float"):
        word = "integer" if p.kind == "int" else "number"
        parts = []
        if p.low is not None:
            parts.append(f"{'>' if p.open_low else '>='} {_num(p.low)}")
        if p.high is not None:
            parts.append(f"{'<' if p.open_high else '<='} {_num(p.high)}")
        text = f"{word} " + " and ".join(parts) if parts else f"any {word}"
    else:
        text = "any value"
    return text + (", or null" if p.none_ok else "")


def conf_entries(name: str) -> list[str]:
    """conf/solvers/*.yaml files whose entry runs this solver."""
    out = []
    for path in sorted((ROOT / "conf" / "solvers").glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        if (data.get("solver") or path.stem) == name:
            out.append(path.stem)
    return out


def page(spec) -> str:
    lines = [f"# `{spec.name}`", ""]
    if spec.description:
        lines += [spec.description, ""]
    entries = conf_entries(spec.name)
    lines += ["Generated from the solver registry (`solvers.get_solver(" + repr(spec.name) + ")`).", "",
              "| declared | |", "|---|---|",
              f"| family | {cell(spec.family)} |",
              "| losses | " + ", ".join(f"`{x}`" for x in spec.losses) + " (first: the default) |",
              "| intercepts | " + ", ".join(f"`{x}`" for x in spec.intercepts) + " (first: the default) |",
              "| kernels | " + ", ".join(f"`{x}`" for x in spec.kernels) + " |",
              f"| default `tol` | `{spec.default_tol:g}` |",
              f"| default `max_iter` | `{spec.default_max_iter}` |",
              f"| warm start (C paths) | {'yes' if spec.warm_start else 'no'} |",
              f"| hard margin (C = inf) | {'yes' if spec.hard_margin else 'no'} |",
              f"| version (part of every task key) | `{spec.version}` |",
              "| config entries | " + (", ".join(f"[`{e}`](../config/solvers.md#{e.replace('_', '-')})" for e in entries)
                                      or "none: add one with `'+solvers.NAME={solver: " + spec.name + "}'`") + " |",
              "", "## Parameters", ""]
    if spec.params:
        lines += ["Set as `solvers.<entry>.params.KEY=...`, swept as `solvers.<entry>.grid.KEY=[...]`, "
                  "or `SVMClassifier(solver=" + repr(spec.name) + ", solver_params={KEY: ...})`. "
                  "Problem keys (C, loss, kernel, ...) and budget keys (tol, max_iter, time_limit_s) "
                  "sit beside them ([glossary](../../concepts.md#problem-keys-and-budget-keys)).", "",
                  "| parameter | type | default | accepts | what |", "|---|---|---|---|---|"]
        for key, p in spec.params.items():
            lines.append(f"| `{key}` | {p.kind} | `{p.default!r}` | {cell(param_range(p))} | {cell(p.doc)} |")
    else:
        lines.append("No parameters of its own: only the problem and budget keys.")
    fn = spec.fit
    lines += ["", "## The method", "", f"The module `{fn.__module__}`, rendered from its docstring:", "",
              f"::: {fn.__module__}", "    options:", "      show_root_heading: false",
              "      show_root_toc_entry: false", "      members: false", ""]
    lines += ["", "## The driver", "", f"`{fn.__module__}.{fn.__qualname__}`, rendered from its docstring:", "",
              f"::: {fn.__module__}.{fn.__qualname__}", "    options:", "      show_root_heading: false",
              "      show_root_toc_entry: false", "      heading_level: 3", ""]
    return "\n".join(lines)


def main() -> None:
    specs = [solvers.get_solver(n) for n in solvers.solver_names()]
    index = ["# Solvers", "",
             "Every registered solver, generated from the registry at build time. What they minimise "
             "and how they are used is in [Solvers](../../guide/solvers.md); the defaults and why are "
             "under [Defaults](../../guide/solvers.md#defaults).", "",
             "| solver | family | losses | intercepts | kernels | parameters |", "|---|---|---|---|---|---|"]
    summary = ["* [Overview](index.md)"]
    for spec in specs:
        index.append(f"| [`{spec.name}`]({spec.name}.md) | {cell(spec.family)} | {', '.join(spec.losses)} | "
                     f"{', '.join(spec.intercepts)} | {', '.join(spec.kernels)} | {len(spec.params)} |")
        summary.append(f"* [{spec.name}]({spec.name}.md)")
        with mkdocs_gen_files.open(f"reference/solvers/{spec.name}.md", "w") as f:
            f.write(page(spec))
        mkdocs_gen_files.set_edit_path(f"reference/solvers/{spec.name}.md",
                                       "../" + spec.fit.__module__.replace(".", "/") + ".py")
    with mkdocs_gen_files.open("reference/solvers/index.md", "w") as f:
        f.write("\n".join(index) + "\n")
    with mkdocs_gen_files.open("reference/solvers/SUMMARY.md", "w") as f:
        f.write("\n".join(summary) + "\n")


main()
