"""np.pad, np.einsum, np.cumsum / np.cumprod and np.sort / np.argsort on graph tensors: the values, dtypes and
shapes numpy gives (static shapes inferred exactly where the inputs' are known), errors where numpy raises,
gradients equal to finite differences (second order for pad and sort), and ONNX exports that compute the
same in onnxruntime or fail naming the op. A numpy function given a list of tensors builds the graph op in
converted code, and says how to write it in graph code."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import grad
import graph as G
import transpile
from exec import RunError, Session
from tests.grad.gradcheck import check_gradients
from tests.graph.op_checks import assert_same, check, run_graph

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
_DTYPES = [np.int8, np.int32, np.int64, np.float32, np.float64, np.bool_]


def _array(data, shape, dtype):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
    return (rng.integers(-3, 4, size=shape) if np.dtype(dtype).kind in "biu" else rng.normal(size=shape)).astype(dtype)


def _check_or_raise(fn, *arrays, modes=("static", "dynamic")):
    """fn on tensors == fn on arrays; where numpy raises, building or running the graph raises too."""
    try:
        with np.errstate(all="ignore"):
            fn(*arrays)
    except (ValueError, TypeError):
        for mode in modes:
            with pytest.raises((ValueError, TypeError, RunError)):  # when it is built, else when it runs
                run_graph(fn, *arrays, mode=mode)
        return
    with np.errstate(all="ignore"):
        check(fn, *arrays, modes=modes)


# --------------------------------------------------------------------------- np.pad

_widths = st.one_of(st.integers(0, 3), st.tuples(st.integers(0, 3), st.integers(0, 3)))


@settings(max_examples=80, **_SETTINGS)
@given(st.data(), st.lists(st.integers(0, 4), min_size=1, max_size=3), st.sampled_from(_DTYPES),
       st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]), st.booleans())
def test_pad_as_numpy(data, shape, dtype, mode, per_axis):
    x = _array(data, shape, dtype)
    widths = [data.draw(_widths) for _ in shape] if per_axis else data.draw(_widths)
    kwargs = {"constant_values": data.draw(st.sampled_from([0, 1, -2.5]))} if mode == "constant" else {}
    _check_or_raise(lambda t: np.pad(t, widths, mode, **kwargs), x)


def test_pad_with_a_tensor_fill_and_per_axis_fills():
    x = np.arange(6.0).reshape(2, 3)
    check(lambda t, c: np.pad(t, ((1, 0), (2, 1)), constant_values=c), x, np.float64(-1.0), modes=("static",))
    check(lambda t: np.pad(t, 1, constant_values=((1, 2), (3, 4))), x, modes=("static", "dynamic"))
    check(lambda t: np.pad(t.astype(np.int32), 1, constant_values=2.7), x, modes=("static", "dynamic"))  # cast


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad_gradients_first_and_second_order(mode):
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    widths = ((2, 1), (4, 2)) if mode != "reflect" else ((1, 1), (2, 2))
    check_gradients(lambda t: np.pad(t, widths, mode) ** 2, x)
    check_gradients(lambda t: grad.gradients(G.reduce_sum(np.pad(t, widths, mode) ** 3), [t])[0], x)


def test_pad_gradient_of_a_tensor_fill():
    check_gradients(lambda t, c: np.pad(t, ((1, 0), (0, 2)), constant_values=c[0]) ** 2, np.ones((2, 2)),
                    np.array([0.5]))


def test_pad_refuses_what_it_cannot_do():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3,), name="x")
        with pytest.raises(G.errors.UnsupportedError, match="mode='median'"):
            np.pad(x, 1, "median")
        with pytest.raises(G.errors.UnsupportedError, match="known when the graph is built"):
            np.pad(x, G.constant(1))
        with pytest.raises(G.errors.ShapeError, match="rank 1"):
            np.pad(x, ((1, 1), (2, 2), (0, 0)))


# --------------------------------------------------------------------------- np.einsum

@st.composite
def _einsum_cases(draw):
    """(subscripts, shapes): 1-3 operands labelled from 'abcd' (repeats for diagonals), '...' sometimes,
    an explicit output sometimes, a dimension of size 1 broadcasting sometimes."""
    sizes = {c: draw(st.integers(1, 3)) for c in "abcd"}
    n = draw(st.integers(1, 3))
    ellipsis = draw(st.booleans())
    batch = draw(st.lists(st.integers(1, 3), max_size=2)) if ellipsis else []
    terms, shapes = [], []
    for _ in range(n):
        labels = draw(st.lists(st.sampled_from("abcd"), max_size=3))
        shape = [sizes[c] if not draw(st.integers(0, 5)) == 0 else 1 for c in labels]
        if labels and len(set(labels)) < len(labels):
            shape = [sizes[c] for c in labels]  # a diagonal takes equal sizes
        lead = batch[draw(st.integers(0, len(batch))):] if ellipsis else []
        terms.append(("..." if ellipsis else "") + "".join(labels))
        shapes.append(tuple(lead) + tuple(shape))
    text = ",".join(terms)
    if draw(st.booleans()):
        used = sorted(set("".join(terms).replace(".", "")))
        out = draw(st.lists(st.sampled_from(used), unique=True)) if used else []
        text += "->" + ("..." if ellipsis else "") + "".join(out)
    return text, shapes


@settings(max_examples=150, **_SETTINGS)
@given(st.data(), _einsum_cases(), st.lists(st.sampled_from([np.int32, np.float32, np.float64]), min_size=3,
                                            max_size=3))
def test_einsum_as_numpy(data, case, dtypes):
    subscripts, shapes = case
    arrays = [_array(data, s, dt) for s, dt in zip(shapes, dtypes, strict=False)]
    _check_or_raise(lambda *ts: np.einsum(subscripts, *ts), *arrays)


@settings(max_examples=40, **_SETTINGS)
@given(st.data(), _einsum_cases())
def test_einsum_gradients(data, case):
    subscripts, shapes = case
    arrays = [_array(data, s, np.float64) for s in shapes]
    try:
        np.einsum(subscripts, *arrays)
    except ValueError:
        assume(False)
    check_gradients(lambda *ts: np.einsum(subscripts, *ts), *arrays)


def test_einsum_forms_numpy_takes():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    check(lambda x, y: np.einsum(x, [0, 1], y, [1, 2], [0, 2]), a, b)    # the sublist form
    check(lambda x, y: np.einsum(x, [0, 1], y, [1, 2]), a, b)
    check(lambda x: np.einsum(x, [Ellipsis, 1], [Ellipsis]), np.ones((2, 3)), modes=("static", "dynamic"))
    check(lambda x: np.einsum("i j -> j", x), a)                          # spaces
    check(lambda x: np.einsum("ii", x), np.arange(9.0).reshape(3, 3))      # a trace
    check(lambda x: np.einsum("Ba", x), a)                                # numpy's order of labels
    check(lambda x, y: np.einsum("ij,jk", x, y, dtype=np.float32, casting="same_kind"), a, b)
    check(lambda x, y: np.einsum("ij,jk->ik", x, y, optimize=True), a, b)
    check(lambda x: np.einsum("...ij->...ji", x), np.ones((2, 1, 2, 3)), modes=("static", "dynamic"))


def test_einsum_errors_name_the_problem():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (2, 3), name="x")
        u = G.placeholder(np.float64, None, name="u")
        for subscripts, message in (("ij,jk", "name 2 operands, got 1"), ("ijk", "rank 2"), ("i1", "invalid"),
                                    ("...i->i", "no '...' ellipsis"), ("ij->ik", "appear in no operand")):
            with pytest.raises(ValueError, match=re.escape(message)):
                np.einsum(subscripts, x)
        with pytest.raises(G.errors.UnsupportedError, match="unknown rank"):
            np.einsum("...i", u)
        with pytest.raises(TypeError, match="cannot cast operand 0"):
            np.einsum("ij", x, dtype=np.int32)


# --------------------------------------------------------------------------- np.cumsum, np.cumprod

@settings(max_examples=60, **_SETTINGS)
@given(st.data(), st.lists(st.integers(0, 4), min_size=0, max_size=3), st.sampled_from(_DTYPES),
       st.sampled_from([np.cumsum, np.cumprod]), st.sampled_from([None, np.int64, np.float32]))
def test_cumulative_as_numpy(data, shape, dtype, fn, out_dtype):
    x = _array(data, shape, dtype)
    axis = data.draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    _check_or_raise(lambda t: fn(t, axis=axis, dtype=out_dtype), x)
    if axis is not None and out_dtype is None:
        _check_or_raise(lambda t: (t.cumsum(axis), t.cumprod(axis)), x)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_gradients_with_zeros_in_the_product(reverse):
    x = np.array([[1.5, 0.0, -2.0, 0.5], [0.0, 0.0, 3.0, -1.0], [2.0, 1.0, 0.5, 1.5]])
    for axis in (0, 1, None):
        check_gradients(lambda t: G.cumprod(t, axis, reverse=reverse), x)
        check_gradients(lambda t: G.cumsum(t ** 2, axis, reverse=reverse), x)
    # computed in float64 from float32 values: the gradient comes back in float32 (a linear map: wide steps)
    check_gradients(lambda t: np.cumsum(t.astype(np.float32), dtype=np.float64) * 1.0, x, rtol=1e-4, atol=1e-4,
                    eps=1e-2)


# --------------------------------------------------------------------------- np.sort, np.argsort

@settings(max_examples=60, **_SETTINGS)
@given(st.data(), st.lists(st.integers(0, 5), min_size=1, max_size=3), st.sampled_from(_DTYPES),
       st.sampled_from([None, "quicksort", "mergesort", "heapsort", "stable"]))
def test_sort_and_argsort_as_numpy(data, shape, dtype, kind):
    x = _array(data, shape, dtype)  # small integers: many ties
    axis = data.draw(st.sampled_from([None, -1, 0]))
    _check_or_raise(lambda t: (np.sort(t, axis, kind), np.argsort(t, axis, kind)), x)
    _check_or_raise(lambda t: (np.sort(t, stable=True), t.argsort(kind=kind)), x)


def test_sort_puts_nan_last():
    check(lambda t: (np.sort(t), np.argsort(t, kind="stable")), np.array([2.0, np.nan, -1.0, np.nan, 0.5]))


def test_sort_gradients_first_and_second_order():
    x = np.array([[0.3, -1.2, 2.5, 0.1], [1.0, -0.5, -2.0, 0.7]])
    for axis in (0, -1, None):
        check_gradients(lambda t: np.sort(t, axis) * np.arange(1.0, 1.0 + (8 if axis is None else x.shape[axis]))
                        .reshape((-1,) + (1,) * (0 if axis in (-1, None) else 1)), x)
        check_gradients(lambda t: grad.gradients(G.reduce_sum(np.sort(t, axis) ** 3 * np.sort(t, axis)[..., :1]),
                                                 [t])[0], x)


# --------------------------------------------------------------------------- lists of tensors

def test_numpy_functions_of_lists_of_tensors_in_converted_code():
    @transpile.function
    def f(a, b, n):
        return (np.sum([a, b]), np.mean([a, b]), np.max([a, b]), np.array([a, b]), np.stack([a, b]),
                np.concatenate([a, np.ones(2)]), np.sum([a, b], axis=0), np.min((n, 2)), np.argmax([a, b]),
                np.cumsum([a, b], axis=1), np.sort([b, a], axis=0))
    a, b = np.array([1.0, 5.0, 3.0]), np.array([4.0, 2.0, 6.0])
    got = f(a, b, 7)
    want = f.python_function(a, b, 7)
    for g_, w_ in zip(got, want, strict=True):
        assert_same(g_, w_)


def test_numpy_functions_of_lists_in_graph_code():
    g = G.Graph()
    with g.as_default():
        a, b = G.placeholder(np.int32, (3,), name="a"), G.placeholder(np.int32, (3,), name="b")
        stacked, joined = np.stack([a, b]), np.concatenate([a, np.ones(2, np.int64)])
        with pytest.raises(G.errors.SymbolicValueError, match=rf"{re.escape(__file__)}:\d+: .*np\.stack\(\[a, b\]\)"):
            np.sum([a, b])
    feeds = {a: np.arange(3, dtype=np.int32), b: np.ones(3, np.int32)}
    assert_same(Session(g).run(stacked, feeds), np.stack([feeds[a], feeds[b]]), stacked)
    assert_same(Session(g).run(joined, feeds), np.concatenate([feeds[a], np.ones(2, np.int64)]), joined)


# --------------------------------------------------------------------------- ONNX

_FUNCTIONS = {
    "pad constant": lambda t: np.pad(t, ((1, 2), (0, 1)), constant_values=-1.5),
    "pad edge": lambda t: np.pad(t, 2, "edge"),
    "pad reflect": lambda t: np.pad(t, 1, "reflect"),
    "einsum": lambda t: np.einsum("ij,kj->ik", t, t),
    "einsum trace": lambda t: np.einsum("ii->i", t),
    "cumsum": lambda t: (np.cumsum(t, 1), G.cumsum(t, 0, reverse=True), np.cumsum(t.astype(np.int32))),
    "sort": lambda t: (np.sort(t), np.sort(t, 0), np.argsort(t, kind="stable")),
    "sort gradient": lambda t: grad.gradients(G.reduce_sum(np.sort(t) * np.arange(3.0)), [t])[0],
    "pad gradient": lambda t: grad.gradients(G.reduce_sum(np.pad(t, 1) ** 2), [t])[0],
}


@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
def test_onnx_export_computes_the_same(name):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from graph.onnx import export
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3), name="x")
        outs = list(G.nest.flatten(_FUNCTIONS[name](x)))
    value = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5], [1.5, 1.5, 0.0]])
    model = export(g, [x], outs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for got, want in zip(session.run(None, {"x": value}), Session(g).run(outs, {x: value}), strict=True):
        assert_same(got, want)


@pytest.mark.parametrize("build,message", [
    (lambda t: np.cumprod(t), "Cumprod"),
    (lambda t: np.pad(t, 1, "wrap"), "mode='wrap'"),
    (lambda t: np.pad(t, 3, "reflect"), "wider than its axis"),
    (lambda t: np.argsort(t), "kind='stable'"),
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
