"""The cv, cluster, run and search sections' rules are declared beside their schema fields
(`schema.allowed`) and `config.check_section` walks them: every declared field refuses a value
out of its range, naming the key and the value, and only for the kinds its rule is for."""
import dataclasses

import pytest
from omegaconf import OmegaConf

from pipeline.experiment.config import ConfigError, check_section
from pipeline.experiment.schema import ClusterConf, CVConf, RunConf, SearchConf


def _fail(key, value, why):
    raise ConfigError(f"{key}={value!r}: {why}")


def _bad(param):
    """A value just outside the declared range."""
    if param.rule is not None:
        return "nonsense"
    if param.kind == "str":
        return "nonsense"
    if param.low is not None:
        return param.low if param.open_low else param.low - 1
    return param.high + 1


SECTIONS = (("cv", CVConf), ("cluster", ClusterConf), ("run", RunConf), ("search", SearchConf))
DECLARED = [(name, schema, f) for name, schema in SECTIONS for f in dataclasses.fields(schema) if "allowed" in f.metadata]


def test_every_section_declares_its_rules():
    assert {f"{n}.{f.name}" for n, _, f in DECLARED} >= {
        "cv.kind", "cv.folds", "cv.test_size", "cv.rounds", "cv.n_train", "cluster.kind", "cluster.n_workers",
        "cluster.threads_per_worker", "cluster.blas_threads", "run.timeout_s", "run.retries", "run.chunk",
        "run.reference", "run.timing", "run.time_repeats", "run.trace_overhead", "search.kind", "search.epsilon",
        "search.initial", "search.per_round", "search.max_rounds", "search.refine", "search.factor", "search.resource"}


@pytest.mark.parametrize("name, schema, f", DECLARED, ids=[f"{n}.{f.name}" for n, _, f in DECLARED])
def test_a_declared_rule_refuses_a_value_out_of_range(name, schema, f):
    when = f.metadata["when"]
    node = OmegaConf.create({**OmegaConf.to_container(OmegaConf.structured(schema)), f.name: None})
    if when is not None:
        node.kind = next(iter(when))
    bad = _bad(f.metadata["allowed"])
    node[f.name] = bad
    with pytest.raises(ConfigError, match=rf"^{name}\.{f.name}={bad!r}: "):
        check_section(name, node, schema, _fail)
    if when is not None:      # another kind does not read the field
        kinds = next(g for g in dataclasses.fields(schema) if g.name == "kind").metadata["allowed"].options
        other = [k for k in kinds if k not in when]
        node.kind = other[0]
        check_section(name, node, schema, _fail)


def test_the_defaults_pass():
    for name, schema in SECTIONS:
        check_section(name, OmegaConf.structured(schema), schema, _fail)
