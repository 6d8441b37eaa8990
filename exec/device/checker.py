"""The happens-before checker: vector clocks over a device's streams.

Every stream numbers the operations enqueued on it (1, 2, ...) and keeps a vector clock:
for each stream, the last of its operations known to happen before the next one enqueued
here. Stream order gives a stream its own operations; `Stream.wait(event)` joins the
clock the event captured when it was recorded. Nothing else orders two streams: what the
host happened to see complete does not count, which is what makes the checks
deterministic (they depend on the protocol, never on timing).

Each buffer remembers its writer and its readers since (stream, sequence, label). When an
operation is enqueued, the checker requires (`enqueue`):
- each buffer it reads or writes: its writer happens before it (read after write);
- each buffer it writes: the readers since that write happen before it (write after read:
  a buffer reused while a copy still reads it);
- no buffer it touches was freed.
A free (`free`) is ordered after the buffer's writer and readers either by the stream it
is ordered on (a stream-ordered free, as cudaFreeAsync) or by an event the caller saw
complete (a host free in an event callback); otherwise it frees memory an operation may
still be using. Violations raise `HappensBeforeError` in the thread that issued them.
"""
from __future__ import annotations


class HappensBeforeError(RuntimeError):
    """A kernel or copy touches a buffer without being ordered after the operations that use it."""


def join(into: dict, other: dict) -> None:
    """`into` becomes the element-wise maximum of the two vector clocks."""
    for stream, seq in other.items():
        if into.get(stream, 0) < seq:
            into[stream] = seq


def _covered(clock: dict, access: tuple, stream_name: str | None) -> bool:
    name, seq = access[0], access[1]
    return name == stream_name or clock.get(name, 0) >= seq


def _what(access: tuple) -> str:
    return f"{access[2]} (operation {access[1]} on the {access[0]} stream)"


def check_enqueue(stream_name: str, clock: dict, reads, writes, label: str) -> None:
    """Raises HappensBeforeError unless an operation `label` on `stream_name`, whose vector clock is
    `clock`, may read `reads` and write `writes` (see the module docstring)."""
    for buf, writing in _accesses(reads, writes):
        if buf.freed:
            raise HappensBeforeError(f"{label} on the {stream_name} stream uses {buf.label} after it was freed")
        w = buf.writer
        if w is not None and not _covered(clock, w, stream_name):
            raise HappensBeforeError(
                f"{label} on the {stream_name} stream {'overwrites' if writing else 'reads'} {buf.label}, written "
                f"by {_what(w)}, without waiting for it: record an event on the {w[0]} stream after the write "
                f"and make the {stream_name} stream wait on it")
        if writing:
            for r in buf.readers:
                if not _covered(clock, r, stream_name):
                    raise HappensBeforeError(
                        f"{label} on the {stream_name} stream overwrites {buf.label} while {_what(r)} may still "
                        f"read it: wait for an event recorded after that read first")


def _accesses(reads, writes):
    for b in reads:
        yield b, False
    for b in writes:
        yield b, True


def record_access(stream_name: str, seq: int, reads, writes, label: str) -> None:
    access = (stream_name, seq, label)
    for buf in reads:
        buf.readers.append(access)
    for buf in writes:
        buf.writer = access
        buf.readers = []


def check_free(buf, clock: dict, stream_name: str | None, how: str) -> None:
    """Raises unless every access to `buf` happens before a free ordered by `clock` (a stream's,
    `stream_name`, or the clock of an event seen complete: stream_name None)."""
    if buf.freed:
        raise HappensBeforeError(f"{buf.label} is freed twice")
    for access in ([buf.writer] if buf.writer is not None else []) + buf.readers:
        if not _covered(clock, access, stream_name):
            raise HappensBeforeError(
                f"{buf.label} is freed {how} while {_what(access)} may still be using it: free it on that "
                f"stream, after waiting for an event recorded after the {access[2]}, or in the callback of "
                "such an event")
