"""Old import path of :func:`delta_pyds.write.plan.write_arrow` (writing Arrow data to a
Delta table without Spark), kept for code written against it."""

from delta_pyds.write.plan import write_arrow

__all__ = ["write_arrow"]
