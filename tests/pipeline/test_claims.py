"""The claim vocabulary (pipeline/papers/claims.py): one statistic, band and interval per kind,
the three-way verdict of an interval against a band, the cells set aside by a study's data
declaration, rule texts generated from the claims, and the digest that pins them. No solver runs."""
import math

import numpy as np
import pytest

from pipeline.papers import claims as cl
from pipeline.papers.claims import (BY_CONSTRUCTION, DIFFERS, HOLDS, KINDS, LEVEL, NOT_CHECKED, NOT_COMPARABLE, OTHER,
                                    STAND_IN, THEIRS, UNDECIDED, Cell, Claim, StudyRules, cell_verdict, combine,
                                    difference_over, discordant_se, exact, judge, proportions, ratio_over)


def v(est, kind, **params):
    return cell_verdict(est, KINDS[kind], params)


def test_a_ratio_is_a_geometric_mean_with_a_t_interval_on_its_logs():
    est = ratio_over([2.0, 8.0, 4.0])
    assert est.value == pytest.approx(4.0) and est.n == 3
    logs = np.log([2.0, 8.0, 4.0])
    half = 4.302652729911275 * logs.std(ddof=1) / math.sqrt(3)          # t(0.975, 2)
    assert (est.lo, est.hi) == pytest.approx((4.0 * math.exp(-half), 4.0 * math.exp(half)))
    # Equal repeats: no width; one repeat: no interval at all; NaN and <= 0 are dropped.
    assert ratio_over([3.0] * 5).lo == pytest.approx(3.0) and ratio_over([3.0] * 5).hi == pytest.approx(3.0)
    one = ratio_over([3.0, math.nan, -1.0])
    assert one.n == 1 and one.lo == 0.0 and one.hi == math.inf
    assert math.isnan(ratio_over([]).value)


def test_the_verdict_of_an_interval_against_a_band():
    # greater: above 1.1x. Inside, outside, straddling.
    assert v(ratio_over([2.0, 2.1, 1.9, 2.0, 2.05]), "greater") == HOLDS
    assert v(ratio_over([0.9, 1.0, 0.95, 1.02, 0.98]), "greater") == DIFFERS
    assert v(ratio_over([1.05, 1.3, 1.0, 1.25, 1.1]), "greater") == UNDECIDED
    # An open edge: exactly 1.1 is not above it; an exact value decides without repeats.
    assert v(exact(1.1), "greater") == DIFFERS and v(exact(1.1000001), "greater") == HOLDS
    # Fewer than MIN_REPEATS measured repeats never decide, however clear they look.
    assert v(ratio_over([5.0, 5.1]), "greater") == UNDECIDED
    # Two-sided bands: nearly equal fails far above as surely as far below.
    assert v(exact(2.4), "nearly equal") == HOLDS and v(exact(-2.4), "nearly equal") == HOLDS
    assert v(exact(2.6), "nearly equal") == DIFFERS and v(exact(-2.6), "nearly equal") == DIFFERS
    assert v(exact(6.0), "about", k=4.0) == HOLDS and v(exact(6.1), "about", k=4.0) == DIFFERS
    assert v(exact(2.6), "about", k=4.0) == DIFFERS
    assert v(exact(1.0), "share", lo=1.0, hi=1.0) == HOLDS and v(exact(0.8), "share", lo=1.0, hi=1.0) == DIFFERS
    assert v(exact(0.0), "share", lo=0.0, hi=1.0, lo_open=True) == DIFFERS
    assert v(None, "greater") is None


def test_combining_cells():
    assert combine([HOLDS, HOLDS], "each") == HOLDS
    assert combine([HOLDS, UNDECIDED], "each") == UNDECIDED and combine([HOLDS, UNDECIDED, DIFFERS], "each") == DIFFERS
    assert combine([DIFFERS, HOLDS], "some") == HOLDS and combine([DIFFERS, UNDECIDED], "some") == UNDECIDED
    assert combine([DIFFERS, DIFFERS], "some") == DIFFERS
    assert combine([HOLDS, HOLDS, DIFFERS], "most") == HOLDS and combine([HOLDS, DIFFERS], "most") == DIFFERS
    assert combine([HOLDS, UNDECIDED, DIFFERS, UNDECIDED], "most") == UNDECIDED


