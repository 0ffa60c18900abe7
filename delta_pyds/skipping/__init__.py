"""Data skipping: the files and Parquet row groups that provably hold no matching row, by
partition values and statistics; an unknown predicate or a missing statistic keeps the file."""
