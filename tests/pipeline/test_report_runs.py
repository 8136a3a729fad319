"""The report over real runs: solver info and extra trace quantities reach the Parquet tables,
`--compare` matches two runs' problems, and a Hydra multirun folder is gathered into one report."""
import json
import shutil

import pandas as pd
import pytest

from pipeline.experiment.config import compose, validate
from pipeline.report import main as report_main
from pipeline.run import run

TINY = ["datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=60", "cv.folds=2", "run.progress=false", "run.reference=true",
        "cluster=sequential"]


@pytest.fixture(scope="module")
def svmlight_run(store, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("svmlight")
    cfg = compose([f"store.root={store}", *TINY, "solvers=[svmlight,dcd]", "solvers.svmlight.grid.C=[1]",
                   "solvers.dcd.grid.C=[0.1,1]", "run.trace_test_error=true", "run.keep_models=true"])
    run(cfg, run_dir)
    return run_dir


def test_solver_info_reaches_results_parquet(svmlight_run):
    res = pd.read_parquet(svmlight_run / "results.parquet")
    sl = res[res["solver"] == "svmlight"]
    # Scalars as they are, lists as JSON; f(alpha_0), the proximal steps and the b rule survive.
    for col in ("info_f_alpha0", "info_n_proximal", "info_b_rule", "info_q"):
        assert col in res.columns and sl[col].notna().all(), col
    assert set(sl["info_b_rule"]) <= {"free", "bound_only"}
    assert res.loc[res["solver"] == "dcd", "info_n_updates"].gt(0).all()
    if "info_b_interval" in res.columns:
        for v in res["info_b_interval"].dropna():
            assert len(json.loads(v)) == 2
    assert "info_solver" not in res.columns       # already the solver column


def test_trace_extras_and_models(svmlight_run):
    res = pd.read_parquet(svmlight_run / "results.parquet")
    tr = pd.read_parquet(svmlight_run / "traces.parquet")
    # run.trace_test_error: the test error of the current model at every point of every fit.
    assert tr["test_error"].between(0, 1).all()
    dcd = tr[tr["key"].isin(res.loc[res["solver"] == "dcd", "key"])]
    # Noted at every scheduled point; the closing point (Recorder.close, off the schedule) has none.
    last = dcd.groupby("key")["iteration"].transform("max") == dcd["iteration"]
    assert dcd.loc[~last, "w_change"].notna().all() and (dcd.loc[~last, "n_active"] > 0).all()
    sl = tr[tr["key"].isin(res.loc[res["solver"] == "svmlight", "key"])]
    assert sl["m_minus_M"].notna().any() and sl["n_sv"].notna().any()
    # The last trace point's test error is the fit's own.
    for r in res.itertuples():
        last = tr[tr["key"] == r.key].sort_values("iteration").iloc[-1]
        assert last["test_error"] == pytest.approx(1 - r.test_accuracy)
    models = pd.read_parquet(svmlight_run / "models.parquet")
    assert set(models["key"]) == set(res["key"])
    assert models["X"].map(len).eq(res.set_index("key").loc[models["key"], "n_train"].to_numpy()).all()
    md = (svmlight_run / "report.md").read_text()
    assert "Test error against iterations" in md and "![Active points" in md


def test_default_keys_unchanged_by_the_new_run_options(store, tmp_path):
    """trace_test_error/keep_models enter a spec only when set: other runs' shards stay valid."""
    from pipeline.experiment.plan import build_plan
    from pipeline.run import materialise_datasets
    base = compose([f"store.root={store}", *TINY, "solvers=[dcd]"])
    on = compose([f"store.root={store}", *TINY, "solvers=[dcd]", "run.trace_test_error=true"])
    off = compose([f"store.root={store}", *TINY, "solvers=[dcd]", "run.trace_test_error=false"])
    labels = materialise_datasets(validate(base))
    k = lambda cfg: set(build_plan(validate(cfg), labels).fits)   # noqa: E731
    assert k(base) == k(off) and k(base).isdisjoint(k(on))


@pytest.fixture(scope="module")
def two_runs(store, tmp_path_factory):
    """Two tiny runs sharing one problem (dcd at C=1), as two jobs of a Hydra multirun folder."""
    sweep = tmp_path_factory.mktemp("multirun")
    for job, Cs, loss in (("0", "[0.1,1]", "squared_hinge"), ("1", "[1]", "hinge")):
        cfg = compose([f"store.root={store}", *TINY, "solvers=[dcd]", f"solvers.dcd.grid.C={Cs}",
                       f"solvers.dcd.params.loss={loss}"])
        run(cfg, sweep / job)
        (sweep / job / ".hydra").mkdir(exist_ok=True)
        (sweep / job / ".hydra" / "overrides.yaml").write_text(f"- solvers.dcd.params.loss={loss}\n")
    return sweep


@pytest.mark.slow
def test_multirun_folder_gathers_into_one_report(two_runs, tmp_path):
    sweep = tmp_path / "sweep"
    shutil.copytree(two_runs, sweep)
    assert report_main([str(sweep)]) == 0
    res = pd.read_parquet(sweep / "results.parquet")
    jobs = {j: pd.read_parquet(sweep / j / "results.parquet") for j in ("0", "1")}
    assert len(res) == sum(len(r) for r in jobs.values()) and set(res["job"]) == {"0", "1"}
    assert set(res["job_overrides"]) == {"solvers.dcd.params.loss=squared_hinge", "solvers.dcd.params.loss=hinge"}
    md = (sweep / "report.md").read_text()
    assert "Gathered from 2 jobs" in md
    # One entry, two losses: the loss is a swept key of every table.
    best = md.split("## Best parameters")[1].split("##")[0]
    assert "| loss |" in best.replace("| C | loss |", "| loss |") and "hinge" in best
    # Gathering again (the sweep folder now has its own results.parquet) gives the same table.
    assert report_main([str(sweep)]) == 0
    pd.testing.assert_frame_equal(res, pd.read_parquet(sweep / "results.parquet"))


@pytest.mark.slow
def test_compare_matches_two_runs_on_their_shared_problems(two_runs, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(two_runs / "0", a)
    shutil.copytree(two_runs / "0", b)
    assert report_main([str(a), "--compare", str(b)]) == 0
    md = (a / "report.md").read_text()
    section = md.split(f"## Compared with {b.name}")[1]
    # The table is wider than a page: parts, each naming its rows; the ratio is in the last part.
    parts = [[line for line in part.splitlines() if line.startswith("| toy_blobs")]
             for part in section.split("| dataset |")[1:]]
    assert all(len(rows) == 2 for rows in parts)           # C=0.1 and C=1, folds matched
    assert "fit_time_ratio_other_vs_this" in section.split("| dataset |")[-1].splitlines()[0]
    assert all(line.rstrip(" |").endswith("| 1") for line in parts[-1])   # the same run: ratio 1
    # Runs without a shared problem (other loss): an empty comparison, said so.
    assert report_main([str(a), "--compare", str(two_runs / "1")]) == 0
    assert "_(none)_" in (a / "report.md").read_text().split("## Compared with")[1]


def test_compare_never_puts_a_warm_fit_beside_a_cold_one(two_runs, tmp_path):
    """dcd's C = 1 points start warm in one run (its C path) and cold in the other (its results as
    run.warm_start=false records them): only the cold C = 0.1 points are matched."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(two_runs / "0", a)
    shutil.copytree(two_runs / "0", b)
    res = pd.read_parquet(a / "results.parquet")
    assert set(res.loc[res["C"] == 1.0, "start"]) == {"warm"} and set(res.loc[res["C"] == 0.1, "start"]) == {"cold"}
    res.assign(start="cold", start_from=None, warm_from=None).to_parquet(b / "results.parquet")
    assert report_main([str(a), "--compare", str(b)]) == 0
    section = (a / "report.md").read_text().split(f"## Compared with {b.name}")[1]
    rows = [line for line in section.splitlines() if line.startswith("| toy_blobs")]
    assert rows and all("| 0.1 |" in line and "| cold |" in line for line in rows)


def test_baseline_from_the_run_config_or_the_command_line(two_runs, tmp_path):
    from pipeline.experiment.config import ConfigError, validate
    with pytest.raises(ConfigError, match="report.baseline"):
        validate(compose(["report.baseline=nosuch"]))
    run_dir = tmp_path / "r"
    shutil.copytree(two_runs / "0", run_dir)
    (run_dir / "config.yaml").write_text("report:\n  baseline: dcd\n")
    assert report_main([str(run_dir)]) == 0
    md = (run_dir / "report.md").read_text()
    assert "Ratios are taken against `dcd`" in md and "| baseline | ratio |" in md
    assert report_main([str(run_dir), "--baseline", "nosuch"]) == 0     # the report says why, not a crash
    assert "report.baseline='nosuch' is not a solver entry" in (run_dir / "report.md").read_text()


def test_report_formats_and_figures_options(two_runs, tmp_path):
    """report.formats adds a PDF beside each PNG (and a rebuild without it removes them: no stale
    PDF of another build); report.figures=false writes the tables only, no figure nor interactive
    page, and says so once under Not drawn; bad values are refused naming the key."""
    from pipeline.experiment.config import ConfigError
    for bad in ("report.formats=[pdf]", "report.formats=[png,svg]", "report.figures=maybe"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            validate(compose([bad]))
    run_dir = tmp_path / "r"
    shutil.copytree(two_runs / "0", run_dir)
    (run_dir / "config.yaml").write_text("report:\n  formats: [png, pdf]\n")
    assert report_main([str(run_dir)]) == 0
    pngs = sorted(p.stem for p in (run_dir / "figures").glob("*.png"))
    assert pngs and pngs == sorted(p.stem for p in (run_dir / "figures").glob("*.pdf"))
    assert "[PDF](figures/" in (run_dir / "report.md").read_text()
    (run_dir / "config.yaml").write_text("report:\n  figures: null\n")
    assert report_main([str(run_dir)]) == 0
    assert not list((run_dir / "figures").glob("*.pdf")) and sorted(p.stem for p in (run_dir / "figures").glob("*.png")) == pngs
    assert "[PDF]" not in (run_dir / "report.md").read_text()
    (run_dir / "config.yaml").write_text("report:\n  figures: false\n")
    assert report_main([str(run_dir)]) == 0
    md = (run_dir / "report.md").read_text()
    assert not list((run_dir / "figures").glob("*.png")) and not (run_dir / "interactive.html").exists()
    assert "figures are off in this run (report.figures=false); to get it, set `report.figures=true`" in md
    assert "## Certificates" in md or "| dataset" in md                    # the tables are still there


@pytest.mark.slow
def test_the_report_imports_can_be_paid_ahead_and_only_when_figures_are_drawn():
    """`report.preload` (run.py calls it in a thread while the workers warm up) imports what the
    figures and the interactive page draw with; with figures off it imports nothing."""
    import subprocess
    import sys
    probe = ("import sys; from pipeline.report import preload; preload({}); "
             "print(*[m in sys.modules for m in ('matplotlib.pyplot', 'plotly.io', 'PIL.Image')])")
    out = [subprocess.run([sys.executable, "-c", probe.format(f)], capture_output=True, text=True, check=True).stdout.split()
           for f in (True, False)]
    assert out == [["True"] * 3, ["False"] * 3], out
