"""The tables are written by DuckDB from the shard files (`results.tables.write_tables`), never
through a frame of every fit: they must be, file for file, those pandas built one row per record
and wrote with `DataFrame.to_parquet` (tests/pipeline/rowwise_tables.py): column names, Arrow
types and pandas' metadata, the rows' order, every value and every missing one, for every kind of
record and run, since the report, the papers and users' notebooks read them."""
import json
import math
import re

import pandas as pd
import pyarrow.parquet as pq
import pytest

from pipeline.engine import sink
from pipeline.experiment.config import compose
from pipeline.results import columns, tables
from pipeline.run import run

from . import rowwise_tables

TABLES = ("results.parquet", "traces.parquet", "timing.parquet", "timing_traces.parquet", "models.parquet")


def _assert_same_tables(run_dir, keys=None, reference_of=None):
    """write_tables' files are the row-by-row builder's, byte for byte in what they hold (schema
    with pandas' metadata, and every column); returns what write_tables counted."""
    old_dir = run_dir / "rowwise"
    old = rowwise_tables.write(run_dir, old_dir, keys, reference_of)
    written = tables.write_tables(run_dir, keys, reference_of)
    assert {n for n in TABLES if (run_dir / n).exists()} == set(old)
    for name in old:
        new_t, old_t = pq.read_table(run_dir / name), pq.read_table(old_dir / name)
        assert new_t.schema.equals(old_t.schema, check_metadata=True), (name, new_t.schema, old_t.schema)
        for column in old_t.column_names:
            assert new_t.column(column).equals(old_t.column(column)), (name, column)
        pd.testing.assert_frame_equal(pd.read_parquet(run_dir / name), pd.read_parquet(old_dir / name))
    assert (written.results, written.points) == (len(old["results.parquet"]), len(old["traces.parquet"]))
    assert written.timing == len(old.get("timing.parquet", ()))
    return pd.read_parquet(run_dir / "results.parquet")


def _spec(key, C=1.0, fold=0, **problem):
    return {"key": key, "kind": "fit", "data": {"entry": "toy", "name": "toy_blobs", "fingerprint": "ab" * 8,
                                                "cv": {"kind": "kfold", "folds": 3}},
            "fold": fold, "seed": 7 + fold, "solver_entry": "dcd", "solver": "dcd", "solver_version": "5",
            "family": "linear", "problem": {"loss": "hinge", "intercept": "none", "C": C, **problem},
            "solver_params": {"shrinking": True}, "task": {}, "grid_point": {"C": C}, "reference_key": None}


def _fit(key, spec, **fields):
    return {"key": key, "kind": "fit", "status": "converged", "error": None, "n_iter": 5, "fit_time_s": 0.01,
            "primal_objective": 2.0, "dual_objective": 1.9, "duality_gap": 0.1, "kkt_violation": 1e-3,
            "train_accuracy": 0.9, "test_accuracy": 0.8, "n_sv": 4, "n_train": 40, "n_test": 20,
            "n_features": 2, "C": spec["problem"].get("C", 1.0), "trace": [[1, 0.1, 2.0, 1.0, 1.0]],
            "trace_extra": [{"test_error": 0.2}], "info": {"passes": 3, "b_range": [0.0, 1.0]},
            "task_time_s": 0.02, "env_host": "h", "env_blas_threads": None, "env_peak_rss_mb": 100.0,
            "spec": spec, **fields}


