"""Runs graphs: kernels, the frame-tagged executor, sessions."""
from exec.errors import NoProgressError, RunError
from exec.session import Session

__all__ = ["Session", "RunError", "NoProgressError"]
