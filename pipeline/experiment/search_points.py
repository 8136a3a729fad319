"""A search's first round, from the validated config (`config._experiment`): each solver entry's
points before any fit (`SolverEntry.points`), and a halving search's rungs. Pure functions of the
search section and the entry; the strategies they call (`pipeline.search`) import nothing of
the pipeline, so the config reads them without a circle, and the search's rounds after the
first are `pipeline.search_run`'s.
"""
from __future__ import annotations

from ..search.certified import Settings, first_points as certified_points
from ..search.halving import schedule
from ..search.path import path_Cs
from .schema import DEFAULT_TOL


def first_points(search: dict, entry: dict, key: str, points: list[dict]) -> list[dict]:
    """A solver entry's points of the first round (its `SolverEntry.points`): the grid's points
    (grid), the first C values (certified), the C path (path, where search.C_start gives its
    start), or every candidate at the first rung's resource
    (halving). entry: the validated entry (plain data); search: the search section; points: the
    entry's grid (`config.grid_points`), which the config hands over: the search reads no config."""
    kind = search["kind"]
    if kind in ("certified", "heldout"):
        return certified_points(Settings(**{f: search[f] for f in Settings.__dataclass_fields__}))
    if kind == "path":
        # LIBLINEAR's start reads the rows (`search_run.PathSearch`): without C_start the entry has
        # no point before the data are read, and the search's one round is planned then.
        return [] if search["C_start"] is None else [{"C": C} for C in path_Cs(search["C_start"], search["C_max"])]
    if kind == "halving":
        rungs = halving_rungs(search, entry, key, len(points))
        return [{**p, search["resource"]: rungs[0].resource} for p in points]
    return points


def last_resource(search: dict, entry: dict, key: str) -> float:
    """The entry's own max_iter or tol, or all of each training fold's rows: the last rung's
    resource unless min_resources says otherwise (tol: the plan's default where the entry sets
    none; max_iter: its solver's)."""
    import solvers
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
