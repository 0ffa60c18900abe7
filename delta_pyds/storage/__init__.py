"""Access to one table root over fsspec (``store``: reads bounded by size, listings, writes),
atomic put-if-absent per backend (``put_if_absent``), and the storage options (``options``:
matching, conversion, secret redaction)."""
