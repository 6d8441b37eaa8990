"""numpy functions and array methods on tensors == on arrays, for every numeric dtype:
same values, same dtype (numpy's promotion and integer rules), same shape."""
import warnings

import numpy as np
import pytest

from tests.graph.op_checks import check

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]

FUNCTIONS = {
    "round": lambda a: np.round(a), "round(1)": lambda a: np.round(a, 1), "round(-1)": lambda a: np.round(a, -1),
    "around": lambda a: np.around(a), "method round": lambda a: a.round(), "method round(-1)": lambda a: a.round(-1),
    "sum": lambda a: np.sum(a, axis=1), "mean": lambda a: np.mean(a), "prod": lambda a: np.prod(a, axis=0),
    "max": lambda a: np.max(a, axis=1, keepdims=True), "argmin": lambda a: np.argmin(a, axis=0),
    "clip": lambda a: np.clip(a, 1, 3), "where": lambda a: np.where(a > 1, a, a * 0),
    "concatenate": lambda a: np.concatenate([a, a], axis=1), "stack": lambda a: np.stack([a, a], axis=-1),
    "transpose": lambda a: np.transpose(a), "take": lambda a: np.take(a, [2, 0], axis=1),
    "count_nonzero": lambda a: np.count_nonzero(a, axis=0), "outer": lambda a: np.outer(a[0], a[1]),
    "zeros_like": lambda a: np.zeros_like(a), "full_like": lambda a: np.full_like(a, 2),
    "var": lambda a: np.var(a, axis=1), "astype": lambda a: a.astype(np.int32), "T @": lambda a: a.T @ a,
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_numpy_function_matches_numpy_for_every_dtype(name, dtype):
    fn = FUNCTIONS[name]
    a = (np.array([[15, 4, 25], [2, 7, 1]]) % (2 if dtype is np.bool_ else 100)).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(a)
        except TypeError:
            pytest.skip("numpy itself rejects this dtype")
        check(fn, a, modes=("static", "dynamic"))
