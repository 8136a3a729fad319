"""The search strategies' pure rules at their edges (pipeline/search/): which CV error the
certified search keeps for a C fitted at several tolerances, and which candidates halving
promotes (the n lowest errors, ties to the earlier, a candidate with a missing fold never). The
searches run end to end in test_search.py; these pin the rules those runs cannot tell apart."""
import math

import numpy as np
import pytest

from pipeline.search import certified, halving
from pipeline.search.certified import FoldFit, cv_errors
from solvers.cv_bounds import Certificate, LowerBound, lower_bound


def _fits(C, tol, errors, certificate=object()):
    return [FoldFit(C=C, tol=tol, fold=k, error=e, certificate=certificate) for k, e in enumerate(errors)]


@pytest.mark.parametrize("order", ["loose first", "tight first"])
def test_a_C_refitted_at_a_tighter_tolerance_keeps_the_tighter_fits_error(order):
    """C = 1 fitted at tol 1e-2 (error 0.30 on each fold) and refitted at 1e-4 (0.20): its CV
    error is the refit's, whichever order the fits come in; a refit missing a fold does not
    count yet (C = 10 keeps its looser complete fit), nor does a failed fold (no certificate)
    or a non-finite error."""
    loose, tight = _fits(1.0, 1e-2, [0.3, 0.3, 0.3]), _fits(1.0, 1e-4, [0.1, 0.2, 0.3])
    fits = loose + tight if order == "loose first" else tight + loose
    fits += _fits(10.0, 1e-2, [0.4, 0.5, 0.6]) + _fits(10.0, 1e-4, [0.1, 0.1])
    fits += _fits(0.1, 1e-4, [0.5, 0.5]) + [FoldFit(C=0.1, tol=1e-4, fold=2, error=0.5, certificate=None)]
    fits += _fits(100.0, 1e-4, [0.2, math.nan, 0.2])
    out = cv_errors(fits, n_folds=3)
    assert out == {1.0: (pytest.approx(0.2), 1e-4), 10.0: (pytest.approx(0.5), 1e-2)}


def test_halving_promotes_the_lowest_errors_ties_to_the_earlier_candidate():
    errors = [0.3, 0.1, None, 0.2, 0.1, math.nan, 0.2, 0.05]
    assert halving.promote(errors, 1) == [7]
    assert halving.promote(errors, 2) == [1, 7]                  # 0.05, then the first of the two 0.1s
    assert halving.promote(errors, 3) == [1, 4, 7]
    assert halving.promote(errors, 4) == [1, 3, 4, 7]            # of the two 0.2s, the earlier
    # Never a candidate without an error (None: a fold failed; NaN), however many are asked for.
    assert halving.promote(errors, 8) == [0, 1, 3, 4, 6, 7]
    assert halving.promote([None, math.nan], 2) == [] and halving.promote(errors, 0) == []


@pytest.mark.parametrize("n, factor, rungs", [(1, 3, 1), (2, 3, 1), (3, 3, 2), (8, 3, 2), (9, 3, 3), (27, 3, 4),
                                              (26, 3, 3), (4, 2, 3), (5, 2, 3), (8, 2, 4)])
def test_the_number_of_rungs_counts_exact_powers_in_integers(n, factor, rungs):
    """1 + floor(log_factor n), at and beside each power of the factor."""
    assert halving.n_rungs(n, factor) == rungs


def test_halvings_max_iter_rungs_round_up_to_the_last_rungs_own_budget():
    """12 candidates, factor 3, max_iter 100: rungs of 12, 4 and 2 candidates at ceil(100/9),
    ceil(100/3) and 100 iterations (a rung never gets less than its share); tol shrinks by 3 a rung."""
    rungs = halving.schedule(12, 3, "max_iter", 100)
    assert [(r.n_candidates, r.resource) for r in rungs] == [(12, 12), (4, 34), (2, 100)]
    assert [r.resource for r in halving.schedule(12, 3, "tol", 1e-3)] == pytest.approx([9e-3, 3e-3, 1e-3])


