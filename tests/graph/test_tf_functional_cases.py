"""Cases of TensorFlow's functional_ops_test.py, map_fn_test.py and tensor_array_ops_test.py, ported to the
graph API: foldl, foldr, map_fn and scan over nested structures, their gradients and static shapes
(empty and unknown inputs included), scan under control dependencies, TensorArrays written in loops and
conds and their gradients at every parallel_iterations, with TensorFlow's expected values in both execution
modes and the reference interpreter."""
import warnings

import numpy as np
import pytest

import grad
import graph as G
from exec import Session
from exec.reference import run_reference

CASES = {}


def case(f):
    CASES[f.__name__] = f
    return f


def run(fetches, feeds=None, modes=("compiled", "dataflow", "reference"), g=None):
    """The fetched values, the same in every mode of `modes` (cases that assign Variables run once, on the
    dataflow executor)."""
    g = g or G.get_default_graph()
    outs = [run_reference(fetches, feeds) if m == "reference" else Session(g, mode=m).run(fetches, feeds)
            for m in modes]
    for o in outs[1:]:
        for a, b in zip(G.nest.flatten(outs[0]), G.nest.flatten(o), strict=True):
            np.testing.assert_allclose(a, b)
    return outs[0]


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-6)


@case
def foldl_simple():
    elems = G.constant([1, 2, 3, 4, 5, 6], name="data")
    close(run(G.foldl(lambda a, x: (x + a) * 2, elems)), 208)
    close(run(G.foldl(lambda a, x: (x + a) * 2, elems, initializer=10)), 880)


@case
def foldl_single_input_multi_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    initializer = np.array([1, -1.0])
    close(run(G.foldl(lambda a, x: a + x, elems, initializer)), [22, 20])


@case
def foldl_multi_input_single_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    initializer = np.array(1.0)
    close(run(G.foldl(lambda a, x: a + x[0] + x[1], (elems, -elems), initializer)), 1)


@case
def foldl_multi_input_different_dims():
    elems = np.array([[1.0, 1.0, 1.0], [2.0, 3.0, 4.0]])
    other = np.array([-1.0, 1.0])
    initializer = np.array([0.0, 0.0, 0.0])
    close(run(G.foldl(lambda a, x: a + x[0] * x[1], (elems, other), initializer)), [1.0, 2.0, 3.0])


@case
def foldr_simple():
    elems = G.constant([1, 2, 3, 4, 5, 6], name="data")
    close(run(G.foldr(lambda a, x: (x + a) * 2, elems)), 450)
    close(run(G.foldr(lambda a, x: (x + a) * 2, elems, initializer=10)), 1282)


@case
def fold_grad():
    elems = G.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = G.constant(2.0, name="v")
    r = G.foldl(lambda a, x: a * x, elems, initializer=v)
    close(run(grad.gradients(r, [v])[0]), 720.0)
    r = G.foldr(lambda a, x: a * x, elems, initializer=v)
    close(run(grad.gradients(r, [v])[0]), 720.0)


@case
def map_simple():
    nums = [1, 2, 3, 4, 5, 6]
    elems = G.constant(nums, name="data")
    close(run(G.map_fn(lambda x: (x + 3) * 2, elems)), np.array([(x + 3) * 2 for x in nums]))


@case
def map_grad():
    param = G.constant(2.0)
    elems = G.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="elems")
    y = G.map_fn(lambda x: G.square(x) * param, elems)
    close(run(grad.gradients(y, [param])[0]), 91.0)
    close(run(grad.gradients(y, [elems])[0]), [4.0, 8.0, 12.0, 16.0, 20.0, 24.0])


@case
def map_single_input_multi_output():
    nums = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = G.map_fn(lambda x: ((x + 3) * 2, -(x + 3) * 2), nums, dtype=(np.float64, np.float64))
    assert len(r) == 2 and r[0].shape == (6,) and r[1].shape == (6,), [t.shape for t in r]
    got = run(list(r))
    close(got[0], (nums + 3) * 2)
    close(got[1], -(nums + 3) * 2)


@case
def map_multi_output_mismatched_dtype():
    nums = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    try:
        G.map_fn(lambda x: ((x + 3) * 2, -(x + 3) * 2), nums, dtype=[np.int64, np.int64])
    except (TypeError, ValueError, G.GraphError):
        return
    raise AssertionError("accepted")


