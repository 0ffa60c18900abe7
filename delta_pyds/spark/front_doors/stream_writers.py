"""Front doors: ``writeStream...toTable(name)`` (pyspark's ``DataStreamWriter``) of a Delta format (to be built)."""

from __future__ import annotations


def install(cls: type) -> None:
    """Wraps ``cls`` (nothing yet)."""
    return None
