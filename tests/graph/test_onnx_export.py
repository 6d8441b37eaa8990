"""ONNX export: onnxruntime's outputs equal the executor's for random programs with nested loops, conds and
TensorArrays (zero-trip loops included), for gradients of programs without loops, and op by op with numpy's
dtypes; what ONNX cannot express is an error naming the node and the user's line."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grad
import graph
from exec import RunError, Session
from tests.exec import programs as P
from tests.grad import programs as GP
from tests.graph.onnx_checks import check_same, default_runtime

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from graph.onnx import IR_VERSION, OPSET, ExportError, export  # noqa: E402

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
_THIS_FILE = re.escape(__file__)


def _export_and_compare(g, inputs, outputs, feeds_list, **options):
    model = export(g, inputs, outputs, **options)
    onnx.checker.check_model(model, full_check=True)
    sess = default_runtime(model)
    names = [i.name for i in model.graph.input]
    for feeds in feeds_list:
        want = Session(g).run(outputs, dict(zip(inputs, feeds)))
        got = sess.run(None, {n: np.asarray(v, dtype=t.dtype) for n, v, t in zip(names, feeds, inputs)})
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            check_same(a, b, f"output {k} ({outputs[k].name}) for inputs {feeds}")
    return model


@settings(max_examples=30, **_SETTINGS)
@given(P.programs, st.lists(P.inputs, min_size=3, max_size=3))
def test_random_programs_compute_the_same_in_onnxruntime(program, inputs):
    """Nested loops (running 0 to 3 times), conds and appends to a TensorArray; every dtype kept."""
    g, ph, fetches = P.build_graph(program)
    keys = list(fetches)
    feeds = [list(P.feed(ph, values).values()) for values in inputs]
    _export_and_compare(g, list(ph.values()), [fetches[k] for k in keys], feeds,
                        output_names=[f"{k}_out" for k in keys])


def test_the_model_has_the_set_ir_version_opset_and_named_inputs_and_outputs():
    g, ph, fetches = P.build_graph([("assign", "f0", ("tanh", ("add", ("var", "f0"), ("const", 1.0))))])
    model = export(g, list(ph.values()), [fetches["f0"], fetches["out"]], output_names=["f", "appended"])
    assert model.ir_version == IR_VERSION and [(o.domain, o.version) for o in model.opset_import] == [("", OPSET)]
    assert [i.name for i in model.graph.input] == ["i0", "i1", "f0", "v0"]
    assert [o.name for o in model.graph.output] == ["f", "appended"]
    elem = [i.type.tensor_type.elem_type for i in model.graph.input]
    assert elem == [onnx.TensorProto.INT64, onnx.TensorProto.INT64, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT]


def test_loops_become_loop_nodes_whose_condition_is_computed_before_and_at_the_end_of_the_body():
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, [], name="n")
        x = graph.placeholder(np.float32, [None], name="x")
        i, y = graph.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, graph.tanh(y) * 2.0),
                                [graph.constant(np.int64(0)), x])
        j, z = graph.while_loop(lambda j, z: graph.reduce_sum(z) < 100.0, lambda j, z: (j + 1, z * 1.5 + 1.0),
                                [graph.constant(np.int64(0)), x], maximum_iterations=n)
    feeds = [(0, [1.0, 2.0]), (3, [0.5, -1.0, 0.25]), (5, [200.0]), (40, [1.0])]
    model = _export_and_compare(g, [n, x], [i, y, j, z], feeds)
    loops = [node for node in model.graph.node if node.op_type == "Loop"]
    assert len(loops) == 2
    assert loops[0].input[0] == "" and loops[1].input[0] != ""  # maximum_iterations is the trip count


def test_a_loop_condition_with_a_cond_in_it_is_computed_anew_for_every_iteration():
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, [], name="n")

        def keep_going(i, x):
            return graph.cond(i < n, lambda: graph.cond(x > 50.0, lambda: x < 60.0, lambda: x < 100.0),
                              lambda: graph.constant(False))
        i, x = graph.while_loop(keep_going, lambda i, x: (i + 1, x * 2.0 + 1.0),
                                [graph.constant(np.int64(0)), graph.constant(1.0)])
    _export_and_compare(g, [n], [i, x], [(0,), (3,), (100,)])


def test_nested_loops_and_conds_reading_outer_values():
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, [], name="n")
        w = graph.placeholder(np.float64, [2], name="w")

        def outer(i, acc):
            def inner(j, a):
                a = graph.cond(graph.reduce_sum(a) > 1.0, lambda: a * 0.5 + w, lambda: a + w * graph.cast(j, np.float64))
                return j + 1, a
            _, acc = graph.while_loop(lambda j, a: j < i, inner, [graph.constant(np.int64(0)), acc])
            return i + 1, acc
        _, out = graph.while_loop(lambda i, acc: i < n, outer, [graph.constant(np.int64(0)), graph.zeros([2], np.float64)])
    _export_and_compare(g, [n, w], [out], [(0, [0.1, 0.2]), (1, [0.3, -0.1]), (4, [0.5, 0.25]), (6, [-1.0, 2.0])])


def test_tensor_arrays_of_scan_and_map_fn():
    g = graph.Graph()
    with g.as_default():
        xs = graph.placeholder(np.float32, [None, 3], name="xs")
        running = graph.scan(lambda acc, x: acc + x, xs, initializer=graph.zeros([3], np.float32))
        squares = graph.map_fn(lambda x: graph.reduce_sum(x * x), xs)
    _export_and_compare(g, [xs], [running, squares], [(np.ones((4, 3)),), (np.arange(6.0).reshape(2, 3),),
                                                      (np.zeros((0, 3)),)])


@settings(max_examples=20, **_SETTINGS)
@given(GP.programs(depth=2))
def test_forward_programs_and_gradients_of_programs_without_loops(program):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, [2], name="x")
        w = graph.placeholder(np.float64, [2], name="w")
        loss = GP.build_graph(program, x, w)
        gradients = grad.gradients(loss, [x, w])
    feeds = [(np.array([0.3, -0.4]), np.array([0.9, 1.1])), (np.array([1.5, 0.2]), np.array([-0.7, 0.4]))]
    _export_and_compare(g, [x, w], [loss], feeds)
    try:
        _export_and_compare(g, [x, w], [loss, *gradients], feeds)
    except ExportError as e:
        # only the gradients of loops (values saved on stacks, gradient TensorArrays) cannot be exported
        assert any(n.op == "Exit" for n in g.nodes)
        assert re.search(r"cannot export (Stack\w+|TensorArrayGrad) node .*gradient", str(e)), str(e)


# --------------------------------------------------------------------------- ops and dtypes

_DTYPES = [np.int64, np.float32, np.float64, np.bool_]


def _op_graph(build, *specs):
    g = graph.Graph()
    with g.as_default():
        phs = [graph.placeholder(dtype, shape, name=f"in{k}") for k, (dtype, shape) in enumerate(specs)]
        outs = build(*phs)
    return g, phs, outs if isinstance(outs, (list, tuple)) else [outs]


_BINARY = [graph.add, graph.sub, graph.mul, graph.truediv, graph.floordiv, graph.mod, graph.maximum, graph.minimum,
           graph.less, graph.greater_equal, graph.equal, graph.not_equal, graph.pow]


@pytest.mark.parametrize("op", _BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("a_dtype, b_dtype", [(np.int64, np.int64), (np.float32, np.float32),
                                              (np.int64, np.float64), (np.float32, np.float64)])
def test_binary_ops_with_numpy_promotion(op, a_dtype, b_dtype):
    g, phs, outs = _op_graph(op, (a_dtype, [5]), (b_dtype, [5]))
    a = np.array([7, -7, 3, -2, 5]).astype(a_dtype)
    b = np.array([2, 3, -4, -5, 1]).astype(b_dtype)
    if op is graph.pow and np.dtype(a_dtype).kind == "i" and np.dtype(b_dtype).kind == "i":
        b = np.abs(b)
    _export_and_compare(g, phs, outs, [(a, b)])


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary_reductions_and_casts_keep_their_dtypes(dtype):
    def build(x):
        out = [graph.reduce_sum(x, axis=1), graph.reduce_max(x, axis=0, keepdims=True), graph.reduce_any(x),
               graph.argmax(x, axis=1), graph.argmin(x), graph.cast(x, np.float32), graph.cast(x, np.int64),
               graph.reshape(x, [3, 2]), graph.transpose(x), graph.concat([x, x], axis=0), graph.stack([x, x], 1),
               graph.expand_dims(x, 0), graph.shape(x), graph.size(x), graph.zeros_like(x), graph.ones_like(x),
               graph.where(graph.cast(x, np.bool_), x, graph.zeros_like(x)), graph.tile(x, [2, 1]),
               graph.broadcast_to(graph.reduce_min(x, axis=0), [4, 3]), x[:, ::-1], x[1], x[None, ..., 1:]]
        if dtype is not np.bool_:
            out += [graph.abs(x), graph.neg(x), graph.square(x), graph.reduce_prod(x, axis=1), graph.reduce_mean(x),
                    graph.relu(x), graph.sign(x)]
        if np.dtype(dtype).kind == "f":
            out += [graph.exp(x), graph.tanh(x), graph.sigmoid(x), graph.log1p(graph.abs(x)), graph.sqrt(graph.abs(x)),
                    graph.softmax(x), graph.log_softmax(x, axis=0), graph.floor(x), graph.round(x), graph.isnan(x),
                    graph.isfinite(x)]
        return out
    g, phs, outs = _op_graph(build, (dtype, [2, 3]))
    x = np.array([[1.5, -2.0, 0.0], [3.0, 0.5, -0.25]]).astype(dtype)
    _export_and_compare(g, phs, outs, [(x,)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_log1p_and_expm1_keep_the_digits_of_small_arguments(dtype):
    g, phs, outs = _op_graph(lambda x: [graph.log1p(x), graph.expm1(x)], (dtype, [7]))
    x = np.array([1e-12, -3e-9, 2e-5, 0.0, 0.7, -0.5, 30.0]).astype(dtype)
    _export_and_compare(g, phs, outs, [(x,)])


def test_indexing_and_item_assignment_with_tensor_parts():
    def build(x, i, idx, mask):
        y = graph.set_item(x, (i, slice(None, None, 2)), 9.0)
        z = graph.set_item(x, idx, x[0] * 2.0)
        return [x[i], x[1:i + 2], x[:, -1], x[..., i], x[idx], x[mask], x[::-1, 1:-1], x[i, None], y, z,
                graph.one_hot(idx, 4), graph.gather(x, idx, axis=1), graph.split(x, 2, axis=1)[1],
                graph.unstack(x, axis=0)[2]]
    g, phs, outs = _op_graph(build, (np.float64, [3, 4]), (np.int64, []), (np.int64, [2]), (np.bool_, [3]))
    x = np.arange(12.0).reshape(3, 4)
    _export_and_compare(g, phs, outs, [(x, 1, np.array([2, 0]), np.array([True, False, True])),
                                       (x, -2, np.array([1, 1]), np.array([False, False, False]))])


def test_several_advanced_indices_place_their_dimensions_as_numpy_does():
    """Arrays indexing several axes, and integers beside an array (numpy counts them as advanced): broadcast
    together, their dimensions where they stand when adjacent, else first; writes and gradients through them."""
    from graph.ops.numpy_arrays import take_along_axis

    def build(x, i, a, b, t):
        y = graph.set_item(x, (a, slice(None), b), -1.0)
        (gx,) = grad.gradients(graph.reduce_sum(x[a, 1:, b] * 3.0), [x])
        return [x[a, b], x[:, a, b], x[a, :, b], x[i, :, a], x[-1, a], x[a[:, None], b], x[..., a, i],
                x[1:, a, ::-1][:, :, 0], take_along_axis(x, t, axis=-1), y, gx]
    g, phs, outs = _op_graph(build, (np.float64, [3, 4, 5]), (np.int64, []), (np.int64, [2]), (np.int64, [2]),
                             (np.int64, [3, 4, 1]))
    x = np.arange(60.0).reshape(3, 4, 5)
    rng = np.random.default_rng(0)
    _export_and_compare(g, phs, outs, [(x, 1, np.array([2, 0]), np.array([1, 3]), rng.integers(0, 5, (3, 4, 1))),
                                       (x, -2, np.array([-1, 1]), np.array([-4, 3]), rng.integers(0, 5, (3, 4, 1)))])


def test_slices_with_a_tensor_step_and_omitted_bounds():
    """`x[::s]`, `x[1::s]`, `x[:2:s]` and a write `x[i * i::i] = 0` (a sieve): numpy's omitted bounds depend on
    the step's sign, known when the model runs."""
    def build(x, s, i):
        return [x[::s], x[1::s], x[:2:s], graph.set_item(x, slice(i * i, None, i), 0.0)]
    g, phs, outs = _op_graph(build, (np.float64, [7]), (np.int64, []), (np.int64, []))
    x = np.arange(1.0, 8.0)
    _export_and_compare(g, phs, outs, [(x, 2, 2), (x, -1, 1), (x, -3, 3), (x, 1, 2)])


