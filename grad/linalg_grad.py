"""Gradients of the linear algebra ops (graph/ops/linalg.py): diagonals, inv, solve, det, slogdet, cholesky.

The matrix rules are the standard ones (as TensorFlow's linalg_grad.py): for Y = inv(A), dA = -Y^T dY Y^T;
for x = solve(A, b), db = solve(A^T, dx) and dA = -db x^T; for det and logabsdet, dA = g det inv(A)^T and
g inv(A)^T; for L = cholesky(A), dA = sym(L^-T phi(L^T dL) L^-1) with phi keeping the lower triangle and
halving the diagonal (Murray, "Differentiation of the Cholesky decomposition", 2016). Batch dimensions that
broadcasting added are summed away (`unbroadcast`).
"""
from __future__ import annotations

from grad.math_grad import unbroadcast
from grad.registry import register_gradient
from graph.ops import linalg as L
from graph.ops import math as m
from graph.ops.array import expand_dims, squeeze, transpose
from graph.ops.numpy_arrays import tril
from graph.ops.shape_ops import shape_of


def _t(x):
    """x with its last two axes swapped."""
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return transpose(x, perm)


def _matrix(g):
    """A gradient of batch shape (...) as (..., 1, 1), to scale matrices."""
    return expand_dims(expand_dims(g, -1), -1)


@register_gradient("Diagonal")
def _diagonal_grad(op, g):
    """The gradient goes back onto the diagonal it came from; zeros elsewhere."""
    a = op.attrs
    return L.diagonal_embed(g, op.input_shape(0), a["offset"], a["axis1"], a["axis2"])


@register_gradient("DiagonalEmbed")
def _diagonal_embed_grad(op, g):
    """The diagonal of the gradient; none for the shape."""
    a = op.attrs
    return [L.diagonal(g, a["offset"], a["axis1"], a["axis2"]), None]


@register_gradient("Inv")
def _inv_grad(op, g):
    """d inv(A) = -Y^T dY Y^T with Y = inv(A) (reuses the output)."""
    yt = op.outside(_t, op.outputs[0])
    return m.neg(m.matmul(m.matmul(yt, g), yt))


@register_gradient("Solve")
def _solve_grad(op, g):
    """x = A^-1 b: db = A^-T dx, dA = -db x^T (an outer product for a vector b)."""
    a, x = op.inputs[0], op.outputs[0]
    vector = op.fwd_inputs[1].ndim == 1
    # a vector b is solved as one column (a batch of g's would read as a matrix)
    gb = squeeze(L.solve(op.outside(_t, a), expand_dims(g, -1)), -1) if vector else L.solve(op.outside(_t, a), g)
    ga = None
    if op.needs(0):
        ga = m.neg(m.mul(expand_dims(gb, -1), expand_dims(x, -2)) if vector else m.matmul(gb, _t(x)))
        ga = unbroadcast(op, 0, ga)
    return [ga, unbroadcast(op, 1, gb) if op.needs(1) else None]


@register_gradient("Det")
def _det_grad(op, g):
    """d det(A) = det(A) inv(A)^T dA."""
    a = op.inputs[0]
    return m.mul(_matrix(m.mul(g, op.outputs[0])), _t(L.inv(a)))


@register_gradient("Slogdet")
def _slogdet_grad(op, g_sign, g_logdet):
    """d log|det(A)| = inv(A)^T dA; the sign has no gradient."""
    return m.mul(_matrix(g_logdet), _t(L.inv(op.inputs[0])))


@register_gradient("Cholesky")
def _cholesky_grad(op, g):
    """dA = sym(L^-T phi(L^T dL) L^-1), phi(M) = the lower triangle of M with its diagonal halved."""
    low = op.outputs[0]
    low_inv = L.inv(low)
    middle = m.matmul(_t(low), g)
    phi = m.sub(tril(middle), m.mul(_diagonal_part(middle), 0.5))
    ga = m.matmul(m.matmul(_t(low_inv), phi), low_inv)
    return m.mul(m.add(ga, _t(ga)), 0.5)


def _diagonal_part(x):
    """The matrices x with zeros off their diagonals."""
    nd = x.ndim
    return L.diagonal_embed(L.diagonal(x, 0, nd - 2, nd - 1), shape_of(x), 0, nd - 2, nd - 1)
