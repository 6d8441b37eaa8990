"""`export_onnx(..., dynamic_axes=...)`: named dims that take any size, checked with onnxruntime at two shapes."""
import numpy as np
import pytest

import graph
import transpile
from graph.onnx import ExportError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(0)
# Variables: an exported model holds their values as initializers
W1, W2, WH = (graph.Variable(w) for w in (RNG.normal(size=(3, 5)), RNG.normal(size=(5, 2)),
                                          RNG.normal(size=(5, 5)) * 0.3))


def mlp(x):
    h = np.tanh(x @ W1)
    return h @ W2, np.sum(h)


def rnn(xs):
    h = np.zeros((xs.shape[1], 5))
    for x in xs:  # a graph loop over the time axis
        h = np.tanh(x @ W1 + h @ WH)
    return h


def _run(model, **feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_a_named_batch_axis_takes_any_size(tmp_path):
    path = tmp_path / "mlp.onnx"
    model = transpile.export_onnx(mlp, (np.zeros((4, 3)),), str(path),
                                  dynamic_axes={"x": {0: "batch"}, "output_0": {0: "batch"}})
    assert _dims(model.graph.input[0]) == ["batch", 3]
    assert _dims(model.graph.output[0]) == ["batch", 2] and _dims(model.graph.output[1]) == []
    loaded = onnx.load(str(path))
    for batch in (2, 7):
        x = RNG.normal(size=(batch, 3))
        got = _run(loaded, x=x)
        want = transpile.function(mlp)(x)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_a_loop_over_a_dynamic_time_axis_and_a_list_of_axes():
    model = transpile.export_onnx(rnn, (np.zeros((6, 2, 3)),), dynamic_axes={"xs": [0, 1]})
    assert _dims(model.graph.input[0]) == ["xs_0", "xs_1", 3]
    for steps, batch in ((5, 2), (9, 4)):
        xs = RNG.normal(size=(steps, batch, 3))
        np.testing.assert_allclose(_run(model, xs=xs)[0], transpile.function(rnn)(xs), rtol=1e-12)


def test_without_dynamic_axes_the_example_shape_is_fixed():
    model = transpile.export_onnx(mlp, (np.zeros((4, 3)),))
    assert _dims(model.graph.input[0]) == [4, 3]


def test_names_and_axes_that_cannot_be_dynamic_are_refused_saying_why():
    with pytest.raises(ValueError, match=r"dynamic_axes names 'y', which is not an input or output of the model "
                                         r"\(they are 'x', 'output_0', 'output_1'\)"):
        transpile.export_onnx(mlp, (np.zeros((4, 3)),), dynamic_axes={"y": [0]})
    with pytest.raises(ValueError, match=r"dynamic_axes\['x'\] names axis 2, but 'x' has 2 dims"):
        transpile.export_onnx(mlp, (np.zeros((4, 3)),), dynamic_axes={"x": [2]})
    # the Gram matrix is 3 x 3 whatever the batch
    with pytest.raises(ExportError, match=r"axis 0 of 'output_0' \(float64\[3,3\]\) is fixed at 3 .* it does not "
                                          r"follow the inputs' dynamic axes \(it is computed at .*test_export_dyn"):
        transpile.export_onnx(lambda x: x.T @ x, (np.zeros((4, 3)),), dynamic_axes={"x": [0], "output_0": [0]})


def test_the_graph_api_names_the_unknown_dims_of_its_placeholders():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (None, 3), name="x")
        y = np.tanh(x @ W1)
        fixed = graph.placeholder(np.float64, (4, 3), name="fixed")
        doubled = fixed * 2.0
    model = graph.onnx.export(g, [x], [y], dynamic_axes={"x": {0: "n"}, "output_0": {0: "n"}})
    assert _dims(model.graph.input[0]) == ["n", 3] and _dims(model.graph.output[0]) == ["n", 5]
    np.testing.assert_allclose(_run(model, x=np.ones((2, 3)))[0], np.tanh(np.ones((2, 3)) @ W1.value))
    with pytest.raises(ExportError, match=r"is fixed at 4 in the graph.*build the placeholder with None there"):
        graph.onnx.export(g, [fixed], [doubled], dynamic_axes={"fixed": [0]})
