"""Test helpers that change a run dir's shards in place, as an earlier run (or a user) might have
left them: a shard file holds a Dask task's records (Parquet columns, or JSON lines in runs of
the earlier layout), and is written back in its own layout."""
import json
from pathlib import Path

from pipeline.results import shards
from pipeline.results.tables import shard_files


def rewrite(path: Path, records: list[dict]) -> None:
    """The shard at path holding these records instead, in its own layout."""
    if path.suffix == ".parquet":
        shards.write(records, path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records))


def drop_records(run_dir, keys) -> None:
    """Remove the records of keys from every shard (a shard left empty is deleted): as if the
    tasks that ran them had never finished."""
    keys = set(keys)
    for path in shard_files(run_dir):
        records = shards.read_shard(path)
        kept = [r for r in records if r["key"] not in keys]
        if len(kept) < len(records):
            rewrite(path, kept) if kept else path.unlink()


def edit_record(run_dir, key, **changes) -> Path:
    """Change fields of key's record in the shard that holds it; returns that shard's path."""
    for path in shard_files(run_dir):
        records = shards.read_shard(path)
        if any(r["key"] == key for r in records):
            rewrite(path, [{**r, **changes} if r["key"] == key else r for r in records])
            return path
    raise KeyError(key)
