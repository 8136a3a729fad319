"""Results: the shards of a run become its tables (`tables`)."""
