"""Kernels keyed by op name: `factory(node, rt) -> fn(*input_values)`.

A factory runs once per node when a plan is built, so attribute handling is
paid then, not per execution; the returned callable is what the executor calls.
Single-output ops return their value, multi-output ops a tuple. Control-flow
primitives have no kernels: the executor implements them.
"""
from __future__ import annotations

from typing import Callable

KERNELS: dict[str, Callable] = {}
# Ops whose kernels release the GIL for long enough to be worth a pool thread.
HEAVY_OPS: set[str] = set()


def kernel(*ops: str, heavy: bool = False):
    def register(factory):
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


# In-place variants: `factory(node, rt, slot) -> fn(*input_values)` writing the result into input
# `slot`, used when the plan proves that input's buffer is read by this node alone (exec/donation.py).
INPLACE: dict[str, Callable] = {}


def inplace(*ops: str):
    def register(factory):
        for op in ops:
            INPLACE[op] = factory
        return factory
    return register


def get_inplace_kernel(node, rt, slot: int) -> Callable | None:
    factory = INPLACE.get(node.op)
    return None if factory is None else factory(node, rt, slot)


def get_kernel(node, rt) -> Callable:
    try:
        factory = KERNELS[node.op]
    except KeyError:
        raise NotImplementedError(f"no kernel for op {node.op!r} (node {node.name})") from None
    return factory(node, rt)


def _load_all() -> None:
    from exec.kernels import basic, math, tensor_array  # noqa: F401
    from exec.kernels import stack  # noqa: F401
    from exec.kernels import array, indexing, nn, random, reduce, state  # noqa: F401


_load_all()
