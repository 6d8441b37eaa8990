"""The einsum kernel: numpy's, on the equation the graph wrote out (graph/ops/einsum.py)."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel


@kernel("Einsum")
def _einsum(node, rt):
    equation, optimize = str(node.attrs["equation"]), node.attrs["optimize"]

    def einsum(*operands):
        return np.einsum(equation, *operands, optimize=optimize)
    return einsum
