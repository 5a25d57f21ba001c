"""The package version (one place: --version, setup and records read it)."""

__version__ = "0.1.0"
