"""Every verdict rule, run on the paper's own printed numbers, must hold there: a rule that the
paper's own table fails is a wrong reading of the paper's words. And the timing rule: a verdict on
seconds is "undecided" when the repeats straddle its threshold. No solver runs: the rules are
functions of numbers."""
import json
import math

import numpy as np
import pandas as pd
import pytest

from pipeline.papers import bertini as bt
from pipeline.papers import duros_katzman as dk
from pipeline.papers import roethel_brynda as rb
from pipeline.papers import rupnik as rp
from pipeline.papers import troyan as tr
from pipeline.papers.common import (DIFFERS, HOLDS, UNDECIDED, Finding, findings_table, not_comparable,
                                    timed_finding, timing_verdict, within)


# ------------------------------------------------------------------------------ the timing rule
def test_timing_verdict_is_undecided_when_the_spread_covers_the_threshold():
    # Every repeat inside the band holds; every repeat beyond it differs, on either side.
    assert timing_verdict([3.0, 3.2, 3.5, 2.9, 3.1], 2.0, 5.0) == HOLDS
    assert timing_verdict([1.2, 1.5, 1.1, 1.4, 1.3], 2.0, 5.0) == DIFFERS
    assert timing_verdict([6.0, 7.0, 6.5, 5.5, 8.0], 2.0, 5.0) == DIFFERS
    # The median (2.1) is inside, but two repeats are under 2: a rerun could flip it.
    assert timing_verdict([2.1, 1.8, 2.4, 1.9, 2.2], 2.0, 5.0) == UNDECIDED
    # Fewer than five repeats never decide, however clear they look; NaNs do not count.
    assert timing_verdict([3.0, 3.0, 3.0, 3.0], 2.0, 5.0) == UNDECIDED
    assert timing_verdict([3.0, 3.0, 3.0, 3.0, math.nan], 2.0, 5.0) == UNDECIDED
    assert timing_verdict([3.0] * 5, 2.0, 5.0, min_repeats=5) == HOLDS


def test_timed_finding_reports_median_and_spread_and_combines_groups():
    f = timed_finding("claim", "ours", [2.1, 1.8, 2.4, 1.9, 2.2], 2.0, math.inf, "ratio >= 2")
    assert f.holds is None and f.verdict == UNDECIDED
    assert "median 2.1x, range 1.8x-2.4x" in f.ours and "covers the rule's threshold" in f.why
    # Per group: one group differing makes it differ, one undecided (the rest holding) undecided.
    both = {"a": [3.0] * 5, "b": [1.0] * 5}
    assert timed_finding("c", "o", both, 2.0, math.inf, "r", "slow on b").verdict == DIFFERS
    assert timed_finding("c", "o", {"a": [3.0] * 5, "b": [1.9, 2.1] * 3}, 2.0, math.inf, "r").verdict == UNDECIDED
    assert timed_finding("c", "o", {"a": [3.0] * 5, "b": [2.5] * 5}, 2.0, math.inf, "r").verdict == HOLDS


def test_findings_table_shows_the_rule_and_the_new_verdicts():
    rows = findings_table([Finding("c", "o", True, "", "x <= 2"),
                           not_comparable("c2", "o2", "their corpus"),
                           Finding("c3", "o3", None, "spread", "r", UNDECIDED)])
    assert rows[0].startswith("| # | the paper | rule |")
    assert "| x <= 2 |" in rows[2] and "**not comparable**" in rows[3] and "**undecided**" in rows[4]


def test_within_is_two_sided():
    assert within(1.0, 3.0, 2.0) and within(3.0, 1.0, 2.0)
    assert not within(0.0, 3.0, 2.0) and not within(3.0, 0.0, 2.0)


# ------------------------------------------------------------------------------ roethel_brynda
PAPER_N_TEST = {"banknote": 453, "cleveland_heart": 99, "mnist_1v7": 3582, "toy_blobs": 660}
RB_ENTRY = {"our": ("dcd", "dcd_wchange"), "our shrinking": ("dcd_shrinking", "dcd_wchange_shrinking"),
            "sklearn": ("liblinear",)}


