"""The bytes a rendezvous value travels as between processes: a small header, then the raw buffer.

A message is one header of fixed layout (`_FIXED`) followed by the key, the dtype string and the
shape; a small array's bytes follow in the same message (`inline`), a large one travels as a
second message straight from and into the array's own memory, so neither side copies it. Arrays
are never pickled: only a value that is not numeric data (a Python object, an object array) falls
back to pickle, flagged so, because it has no buffer to send.

The layout is private to `dist`; both ends run the same code.
"""
from __future__ import annotations

import math
import pickle
import struct

import numpy as np

# step, flags, ndim, key length, dtype-string length, payload tag (0: inline or no payload)
_FIXED = struct.Struct("<IBBHHxxI")
DEAD, SCALAR, PICKLED, INLINE = 1, 2, 4, 8
# above this many bytes an array goes as its own message, received into its final array
INLINE_LIMIT = 16 * 1024


class Header:
    """A decoded header: what the receiver needs to rebuild the value."""

    __slots__ = ("step", "key", "flags", "dtype", "shape", "payload_tag", "data_offset")

    def __init__(self, step, key, flags, dtype, shape, payload_tag, data_offset):
        self.step, self.key, self.flags, self.dtype, self.shape = step, key, flags, dtype, shape
        self.payload_tag, self.data_offset = payload_tag, data_offset


def _padded(n: int) -> int:
    # the inline data starts 16-byte aligned within the message, so float64 views are aligned
    return (n + 15) & ~15


def encode(step: int, key: str, value, is_dead: bool, payload_tag: int) -> tuple[bytes, object | None]:
    """The header message for (key, value, is_dead) of run `step` and the buffer to send after it, or None.

    `payload_tag` is the MPI tag the separate buffer message will carry; it is written into
    the header only when the value is too large to go inline. (This runs once per value sent,
    a loop predicate each iteration: it builds the message with one join, no numpy calls for
    a scalar.)
    """
    kb = key.encode()
    if is_dead:
        return _FIXED.pack(step, DEAD, 0, len(kb), 0, 0) + kb, None
    if value.__class__ is np.ndarray:
        arr, flags = value, 0
    elif isinstance(value, np.generic) and not value.dtype.hasobject:
        dt = _dtype_bytes(value.dtype)
        meta = _FIXED.size + len(kb) + len(dt)
        return b"".join((_FIXED.pack(step, SCALAR | INLINE, 0, len(kb), len(dt), 0), kb, dt,
                         bytes(_padded(meta) - meta), value.tobytes())), None
    elif isinstance(value, (bool, int, float, complex)):
        arr, flags = np.asarray(value), 0
    else:
        arr, flags = None, 0
    if arr is None or arr.dtype.hasobject:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        meta = _FIXED.size + len(kb)
        return b"".join((_FIXED.pack(step, PICKLED | INLINE, 0, len(kb), 0, 0), kb, bytes(_padded(meta) - meta),
                         data)), None
    dt = _dtype_bytes(arr.dtype)
    shape = arr.shape
    fixed = [_FIXED.pack(step, flags, len(shape), len(kb), len(dt), 0), kb, dt]
    if shape:
        fixed.append(struct.pack(f"<{len(shape)}q", *shape))
    if arr.nbytes > INLINE_LIMIT:
        fixed[0] = _FIXED.pack(step, flags, len(shape), len(kb), len(dt), payload_tag)
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")
        return b"".join(fixed), arr
    meta = _FIXED.size + len(kb) + len(dt) + 8 * len(shape)
    fixed[0] = _FIXED.pack(step, flags | INLINE, len(shape), len(kb), len(dt), 0)
    fixed.append(bytes(_padded(meta) - meta))
    fixed.append(arr.tobytes())  # C order, whatever the array's layout
    return b"".join(fixed), None


_DTYPE_BYTES: dict = {}
_DTYPES: dict = {}


def _dtype_bytes(dtype: np.dtype) -> bytes:
    got = _DTYPE_BYTES.get(dtype)
    if got is None:
        got = _DTYPE_BYTES[dtype] = dtype.str.encode()
    return got


def _dtype(b: bytes) -> np.dtype:
    got = _DTYPES.get(b)
    if got is None:
        got = _DTYPES[b] = np.dtype(b.decode())
    return got


def decode_header(buf) -> Header:
    step, flags, ndim, klen, dlen, payload_tag = _FIXED.unpack_from(buf, 0)
    pos = _FIXED.size
    key = bytes(buf[pos:pos + klen]).decode()
    pos += klen
    dtype = _dtype(bytes(buf[pos:pos + dlen])) if dlen else None
    pos += dlen
    shape = struct.unpack_from(f"<{ndim}q", buf, pos) if ndim else ()
    pos += 8 * ndim
    return Header(step, key, flags, dtype, shape, payload_tag, _padded(pos))


def inline_value(h: Header, buf: bytearray):
    """The value of a message whose data came inline (or that has none)."""
    flags = h.flags
    if flags & DEAD:
        return None
    if flags & PICKLED:
        return pickle.loads(memoryview(buf)[h.data_offset:])
    if flags & SCALAR:
        return np.frombuffer(buf, h.dtype, count=1, offset=h.data_offset)[0]
    count = math.prod(h.shape)
    arr = np.frombuffer(buf, h.dtype, count=count, offset=h.data_offset if count else 0)
    return arr.reshape(h.shape) if len(h.shape) != 1 else arr


def empty_payload(h: Header) -> np.ndarray:
    """The array a separately sent payload is received into."""
    return np.empty(h.shape, h.dtype)


def finish(h: Header, arr: np.ndarray):
    # a numpy scalar sent is a numpy scalar received: kernels may tell the two apart
    return arr[()] if h.flags & SCALAR else arr