def test_variables_become_initializers_holding_their_values():
    w = graph.Variable(np.array([[1.0, -1.0], [0.5, 2.0]], np.float32), name="layer/w")
    g, phs, outs = _op_graph(lambda x: graph.argmax(graph.matmul(x, w), axis=-1), (np.float32, [None, 2]))
    model = _export_and_compare(g, phs, outs, [(np.array([[1.0, 2.0], [-3.0, 0.5]]),)])
    (init,) = model.graph.initializer
    assert init.name == "layer/w"
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(init), w.value)


# --------------------------------------------------------------------------- what cannot be exported

def test_print_and_assert_are_errors_naming_the_line_unless_dropped():
    def build(x):
        y = graph.print_("x is", x)  # the line the error names
        graph.assert_(graph.reduce_all(x > -10.0), "too small")
        return graph.tanh(y)
    g, phs, outs = _op_graph(build, (np.float32, [3]))
    with pytest.raises(ExportError, match=rf"{_THIS_FILE}:\d+: cannot export Print node .*drop=\('Print',\)"):
        export(g, phs, outs)
    _export_and_compare(g, phs, outs, [(np.array([1.0, 2.0, 3.0]),)], drop=("Print", "Assert"))


@pytest.mark.skipif(not hasattr(graph, "set_iteration_limit"), reason="loops without iteration limits")
def test_a_loops_iteration_limit_is_an_error_unless_dropped():
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, [], name="n")
        i = graph.while_loop(lambda i: i < n, lambda i: i + 1, [graph.constant(np.int64(0))], iteration_limit=50)
    with pytest.raises(ExportError, match=r"cannot export CheckIterationLimit .*drop=\('CheckIterationLimit',\)"):
        export(g, [n], i)
    _export_and_compare(g, [n], list(i), [(0,), (7,), (50,)], drop=("CheckIterationLimit",))


