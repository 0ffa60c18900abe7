"""The read path without Spark: read options, scan planning into picklable partitions, the
executor-side file reader (column mapping, deletion vectors, type widening, variant) and
explain."""
