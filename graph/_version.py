"""The version of the flowgraph-ml distribution: pyproject.toml reads it from here, and each package
re-exports it as `__version__`."""
__version__ = "0.1.0"
