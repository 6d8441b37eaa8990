"""Random programs with nested data-dependent loops, conds and TensorArrays, and three ways to run them.

A program updates two vectors `a`, `b` (shape (2,)) starting from input x,
using a parameter vector w (and M, a 2x2 matrix computed from w once, at the
start). Statements:
  ("assign", dst, expr)
  ("if", src, threshold, then_block, else_block)       # if sum(v[src]) > threshold
  ("while", src, threshold, max_trips, record, body)   # k = 0; while k < max_trips and sum(v[src]) < threshold
                                                        # (record: each iteration writes v[src] into a
                                                        # TensorArray; afterwards v[src] += 0.1 * sum(stack))
Expressions: ("mul_w", j) v_j * w; ("add", j, k); ("tanh", j); ("sin", j); ("scale", j, c);
("tanh_prod", j, k) tanh(v_j * v_k); ("square_w", j) v_j * w * w * 0.5.

Opt-in features (`programs(features=...)`), each a class of programs that once went wrong:
- "matmul": ("mat_w", j) v_j @ M, a loop constant's matmul whose gradient is summed after the gradient
  loop from saved rows (grad.loop_sums), e.g. in a loop inside a cond, to second and third order;
- "gradients": ("grad", dst, src, loss, in_if) v[dst] -= 0.3 * d loss(v[src]) / d v[src], the gradient
  taken where the statement is (a loop body, a branch; in_if: inside a further `if sum(v[src]) > 0`
  around the gradient alone, the loss computed before it), with loss one of LOSSES (in Python: its
  derivative in closed form);
- "grad_of": ("grad_of", dst, y, x, in_if) v[dst] -= 0.3 * d sum(v[y] * C) / d v[x], the gradient of
  one variable's current value with respect to another's current value, as Python means it (an
  error where it needs earlier iterations, see grad.carried; only `build_unrolled` computes it);
- "non_differentiable": ("step", j, k) v_j * (v_k > 0) and ("argmax_scale", j, k)
  v_j * (1 + argmax(v_k)): paths through ops without a gradient;
- "outer": ("mul_outer", j, k) v_j * tanh(u_k), u the variables' values where the innermost enclosing
  `if` or `while` began (the inputs at top level): a loop or branch body reading a tensor computed
  outside it (a loop in a cond reading the value from before the cond, to second order).

- `build_graph` builds the program with graph.cond / graph.while_loop / TensorArray;
- `run_python` runs it with Python control flow on numpy values, recording every
  branch decision (to know when a finite-difference step would change one);
- `build_unrolled` runs it with Python control flow decided on numpy values while
  building a straight-line graph of the same arithmetic (the loops unrolled).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import grad
import graph

VARS = ("a", "b")
LOSS_WEIGHTS = {"a": np.array([0.7, -1.1]), "b": np.array([0.4, 0.9])}
FEATURES = ("matmul", "gradients", "grad_of", "non_differentiable", "outer")
LOSSES = ("sq_w", "tanh_w", "sin_self", "cond_sq")
STEP = 0.3                                   # the step of a "grad" / "grad_of" update
C = np.array([0.9, -0.7])                    # grad_of differentiates sum(v[y] * C)
K, K0 = np.array([[0.6, -0.4]]), np.array([[0.5, 0.2], [-0.3, 0.8]])   # M = w[:, None] * K + K0


# --------------------------------------------------------------------------- strategies

def _expr(features):
    j = st.sampled_from(VARS)
    kinds = [st.tuples(st.just("mul_w"), j), st.tuples(st.just("add"), j, j), st.tuples(st.just("tanh"), j),
             st.tuples(st.just("sin"), j), st.tuples(st.just("scale"), j, st.sampled_from([0.5, -0.8, 1.2])),
             st.tuples(st.just("tanh_prod"), j, j), st.tuples(st.just("square_w"), j)]
    if "matmul" in features:
        kinds.append(st.tuples(st.just("mat_w"), j))
    if "non_differentiable" in features:
        kinds += [st.tuples(st.just("step"), j, j), st.tuples(st.just("argmax_scale"), j, j)]
    if "outer" in features:
        kinds.append(st.tuples(st.just("mul_outer"), j, j))
    return st.one_of(*kinds)


def _block(depth: int, features):
    v = st.sampled_from(VARS)
    stmt = st.tuples(st.just("assign"), v, _expr(features))
    if "gradients" in features:
        stmt = st.one_of(stmt, st.tuples(st.just("grad"), v, v, st.sampled_from(LOSSES), st.booleans()))
    if "grad_of" in features:
        stmt = st.one_of(stmt, st.tuples(st.just("grad_of"), v, v, v, st.booleans()))
    if depth > 0:
        inner = _block(depth - 1, features)
        stmt = st.one_of(
            stmt,
            st.tuples(st.just("if"), v, st.sampled_from([-0.5, 0.0, 0.8]), inner, inner),
            st.tuples(st.just("while"), v, st.sampled_from([0.5, 2.0, 4.0]), st.integers(1, 4), st.booleans(), inner))
    return st.lists(stmt, min_size=1, max_size=3)


def programs(depth: int = 2, features=()):
    unknown = set(features) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown program features {sorted(unknown)}")
    return _block(depth, tuple(features))


def uses(prog, kind: str) -> bool:
    """Whether statement or expression kind `kind` occurs anywhere in `prog`."""
    for s in prog:
        if s[0] == kind or (s[0] == "assign" and s[2][0] == kind):
            return True
        if s[0] == "if" and (uses(s[3], kind) or uses(s[4], kind)):
            return True
        if s[0] == "while" and uses(s[5], kind):
            return True
    return False


# --------------------------------------------------------------------------- expression semantics

def _eval_expr(e, v, p, m):
    kind, w = e[0], p.w
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
    if kind == "mat_w":
        return m.mat_w(v[e[1]], p.M)
    if kind == "step":
        return v[e[1]] * m.positive(v[e[2]])
    if kind == "argmax_scale":
        return v[e[1]] * m.one_plus_argmax(v[e[2]])
    if kind == "mul_outer":
        return v[e[1]] * m.tanh(p.outer[e[2]])
    raise ValueError(kind)


def _loss_gradient(kind, u, w, m, value, decisions):
    """d loss(u) / du in closed form (`grad` statements in Python)."""
    if kind == "sq_w":
        return u * w * 2.0
    if kind == "tanh_w":
        t = m.tanh(u * w)
        return (1.0 - t * t) * w
    if kind == "sin_self":
        return m.cos(u) * u + m.sin(u)
    if kind == "cond_sq":
        taken = float(value(m.sum(u))) > 0.2
        decisions.append(taken)
        return u * w * 2.0 if taken else u * 0.0 + 0.5
    raise ValueError(kind)


def _loss(v, m):
    return m.sum(v["a"] * LOSS_WEIGHTS["a"]) + m.sum(v["b"] * LOSS_WEIGHTS["b"])


class Params:
    """The program's parameters: w, the matrix M computed from it at the start (where used), and
    `outer`, the variables' values where the innermost enclosing `if` or `while` began."""

    def __init__(self, w, m, prog, v):
        self.w = w
        self.M = m.weights(w) if uses(prog, "mat_w") else None
        self.outer = dict(v)

    def entering(self, v):
        """Makes v the outer values of the statement about to run; returns those to restore after it."""
        saved, self.outer = self.outer, dict(v)
        return saved


