"""The package's loggers: one namespace, "flowgraph", and under it a logger per module
("flowgraph.transpile.api", "flowgraph.exec.session", ...), so that `logging.getLogger("flowgraph.exec")`
configures a whole package and `logging.getLogger("flowgraph")` all of them.

What is logged: one-off work and the decisions it makes (a conversion, a trace and why a function is
traced again, a plan built and the mode that runs it, a compilation, a gradient graph, a partition),
at DEBUG, and retraces at INFO; never per node or per run, so that logging costs nothing in hot paths.
"""
from __future__ import annotations

import logging

ROOT = "flowgraph"

# A library leaves output to the application: with no logging configured, records go nowhere (not to
# stderr through logging's last-resort handler).
logging.getLogger(ROOT).addHandler(logging.NullHandler())


def get_logger(module: str) -> logging.Logger:
    """The logger of the module named `module` (its `__name__`): `flowgraph.<module>`."""
    return logging.getLogger(f"{ROOT}.{module}")
