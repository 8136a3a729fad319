"""What the tables and figures share: which columns name a problem and a configuration, which
of them a run swept, labels that name every swept key, line styles that never repeat, the
certainty floor of a suboptimality, and Markdown formatting."""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ..experiment.config import BUDGET_KEYS
from .columnar import norm, q

# Columns that define the optimisation problem a fit solves: two fits with equal values solve the
# same problem (fold apart), so their times may be compared and put in ratio. The `param_` ones
# exist when a config sets them (Huber's k, LIBLINEAR's intercept scaling); `class_weight` when a
# run weighs classes (results/tables.py gives the column only then).
PROBLEM_COLUMNS = ["dataset", "loss", "intercept", "kernel", "C", "gamma", "degree", "coef0",
                   "param_intercept_scaling", "param_huber_k", "class_weight"]
# A problem given by lambda (`param_lambda`, Pegasos's C = 1/(lambda n)) has one C per training
# size, so the folds of one lambda point differ in C by a row's worth: lambda names the point and
# its C is the mean over its fits (`point_C`). The convention is fixed per entry: named by it.
LAMBDA = "param_lambda"
_NOT_CONFIG = {"param_lambda_convention"}
# A figure draws at most this many lines per panel (one colour each, `styles`): the best by the
# figure's own measure, its panel title saying how many of how many; the tables list them all.
MAX_LINES = 10
SUBOPT_FLOOR = 1e-12
# What a user sets to get the items that need f* (a report lists it once for all of them).
F_STAR_HINT = ("set `run.reference=true` (a certified reference solve, hence f*, for every problem; the "
               "default `auto` solves one only where two solver entries share a problem)")
MISSING = "-"


def present(results: pd.DataFrame, cols) -> list[str]:
    return [c for c in cols if c in results.columns]


def problem_columns(results: pd.DataFrame) -> list[str]:
    return present(results, PROBLEM_COLUMNS)


def config_columns(results: pd.DataFrame) -> list[str]:
    """The columns that identify one configuration of an entry: the problem and the solver's own
    parameters (budget keys included: a tol sweep is a sweep), not the fold or the seed."""
    params = sorted(c for c in results.columns if c.startswith("param_") and c not in _NOT_CONFIG)
    # A gathered multirun's jobs may differ only where no column shows it (a dataset's `scale`):
    # their overrides keep them apart.
    job = ["job_overrides"] if "job_overrides" in results.columns else []
    prob = problem_columns(results)
    if LAMBDA in params and "C" in prob:        # lambda beside the C it gives
        prob.insert(prob.index("C") + 1, LAMBDA)
    return prob + [c for c in params if c not in prob] + job


def has_lambda(results: pd.DataFrame) -> pd.Series:
    """Per fit, whether its problem was given by lambda (its C follows from lambda and n)."""
    if LAMBDA not in results.columns:
        return pd.Series(False, index=results.index)
    return results[LAMBDA].map(key_value) != MISSING


def point_C(results: pd.DataFrame) -> pd.Series:
    """C per fit, one per configuration: a fit given by lambda gets the mean C of the fits of its
    dataset, entry and lambda (its folds, whose training sizes differ: C = 1/(lambda n) differs in
    the 5th digit), so that a lambda point is one line, row and tick; C given as C stays itself."""
    C = pd.to_numeric(results["C"], errors="coerce") if "C" in results.columns else None
    mask = has_lambda(results)
    if C is None or not mask.any():
        return results["C"] if C is not None else pd.Series(np.nan, index=results.index)
    by = ["dataset", "solver_entry", LAMBDA] + present(results, ["param_lambda_convention", "job_overrides"])
    sub = results.loc[mask, by].apply(lambda col: col.map(key_value))
    mean = C[mask].groupby([sub[c] for c in by], sort=False, dropna=False).transform("mean")
    return C.where(~mask, mean)


def point_c(types: dict[str, str]) -> str:
    """SQL for `common.point_C`: C, but for a fit given by lambda the mean C of the fits of its
    dataset, entry and lambda (over the rows the query keeps), a compensated mean as pandas'."""
    if LAMBDA not in types:
        return '"C"'
    lam = norm(LAMBDA, types[LAMBDA])
    by = ["dataset", "solver_entry"]
    part = [q(c) for c in by] + [lam] + [norm(c, types[c]) for c in ("param_lambda_convention", "job_overrides")
                                          if c in types]
    return f"(CASE WHEN {lam} IS NOT NULL THEN favg(\"C\") OVER (PARTITION BY {', '.join(part)}) ELSE \"C\" END)"


