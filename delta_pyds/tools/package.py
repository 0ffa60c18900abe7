"""Builds the zip to ship delta_pyds with ``spark-submit --py-files``.

    python -m delta_pyds.tools.package                 # writes ./delta_pyds.zip
    python -m delta_pyds.tools.package -o /tmp/dp.zip

The zip holds the ``delta_pyds`` package only (its pure-Python code, no caches). Its
dependencies (pyarrow, pandas, pyroaring, fsspec, plus s3fs/adlfs/gcsfs for object stores) are
compiled or large and must be installed in the Python that executors run
(``spark.pyspark.python``). In the job, call ``delta_pyds.register(spark)``: Spark only
auto-registers pip-installed sources, not ones shipped with ``--py-files``.
"""

from __future__ import annotations

import argparse
import os
import zipfile

_EXCLUDED_DIRS = {"__pycache__"}
_EXCLUDED_SUFFIXES = (".pyc", ".pyo")


def build_zip(output: str) -> str:
    """Writes the zip of the installed ``delta_pyds`` package to ``output``; returns
    its absolute path. Entries are sorted and timestamped 1980-01-01, so the same code
    gives the same bytes."""
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base = os.path.dirname(package_dir)
    output = os.path.abspath(output)
    entries = []
    for dirpath, dirnames, filenames in os.walk(package_dir):
        dirnames[:] = sorted(d for d in dirnames if d not in _EXCLUDED_DIRS)
        for name in filenames:
            if name.endswith(_EXCLUDED_SUFFIXES):
                continue
            full = os.path.join(dirpath, name)
            entries.append((os.path.relpath(full, base).replace(os.sep, "/"), full))
    entries.sort()
    os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    tmp = output + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, full in entries:
            info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(full, "rb") as f:
                zf.writestr(info, f.read())
    os.replace(tmp, output)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m delta_pyds.tools.package", description="Build delta_pyds.zip for spark-submit --py-files."
    )
    parser.add_argument(
        "-o", "--output", default="delta_pyds.zip", help="zip file to write (default: ./delta_pyds.zip)"
    )
    args = parser.parse_args(argv)
    print(build_zip(args.output))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
