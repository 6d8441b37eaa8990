"""graph.gc_pause: the collector is held off during a build and given back as it was, whatever happens."""
import gc
import threading

import numpy as np
import pytest

import transpile
from graph.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def collector_enabled():
    gc.enable()
    yield
    gc.enable()


def test_nested_blocks_give_the_collector_back_at_the_outermost():
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_disabled_by_the_user_stays_disabled():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_block_gives_the_collector_back():
    with pytest.raises(ZeroDivisionError):
        with gc_paused():
            1 / 0
    assert gc.isenabled()


def test_overlapping_blocks_in_two_threads_give_it_back_after_the_last():
    inside, leave = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's build goes on
    leave.set()
    t.join()
    assert gc.isenabled()


def test_a_first_call_that_fails_leaves_the_collector_running():
    @transpile.function
    def f(x):
        return x + undefined_name  # noqa: F821

    with pytest.raises(NameError):
        f(np.float64(1.0))
    assert gc.isenabled()
