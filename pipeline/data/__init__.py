"""The data layer: the dataset store, its builders (generators, files inside packages, the user's files) and `python -m pipeline.data`."""
