"""Values as JSON: the tagged encoding that the saved-graph format uses for every attribute and record.

JSON's own null, booleans, numbers, strings and arrays (Python lists) stand for
themselves; everything else is an object with one `$tag` key (docs/export.md,
"Values"). Arrays and numpy scalars go to the archive's array table, referred to
by index; graph objects (nodes, tensors, contexts, Variables, TensorArray specs)
are referred to by their index in the file's own tables, which the caller maps.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from graph import dtypes as _dt
from graph.errors import SourceLocation
from graph.ops.indexing import Dyn, IndexSpec, Slice
from graph.ops.strings import STRING


class FormatError(ValueError):
    """A saved graph file that cannot be read: not one, corrupt, or from a newer format version."""


def encode_dtype(dtype) -> str:
    return "variant" if dtype is _dt.variant else np.dtype(dtype).name


def decode_dtype(name: str):
    if name == "variant":
        return _dt.variant
    if name == "object":  # text (graph/ops/strings.py)
        return STRING
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise FormatError(f"unknown dtype {name!r}") from None
    if dtype.kind not in "biufc":
        raise FormatError(f"dtype {name!r} is not one a graph holds")
    return dtype


def encode_shape(shape) -> list | None:
    return None if shape is None else list(shape)


def decode_shape(shape) -> tuple | None:
    if shape is None:
        return None
    if not isinstance(shape, list) or not all(d is None or (isinstance(d, int) and d >= 0) for d in shape):
        raise FormatError(f"malformed shape {shape!r}")
    return tuple(shape)


class Encoder:
    """Encodes values; `refs(value)` gives the `{"$tag": index}` of a graph object, or None for others."""

    def __init__(self, refs: Callable[[Any], dict | None]):
        self._refs = refs
        self.arrays: list[np.ndarray] = []

    def array(self, value: np.ndarray) -> int:
        if value.dtype == object or value.dtype.kind not in "biufc":
            raise TypeError(f"an array of dtype {value.dtype} cannot be saved (numbers and bools only)")
        self.arrays.append(value)
        return len(self.arrays) - 1

    def encode(self, value, where: str):
        """`value` as JSON; `where` names it in errors ("attribute 'axis' of node Sum_3")."""
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and not isinstance(value, np.integer):
            return value
        if isinstance(value, float) and not isinstance(value, np.floating):
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, list):
            return [self.encode(v, where) for v in value]
        ref = self._refs(value)
        if ref is not None:
            return ref
        encode = _ENCODERS.get(type(value))
        if encode is not None:
            return encode(self, value, where)
        if isinstance(value, np.dtype) or value is _dt.variant:
            return {"$dtype": encode_dtype(value)}
        if isinstance(value, np.ndarray) and value.dtype == object and all(isinstance(v, str) for v in value.flat):
            return {"$text": [list(value.shape), [str(v) for v in value.flat]]}
        if isinstance(value, np.ndarray):
            return {"$array": self.array(value)}
        if isinstance(value, np.generic):
            return {"$scalar": self.array(np.asarray(value))}
        if isinstance(value, tuple):  # namedtuples too: they are saved as plain tuples
            return {"$tuple": [self.encode(v, where) for v in value]}
        if isinstance(value, dict):
            return {"$dict": [[self.encode(k, where), self.encode(v, where)] for k, v in value.items()]}
        raise TypeError(f"{where} holds a {type(value).__module__}.{type(value).__qualname__} ({value!r:.80}), "
                        "which the saved-graph format cannot store")


_ENCODERS: dict[type, Callable] = {
    type(Ellipsis): lambda enc, v, where: {"$ellipsis": None},
    complex: lambda enc, v, where: {"$complex": [enc.encode(v.real, where), enc.encode(v.imag, where)]},
    slice: lambda enc, v, where: {"$slice": [enc.encode(x, where) for x in (v.start, v.stop, v.step)]},
    IndexSpec: lambda enc, v, where: {"$index": [enc.encode(x, where) for x in v.items]},
    Slice: lambda enc, v, where: {"$index_slice": [enc.encode(x, where) for x in (v.start, v.stop, v.step)]},
    Dyn: lambda enc, v, where: {"$dyn": [v.pos, v.kind]},
    SourceLocation: lambda enc, v, where: {"$source": [v.filename, v.lineno, v.function]},
}


class Decoder:
    """Decodes what `Encoder` wrote; `deref(tag, payload)` gives the graph object of a reference tag."""

    def __init__(self, array: Callable[[int], np.ndarray], deref: Callable[[str, Any], Any]):
        self._array = array
        self._deref = deref

    def decode(self, value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict) or len(value) != 1:
            raise FormatError(f"malformed value {value!r:.80}")
        (tag, payload), = value.items()
        decode = _DECODERS.get(tag)
        if decode is None:
            return self._deref(tag, payload)
        try:
            return decode(self, payload)
        except (TypeError, ValueError, IndexError, KeyError) as e:
            if isinstance(e, FormatError):
                raise
            raise FormatError(f"malformed {tag} value {payload!r:.80}: {e}") from None


def _float(dec, payload):
    if payload not in ("nan", "inf", "-inf"):
        raise FormatError(f"malformed float {payload!r}")
    return float(payload)


def _text(dec, payload):
    shape, items = payload
    if not all(isinstance(v, str) for v in items):
        raise FormatError("a text array holds a value that is not a str")
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(tuple(shape))


def _scalar(dec, k):
    arr = dec._array(k)
    if arr.ndim != 0:
        raise FormatError(f"array {k} is not a scalar")
    return arr[()]


_DECODERS: dict[str, Callable] = {
    "$float": _float,
    "$tuple": lambda dec, items: tuple(dec.decode(v) for v in items),
    "$dict": lambda dec, items: {_hashable(dec.decode(k)): dec.decode(v) for k, v in items},
    "$dtype": lambda dec, name: decode_dtype(name),
    "$array": lambda dec, k: dec._array(k),
    "$scalar": _scalar,
    "$text": _text,
    "$ellipsis": lambda dec, _: Ellipsis,
    "$complex": lambda dec, parts: complex(*(dec.decode(p) for p in parts)),
    "$slice": lambda dec, parts: slice(*(dec.decode(p) for p in parts)),
    "$index": lambda dec, items: IndexSpec(tuple(dec.decode(v) for v in items)),
    "$index_slice": lambda dec, parts: Slice(*(dec.decode(p) for p in parts)),
    "$dyn": lambda dec, parts: Dyn(int(parts[0]), str(parts[1])),
    "$source": lambda dec, parts: SourceLocation(str(parts[0]), int(parts[1]), str(parts[2])),
}


def _hashable(key):
    if isinstance(key, list):
        raise FormatError("a list cannot be a dict key")
    return key