def _rb_paper() -> pd.DataFrame:
    """The paper's Tables 1 and 2 as a summary: their accuracies and seconds, each time repeated
    five times (they printed one), both of our stopping rules standing for their column."""
    rows = []
    for ds in rb.DATASETS:
        for i, C in enumerate(rb.CS):
            for col, entries in RB_ENTRY.items():
                for e in entries:
                    t = rb.TABLE2[ds][col][i]
                    rows.append({"dataset": ds, "solver_entry": e, "C": C, "acc": rb.TABLE1[ds][col][i],
                                 "time_s": t, "time_reps": (t,) * 5, "n_iter": 50.0, "runs": 5, "converged": 5,
                                 "rel_gap": 1e-6, "n_test": PAPER_N_TEST[ds], "n_updates": np.nan})
    return pd.DataFrame(rows)


def test_roethel_brynda_rules_hold_on_the_papers_own_tables():
    paper = _rb_paper()
    for finding in (rb.finding_matches_linearsvc, rb.finding_shrinking_same_accuracy, rb.finding_accuracy_levels,
                    rb.finding_heart_linearsvc_drop, rb.finding_slower_than_linearsvc,
                    rb.finding_shrinking_not_faster):
        f = finding(paper)
        assert f.holds is True, (finding.__name__, f.ours, f.why)
        assert f.rule, finding.__name__
    # The tolerance is the paper's own: heart C=10 (80.81 against 82.83) is exactly two test points.
    assert rb.agree(2.0, 2.02) and not rb.agree(3.0, 3.03)


# ------------------------------------------------------------------------------ duros_katzman
def test_duros_katzman_rules_hold_on_the_papers_own_tables():
    # Pegasos (SSG) against GD, nearly equal, on every row both printed (Tables 3 and 4): the
    # largest, multi freq of Table 4, is 2.43 pp.
    for table in (dk.TABLE3, dk.TABLE4):
        for (alg, mode, data), (acc, _) in table.items():
            if alg == "SSG" and ("GD", mode, data) in table:
                assert dk.rule_nearly_equal(acc, table[("GD", mode, data)][0]), (mode, data)
    # Pegasos quicker than GD on the full sets (Table 3: 140 s against 184 s, 120 s against 300 s).
    for mode, data in (("bin", "bin"), ("multi", "bin")):
        assert dk.rule_faster(dk.TABLE3[("SSG", mode, data)][1] / dk.TABLE3[("GD", mode, data)][1])
    # Newton outperformed on binary (Table 4: .7959 against .8343 and .8485), almost equal on
    # multiclass (.6828 against .6979 and .7061).
    t4 = dk.TABLE4
    assert dk.rule_outperformed(t4[("NM", "bin", "bin")][0], [t4[("GD", "bin", "bin")][0], t4[("SSG", "bin", "bin")][0]])
    assert dk.rule_nearly_equal(t4[("NM", "multi", "bin")][0], max(t4[("GD", "multi", "bin")][0],
                                                                   t4[("SSG", "multi", "bin")][0]))
    # About 4x per doubling (Table 2).
    assert dk.rule_per_doubling([dk.TABLE2[n] for n in sorted(dk.TABLE2)])
    # The old one-sided test is gone: 7.7 pp above is not "almost equal".
    assert not dk.rule_nearly_equal(0.642, 0.565)


# ------------------------------------------------------------------------------ troyan
def _tr_paper() -> pd.DataFrame:
    """Their Tables 2 and 3 as a summary: L* the best of their five losses, each time five times."""
    rows = []
    for ds in tr.DATASETS:
        best = min(tr.TABLE3[ds])
        for i, e in enumerate(tr.METHODS.values()):
            L, t = tr.TABLE3[ds][i], tr.TABLE2[ds][i]
            rows.append({"dataset": ds, "solver_entry": e, "runs": 5, "time_s": t, "time_reps": (t,) * 5,
                         "n_iter": 50.0, "L": L, "L_min": L, "L_max": L, "L_star": best, "L_star_gap": 0.0,
                         "star_ok": True, "excess": L - best, "excess_median": L - best, "converged": 5,
                         "n_train": tr.PAPER_N[ds]})
    return pd.DataFrame(rows)