# ------------------------------------------------------------------ the certified search's rounds
# Hand-made certificates on one fold of 10 validation rows, none with a gap unless said: a row with
# t = -tanh(h / 2) and ||v||^2 = 1 is certainly misclassified for |log C - log C~| < h
# (cv_bounds.Certificate.intervals). The h and log C~ below (0.5, 1.5, 2.5...) make every end
# exact in floating point, so the bound's steps are where they are meant to be.
def _cert(C, hs, gap=0.0, n_val=10, rows=None):
    t = -np.tanh(np.asarray(hs, dtype=float) / 2.0)
    return Certificate(C=C, norm_sq=1.0, gap=gap, n_val=n_val,
                       rows=np.arange(len(hs), dtype=np.int64) if rows is None else np.asarray(rows, np.int64), t=t)


def _settings(**kw):
    return certified.Settings(**{"C_min": math.exp(-3), "C_max": math.exp(3), "epsilon": 0.05, **kw})


def _fold_fits(C, error, cert, tol=1e-3, status="converged"):
    return [FoldFit(C=C, tol=tol, fold=0, error=error, certificate=cert, status=status)]


def _ranges(rs):
    return [(r["lo"], r["hi"], r["low"], r["at"], *r["plateau"]) for r in rs]


def test_the_first_round_is_log_spaced_with_both_ends_and_one_point_is_the_middle():
    s = certified.Settings(C_min=0.01, C_max=100.0, epsilon=0.01, initial=5)
    assert certified.first_points(s) == [{"C": 0.01}, {"C": 0.1}, {"C": 1.0}, {"C": 10.0}, {"C": 100.0}]
    assert certified.first_points(certified.Settings(C_min=0.01, C_max=100.0, epsilon=0.01, initial=2)) == \
        [{"C": 0.01}, {"C": 100.0}]
    for initial in (1, 0):
        assert certified.first_points(certified.Settings(C_min=0.04, C_max=25.0, epsilon=0.01, initial=initial)) == \
            [{"C": 1.0}]


def test_a_C_is_rounded_to_twelve_significant_digits():
    assert certified.rounded(0.1 + 0.2) == 0.3 and certified.rounded(1 / 3) == 0.333333333333
    assert certified.rounded(123456789.0123456) == 123456789.012


def test_settings_are_read_from_the_search_config_by_field():
    class Search:
        C_min, C_max, epsilon, initial, per_round, max_rounds, refine, min_tol = 0.5, 8.0, 0.02, 3, 4, 7, 0.2, 1e-7
        kind = "certified"
    assert certified.Settings.of(Search()) == certified.Settings(0.5, 8.0, 0.02, 3, 4, 7, 0.2, 1e-7)


def test_runs_are_the_first_and_last_index_of_each_run_of_true():
    assert certified._runs(np.array([False, True, True, False, True])) == [(1, 2), (4, 4)]
    assert certified._runs(np.array([True, True])) == [(0, 1)]
    assert certified._runs(np.array([False, False])) == []


def test_the_uncertified_ranges_each_at_the_middle_of_its_widest_lowest_plateau():
    """Three rows certified on (-1.5, 1.5) around C = 1 and one on (1.5, 2.5): the bound is 0.3,
    then 0 at 1.5 itself (both intervals open there), 0.1, then 0. Below 0.3 - 0.05: [-3, -1.5]
    and [1.5, 3], the second's lowest plateaus the point 1.5 and [2.5, 3]: at the widest's middle."""
    bound = lower_bound([[_cert(1.0, [1.5, 1.5, 1.5]), _cert(math.exp(2.0), [0.5], rows=[3])]])
    assert bound.at(np.exp([-1.5, 0.0, 1.5, 2.0, 2.5])).tolist() == pytest.approx([0, 0.3, 0, 0.1, 0])
    assert _ranges(certified.uncertified(_settings(), bound, 0.3)) == [
        (-3.0, -1.5, 0.0, -2.25, -3.0, -1.5), (1.5, 3.0, 0.0, 2.75, 2.5, 3.0)]
    # Only where the bound is strictly below best - epsilon; of equal lows, the widest first.
    assert [(r["lo"], r["hi"]) for r in certified.uncertified(_settings(epsilon=0.2), bound, 0.3)] == [
        (-3.0, -1.5), (2.5, 3.0), (1.5, 1.5)]
    assert certified.uncertified(_settings(epsilon=0.3), bound, 0.3) == []


