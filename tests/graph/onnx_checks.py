"""Helpers for ONNX export tests: run a model as users do, compare its outputs with this library's.

`default_runtime` builds the onnxruntime session with default SessionOptions: the
graph optimizations stay at onnxruntime's default (ORT_ENABLE_ALL), so a fusion
that miscomputes an exported pattern fails the tests as it would fail a user.
"""
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")


def default_runtime(model):
    """An onnxruntime CPU session of `model` with default options (only its log level lowered)."""
    options = ort.SessionOptions()
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # onnxruntime's optimizer warnings are not failures
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def check_same(got, want, what=""):
    """Same dtype and shape; integers and bools equal, floats within rounding (the runtimes' transcendental
    functions and summation orders differ in the last bits)."""
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: {got.shape} != {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
