"""Access to one table root over fsspec: reads bounded by size, listings, atomic
put-if-absent per backend, and the storage options (matching, conversion, secret redaction)."""