# --------------------------------------------------------------------------- Python control flow

class _NumpyMath:
    tanh, sin, cos, sum = staticmethod(np.tanh), staticmethod(np.sin), staticmethod(np.cos), staticmethod(np.sum)

    @staticmethod
    def weights(w):
        return w[:, None] * K + K0

    @staticmethod
    def mat_w(v, M):
        return v @ M

    @staticmethod
    def positive(v):
        return (v > 0).astype(np.float64)

    @staticmethod
    def one_plus_argmax(v):
        return 1.0 + float(np.argmax(v))


def run_python(prog, x, w, m=_NumpyMath, value=lambda t: t, decisions=None):
    """Runs with Python control flow; `value` gives the number a decision looks at."""
    v = {"a": x, "b": x * 0.5}
    _run_block(prog, v, Params(w, m, prog, v), m, value, decisions if decisions is not None else [])
    return _loss(v, m)


def _run_block(block, v, p, m, value, decisions):
    for s in block:
        if s[0] == "assign":
            v[s[1]] = _eval_expr(s[2], v, p, m)
        elif s[0] == "grad":
            _, dst, src, kind, in_if = s
            taken = True
            if in_if:
                taken = float(value(m.sum(v[src]))) > 0.0
                decisions.append(taken)
            if taken:
                v[dst] = v[dst] + _loss_gradient(kind, v[src], p.w, m, value, decisions) * -STEP
            elif kind == "cond_sq":  # the loss (and its cond) is computed whether or not the gradient is
                decisions.append(float(value(m.sum(v[src]))) > 0.2)
        elif s[0] == "grad_of":
            v[s[1]] = v[s[1]] + m.grad_of(v[s[2]], v[s[3]], s[4], decisions) * -STEP
        elif s[0] == "if":
            taken = float(value(m.sum(v[s[1]]))) > s[2]
            decisions.append(taken)
            saved = p.entering(v)
            _run_block(s[3] if taken else s[4], v, p, m, value, decisions)
            p.outer = saved
        else:
            _, src, threshold, trips, record, body = s
            k, written, saved = 0, [], p.entering(v)
            while True:
                go = k < trips and float(value(m.sum(v[src]))) < threshold
                decisions.append(go)
                if not go:
                    break
                if record:
                    written.append(v[src])
                _run_block(body, v, p, m, value, decisions)
                k += 1
            p.outer = saved
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

    def __getitem__(self, index):
        return Fwd(self.value[index], self.tangent[index])


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

    @staticmethod
    def weights(w):
        return w[:, None] * K + K0

    @staticmethod
    def mat_w(v, M):
        return v[0] * M[0] + v[1] * M[1]

    @staticmethod
    def positive(v):
        return _NumpyMath.positive(primal(v))

    @staticmethod
    def one_plus_argmax(v):
        return _NumpyMath.one_plus_argmax(primal(v))


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

    __radd__, __rmul__ = __add__, __mul__

    def __rsub__(self, o):
        return self * -1.0 + o