def test_random_draws_and_variable_assignments_are_refused():
    v = graph.Variable(np.float32(0.0))
    g, phs, outs = _op_graph(lambda x: x + graph.random_uniform([3], dtype=np.float32, seed=1), (np.float32, [3]))
    with pytest.raises(ExportError, match=rf"{_THIS_FILE}:\d+: cannot export RandomUniform .*input instead"):
        export(g, phs, outs)
    g, phs, outs = _op_graph(lambda x: v.assign_add(graph.reduce_sum(x)), (np.float32, [3]))
    with pytest.raises(ExportError, match="cannot assign them"):
        export(g, phs, outs)


def test_gradient_loops_are_refused_naming_their_stacks():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, [], name="x")
        _, y = graph.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, graph.sin(y)), [graph.constant(0), x])
        (dx,) = grad.gradients(y, [x])
    with pytest.raises(ExportError, match="cannot export Stack.*stacks, which ONNX has no operators for"):
        export(g, [x], [dx])


def test_an_output_depending_on_a_placeholder_that_is_not_an_input_is_refused():
    g, phs, outs = _op_graph(lambda a, b: a + b, (np.float32, [2]), (np.float32, [2]))
    with pytest.raises(ExportError, match="placeholder, which is not among the inputs"):
        export(g, phs[:1], outs)


