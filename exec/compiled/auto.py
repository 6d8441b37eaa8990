"""Which runs a plan: compiled code or the dataflow executor (`Session(mode=...)`).

"compiled" runs every plan it can structure as compiled code, "dataflow" none, and "auto"
compiles unless the dataflow executor's parallelism pays for its scheduling.

The rule (`prefers_dataflow`; docs/compiled.md has the measurements behind it) is a cost model
of two figures (`estimate`):
- what the executor's pool can gain: compiled code runs one kernel at a time, the executor runs
  independent heavy kernels side by side. That pays only for kernels that do not parallelize
  themselves (a matmul in compiled code has all the BLAS threads, exec/compiled/threads.py) and
  run long enough for a pool thread (at least 2^17 elements): two in one iteration (or at the
  top level) of which neither feeds the other, or one in a loop with parallel_iterations > 1
  that is off the loop's recurrence. On two cores at best half of their time is saved.
- what the executor's scheduling costs: about a microsecond a node execution more than a line
  of compiled code.
Both are counted per execution of a frame, a loop's nodes weighted by a nominal trip count per
level of nesting (the graph does not know how long a loop runs), so a plan goes to the executor
when the overlap it can win is larger than the scheduling it adds, on a machine with two cores
or more. Independent heavy kernels after a long loop (an LSTM's loss over its stacked outputs)
no longer send the loop to the executor: their overlap is saved once, the scheduling is paid
every iteration.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterable

from exec.compiled.program import Program
from exec.compiled.structure import Unstructured
from graph import shapes as _sh
from graph.frames import enclosing_frames
from graph.index import GraphIndex, reachable
from graph.logs import get_logger
from graph.node import Node
from graph.op_names import (
    CONST,
    ENTER,
    EXIT,
    IDENTITY,
    LOOP_COND,
    MERGE,
    NEXT_ITERATION,
    NO_OP,
    PLACEHOLDER,
    STOP_GRADIENT,
    SWITCH,
)

logger = get_logger(__name__)

MODES = ("auto", "compiled", "dataflow")
# An elementwise kernel on at least this many elements runs long enough (~100 us) for the pool
# to pay (the executor's own threshold, exec/plan.py).
HEAVY_ELEMENTS = 1 << 17
# The cost model's constants, measured on the 2-core box (docs/compiled.md): an elementwise kernel's
# time per output element (float32 add 0.13 ns, tanh 0.37, exp 0.46; float64 add 0.27, tanh 1.8: a
# low figure, so the executor is chosen only where its gain is clear), the executor's cost per node
# execution beyond compiled code's (0.9 us measured: 1.4 against 0.5), and the trip count assumed
# for a loop at each level of nesting.
ELEMENT_US = 0.25e-3
NODE_US = 1.0
NOMINAL_TRIPS = 100
# Kernels that use every core on their own.
_SELF_THREADED = frozenset({"MatMul", "BatchMatMul", "Dot", "Einsum"})
# Nodes that do no work proportional to their output: plumbing, views, stored values.
_CONSTANT_TIME = frozenset({CONST, PLACEHOLDER, IDENTITY, STOP_GRADIENT, NO_OP, ENTER, EXIT, SWITCH,
                            MERGE, NEXT_ITERATION, LOOP_COND, "ReadVariable", "Transpose", "Reshape",
                            "ExpandDims", "Squeeze", "BroadcastTo", "Split", "Unstack", "StackPush", "StackPop",
                            "TensorArrayRead", "TensorArrayWrite", "Shape", "Size", "Rank"})


@dataclass(frozen=True)
class Estimate:
    """The cost model's figures for one plan, in microseconds per run at the nominal trip counts."""
    gain_us: float       # what running independent heavy kernels side by side can save
    overhead_us: float   # what the executor's scheduling adds over compiled code

    @property
    def prefers_dataflow(self) -> bool:
        return self.gain_us > self.overhead_us


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
    if mode == "auto":
        est = estimate(program.nodes)
        if est.prefers_dataflow:
            logger.debug("plan runs on the dataflow executor: mode='auto' and its heavy kernels running side by side "
                         "save more (%.0f us) than its scheduling costs (%.0f us)", est.gain_us, est.overhead_us)
            return None
    logger.debug("plan runs as compiled code: mode=%r", mode)
    return program


def prefers_dataflow(nodes: list[Node], cores: int | None = None) -> bool:
    """Whether the dataflow executor runs the plan of `nodes` faster than compiled code (see above)."""
    return estimate(nodes, cores).prefers_dataflow


def estimate(nodes: list[Node], cores: int | None = None) -> Estimate:
    """The gain of the executor's pool against the cost of its scheduling for the plan of `nodes`."""
    overhead = sum(NODE_US * _weight(n.frame) for n in nodes)
    if (cores if cores is not None else os.cpu_count() or 1) < 2:
        return Estimate(0.0, overhead)
    parallel = _parallel_heavy(nodes)
    gain = sum(_elements(h) * ELEMENT_US * _weight(h.frame) for h in parallel) / 2
    return Estimate(gain, overhead)


def _parallel_heavy(nodes: list[Node]) -> list[Node]:
    """The heavy single-threaded kernels that can run beside another: an independent heavy kernel in
    their iteration, or their own next iterations (parallel_iterations > 1, off the recurrence)."""
    heavy = [n for n in nodes if _heavy_single_threaded(n)]
    if not heavy:
        return []
    feeds = GraphIndex(nodes).forward_consumers
    reach = {h: _fed_by(h, feeds) for h in heavy}
    out = []
    for a in heavy:
        if any(b is not a and a.frame is b.frame and b not in reach[a] and a not in reach[b] for b in heavy):
            out.append(a)
            continue
        loop = a.frame
        if loop is not None and getattr(loop, "parallel_iterations", 1) > 1 and \
                not _on_recurrence(a, loop, reach[a], feeds):
            out.append(a)
    return out


def _weight(frame) -> float:
    """How many times a node of `frame` runs per run of the plan, at the nominal trip counts."""
    return float(NOMINAL_TRIPS ** sum(1 for _ in enclosing_frames(frame)))


def _elements(n: Node) -> int:
    return _sh.num_elements(n.outputs[0].shape) or 0


def _heavy_single_threaded(n: Node) -> bool:
    if n.op in _SELF_THREADED or n.op in _CONSTANT_TIME or len(n.outputs) != 1:
        return False
    size = _sh.num_elements(n.outputs[0].shape)
    return size is not None and size >= HEAVY_ELEMENTS


def _fed_by(start: Node, feeds: Callable[[Node], Iterable[Node]]) -> set:
    """The nodes `start` feeds in its iteration (`feeds` follows no back edge into a loop Merge)."""
    return reachable(feeds(start), feeds)


def _on_recurrence(h: Node, loop, after_h: set, feeds: Callable[[Node], Iterable[Node]]) -> bool:
    """Whether `h` lies on a cycle of its loop: some loop variable feeds it and it feeds that
    variable's next value."""
    for merge, nxt in zip(getattr(loop, "merges", ()), getattr(loop, "next_iterations", ()), strict=False):
        if nxt in after_h and h in _fed_by(merge, feeds):
            return True
    return False
