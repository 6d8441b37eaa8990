"""Random structured Python programs for `converted == plain Python` tests.

A program has inputs `n` (a small int), `x` (a float) and `arr` (a float array
of length 3), and variables `a` (int), `b` (float), `v` (float array) and `acc`
(a list of floats). Its statements are assignments, `if/elif/else`, `while`
loops with a counter, `for` loops over `range(n)`, over `v`, over `enumerate(v)`
and over Python ranges, with `break`, `continue` and `return` anywhere,
conditional expressions, `and`/`or`/`not`, chained comparisons, `acc.append`
inside loops and (optionally) prints. Every loop terminates and every value
stays bounded, so plain Python always finishes.

`idioms=True` (with `extended`) adds everyday numpy and Python idioms that once
gave silently wrong results: an array allocated, filled by index and rebound
inside loop bodies, a second name of an array, rows and columns written through
views, a list popped, inserted into and deleted from in loops, two variables
swapped under a tensor `if`, float32 arrays meeting Python numbers, a closure
and a method of a class defined in the function reading a variable the loops
change, a call that raises inside `try`, and a variable assigned in one branch
of an `if` on the Python int argument `n`.

`extended=True` adds the constructs that once gave wrong results or failed on
valid code: Python numbers that accumulate other dtypes in nested loops (`c = 0`
summing floats, `s = 0.0` halved and summing float32 items), a nested dict changed in
branches and loops, `acc` read in the loops that append to it (`len(acc)`,
`acc[-1]`, `for e in acc`, `for e in reversed(acc)`), `v` unpacked into its
items, `and`/`or` on an int (`m`) used as a truth value,
functions defined in the program with their own returns, loops over a Python
list or a static range whose exit depends on a tensor, indexing a Python list
with a static loop index, and `try`/`except` of an error Python raises.
"""
from __future__ import annotations

import itertools
import linecache

from hypothesis import strategies as st

HEADER = "def program(n, x, arr):\n    a = 1\n    b = 0.5\n    v = arr * 1.0\n    acc = []\n"
RETURN = "return a, b, v, acc"
EXTENDED_HEADER = ("import numpy as np\n\n\ndef program(n, x, arr):\n    a = 1\n    b = 0.5\n    v = arr * 1.0\n"
                   "    acc = []\n    c = 0\n    s = 0.0\n    w = arr.astype(np.float32)\n"
                   "    d = {'p': {'q': 0.5}}\n    m = n % 2\n    weights = [0.5, -0.25, 1.0, 0.75]\n")
EXTENDED_RETURN = "return a, b, v, acc, c, s, d"
IDIOM_HEADER = ("    buf = np.zeros(3)\n    al = buf\n    M = np.zeros((2, 3))\n    L = [1.0, 2.0, 3.0]\n"
                "    f32 = arr.astype(np.float32)\n    p, q = x, 0.5\n    z = 0.0\n\n"
                "    def get():\n        return b * 0.5\n\n"
                "    class Scale:\n        def __call__(self, t):\n            return t * a * 0.125\n\n"
                "    def boom():\n        raise ValueError('no')\n\n"
                "    scale = Scale()\n    if n > 1:\n        z1 = b * 0.5\n")
IDIOM_RETURN = "return a, b, v, acc, c, s, d, buf, al, M, L, f32, p, q, z"
_counter = itertools.count()


