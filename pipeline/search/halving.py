"""Successive halving over a grid's points (Jamieson and Talwalkar, AISTATS 2016; scikit-learn's
HalvingGridSearchCV), with the solver's own budget as the resource.

scikit-learn's semantics, kept here: with n candidates and a factor f, there are
R = 1 + floor(log_f n) rungs (its ``n_required_iterations``), fewer if the resource runs out
first (``n_possible_iterations``, when min_resources is given); rung i keeps
ceil(n_{i-1} / f) candidates, the best by mean CV error, and gives each f times the resource of
rung i - 1. What differs:

- the resource is the solver's budget, ``max_iter`` (passes, pair updates: the solver's
  iterations) or ``tol`` (divided by f a rung), or ``train_fraction``, the share of each
  training fold's rows (scikit-learn's default resource, n_samples, as a share: the rows of a
  rung are the first of one stratified order of the fold, so each rung's rows hold the last
  rung's); by default the last rung gets the entry's own budget (all the rows) and the first
  that scaled back by f^(R-1), and min_resources sets the first instead;
- each candidate starts a rung from its own solution of the rung before (a warm start), so a
  rung's max_iter are iterations beyond where its last rung stopped;
- every rung runs each candidate on every fold, as one round of keyed Dask tasks.

Pure functions of the candidates' errors (`schedule`, `promote`): a resumed search reads the
rungs back from the shards and promotes the same candidates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Rung:
    index: int
    n_candidates: int
    resource: float          # max_iter (an integer) or tol


def n_rungs(n_candidates: int, factor: float) -> int:
    """1 + floor(log_factor n), counted in integers (floating logs miscount exact powers)."""
    rungs, left = 1, n_candidates
    while left >= factor:
        left /= factor
        rungs += 1
    return rungs


def schedule(n_candidates: int, factor: float, resource: str, last: float,
             min_resources: float | None = None) -> list[Rung]:
    """The rungs of a halving search over n candidates: each rung's number of candidates and
    resource (module docstring). `last`: the entry's own max_iter or tol."""
    R = n_rungs(n_candidates, factor)
    grows = resource != "tol"           # max_iter and train_fraction grow a rung; tol shrinks
    if min_resources is not None:
        span = (last / min_resources) if grows else (min_resources / last)
        R = max(1, min(R, n_rungs(max(int(span), 1) if resource == "max_iter" else span, factor)))
    counts = [n_candidates]
    for _ in range(R - 1):
        counts.append(math.ceil(counts[-1] / factor))
    rungs = []
    for i, n in enumerate(counts):
        if min_resources is None:
            scale = factor ** (R - 1 - i)
            value = {"max_iter": math.ceil(last / scale), "tol": last * scale}.get(resource, last / scale)
        else:
            value = {"max_iter": round(min_resources * factor ** i), "tol": min_resources / factor ** i}.get(
                resource, min(min_resources * factor ** i, last))
        rungs.append(Rung(i, n, int(max(value, 1)) if resource == "max_iter" else float(f"{value:.12g}")))
    return rungs


def promote(errors: list[float], n_keep: int) -> list[int]:
    """The candidates (indices) with the n_keep lowest CV errors, ties to the earlier candidate
    (the grid's order); a candidate without an error (a failed fold) is never promoted."""
    ranked = sorted((e, i) for i, e in enumerate(errors) if e is not None and math.isfinite(e))
    return sorted(i for _, i in ranked[:n_keep])
