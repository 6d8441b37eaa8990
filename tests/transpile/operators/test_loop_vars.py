"""loop_vars.py: the mode each variable enters a graph loop with, the loop variable it becomes, and what
the body's value of it means (`body_output`: the next value, or a change of mode)."""
import numpy as np
import pytest

import graph
from graph.node import Tensor
from tests.transpile.operators.conftest import run
from transpile.operators.arrays import MutableArray
from transpile.operators.carry import (
    CARRIED,
    FIXED,
    PROBE,
    AddedKey,
    Appended,
    Carried,
    FirstAssigned,
    LeafSpec,
    ReturnValue,
    Spec,
)
from transpile.operators.data_structures import TensorList
from transpile.operators.encoding import spec_of
from transpile.operators.leaves import leaf_dtype, mark_weak_type
from transpile.operators.loop_vars import (
    BodyOutput,
    BodyWhere,
    body_output,
    dtype_changed,
    initial_mode,
    initial_value,
    item_label,
    joined_dtypes,
    joined_spec,
    probe_of_a_stand_in,
    probed_value,
    weak_probes,
)
from transpile.operators.staging import StagingError
from transpile.operators.trace_state import tracing
from transpile.operators.values import MaybeDefined, PartiallyDefined, Undefined, UndefinedReturn

WHERE = BodyWhere("variable 'v'", 12)
F32, F64, I64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)


def test_initial_modes(g):
    assert initial_mode(1.5) == CARRIED and initial_mode([1, (2.0, 3)]) == CARRIED
    assert initial_mode(graph.constant(1.0)) == CARRIED
    assert initial_mode(MaybeDefined("m", 1, graph.constant(True), "")) == CARRIED
    assert initial_mode(None) == FIXED and initial_mode("text") == CARRIED and initial_mode(object()) == FIXED
    assert initial_mode(Undefined("u")) == FIXED and initial_mode(UndefinedReturn()) == FIXED
    assert initial_mode(MutableArray(np.zeros(2))) == FIXED   # its writes are carried as the arrays written


def test_body_where_names_the_line():
    assert WHERE.at == " (loop body at line 12)" and BodyWhere("x", None).at == ""
    assert item_label("d", ("s", 0)) == "d['s'][0]"


def test_an_unchanged_value_needs_no_change(g):
    t = graph.constant(np.float32(1))
    assert body_output(t, t, PROBE, "v", WHERE) == BodyOutput()
    assert body_output("s", "s", FIXED, "v", WHERE) == BodyOutput()


def test_a_probed_python_number_learns_the_dtype_the_body_gives_it(g):
    out = body_output(0, graph.constant(np.float32(2)) + 0, PROBE, "v", WHERE)
    assert out.change == Carried(dtypes=(F32,))
    assert body_output(0, 0.125, PROBE, "v", WHERE).change == Carried(dtypes=(F64,))
    with pytest.raises(StagingError, match=r"variable 'v' becomes list \[value\] in the graph loop body \(loop body at line 12\)"):
        body_output(0, [1], PROBE, "v", WHERE)


def test_a_fixed_list_that_changes_is_appended(g):
    assert body_output([], [graph.constant(1.0)], FIXED, "v", WHERE).change == Appended()


def test_a_fixed_object_that_changes_is_an_error(g):
    with pytest.raises(StagingError, match="is a object before the graph loop and changes"):
        body_output(object(), graph.constant(1.0), FIXED, "v", WHERE)


def test_a_str_that_becomes_a_graph_value_is_carried(g):
    assert body_output("a", graph.constant(1.0), FIXED, "v", WHERE).change == CARRIED


def test_a_variable_first_assigned_in_the_body(g):
    t = graph.constant(np.float32(1))
    assert body_output(Undefined("v"), t, FIXED, "v", WHERE).change == FirstAssigned(spec_of(t))
    assert body_output(Undefined("v"), Undefined("v"), FIXED, "v", WHERE) == BodyOutput()
    change = body_output(UndefinedReturn(), 1, FIXED, "v", WHERE).change
    assert change == ReturnValue(spec_of(1), (True,))
    with pytest.raises(StagingError, match="first assigned a object in a graph loop"):
        body_output(Undefined("v"), object(), FIXED, "v", WHERE)


def test_a_dict_key_the_body_adds_is_a_change(g):
    v_in = {"a": graph.constant(1.0)}
    v_out = {"a": v_in["a"], "b": graph.constant(np.float32(2))}
    out = body_output(v_in, v_out, CARRIED, "d", WHERE)
    assert out.change == Carried(added=(AddedKey(("b",), spec_of(v_out["b"])),))