def test_the_uncertified_range_with_the_lowest_bound_comes_first_however_narrow():
    """A range of bound 0.1 over [-3, -0.5] and one of 0 over [0.5, 2], narrower: the lower first."""
    bound = LowerBound(((np.array([-3.5, -0.5, -0.5]), np.array([0.0, 0.5, 0.5]), 10, 0),))
    ranges = certified.uncertified(_settings(C_max=math.exp(2.0), epsilon=0.0), bound, 0.15)
    assert [(r["lo"], r["hi"], r["low"]) for r in ranges] == [(0.5, 2.0, 0.0), (-3.0, -0.5, 0.1)]


def test_decide_certifies_when_the_best_error_is_within_epsilon_of_the_bound_exactly():
    """E_best - min LB = epsilon exactly is certified (<=), not a point more; of two equal errors
    the best C is the smaller; the reason names both numbers, the range and where the bound's
    minimum is (its first C). Row 0 is certified over all of [0, 1.5] in log C, row 1 on
    (-0.5, 0.5) and (1, 2): the bound is 1/4 on [0.5, 1]."""
    fits = _fold_fits(1.0, 0.5, _cert(1.0, [2.5, 0.5], n_val=4))
    fits += _fold_fits(math.exp(1.5), 0.5, _cert(math.exp(1.5), [2.5, 0.5], n_val=4))
    s = certified.Settings(C_min=1.0, C_max=math.exp(1.5), epsilon=0.25)
    d = certified.decide(s, fits, 1, rounds_done=1)
    assert (d.best_C, d.best_error, d.bound_min) == (1.0, 0.5, 0.25)
    assert d.done and d.certified and d.points == []
    assert d.errors == {1.0: (0.5, 1e-3), math.exp(1.5): (0.5, 1e-3)}
    assert d.reason == ("certified: the best CV error found, 0.5000 at C=1, is within epsilon=0.25 of the lower "
                        "bound's minimum over [1, 4.48169], 0.2500 at C=1.649")
    narrower = certified.decide(certified.Settings(C_min=1.0, C_max=math.exp(1.5), epsilon=0.24), fits, 1, 1)
    assert not narrower.done and narrower.points


def test_decide_without_a_complete_C_is_done_and_says_why():
    d = certified.decide(_settings(), _fold_fits(1.0, 0.3, None), 1, rounds_done=0)
    assert d.done and not d.certified and d.points == [] and math.isnan(d.best_C) and math.isnan(d.bound_min)
    assert d.reason == ("no C has a validation error on every fold (every fit of some fold failed: see the "
                        "results' status and error columns)")


def test_a_round_places_a_point_in_each_uncertified_range_up_to_per_round():
    """C = 1 certifies its three misclassified rows on (-1.5, 1.5): the ranges [-3, -1.5] and
    [1.5, 3] get a point each at their plateau's middle, e^-2.25 and e^2.25, rounded;
    per_round=1: only the first. max_rounds rounds done: one more; more: the end, and why."""
    fits = _fold_fits(1.0, 0.3, _cert(1.0, [1.5, 1.5, 1.5]))
    d = certified.decide(_settings(), fits, 1, rounds_done=1)
    left, right = {"C": certified.rounded(math.exp(-2.25))}, {"C": certified.rounded(math.exp(2.25))}
    assert not d.done and d.points == [left, right] and d.reason == ""
    assert certified.decide(_settings(per_round=1), fits, 1, 1).points == [left]
    assert certified.decide(_settings(max_rounds=3), fits, 1, rounds_done=3).points == [left, right]
    ended = certified.decide(_settings(max_rounds=3), fits, 1, rounds_done=4)
    assert ended.done and not ended.certified and ended.points == []
    assert ended.reason == (
        "not certified: max_rounds=3 reached; the bound's minimum 0.0000 (C=0.04979) is 0.3000 below the best CV "
        "error 0.3000 (C=1); it stays below best - epsilon on 2 range(s) within C in [0.04979, 20.09]; there a fit "
        "certifies a misclassified validation row for C within a factor 4.48 of its own (median over rows), and its "
        "duality gap hides 0% of those rows")


