"""numpy's products and np.linalg on graph tensors (graph/ops/numpy_linalg.py, linalg.py): numpy's values, dtypes
and shapes over generated shapes, dtypes and values, in the compiled and the dataflow mode, raising where numpy
raises; gradients of inv, solve, det, slogdet, cholesky, the norms and the products equal to finite differences;
ONNX exports computing the same, or failing with the reason."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
from exec import Session
from tests.grad.gradcheck import check_gradients
from tests.graph.numpy_checks import SETTINGS, arrays, check_numpy, shapes

_NUMBERS = [np.int8, np.int32, np.int64, np.float32, np.float64]
_FLOATS = [np.float32, np.float64]


@settings(max_examples=60, **SETTINGS)
@given(st.data(), shapes, shapes, st.sampled_from(_NUMBERS), st.sampled_from(_NUMBERS))
def test_products_as_numpy(data, shape_a, shape_b, dtype_a, dtype_b):
    a, b = arrays(data, shape_a, dtype_a), arrays(data, shape_b, dtype_b)
    check_numpy(np.inner, a, b)
    check_numpy(np.vdot, a, a.copy())
    k = data.draw(st.integers(0, min(len(shape_a), len(shape_b))))
    b_matched = arrays(data, shape_a[len(shape_a) - k:] + shape_b[k:], dtype_b)  # a's last k dims lead
    check_numpy(lambda x, y: (np.tensordot(x, y, k), np.linalg.tensordot(x, y, axes=k)), a, b_matched)
    if len(shape_a) >= 2:
        axes = data.draw(st.permutations(range(len(shape_a))))[:2]
        c = arrays(data, tuple(shape_a[i] for i in axes), dtype_b)
        check_numpy(lambda x, y: np.tensordot(x, y, (axes, [0, 1])), a, c)


@settings(max_examples=50, **SETTINGS)
@given(st.data(), st.lists(st.integers(1, 3), max_size=2).map(tuple), st.sampled_from(_NUMBERS),
       st.sampled_from(_NUMBERS))
def test_cross_as_numpy(data, batch, dtype_a, dtype_b):
    a, b = arrays(data, batch + (3,), dtype_a), arrays(data, batch[-1:] + (3,), dtype_b)
    check_numpy(lambda x, y: (np.cross(x, y), np.linalg.cross(x, y)), a, b)
    if batch:
        check_numpy(lambda x, y: np.cross(x, y, axisa=-1, axisb=-1, axisc=0), a, b)
        moved = np.moveaxis(a, -1, 0)
        check_numpy(lambda x, y: np.cross(x, y, axisa=0), moved, b)


_ORDS = [None, 1, 2, -1, -2, 0, 3, 0.5, np.inf, -np.inf, "fro", "nuc"]


@settings(max_examples=80, **SETTINGS)
@given(st.data(), st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.sampled_from(_NUMBERS),
       st.sampled_from(_ORDS), st.booleans())
def test_norms_as_numpy(data, shape, dtype, ord, keepdims):
    x = arrays(data, shape, dtype)
    axis = data.draw(st.sampled_from([None, 0, -1, (0, -1)] if len(shape) >= 2 else [None, 0]))
    check_numpy(lambda t: np.linalg.norm(t, ord, axis, keepdims), x)
    check_numpy(lambda t: np.linalg.vector_norm(t, keepdims=keepdims, ord=ord if ord != "fro" else 2), x)
    if len(shape) >= 2:
        check_numpy(lambda t: np.linalg.matrix_norm(t, keepdims=keepdims, ord=ord if ord is not None else "fro"), x)


@settings(max_examples=60, **SETTINGS)
@given(st.data(), st.lists(st.integers(1, 3), max_size=2).map(tuple), st.integers(0, 4),
       st.sampled_from(_NUMBERS), st.integers(-3, 5))
def test_inv_solve_det_and_powers_as_numpy(data, batch, n, dtype, power):
    a = arrays(data, batch + (n, n), dtype) + (3 * np.eye(n, dtype=dtype) if dtype != np.int8 else 0)
    b = arrays(data, (n,), dtype)
    bs = arrays(data, batch + (n, 2), dtype)
    check_numpy(lambda x: (np.linalg.inv(x), np.linalg.det(x), *np.linalg.slogdet(x)), a)
    check_numpy(lambda x, y, z: (np.linalg.solve(x, y), np.linalg.solve(x, z)), a, b, bs)
    check_numpy(lambda x: np.linalg.matrix_power(x, power), a)
    spd = np.einsum("...ij,...kj->...ik", a, a) + np.eye(n)
    check_numpy(lambda x: (np.linalg.cholesky(x), np.linalg.cholesky(x, upper=True)), spd.astype(dtype))


def test_singular_and_misshapen_matrices_raise_as_numpy():
    check_numpy(np.linalg.inv, np.zeros((2, 2)))              # LinAlgError when it runs
    check_numpy(np.linalg.cholesky, -np.eye(2))
    check_numpy(np.linalg.inv, np.ones((2, 3)))               # when it is built
    check_numpy(np.linalg.det, np.ones(3))
    check_numpy(np.linalg.inv, np.eye(2, dtype=np.float16))   # numpy has no float16 linalg


@settings(max_examples=40, **SETTINGS)
@given(st.data(), st.lists(st.integers(1, 4), min_size=4, max_size=4), st.booleans(), st.booleans(),
       st.sampled_from(_NUMBERS))
def test_multi_dot_and_vector_products_as_numpy(data, sizes, first_vector, last_vector, dtype):
    ms = [arrays(data, (p, q), dtype) for p, q in zip(sizes[:-1], sizes[1:], strict=True)]
    if first_vector:
        ms[0] = ms[0][0]
    if last_vector:
        ms[-1] = ms[-1][:, 0]
    check_numpy(lambda *ts: np.linalg.multi_dot(list(ts)), *ms)
    check_numpy(lambda *ts: np.linalg.multi_dot(list(ts[:2])), *ms)
    v, m = arrays(data, (sizes[0],), dtype), arrays(data, (2, sizes[0], sizes[0]), dtype)
    check_numpy(lambda x, y: (np.vecdot(x, x), np.matvec(y, x), np.vecmat(x, y), np.linalg.vecdot(y, x),
                              np.linalg.outer(x, x), np.linalg.matmul(y, y)), v, m)


def test_decompositions_are_numpys():
    """eigh, svd, qr, pinv, lstsq, ... run numpy's own function (NumpyCall): its results, named tuples kept."""
    m = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    check_numpy(lambda t: np.linalg.eigh(t), m, exact=True)
    check_numpy(lambda t: (np.linalg.svd(t), np.linalg.qr(t), np.linalg.pinv(t), np.linalg.matrix_rank(t),
                           np.linalg.cond(t), np.linalg.eigvalsh(t), np.linalg.norm(t, 2), np.linalg.norm(t, "nuc"),
                           np.linalg.lstsq(t, t[0])), m, exact=True)
    check_numpy(lambda t: np.linalg.eig(t.astype(complex)), m, exact=True)
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3))
        result = np.linalg.eigh(x)
        assert type(result).__name__ == "EighResult" and result.eigenvectors.shape == (3, 3)
        with pytest.raises(G.errors.UnsupportedError, match=re.escape("np.linalg.eig of real arrays returns real or "
                                                                      "complex arrays depending on the values")):
            np.linalg.eig(x)