def test_gradients_of_an_lstm_step_slices_and_all():
    """Split, slicing gradients (ScatterSlices, GetItemGrad), SumToShape and the activation gradients."""
    def build(x, h, c, wx, wh, b):
        z = graph.matmul(x, wx) + graph.matmul(h, wh) + b
        i, f, gate, o = graph.split(z, 4, axis=1)
        c2 = graph.sigmoid(f) * c + graph.sigmoid(i) * graph.tanh(gate)
        h2 = graph.sigmoid(o) * graph.tanh(c2)
        loss = graph.reduce_sum(h2 * h2) + graph.reduce_sum(z[:, 1:3]) + graph.reduce_sum(x[0])
        return [loss, *grad.gradients(loss, [x, wx, wh, b])]
    g, phs, outs = _op_graph(build, (np.float32, [2, 3]), (np.float32, [2, 4]), (np.float32, [2, 4]),
                             (np.float32, [3, 16]), (np.float32, [4, 16]), (np.float32, [16]))
    rng = np.random.default_rng(0)
    feeds = [tuple(rng.standard_normal(p.shape).astype(np.float32) for p in phs) for _ in range(2)]
    _export_and_compare(g, phs, outs, feeds)


def test_a_growable_tensor_array_written_out_of_index_order_fails_in_onnxruntime_rather_than_differ():
    """Its sequence holds only what was written, so a write exports as an append: exact when writes come in index
    order. A write at an index written before or at a negative index (which the executor refuses) must fail the
    exported model too, not insert into the sequence and shift the elements after it."""
    g = graph.Graph()
    with g.as_default():
        again = graph.placeholder(np.int64, [], name="again")
        ta = graph.TensorArray(np.float64, size=None, element_shape=[])
        ta = ta.write(0, graph.constant(1.0)).write(1, graph.constant(2.0)).write(again, graph.constant(3.0))
        out = ta.stack()
    _export_and_compare(g, [again], [out], [(2,)])  # in order: [1, 2, 3]
    sess = default_runtime(export(g, [again], [out]))
    for index in (0, 1, -1):
        with pytest.raises(RunError):
            Session(g).run(out, {again: index})
        with pytest.raises(Exception, match="(?i)invalid sequence index"):
            sess.run(None, {"again": np.asarray(index, np.int64)})
