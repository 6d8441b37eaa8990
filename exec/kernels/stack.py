"""Stack kernels: slots keyed by iteration indices, stored through the device memory manager."""
from __future__ import annotations

from exec.kernels import kernel
from exec.memory import MemoryManager, memory_manager


class Stack:
    """The run-time object behind a stack handle: `keys -> Saved` slots."""

    __slots__ = ("name", "memory", "slots", "__weakref__")

    def __init__(self, name: str, memory: MemoryManager):
        self.name = name
        self.memory = memory
        self.slots: dict = {}

    def push(self, key: tuple, value, swap: bool) -> None:
        if key in self.slots:
            raise RuntimeError(f"stack {self.name!r}: a value for iteration {_fmt(key)} was already saved")
        self.slots[key] = self.memory.save(value, swap)

    def pop(self, key: tuple):
        saved = self.slots.pop(key, None)
        if saved is None:
            raise RuntimeError(f"stack {self.name!r}: no value was saved for iteration {_fmt(key)} "
                               f"({len(self.slots)} slots held)")
        return self.memory.restore(saved)

    def __len__(self) -> int:
        return len(self.slots)

    def __del__(self):
        # values pushed but never popped (a run that fetched only part of a gradient)
        for saved in self.slots.values():
            self.memory.free(saved)

    def __repr__(self) -> str:
        return f"<Stack {self.name}: {len(self.slots)} slots>"


def _fmt(key: tuple) -> str:
    return ", ".join(str(k) for k in key) if key else "(top level)"


@kernel("StackNew")
def _new(node, rt):
    name = node.attrs["name"]

    def new(*_control):
        return Stack(name, memory_manager(rt))
    return new


@kernel("StackPush")
def _push(node, rt):
    swap = node.attrs["swap_memory"]

    def push(stack, value, *keys):
        stack.push(tuple(int(k) for k in keys), value, swap)
        return None
    return push


@kernel("StackPop")
def _pop(node, rt):
    def pop(stack, *keys):
        return stack.pop(tuple(int(k) for k in keys))
    return pop
