"""The device protocol: streams, events, accounted memory and the happens-before checker."""
import threading
import time

import numpy as np
import pytest

from exec.device import DeviceOutOfMemory, HappensBeforeError
from tests.exec.device_fixtures import KINDS, make_device


@pytest.fixture(params=KINDS)
def device(request):
    d = make_device(request.param, memory_limit=1 << 20)
    yield d
    d.synchronize()
    d.close()


def host(d, buf):
    return np.asarray(d.to_numpy(buf, d.compute)) if not buf.host else np.asarray(buf.array)


def test_a_value_goes_to_the_host_and_back(device):
    a = np.arange(1000, dtype=np.float32)
    buf = device.adopt(a, "a")
    assert device.bytes_in_use == a.nbytes
    device.d2h.wait(device.compute.record())
    h, out = device.copy_to_host(buf, "a")
    out.synchronize()
    np.testing.assert_array_equal(host(device, h), a)
    device.free(buf, after=out)
    assert device.bytes_in_use == 0
    device.h2d.wait(out)
    back, into = device.copy_to_device(h, "a")
    device.compute.wait(into)
    into.synchronize()
    np.testing.assert_array_equal(host(device, back), a)
    device.free(back, stream=device.compute)
    device.free(h, after=into)
    assert device.bytes_in_use == 0 and device.host_bytes == 0
    assert device.peak_bytes == a.nbytes


def test_an_allocation_past_the_limit_names_what_it_was_for(device):
    device.adopt(np.zeros(100_000), "the first")  # 800 KB of 1 MiB
    with pytest.raises(DeviceOutOfMemory, match="allocating 800000 bytes for the second: 800000 of its 1048576"):
        device.adopt(np.zeros(100_000), "the second")


def test_operations_of_a_stream_run_in_order_and_events_call_back_once_done(device):
    seen, called = [], threading.Event()
    for k in range(20):
        device.compute.enqueue(lambda k=k: seen.append(k), label=f"op {k}")
    ev = device.compute.record()
    ev.on_complete(lambda: (seen.append("callback"), called.set()))
    assert called.wait(10)
    assert seen == list(range(20)) + ["callback"]
    assert ev.query()
    later = []
    ev.on_complete(lambda: later.append(1))  # an event already complete calls back at once
    assert later == [1]


def test_a_copy_that_does_not_wait_for_the_producer_is_caught(device):
    buf = device.adopt(np.ones(256), "h_t")
    with pytest.raises(HappensBeforeError, match="swap out h_t on the d2h stream reads h_t, written by produce h_t|"
                                                 "upload h_t"):
        device.copy_to_host(buf, "h_t")


def test_a_kernel_that_does_not_wait_for_a_copy_back_is_caught(device):
    buf = device.adopt(np.ones(256), "c_t")
    device.d2h.wait(device.compute.record())
    h, out = device.copy_to_host(buf, "c_t")
    out.synchronize()
    device.h2d.wait(out)
    back, _ = device.copy_to_device(h, "c_t")
    with pytest.raises(HappensBeforeError, match="reads c_t, written by swap in c_t .*h2d stream"):
        device.compute.enqueue(lambda: None, reads=[back], label="the gradient kernel")


def test_a_buffer_freed_or_reused_before_its_copy_finished_is_caught(device):
    buf = device.adopt(np.ones(256), "x")
    device.d2h.wait(device.compute.record())
    h, out = device.copy_to_host(buf, "x")
    with pytest.raises(HappensBeforeError, match="x is freed on the compute stream while swap out x"):
        device.free(buf, stream=device.compute)
    with pytest.raises(HappensBeforeError, match="x is freed by the host while (produce|upload) x"):
        device.free(buf)
    with pytest.raises(HappensBeforeError, match="overwrites x while swap out x .*d2h stream"):
        device.compute.enqueue(lambda: None, writes=[buf], label="a kernel reusing the buffer")
    out.synchronize()
    device.free(buf, after=out)  # the right way: after the copy's event


def test_the_checker_does_not_depend_on_timing(device):
    # the copy has long finished, but nothing orders the free after it: still an error
    buf = device.adopt(np.ones(256), "y")
    device.d2h.wait(device.compute.record())
    device.copy_to_host(buf, "y")
    device.d2h.synchronize()
    time.sleep(0.01)
    with pytest.raises(HappensBeforeError):
        device.free(buf, stream=device.compute)
    device.compute.wait(device.d2h.record())
    device.free(buf, stream=device.compute)  # ordered by the event: fine


def test_a_failing_operation_is_raised_by_synchronize(device):
    device.h2d.enqueue(lambda: 1 / 0, label="a broken copy")
    with pytest.raises(RuntimeError, match="h2d stream failed: division by zero"):
        device.h2d.synchronize()


def test_a_slow_copy_runs_beside_the_host():
    d = make_device("simulated", copy_bandwidth=1e6)  # 1 MB/s: 80 KB takes 80 ms
    buf = d.adopt(np.ones(10_000), "z")
    d.d2h.wait(d.compute.record())
    t0 = time.perf_counter()
    _, out = d.copy_to_host(buf, "z")
    assert not out.query()  # enqueued: the d2h stream's thread runs it
    out.synchronize()
    assert time.perf_counter() - t0 >= 0.08
    d.close()
