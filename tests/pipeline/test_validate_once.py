"""`python -m pipeline` composes, validates once and runs the typed experiment it validated:
the run does not validate the config again, and validation reads no store and fits nothing."""

def test_a_single_run_is_checked_once(tmp_path, monkeypatch):
    """A real single run (`Command.run`, in this process): `preflight` once, and `validate` once,
    inside it; `run` takes the Experiment it returned and checks nothing again."""
    import pipeline.experiment.config as config
    import pipeline.preflight as preflight
    from pipeline.command import Command
    calls = {"validate": 0, "preflight": 0}

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call
    monkeypatch.setattr(config, "validate", counted("validate", config.validate))
    monkeypatch.setattr(preflight, "preflight", counted("preflight", preflight.preflight))
    monkeypatch.setenv("SVMBENCH_STORE", str(tmp_path / "store"))
    code = Command(["cluster=sequential", "datasets=[toy_blobs]", "datasets.toy_blobs.max_rows=60", "cv=holdout",
                    "solvers=[dcd]", "solvers.dcd.grid.C=[1.0]", "run.reference=false", "run.progress=false",
                    "report.figures=false", f"hydra.run.dir={tmp_path / 'run'}"]).run()
    assert code == 0
    assert calls == {"validate": 1, "preflight": 1}
    assert (tmp_path / "run" / "results.parquet").is_file()


def test_validation_reads_no_store(tmp_path):
    """A store entry the store lacks passes validation (nothing is listed) and is refused by
    planning; so does a store root that does not exist."""
    from pipeline.experiment.config import compose, validate
    exp = validate(compose([f"store.root={tmp_path / 'nowhere'}", "datasets=[toy_blobs]",
                            "datasets.toy_blobs.builder=ingested_elsewhere", "solvers=[dcd]"]))
    assert exp.datasets["toy_blobs"].builder == "ingested_elsewhere"
    assert not (tmp_path / "nowhere").exists()
