"""TensorArray: a list of tensors indexed at run time, the accumulator of loops.

A TensorArray value flows through the graph as a `variant` handle. Each write
returns a new handle tensor (the "flow"), so reads and stacks are ordered after
the writes they depend on by data dependencies alone, also across loop
iterations and branches; `size()`, `stack()` and `gather()` see exactly the
writes their handle comes from, never a write made later from the same handle
(e.g. later in the same loop iteration), whichever runs first. Every index may be written once (except in the
accumulating arrays that gradients use, where writes add up).

The element dtype and shape may be unknown when the array is created (e.g. a
Python list that a loop appends to): they are learned from the first write and
refined by later ones; all wrappers of one array share that knowledge.
"""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.errors import GraphError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import convert, static_value

_INT64 = np.dtype(np.int64)


def _handle(inputs, attrs):
    return [(_dt.variant, ())]


def _element(inputs, attrs):
    spec = attrs["spec"]
    return [(spec.dtype, spec.element_shape)]


def _stacked(inputs, attrs):
    spec = attrs["spec"]
    shape = None if spec.element_shape is None else (spec.size, *spec.element_shape)
    return [(spec.dtype, shape)]


def _gathered(inputs, attrs):
    spec, idx = attrs["spec"], inputs[1]
    if idx.shape is None or spec.element_shape is None:
        return [(spec.dtype, None)]
    return [(spec.dtype, (*idx.shape, *spec.element_shape))]


register_op("TensorArrayNew", _handle, stateful=True, differentiable=False)
register_op("TensorArrayWrite", _handle, stateful=True)
register_op("TensorArrayUnstack", _handle, stateful=True)
register_op("TensorArrayScatter", _handle, stateful=True)
register_op("TensorArrayRead", _element)
register_op("TensorArrayStack", _stacked)
register_op("TensorArrayGather", _gathered)
register_op("TensorArraySize", lambda i, a: [(_INT64, ())], differentiable=False)
register_op("TensorArrayGrad", _handle, stateful=True, differentiable=False)


class TensorArraySpec:
    """What the graph knows about one array's elements, shared by all its handles and held by the nodes
    that use it (their "spec" attribute).

    It only ever learns: the element dtype once (`TensorArrayNew`'s "dtype" attribute with it, through
    `Graph.update_node`), the element shape from each value written (`learn`, `learn_element`), joined
    with what was known. `shape_known` says whether `element_shape` was given or learned: a shape
    learned from values of unknown shape is None and known.
    """

    __slots__ = ("dtype", "element_shape", "name", "new_node", "accumulate", "shape_known", "size")

    def __init__(self, dtype, element_shape, name, accumulate=False, size: int | None = None,
                 shape_known: bool | None = None):
        self.dtype = dtype
        self.size = size  # the number of elements, when the array has a fixed size known to the graph
        self.element_shape = element_shape
        self.shape_known = element_shape is not None if shape_known is None else shape_known
        self.name = name
        self.new_node = None  # the TensorArrayNew that made the array (None: a gradient's, a loaded one)
        self.accumulate = accumulate

    def learn(self, value: Tensor, what: str) -> None:
        """Learns from `value`, written as one element by `what` ("write", "merge", ...)."""
        self.learn_element(value.dtype, value.shape, what, value.describe())

    def learn_element(self, dtype, shape, what: str, source: str = "a value") -> None:
        """Learns that an element of dtype `dtype` and shape `shape` (partial) is written by `what`;
        `source` names the value in the error for a dtype the array does not hold."""
        if self.dtype is None:
            self.dtype = dtype
            if self.new_node is not None:
                self.new_node.graph.update_node(self.new_node, attrs={"dtype": dtype})
        elif dtype != self.dtype:
            raise GraphError(f"{what}: TensorArray {self.name!r} holds {self.dtype} elements, got a "
                             f"{dtype} value ({source}); cast it first")
        self.element_shape = _sh.join(self.element_shape, shape) if self.shape_known else shape
        self.shape_known = True

    def like(self, name: str) -> "TensorArraySpec":
        """A new spec knowing what this one knows (a gradient array's)."""
        return TensorArraySpec(self.dtype, self.element_shape, name, True, self.size, self.shape_known)

    def __repr__(self) -> str:
        return f"TensorArraySpec({self.name}, {self.dtype}{_sh.format_shape(self.element_shape)})"


