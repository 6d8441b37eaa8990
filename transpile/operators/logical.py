"""`and`, `or` and `not`: short-circuiting in Python, graph conds when an operand is a tensor."""
from __future__ import annotations

import numpy as np

import graph
from transpile.operators.conditionals import graph_cond
from transpile.operators.data_structures import list_truth
from transpile.operators.leaves import is_tensor
from transpile.operators.staging import predicate


def and_(first, *rest):
    """`first and rest[0]() and rest[1]() ...`: later operands run only while the result is true."""
    value = first
    for i, fn in enumerate(rest):
        if is_tensor(value):
            remaining = rest[i:]
            return graph_cond(predicate(value, "`and`"), lambda: and_(remaining[0](), *remaining[1:]),
                              lambda: value, (), ("<the value of the `and` expression>",), "`and`")
        if not value:
            return value
        value = fn()
    return value


def or_(first, *rest):
    """`first or rest[0]() or rest[1]() ...`: later operands run only while the result is false."""
    value = first
    for i, fn in enumerate(rest):
        if is_tensor(value):
            remaining = rest[i:]
            return graph_cond(predicate(value, "`or`"), lambda: value,
                              lambda: or_(remaining[0](), *remaining[1:]), (),
                              ("<the value of the `or` expression>",), "`or`")
        if value:
            return value
        value = fn()
    return value


def not_(value):
    """`not value` (a logical not for tensors)."""
    value = list_truth(value)
    if is_tensor(value):
        t = graph.convert(value)
        if t.dtype == np.bool_ and (t.shape == () or t.shape is None):
            return graph.logical_not(t)
        return graph.logical_not(predicate(t, "`not`"))
    return not value
