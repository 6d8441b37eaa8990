"""Variable kernels: reads return the current value; writes store a new read-only array.

A Variable's value never changes under someone who holds it: a read hands out the array itself
(no copy), so a write makes a new array, unless nothing but the Variable references the current
one. Then the write updates it in place, as TF's resource variables do when their buffer's
reference count is one: a replay memory of 10,000 rows written a row per step would otherwise
be copied whole every step. The kernels write in place through a writable view of that array which
they keep on the Variable (`Variable.writer`, made once per array): the array itself stays read-only for
everyone who reads it, and a write pays no unfreeze and freeze (a quarter of a replay memory row's write).

Every write reads the value, computes and stores under the Variable's `update_lock`, so runs on
several threads (a converted function called from threads, in either execution mode, on one
device or several) update it atomically, as TF's assign_add does; without it two threads could
read the same value and one update was lost. A read of an array could fetch the array between a
write's reference count check and its in-place update, and see it change: a write in place says it
is under way (`Variable.writing`, set before its check, cleared after its update), and a read that
sees it after taking the array takes the lock and reads again. Otherwise the array it took was
either written before it took it, or is referenced by it at any later check, so never written in
place (a read that took the lock every time cost twice as much). A scalar read copies the value out
at once (`value[()]`).

The lock is taken with `with`, never `acquire()` then `try`: Python may raise a Ctrl-C's
KeyboardInterrupt right after `acquire()` returns, before the `try`, and the lock stayed held, so
the next call of the function hung.
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from exec.kernels.indexing import index_function
from exec.kernels.registry import kernel
from graph import shapes as _sh
from graph.ops.indexing import Dyn


def _out(value: np.ndarray):
    return value[()] if value.ndim == 0 else value


def _store(var, new) -> np.ndarray:
    new = np.asarray(new)
    if new.shape != var.shape:
        raise ValueError(f"Variable {var.name!r} of shape {var.shape} cannot take a value of shape {new.shape}")
    if new.dtype != var.dtype:
        new = new.astype(var.dtype)
    new.setflags(write=False)  # setflags: a third of the time of going through `flags`
    var.value, var.writer = new, None
    return _out(new)


def _references(holder):
    """Its `value` and the number of references to it that getrefcount sees from here."""
    cur = holder.value
    return cur, sys.getrefcount(cur)


class _Probe:
    value = None
    writer = None


def _reference_counts() -> tuple[int, int]:
    # what _references counts for an array that only one attribute holds, and that one attribute and its
    # writer (a view) hold; measured, since how many references the interpreter's own frames hold differs
    # between Python versions
    probe = _Probe()
    probe.value = np.zeros(1)
    sole = _references(probe)[1]
    probe.writer = probe.value.view()
    return sole, _references(probe)[1]


_SOLE, _HELD = _reference_counts()


def _writer_of(var) -> np.ndarray | None:
    """A writable view of the Variable's array when the Variable alone holds the array (views and exported
    buffers reference it too; the writer aside), made once and kept on the Variable; else None. Call it
    under the Variable's lock; where it gives a view, the write in place is under way (`var.writing`) until
    the caller has written and cleared it (a write that raises leaves it set: reads take the lock then)."""
    var.writing = True  # before the check: a read that takes the array after it waits for the write
    cur, refs = _references(var)
    w = var.writer
    if w is not None and w.base is cur:
        if refs == _HELD:
            return w
    elif refs == _SOLE and cur.base is None:
        cur.setflags(write=True)
        w = var.writer = cur.view()  # stays writable after its base is frozen again
        cur.setflags(write=False)
        return w
    else:
        var.writer = None  # a view of an array the Variable no longer holds (a `load` replaced it)
    var.writing = False
    return None


def _update_in_place(var, write) -> np.ndarray | None:
    """Applies `write` to the Variable's array in place and returns it, when the Variable alone
    holds the array; else None, changing nothing."""
    w = _writer_of(var)
    if w is None:
        return None
    write(w)
    var.writing = False
    return _out(var.value)


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
    if not var.shape:
        def read_scalar():
            return var.value[()]
        return read_scalar
    lock = var.update_lock

    def read():
        value = var.value
        if var.writing:  # a write in place may have checked the references before `value` was taken
            with lock:
                return var.value
        return value
    return read


@kernel("AssignVariable")
def _assign(node, rt):
    var = node.attrs["variable"]
    lock = var.update_lock

    def assign(x):
        with lock:
            return _assign_locked(var, x)
    return assign


def _assign_locked(var, x):
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


@kernel("AssignAddVariable", "AssignSubVariable")
def _assign_update(node, rt):
    var = node.attrs["variable"]
    ufunc = np.add if node.op == "AssignAddVariable" else np.subtract
    scalar_op = operator.add if node.op == "AssignAddVariable" else operator.sub
    lock = var.update_lock
    # what the delta's shape is decided once where the graph knows it (np.shape per call costs as much
    # as the lock): a counter (scalar into scalar), or a delta that broadcasts to the Variable
    static = node.inputs[0].shape
    known = _sh.is_fully_defined(static)
    counter = known and not var.shape and not static
    fits = known and _broadcasts_to(static, var.shape)

    def update(delta):
        with lock:
            return _update_locked(var, delta, ufunc, scalar_op, counter, fits)

    def apply(delta):
        # the update in place of a delta that fits (an optimizer's step on a weight) written out
        with lock:
            w = _writer_of(var)
            if w is None:
                return _update_locked(var, delta, ufunc, scalar_op, counter, fits)
            ufunc(w, delta, out=w, casting="unsafe")
            var.writing = False
            return _out(var.value)

    def count(delta):
        # a counter's update in place written out (an agent's step counts several): numpy's scalar arithmetic,
        # stored with the unsafe cast that out= makes
        with lock:
            w = _writer_of(var)
            if w is None:
                return _update_locked(var, delta, ufunc, scalar_op, counter, fits)
            w[()] = scalar_op(w[()], delta)
            var.writing = False
            return w[()]
    return count if counter else apply if fits else update


def _update_locked(var, delta, ufunc, scalar_op, counter: bool, fits: bool):
    if counter or (not var.shape and not np.ndim(delta)):
        # a counter: numpy's scalar arithmetic (what the ufunc computes, a tenth of the time), the
        # result stored with the unsafe cast that out= makes
        done = _update_in_place(var, lambda cur: cur.__setitem__((), scalar_op(cur[()], delta)))
        if done is not None:
            return done
    elif fits or _broadcasts_to(np.shape(delta), var.shape):
        done = _update_in_place(var, lambda cur: ufunc(cur, delta, out=cur, casting="unsafe"))
        if done is not None:
            return done
    return _store(var, ufunc(var.value, delta))


@kernel("AssignItemVariable")
def _assign_item(node, rt):
    var = node.attrs["variable"]
    key_of = index_function(node.attrs["index"].items)
    lock = var.update_lock

    items = node.attrs["index"].items
    if len(items) == 1 and isinstance(items[0], Dyn) and items[0].kind == "scalar" and var.shape:
        def assign_row(value, i):  # v[i] = value: a replay memory's row, the common case
            key = operator.index(i)
            with lock:
                w = _writer_of(var)
                if w is None:
                    return _assign_item_copy(var, key, value)
                w[key] = value
                var.writing = False
                return var.value
        return assign_row

    def assign_item(value, *dyn):
        # _update_in_place written out: a replay memory takes several of these writes per step, and the
        # calls and closure around the write cost as much as the write itself
        key = key_of(dyn)
        with lock:
            w = _writer_of(var)
            if w is None:
                return _assign_item_copy(var, key, value)
            w[key] = value
            var.writing = False
            return _out(var.value)
    return assign_item


def _assign_item_copy(var, key, value):
    new = np.array(var.value, copy=True)
    new[key] = value
    return _store(var, new)
