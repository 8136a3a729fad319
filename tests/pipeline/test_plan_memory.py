"""A plan holds its specs as columns, not a dict per spec (issue 30, scenario h).

At 1,000,000 fits a dict per spec was most of a dry run's 958 MB. The plan now keeps shared
templates and a few numbers per spec (`plan.Specs`), and makes a spec's dict when it is read.
The memory is counted, not timed: the bytes tracemalloc sees the plan keep (and peak at while
planning) grow with the number of fits by a slope measured between two plans that differ only
in their number of folds (the same templates), so the templates' own cost cancels out. A dict
per spec costs about 600 bytes a fit here; the columns about 35.
"""
import hashlib
import tracemalloc

import numpy as np
import pytest

from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan, seed_from_key, spec_key

# Bytes a fit, as slopes between two plans (see the module's docstring).
KEPT_PER_FIT = 100
PEAK_PER_FIT = 250
# Bytes a spec to run that execute holds: a view (48), its row (28) and its list slot (8); a dict
# per spec is about 630 here.
VIEW_PER_SPEC = 150


def _labels(n=200):
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    return {"toy_blobs": ({"name": "toy_blobs", "fingerprint": hashlib.sha256(b"toy").hexdigest(),
                           "n_features": 2, "n_rows": n}, y)}


def _experiment(tmp_path, rounds, *overrides):
    return validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd]",
                             "solvers.dcd.grid.C='geomspace(0.01, 100, 200)'", "cv=repeated",
                             f"cv.rounds={rounds}", "cv.test_size=0.2", *overrides]))


