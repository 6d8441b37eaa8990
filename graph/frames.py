"""Loop frames as the recorded control-flow contexts give them, for the passes that check or use them.

A node's frame (`Node.frame`) is the loop whose iterations its outputs live in (None: the root). Every
edge stays inside one frame but an Enter's (from the frame around its loop into the loop) and an Exit's
(from its loop to the frame around it); `input_frame` says which frame a node's inputs must come from.
The validator checks graphs against these rules, the executor's branch analysis relies on them, and
error messages walk the frames outwards (docs/design.md, "Control-flow constructs and their contexts").
"""
from __future__ import annotations

from collections.abc import Iterator

from graph.node import LoopFrame, Node
from graph.op_names import ENTER, EXIT


def parent_frame(frame: LoopFrame | None) -> LoopFrame | None:
    """The frame around loop `frame` (None: the root, also around the root)."""
    return frame.outer.frame if frame is not None and frame.outer is not None else None


def enclosing_frames(frame: LoopFrame | None) -> Iterator[LoopFrame]:
    """`frame` and the loops around it, innermost first (nothing for the root)."""
    while frame is not None:
        yield frame
        frame = parent_frame(frame)


def is_nested_in(inner: LoopFrame | None, outer: LoopFrame | None) -> bool:
    """Whether loop `inner` lies inside `outer` (None: the root) at any depth, not being it."""
    if inner is None:
        return False
    return outer is None or any(f is outer for f in enclosing_frames(parent_frame(inner)))


def exit_frame(exit_node: Node) -> LoopFrame | None:
    """The loop an Exit leaves: its input's frame."""
    return exit_node.inputs[0].node.frame


def input_frame(node: Node) -> LoopFrame | None:
    """The frame whose iterations hold `node`'s inputs and control inputs: the frame around an Enter's loop,
    the loop an Exit leaves, any other node's own."""
    if node.op == ENTER:
        return parent_frame(node.frame)
    if node.op == EXIT and node.inputs:
        return exit_frame(node)
    return node.frame
