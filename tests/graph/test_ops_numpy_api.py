"""numpy functions and ufuncs applied to graph tensors == the same calls on numpy arrays."""
import numpy as np
import pytest

import graph as G
from tests.graph.op_checks import check

A = np.arange(1, 13, dtype=np.float32).reshape(3, 4) / 4
B = np.arange(12, dtype=np.int32).reshape(3, 4) % 5

UNARY_UFUNCS = [np.negative, np.positive, np.absolute, np.fabs, np.exp, np.log, np.sqrt, np.square, np.tanh,
                np.sign, np.floor, np.ceil, np.rint, np.sin, np.cos, np.log1p, np.expm1, np.reciprocal,
                np.isnan, np.isfinite, np.abs]
BINARY_UFUNCS = [np.add, np.subtract, np.multiply, np.divide, np.true_divide, np.floor_divide, np.remainder,
                 np.mod, np.power, np.maximum, np.minimum, np.arctan2, np.equal, np.not_equal, np.less,
                 np.less_equal, np.greater, np.greater_equal, np.logical_and, np.logical_or, np.logical_xor]


@pytest.mark.parametrize("uf", UNARY_UFUNCS, ids=lambda u: u.__name__)
def test_unary_ufuncs(uf):
    check(uf, A)
    # (np.reciprocal truncates integers; the graph's Reciprocal kernel divides: not compared here)
    if uf not in (np.fabs, np.sqrt, np.log, np.log1p, np.reciprocal):
        with np.errstate(all="ignore"):
            check(uf, B, modes=("static",))


@pytest.mark.parametrize("uf", BINARY_UFUNCS, ids=lambda u: u.__name__)
def test_binary_ufuncs(uf):
    with np.errstate(all="ignore"):
        check(uf, A, B[0] + 1)
        check(lambda x: uf(x, 2), A, modes=("static",))
        check(lambda x: uf(1.5, x), B + 1, modes=("static",))


def test_integer_ufuncs():
    check(lambda x, y: (np.bitwise_and(x, y), np.bitwise_or(x, 3), np.bitwise_xor(x, y), np.invert(x)), B, B[::-1])
    check(lambda x: (np.logical_not(x), np.invert(x)), B > 2)


def test_ufunc_reduce_and_dtype_argument():
    check(lambda x: (np.add.reduce(x), np.maximum.reduce(x, axis=1), np.multiply.reduce(x, axis=None)), A)
    check(lambda x: np.add(x, x, dtype=np.float64), A)


def test_common_functions():
    check(lambda a, b: (np.sum(a, axis=1), np.mean(a, 0), np.max(a), np.amin(a, axis=1, keepdims=True),
                        np.prod(b, axis=0), np.argmax(a, 1), np.argmin(b), np.any(b > 3, 0), np.all(a > 0),
                        np.where(b > 2, a, -a), np.concatenate([a, b], 1), np.concatenate([a, a], None),
                        np.stack([a, b]), np.reshape(a, (2, 6)), np.transpose(a), np.expand_dims(b, 0),
                        np.squeeze(a[None]), np.zeros_like(b), np.ones_like(a, dtype=np.int8),
                        np.full_like(a, 7), np.clip(a, 0.5, 2), np.clip(b, None, 2), np.square(a), np.sqrt(a),
                        np.abs(b - 2), np.take(a, [0, 2], axis=1), np.take(b, [5, 1]), np.tile(b, 2),
                        np.broadcast_to(a[0], (2, 4)), np.exp(a), np.log(a), np.maximum(a, b),
                        np.ravel(b), np.swapaxes(a, 0, 1), np.moveaxis(a[None], 0, -1), np.outer(a[0], b[1]),
                        np.round(a, 1), np.around(a), np.count_nonzero(b, axis=0), np.linalg.norm(a),
                        np.linalg.norm(a, axis=1), np.copy(a), np.var(a, 1), np.std(b),
                        np.split(a, 2, axis=1), np.matmul(a, b.T), np.dot(a[0], b[0])), A, B,
          modes=("static", "dynamic"))


def test_shape_functions_are_static_when_known():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [2, 3])
        assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6
        y = G.placeholder(np.float32, [None, 3])
        assert isinstance(np.shape(y), G.Tensor) and isinstance(np.size(y), G.Tensor)
        assert np.ndim(y) == 2


def test_functions_mixing_arrays_and_tensors():
    check(lambda x: (np.concatenate([np.zeros((1, 4), np.float32), x]), np.stack([x, np.ones_like(A)]),
                     np.where(A > 1, x, np.zeros_like(A))), A)


def test_functions_with_effects_name_themselves():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [3, 3])
        with pytest.raises(TypeError, match=r"np\.copyto writes into its argument in place.*immutable"):
            np.copyto(x, np.ones((3, 3), np.float32))
        with pytest.raises(TypeError, match=r"np\.save writes a file when it is called"):
            np.save("never.npy", x)
        with pytest.raises(TypeError, match=r"np\.add\.at writes into its first argument.*graph\.add_at"):
            np.add.at(x, [0], 1.0)


def test_out_arguments_are_rejected():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [3])
        with pytest.raises(TypeError, match="out=.*immutable"):
            np.add(x, 1, out=np.zeros(3, np.float32))
        with pytest.raises(TypeError, match="out="):
            np.sum(x, out=np.zeros((), np.float32))
        with pytest.raises(TypeError, match="where="):
            np.sum(x, where=np.array([True, False, True]))


def test_asarray_of_a_tensor_explains():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [3])
        with pytest.raises(TypeError, match="Session.run"):
            np.asarray(x)


def test_stacking_rows_and_columns():
    v, m = np.arange(4.0), np.arange(8.0).reshape(2, 4)
    # (the rank of each array decides what it becomes: not for tensors of unknown rank)
    check(lambda a, b: (np.vstack([a, b, a]), np.vstack((b, b)), np.hstack([a, a]), np.hstack([b, b])), v, m,
          modes=("static", "dynamic"))
    check(lambda a: np.vstack([a[0], a[1]]), v, modes=("static",))  # scalars become 1x1 rows
    check(lambda a, b: np.hstack([a, b]), v, np.float32(2.5), modes=("static",))


def test_an_unsupported_numpy_function_names_the_callers_line():
    with G.Graph().as_default():
        x = G.placeholder(np.float64, [2, 2])
        with pytest.raises(G.errors.UnsupportedError, match=r"test_ops_numpy_api\.py:\d+: np\.putmask writes into"):
            np.putmask(x, x > 0, 0.0)
        with pytest.raises(TypeError, match="np.savetxt writes a file"):  # (a TypeError, as numpy's)
            np.savetxt("never.txt", x)