def _records():
    """Fits of every kind a run writes: plain, warm-started, failed (few fields), weighted, on
    held-out rows, multiclass, given by lambda, with a kernel's gamma of mixed types, one with
    its f* from a reference (and one whose reference failed), and the references themselves."""
    ref_ok = {"key": "ref-1", "kind": "reference", "status": "converged", "error": None, "f_star": 1.9,
              "f_star_gap": 1e-9, "f_star_kkt": 0.0, "f_star_solver": "dcd", "n_iter": 50, "C": 1.0,
              "spec": {"key": "ref-1", "kind": "reference"}}
    ref_bad = {"key": "ref-2", "kind": "reference", "status": "error", "error": "ValueError: x",
               "spec": {"key": "ref-2", "kind": "reference"}}
    out = [ref_ok, ref_bad]
    out.append(_fit("fit-a", _spec("fit-a")))
    out.append(_fit("fit-b", {**_spec("fit-b", C=2.0), "reference_key": "ref-1"}, warm_from="fit-a"))
    out.append({"key": "fit-c", "kind": "fit", "status": "error", "error": "MemoryError: planted",
                "spec": {**_spec("fit-c", C=math.inf), "reference_key": "ref-2"}})
    held = _spec("fit-d", fold=1, class_weight={"1": 2.0, "-1": 1.0})
    held["solver_params"] = {"shrinking": True, "n_heldout": 1}    # a parameter named as a column this row has
    out.append(_fit("fit-d", held, n_heldout=10, heldout_accuracy=0.7, confusion_heldout=[[3, 1], [2, 4]]))
    out.append(_fit("fit-e", _spec("fit-e", fold=2, class_weight="balanced"), n_classes=3, multi_class="ovr",
                    confusion_test=[[1, 0, 0], [0, 1, 0], [0, 0, 1]], info={"n_binary": 3}))
    lam = _spec("fit-f")
    lam["problem"] = {"loss": "hinge", "intercept": "free", "lambda": 0.5, "lambda_convention": "svmmaj"}
    lam["grid_point"] = {"lambda": 0.5}
    out.append(_fit("fit-f", lam, info={"passes": 2.5, "b_range": None}))
    del out[-1]["C"]        # no C at all (a problem given by lambda): NaN, sorted last
    for key, gamma in (("fit-g", "scale"), ("fit-h", 0.5)):
        spec = _spec(key, kernel="rbf", gamma=gamma)
        spec["solver_params"] = {"cache_mb": 64 if key == "fit-g" else "auto", "n_heldout": 1}
        out.append(_fit(key, spec, trace=[], trace_extra=[], model={"b": 0.5, "w": [1.0, 2.0], "support": None,
                                                                  "alpha": None, "X": None, "y": None}))
    return out


def test_the_tables_are_the_row_by_row_tables(tmp_path):
    records = _records()
    sink.write_shard(tmp_path, records[:4])
    sink.write_shard(tmp_path, records[4:])
    # A retried fit in a later generation: its newest record is the one in the tables.
    sink.write_shard(tmp_path, [_fit("fit-a", _spec("fit-a"), n_iter=9)])
    _assert_same_tables(tmp_path, ["fit-a", "fit-b", "fit-e", "fit-g", "ref-1"])
    results = _assert_same_tables(tmp_path)
    assert results.set_index("key").loc["fit-a", "n_iter"] == 9
    assert {"class_weight", "n_heldout", "confusion_test", "param_lambda", "param_cache_mb", "info_b_range"} <= set(results)
    # fit-c failed and ref-2 (a reference) failed: the run's closing line counts both.
    written = tables.write_tables(tmp_path)
    assert (written.failed, written.others) == (2, 0)
    written = tables.write_tables(tmp_path, ["fit-a", "fit-c", "ref-1"])
    assert (written.results, written.failed, written.others) == (2, 1, 7)


TINY = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=80", "cv.folds=2", "run.progress=false",
        "cluster=sequential", "solvers=[dcd,liblinear]", "grid.C=[0.1,1]", "report.figures=false"]
