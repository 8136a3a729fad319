"""Task keys of reference plans, pinned: what a key hashes decides which shards a rerun reuses.

A key that stops hashing something that changes a result (a budget key, say) makes a rerun with
a tighter tol reuse the old shards; a key that starts hashing something new orphans every shard
already written. So the keys of a few reference plans are pinned here digit for digit, and each
budget key is varied on its own. The plans are made from hand-made labels (no store): the plan is
a pure function of the validated experiment and the datasets' fingerprints and labels.
"""
import hashlib

import numpy as np
import pytest

from pipeline.experiment.config import compose, validate
from pipeline.experiment.plan import build_plan


def _labels(*entries, n=60, features=5):
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    return {e: ({"name": e, "fingerprint": hashlib.sha256(e.encode()).hexdigest(), "n_features": features,
                 "n_rows": n}, y) for e in entries}


def _plan(tmp_path, *overrides, datasets=("toy_blobs",)):
    exp = validate(compose([f"store.root={tmp_path}", f"datasets=[{','.join(datasets)}]", *overrides]))
    return build_plan(exp, _labels(*datasets))


def _digest(plan, timing: bool = False) -> str:
    """Every key the plan hashes: fits with their C path and reference, and the references; the
    sweep's fits, or (timing) the timing fits, a kind of spec added later whose keys are pinned
    apart, so that adding it is seen to leave every earlier key as it was."""
    rows = sorted(f"{k} {s['path']} {s['reference_key']}" for k, s in plan.fits.items() if ("timing" in s) == timing)
    rows += sorted(plan.references) if not timing else []
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def _sweep_fits(plan) -> int:
    return len(plan.fits) - plan.timing_fits


# Each reference plan's digest, pinned. A change here means every shard of such a run is orphaned
# (or, worse, reused for a different problem): change a digest only with a reason in the commit.
REFERENCE_PLANS = {
    "default": ((), ("toy_blobs", "breast_cancer")),
    "kernel_grid": (("solvers=[smo]", "solvers.smo.grid.C=[0.1,1,10]", "solvers.smo.grid.gamma=[0.1,1]",
                     "solvers.smo.params.kernel=rbf", "cv=kfold", "cv.folds=3"), ("toy_blobs",)),
    "shared_grid_budget": (("solvers=[dcd,liblinear]", "grid.C=[0.5,2]", "solvers.dcd.params.tol=0.01",
                            "solvers.dcd.params.max_iter=50", "run.reference=true", "run.timeout_s=30"),
                           ("toy_blobs",)),
    "lambda_problem": (("solvers=[pegasos]", "solvers.pegasos.grid.C=null", "solvers.pegasos.grid.lam=[0.01,0.1]", "cv=holdout"),
                       ("toy_blobs",)),
    "smoke": (("smoke=true",), ("toy_blobs", "breast_cancer")),
    "dataset_problem_and_options": (("solvers=[dcd,svmmaj]", "datasets.toy_blobs.problem={lambda: 0.5, lambda_convention: svmmaj}",
                                     "run.keep_models=true", "run.trace_test_error=true", "run.trace_overhead=null",
                                     "cv=kfold_test", "seed=3"), ("toy_blobs", "breast_cancer")),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_PLANS))
def test_reference_plan_keys_are_pinned(tmp_path, name):
    overrides, datasets = REFERENCE_PLANS[name]
    plan = _plan(tmp_path, *overrides, datasets=datasets)
    assert (_sweep_fits(plan), len(plan.references), _digest(plan)) == PINNED[name]
    assert (plan.timing_fits, _digest(plan, timing=True)) == TIMING_PINNED[name]


PINNED = {
    "dataset_problem_and_options": (40, 0, "dba4ebe6b180bd8f"),
    "default": (140, 70, "2fe13d57a534a410"),
    "kernel_grid": (18, 0, "d40d2f347490b12d"),
    "lambda_problem": (2, 0, "4b79e100cc92987f"),
    "shared_grid_budget": (20, 10, "57565d900295ad61"),
    "smoke": (32, 16, "560acb9dc013de2c"),
}


# The timing fits of each plan (plan.timing_template): as many as the fits of the problems two
# solver entries share (every fit of "default" and "smoke"; none where one entry runs alone).
TIMING_PINNED = {
    "dataset_problem_and_options": (0, "e3b0c44298fc1c14"),
    "default": (140, "dc54b540b893693a"),
    "kernel_grid": (0, "e3b0c44298fc1c14"),
    "lambda_problem": (0, "e3b0c44298fc1c14"),
    "shared_grid_budget": (20, "06e59db76a459395"),
    "smoke": (32, "15cd1f49ea4b6556"),
}


BUDGETS = [("tol", "0.001"), ("max_iter", "77"), ("time_limit_s", "12.5")]


@pytest.mark.parametrize("key, value", BUDGETS)
def test_every_budget_key_is_in_the_fit_keys(tmp_path, key, value):
    """A rerun with another budget must compute again: every fit of the entry gets a new key, and
    the fits of the other entry keep theirs (as do the references: their budget is the run's)."""
    base = ("solvers=[dcd,liblinear]", "solvers.dcd.grid.C=[0.5,2]", "solvers.liblinear.grid.C=[0.5,2]",
            "run.reference=true")
    before = _plan(tmp_path, *base)
    after = _plan(tmp_path, *base, f"++solvers.dcd.params.{key}={value}")
    changed = {s["solver_entry"] for k, s in before.fits.items() if k not in after.fits}
    kept = {s["solver_entry"] for k, s in before.fits.items() if k in after.fits}
    assert changed == {"dcd"} and kept == {"liblinear"}
    assert set(before.references) == set(after.references)
    assert len(after.fits) == len(before.fits)


@pytest.mark.parametrize("key, value", [("reference_tol", "1e-7"), ("reference_max_iter", "500"),
                                        ("reference_time_limit_s", "5")])
def test_every_reference_budget_key_is_in_the_reference_keys(tmp_path, key, value):
    base = ("solvers=[dcd,liblinear]", "run.reference=true")
    before, after = _plan(tmp_path, *base), _plan(tmp_path, *base, f"run.{key}={value}")
    assert before.references and not set(before.references) & set(after.references)
    # The fits point at the new references but are the same fits: their own keys stay.
    assert set(before.fits) == set(after.fits)
    assert {s["reference_key"] for s in after.fits.values()} == set(after.references)


def test_the_run_timeout_is_the_budget_of_fits_without_their_own(tmp_path):
    base = ("solvers=[dcd,liblinear]", "solvers.dcd.params.time_limit_s=9")
    before, after = _plan(tmp_path, *base), _plan(tmp_path, *base, "run.timeout_s=31")
    moved = {s["solver_entry"] for k, s in before.fits.items() if k not in after.fits}
    assert moved == {"liblinear"}
