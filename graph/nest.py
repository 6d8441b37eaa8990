"""Nested structures of tensors (tuples, lists, dicts, namedtuples, composites).

`flatten` lists the leaves in a deterministic order (dict keys sorted);
`pack_as` rebuilds a structure from leaves. A composite value (e.g. TensorArray)
is a leaf-group: it defines `_flat_tensors()` and `_with_flat_tensors(tensors)`.
"""
from __future__ import annotations

from typing import Any, Callable


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_composite(x) -> bool:
    return hasattr(x, "_flat_tensors") and hasattr(x, "_with_flat_tensors")


def flatten(structure) -> list:
    out: list = []
    _flatten(structure, out)
    return out


def _flatten(s, out: list) -> None:
    if _is_composite(s):
        out.extend(s._flat_tensors())
    elif isinstance(s, dict):
        for k in sorted(s, key=_sort_key):
            _flatten(s[k], out)
    elif isinstance(s, (list, tuple)):
        for x in s:
            _flatten(x, out)
    else:
        out.append(s)


def _sort_key(k):
    return (type(k).__name__, k) if not isinstance(k, (int, float, str)) else ("", str(k))


def pack_as(structure, leaves: list):
    it = iter(leaves)
    result = _pack(structure, it)
    rest = list(it)
    if rest:
        raise ValueError(f"pack_as: {len(rest)} leaves left over")
    return result


def _pack(s, it):
    if _is_composite(s):
        n = len(s._flat_tensors())
        return s._with_flat_tensors([next(it) for _ in range(n)])
    if isinstance(s, dict):
        vals = {k: _pack(s[k], it) for k in sorted(s, key=_sort_key)}
        return type(s)((k, vals[k]) for k in s) if type(s) is not dict else {k: vals[k] for k in s}
    if _is_namedtuple(s):
        return type(s)(*[_pack(x, it) for x in s])
    if isinstance(s, (list, tuple)):
        return type(s)(_pack(x, it) for x in s)
    return next(it)


def flatten_up_to(shallow, structure) -> list:
    """The parts of `structure` at the leaves of `shallow`, in `flatten` order (a composite leaf counts
    as many times as it has flat tensors): a structure of per-leaf values, such as a shape per loop
    variable, where a value may itself be a tuple. ValueError where the structures part."""
    out: list = []
    _up_to(shallow, structure, "", out)
    return out


def _up_to(s, v, path: str, out: list) -> None:
    if _is_composite(s):
        out.extend([v] * len(s._flat_tensors()))
    elif isinstance(s, dict):
        if not isinstance(v, dict) or set(v) != set(s):
            raise ValueError(f"at {path or 'the top'}: expected a dict with keys {sorted(s, key=_sort_key)}, got {v!r}")
        for k in sorted(s, key=_sort_key):
            _up_to(s[k], v[k], f"{path}[{k!r}]", out)
    elif isinstance(s, (list, tuple)):
        if not isinstance(v, (list, tuple)) or len(v) != len(s):
            raise ValueError(f"at {path or 'the top'}: expected {len(s)} items, got {v!r}")
        for i, (x, y) in enumerate(zip(s, v)):
            _up_to(x, y, f"{path}[{i}]", out)
    else:
        out.append(v)


def map_structure(fn: Callable, structure, *more):
    flat = flatten(structure)
    others = [flatten(m) for m in more]
    for o in others:
        if len(o) != len(flat):
            raise ValueError("structures differ in their number of leaves")
    return pack_as(structure, [fn(*xs) for xs in zip(flat, *others)])


def paths(structure, prefix: str = "") -> list[str]:
    """A readable path for every leaf, in `flatten` order: `[0]`, `['h']`, `.x`."""
    out: list[str] = []
    _paths(structure, prefix, out)
    return out


def _paths(s, p, out):
    if _is_composite(s):
        out.extend(p if i == 0 else f"{p}<{i}>" for i in range(len(s._flat_tensors())))
    elif isinstance(s, dict):
        for k in sorted(s, key=_sort_key):
            _paths(s[k], f"{p}[{k!r}]", out)
    elif _is_namedtuple(s):
        for f, x in zip(s._fields, s):
            _paths(x, f"{p}.{f}", out)
    elif isinstance(s, (list, tuple)):
        for i, x in enumerate(s):
            _paths(x, f"{p}[{i}]", out)
    else:
        out.append(p)


def structure_description(s) -> str:
    """A compact description of a structure's shape, for error messages."""
    if _is_composite(s):
        return type(s).__name__
    if isinstance(s, dict):
        return "{" + ", ".join(f"{k!r}: {structure_description(v)}" for k, v in s.items()) + "}"
    if isinstance(s, list):
        return "[" + ", ".join(structure_description(x) for x in s) + "]"
    if isinstance(s, tuple):
        inner = ", ".join(structure_description(x) for x in s)
        return f"({inner}{',' if len(s) == 1 else ''})"
    return "None" if s is None else "value"


def same_structure(a, b) -> bool:
    return _signature(a) == _signature(b)


def first_difference(a, b, path: str = "") -> tuple[str, str, str] | None:
    """Where structures `a` and `b` first differ: (path as in `paths`, description in a, in b); None if alike."""
    if same_structure(a, b):
        return None
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        for k in sorted(a, key=_sort_key):
            found = first_difference(a[k], b[k], f"{path}[{k!r}]")
            if found is not None:
                return found
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) \
            and not _is_composite(a) and not _is_composite(b) and _is_namedtuple(a) == _is_namedtuple(b) \
            and (not _is_namedtuple(a) or type(a) is type(b)):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}.{a._fields[i]}" if _is_namedtuple(a) else f"{path}[{i}]")
            if found is not None:
                return found
    return path, structure_description(a), structure_description(b)


def _signature(s) -> Any:
    if _is_composite(s):
        return (type(s).__name__, len(s._flat_tensors()))
    if isinstance(s, dict):
        return ("dict", tuple((k, _signature(s[k])) for k in sorted(s, key=_sort_key)))
    if isinstance(s, (list, tuple)):
        return (type(s).__name__ if _is_namedtuple(s) else "seq", tuple(_signature(x) for x in s))
    return "None" if s is None else "leaf"