# Runs of every kind a user makes, each its own tables' shapes: references (f*), kept models and
# timing fits (a trace and a ladder); a holdout split without traces whose ladders are censored
# at the budget; repeated splits; k-fold with a held-out test set; a multiclass fit (confusion
# matrices); a halving search's rounds.
RUNS = {
    "kfold": [*TINY, "run.reference=true", "run.keep_models=true"],
    "holdout": [*TINY, "cv=holdout", "run.trace=false", "run.timing_budget_s=1e-4"],
    "repeated": [*TINY, "cv=repeated", "cv.rounds=2", "run.timing=false"],
    "kfold_test": [*TINY, "cv=kfold_test", "run.reference=true"],
    "multiclass": ["datasets=[toy_blobs]", "solvers=[dcd]", "datasets.toy_blobs.builder=iris_test",
                   "datasets.toy_blobs.scale=standard", "cluster=sequential", "cv.folds=3", "run.progress=false",
                   "solvers.dcd.grid.C=[1.0]", "+solvers.dcd.params.multi_class=ovr", "report.figures=false"],
    "halving": ["datasets=[breast_cancer]", "datasets.breast_cancer.max_rows=120", "solvers=[smo]",
                "solvers.smo.params.kernel=rbf", "solvers.smo.grid.C=[0.1,1,10]", "solvers.smo.grid.gamma=[0.01,0.1]",
                "cv.folds=2", "run.trace=false", "run.reference=false", "run.progress=false", "cluster=sequential",
                "search=halving", "search.resource=tol", "report.figures=false"],
}


@pytest.mark.parametrize("kind", list(RUNS))
def test_the_tables_of_each_kind_of_run_are_the_row_by_row_tables(store, tmp_path, kind):
    if kind == "multiclass":
        from sklearn.datasets import load_iris
        from pipeline.data.store import exists, write_dataset
        if not exists(store, "iris_test"):
            X, y = load_iris(return_X_y=True)
            write_dataset(store, "iris_test", X, y, source={"test": "sklearn load_iris"})
    out = run(compose([f"store.root={store}", *RUNS[kind]]), tmp_path / "run")
    results = _assert_same_tables(tmp_path / "run")
    pd.testing.assert_frame_equal(out["results"], results)
    present = {n for n in TABLES if (tmp_path / "run" / n).exists()}
    expected = {"kfold": set(TABLES), "holdout": set(TABLES) - {"models.parquet"},
                "kfold_test": set(TABLES) - {"models.parquet"}}.get(kind, {"results.parquet", "traces.parquet"})
    assert present == expected
    columns_of = {"kfold": {"f_star", "info_n_updates"}, "kfold_test": {"n_heldout", "heldout_accuracy"},
                  "multiclass": {"n_classes", "confusion_test"}, "halving": {"search_round"}}
    assert columns_of.get(kind, set()) <= set(results)
    if kind == "kfold":
        assert results["f_star"].notna().all()
        # run.log says where the command's seconds went, phase by phase, adding up to the total.
        timing = next(ln for ln in (tmp_path / "run" / "run.log").read_text().splitlines() if "timing: " in ln)
        phases = dict(re.findall(r"(?<=[:,] )(plan|execute|tables|report) ([\d.]+) s", timing))
        total = float(re.search(r"; total ([\d.]+) s before exit", timing).group(1))
        assert set(phases) == {"plan", "execute", "tables", "report"} and sum(map(float, phases.values())) <= total + 0.2
    if kind == "holdout":
        assert len(pd.read_parquet(tmp_path / "run" / "traces.parquet")) == 0
        assert pd.read_parquet(tmp_path / "run" / "timing.parquet")["info_censored_at_s"].notna().any()


def _assert_rowwise(run_dir, keys=None):
    return _assert_same_tables(run_dir, keys)