def test_troyan_rules_hold_on_the_papers_own_tables():
    paper = _tr_paper()
    for finding in (tr.finding_global_minimum, tr.finding_alpha_over_maj, tr.finding_larger_sets,
                    tr.finding_alpha_over_2maj, tr.finding_2maj_over_maj, tr.finding_cd_gd_stall,
                    tr.finding_losses_match):
        f = finding(paper)
        assert f.holds is True, (finding.__name__, f.ours, f.why)
    # Their Table 3's Heart: Maj 0.0016 above alpha-Maj, the same loss to 4 digits.
    assert tr.rule_reaches(92.1256, 92.1240) and not tr.rule_reaches(92.1256 + 0.01, 92.1240)
    # The transcription of Table 2 gives their printed averages over all seven sets, within the
    # rule's factor: 3.4x over Maj, 1.8x over 2Maj, 2Maj about twice Maj.
    all7 = list(tr.DATASETS)
    assert tr.rule_about(tr.paper_ratio("svmmaj", "alpha_maj_printed", all7), 3.4)
    assert tr.rule_about(tr.paper_ratio("svmmaj_2maj", "alpha_maj_printed", all7), 1.8)
    assert tr.rule_about(tr.paper_ratio("svmmaj", "svmmaj_2maj", all7), 2.0)
    # Voting (not their rows) is out of the mean; without it their own mean is 2.94x.
    assert tr.paper_ratio("svmmaj", "alpha_maj_printed", all7[:-1]) == pytest.approx(2.94, abs=0.01)


def test_troyan_speedup_without_voting_and_larger_sets():
    # Ours as in the committed run: Voting's 11x carries a 7-set mean; without it 2.24x against
    # their 2.94x over the same six (within the factor 1.5); the larger sets below the mean differ.
    ours = {"australian": 1.71, "breast_cancer_wisconsin_699": 1.73, "pima_diabetes": 2.76, "heart_statlog": 2.4,
            "hepatitis": 2.5, "sonar": 2.34, "voting": 11.07}
    time = {(d, "svmmaj"): 1e-2 * r for d, r in ours.items()}
    rows = []
    for ds in tr.DATASETS:
        for e in ("svmmaj", "alpha_maj_printed"):
            t = time.get((ds, e), 1e-2)
            rows.append({"dataset": ds, "solver_entry": e, "time_s": t, "time_reps": (t,) * 5, "n_iter": 10.0})
    s = pd.DataFrame(rows)
    f = tr.finding_alpha_over_maj(s)
    assert f.holds is True and "Voting not in the mean" in f.ours and "2.94x" in f.rule
    assert tr.finding_larger_sets(s).holds is False


def test_troyan_larger_sets_is_judged_in_every_random_start():
    """"Consistently higher": the larger sets above the mean in all starts but at most one
    holds, in at most one differs, in between is undecided (a regeneration flipped it on the
    medians alone; one start either way flipped it between two runs at one load)."""
    def summary(big_by_start):
        rows = []
        for ds in tr.DATASETS:
            slow = [1e-2 * (big_by_start[i] if ds in tr.LARGER else 2.0) for i in range(len(big_by_start))]
            rows += [{"dataset": ds, "solver_entry": "svmmaj", "time_s": float(np.median(slow)), "time_reps": tuple(slow),
                      "n_iter": 10.0},
                     {"dataset": ds, "solver_entry": "alpha_maj_printed", "time_s": 1e-2, "time_reps": (1e-2,) * len(slow),
                      "n_iter": 10.0}]
        return pd.DataFrame(rows)
    assert tr.finding_larger_sets(summary([3.0] * 5)).verdict == HOLDS
    assert tr.finding_larger_sets(summary([3.0, 3.0, 1.0, 3.0, 3.0])).verdict == HOLDS     # one start off
    assert tr.finding_larger_sets(summary([1.0] * 5)).verdict == DIFFERS
    assert tr.finding_larger_sets(summary([1.0, 3.0, 1.0, 1.0, 1.0])).verdict == DIFFERS
    mixed = tr.finding_larger_sets(summary([3.0, 3.0, 1.0, 1.0, 3.0]))
    assert mixed.verdict == UNDECIDED and "holds in 3 of 5" in mixed.why and "3 of 5 random starts" in mixed.ours
    assert tr.finding_larger_sets(summary([3.0] * 3)).verdict == UNDECIDED       # too few starts


