"""Typed specs (`experiment.specs`): immutable, without a per-instance dict, and read as the dict
a spec was before them, which the keys hash and the shards store, key for key."""
import pickle

import pytest

from pipeline.experiment.specs import FitSpec, ReferenceSpec, spec_from_dict

from .typed_specs import DATA, fit_spec


def test_a_spec_is_immutable_and_has_no_per_instance_dict():
    spec = fit_spec("fit-1")
    with pytest.raises(AttributeError):
        spec.key = "fit-2"
    assert not hasattr(spec, "__dict__")
    assert pickle.loads(pickle.dumps(spec)) == spec and type(pickle.loads(pickle.dumps(spec))) is FitSpec


def test_a_spec_reads_as_its_dict_with_unset_fields_left_out_and_transport_fields_never_stored():
    spec = fit_spec("fit-1", timing={"method": "ladder"}, ladder={"f_star": 1.5}, plugin_text="x = 1")
    as_dict = spec.as_dict()
    # The fields every fit carries, in field order, then the ones set; `template` never.
    assert list(as_dict) == ["kind", "data", "fold", "solver_entry", "solver", "solver_version", "family", "problem",
                             "budget", "solver_params", "task", "grid_point", "trace", "warm_start", "timing", "key",
                             "seed", "path", "plugin_text", "reference_key", "ladder"]
    assert spec["timing"] == {"method": "ladder"} and spec.is_ladder and "cv_bound" not in spec
    with pytest.raises(KeyError):
        spec["cv_bound"]
    assert spec.get("cv_bound", 7) == 7 and spec["path"] is None        # path: carried None
    # As a shard stores it: without its key (the record's) and what travels to the workers only.
    assert set(as_dict) - set(spec.as_dict(stored=True)) == {"key", "plugin_text", "ladder"}
    assert spec_from_dict(as_dict) == spec


def test_a_reference_has_no_fit_fields_in_its_dict():
    ref = ReferenceSpec(DATA, 1, {"C": 2.0}, "liblinear", "2.4", {"tol": 1e-9}, key="ref-1")
    assert ref.kind == "reference" and ref.solver_entry is None and not ref.is_timing
    assert list(ref.as_dict()) == ["kind", "data", "fold", "problem", "solver", "solver_version", "budget", "key",
                                   "seed", "path"]
    with pytest.raises(TypeError, match="no field solver_entry"):
        spec_from_dict({**ref.as_dict(), "solver_entry": "dcd"})