class _Gen:
    def __init__(self, draw, max_depth: int, max_statements: int, prints: bool = False, extended: bool = False,
                 idioms: bool = False):
        self.draw = draw
        self.prints = prints
        self.extended = extended or idioms
        self.idioms = idioms
        self.ret = IDIOM_RETURN if idioms else EXTENDED_RETURN if extended else RETURN
        self.max_depth = max_depth
        self.budget = max_statements
        self.fresh = itertools.count()
        self.static = set()        # loop variables that are Python ints (loops over a Python range)
        self.iterating_acc = 0     # depth of loops over `acc` (appending there would never end)

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def k(self, lo=0, hi=6):
        return self.draw(st.integers(lo, hi))

    def f(self):
        return self.pick(["0.25", "0.5", "1.5", "-0.75", "2.0"])

    # -- expressions ---------------------------------------------------------------------------
    def atom(self, scope) -> str:
        options = [
            lambda: f"a > {self.k()}",
            lambda: f"a % 2 == {self.k(0, 1)}",
            lambda: "b < x",
            lambda: f"b > {self.f()}",
            lambda: f"v[{self.k(0, 2)}] > b",
            lambda: "x > 0",
            lambda: f"a == {self.k(0, 4)}",
            lambda: "v.sum() > b",
            lambda: f"{self.k(-2, 1)} < a < {self.k(2, 8)}",
        ]
        options += [lambda name=name: f"{name} > {self.k(0, 3)}" for name in scope]
        if self.extended:  # an int's truth value, and the length of a list appended to in loops
            options += [lambda: f"m and b > {self.f()}", lambda: "(a % 3) or b < x", lambda: "not m or x > 0",
                        lambda: f"len(acc) > {self.k(0, 3)}"]
        return self.pick(options)()

    def cond(self, scope, depth=0) -> str:
        kind = self.pick(["atom", "atom", "atom", "and", "or", "not"] if depth < 2 else ["atom"])
        if kind == "atom":
            return self.atom(scope)
        if kind == "not":
            return f"not ({self.cond(scope, depth + 1)})"
        return f"({self.cond(scope, depth + 1)}) {kind} ({self.cond(scope, depth + 1)})"

    # -- statements ----------------------------------------------------------------------------
    def assign(self, scope, iterating_v: bool) -> str:
        options = [
            lambda: f"a = (a * 3 + {self.k()}) % 17",
            lambda: f"a = a - {self.k(1, 3)}",
            lambda: f"a += {self.k(1, 4)}",
            lambda: f"b = b * 0.5 + {self.f()}",
            lambda: "b = b - x",
            lambda: "b = -b + a * 0.25",
            lambda: f"b += v[{self.k(0, 2)}]",
            lambda: f"b = b if {self.cond(scope)} else x",
            lambda: f"a = a + 1 if {self.cond(scope)} else a - 1",
            lambda: "b = min(b, x) + 0.5",
            lambda: "b = abs(b) * 0.75",
            lambda: "v = v * 0.5 + b",
            lambda: "v = v - a * 0.125",
        ]
        if not iterating_v:
            options.append(lambda: f"v[{self.k(0, 2)}] = b")
        options += [lambda name=name: f"b = b + {name} * 0.5" for name in scope]
        if self.extended:
            options += [
                lambda: "c = c + b * 0.5",
                lambda: "c = 0",
                lambda: "d['p']['q'] = d['p']['q'] * 0.5 + b",
                lambda: "b = b + len(acc) * 0.25",
                lambda: "b = b + acc[-1] * 0.5 if len(acc) > 0 else b - 0.25",
                lambda: "b = b * 0.5 + 1.0 if m and a > 2 else b",
                lambda: "t0, t1, t2 = v; b = b + t1 * 0.25 - t2 * 0.125",   # unpacking a float64[3] tensor
            ]
            options += [lambda name=name: f"b = b + weights[{name}]" for name in scope if name in self.static]
            # `s = 0.0` a Python float that branches and loops may keep one (halved) before float32 items
            # make it float32, as numpy's weak scalars do
            options += [lambda: "s = s * 0.5", lambda: f"s = s + w[{self.k(0, 2)}]"]
        if self.idioms:
            options += self.idiom_assignments(iterating_v)
        return self.pick(options)()

    def idiom_assignments(self, iterating_v: bool) -> list:
        k, r = self.k(0, 2), self.k(0, 1)
        return [
            lambda: f"buf[{k}] = b",                                  # seen through `al` until buf is rebound
            lambda: f"al[{k}] = al[{k}] * 0.5 + a",
            lambda: f"M[{r}] = v * 0.5",
            lambda: f"M.T[{k}] = M.T[{k}] + b",
            lambda: f"M[:, {k}] += x",
            lambda: "f32 = f32 * x + 0.5",                           # a float32 array beside Python floats
            lambda: f"b = b + float(f32[{k}])",
            lambda: "b = b + get()",                                 # a closure reading b
            lambda: "b = scale(b) + 0.25",                           # a local class's method reading a
            lambda: "L.append(b)",
            lambda: "z = z + (z1 if n > 1 else b)",                  # z1: assigned only when n > 1
        ] + ([] if iterating_v else [lambda: f"v[{k}] = L[0] * 0.5"])

    def block(self, indent: int, depth: int, loop: str | None, scope: tuple, iterating_v=False) -> list[str]:
        n = self.draw(st.integers(1, 3))
        lines: list[str] = []
        for _ in range(n):
            if self.budget <= 0:
                break
            self.budget -= 1
            lines += self.statement(indent, depth, loop, scope, iterating_v)
        return lines or [" " * indent + "pass"]

    def statement(self, indent: int, depth: int, loop, scope, iterating_v) -> list[str]:
        pad = " " * indent
        kinds = ["assign", "assign", "assign"]
        if loop is not None and not self.iterating_acc:
            kinds += ["append"]
        if self.prints:
            kinds += ["print"]
        if depth < self.max_depth:
            kinds += ["if", "if", "while", "for"]
            kinds += ["def", "try"] if self.extended else []
            kinds += ["fresh", "view", "resize", "swap", "try_call", "one_sided"] if self.idioms else []
        if loop is not None:
            kinds += ["exit"]
        kinds += ["return"] if depth > 0 else []
        kind = self.pick(kinds)
        if kind == "assign":
            return [pad + self.assign(scope, iterating_v)]
        if kind == "append":
            return [pad + self.pick(["acc.append(b)", "acc.append(a * 0.5)", "acc.append(v[0] + b)"])]
        if kind == "print":
            return [pad + self.pick(['print("a", a, "b", b)', 'print(v)', 'print(f"b={b} a={a}")'])]
        if kind == "return":
            return [pad + f"if {self.cond(scope)}:", pad + "    " + self.ret]
        if kind == "def":
            return self.nested_def(pad)
        if kind in ("fresh", "view", "resize", "swap", "try_call", "one_sided"):
            return [pad + line for line in self.idiom_statement(kind)]
        if kind == "try":
            out = [pad + "try:", pad + f"    b = b + [0.5, 1.5][{self.k(0, 3)}]"]
            out += self.block(indent + 4, depth + 1, loop, scope, iterating_v)
            return out + [pad + "except IndexError:", pad + "    " + self.assign(scope, iterating_v)]
        if kind == "exit":
            word = self.pick(["break", "continue", "return"])
            stmt = self.ret if word == "return" else word
            if self.draw(st.booleans()):
                return [pad + f"if {self.cond(scope)}:", pad + "    " + stmt]
            return [pad + f"if {self.cond(scope)}:", pad + "    " + self.assign(scope, iterating_v),
                    pad + "else:", pad + "    " + stmt]
        if kind == "if":
            out = [pad + f"if {self.cond(scope)}:"] + self.block(indent + 4, depth + 1, loop, scope, iterating_v)
            tail = self.pick(["none", "else", "elif"])
            if tail == "elif":
                out += [pad + f"elif {self.cond(scope)}:"] + self.block(indent + 4, depth + 1, loop, scope,
                                                                         iterating_v)
            if tail in ("else", "elif") and self.draw(st.booleans()):
                out += [pad + "else:"] + self.block(indent + 4, depth + 1, loop, scope, iterating_v)
            return out
        i = next(self.fresh)
        if kind == "while":
            c = f"i{i}"
            extra = f" and ({self.cond(scope)})" if self.draw(st.booleans()) else ""
            out = [pad + f"{c} = 0", pad + f"while {c} < n{extra}:", pad + f"    {c} += 1"]
            out += self.block(indent + 4, depth + 1, c, scope + (c,), iterating_v)
            if self.draw(st.integers(0, 3)) == 0:
                out += [pad + "else:", pad + "    " + self.assign(scope, iterating_v)]
            return out
        forms = ["range_n", "range_n", "over_v", "enumerate_v", "python_range"]
        forms += ["python_list", "over_acc"] if self.extended else []
        # (inside a loop that appends to acc, reversed(acc) is refused: transpile/README.md)
        forms += ["reversed_acc"] if self.extended and loop is None else []
        form = self.pick(forms)
        if form == "range_n":
            head, names, over_v = f"for j{i} in range(n):", (f"j{i}",), False
        elif form == "over_v":
            head, names, over_v = f"for e{i} in v:", (f"e{i}",), True
        elif form == "enumerate_v":
            head, names, over_v = f"for j{i}, e{i} in enumerate(v):", (f"j{i}", f"e{i}"), True
        elif form == "python_list":
            head, names, over_v = f"for e{i} in [0.5, 1.5, -1.0]:", (), False
        elif form == "over_acc":
            head, names, over_v = f"for e{i} in acc:", (), False
        elif form == "reversed_acc":
            head, names, over_v = f"for e{i} in reversed(acc):", (), False
        else:
            head, names, over_v = f"for j{i} in range({self.k(1, 3)}):", (f"j{i}",), False
            self.static.add(f"j{i}")
        self.iterating_acc += form in ("over_acc", "reversed_acc")
        body = self.block(indent + 4, depth + 1, names[0] if names else f"e{i}", scope + names,
                          iterating_v or over_v)
        if form in ("python_list", "over_acc", "reversed_acc"):
            body = [pad + f"    b = b + e{i} * 0.25"] + body
        self.iterating_acc -= form in ("over_acc", "reversed_acc")
        out = [pad + head] + body
        if self.draw(st.integers(0, 3)) == 0:
            out += [pad + "else:", pad + "    " + self.assign(scope, iterating_v)]
        return out

    def idiom_statement(self, kind: str) -> list[str]:
        k, r = self.k(0, 2), self.k(0, 1)
        if kind == "fresh":       # allocate, fill by index, rebind
            return ["nb = np.zeros_like(buf)", f"nb[{k}] = buf[{k}] * 0.5 + b", "buf = nb"]
        if kind == "view":        # a row or column written through a view
            if self.draw(st.booleans()):
                return [f"row = M[{r}]", f"row[{k}] = b", "b = b + row.sum() * 0.25"]
            return [f"col = M[:, {k}]", "col *= 0.5", "col += a * 0.125"]
        if kind == "resize":      # the list's length changes, guarded so it stays long enough
            op = self.pick(["pop", "insert", "del", "extend", "remove"])
            if op == "pop":
                return ["if len(L) > 1:", "    b = b + L.pop() * 0.5"]
            if op == "insert":
                return ["if len(L) < 6:", f"    L.insert({k}, b)"]
            if op == "del":
                return ["if len(L) > 2:", "    del L[0]"]
            if op == "remove":
                return ["if len(L) > 1:", "    L.remove(L[-1])"]
            return ["if len(L) < 5:", "    L.extend([b, 0.5])"]
        if kind == "swap":        # under a tensor condition
            return [f"if b > {self.f()}:", "    p, q = q, p", "p = p * 0.5 + x"]
        if kind == "try_call":    # a call that raises inside try
            return ["try:", "    b = b + boom()", "except ValueError:", "    b = b - 0.5"]
        # a variable assigned in one branch of an `if` on a Python int argument, read on that path only
        return ["if n > 1:", "    z1 = b * 0.5"]

    def nested_def(self, pad: str) -> list[str]:
        """A function defined in the program, with returns of its own, called at once."""
        i = next(self.fresh)
        if self.draw(st.booleans()):
            body = [f"if t > {self.f()}:", "    return t * 0.5", "return t - 0.25"]
        else:
            body = ["for k in range(2):", f"    if t > k * {self.f()}:", "        return t - k", "return t"]
        return [pad + f"def h{i}(t):"] + [pad + "    " + line for line in body] + [pad + f"b = h{i}(b)"]