@case
def map_multi_input_single_output():
    nums = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = G.map_fn(lambda x: x[0] * x[1][0] + x[1][1], (nums, (nums, -nums)))
    assert r.shape == (6,), r.shape
    close(run(r), nums * nums + (-nums))


@case
def map_multi_input_same_structure_output():
    nums = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = G.map_fn(lambda x: (x[1][0], (x[1][1], x[0])), (nums, (2 * nums, -nums)))
    r = [r[0], r[1][0], r[1][1]]
    assert all(t.shape == (6,) for t in r)
    got = run(r)
    close(got[0], 2 * nums)
    close(got[1], -nums)
    close(got[2], nums)


@case
def scan_simple():
    elems = G.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = G.constant(2.0, name="v")
    close(run(G.scan(lambda a, x: a * x, elems)), [1., 2., 6., 24., 120., 720.])
    close(run(G.scan(lambda a, x: a * x, elems, initializer=v)), [2., 4., 12., 48., 240., 1440.])


@case
def scan_reverse():
    elems = G.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = G.constant(2.0, name="v")
    close(run(G.scan(lambda a, x: a * x, elems, reverse=True)), [720., 720., 360., 120., 30., 6.])
    close(run(G.scan(lambda a, x: a * x, elems, initializer=v, reverse=True)), [1440., 1440., 720., 240., 60., 12.])


@case
def scan_single_input_multi_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    initializer = (np.array(1.0), np.array(-1.0))
    r = G.scan(lambda a, x: (a[0] * x, -a[1] * x), elems, initializer)
    got = run(list(r))
    close(got[0], [1.0, 2.0, 6.0, 24.0, 120.0, 720.0])
    close(got[1], [1.0, -2.0, 6.0, -24.0, 120.0, -720.0])


@case
def scan_multi_input_single_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    initializer = np.array(1.0)
    close(run(G.scan(lambda a, x: a * (x[0] + x[1]), (elems + 1, -elems), initializer)), [1.0] * 6)


@case
def scan_multi_input_same_type_output():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    r = G.scan(lambda a, x: (a[0] + x[0], a[1] + x[1]), (elems, -elems))
    got = run(list(r))
    close(got[0], np.cumsum(elems))
    close(got[1], np.cumsum(-elems))


@case
def scan_multi_output_mismatched_initializer():
    elems = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    initializer = np.array(1.0)
    try:
        G.scan(lambda a, x: (a, -a), elems, initializer)
    except (ValueError, G.GraphError):
        return
    raise AssertionError("accepted")


@case
def scan_control():
    s = G.placeholder(np.float32, shape=[None])
    b = G.placeholder(np.bool_, ())
    with G.control_dependencies([b]):
        c = G.scan(lambda a, x: x * a, s)
    close(run(c, {s: [1, 3, 3], b: True}), [1.0, 3.0, 9.0])


@case
def scan_grad():
    elems = G.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], name="data")
    v = G.constant(2.0, name="v")
    r = G.scan(lambda a, x: a * x, elems, initializer=v)
    close(run(grad.gradients(r, [v])[0]), 873.0)


@case
def scan_gradient_with_part_stop_gradient():
    a = G.Variable(0.0, name="a")
    b = G.Variable(0.0, name="b")
    elems = G.zeros(5)
    l0, l1 = G.scan(lambda elem_, input_: (a.read(), b.read()), elems, initializer=(0., 0.))
    loss = l0 + G.stop_gradient(l1)
    gs = grad.gradients(ys=[loss], xs=[a, b])
    close(run(gs), [5.0, 0.0])


@case
def fold_shape():
    x = G.Variable([[1, 2, 3], [4, 5, 6]])
    y = G.foldl(lambda _, cur: cur, x.read(), initializer=G.constant([0, 0, 0]))
    assert y.shape == run(y).shape, (y.shape,)


@case
def map_shape():
    x = G.constant([[1, 2, 3], [4, 5, 6]])
    y = G.map_fn(lambda e: e, x)
    assert y.shape == run(y).shape, y.shape


@case
def map_unknown_shape():
    x = G.placeholder(np.float32)
    y = G.map_fn(lambda e: e, x)
    assert y.shape is None, y.shape


@case
def map_empty_scalar():
    r = G.map_fn(lambda x: 1, G.constant([], dtype=np.int32))
    assert r.shape == (0,), r.shape
    assert run(r).shape == (0,)


