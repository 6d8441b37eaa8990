"""Stack kernels: slots keyed by iteration indices, stored through the device memory manager."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel
from exec.memory import InFlight, MemoryManager, memory_manager


class Stack:
    """The run-time object behind a stack handle: slots `key -> memory-manager token`."""

    __slots__ = ("name", "memory", "slots", "layout", "__weakref__")

    def __init__(self, name: str, memory: MemoryManager):
        self.name = name
        self.memory = memory
        self.slots: dict = {}
        self.layout: list = []   # (key, rows) of the values the last concat joined

    def push(self, key, value, swap: bool) -> None:
        token = self.memory.save(value, swap, self.name, key)
        if self.slots.setdefault(key, token) is not token:
            self.memory.free(token)
            raise RuntimeError(f"stack {self.name!r}: a value for iteration {_fmt(key)} was already saved")

    def push_many(self, key, values, swap: bool) -> None:
        """Saves several values in one slot (what one context saves per iteration)."""
        save, name = self.memory.save, self.name
        tokens = [save(v, swap, name, key) for v in values]  # a list: a single value's token is a tuple
        if self.slots.setdefault(key, tokens) is not tokens:
            for t in tokens:
                self.memory.free(t)
            raise RuntimeError(f"stack {self.name!r}: values for iteration {_fmt(key)} were already saved")

    def _take(self, key):
        token = self.slots.pop(key, None)
        if token is None:
            raise RuntimeError(f"stack {self.name!r}: no value was saved for iteration {_fmt(key)} "
                               f"({len(self.slots)} slots held)")
        return token

    def pop(self, key):
        return self.memory.restore(self._take(key), True)

    def pop_many(self, key):
        """The slot's values as a tuple (on a device: an InFlight for it while some are being copied back)."""
        restore = self.memory.restore
        values = [restore(t, True) for t in self._take(key)]
        return InFlight.gather(values) if self.memory.defers else tuple(values)

    def concat(self, dtype, row_shape):
        """Every value, in key order, joined along axis 0; the stack is left empty."""
        keys = sorted(self.slots)
        values = self.memory.restore_all([self.slots.pop(k) for k in keys])
        self.layout = [(k, len(v)) for k, v in zip(keys, values)]
        if not values:
            return np.empty((0, *row_shape), dtype)
        return np.concatenate(values) if len(values) > 1 else values[0]

    def split(self, value, like: "Stack", swap: bool = False) -> None:
        """Pushes the rows of `value` under the keys and row counts `like`'s last concat took."""
        start = 0
        for key, rows in like.layout:
            self.push(key, value[start:start + rows], swap)
            start += rows

    def __len__(self) -> int:
        return len(self.slots)

    def __del__(self):
        # values pushed but never popped (a run that fetched only part of a gradient)
        for token in self.slots.values():
            for t in token if type(token) is list else (token,):
                self.memory.free(t)

    def __repr__(self) -> str:
        return f"<Stack {self.name}: {len(self.slots)} slots>"


def _fmt(key) -> str:
    return ", ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


@kernel("StackNew")
def _new(node, rt):
    name = node.attrs["name"]

    def new(*_control):
        return Stack(name, memory_manager(rt))
    return new


# A slot key is the int index for one enclosing loop, else the tuple of indices
# (pushes and pops of one stack always have the same number of keys).

@kernel("StackPush")
def _push(node, rt):
    swap, n = node.attrs["swap_memory"], node.attrs["num_values"]
    one_key = len(node.inputs) == n + 2
    if n == 1:
        if one_key:
            def push1(stack, value, key):
                stack.push(int(key), value, swap)
            return push1

        def push(stack, value, *keys):
            stack.push(tuple(map(int, keys)), value, swap)
        return push

    def push_many(stack, *args):
        keys = args[n:]
        stack.push_many(int(keys[0]) if one_key else tuple(map(int, keys)), args[:n], swap)
    return push_many


@kernel("StackPop")
def _pop(node, rt):
    one_key = len(node.inputs) == 2
    if len(node.outputs) == 1:
        if one_key:
            def pop1(stack, key):
                return stack.pop(int(key))
            return pop1

        def pop(stack, *keys):
            return stack.pop(tuple(map(int, keys)))
        return pop

    def pop_many(stack, *keys):
        return stack.pop_many(int(keys[0]) if one_key else tuple(map(int, keys)))
    return pop_many


@kernel("StackConcat")
def _concat(node, rt):
    dtype, row_shape = node.attrs["dtype"], node.attrs["shape"][1:]

    def concat(stack):
        return stack.concat(dtype, row_shape)
    return concat


@kernel("StackSplit")
def _split(node, rt):
    def split(dst, value, src):
        dst.split(value, src)
    return split
