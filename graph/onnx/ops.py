"""Graph ops as ONNX operators: the table `LOWERINGS`, op name -> `lower(emit, node, inputs) -> outputs`.

Each lowering reproduces the numpy semantics of the op's kernel with the
node's dtypes: ONNX operators take operands of one type, so inputs are cast to
the result dtype numpy's promotion gave the node (or, for comparisons, to the
operands' common type). Control-flow plumbing, TensorArrays and indexing have
their own modules; ops without an ONNX meaning (stacks of gradient loops,
random draws, Variable assignments) raise ExportError with the reason.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from graph import shapes as _sh
from graph.node import Node
from graph.onnx.builder import elem_type
from graph.onnx.lowering import Emitter
from graph.onnx.matmul import lower_matmul
from graph.ops import static_value

Lowering = Callable[[Emitter, Node, list], list]
LOWERINGS: dict[str, Lowering] = {}

_BOOL = np.dtype(np.bool_)
_INT64 = np.dtype(np.int64)
_UINT8 = np.dtype(np.uint8)


def lowering(*ops: str):
    def register(fn):
        for op in ops:
            LOWERINGS[op] = fn
        return fn
    return register


def _is_bool(dtype) -> bool:
    return np.dtype(dtype) == _BOOL


# --------------------------------------------------------------------------- elementwise

_ARITHMETIC = {"Add": "Add", "Sub": "Sub", "Mul": "Mul", "TrueDiv": "Div", "Pow": "Pow",
               "Maximum": "Max", "Minimum": "Min"}
# numpy's arithmetic on two bools stays bool: + and maximum are `or`, * and minimum are `and`
_BOOL_ARITHMETIC = {"Add": "Or", "Mul": "And", "Maximum": "Or", "Minimum": "And"}


@lowering(*_ARITHMETIC)
def _arithmetic(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    if _is_bool(out):
        if node.op not in _BOOL_ARITHMETIC:
            raise em.fail(f"{node.op} of booleans has no ONNX operator")
        return [em(_BOOL_ARITHMETIC[node.op], em.input_as(ins, 0, out), em.input_as(ins, 1, out))]
    return [em(_ARITHMETIC[node.op], em.input_as(ins, 0, out), em.input_as(ins, 1, out))]


@lowering("Mod")
def _mod(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    a, b = em.input_as(ins, 0, out), em.input_as(ins, 1, out)
    if out.kind in "iu":
        return [em("Mod", a, b, fmod=0)]  # the sign of the divisor, as numpy's remainder
    return [_float_remainder(em, a, b, out)[0]]


def _float_remainder(em: Emitter, a: str, b: str, dtype) -> tuple[str, str]:
    """numpy's float remainder and the condition under which it corrected C's fmod (npy_divmod)."""
    zero = em.const(0, dtype)
    mod = em("Mod", a, b, fmod=1)
    fix = em("And", em("Not", em("Equal", mod, zero)), em("Xor", em("Less", b, zero), em("Less", mod, zero)))
    return em("Where", fix, em("Add", mod, b), mod), fix


@lowering("FloorDiv")
def _floor_div(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    a, b = em.input_as(ins, 0, out), em.input_as(ins, 1, out)
    if out.kind in "iu":
        # a - remainder(a, b) is a multiple of b: the division is exact, whatever way Div rounds
        return [em("Div", em("Sub", a, em("Mod", a, b, fmod=0)), b)]
    if out.kind != "f":
        raise em.fail(f"floor division of {out} has no ONNX operator")
    # npy_divmod: (a - fmod(a, b)) / b, one less where the remainder was corrected, then rounded
    one, half = em.const(1, out), em.const(0.5, out)
    _, fix = _float_remainder(em, a, b, out)
    div = em("Div", em("Sub", a, em("Mod", a, b, fmod=1)), b)
    div = em("Where", fix, em("Sub", div, one), div)
    floor = em("Floor", div)
    return [em("Where", em("Greater", em("Sub", div, floor), half), em("Add", floor, one), floor)]


_COMPARISONS = {"Equal": "Equal", "Less": "Less", "LessEqual": "LessOrEqual", "Greater": "Greater",
                "GreaterEqual": "GreaterOrEqual", "NotEqual": "Equal"}


@lowering(*_COMPARISONS)
def _comparison(em: Emitter, node: Node, ins: list) -> list:
    a, b = node.inputs
    common = np.result_type(a.dtype, b.dtype)
    if _is_bool(common) and node.op not in ("Equal", "NotEqual"):
        common = _UINT8  # ONNX orders numbers only; False < True as 0 < 1
    out = em(_COMPARISONS[node.op], em.input_as(ins, 0, common), em.input_as(ins, 1, common))
    return [em("Not", out) if node.op == "NotEqual" else out]


_LOGICAL = {"LogicalAnd": "And", "LogicalOr": "Or", "LogicalXor": "Xor"}


@lowering(*_LOGICAL)
def _logical(em: Emitter, node: Node, ins: list) -> list:
    return [em(_LOGICAL[node.op], em.input_as(ins, 0, _BOOL), em.input_as(ins, 1, _BOOL))]


@lowering("LogicalNot")
def _logical_not(em: Emitter, node: Node, ins: list) -> list:
    return [em("Not", em.input_as(ins, 0, _BOOL))]


_BITWISE = {"BitwiseAnd": ("BitwiseAnd", "And"), "BitwiseOr": ("BitwiseOr", "Or"),
            "BitwiseXor": ("BitwiseXor", "Xor")}


@lowering(*_BITWISE)
def _bitwise(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    op = _BITWISE[node.op][1 if _is_bool(out) else 0]
    return [em(op, em.input_as(ins, 0, out), em.input_as(ins, 1, out))]


@lowering("Invert")
def _invert(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    return [em("Not" if _is_bool(out) else "BitwiseNot", em.input_as(ins, 0, out))]


_UNARY = {"Neg": "Neg", "Abs": "Abs", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Tanh": "Tanh",
          "Sin": "Sin", "Cos": "Cos", "Floor": "Floor", "Ceil": "Ceil", "Sign": "Sign", "Round": "Round",
          "Reciprocal": "Reciprocal", "Sigmoid": "Sigmoid", "Relu": "Relu"}


@lowering(*_UNARY)
def _unary(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    x = em.input_as(ins, 0, out)
    if _is_bool(out):
        if node.op not in ("Abs", "Floor", "Ceil", "Round", "Relu"):
            raise em.fail(f"{node.op} of booleans has no ONNX operator")
        return [em("Identity", x)]
    if node.op in ("Floor", "Ceil", "Round") and out.kind in "iu":
        return [em("Identity", x)]  # numpy keeps integers as they are
    if node.op == "Reciprocal" and out.kind in "iu":
        return [em("Div", em.const(1, out), x)]
    return [em(_UNARY[node.op], x)]


@lowering("Square")
def _square(em: Emitter, node: Node, ins: list) -> list:
    x = em.input_as(ins, 0, em.out_dtype)
    return [em("Mul", x, x)]


@lowering("Log1p")
def _log1p(em: Emitter, node: Node, ins: list) -> list:
    # log(1 + x) loses x's digits where 1 + x rounds; x * log(u) / (u - 1) with u = 1 + x does not
    # (Goldberg, "What every computer scientist should know about floating-point arithmetic", thm. 4)
    out = em.out_dtype
    x = em.input_as(ins, 0, out)
    u = em("Add", x, em.const(1, out))
    d = em("Sub", u, em.const(1, out))
    exact = em("Div", em("Mul", x, em("Log", u)), d)
    return [em("Where", em("Equal", d, em.const(0, out)), x, exact)]


@lowering("Expm1")
def _expm1(em: Emitter, node: Node, ins: list) -> list:
    # the same trick for exp(x) - 1: (u - 1) * x / log(u) with u = exp(x); u - 1 is -1 once exp underflows
    out = em.out_dtype
    x = em.input_as(ins, 0, out)
    u = em("Exp", x)
    d = em("Sub", u, em.const(1, out))
    exact = em("Div", em("Mul", d, x), em("Log", u))
    minus_one = em("Equal", d, em.const(-1, out))
    return [em("Where", em("Equal", d, em.const(0, out)), x, em("Where", minus_one, d, exact))]


@lowering("IsNan", "IsFinite")
def _is_nan_finite(em: Emitter, node: Node, ins: list) -> list:
    x = node.inputs[0]
    if x.dtype.kind != "f":  # integers and bools are never NaN and always finite
        return [em("Expand", em.const(node.op == "IsFinite"), em("Shape", ins[0]))]
    nan = em("IsNaN", ins[0])
    return [nan if node.op == "IsNan" else em("Not", em("Or", nan, em("IsInf", ins[0])))]


@lowering("TanhGrad")
def _tanh_grad(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    y, dy = em.input_as(ins, 0, out), em.input_as(ins, 1, out)
    return [em("Mul", dy, em("Sub", em.const(1, out), em("Mul", y, y)))]


@lowering("SigmoidGrad")
def _sigmoid_grad(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    y, dy = em.input_as(ins, 0, out), em.input_as(ins, 1, out)
    return [em("Mul", em("Mul", dy, y), em("Sub", em.const(1, out), y))]


@lowering("Cast")
def _cast(em: Emitter, node: Node, ins: list) -> list:
    return [em("Cast", ins[0], to=elem_type(em.out_dtype))]


LOWERINGS["MatMul"] = lower_matmul  # 1-D operands made 2-D: graph/onnx/matmul.py says why


@lowering("Select")
def _select(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    work = _UINT8 if _is_bool(out) else out  # onnxruntime has no Where of booleans
    chosen = em("Where", em.input_as(ins, 0, _BOOL), em.input_as(ins, 1, work), em.input_as(ins, 2, work))
    return [em.cast(chosen, work, out)]


@lowering("Softmax", "LogSoftmax")
def _softmax(em: Emitter, node: Node, ins: list) -> list:
    return [em(node.op, ins[0], axis=node.attrs["axis"])]


# --------------------------------------------------------------------------- reductions

_REDUCTIONS = {"Sum": "ReduceSum", "Prod": "ReduceProd", "Max": "ReduceMax", "Min": "ReduceMin",
               "Mean": "ReduceMean", "Any": "ReduceMax", "All": "ReduceMin"}


@lowering(*_REDUCTIONS)
def _reduce(em: Emitter, node: Node, ins: list) -> list:
    out, axes, keepdims = em.out_dtype, node.attrs["axis"], int(node.attrs["keepdims"])
    # booleans reduce as 0/1 (any: max, all: min); the result goes back to bool
    if node.op in ("Any", "All"):
        work = _UINT8
        x = em.cast(em.input_as(ins, 0, _BOOL), _BOOL, work)
    else:
        work = _UINT8 if _is_bool(out) else out
        x = em.input_as(ins, 0, work)
    if axes is not None and len(axes) == 0:
        result = em("Identity", x)  # numpy: reducing over no axis changes nothing
    elif axes is None:
        result = em(_REDUCTIONS[node.op], x, keepdims=keepdims)
    else:
        result = em(_REDUCTIONS[node.op], x, em.i64(*axes), keepdims=keepdims)
    return [em.cast(result, work, out)]


@lowering("ArgMax", "ArgMin")
def _arg_reduce(em: Emitter, node: Node, ins: list) -> list:
    x_t = node.inputs[0]
    x = em.cast(ins[0], x_t.dtype, _UINT8) if _is_bool(x_t.dtype) else ins[0]
    axis, keepdims = node.attrs["axis"], bool(node.attrs["keepdims"])
    if axis is not None:
        return [em(node.op, x, axis=axis, keepdims=int(keepdims), select_last_index=0)]
    # numpy: the index into the flattened array
    flat = em(node.op, em("Reshape", x, em.i64(-1)), axis=0, keepdims=0, select_last_index=0)
    if not keepdims:
        return [flat]
    if x_t.shape is None:
        raise em.fail("argmax/argmin over all axes with keepdims needs a known rank")
    return [em("Reshape", flat, em.i64(*([1] * len(x_t.shape))))]


# --------------------------------------------------------------------------- shapes

@lowering("Shape")
def _shape(em: Emitter, node: Node, ins: list) -> list:
    return [em.cast(em("Shape", ins[0]), _INT64, node.attrs["out_type"])]


@lowering("Size")
def _size(em: Emitter, node: Node, ins: list) -> list:
    return [em.cast(em("Size", ins[0]), _INT64, node.attrs["out_type"])]


@lowering("Rank")
def _rank(em: Emitter, node: Node, ins: list) -> list:
    return [em("Size", em("Shape", ins[0]))]


@lowering("Reshape")
def _reshape(em: Emitter, node: Node, ins: list) -> list:
    # allowzero: a 0 in the shape is a dimension of size 0, as in numpy (not "copy this dimension")
    return [em("Reshape", ins[0], em.input_as(ins, 1, _INT64), allowzero=1)]


@lowering("Transpose")
def _transpose(em: Emitter, node: Node, ins: list) -> list:
    perm = node.attrs["perm"]
    return [em("Transpose", ins[0]) if perm is None else em("Transpose", ins[0], perm=list(perm))]


@lowering("ExpandDims")
def _expand_dims(em: Emitter, node: Node, ins: list) -> list:
    return [em("Unsqueeze", ins[0], em.i64(*node.attrs["axis"]))]


@lowering("Squeeze")
def _squeeze(em: Emitter, node: Node, ins: list) -> list:
    axes = node.attrs["axis"]
    return [em("Squeeze", ins[0]) if axes is None else em("Squeeze", ins[0], em.i64(*axes))]


@lowering("Concat")
def _concat(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    return [em("Concat", *(em.input_as(ins, k, out) for k in range(len(ins))), axis=node.attrs["axis"])]


@lowering("Stack")
def _stack(em: Emitter, node: Node, ins: list) -> list:
    out, axis = em.out_dtype, node.attrs["axis"]
    parts = [em("Unsqueeze", em.input_as(ins, k, out), em.i64(axis)) for k in range(len(ins))]
    return [em("Concat", *parts, axis=axis)]


@lowering("Unstack")
def _unstack(em: Emitter, node: Node, ins: list) -> list:
    axis, num = node.attrs["axis"], node.attrs["num"]
    parts = em("Split", ins[0], axis=axis, num_outputs=num, outputs=num)
    parts = [parts] if num == 1 else parts
    return [em("Squeeze", p, em.i64(axis)) for p in parts]


@lowering("Split")
def _split(em: Emitter, node: Node, ins: list) -> list:
    axis, sections = node.attrs["axis"], node.attrs["indices_or_sections"]
    n = len(node.outputs)
    if isinstance(sections, int):  # numpy only splits evenly, where num_outputs agrees
        parts = em("Split", ins[0], axis=axis, num_outputs=n, outputs=n)
        return [parts] if n == 1 else parts
    bounds = [0, *sections, np.iinfo(np.int64).max]
    return [em("Slice", ins[0], em.i64(a), em.i64(b), em.i64(axis)) for a, b in zip(bounds[:-1], bounds[1:])]


@lowering("Tile")
def _tile(em: Emitter, node: Node, ins: list) -> list:
    x, reps = node.inputs
    if x.shape is None or reps.shape is None or reps.shape[0] is None:
        raise em.fail("tile needs the rank of its input and the length of its repetitions to be known")
    rank, k = len(x.shape), reps.shape[0]
    value, counts = ins[0], em.input_as(ins, 1, _INT64)
    if k > rank:  # numpy: the input gets leading axes of size 1
        value = em("Unsqueeze", value, em.i64(*range(k - rank)))
    elif k < rank:  # numpy: the repetitions get leading ones
        counts = em("Concat", em.i64(*([1] * (rank - k))), counts, axis=0)
    return [em("Tile", value, counts)]


@lowering("BroadcastTo")
def _broadcast_to(em: Emitter, node: Node, ins: list) -> list:
    return [em("Expand", ins[0], em.input_as(ins, 1, _INT64))]


@lowering("SumToShape")
def _sum_to_shape(em: Emitter, node: Node, ins: list) -> list:
    x_shape, target = node.inputs[0].shape, static_value(node.inputs[1])
    if target is None or not _sh.is_fully_defined(x_shape):
        raise em.fail("a gradient's sum down to a shape needs both shapes known when the graph is built")
    target = tuple(int(d) for d in np.asarray(target).reshape(-1))
    lead = len(x_shape) - len(target)
    axes = [*range(lead), *(lead + i for i, d in enumerate(target) if d == 1 and x_shape[lead + i] != 1)]
    x = em("ReduceSum", ins[0], em.i64(*axes), keepdims=1) if axes else ins[0]
    return [em("Reshape", x, em.i64(*target))]


@lowering("Gather")
def _gather(em: Emitter, node: Node, ins: list) -> list:
    return [em("Gather", ins[0], em.input_as(ins, 1, _INT64), axis=node.attrs["axis"])]


# --------------------------------------------------------------------------- creation

@lowering("Fill")
def _fill(em: Emitter, node: Node, ins: list) -> list:
    return [em("Expand", em.input_as(ins, 1, em.out_dtype), em.input_as(ins, 0, _INT64))]


@lowering("ZerosLike", "OnesLike")
def _like(em: Emitter, node: Node, ins: list) -> list:
    value = em.const(1 if node.op == "OnesLike" else 0, em.out_dtype)
    return [em("Expand", value, em("Shape", ins[0]))]


@lowering("Range")
def _range(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    return [em("Range", *(em.input_as(ins, k, out) for k in range(3)))]


@lowering("OneHot")
def _one_hot(em: Emitter, node: Node, ins: list) -> list:
    # numpy's (indices[..., None] == arange(depth)): out-of-range indices give rows of zeros
    # (ONNX's OneHot would count negative ones from the end)
    indices = em("Unsqueeze", em.input_as(ins, 0, _INT64), em.i64(-1))
    positions = em("Range", em.const(0, _INT64), em.input_as(ins, 1, _INT64), em.const(1, _INT64))
    return [em("Cast", em("Equal", indices, positions), to=elem_type(em.out_dtype))]


# --------------------------------------------------------------------------- what ONNX cannot express

def _refuse(reason: str) -> Lowering:
    def refuse(em: Emitter, node: Node, ins: list) -> list:
        raise em.fail(reason)
    return refuse


for _op in ("StackNew", "StackPush", "StackPop", "StackConcat", "StackSplit"):
    LOWERINGS[_op] = _refuse(
        "a gradient loop's saved values live on stacks, which ONNX has no operators for; export the forward "
        "computation, or a gradient of a computation without loops")
for _op in ("RandomUniform", "RandomNormal", "Categorical"):
    LOWERINGS[_op] = _refuse(
        "random draws come from this library's generators, which ONNX runtimes do not reproduce; pass the random "
        "numbers in as an input instead")
for _op in ("AssignVariable", "AssignAddVariable", "AssignSubVariable", "AssignItemVariable"):
    LOWERINGS[_op] = _refuse("an exported model has no state: it reads Variables (as initializers) but cannot "
                             "assign them")
LOWERINGS["Atan2"] = _refuse("arctan2 has no ONNX operator")
