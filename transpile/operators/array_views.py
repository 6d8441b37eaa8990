"""How a view of an array reads its base and writes back into it: numpy's views (basic indexing,
`reshape`, `ravel`, `squeeze`, `.T`, `transpose`, `swapaxes`) as records that work on both kinds of
contents a MutableArray has, a numpy array or a graph tensor.

numpy gives `row = buf[0]` or `m = buf.reshape(3, 2)` the base's memory: a write through the view
changes the base, and a write into the base is seen through the view. A graph tensor has no memory to
share, so a view is its base plus one of these records: reading the view applies `read` to the base's
contents now, and writing it replaces the base's contents with `put(base contents, new view
contents)`. Neither changes the contents it is given (the journal of writes keeps them, see arrays.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import graph
from graph.node import Tensor


def holds_graph_value(x) -> bool:
    """Whether `x` (an index, a value, or a container of them) holds a tensor or an array whose
    contents are one."""
    if isinstance(x, (tuple, list)):
        return any(holds_graph_value(v) for v in x)
    if isinstance(x, dict):
        return any(holds_graph_value(v) for v in x.values())
    known = getattr(x, "is_known", None)
    if known is not None:
        return not known
    return isinstance(x, Tensor) or hasattr(type(x), "_as_graph_tensor")


@dataclass(frozen=True, slots=True)
class Index:
    """`base[key]` for a basic index (ints, slices, None, Ellipsis; ints may be scalar tensors)."""

    key: object

    @property
    def known(self) -> bool:
        return not holds_graph_value(self.key)

    def read(self, base):
        if isinstance(base, np.ndarray) and self.known:
            return base[self.key]
        return graph.getitem(graph.convert(base), self.key)

    def put(self, base, new):
        if isinstance(base, np.ndarray) and self.known and not holds_graph_value(new):
            out = base.copy()
            out[self.key] = np.asarray(new)
            return out
        return graph.set_item(graph.convert(base), self.key, new)


@dataclass(frozen=True, slots=True)
class Reshape:
    """`base.reshape(shape)`, `ravel`, `squeeze`, `expand_dims`: the same elements in C order."""

    shape: tuple

    known = True

    def read(self, base):
        if isinstance(base, np.ndarray):
            return base.reshape(self.shape)
        return graph.reshape(base, self.shape)

    def put(self, base, new):
        if isinstance(base, np.ndarray) and not holds_graph_value(new):
            return np.asarray(new).reshape(base.shape).copy()
        base = graph.convert(base)
        shape = base.shape if base.shape is not None and None not in base.shape else graph.shape(base)
        return graph.reshape(graph.convert(new), shape)


@dataclass(frozen=True, slots=True)
class Transpose:
    """`base.transpose(axes)`, `.T`, `swapaxes`: the same elements with the axes permuted."""

    axes: tuple

    known = True

    def read(self, base):
        if isinstance(base, np.ndarray):
            return base.transpose(self.axes)
        return graph.transpose(base, self.axes)

    def put(self, base, new):
        inverse = tuple(int(i) for i in np.argsort(self.axes))
        if isinstance(base, np.ndarray) and not holds_graph_value(new):
            return np.asarray(new).transpose(inverse).copy()
        return graph.transpose(graph.convert(new), inverse)


def is_basic_index(key) -> bool:
    """Whether numpy indexes with `key` by basic indexing (a view), not advanced indexing (a copy)."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            continue
        if not _is_integer_scalar(k):
            return False
    return True


def _is_integer_scalar(k) -> bool:
    """A graph scalar of an integer dtype (an index computed when the graph runs)."""
    if isinstance(k, Tensor) or hasattr(type(k), "_as_graph_tensor"):
        t = graph.convert(k)
        return t.shape == () and isinstance(t.dtype, np.dtype) and t.dtype.kind in "iu"
    return False


def indexes_one_element(key, ndim: int | None) -> bool:
    """Whether a basic index picks one element (numpy gives a scalar, not a view)."""
    items = key if isinstance(key, tuple) else (key,)
    if any(k is None or k is Ellipsis or isinstance(k, slice) for k in items):
        return False
    return ndim is not None and len(items) == ndim


def transpose_axes(ndim: int, axes) -> tuple:
    """numpy's `transpose(axes)` axes as a tuple of non-negative ints (None or () reverses)."""
    if axes is None or axes == () or axes == (None,):
        return tuple(range(ndim))[::-1]
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return tuple(int(a) % ndim for a in axes)


def swapped_axes(ndim: int, a: int, b: int) -> tuple:
    axes = list(range(ndim))
    a, b = a % ndim, b % ndim
    axes[a], axes[b] = axes[b], axes[a]
    return tuple(axes)
