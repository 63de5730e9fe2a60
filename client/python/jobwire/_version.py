"""The package version: the one place it is written (pyproject.toml reads it
through ``[tool.setuptools.dynamic]``; ``jobwire.__version__`` re-exports it)."""

__version__ = "0.1.0"
