"""NumpyCall (graph/ops/numpy_call.py): numpy functions without graph ops run numpy's own function on the values.

Results, dtypes and structures (tuples, lists, named tuples) are numpy's in both execution modes; what the
graph infers when it is built is what numpy returns (dimensions that depend on the values unknown, ranks known
where the shapes are not); functions whose dtype depends on the values and functions with effects are refused;
a gradient through one and an ONNX export of one fail naming the numpy function and the user's line; a saved
graph keeps NumpyCall nodes by the function's numpy name and refuses to load any other name."""
import io
import json
import re
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
from exec import RunError, Session
from graph.saving.values import FormatError
from tests.graph.numpy_checks import SETTINGS, arrays, check_numpy, nonempty_shapes

_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.float32, np.float64]


@settings(max_examples=60, **SETTINGS)
@given(st.data(), nonempty_shapes, st.sampled_from(_DTYPES))
def test_value_dependent_results_as_numpy(data, shape, dtype):
    x = arrays(data, shape, dtype, low=0, high=4)
    check_numpy(lambda t: (np.unique(t), np.unique(t, return_counts=True, return_index=True), np.nonzero(t),
                           np.flatnonzero(t), np.argwhere(t), np.where(t), np.unique_counts(t)), x, exact=True)
    check_numpy(lambda t: (np.sort_complex(t), np.partition(t, 0), np.argpartition(t, 0, axis=None),
                           np.searchsorted(np.sort(t.ravel()), t)), x, exact=True)
    if dtype != np.bool_:
        check_numpy(lambda t: (np.bincount(t.ravel().astype(np.int64)), np.histogram(t, bins=3),
                               np.histogram(t, bins=[0, 1, 5]), np.digitize(t, [1, 2])), x, exact=True)


@settings(max_examples=40, **SETTINGS)
@given(st.data(), nonempty_shapes, st.sampled_from(_DTYPES[1:]))
def test_other_functions_as_numpy(data, shape, dtype):
    x = arrays(data, shape, dtype)
    if min(shape) > 1:
        check_numpy(lambda t: np.gradient(t.astype(np.float64)), x, exact=True)
    check_numpy(lambda t: (np.convolve(t.ravel(), [1, 2]), np.interp(t, [0, 1, 2], [1.0, -1.0, 0.5]),
                           np.polyval([1, 2, 3], t), np.resize(t, (2, 3)), np.i0(t.astype(np.float64)),
                           np.isin(t, [1, 2]), np.vander(t.ravel(), 3), np.packbits(t > 0), np.lexsort((t.ravel(),))),
                x, exact=True)


def test_inference_from_examples():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (4, 3))
        assert np.histogram(x, bins=5)[0].shape == (5,) and np.histogram(x, bins=5)[1].dtype == np.float64
        assert np.unique(x).shape == (None,)                       # as many as the values tell
        idx = np.nonzero(x)
        assert isinstance(idx, tuple) and [t.shape for t in idx] == [(None,), (None,)]
        assert np.searchsorted(x[0], x).shape == (4, 3) and np.searchsorted(x[0], x).dtype == np.intp
        assert np.convolve(x[0], x[1]).shape == (5,)
        u = G.placeholder(np.float64, (None, 3))                   # a size known only when it runs: ranks
        assert np.convolve(u[:, 0], x[1]).shape == (None,) and np.gradient(u)[0].shape == (None, None)
        v = G.placeholder(np.float64, None)
        assert np.i0(v).shape is None                             # its rank is the input's, unknown here
        assert np.linalg.svd(x).S.shape == (3,)                    # numpy's named tuples
        assert type(np.unique_all(x)).__name__ == "UniqueAllResult"
        assert isinstance(np.array_split(x, 3, axis=1), list)     # numpy's list, a list of tensors
        fetches = [np.unique(x), np.gradient(u)[1], np.i0(v)]
    feeds = {x: np.arange(12.0).reshape(4, 3), u: np.ones((2, 3)), v: np.ones(2)}
    got = Session(g).run(fetches, feeds)
    assert got[0].shape == (12,) and got[1].shape == (2, 3)


