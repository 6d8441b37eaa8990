"""Variable kernels: reads see the current value, writes store new read-only arrays."""
import numpy as np
import pytest

import graph as G
from exec.kernels import get_kernel
from exec.runtime import Runtime


def _kernel(tensor):
    return get_kernel(tensor.node, Runtime())


def test_read_assign_and_updates():
    v = G.Variable(np.arange(3.0))
    with G.Graph().as_default():
        read, assign = _kernel(v.read()), _kernel(v.assign(np.zeros(3)))
        add, sub = _kernel(v.assign_add(1.0)), _kernel(v.assign_sub(1.0))
        at = v.assign_at(G.placeholder(np.int64, []), 9.0)
        at_fn = _kernel(at)
    first = read()
    np.testing.assert_array_equal(add(np.float64(2)), [2, 3, 4])
    np.testing.assert_array_equal(first, [0, 1, 2])  # an earlier read keeps its value
    np.testing.assert_array_equal(sub(np.ones(3)), [1, 2, 3])
    np.testing.assert_array_equal(at_fn(np.float64(9), np.int64(-1)), [1, 2, 9])
    fed = np.array([5.0, 6.0, 7.0])
    stored = assign(fed)
    assert stored is v.value and stored is not fed and not stored.flags.writeable
    np.testing.assert_array_equal(read(), fed)


def test_scalar_variables_read_as_numpy_scalars():
    v = G.Variable(np.float32(2.5))
    with G.Graph().as_default():
        got = _kernel(v.read())()
    assert np.ndim(got) == 0 and got.dtype == np.float32


def test_a_run_time_shape_mismatch_names_the_variable():
    v = G.Variable(np.zeros(3), name="bias")
    with G.Graph().as_default():
        assign = _kernel(v.assign(G.placeholder(np.float64, [None])))
    with pytest.raises(ValueError, match="Variable 'bias"):
        assign(np.zeros(4))


def _address(v) -> int:
    return v.value.__array_interface__["data"][0]  # holds no reference to the array afterwards


def _writes(v):
    """Session-running writers of every kind, each returning what it fetched."""
    g = G.Graph()
    with g.as_default():
        i = G.placeholder(np.int64, [], name="i")
        ops = [v.assign_at(i % 4, G.constant(np.float32(7))), v.assign_add(np.float32(1)),
               v.assign_sub(np.float32(0.5)), v.assign(G.fill([4], np.float32(3)))]
    from exec import Session
    sess = Session(g)
    return [lambda k, op=op: sess.run(op.node, {i: k}) for op in ops]


def test_writes_update_the_array_in_place_when_only_the_variable_holds_it():
    v = G.Variable(np.zeros(4, np.float32))
    writes = _writes(v)
    writes[0](0)  # the first write copies: the initial value is kept for reset()
    address = _address(v)
    for k, write in enumerate(writes * 2):
        write(k)
        assert _address(v) == address
    assert not v.value.flags.writeable
    np.testing.assert_array_equal(v.initial_value, np.zeros(4))
    v.reset()
    np.testing.assert_array_equal(v.value, np.zeros(4))


@pytest.mark.parametrize("kind", range(4))
def test_a_held_value_never_changes(kind):
    v = G.Variable(np.arange(4, dtype=np.float32))
    writes = _writes(v)
    writes[1](0)  # now v owns a private array
    held, view, exported = v.value, v.value[1:], memoryview(v.value)
    before = held.copy()
    writes[kind](1)
    np.testing.assert_array_equal(held, before)
    np.testing.assert_array_equal(view, before[1:])
    np.testing.assert_array_equal(np.asarray(exported), before)
    assert v.value is not held


def test_a_read_consumed_after_a_later_write_sees_the_value_before_it():
    v = G.Variable(np.arange(4.0))
    g = G.Graph()
    with g.as_default():
        v.assign_add(1.0)  # v owns a private array from the first run on
        r = v.read()
        with G.control_dependencies([r]):
            w = v.assign_at(0, 100.0)
        with G.control_dependencies([w]):
            late = G.add(r, 0.0)  # reads `r` after the write ran
    from exec import Session
    sess = Session(g)
    for _ in range(3):
        got_late, got_w = sess.run([late, w])
        assert got_late[0] != 100.0 and got_w[0] == 100.0


@pytest.mark.parametrize("kind", range(4))
def test_writes_through_the_kept_writer_leave_the_array_read_only(kind):
    """Writes in place go through a writable view the Variable keeps; the array everyone reads stays
    read-only, values held from before any of the writes keep their values, and a `load` or `reset` in
    between is never written through a writer of the array it replaced."""
    v = G.Variable(np.arange(4, dtype=np.float32))
    writes = _writes(v)
    for k in range(3):
        writes[kind](k)  # the first copies (the initial value is shared); then in place, through the writer
    assert v.writer is not None and v.writer.base is v.value and not v.value.flags.writeable
    held = v.value
    before = held.copy()
    writes[kind](3)
    np.testing.assert_array_equal(held, before)
    assert v.value is not held and not v.value.flags.writeable
    loaded = np.full(4, 8, np.float32)
    v.load(loaded)
    replaced = v.value
    writes[kind](1)  # copies: `replaced` is held here
    np.testing.assert_array_equal(replaced, loaded)
    del replaced
    for k in range(2):
        writes[kind](k)
    v.reset()
    np.testing.assert_array_equal(v.value, np.arange(4, dtype=np.float32))
    writes[kind](0)
    np.testing.assert_array_equal(v.initial_value, np.arange(4, dtype=np.float32))


def test_a_counter_written_through_its_writer_reads_as_numpy_scalars():
    v = G.Variable(np.int64(0))
    g = G.Graph()
    with g.as_default():
        step = v.assign_add(1)
    from exec import Session
    sess = Session(g)
    got = [sess.run(step) for _ in range(4)]
    assert got == [1, 2, 3, 4] and all(type(x) is np.int64 for x in got)
    assert v.writer is not None and not v.value.flags.writeable and v.value == 4
