"""Converted code gives Python's result, or an error that says what to write: the cases where it once
returned a wrong number or failed on valid code (nested defs, lists read in nested loops, weak Python
numbers in nested loops, `and`/`or` on non-bool tensors, static ranges with a tensor break,
containers changed in graph branches and loops, try/except, globals)."""
import numpy as np
import pytest

import transpile
from tests.transpile.helpers import assert_converted_equivalent

A = np.array([1.0, -2.0, 3.0, 4.0, -5.0])


# --------------------------------------------------------------------------- nested defs keep their returns

def nested_def_before_a_nested_return(x):
    def half(t):
        return t * 0.5
    s = half(x)
    if x > 0:
        if x > 1:
            return s
    return s


def nested_def_with_loop_returns_in_a_graph_loop(x, n):
    s = 0.0
    for i in range(n):
        def step(t):
            for k in range(3):
                if t > k:
                    return t - k
            return t
        s = s + step(x)
        if s > 3:
            return s
    return -s


def nested_defs_with_breaks_and_returns(x):
    def outer(t):
        def inner(u):
            if u > 0:
                return u * 2
            return -u
        while t < 10:
            t = inner(t) + 1
            if t > 5:
                break
        return t
    if x > 0:
        return outer(x)
    return x


def nested_generator_def(x):
    def values():
        yield 1
        yield 2
    s = x
    for v in values():
        s = s + v
    return s


@pytest.mark.parametrize("fn,argsets", [
    (nested_def_before_a_nested_return, [(0.5,), (2.0,), (-1.0,)]),
    (nested_def_with_loop_returns_in_a_graph_loop, [(2.5, 4), (0.5, 4), (0.5, 0)]),
    (nested_defs_with_breaks_and_returns, [(0.5,), (-1.0,)]),
    (nested_generator_def, [(1.0,)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_nested_def_keeps_its_own_return(fn, argsets):
    assert_converted_equivalent(fn, *argsets)
