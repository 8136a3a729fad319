"""A store on an object store (``store.root=s3://bucket/prefix``): the publish protocol that
stands in for a folder rename (meta.json first out, last in), checked on fsspec's in-memory
filesystem; and the whole path against a real S3 server (moto's, started on 127.0.0.1): the
data CLI ingests a user file and builds a built-in dataset into it, and a sweep on a real
`dask scheduler` + `dask worker` whose only way to the data is S3 completes."""
import json
import os
import socket
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from pipeline.data import store
from pipeline.experiment.config import compose
from pipeline.run import run
from pipeline.data.store import StoreError

from .processes import running, written

# --------------------------------------------------------------------------- publish protocol


@pytest.fixture
def memory_root():
    """A fresh root on fsspec's in-memory filesystem: an object store as far as the store
    knows (no folder rename), opened through pyarrow's FSSpecHandler."""
    return f"memory://svmbench-test/{uuid.uuid4().hex}"


def _data(n, seed):
    rng = np.random.default_rng(seed)
    return sp.random(n, 5, density=0.5, format="csr", random_state=rng), rng.integers(0, 2, n).astype(float)


def test_an_object_store_entry_round_trips(memory_root):
    X, y = _data(30, 0)
    meta = store.write_dataset(memory_root, "a", X, y, source={"test": 1}, row_group_size=7)
    assert store.exists(memory_root, "a") and store.dataset_path(memory_root, "a") == f"{memory_root}/a"
    ds = store.read_dataset(memory_root, "a")
    np.testing.assert_array_equal(ds.X.toarray(), X.toarray())
    np.testing.assert_array_equal(ds.y, y)
    assert ds.fingerprint == meta["fingerprint"] == store.fingerprint(X, y)
    np.testing.assert_array_equal(store.read_dataset(memory_root, "a", rows=[29, 3]).y, y[[29, 3]])
    assert [m["name"] for m in store.list_datasets(memory_root)] == ["a"]
    with pytest.raises(store.DatasetExistsError, match="already exists"):
        store.write_dataset(memory_root, "a", X, y, source={})
    store.remove_dataset(memory_root, "a")
    assert not store.exists(memory_root, "a") and store.list_datasets(memory_root) == []


def _fail_when_copying(monkeypatch, part):
    real = store.fs_copy

    def copy(src, dst):
        if src.path.endswith("/" + part):
            raise OSError(f"connection lost while copying {part}")
        real(src, dst)
    monkeypatch.setattr(store, "fs_copy", copy)


@pytest.mark.parametrize("part", [store.DATA_FILE, store.META_FILE])
def test_an_interrupted_object_store_write_leaves_no_entry_that_reads_as_complete(memory_root, monkeypatch, part):
    X_old, y_old = _data(20, 1)
    store.write_dataset(memory_root, "old", X_old, y_old, source={})
    _fail_when_copying(monkeypatch, part)
    with pytest.raises(OSError, match="connection lost"):
        store.write_dataset(memory_root, "new", *_data(10, 2), source={})
    # An overwrite that dies half way: the old entry is gone rather than new data under old
    # metadata (which only the fingerprint check would catch).
    with pytest.raises(OSError, match="connection lost"):
        store.write_dataset(memory_root, "old", *_data(10, 3), source={}, overwrite=True)
    assert not store.exists(memory_root, "new") and not store.exists(memory_root, "old")
    with pytest.raises(StoreError, match="not found"):
        store.read_dataset(memory_root, "old")
    # Nor is a temporary prefix left behind.
    root = store._fs_root(memory_root)
    assert [n for n in store.fs_listdir(root) if n.startswith(".")] == []


def test_data_changed_on_an_object_store_fail_the_fingerprint_check(memory_root):
    store.write_dataset(memory_root, "a", *_data(12, 4), source={})
    store.write_dataset(memory_root, "b", *_data(12, 5), source={})
    a, b = store._entry(memory_root, "a"), store._entry(memory_root, "b")
    store.fs_copy(b / store.DATA_FILE, a / store.DATA_FILE)
    with pytest.raises(StoreError, match="fingerprint mismatch"):
        store.read_dataset(memory_root, "a")


def test_a_root_nothing_opens_is_a_clear_error():
    with pytest.raises(StoreError, match="'nosuch://bucket/x': neither pyarrow .* nor fsspec"):
        store.exists("nosuch://bucket/x", "a")