def test_a_carried_value_with_another_dtype_is_the_next_value(g):
    before = graph.constant(np.float32(1))
    after = graph.cast(before, np.float64)
    out = body_output(before, after, CARRIED, "v", WHERE)
    assert out.change is None and out.value is after
    assert dtype_changed(before, after) and not dtype_changed(before, before + 1)


def test_a_python_number_takes_the_loop_variable_s_dtype(g):
    before = graph.constant(np.float32(1))
    out = body_output(before, 3, CARRIED, "v", WHERE)
    assert isinstance(out.value, Tensor) and out.value.dtype == F32
    assert run(g, out.value) == 3


def test_a_carried_variable_must_keep_its_structure(g):
    t = graph.constant(1.0)
    with pytest.raises(StagingError, match="must keep its structure"):
        body_output((t, t), t, CARRIED, "v", WHERE)
    with pytest.raises(StagingError, match="is undefined at the end of the graph loop body"):
        body_output(t, Undefined("v"), CARRIED, "v", WHERE)
    with pytest.raises(StagingError, match="may be undefined"):
        body_output(t, MaybeDefined("v", t, graph.constant(True), ""), CARRIED, "v", WHERE)


def test_a_partially_defined_value_at_the_end_of_the_body_raises_its_error(g):
    t = graph.constant(1.0)
    with pytest.raises(NameError, match="assigned in one branch"):
        body_output(t, PartiallyDefined("v", t, "assigned in one branch"), CARRIED, "v", WHERE)


def test_an_appended_list_becomes_its_tensor_list(g):
    start = initial_value([np.float32(1)], Appended(), "xs", "the loop")
    assert isinstance(start, TensorList) and start.array.dtype == F32
    grown = start.append(np.float32(2))
    assert body_output(start, grown, Appended(), "xs", WHERE).value is grown
    with pytest.raises(StagingError, match="must stay a list"):
        body_output(start, 3, Appended(), "xs", WHERE)


def test_initial_values_of_carried_and_first_assigned_variables(g):
    value = initial_value((1, 2.0), Carried(dtypes=(F32, F32)), "v", "the loop")
    assert [t.dtype for t in value] == [F32, F32]
    own = initial_value({"a": 1}, CARRIED, "v", "the loop")
    assert own["a"].dtype == I64
    maybe = initial_value(None, FirstAssigned(spec_of(np.float32(0))), "v", "the loop")
    assert isinstance(maybe, MaybeDefined) and maybe.where == "the loop" and not run(g, maybe.defined)
    added = initial_value({"a": 1.0}, Carried(added=(AddedKey(("b",), spec_of(np.int32(0))),)), "d", "the loop")
    assert isinstance(added["b"], MaybeDefined) and added["b"].name == "d['b']"


def test_weak_probes_are_the_carried_python_numbers(g):
    t = graph.constant(1.0)
    assert weak_probes((1, 2.0, t, np.float32(1), True), (CARRIED, CARRIED, CARRIED, CARRIED, FIXED)) == \
        {0: PROBE, 1: PROBE}


def test_a_probe_of_a_tensor_that_stands_for_a_number(g):
    with tracing():
        v0 = graph.placeholder(np.int64, ())
        mark_weak_type(v0, int)
        assert probed_value(v0) == 1 and type(probed_value(v0)) is int
        assert probed_value(2.5) == 2.5
        assert probe_of_a_stand_in(v0, 1, 1) == Carried(dtypes=(I64,))
        assert probe_of_a_stand_in(v0, 1, 0.5) == Carried(dtypes=(F64,))
        assert probe_of_a_stand_in(v0, 1, graph.constant(np.float32(2))) == Carried(dtypes=(F32,))


def test_joined_dtypes_and_specs(g):
    before = (graph.constant(np.int32(1)), "s")
    assert joined_dtypes(before, (graph.constant(np.float32(1)), "s")) == [F64, leaf_dtype("s")]
    spec = Spec(np.int64(0), (LeafSpec(I64, ()),))
    assert joined_spec(spec, graph.constant(np.float32(1))).leaves == (LeafSpec(F64, ()),)
    weak = joined_spec(spec, graph.constant(np.float32(1)), weak=(True,))   # a Python int takes the float32
    assert weak.leaves == (LeafSpec(F32, ()),) and np.asarray(weak.structure).dtype == F32