def swept_keys(results: pd.DataFrame) -> list[str]:
    """The configuration columns (dataset aside) that take more than one value within some
    dataset x solver entry, a missing value counting as one, plus C always: what a reader needs
    to tell two rows of one entry apart. A key fixed per entry (dcd's `shrinking`, svmlight's `q`)
    is named by the entry and left out; a key a multirun varies for one entry (its loss) is in."""
    cols = [c for c in config_columns(results) if c != "dataset"]
    # C always, and lambda wherever a fit was given by it (C is then its mean over the folds).
    always = {"C"} | ({LAMBDA} if has_lambda(results).any() else set())
    if results.empty:
        return [c for c in cols if c in always]
    k = keyed(results, cols)
    varying = k.groupby(["dataset", "solver_entry"])[cols].nunique().max()
    return [c for c in cols if c in always or varying[c] > 1]


def swept_keys_sql(data) -> list[str]:
    """`swept_keys` of a ReportData's results, counted by the engine (registry.ReportData.swept):
    the distinct keyed values of every configuration column within each dataset x entry."""
    types = data.types("results")
    results = data.frame_of("results")
    cols = [c for c in config_columns(results) if c != "dataset"]
    lam = LAMBDA in types and bool(data.engine.scalar(
        f"SELECT count({norm(LAMBDA, types[LAMBDA])}) FROM {data.table('results')}"))
    always = {"C"} | ({LAMBDA} if lam else set())
    if data.count("results") == 0 or not cols:
        return [c for c in cols if c in always]
    rows = f"SELECT * REPLACE ({point_c(types)} AS \"C\") FROM {data.table('results')}" if "C" in types \
        else f"SELECT * FROM {data.table('results')}"
    counts = ", ".join(f"count(DISTINCT coalesce(CAST({norm(c, 'DOUBLE' if c == 'C' else types[c])} AS VARCHAR), '-'))"
                       f" AS n{i}" for i, c in enumerate(cols))
    most = ", ".join(f"max(n{i})" for i in range(len(cols)))
    varying = data.engine.con.execute(
        f"SELECT {most} FROM (SELECT {counts} FROM ({rows}) WHERE dataset IS NOT NULL AND solver_entry IS NOT NULL "
        f"GROUP BY dataset, solver_entry)").fetchall()[0]
    return [c for c, n in zip(cols, varying) if c in always or (n or 0) > 1]


def budget_columns(results: pd.DataFrame) -> list[str]:
    return present(results, [f"param_{k}" for k in BUDGET_KEYS])


def key_value(v):
    """A value fit to group by: NaN and None become one marker (groupby drops NaN keys)."""
    # "nan"/"None": a missing value in a column results.py wrote as strings (mixed types).
    if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v in ("nan", "None", "")):
        return MISSING
    return v


def keyed(results: pd.DataFrame, cols) -> pd.DataFrame:
    """A copy whose grouping columns hold `key_value`s, C one per configuration (`point_C`).
    Shallow: the other columns are shared, not copied (at 1,000,000 fits a deep copy of the
    results was 540 MB at the report's peak); `out[c] = ...` gives the copy a new column and
    never writes into the shared one (pandas >= 2.0)."""
    out = results.copy(deep=False)
    if "C" in cols:
        out["C"] = point_C(out)
    for c in cols:
        out[c] = key_values(out[c])
    return out


def key_values(col: pd.Series) -> pd.Series:
    """col.map(key_value), mapped once per distinct value and spread by codes: a configuration
    column holds few values (5,000 C values over 1,000,000 fits), and a Python call per row was
    most of the report's time at that size. The distinct values go through the same `map`, so
    the result's dtype is what mapping the column gives. Unhashable values (a dict): per row."""
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=False)
    except TypeError:
        return col.map(key_value)
    mapped = pd.Series(uniques, dtype=object if col.dtype == object else None).map(key_value)
    return mapped.take(codes).set_axis(col.index).rename(col.name)


def short(col: str) -> str:
    return col[len("param_"):] if col.startswith("param_") else col


def label(row, keys, lead: str = "solver_entry") -> str:
    """`smo C=1 gamma=0.1`: the entry and every swept key of a row (a dict or Series); keys
    whose value is missing (gamma of a linear fit) are left out, and so is the C of a row given
    by lambda (`pegasos lambda=0.001 k=10`: its C is a mean over folds, lambda is the point)."""
    parts = [str(row[lead])] if lead else []
    given = LAMBDA in row and key_value(row[LAMBDA]) != MISSING
    # A multirun job's overrides are already `key=value` as typed: shown as they are.
    parts += [fmt(row[k]) if k == "job_overrides" else f"{short(k)}={fmt(row[k])}" for k in keys
              if key_value(row[k]) != MISSING and not (k == "C" and given)]
    return " ".join(parts)


def point_names(results: pd.DataFrame) -> str:
    """The problem points of some fits in words: `lambda=0.001, lambda=0.01` for fits given by
    lambda, `C=0.1, C=1` for the others (each value once, not once per fold's C)."""
    mask = has_lambda(results)
    lam = sorted(pd.to_numeric(results.loc[mask, LAMBDA], errors="coerce").dropna().unique()) if mask.any() else []
    Cs = sorted(pd.to_numeric(results.loc[~mask, "C"], errors="coerce").dropna().unique())
    return ", ".join([f"lambda={fmt(float(v))}" for v in lam] + [f"C={fmt(float(c))}" for c in Cs])


