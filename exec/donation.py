"""Buffer donation: an elementwise kernel writes its result into an input nobody else reads.

A value is *exclusive* to a consumer when it was made by a kernel that always returns a new
array (FRESH_OPS) and that consumer is the only node (or fetch) it reaches, possibly through
control-flow plumbing that forwards values unchanged (Enter, Exit, NextIteration, Merge,
Switch, Identity). Such a consumer may overwrite it: `np.add(a, b, out=a)` instead of a new
array. That saves an allocation per op, and for arrays past malloc's mmap threshold (128 KiB,
e.g. a 32x1024 float32 gate matrix) it saves the page faults of fresh memory, which cost more
than the arithmetic. Loop-carried accumulators (the gradient of a weight summed over a
gradient loop) become updates in place. TF calls this forwarding an input buffer.

The decision is static, made once per plan from the graph: the executor's own references to
values in flight never matter, and a value that is fed, constant, a Variable's, saved on a
stack or read by two consumers is never donated.
"""
from __future__ import annotations

from graph import shapes as _sh
from graph.core import Node, Tensor
from graph.op_names import ENTER, EXIT, IDENTITY, LOOP_COND, MERGE, NEXT_ITERATION, STOP_GRADIENT, SWITCH

# Kernels that return a new array (never an input, a view or a stored value) for outputs of
# rank >= 1; an in-place kernel returns the exclusive buffer it was given, also new to its reader.
FRESH_OPS = frozenset({
    "Add", "Sub", "Mul", "TrueDiv", "FloorDiv", "Mod", "Pow", "Maximum", "Minimum", "Atan2",
    "Neg", "Abs", "Exp", "Log", "Sqrt", "Square", "Tanh", "Sign", "Floor", "Ceil", "Round", "Sin", "Cos",
    "Log1p", "Expm1", "Reciprocal", "Sigmoid", "Relu", "TanhGrad", "SigmoidGrad", "MatMul", "Concat", "Fill",
    "ZerosLike", "OnesLike", "Select", "Cast",
})
# Nodes whose output (any port) is one of their data inputs, unchanged.
_FORWARDING = frozenset({EXIT, NEXT_ITERATION, MERGE, SWITCH, IDENTITY, STOP_GRADIENT, LOOP_COND})


def exclusive_inputs(nodes: list[Node], local: dict, fetches: list[Tensor], fed: set) -> dict[int, list[int]]:
    """Local node id -> the data-input slots whose values only that node reads (see module doc)."""
    uses: dict[tuple, int] = {}
    for n in nodes:
        if n in fed:
            continue
        for t in n.inputs:
            key = _source(t, local)
            uses[key] = uses.get(key, 0) + 1
    for t in fetches:
        key = _source(t, local)
        uses[key] = uses.get(key, 0) + 1
    memo: dict[tuple, bool] = {}

    def exclusive(t: Tensor) -> bool:
        key = _source(t, local)
        if uses.get(key, 0) != 1:
            return False
        got = memo.get(key)
        if got is None:
            memo[key] = False  # a cycle of plumbing alone never makes a value exclusive
            got = memo[key] = _fresh(key[0], fed, exclusive)
        return got

    out: dict[int, list[int]] = {}
    for n in nodes:
        if n in fed:
            continue
        slots = [j for j, t in enumerate(n.inputs) if _has_buffer(t) and exclusive(t)]
        if slots:
            out[local[n]] = slots
    return out


def _source(t: Tensor, local: dict) -> tuple:
    """(node, port) that delivers t in the plan: identities the plan skips are looked through."""
    while t.node not in local and t.node.op in (IDENTITY, LOOP_COND, STOP_GRADIENT) and t.node.inputs:
        t = t.node.inputs[0]
    return (t.node, t.index)


def _fresh(n: Node, fed: set, exclusive) -> bool:
    if n in fed:
        return False
    if n.op in FRESH_OPS:
        return True
    if n.op == ENTER:
        return not n.attrs["is_constant"] and exclusive(n.inputs[0])
    if n.op in _FORWARDING:
        data = n.inputs[:1] if n.op == SWITCH else n.inputs
        return all(exclusive(t) for t in data)
    return False


def _has_buffer(t: Tensor) -> bool:
    """Whether t's values are arrays (rank >= 1) that can be written: scalars are immutable."""
    return t.shape is not None and len(t.shape) >= 1 and t.dtype.kind in "biufc"


def donatable_slot(n: Node, slots: list[int]) -> int | None:
    """The first exclusive input that can hold n's output: the same static shape and dtype."""
    if len(n.outputs) != 1 or not _sh.is_fully_defined(n.outputs[0].shape):
        return None
    out = n.outputs[0]
    for j in slots:
        t = n.inputs[j]
        if t.shape == out.shape and t.dtype == out.dtype:
            return j
    return None
