"""TensorArray kernels: a run-time list of arrays, mutated in place by writes."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel


class TensorArrayValue:
    """The run-time object behind a TensorArray handle."""

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

    def read(self, index):
        i = self._slot(index, "read")
        if i >= len(self.elements) or self.elements[i] is None:
            if self.accumulate and self.element_shape is not None and None not in self.element_shape:
                return np.zeros(self.element_shape, self.dtype)
            raise ValueError(f"TensorArray {self.name!r}: read of index {i}, which was never written")
        return self.elements[i]

    def stack(self):
        elements = self.elements
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


def _spec_shape(spec):
    s = spec.element_shape
    return None if s is None or spec._unset else tuple(s)


@kernel("TensorArrayNew")
def _new(node, rt):
    spec = node.attrs["spec"]
    dynamic, accumulate = node.attrs["dynamic_size"], node.attrs["accumulate"]

    def new(size):
        if size < 0:
            raise ValueError(f"TensorArray {spec.name!r} created with negative size {int(size)}")
        return TensorArrayValue(spec.name, spec.dtype, _spec_shape(spec), int(size), dynamic, accumulate)
    return new


@kernel("TensorArrayWrite")
def _write(node, rt):
    def write(ta, index, value):
        ta.write(index, value)
        return ta
    return write


@kernel("TensorArrayRead")
def _read(node, rt):
    def read(ta, index):
        return ta.read(index)
    return read


@kernel("TensorArrayStack")
def _stack(node, rt):
    def stack(ta):
        return ta.stack()
    return stack


@kernel("TensorArrayGather")
def _gather(node, rt):
    def gather(ta, indices):
        idx = np.asarray(indices)
        if idx.size == 0:
            shape = ta.element_shape if ta.element_shape is not None else ()
            return np.zeros((*idx.shape, *shape), ta.dtype)
        return np.stack([ta.read(i) for i in idx.ravel()]).reshape(*idx.shape, *np.shape(ta.read(idx.flat[0])))
    return gather


@kernel("TensorArrayUnstack")
def _unstack(node, rt):
    def unstack(ta, value):
        value = np.asarray(value)
        if not ta.dynamic and len(ta.elements) not in (0, value.shape[0]):
            raise ValueError(f"cannot unstack {value.shape[0]} elements into TensorArray {ta.name!r} of size "
                             f"{len(ta.elements)}")
        if len(ta.elements) < value.shape[0]:
            ta.elements.extend([None] * (value.shape[0] - len(ta.elements)))
        for i in range(value.shape[0]):
            ta.write(i, value[i])
        return ta
    return unstack


@kernel("TensorArrayScatter")
def _scatter(node, rt):
    def scatter(ta, indices, value):
        for k, i in enumerate(np.asarray(indices).ravel()):
            ta.write(i, np.asarray(value)[k])
        return ta
    return scatter


@kernel("TensorArraySize")
def _size(node, rt):
    def size(ta):
        return np.int64(len(ta.elements))
    return size


@kernel("TensorArrayGrad")
def _grad(node, rt):
    spec = node.attrs["spec"]
    source = node.attrs.get("source", "")

    def grad(ta):
        # one gradient array per forward array and gradient computation (`source`), shared by
        # every read's gradient; gradients of gradients use another one
        with rt.lock:
            g = ta.grads.get(source)
            if g is None:
                g = ta.grads[source] = TensorArrayValue(spec.name, ta.dtype, ta.element_shape, len(ta.elements),
                                                        True, True)
        return g
    return grad
