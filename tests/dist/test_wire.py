"""dist/wire.py: what a value becomes on the way between ranks, checked without MPI (the message
bytes handed straight to the decoder; a separately sent payload copied into its receive array)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dist import wire

DTYPES = st.sampled_from([np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32, np.float64,
                          np.complex64, np.complex128, ">f8", "<U3"])


def _through(value, is_dead=False, step=7, key="/task:0/cpu:0;/task:1/cpu:0;x:0;while@3"):
    head, payload = wire.encode(step, key, value, is_dead, payload_tag=99)
    h = wire.decode_header(bytearray(head))
    assert (h.step, h.key) == (step, key)
    if payload is None:
        assert h.payload_tag == 0
        return h, wire.inline_value(h, bytearray(head))
    assert h.payload_tag == 99 and payload.nbytes > wire.INLINE_LIMIT
    arr = wire.empty_payload(h)
    arr.reshape(-1).view(np.uint8)[:] = payload.reshape(-1).view(np.uint8)  # what MPI's Recv does
    return h, wire.finish(h, arr)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_arrays_come_back_equal_with_dtype_and_shape(data):
    dtype = data.draw(DTYPES)
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
                      | st.just((70, 40)))  # 2,800 elements: over INLINE_LIMIT for 8-byte dtypes
    value = data.draw(hnp.arrays(dtype, shape))
    if data.draw(st.booleans()) and value.ndim >= 1:
        value = value[::-1]  # not contiguous
    _, got = _through(value)
    assert isinstance(got, np.ndarray) and got.dtype == value.dtype and got.shape == value.shape
    np.testing.assert_array_equal(got, value)
    assert got.flags.writeable  # kernels may compute into an input they own (exec/donation.py)


@pytest.mark.parametrize("value", [np.float32(2.5), np.int64(-3), np.bool_(True), np.complex128(1 - 2j)])
def test_numpy_scalars_stay_scalars(value):
    _, got = _through(value)
    assert type(got) is type(value) and got == value


def test_dead_tokens_carry_no_value():
    h, got = _through(np.ones(3), is_dead=True)
    assert got is None and h.flags & wire.DEAD


def test_python_objects_fall_back_to_pickle_but_arrays_never_do():
    h, got = _through({"a": (1, 2)})
    assert got == {"a": (1, 2)} and h.flags & wire.PICKLED
    h, _ = _through(np.arange(5))
    assert not h.flags & wire.PICKLED
    h, got = _through(np.array([None, 1], dtype=object))  # no buffer to send: pickled
    assert h.flags & wire.PICKLED and list(got) == [None, 1]
