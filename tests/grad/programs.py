"""Random programs with nested data-dependent loops, conds and TensorArrays, and three ways to run them.

A program updates two vectors `a`, `b` (shape (2,)) starting from input x,
using a parameter vector w. Statements:
  ("assign", dst, expr)
  ("if", src, threshold, then_block, else_block)       # if sum(v[src]) > threshold
  ("while", src, threshold, max_trips, record, body)   # k = 0; while k < max_trips and sum(v[src]) < threshold
                                                        # (record: each iteration writes v[src] into a
                                                        # TensorArray; afterwards v[src] += 0.1 * sum(stack))
Expressions: ("mul_w", j) v_j * w; ("add", j, k); ("tanh", j); ("sin", j); ("scale", j, c);
("tanh_prod", j, k) tanh(v_j * v_k); ("square_w", j) v_j * w * w * 0.5.

- `build_graph` builds the program with graph.cond / graph.while_loop / TensorArray;
- `run_python` runs it with Python control flow on numpy values, recording every
  branch decision (to know when a finite-difference step would change one);
- `build_unrolled` runs it with Python control flow decided on numpy values while
  building a straight-line graph of the same arithmetic (the loops unrolled).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import graph

VARS = ("a", "b")
LOSS_WEIGHTS = {"a": np.array([0.7, -1.1]), "b": np.array([0.4, 0.9])}


# --------------------------------------------------------------------------- strategies

def _expr():
    j = st.sampled_from(VARS)
    return st.one_of(
        st.tuples(st.just("mul_w"), j), st.tuples(st.just("add"), j, j), st.tuples(st.just("tanh"), j),
        st.tuples(st.just("sin"), j), st.tuples(st.just("scale"), j, st.sampled_from([0.5, -0.8, 1.2])),
        st.tuples(st.just("tanh_prod"), j, j), st.tuples(st.just("square_w"), j))


def _block(depth: int):
    stmt = st.tuples(st.just("assign"), st.sampled_from(VARS), _expr())
    if depth > 0:
        inner = _block(depth - 1)
        stmt = st.one_of(
            stmt,
            st.tuples(st.just("if"), st.sampled_from(VARS), st.sampled_from([-0.5, 0.0, 0.8]), inner, inner),
            st.tuples(st.just("while"), st.sampled_from(VARS), st.sampled_from([0.5, 2.0, 4.0]),
                      st.integers(1, 4), st.booleans(), inner))
    return st.lists(stmt, min_size=1, max_size=3)


def programs(depth: int = 2):
    return _block(depth)


# --------------------------------------------------------------------------- expression semantics

def _eval_expr(e, v, w, m):
    kind = e[0]
    if kind == "mul_w":
        return v[e[1]] * w
    if kind == "add":
        return v[e[1]] + v[e[2]]
    if kind == "tanh":
        return m.tanh(v[e[1]])
    if kind == "sin":
        return m.sin(v[e[1]])
    if kind == "scale":
        return v[e[1]] * e[2]
    if kind == "tanh_prod":
        return m.tanh(v[e[1]] * v[e[2]])
    if kind == "square_w":
        return v[e[1]] * w * w * 0.5
    raise ValueError(kind)


def _loss(v, m):
    return m.sum(v["a"] * LOSS_WEIGHTS["a"]) + m.sum(v["b"] * LOSS_WEIGHTS["b"])


# --------------------------------------------------------------------------- Python control flow

class _NumpyMath:
    tanh, sin, sum = staticmethod(np.tanh), staticmethod(np.sin), staticmethod(np.sum)


def run_python(prog, x, w, m=_NumpyMath, value=lambda t: t, decisions=None):
    """Runs with Python control flow; `value` gives the number a decision looks at."""
    v = {"a": x, "b": x * 0.5}
    _run_block(prog, v, w, m, value, decisions if decisions is not None else [])
    return _loss(v, m)


def _run_block(block, v, w, m, value, decisions):
    for s in block:
        if s[0] == "assign":
            v[s[1]] = _eval_expr(s[2], v, w, m)
        elif s[0] == "if":
            taken = float(value(m.sum(v[s[1]]))) > s[2]
            decisions.append(taken)
            _run_block(s[3] if taken else s[4], v, w, m, value, decisions)
        else:
            _, src, threshold, trips, record, body = s
            k, written = 0, []
            while True:
                go = k < trips and float(value(m.sum(v[src]))) < threshold
                decisions.append(go)
                if not go:
                    break
                if record:
                    written.append(v[src])
                _run_block(body, v, w, m, value, decisions)
                k += 1
            if record and written:
                total = written[0]
                for t in written[1:]:
                    total = total + t
                v[src] = v[src] + total * 0.1


class Fwd:
    """value + tangent·ε with ε² = 0: forward-mode derivatives in plain Python, independent of the
    graph. Components may be Fwd themselves (nesting gives second derivatives)."""

    __array_ufunc__ = None  # numpy operands defer to the reflected methods below

    def __init__(self, value, tangent):
        self.value, self.tangent = value, tangent

    def __add__(self, o):
        return Fwd(self.value + o.value, self.tangent + o.tangent) if isinstance(o, Fwd) else \
            Fwd(self.value + o, self.tangent)

    def __mul__(self, o):
        if isinstance(o, Fwd):
            return Fwd(self.value * o.value, self.tangent * o.value + self.value * o.tangent)
        return Fwd(self.value * o, self.tangent * o)

    __radd__, __rmul__ = __add__, __mul__

    def __rsub__(self, o):
        return self * -1.0 + o


def _fwd_map(f, df):
    def apply(x):
        return Fwd(apply(x.value), x.tangent * df(x.value)) if isinstance(x, Fwd) else f(x)
    return apply


class FwdMath:
    tanh = staticmethod(_fwd_map(np.tanh, lambda v: 1 - FwdMath.tanh(v) * FwdMath.tanh(v)))
    sin = staticmethod(_fwd_map(np.sin, lambda v: FwdMath.cos(v)))
    cos = staticmethod(_fwd_map(np.cos, lambda v: FwdMath.sin(v) * -1.0))

    @staticmethod
    def sum(x):
        return Fwd(FwdMath.sum(x.value), FwdMath.sum(x.tangent)) if isinstance(x, Fwd) else np.sum(x)


def primal(x):
    while isinstance(x, Fwd):
        x = x.value
    return x


def forward_derivative(prog, x, w, dx, dw) -> float:
    """The exact directional derivative of the loss at (x, w) along (dx, dw)."""
    return run_python(prog, Fwd(x, dx), Fwd(w, dw), FwdMath, value=primal).tangent


def forward_hessian_vector(prog, x, w, v) -> np.ndarray:
    """H v, H the Hessian of the loss in w at (x, w), by forward over forward mode."""
    def second(e):
        # inner ε moves w along v, outer ε along e: the loss's ε_outer·ε_inner part is eᵀ H v
        zero = np.zeros_like(x)
        out = run_python(prog, Fwd(Fwd(x, zero), Fwd(zero, zero)), Fwd(Fwd(w, v), Fwd(e, zero)),
                         FwdMath, value=primal)
        return out.tangent.tangent
    return np.array([second(e) for e in np.eye(len(w))])


class _Dual:
    """A numpy value and the graph tensor computing it, so Python can branch on the value."""

    def __init__(self, value, tensor):
        self.value, self.tensor = value, tensor

    @staticmethod
    def lift(x):
        return x if isinstance(x, _Dual) else _Dual(np.asarray(x), graph.constant(np.asarray(x)))

    def __add__(self, o):
        o = _Dual.lift(o)
        return _Dual(self.value + o.value, self.tensor + o.tensor)

    def __mul__(self, o):
        o = _Dual.lift(o)
        return _Dual(self.value * o.value, self.tensor * o.tensor)


class _DualMath:
    @staticmethod
    def tanh(d):
        return _Dual(np.tanh(d.value), graph.tanh(d.tensor))

    @staticmethod
    def sin(d):
        return _Dual(np.sin(d.value), graph.sin(d.tensor))

    @staticmethod
    def sum(d):
        return _Dual(np.sum(d.value), graph.reduce_sum(d.tensor))


def build_unrolled(prog, x_value, w_value, x, w):
    """The loss as a straight-line graph in inputs `x`, `w` (loops unrolled for these values)."""
    out = run_python(prog, _Dual(x_value, x), _Dual(w_value, w), _DualMath, value=lambda d: d.value)
    return out.tensor


# --------------------------------------------------------------------------- graph control flow

class _GraphMath:
    tanh, sin, sum = staticmethod(graph.tanh), staticmethod(graph.sin), staticmethod(graph.reduce_sum)


def build_graph(prog, x, w, par: int = 32):
    """The loss as a graph with in-graph control flow."""
    v = {"a": x, "b": x * 0.5}
    v = _graph_block(prog, v, w, par)
    return _loss(v, _GraphMath)


def _graph_block(block, v, w, par):
    v = dict(v)
    for s in block:
        if s[0] == "assign":
            v[s[1]] = _eval_expr(s[2], v, w, _GraphMath)
        elif s[0] == "if":
            _, src, threshold, then_b, else_b = s
            out = graph.cond(graph.reduce_sum(v[src]) > threshold,
                             lambda: tuple(_graph_block(then_b, v, w, par)[k] for k in VARS),
                             lambda: tuple(_graph_block(else_b, v, w, par)[k] for k in VARS))
            v = dict(zip(VARS, out))
        else:
            v = _graph_while(s, v, w, par)
    return v


def _graph_while(s, v, w, par):
    _, src, threshold, trips, record, body = s
    ta = graph.TensorArray(np.float64, size=None, element_shape=(2,))

    def cond(k, ta, *vs):
        cur = dict(zip(VARS, vs))
        return graph.logical_and(k < trips, graph.reduce_sum(cur[src]) < threshold)

    def step(k, ta, *vs):
        cur = dict(zip(VARS, vs))
        if record:
            ta = ta.write(k, cur[src])
        cur = _graph_block(body, cur, w, par)
        return (k + 1, ta, *(cur[n] for n in VARS))

    k, ta, *vs = graph.while_loop(cond, step, (graph.constant(0), ta, *(v[n] for n in VARS)),
                                  parallel_iterations=par)
    v = dict(zip(VARS, vs))
    if record:
        v[src] = v[src] + graph.reduce_sum(ta.stack(), axis=0) * 0.1
    return v
