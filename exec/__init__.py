"""Runs graphs: kernels, the frame-tagged executor, sessions."""
from exec.errors import IterationLimitExceeded, NoProgressError, RunError, RunInterrupted
from exec.profiler import profile
from exec.session import Session
from graph._version import __version__

__all__ = ["Session", "profile", "RunError", "NoProgressError", "IterationLimitExceeded", "RunInterrupted"]
