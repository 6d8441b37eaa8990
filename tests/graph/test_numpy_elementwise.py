"""numpy's elementwise functions on graph tensors (graph/ops/ufuncs.py, numpy_stats.py) and the ufunc methods:
numpy's values (to the bit, where the kernel is the ufunc itself), dtypes and shapes over generated shapes,
dtypes and values (NaN and inf among them), in the compiled and the dataflow mode; gradients equal to finite
differences; ONNX exports computing the same in onnxruntime, or failing with the reason."""
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
from exec import Session
from graph.ops.ufuncs import BINARY, UNARY
from tests.grad.gradcheck import check_gradients
from tests.graph.numpy_checks import SETTINGS, arrays, check_numpy, shapes

_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.float32, np.float64]
_FLOATS = [np.float32, np.float64]


@settings(max_examples=60, **SETTINGS)
@given(st.data(), shapes, st.sampled_from(_DTYPES), st.sampled_from(sorted(UNARY)))
def test_unary_functions_as_numpy(data, shape, dtype, op):
    ufunc = UNARY[op]
    x = arrays(data, shape, dtype, nan=True)
    check_numpy(ufunc, x, exact=True)


@st.composite
def _broadcast_shapes(draw):
    """Two shapes that broadcast: a common shape with some dims of one or the other 1, or left out."""
    base = draw(st.lists(st.integers(1, 3), max_size=3))
    a = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in base]
    b = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in base]
    return tuple(a[draw(st.integers(0, len(a))):]), tuple(b)


@settings(max_examples=80, **SETTINGS)
@given(st.data(), _broadcast_shapes(), st.sampled_from(_DTYPES), st.sampled_from(_DTYPES),
       st.sampled_from(sorted(BINARY)), st.booleans())
def test_binary_functions_as_numpy(data, shape_pair, dtype_a, dtype_b, op, python_scalar):
    ufunc = BINARY[op]
    a = arrays(data, shape_pair[0], dtype_a, nan=True)
    b = arrays(data, shape_pair[1], dtype_b, low=-2, high=3, nan=True)
    if python_scalar:  # numpy's weak scalars: the tensor's dtype wins
        scalar = b.reshape(-1)[0].item() if b.size else 2
        check_numpy(lambda x: ufunc(x, scalar), a, exact=True)
    else:
        check_numpy(ufunc, a, b, exact=True)


_METHOD_UFUNCS = [np.add, np.multiply, np.maximum, np.minimum, np.subtract, np.logaddexp, np.hypot, np.fmax,
                  np.logical_and, np.logical_or, np.bitwise_xor, np.divide, np.power]


@settings(max_examples=60, **SETTINGS)
@given(st.data(), st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.sampled_from(_DTYPES),
       st.sampled_from(_METHOD_UFUNCS), st.booleans())
def test_ufunc_methods_as_numpy(data, shape, dtype, ufunc, keepdims):
    x = arrays(data, shape, dtype)
    axis = data.draw(st.sampled_from([None, 0, -1]) if len(shape) else st.just(None))
    check_numpy(lambda t: ufunc.reduce(t, axis=axis, keepdims=keepdims), x)
    check_numpy(lambda t: ufunc.accumulate(t, axis=axis if axis is not None else 0), x)
    check_numpy(lambda t, u: ufunc.outer(t, u), x, x.reshape(-1)[:3])
    check_numpy(lambda t: ufunc.reduce(t, axis=0, initial=1), x)    # numpy's own (NumpyCall)
    check_numpy(lambda t: ufunc.reduceat(t, [0], axis=0), x)


@settings(max_examples=40, **SETTINGS)
@given(st.data(), shapes, st.sampled_from(_DTYPES))
def test_ufuncs_numpy_computes_are_numpys(data, shape, dtype):
    """ufuncs without a graph op of their own run numpy's (NumpyCall): several outputs, integer functions."""
    x = arrays(data, shape, dtype, nan=True)
    y = arrays(data, shape, dtype, low=1, high=5)
    for fn in (np.frexp, np.modf, np.spacing, np.bitwise_count, np.conjugate, np.positive, np.fabs):
        check_numpy(fn, x, exact=True)
    for fn in (np.nextafter, np.divmod, np.gcd, np.lcm, np.left_shift, np.right_shift, np.float_power):
        check_numpy(fn, x, y, exact=fn is not np.divmod)


