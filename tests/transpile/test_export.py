"""Saving and exporting converted functions: `fn.save` -> `transpile.load` and `transpile.export_onnx` give
the function's results, for random programs with nested loops (zero-trip ones too), break, continue, return and
lists appended to in loops."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grad
import graph
import transpile
from graph import nest
from graph.saving import Output
from tests.transpile.programs import define, forget, programs

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from graph.onnx import ExportError  # noqa: E402

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                      HealthCheck.function_scoped_fixture])
_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_arrays = st.lists(_floats, min_size=3, max_size=3).map(np.array)


def _runtime(model):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _outputs(result, structure) -> list:
    """The parts of `result` that the signature's structure says are outputs, in output order (a list
    the function built is one output: its items stacked)."""
    picked: list = []

    def walk(value, mark):
        if isinstance(mark, Output):
            picked.append((mark.index, np.asarray(value) if mark.as_list is not None else value))
        elif isinstance(mark, dict):
            for k in mark:
                walk(value[k], mark[k])
        elif isinstance(mark, (list, tuple)):
            for v, m in zip(value, mark, strict=True):
                walk(v, m)
    walk(result, structure)
    return [v for _, v in sorted(picked, key=lambda p: p[0])]


def _same(got, want):
    assert type(got) is type(want) or isinstance(want, (np.ndarray, np.generic)), (got, want)
    for a, b in zip(nest.flatten(got), nest.flatten(want), strict=True):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=25, **_SETTINGS)
@given(programs(max_depth=3, max_statements=16), st.integers(0, 3), _floats,
       st.lists(st.tuples(st.integers(0, 3), _floats, _arrays), min_size=2, max_size=2))
def test_saved_and_exported_random_programs_compute_what_the_function_does(tmp_path, source, n, x, others):
    fn, filename = define(source)
    try:
        compiled = transpile.function(fn)
        example = (n, x, np.array([0.5, -1.0, 2.0]))
        compiled.save(tmp_path / "program.fg", *example)
        loaded = transpile.load(tmp_path / "program.fg")
        model = transpile.export_onnx(compiled, example)
        onnx.checker.check_model(model, full_check=True)
        assert [i.name for i in model.graph.input] == ["n", "x", "arr"] == list(loaded.input_names)
        sess = _runtime(model)
        for nv, xv, av in [example, (0, x, example[2]), *others]:  # n = 0: loops over range(n) run zero times
            want = compiled(nv, xv, av)
            _same(loaded(nv, xv, av), want)
            got = sess.run(None, {"n": np.asarray(nv), "x": np.asarray(xv), "arr": av})
            for a, b in zip(got, _outputs(want, loaded.signature.structure), strict=True):
                assert a.dtype == np.asarray(b).dtype
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"{source}\ninputs {nv} {xv} {av}")
    finally:
        forget(filename)


def test_prints_are_kept_by_a_saved_function_and_dropped_from_onnx_only_when_asked(tmp_path, capsys):
    @transpile.function
    def count_down(n):
        while n > 0:
            print("n is", n)  # the line the export error names
            n -= 1
        return n * 2

    count_down.save(tmp_path / "count.fg", 3)
    loaded = transpile.load(tmp_path / "count.fg")
    assert loaded(2) == 0
    assert capsys.readouterr().out == "n is 2\nn is 1\n"
    with pytest.raises(ExportError, match=rf"{re.escape(__file__)}:\d+: cannot export Print node"):
        transpile.export_onnx(count_down, (3,))
    model = transpile.export_onnx(count_down, (3,), drop=("Print",))
    assert _runtime(model).run(None, {"n": np.asarray(5)})[0] == 0


class _Policy:
    def __init__(self):
        self.w = graph.Variable(np.array([[1.0, -1.0], [0.5, 2.0]], np.float32), name="policy/w")

    @transpile.function
    def act(self, obs):
        return np.argmax(obs @ self.w, axis=-1)


def test_methods_save_and_export_without_self_as_an_input(tmp_path):
    policy = _Policy()
    obs = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    policy.act.save(tmp_path / "act.fg", obs)
    model = transpile.export_onnx(policy.act, (obs,), tmp_path / "act.onnx")
    loaded = transpile.load(tmp_path / "act.fg")
    assert loaded.input_names == ("obs",) and [i.name for i in model.graph.input] == ["obs"]
    want = policy.act(obs)
    np.testing.assert_array_equal(loaded(obs), want)
    np.testing.assert_array_equal(loaded(obs=obs), want)
    np.testing.assert_array_equal(_runtime(onnx.load(tmp_path / "act.onnx")).run(None, {"obs": obs})[0], want)


def test_loaded_functions_check_their_arguments(tmp_path):
    @transpile.function
    def scale(x, k):
        return {"scaled": x * k, "label": "scaled"}

    scale.save(tmp_path / "scale.fg", np.ones(2), 3.0)
    loaded = transpile.load(tmp_path / "scale.fg")
    out = loaded(np.array([1.0, 2.0]), k=2)
    assert out["label"] == "scaled"
    np.testing.assert_array_equal(out["scaled"], [2.0, 4.0])
    with pytest.raises(TypeError, match="missing k"):
        loaded(np.ones(2))
    with pytest.raises(TypeError, match="takes x, k"):
        loaded(np.ones(2), 1.0, 2.0)
    g = graph.Graph()
    with g.as_default():
        graph.placeholder(np.float32, [2], name="x")
    g.save(tmp_path / "plain.fg")
    with pytest.raises(ValueError, match="no signature"):
        transpile.load(tmp_path / "plain.fg")


def test_a_function_returning_a_variable_cannot_be_exported():
    v = graph.Variable(np.zeros(2, np.float32), name="state")

    @transpile.function
    def bump(x):
        v.assign_add(x)
        return v

    with pytest.raises(TypeError, match="returns Variable 'state'"):
        transpile.export_onnx(bump, (np.ones(2, np.float32),))


def test_a_saved_training_step_trains_the_loaded_variables_as_the_original_does(tmp_path):
    """A loop, its gradient loop (values saved on stacks), Adam's slots: the loaded step updates its own
    Variables exactly as the original updates the originals, whatever the trip count."""
    w = graph.Variable(np.array([0.5, -0.3]), name="w")
    optimizer = grad.Adam(0.1)

    @transpile.function
    def step(xs, n):
        h = np.zeros(2)
        for t in range(n):
            h = np.tanh(h * w + xs[t])
        loss = np.sum(h * h) + np.sum(w * w)
        optimizer.apply(grad.gradients(loss, [w]), [w])
        return loss

    xs = np.linspace(-1.0, 1.0, 10).reshape(5, 2)
    step.save(tmp_path / "step.fg", xs, 3)
    loaded = transpile.load(tmp_path / "step.fg")
    for n in (3, 0, 5, 2):
        assert loaded(xs, n) == step(xs, n)
    originals = list(step.get_graph(xs, 3).variables.values())
    copies = list(loaded.graph.variables.values())
    assert len(copies) == len(originals) >= 3  # w and Adam's moments
    for original, copy in zip(originals, copies, strict=True):
        assert copy is not original
        np.testing.assert_array_equal(copy.value, original.value)