def styles(n: int) -> list[dict]:
    """n distinct line styles: ten colours, then the same colours dashed, dotted, dash-dotted
    (so a legend never names two lines drawn alike); markers cycle on their own."""
    import matplotlib
    colours = matplotlib.colormaps["tab10"].colors
    dashes = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    out = []
    for i in range(n):
        cycle = i // len(colours)
        out.append({"color": colours[i % len(colours)], "linestyle": dashes[cycle % len(dashes)],
                    # Markers cycle per line (lines on top of each other stay visible), shifted
                    # once all colour x dash pairs are used, so no two lines are drawn alike.
                    "marker": markers[(i + i // (len(colours) * len(dashes))) % len(markers)]})
    return out


def certainty_floor(results: pd.DataFrame) -> pd.Series:
    """Per fit, the finest relative suboptimality its f* supports: the reference solve's relative
    duality gap (`f_star_rel_gap` where the results carry it, else |f_star_gap| / |f*|), at least
    SUBOPT_FLOOR. No table or figure shows a suboptimality below it."""
    if "f_star_rel_gap" in results.columns:
        rel = pd.to_numeric(results["f_star_rel_gap"], errors="coerce").abs()
    else:
        rel = (pd.to_numeric(results["f_star_gap"], errors="coerce").abs()
               / pd.to_numeric(results["f_star"], errors="coerce").abs())
    return rel.fillna(SUBOPT_FLOOR).clip(lower=SUBOPT_FLOOR)


def floor_sql(types: dict[str, str]) -> str:
    """`certainty_floor` in SQL over a table with these columns."""
    if "f_star_rel_gap" in types:
        rel = "abs(num(f_star_rel_gap))"
    elif "f_star_gap" in types and "f_star" in types:
        rel = "nn(abs(num(f_star_gap)) / abs(num(f_star)))"
    else:
        rel = "NULL"
    return f"greatest(coalesce({rel}, {SUBOPT_FLOOR!r}), {SUBOPT_FLOOR!r})"


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return ""
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.3e}"
        return f"{v:.4g}"
    if isinstance(v, (np.integer,)):
        return str(int(v))
    return str(v)


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


# A table wider than this many columns is split into parts of at most this many, each repeating
# the columns that name its rows: the 21-column time-to-target table ran off the page.
MAX_TABLE_COLUMNS = 11
_ROW_NAMES = {"dataset", "solver_entry", "job_overrides", "fold", "start"}


def row_name_columns(df: pd.DataFrame) -> list[str]:
    """The leading columns that name a row (dataset, entry, problem and swept keys)."""
    out = []
    for c in map(str, df.columns):
        if c in _ROW_NAMES or c in PROBLEM_COLUMNS or c.startswith("param_") or c.startswith("solver_entry"):
            out.append(c)
        else:
            break
    return out


def split_wide(df: pd.DataFrame, max_cols: int = MAX_TABLE_COLUMNS) -> list[pd.DataFrame]:
    """df, or parts of it of at most max_cols columns, each led by the row-naming columns."""
    if df is None or df.shape[1] <= max_cols:
        return [df]
    names = row_name_columns(df)
    rest = [c for c in df.columns if str(c) not in names]
    step = max(3, max_cols - len(names))
    return [df[names + rest[i:i + step]] for i in range(0, len(rest), step)]


_TAG = re.compile(r"<(?=[A-Za-z/!?])")


def md_text(text: str) -> str:
    """Text for Markdown, a user's string in it shown as text: a `<` that would open an HTML tag
    (CommonMark's raw HTML: `<` then a letter, `/`, `!` or `?`) written as `&lt;`, so a dataset
    named `<img src=x onerror=...>` is never markup in a viewer; `<=` and `< 1` stay as they are.
    Inside a code span (between backticks, where Markdown shows `&lt;` as it is typed and parses
    no HTML) nothing is changed: `tables/<name>.csv` reads as written."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:          # an unpaired backtick opens no code span: all of it is text
        return _TAG.sub("&lt;", str(text))
    return "`".join(p if i % 2 else _TAG.sub("&lt;", p) for i, p in enumerate(parts))


def markdown_table(df: pd.DataFrame) -> str:
    if df is None or df.empty:
        return "_(none)_\n"
    cols = [md_text(short(str(c))).replace("|", "\\|") for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(md_text(fmt(v)).replace("|", "\\|").replace("\n", " ") for v in row) + " |")
    return "\n".join(lines) + "\n"


def html_table(df: pd.DataFrame) -> str:
    import html
    if df is None or df.empty:
        return "<p><em>(none)</em></p>"
    head = "".join(f"<th>{html.escape(short(str(c)))}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
