"""Values to tensors: `constant`, `convert`, and the values known when the graph is built.

`convert` follows numpy's weak-scalar rule: a Python scalar takes the other
operand's dtype when it can hold the value. A list or tuple holding tensors
converts to their Stack, as `np.array` would join them; that is why the Stack op
and its builder `stack` are defined here, below every other op module, instead
of next to concat in graph.ops.array.
"""
from __future__ import annotations

import operator

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import get_default_graph, make_op
from graph.errors import DTypeError, ShapeError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.axes import common_rank, normalize_axis

register_op("Const", lambda i, a: [(a["dtype"], a["value"].shape)], hoist=True, differentiable=False)


def constant(value, dtype=None, name: str | None = None) -> Tensor:
    """A Const node of its own holding `value` (a numpy array or Python value).

    Two equal constants are two nodes: each can be fed, or differentiated with respect to, alone
    (`grad.gradients(a * b, [a])` with `a` and `b` both 2.0 is 2.0, as in TensorFlow)."""
    return _new_constant(_constant_array(value, dtype), name)


def _constant_array(value, dtype) -> np.ndarray:
    arr = np.asarray(value, dtype=None if dtype is None else _dt.as_dtype(dtype))
    if arr.dtype == object and not all(isinstance(v, str) for v in arr.flat):  # text is a graph string
        raise DTypeError(f"cannot make a constant from {type(value).__name__} value {value!r}")
    return arr


def _new_constant(arr: np.ndarray, name: str | None, numpy_scalar: bool = False) -> Tensor:
    arr = arr.copy()
    arr.flags.writeable = False
    attrs = {"value": arr, "dtype": arr.dtype, **({"numpy_scalar": True} if numpy_scalar else {})}
    return make_op("Const", [], attrs, name=name).outputs[0]


def literal(value, dtype=None) -> Tensor:
    """The Const of a value that an op builder is given where it takes a tensor (`x * 2.0`, a shape):
    small equal literals share one node, since nothing outside can reach it to feed it or to
    differentiate with respect to it alone. A literal built under `control_dependencies` gets a node
    of its own (its control inputs are its own)."""
    arr = _constant_array(value, dtype)
    # a numpy scalar is no Python number: its dtype does not give way beside an array's (NEP 50), which
    # a traced program's weak-number analysis reads off the Const (transpile/operators/leaves.py)
    numpy_scalar = isinstance(value, np.generic)
    g = get_default_graph()
    if arr.size > 16 or g.has_control_dependencies:
        return _new_constant(arr, None, numpy_scalar)
    key = (arr.dtype.str, arr.shape, arr.tobytes(), numpy_scalar)
    cached = g.constant_cache.get(key)
    if cached is None:
        cached = g.constant_cache[key] = _new_constant(arr, None, numpy_scalar)
    return cached


def convert(value, dtype=None, like: Tensor | None = None, name: str | None = None) -> Tensor:
    """Tensor for an op's argument `value`: tensors pass through; Python scalars take `like`'s dtype
    when compatible (numpy's weak-scalar rule); other values become literals (`literal`: small equal
    ones share a Const), or a constant of its own when `name` is given."""
    if name is not None:
        return _convert(value, dtype, like, lambda v, dt: constant(v, dt, name=name))
    return _convert(value, dtype, like, literal)


def convert_to_tensor(value, dtype=None, like: Tensor | None = None, name: str | None = None) -> Tensor:
    """`graph.convert`: as `convert`, but a value that is not a tensor becomes a Const node of its
    own (as `graph.constant`), which the caller can feed or differentiate with respect to alone."""
    return _convert(value, dtype, like, lambda v, dt: constant(v, dt, name=name))


def _convert(value, dtype, like, make_constant) -> Tensor:
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != _dt.as_dtype(dtype):
            raise DTypeError(f"expected a {_dt.as_dtype(dtype)} tensor, got {value.describe()}, a {value.dtype} tensor")
        return value
    as_tensor = getattr(value, "_as_graph_tensor", None)
    if as_tensor is not None:
        return as_tensor()
    if dtype is None and isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        dtype = _dt.dtype_of_python_scalar(value, like.dtype if like is not None else None)
    if isinstance(value, (list, tuple)) and any(_contains_tensor(v) for v in value):
        return stack([convert(v, dtype, like) for v in value])
    return make_constant(value, dtype)


def _contains_tensor(v) -> bool:
    if is_tensor_like(v):
        return True
    if isinstance(v, (list, tuple)):
        return any(_contains_tensor(x) for x in v)
    return False


# Each is called as hook(tensor) -> the Python number type (bool, int, float) that the tensor stands for
# in the program a library traced (transpile: a Python number a graph cond or loop carried), or None.
WEAK_TYPE_HOOKS: list = []


