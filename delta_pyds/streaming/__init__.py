"""Streaming without Spark: offsets and admission control, the source's micro-batches and the
exactly-once sink."""
