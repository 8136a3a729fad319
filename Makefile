# svmbench: the two commands of the quick start.
#   make run   [ARGS='hydra overrides']   set up .venv if needed, then run an experiment
#   make test  [PYTEST_ARGS='...']        set up .venv with the test extra, then run the tests
#   make test-all [PYTEST_ARGS='...']     the same, with the tests that wait on a clock none can
#                                         shorten (marker `long`: SLURM walltimes, wheel installs)
#   make mutate                           mutation testing of the modules that carry a guarantee
#                                         (mutmut; results in mutants/, `.venv/bin/mutmut browse`)
#   make papers [ARGS='hydra overrides']  set up .venv, then regenerate every paper reproduction
#                                         (outputs/papers/<name>/), saying how long each took
#   make papers-check [NAMES='...']       regenerate the fast studies twice and compare their verdicts
#                                         (ARGS='--against outputs/papers': once each, against the committed ones)
#   make docs  [DOCS_ARGS='...']          set up .venv with the docs extra, then build the documentation
#                                         site (docs/, mkdocs.yml) into site/, strict: a broken link fails
# Nothing but Python >= 3.11 and make is needed on the machine: everything else is installed
# into .venv from the package index.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# compat: a plain path entry, so workers spawned by Dask import the working tree too.
# --no-compile: pip would byte-compile every module of every dependency (two thirds of the
# install's CPU); Python compiles the ones a run imports, once, as it first imports them.
PIP_INSTALL := $(PY) -m pip install --disable-pip-version-check -q --no-compile

.PHONY: run test test-all mutate papers papers-check docs install install-test install-docs install-mutate clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP_INSTALL) -e . --config-settings editable_mode=compat
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PIP_INSTALL) -e '.[test]' --config-settings editable_mode=compat
	@touch $@

$(VENV)/.installed-mutate: pyproject.toml $(VENV)/.installed-test
	$(PIP_INSTALL) -e '.[test,mutate]' --config-settings editable_mode=compat
	@touch $@

$(VENV)/.installed-docs: pyproject.toml $(VENV)/.installed
	$(PIP_INSTALL) -e '.[docs]' --config-settings editable_mode=compat
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-docs: $(VENV)/.installed-docs
install-mutate: $(VENV)/.installed-mutate

run: $(VENV)/.installed
	$(PY) -m pipeline $(ARGS)

# Every registered reproduction (pipeline/papers/), each its experiment conf/experiment/<name>.yaml.
papers: $(VENV)/.installed
	@for p in $$($(PY) -c 'from pipeline.papers import names; print(*names())'); do \
	  start=$$(date +%s); \
	  $(PY) -m pipeline +experiment=$$p $(ARGS) || exit 1; \
	  echo "papers: $$p took $$(( $$(date +%s) - start )) s; written to outputs/papers/$$p/"; \
	done

# Two regenerations agree: each fast study (troyan, bertini, roethel_brynda; or NAMES='...') run
# twice at full size into a temporary folder, never outputs/papers/, its verdicts compared
# finding by finding; exit 1 on any difference.
papers-check: $(VENV)/.installed
	$(PY) -m pipeline.papers_check $(NAMES) $(ARGS)

# The solvers' numba kernels are compiled into numba's cache first (about 45 s on a fresh clone,
# a second once cached), so that no test carries a cold compile inside its own time.
# The tests run in TEST_WORKERS pytest-xdist processes (one per core on the 2-core machines CI
# uses; TEST_WORKERS=0 runs them in this process). Many tests wait on real processes (Dask
# workers, slurmd, Chromium), so two workers use the cores a serial run leaves idle.
# --dist loadgroup keeps each xdist_group (the SLURM tests share one slurmctld) on one worker.
# `make test` leaves out the tests marked `long` (a SLURM walltime, a wheel installed: they wait on
# a clock no test can shorten); `make test-all`, which CI runs too, has them. A -m in PYTEST_ARGS
# comes last and wins. Stopped (SIGTERM, Ctrl-C), the suite ends every process it started
# (tests/conftest.py).
TEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup
test: $(VENV)/.installed-test
	$(PY) -c 'import solvers; solvers.warm_all()'
	$(PYTEST) -m 'not long' $(PYTEST_ARGS)

test-all: $(VENV)/.installed-test
	$(PY) -c 'import solvers; solvers.warm_all()'
	$(PYTEST) $(PYTEST_ARGS)

# Mutation testing (mutmut, [tool.mutmut] in pyproject.toml): each one-token change to the
# modules that carry a guarantee, run against the tests that run the changed function. A copy of
# the tree is mutated (mutants/), never the working tree; a rerun reuses the results of mutants
# whose function and tests did not change. The survivors and their reasons:
# docs/development/testing.md, "Mutation testing".
mutate: $(VENV)/.installed-mutate
	$(PY) -c 'import solvers; solvers.warm_all()'
	$(VENV)/bin/mutmut run --max-children 2 > mutants.log 2>&1 || { tail -20 mutants.log; exit 1; }
	$(VENV)/bin/mutmut export-cicd-stats && cat mutants/mutmut-cicd-stats.json
	$(VENV)/bin/mutmut results

# The pages under docs/reference/ are generated at build time from the code (docs/gen/*.py):
# the configuration schema and conf/ groups, the solver registry, the API from docstrings (griffe
# reads the sources; no solver runs and nothing is compiled). --strict turns every warning
# (a broken link, a missing reference) into a failure.
DOCS_ARGS ?= --strict
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs build $(DOCS_ARGS) --site-dir site

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis site mutants mutants.log
