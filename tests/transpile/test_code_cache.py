"""Conversions are kept per code object by identity, and only while the code object lives."""
import gc
import textwrap

import numpy as np
import pytest

import transpile
from transpile.code_cache import CodeMap
from transpile.operators import calls


def _compile(source: str, filename: str):
    """Function `f` of `source` as if written in file `filename` (its source registered with linecache)."""
    import linecache
    source = textwrap.dedent(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope: dict = {"np": np}
    exec(compile(source, filename, "exec"), scope)
    return scope["f"]


SOURCE = """
def f(x):
    if x > 0:
        y = x * 2.0
    return y
"""


def test_equal_functions_in_two_files_name_their_own_file():
    f1, f2 = _compile(SOURCE, "/first/module.py"), _compile(SOURCE, "/second/module.py")
    assert f1.__code__ == f2.__code__  # equal by content: a dict keyed by them would share one entry
    for fn, filename in ((f1, "/first/module.py"), (f2, "/second/module.py")):
        with pytest.raises(Exception) as info:
            transpile.function(fn)(np.float64(1.0))
        assert f"{filename}:3" in str(info.value)


def test_a_conversion_goes_with_its_code_object():
    f = _compile(SOURCE.replace("2.0", "3.0"), "/third/module.py")
    transpile.to_code(f)
    before = len(calls._conversions)
    del f
    gc.collect()
    assert len(calls._conversions) == before - 1


def test_code_map_is_by_identity():
    m: CodeMap[int] = CodeMap()
    a, b = compile("x = 1", "a.py", "exec"), compile("x = 1", "b.py", "exec")
    m[a] = 1
    assert a in m and b not in m and m.get(b, 7) == 7 and m.get(a) == 1
    m[b] = 2
    assert (m.get(a), m.get(b)) == (1, 2)
