"""`python -m pipeline.bench`: the benchmark scenarios, ours beside a reference ("anchor") in one
run, as one table of ratios (docs/benchmarks/ reads them; `python -m pipeline.bench --help` lists
the scenarios).

The package, beside the pipeline (nothing in the pipeline imports it):

- `__main__`: the command line, and the scenarios by name (`SCENARIOS`);
- `harness`: what every scenario shares: its options, our whole command run as a subprocess
  and read back (wall, phases, CPU seconds by process role, run.log's counts), the datasets
  built before any clock, a kept cluster for the scenarios that need one;
- one module per family of scenarios: `sweep` (a, b, e: a C sweep against GridSearchCV and
  LIBLINEAR's search), `overhead` (c, d, k, m: what the engine adds around fits, a command's
  fixed cost, `make run`'s report), `large` (g, h, t: 50,000 to 1,000,000 fits), `kernel` (f: the kernel grid),
  `search` (cs, hs: the searches against a grid and their references), `upstream` (u, libsvm:
  our solvers against upstream LIBLINEAR and LIBSVM, solver call against solver call), `paired`
  (the solver scenarios' whole calls in processes of this checkout and of a base commit, a call
  more than 10% slower flagged);
- `anchors`: the reference sides as plain functions. Those compared with our whole command run
  in a fresh process of their own, by name (``python -m pipeline.bench.anchors NAME --json
  ARGS``), so that the time of that process is a whole process's too; those compared solver
  call against solver call are called in the scenario's own process.

This module imports nothing: an anchor's process pays for no more than its own imports.
"""
