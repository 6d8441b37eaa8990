"""scan, map_fn, foldl, foldr: loops over the first axis, built on while_loop + TensorArray.

As in the paper's Figure 2: the input is unstacked into TensorArrays, a
while_loop reads element i, applies `fn` and writes the result into output
TensorArrays, which are stacked after the loop.
"""
from __future__ import annotations

import numpy as np

from graph import nest
from graph.control_flow.tensor_array import TensorArray
from graph.control_flow.while_loop import while_loop
from graph.core import get_default_graph
from graph.errors import GraphError
from graph.ops.conversion import convert
from graph.ops.math import add, less, sub


def _unstacked(elems, name):
    flat = [convert(e) for e in nest.flatten(elems)]
    if not flat:
        raise GraphError(f"{name} needs at least one input tensor")
    for t in flat:
        if t.shape is not None and len(t.shape) == 0:
            raise GraphError(f"{name}: cannot iterate over a scalar: {t.describe()}")
    tas = [TensorArray(t.dtype, element_shape=None if t.shape is None else t.shape[1:],
                       name=f"{name}_input").unstack(t) for t in flat]
    static = flat[0].shape[0] if flat[0].shape is not None else None
    n = convert(np.int64(static)) if static is not None else tas[0].size()
    return flat, tas, n


def _element(elems, tas, index):
    return nest.pack_as(elems, [ta.read(index) for ta in tas])


def _position(i, n, reverse):
    return sub(sub(n, 1), i) if reverse else i


def scan(fn, elems, initializer=None, reverse: bool = False, parallel_iterations: int = 10,
         name: str | None = None, back_prop: bool = True, swap_memory: bool = False):
    """`a = initializer; for x in elems: a = fn(a, x); yield a`, stacked along axis 0.

    Without an initializer the first element is the initial accumulator (and
    the first output). `elems` and the accumulator may be nested structures.
    `back_prop` and `swap_memory` are the loop's (see `while_loop`).
    """
    flat, tas, n = _unstacked(elems, "scan")
    start = 0
    if initializer is None:
        initializer = _element(elems, tas, _position(convert(np.int64(0)), n, reverse))
        start = 1
    init_flat = [convert(v) for v in nest.flatten(initializer)]
    # of a fixed size, as TensorFlow's: the result's first dimension is known where the elems' is
    outs = [TensorArray(t.dtype, size=n, element_shape=t.shape, name="scan_output") for t in init_flat]
    if start:
        first = _position(convert(np.int64(0)), n, reverse)
        outs = [ta.write(first, v) for ta, v in zip(outs, init_flat, strict=True)]

    def body(i, acc, outs):
        pos = _position(i, n, reverse)
        acc = fn(nest.pack_as(initializer, acc), _element(elems, tas, pos))
        acc_flat = nest.flatten(acc)
        if len(acc_flat) != len(init_flat):
            raise GraphError("scan: fn must return the accumulator's structure "
                             f"{nest.structure_description(initializer)}, got {nest.structure_description(acc)}")
        return add(i, np.int64(1)), acc_flat, [ta.write(pos, v) for ta, v in zip(outs, acc_flat, strict=True)]

    _, _, outs = while_loop(lambda i, acc, outs: less(i, n), body,
                            (convert(np.int64(start)), init_flat, outs), parallel_iterations=parallel_iterations,
                            name=name or "scan", back_prop=back_prop, swap_memory=swap_memory)
    return nest.pack_as(initializer, [ta.stack() for ta in outs])


def _fold(fn, elems, initializer, reverse, parallel_iterations, name, loop_options):
    flat, tas, n = _unstacked(elems, name)
    start = 0
    if initializer is None:
        initializer = _element(elems, tas, _position(convert(np.int64(0)), n, reverse))
        start = 1
    init_flat = [convert(v) for v in nest.flatten(initializer)]

    def body(i, acc):
        acc = fn(nest.pack_as(initializer, acc), _element(elems, tas, _position(i, n, reverse)))
        return add(i, np.int64(1)), nest.flatten(acc)

    _, acc = while_loop(lambda i, acc: less(i, n), body, (convert(np.int64(start)), init_flat),
                        parallel_iterations=parallel_iterations, name=name, **loop_options)
    return nest.pack_as(initializer, acc)


def foldl(fn, elems, initializer=None, parallel_iterations: int = 10, name: str | None = None,
          back_prop: bool = True, swap_memory: bool = False):
    """`functools.reduce(fn, elems, initializer)` over axis 0, left to right."""
    return _fold(fn, elems, initializer, False, parallel_iterations, name or "foldl",
                 dict(back_prop=back_prop, swap_memory=swap_memory))


def foldr(fn, elems, initializer=None, parallel_iterations: int = 10, name: str | None = None,
          back_prop: bool = True, swap_memory: bool = False):
    """Like foldl, from the last element to the first."""
    return _fold(fn, elems, initializer, True, parallel_iterations, name or "foldr",
                 dict(back_prop=back_prop, swap_memory=swap_memory))


def map_fn(fn, elems, dtype=None, parallel_iterations: int = 10, name: str | None = None,
           back_prop: bool = True, swap_memory: bool = False):
    """`np.stack([fn(x) for x in elems])` (elems and results may be nested structures).

    The result structure and dtypes are found by tracing `fn` once on a symbolic
    element (the trace is then discarded); pass `dtype` (a dtype, or a structure
    of dtypes) to skip that.
    """
    flat, tas, n = _unstacked(elems, "map_fn")
    structure = dtype if dtype is not None else _probe_structure(fn, elems, tas)
    dtypes = nest.flatten(structure)
    outs = [TensorArray(dt, size=n, name="map_fn_output") for dt in dtypes]  # of a fixed size, as scan's

    def body(i, outs):
        out = fn(_element(elems, tas, i))
        out_flat = nest.flatten(out)
        if len(out_flat) != len(dtypes):
            raise GraphError(f"map_fn: fn returned {nest.structure_description(out)}, expected "
                             f"{nest.structure_description(structure)}")
        return add(i, np.int64(1)), [ta.write(i, v) for ta, v in zip(outs, out_flat, strict=True)]

    _, outs = while_loop(lambda i, outs: less(i, n), body, (convert(np.int64(0)), outs),
                         parallel_iterations=parallel_iterations, name=name or "map_fn", back_prop=back_prop,
                         swap_memory=swap_memory)
    return nest.pack_as(structure, [ta.stack() for ta in outs])


def _probe_structure(fn, elems, tas):
    with get_default_graph().scratch():
        out = fn(_element(elems, tas, convert(np.int64(0))))
        return nest.map_structure(lambda t: convert(t).dtype, out)
