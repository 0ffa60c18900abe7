"""The package version (its own module, so that any layer may import it)."""

__version__ = "0.1.0"
