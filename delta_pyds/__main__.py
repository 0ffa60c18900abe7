"""``python -m delta_pyds``: see :mod:`delta_pyds.tools.cli`."""

import sys

from delta_pyds.tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
