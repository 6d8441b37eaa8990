"""Random programs that keep numpy state between calls: a global array, an object with array and number
attributes, and a helper method, written in place and rebound by the program (in straight-line code,
in graph branches and in graph loops) and by the code that calls it between calls; and arrays made by
arithmetic rather than a numpy constructor, written with graph values or in graph branches, with or
without another name referring to them."""
from __future__ import annotations

import itertools
import linecache

from hypothesis import strategies as st

HEADER = '''import numpy as np


class Box:
    def __init__(self):
        self.w = np.array([0.5, -1.0, 2.0])
        self.rate = 0.5

    def nudge(self, v):
        self.w = self.w * 0.5 + v


G = np.array([1.0, 2.0, -1.0])
box = Box()


def between_calls(k):
    G[k % 3] += 1.0
    box.w = box.w + 0.25
    box.rate = box.rate * 0.9 if k % 2 else box.rate


def state():
    return G.copy(), box.w.copy(), box.rate


def program(x, n):
    t = x * 1.0
'''

_counter = itertools.count()


class _Gen:
    """Statements over the local array `t` (float64[3]) and the state (G, box.w, box.rate, box.nudge)."""

    def __init__(self, draw, max_depth: int, max_statements: int):
        self.draw, self.max_depth, self.budget = draw, max_depth, max_statements
        self.arrays = 0

    def const(self) -> str:
        return repr(self.draw(st.sampled_from([0.5, -0.25, 1.5, 0.75])))

    def index(self) -> str:
        return str(self.draw(st.integers(0, 2)))

    def statement(self, indent: int, depth: int) -> list[str]:
        pad = " " * indent
        kinds = ["g_in_place", "g_item", "g_clip", "w_rebind", "w_item", "w_in_place", "nudge", "local_alias",
                 "t_update", "rate", "made_array", "made_array"]
        if depth < self.max_depth:
            kinds += ["if", "if", "loop"]
        kind = self.draw(st.sampled_from(kinds))
        c, i, j = self.const(), self.index(), self.index()
        if kind == "g_in_place":
            return [f"{pad}G[:] += t * {c}"]
        if kind == "g_item":
            return [f"{pad}G[{i}] = t[{j}] + {c}"]
        if kind == "g_clip":
            return [f"{pad}np.clip(G, -3.0, 3.0, out=G)"]
        if kind == "w_rebind":
            return [f"{pad}box.w = np.tanh(box.w + t * {c})"]
        if kind == "w_item":
            return [f"{pad}box.w[{i}] += t[{j}] * box.rate"]
        if kind == "w_in_place":
            return [f"{pad}box.w *= {c}"]
        if kind == "nudge":
            return [f"{pad}box.nudge(t * {c})"]
        if kind == "rate":
            return [f"{pad}t = t * box.rate + G"]
        if kind == "local_alias":
            k = self.arrays
            self.arrays += 1
            return [f"{pad}buf{k} = np.zeros(3)", f"{pad}rows{k} = [buf{k}]",
                    f"{pad}rows{k}[0][{i}] = t[{j}]", f"{pad}t = t + buf{k}"]
        if kind == "made_array":
            return self.made_array(pad, c, i, j)
        if kind == "t_update":
            return [f"{pad}t = np.tanh(t + G * {c})"]
        if kind == "if":
            test = f"t[{i}] > {c}" if self.draw(st.booleans()) else f"G[{i}] + box.w[{j}] > {c}"
            out = [f"{pad}if {test}:"] + self.block(indent + 4, depth + 1)
            if self.draw(st.booleans()):
                out += [f"{pad}else:"] + self.block(indent + 4, depth + 1)
            return out
        return [f"{pad}for _ in range(n):"] + self.block(indent + 4, depth + 1)   # n: a graph input

    def made_array(self, pad: str, c: str, i: str, j: str) -> list[str]:
        """An array made by arithmetic that gets a graph value or is written in a graph branch, maybe with
        another name for it (`al`), which sees the write as in Python."""
        k = self.arrays
        self.arrays += 1
        out = [f"{pad}m{k} = np.arange(3) * {c}"]
        aliased = self.draw(st.booleans())
        if aliased:
            out.append(f"{pad}al{k} = m{k}")
        if self.draw(st.booleans()):
            out.append(f"{pad}m{k}[{i}] = t[{j}]")
        else:
            out += [f"{pad}if t[{j}] > {c}:", f"{pad}    m{k}[{i}] = {c}"]
        return out + [f"{pad}t = t + {'al' if aliased else 'm'}{k}"]

    def block(self, indent: int, depth: int) -> list[str]:
        n = self.draw(st.integers(1, 3))
        out = []
        for _ in range(n):
            if self.budget <= 0:
                break
            self.budget -= 1
            out += self.statement(indent, depth)
        return out or [" " * indent + "t = t + 0.0"]


@st.composite
def stateful_programs(draw, max_depth: int = 2, max_statements: int = 8) -> str:
    gen = _Gen(draw, max_depth, max_statements)
    body = gen.block(4, 0)
    return HEADER + "\n".join(body) + "\n    return t.sum() + G.sum() + box.w.sum()\n"


def define(source: str) -> tuple[dict, str]:
    """The module namespace of `source` (its own state), registered with linecache to be converted."""
    filename = f"/flowgraph-random/stateful_{next(_counter)}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict = {"__name__": f"stateful_{next(_counter)}"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace, filename


def forget(filename: str) -> None:
    linecache.cache.pop(filename, None)
