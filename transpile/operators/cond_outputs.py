"""How each variable a graph cond assigns leaves it: the two branches' values compared, encoded as
cond outputs, and restored to the variable's form after the cond."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import graph
from graph import nest
from graph.errors import SourceLocation
from transpile.operators.carry import (
    DROPPED,
    AsLists,
    AsMaybe,
    AsPlaceholder,
    AsValue,
    CondMode,
    Dropped,
    WithGraphLists,
)
from transpile.operators.data_structures import array_of, as_tensor_list, learn_elements
from transpile.operators.encoding import (
    LIST_HANDLE,
    as_graph_lists,
    builder_paths,
    list_paths,
    replace_at,
    resized_paths,
    spec_of,
    stand_in,
    value_at,
    with_graph_list,
    zeros_like_spec,
)
from transpile.operators.facts import IfFacts, variable_label
from transpile.operators.leaves import (
    cast_leaves,
    describe,
    has_graph_values,
    is_composite,
    is_convertible,
    is_numeric,
    is_weak,
    leaf_dtype,
    same_leaves,
)
from transpile.operators.staging import StagingError, request_weak_numbers_first, warn_at_user_line
from transpile.operators.trace_state import trace_state
from transpile.operators.values import MaybeDefined, PartiallyDefined, Undefined, UndefinedReturn, one_sided_message


class Raised:
    """A branch that raised a Python exception while being traced (a `raise` statement)."""

    def __init__(self, exc: BaseException, location: SourceLocation | None):
        self.exc = exc
        self.location = location


def as_is(value) -> CondMode:
    """The mode under which a value is passed through a cond unchanged."""
    if isinstance(value, Undefined):
        return DROPPED
    if isinstance(value, MaybeDefined):
        return AsMaybe(tuple(leaf_dtype(x) if is_numeric(x) else None for x in nest.flatten(value.value)))
    if is_composite(value):
        return AsValue((graph.dtypes.variant,) * len(value._flat_tensors()))
    return AsValue(tuple(leaf_dtype(x) if is_numeric(x) else None for x in nest.flatten(value)))


def _as_is_keeping_lists(value) -> CondMode:
    """Like as_is, but lists built by graph loops leave the cond as lists."""
    paths = tuple(builder_paths(value)) if not isinstance(value, (MaybeDefined, Undefined)) else ()
    if not paths:
        return as_is(value)
    flat = nest.flatten(stand_in(value, paths))
    return AsLists(tuple(graph.dtypes.variant if x is LIST_HANDLE else (leaf_dtype(x) if is_numeric(x) else None)
                         for x in flat), paths)


@dataclass(frozen=True)
class CondPlan:
    """How one variable leaves a graph cond: its mode in each branch, and (both modes Dropped) the
    value it keeps."""

    true: CondMode
    false: CondMode
    kept: object = None


def plan(t, f, name, facts: IfFacts) -> CondPlan:
    """How one variable leaves a graph cond, from its values `t` and `f` at the end of the true and false
    branch (a Raised where the branch raised); `facts` are the `if`'s (for errors),
    for error messages."""
    if t is f or same_leaves(t, f):
        return CondPlan(DROPPED, DROPPED, t)
    if isinstance(t, Raised) or isinstance(f, Raised):
        return _plan_raised(t, f, name)
    if isinstance(t, Undefined) or isinstance(f, Undefined):
        return _plan_undefined(t, f, name, facts)
    _unify_arrays(t, f)
    if isinstance(t, MaybeDefined) or isinstance(f, MaybeDefined):
        tv = t.value if isinstance(t, MaybeDefined) else t
        fv = f.value if isinstance(f, MaybeDefined) else f
        mode = AsMaybe(tuple(_merged_dtypes(tv, fv, name, facts)))
        return CondPlan(mode, mode)
    resized = tuple(resized_paths(t, f))
    if resized:
        # planned with the GraphList on both sides; each branch's lists become GraphLists first
        for p in resized:
            t, f = with_graph_list(t, f, p.path)
        inner = plan(t, f, name, facts)
        if inner.true == DROPPED:  # (the same GraphList now on both sides: the branches still differ)
            inner = CondPlan(as_is(t), as_is(t))
        return CondPlan(WithGraphLists(inner.true, resized), WithGraphLists(inner.false, resized))
    paths = tuple(list_paths(t, f))
    if not paths and is_composite(t) and is_composite(f) and type(t) is type(f):
        mode = AsValue((graph.dtypes.variant,) * len(t._flat_tensors()))
        return CondPlan(mode, mode)
    frame = trace_state().innermost_loop()
    python_lists = any(isinstance(value_at(t, p.path), list) and isinstance(value_at(f, p.path), list)
                       for p in paths)
    if frame is not None and frame.promotable and (python_lists or _grown_list(t, f) or _grown_list(f, t)):
        frame.promote = True  # the list can grow in a graph loop instead: this iteration is abandoned
        return CondPlan(DROPPED, DROPPED, t)
    if paths:
        # lists a graph loop built (TensorArrays) facing Python lists or other built lists: all become
        # TensorArrays inside their branch, merged into one list each
        mode = AsLists(tuple(_merged_dtypes(stand_in(t, paths), stand_in(f, paths), name, facts)), paths)
        return CondPlan(mode, mode)
    mode = AsValue(tuple(_merged_dtypes(t, f, name, facts)))
    return CondPlan(mode, mode)


def _plan_raised(t, f, name) -> CondPlan:
    """A variable of a cond whose branch raised (or both did)."""
    t_raised, f_raised = isinstance(t, Raised), isinstance(f, Raised)
    other = f if t_raised else t
    if (t_raised and f_raised) or isinstance(other, Undefined) or not has_graph_values(other) \
            and not is_convertible(other):
        return CondPlan(DROPPED, DROPPED, Undefined(name) if t_raised and f_raised else other)
    inner = other.value if isinstance(other, MaybeDefined) else other
    placeholder, mode = AsPlaceholder(spec_of(inner)), _as_is_keeping_lists(other)
    return CondPlan(placeholder, mode) if t_raised else CondPlan(mode, placeholder)


def _plan_undefined(t, f, name, facts) -> CondPlan:
    """A variable one branch (or both) leaves undefined."""
    t_undef, f_undef = isinstance(t, Undefined), isinstance(f, Undefined)
    if t_undef and f_undef:
        return CondPlan(DROPPED, DROPPED, f if isinstance(f, PartiallyDefined) and not isinstance(t, PartiallyDefined)
                        else t)
    u, d, defined = (t, f, "false") if t_undef else (f, t, "true")
    if type(u) is UndefinedReturn and not isinstance(d, MaybeDefined):
        placeholder, mode = AsPlaceholder(spec_of(d)), _as_is_keeping_lists(d)
        return CondPlan(placeholder, mode) if t_undef else CondPlan(mode, placeholder)
    if isinstance(d, PartiallyDefined):
        return CondPlan(DROPPED, DROPPED, d)
    like = d.value if isinstance(d, MaybeDefined) else d
    message = one_sided_message(name, defined, facts)
    conditions = trace_state().conditions
    return CondPlan(DROPPED, DROPPED, PartiallyDefined(name, like, message, conditions[-1] if conditions else None))


def _unify_arrays(t, f) -> None:
    """Arrays that meet in a cond output teach each other their element dtype and shape (an array
    nothing was written to yet learns them from the other, so that either works at run time)."""
    a, b = array_of(t), array_of(f)
    if a is not None and b is not None:
        for dst, src in ((a, b), (b, a)):
            if dst._spec.dtype is None and src._spec.dtype is not None:
                learn_elements(dst._spec, src._spec.dtype, src._spec.element_shape, src._spec.name)
        return
    if isinstance(t, MaybeDefined) or isinstance(f, MaybeDefined):
        _unify_arrays(t.value if isinstance(t, MaybeDefined) else t, f.value if isinstance(f, MaybeDefined) else f)
    elif isinstance(t, dict) and isinstance(f, dict):
        for k in set(t) & set(f):
            _unify_arrays(t[k], f[k])
    elif isinstance(t, (list, tuple)) and isinstance(f, (list, tuple)) and len(t) == len(f):
        for x, y in zip(t, f):
            _unify_arrays(x, y)


def _branch_where(facts: IfFacts):
    lt, lf = facts.true.line, facts.false.line
    return (f" in the true branch (line {lt})" if lt else " in the true branch",
            f" in the false branch (line {lf})" if lf else " in the false branch")


def _merged_dtypes(t, f, name, facts) -> list:
    """One dtype per leaf for a variable whose branches give it values `t` and `f` (an error where
    their structures or kinds differ)."""
    label = variable_label(name, facts.return_vars)
    in_t, in_f = _branch_where(facts)
    if_at = f" of the `if`{facts.at}" if facts.at else ""
    if not nest.same_structure(t, f) or is_composite(t) != is_composite(f):
        if _grown_list(t, f) or _grown_list(f, t):
            raise StagingError(f"{label} is appended to in one branch only{if_at} ({describe(t)}{in_t}, "
                               f"{describe(f)}{in_f}); under a graph-tensor condition that needs a graph loop, "
                               "where the list becomes a TensorArray: put it in a loop over a tensor (or over "
                               "`range(n)` with a tensor n)")
        if label == "the return value" and (t is None or f is None):
            raise StagingError(f"the function returns {describe(t)}{in_t} but {describe(f)}{in_f}{if_at}; "
                               "a function that ends without `return` (or with a bare `return`) returns None, and "
                               "under a graph-tensor condition every path must return the same structure: "
                               "return a value on every path")
        raise StagingError(f"{label} is {describe(t)}{in_t} but {describe(f)}{in_f}{if_at}; under a graph-"
                           "tensor condition both branches must give it the same structure")
    out = []
    for a, b in zip(nest.flatten(t), nest.flatten(f), strict=True):
        if a is LIST_HANDLE and b is LIST_HANDLE:
            out.append(graph.dtypes.variant)
            continue
        if a is b and not is_numeric(a):
            out.append(None)
            continue
        if not (is_numeric(a) and is_numeric(b)) or not is_convertible(a) or not is_convertible(b):
            raise StagingError(
                f"{label} is {describe(a)}{in_t} and {describe(b)}{in_f}{if_at}; under a graph-tensor "
                "condition only tensors and numbers (also in tuples, lists and dicts) can differ between "
                "the branches")
        da, db = leaf_dtype(a), leaf_dtype(b)
        out.append(_join_dtypes(da, db, is_weak(a), is_weak(b), label, in_t, in_f, if_at))
    return out


def _grown_list(short, long) -> bool:
    return isinstance(short, list) and isinstance(long, list) and len(long) > len(short) and \
        all(a is b for a, b in zip(short, long))


def _join_dtypes(da, db, weak_a, weak_b, label, in_a, in_b, where):
    """One dtype for two branch values. A Python number takes the other side's dtype (numpy's
    weak-scalar rule); two arrays of different dtypes are promoted with a warning."""
    if da == db:
        return da
    if da is graph.dtypes.variant or db is graph.dtypes.variant:
        raise StagingError(f"{label} is a TensorArray{in_a if da is graph.dtypes.variant else in_b} but not "
                           f"in the other branch{where}")
    if weak_a and not weak_b and (db.kind in "fc" or (da.kind in "bi" and db.kind in "iu")):
        return db
    if weak_b and not weak_a and (da.kind in "fc" or (db.kind in "bi" and da.kind in "iu")):
        return da
    joined = np.result_type(da, db)
    if weak_a and weak_b:
        return joined
    if request_weak_numbers_first():
        return joined  # a side may be a Python number an enclosing loop carries at its default dtype: it is built again
    if da.kind == "b" or db.kind == "b":
        raise StagingError(f"{label} has dtype {da}{in_a} and {db}{in_b}{where}; cast one of them so that "
                           "both agree")
    warn_at_user_line(f"{label} has dtype {da}{in_a} and {db}{in_b}{where}; both become {joined}")
    return joined


def encode(value, mode: CondMode, name: str):
    """A branch's value of one variable, as the graph cond returns it (None: not returned)."""
    match mode:
        case Dropped():
            return None
        case AsPlaceholder(spec=spec):
            return zeros_like_spec(spec, variable_label(name))
        case WithGraphLists(inner=inner, lists=lists):
            return encode(as_graph_lists(value, lists, name), inner, name)
        case AsLists(dtypes=dtypes, lists=lists):
            for p in lists:
                value = replace_at(value, p.path, lambda v, p=p: as_tensor_list(v, p.dtype, p.element_shape, name))
            return cast_leaves(value, list(dtypes))
        case AsMaybe(dtypes=dtypes):
            if isinstance(value, MaybeDefined):
                inner, flag, where = value.value, value.defined, value.where
            else:
                inner, flag, where = value, graph.constant(True), ""
            return MaybeDefined(name, cast_leaves(inner, list(dtypes)), flag, where)
    if is_composite(value):
        return value
    return cast_leaves(value, list(mode.dtypes))


def restore(merged, original):
    """Puts the non-numeric leaves (passed as None) back into a merged value."""
    if merged is None or isinstance(original, Undefined):
        return merged
    if isinstance(merged, MaybeDefined) and isinstance(original, MaybeDefined):
        merged.value = restore(merged.value, original.value)
        merged.where = original.where or merged.where
        return merged
    if isinstance(merged, MaybeDefined):
        return merged
    if not isinstance(merged, (list, tuple, dict)):
        return original if merged is None else merged
    leaves = [o if m is None else m for m, o in zip(nest.flatten(merged), nest.flatten(original), strict=True)]
    return nest.pack_as(merged, leaves)
