"""Kernels: one numpy callable per node, built from the registry (exec/kernels/registry.py).

Importing this package registers every kernel module's kernels.
"""
from exec.kernels import (  # noqa: F401  (they register)
    along_axis,
    array,
    basic,
    einsum,
    indexing,
    linalg,
    math,
    nn,
    numpy_call,
    python_math,
    random,
    reduce,
    stack,
    strings,
    tensor_array,
    ufuncs,
    variables,
)
from exec.kernels.registry import HEAVY_OPS, INPLACE, KERNELS, feeding, get_inplace_kernel, get_kernel

__all__ = ["HEAVY_OPS", "INPLACE", "KERNELS", "feeding", "get_inplace_kernel", "get_kernel"]
