"""Sources and plumbing: Const, Placeholder, Identity, NoOp, StopGradient, Print, Assert, CheckIterationLimit."""
from __future__ import annotations

import sys

import numpy as np

from exec.errors import AssertionFailed, IterationLimitExceeded
from exec.kernels.registry import kernel


def _identity(x):
    return x


@kernel("Const")
def _const(node, rt):
    value = node.attrs["value"]
    value = value[()] if value.ndim == 0 else value

    def const():
        return value
    return const


@kernel("Placeholder")
def _placeholder(node, rt):
    def missing():
        raise ValueError(f"placeholder {node.name!r} was not fed")
    return missing


@kernel("Identity", "StopGradient", "LoopCond")
def _ident(node, rt):
    return _identity


@kernel("NoOp")
def _noop(node, rt):
    def noop(*args):
        return None
    return noop


def format_value(v, summarize: int | None) -> str:
    opts = {"threshold": summarize * 2 if summarize else sys.maxsize, "edgeitems": summarize or 3}
    with np.printoptions(**opts):
        return str(np.asarray(v))


@kernel("Print")
def _print(node, rt):
    template, sep, end = node.attrs["template"], node.attrs["sep"], node.attrs["end"]
    summarize = node.attrs.get("summarize")

    def print_(*values):
        it = iter(values)
        parts = [format_value(next(it), summarize) if t is None else t for t in template]
        rt.write(sep.join(parts) + end)
        return values[0] if values else None
    return print_


@kernel("Assert")
def _assert(node, rt):
    message = node.attrs["message"]

    def assert_(cond, *data):
        if not np.all(cond):
            shown = "; ".join(format_value(d, 6) for d in data)
            raise AssertionFailed(message + (f" (data: {shown})" if data else ""))
        return None
    return assert_


@kernel("CheckIterationLimit")
def _check_iteration_limit(node, rt):
    limit, loop = node.attrs["limit"], node.attrs["loop"]

    def check(pred, iteration):
        if pred and iteration >= limit:
            raise IterationLimitExceeded(
                f"{loop} ran {limit} iterations, its iteration limit (maximum_iterations), and its condition "
                "still holds: raise the limit if the loop needs more iterations, or check that its condition "
                "can become false")
        return pred
    return check
