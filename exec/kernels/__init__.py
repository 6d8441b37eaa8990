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
