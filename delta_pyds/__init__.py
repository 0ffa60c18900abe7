"""delta_pyds: Delta Lake for PySpark in pure Python.

``spark.read.format("pydelta").load(path)`` reads Delta tables; the core modules
(everything but :mod:`delta_pyds.spark`) implement the Delta protocol over pyarrow and
fsspec and never import pyspark.
"""

__version__ = "0.1.0"

__all__ = ["register", "__version__"]


def register(spark) -> None:
    """Registers the ``pydelta`` data source on ``spark`` and enables filter pushdown."""
    from .spark import register as _register
    _register(spark)
