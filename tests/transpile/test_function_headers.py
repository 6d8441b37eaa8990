"""Function headers: default values, keyword-only defaults, annotations and decorators of converted functions.

The analysed function's own defaults and decorators are evaluated outside it, so
whatever they reference (globals, lambdas, calls) must not disturb the analyses.
"""
import functools

import numpy as np
import pytest

import transpile
from tests.transpile.helpers import assert_converted_equivalent

SCALE = 2.0
_double = lambda v, k: v * k  # noqa: E731


def _identity_decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def default_is_a_global(x, k=SCALE):
    if x > 1:
        x = x * k
    return x


def default_is_a_lambda(x, n, fn=_double):
    for i in range(n):
        x = fn(x, 1.5)
    return x


def keyword_only_default_is_a_call(x, *, k=np.float64(3.0), offset=abs(-1.0)):
    while x < 10:
        x = x * k + offset
    return x


def annotated(x: np.ndarray, n: int = SCALE) -> np.ndarray:
    if n > 1:
        x = x * n
    return x


def nested_definitions_with_defaults_and_decorators(x, n):
    @_identity_decorator
    def inner(v, s=n * SCALE):
        if v > s:
            return v
        return s
    scaled = lambda v, m=n + 1: v * m  # noqa: E731
    return inner(x), scaled(x)


@pytest.mark.parametrize("fn,argsets", [
    (default_is_a_global, [(0.5,), (3.0,), (3.0, 4.0)]),
    (default_is_a_lambda, [(1.0, 0), (1.0, 3)]),
    (keyword_only_default_is_a_call, [(0.5,), (20.0,)]),
    (annotated, [(np.ones(3), 1), (np.ones(3), 3)]),
    (nested_definitions_with_defaults_and_decorators, [(1.0, 0), (9.0, 2)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_converted_equals_python(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


def test_lambda_with_a_default_converts():
    f = lambda x, k=SCALE: x * k if x > 0 else -x  # noqa: E731
    assert "ag.if_exp" in transpile.to_code(f)
    assert transpile.function(f)(3.0) == 6.0 and transpile.function(f)(-3.0) == 3.0