def test_static_queries_answer_when_the_graph_is_built():
    with G.Graph().as_default():
        x, i = G.placeholder(np.float32, (None, 3)), G.placeholder(np.int8, ())
        assert np.result_type(x, i, np.float64) == np.float64 and np.result_type(x, i) == np.float32
        assert np.can_cast(x, np.float64) and not np.can_cast(x, np.int8)
        assert np.common_type(x) is np.float32 and np.iscomplexobj(x) is False and np.isrealobj(x) is True
        assert np.min_scalar_type(x) == np.float32
        with pytest.raises(G.errors.UnsupportedError, match="depends on its value"):
            np.min_scalar_type(i)


def test_numpy_call_takes_python_callables_and_keyword_arguments():
    x = np.arange(12.0).reshape(3, 4)
    check_numpy(lambda t: (np.apply_along_axis(lambda r: r[::-1].cumsum(), 1, t), np.apply_over_axes(np.sum, t, [0]),
                           np.piecewise(t, [t < 3, t >= 3], [lambda v: -v, 1.0])), x, exact=True)
    check_numpy(lambda t: G.numpy_call(np.histogram, t, bins=4, range=(0.0, 12.0), density=True), x, exact=True,
                np_fn=lambda t: np.histogram(t, bins=4, range=(0.0, 12.0), density=True))


def test_refused_with_the_reason():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3), name="x")
        for call, message in [
            (lambda: np.real_if_close(x), "np.real_if_close returns real or complex arrays depending on the values"),
            (lambda: np.linalg.eigvals(x), "pass complex values"),
            (lambda: np.fill_diagonal(x, 0.0), "np.fill_diagonal writes into its argument in place"),
            (lambda: np.place(x, x > 0, [1.0]), "np.place writes into its argument in place"),
            (lambda: np.maximum.at(x, [0], 1.0), "np.maximum.at writes into its first argument in place"),
            (lambda: np.savez("never.npz", x), "np.savez writes a file when it is called"),
            (lambda: np.sum(x, out=np.zeros(())), "out=.*immutable"),
            (lambda: G.numpy_call(np.random.rand, 3), "np.random.rand cannot run on graph tensors: .*global random state"),
        ]:
            with pytest.raises(TypeError, match=message):
                call()


def test_numpy_refusing_every_example_is_numpys_error():
    with G.Graph().as_default():
        x = G.placeholder(np.float64, (3, 4))
        with pytest.raises(ValueError, match=r"np\.linalg\.eigh of input 'Placeholder'.*numpy refuses every example"):
            np.linalg.eigh(x)
        with pytest.raises(TypeError, match=r"np\.bitwise_count of input 'Placeholder'.*numpy refuses every example"):
            np.bitwise_count(x)