# --------------------------------------------------------------------------- gradients

_A = np.array([[4.0, 1.0, 0.5], [1.2, 3.0, 0.2], [0.5, -0.3, 2.0]])
_GRADIENTS = {
    "inv": lambda a: np.linalg.inv(a),
    "inv batched": lambda a: np.linalg.inv(np.stack([a, a.T * 2.0])),
    "solve vector": lambda a: np.linalg.solve(a, a[0]),
    "solve batch of vectors": lambda a: np.linalg.solve(np.stack([a, a * 2.0]), a[1]),
    "solve matrix": lambda a: np.linalg.solve(a, a[:, :2] ** 2),
    "det": lambda a: np.linalg.det(a) + np.linalg.det(np.stack([a, a + 1.0])).sum(),
    "slogdet": lambda a: np.linalg.slogdet(a)[1] * 2.0,
    "cholesky": lambda a: np.linalg.cholesky(a @ a.T + np.eye(3)),
    "matrix_power": lambda a: np.linalg.matrix_power(a, 5) + np.linalg.matrix_power(a, -2),
    "norms": lambda a: np.linalg.norm(a) + np.linalg.norm(a, 1, 0) * np.linalg.norm(a, np.inf) + np.linalg.norm(a[0],
                                                                                                            3),
    "tensordot, inner, cross": lambda a: np.tensordot(a, a, ([0], [1])) + np.inner(a, a) + np.cross(a, a.T),
    "multi_dot": lambda a: np.linalg.multi_dot([a, a.T, a, a[0]]),
    "diagonal": lambda a: np.diagonal(np.stack([a, a]), 1, 1, 2).sum() * np.linalg.diagonal(a),
}


@pytest.mark.parametrize("name", sorted(_GRADIENTS))
def test_gradients(name):
    check_gradients(_GRADIENTS[name], _A, rtol=1e-5, atol=1e-6)


def test_second_order_gradient_of_inv_and_det():
    check_gradients(lambda a: grad.gradients(G.reduce_sum(np.linalg.inv(a)) + np.linalg.det(a), [a])[0], _A,
                    rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------------- ONNX

_ONNX = {
    "products": lambda t: (np.tensordot(t, t, 1), np.inner(t, t), np.cross(t, t.T), np.linalg.multi_dot([t, t, t])),
    "norms": lambda t: (np.linalg.norm(t), np.linalg.norm(t, 1), np.linalg.norm(t, -np.inf, 1), np.linalg.norm(t, 3, 0)),
    "det in float32": lambda t: np.linalg.det(t.astype(np.float32)),
    "matrix_power": lambda t: np.linalg.matrix_power(t, 4),
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
    want = Session(g).run(outs, {x: _A})
    for k, (got, w) in enumerate(zip(default_runtime(export(g, [x], outs)).run(None, {"x": _A}), want, strict=True)):
        check_same(got, w, f"{name} output {k}")


@pytest.mark.parametrize("build,message", [
    (np.linalg.inv, "ONNX has no operator for np.linalg.inv"),
    (np.linalg.det, "onnxruntime's Det computes in float32 alone"),
    (lambda t: np.linalg.eigh(t)[0], "np.linalg.eigh runs numpy's own function"),
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