@settings(max_examples=60, **SETTINGS)
@given(st.data(), shapes, st.sampled_from(_DTYPES))
def test_elementwise_compositions_as_numpy(data, shape, dtype):
    x = arrays(data, shape, dtype, nan=True)
    y = arrays(data, shape, dtype, nan=True)
    check_numpy(np.sinc, x)
    check_numpy(lambda t: (np.nan_to_num(t), np.nan_to_num(t, nan=-1.0, posinf=9.0)), x, exact=True)
    check_numpy(lambda t: (np.isposinf(t), np.isneginf(t), np.real(t), np.imag(t), np.conj(t)), x, exact=True)
    check_numpy(lambda t: (np.angle(t), np.angle(t, deg=True)), x)
    check_numpy(lambda t, u: (np.isclose(t, u), np.isclose(t, u, equal_nan=True), np.allclose(t, t),
                              np.isclose(t, 1), np.isclose(t, u, rtol=0.5, atol=0.1)), x, y, exact=True)
    check_numpy(lambda t, u: (np.array_equal(t, u), np.array_equal(t, t, equal_nan=True), np.array_equiv(t, u)),
                x, y, placeholders=("static",), exact=True)
    check_numpy(lambda t: [np.round(t, d) for d in (-1, 0, 2)] + [np.around(t, 1)], x, exact=True)
    check_numpy(np.fix, x, exact=True)


def test_elementwise_of_complex_values_is_numpys():
    z = np.array([1 + 2j, -0.5 - 1j, 3.0 + 0j])
    check_numpy(lambda t: (np.real(t), np.imag(t), np.angle(t), np.conj(t), np.isclose(t, t * 1.0000001)), z,
                exact=True)


# --------------------------------------------------------------------------- gradients

_DOMAINS = {"Log2": (0.2, 3), "Log10": (0.2, 3), "Arcsin": (-0.9, 0.9), "Arccos": (-0.9, 0.9),
            "Arctanh": (-0.9, 0.9), "Arccosh": (1.2, 3), "Cbrt": (0.3, 2)}
_DIFFERENTIABLE_UNARY = sorted(op for op in UNARY if op not in ("IsInf", "SignBit", "Trunc"))


@pytest.mark.parametrize("op", _DIFFERENTIABLE_UNARY)
def test_unary_gradients(op):
    lo, hi = _DOMAINS.get(op, (-1.5, 1.5))
    x = np.linspace(lo, hi, 6).reshape(2, 3)
    check_gradients(UNARY[op], x)
    check_gradients(lambda t: grad.gradients(G.reduce_sum(UNARY[op](t)), [t], non_differentiable="ignore")[0], x,
                    rtol=1e-4)  # second order


@pytest.mark.parametrize("op", ["Hypot", "Fmod", "Logaddexp", "Logaddexp2", "Fmax", "Fmin", "Copysign", "FloatPower"])
def test_binary_gradients(op):
    a = np.array([[0.7, 1.3, 2.1], [0.4, 1.9, 0.8]])
    b = np.array([0.5, -1.1, 1.7])  # broadcast: its gradient is summed over the rows
    if op == "FloatPower":
        b = np.abs(b)
    check_gradients(BINARY[op], a, b)


@pytest.mark.parametrize("logaddexp", [np.logaddexp, np.logaddexp2], ids=lambda f: f.__name__)
def test_logaddexp_gradients_where_operands_are_infinite(logaddexp):
    """A sum of probabilities in log space started at log(0) = -inf, as a CTC or HMM forward recursion starts:
    a state that stays at -inf (both operands -inf) passes no NaN back, its weights' limit 1/2 times a zero
    gradient; +inf takes the whole gradient from a finite operand and half of it from another +inf."""
    inf = np.inf
    x = np.array([[0.3, -1.2, 0.5], [0.7, 0.2, -0.4]])

    def recursion(t):
        alpha = t + np.array([[0.0, -inf, -inf], [0.0, 0.0, -inf]])  # unreachable states at -inf
        summed = logaddexp(alpha[0], alpha[1])                       # [finite, finite, -inf]
        return logaddexp(summed, np.array([-inf, -inf, 0.0]))        # finite everywhere
    check_gradients(recursion, x)
    g = G.Graph()
    with g.as_default():
        a, b = G.placeholder(np.float64, (4,), name="a"), G.placeholder(np.float64, (4,), name="b")
        da, db = grad.gradients(G.reduce_sum(logaddexp(a, b)), [a, b])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no inf - inf computed on the way
        got = Session(g).run([da, db], {a: np.array([-inf, inf, inf, -inf]), b: np.array([-inf, 1.0, inf, 2.0])})
    np.testing.assert_array_equal(got[0], [0.5, 1.0, 0.5, 0.0])
    np.testing.assert_array_equal(got[1], [0.5, 0.0, 0.5, 1.0])


