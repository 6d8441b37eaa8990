"""Swapping saved loop values to host memory (docs/design.md, "Devices"): same gradients, less device memory."""
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
from exec import RunError, Session
from exec.device import DeviceOutOfMemory, HappensBeforeError
from exec.device.swapping import DeviceMemoryManager
from tests.exec.device_fixtures import KINDS, make_device

B, H = 8, 40  # a saved h_t is 2.5 KB of float64, over the 2 KB below which values are not swapped


def rnn(T, swap_memory, parallel_iterations=10, nested=False):
    """h_t = tanh(h_{t-1} @ w + x_t) for T steps (each with an inner loop of 2 steps when `nested`);
    returns the graph, its placeholders and d sum(h_T^2) / dw."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (T, B, H), name="x")
        w = G.placeholder(np.float64, (H, H), name="w")

        def cell(h, xt):
            return G.tanh(G.matmul(h, w) + xt)

        def body(i, h):
            if nested:
                _, h = G.while_loop(lambda j, h: j < 2, lambda j, h: (j + 1, cell(h, x[i])), (G.constant(0), h),
                                    swap_memory=swap_memory, parallel_iterations=parallel_iterations)
                return i + 1, h
            return i + 1, cell(h, x[i])
        _, h = G.while_loop(lambda i, h: i < T, body, (G.constant(0), G.zeros([B, H], np.float64)),
                            swap_memory=swap_memory, parallel_iterations=parallel_iterations)
        (dw,) = grad.gradients(G.reduce_sum(h * h), [w])
    rng = np.random.default_rng(T)
    feed = {x: rng.normal(size=(T, B, H)) * 0.5, w: rng.normal(size=(H, H)) * 0.2}
    return g, feed, dw


def settle(device):
    """Waits for the copies a run left in flight (a pop of a value still being swapped out frees
    its buffers when the copy's callback runs, after the run) and for their callbacks."""
    device.synchronize()
    deadline = time.monotonic() + 10
    while (device.bytes_in_use or device.host_bytes) and time.monotonic() < deadline:
        time.sleep(0.001)  # a CuPy device's callbacks run on its poller thread


def run(g, feed, dw, device=None, **kw):
    s = Session(g, device=device, **kw)
    return s.run(dw, feed), s.runtime.memory


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
@pytest.mark.parametrize("parallel_iterations", [1, 10])
def test_swapped_and_kept_gradients_are_identical(kind, mode, parallel_iterations):
    g, feed, dw = rnn(40, swap_memory=True, parallel_iterations=parallel_iterations)
    want, _ = run(g, feed, dw, mode=mode)
    device = make_device(kind, memory_limit=200_000, copy_bandwidth=2e8)
    got, memory = run(g, feed, dw, device, mode=mode)
    np.testing.assert_array_equal(got, want)
    settle(device)
    stats = memory.stats()
    assert stats["swap_outs"] > 0
    # every value swapped out (or sharing a copy swapped out) was copied back or popped before it left
    assert stats["swap_ins"] + stats["popped_swapping_out"] == stats["swap_outs"] + stats["shared_swaps"]
    assert stats["bytes_in_use"] == 0 and device.bytes_in_use == 0 and device.host_bytes == 0
    device.close()


@settings(max_examples=6, deadline=None)
@given(T=st.integers(1, 30), threshold=st.sampled_from([0.0, 0.3, 0.9]), prefetch=st.sampled_from([0, 5000, 10**6]),
       nested=st.booleans(), mode=st.sampled_from(["dataflow", "compiled"]))
def test_any_threshold_and_prefetch_budget_gives_the_same_gradient(T, threshold, prefetch, nested, mode):
    g, feed, dw = rnn(T, swap_memory=False, parallel_iterations=4, nested=nested)
    want, _ = run(g, feed, dw, mode=mode)
    device = make_device("simulated", memory_limit=10**7)
    s = Session(g, device=device, mode=mode)
    s.runtime.memory = DeviceMemoryManager(device, "swap", threshold=threshold, prefetch_bytes=prefetch)
    np.testing.assert_array_equal(s.run(dw, feed), want)
    settle(device)
    assert device.bytes_in_use == 0
    device.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
def test_swapping_trains_under_a_limit_that_keeping_exceeds(kind, mode):
    g, feed, dw = rnn(60, swap_memory=False)
    want, cpu = run(g, feed, dw, mode=mode)
    limit = cpu.peak_bytes // 2  # keeping every h_t takes twice this
    keep = make_device(kind, memory_limit=limit)
    with pytest.raises(RunError, match="out of memory on /gpu:0 allocating 2560 bytes for the value saved by stack") \
            as e:
        run(g, feed, dw, keep, mode=mode)
    assert isinstance(e.value.__cause__, DeviceOutOfMemory)
    swap = make_device(kind, memory_limit=limit)
    got, memory = run(g, feed, dw, swap, mode=mode, memory_policy="swap")
    np.testing.assert_array_equal(got, want)
    assert swap.peak_bytes <= limit and memory.peak_bytes > limit  # more saved than the device held at once
    keep.close()
    swap.close()


def test_only_loops_that_allow_it_swap_and_small_values_stay():
    g, feed, dw = rnn(30, swap_memory=False)
    device = make_device("simulated", memory_limit=200_000)  # holds all, but above the swap threshold
    _, memory = run(g, feed, dw, device)  # policy "keep", loops without swap_memory: nothing moves
    assert memory.stats()["swap_outs"] == 0 and device.peak_bytes > 0.7 * 200_000
    g, feed, dw = rnn(30, swap_memory=True)
    _, memory = run(g, feed, dw, make_device("simulated", memory_limit=200_000))
    assert memory.stats()["swap_outs"] > 0
    small = make_device("simulated", memory_limit=10**5)
    s = Session(g, device=small)
    s.runtime.memory = DeviceMemoryManager(small, "swap", threshold=0.0)
    s.runtime.memory.save(np.zeros(256), swap=True)  # exactly 2 KB: not swapped
    big = s.runtime.memory.save(np.zeros(257), swap=True)
    assert s.runtime.memory.swap_outs == 1
    np.testing.assert_array_equal(s.runtime.memory.restore(big), np.zeros(257))


def test_pops_of_values_still_in_flight_complete_through_the_executor():
    # a slow link: the gradient loop catches up with its prefetches, and pops wait on events
    g, feed, dw = rnn(40, swap_memory=True, parallel_iterations=1)
    want, _ = run(g, feed, dw, mode="dataflow")
    device = make_device("simulated", memory_limit=100_000, copy_bandwidth=2e7)
    got, memory = run(g, feed, dw, device, mode="dataflow")
    np.testing.assert_array_equal(got, want)
    assert memory.waited_pops > 0


def test_a_swap_out_that_does_not_wait_for_the_compute_stream_is_caught(monkeypatch):
    g, feed, dw = rnn(20, swap_memory=True)
    device = make_device("simulated", memory_limit=50_000)
    monkeypatch.setattr(device.d2h, "wait", lambda event: None)  # the seeded bug
    with pytest.raises(RunError, match="swap out the value saved by stack .* without waiting for it") as e:
        run(g, feed, dw, device)
    assert isinstance(e.value.__cause__, HappensBeforeError)


def test_freeing_a_swapped_value_before_its_copy_finished_is_caught(monkeypatch):
    g, feed, dw = rnn(20, swap_memory=True)
    device = make_device("simulated", memory_limit=50_000, copy_bandwidth=1e7)

    def swap_out_and_free_at_once(self, tok, value, original=DeviceMemoryManager._swap_out):
        original(self, tok, value)
        self.dev.free(tok.buf, stream=self.dev.compute)  # the seeded bug: not in the copy's callback
    monkeypatch.setattr(DeviceMemoryManager, "_swap_out", swap_out_and_free_at_once)
    with pytest.raises(RunError, match="freed on the compute stream while swap out the value saved by stack"):
        run(g, feed, dw, device)


def test_a_pop_that_does_not_wait_for_its_copy_back_is_caught(monkeypatch):
    g, feed, dw = rnn(20, swap_memory=True)
    device = make_device("simulated", memory_limit=50_000)
    monkeypatch.setattr(device.compute, "wait", lambda event: None)  # the seeded bug
    with pytest.raises(Exception, match="freed on the compute stream while swap in"):
        run(g, feed, dw, device, mode="compiled")
        device.synchronize()  # where the failure happened in a callback


def test_memory_policy_swap_needs_a_device():
    with pytest.raises(ValueError, match="memory_policy='swap' needs a device"):
        Session(G.Graph(), memory_policy="swap")
    with pytest.raises(ValueError, match="memory_policy must be one of 'keep', 'swap'"):
        Session(G.Graph(), device=make_device("simulated"), memory_policy="often")


def test_a_value_pushed_twice_shares_one_host_copy():
    # as h_t saved for tanh's gradient and, one iteration later, as h_{t-1} for the matmul's
    device = make_device("simulated", memory_limit=10**6)
    memory = DeviceMemoryManager(device, "swap", threshold=0.0)
    h = np.arange(1000.0)
    first, second = memory.save(h, True, "a", 0), memory.save(h, True, "b", 1)
    assert memory.swap_outs == 1 and memory.shared_swaps == 1
    assert device.bytes_in_use <= h.nbytes  # one device buffer at most, until the copy frees it
    device.synchronize()  # a simulated device's callbacks have run when it returns
    assert device.bytes_in_use == 0 and device.host_bytes == h.nbytes
    np.testing.assert_array_equal(memory.restore(second), h)
    assert device.host_bytes == h.nbytes  # the first still uses the copy
    np.testing.assert_array_equal(memory.restore(first), h)
    settle(device)
    assert device.bytes_in_use == 0 and device.host_bytes == 0
