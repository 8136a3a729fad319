"""Sweeps that search instead of enumerating (`search.kind`; docs/guide/search.md).

- ``grid``: every point of each solver entry's grid, on every fold (the default).
- ``certified``: a C search over [C_min, C_max] until the best CV error found is certified
  within epsilon of the best over the whole range (`certified`; the bound: solvers/cv_bounds.py).
- ``halving``: successive halving over each entry's grid, the solver's budget as the resource
  (`halving`).

A search is a sequence of rounds; each round is a plan of keyed fit specs, run by the engine into
the run directory's shards like any sweep's (`pipeline.search_run.run_search`), so a killed
search resumes without refitting what it has. The strategies here are pure functions of the fits
so far and import nothing else of the pipeline (the config reads them at validation; the first
round's points: `experiment.search_points`).
"""
