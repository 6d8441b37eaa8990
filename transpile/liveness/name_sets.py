"""Sets of names as bit masks over one function's names, for dataflow over long functions.

Reaching definitions keeps, for every statement, the set of names defined on the
paths to it. With frozensets each transfer, join and comparison costs time in the
number of names, so a function of n statements and n names took time in n**2; as
bits of a Python int these are a few machine words per 30 names, done in C. The
annotations are `NameSet`s, which read like frozensets of `QN` and are made in
constant time from a mask.
"""
from __future__ import annotations

from collections.abc import Set

from transpile.liveness.qual_names import QN


class NameIndex:
    """Gives each name of one analysis a bit."""

    __slots__ = ("names", "bits")

    def __init__(self):
        self.names: list[QN] = []
        self.bits: dict[QN, int] = {}

    def mask(self, names) -> int:
        m = 0
        for q in names:
            b = self.bits.get(q)
            if b is None:
                b = self.bits[q] = len(self.names)
                self.names.append(q)
            m |= 1 << b
        return m

    def set(self, mask: int) -> "NameSet":
        return NameSet(self, mask)


class NameSet(Set):
    """An immutable set of QN: a mask over a NameIndex."""

    __slots__ = ("_index", "_mask")

    def __init__(self, index: NameIndex, mask: int):
        self._index, self._mask = index, mask

    def __contains__(self, q) -> bool:
        b = self._index.bits.get(q)
        return b is not None and (self._mask >> b) & 1 == 1

    def __iter__(self):
        names, m, b = self._index.names, self._mask, 0
        while m:
            if m & 1:
                yield names[b]
            m >>= 1
            b += 1

    def __len__(self) -> int:
        return self._mask.bit_count()

    def __hash__(self) -> int:
        return self._hash()

    def __repr__(self) -> str:
        return "{" + ", ".join(sorted(map(str, self))) + "}"

    @classmethod
    def _from_iterable(cls, it):
        return frozenset(it)  # set algebra with other sets gives a plain frozenset
