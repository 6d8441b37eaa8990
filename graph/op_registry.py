"""Op types by name: what the graph knows about each one (`OpDef`), registered once at import.

An op's kernel (exec/kernels) and gradient (grad/) are registered under the same
name in their own packages, so the graph never needs to know how an op runs or
differentiates.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True, slots=True)
class OpDef:
    """What the graph knows about an op type: how to infer its outputs.

    `infer(inputs, attrs)` returns one `(dtype, shape)` per output.
    `stateful` ops are never deduplicated or folded; `ordered` ones are also
    chained in program order within their context (prints, asserts, variable
    reads and writes, random draws), so their effects happen in the order the
    user wrote them.
    """

    name: str
    infer: Callable[[list, dict], list]
    stateful: bool = False
    ordered: bool = False
    hoist: bool = False  # built in the root context (constants, placeholders)
    differentiable: bool = True


_OPS: dict[str, OpDef] = {}


def register_op(name: str, infer: Callable, **flags) -> OpDef:
    """Declares op type `name`; `flags` are OpDef's (stateful, ordered, hoist, differentiable)."""
    if name in _OPS:
        raise ValueError(f"op {name!r} is already registered")
    op = OpDef(name, infer, **flags)
    _OPS[name] = op
    return op


def get_opdef(name: str) -> OpDef:
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"unknown op type {name!r}") from None


def registered_ops() -> list[str]:
    return sorted(_OPS)


def same_as_input(inputs, attrs):
    """Inference for ops whose single output has its first input's dtype and shape."""
    return [(inputs[0].dtype, inputs[0].shape)]
