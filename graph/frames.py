"""Loop frames as the recorded control-flow contexts give them: where the user built a node, for messages.

`Node.frame` is the loop (a `LoopFrame`, the loop's recorded context) whose iterations the node was
built in (None: the root). Error messages and traces walk these outwards to name the user's loops and
their iterations. The frames that the passes over a graph rely on are read off the dataflow instead, by
the one analysis they share (graph/control_structure.py); the validator checks that the two agree.
"""
from __future__ import annotations

from collections.abc import Iterator

from graph.node import LoopFrame


def parent_frame(frame: LoopFrame | None) -> LoopFrame | None:
    """The frame around loop `frame` (None: the root, also around the root)."""
    return frame.outer.frame if frame is not None and frame.outer is not None else None


def enclosing_frames(frame: LoopFrame | None) -> Iterator[LoopFrame]:
    """`frame` and the loops around it, innermost first (nothing for the root)."""
    while frame is not None:
        yield frame
        frame = parent_frame(frame)
