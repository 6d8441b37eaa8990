"""calls.py: `ag.call` converts user functions once per code object, calls builtins' versions and
library functions as they are, and stops a recursion that never ends while tracing."""
import numpy as np
import pytest

import graph
from graph.node import Tensor
from transpile import conversion
from transpile.operators.calls import ag_namespace, call, conversion_of, converted_function
from transpile.operators.staging import StagingError


def _double(x):
    return x * 2


def _forever(x):
    return _forever(x)


def test_user_functions_are_converted_once(g):
    converted = converted_function(_double)
    assert converted is converted_function(_double)
    assert conversion.is_converted_code(converted.__code__) and not conversion.is_converted_code(_double.__code__)
    assert conversion_of(_double) is conversion_of(_double)
    assert call(_double, 21) == 42


def test_builtins_and_library_functions(g):
    assert isinstance(call(len, graph.placeholder(np.float32, (None,))), Tensor)
    assert call(np.sum, [1, 2]) == 3
    assert call("{}-{}".format, 1, 2) == "1-2"


def test_a_recursion_that_never_ends_is_refused(g):
    with pytest.raises(StagingError, match="calls itself more than 48 levels deep"):
        call(_forever, graph.constant(1.0))


def test_the_namespace_has_the_builtins_under_their_own_names():
    for name in ("len", "range", "print", "if_stmt", "while_stmt", "for_stmt", "ld", "call", "LoopFacts"):
        assert hasattr(ag_namespace, name)
    assert ag_namespace.len.__name__ == "len_"
