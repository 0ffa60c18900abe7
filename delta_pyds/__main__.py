"""``python -m delta_pyds``: see :mod:`delta_pyds.cli`."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
