"""Command line for the dataset store.

::

    python -m pipeline.data list                                   [--store ROOT]
    python -m pipeline.data info NAME                              [--store ROOT]
    python -m pipeline.data build NAME [--param K=V ...] [--force] [--row-group-size N]
                            [--store ROOT]
    python -m pipeline.data ingest PATH --name NAME [--format libsvm|svmlight|csv|parquet]
                            [--label COL] [--no-header] [--zero-based auto|true|false] [--force]
                            [--store ROOT]
    python -m pipeline.data remove NAME                            [--store ROOT]

The default store is :func:`pipeline.data.store.default_store_root` (``$SVMBENCH_STORE``, else the
user cache directory), the same one the experiment configs use. Errors are printed as
``error: <message>`` on stderr with exit status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from pipeline.data import datasets, store
from pipeline.data.store import StoreError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, prog: str = "python -m pipeline.data") -> int:
    """Run the data command; return the process exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` when omitted.
    prog : str
        The command's name in usage and help (``svmbench data`` from `pipeline.cli`).
    """
    parser = _parser(prog)
    args = parser.parse_args(argv)
    root = args.store or str(store.default_store_root())
    try:
        return args.run(args, root)
    except (StoreError, ValueError, OSError) as exc:
        # Bad names, bad files and bad parameters are the user's to fix: say what is wrong
        # and where, without a traceback that buries the message.
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _parser(prog: str) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        metavar="ROOT",
        help="store root (default: $SVMBENCH_STORE, else <user cache>/svmbench/datasets; "
        f"here {store.default_store_root()})",
    )
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Build, ingest, inspect and remove datasets in the svmbench store.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", parents=[common], help="list the datasets in the store")
    p.set_defaults(run=_cmd_list)

    p = sub.add_parser("info", parents=[common], help="show one dataset's metadata")
    p.add_argument("name")
    p.set_defaults(run=_cmd_info)

    p = sub.add_parser(
        "build",
        parents=[common],
        help="build a built-in dataset",
        description="Build a built-in dataset: "
        + "; ".join(f"{n} ({b.description})" for n, b in sorted(datasets.BUILDERS.items())),
    )
    p.add_argument("name", help=f"one of {', '.join(datasets.dataset_names())}, or a dataset entry of the "
                   "config (conf/datasets/NAME.yaml, e.g. rcv1_full) with the parameters it sets")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="builder parameter (repeatable); non-default values give the entry its own name",
    )
    p.add_argument("--force", action="store_true", help="rebuild even if already stored")
    p.add_argument(
        "--row-group-size",
        type=int,
        default=store.DEFAULT_ROW_GROUP_SIZE,
        metavar="N",
        help="rows per Parquet row group, the unit a reader of some rows fetches "
        f"(default {store.DEFAULT_ROW_GROUP_SIZE})",
    )
    p.set_defaults(run=_cmd_build)

    p = sub.add_parser("ingest", parents=[common], help="add your own data file")
    p.add_argument("path")
    p.add_argument("--name", required=True, help="store entry name")
    p.add_argument(
        "--format",
        choices=datasets.INGEST_FORMATS,
        help="file format (default: from the extension: .svm .libsvm .svmlight .txt, .csv, "
        ".parquet .pq)",
    )
    p.add_argument(
        "--label",
        help="label column of a CSV or Parquet table (without a header: its number, default 0)",
    )
    p.add_argument(
        "--no-header",
        action="store_true",
        help="the CSV file has no header line: columns are numbered from 0",
    )
    p.add_argument(
        "--zero-based",
        choices=("auto", "true", "false"),
        default="auto",
        help="LIBSVM feature indices start at 0 (default: auto, zero-based iff an index 0 occurs)",
    )
    p.add_argument("--license", default="", help="license of the data, recorded in meta.json")
    p.add_argument("--citation", default="", help="how to cite the data, recorded in meta.json")
    p.add_argument("--force", action="store_true", help="replace an existing entry")
    p.set_defaults(run=_cmd_ingest)

    p = sub.add_parser("remove", parents=[common], help="delete a dataset from the store")
    p.add_argument("name")
    p.set_defaults(run=_cmd_remove)
    return parser


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


def _cmd_list(args, root: str) -> int:
    metas = store.list_datasets(root)
    if metas:
        header = ("name", "rows", "features", "nnz", "classes")
        rows = [
            (
                m["name"],
                f"{m['n_rows']:,}",
                f"{m['n_features']:,}",
                f"{m['nnz']:,}",
                _classes_short(m),
            )
            for m in metas
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        right = {1, 2, 3}  # numbers align right
        for r in [header, *rows]:
            cells = [
                c.rjust(w) if i in right else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ]
            print("  ".join(cells).rstrip())
    else:
        print(f"no datasets in store {root}")
    stored = {m["name"] for m in metas}
    missing = [n for n in datasets.dataset_names() if n not in stored]
    if missing:
        print(
            f"\nbuilt-in, not yet in this store: {', '.join(missing)} "
            f"(`python -m pipeline.data build NAME`, or built on first use)"
        )
    return 0


def _cmd_info(args, root: str) -> int:
    entry = store_entry(args.name)
    meta = store.dataset_info(root, entry)
    print(_describe(meta, store.dataset_path(root, entry)))
    return 0


def store_entry(name: str) -> str:
    """The store entry that a run with ``datasets=[NAME]`` reads: a config entry's or builder's
    (rcv1_full: ``rcv1_like-<hash>``), else NAME itself (an entry the user ingested), so that
    info, build and remove take every name a run takes."""
    builder, params = config_entry(name, {})
    return datasets.store_name(builder, params) if builder in datasets.BUILDERS else builder


def config_entry(name: str, params: dict) -> tuple[str, dict]:
    """(builder, params) for NAME: a builder as it is, or a dataset entry of the config
    (conf/datasets/NAME.yaml, e.g. rcv1_full: rcv1_like at RCV1's size) as the builder and the
    parameters it names, with --param on top, so the store entry is the one a run of that config
    reads."""
    from omegaconf import OmegaConf

    from ..installation import CONF_DIR
    path = CONF_DIR / "datasets" / f"{name}.yaml"
    if not path.exists():        # a builder, or an unknown name: build_dataset's error names the choices
        return name, params
    entry = OmegaConf.load(path)
    base = OmegaConf.to_container(entry.params, resolve=True) if entry.get("params") is not None else {}
    return str(entry.get("builder") or name), {**base, **params}


def _cmd_build(args, root: str) -> int:
    args.name, params = config_entry(args.name, _parse_params(args.param))
    if args.name not in datasets.BUILDERS and store.exists(root, args.name):
        source = store.dataset_info(root, args.name).get("source") or {}
        print(f"{args.name} is in store {root}, ingested from {source.get('file', 'a file')}: it has no "
              f"builder (to replace it, ingest the file again with --force)")
        return 0
    entry = datasets.store_name(args.name, params)
    started = time.perf_counter()
    rgs = args.row_group_size
    if args.force:
        meta = datasets.build_dataset(root, args.name, params, overwrite=True, row_group_size=rgs)
        verb = "rebuilt"
    elif store.exists(root, entry):
        meta = datasets.ensure_dataset(root, args.name, params)
        print(f"{entry} is already in store {root} (--force rebuilds it)")
        return 0
    else:
        meta = datasets.ensure_dataset(root, args.name, params, row_group_size=rgs)
        verb = "built"
    elapsed = time.perf_counter() - started
    print(f"{verb} {meta['name']} in {elapsed:.1f} s: {_shape_line(meta)}")
    print(f"  at {store.dataset_path(root, meta['name'])}")
    return 0


def _cmd_ingest(args, root: str) -> int:
    if args.no_header and (args.format or _format_or_none(args.path)) != "csv":
        raise ValueError(f"--no-header is for CSV files; {args.path} is not one (--format csv if it is)")
    _refuse_empty_input(args.path, args.format, header=not args.no_header)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", datasets.IngestWarning)
        try:
            meta = datasets.ingest_file(
                root,
                args.path,
                args.name,
                format=args.format,
                label=args.label,
                header=not args.no_header,
                zero_based=args.zero_based,
                overwrite=args.force,
                license=args.license,
                citation=args.citation,
            )
        except store.DatasetExistsError:
            # In the spelling of this command line, not the API's (overwrite=True).
            raise store.DatasetExistsError(f"dataset {args.name!r} already exists in store {root}; "
                                           f"pass --force to replace it") from None
        finally:
            for warning in said:     # one line each, as the errors are
                if issubclass(warning.category, datasets.IngestWarning):
                    print(f"warning: {warning.message}", file=sys.stderr)
                else:
                    warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    print(f"ingested {meta['source']['file']} as {meta['name']}: {_shape_line(meta)}")
    print(f"  at {store.dataset_path(root, meta['name'])}")
    return 0


def _format_or_none(path_arg: str) -> str | None:
    try:
        return datasets.infer_format(path_arg)
    except ValueError:
        return None


def _refuse_empty_input(path_arg: str, format_arg: str | None, header: bool = True) -> None:
    """Refuse a file that holds no data rows, before anything is written to the store.

    The readers take such a file for a dataset of 0 rows, which would then fail far from
    its cause, in every task of an experiment that uses it. Only the first data row is
    looked for, so a large file costs no more than a glance. A missing file, an unknown
    extension or a malformed file is left to :func:`pipeline.data.datasets.ingest_file`, which
    reports those with the line at fault.

    Raises
    ------
    ValueError
        Naming the file and what it holds instead of data.
    """
    path = Path(path_arg).expanduser().resolve()
    if not path.is_file():
        return
    fmt = (format_arg or datasets.infer_format(path)).lower()
    if fmt in ("libsvm", "svmlight"):
        with open(path, "rb") as fh:
            # As the LIBSVM reader does: "#" starts a comment, blank lines are skipped.
            if any(raw.split(b"#", 1)[0].strip() for raw in fh):
                return
        raise ValueError(
            f"{path}: no data lines (the file is empty or holds only comments and blank lines)"
        )
    if fmt == "csv":
        import pandas as pd

        try:
            head = pd.read_csv(path, nrows=1, header=0 if header else None)
        except pd.errors.EmptyDataError:
            raise ValueError(
                f"{path}: no header and no data lines (the file is empty or holds only blank "
                f"lines)"
            ) from None
        except (pd.errors.ParserError, UnicodeDecodeError):
            return
        if head.empty:
            columns = ", ".join(map(str, head.columns))
            raise ValueError(f"{path}: a header (columns: {columns}) but no data lines")
        return
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            n_rows = pq.ParquetFile(path).metadata.num_rows
        except (OSError, pa.ArrowException):
            return
        if n_rows == 0:
            raise ValueError(f"{path}: no rows (the Parquet file holds only a schema)")


def _cmd_remove(args, root: str) -> int:
    entry = store_entry(args.name)
    store.remove_dataset(root, entry)
    print(f"removed {entry}{f' ({args.name})' if entry != args.name else ''} from store {root}")
    return 0


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def _parse_params(items: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` to a dict of strings; the builder coerces each to its type."""
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        params[key.strip()] = value.strip()
    return params


def _label(value: float) -> str:
    return f"{value:g}"


def _classes_short(meta: dict) -> str:
    if meta.get("classes") is None:
        return f"{meta.get('n_classes', '?')} values"
    return ", ".join(_label(c) for c in meta["classes"])


def _class_counts(meta: dict) -> str:
    if meta.get("classes") is None:
        return f"{meta.get('n_classes', '?')} distinct label values (not listed)"
    names = meta.get("label_names")
    parts = []
    for i, (c, n) in enumerate(zip(meta["classes"], meta["class_counts"], strict=True)):
        named = f" ({names[i]})" if names and i < len(names) else ""
        parts.append(f"{_label(c)}{named}: {n:,}")
    return ", ".join(parts)


def _shape_line(meta: dict) -> str:
    return (
        f"{meta['n_rows']:,} rows x {meta['n_features']:,} features, {meta['nnz']:,} nonzeros, "
        f"classes {_class_counts(meta)}"
    )


def _describe(meta: dict, path: Path | str) -> str:
    cells = meta["n_rows"] * meta["n_features"]
    density = meta["nnz"] / cells if cells else 0.0
    preprocessing = meta.get("preprocessing") or "none"
    if isinstance(preprocessing, list):
        preprocessing = "; ".join(map(str, preprocessing))
    lines = [
        ("name", meta["name"]),
        ("path", str(path)),
        ("rows", f"{meta['n_rows']:,}"),
        ("features", f"{meta['n_features']:,}"),
        ("nnz", f"{meta['nnz']:,}"),
        ("density", f"{density:.4%}"),
        ("classes", _class_counts(meta)),
        ("fingerprint", meta["fingerprint"]),
        ("source", json.dumps(meta.get("source"), sort_keys=True)),
        ("license", meta.get("license") or "(not recorded)"),
        ("citation", meta.get("citation") or "(not recorded)"),
        ("preprocessing", preprocessing),
        ("created", f"{meta.get('created', '?')} by svmbench {meta.get('svmbench_version', '?')}"),
    ]
    width = max(len(k) for k, _ in lines) + 1
    return "\n".join(f"{k + ':':<{width}} {v}" for k, v in lines)


if __name__ == "__main__":
    sys.exit(main())
