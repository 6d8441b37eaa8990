"""Converting and tracing pause Python's cyclic collector and leave it as the user set it."""
import gc

import numpy as np

import transpile
from transpile import conversion


def test_the_collector_is_paused_inside_and_restored_after():
    assert gc.isenabled()
    with conversion.collection_paused():
        assert not gc.isenabled()
        with conversion.collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_user_disabled_stays_disabled():
    gc.disable()
    try:
        with conversion.collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_first_call_leaves_the_collector_on():
    seen = []

    @transpile.function
    def f(x):
        seen.append(gc.isenabled())  # runs while tracing
        if x > 0:
            x = x * 2.0
        return x

    assert f(np.float64(1.5)) == 3.0
    assert seen == [False] and gc.isenabled()
