"""What a `for` loop iterates: `range`, `enumerate` and `zip` of tensors, and the count and items a
graph loop reads from a tensor, a TensorArray, a range or those combined."""
from __future__ import annotations

import builtins

import numpy as np

import graph
from graph.node import Tensor
from transpile.operators.data_structures import TensorList
from transpile.operators.graph_lists import GraphList
from transpile.operators.leaves import convert_leaf, describe, is_tensor, mark_weak_type
from transpile.operators.staging import StagingError


class GraphRange:
    """`range(...)` with tensor bounds: iterated by a graph loop, or used as a tensor."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def _as_graph_tensor(self):
        return graph.range(self.start, self.stop, self.step)

    def __reversed__(self) -> "GraphRange":
        """`reversed(r)`: the same items, last first (as `r[::-1]`)."""
        return self[::-1]

    def __getitem__(self, key):
        """`r[i]` (a scalar tensor) or `r[a:b:c]` (a range), as Python's range gives them."""
        source = RangeSource(self.start, self.stop, self.step)
        n = source.n()
        start, step = graph.cast(source.start, np.int64), graph.cast(source.step, np.int64)
        if not isinstance(key, slice):
            index = convert_leaf(key, np.int64)
            return python_int(start + graph.where(index < 0, index + n, index) * step)
        by = 1 if key.step is None else key.step
        if not is_tensor(by) and by == 0:
            raise ValueError("slice step cannot be zero")
        if is_tensor(by):
            raise StagingError("a range sliced with a graph tensor step: its direction would only be known when "
                               "the graph runs; use a Python int step")
        # where a slice starts and stops by default, and the bounds it is clamped to (as slice.indices)
        first, last, low, high = (0, n, 0, n) if by > 0 else (n - 1, -1, -1, n - 1)
        lo = _slice_bound(key.start, n, low, high, first)
        hi = _slice_bound(key.stop, n, low, high, last)
        return GraphRange(start + lo * step, start + hi * step, step * by)

    def __repr__(self) -> str:
        return f"range({self.start}, {self.stop}, {self.step})"


def _slice_bound(bound, n, low, high, default):
    """A slice bound of a sequence of length `n` as `slice.indices` makes it: negative ones count from
    the end, and the result is clamped to [low, high] (the bounds of the slice's direction)."""
    if bound is None:
        return default
    b = convert_leaf(bound, np.int64)
    b = graph.where(b < 0, b + n, b)
    return graph.minimum(graph.maximum(b, low), high)


class GraphEnumerate:
    """`enumerate(...)` of something a graph loop iterates."""

    def __init__(self, iterable, start):
        self.iterable, self.start = iterable, start


class GraphZip:
    """`zip(...)` of iterables among which one a graph loop iterates."""

    def __init__(self, iterables):
        self.iterables = iterables


def is_graph_iterable(x) -> bool:
    """Whether a `for` loop over `x` is a graph loop."""
    return is_tensor(x) or isinstance(x, (GraphRange, TensorList, graph.TensorArray, GraphEnumerate, GraphZip))


def range_(*args):
    """`range(*args)`; with tensor bounds, a range a `for` loop iterates in the graph."""
    if not any(is_tensor(a) for a in args):
        return builtins.range(*args)
    bounds = []
    for a in args:
        kind = graph.convert(a).dtype.kind if is_tensor(a) else ("i" if isinstance(a, (int, np.integer)) else "f")
        if kind not in "biu":
            raise TypeError(f"range() needs integers, got {describe(a)}")
        bounds.append(graph.cast(graph.convert(a), np.int64) if kind == "b" else a)  # a bool is an int in Python
    args = tuple(bounds)
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) == 2:
        (start, stop), step = args, 1
    else:
        start, stop, step = args
    return GraphRange(start, stop, step)


def enumerate_(iterable, start=0):
    """`enumerate(iterable, start)`."""
    if is_graph_iterable(iterable):
        return GraphEnumerate(iterable, start)
    return builtins.enumerate(iterable, start)


def zip_(*iterables, strict=False):
    """`zip(*iterables)`; over tensors, a graph loop iterates them together."""
    if any(is_graph_iterable(x) for x in iterables):
        return GraphZip(iterables)
    return builtins.zip(*iterables, strict=strict)


