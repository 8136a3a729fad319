"""A Hydra multirun (`python -m pipeline -m ...`): one run folder per job under the sweep folder,
one Dask cluster for all its jobs, and `python -m pipeline.report SWEEP_DIR` gathering the jobs
into one table that keeps every job's rows and names the job and its overrides."""
import dataclasses
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from pipeline.engine import clusters
from pipeline.experiment.config import compose, validate
from pipeline.report import main as report_main


def test_runs_inside_keep_clusters_share_one_cluster_per_config(monkeypatch):
    opened = []
    real = clusters.open_client

    def spy(cluster):
        opened.append(cluster.n_workers)
        return real(cluster)
    monkeypatch.setattr(clusters, "open_client", spy)
    local = validate(compose(["cluster=local", "cluster.n_workers=1", "cluster.dashboard_address=:0"])).cluster
    other = dataclasses.replace(local, memory_limit="1GB")
    with clusters.keep_clusters():
        with clusters.shared_client(local) as first:
            pass
        assert first.status == "running"            # kept open after its run
        with clusters.shared_client(local) as again:
            assert again is first
        first.close()                                # as if its scheduler went away
        with clusters.shared_client(local) as replaced:
            assert replaced is not first and replaced.status == "running"
        with clusters.shared_client(other) as changed:
            assert changed is not replaced and replaced.status == "closed"   # one cluster kept at a time
    assert changed.status == "closed" and opened == [1, 1, 1]
    # Outside keep_clusters (tests, notebooks calling run()), each run has its own cluster.
    with clusters.shared_client(local) as alone:
        pass
    assert alone.status == "closed" and len(opened) == 4


@pytest.mark.slow
def test_a_multirun_has_a_folder_per_job_one_cluster_and_one_gathered_table(store, tmp_path):
    sweep = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OPENBLAS_NUM_THREADS": "1"}
    # run.chunk changes no task key: the two jobs run the same two fits.
    p = subprocess.run([sys.executable, "-m", "pipeline", "-m", f"store.root={store}", "datasets=[toy_blobs]",
                        "solvers=[dcd]", "cv.folds=2", "solvers.dcd.grid.C=[1.0]", "run.progress=false",
                        "cluster=local", "cluster.n_workers=1", "run.chunk=1,2", f"hydra.sweep.dir={sweep}"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    jobs = {j: pd.read_parquet(sweep / j / "results.parquet") for j in ("0", "1")}
    assert all(len(r) == 2 for r in jobs.values()) and set(jobs["0"]["key"]) == set(jobs["1"]["key"])
    # Both jobs ran on the one cluster the first job started.
    dashboards = re.findall(r"dask dashboard: (\S+)", p.stdout + p.stderr)
    assert len(dashboards) == 2 and dashboards[0] == dashboards[1]
    # It ends with the command that gathers the jobs into one report.
    assert p.stdout.splitlines()[-1] == f"multirun: 2 jobs in {sweep}; their combined report: python -m pipeline.report {sweep}"

    assert report_main([str(sweep)]) == 0
    res = pd.read_parquet(sweep / "results.parquet")
    assert len(res) == 4 and res["key"].is_unique
    assert res.groupby("job")["job_overrides"].first().str.contains("run.chunk=").all()
    assert sorted(res["job_overrides"].str.extract(r"run.chunk=(\d)")[0].unique()) == ["1", "2"]
    traces = pd.read_parquet(sweep / "traces.parquet")
    assert set(traces["key"]) <= set(res["key"]) and traces["key"].str.startswith(("0/", "1/")).all()
    assert "Gathered from 2 jobs" in (sweep / "report.md").read_text()