def test_the_kernel_checks_what_numpy_returns_against_the_graph():
    """A numpy function whose dtype depended on the values, examples notwithstanding, fails the run naming it."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3,), name="x")
        y = G.numpy_call(np.emath.sqrt, x)  # real for the examples' values
    assert y.dtype == np.float64
    with pytest.raises(RunError, match=re.escape("np.lib.scimath.sqrt returned complex128[3] for result 0, where the "
                                                 "graph inferred float64[3]")):
        Session(g).run(y, {x: np.array([-1.0, 4.0, 9.0])})
    assert list(Session(g).run(y, {x: np.array([1.0, 4.0, 9.0])})) == [1.0, 2.0, 3.0]


# --------------------------------------------------------------------------- gradients, ONNX, saving

def test_a_gradient_through_numpy_call_names_the_function_and_the_line():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3), name="x")
        w = np.linalg.eigvalsh(x)                                    # the line named
        line = w.node.source.lineno
        with pytest.raises(G.GraphError, match=rf"test_numpy_call\.py:{line}: gradients: np\.linalg\.eigvalsh \(node "
                                               rf"eigvalsh, built at .*test_numpy_call\.py:{line}\) has no gradient"):
            grad.gradients(G.reduce_sum(w), [x])
        counts = np.unique(x, return_counts=True)[1]              # integers: no gradient flows, nothing to refuse
        dx, = grad.gradients(G.reduce_sum(G.cast(counts, np.float64)) + G.reduce_sum(x), [x],
                             non_differentiable="ignore")
        stopped, = grad.gradients(G.reduce_sum(G.stop_gradient(np.linalg.eigvalsh(x)) * x), [x])
    v = np.eye(3)
    assert np.array_equal(Session(g).run(dx, {x: v}), np.ones((3, 3)))
    assert np.allclose(Session(g).run(stopped, {x: v}), np.ones((3, 3)))


def test_onnx_export_of_numpy_call_names_the_function_and_the_line():
    pytest.importorskip("onnx")
    from graph.onnx import ExportError, export
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3), name="x")
        y = np.linalg.pinv(x)
    with pytest.raises(ExportError, match=rf"test_numpy_call\.py:{y.node.source.lineno}: cannot export NumpyCall node "
                                          r"pinv to ONNX: np\.linalg\.pinv runs numpy's own function"):
        export(g, [x], [y])


@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.float64, np.float32, np.int16])
def test_onnx_export_of_nonzero_where_flatnonzero_and_argwhere(dtype):
    """The positions of the nonzero elements, numpy's row-major order, as ONNX NonZero (a dtype NonZero does
    not take is compared with zero first)."""
    pytest.importorskip("onnx")
    from graph.onnx import export
    from tests.graph.onnx_checks import check_same, default_runtime
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(dtype, (3, 4), name="x")
        v = G.placeholder(dtype, (None,), name="v")
        outs = [*np.nonzero(x), *np.where(x), np.flatnonzero(x), np.argwhere(x), np.nonzero(v)[0], np.argwhere(v)]
    model = export(g, [x, v], outs)
    sess = default_runtime(model)
    for value in (np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 1, 1]]), np.zeros((3, 4)), np.ones((3, 4))):
        feeds = {"x": value.astype(dtype), "v": value[0].astype(dtype)}
        want = Session(g).run(outs, {x: feeds["x"], v: feeds["v"]})
        for k, (a, b) in enumerate(zip(sess.run(None, feeds), want, strict=True)):
            check_same(a, b, f"output {k}")


def test_save_and_load_keep_numpy_calls(tmp_path):
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (4, 3), name="x")
        outs = [*np.linalg.eigh(x.T @ x), *np.histogram(x, bins=[0.0, 2.0, 5.0, 12.0]), np.unique(x, axis=0),
                np.maximum.accumulate(x, axis=1), np.array2string(x, precision=2), np.nonzero(x > 3)[1]]
    path = tmp_path / "g.fg"
    g.save(path)
    loaded = G.load(path)
    value = np.arange(12.0).reshape(4, 3) % 5
    twins = [_tensor(loaded, t.name) for t in outs]
    want = Session(g).run(outs, {x: value})
    for mode in ("compiled", "dataflow"):
        got = Session(loaded, mode=mode).run(twins, {_tensor(loaded, "x:0"): value})
        for a, b, t, u in zip(got, want, outs, twins, strict=True):
            assert type(a) is type(b) and np.array_equal(np.asarray(a), np.asarray(b)), t.name
            assert (u.dtype, u.shape) == (t.dtype, t.shape)


def _tensor(graph, name):
    node, port = name.rsplit(":", 1)
    return next(n for n in graph.nodes if n.name == node).outputs[int(port)]


@pytest.mark.parametrize("function,method,message", [
    ("os.system", "", "'os.system' is not a public numpy function"),
    ("numpy.save", "", "np.save has effects"),
    ("numpy.random.rand", "", "np.random.rand has effects"),
    ("numpy._core.multiarray.copyto", "", "is not a public numpy function"),
    ("numpy.add", "at", "np.add.at is not a ufunc method NumpyCall calls"),
    ("numpy.testing", "", "is not a numpy function"),
])
def test_a_saved_graph_naming_anything_but_numpys_functions_does_not_load(tmp_path, function, method, message):
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3,), name="x")
        np.unique(x)
    path = tmp_path / "g.fg"
    g.save(path)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    doc = json.loads(members["graph.json"])
    node = next(r for r in doc["nodes"] if r["op"] == "NumpyCall")
    node["attrs"]["function"], node["attrs"]["method"] = function, method
    members["graph.json"] = json.dumps(doc).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    path.write_bytes(buf.getvalue())
    with pytest.raises(FormatError, match=re.escape(message)):
        G.load(path)
