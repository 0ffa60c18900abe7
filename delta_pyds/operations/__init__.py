"""Table operations that need no Spark: vacuum and the other maintenance steps the
``DeltaTable`` facade runs."""
