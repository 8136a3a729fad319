"""The claim vocabulary (pipeline/papers/claims.py): one statistic, band and interval per kind,
the three-way verdict of an interval against a band, the cells set aside by a study's data
declaration, rule texts generated from the claims, and the digest that pins them. No solver runs."""
import math

import numpy as np
import pytest

from pipeline.papers import claims as cl
from pipeline.papers.claims import (ACCURACY, BELOW_POWER, BY_CONSTRUCTION, DIFFERS, HOLDS, KINDS, LEVEL, NOT_CHECKED,
                                    NOT_COMPARABLE, OTHER, PREMISE_NOT_MET, STAND_IN, THEIRS, UNDECIDED, Cell, Claim,
                                    Estimate, Finding, Sensitivity, StudyRules, cell_verdict, combine, difference_over,
                                    discordant_se, exact, judge, lint, proportions, ratio_over)


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
    # Cells below detectable power are set aside; with none left, that is the verdict.
    assert combine([HOLDS, BELOW_POWER], "each") == HOLDS and combine([DIFFERS, BELOW_POWER], "some") == DIFFERS
    assert combine([BELOW_POWER, BELOW_POWER], "most") == BELOW_POWER


def test_accuracy_differences_carry_the_uncertainty_of_their_test_rows():
    # Two accuracies on independent test sets of 99 rows: 4 rows apart is within the noise, and the
    # noise (+-10 pp) is wider than the band itself: no result on 99 rows could show "nearly equal".
    heart = proportions(84.85, 99, 80.81, 99)
    assert heart.value == pytest.approx(4.04) and heart.lo < -2.5 and heart.hi > 2.5
    assert v(heart, "nearly equal") == BELOW_POWER
    # 100% on 400 rows is not certain (Agresti-Caffo): the interval has width.
    assert proportions(100.0, 400, 100.0, 400).hi > 0
    # Paired rows: models that agree on every row still carry half a row of doubt each way; on
    # 453 rows that is far inside 2.5 pp; on 99 rows, with Student's t over 5 repeats, +-2.8 pp:
    # wider than the band, so no agreement on 99 rows could show "nearly equal".
    assert discordant_se(0, 0, 453) == pytest.approx(100 / 453) and discordant_se(0, 0, 99) == pytest.approx(100 / 99)
    assert v(cl.paired_rows([0.0] * 5, [discordant_se(0, 0, 453)] * 5, 453), "nearly equal") == HOLDS
    agree = cl.paired_rows([0.0] * 5, [discordant_se(0, 0, 99)] * 5, 99)
    assert agree.hi == pytest.approx(2.7764451051977934 * 100 / 99) and v(agree, "nearly equal") == BELOW_POWER
    apart = cl.paired_rows([5.05] * 5, [discordant_se(5, 0, 99)] * 5, 99)
    assert v(apart, "worse") == UNDECIDED           # 5 rows of 99 cannot show a gap beyond 2.5 pp
    # Over repeats, the rows' error and the repeats' spread take Student's t on n - 1: five pass
    # orders are not the normal quantile's many.
    diffs, se = [0.2, 0.6, 0.4, 0.4, 0.4], 0.3
    rows = cl.paired_rows(diffs, [se] * 5, 453)
    half = 2.7764451051977934 * math.sqrt(se ** 2 + np.var(diffs, ddof=1) / 5)       # t(0.975, 4)
    assert (rows.lo, rows.hi) == pytest.approx((0.4 - half, 0.4 + half)) and rows.how == "5 repeats on 453 test rows"
    assert difference_over(diffs, within=se).hi == pytest.approx(rows.hi)
    # One repeat with a within error is no interval over repeats: the normal quantile on it alone.
    one = difference_over([0.4], within=se)
    assert (one.lo, one.hi) == pytest.approx((0.4 - 1.959963984540054 * se, 0.4 + 1.959963984540054 * se))
    # Across repeats alone (no test-row error): Student's t over them.
    folds = difference_over([1.0, 2.0, 3.0, 2.0, 2.0])
    assert folds.value == pytest.approx(2.0) and folds.hi - folds.lo == pytest.approx(
        2 * 2.7764451051977934 * np.std([1, 2, 3, 2, 2], ddof=1) / math.sqrt(5))


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


