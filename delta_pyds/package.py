"""``python -m delta_pyds.package``: builds the zip for ``spark-submit --py-files`` (see
:mod:`delta_pyds.tools.package`; this module keeps the documented command working)."""

from delta_pyds.tools.package import build_zip, main

__all__ = ["build_zip", "main"]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
