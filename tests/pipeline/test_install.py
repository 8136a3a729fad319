"""svmbench as a user installs it (issue #26): the wheel carries the configs, the `svmbench`
command and `python -m pipeline` work from any directory (Dask workers included), and a
`pipeline` or `solvers` that is not svmbench's is refused at startup with one line naming both.
The help's commands are composed, so the help cannot drift from the configs."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline.data.cli import _parser as data_parser
from pipeline.experiment.config import compose, validate

ROOT = Path(__file__).resolve().parents[2]
HELP = ROOT / "conf" / "hydra" / "help" / "svmbench.yaml"


def clean_env(**extra) -> dict:
    """The environment of a command that must not see the checkout (no PYTHONPATH, no venv)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return env | extra


def test_pyproject_lists_every_package():
    """pyproject.toml lists the packages (find cannot map conf/ to `pipeline.conf`): the list is
    every package folder of the tree, and `pipeline.conf` is the repository's conf/."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    tree = {".".join(p.parent.relative_to(ROOT).parts) for top in ("pipeline", "solvers")
            for p in (ROOT / top).rglob("__init__.py")}
    assert set(tool["packages"]) == tree | {"pipeline.conf"}
    assert tool["package-dir"] == {"pipeline.conf": "conf"}
    assert tool["package-data"]["pipeline.conf"] == ["**/*.yaml"]


def help_commands() -> list[list[str]]:
    template = yaml.safe_load(HELP.read_text())["template"]
    block = template.split("== The ten most used commands ==")[1].split("==")[0]
    return [shlex.split(line.split(" # ")[0]) for line in block.splitlines() if line.strip()]


def test_help_commands_are_valid():
    """Each of the eleven commands of `python -m pipeline --help` composes and validates (the
    experiment ones) or parses (the data, report and cluster ones) as written."""
    commands = help_commands()
    assert len(commands) == 11
    for argv in commands:
        assert argv[:2] == ["python", "-m"], argv
        module, args = argv[2], argv[3:]
        if module == "pipeline":
            validate(compose(args))
        elif module == "pipeline.data":
            data_parser("python -m pipeline.data").parse_args(args)
        elif module == "pipeline.cluster":
            assert args == ["start"], argv      # its parser: tests/pipeline/test_kept_cluster.py
        else:
            assert module == "pipeline.report" and len(args) == 1, argv


def test_svmbench_commands_are_the_python_m_ones(tmp_path, capsys):
    """`svmbench COMMAND` hands its arguments to the python -m form's own function, under its
    own name; solvers lists every registered solver; a bad command exits 2 with the usage."""
    from pipeline.cli import main
    from solvers import get_solver, solver_names
    with pytest.raises(SystemExit) as exc:
        main(["data", "--help"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("usage: svmbench data ")
    assert main(["data", "list", "--store", str(tmp_path)]) == 0
    assert "built-in, not yet in this store" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "no_run")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert main(["solvers"]) == 0           # python -m solvers list: a block per solver, its origin first
    heads = [block.splitlines()[0].split() for block in capsys.readouterr().out.split("\n\n")]
    assert [h[0] for h in heads] == solver_names()
    assert all(h[1] == f"[{get_solver(h[0]).family}]" and h[2] == "from" for h in heads)
    for argv, code in ((["--version"], 0), (["nope"], 2), ([], 2)):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == code
    out = capsys.readouterr()
    assert out.out.startswith("svmbench 0.1.0 (checkout at ") and "invalid choice: 'nope'" in out.err


def test_a_solvers_folder_in_the_current_directory_is_refused(tmp_path):
    """`python -m pipeline` puts the current directory first on sys.path: a user's own solvers/
    there would be imported instead of svmbench's. One line naming both, exit 2, nothing run."""
    (tmp_path / "solvers").mkdir()
    (tmp_path / "solvers" / "__init__.py").write_text("raise SystemExit('their solvers ran')\n")
    proc = subprocess.run([sys.executable, "-m", "pipeline", "smoke=true", "run.dry_run=true"], cwd=tmp_path,
                          env=clean_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert (f"the import name 'solvers' resolves to {tmp_path.resolve() / 'solvers' / '__init__.py'}, "
            f"not svmbench's {ROOT / 'solvers' / '__init__.py'}") in proc.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with svmbench's wheel installed (not editable). The wheel is built from a copy
    of the sources (a build in the checkout would leave build/ there, whose stale files a later
    build would ship), without build isolation (setuptools comes with the test extra), and the
    dependencies are this venv's, through a .pth line: a path it adds is not a site directory,
    so this venv's editable svmbench (its own .pth) stays out."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("pipeline", "solvers", "conf"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.nb[ic]"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            str(src), "-w", str(tmp / "dist")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    wheel, = (tmp / "dist").glob("svmbench-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "svmbench_test_deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                              str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    return venv


def outside(argv: list, cwd: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.long     # a wheel built and installed into a venv of its own (the module's fixture)
def test_wheel_runs_an_experiment_from_anywhere(installed, tmp_path):
    """From a directory outside the checkout: the installed modules are imported (not the
    checkout's), `svmbench run` runs a smoke experiment on a Dask worker process with the
    wheel's configs into ./outputs/, `svmbench data list` sees the dataset the run built, and
    `python -m pipeline --help` composes the wheel's configs with their help page."""
    bin_ = installed / "bin"
    store = tmp_path / "store"
    # find_spec locates `solvers` without importing it (numba and every solver: 6 s).
    where = outside([bin_ / "python", "-c", "import importlib.util, pipeline.installation as i; print("
                     "i.__file__, importlib.util.find_spec('solvers').origin, i.CONF_DIR, i.CHECKOUT, i.PAPERS_DIR)"],
                    tmp_path)
    assert where.returncode == 0, where.stderr
    pipeline_file, solvers_file, conf_dir, checkout, papers_dir = where.stdout.split()
    for path in (pipeline_file, solvers_file, conf_dir):
        assert Path(path).is_relative_to(installed), path
    assert checkout == "None" and papers_dir == str(tmp_path.resolve() / "outputs" / "papers")

    run = outside([bin_ / "svmbench", "run", "smoke=true", "cluster=local", "cluster.n_workers=1",
                              "solvers=[liblinear]", "datasets=[toy_blobs]"], tmp_path, SVMBENCH_STORE=str(store))
    assert run.returncode == 0, run.stderr
    results, = tmp_path.glob("outputs/*/*/results.parquet")
    table = pd.read_parquet(results)
    assert len(table) == 4 and set(table["solver_entry"]) == {"liblinear"}
    assert set(table["status"]) == {"converged"} and table["test_accuracy"].min() > 0.8
    # Each fit ran in a sandbox process, whose peak is recorded; its worker was a thread of the
    # command (cluster.processes=false), so no worker process had a peak of its own.
    assert table["env_peak_rss_mb"].gt(0).all() and table["env_worker_peak_rss_mb"].isna().all()

    listed = outside([bin_ / "svmbench", "data", "list"], tmp_path, SVMBENCH_STORE=str(store))
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^toy_blobs\s+\d", listed.stdout, re.M), listed.stdout

    # `python -m pipeline` from another directory: Hydra composes the wheel's config.yaml with the
    # help page it selects (conf/hydra/help/svmbench.yaml) and every config group's options.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    helped = outside([bin_ / "python", "-m", "pipeline", "--help"], elsewhere)
    assert helped.returncode == 0 and "== The ten most used commands ==" in helped.stdout
    assert "cluster: address, kept, kubernetes, local, sequential, slurm" in helped.stdout
    assert not (elsewhere / "outputs").exists()
    version = outside([bin_ / "svmbench", "--version"], elsewhere)
    assert version.stdout.startswith("svmbench 0.1.0 (installed at ") and str(installed) in version.stdout


@pytest.mark.slow
@pytest.mark.long     # the installed wheel of the module's fixture
def test_wheel_refuses_a_package_installed_over_it(installed, tmp_path):
    """pip merges two distributions' `pipeline` folders: one whose __init__.py was written over
    ours is refused, naming the file and the distribution (its RECORD lists the file)."""
    purelib = next((installed / "lib").glob("python*/site-packages"))
    init = purelib / "pipeline" / "__init__.py"
    original = init.read_bytes()
    other = purelib / "otherdist-1.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: otherdist\nVersion: 1.0\n")
    (other / "RECORD").write_text("pipeline/__init__.py,,\notherdist-1.0.dist-info/RECORD,,\n")
    init.write_bytes(original + b"# otherdist's pipeline\n")
    try:
        proc = outside([installed / "bin" / "svmbench", "solvers"], tmp_path)
    finally:
        init.write_bytes(original)
        shutil.rmtree(other)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: {init} is not svmbench's (its hash differs from svmbench's RECORD): the "
                           f"distribution 'otherdist' installed a package 'pipeline' over it. Uninstall that "
                           f"distribution, then reinstall svmbench (pip install --force-reinstall svmbench)\n")
