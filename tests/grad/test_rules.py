"""Every gradient rule against central finite differences (float64)."""
import numpy as np
import pytest

import grad
import graph
from exec import Session
from tests.grad.gradcheck import check_gradients

rng = np.random.default_rng(1)


def pos(*shape):
    return rng.uniform(0.5, 2.0, size=shape)


def any_(*shape):
    return rng.normal(size=shape)


UNARY = {
    "neg": (graph.neg, any_), "abs": (graph.abs, any_), "exp": (graph.exp, any_), "log": (graph.log, pos),
    "sqrt": (graph.sqrt, pos), "square": (graph.square, any_), "tanh": (graph.tanh, any_),
    "sigmoid": (graph.sigmoid, any_), "relu": (graph.relu, any_), "sin": (graph.sin, any_),
    "cos": (graph.cos, any_), "log1p": (graph.log1p, pos), "expm1": (graph.expm1, any_),
    "reciprocal": (graph.reciprocal, pos), "softmax": (graph.softmax, any_),
    "log_softmax": (graph.log_softmax, any_), "softplus": (graph.softplus, any_),
    "logsumexp": (lambda x: graph.logsumexp(x, axis=1), any_),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    fn, gen = UNARY[name]
    check_gradients(fn, gen(3, 4))


BINARY = {
    "add": (graph.add, any_, any_), "sub": (graph.sub, any_, any_), "mul": (graph.mul, any_, any_),
    "truediv": (graph.truediv, any_, pos), "pow": (graph.pow, pos, any_),
    "maximum": (graph.maximum, any_, any_), "minimum": (graph.minimum, any_, any_),
    "atan2": (graph.atan2, any_, any_), "mod": (graph.mod, pos, lambda *s: rng.uniform(2.5, 3.0, size=s)),
    "where": (lambda a, b: graph.where(a > b, a * b, a - b), any_, any_),
    # the activation-gradient ops themselves (their rules are what second-order gradients use)
    "tanh_grad": (graph.tanh_grad, any_, any_), "sigmoid_grad": (graph.sigmoid_grad, any_, any_),
}


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3))])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_with_broadcasting(name, shapes):
    fn, ga, gb = BINARY[name]
    check_gradients(fn, ga(*shapes[0]), gb(*shapes[1]))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv", "maximum"])
def test_binary_with_type_promotion_gives_each_operand_its_own_dtype(name):
    # float32 op float64 -> float64 (numpy rules): the float32 operand's gradient is float32
    fn, ga, gb = BINARY[name]
    a32, b64 = ga(3, 4).astype(np.float32), gb(4)
    g = graph.Graph()
    with g.as_default():
        a, b = graph.placeholder(np.float32, (3, 4)), graph.placeholder(np.float64, (4,))
        ga_t, gb_t = grad.gradients(graph.reduce_sum(fn(a, b)), [a, b])
        assert (ga_t.dtype, gb_t.dtype) == (np.float32, np.float64)
        ref_a, ref_b = grad.gradients(graph.reduce_sum(fn(graph.cast(a, np.float64), b)), [a, b])
    got = Session(g).run([ga_t, gb_t, ref_a, ref_b], {a: a32, b: b64})
    np.testing.assert_allclose(got[0], got[2], rtol=1e-6)
    np.testing.assert_allclose(got[1], got[3], rtol=1e-12)


def test_pow_with_nonpositive_base_gives_finite_exponent_gradient():
    got = check_gradients(lambda a, b: a ** b, np.array([0.0, -2.0, 3.0]) * 0 + np.array([1.5, 2.0, 3.0]),
                          np.array([2.0, 2.0, 2.0]))
    assert all(np.isfinite(g).all() for g in got)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5)), ((4,), (2, 4, 3)),
                                   ((2, 3, 4), (4,))])
def test_matmul(sa, sb):
    check_gradients(graph.matmul, any_(*sa), any_(*sb))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 2), False), (-1, False)])
@pytest.mark.parametrize("op", [graph.reduce_sum, graph.reduce_mean, graph.reduce_max, graph.reduce_min,
                                graph.reduce_prod])
def test_reductions(op, axis, keepdims):
    check_gradients(lambda x: op(x, axis=axis, keepdims=keepdims), any_(2, 3, 4))


def test_prod_with_zeros_is_exact():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    check_gradients(lambda t: graph.reduce_prod(t, axis=1), x)