def convert_pair(a, b) -> tuple[Tensor, Tensor]:
    """Converts two operands, letting Python scalars, and tensors that stand for Python numbers
    (WEAK_TYPE_HOOKS), adopt the other operand's dtype, as numpy's weak scalars do."""
    a_t, b_t = is_tensor_like(a), is_tensor_like(b)
    if a_t and not b_t:
        a = convert(a)
        b = convert(b, like=a)
    elif b_t and not a_t:
        b = convert(b)
        a = convert(a, like=b)
    else:
        a, b = convert(a), convert(b)
    if WEAK_TYPE_HOOKS and a.dtype != b.dtype:  # (a tensor standing for a Python number beside an array)
        weak_a, weak_b = _weak_type(a), _weak_type(b)
        if weak_a is not None and weak_b is None:
            a = _beside(a, weak_a, b.dtype)
        elif weak_b is not None and weak_a is None:
            b = _beside(b, weak_b, a.dtype)
    return a, b


def python_number_type(t: Tensor):
    """The Python number type (bool, int, float) that tensor `t` stands for in a traced program
    (WEAK_TYPE_HOOKS), or None."""
    return _weak_type(t)


def _weak_type(t: Tensor):
    for hook in WEAK_TYPE_HOOKS:
        kind = hook(t)
        if kind is not None:
            return kind
    return None


def _beside(t: Tensor, kind, other) -> Tensor:
    """`t`, standing for a Python number of type `kind`, in the dtype numpy gives it beside an array
    of dtype `other` (`0.5 + float32` is float32)."""
    dtype = np.result_type(kind(0), other) if isinstance(other, np.dtype) else t.dtype
    if dtype == t.dtype:
        return t
    checks = [_fits(t, dtype)] if kind is int and _narrower(dtype, t.dtype) else []
    return make_op("Cast", [t], {"dtype": dtype}, control_inputs=checks).outputs[0]


def _narrower(dtype, than) -> bool:
    """Whether integer `dtype` holds fewer values than integer dtype `than` (int8 than int64)."""
    if dtype.kind not in "iu" or than.kind not in "iu":
        return False
    a, b = np.iinfo(dtype), np.iinfo(than)
    return a.min > b.min or a.max < b.max


def _fits(t: Tensor, dtype):
    """A run-time check that the integer `t` fits in `dtype`: numpy raises OverflowError for a Python
    int that does not (`int8_array + 300`), where a cast would wrap it silently."""
    info, source = np.iinfo(dtype), np.iinfo(t.dtype)
    low = constant(np.array(max(info.min, source.min), t.dtype))
    high = constant(np.array(min(info.max, source.max), t.dtype))
    inside = make_op("LogicalAnd", [make_op("GreaterEqual", [t, low]).outputs[0],
                                    make_op("LessEqual", [t, high]).outputs[0]]).outputs[0]
    message = f"Python integer out of bounds for {dtype} (numpy raises OverflowError)"
    return make_op("Assert", [inside, t], {"message": message})


def is_tensor_like(v) -> bool:
    """Whether `v` is a graph Tensor or reads as one (a Variable)."""
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor")


def static_value(t):
    """The constant numpy value of `t` if it is known when the graph is built, else None."""
    if not isinstance(t, Tensor):
        return np.asarray(t)
    n = t.node
    if n.op == "Const":
        return n.attrs["value"]
    if n.op == "Shape" and _sh.is_fully_defined(n.inputs[0].shape):
        return np.asarray(n.inputs[0].shape, dtype=n.attrs.get("out_type", np.int64))
    if n.op in ("Identity", "StopGradient") and not n.control_inputs:
        return static_value(n.inputs[0])
    if n.op in ("Switch", "Enter"):  # where the value is live at all, it is the input's
        return static_value(n.inputs[0])
    return None


# --------------------------------------------------------------------------- stack

def _stack_infer(inputs, attrs):
    dtype = np.result_type(*(t.dtype for t in inputs))
    joined = None
    for t in inputs:
        if t.shape is None:
            continue
        if joined is None:
            joined = t.shape
        elif not _sh.compatible(joined, t.shape):
            shapes = ", ".join(_sh.format_shape(u.shape) for u in inputs)
            raise ValueError(f"stack: all inputs must have the same shape, got {shapes}")
        else:
            joined = tuple(a if a is not None else b for a, b in zip(joined, t.shape, strict=True))
    if joined is None:
        return [(dtype, None)]
    axis = attrs["axis"]
    return [(dtype, (*joined[:axis], len(inputs), *joined[axis:]))]


register_op("Stack", _stack_infer)


def stack(values, axis: int = 0, name: str | None = None) -> Tensor:
    """`np.stack(values, axis)`: joins same-shaped tensors along a new axis."""
    ts = [convert(v) for v in values]
    if not ts:
        raise ShapeError("stack needs at least one tensor")
    nd = common_rank(ts, "stack")
    axis = operator.index(axis)
    if nd is not None:
        axis = normalize_axis(axis, (None,) * (nd + 1), "stack axis")
    return make_op("Stack", ts, {"axis": axis}, name=name).outputs[0]
