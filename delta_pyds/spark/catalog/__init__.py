"""Spark's session catalog for Delta tables: names resolved to locations
(:mod:`~delta_pyds.spark.catalog.lookup`), entries written, dropped and renamed
(:mod:`~delta_pyds.spark.catalog.entries`), and the structured ``CatalogTable`` of a classic
session read through its JVM (:mod:`~delta_pyds.spark.catalog.jvm`).

Guarantees: a catalog entry's metadata is read from structured sources only (never parsed from
the text of ``DESCRIBE`` or ``SHOW`` output); this room imports only
:mod:`delta_pyds.spark.session` and :mod:`delta_pyds.spark.datasource` of the Spark layer."""
