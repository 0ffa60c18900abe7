"""Front doors: ``df.writeTo(name)`` (pyspark's ``DataFrameWriterV2``) of a Delta provider (to be built)."""

from __future__ import annotations


def install(cls: type) -> None:
    """Wraps ``cls`` (nothing yet)."""
    return None