@case
def map_empty_tensor():
    r = G.map_fn(lambda x: G.zeros([3, 2]), G.constant([]))
    assert r.shape == (0, 3, 2), r.shape
    assert run(r).shape == (0, 3, 2)


@case
def scan_shape():
    x = G.constant([[1, 2, 3], [4, 5, 6]])
    y = G.scan(lambda _, cur: cur, x, initializer=G.constant([0, 0, 0]))
    assert y.shape == run(y).shape, y.shape


@case
def scan_empty_tensor():
    x = G.scan(lambda x, _: x, G.range(0), initializer=G.ones([2, 4]))
    assert x.shape == (0, 2, 4), x.shape
    assert run(x).shape == (0, 2, 4)


@case
def scan_unknown_shape():
    x = G.placeholder(np.float32)
    initializer = G.placeholder(np.float32)
    y = G.scan(lambda _, cur: cur, x, initializer=initializer)
    assert y.shape is None, y.shape


@case
def scan_varying_shape():
    x = G.placeholder(np.float32, shape=[None, 2])
    y = G.scan(lambda a, x: a + x, x)
    assert y.shape == (None, 2), y.shape
    close(run(y, {x: [[1.0, 2.0]]}), [[1.0, 2.0]])


@case
def tensor_array_while_write_pack_gradients():
    for dynamic in (False, True):
        g = G.Graph()
        with g.as_default():
            v0 = G.identity(np.arange(3 * 5, dtype=np.float32).reshape(3, 5))
            var = G.Variable(np.arange(100, 105, dtype=np.float32))
            state0 = G.identity(np.array([1] * 5, dtype=np.float32))
            ta = G.TensorArray(np.float32, size=None if dynamic else 3)
            time_0 = G.identity(0)
            def body(time, ta_t, state):
                sliced = v0[time]
                out = sliced + var.read() + state
                state = state + sliced
                return (time + 1, ta_t.write(time, out), state)
            _, h_final, _ = G.while_loop(lambda t, *_: t < 3, body, (time_0, ta, state0), parallel_iterations=3)
            vout = h_final.stack()
            grad_val = -np.arange(3 * 5, dtype=np.float32).reshape(3, 5)
            v0_grad = grad.gradients([vout], [v0], [grad_val])[0]
            state0_grad = grad.gradients([vout], [state0], [grad_val])[0]
            var_grad = grad.gradients([vout], [var], [grad_val])[0]
            s0, v0v, vo, g0, gv, gs = run([state0, v0, vout, v0_grad, var_grad, state0_grad], g=g)
        var_t = np.arange(100, 105, dtype=np.float32)
        state_per_time = np.array([s0, s0 + v0v[0], s0 + v0v[0] + v0v[1]])
        close(vo, v0v + var_t + state_per_time)
        close(g0, np.array([grad_val[0] + grad_val[1] + grad_val[2], grad_val[1] + grad_val[2], grad_val[2]]))
        close(gv, grad_val.sum(axis=0))
        close(gs, grad_val.sum(axis=0))


@case
def tensor_array_grad_in_cond():
    x = G.placeholder(np.float64, (3,))
    p = G.placeholder(np.bool_, ())
    def write_all():
        ta = G.TensorArray(np.float64, size=3).unstack(x * 2.0)
        return ta.stack()
    y = G.cond(p, write_all, lambda: x)
    gx = grad.gradients(G.reduce_sum(y * y), [x])[0]
    close(run(gx, {x: [1.0, 2.0, 3.0], p: True}), [8.0, 16.0, 24.0])
    close(run(gx, {x: [1.0, 2.0, 3.0], p: False}), [2.0, 4.0, 6.0])


@case
def while_parallel_iterations_results_equal():
    for par in (1, 2, 10, 32):
        g = G.Graph()
        with g.as_default():
            x = G.placeholder(np.float64, (4,))
            def body(i, acc, ta):
                v = x[i] * acc
                return i + 1, acc + 1.0, ta.write(i, v)
            _, _, ta = G.while_loop(lambda i, a, t: i < 4, body, (0, 1.0, G.TensorArray(np.float64, size=4)), parallel_iterations=par)
            y = ta.stack()
            gx = grad.gradients(G.reduce_sum(y), [x])[0]
            got = run([y, gx], {x: [1.0, 2.0, 3.0, 4.0]}, g=g)
        close(got[0], [1.0, 4.0, 9.0, 16.0])
        close(got[1], [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", grad.NonDifferentiableWarning)
        with G.Graph().as_default():
            CASES[name]()
