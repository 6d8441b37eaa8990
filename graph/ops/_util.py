"""Shared helpers for op builders: converting values to tensors, shape inference shorthands."""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import Tensor, get_default_graph, make_op
from graph.errors import DTypeError


def constant(value, dtype=None, name: str | None = None) -> Tensor:
    """A Const node holding `value` (a numpy array or Python value)."""
    arr = np.asarray(value, dtype=None if dtype is None else _dt.as_dtype(dtype))
    if arr.dtype == object:
        raise DTypeError(f"cannot make a constant from {type(value).__name__} value {value!r}")
    g = get_default_graph()
    cache = g.__dict__.setdefault("_const_cache", {})
    small = arr.size <= 16 and name is None and not g._control_deps
    key = (arr.dtype.str, arr.shape, arr.tobytes()) if small else None
    if key is not None and key in cache:
        return cache[key]
    arr = arr.copy()
    arr.flags.writeable = False
    t = make_op("Const", [], {"value": arr, "dtype": arr.dtype}, name=name).outputs[0]
    if key is not None:
        cache[key] = t
    return t


def convert(value, dtype=None, like: Tensor | None = None, name: str | None = None) -> Tensor:
    """Tensor for `value`: tensors pass through; Python scalars take `like`'s dtype
    when compatible (numpy's weak-scalar rule); other values become constants."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != _dt.as_dtype(dtype):
            raise DTypeError(f"expected a {_dt.as_dtype(dtype)} tensor, got {value.dtype} tensor {value.name}")
        return value
    as_tensor = getattr(value, "_as_graph_tensor", None)
    if as_tensor is not None:
        return as_tensor()
    if dtype is None and isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        dtype = _dt.dtype_of_python_scalar(value, like.dtype if like is not None else None)
    if isinstance(value, (list, tuple)) and any(_contains_tensor(v) for v in value):
        from graph.ops.array import stack
        return stack([convert(v, dtype, like) for v in value])
    return constant(value, dtype, name=name)


def _contains_tensor(v) -> bool:
    if isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor"):
        return True
    if isinstance(v, (list, tuple)):
        return any(_contains_tensor(x) for x in v)
    return False


def convert_pair(a, b) -> tuple[Tensor, Tensor]:
    """Converts two operands, letting Python scalars adopt the other operand's dtype."""
    a_t, b_t = _tensorish(a), _tensorish(b)
    if a_t and not b_t:
        a = convert(a)
        return a, convert(b, like=a)
    if b_t and not a_t:
        b = convert(b)
        return convert(a, like=b), b
    return convert(a), convert(b)


def _tensorish(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor")


def same_as_input(inputs, attrs):
    """Inference for ops whose single output has its first input's dtype and shape."""
    return [(inputs[0].dtype, inputs[0].shape)]


def require_numeric(t: Tensor, op: str) -> None:
    if not _dt.is_numeric(t.dtype):
        raise TypeError(f"{op} needs a numeric tensor, got {t.dtype}")


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
