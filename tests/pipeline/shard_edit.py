"""Test helpers that change a run dir's shards in place, as an earlier run (or a user) might have
left them: a shard file holds a Dask task's records, one JSON object per line."""
import json
from pathlib import Path

from pipeline.results.tables import shard_files


def drop_records(run_dir, keys) -> None:
    """Remove the records of keys from every shard (a shard left empty is deleted): as if the
    tasks that ran them had never finished."""
    keys = set(keys)
    for path in shard_files(run_dir):
        lines = path.read_text().splitlines()
        kept = [line for line in lines if json.loads(line)["key"] not in keys]
        if len(kept) < len(lines):
            path.write_text("".join(f"{line}\n" for line in kept)) if kept else path.unlink()


def edit_record(run_dir, key, **changes) -> Path:
    """Change fields of key's record in the shard that holds it; returns that shard's path."""
    for path in shard_files(run_dir):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        if any(r["key"] == key for r in records):
            path.write_text("".join(json.dumps({**r, **changes} if r["key"] == key else r) + "\n" for r in records))
            return path
    raise KeyError(key)
