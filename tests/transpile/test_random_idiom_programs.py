"""Random programs written with everyday idioms (tests/transpile/programs.py, `idioms=True`): arrays
allocated, filled by index and rebound in loop bodies, second names and views, lists resized in loops,
swaps under tensor conditions, float32 arrays beside Python numbers, closures and local classes, calls
that raise inside try, a variable assigned in one branch of an `if` on a Python int argument. Converted
== plain Python, values and dtypes, in both execution modes; exported, onnxruntime == converted."""
import os
import tempfile

import numpy as np
import onnxruntime as ort
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import transpile
from graph.onnx import ExportError
from tests.transpile.idioms import assert_like_python, refused_as_shared_on_some_paths
from tests.transpile.programs import define, forget, programs
from tests.transpile.test_export import _outputs
from transpile.operators.staging import StagingError

_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=120, **_SETTINGS)
@given(programs(max_depth=3, max_statements=16, idioms=True), st.integers(0, 3), _floats,
       st.lists(_floats, min_size=3, max_size=3))
def test_converted_idiom_program_matches_python(source, n, x, arr):
    fn, filename = define(source)
    try:
        assert_like_python(fn, (n, x, np.array(arr)), (0, x, np.array(arr)), python_numbers_may_differ=True)
    except StagingError as e:
        if not refused_as_shared_on_some_paths(e):
            raise
        event("refused: an array shared on some paths only")
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: {n, x, arr}") from None
    finally:
        forget(filename)


@settings(max_examples=30, **_SETTINGS)
@given(programs(max_depth=3, max_statements=16, idioms=True), st.integers(0, 3), _floats,
       st.lists(_floats, min_size=3, max_size=3))
def test_exported_idiom_program_computes_in_onnxruntime_what_it_computes_here(source, n, x, arr):
    """The same programs exported: onnxruntime (default options) gives what the function gives, or the
    export is refused with an ExportError naming what it cannot express (a print, a Python-side effect)."""
    fn, filename = define(source)
    try:
        function = transpile.function(fn)
        example = (n, x, np.array(arr))
        try:
            model = transpile.export_onnx(function, example)
        except ExportError as e:
            assert str(e), source
            event("refused: " + type(e).__name__)
            return
        event("exported")
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        with tempfile.TemporaryDirectory() as folder:  # the saved signature says which results are outputs
            function.save(os.path.join(folder, "program.fg"), *example)
            structure = transpile.load(os.path.join(folder, "program.fg")).signature.structure
        inputs = [i.name for i in model.graph.input]
        for args in (example, (0, x, np.array(arr)), (n + 1, -x, np.array(arr[::-1]))):
            given_args = dict(zip(("n", "x", "arr"), args, strict=True))
            if any(k not in inputs and given_args[k] != example[j] for j, k in enumerate(("n", "x"))):
                continue  # an argument the trace took as static (a Python int deciding a refused construct)
            want = function(*args)
            got = session.run(None, {k: np.asarray(given_args[k]) for k in inputs})
            flat = [np.asarray(v) for v in _outputs(want, structure)]
            assert len(got) == len(flat), source
            for a, b in zip(got, flat, strict=True):
                assert a.dtype == b.dtype, (source, args, a.dtype, b.dtype)
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"{source}\ninputs {args}")
    finally:
        forget(filename)