def _traced(exp):
    """(bytes the plan keeps, bytes at the peak while planning, the plan)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        plan = build_plan(exp, _labels())
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return kept - before, peak - before, plan


@pytest.mark.parametrize("reference", ["false", "true"])
def test_a_plan_keeps_a_few_bytes_a_fit_not_a_dict_per_spec(tmp_path, reference):
    few, many = (_experiment(tmp_path, rounds, f"run.reference={reference}") for rounds in (5, 45))
    build_plan(few, _labels())       # imports and first-use caches, outside the counts
    kept_few, peak_few, plan_few = _traced(few)
    kept_many, peak_many, plan_many = _traced(many)
    fits = len(plan_many.fits) - len(plan_few.fits)
    assert fits == 200 * 40
    assert (kept_many - kept_few) / fits < KEPT_PER_FIT
    assert (peak_many - peak_few) / fits < PEAK_PER_FIT
    if reference == "true":     # one reference solve a fit (one solver entry, run.reference=true)
        assert len(plan_many.references) == len(plan_many.fits)


def test_specs_read_from_the_columns_are_the_specs_the_keys_hash(tmp_path):
    plan = build_plan(_experiment(tmp_path, 3, "run.reference=true"), _labels())
    fits = list(plan.fits.values())
    assert [f["key"] for f in fits] == list(plan.fits) and len(set(plan.fits)) == len(fits) == 600
    for spec in fits[:5] + fits[-5:]:
        # The key hashes the spec but for what is added after it (`plan._finish`).
        hashed = {k: v for k, v in spec.items() if k not in ("key", "seed", "path", "reference_key")}
        assert spec["key"] == spec_key(hashed, "fit-") and spec["seed"] == seed_from_key(spec["key"])
        assert plan.fits[spec["key"]] == spec and spec["key"] in plan.fits
        assert spec["reference_key"] in plan.references
        ref = plan.references[spec["reference_key"]]
        assert ref["fold"] == spec["fold"] and ref["problem"] == spec["problem"]
        assert ref["key"] == spec_key({k: v for k, v in ref.items() if k not in ("key", "seed", "path")}, "ref-")
    assert dict(plan.fits.items())[fits[7]["key"]] == fits[7]
    # Only keys this plan made: another prefix, upper case, a digest it lacks.
    key = fits[0]["key"]
    for other in ("ref-" + key[4:], key.upper(), key[:-1] + ("0" if key[-1] != "0" else "1"), key + "0", 7):
        assert other not in plan.fits
    with pytest.raises(KeyError):
        plan.fits["fit-0000000000000000"]
    assert plan.fits.count_by("solver_entry") == {"dcd": 600}
    assert plan.fits.reference_of()[key] == fits[0]["reference_key"]
    assert plan.fits.reference_of(list(plan.fits)) == plan.fits.reference_of() == {f["key"]: f["reference_key"] for f in fits}


def test_keys_looked_up_in_bulk_find_the_rows_one_lookup_each_finds(tmp_path):
    """`Specs.rows` (a resumed run's finished keys, all at once) gives each key the row `_row`
    gives it alone, -1 for what this plan did not make: another prefix, upper case, a sign, a
    space, "0x", a digit short or long, non-hex, non-ASCII, not a string; and `select` leaves
    out exactly the rows found."""
    plan = build_plan(_experiment(tmp_path, 3, "run.reference=true"), _labels())
    keys = list(plan.fits)
    key = keys[0]
    pre, tail = key[:-16], key[-16:]
    odd = ["ref-" + tail, key.upper(), pre + tail.upper(), pre + "-" + tail[1:], pre + "+" + tail[1:],
           pre + " " + tail[1:], pre + "0x" + tail[2:], key[:-1], key + "0", pre + "g" * 16, "é" * len(key),
           "", None, 7, pre + "f" * 16, list(plan.references)[0]]
    probe = keys[::-1] + odd + keys[:50]
    bulk = plan.fits.rows(probe)
    assert bulk.tolist() == [plan.fits._row(k) for k in probe]
    assert (bulk[:len(keys)] >= 0).all() and (bulk[len(keys):len(keys) + len(odd)] == -1).all()
    assert plan.references.rows(probe[len(keys):len(keys) + len(odd)]).tolist()[-1] == 0
    left = plan.fits.select(set(keys[100:]) | {None, key.upper()})
    assert [v["key"] for v in left] == keys[:100]
    assert plan.fits.rows([]).size == 0


def test_execute_groups_views_and_makes_the_specs_of_each_task(tmp_path):
    """`execute` groups and cuts views of the specs to run (`SpecView`, a few dozen bytes
    each) and makes the dicts of a task as it cuts it: the same units and tasks as the dicts."""
    from pipeline.engine.cutting import make_tasks, make_units
    from pipeline.experiment.plan import made

    plan = build_plan(_experiment(tmp_path, 4, "run.reference=true"), _labels())
    done = set(list(plan.fits)[::7]) | set(list(plan.references)[::5])
    views = plan.references.select(done) + plan.fits.select(done)
    dicts = [s for s in [*plan.references.values(), *plan.fits.values()] if s.key not in done]
    assert [dict(v) for v in views] == [s.as_dict() for s in dicts]
    for workers in (1, 2, 3):
        assert made(make_units(views, workers, True)) == make_units(dicts, workers, True)
    tasks = make_tasks(make_units(views, 2), 2, "auto")
    assert [made(t) for t in tasks] == make_tasks(make_units(dicts, 2), 2, "auto")

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        views = plan.fits.select(set())
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held / len(views) < VIEW_PER_SPEC


def test_equal_specs_are_one_task_in_the_place_of_the_first(tmp_path):
    """Two grid points that are one spec (a C given twice here; a dataset's own problem keys can
    make points equal) give one key, where the first was, as a dict keyed by key kept them."""
    exp = validate(compose([f"store.root={tmp_path}", "datasets=[toy_blobs]", "solvers=[dcd]",
                            "solvers.dcd.grid.C=[2.0,1.0,2.0]", "cv=kfold", "cv.folds=3"]))
    plan = build_plan(exp, _labels())
    assert [(s["problem"]["C"], s["fold"]) for s in plan.fits.values()] == [(2.0, 0), (2.0, 1), (2.0, 2),
                                                                           (1.0, 0), (1.0, 1), (1.0, 2)]
    assert all(plan.fits[k]["key"] == k for k in plan.fits)