# ---------------------------------------------------------------------- a real S3 server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server on a free loopback port, with one bucket; the client side (this
    process and the processes it starts) finds it through the usual AWS environment."""
    pytest.importorskip("moto.server", reason="the remote-store tests need moto[server] (the test extra)")
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    with pytest.MonkeyPatch.context() as mp, \
            running([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                    env={**os.environ, **env}, ready=lambda: _answers(f"{endpoint}/moto-api/")):
        for k, v in env.items():
            mp.setenv(k, v)
        import boto3
        client = boto3.client("s3")
        client.create_bucket(Bucket="svmbench")
        yield client


def _keys(client, prefix):
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket="svmbench", Prefix=prefix).get("Contents", []))


def _data_cli(root, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OPENBLAS_NUM_THREADS": "1"}
    env.pop("SVMBENCH_STORE", None)
    p = subprocess.run([sys.executable, "-m", "pipeline.data", args[0], "--store", root, *args[1:]], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def _libsvm_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    y = np.repeat([-1.0, 1.0], 30)
    X = rng.normal(size=(60, 4)) + y[:, None]
    path.write_text("".join(f"{int(t):+d} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n"
                            for t, row in zip(y, X, strict=True)))
    return np.round(X, 6), y


@pytest.fixture(scope="module")
def s3_store(s3, tmp_path_factory):
    """A store on S3 filled through the data CLI: a user's LIBSVM file ingested as `mine`, and
    the built-in toy_blobs built."""
    root = "s3://svmbench/store"
    path = tmp_path_factory.mktemp("user") / "mine.svm"
    X, y = _libsvm_file(path)
    _data_cli(root, "ingest", str(path), "--name", "mine")
    _data_cli(root, "build", "toy_blobs")
    return root, X, y


@pytest.mark.slow
def test_the_data_cli_ingests_and_builds_into_s3(s3, s3_store):
    root, X, y = s3_store
    keys = _keys(s3, "store/")
    # Complete entries only: no temporary prefix left, every entry's data beside its meta.
    assert not [k for k in keys if "/." in k], keys
    for name in ("mine", "toy_blobs"):
        assert {f"store/{name}/data.parquet", f"store/{name}/meta.json"} <= set(keys)
    ds = store.read_dataset(root, "mine")
    np.testing.assert_allclose(ds.X.toarray(), X)
    np.testing.assert_array_equal(ds.y, y)
    listing = _data_cli(root, "list")
    assert "mine" in listing and "toy_blobs" in listing
    assert f"{root}/mine" in _data_cli(root, "info", "mine")
    # A bucket that is not there: an error naming the root, and nothing written.
    with pytest.raises(StoreError, match="store root s3://nobucket/x: cannot write to it: .*nobucket"):
        store.write_dataset("s3://nobucket/x", "a", X, y, source={})


def test_a_sweep_on_a_dask_cluster_reads_its_data_from_s3(s3, s3_store, tmp_path):
    root, _, _ = s3_store
    dask_cli = str(Path(sys.executable).parent / "dask")
    sched = tmp_path / "scheduler.json"
    # The workers get the AWS environment and nothing else of the store: no shared folder.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OPENBLAS_NUM_THREADS": "1"}
    env.pop("SVMBENCH_STORE", None)
    with running([dask_cli, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
                  "--scheduler-file", str(sched)],
                 [dask_cli, "worker", "--scheduler-file", str(sched), "--nthreads", "1", "--nworkers", "1",
                  "--host", "127.0.0.1", "--no-dashboard"],
                 env=env, ready=written(sched)):
        address = json.loads(sched.read_text())["address"]
        sweep = [f"store.root={root}", "datasets=[toy_blobs,mine]", "solvers=[dcd]", "cv.folds=2",
                 "solvers.dcd.grid.C=[1.0]", "run.progress=false"]
        out = run(compose([*sweep, "cluster=address", f"cluster.address={address}"]), tmp_path / "s3run")

        def worker_state():   # nested, so that Dask ships it by value to the worker
            from pipeline.engine import tasks
            return sorted(ds.name for ds in tasks._DATASETS.values()), store._open_filesystem.cache_info().misses
        from distributed import Client
        from pipeline.engine.sandbox import call_in_sandboxes
        with Client(address, timeout="20s") as client:
            # The worker (its task process, the sandbox) holds both datasets, read through an S3
            # filesystem it opened itself.
            ((held,),) = client.run(call_in_sandboxes, worker_state).values()
    assert held == (["mine", "toy_blobs"], 1)
    res = pd.read_parquet(tmp_path / "s3run" / "results.parquet")
    assert out["failed"] == 0 and len(res) == 2 * 2 and set(res["dataset_name"]) == {"toy_blobs", "mine"}
    assert set(res["fingerprint"]) == {store.dataset_info(root, n)["fingerprint"] for n in ("toy_blobs", "mine")}
    assert (res["status"] == "converged").all()
