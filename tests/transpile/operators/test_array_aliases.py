"""array_aliases.py: a numpy array that converted code must replace by a MutableArray copy is refused
when other references (names, attributes, containers) would keep seeing the old contents."""
import numpy as np
import pytest

import transpile
from transpile.operators.array_aliases import other_references, refuse_if_shared
from transpile.operators.staging import StagingError


@transpile.do_not_convert
def _library_array():
    return np.arange(3) * 2.0


class _Box:
    pass


def test_outside_converted_code_there_are_no_other_references():
    a = np.zeros(2)
    b = a  # noqa: F841 (a reference, but not from converted code)
    assert other_references(a) == (None, [])
    refuse_if_shared(a, "`{name}[...] = ...`")


def _write_with_an_alias(x):
    a = _library_array()
    b = a
    a[1] = x
    return b


def _write_with_an_attribute(x):
    a = _library_array()
    box = _Box()
    box.held = a
    a[1] = x
    return a


def _write_with_a_list(x):
    a = _library_array()
    items = [a]
    a[1] = x
    return items


def _write_alone(x):
    a = _library_array()
    a[1] = x
    return a


@pytest.mark.parametrize("fn, named", [(_write_with_an_alias, "variable 'b'"),
                                       (_write_with_an_attribute, "attribute 'held' of a _Box object"),
                                       (_write_with_a_list, "an item of 'items'")])
def test_a_write_into_a_shared_array_names_the_other_references(fn, named):
    with pytest.raises(StagingError, match=f"into numpy array 'a', which is also {named}"):
        transpile.function(fn)(1.5)


def test_an_array_only_its_variable_refers_to_is_written():
    np.testing.assert_array_equal(transpile.function(_write_alone)(1.5), [0.0, 1.5, 4.0])
