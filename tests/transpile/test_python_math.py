"""Python's math functions and number builtins on graph values in converted code: math.exp(x), math.log(x, 2),
math.floor(x), round(x, n), divmod, pow, abs, t.item(), t.tolist() give what Python gives for the same values
(a float, an int, a bool), where math called float() on a graph tensor before. A Python float rounds to n decimals
as Python rounds it, not as numpy scales."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import transpile
from tests.graph.numpy_checks import SETTINGS

_UNARY = ["exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos",
          "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "degrees", "radians", "floor", "ceil",
          "trunc", "isnan", "isinf", "isfinite"]
# where math is defined (outside, math raises ValueError and numpy's functions give NaN)
_DOMAINS = {"log": (1e-3, 50), "log1p": (-0.9, 50), "log2": (1e-3, 50), "log10": (1e-3, 50), "sqrt": (0, 50),
            "asin": (-1, 1), "acos": (-1, 1), "acosh": (1, 50), "atanh": (-0.99, 0.99)}


def _apply(name):
    fn = getattr(math, name)

    def f(x):
        return fn(x)
    return f


def _same(got, want):
    assert type(got) is type(want) and (got == want or (math.isnan(got) and math.isnan(want))), (got, want)


@settings(max_examples=40, **SETTINGS)
@given(st.sampled_from(_UNARY), st.data())
def test_unary_math_functions_as_python(name, data):
    lo, hi = _DOMAINS.get(name, (-20, 20))
    x = data.draw(st.floats(lo, hi, allow_nan=False))
    f = transpile.function(_apply(name))
    want = getattr(math, name)(x)
    got = f(x)
    if isinstance(want, float) and name not in ("floor", "ceil", "trunc", "fabs", "degrees", "radians", "sqrt"):
        assert type(got) is float and math.isclose(got, want, rel_tol=1e-13, abs_tol=1e-300), (name, x, got, want)
    else:  # exact: numpy's functions round these as C's math library does
        _same(got, want)


def binary(x, y):
    return (math.log(x, y), math.hypot(x, y), math.atan2(x, y), math.pow(x, y), math.fmod(x, y),
            math.copysign(x, -y), math.isclose(x, x * (1 + 1e-10)), math.isclose(x, y, abs_tol=0.5), math.log(x))


@settings(max_examples=30, **SETTINGS)
@given(st.floats(0.1, 20), st.floats(1.5, 4))
def test_binary_math_functions_as_python(x, y):
    got, want = transpile.function(binary)(x, y), binary(x, y)
    for g, w in zip(got, want, strict=True):
        assert type(g) is type(w) and math.isclose(g, w, rel_tol=1e-13), (got, want)


def rounding(x, n):
    return round(x, n), round(x * 3.7, 1), round(x), divmod(x, 0.7), pow(x, 3), abs(-x), round(np.float64(x) * 2, 1)


@settings(max_examples=40, **SETTINGS)
@given(st.floats(-50, 50), st.integers(-2, 3))
def test_round_divmod_pow_abs_as_python(x, n):
    compiled = transpile.function(rounding, static_argnames=("n",))
    got, want = compiled(x, n), rounding(x, n)
    assert got[0] == want[0] and type(got[0]) is float              # Python's correct decimal rounding
    assert got[1] == want[1] and got[2] == want[2]                  # round(x) is half to even in both
    # numpy's power may differ from C's pow in the last bit
    assert got[3] == pytest.approx(want[3], rel=1e-15, abs=1e-15) and got[4] == pytest.approx(want[4], rel=1e-15)
    assert got[5] == want[5]
    assert got[6] == want[6]                                        # a numpy scalar: numpy's scaled rounding


def items(a):
    return a.item(0), a[1:2].item(), a.reshape(2, 2).item(1, 0), a.reshape(2, 2).tolist(), a[0].tolist()


def test_item_and_tolist_as_numpy():
    a = np.array([1.5, -2.0, 3.25, 4.0])
    got, want = transpile.function(items)(a), items(a)
    assert got[:3] == want[:3] and np.asarray(got[3]).tolist() == want[3] and got[4] == want[4]
