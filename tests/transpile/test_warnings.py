"""Warnings from converted code point at the user's file and line, like its errors."""
import inspect
import warnings

import numpy as np

import transpile


def branches_of_two_float_dtypes(x):
    if x > 0:  # <- warning
        y = x.astype(np.float32)
    else:
        y = x
    return y


def long_python_loop_over_a_tensor_value(x):
    s = x
    for i in range(1001):  # <- warning
        s = s + x
    return s


def _marked(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if "# <- warning" in text)


def test_warnings_name_the_users_line():
    for fn, text in ((branches_of_two_float_dtypes, "both become float64"),
                     (long_python_loop_over_a_tensor_value, "unrolls into the graph")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            transpile.function(fn)(np.float64(1.0))
        ours = [w for w in caught if text in str(w.message)]
        assert ours, [str(w.message) for w in caught]
        assert {(w.filename, w.lineno) for w in ours} == {(__file__, _marked(fn))}
