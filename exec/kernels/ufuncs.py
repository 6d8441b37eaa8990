"""Kernels of numpy's other elementwise functions (graph/ops/ufuncs.py): the numpy ufunc itself, so values and
dtypes are numpy's; each may compute into an input buffer nobody else reads (exec/donation.py)."""
from __future__ import annotations

from exec.kernels.registry import inplace, simple
from graph.ops.ufuncs import BINARY, UNARY

_UFUNCS = UNARY | BINARY
for _op, _fn in _UFUNCS.items():
    simple(_op, _fn)


@inplace(*_UFUNCS)
def _ufunc_into(node, rt, slot):
    uf = _UFUNCS[node.op]
    if uf.nin == 1:
        return lambda x: uf(x, out=x)
    if slot == 0:
        return lambda a, b: uf(a, b, out=a)
    return lambda a, b: uf(a, b, out=b)
