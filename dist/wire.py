"""The bytes a rendezvous value travels as between processes: a small header, then the raw buffer.

A message is one header of fixed layout (`_FIXED`) followed by the key, the dtype string and the
shape; a small array's bytes follow in the same message (`inline`), a large one travels as a
second message straight from and into the array's own memory, so neither side copies it. Arrays
are never pickled: only a value that is not numeric data (a Python object, an object array) falls
back to pickle, flagged so, because it has no buffer to send.

The layout is private to `dist`; both ends run the same code.
"""
from __future__ import annotations

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


def encode(step: int, key: str, value, is_dead: bool, payload_tag: int) -> tuple[bytearray, object | None]:
    """The header message for (key, value, is_dead) of run `step` and the buffer to send after it, or None.

    `payload_tag` is the MPI tag the separate buffer message will carry; it is written into
    the header only when the value is too large to go inline.
    """
    kb = key.encode()
    if is_dead:
        return _header(step, kb, DEAD, b"", (), 0, 0), None
    flags = 0
    if isinstance(value, np.generic):
        flags |= SCALAR
    arr = value if isinstance(value, np.ndarray) else np.asarray(value) if _is_numeric(value) else None
    if arr is None or arr.dtype.hasobject:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        head = _header(step, kb, PICKLED | INLINE, b"", (), 0, len(data))
        head[len(head) - len(data):] = data
        return head, None
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")  # (np.ascontiguousarray would turn a 0-d array 1-d)
    dt = arr.dtype.str.encode()
    if arr.nbytes <= INLINE_LIMIT:
        head = _header(step, kb, flags | INLINE, dt, arr.shape, 0, arr.nbytes)
        if arr.nbytes:
            np.frombuffer(head, np.uint8, offset=len(head) - arr.nbytes)[:] = arr.reshape(-1).view(np.uint8)
        return head, None
    return _header(step, kb, flags, dt, arr.shape, payload_tag, 0), arr


def _is_numeric(value) -> bool:
    return isinstance(value, (np.generic, bool, int, float, complex))


def _header(step: int, kb: bytes, flags: int, dt: bytes, shape: tuple, payload_tag: int, inline_bytes: int) -> bytearray:
    meta = _FIXED.size + len(kb) + len(dt) + 8 * len(shape)
    start = _padded(meta) if inline_bytes else meta
    buf = bytearray(start + inline_bytes)
    _FIXED.pack_into(buf, 0, step, flags, len(shape), len(kb), len(dt), payload_tag)
    pos = _FIXED.size
    buf[pos:pos + len(kb)] = kb
    pos += len(kb)
    buf[pos:pos + len(dt)] = dt
    pos += len(dt)
    if shape:
        struct.pack_into(f"<{len(shape)}q", buf, pos, *shape)
    return buf


def decode_header(buf) -> Header:
    step, flags, ndim, klen, dlen, payload_tag = _FIXED.unpack_from(buf, 0)
    pos = _FIXED.size
    key = bytes(buf[pos:pos + klen]).decode()
    pos += klen
    dtype = np.dtype(bytes(buf[pos:pos + dlen]).decode()) if dlen else None
    pos += dlen
    shape = struct.unpack_from(f"<{ndim}q", buf, pos) if ndim else ()
    pos += 8 * ndim
    return Header(step, key, flags, dtype, shape, payload_tag, _padded(pos))


def inline_value(h: Header, buf: bytearray):
    """The value of a message whose data came inline (or that has none)."""
    if h.flags & DEAD:
        return None
    if h.flags & PICKLED:
        return pickle.loads(memoryview(buf)[h.data_offset:])
    count = int(np.prod(h.shape, dtype=np.int64))
    arr = np.frombuffer(buf, h.dtype, count=count, offset=h.data_offset if count else 0).reshape(h.shape)
    return finish(h, arr)


def empty_payload(h: Header) -> np.ndarray:
    """The array a separately sent payload is received into."""
    return np.empty(h.shape, h.dtype)


def finish(h: Header, arr: np.ndarray):
    # a numpy scalar sent is a numpy scalar received: kernels may tell the two apart
    return arr[()] if h.flags & SCALAR else arr