@st.composite
def programs(draw, max_depth: int = 3, max_statements: int = 14, prints: bool = False, extended: bool = False,
             idioms: bool = False) -> str:
    gen = _Gen(draw, max_depth, max_statements, prints, extended, idioms)
    body = gen.block(4, 0, None, ())
    header = EXTENDED_HEADER + IDIOM_HEADER if idioms else EXTENDED_HEADER if extended else HEADER
    return header + "\n".join(body) + "\n    " + gen.ret + "\n"


INDEX_HEADER = ("import numpy as np\n\n\ndef program(n, x, arr):\n    f32 = arr.astype(np.float32)\n"
                "    f16 = arr.astype(np.float16)\n    i8 = np.zeros(3, np.int8)\n    i16 = np.ones(3, np.int16)\n"
                "    u8 = np.zeros(3, np.uint8)\n    k = 0\n    idx = []\n")
INDEX_RETURN = "return f32, f16, i8, i16, u8, k, idx"


class _IndexGen:
    """Programs where loop indices (`range`, `enumerate`, a `while` counter) and a Python-int counter `k`
    meet float32, float16, int8, int16 and uint8 arrays and a list of ints: Python ints are weak beside
    arrays (NEP 50), so each array keeps its dtype, and `k` and the items of `idx` stay ints. Values stay
    inside every array's range (numpy would raise OverflowError for an int that does not fit)."""

    def __init__(self, draw, max_depth: int, max_statements: int):
        self.draw, self.max_depth, self.budget = draw, max_depth, max_statements
        self.fresh = itertools.count()

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def assign(self, index: str | None) -> str:
        options = ["k += 1", "k = (k * 3 + 1) % 7", "f32 = f32 + k * 0.5", "f16 = f16 * 0.5 - k",
                   "i16 = (i16 + k) % 1000", "idx.append(k)"]
        if index is not None:
            options += [f"f32 = f32 * 0.5 + {index}", f"f16 = f16 - {index} * 0.25", f"i8 = (i8 + {index}) % 50",
                        f"i16 = i16 * 2 % 1000 + {index}", f"u8 = (u8 + {index}) % 200", f"k = (k + {index}) % 9",
                        f"idx.append({index})", f"i8 = i8 - {index} % 3", f"f32 = f32 + f16[{index} % 3]"]
        return self.pick(options)

    def block(self, indent: int, depth: int, index: str | None) -> list[str]:
        lines: list[str] = []
        for _ in range(self.draw(st.integers(1, 3))):
            if self.budget <= 0:
                break
            self.budget -= 1
            lines += self.statement(indent, depth, index)
        return lines or [" " * indent + "pass"]

    def statement(self, indent: int, depth: int, index: str | None) -> list[str]:
        pad = " " * indent
        kind = self.pick(["assign", "assign", "if", "loop", "loop"] if depth < self.max_depth else ["assign"])
        if kind == "assign":
            return [pad + self.assign(index)]
        if kind == "if":
            test = self.pick(["f32[0] > x", "k > 2", f"f16[1] < {self.pick(['0.5', '-0.5'])}"])
            return [pad + f"if {test}:"] + self.block(indent + 4, depth + 1, index)
        i = next(self.fresh)
        form = self.pick(["range", "enumerate", "while"])
        if form == "while":
            head = [pad + f"c{i} = 0", pad + f"while c{i} < n:", pad + f"    c{i} += 1"]
            return head + self.block(indent + 4, depth + 1, f"c{i}")
        head = f"for j{i} in range(n):" if form == "range" else f"for j{i}, e{i} in enumerate(f32[:n]):"
        return [pad + head] + self.block(indent + 4, depth + 1, f"j{i}")


@st.composite
def index_programs(draw, max_depth: int = 2, max_statements: int = 10) -> str:
    """A program of `_IndexGen`: inputs `n` (a small int), `x` (a float), `arr` (3 floats)."""
    body = _IndexGen(draw, max_depth, max_statements).block(4, 0, None)
    return INDEX_HEADER + "\n".join(body) + "\n    " + INDEX_RETURN + "\n"


def define(source: str):
    """Defines `program` from source, registered with linecache so that it can be converted."""
    filename = f"/flowgraph-random/program_{next(_counter)}.py"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["program"], filename


def forget(filename: str) -> None:
    linecache.cache.pop(filename, None)
