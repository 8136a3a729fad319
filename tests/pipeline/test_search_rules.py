"""The search strategies' pure rules at their edges (pipeline/search/): which CV error the
certified search keeps for a C fitted at several tolerances, and which candidates halving
promotes (the n lowest errors, ties to the earlier, a candidate with a missing fold never). The
searches run end to end in test_search.py; these pin the rules those runs cannot tell apart."""
import math

import pytest

from pipeline.search import halving
from pipeline.search.certified import FoldFit, cv_errors


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
