"""Tools: the ``python -m delta_pyds`` command line and the ``--py-files`` zip builder."""