class _DualMath:
    """Each operation on the numpy values and, alongside, as graph ops on the tensors."""

    def __init__(self, evaluate):
        self.evaluate = evaluate   # a tensor of the graph being built -> its value

    @staticmethod
    def _both(numpy_fn, graph_fn, *ds):
        return _Dual(numpy_fn(*(d.value for d in ds)), graph_fn(*(d.tensor for d in ds)))

    def tanh(self, d):
        return self._both(np.tanh, graph.tanh, d)

    def sin(self, d):
        return self._both(np.sin, graph.sin, d)

    def cos(self, d):
        return self._both(np.cos, graph.cos, d)

    def sum(self, d):
        return self._both(np.sum, graph.reduce_sum, d)

    def weights(self, w):
        return self._both(_NumpyMath.weights, _GraphMath.weights, w)

    def mat_w(self, v, M):
        return self._both(_NumpyMath.mat_w, _GraphMath.mat_w, v, M)

    def positive(self, d):
        return self._both(_NumpyMath.positive, _GraphMath.positive, d)

    def one_plus_argmax(self, d):
        return self._both(_NumpyMath.one_plus_argmax, _GraphMath.one_plus_argmax, d)

    def grad_of(self, y, x, in_if, decisions):
        """d sum(y * C) / dx in the straight-line graph, where the values are the Python values."""
        if in_if:
            taken = float(np.sum(x.value)) > 0.0
            decisions.append(taken)
            if not taken:
                return _Dual(np.zeros(2), x.tensor * 0.0)
        (g,) = grad.gradients(graph.reduce_sum(y.tensor * graph.constant(C)), [x.tensor],
                              non_differentiable="ignore")
        return _Dual(np.asarray(self.evaluate(g)), g)


def build_unrolled(prog, x_value, w_value, x, w, evaluate=None):
    """The loss as a straight-line graph in inputs `x`, `w` (loops unrolled for these values).
    `evaluate(tensor)` runs the graph being built, for programs with "grad_of" statements."""
    out = run_python(prog, _Dual(x_value, x), _Dual(w_value, w), _DualMath(evaluate), value=lambda d: d.value)
    return out.tensor


