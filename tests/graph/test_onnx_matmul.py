"""Exported matrix products compute in onnxruntime, with its default optimizations, what the executor computes:
every form of `a @ b` (1-D, 2-D and batched operands, broadcast batches), a transpose of either operand (`.T`,
`np.transpose` with any axes, `swapaxes`), a scale or a bias around the product, at the top level and inside
Loop and If bodies. onnxruntime's MatmulTransposeFusion once turned `A.T @ u` into a FusedMatMul that computes
`A.reshape(m, n) @ u` (graph/onnx/matmul.py)."""
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graph
from exec import Session
from tests.graph.onnx_checks import check_same, default_runtime

onnx = pytest.importorskip("onnx")
from graph.onnx import export  # noqa: E402

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
_DTYPES = (np.float32, np.float64, np.int64)


@dataclass(frozen=True)
class Operand:
    """One side of the product: `transpose(placeholder, perm)` has the shape `product_shape` the product sees.

    `perm` None: no transpose; "T": numpy's `.T` (all axes reversed, the op's default permutation)."""

    dtype: type
    product_shape: tuple[int, ...]
    perm: tuple[int, ...] | str | None
    hidden_rank: bool  # fed flat with its shape, so the graph does not know its rank

    @property
    def axes(self) -> tuple[int, ...] | None:
        if self.perm == "T":
            return tuple(reversed(range(len(self.product_shape))))
        return self.perm

    @property
    def fed_shape(self) -> tuple[int, ...]:
        if self.axes is None:
            return self.product_shape
        shape = [0] * len(self.product_shape)
        for i, axis in enumerate(self.axes):  # transpose(x, axes).shape[i] == x.shape[axes[i]]
            shape[axis] = self.product_shape[i]
        return tuple(shape)

    def placeholders(self, name: str) -> list:
        if not self.hidden_rank:
            return [graph.placeholder(self.dtype, self.fed_shape, name=name)]
        return [graph.placeholder(self.dtype, [None], name=name), graph.placeholder(np.int64, [None], name=f"{name}_shape")]

    def feeds(self, value: np.ndarray) -> list:
        return [np.ravel(value), np.array(value.shape, np.int64)] if self.hidden_rank else [value]

    def build(self, x):
        if self.perm is None:
            return x
        return graph.transpose(x) if self.perm == "T" else graph.transpose(x, list(self.perm))


@dataclass(frozen=True)
class Product:
    """`a @ b` with what may surround it, built in `where`: "top", "loop" (its body) or "cond" (a branch)."""

    a: Operand
    b: Operand
    scale_a: bool   # 2 * a before the product (a Transpose moved next to the MatMul, MatMulScaleFusion)
    scale: bool     # the product times 3 (MatMulScaleFusion)
    bias: bool      # the product plus a bias over its last axis (MatMul + Add -> Gemm)
    where: str

    def build(self, a, b):
        a, b = self.a.build(a), self.b.build(b)
        y = graph.matmul(a * 2 if self.scale_a else a, b)
        if self.scale:
            y = y * 3
        if self.bias:  # over the last axis where its length is known, else a scalar
            last = y.shape[-1] if y.shape else None
            y = y + graph.constant(y.dtype.type(1) if last is None else np.arange(1, 1 + last).astype(y.dtype))
        return y

    def outputs(self, y) -> list:
        """The product; of unknown rank (not exportable as an output), its values and its shape."""
        return [y] if y.shape is not None else [graph.reshape(y, [-1]), graph.shape(y)]


def _transposes(rank: int):
    perms = st.permutations(range(rank)).map(tuple)
    return st.one_of(st.none(), st.just("T"), perms) if rank > 1 else st.sampled_from([None, "T", (0,)])


@st.composite
def products(draw):
    rank_a, rank_b = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dim = st.integers(1, 4)
    n, k, m = draw(dim), draw(dim), draw(dim)
    batch = draw(st.integers(1, 3))
    batch_a = (draw(st.sampled_from([1, batch])),) if rank_a == 3 else ()
    batch_b = (draw(st.sampled_from([1, batch])),) if rank_b == 3 else ()
    a_shape = batch_a + ((k,) if rank_a == 1 else (n, k))
    b_shape = batch_b + ((k,) if rank_b == 1 else (k, m))
    hidden = st.integers(0, 5).map(lambda v: v == 0)  # mostly known ranks, as programs have them
    a = Operand(draw(st.sampled_from(_DTYPES)), a_shape, draw(_transposes(rank_a)), draw(hidden))
    b = Operand(draw(st.sampled_from(_DTYPES)), b_shape, draw(_transposes(rank_b)), draw(hidden))
    flags = draw(st.tuples(st.booleans(), st.booleans(), st.booleans()))
    return Product(a, b, *flags, where=draw(st.sampled_from(["top", "loop", "cond"])))


