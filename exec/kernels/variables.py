"""Variable kernels: reads return the current value; writes store a new read-only array.

A Variable's value never changes under someone who holds it: a read hands out the array itself
(no copy), so a write makes a new array, unless nothing but the Variable references the current
one. Then the write updates it in place, as TF's resource variables do when their buffer's
reference count is one: a replay memory of 10,000 rows written a row per step would otherwise
be copied whole every step.
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from exec.kernels.indexing import index_function
from exec.kernels.registry import kernel


def _out(value: np.ndarray):
    return value[()] if value.ndim == 0 else value


def _store(var, new) -> np.ndarray:
    new = np.asarray(new)
    if new.shape != var.shape:
        raise ValueError(f"Variable {var.name!r} of shape {var.shape} cannot take a value of shape {new.shape}")
    if new.dtype != var.dtype:
        new = new.astype(var.dtype)
    new.setflags(write=False)  # setflags: a third of the time of going through `flags`
    var.value = new
    return _out(new)


def _references(holder):
    """Its `value` and the number of references to it that getrefcount sees from here."""
    cur = holder.value
    return cur, sys.getrefcount(cur)


class _Probe:
    value = None


def _sole_reference_count() -> int:
    # what _references counts for an array that only one attribute holds; measured, since how
    # many references the interpreter's own frames hold differs between Python versions
    probe = _Probe()
    probe.value = np.zeros(1)
    return _references(probe)[1]


_SOLE = _sole_reference_count()


def _update_in_place(var, write) -> np.ndarray | None:
    """Applies `write` to the Variable's array in place and returns it, when the Variable alone
    holds the array (views and exported buffers reference it too); else None, changing nothing."""
    cur, refs = _references(var)
    if refs != _SOLE or cur.base is not None:
        return None
    cur.setflags(write=True)
    try:
        write(cur)
    finally:
        cur.setflags(write=False)
    return _out(cur)


def _broadcasts_to(shape, target) -> bool:
    if shape == target or not shape:
        return True
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


@kernel("ReadVariable")
def _read(node, rt):
    var = node.attrs["variable"]

    def read():
        return _out(var.value)
    return read


@kernel("AssignVariable")
def _assign(node, rt):
    var = node.attrs["variable"]

    def assign(x):
        if _broadcasts_to(np.shape(x), var.shape):
            done = _update_in_place(var, lambda cur: np.copyto(cur, x, casting="unsafe"))
            if done is not None:
                return done
        try:
            new = np.array(np.broadcast_to(x, var.shape), dtype=var.dtype)  # a copy the variable owns
        except ValueError:
            raise ValueError(f"cannot assign a value of shape {np.shape(x)} to Variable {var.name!r} of shape "
                             f"{var.shape}") from None
        return _store(var, new)
    return assign


@kernel("AssignAddVariable", "AssignSubVariable")
def _assign_update(node, rt):
    var = node.attrs["variable"]
    ufunc = np.add if node.op == "AssignAddVariable" else np.subtract
    scalar_op = operator.add if node.op == "AssignAddVariable" else operator.sub

    def update(delta):
        if not var.shape and not np.ndim(delta):
            # a counter: numpy's scalar arithmetic (what the ufunc computes, a tenth of the time), the
            # result stored with the unsafe cast that out= makes
            done = _update_in_place(var, lambda cur: cur.__setitem__((), scalar_op(cur[()], delta)))
            if done is not None:
                return done
        elif _broadcasts_to(np.shape(delta), var.shape):
            done = _update_in_place(var, lambda cur: ufunc(cur, delta, out=cur, casting="unsafe"))
            if done is not None:
                return done
        return _store(var, ufunc(var.value, delta))
    return update


@kernel("AssignItemVariable")
def _assign_item(node, rt):
    var = node.attrs["variable"]
    key_of = index_function(node.attrs["index"].items)

    def assign_item(value, *dyn):
        def write(cur):
            cur[key_of(dyn)] = value
        done = _update_in_place(var, write)
        if done is not None:
            return done
        new = np.array(var.value, copy=True)
        new[key_of(dyn)] = value
        return _store(var, new)
    return assign_item