def test_shards_of_different_columns_and_generations_are_the_row_by_row_tables(tmp_path):
    """Shards whose columns differ (a field one shard lacks, ints in one and floats in another,
    a field typed in one and JSON in another, a bool some records lack), records lacking
    values, and a resumed run's later generations: the newest record of each key, as the
    row-by-row builder reads them."""
    ok = [_fit(f"fit-{i}", _spec(f"fit-{i}", C=float(i + 1)), env_gpu=bool(i % 2)) for i in range(4)]
    ok[1].pop("env_gpu")
    ok[2]["info"] = None                         # info None: no info_* values in that row
    sink.write_shard(tmp_path, ok[:2])
    # A shard without env_host or trace_extra, a float n_iter, an int C and an error text:
    # its columns are typed differently from the first shard's.
    other = [_fit("fit-x", _spec("fit-x", C=3), n_iter=7.5, C=3), _fit("fit-y", _spec("fit-y", C=4), C=4)]
    for r in other:
        del r["env_host"], r["trace_extra"]
    other[1].update(status="error", error="ValueError: planted")
    sink.write_shard(tmp_path, other + ok[2:])
    # All failed (no numbers at all): `error` is a string column here, JSON text in the others.
    sink.write_shard(tmp_path, [{"key": "fit-z", "kind": "fit", "status": "error", "error": "MemoryError: x",
                                    "spec": _spec("fit-z")}])
    # A later generation: fit-0 retried (its newest record wins), fit-9 new.
    sink.write_shard(tmp_path, [_fit("fit-0", _spec("fit-0"), n_iter=11), _fit("fit-9", _spec("fit-9"))])
    assert len({tables.shard_generation(p) for p in tables.shard_files(tmp_path)}) > 1
    results = _assert_rowwise(tmp_path)
    by_key = results.set_index("key")
    assert by_key.loc["fit-0", "n_iter"] == 11 and len(results) == 8
    assert by_key.loc["fit-y", "error"] == "ValueError: planted" and by_key.loc["fit-z", "status"] == "error"
    _assert_rowwise(tmp_path, {"fit-0", "fit-x", "fit-z"})
    _assert_rowwise(tmp_path, set())
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == 0


def test_many_distinct_json_texts_are_the_row_by_row_tables(tmp_path):
    """A field with a JSON text per fit (the seed, the fit a path warm-started from: a path's
    first fit has None) is read as one typed column, not text by text: still the same table."""
    records = []
    for i in range(1500):
        spec = _spec(f"fit-{i:05d}", C=1.0 + i, fold=i % 3)
        spec["seed"] = 10**9 + 7 * i
        records.append(_fit(f"fit-{i:05d}", spec, warm_from=None if i % 500 == 0 else f"fit-{i - 1:05d}",
                            info={"passes": i % 7}))
    sink.write_shard(tmp_path, records[:800])
    sink.write_shard(tmp_path, records[800:])
    results = _assert_rowwise(tmp_path)
    assert results["seed"].dtype == "int64" and results["warm_from"].isna().sum() == 3


def _results(run_dir, keys=None, reference_of=None):
    tables.write_tables(run_dir, keys, reference_of)
    return pd.read_parquet(run_dir / "results.parquet")


def test_each_fit_takes_its_f_star_from_the_reference_the_plan_gives_it(tmp_path):
    """`reference_of` (the current plan's fit -> reference) overrides the reference a fit's
    shard names: a resumed run whose reference changed gives the reused fit the new f*."""
    records = _records()
    records.append({"key": "ref-3", "kind": "reference", "status": "converged", "error": None, "f_star": 1.5,
                    "f_star_gap": 1e-6, "f_star_kkt": 0.0, "f_star_solver": "smo", "n_iter": 9, "C": 2.0,
                    "spec": {"key": "ref-3", "kind": "reference"}})
    sink.write_shard(tmp_path, records)
    stored = _results(tmp_path).set_index("key")
    planned = _results(tmp_path, reference_of={"fit-b": "ref-3", "fit-a": None}).set_index("key")
    assert stored.loc["fit-b", "f_star"] == 1.9 and planned.loc["fit-b", "f_star"] == 1.5
    assert planned.loc["fit-b", "f_star_solver"] == "smo"
    assert planned.loc["fit-b", "rel_suboptimality"] == pytest.approx((2.0 - 1.5) / 1.5)
    assert math.isnan(planned.loc["fit-a", "f_star"])
    # Fits the plan does not name keep the reference their shard names.
    kept = _assert_same_tables(tmp_path, reference_of={"fit-a": None}).set_index("key")
    assert kept.loc["fit-b", "f_star"] == 1.9 and kept.loc["fit-b", "f_star_solver"] == "dcd"