def _build(product: Product):
    """The graph, its placeholders (those of a and b, then a loop's trip count or a cond's predicate), outputs."""
    g = graph.Graph()
    with g.as_default():
        a_in, b_in = product.a.placeholders("a"), product.b.placeholders("b")
        a = a_in[0] if len(a_in) == 1 else graph.reshape(*a_in)
        b = b_in[0] if len(b_in) == 1 else graph.reshape(*b_in)
        inputs = [*a_in, *b_in]
        if product.where == "top":
            return g, inputs, product.outputs(product.build(a, b))
        if product.where == "cond":
            pred = graph.placeholder(np.bool_, [], name="pred")
            y = graph.cond(pred, lambda: product.build(a, b), lambda: -product.build(a, b))
            return g, [*inputs, pred], product.outputs(y)
        n = graph.placeholder(np.int64, [], name="n")
        start = graph.zeros_like(product.build(a, b))
        _, total = graph.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + product.build(a, b)),
                                    [graph.constant(np.int64(0)), start])
        return g, [*inputs, n], product.outputs(total)


def _value(operand: Operand, rng) -> np.ndarray:
    if np.dtype(operand.dtype).kind == "i":
        return rng.integers(-5, 6, operand.fed_shape).astype(operand.dtype)
    return rng.standard_normal(operand.fed_shape).astype(operand.dtype)


@settings(max_examples=150, **_SETTINGS)
@given(products(), st.integers(0, 2**32 - 1))
def test_every_form_of_matmul_computes_the_same_in_onnxruntime_with_default_options(product, seed):
    g, inputs, outputs = _build(product)
    model = export(g, inputs, outputs)
    onnx.checker.check_model(model, full_check=True)  # the declared operand types agree with onnx's inference
    sess, names = default_runtime(model), [i.name for i in model.graph.input]
    rng = np.random.default_rng(seed)
    operands = [*product.a.feeds(_value(product.a, rng)), *product.b.feeds(_value(product.b, rng))]
    extras = {"top": [()], "cond": [(True,), (False,)], "loop": [(0,), (3,)]}[product.where]
    for extra in extras:
        feeds = [*operands, *(np.asarray(v) for v in extra)]
        want = Session(g).run(outputs, dict(zip(inputs, feeds)))
        got = sess.run(None, dict(zip(names, feeds)))
        for k, (x, y) in enumerate(zip(got, want, strict=True)):
            check_same(x, y, f"output {k} of {product} with {extra}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_a_transposed_matrix_times_a_vector(dtype):
    """The reported case: `A.T @ u` came out of onnxruntime as `A.reshape(4, 3) @ u`."""
    a, u = Operand(dtype, (4, 3), "T", False), Operand(dtype, (3,), None, False)
    g, inputs, outputs = _build(Product(a, u, scale_a=False, scale=False, bias=False, where="top"))
    matrix, vector = np.arange(12.0, dtype=dtype).reshape(3, 4), np.array([1.0, 2.0, 3.0], dtype)
    (got,) = default_runtime(export(g, inputs, outputs)).run(None, {"a": matrix, "b": vector})
    check_same(got, matrix.T @ vector)


def test_a_product_of_a_batch_transposed_and_cast_builds_a_session():
    """`np.transpose(x, (1, 0, 2)) @ w` with an int64 `x`: a Cast of a Transpose that moves a batch axis, into a
    MatMul with an operand of another rank. onnxruntime's MatmulTransposeFusion swapped the Cast and the Transpose,
    then gave up on the ranks and crashed the process (a segfault) while building the session."""
    x, w = Operand(np.int64, (2, 3, 4), (1, 0, 2), False), Operand(np.float64, (4, 5), None, False)
    g, inputs, outputs = _build(Product(x, w, scale_a=False, scale=False, bias=False, where="top"))
    values = [np.arange(24).reshape(3, 2, 4), np.linspace(-1.0, 1.0, 20).reshape(4, 5)]
    (got,) = default_runtime(export(g, inputs, outputs)).run(None, dict(zip(["a", "b"], values)))
    check_same(got, np.transpose(values[0], (1, 0, 2)) @ values[1])