# ------------------------------------------------------------------------------ bertini
def test_bertini_rules_hold_on_the_papers_own_tables():
    for m in bt.METHODS:
        for k in bt.KERNELS:
            assert bt.OPTIM[m][k][4] <= bt.KKT_REACHED, (m, k)        # their m - M: 5.6e-15 to 4.5e-13
    for k in bt.KERNELS:
        assert bt.rule_iterations(bt.OPTIM["smo"][k][1], bt.OPTIM["svmlight"][k][1], bt.OPTIM["qp"][k][1])
        # SVMlight 2-5x less time than SMO; qp the slowest (Tables XV-XVI), as five equal repeats.
        ratio = bt.TIMES["smo"][k] / bt.TIMES["svmlight"][k]
        assert timing_verdict([ratio] * 5, bt.SPEEDUP[0], math.inf) == HOLDS
        slowest = bt.TIMES["qp"][k] / max(bt.TIMES["smo"][k], bt.TIMES["svmlight"][k])
        assert timing_verdict([slowest] * 5, bt.NOISE, math.inf) == HOLDS
    # "Slightly worse": a few points; a collapse to chance is not slight, no drop is not worse.
    assert bt.rule_slightly_worse(2.4) and not bt.rule_slightly_worse(46.0) and not bt.rule_slightly_worse(0.0)


def test_bertini_best_q_is_no_longer_accepted_everywhere():
    # A flat curve: their q is 1.1x the fastest in some folds and faster in others: undecided,
    # where the old factor-1.5 rule called any q from 30 to 160 the fastest.
    rows = []
    for k in bt.KERNELS:
        for q in (30.0, 70.0, 100.0, 160.0):
            reps = (1e-3, 1.1e-3, 0.9e-3, 1e-3, 1.05e-3) if q == bt.BEST_Q[k][0] else (1e-3,) * 5
            rows.append({"method": "svmlight", "kernel": k, "q": q, "time_s": float(np.median(reps)),
                         "time_reps": reps, "n_iter": 5.0, "runs": 5, "converged": 5})
    f = bt.finding_best_q(pd.DataFrame(rows))
    assert f.verdict == UNDECIDED
    # Slower in every fold at their q (1.2x): differs, where 1.5x noise used to call it fastest.
    for r in rows:
        if r["q"] == bt.BEST_Q[r["kernel"]][0]:
            r["time_reps"], r["time_s"] = (1.2e-3,) * 5, 1.2e-3
    assert bt.finding_best_q(pd.DataFrame(rows)).verdict == DIFFERS


# ------------------------------------------------------------------------------ rupnik
def test_rupnik_rules_hold_on_the_papers_own_numbers():
    assert rp.rule_iterations(rp.THEIRS_IT[3e-3], rp.THEIRS_IT[1e-3])
    assert rp.rule_test_error(rp.THEIRS_ERR_50, rp.THEIRS_ERR_EXACT)
    # Their 9.2 s to 0.3% (so about 26 s to 0.1% at 560 of 200 iterations) against SVMlight's four hours.
    assert rp.rule_exact_slower(rp.THEIRS_S_03 * rp.THEIRS_IT[1e-3] / rp.THEIRS_IT[3e-3], rp.THEIRS_EXACT_H * 3600)


