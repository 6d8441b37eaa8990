"""Runs on several threads update a Variable atomically, as TF's assign_add does: no update is lost,
in the compiled and the dataflow modes, on one device and on two, through the graph API and through
`transpile.function`; and a value read from a Variable never changes afterwards, though writes of the
Variable update its array in place when no one else holds it (exec/kernels/variables.py).

The interpreter switches threads every microsecond here (`sys.setswitchinterval`), so that a
read-modify-write that is not atomic is interleaved within a few hundred calls.
"""
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
import transpile
from exec import Session

MODES = ["compiled", "dataflow"]


@pytest.fixture(autouse=True)
def _switch_threads_often():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _on_threads(threads: int, calls: int, call) -> list:
    """`call()` `calls` times on each of `threads` threads, started together; what each call returned."""
    start = threading.Barrier(threads)
    results: list = [[] for _ in range(threads)]
    errors: list = []

    def work(k):
        start.wait()
        try:
            for _ in range(calls):
                results[k].append(call())
        except BaseException as e:  # noqa: BLE001  (raised below, in the test's thread)
            errors.append(e)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return [r for rs in results for r in rs]


# the updates a step makes: (how it builds them, the change one step makes to the value)
UPDATES = {
    "assign_add": (lambda v: v.assign_add(np.ones(v.shape)), 1.0),
    "assign_sub": (lambda v: v.assign_sub(np.ones(v.shape)), -1.0),
}


def _graph_step(shape, update: str, devices: int):
    g = G.Graph()
    v = G.Variable(np.zeros(shape), name="v")
    with g.as_default(), G.device("/cpu:1" if devices == 2 else ""):
        out = UPDATES[update][0](v)
    if devices == 2:
        with g.as_default(), G.device("/cpu:0"):
            out = out * 1.0  # the fetch lives on another device than the Variable
    return g, v, out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("devices", [1, 2])
@settings(max_examples=4, deadline=None)
@given(shape=st.sampled_from([(), (3,), (2, 2)]), update=st.sampled_from(["assign_add", "assign_sub"]),
       threads=st.integers(2, 4))
def test_updates_from_several_threads_are_never_lost(mode, devices, shape, update, threads):
    g, v, out = _graph_step(shape, update, devices)
    session = Session(g, mode=mode)
    session.run(out)
    calls = 150
    _on_threads(threads, calls, lambda: session.run(out))
    want = UPDATES[update][1] * (threads * calls + 1)
    np.testing.assert_array_equal(v.value, np.full(shape, want))


@pytest.mark.parametrize("mode", MODES)
def test_a_converted_counter_counts_every_call_of_every_thread(mode):
    counter = G.Variable(np.int64(0), name="counter")

    @transpile.function(mode=mode)
    def step():
        return counter.assign_add(1)

    step()
    seen = _on_threads(4, 500, step)
    assert counter.value == 4 * 500 + 1
    # an update gives the value it made: every count from 2 up was some call's, once
    assert sorted(int(s) for s in seen) == list(range(2, 4 * 500 + 2))


@pytest.mark.parametrize("mode", MODES)
def test_rows_assigned_from_several_threads_keep_every_write(mode):
    table = G.Variable(np.zeros(8), name="table")

    @transpile.function(mode=mode)
    def bump(k):
        table.assign_at(k, table.read()[k] + 1.0)

    bump(0)
    # thread k alone writes row k (its read and write are two ops), while the others write theirs
    workers = [threading.Thread(target=lambda k=k: [bump(k) for _ in range(300)]) for k in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    np.testing.assert_array_equal(table.value, [301.0] + [300.0] * 7)


@pytest.mark.parametrize("mode", MODES)
def test_a_value_read_never_changes_when_the_variable_is_updated_in_place(mode):
    v = G.Variable(np.zeros(64), name="weights")

    @transpile.function(mode=mode)
    def step():
        v.assign_add(np.ones(64))
        return v.read() * 1.0, v.read()

    step()
    kept = []

    def call():
        _, read = step()
        kept.append((read, read.copy()))
    _on_threads(3, 200, call)
    for held, copy in kept:
        np.testing.assert_array_equal(held, copy)  # it was not written in place after it was read
        assert np.all(held == held[0])  # one whole write's value
    np.testing.assert_array_equal(v.value, np.full(64, 601.0))


@pytest.mark.parametrize("mode", MODES)
def test_reads_on_other_threads_see_whole_writes_that_never_change(mode):
    """Reads that do not take the lock, beside writes in place of an array large enough that numpy lets other
    threads run during the write: each read sees one whole write's value, and keeps it."""
    v = G.Variable(np.zeros(200_000), name="big")

    @transpile.function(mode=mode)
    def write():
        v.assign_add(np.ones(200_000))

    @transpile.function(mode=mode)
    def read():
        return v.read()

    write()
    kept = []
    done = threading.Event()

    def reader():
        while not done.is_set():
            got = read()
            kept.append((got, got[0], got[-1]))

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for _ in range(300):
            write()
    finally:
        done.set()
        for t in readers:
            t.join()
    assert kept
    for held, first, last in kept:
        assert first == last and held[0] == first and held[-1] == last  # whole, and unchanged since
    np.testing.assert_array_equal(v.value, np.full(200_000, 301.0))