def _est(lo, hi, value=None):
    return Estimate((lo + hi) / 2 if value is None else value, lo, hi, 5, "5 repeats")


def test_an_interval_wider_than_its_band_is_below_detectable_power():
    # nearly equal: a band 5 pp wide. Straddling an edge and 5.02 wide: below power; 4.98 wide:
    # undecided; 6 wide but wholly outside: differs, power or not.
    assert v(_est(-2.0, 3.02), "nearly equal") == BELOW_POWER
    assert v(_est(-2.0, 2.98), "nearly equal") == UNDECIDED
    assert v(_est(2.6, 8.6), "nearly equal") == DIFFERS
    assert v(_est(-2.4, 2.4), "nearly equal") == HOLDS
    # A ratio's band on the log scale: about 4x is 2.67x-6x, a factor 2.25 wide.
    assert v(_est(2.0, 4.6, 3.0), "about", k=4.0) == BELOW_POWER        # a factor 2.3 wide
    assert v(_est(2.0, 4.4, 3.0), "about", k=4.0) == UNDECIDED          # a factor 2.2 wide
    # A band open on one side has no width to be under: never below power, however wide.
    assert v(_est(0.5, 500.0, 5.0), "greater") == UNDECIDED
    assert v(_est(-40.0, 40.0), "worse") == UNDECIDED
    # Fewer than MIN_REPEATS repeats stay undecided (that reason first).
    assert cell_verdict(Estimate(0.0, -9.0, 9.0, 2, "2 repeats"), KINDS["nearly equal"], {}) == UNDECIDED


POWER = StudyRules("toy", (("a", THEIRS, "theirs"),), (
    Claim("same", "A is as accurate as B", "nearly equal", "acc(A) - acc(B)", "dataset", "5 folds"),))


def test_cells_below_power_are_set_aside_and_named():
    claim = POWER.claim("same")
    f = judge(POWER, claim, [Cell("a", "big", _est(-1.0, 1.0)), Cell("a", "small", _est(-6.0, 7.0))])
    assert f.verdict == HOLDS and f.why.startswith("set aside: below detectable power at small")
    assert "wider than the band (within ±2.5 pp)" in f.why and "(below detectable power)" in f.ours
    only = judge(POWER, claim, [Cell("a", "small", _est(-6.0, 7.0))])
    assert only.verdict == BELOW_POWER and only.why.startswith("below detectable power at small")
    # Another cell that straddles keeps the finding undecided, its own reason first.
    mixed = judge(POWER, claim, [Cell("a", "edge", _est(1.0, 3.0)), Cell("a", "small", _est(-6.0, 7.0))])
    assert mixed.verdict == UNDECIDED and mixed.why.startswith("the 95% interval of edge covers an edge")
    assert "set aside: below detectable power at small" in mixed.why


COND = StudyRules("toy", (("a", THEIRS, "theirs"), ("s", STAND_IN, "stand-in", ((ACCURACY, "numbers, not words"),))), (
    Claim("premise", "no free support vector", "share", "share of folds", "point", "exact", params=(("lo", 1.0),
                                                                                               ("hi", 1.0))),
    Claim("then", "then the accuracy is low", "worse", "best minus there", "point", "5 folds", given="premise"),
    Claim("acc", "A as accurate as B", "nearly equal", "acc(A) - acc(B)", "dataset", "5 folds"),
    Claim("fast", "A faster than B", "greater", "time(B) / time(A)", "dataset", "5 seeds"),
))


def test_a_claim_given_another_is_judged_only_where_that_one_holds():
    low = [Cell("a", "C=0.1", _est(40.0, 50.0))]
    held, failed = (judge(COND, COND.claim("premise"), [Cell("a", "C=0.1", exact(x))]) for x in (1.0, 0.2))
    assert (held.verdict, failed.verdict) == (HOLDS, DIFFERS)
    assert judge(COND, COND.claim("then"), low, premise=held).verdict == HOLDS
    f = judge(COND, COND.claim("then"), low, premise=failed)
    assert f.verdict == PREMISE_NOT_MET and "finding 1 (premise) holds, and it differs" in f.why
    assert "C=0.1: +45.00 pp" in f.ours                        # the numbers are still shown
    assert "judged only where `premise` holds" in COND.claim("then").rule_text()
    missing = judge(COND, COND.claim("then"), low, premise=Finding("", "", NOT_CHECKED))
    assert missing.verdict == NOT_CHECKED and "was not checked" in missing.why
    with pytest.raises(ValueError, match="then is judged only where premise holds"):
        judge(COND, COND.claim("then"), low)
    with pytest.raises(ValueError, match="is given 'nosuch', which is no claim"):
        StudyRules("toy", (), (Claim("x", "x", "greater", "s", "c", "r", given="nosuch"),))


