"""The engine: task bodies, the sandbox they run in, execution on Dask, and the run lock."""
