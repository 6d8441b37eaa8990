"""The names of the op types that passes over graphs dispatch on, written once.

An op type is a string (`Node.op`), so that ops, kernels and gradient rules can be registered by name
in three packages (docs/design.md, "Layering"); the passes that treat control-flow plumbing specially
compare against these constants instead of spelling the strings again.
"""
from __future__ import annotations

SWITCH = "Switch"
MERGE = "Merge"
ENTER = "Enter"
EXIT = "Exit"
NEXT_ITERATION = "NextIteration"
LOOP_COND = "LoopCond"

# plumbing that passes treat apart from computation: values from outside, renames, ordering, transfers
PLACEHOLDER = "Placeholder"
CONST = "Const"
IDENTITY = "Identity"
STOP_GRADIENT = "StopGradient"
NO_OP = "NoOp"
SEND = "Send"
RECV = "Recv"

# the five primitives of the dynamic dataflow design and the predicate marker (graph/control_flow/primitives.py)
CONTROL_FLOW_OPS = frozenset({SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION, LOOP_COND})
