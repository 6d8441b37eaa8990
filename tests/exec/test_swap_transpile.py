"""`transpile.function(device=...)`: the saved values of a converted function's loops live on the device."""
import numpy as np
import pytest

import grad
import transpile
from exec import RunError
from exec.device import DeviceOutOfMemory, SimulatedDevice


def rnn_loss(w, x, n):
    h = np.zeros((x.shape[1], w.shape[1]))
    i = 0
    while i < n:
        h = np.tanh(h @ w + x[i])
        i += 1
    return np.sum(h * h)


def step(w, x, n):
    return grad.gradients(rnn_loss(w, x, n), [w])[0]


@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
def test_a_converted_training_step_saves_on_its_device(mode):
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(40, 40)) * 0.2, rng.normal(size=(30, 8, 40))  # h_t: 8 x 40 floats, 2.5 KB
    want = transpile.function(step, mode=mode)(w, x, 30)
    device = SimulatedDevice(memory_limit=10**6)
    np.testing.assert_array_equal(transpile.function(step, mode=mode, device=device)(w, x, 30), want)
    assert device.peak_bytes >= 30 * 2560 and device.bytes_in_use == 0  # every h_t was on it
    small = SimulatedDevice(memory_limit=30 * 2560 // 2)
    with pytest.raises(RunError, match="out of memory on /gpu:0 allocating 2560 bytes for the value saved by") as e:
        transpile.function(step, mode=mode, device=small)(w, x, 30)
    assert isinstance(e.value.__cause__, DeviceOutOfMemory)
    assert "transpile.function(..., device=..., memory_policy='swap')" in str(e.value)  # the decorator's fix


def test_swap_without_a_device_is_refused_naming_the_function():
    """Swapping moves saved values off a device: without one, memory_policy='swap' would do nothing."""
    with pytest.raises(ValueError, match=r"test_swap_transpile\.py:\d+: transpile\.function\(rnn_loss, "
                                         r"memory_policy='swap'\) needs a device.*device=SimulatedDevice"):
        transpile.function(rnn_loss, memory_policy="swap")
    with pytest.raises(ValueError, match="needs a device"):
        transpile.function(memory_policy="swap")(rnn_loss)
    transpile.function(rnn_loss, memory_policy="swap", device=SimulatedDevice(memory_limit=10**6))
    transpile.function(rnn_loss, memory_policy="recompute")  # needs no device