def test_a_dataset_kept_out_of_a_class_of_claims_is_out_of_each_of_them_and_no_other():
    apart = _est(5.0, 7.0)
    acc = judge(COND, COND.claim("acc"), [Cell("a", "a", _est(-1.0, 1.0)), Cell("s", "s", apart)])
    assert acc.verdict == HOLDS and "not judged (s: kept out of every accuracy claim" in acc.ours
    alone = judge(COND, COND.claim("acc"), [Cell("s", "s", apart)])
    assert alone.verdict == NOT_COMPARABLE and alone.why == "s is kept out of every accuracy claim: numbers, not words"
    # A time claim on the same stand-in is judged there (its mechanism).
    assert judge(COND, COND.claim("fast"), [Cell("s", "s", ratio_over([0.5] * 5))]).verdict == DIFFERS
    assert COND.digest() != StudyRules("toy", (("a", THEIRS, "theirs"), ("s", STAND_IN, "stand-in")),
                                       COND.claims).digest()


def test_lint_finds_a_printed_number_judged_as_a_mechanism_on_a_stand_in():
    data = (("a", THEIRS, "theirs"), ("s", STAND_IN, "a stand-in"))

    def problems(*claims, d=data):
        return lint(StudyRules("toy", d, claims))
    # A band that is the paper's number, or a statistic against theirs, must name the number.
    assert "claim k: its kind 'about' takes the paper's number" in problems(
        Claim("k", "about 3.4x", "about", "a ratio", "c", "r", params=(("k", 3.4),)))[0]
    assert "claim m: its statistic measures against the paper's ('minus theirs')" in problems(
        Claim("m", "99%", "nearly equal", "ours minus theirs", "c", "r", scope=LEVEL))[0]
    assert problems(Claim("q", "x", "greater", "SMO's time over SVMlight's (at their q)", "c", "r")) == []
    assert problems(Claim("d", "x", "greater", "a ratio over the paper's 5 datasets", "c", "r")) == []
    # Named, on a study with a stand-in: the default mechanism scope fails; a level or a stated
    # mechanism passes; a study without stand-ins needs neither.
    level = Claim("k", "200 iterations", "within", "ours over theirs", "c", "r", params=(("of", "it"),),
                  printed="200 iterations")
    assert "keeps the default mechanism scope on stand-in data (s)" in problems(level)[0]
    assert problems(Claim(**{**level.__dict__, "scope": LEVEL})) == []
    assert problems(Claim(**{**level.__dict__, "mechanism": "the rate's, on any data"})) == []
    assert problems(level, d=data[:1]) == []
    # ... and judging such a claim on a stand-in's cells refuses, even when nobody ran the lint.
    with pytest.raises(ValueError, match="cites the paper's printed 200 iterations and is judged as a mechanism on "
                                         "the stand-in s"):
        judge(StudyRules("toy", data, (level,)), level, [Cell("s", "s", ratio_over([1.0] * 5))])
    assert judge(StudyRules("toy", data, (level,)), level, [Cell("a", "a", ratio_over([1.0] * 5))]).verdict == HOLDS


def test_a_sensitivity_moves_one_setting_and_enters_the_digest():
    claim = Claim("opt", "the same minimum", "same optimum", "(L - L*) / L*", "start", "exact")
    rules = StudyRules("toy", (), (claim,))
    moved = StudyRules("toy", (), (claim,), sensitivities=(Sensitivity("opt", "at 1.7e-5", (("rel", 1.7e-5),)),))
    assert moved.digest() != rules.digest()
    gap = [Cell("a", "start 0", exact(4e-5))]
    [(s, f)] = cl.sensitivities(moved, {"opt": lambda c: judge(moved, c, gap)})
    assert judge(moved, claim, gap).verdict == HOLDS and f.verdict == DIFFERS
    assert "at most 1.7e-05" in f.rule and "at most 0.0001 (about 4 significant digits)" in claim.rule_text()
    lines = cl.sensitivity_lines(moved, [(s, f)])
    assert any(line.startswith("| `opt` (finding 1) | at 1.7e-5 |") and line.endswith("| **differs** |")
               for line in lines)
    with pytest.raises(ValueError, match="a sensitivity of 'nosuch'"):
        StudyRules("toy", (), (claim,), sensitivities=(Sensitivity("nosuch", "x", ()),))


