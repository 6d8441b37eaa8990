"""numpy constructors given tensors (`np.zeros(n)`, `np.arange(n)`, `np.array([t, 1.0])`, `np.float32(t)`)
build graph ops through `constructor_call`: the result equals numpy's on the values the tensors hold."""
import numpy as np
import pytest

import graph as G
from exec import Session
from graph.ops.numpy_api import constructor_call

N, X = 3, np.array([1.5, -2.0, 4.0], np.float32)

CASES = {
    "zeros(n)": (np.zeros, lambda n, x: ((n,), {})),
    "ones((n, 2), int32)": (np.ones, lambda n, x: (((n, 2),), {"dtype": np.int32})),
    "empty([n]) * 0": (np.zeros, lambda n, x: (([n],), {})),
    "full(n, x[0])": (np.full, lambda n, x: ((n, x[0]), {})),
    "full((2, n), 7)": (np.full, lambda n, x: (((2, n), 7), {})),
    "arange(n)": (np.arange, lambda n, x: ((n,), {})),
    "arange(1, n, 2)": (np.arange, lambda n, x: ((1, n, 2), {})),
    "arange(0.5, n, dtype=float32)": (np.arange, lambda n, x: ((0.5, n), {"dtype": np.float32})),
    "arange(stop=n)": (np.arange, lambda n, x: ((), {"stop": n})),
    "eye(n)": (np.eye, lambda n, x: ((n,), {})),
    "array([x[0], 2.0])": (np.array, lambda n, x: (([x[0], 2.0],), {})),
    "array([[x[0], x[1]], [n, 2]])": (np.array, lambda n, x: (([[x[0], x[1]], [n, 2]],), {})),
    "asarray(x, float64)": (np.asarray, lambda n, x: ((x,), {"dtype": np.float64})),
    "array(x[0], ndmin=2)": (np.array, lambda n, x: ((x[0],), {"ndmin": 2})),
    "float32(n)": (np.float32, lambda n, x: ((n,), {})),
    "int64(x)": (np.int64, lambda n, x: ((x,), {})),
    "bool_(x)": (np.bool_, lambda n, x: ((x,), {})),
}


@pytest.mark.parametrize("name", list(CASES))
def test_constructor_on_tensors_equals_numpy(name):
    func, call = CASES[name]
    args, kwargs = call(np.int64(N), X)
    want = func(*args, **kwargs)
    g = G.Graph()
    with g.as_default():
        n, x = G.placeholder(np.int64, [], name="n"), G.placeholder(np.float32, [3], name="x")
        t = constructor_call(func, *call(n, x))
    got = Session(g).run(t, {n: N, x: X})
    assert np.asarray(got).dtype == np.asarray(want).dtype == t.dtype, name
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


def test_not_a_constructor_or_no_tensor_is_not_implemented():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [3])
        assert constructor_call(np.zeros, (3,), {}) is NotImplemented
        assert constructor_call(np.sum, (x,), {}) is NotImplemented
        with pytest.raises(TypeError, match="np.eye"):
            constructor_call(np.eye, (G.constant(3), 4), {})