# Two rows hidden by the gap (t^2 = G: the bound needs t^2 > G), one counted.
HIDDEN = float(np.tanh(0.25) ** 2)


def test_a_fit_whose_gap_hides_rows_is_refitted_tighter_before_a_new_C_beside_it():
    """C = 1's error is 0.3 but its gap hides two of its three rows: its own bound is 0.1, 0.2
    below its error, more than epsilon / 2: it is refitted at tol x refine, down to min_tol
    exactly (2e-6 x 0.5 = 1e-6 is allowed; 1e-6 x 0.5 is not: then a new C instead)."""
    cert = _cert(1.0, [1.5, 0.5, 0.5], gap=HIDDEN)
    s = _settings(per_round=1, refine=0.5, min_tol=1e-6)
    assert certified.decide(s, _fold_fits(1.0, 0.3, cert, tol=2e-6), 1, 1).points == [{"C": 1.0, "tol": 1e-6}]
    new_C = certified.decide(s, _fold_fits(1.0, 0.3, cert, tol=1e-6), 1, 1).points
    assert len(new_C) == 1 and "tol" not in new_C[0]
    # A fit stopped at its iteration cap is not refitted (a tighter tol stops at the same place).
    for status in certified.CAPPED:
        capped = certified.decide(s, _fold_fits(1.0, 0.3, cert, tol=2e-6, status=status), 1, 1).points
        assert len(capped) == 1 and "tol" not in capped[0]
    # The reason a search ends without a point names the fits stopped short.
    stuck = certified.decide(_settings(max_rounds=0), _fold_fits(1.0, 0.3, cert, status="max_iter"), 1, 1)
    assert stuck.reason.endswith("; the fits at C=1 stopped at their iteration cap, short of their tol (raise max_iter)")
    assert "its duality gap hides 67% of those rows" in stuck.reason


def test_a_fit_whose_gap_hides_exactly_half_epsilon_is_not_refitted():
    """slack = E - LB(C) = epsilon / 2 exactly is accurate enough (> epsilon / 2 is refitted)."""
    cert = _cert(1.0, [1.5, 1.5, 0.5, 0.5], gap=HIDDEN, n_val=8)            # LB(1) = 2/8, E = 3/8
    points = certified.decide(_settings(per_round=1, epsilon=0.25), _fold_fits(1.0, 0.375, cert), 1, 1).points
    assert len(points) == 1 and "tol" not in points[0]
    refit = certified.decide(_settings(per_round=1, epsilon=0.2), _fold_fits(1.0, 0.375, cert), 1, 1).points
    assert refit == [{"C": 1.0, "tol": 1e-4}]


def test_a_plateau_whose_middle_is_fitted_gets_the_middle_of_its_wider_side():
    """The bound is 0 on [-3, 2] (C = e^2.5's rows from 2 up, open): one range, its plateau's
    middle -0.5 the point; once -0.5 is fitted (at min_tol: not refitted), the middle of the
    wider side of it, the left of two equal ones: -1.75."""
    s = _settings(C_max=math.exp(2.0), per_round=2, min_tol=1e-6)
    fits = _fold_fits(math.exp(2.5), 0.3, _cert(math.exp(2.5), [0.5, 0.5, 0.5]))
    assert certified.decide(s, fits, 1, 1).points == [{"C": certified.rounded(math.exp(-0.5))}]
    fits += _fold_fits(certified.rounded(math.exp(-0.5)), 0.3, _cert(math.exp(-0.5), []), tol=1e-6)
    assert certified.decide(s, fits, 1, 1).points == [{"C": certified.rounded(math.exp(-1.75))}]
    # -1.75 fitted too, as tightly as it can be: the range's point is a C fitted already, and the
    # search ends saying so rather than fit it again.
    fits += _fold_fits(certified.rounded(math.exp(-1.75)), 0.3, _cert(math.exp(-1.75), []), tol=1e-6)
    d = certified.decide(s, fits, 1, 1)
    assert d.done and not d.certified and d.points == []
    assert d.reason.startswith("not certified: the bound's lowest point in every range where it is below the best CV "
                               "error less epsilon is a C already fitted as tightly as it can be (min_tol=1e-06, ")