def test_rupnik_verdicts_are_per_dataset():
    base = {"n_iter": 1000, "f_star_rel_gap": 1e-12, "f_star_status": "converged", "f_star_solver": "dcd",
            "lambda": 1e-4, "n_test": 1000}

    def conv(ds, n_train, it, err_at):
        return [{**base, "dataset": ds, "n_train": n_train, "solver_entry": "pegasos", "status": "budget",
                 "fit_time_s": 20.0, "rel_subopt": 5e-4, "it_0.003": it[0], "t_0.003": 1.0, "it_0.001": it[1],
                 "t_0.001": 2.0, "test_err": 5.7, "err_it": 47.0, "test_err_at": err_at},
                {**base, "dataset": ds, "n_train": n_train, "solver_entry": "dcd", "status": "converged",
                 "fit_time_s": 10.0, "rel_subopt": 1e-12, "it_0.003": 5.0, "t_0.003": 1.0, "it_0.001": 6.0,
                 "t_0.001": 1.2, "test_err": 5.6, "err_it": np.nan, "test_err_at": np.nan}]
    c = pd.DataFrame(conv("rcv1_full", 700000, (240, 715), 5.9) + conv("rotten_tomatoes", 11146, (773, math.nan), 30.8))
    st = pd.DataFrame(columns=["dataset", "final_spread", "starts", "random_state", "max_rel_diff", "final_P",
                               "final_gap"])
    kt = pd.DataFrame(columns=["dataset", "lazy_t", "epochs", "k", "kT", "T", "rel_subopt", "steps_t"])
    found = rp.findings(c, st, kt)
    on = {ds: [f for f in found if f.claim.endswith(f"on {rp._name(ds)}")] for ds in ("rcv1_full", "rotten_tomatoes")}
    # Each of the three convergence findings once per dataset, in order: iterations, exact solver, test error.
    assert [len(v) for v in on.values()] == [3, 3]
    # Section 4.3's iterations and Figure 3's error hold on the RCV1-like set; on rotten_tomatoes
    # (C = 0.9, another regime) they are not comparable, not a "differs" that drags RCV1's down.
    assert [on["rcv1_full"][i].verdict for i in (0, 2)] == ["holds", "holds"]
    assert [on["rotten_tomatoes"][i].verdict for i in (0, 2)] == ["not comparable", "not comparable"]
    assert "0.8972" in on["rotten_tomatoes"][0].why


def test_duros_katzman_timing_rests_on_the_folds():
    def row(ds, e, reps):
        return {"dataset": ds, "solver_entry": e, "eta": np.nan, "lam": np.nan, "k": np.nan, "epochs": np.nan,
                "C": 1.0, "acc": 0.7, "acc_sd": 0.0, "time_s": float(np.mean(reps)), "time_reps": tuple(reps),
                "folds": len(reps), "diverged": 0, "n_sv": 1.0, "intercept": "basis"}
    gd = [1.0] * 10
    quick = pd.DataFrame([row("rotten_tomatoes", "gd", gd), row("rotten_tomatoes", "pegasos", [0.5] * 10)])
    assert dk.finding_pegasos_faster(quick).verdict == HOLDS
    # Quicker on average (mean 0.95) but slower in three folds: undecided, not "holds".
    mixed = pd.DataFrame([row("rotten_tomatoes", "gd", gd), row("rotten_tomatoes", "pegasos", [0.8] * 7 + [1.3] * 3)])
    assert dk.finding_pegasos_faster(mixed).verdict == UNDECIDED


# ------------------------------------------------------------------------------ papers-check
def test_papers_check_compares_verdicts_finding_by_finding():
    from pipeline.papers.check import differences, verdicts
    rows = [Finding("claim one (Table 1)", "o", True, "", "r"), Finding("claim two", "o", None, "s", "r", UNDECIDED)]
    first = verdicts("# R\n\n## Findings\n\n" + "\n".join(findings_table(rows)))
    assert first == [(1, "claim one (Table 1)", "holds"), (2, "claim two", "undecided")]
    assert differences(first, first) == []
    flipped = verdicts("\n".join(findings_table([rows[0], Finding("claim two", "o", True, "", "r")])))
    assert differences(first, flipped) == ["finding 2 (claim two...): undecided then holds"]
    assert differences(first, first[:1]) == ["finding 2: only in the first run"]


