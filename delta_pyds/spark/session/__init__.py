"""The session room of the Spark layer: what every other room of it reads of the session it runs
under, and nothing of Delta's tables.

- :mod:`~delta_pyds.spark.session.compat`: how the supported pyspark versions differ (4.1-4.3);
- :mod:`~delta_pyds.spark.session.conf`: the session confs this package reads, with their readers;
- :mod:`~delta_pyds.spark.session.dialect`: the settings that change how Spark reads SQL text;
- :mod:`~delta_pyds.spark.session.schema_convert`: Delta schemas as Spark schemas;
- :mod:`~delta_pyds.spark.session.projection`: projections given to Spark as SQL text;
- :mod:`~delta_pyds.spark.session.own_calls`: this package's own ``spark.sql`` calls;
- :mod:`~delta_pyds.spark.session.analysis_errors`: delta-spark's ``AnalysisException`` texts;
- :mod:`~delta_pyds.spark.session.jvm`: whether a session is classic, and its JVM's classes.

Guarantees: no module here imports another room of :mod:`delta_pyds.spark` (an import contract)."""