def test_ldexp_and_composed_gradients():
    x = np.array([[0.3, -1.2, 0.5], [0.7, 0.2, -0.4]])
    check_gradients(lambda t: np.ldexp(t, np.array([1, -2, 3])), x)
    check_gradients(lambda t: np.sinc(t) + np.nan_to_num(t) * np.angle(t + 2.0), x)
    check_gradients(lambda t: np.add.outer(t[0], t[1]).sum() * np.maximum.reduce(t, axis=0) + np.multiply.accumulate(t, 1),
                    x)


def test_steps_have_no_gradient_and_say_so():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3,), name="x")
        y = G.reduce_sum(np.heaviside(x, 0.5) + np.trunc(x))
        with pytest.warns(grad.NonDifferentiableWarning, match="Heaviside"):
            dx, = grad.gradients(y, [x])
    assert list(Session(g).run(dx, {x: np.ones(3)})) == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- ONNX

_ONNX = {
    "logs": lambda t: (np.log2(np.abs(t) + 0.1), np.log10(np.abs(t) + 0.1), np.exp2(t), np.cbrt(t)),
    "hyperbolic": lambda t: (np.sinh(t), np.cosh(t), np.tan(t), np.arcsinh(t), np.arccosh(np.abs(t) + 1),
                             np.arctanh(t / 3)),
    "float32 trigonometric": lambda t: tuple(f(t.astype(np.float32) / 3) for f in (np.arcsin, np.arccos, np.arctan,
                                                                                   np.sinh, np.arctanh)),
    "angles": lambda t: (np.deg2rad(t), np.rad2deg(t), np.fabs(t), np.fabs(t.astype(np.int32))),
    "tests": lambda t: (np.isinf(t / 0.0), np.signbit(t), np.signbit(-0.0 * t), np.trunc(t * 3), np.isposinf(t)),
    "binary": lambda t: (np.hypot(t, t.T), np.fmod(t, 0.7), np.fmod(t.astype(np.int32), 2), np.copysign(t, t.T),
                         np.float_power(np.abs(t), t.T), np.ldexp(t, np.array([1, -2, 3])), np.heaviside(t, 0.5)),
    "logaddexp": lambda t: (np.logaddexp(t, t.T), np.logaddexp2(t, t.T), np.logaddexp(t, t)),
    "nan-ignoring": lambda t: (np.fmax(t, np.log(t)), np.fmin(np.log(t), t)),
    "gradients": lambda t: grad.gradients(G.reduce_sum(np.sinh(t) * np.hypot(t, 1.0) + np.logaddexp(t, t.T)), [t])[0],
}


@pytest.mark.parametrize("name", sorted(_ONNX))
def test_onnx_export_computes_the_same(name):
    pytest.importorskip("onnx")
    from graph.onnx import export
    from tests.graph.onnx_checks import check_same, default_runtime
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3), name="x")
        outs = list(G.nest.flatten(_ONNX[name](x)))
    value = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5], [1.5, 1.5, 0.0]])
    with np.errstate(all="ignore"):
        want = Session(g).run(outs, {x: value})
        for k, (got, w) in enumerate(zip(default_runtime(export(g, [x], outs)).run(None, {"x": value}), want,
                                         strict=True)):
            check_same(got, w, f"{name} output {k}")


@pytest.mark.parametrize("build,message", [
    (lambda t: np.arctan(t), "onnxruntime's Atan computes in float32 alone"),
    (lambda t: np.gcd(t.astype(np.int64), 4), "no operator for numpy's gcd"),
    (lambda t: np.frexp(t)[0], "np.frexp runs numpy's own function"),
])
def test_onnx_export_names_what_it_cannot_express(build, message):
    pytest.importorskip("onnx")
    from graph.onnx import ExportError, export
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3), name="x")
        y = build(x)
    with pytest.raises(ExportError, match=re.escape(message)):
        export(g, [x], [y])
