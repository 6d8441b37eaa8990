"""The kernel registry: op name -> `factory(node, rt) -> fn(*input_values)`.

A factory runs once per node when a plan is built, so attribute handling is
paid then, not per execution; the returned callable is what the executor calls.
Single-output ops return their value, multi-output ops a tuple. Control-flow
primitives have no kernels: the executor implements them.

Kernel modules register themselves on import (`@kernel("Add")`); the package
`exec.kernels` imports them all.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable, Iterable

KERNELS: dict[str, Callable] = {}
# Ops whose kernels release the GIL for long enough to be worth a pool thread.
HEAVY_OPS: set[str] = set()
# In-place variants: `factory(node, rt, slot) -> fn(*input_values)` writing the result into input
# `slot`, used when the plan proves that input's buffer is read by this node alone (exec/donation.py).
INPLACE: dict[str, Callable] = {}


def kernel(*ops: str, heavy: bool = False) -> Callable[[Callable], Callable]:
    """Decorator: registers `factory` as the kernel factory of `ops`."""
    def register(factory: Callable) -> Callable:
        for op in ops:
            if op in KERNELS:
                raise ValueError(f"kernel for {op!r} registered twice")
            KERNELS[op] = factory
            if heavy:
                HEAVY_OPS.add(op)
        return factory
    return register


def simple(op: str, fn: Callable, heavy: bool = False) -> None:
    """Registers an op whose kernel is `fn` itself (no attributes)."""
    kernel(op, heavy=heavy)(lambda node, rt: fn)


def inplace(*ops: str) -> Callable[[Callable], Callable]:
    """Decorator: registers `factory` as the in-place kernel factory of `ops`."""
    def register(factory: Callable) -> Callable:
        for op in ops:
            INPLACE[op] = factory
        return factory
    return register


# the nodes fed in the run whose kernels are being built (see `feeding`)
_FED: ContextVar[frozenset] = ContextVar("fed_nodes", default=frozenset())


@contextlib.contextmanager
def feeding(nodes: Iterable):
    """Kernels built inside know that `nodes` are fed: a value the graph fixes (a constant shape, the shape
    of a tensor of known shape) is baked into a kernel only where no node it comes from is fed."""
    token = _FED.set(frozenset(nodes))
    try:
        yield
    finally:
        _FED.reset(token)


def is_fed(node) -> bool:
    """Whether `node` is fed in the run whose kernels are being built."""
    return node in _FED.get()


def get_kernel(node, rt) -> Callable:
    """The kernel of `node`, built by its op's factory."""
    try:
        factory = KERNELS[node.op]
    except KeyError:
        raise NotImplementedError(f"no kernel for op {node.op!r} (node {node.name})") from None
    return factory(node, rt)


def get_inplace_kernel(node, rt, slot: int) -> Callable | None:
    """The kernel of `node` computing into input `slot`, or None when its op has no in-place variant."""
    factory = INPLACE.get(node.op)
    return None if factory is None else factory(node, rt, slot)
