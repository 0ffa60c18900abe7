"""The Delta protocol's data model: actions, schemas and their evolution, table features and
properties, partition values, deletion vectors, statistics, clustering, identity columns and
the canonical form of file paths. Pure functions over Arrow and JSON: no I/O, no Spark."""