# --------------------------------------------------------------------------- graph control flow

class _GraphMath:
    tanh, sin, cos, sum = (staticmethod(graph.tanh), staticmethod(graph.sin), staticmethod(graph.cos),
                           staticmethod(graph.reduce_sum))

    @staticmethod
    def weights(w):
        return graph.reshape(w, (2, 1)) * graph.constant(K) + graph.constant(K0)

    @staticmethod
    def mat_w(v, M):
        return graph.reshape(graph.matmul(graph.reshape(v, (1, 2)), M), (2,))

    @staticmethod
    def positive(v):
        return graph.cast(v > 0.0, np.float64)

    @staticmethod
    def one_plus_argmax(v):
        return graph.cast(graph.argmax(v), np.float64) + 1.0


def build_graph(prog, x, w, par: int = 32):
    """The loss as a graph with in-graph control flow."""
    v = {"a": x, "b": x * 0.5}
    v = _graph_block(prog, v, Params(w, _GraphMath, prog, v), par)
    return _loss(v, _GraphMath)


def _graph_loss(kind, u, w):
    if kind == "sq_w":
        return graph.reduce_sum(u * u * w)
    if kind == "tanh_w":
        return graph.reduce_sum(graph.tanh(u * w))
    if kind == "sin_self":
        return graph.reduce_sum(graph.sin(u) * u)
    if kind == "cond_sq":
        return graph.cond(graph.reduce_sum(u) > 0.2, lambda: graph.reduce_sum(u * u * w),
                          lambda: graph.reduce_sum(u * 0.5))
    raise ValueError(kind)


def _graph_gradient(y, x, in_if):
    """d y / d x, taken here, or inside a further cond on sum(x) > 0 (y computed before it)."""
    if not in_if:
        return grad.gradients(y, [x], non_differentiable="ignore")[0]
    return graph.cond(graph.reduce_sum(x) > 0.0, lambda: grad.gradients(y, [x], non_differentiable="ignore")[0],
                      lambda: x * 0.0)


def _graph_block(block, v, p, par):
    v = dict(v)
    for s in block:
        if s[0] == "assign":
            v[s[1]] = _eval_expr(s[2], v, p, _GraphMath)
        elif s[0] == "grad":
            _, dst, src, kind, in_if = s
            v[dst] = v[dst] - STEP * _graph_gradient(_graph_loss(kind, v[src], p.w), v[src], in_if)
        elif s[0] == "grad_of":
            _, dst, y, x, in_if = s
            v[dst] = v[dst] - STEP * _graph_gradient(graph.reduce_sum(v[y] * graph.constant(C)), v[x], in_if)
        elif s[0] == "if":
            _, src, threshold, then_b, else_b = s
            saved = p.entering(v)
            out = graph.cond(graph.reduce_sum(v[src]) > threshold,   # each branch traced once, as Python runs it
                             lambda: _in_order(_graph_block(then_b, v, p, par)),
                             lambda: _in_order(_graph_block(else_b, v, p, par)))
            p.outer = saved
            v = dict(zip(VARS, out))
        else:
            saved = p.entering(v)
            v = _graph_while(s, v, p, par)
            p.outer = saved
    return v


def _in_order(v: dict) -> tuple:
    return tuple(v[k] for k in VARS)


def _graph_while(s, v, p, par):
    _, src, threshold, trips, record, body = s
    ta = graph.TensorArray(np.float64, size=None, element_shape=(2,))

    def cond(k, ta, *vs):
        cur = dict(zip(VARS, vs))
        return graph.logical_and(k < trips, graph.reduce_sum(cur[src]) < threshold)

    def step(k, ta, *vs):
        cur = dict(zip(VARS, vs))
        if record:
            ta = ta.write(k, cur[src])
        cur = _graph_block(body, cur, p, par)
        return (k + 1, ta, *(cur[n] for n in VARS))

    k, ta, *vs = graph.while_loop(cond, step, (graph.constant(0), ta, *(v[n] for n in VARS)),
                                  parallel_iterations=par, names=("k", "ta", *VARS))
    v = dict(zip(VARS, vs))
    if record:
        v[src] = v[src] + graph.reduce_sum(ta.stack(), axis=0) * 0.1
    return v