# --------------------------------------------------------------------------- what a graph loop reads

class Source:
    """What a graph `for` loop iterates over: a count `n` and the item at index k."""

    def n(self) -> Tensor:
        raise NotImplementedError

    def item(self, k: Tensor):
        raise NotImplementedError


class RangeSource(Source):
    def __init__(self, start, stop, step):
        ints = [x for x in (start, stop, step) if is_tensor(x)]
        dtype = np.result_type(*[graph.convert(x).dtype for x in ints]) if ints else np.dtype(np.int64)
        self.start, self.stop, self.step = (convert_leaf(x, dtype) for x in (start, stop, step))

    def n(self):
        if self.step.node.op != "Const":
            graph.assert_(graph.not_equal(self.step, 0), "range() arg 3 must not be zero")
        elif graph.static_value(self.step) == 0:
            raise ValueError("range() arg 3 must not be zero")
        span = self.stop - self.start
        one = graph.constant(np.ones((), self.step.dtype))
        sign = graph.where(self.step > 0, one, -one)
        count = (span + self.step - sign) // self.step
        return graph.cast(graph.maximum(count, graph.constant(np.zeros((), count.dtype))), np.int64)

    def item(self, k):
        # range(n) is the common case: its item is the loop index itself, not two ops per iteration
        k = graph.cast(k, self.start.dtype)
        if not _static_equals(self.step, 1):
            k = k * self.step
        return python_int(k if _static_equals(self.start, 0) else self.start + k)


def python_int(t) -> Tensor:
    """`t`, an item of a range or an enumerate's count, as the Python int it is in Python (whatever the
    dtype of the bounds): int64, and weak beside arrays (`x * i` of a float32 `x` is float32, as in
    numpy 2), and an int again where the function returns it (outputs.NumberOutput)."""
    t = graph.cast(graph.convert(t), np.int64)
    mark_weak_type(t, int)
    return t


def _static_equals(t: Tensor, value) -> bool:
    v = graph.static_value(t)
    return v is not None and v.shape == () and v == value


class TensorSource(Source):
    def __init__(self, t: Tensor):
        if t.shape is not None and len(t.shape) == 0:
            raise StagingError(f"cannot iterate over a scalar: {t.describe()} has shape []")
        self.t = t
        self.array = graph.TensorArray(t.dtype, element_shape=None if t.shape is None else t.shape[1:],
                                       name="for_items").unstack(t)

    def n(self):
        if self.t.shape is not None and self.t.shape[0] is not None:
            return graph.constant(np.int64(self.t.shape[0]))
        return self.array.size()

    def item(self, k):
        return self.array.read(k)


class ArraySource(Source):
    def __init__(self, array):
        self.array = array  # a TensorArray, or a TensorList (a list built in a graph loop)

    def n(self):
        return self.array.size()

    def item(self, k):
        return self.array.read(k)


class EnumerateSource(Source):
    def __init__(self, inner: Source, start):
        self.inner, self.start = inner, start

    def n(self):
        return self.inner.n()

    def item(self, k):
        return (python_int(k + self.start if self.start else k), self.inner.item(k))


class ZipSource(Source):
    def __init__(self, sources):
        self.sources = sources

    def n(self):
        ns = [s.n() for s in self.sources]
        out = ns[0]
        for m in ns[1:]:
            out = graph.minimum(out, m)
        return out

    def item(self, k):
        return tuple(s.item(k) for s in self.sources)


def graph_source(iterable) -> Source | None:
    """The graph loop source for an iterable, or None to iterate it in Python."""
    if isinstance(iterable, GraphRange):
        return RangeSource(iterable.start, iterable.stop, iterable.step)
    if isinstance(iterable, TensorList) or isinstance(iterable, graph.TensorArray):
        return ArraySource(iterable)
    if isinstance(iterable, GraphList):
        return TensorSource(iterable.items)
    if isinstance(iterable, GraphEnumerate):
        return EnumerateSource(graph_source(iterable.iterable), iterable.start)
    if isinstance(iterable, GraphZip):
        return ZipSource([graph_source(x) or TensorSource(graph.convert(x)) for x in iterable.iterables])
    if is_tensor(iterable):
        return TensorSource(graph.convert(iterable))
    return None
