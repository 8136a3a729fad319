"""Generate the configuration reference from the code and conf/, at build time.

Run by mkdocs-gen-files (mkdocs.yml). Two sources, both read statically (nothing is imported,
so the build needs neither Hydra's composition nor a store):

- the structured-config dataclasses of ``pipeline/experiment/schema.py`` (the schema Hydra
  registers as ``base_config``): each field with its type, default and the comment written
  beside or above it, and the module's tuples of accepted values (``PROBLEM_KEYS``, ``CV_KINDS``...);
- every option of every ``conf/`` group: its ``# @package`` line, the comment that opens the
  file, and the yaml itself;
- the problem's parameters, ``solvers/params.py`` (loaded as a file of its own: it imports
  nothing of the package), whose words are the ones a refusal gives; the schema's declared
  rules (``allowed(...)``) are worded by the same `Param`.

A page per group (``reference/config/<group>.md``) and one overview
(``reference/configuration.md``). Changing a field, a comment or a yaml changes the pages.
"""
from __future__ import annotations

import ast
import importlib.util
import io
import sys
import tokenize
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
CONFIG_PY = ROOT / "pipeline" / "experiment" / "schema.py"
CONF = ROOT / "conf"


def _load_params():
    spec = importlib.util.spec_from_file_location("_svmbench_params", ROOT / "solvers" / "params.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module       # dataclasses look their module up while they are made
    spec.loader.exec_module(module)
    return module


PARAMS = _load_params()

# The top-level dataclass of the schema, and the entry dataclasses that `typed`/`validate`
# apply to each dataset and solver entry (they are not reachable from Config's annotations,
# whose entries are free mappings so that `+solvers.x={...}` works on the command line).
SCHEMA_ROOT = "Config"
ENTRY_CLASSES = {"DatasetConf": "datasets.<entry>", "SolverConf": "solvers.<entry>"}
# The module's tuples of accepted values, as the reference names them.
CONSTANTS = {
    "PROBLEM_KEYS": "problem keys: they define the optimisation problem (a solver entry's params or grid, a dataset's `problem`)",
    "BUDGET_KEYS": "budget keys: how long a solver may run (part of every task key)",
    "TASK_KEYS": "task keys: how a binary solver is applied to a multiclass task",
    "CV_KINDS": "`cv.kind`",
    "CLUSTER_KINDS": "`cluster.kind`",
    "SCALINGS": "a dataset entry's `scale`",
    "REFERENCE_MODES": "`run.reference`",
    "TIMING_MODES": "`run.timing`",
    "REPORT_KEYS": "the `report` group's keys",
    "SEARCH_KINDS": "`search.kind`",
    "HALVING_RESOURCES": "`search.resource` of a halving search",
}
GROUP_TITLES = {
    "datasets": "Datasets (multi-select)",
    "solvers": "Solver entries (multi-select)",
    "cv": "Cross-validation",
    "cluster": "Clusters",
    "search": "Searches (grid, certified C search, successive halving)",
    "experiment": "Experiments (`+experiment=NAME`)",
}


def _comments(source: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def _field_doc(node: ast.AnnAssign, lines: list[str], comments: dict[int, str]) -> str:
    """The comment beside a field, else the block of full-line comments right above it."""
    if node.end_lineno in comments and lines[node.end_lineno - 1].lstrip()[:1] != "#":
        return comments[node.end_lineno]
    above, n = [], node.lineno - 1
    while n >= 1 and lines[n - 1].lstrip().startswith("#"):
        above.insert(0, comments[n])
        n -= 1
    return " ".join(above)


def _default(node: ast.AnnAssign) -> str:
    """The field's default as written (`field(default_factory=...)` shown as its value)."""
    v = node.value
    if v is None:
        return "(required)"
    if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "allowed":
        return ast.unparse(v.args[0]) if v.args else "(required)"
    if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "field":
        for kw in v.keywords:
            if kw.arg == "default_factory":
                f = kw.value
                if isinstance(f, ast.Lambda):
                    return ast.unparse(f.body)
                name = ast.unparse(f)
                return {"dict": "{}", "list": "[]"}.get(name, f"{name}()")
            if kw.arg == "default":
                return ast.unparse(kw.value)
    return ast.unparse(v)


def _allowed(node: ast.AnnAssign) -> str:
    """What a field declared with `allowed(...)` takes, in the words of its refusal, and for which
    kinds; "" for a field without a declared rule."""
    v = node.value
    if not (isinstance(v, ast.Call) and getattr(v.func, "id", "") == "allowed"):
        return ""
    kw = {k.arg: k.value for k in v.keywords}
    if "why" in kw:
        words = ast.literal_eval(kw["why"]).removeprefix("must be ")
    elif "rule" in kw:
        words = "see the field's comment"
    else:
        literal = {k: ast.literal_eval(x) for k, x in kw.items() if k not in ("when", "options", "factory")}
        words = "" if "options" in kw else PARAMS.Param(None, **literal).allowed()
    when = ast.literal_eval(kw["when"]) if "when" in kw else None
    return words + (f" (kind {', '.join(when)})" if when and words else "")


def schema_classes(tree: ast.Module, source: str) -> dict[str, dict]:
    """Every dataclass of the module: its docstring and its fields (name, type, default, doc)."""
    lines, comments = source.splitlines(), _comments(source)
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        if not any("dataclass" in ast.unparse(d) for d in node.decorator_list):
            continue
        fields = [dict(name=item.target.id, type=ast.unparse(item.annotation), default=_default(item),
                       doc=_field_doc(item, lines, comments), allowed=_allowed(item))
                  for item in node.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)]
        out[node.name] = dict(doc=ast.get_docstring(node) or "", fields=fields)
    return out


def constants(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in CONSTANTS:
                try:
                    values = ast.literal_eval(node.value)
                except ValueError:      # made from the problem's table (PROBLEM_KEYS, ...)
                    values = eval(compile(ast.Expression(node.value), "schema.py", "eval"), vars(PARAMS))
                out[name] = ", ".join(f"`{v}`" for v in values)
    return out


# Keys whose accepted values are one of the module's tuples (shown beside the field's comment).
KEY_VALUES = {"cv.kind": "CV_KINDS", "cluster.kind": "CLUSTER_KINDS", "datasets.<entry>.scale": "SCALINGS",
              "run.reference": "REFERENCE_MODES"}


def cell(text: str) -> str:
    """Text for a table cell: pipes escaped, HTML's angle brackets shown as text."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\n", " "))


def fields_table(fields: list[dict], prefix: str, consts: dict[str, str]) -> str:
    rows = ["| key | type | default | what |", "|---|---|---|---|"]
    for f in fields:
        key = prefix + f["name"]
        what = cell(f["doc"])
        if key in KEY_VALUES and KEY_VALUES[key] in consts:
            what = (what + "; " if what else "") + "one of " + consts[KEY_VALUES[key]]
        elif f.get("allowed"):
            what = (what + "; " if what else "") + cell(f["allowed"])
        rows.append(f"| `{key}` | `{f['type']}` | `{f['default']}` | {what} |")
    return "\n".join(rows)


def schema_order(classes: dict[str, dict]) -> list[tuple[str, str]]:
    """(class, key prefix) for the schema: the root, each nested dataclass under its field's
    name, then the entry classes."""
    if SCHEMA_ROOT not in classes:
        raise SystemExit(f"docs/gen/config_reference.py: no dataclass {SCHEMA_ROOT!r} in {CONFIG_PY}; "
                         "update SCHEMA_ROOT to the schema's top-level class")
    order = [(SCHEMA_ROOT, "")]
    for f in classes[SCHEMA_ROOT]["fields"]:
        if f["type"] in classes:
            order.append((f["type"], f["name"] + "."))
    order += [(c, p + ".") for c, p in ENTRY_CLASSES.items() if c in classes]
    return order


def read_option(path: Path) -> tuple[str, str, str]:
    """(package, description, yaml body) of a conf/ option file."""
    text = path.read_text()
    lines = text.splitlines()
    package, desc, i = "", [], 0
    while i < len(lines) and lines[i].startswith("#"):
        line = lines[i].lstrip("#").strip()
        if line.startswith("@package"):
            package = line.split(None, 1)[1] if " " in line else ""
        else:
            desc.append(line)
        i += 1
    return package, " ".join(d for d in desc if d).strip(), "\n".join(lines[i:]).strip()


def first_sentence(text: str, limit: int = 160) -> str:
    cut = text.split(". ")[0].rstrip(".")
    return cut if len(cut) <= limit else cut[:limit].rsplit(" ", 1)[0] + " ..."


def group_page(group: str) -> str:
    options = sorted((CONF / group).glob("*.yaml"))
    out = [f"# `{group}`: {GROUP_TITLES.get(group, group)}", "",
           f"Generated from `conf/{group}/*.yaml` at build time: each option's opening comment and its yaml. "
           f"Select one with `{group}=NAME`" + (f" or several with `'{group}=[A,B]'`" if group in ("datasets", "solvers") else "")
           + (" (experiments: `+experiment=NAME`)" if group == "experiment" else "") + ".", "",
           "| option | what |", "|---|---|"]
    for p in options:
        _, desc, _ = read_option(p)
        out.append(f"| [`{p.stem}`](#{p.stem.replace('_', '-')}) | {cell(first_sentence(desc))} |")
    out.append("")
    for p in options:
        package, desc, body = read_option(p)
        out += [f"## `{p.stem}` {{#{p.stem.replace('_', '-')}}}", ""]
        if desc:
            out += [desc, ""]
        out += [f"`conf/{group}/{p.name}`" + (f", package `{package}`" if package else "") + ":", "",
                "```yaml", body, "```", ""]
    return "\n".join(out)


def overview(classes: dict[str, dict], consts: dict[str, str]) -> str:
    default_yaml = (CONF / "config.yaml").read_text().strip()
    out = ["# Configuration reference", "",
           "Generated at build time from the schema in `pipeline/experiment/schema.py` (its dataclasses, "
           "their fields' comments and its tuples of accepted values) and from the option files of "
           "`conf/`. What the keys mean together, with examples, is in "
           "[Running experiments](../guide/experiments.md); words are in the [glossary](../concepts.md).", "",
           "## Config groups", "",
           "| group | options | page |", "|---|---|---|"]
    # conf/hydra/ holds Hydra's help page for `--help`, not a group of the experiment.
    for group in sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name != "hydra"):
        names = ", ".join(f"`{p.stem}`" for p in sorted((CONF / group).glob("*.yaml")))
        out.append(f"| `{group}` | {names} | [{group}](config/{group}.md) |")
    out += ["", "The `datasets` group also offers every entry of the store by name "
            "(`python -m pipeline.data list`); built-ins win a name clash.", "",
            "## The default experiment", "", "`conf/config.yaml`, what `make run` runs:", "",
            "```yaml", default_yaml, "```", "", "## Keys", "",
            "Every key Hydra composes is checked against these dataclasses before anything runs; an unknown "
            "key is refused with the valid ones, a bad value with its key.", ""]
    for cls, prefix in schema_order(classes):
        info = classes[cls]
        title = f"`{prefix.rstrip('.')}`" if prefix else "Top level"
        out += [f"### {title}", "", f"`{cls}`" + (f": {info['doc']}" if info["doc"] else ""), "",
                fields_table(info["fields"], prefix, consts), ""]
    out += ["## The problem's parameters", "",
            "One table, `solvers/params.py`, read by `Problem`, `SVMClassifier` and `validate` alike: a bad "
            "value gets these words from each (`solvers.dcd.params.tol=0: must be a number > 0` on the command "
            "line, `tol=0: must be a number > 0` from the estimator).", "",
            "| key | default | allowed | solvers | what |", "|---|---|---|---|---|"]
    for table in (PARAMS.PROBLEM_PARAMS, PARAMS.BUDGET_PARAMS, PARAMS.TASK_PARAMS):
        for key, param in table.items():
            allowed = PARAMS.CLASS_WEIGHT_ALLOWED if param.rule is not None else param.allowed()
            out.append(f"| `{key}` | `{param.default!r}` | {cell(allowed)} | {cell(param.solvers)} | {cell(param.doc)} |")
    out += ["", "## Accepted values", "", "| name | what | values |", "|---|---|---|"]
    for name, what in CONSTANTS.items():
        if name in consts:
            out.append(f"| `{name}` | {what} | {consts[name]} |")
    out.append("")
    return "\n".join(out)


def main() -> None:
    source = CONFIG_PY.read_text()
    tree = ast.parse(source)
    classes = schema_classes(tree, source)
    with mkdocs_gen_files.open("reference/configuration.md", "w") as f:
        f.write(overview(classes, constants(tree)))
    mkdocs_gen_files.set_edit_path("reference/configuration.md", "../pipeline/experiment/schema.py")
    for group in sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name != "hydra"):
        with mkdocs_gen_files.open(f"reference/config/{group}.md", "w") as f:
            f.write(group_page(group))


main()
