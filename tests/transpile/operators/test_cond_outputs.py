"""cond_outputs.py: `plan` gives each variable of a graph cond its mode per branch (a CondPlan) from the
two branches' values; `encode` and `restore` carry it through the cond."""
import warnings

import numpy as np
import pytest

import graph
import transpile
from graph.node import Tensor
from transpile.operators.carry import DROPPED, AsMaybe, AsPlaceholder, AsValue
from transpile.operators.cond_outputs import CondPlan, Raised, as_is, encode, plan, restore
from transpile.operators.encoding import spec_of
from transpile.operators.facts import BranchFacts, IfFacts
from transpile.operators.staging import StagingError
from transpile.operators.values import (
    ConditionallyDefinedError,
    MaybeDefined,
    PartiallyDefined,
    Undefined,
    UndefinedReturn,
)

FACTS = IfFacts(3, BranchFacts(4, {"y": 4}), BranchFacts(6), filename="prog.py")
F32, F64, I32, I64 = (np.dtype(d) for d in (np.float32, np.float64, np.int32, np.int64))


def _raised():
    return Raised(ValueError("no"), None)


def test_one_object_in_both_branches_is_dropped_and_kept(g):
    t = graph.constant(np.float32(1))
    assert plan(t, t, "x", FACTS) == CondPlan(DROPPED, DROPPED, t)
    items = [t, 2]
    p = plan(items, [t, 2], "x", FACTS)
    assert p.true == DROPPED and p.kept is items


def test_two_tensors_leave_as_values_of_their_dtype(g):
    p = plan(graph.constant(np.float32(1)), graph.constant(np.float32(2)), "x", FACTS)
    assert p == CondPlan(AsValue((F32,)), AsValue((F32,)))


def test_a_python_number_takes_the_tensor_s_dtype(g):
    p = plan(1, graph.constant(np.float32(2)), "x", FACTS)
    assert p.true == p.false == AsValue((F32,))
    p = plan(graph.constant(np.int32(2)), 5, "x", FACTS)
    assert p.true == AsValue((I32,))
    assert plan(1, 2.5, "x", FACTS).true == AsValue((F64,))


def test_two_arrays_of_different_dtypes_are_promoted_with_a_warning(g):
    with pytest.warns(UserWarning, match="variable 'x' has dtype float32 in the true branch .line 4. and float64"):
        p = plan(graph.constant(np.float32(1)), graph.constant(np.float64(2)), "x", FACTS)
    assert p.true == AsValue((F64,))


def test_bool_and_number_must_agree(g):
    with pytest.raises(StagingError, match="cast one of them"):
        plan(graph.constant(True), graph.constant(np.int32(2)), "x", FACTS)


def test_structures_must_agree(g):
    t = graph.constant(np.float32(1))
    with pytest.raises(StagingError, match=r"variable 'x' is .* in the true branch \(line 4\) but .* in the false "
                                           r"branch \(line 6\) of the `if` at prog.py:3"):
        plan((t, t), t, "x", FACTS)


def test_a_variable_defined_in_one_branch_only_is_partially_defined(g):
    t = graph.constant(np.float32(1))
    p = plan(t, Undefined("y"), "y", FACTS)
    assert p.true == p.false == DROPPED
    assert isinstance(p.kept, PartiallyDefined) and p.kept.like is t
    error = p.kept.error()
    assert isinstance(error, ConditionallyDefinedError)
    assert "assigned in the true branch of the `if` at prog.py:3 (line 4) but not in the false branch (line 6)" \
        in str(error)


def test_an_undefined_return_value_leaves_as_a_placeholder(g):
    t = graph.constant(np.float32(1))
    p = plan(UndefinedReturn(), t, "r", FACTS)
    assert p.true == AsPlaceholder(spec_of(t)) and p.false == AsValue((F32,))


def test_a_branch_that_raised_is_a_placeholder_of_the_other_s_value(g):
    t = graph.constant(np.float32(1))
    p = plan(_raised(), t, "x", FACTS)
    assert p.true == AsPlaceholder(spec_of(t)) and p.false == AsValue((F32,))
    p = plan(t, _raised(), "x", FACTS)
    assert p.true == AsValue((F32,)) and p.false == AsPlaceholder(spec_of(t))


def test_both_branches_raised_leaves_the_variable_undefined(g):
    p = plan(_raised(), _raised(), "x", FACTS)
    assert p.true == p.false == DROPPED and isinstance(p.kept, Undefined) and p.kept.name == "x"


def test_a_branch_that_raised_beside_a_python_object_keeps_it(g):
    keep = object()
    assert plan(_raised(), keep, "x", FACTS) == CondPlan(DROPPED, DROPPED, keep)


def test_a_maybe_defined_value_leaves_as_maybe(g):
    maybe = MaybeDefined("m", graph.constant(np.float32(1)), graph.constant(False), "a loop")
    p = plan(maybe, graph.constant(np.float32(3)), "m", FACTS)
    assert p.true == p.false == AsMaybe((F32,))
    assert as_is(maybe) == AsMaybe((F32,))


def test_as_is(g):
    assert as_is(graph.constant(np.int32(1))) == AsValue((I32,))
    assert as_is(Undefined("x")) == DROPPED
    mode = as_is((1, object()))
    assert mode.dtypes[0] == I64 and mode.dtypes[1] is None


def test_encode_casts_and_restore_puts_back_non_numeric_leaves(g):
    label = object()
    mode = AsValue((F32, None))
    encoded = encode((1, label), mode, "x")
    assert isinstance(encoded[0], Tensor) and encoded[0].dtype == F32 and encoded[1] is None
    restored = restore(encoded, (1, label))
    assert restored[0] is encoded[0] and restored[1] is label
    assert encode(5, DROPPED, "x") is None


def test_encode_as_a_placeholder_and_as_maybe(g):
    t = graph.constant(np.float32(1))
    out = encode(None, AsPlaceholder(spec_of(t)), "x")
    assert isinstance(out, Tensor) and out.dtype == F32
    maybe = encode(t, AsMaybe((F64,)), "x")
    assert isinstance(maybe, MaybeDefined) and maybe.value.dtype == F64


def test_a_str_variable_beside_a_branch_that_raises():
    def f(x):
        s = "a"
        if x > 0:
            raise ValueError("no")
        else:
            s = "b"
        return s

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert transpile.function(f)(-1.0) == "b"
