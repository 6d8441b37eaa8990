"""Which runs a plan: compiled code or the dataflow executor (`Session(mode=...)`).

"compiled" runs every plan it can structure as compiled code, "dataflow" none, and "auto"
compiles unless the dataflow executor's parallelism pays for its scheduling.

The rule (`prefers_dataflow`; docs/compiled.md has the measurements behind it): compiled code
runs one kernel at a time, the executor runs independent heavy kernels side by side on its
pool. That pays only for kernels that do not parallelize themselves: a matmul in compiled
code has all the BLAS threads (exec/compiled/threads.py), so independent matmuls gain little
from the pool, while an elementwise kernel on a large array runs on one core in both. So a
plan goes to the executor when, on a machine with two cores or more, it holds two such heavy
kernels that can run at once: two in one iteration (or at the top level) of which neither
feeds the other, or one in a loop with parallel_iterations > 1 that is off the loop's
recurrence (its iterations do not wait for each other's). Everything else, small kernels
above all, is compiled: there the executor's scheduling (about a microsecond a node) is the
cost.
"""
from __future__ import annotations

import os
from typing import Callable

from exec.compiled.program import Program
from exec.compiled.structure import Unstructured
from graph import shapes as _sh
from graph.logs import get_logger
from graph.node import Node

logger = get_logger(__name__)

MODES = ("auto", "compiled", "dataflow")
# An elementwise kernel on at least this many elements runs long enough (~100 us) for the pool
# to pay (the executor's own threshold, exec/plan.py).
HEAVY_ELEMENTS = 1 << 17
# Kernels that use every core on their own.
_SELF_THREADED = frozenset({"MatMul", "BatchMatMul", "Dot", "Einsum"})
# Nodes that do no work proportional to their output: plumbing, views, stored values.
_CONSTANT_TIME = frozenset({"Const", "Placeholder", "Identity", "StopGradient", "NoOp", "Enter", "Exit", "Switch",
                            "Merge", "NextIteration", "LoopCond", "ReadVariable", "Transpose", "Reshape",
                            "ExpandDims", "Squeeze", "BroadcastTo", "Split", "Unstack", "StackPush", "StackPop",
                            "TensorArrayRead", "TensorArrayWrite", "Shape", "Size", "Rank"})


def select_program(mode: str, compile_plan: Callable[[], Program]) -> Program | None:
    """The compiled program that runs a plan in `mode`, or None where the dataflow executor runs it
    (the mode says so, or the plan's control flow is not one the compiler structures);
    `compile_plan()` compiles the plan (exec.compiled.compile_program) or raises Unstructured."""
    if mode == "dataflow":
        logger.debug("plan runs on the dataflow executor: mode='dataflow'")
        return None
    try:
        program = compile_plan()
    except Unstructured as e:
        logger.debug("plan runs on the dataflow executor: the compiler does not structure its control flow (%s)", e)
        return None
    if mode == "auto" and prefers_dataflow(program.nodes):
        logger.debug("plan runs on the dataflow executor: mode='auto' and it has heavy kernels that can run side by "
                     "side on the executor's pool")
        return None
    logger.debug("plan runs as compiled code: mode=%r", mode)
    return program


def prefers_dataflow(nodes: list[Node], cores: int | None = None) -> bool:
    """Whether the dataflow executor runs the plan of `nodes` faster than compiled code (see above)."""
    if (cores if cores is not None else os.cpu_count() or 1) < 2:
        return False
    heavy = [n for n in nodes if _heavy_single_threaded(n)]
    if not heavy:
        return False
    inside = set(nodes)
    consumers: dict = {n: [] for n in nodes}
    for n in nodes:
        for src in [t.node for t in n.inputs] + list(n.control_inputs):
            if src in inside and not (n.op == "Merge" and src.op == "NextIteration"):
                consumers.setdefault(src, []).append(n)
    reach = {h: _reachable(h, consumers) for h in heavy}
    for i, a in enumerate(heavy):
        for b in heavy[i + 1:]:
            if a.frame is b.frame and b not in reach[a] and a not in reach[b]:
                return True
    for h in heavy:
        loop = h.frame
        if loop is not None and getattr(loop, "parallel_iterations", 1) > 1 and not _on_recurrence(h, loop,
                                                                                                     reach[h], consumers):
            return True
    return False


def _heavy_single_threaded(n: Node) -> bool:
    if n.op in _SELF_THREADED or n.op in _CONSTANT_TIME or len(n.outputs) != 1:
        return False
    size = _sh.num_elements(n.outputs[0].shape)
    return size is not None and size >= HEAVY_ELEMENTS


def _reachable(start: Node, consumers: dict) -> set:
    """The nodes `start` feeds in its iteration (back edges into loop Merges not followed)."""
    seen, todo = set(), [start]
    while todo:
        for c in consumers.get(todo.pop(), ()):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def _on_recurrence(h: Node, loop, after_h: set, consumers: dict) -> bool:
    """Whether `h` lies on a cycle of its loop: some loop variable feeds it and it feeds that
    variable's next value."""
    for merge, nxt in zip(getattr(loop, "merges", ()), getattr(loop, "next_iterations", ()), strict=False):
        if nxt in after_h and h in _reachable(merge, consumers):
            return True
    return False
