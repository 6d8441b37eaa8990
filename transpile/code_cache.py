"""Facts kept per code object: by identity, and only while the code object lives.

A dict keyed by code objects gets both wrong. Code objects compare equal by content, so two
functions written the same in two files shared one conversion, and its errors named the first
file; and a dict holds its keys, so every function a notebook redefined stayed converted for the
life of the process. AutoGraph's `pyct/cache.py` keys its conversions the same way as here.
"""
from __future__ import annotations

import threading
import types
import weakref
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class _Entry(Generic[V]):
    code: weakref.ref
    value: V


class CodeMap(Generic[V]):
    """A mapping from code objects, by identity, to values; an entry goes when its code object is freed."""

    def __init__(self):
        self._entries: dict[int, _Entry[V]] = {}
        self._lock = threading.RLock()  # (a callback may run inside __setitem__, on a collection it causes)

    def get(self, code: types.CodeType, default=None):
        entry = self._entries.get(id(code))
        # (an id is reused only after its object is freed, and then the entry is gone: the check is for a
        # lookup that races the callback)
        return entry.value if entry is not None and entry.code() is code else default

    def __contains__(self, code: types.CodeType) -> bool:
        entry = self._entries.get(id(code))
        return entry is not None and entry.code() is code

    def __setitem__(self, code: types.CodeType, value: V) -> None:
        key = id(code)
        with self._lock:
            self._entries[key] = _Entry(weakref.ref(code, lambda _ref, key=key: self._forget(key, _ref)), value)

    def __len__(self) -> int:
        return len(self._entries)

    def _forget(self, key: int, ref: weakref.ref) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.code is ref:
                del self._entries[key]


__all__ = ["CodeMap"]
