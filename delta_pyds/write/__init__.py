"""The write path without Spark: write options, planning and committing appends and
overwrites, the executor-side Parquet writer, constraints and replaceWhere."""
