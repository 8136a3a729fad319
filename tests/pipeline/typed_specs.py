"""Typed specs for tests that hand specs to the engine without a plan (`experiment.specs`):
`fit_spec(key, ...)` fills what the test does not name."""
from pipeline.experiment.specs import FitSpec

DATA = {"entry": "toy", "name": "toy", "max_rows": None}


def fit_spec(key: str, **fields) -> FitSpec:
    """A fit spec of dcd at C = 1, fold 0 on a toy data setting, but for `fields`."""
    base = dict(data=DATA, fold=0, solver_entry="dcd", solver="dcd", solver_version="1", family="linear",
                problem={"C": 1.0}, budget={}, solver_params={}, task={}, grid_point={}, trace={}, warm_start=False)
    return FitSpec(**{**base, **fields}, key=key)