def test_a_json_text_is_parsed_once_however_many_fits_share_it(tmp_path, monkeypatch):
    """The mechanism that makes the tables of 1,000,000 fits take seconds: a JSON text is parsed
    once per distinct text (the spec's, the info), and a text per fit that is an integer or a
    plain string (a seed, a warm start) not at all: 2,000 fits on 10 C values in 4 folds are
    a few dozen parses, where a parse per fit would be 2,000 for each of the spec's fields."""
    records = []
    for i in range(2000):
        spec = _spec(f"fit-{i:05d}", C=float(i % 10), fold=i % 4)
        spec["seed"] = 10**9 + i
        records.append(_fit(f"fit-{i:05d}", spec, warm_from=f"fit-{i - 1:05d}" if i else None,
                            info={"passes": i % 3}, trace=[], trace_extra=[]))
    sink.write_shard(tmp_path, records)
    parsed = []
    counting = type("json", (), {"loads": staticmethod(lambda t: parsed.append(t) or json.loads(t)),
                                 "dumps": staticmethod(json.dumps)})
    monkeypatch.setattr(columns, "json", counting)
    results = _results(tmp_path)
    assert len(results) == 2000 and results["seed"].nunique() == 2000
    assert len(parsed) < 100, f"{len(parsed)} JSON texts parsed for 2,000 fits"


def test_a_failed_write_leaves_the_tables_before_it_whole(tmp_path, monkeypatch):
    """Every table is written to a temporary file and all are renamed into place only once all
    are written: a write that fails part-way (a full disk, an interrupt) leaves each table of the
    run before as it was, and no temporary file behind."""
    records = _records()
    sink.write_shard(tmp_path, records)
    tables.write_tables(tmp_path)
    before = {n: (tmp_path / n).read_bytes() for n in TABLES if (tmp_path / n).exists()}
    assert {"results.parquet", "traces.parquet", "models.parquet"} <= set(before)
    # A later fit, then a disk that fills while the traces are written (after the results).
    sink.write_shard(tmp_path, [_fit("fit-new", _spec("fit-new", C=5.0))])
    real = tables._write_traces

    def full(src, timed, path):
        real(src, timed, path)
        raise OSError(28, "No space left on device (planted)")
    monkeypatch.setattr(tables, "_write_traces", full)
    with pytest.raises(tables.TablesFailed, match=r"^the tables of .* were not written \(OSError: .*planted.*\); "
                                                  r"every fit is kept in its shards .* run the same command again"):
        tables.write_tables(tmp_path)
    assert {n: (tmp_path / n).read_bytes() for n in TABLES if (tmp_path / n).exists()} == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(tables, "_write_traces", real)
    assert "fit-new" in set(_results(tmp_path)["key"])



def test_an_engine_out_of_its_memory_is_one_line_and_loses_nothing(tmp_path, monkeypatch):
    """DuckDB out of its pool (a run traced at every pass ran out of a 256 MB pool): the tables
    before stay whole and the failure is one line naming the engine's error, not a traceback."""
    from pipeline.results import source
    sink.write_shard(tmp_path, _records())
    tables.write_tables(tmp_path)
    before = {n: (tmp_path / n).read_bytes() for n in TABLES if (tmp_path / n).exists()}
    monkeypatch.setattr(source, "MEMORY_MB", 1)
    monkeypatch.setattr(source, "BATCH_ROWS", 1 << 20)
    sink.write_shard(tmp_path, [_fit(f"fit-{i}", _spec(f"fit-{i}", C=float(i))) for i in range(3000)])
    with pytest.raises(tables.TablesFailed, match=r"OutOfMemoryException.*run the same command again with hydra.run.dir=.* to write them") as exc:
        tables.write_tables(tmp_path)
    assert "\n" not in str(exc.value)
    assert {n: (tmp_path / n).read_bytes() for n in TABLES if (tmp_path / n).exists()} == before


