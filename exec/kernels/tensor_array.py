"""TensorArray kernels: a run-time list of arrays, mutated in place by writes, seen through flows.

A handle's run-time value is a `TensorArrayFlow`: the shared storage and the
size the array has at that point of the program. Storage is written in place,
so an op that is not ordered before a later write (a `size()` read in an
iteration whose write the executor happens to run first, at any
parallel_iterations) could otherwise see it; reading the size, and stacking,
through the flow gives the value the program order defines.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exec.kernels.registry import kernel


class TensorArrayValue:
    """The storage of a run-time TensorArray: its elements, shared by all its flows."""

    __slots__ = ("name", "dtype", "element_shape", "elements", "size", "dynamic", "accumulate", "grads")

    def __init__(self, name, dtype, element_shape, size, dynamic, accumulate):
        self.name = name
        self.dtype = dtype
        self.element_shape = element_shape
        self.elements: list = [None] * size
        self.size = size
        self.dynamic = dynamic
        self.accumulate = accumulate
        self.grads: dict[str, TensorArrayValue] = {}  # gradient arrays, one per gradient computation

    def __len__(self) -> int:
        return len(self.elements)

    def __repr__(self) -> str:
        n = sum(e is not None for e in self.elements)
        return f"<TensorArray {self.name}: {n}/{len(self.elements)} written>"

    def _slot(self, index, what: str) -> int:
        i = int(index)
        if i < 0:
            raise IndexError(f"{what} at negative index {i} of TensorArray {self.name!r}")
        if i >= len(self.elements):
            if not self.dynamic:
                raise IndexError(f"{what} at index {i} of TensorArray {self.name!r} of size {len(self.elements)}")
            if what == "write":
                self.elements.extend([None] * (i + 1 - len(self.elements)))
        return i

    def write(self, index, value) -> None:
        i = self._slot(index, "write")
        value = np.asarray(value, dtype=self.dtype) if self.dtype is not None else np.asarray(value)
        old = self.elements[i]
        if old is not None:
            if not self.accumulate:
                raise ValueError(f"TensorArray {self.name!r}: index {i} was already written; "
                                 "each index may be written once")
            value = old + value
        self.elements[i] = value

    def read(self, index, size: int | None = None):
        """Element `index` of the array as it is at `size` elements (as it is now by default)."""
        # the common case first, without calls: a loop over an array reads one element per iteration
        i = int(index)
        elements = self.elements
        if 0 <= i < len(elements) and (size is None or i < size):
            e = elements[i]
            if e is not None:
                return e
        return self._read_missing(i, size)

    def _read_missing(self, i: int, size: int | None):
        i = self._slot(i, "read")
        if i >= len(self.elements) or self.elements[i] is None or (size is not None and i >= size):
            if self.accumulate and self.element_shape is not None and None not in self.element_shape:
                return np.zeros(self.element_shape, self.dtype)
            raise ValueError(f"TensorArray {self.name!r}: read of index {i}, which was never written")
        return self.elements[i]

    def stack(self, size: int | None = None):
        """The first `size` elements (all of them by default) stacked along a new first axis."""
        elements = self.elements if size is None else self.elements[:size]
        missing = [k for k, e in enumerate(elements) if e is None]
        if self.accumulate and missing:
            # gradient arrays: an element no read contributed to is a zero gradient
            elements = [self._zero() if e is None else e for e in elements]
        elif missing:
            raise ValueError(f"TensorArray {self.name!r}: elements {missing[:5]} were never written")
        if not elements:
            shape = self.element_shape
            if shape is None or None in shape:
                raise ValueError(f"cannot stack empty TensorArray {self.name!r}: its element shape is unknown "
                                 "(give element_shape= when creating it)")
            return np.zeros((0, *shape), self.dtype)
        try:
            return np.stack(elements)
        except ValueError:
            shapes = sorted({e.shape for e in elements})
            raise ValueError(f"cannot stack TensorArray {self.name!r}: its elements have different shapes "
                             f"{shapes[:4]}") from None

    def _zero(self):
        like = next((e for e in self.elements if e is not None), None)
        if like is not None:
            return np.zeros_like(like)
        if self.element_shape is None or None in self.element_shape:
            raise ValueError(f"TensorArray {self.name!r}: nothing was written and the element shape is unknown")
        return np.zeros(self.element_shape, self.dtype)


@dataclass(frozen=True, slots=True)
class TensorArrayFlow:
    """A TensorArray handle's value: the storage, and its size as of this handle.

    `size` is None for accumulating (gradient) arrays, whose writes add up in
    any order: their size is the storage's.
    """

    array: TensorArrayValue
    size: int | None

    def current_size(self) -> int:
        return len(self.array.elements) if self.size is None else self.size

    def grown(self, index_bound: int) -> "TensorArrayFlow":
        """The flow after a write below `index_bound` (the highest written index + 1)."""
        if self.size is None or index_bound <= self.size:
            return self
        return TensorArrayFlow(self.array, index_bound)

    def __repr__(self) -> str:
        return f"<TensorArray {self.array.name}: size {self.current_size()}>"


def _flow_of(array: TensorArrayValue) -> TensorArrayFlow:
    return TensorArrayFlow(array, None if array.accumulate else len(array.elements))


def _spec_shape(spec):
    s = spec.element_shape
    return None if s is None or not spec.shape_known else tuple(s)


@kernel("TensorArrayNew")
def _new(node, rt):
    spec = node.attrs["spec"]
    dynamic, accumulate = node.attrs["dynamic_size"], node.attrs["accumulate"]

    def new(size):
        if size < 0:
            raise ValueError(f"TensorArray {spec.name!r} created with negative size {int(size)}")
        return _flow_of(TensorArrayValue(spec.name, spec.dtype, _spec_shape(spec), int(size), dynamic, accumulate))
    return new


@kernel("TensorArrayWrite")
def _write(node, rt):
    def write(flow, index, value):
        flow.array.write(index, value)
        return flow.grown(int(index) + 1)
    return write


@kernel("TensorArrayRead")
def _read(node, rt):
    def read(flow, index):
        return flow.array.read(index, flow.size)
    return read


@kernel("TensorArrayStack")
def _stack(node, rt):
    def stack(flow):
        return flow.array.stack(flow.current_size())
    return stack


@kernel("TensorArrayGather")
def _gather(node, rt):
    def gather(flow, indices):
        ta = flow.array
        idx = np.asarray(indices)
        if idx.size == 0:
            shape = ta.element_shape if ta.element_shape is not None else ()
            return np.zeros((*idx.shape, *shape), ta.dtype)
        elements = [ta.read(i, flow.size) for i in idx.ravel()]
        return np.stack(elements).reshape(*idx.shape, *np.shape(elements[0]))
    return gather


@kernel("TensorArrayUnstack")
def _unstack(node, rt):
    def unstack(flow, value):
        ta = flow.array
        value = np.asarray(value)
        if not ta.dynamic and len(ta.elements) not in (0, value.shape[0]):
            raise ValueError(f"cannot unstack {value.shape[0]} elements into TensorArray {ta.name!r} of size "
                             f"{len(ta.elements)}")
        if len(ta.elements) < value.shape[0]:
            ta.elements.extend([None] * (value.shape[0] - len(ta.elements)))
        n = value.shape[0]
        if not ta.accumulate and ta.elements[:n].count(None) == n:  # nothing written there yet
            # the rows as the array's dtype, with one conversion for all of them (a `for` over an
            # array unstacks it before its loop): the values writing them one by one stores, the
            # elements of a vector as numpy scalars, as iterating over it in Python gives them
            rows = np.asarray(value, dtype=ta.dtype) if ta.dtype is not None else value
            ta.elements[:n] = list(rows)
        else:
            for i in range(n):
                ta.write(i, value[i])
        return flow.grown(n)
    return unstack


@kernel("TensorArrayScatter")
def _scatter(node, rt):
    def scatter(flow, indices, value):
        indices = np.asarray(indices).ravel()
        for k, i in enumerate(indices):
            flow.array.write(i, np.asarray(value)[k])
        return flow.grown(int(indices.max()) + 1) if indices.size else flow
    return scatter


@kernel("TensorArraySize")
def _size(node, rt):
    def size(flow):
        return np.int64(flow.current_size())
    return size


@kernel("TensorArrayGrad")
def _grad(node, rt):
    spec = node.attrs["spec"]
    source = node.attrs.get("source", "")

    def grad(flow):
        # one gradient array per forward array and gradient computation (`source`), shared by
        # every read's gradient; gradients of gradients use another one
        ta = flow.array
        with rt.lock:
            g = ta.grads.get(source)
            if g is None:
                g = ta.grads[source] = TensorArrayValue(spec.name, ta.dtype, ta.element_shape, len(ta.elements),
                                                        True, True)
        return _flow_of(g)
    return grad
