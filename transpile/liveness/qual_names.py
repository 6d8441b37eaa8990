"""Qualified names: `a`, `a.b`, `a[0]`, `a[i]` as hashable values with their support sets."""
from __future__ import annotations

from dataclasses import dataclass

import gast


@dataclass(frozen=True, slots=True)
class QN:
    """A name an analysis tracks. `parent` is None for a simple name.

    `attr` names an attribute of `parent` (`a.b`); `key` is the source text of a
    subscript (`a[i]`), `key_names` the simple names that subscript reads.
    """

    name: str
    parent: "QN | None" = None
    attr: str | None = None
    key: str | None = None
    key_names: frozenset = frozenset()

    @staticmethod
    def simple(name: str) -> "QN":
        return QN(name)

    @property
    def is_composite(self) -> bool:
        return self.parent is not None

    @property
    def root(self) -> "QN":
        q = self
        while q.parent is not None:
            q = q.parent
        return q

    @property
    def support(self) -> frozenset:
        """The simple names whose values this name depends on."""
        if self.parent is None:
            return frozenset({self})
        return self.parent.support | self.key_names

    def has_prefix(self, other: "QN") -> bool:
        q = self
        while q is not None:
            if q == other:
                return True
            q = q.parent
        return False

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


def from_node(node) -> QN | None:
    """The QN an expression stands for, or None (calls, literals, ...)."""
    if isinstance(node, gast.Name):
        return QN(node.id)
    if isinstance(node, gast.Attribute):
        parent = from_node(node.value)
        if parent is None:
            return None
        return QN(f"{parent.name}.{node.attr}", parent, attr=node.attr)
    if isinstance(node, gast.Subscript):
        parent = from_node(node.value)
        if parent is None:
            return None
        key = _key_text(node.slice)
        if key is None:
            return None
        names = frozenset(QN(n.id) for n in gast.walk(node.slice) if isinstance(n, gast.Name))
        return QN(f"{parent.name}[{key}]", parent, key=key, key_names=names)
    return None


def _key_text(node) -> str | None:
    if isinstance(node, gast.Constant):
        return repr(node.value)
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and isinstance(node.operand, gast.Constant):
        return f"-{node.operand.value!r}"
    q = from_node(node)
    return q.name if q is not None else None