class TensorArray:
    """`TensorArray(dtype, size=None, element_shape=None)`: a run-time list of tensors.

    `size=None` makes a growable array; an int or scalar tensor fixes its size.
    `write`, `unstack` and `scatter` return a new TensorArray (use the returned
    one: it carries the ordering). Usable as a cond output and a while_loop
    variable.
    """

    def __init__(self, dtype=None, size=None, element_shape=None, name: str | None = None,
                 accumulate: bool = False, *, _handle: Tensor | None = None, _spec: TensorArraySpec | None = None):
        if _handle is not None:
            self.handle, self._spec = _handle, _spec
            return
        dtype = None if dtype is None else _dt.as_dtype(dtype)
        spec = TensorArraySpec(dtype, _sh.as_shape(element_shape), name or "TensorArray", accumulate)
        dynamic = size is None
        size_t = convert(0 if size is None else size, dtype=None)
        if size_t.dtype.kind not in "iu" or (size_t.shape is not None and size_t.shape != ()):
            raise GraphError(f"TensorArray size must be a scalar integer, got {size_t.dtype}"
                             f"{_sh.format_shape(size_t.shape)}")
        static = static_value(size_t)
        if static is not None and static < 0:
            raise GraphError(f"TensorArray size must be >= 0, got {int(static)}")
        if static is not None and not dynamic:
            spec.size = int(static)
        node = make_op("TensorArrayNew", [size_t], {"dtype": dtype, "spec": spec, "dynamic_size": dynamic,
                                                    "accumulate": accumulate}, name=name or "TensorArray")
        spec.new_node = node
        self.handle, self._spec = node.outputs[0], spec

    # -- nest composite protocol --------------------------------------------------------------
    def _flat_tensors(self):
        return [self.handle]

    def _with_flat_tensors(self, tensors):
        return TensorArray(_handle=tensors[0], _spec=self._spec)

    @classmethod
    def from_handle(cls, handle: Tensor, spec: TensorArraySpec) -> "TensorArray":
        """The array whose flow `handle` is (a handle a gradient rule reads off a node, with its spec)."""
        return cls(_handle=handle, _spec=spec)

    def empty_like(self, name: str = "placeholder") -> "TensorArray":
        """A new, empty, growable array sharing this one's spec: what is learned about the elements of
        either holds for both (an array standing for this one on a path where it is not built)."""
        size = convert(0, dtype=None)
        node = make_op("TensorArrayNew", [size], {"dtype": self.dtype, "spec": self._spec, "dynamic_size": True,
                                                  "accumulate": False}, name=name)
        return TensorArray.from_handle(node.outputs[0], self._spec)

    # -- metadata ----------------------------------------------------------------------------
    @property
    def spec(self) -> TensorArraySpec:
        """What the graph knows about the elements, shared by every handle of this array."""
        return self._spec

    @property
    def dtype(self):
        return self._spec.dtype

    @property
    def element_shape(self):
        return self._spec.element_shape

    def __repr__(self) -> str:
        return f"<TensorArray {self._spec.name} {self.dtype}{_sh.format_shape(self.element_shape)}>"

    def _op(self, op, inputs, name=None):
        return make_op(op, [self.handle, *inputs], {"spec": self._spec}, name=name or op).outputs[0]

    def _new(self, handle):
        return TensorArray(_handle=handle, _spec=self._spec)

    def _need_dtype(self, what: str):
        if self._spec.dtype is None:
            raise GraphError(f"{what} of TensorArray {self._spec.name!r}: its element dtype is unknown "
                             "because nothing was written to it yet; pass dtype= when creating it")

    # -- operations --------------------------------------------------------------------------
    def write(self, index, value) -> "TensorArray":
        """Sets element `index` (once) to `value`."""
        if isinstance(value, (bool, int, float)) and self._spec.dtype is not None:
            # a Python scalar is weak: it takes the array's dtype when compatible
            value = convert(value, dtype=_dt.dtype_of_python_scalar(value, self._spec.dtype))
        value = convert(value)
        self._spec.learn(value, "write")
        return self._new(self._op("TensorArrayWrite", [_index(index), value]))

    def read(self, index) -> Tensor:
        self._need_dtype("read")
        return self._op("TensorArrayRead", [_index(index)])

    def stack(self) -> Tensor:
        """All elements stacked along a new first axis (shape [size, *element_shape])."""
        self._need_dtype("stack")
        return self._op("TensorArrayStack", [])

    def gather(self, indices) -> Tensor:
        self._need_dtype("gather")
        return self._op("TensorArrayGather", [convert(indices, dtype=None)])

    def unstack(self, value) -> "TensorArray":
        """Writes value[i] at index i for every i along the first axis."""
        value = convert(value)
        if value.shape is not None and len(value.shape) == 0:
            raise GraphError(f"cannot unstack a scalar into a TensorArray: {value.describe()}")
        self._spec.learn_element(value.dtype, _rows(value.shape), "unstack", value.describe())
        return self._new(self._op("TensorArrayUnstack", [value]))

    def scatter(self, indices, value) -> "TensorArray":
        """Writes value[k] at index indices[k]."""
        value = convert(value)
        self._spec.learn_element(value.dtype, _rows(value.shape), "scatter", value.describe())
        return self._new(self._op("TensorArrayScatter", [convert(indices, dtype=None), value]))

    def size(self) -> Tensor:
        """The number of elements as of this handle (a later write does not change it)."""
        return self._op("TensorArraySize", [])

    def grad(self, source: str = "") -> "TensorArray":
        """The accumulating gradient array attached to this one (same size), one per `source`:
        each gradient computation names its own, so gradients of gradients do not mix."""
        spec = self._spec.like(self._spec.name + "_grad")
        h = make_op("TensorArrayGrad", [self.handle], {"spec": spec, "source": source},
                    name="TensorArrayGrad").outputs[0]
        return TensorArray(_handle=h, _spec=spec)


def _rows(shape):
    """The shape of the rows of a value of `shape`: its elements when unstacked or scattered."""
    return None if shape is None else shape[1:]


def _index(index) -> Tensor:
    t = convert(index, dtype=None)
    if t.dtype.kind not in "iu" or (t.shape is not None and t.shape != ()):
        raise GraphError(f"a TensorArray index must be a scalar integer, got {t.dtype}{_sh.format_shape(t.shape)}")
    return t
