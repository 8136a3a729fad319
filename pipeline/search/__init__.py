"""Sweeps that search instead of enumerating (`search.kind`; docs/guide/search.md).

- ``grid``: every point of each solver entry's grid, on every fold (the default).
- ``certified``: a C search over [C_min, C_max] until the best CV error found is certified
  within epsilon of the best over the whole range (`certified`; the bound: solvers/cv_bounds.py).
- ``halving``: successive halving over each entry's grid, the solver's budget as the resource
  (`halving`).

A search is a sequence of rounds; each round is a plan of keyed fit specs, run by the engine into
the run directory's shards like any sweep's (`driver.run_search`), so a killed search resumes
without refitting what it has. The strategies are pure functions of the fits so far.
"""
from __future__ import annotations

from .certified import Settings, first_points as certified_points
from .halving import schedule


def first_points(search: dict, entry: dict, key: str, points: list[dict]) -> list[dict]:
    """A solver entry's points of the first round (its `SolverEntry.points`): the grid's points
    (grid), the first C values (certified), or every candidate at the first rung's resource
    (halving). entry: the validated entry (plain data); search: the search section; points: the
    entry's grid (`config.grid_points`), which the config hands over: the search reads no config."""
    kind = search["kind"]
    if kind == "certified":
        return certified_points(Settings(**{f: search[f] for f in Settings.__dataclass_fields__}))
    if kind == "halving":
        rungs = halving_rungs(search, entry, key, len(points))
        return [{**p, search["resource"]: rungs[0].resource} for p in points]
    return points


def last_resource(search: dict, entry: dict, key: str) -> float:
    """The entry's own max_iter or tol, or all of each training fold's rows: the last rung's
    resource unless min_resources says otherwise (tol: the plan's default where the entry sets
    none; max_iter: its solver's)."""
    import solvers
    from ..experiment.schema import DEFAULT_TOL
    if search["resource"] == "train_fraction":
        return 1.0
    given = (entry["params"] or {}).get(search["resource"])
    if given is not None:
        return float(given)
    if search["resource"] == "tol":
        return DEFAULT_TOL
    return float(solvers.get_solver(entry["solver"] or key).default_max_iter)


def halving_rungs(search: dict, entry: dict, key: str, n_candidates: int):
    """The entry's halving schedule (`halving.schedule`)."""
    return schedule(n_candidates, float(search["factor"]), search["resource"], last_resource(search, entry, key),
                    search["min_resources"])