def test_max_splits_ties_evenly():
    g = graph.Graph()
    with g.as_default():
        x = graph.constant(np.array([[1.0, 3.0, 3.0], [2.0, 1.0, 0.0]]))
        (gx,) = grad.gradients(graph.reduce_max(x, axis=1), [x])
    np.testing.assert_array_equal(Session(g).run(gx), [[0, 0.5, 0.5], [1, 0, 0]])


ARRAY = {
    "reshape": lambda x: graph.reshape(x, (4, 3)),
    "transpose": lambda x: graph.transpose(x, (2, 0, 1)) if x.ndim == 3 else graph.transpose(x),
    "expand_dims": lambda x: graph.expand_dims(x, (0, 2)),
    "squeeze": lambda x: graph.squeeze(graph.reshape(x, (1, 3, 4, 1))),
    "concat": lambda x: graph.concat([x, x * 2.0, x[:1]], axis=0),
    "concat_axis1": lambda x: graph.concat([x, graph.exp(x)], axis=1),
    "stack": lambda x: graph.stack([x, x * x], axis=1),
    "unstack": lambda x: graph.unstack(x)[1] * 3.0,
    "split": lambda x: graph.split(x, [1], axis=1)[1],
    "tile": lambda x: graph.tile(x, (2, 1, 3)),
    "broadcast_to": lambda x: graph.broadcast_to(x[:, :1], (2, 3, 4)),
    "reduce_to_shape": lambda x: graph.reduce_to_shape(x, (3, 1)),
    "gather": lambda x: graph.gather(x, graph.constant(np.array([2, 0, 2])), axis=1),
    "getitem": lambda x: x[1:, None, ::2],
    "getitem_array": lambda x: x[graph.constant(np.array([0, 2, 0])), 1:],
    "getitem_mask": lambda x: x[graph.constant(np.array([True, False, True]))],
    "getitem_scalar_tensor": lambda x: x[graph.constant(np.array(1)) + 1, -1],
    "fill": lambda x: graph.fill((2, 2), graph.reduce_sum(x)),
    # several basic slices of one tensor (an LSTM's gates): their gradients are one ScatterSlices
    "gate_slices": lambda x: graph.tanh(x[:, :2]) * x[:, 2:] + graph.exp(x[:, 1:3]) * x[1, :2] + x[::2, ::3].sum(),
}


@pytest.mark.parametrize("name", list(ARRAY))
def test_array_ops(name):
    check_gradients(ARRAY[name], any_(3, 4))


def test_cast_roundtrip():
    check_gradients(lambda x: graph.cast(graph.cast(x, np.float32), np.float64) * 2.0, np.array([1.0, 2.0]),
                    rtol=1e-3, atol=1e-3, eps=1e-3)


def test_gradients_of_slices_of_one_tensor_are_scattered_into_one_buffer():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (3, 4))
        (gx,) = grad.gradients(graph.reduce_sum(x[:, :2] * 3.0) + graph.reduce_sum(x[:, 1:] * x[:, 1:]), [x])
    assert gx.node.op == "ScatterSlices"
    xv = np.arange(12.0).reshape(3, 4)
    want = np.zeros((3, 4))
    want[:, :2] += 3.0
    want[:, 1:] += 2 * xv[:, 1:]
    np.testing.assert_allclose(Session(g).run(gx, {x: xv}), want)


def test_scatter_slices_rule():
    from graph.ops.indexing import parse_index, scatter_slices
    first, second = parse_index((slice(None), slice(0, 2)))[0], parse_index((slice(None), slice(1, 3)))[0]
    check_gradients(lambda a, b: scatter_slices([3, 4], [a, b], (first, second)) * 2.0, any_(3, 2), any_(3, 2))


def test_square_and_relu_gradients_carry_no_power_or_zeros_array():
    """d(x**2) is 2 * x (x ** 1 is x, bit for bit) and relu's gradient selects against a scalar zero."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (3,), name="x")
        loss = graph.reduce_sum(graph.maximum(x, 0.0) ** 2)
        first = len(g.nodes)
        (gx,) = grad.gradients(loss, [x])
    ops = [n.op for n in g.nodes[first:]]
    assert "Select" in ops and "Pow" not in ops and "ZerosLike" not in ops, ops
    np.testing.assert_array_equal(Session(g).run(gx, {x: [-1.0, 0.5, 2.0]}), [0.0, 1.0, 4.0])
    check_gradients(lambda x: graph.maximum(x, 0.0) ** 2, np.array([-1.0, 0.5, 2.0]))
