"""Converted programs written with everyday numpy idioms (tests/transpile/programs.py, `idioms=True`),
partitioned across 2 MPI ranks, give what they give on one device and what plain Python gives; fed
different values on the two ranks they raise FeedMismatchError on both, never a result computed from
the other rank's values. Runs under `mpiexec -n 2` (see conftest.py).

The programs are placed as tests/dist/test_idiom_programs.py places them (`Graph.update_node(node,
device=...)` on the trace `Function.get_graph` gives): each node on a device drawn at random, each user
line on one, or by construct, with loop bodies on the other rank than the loop and the conds in them on
the other rank than the body. Both ranks draw the same programs, inputs and seeds (derandomized, as
test_programs.py does), so they build the same graph and place it alike.
"""
import copy

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

import graph
import transpile
from dist.exchange import FeedMismatchError, GraphMismatchError
from tests.dist.helpers import alternate, by_construct, scatter, scatter_lines
from tests.dist.mpi.test_programs import _spans_both_ranks, same_on_every_rank
from tests.dist.test_idiom_programs import call
from tests.transpile.idioms import assert_same
from tests.transpile.programs import define, forget, programs

TASK0, TASK0_OTHER, TASK1 = "/task:0/cpu:0", "/task:0/cpu:1", "/task:1/cpu:0"
DEVICES = (TASK0, TASK0_OTHER, TASK1)
PLACEMENTS = {
    "node": lambda g, seed: scatter(g, seed, DEVICES),
    "line": lambda g, seed: scatter_lines(g, seed, DEVICES),
    # a loop's body on rank 1, a cond in it on rank 0; top-level conds' branches on rank 1
    "construct": lambda g, seed: by_construct(g, top=TASK0, loop_body=TASK1, branch=TASK0_OTHER),
    "branches on rank 1": lambda g, seed: by_construct(g, top=TASK0, loop_body=TASK0_OTHER, branch=TASK1),
}

_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_arrays = st.lists(_floats, min_size=3, max_size=3).map(np.array)


def _partitioned(fn, args, place):
    """`fn` converted, traced for `args` and placed by `place`: its next call runs across the ranks."""
    function = transpile.function(fn)
    place(function.get_graph(*copy.deepcopy(args)))
    return function


def rank_0s(comm, example: tuple) -> tuple:
    """Rank 0's example, on every rank. Derandomized hypothesis draws the same examples on every rank only
    as long as nothing else feeds its choices, and it mixes in constants it collects from the project
    modules loaded so far, which differ by rank (each imports the kernels its own devices run): after some
    dozens of examples the ranks drew different inputs for one example (rank 0 fed `arr` [0, -0.37, 0],
    rank 1 [0, 0.28, -0.66]) and the run failed with FeedMismatchError."""
    return comm.bcast(example)


def _has_a_loop(source: str) -> bool:
    return "for " in source or "while " in source


@same_on_every_rank(40)
@given(programs(max_depth=3, max_statements=14, idioms=True).filter(_has_a_loop), st.integers(0, 3), _floats, _arrays,
       st.sampled_from(sorted(PLACEMENTS)), st.integers(0, 2 ** 31))
def test_idiom_program_across_ranks_matches_one_device_and_python(comm, source, n, x, arr, placement, seed):
    source, n, x, arr, placement, seed = rank_0s(comm, (source, n, x, arr, placement, seed))
    fn, filename = define(source)  # the same file name on both ranks: they define programs in step
    try:
        args = (n, x, arr)
        want = call(fn, args)
        one = call(transpile.function(fn), args)  # one device: each rank runs it whole
        function = _partitioned(fn, args, lambda g: PLACEMENTS[placement](g, seed))
        for what in ("across ranks", "across ranks, again"):
            got = call(function, args)
            assert_same(got, one, f"{what} vs one device")
            assert_same(got, want, f"{what} vs Python", python_numbers_may_differ=True)
        spans = _spans_both_ranks(function.trace_for(copy.deepcopy(args)).session)
        event(f"{placement}: {'both ranks' if spans else 'one rank'}")
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: {n, x, arr}, placement {placement}, seed {seed}") \
            from None
    finally:
        forget(filename)


def _fill_rows(n, x, arr):
    """Allocate-then-fill and rebind in a loop whose body is on rank 1, a row written through a view, a
    list resized in a cond whose branches are on rank 0, an in-place op on an argument."""
    buf = np.zeros(3)
    M = np.zeros((2, 3))
    L = [1.0, 2.0]
    for j in range(n):
        with graph.device(TASK1):
            nb = np.zeros_like(buf)
            nb[j % 3] = buf[j % 3] * 0.5 + x
            buf = nb
            row = M[j % 2]
            row += buf
        if row.sum() > x:
            with graph.device(TASK0):
                L.append(row.sum())
        elif len(L) > 1:
            with graph.device(TASK0):
                L.pop()
    with graph.device(TASK1):
        arr *= 2.0
    return buf, M, L


def test_a_loop_body_and_a_cond_in_it_on_different_ranks_by_device_scopes():
    function = transpile.function(_fill_rows)
    for n in (0, 1, 5):
        args = (n, 0.25, np.array([1.0, -0.5, 2.0]))
        want = call(_fill_rows, args)
        for what in ("first call", "second call"):
            assert_same(call(function, args), want, f"n={n}, {what}")
        assert _spans_both_ranks(function.trace_for(copy.deepcopy(args)).session)


def _differing(args: tuple, which: str, rank: int) -> tuple:
    """`args` with argument `which` given a value of this rank's own."""
    n, x, arr = args
    if which == "n":  # a graph input, or a static argument (one trace per value): each rank its own graph
        return n + rank, x, arr
    if which == "x":
        return n, x + rank + 0.5, arr
    mine = arr.copy()
    mine[1] += rank + 1.0
    return n, x, mine


@same_on_every_rank(10)
@given(programs(max_depth=2, max_statements=8, idioms=True), st.integers(0, 3), _floats, _arrays,
       st.sampled_from(["arr", "n", "x"]))
def test_an_idiom_program_given_other_arguments_on_each_rank_never_computes_from_the_others(comm, source, n, x, arr,
                                                                                             which):
    """Each rank passes its own value of one argument: the run is refused on both ranks, naming the
    argument (FeedMismatchError) or the first node of the graphs that differ (GraphMismatchError, where the
    argument is static); or, where the argument is not used, each rank gets Python's answer for its own
    arguments. Never a result computed from the other rank's values. Equal arguments then work again."""
    source, n, x, arr, which = rank_0s(comm, (source, n, x, arr, which))
    fn, filename = define(source)
    try:
        mine = _differing((n, x, arr), which, comm.Get_rank())
        function = _partitioned(fn, mine, lambda g: alternate(g, (TASK0, TASK1)))
        try:
            got = call(function, mine)
        except FeedMismatchError as e:
            text = str(e)
            assert "rank 0: " in text and "rank 1: " in text, text
            assert isinstance(e, GraphMismatchError) or f"input '{which}'" in text, text
            event(f"{which}: {type(e).__name__}")
        else:
            assert which != "arr", "the argument every program reads was given different values, and the run went on"
            assert_same(got, call(fn, mine), "a result with an argument the graph does not read",
                        python_numbers_may_differ=True)
            event(f"{which}: not read")
        args = (n, x, arr)
        function = _partitioned(fn, args, lambda g: alternate(g, (TASK0, TASK1)))
        assert_same(call(function, args), call(fn, args), "equal arguments vs Python", python_numbers_may_differ=True)
        assert _spans_both_ranks(function.trace_for(copy.deepcopy(args)).session)
    finally:
        forget(filename)
