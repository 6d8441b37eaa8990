"""Every kind of Python callable can be compiled and converted: functions, lambdas, bound methods,
class and static methods, functools.partial objects and objects with a Python __call__; anything else
(builtins, classes) is refused when decorated, with a message that says what is accepted."""
import functools

import numpy as np
import pytest

import transpile
from tests.transpile.helpers import assert_converted_equivalent


def grow(x, k):
    while x < 10:
        x = x * k
    return x


class Model:
    k = 3.0

    def method(self, x):
        while x < 10:
            x = x * self.k
        return x

    @staticmethod
    def static(x):
        if x > 0:
            return x
        return -x

    @classmethod
    def klass(cls, x):
        if x > 0:
            return x * cls.k
        return x

    def __call__(self, x):
        return self.method(x) if x > 0 else x


CALLABLES = {
    "function": grow, "lambda": lambda x, k: x * k if x > 0 else x, "partial": functools.partial(grow, k=2.0),
    "bound method": Model().method, "static method": Model.static, "class method": Model.klass,
    "callable object": Model(),
}


@pytest.mark.parametrize("name", list(CALLABLES))
def test_callable_compiles_and_converts(name):
    fn = CALLABLES[name]
    args = [(1.5, 2.0), (20.0, 2.0)] if name in ("function", "lambda") else [(1.5,), (20.0,)]
    if name in ("static method", "class method", "callable object"):
        args.append((-1.0,))
    assert_converted_equivalent(fn, *args)
    for a in args:
        assert transpile.convert(fn)(*a) == fn(*a)
    assert "ag." in transpile.to_code(fn)


@pytest.mark.parametrize("thing", [len, np.sum, Model, 3], ids=["builtin", "numpy function", "class", "int"])
def test_what_cannot_be_converted_is_refused_when_decorated(thing):
    with pytest.raises(TypeError, match="transpile converts Python functions, lambdas, methods"):
        transpile.function(thing)
