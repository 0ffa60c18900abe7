"""The ``pydelta`` source on PySpark's Python Data Source API: batch reads
(:mod:`~delta_pyds.spark.datasource.reader`), batch writes (:mod:`~delta_pyds.spark.datasource.writer`),
streams (:mod:`~delta_pyds.spark.datasource.stream_reader`,
:mod:`~delta_pyds.spark.datasource.stream_writer`), the change feed
(:mod:`~delta_pyds.spark.datasource.change_feed`), pushed filters
(:mod:`~delta_pyds.spark.datasource.filters`), and the short name ``delta``
(:mod:`~delta_pyds.spark.datasource.registration`). The source class itself is
:class:`~delta_pyds.spark.datasource.source.DeltaDataSource`.

Guarantees: this room imports only :mod:`delta_pyds.spark.session` of the Spark layer (an import
contract); every row it hands Spark is read or written in a Python worker."""
