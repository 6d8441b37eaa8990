"""A namer that hands out readable names which do not clash with the user's."""
from __future__ import annotations

import gast


class Namer:
    """Unique names for generated functions and variables within one conversion.

    The first request for `loop_body` gets `loop_body`, the next `loop_body_2`,
    and so on; names the user's code already uses are skipped.
    """

    def __init__(self, taken=()):
        self.taken: set[str] = set(taken)

    @classmethod
    def for_function(cls, fn_node, extra=()) -> "Namer":
        used = set(extra)
        for n in gast.walk(fn_node):
            if isinstance(n, gast.Name):
                used.add(n.id)
            elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                used.add(n.name)
            elif isinstance(n, (gast.Global, gast.Nonlocal)):
                used.update(n.names)
            elif isinstance(n, gast.alias):
                used.add(n.asname or n.name.split(".")[0])
        return cls(used)

    def new(self, base: str) -> str:
        if base not in self.taken:
            self.taken.add(base)
            return base
        k = 2
        while f"{base}_{k}" in self.taken:
            k += 1
        name = f"{base}_{k}"
        self.taken.add(name)
        return name
