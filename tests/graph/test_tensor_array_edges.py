"""TensorArray edge cases: sizes, indices and element shapes that cannot work fail clearly (at build
time when known then, else at run time naming the array); arrays filled in any order through writes,
scatters and unstacks stack to the numpy array, in the executor and the reference interpreter."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from exec import RunError, Session
from exec.reference import run_reference
from graph.errors import GraphError


@pytest.mark.parametrize("size,text", [(-1, "size must be >= 0, got -1"), (2.0, "scalar integer, got float64[]"),
                                       (np.array([2, 3]), "scalar integer, got int64[2]")])
def test_bad_static_sizes_fail_when_built(size, text):
    with G.Graph().as_default():
        with pytest.raises(GraphError) as info:
            G.TensorArray(np.float32, size=size)
    assert text in str(info.value) and "test_tensor_array_edges.py" in str(info.value)


def test_negative_size_fed_at_run_time_fails_naming_the_array():
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [])
        out = G.TensorArray(np.float32, size=n, element_shape=[], name="buffer").stack()
    assert Session(g).run(out, {n: 0}).shape == (0,)
    with pytest.raises(RunError, match="TensorArray 'buffer' created with negative size -2"):
        Session(g).run(out, {n: -2})


@pytest.mark.parametrize("build,text", [
    (lambda: G.TensorArray(np.float32, size=2).write(5, 1.0).stack(), "index 5 of TensorArray 'TensorArray' of size 2"),
    (lambda: G.TensorArray(np.float32).write(-1, 1.0).stack(), "negative index -1"),
    (lambda: G.TensorArray(np.float32, size=2).write(1, 1.0).read(0), "read of index 0, which was never written"),
    (lambda: G.TensorArray(np.float32, size=3).scatter([0, 0], G.zeros([2], np.float32)).stack(),
     "index 0 was already written"),
    (lambda: G.TensorArray(np.float32, size=2).unstack(G.zeros([4], np.float32)).stack(),
     "cannot unstack 4 elements into TensorArray 'TensorArray' of size 2"),
])
def test_run_time_errors_name_the_array_and_the_line(build, text):
    g = G.Graph()
    with g.as_default():
        out = build()
    with pytest.raises(RunError) as info:
        Session(g).run(out)
    assert text in str(info.value) and "test_tensor_array_edges.py" in str(info.value)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 6).flatmap(lambda n: st.tuples(st.permutations(range(n)), st.integers(0, n),
                                                     st.sampled_from(["write", "scatter", "unstack"]))))
def test_any_fill_order_stacks_to_the_numpy_array(case):
    order, split, how = case
    n = len(order)
    want = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    g = G.Graph()
    with g.as_default():
        ta = G.TensorArray(np.float32, size=n, element_shape=[2])
        if how == "unstack":
            ta = ta.unstack(G.constant(want))
        else:
            first, rest = order[:split], order[split:]
            if how == "scatter" and first:
                ta = ta.scatter(np.array(first, np.int64), G.constant(want[list(first)]))
            else:
                rest = order
            for i in rest:
                ta = ta.write(i, G.constant(want[i]))
        out = (ta.stack(), ta.size(), ta.gather(np.array(order[::-1], np.int64)))
    for got in (Session(g).run(out), run_reference(out)):
        np.testing.assert_array_equal(got[0], want)
        assert got[1] == n
        np.testing.assert_array_equal(got[2], want[list(order[::-1])].reshape(n, 2))


@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
@pytest.mark.parametrize("parallel_iterations", [1, 2, 32])
@pytest.mark.parametrize("write_built_first", [True, False])
def test_size_and_stack_read_in_an_iteration_do_not_see_its_later_write(mode, parallel_iterations,
                                                                        write_built_first):
    """In iteration i the array (before this iteration's write) has i elements, whichever of the two
    ops the executor happens to run first: the ops read the array as of their input handle."""
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [])

        def body(i, total, stacked_rows, ta):
            def reads():
                return ta.size(), G.shape(ta.stack())[0]
            if write_built_first:
                grown = ta.write(i, G.cast(i, np.float64))
                size, rows = reads()
            else:
                size, rows = reads()
                grown = ta.write(i, G.cast(i, np.float64))
            return i + 1, total + size, stacked_rows + rows, grown

        ta = G.TensorArray(np.float64, element_shape=[])
        zero = G.constant(np.int64(0))
        _, total, rows, ta = G.while_loop(lambda i, *_: G.less(i, n), body, (zero, zero, zero, ta),
                                          parallel_iterations=parallel_iterations)
        out = (total, rows, ta.size())
    for got in (Session(g, mode=mode).run(out, {n: 10}), run_reference(out, {n: 10})):
        assert [int(v) for v in got] == [45, 45, 10]
