"""The other references to a numpy array that converted code is about to replace with a MutableArray.

A numpy array not made by a numpy constructor in converted code (`a = np.arange(3) * 2`, a result of
arithmetic) is a plain numpy array. When a graph value is written into it (`a[i] = t`, `a += t`), or
any value inside a graph branch or loop body, converted code gives the variable written a new
MutableArray holding a copy (arrays.set_array_item, arrays.write_into): a numpy array cannot hold a
graph value. Python changes the one array in place, so every other name, container, attribute or
caller that refers to it would see the write; the copy's writes reach none of them. `other_references`
finds those references, so that the write can be refused with an error naming them instead of giving
them the old contents silently.

What counts as the variable written: its name in the innermost frame of converted code and in the frames
of the functions generated for that function's graph branches and loop bodies (which receive and return
it under the same name), up to the frame of the user's function itself. Any other name bound to the
array in a frame of converted code (an alias, the caller's variable a function was passed), a global, an
object's attribute, a closure cell, or an item of a list, tuple or dict held by one of those, is another
reference. References held by this library's own frames and containers are not.
"""
from __future__ import annotations

import dis
import gc
import re
import sys
import types

import numpy as np

from graph.ops import numpy_api
from transpile import conversion
from transpile.operators.staging import StagingError

# the functions the converters generate for a branch or loop body (transpile/converters); the namer
# may append a number to keep the name free
_GENERATED = re.compile(r"(if_true|if_false|loop_body|loop_test)(_\d+)?")


def _converted_frames() -> list:
    """The frames of converted code on this thread's stack, innermost first."""
    frames = []
    f = sys._getframe(1)
    while f is not None:
        if conversion.is_converted_code(f.f_code):
            frames.append(f)
        f = f.f_back
    return frames


def _names_in(frame, array) -> list[str]:
    return [n for n, v in frame.f_locals.items() if v is array]


def _written_by_statement(frame, names: list[str]) -> str | None:
    """Which of `names` (all bound to the array) the statement the frame is running writes: converted
    code stores the result of `ag.set_item(b, ...)` or of `b += ...` back into `b`, the first name the
    bytecode stores after the instruction running now."""
    for ins in dis.get_instructions(frame.f_code):
        if ins.offset > frame.f_lasti and ins.opname.startswith("STORE_"):
            return ins.argval if ins.argval in names else None
    return None


def variables_naming(array) -> list[str]:
    """The variables of converted code on this thread's stack bound to `array` (without the walk of its
    other referrers `other_references` makes, which costs a pass over every object alive)."""
    return list(dict.fromkeys(n for f in _converted_frames() for n in _names_in(f, array)))


def other_references(array) -> tuple[str | None, list[str]]:
    """(the name of the variable being written, or None, descriptions of the other references to
    `array` that Python code can see it through)."""
    frames = _converted_frames()
    if not frames:
        return None, []
    own = 0   # frames[:own + 1]: the writing function's frame and those of its generated functions
    while own + 1 < len(frames) and _GENERATED.fullmatch(frames[own].f_code.co_name):
        own += 1
    names = _names_in(frames[0], array)
    written = names[0] if len(names) == 1 else _written_by_statement(frames[0], names)
    local_dicts = {id(f.f_locals): f for f in frames}
    others = _holders(array, frames, own, written, local_dicts)
    for k, f in enumerate(frames):   # views of it (slices, reshapes) in variables of converted code
        where = "" if k <= own else f" in {f.f_code.co_qualname}"
        for n, v in f.f_locals.items():
            if isinstance(v, np.ndarray) and v is not array and _is_view_of(v, array):
                others.append(f"viewed by variable '{n}'{where} (a slice, reshape or transpose of it)")
    if isinstance(array.base, np.ndarray):   # it is itself a view of an array converted code holds
        held = _holders(array.base, frames, own, None, local_dicts)
        if held:
            others.append("a view of the array that is " + "; ".join(held))
    return written, list(dict.fromkeys(others))


def _is_view_of(v: np.ndarray, array: np.ndarray) -> bool:
    base = v.base
    while isinstance(base, np.ndarray):
        if base is array:
            return True
        base = base.base
    return False


def _holders(obj, frames, own: int, written: str | None, local_dicts: dict) -> list[str]:
    """The references to `obj` that Python code can see it through: variables of converted code (but
    `written` in frames[:own + 1]), globals, attributes, closure cells and items of containers they hold."""
    out: list[str] = []
    for k, f in enumerate(frames):
        where = "" if k <= own else f" in {f.f_code.co_qualname} ({f.f_code.co_filename}:{f.f_lineno})"
        for n in _names_in(f, obj):
            if n != written or k > own:
                out.append(f"variable '{n}'{where}")
    for ref in gc.get_referrers(obj):
        if isinstance(ref, types.FrameType) or id(ref) in local_dicts:
            continue
        described = _describe_holder(ref, obj, local_dicts)
        if described is not None:
            out.append(described)
    return out


