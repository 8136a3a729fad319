"""The kept cluster: a local Dask scheduler and workers that `svmbench cluster start` leaves
running between commands, and that `cluster=kept` runs on.

A fresh local cluster costs every command its start and warm-up: worker processes that import
Dask, sandbox children that import numpy, scipy, numba and the solvers and load their kernels,
two at once on two cores: most of what a short command takes from nothing (the benchmarks' sweep
page measures it). The kept cluster pays them once; its sandbox children stay warm across commands
(pipeline/engine/sandbox.py keeps one per worker thread), as Dask's own `dask scheduler` and
`dask worker` do when started by hand and reached with `cluster=address`.

The package, behind one entry point (`cluster.main`: `svmbench cluster start|status|stop`,
`python -m pipeline.kept`):

- `cluster.py`: start, status, stop; the processes it starts and ends;
- `launcher.py`: the launcher, a process with a command's imports done that forks a child for
  each ``cluster=kept`` command (why and how: its docstring);
- `handoff.py`: the command's side of the launcher, called before the command's own imports.

What the engine needs to reach the cluster (the state directory, its files, its credentials)
is `pipeline.engine.kept`, below this package: the launcher runs whole commands, so this package
stands above everything a command imports, and nothing below imports it.
"""