def test_papers_check_against_a_written_reproduction_runs_once_and_compares(tmp_path, monkeypatch, capsys):
    from pipeline.papers import check as pc
    rows = [Finding("claim one (Table 1)", "o", True, "", "r"), Finding("claim two", "o", None, "s", "r", UNDECIDED)]
    (tmp_path / "troyan").mkdir()
    (tmp_path / "troyan" / "README.md").write_text("# R\n\n## Findings\n\n" + "\n".join(findings_table(rows)))
    fresh = [(1, "claim one (Table 1)", "holds"), (2, "claim two", "holds")]
    calls = []
    monkeypatch.setattr(pc, "regenerate", lambda name, *a, **k: calls.append(name) or fresh)
    found = pc.check(["troyan"], log=lambda *_: None, against=tmp_path)
    assert calls == ["troyan"] and found == {"troyan": ["finding 2 (claim two...): undecided then holds"]}
    # A study without a written README: one line, exit 2, before any run.
    assert pc.main(["--against", str(tmp_path), "bertini"]) == 2 and calls == ["troyan"]
    assert "no README.md for bertini" in capsys.readouterr().err
    assert pc.main(["--against"]) == 2


def test_troyan_speedups_are_judged_on_every_timed_solve_not_only_the_fastest():
    """With run.time_repeats, each start's solves are timing samples: a speed-up whose fastest
    times pass but whose other solves straddle the band is undecided, not holds."""
    def results(slow_times):
        rows = []
        for ds in tr.DATASETS:
            for e, times in (("svmmaj", slow_times), ("svmmaj_2maj", (1e-2, 1e-2, 1e-2))):
                for seed in range(5):
                    rows.append({"dataset": ds, "solver_entry": e, "key": f"{ds}{e}{seed}", "param_init_seed": seed,
                                 "status": "budget", "C": 1.0, "primal_objective": 1.0, "f_star": 1.0,
                                 "f_star_gap": 0.0, "f_star_status": "converged", "n_iter": 10, "n_train": 100,
                                 "fit_time_s": min(times), "info_fit_time_s_repeats": json.dumps(list(times))})
        return pd.DataFrame(rows)
    steady = tr.summarise(results((2e-2, 2e-2, 2e-2)))
    assert tr.finding_2maj_over_maj(steady).verdict == HOLDS and "over 15 repeats" in tr.finding_2maj_over_maj(steady).ours
    # Maj's fastest solve gives 2x in every start (inside their 1.70x within a factor 1.5), its
    # second 4x (outside): the fastest alone would hold; the samples straddle the band.
    noisy = tr.summarise(results((2e-2, 4e-2, 2e-2)))
    assert tr.rule_about(float(noisy.loc[noisy["solver_entry"] == "svmmaj", "time_s"].iloc[0]) / 1e-2, 1.70)
    assert tr.finding_2maj_over_maj(noisy).verdict == UNDECIDED


def test_a_timing_verdict_on_many_repeats_rests_on_their_middle_half():
    """Five repeats: their range (one outside straddles). Ten or more: their quartiles, so one
    tail sample of fifteen no longer flips the verdict between two regenerations."""
    from pipeline.papers.common import timing_verdict
    assert timing_verdict([2.0] * 4 + [3.0], 1.5, 2.5) == UNDECIDED
    assert timing_verdict([2.0] * 14 + [3.0], 1.5, 2.5) == HOLDS
    assert timing_verdict([2.0] * 7 + [3.0] * 8, 1.5, 2.5) == UNDECIDED
    assert timing_verdict([3.0] * 12 + [2.0] * 3, 1.5, 2.5) == DIFFERS