def _describe_holder(ref, array, frame_locals: dict) -> str | None:
    """What `ref`, which refers to `array`, is to the user: a global, an attribute, a closure variable,
    or a container held by one of those or by a variable of converted code; None for other objects."""
    if isinstance(ref, types.CellType):
        return "a variable of an enclosing function (a closure cell)"
    if isinstance(ref, dict):
        keys = [k for k, v in ref.items() if v is array]
        owner = _dict_owner(ref)
        if owner is not None:
            return owner(keys)
    if isinstance(ref, (list, tuple, dict)):
        name = _container_name(ref, frame_locals)
        if name is not None:
            return f"an item of {name}"
        return None
    return _attribute_holder(ref, array)


_OWN_PACKAGES = ("transpile", "graph", "exec", "grad", "dist")


def _attribute_holder(obj, array) -> str | None:
    """`obj`'s attributes that hold `array`, for a user's object whose attributes Python keeps without a
    materialized `__dict__` (3.11's inline values: the collector then shows the object itself, not its
    dict, as the array's referrer); None for this library's own objects and for other referrers."""
    if isinstance(obj, (type, types.ModuleType)) or type(obj).__module__.split(".")[0] in _OWN_PACKAGES:
        return None
    attrs = getattr(obj, "__dict__", None)
    keys = [k for k, v in attrs.items() if v is array] if isinstance(attrs, dict) else []
    return _attributes(keys, obj) if keys else None


def _attributes(keys, owner) -> str:
    return ", ".join(f"attribute '{k}'" for k in keys) + f" of a {type(owner).__name__} object"


def _dict_owner(d: dict):
    """A function describing keys of `d` if `d` is a module's globals or an object's attributes."""
    module = sys.modules.get(d.get("__name__")) if isinstance(d.get("__name__"), str) else None
    if module is not None and getattr(module, "__dict__", None) is d:
        return lambda keys: ", ".join(f"global '{k}'" for k in keys) + f" of module {module.__name__}"
    for owner in gc.get_referrers(d):
        if getattr(owner, "__dict__", None) is d and not isinstance(owner, (type, types.ModuleType)):
            return lambda keys: _attributes(keys, owner)
    return None


def _container_name(container, frame_locals: dict) -> str | None:
    """How the user reaches `container`: a variable of converted code, a global or an attribute."""
    for holder in gc.get_referrers(container):
        frame = frame_locals.get(id(holder))
        if frame is not None:
            for n, v in holder.items():
                if v is container:
                    return f"'{n}'"
        if isinstance(holder, dict):
            keys = [k for k, v in holder.items() if v is container]
            owner = _dict_owner(holder) if keys else None
            if owner is not None:
                return owner(keys)
    return None


def refuse_if_shared(array, what: str) -> None:
    """Raises a StagingError if `array`, a numpy array converted code is about to replace with a
    MutableArray copy for the write `what`, is referred to other than by the variable written."""
    written, others = other_references(array)
    if not others:
        return
    name = f"'{written}'" if written else "the array written"
    var = written or "a"
    raise StagingError(
        f"{what.replace('{name}', var)} writes a graph value (or, inside a graph branch or loop, any value) into "
        f"numpy array {name}, which is also {'; '.join(others)}. numpy changes the one array for all of them, "
        f"but a numpy array cannot hold a graph value: converted code gives {name} a new array, which the others "
        f"would not see. Make the array with a numpy constructor (`{var} = np.array(...)`, `np.copy(...)`, "
        "`np.zeros(...)`) before the other references to it are taken, so that converted code follows its "
        f"writes everywhere, or write into a copy (`{var} = {var}.copy()`) if the others should keep the old "
        "contents")


_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/", np.floor_divide: "//",
              np.remainder: "%", np.power: "**", np.matmul: "@", np.bitwise_and: "&", np.bitwise_or: "|",
              np.bitwise_xor: "^", np.left_shift: "<<", np.right_shift: ">>"}


def _refuse_in_place_rebind(array, ufunc) -> None:
    """`a += t` on a numpy array (graph.ops.numpy_api rebinds `a` to the result)."""
    op = _OPERATORS.get(ufunc)
    refuse_if_shared(array, f"`{{name}} {op}= ...`" if op else f"np.{ufunc.__name__}(..., out={{name}})")


numpy_api.IN_PLACE_REBIND_HOOKS.append(_refuse_in_place_rebind)