@pytest.mark.parametrize("value", [None, True, False, 0, 1, -2, 0.0, 1e-300, math.nan, math.inf, "", " ", "0", '"',
                                   [], [0], [[]], {}, {"a": 1}, {"": None}, list(range(40))])
def test_a_json_fields_truth_is_pythons(value):
    """`Field.truthy_sql` on a JSON field's text as a shard holds it (`json.dumps`) is `bool` of
    its value: 0, None, "", [] and {} false; NaN and " " true; a lacking value false."""
    import duckdb

    from pipeline.results.source import Field
    truth = Field("v", True, None).truthy_sql()
    con = duckdb.connect()
    assert con.execute(f"SELECT {truth} FROM (SELECT ? AS v)", [json.dumps(value)]).fetchone()[0] is bool(value)
    assert con.execute(f"SELECT {truth} FROM (SELECT NULL::VARCHAR AS v)").fetchone()[0] is False


def test_kept_models_of_many_megabytes_are_written_in_a_small_pool(tmp_path, monkeypatch):
    """A paper's run kept 222 models of up to 16 MB of JSON each (a linear fit's alpha at RCV1's
    size): sorting those texts, testing them with DuckDB's JSON functions, or reading their column
    into its pool at all ran out of it. Models of 1.2 MB each, 36 MB in all, in a pool of 32 MB and batches of 5 MB: every
    model is written, in key order, as the row-by-row tables write them."""
    from pipeline.results import source
    alpha = [round(0.001 * i, 6) for i in range(100_000)]
    records = [_fit(f"fit-{i:02d}", _spec(f"fit-{i:02d}", C=float(i + 1)),
                    model={"b": float(i), "w": [1.0, 2.0], "support": None, "alpha": alpha, "X": None, "y": None})
               for i in reversed(range(30))]
    sink.write_shard(tmp_path, records[:15])
    sink.write_shard(tmp_path, records[15:])
    monkeypatch.setattr(source, "MEMORY_MB", 32)
    monkeypatch.setattr(tables, "MODEL_BYTES", 5 * 2**20)
    _assert_same_tables(tmp_path)
    models = pd.read_parquet(tmp_path / "models.parquet")
    assert list(models["key"]) == [f"fit-{i:02d}" for i in range(30)]
    assert list(models["b"]) == [float(i) for i in range(30)] and len(models["alpha"].iloc[-1]) == 100_000


def test_a_command_counts_its_tables_and_reads_no_frame_back(tmp_path, monkeypatch):
    """run(frames=False), as `python -m pipeline` calls it: the closing lines take the tables'
    counts from write_tables, and no frame of the results is read back (at 1,000,000 fits the
    results alone are about 800 MB as a frame); frames=True reads them back for the API."""
    import pipeline.run as run_module
    read = []
    real = run_module._read_frames
    monkeypatch.setattr(run_module, "_read_frames", lambda run_dir: read.append(run_dir) or real(run_dir))
    base = [f"store.root={tmp_path / 'store'}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=60",
            "solvers=[dcd]", "grid.C=[1.0]", "cv.folds=2", "cluster=sequential", "run.progress=false",
            "report.figures=false"]
    out = run(compose(base), tmp_path / "command", frames=False)
    assert "results" not in out and out["failed"] == 0 and read == []
    assert "results.parquet (2 rows), traces: " in (tmp_path / "command" / "run.log").read_text()
    out = run(compose(base), tmp_path / "api")
    assert len(read) == 1 and len(out["results"]) == 2
    pd.testing.assert_frame_equal(out["results"], pd.read_parquet(tmp_path / "api" / "results.parquet"))
