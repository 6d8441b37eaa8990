"""Element types: numpy dtypes, plus `variant` for opaque runtime objects."""
from __future__ import annotations

import numpy as np


class _Variant:
    """The dtype of tensors whose values are runtime objects (TensorArrays, stacks)."""

    __slots__ = ()
    name = "variant"
    kind = "V"

    def __repr__(self) -> str:
        return "variant"

    def __reduce__(self):
        return "variant"


variant = _Variant()

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)


def as_dtype(dtype) -> np.dtype | _Variant:
    """Normalises anything numpy accepts as a dtype (and `variant`)."""
    if dtype is variant:
        return variant
    return np.dtype(dtype)


def is_floating(dtype) -> bool:
    return dtype is not variant and dtype.kind in "fc"


def is_integer(dtype) -> bool:
    return dtype is not variant and dtype.kind in "iu"


def is_bool(dtype) -> bool:
    return dtype is not variant and dtype.kind == "b"


def is_numeric(dtype) -> bool:
    return dtype is not variant and dtype.kind in "biufc"


def dtype_of_python_scalar(value, like=None) -> np.dtype:
    """The dtype a Python scalar takes next to a tensor of dtype `like`.

    Follows numpy 2 (NEP 50): a Python scalar is "weak" and adopts the tensor's
    dtype when it is of a compatible kind (int next to any number, float next to a
    float); otherwise it takes numpy's default (int64, float64, bool).
    """
    if isinstance(value, (bool, np.bool_)):
        return bool_ if like is None or like is variant or like.kind != "b" else like
    if isinstance(value, int):
        if like is not None and like is not variant and like.kind in "iufc":
            return like
        return int64
    if isinstance(value, float):
        if like is not None and like is not variant and like.kind in "fc":
            return like
        return float64
    if isinstance(value, complex):
        return np.dtype(np.complex128)
    return np.asarray(value).dtype


def result_type(*dtypes) -> np.dtype:
    """Binary-op result dtype, numpy's promotion rules."""
    return np.result_type(*dtypes)
