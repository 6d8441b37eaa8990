"""Variable kernels: reads return the current value; writes store a new read-only array."""
from __future__ import annotations

import numpy as np

from exec.kernels import kernel
from exec.kernels.indexing import index_function


def _out(value: np.ndarray):
    return value[()] if value.ndim == 0 else value


def _store(var, new) -> np.ndarray:
    new = np.asarray(new)
    if new.shape != var.shape:
        raise ValueError(f"Variable {var.name!r} of shape {var.shape} cannot take a value of shape {new.shape}")
    if new.dtype != var.dtype:
        new = new.astype(var.dtype)
    new.flags.writeable = False
    var.value = new
    return _out(new)


@kernel("ReadVariable")
def _read(node, rt):
    var = node.attrs["variable"]

    def read(*_):  # a single control input may be delivered as an argument
        return _out(var.value)
    return read


@kernel("AssignVariable")
def _assign(node, rt):
    var = node.attrs["variable"]

    def assign(x):
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

    def update(delta):
        return _store(var, ufunc(var.value, delta))
    return update


@kernel("AssignItemVariable")
def _assign_item(node, rt):
    var = node.attrs["variable"]
    key_of = index_function(node.attrs["index"].items)

    def assign_item(value, *dyn):
        new = np.array(var.value, copy=True)
        new[key_of(dyn)] = value
        return _store(var, new)
    return assign_item
