"""Seeded random ops: random_uniform, random_normal, categorical.

Each op draws from its own generator, created per session from the op's seed
(an explicit `seed=`, or the graph's next seed in build order): a fresh
Session reproduces the same numbers, successive runs of one session draw new
ones. Draws are ordered effects, so they happen in program order even when
loop iterations run in parallel.
"""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import get_default_graph, make_op
from graph.errors import DTypeError, ShapeError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import convert
from graph.ops.math import cast
from graph.ops.shape_ops import scalar_value, shape_tensor, shape_value

_INT64 = np.dtype(np.int64)


def _scalar_param(inputs, what):
    for t, w in zip(inputs, what, strict=True):
        if t.shape is not None and t.shape != ():
            raise ShapeError(f"{w} must be a scalar, got shape {_sh.format_shape(t.shape)}")


def _dims(shape_t):
    v = shape_value(shape_t)
    return None if v is None else tuple(None if d is None or d < 0 else d for d in v)


def _uniform_infer(inputs, attrs):
    _scalar_param(inputs[1:], ("minval", "maxval"))
    return [(attrs["dtype"], _dims(inputs[0]))]


def _normal_infer(inputs, attrs):
    _scalar_param(inputs[1:], ("mean", "stddev"))
    return [(attrs["dtype"], _dims(inputs[0]))]


def _categorical_infer(inputs, attrs):
    logits, num = inputs
    n = scalar_value(num)
    if logits.shape is None:
        return [(_INT64, None)]
    if len(logits.shape) not in (1, 2):
        raise ShapeError(f"categorical logits must be [classes] or [batch, classes], got "
                         f"{_sh.format_shape(logits.shape)}")
    return [(_INT64, (*logits.shape[:-1], n))]


_FLAGS = dict(stateful=True, ordered=True, differentiable=False)
register_op("RandomUniform", _uniform_infer, **_FLAGS)
register_op("RandomNormal", _normal_infer, **_FLAGS)
register_op("Categorical", _categorical_infer, **_FLAGS)


def _seed(seed) -> int:
    if seed is None:
        return get_default_graph().next_seed()
    return int(seed) % (2 ** 63)


def _param(value, dtype, what) -> Tensor:
    t = convert(value) if isinstance(value, Tensor) or hasattr(value, "_as_graph_tensor") else None
    if t is None:
        return convert(np.asarray(value, dtype=dtype))
    if not _dt.is_numeric(t.dtype):
        raise DTypeError(f"{what} must be numeric, got {t.dtype}")
    return cast(t, dtype)


def random_uniform(shape, minval=0, maxval=None, dtype=np.float64, seed=None, name: str | None = None) -> Tensor:
    """Uniform samples in [minval, maxval) of `shape` (maxval defaults to 1 for floats; integer
    dtypes need it). `shape`, `minval` and `maxval` may be tensors."""
    dtype = _dt.as_dtype(dtype)
    if dtype.kind in "iu":
        if maxval is None:
            raise ValueError("random_uniform with an integer dtype needs maxval")
    elif dtype.kind != "f":
        raise DTypeError(f"random_uniform: dtype must be floating or integer, got {dtype}")
    elif maxval is None:
        maxval = 1
    param_dtype = dtype if dtype.kind in "iu" else np.dtype(np.float64)
    inputs = [shape_tensor(shape), _param(minval, param_dtype, "minval"), _param(maxval, param_dtype, "maxval")]
    return make_op("RandomUniform", inputs, {"dtype": dtype, "seed": _seed(seed)}, name=name).outputs[0]


def random_normal(shape, mean=0.0, stddev=1.0, dtype=np.float64, seed=None, name: str | None = None) -> Tensor:
    """Normal samples of `shape`; `shape`, `mean` and `stddev` may be tensors."""
    dtype = _dt.as_dtype(dtype)
    if dtype.kind != "f":
        raise DTypeError(f"random_normal: dtype must be floating, got {dtype}")
    f64 = np.dtype(np.float64)
    inputs = [shape_tensor(shape), _param(mean, f64, "mean"), _param(stddev, f64, "stddev")]
    return make_op("RandomNormal", inputs, {"dtype": dtype, "seed": _seed(seed)}, name=name).outputs[0]


def categorical(logits, num_samples, seed=None, name: str | None = None) -> Tensor:
    """Class indices (int64) drawn from unnormalised log-probabilities: [batch, classes] logits give
    [batch, num_samples] samples; [classes] logits give [num_samples]."""
    logits = convert(logits)
    if not _dt.is_numeric(logits.dtype):
        raise DTypeError(f"categorical logits must be numeric, got {logits.dtype}")
    num = _param(num_samples, _INT64, "num_samples")
    return make_op("Categorical", [logits, num], {"seed": _seed(seed)}, name=name).outputs[0]


__all__ = ["random_uniform", "random_normal", "categorical"]