def test_the_summary_table_says_what_is_reproduced_what_differs_and_what_cannot_be_judged():
    found = [Finding("A is faster (Table 2: 3x)", "o", HOLDS, "", "greater: a ratio, above 1.1x, in each dataset"),
             Finding("B is level (Section 4)", "o", DIFFERS,
                                                                         "ours is compiled; theirs not. More"),
             Finding("C holds", "o", UNDECIDED, "the 95% interval of x covers an edge; the rows are few"),
             Finding("D", "o", BY_CONSTRUCTION, "", "by construction: the KKT conditions decide it; always")]
    lines = cl.outcome_lines(found)
    assert lines[2:] == [
        "| reproduced | 1 | A is faster | the 95% interval lies inside the band in every cell judged |",
        "| differs | 2 | B is level | ours is compiled |",
        "| cannot be judged | 3 | C holds | undecided: the 95% interval of x covers an edge |",
        "| cannot be judged | 4 | D | by construction: the KKT conditions decide it |"]
    assert "1 below detectable power" not in cl.counts_line(found) and "0 premise not met" in cl.counts_line(found)
    some = Finding("E", "o", HOLDS, "", "greater: a ratio, above 1.1x, in at least one dataset, C and entry; ...")
    assert cl.outcome_lines([some])[2].endswith("| the 95% interval lies inside the band in at least one cell |")
    # Cells set aside below power: the row says what the judged cells show, then what was set aside.
    aside = Finding("F", "o", HOLDS, "set aside: below detectable power at heart; the rest", "nearly equal: in each")
    assert cl.outcome_lines([aside])[2] == ("| reproduced | 1 | F | the 95% interval lies inside the band in every cell "
                                            "judged (set aside: below detectable power at heart) |")


@pytest.mark.parametrize("why, first", [
    ("as Shalev-Shwartz et al. 2007 show. More", "as Shalev-Shwartz et al. 2007 show"),
    ("a bound (Shalev-Shwartz et al. 2007; Cor. 1) holds; more", "a bound (Shalev-Shwartz et al. 2007; Cor. 1) holds"),
    ("e.g. the heart set. More", "e.g. the heart set"),
    ("J. Platt's cache; more", "J. Platt's cache"),
    ("the gap is 0.5. More", "the gap is 0.5"),
    ("one clause only.", "one clause only"),
    ("a; b. c", "a"),
])
def test_the_summary_tables_why_is_cut_at_a_sentence_not_a_citation(why, first):
    """The summary's why is its reason's first clause: not cut inside parentheses, nor at the
    period of "et al." or "e.g." or an initial (rupnik's summary once ended "as Shalev-Shwartz et al")."""
    assert cl._first_clause(why) == first


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
    discordant-row error: the interval is Student's t on n - 1 degrees of freedom on
    sqrt(mean(se)^2 + var/n), so dropping either term narrows it."""
    diffs, ses = [1.0, 2.0, 4.0, 3.0, 5.0], [discordant_se(b, c, 99) for b, c in ((1, 2), (1, 3), (0, 4), (2, 5), (0, 5))]
    est = cl.paired_rows(diffs, ses, 99)
    se = math.sqrt(np.mean(ses) ** 2 + np.var(diffs, ddof=1) / 5)
    t4 = 2.7764451051977934                # Student's t at 95% (CONFIDENCE) on 5 - 1 degrees of freedom
    assert est.value == pytest.approx(3.0) and est.n == 5
    assert (est.lo, est.hi) == pytest.approx((3.0 - t4 * se, 3.0 + t4 * se), rel=1e-12)
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
    assert est.hi - est.lo == pytest.approx(2 * 4.302652729749462 * se, rel=1e-12)   # t on 2 degrees