def test_accuracy_differences_carry_the_uncertainty_of_their_test_rows():
    # Two accuracies on independent test sets of 99 rows: 4 rows apart is within the noise.
    heart = proportions(84.85, 99, 80.81, 99)
    assert heart.value == pytest.approx(4.04) and heart.lo < -2.5 and heart.hi > 2.5
    assert v(heart, "nearly equal") == UNDECIDED
    # 100% on 400 rows is not certain (Agresti-Caffo): the interval has width.
    assert proportions(100.0, 400, 100.0, 400).hi > 0
    # Paired rows: models that agree on every row still carry half a row of doubt each way; on
    # 453 rows that is far inside 2.5 pp, on 99 rows it is about 2 pp.
    assert discordant_se(0, 0, 453) == pytest.approx(100 / 453) and discordant_se(0, 0, 99) == pytest.approx(100 / 99)
    agree = cl.paired_rows([0.0] * 5, [discordant_se(0, 0, 99)] * 5, 99)
    assert v(agree, "nearly equal") == HOLDS
    apart = cl.paired_rows([5.05] * 5, [discordant_se(5, 0, 99)] * 5, 99)
    assert v(apart, "worse") == UNDECIDED           # 5 rows of 99 cannot show a gap beyond 2.5 pp
    # Across repeats alone (no test-row error): Student's t over them.
    folds = difference_over([1.0, 2.0, 3.0, 2.0, 2.0])
    assert folds.value == pytest.approx(2.0) and folds.hi - folds.lo == pytest.approx(
        2 * 2.7764451051977987 * np.std([1, 2, 3, 2, 2], ddof=1) / math.sqrt(5))


RULES = StudyRules("toy", (("a", THEIRS, "theirs"), ("s", STAND_IN, "a stand-in"), ("o", OTHER, "not theirs")), (
    Claim("faster", "A is faster than B", "greater", "time(B) / time(A)", "dataset", "5 seeds"),
    Claim("level", "accuracy 99%", "nearly equal", "ours minus theirs", "dataset", "5 folds", scope=LEVEL),
    Claim("trivial", "the start is forgotten", "same optimum", "spread", "seed", "exact", construction="step 1 erases it"),
))


def test_judge_sets_aside_what_the_data_declaration_says_and_no_more():
    fast, slow = ratio_over([2.0] * 5), ratio_over([0.5] * 5)
    # Data that are not the paper's problem are shown and judged nowhere: their cell cannot make it differ.
    f = judge(RULES, RULES.claim("faster"), [Cell("a", "a", fast), Cell("s", "s", fast), Cell("o", "o", slow)])
    assert f.verdict == HOLDS and "not judged (o: not the paper's problem" in f.ours
    assert judge(RULES, RULES.claim("faster"), [Cell("s", "s", slow)]).verdict == DIFFERS   # a stand-in's mechanism counts
    # A level: judged on the paper's data only; on a stand-in alone it is not comparable.
    assert judge(RULES, RULES.claim("level"), [Cell("s", "s", exact(9.0))]).verdict == NOT_COMPARABLE
    assert judge(RULES, RULES.claim("level"), [Cell("a", "a", exact(9.0)), Cell("s", "s", exact(0.0))]).verdict == DIFFERS
    # By construction: shown, never counted; no cells: not checked.
    f = judge(RULES, RULES.claim("trivial"), [Cell("a", "a", exact(0.0))])
    assert f.verdict == BY_CONSTRUCTION and f.holds is None and f.rule.startswith("by construction: step 1")
    assert judge(RULES, RULES.claim("faster"), []).verdict == NOT_CHECKED
    # An undecided verdict says which interval straddles which edge.
    mixed = judge(RULES, RULES.claim("faster"), [Cell("a", "seed-ish", ratio_over([1.0, 1.3, 1.05, 1.2, 1.15]))])
    assert mixed.verdict == UNDECIDED and "seed-ish" in mixed.why and "above 1.1x" in mixed.why


def test_rule_texts_are_made_from_the_claims():
    c = RULES.claim("faster")
    assert c.rule_text() == ("greater: time(B) / time(A), above 1.1x, in each dataset; its 95% interval over 5 seeds "
                             "inside that")
    about = Claim("k", "about 3.4x", "about", "a ratio", "the mean", "5 starts", over="mean", params=(("k", 3.4),))
    assert "within a factor 1.5 of 3.4x (2.27x-5.1x)" in about.rule_text()
    assert "judged on the paper's data only" in RULES.claim("level").rule_text()
    with pytest.raises(ValueError, match="no kind 'quick'"):
        Claim("x", "x", "quick", "s", "c", "r")


