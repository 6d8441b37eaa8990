"""Random structured programs, run as plain Python and built as graphs.

A program is a list of statements over a fixed set of variables:
  ints i0, i1 (int64), a float f0 (float64), a vector v0 (float32[3]),
plus an append-only list `out` (a TensorArray in the graph). Statements:
  ("assign", var, expr) | ("swap", a, b) | ("if", cond, then, else) | ("loop", counter, bound, body) |
  ("append", float_expr)
A swap (`a, b = b, a` of the two ints) inside a branch makes a cond whose results are the values from
before it, crossed.
Loops run `counter` from 0 while `counter < bound % 4`, so every program stops.
Expressions are tuples too (see `_eval`); they keep values bounded (mod, tanh).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import graph as G

INTS, FLOATS, VECS = ("i0", "i1"), ("f0",), ("v0",)
TYPE = {**{v: "int" for v in INTS}, **{v: "float" for v in FLOATS}, **{v: "vec" for v in VECS}}


# ----------------------------------------------------------------------------- generation

def exprs(kind: str, counters: tuple, depth: int = 2):
    ints = st.sampled_from(INTS + counters)
    if kind == "int":
        leaf = st.one_of(ints.map(lambda v: ("var", v)), st.integers(-3, 5).map(lambda c: ("const", c)))
        if depth == 0:
            return leaf
        sub = exprs("int", counters, depth - 1)
        return st.one_of(leaf, st.tuples(st.sampled_from(["add", "sub", "mul", "max", "min"]), sub, sub)
                         .map(lambda t: ("mod7", (t[0], t[1], t[2]))))
    if kind == "float":
        leaf = st.one_of(st.just(("var", "f0")), st.floats(-2, 2).map(lambda c: ("const", round(c, 3))))
        if depth == 0:
            return leaf
        sub = exprs("float", counters, depth - 1)
        return st.one_of(
            leaf,
            st.tuples(st.sampled_from(["add", "sub", "mul"]), sub, sub).map(lambda t: ("tanh", t)),
            exprs("int", counters, depth - 1).map(lambda e: ("tofloat", e)),
        )
    leaf = st.just(("var", "v0"))
    if depth == 0:
        return leaf
    sub = exprs("vec", counters, depth - 1)
    return st.one_of(
        leaf,
        sub.map(lambda e: ("vtanh", e)),
        st.tuples(sub, exprs("float", counters, depth - 1)).map(lambda t: ("vaddf", t[0], t[1])),
        st.tuples(sub, st.floats(-1, 1).map(lambda c: round(c, 3))).map(lambda t: ("vaxpy", t[0], t[1])),
    )


def conds(counters: tuple):
    return st.one_of(
        st.tuples(exprs("int", counters, 1), exprs("int", counters, 1)).map(lambda t: ("lt", *t)),
        exprs("float", counters, 1).map(lambda e: ("pos", e)),
    )


@st.composite
def blocks(draw, depth: int, counters: tuple = (), in_loop: bool = False, max_len: int = 3):
    n = draw(st.integers(1, max_len))
    out = []
    for _ in range(n):
        choices = ["assign", "assign", "swap"]
        if depth > 0:
            choices += ["if", "loop"]
        if in_loop:
            choices.append("append")
        kind = draw(st.sampled_from(choices))
        if kind == "assign":
            var = draw(st.sampled_from(INTS + FLOATS + VECS))
            out.append(("assign", var, draw(exprs(TYPE[var], counters))))
        elif kind == "append":
            out.append(("append", draw(exprs("float", counters, 1))))
        elif kind == "swap":
            out.append(("swap", *INTS))
        elif kind == "if":
            c = draw(conds(counters))
            then = draw(blocks(depth - 1, counters, in_loop, 2))
            other = draw(blocks(depth - 1, counters, in_loop, 2)) if draw(st.booleans()) else []
            out.append(("if", c, then, other))
        else:
            counter = f"k{len(counters)}"
            bound = draw(exprs("int", counters, 1))
            body = draw(blocks(depth - 1, counters + (counter,), True, 2))
            out.append(("loop", counter, bound, body))
    return out


programs = blocks(3)
inputs = st.fixed_dictionaries({
    "i0": st.integers(-5, 5), "i1": st.integers(-5, 5), "f0": st.floats(-2, 2),
    "v0": st.lists(st.floats(-2, 2, width=32), min_size=3, max_size=3),
})


# ----------------------------------------------------------------------------- plain Python

class _Numpy:
    """Expression semantics on numpy values (the meaning of every expression)."""

    add, sub, mul = staticmethod(np.add), staticmethod(np.subtract), staticmethod(np.multiply)
    max, min = staticmethod(np.maximum), staticmethod(np.minimum)
    mod, tanh, less, greater = staticmethod(np.remainder), staticmethod(np.tanh), staticmethod(np.less), \
        staticmethod(np.greater)

    @staticmethod
    def tofloat(x):
        return np.float64(x)

    @staticmethod
    def tof32(x):
        return np.float32(x)


class _Graph:
    add, sub, mul = staticmethod(G.add), staticmethod(G.sub), staticmethod(G.mul)
    max, min = staticmethod(G.maximum), staticmethod(G.minimum)
    mod, tanh, less, greater = staticmethod(G.mod), staticmethod(G.tanh), staticmethod(G.less), \
        staticmethod(G.greater)

    @staticmethod
    def tofloat(x):
        return G.cast(x, np.float64)

    @staticmethod
    def tof32(x):
        return G.cast(x, np.float32)


def _eval(e, env, M):
    tag = e[0]
    if tag == "var":
        return env[e[1]]
    if tag == "const":
        c = e[1]
        return np.int64(c) if isinstance(c, int) else np.float64(c)
    if tag == "mod7":
        op, a, b = e[1]
        return M.mod(getattr(M, op)(_eval(a, env, M), _eval(b, env, M)), np.int64(7))
    if tag == "tanh":
        op, a, b = e[1]
        return M.tanh(getattr(M, op)(_eval(a, env, M), _eval(b, env, M)))
    if tag == "tofloat":
        return M.tofloat(_eval(e[1], env, M))
    if tag == "vtanh":
        return M.tanh(_eval(e[1], env, M))
    if tag == "vaddf":
        return M.add(_eval(e[1], env, M), M.tof32(_eval(e[2], env, M)))
    if tag == "vaxpy":
        return M.add(M.mul(_eval(e[1], env, M), np.float32(e[2])), np.float32(1.0))
    if tag == "lt":
        return M.less(_eval(e[1], env, M), _eval(e[2], env, M))
    if tag == "pos":
        return M.greater(_eval(e[1], env, M), np.float64(0.0))
    raise ValueError(tag)


def run_python(program, values):
    env = {"i0": np.int64(values["i0"]), "i1": np.int64(values["i1"]), "f0": np.float64(values["f0"]),
           "v0": np.asarray(values["v0"], np.float32)}
    out: list = []
    _run_block(program, env, out)
    return env, out


def _run_block(block, env, out):
    for s in block:
        if s[0] == "assign":
            env[s[1]] = _eval(s[2], env, _Numpy)
        elif s[0] == "swap":
            env[s[1]], env[s[2]] = env[s[2]], env[s[1]]
        elif s[0] == "append":
            out.append(_eval(s[1], env, _Numpy))
        elif s[0] == "if":
            _run_block(s[2] if _eval(s[1], env, _Numpy) else s[3], env, out)
        else:
            _, counter, bound, body = s
            env[counter] = np.int64(0)
            while env[counter] < np.remainder(_eval(bound, env, _Numpy), 4):
                _run_block(body, env, out)
                env[counter] = env[counter] + np.int64(1)


# ----------------------------------------------------------------------------- graph

def _modified(block) -> list[str]:
    names: list[str] = []
    for s in block:
        if s[0] == "assign":
            new = [s[1]]
        elif s[0] == "swap":
            new = [s[1], s[2]]
        elif s[0] == "append":
            new = ["__out", "__n"]
        elif s[0] == "if":
            new = _modified(s[2]) + _modified(s[3])
        else:
            new = [s[1]] + _modified(s[3])
        names += [n for n in new if n not in names]
    return names


def build_graph(program, parallel_iterations: int = 32):
    """A graph computing the program; returns (graph, placeholders, fetches)."""
    g = G.Graph()
    with g.as_default():
        ph = {"i0": G.placeholder(np.int64, [], "i0"), "i1": G.placeholder(np.int64, [], "i1"),
              "f0": G.placeholder(np.float64, [], "f0"), "v0": G.placeholder(np.float32, [3], "v0")}
        env = dict(ph)
        env["__out"] = G.TensorArray(np.float64, element_shape=[], name="out")
        env["__n"] = G.constant(np.int64(0))
        _build_block(program, env, parallel_iterations)
        fetches = {k: env[k] for k in ("i0", "i1", "f0", "v0")}
        fetches["out"] = env["__out"].stack()
        fetches["n"] = env["__n"]
    return g, ph, fetches


def _build_block(block, env, par):
    for s in block:
        if s[0] == "assign":
            env[s[1]] = G.ops.convert(_eval(s[2], env, _Graph))
        elif s[0] == "swap":
            env[s[1]], env[s[2]] = env[s[2]], env[s[1]]
        elif s[0] == "append":
            env["__out"] = env["__out"].write(env["__n"], _eval(s[1], env, _Graph))
            env["__n"] = G.add(env["__n"], np.int64(1))
        elif s[0] == "if":
            names = [n for n in _modified(s[2]) + _modified(s[3]) if n in env]
            names = list(dict.fromkeys(names))

            def branch(block):
                def fn():
                    local = dict(env)
                    _build_block(block, local, par)
                    return [local[n] for n in names]
                return fn
            if names:
                outs = G.cond(_eval(s[1], env, _Graph), branch(s[2]), branch(s[3]), names=names)
                env.update(zip(names, outs, strict=True))
        else:
            _, counter, bound, body = s
            env[counter] = G.constant(np.int64(0))
            names = [counter] + [n for n in _modified(body) if n != counter and n in env]

            def cond_fn(*vals, names=names, bound=bound):
                local = dict(env)
                local.update(zip(names, vals, strict=True))
                return G.less(vals[0], G.mod(_eval(bound, local, _Graph), np.int64(4)))

            def body_fn(*vals, names=names, body=body, counter=counter):
                local = dict(env)
                local.update(zip(names, vals, strict=True))
                _build_block(body, local, par)
                local[counter] = G.add(local[counter], np.int64(1))
                return [local[n] for n in names]
            outs = G.while_loop(cond_fn, body_fn, [env[n] for n in names], parallel_iterations=par, names=names)
            env.update(zip(names, outs, strict=True))


def feed(ph, values):
    return {ph["i0"]: np.int64(values["i0"]), ph["i1"]: np.int64(values["i1"]),
            ph["f0"]: np.float64(values["f0"]), ph["v0"]: np.asarray(values["v0"], np.float32)}
