"""BLAS threads: one while a plan runs, the previous setting restored after, nested and concurrent runs counted."""
import contextlib
import threading

import numpy as np
import pytest
import threadpoolctl

import graph as G
from exec import Session, blas

needs_blas = pytest.mark.skipif(not blas.libraries(), reason="no BLAS library with a thread setting found")


@needs_blas
def test_single_threaded_blocks_nest_and_restore():
    lib = blas.libraries()[0]
    before = lib.get()
    lib.set(2)
    try:
        with blas.single_threaded():
            assert blas.threads()[0] == 1
            with blas.single_threaded():
                assert blas.threads()[0] == 1
            assert blas.threads()[0] == 1
        assert blas.threads()[0] == 2
    finally:
        lib.set(before)


@needs_blas
def test_at_most_takes_the_smallest_open_limit_and_never_raises_the_count():
    lib = blas.libraries()[0]
    before = lib.get()
    lib.set(2)
    try:
        with blas.at_most(4):
            assert blas.threads()[0] == 2  # never more threads than the setting had
            with blas.at_most(1):
                assert blas.threads()[0] == 1
            assert blas.threads()[0] == 2
        assert blas.threads()[0] == 2
    finally:
        lib.set(before)


@needs_blas
def test_concurrent_blocks_restore_once_the_last_one_ends():
    lib = blas.libraries()[0]
    before = lib.get()
    lib.set(2)
    inside, release = threading.Event(), threading.Event()

    def other():
        with blas.single_threaded():
            inside.set()
            release.wait(10)
    t = threading.Thread(target=other)
    try:
        t.start()
        inside.wait(10)
        with blas.single_threaded():
            assert blas.threads()[0] == 1
        assert blas.threads()[0] == 1  # the other thread's block is still open
        release.set()
        t.join(10)
        assert blas.threads()[0] == 2
    finally:
        release.set()
        lib.set(before)


def test_the_libraries_are_those_threadpoolctl_finds():
    found = {i["filepath"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
    assert {lib.path for lib in blas.libraries()} <= found
    assert bool(blas.libraries()) == bool(found)


@needs_blas
def test_a_block_in_another_thread_limits_after_this_one_set_the_count():
    # threadpoolctl lets one thread at a time set OpenBLAS's shared pool: a set here must not lock out the others
    lib = blas.libraries()[0]
    before = lib.get()
    seen = []

    def other():
        with blas.single_threaded():
            seen.append(blas.threads()[0])
    try:
        lib.set(2)
        t = threading.Thread(target=other)
        t.start()
        t.join(10)
        assert seen == [1] and blas.threads()[0] == 2
    finally:
        lib.set(before)


@pytest.mark.parametrize("threads", [0, 2])
def test_every_run_is_single_threaded(monkeypatch, threads):
    entered = []

    @contextlib.contextmanager
    def spy():
        entered.append(True)
        yield
    monkeypatch.setattr(blas, "single_threaded", spy)
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [300, 300])
        y = G.matmul(x, x)
    np.testing.assert_allclose(Session(g, inter_op_threads=threads, mode="dataflow").run(y, {x: np.eye(300)}),
                               np.eye(300))
    assert entered == [True]
