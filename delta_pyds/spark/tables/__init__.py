"""``DeltaTable``: table maintenance and DML from Python, shaped like delta-spark's API."""
