"""Front doors: ``df.writeStream.format("delta")...toTable(name)`` (pyspark's ``DataStreamWriter``).

Guarantees, after ``delta_pyds.register(spark)``:

* ``format``, ``option(s)`` and ``partitionBy`` run as pyspark defines them and are recorded;
* ``toTable(name)`` of a Delta format (``pydelta``; ``delta`` where no JVM ``delta`` source exists;
  no format: ``spark.sql.sources.default``) streams into the Delta table ``name``: a missing table
  is first created empty with the stream's schema and ``partitionBy`` columns and registered
  (EXTERNAL at ``option("path")``, else MANAGED), as Spark's ``toTable`` creates it; then the query
  is pyspark's own ``start`` at the table's location through the ``pydelta`` sink (exactly once
  with a ``checkpointLocation``), with the same output mode, query name and options;
* ``start(path)`` is unchanged (the data source's sink); every other call is pyspark's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from delta_pyds.spark.front_doors.patching import bound, columns, copied, delta_format, recording, wrap
from delta_pyds.spark.front_doors.write_routes import existing_entry


def _options(st: Any, **options: Any) -> None:
    for k, v in options.items():
        st.set_option(k, v)


def _partition_by(st: Any, *cols: Any) -> None:
    st.partition_by = columns(cols)


def install(cls: type) -> None:
    """Wraps ``cls`` (classic or Spark Connect ``DataStreamWriter``; see the module docstring)."""
    wrap(cls, "format", recording(lambda st, source: setattr(st, "source", source)))
    wrap(cls, "option", recording(lambda st, key, value: st.set_option(key, value)))
    wrap(cls, "options", recording(_options))
    wrap(cls, "partitionBy", recording(_partition_by))
    wrap(cls, "toTable", _to_table)


def _to_table(method: Callable[..., Any]) -> Callable[..., Any]:
    def toTable(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = bound(method, self, args, kwargs)
        st = copied(self)
        options = dict(call.get("options") or {})
        for k, v in options.items():
            st.set_option(k, v)
        if call.get("format") is not None:
            st.source = call["format"]
        if call.get("partitionBy") is not None:
            st.partition_by = columns([call["partitionBy"]])
        if not delta_format(self._spark, st.source):
            return method(self, *args, **kwargs)
        location = _table_location(self, call["tableName"], st)
        options.pop("path", None)
        return self.start(
            path=location,
            format="pydelta",
            outputMode=call.get("outputMode"),
            queryName=call.get("queryName"),
            **options,
        )

    return toTable


def _table_location(writer: Any, name: str, st: Any) -> str:
    """The location of the Delta table ``name``, created empty first when it does not exist."""
    from delta_pyds.spark.front_doors.patching import writer_dataframe
    from delta_pyds.spark.tables import DeltaTable

    df = writer_dataframe(writer)
    entry = existing_entry(df, name)
    if entry is None:
        builder = DeltaTable.createIfNotExists(writer._spark).tableName(name).addColumns(df.schema)
        if st.partition_by:
            builder = builder.partitionedBy(*[str(c) for c in st.partition_by])
        if st.option("path") is not None:
            builder = builder.location(st.option("path"))
        builder.execute()
        entry = existing_entry(df, name)
    assert entry is not None and entry.location is not None
    return entry.location
