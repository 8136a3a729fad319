"""The report of a large sweep stays bounded, and never takes its run down:

- over a few thousand tiny problems, `python -m pipeline.report` (a real subprocess) writes a
  bounded number of figure files in a bounded peak memory, and a page of bounded size;
- no figure is left open by a report (every one closed after it is saved);
- a report that fails (an exception, or its processes killed past their memory) leaves the run's
  results whole, says so in one line with the command that rebuilds it, and the rebuild works;
- the engine's summaries equal a pandas oracle (the report's tables as pandas computed them),
  digit for digit, on small runs with missing values, lambda points and mixed kinds.
"""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.report.build import ReportFailed, build_bounded, sections
from pipeline.report.registry import ReportData

from .report_data import folds, rows, traces_for

ROOT = Path(__file__).resolve().parents[2]


def _write_run(run_dir: Path, results: pd.DataFrame, traces: pd.DataFrame) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    results.to_parquet(run_dir / "results.parquet", index=False)
    traces.to_parquet(run_dir / "traces.parquet", index=False)
    return run_dir


def _sweep(n_c: int, n_folds: int = 2, gamma=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """dcd over n_c C values (and gamma values: a map), n_folds folds: n_c problems, each fit a
    short trace; made in columns, not a dict a fit (a few thousand problems in well under a second)."""
    Cs = np.geomspace(1e-3, 1e2, n_c)
    gammas = [np.nan] if gamma is None else list(gamma)
    grid = [(C, g, f) for C in Cs for g in gammas for f in range(n_folds)]
    n = len(grid)
    C = np.array([x[0] for x in grid])
    base = rows([{}]).iloc[0].to_dict()
    res = pd.DataFrame({k: [v] * n for k, v in base.items()})
    res["key"] = [f"k{i:06d}" for i in range(n)]
    res["C"] = C
    res["gamma"] = [x[1] for x in grid]
    res["fold"] = [x[2] for x in grid]
    res["seed"] = res["fold"]
    res["test_accuracy"] = 0.9 - 0.05 * np.abs(np.log10(C)) / 5 + 0.01 * res["fold"]
    res["fit_time_s"] = 1e-3 * (1 + np.log10(C) + 3)
    res["n_iter"] = (5 + 2 * np.log10(C) + 6).astype(int)
    res["duality_gap"] = 1e-6 / (1 + C)
    res["status"] = np.where(np.arange(n) % 997 == 5, "max_iter", "converged")
    k = np.arange(1, 5)
    tr = pd.DataFrame({"key": np.repeat(res["key"].to_numpy(), len(k)), "iteration": np.tile(k, n),
                       "time_s": np.tile(1e-4 * k, n), "primal": 10.0 * (1 + 10.0 ** -np.tile(k, n)),
                       "dual": 10.0, "gap": 10.0 * 10.0 ** -np.tile(k, n)})
    return res, tr


# The bounds a few thousand problems are held to: figure files and the report's peak memory. The
# peak is the largest process's, a forked figure process's included, whose shared pages count as
# its own as it touches them: it varies with timing (up to 770 MB seen in a loaded full suite);
# one panel per problem grew past 17 GB.
MAX_FIGURE_FILES = 30
PEAK_MB = 900


@pytest.mark.slow      # a whole report of 6,000 fits in a subprocess: 10-30 s on 2 loaded cores
def test_a_report_over_thousands_of_problems_is_bounded(tmp_path):
    """3,000 problems (C values) x 2 folds, rebuilt by `python -m pipeline.report` in a subprocess
    of its own: at most MAX_FIGURE_FILES figure files, the interactive page under 8 MB, and the
    whole command (the report's processes included) under PEAK_MB of peak RSS."""
    res, tr = _sweep(3000)
    run = _write_run(tmp_path / "run", res, tr)
    script = ("import resource, sys\n"
              "from pipeline.report.build import main\n"
              "code = main([sys.argv[1]])\n"
              "own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
              "print('PEAK', max(own, kids) // 1024)\n"
              "sys.exit(code)\n")
    out = subprocess.run([sys.executable, "-c", script, str(run)], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr[-2000:]
    peak = int(out.stdout.split("PEAK")[1].split()[0])
    figures = [p for p in (run / "figures").iterdir() if p.suffix in (".png", ".pdf")]
    assert 0 < len(figures) <= MAX_FIGURE_FILES, sorted(p.name for p in figures)
    assert (run / "figures" / "sweep_summary.png").exists()
    assert peak <= PEAK_MB, f"peak RSS {peak} MB"
    page = run / "interactive.html"
    assert page.exists() and page.stat().st_size < 8_000_000
    md = (run / "report.md").read_text()
    assert "3000 problems" in md and "Summary over the swept keys" in md
    # The figures of one panel per problem: a named few, each titled with why.
    assert "best CV score" in md or (run / "figures" / "gap_vs_time.png").exists()


def test_no_figure_is_left_open(tmp_path):
    """Every figure a report draws is closed once saved, also those of a figure that then raises
    Skip: drawn here, in this process (processes=1), pyplot holds no figure afterwards."""
    import matplotlib.pyplot as plt
    plt.close("all")
    res, tr = _sweep(13, gamma=(0.1, 1.0))          # 26 problems: the summaries of a large sweep too
    data = ReportData(res, tr, name="t")
    secs = sections(data, tmp_path / "figures", processes=1)
    assert any(s.figures for s in secs)
    assert plt.get_fignums() == [], f"{len(plt.get_fignums())} figures left open"


def test_a_saved_figure_is_closed_at_once(tmp_path):
    """save_figure closes its figure as soon as it is written: a figure item of many pages holds
    one open page at a time, not all of them until the item ends."""
    import matplotlib.pyplot as plt
    from pipeline.report.build import save_figures
    plt.close("all")
    pages = [plt.figure() for _ in range(3)]
    for fig in pages:
        fig.add_subplot().plot([0, 1], [1, 0])
    opened = []
    for i, fig in enumerate(pages):
        save_figures(fig, tmp_path, f"page{i}")
        opened.append(len(plt.get_fignums()))
    assert opened == [2, 1, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page0.png", "page1.png", "page2.png"]


def test_a_figure_item_that_raises_skip_leaves_no_figure_open(tmp_path, monkeypatch):
    """An item that opened a figure and then found nothing to draw (Skip): the figure is closed
    all the same, and the item is said skipped with its reason."""
    import matplotlib.pyplot as plt
    from pipeline.report import build
    from pipeline.report.registry import Item, Skip

    def half_drawn(data):
        plt.figure()
        raise Skip("nothing to draw after all")
    monkeypatch.setattr(build, "items", lambda kind=None: [Item("half", "Half", "figure", half_drawn)])
    monkeypatch.setattr(build, "_JOB", (None, tmp_path, ("png",)))
    plt.close("all")
    assert build._draw_one("half") == ("half", ((), "nothing to draw after all", None))
    assert plt.get_fignums() == []


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_failed_report_leaves_the_run_whole_and_the_rebuild_works(tmp_path):
    """Two real failures of a report built in its own process: an exception (its figures folder
    is a file) and a kill (its processes pass their memory bound and are ended by SIGKILL). Each
    time: one line saying the report failed, why and how to rebuild it; the results untouched; no
    half-written report left; then the rebuild, as the line says, works."""
    res, tr = _sweep(30)
    run = _write_run(tmp_path / "run", res, tr)
    before = {p.name: _digest(p) for p in run.glob("*.parquet")}
    (run / "figures").write_text("not a folder")
    with pytest.raises(ReportFailed) as exc:
        build_bounded(run)
    line = str(exc.value)
    assert "\n" not in line and line.startswith("report failed: ")
    assert f"python -m pipeline.report {run}" in line and "results are whole" in line
    assert not (run / "report.md").exists()
    (run / "figures").unlink()
    with pytest.raises(ReportFailed, match=r"passed 1 MB of memory of their own.*python -m pipeline.report"):
        build_bounded(run, memory_mb=1)
    assert {p.name: _digest(p) for p in run.glob("*.parquet")} == before
    assert not (run / "report.md").exists() and not list(run.glob(".*.tmp"))
    path, info = build_bounded(run)
    assert path == run / "report.md" and path.exists()
    assert info["fits"] == len(res) and info["problems"] == 30
    assert {p.name: _digest(p) for p in run.glob("*.parquet")} == before



def test_the_command_collects_its_own_garbage_after_the_reports_fork(tmp_path):
    """The report's process is forked with every object frozen (`gc.freeze`: no copy-on-write of
    the command's heap); the command unfreezes after the fork, else it never collects again."""
    import gc
    res, tr = _sweep(3)
    run = _write_run(tmp_path / "run", res, tr)
    gc.unfreeze()
    build_bounded(run)
    assert gc.get_freeze_count() == 0


# --------------------------------------------------------------------------- the pandas oracle
def _oracle_cv(fits: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """cv_results as the report computed it with pandas (a groupby over every fit)."""
    from pipeline.report.common import keyed
    k = keyed(fits, keys)
    return k.groupby(keys, sort=True, dropna=False).agg(
        mean_test_score=("test_accuracy", "mean"), std_test_score=("test_accuracy", "std"),
        mean_fit_time=("fit_time_s", "mean"), std_fit_time=("fit_time_s", "std"),
        median_fit_time=("fit_time_s", "median"), max_gap=("duality_gap", "max"),
        total_time=("fit_time_s", "sum"), n=("key", "count")).reset_index()


def _small_run(seed: int) -> pd.DataFrame:
    """dcd and smo over C and gamma, three folds, with values pandas and a SQL engine round
    differently if summed naively (1e16 beside 1), missing gamma, a missing accuracy, a key of
    mixed kinds."""
    rng = np.random.default_rng(seed)
    specs = []
    for entry in ("dcd", "smo"):
        for C in (0.1, 1.0, 10.0):
            for gamma in ((np.nan,) if entry == "dcd" else (0.5, "scale")):
                specs += folds({"solver_entry": entry, "solver": entry, "C": C, "gamma": gamma,
                                "kernel": "linear" if entry == "dcd" else "rbf"}, 3,
                               test_accuracy=list(rng.random(3)), fit_time_s=[1e16, 1.0, rng.random()],
                               duality_gap=list(rng.random(3) * 1e-7))
    res = rows(specs)
    res.loc[4, "test_accuracy"] = np.nan
    res["gamma"] = res["gamma"].astype(object)
    # A missing gamma spelled three ways across the folds of one configuration: one group.
    dcd = res.index[res["solver_entry"] == "dcd"]
    res.loc[dcd, "gamma"] = [[np.nan, "nan", None][i % 3] for i in range(len(dcd))]
    return res


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("where", ["frames", "files"])
def test_summaries_equal_a_pandas_oracle_digit_for_digit(tmp_path, seed, where):
    res = _small_run(seed)
    if where == "files":
        from .rowwise_tables import finish_results
        res = finish_results(res)
        run = _write_run(tmp_path / "run", res, traces_for(res))
        data = ReportData.open(run)
        res = pd.read_parquet(run / "results.parquet")
    else:
        data = ReportData(res, traces_for(res), name="t")
    keys = ["dataset", "solver_entry", "C", "gamma", "kernel"]
    got = data.summary(keys, {"mean_test_score": "favg(num(test_accuracy))",
                              "std_test_score": "stddev_samp(num(test_accuracy))",
                              "mean_fit_time": "favg(num(fit_time_s))", "std_fit_time": "stddev_samp(num(fit_time_s))",
                              "median_fit_time": "median(num(fit_time_s))", "max_gap": "max(num(duality_gap))",
                              "total_time": "fsum(num(fit_time_s))", "n": "count(key)"})
    want = _oracle_cv(res[res["status"] != "error"], keys)
    assert list(got.columns) == list(want.columns)
    for c in keys:
        assert list(got[c].astype(str)) == list(want[c].astype(str)), c
    for c in want.columns[len(keys):]:
        g, w = got[c].to_numpy(float), want[c].to_numpy(float)
        assert np.array_equal(g, w, equal_nan=True), (c, g, w)


def test_a_run_whose_report_fails_keeps_its_results_and_resumes(tmp_path, caplog):
    """A real run whose report fails (its figures folder is a file): the command returns with the
    report marked failed and one line in the log naming the rebuild command; results.parquet is
    whole; the same command again runs no fit (all kept) and writes the report."""
    import logging
    from pipeline.experiment.config import compose
    from pipeline.run import run
    cfg = compose([f"store.root={tmp_path / 'store'}", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=60",
                   "cv.folds=2", "run.progress=false", "run.reference=false", "cluster=sequential",
                   "solvers=[dcd]", "solvers.dcd.grid.C=[0.1,1]"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "figures").write_text("not a folder")
    with caplog.at_level(logging.INFO, logger="svmbench"):
        out = run(cfg, run_dir)
    assert out["report_failed"] is not None and out["failed"] == 0
    failed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("report failed: ")]
    assert len(failed) == 1 and f"python -m pipeline.report {run_dir}" in failed[0]
    assert len(pd.read_parquet(run_dir / "results.parquet")) == 4 and not (run_dir / "report.md").exists()
    (run_dir / "figures").unlink()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="svmbench"):
        again = run(cfg, run_dir)
    assert again["report_failed"] is None and (run_dir / "report.md").exists()
    assert any("0 run, 4 skipped" in r.getMessage() for r in caplog.records)
    assert any(r.getMessage().startswith("report: summarised 4 fits") for r in caplog.records)


def test_a_large_run_without_traces_reports(tmp_path):
    """run.trace=false past MAX_PROBLEMS: traces.parquet has no row and an untyped key (read as a
    number); the chosen problems' subset joins it with the results' text keys all the same."""
    from pipeline.report.build import build_report
    res, tr = _sweep(30)
    empty = pd.DataFrame({c: pd.Series([], dtype=float) for c in tr.columns})
    run = _write_run(tmp_path / "run", res, empty)
    assert str(pd.read_parquet(run / "traces.parquet")["key"].dtype) == "float64"
    from pipeline.report.build import load
    from pipeline.report.figures import panel_data
    assert len(panel_data(load(run)).results) > 0           # the chosen problems, read with their traces
    assert build_report(run).exists()
    assert "Summary over the swept keys" in (run / "report.md").read_text()
