"""ONNX lowerings of the numpy functions np.pad, np.einsum, np.cumsum, np.sort and np.argsort (and of what
their gradients build), in the table `NUMPY_LOWERINGS`; of the NumpyCalls np.nonzero (np.where of one
argument), np.flatnonzero and np.argwhere, as NonZero.

What ONNX has no operator for fails the export with the reason: np.cumprod and its gradient, the pad
modes "symmetric" and "wrap" (opset 18) and their gradients, a reflection wider than its axis, an
argsort whose order of ties numpy leaves to its sort (pass kind="stable": TopK keeps ties in order).
"""
from __future__ import annotations

import numpy as np

from graph.node import Node
from graph.onnx.lowering import Emitter
from graph.ops.numpy_call import display_name

NUMPY_LOWERINGS: dict = {}

_INT64 = np.dtype(np.int64)
_ONNX_PAD_MODES = ("constant", "edge", "reflect")
# what onnxruntime's CumSum, Einsum and TopK compute in (other dtypes are cast there and back)
_COMPUTED = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))


def _lowering(*ops: str):
    def register(fn):
        for op in ops:
            NUMPY_LOWERINGS[op] = fn
        return fn
    return register


def _pads(widths) -> list[int]:
    return [lo for lo, _ in widths] + [hi for _, hi in widths]


@_lowering("Pad")
def _pad(em: Emitter, node: Node, ins: list) -> list:
    widths, mode = node.attrs["pad_width"], node.attrs["mode"]
    if mode not in _ONNX_PAD_MODES:
        raise em.fail(f"np.pad(mode={mode!r}) has no ONNX form (opset 18 pads with {', '.join(_ONNX_PAD_MODES)})")
    if mode == "reflect":
        shape = node.inputs[0].shape
        if any(d is None or max(lo, hi) > d - 1 for d, (lo, hi) in zip(shape, widths, strict=True)):
            raise em.fail("a reflection wider than its axis (or along an axis of unknown size) has no ONNX form")
    if mode == "constant":
        return [em("Pad", ins[0], em.i64(*_pads(widths)), ins[1], mode="constant")]
    return [em("Pad", ins[0], em.i64(*_pads(widths)), mode=mode)]


@_lowering("PadGrad")
def _pad_grad(em: Emitter, node: Node, ins: list) -> list:
    widths = node.attrs["pad_width"]
    if node.attrs["mode"] != "constant":
        raise em.fail(f"the gradient of np.pad(mode={node.attrs['mode']!r}) has no ONNX form")
    # the padded gradient's interior: a Slice from each axis' `before` to `-after` (INT64_MAX where after is 0)
    ends = [-hi if hi else np.iinfo(np.int64).max for _, hi in widths]
    return [em("Slice", ins[0], em.i64(*(lo for lo, _ in widths)), em.i64(*ends))]


def _computed_in(em: Emitter, what: str):
    dtype = em.out_dtype
    if dtype not in _COMPUTED:
        raise em.fail(f"onnxruntime's {what} does not compute in {dtype}")
    return dtype


@_lowering("Cumsum")
def _cumsum(em: Emitter, node: Node, ins: list) -> list:
    dtype = _computed_in(em, "CumSum")
    axis = em.const(np.int64(node.attrs["axis"]))
    return [em("CumSum", em.input_as(ins, 0, dtype), axis, reverse=int(node.attrs["reverse"]))]


@_lowering("Einsum")
def _einsum(em: Emitter, node: Node, ins: list) -> list:
    dtype = _computed_in(em, "Einsum")
    return [em("Einsum", *(em.input_as(ins, k, dtype) for k in range(len(ins))), equation=str(node.attrs["equation"]))]


def _sorted(em: Emitter, node: Node, ins: list):
    """TopK of every element along the axis, smallest first: (values, indices)."""
    x = node.inputs[0]
    if x.dtype not in _COMPUTED:
        raise em.fail(f"onnxruntime's TopK does not sort {x.dtype} values")
    axis = node.attrs["axis"]
    size = em("Gather", em("Shape", ins[0]), em.i64(axis), axis=0)
    return em("TopK", ins[0], size, outputs=2, axis=axis, largest=0, sorted=1)


@_lowering("Sort")
def _sort(em: Emitter, node: Node, ins: list) -> list:
    return [_sorted(em, node, ins)[0]]


@_lowering("Argsort")
def _argsort(em: Emitter, node: Node, ins: list) -> list:
    if node.attrs["kind"] not in ("stable", "mergesort"):
        raise em.fail("numpy's default sort leaves the order of equal values to its algorithm, and TopK keeps "
                      "them in order: pass kind='stable' to np.argsort to export it")
    return [_sorted(em, node, ins)[1]]


@_lowering("Permute")
def _permute(em: Emitter, node: Node, ins: list) -> list:
    return [em("GatherElements", ins[0], em.input_as(ins, 1, _INT64), axis=node.attrs["axis"])]


def _nonzero(em: Emitter, node: Node, ins: list) -> list | None:
    """np.nonzero(x) (and np.where(x)), np.flatnonzero and np.argwhere of one tensor: ONNX NonZero, whose
    (rank, count) indices are numpy's, in row-major order; None for another call."""
    function, attrs = node.attrs["function"], node.attrs
    if (function not in ("numpy.nonzero", "numpy.where", "numpy.flatnonzero", "numpy.argwhere") or attrs["method"]
            or tuple(attrs["args"]) != (None,) or dict(attrs["kwargs"]) or len(ins) != 1):
        return None
    x = node.inputs[0]
    if x.dtype not in _NONZERO:  # what onnxruntime's NonZero takes; the others are compared with zero first
        ins = [em("Not", em("Equal", ins[0], em.const(0, x.dtype)))]
    if function == "numpy.flatnonzero":
        return [em("Reshape", em("NonZero", em("Reshape", ins[0], em.i64(-1))), em.i64(-1))]
    found = em("NonZero", ins[0])
    if function == "numpy.argwhere":
        return [em("Transpose", found, perm=[1, 0])]
    return [em("Gather", found, em.const(k, _INT64), axis=0) for k in range(len(node.outputs))]


_NONZERO = (np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8), np.dtype(np.float32))


@_lowering("NumpyCall")
def _numpy_call(em: Emitter, node: Node, ins: list) -> list:
    outputs = _nonzero(em, node, ins)
    if outputs is not None:
        return outputs
    name = display_name(node.attrs["function"], node.attrs["method"])
    raise em.fail(f"{name} runs numpy's own function on the values when the graph runs, and ONNX has no operator "
                  "for it: build the value from graph ops that export, or compute it outside the exported model")
