"""Operand layout: a loop's constant matmul operand that is a transposed view is laid out once, before the loop.

A weight's transpose in a gradient loop (`dz @ Wh.T`, built once outside the loop by grad) is a view: every
iteration's matmul then reads the weight across its rows, and OpenBLAS's sgemm of a (32, 1024) matrix by a
transposed (256, 1024) view took 317 us against 197 us with the operand contiguous (docs/compiled.md). So a
Transpose whose every reader is a matmul, one of them inside a loop its value enters as a loop constant,
returns a contiguous copy: one copy per run instead of a slower matmul per iteration. Only the layout
changes, but BLAS may round a transposed operand's products in another order, so the dataflow plan
(exec/plan.py) and compiled code (exec/compiled/program.py) take the same decision from the same nodes
and stay equal bit for bit.
"""
from __future__ import annotations

import numpy as np

from graph.index import GraphIndex
from graph.node import Node
from graph.op_names import ENTER


def packed_transposes(nodes: list[Node]) -> set[Node]:
    """The Transposes among `nodes` (a plan's) whose value is made contiguous (see the module doc)."""
    index = GraphIndex(nodes)
    out = set()
    for n in nodes:
        if n.op == "Transpose" and n.outputs[0].shape is not None and len(n.outputs[0].shape) == 2:
            found = list(_readers(n, False, index))
            if found and all(c.op == "MatMul" for c, _ in found) and any(inside for _, inside in found):
                out.add(n)
    return out


def _readers(n: Node, entered: bool, index: GraphIndex):
    """(reader, whether n's value entered a loop to reach it) for the readers of n past constant Enters."""
    for c in index.data_consumers(n):
        if c.op == ENTER and c.attrs.get("is_constant"):
            yield from _readers(c, True, index)
        else:
            yield c, entered


def packed(transpose):
    """The kernel that returns `transpose`'s value as a contiguous array."""
    def packed_transpose(x):
        return np.ascontiguousarray(transpose(x))
    return packed_transpose
