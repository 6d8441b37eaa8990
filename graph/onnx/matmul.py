"""`a @ b` as an ONNX MatMul that onnxruntime's default graph optimizations compute right.

onnxruntime's `MatmulTransposeFusion` (ORT_ENABLE_EXTENDED and above, so in its
default ORT_ENABLE_ALL) folds a Transpose of a MatMul operand, or a Transpose
followed by a Cast, into a `com.microsoft.FusedMatMul`. Two of its cases go wrong:

- a 1-D right operand with a transposed left one: the FusedMatMul (transA=1)
  multiplies the untransposed matrix read with the transposed shape, so
  `A.T @ u` comes out as `A.reshape(m, n) @ u` (also after a scale was fused
  in by `MatMulScaleFusion`, or a Transpose moved next to the MatMul);
- a Cast of a Transpose that moves a batch axis (perm `[1, 0, 2]`, `[1, 2, 0]`):
  the fusion swaps the Cast and the Transpose, then gives up when the operands'
  ranks differ or it does not know one of them (a sequence element, an If
  output), and crashes the process while building the session.

So the MatMul gets operands of rank >= 2 (numpy's rule for a 1-D operand
spelled out: a row `(1, k)` on the left, a column `(k, 1)` on the right, that
axis squeezed from the result), of equal rank (leading axes of size 1, which
broadcast as numpy's batch dims do), whose ranks the model declares.

An operand of unknown rank gets the 1-D rule decided at run time instead: a
leading (left) or trailing (right) axis of size 1 when it turns out to be 1-D,
and that axis of the result removed; its MatMul is fed by Reshapes, which the
fusion leaves alone.
"""
from __future__ import annotations

from graph.node import Node
from graph.onnx.builder import tensor_type
from graph.onnx.lowering import Emitter


def lower_matmul(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    a, b = em.input_as(ins, 0, out), em.input_as(ins, 1, out)
    ranks = [None if t.shape is None else len(t.shape) for t in node.inputs]
    if None in ranks:
        return [_matmul_of_unknown_ranks(em, a, b)]
    rank = max(2, *ranks)
    # a 1-D `a` is a row and its axis leaves the result (-2), a 1-D `b` a column (-1)
    squeezed = [*([-2] if ranks[0] == 1 else []), *([-1] if ranks[1] == 1 else [])]
    a = _leading_ones(em, a, rank - max(ranks[0], 2), ranks[0] == 1, at_end=False)
    b = _leading_ones(em, b, rank - max(ranks[1], 2), ranks[1] == 1, at_end=True)
    for operand in (a, b):
        em.builder.declare(operand, tensor_type(out, (None,) * rank))
    product = em("MatMul", a, b)
    return [em("Squeeze", product, em.i64(*squeezed)) if squeezed else product]


def _leading_ones(em: Emitter, x: str, batch: int, vector: bool, at_end: bool) -> str:
    """`x` with `batch` leading axes of size 1, and a 1-D `x` as a row (or, `at_end`, a column)."""
    axes = list(range(batch))
    if vector:
        axes.append(batch + 1 if at_end else batch)
    return em("Unsqueeze", x, em.i64(*axes)) if axes else x


def _matmul_of_unknown_ranks(em: Emitter, a: str, b: str) -> str:
    a_pad, b_pad = _vector_padding(em, a), _vector_padding(em, b)
    a2 = em("Reshape", a, em("Concat", a_pad, em("Shape", a), axis=0), allowzero=1)
    b2 = em("Reshape", b, em("Concat", em("Shape", b), b_pad, axis=0), allowzero=1)
    product = em("MatMul", a2, b2)
    shape = em("Shape", product)
    rank = em("Shape", shape)  # 1-D, as slice bounds are
    rows_at, cols_at = em("Sub", rank, em.i64(2)), em("Sub", rank, em.i64(1))
    # the rows axis stays unless `a` was 1-D, the columns axis unless `b` was
    kept = em("Concat",
              em("Slice", shape, em.i64(0), rows_at),
              em("Slice", shape, rows_at, em("Sub", cols_at, em("Size", a_pad))),
              em("Slice", shape, cols_at, em("Sub", rank, em("Size", b_pad))), axis=0)
    return em("Reshape", product, kept, allowzero=1)


def _vector_padding(em: Emitter, x: str) -> str:
    """`[1]` when `x` is 1-D, `[]` otherwise: the axis numpy's matmul adds to a vector."""
    rank = em("Shape", em("Shape", x))  # [rank]
    two = em.i64(2)
    missing = em("Sub", two, em("Min", rank, two))  # [1] for a vector, [0] from rank 2 on
    return em("Slice", em.i64(1), em.i64(0), missing)

