"""svmbench pipeline: config -> store/datasets -> plan -> execute -> results -> report."""
