"""engine/cutting.py alone: specs in, tasks out, no cluster, no store, no plan builder. The
cutting is a pure function of the specs, so it is checked on specs written out here: every spec
lands in exactly one task, a C path is never split (unless cut into segments for several
workers) and keeps its increasing C, references come
first, and the same specs cut the same way twice."""
from pipeline.engine.cutting import make_tasks, make_units
from pipeline.experiment.specs import FitSpec, ReferenceSpec

DATA = {"name": "toy", "max_rows": None}      # one dataset: the plan shares its data dict


def _fit(key, fold, C, entry, path=None) -> FitSpec:
    return FitSpec(DATA, fold, entry, entry, "1", "linear", {"C": C}, {}, {}, {}, {}, {}, path is not None,
                   key=key, path=path)


def _specs() -> list:
    """Two folds x (a C path of 4 points, 6 lone fits) and one reference listed last, as a plan
    lists them: by grid point, not by fold, a path's points in increasing C (the plan's order,
    which the cutting keeps)."""
    specs = []
    for C in (0.1, 1.0, 10.0, 100.0):
        for fold in (0, 1):
            specs.append(_fit(f"path-{fold}-{C}", fold, C, "dcd", f"p{fold}"))
    for i in range(6):
        for fold in (0, 1):
            specs.append(_fit(f"fit-{fold}-{i}", fold, float(i), "smo"))
    specs.append(ReferenceSpec(DATA, 0, {"C": 1.0}, "dcd", "1", {}, key="ref-0"))
    return specs


def _keys(tasks) -> list[list[list[str]]]:
    return [[[s["key"] for s in unit] for unit in task] for task in tasks]


def test_every_spec_is_in_one_task_paths_whole_references_first_and_the_cut_is_deterministic():
    specs = _specs()
    for workers, chunk in ((1, 1), (2, 3), (2, "auto"), (4, 5)):
        tasks = make_tasks(make_units(specs, workers), workers, chunk)
        keys = [k for task in _keys(tasks) for unit in task for k in unit]
        assert sorted(keys) == sorted(s["key"] for s in specs)          # each spec once, none lost
        assert keys[0] == "ref-0"                                         # the longest solve first
        units = [unit for task in tasks for unit in task]
        for fold in (0, 1):
            path = [u for u in units if u[0].get("path") == f"p{fold}"]
            if workers == 1:                                               # few paths per worker: whole
                assert len(path) == 1 and [s["problem"]["C"] for s in path[0]] == [0.1, 1.0, 10.0, 100.0]
            # cut into segments or not, the points of a path run in increasing C
            assert [s["problem"]["C"] for seg in path for s in seg] == [0.1, 1.0, 10.0, 100.0]
        assert _keys(make_tasks(make_units(specs, workers), workers, chunk)) == _keys(tasks)


def test_a_task_holds_at_least_its_size_and_keeps_a_fold_together_when_that_stays_under_twice_it():
    specs = [s for s in _specs() if s["kind"] == "fit" and not s.get("path")]    # 6 lone fits x 2 folds
    tasks = make_tasks(make_units(specs), 1, 4)
    sizes = [sum(len(u) for u in task) for task in tasks]
    assert sizes == [6, 6]                          # 4 asked; the fold's other 2 join (6 < 2 x 4)
    assert [{u[0]["fold"] for u in task} for task in tasks] == [{0}, {1}]