def test_the_digest_moves_with_every_threshold_and_rule_but_not_with_prose(monkeypatch):
    base = RULES.digest()
    assert len(base) == 16 and RULES.digest() == base
    prose = StudyRules("toy", RULES.data, tuple(Claim(c.key, c.paper + " (reworded)", c.kind, c.statistic, c.cells,
                                                      c.repeats, c.over, c.scope, c.params, c.construction)
                                                for c in RULES.claims))
    assert prose.digest() == base
    moved = StudyRules("toy", RULES.data, (Claim("faster", "A", "greater", "time(B) / time(A)", "dataset", "5 seeds",
                                                 over="most"),) + RULES.claims[1:])
    assert moved.digest() != base
    excluded = StudyRules("toy", (("a", THEIRS, "x"), ("s", OTHER, "now excluded"), ("o", OTHER, "x")), RULES.claims)
    assert excluded.digest() != base
    monkeypatch.setattr(cl, "MEANINGFUL", 1.2)
    assert RULES.digest() != base


@pytest.mark.parametrize("b, c, n", [(5, 0, 99), (0, 5, 99), (3, 17, 453), (40, 2, 100), (0, 0, 99)])
def test_the_discordant_row_error_is_the_paired_differences_own(b, c, n):
    """discordant_se(b, c, n) is the standard error of the mean of the per-row differences of two
    models on n rows (+1 on the c rows only the second gets right, -1 on the b only the first
    does, 0 elsewhere), each discordant count taken half a row up: computed here from such a
    population (twice the rows, so that the half rows are whole), its second term (c - b)^2 / n
    included, which vanishes only where b = c."""
    d = np.concatenate([np.ones(2 * c + 1), -np.ones(2 * b + 1), np.zeros(2 * n - 2 * (b + c) - 2)])
    assert discordant_se(b, c, n) == pytest.approx(100 * d.std() / math.sqrt(n), rel=1e-12)
    assert discordant_se(b, c, n) == pytest.approx(100 * math.sqrt(b + c + 1 - (c - b) ** 2 / n) / n, rel=1e-12)


def test_paired_rows_carry_both_the_rows_error_and_the_repeats_spread():
    """Five repeats on the same 99 rows, their differences apart and each with its own
    discordant-row error: the interval is the normal quantile on sqrt(mean(se)^2 + var/n), so
    dropping either term narrows it."""
    diffs, ses = [1.0, 2.0, 4.0, 3.0, 5.0], [discordant_se(b, c, 99) for b, c in ((1, 2), (1, 3), (0, 4), (2, 5), (0, 5))]
    est = cl.paired_rows(diffs, ses, 99)
    se = math.sqrt(np.mean(ses) ** 2 + np.var(diffs, ddof=1) / 5)
    z = 1.959963984540054                  # the normal quantile at 95% (CONFIDENCE)
    assert est.value == pytest.approx(3.0) and est.n == 5
    assert (est.lo, est.hi) == pytest.approx((3.0 - z * se, 3.0 + z * se), rel=1e-12)
    assert cl.CONFIDENCE == 0.95


def test_paired_rows_without_a_row_error_is_the_repeats_t_interval_and_says_what_it_is_over():
    """No finite row error (none given, or NaN): the interval is Student's t over the repeats
    alone, as difference_over's; the estimate names its repeats and rows."""
    diffs = [1.0, 2.0, 4.0]
    for ses in ([], [math.nan, math.nan, math.nan]):
        est = cl.paired_rows(diffs, ses, 99)
        ref = difference_over(diffs)
        assert (est.value, est.lo, est.hi, est.n) == (ref.value, ref.lo, ref.hi, 3)
        assert est.how == "3 repeats on 99 test rows"
    # A NaN among finite errors is dropped from their mean.
    est = cl.paired_rows(diffs, [1.0, math.nan, 3.0], 99)
    se = math.sqrt(2.0 ** 2 + np.var(diffs, ddof=1) / 3)
    assert est.hi - est.lo == pytest.approx(2 * 1.959963984540054 * se, rel=1e-12)
