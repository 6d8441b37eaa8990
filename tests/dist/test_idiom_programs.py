"""Random programs written with everyday numpy idioms (tests/transpile/programs.py, `idioms=True`: arrays
allocated and filled in loops, writes through views and second names, lists resized in loops, in-place
ops, conds in loops, ...) converted, their traces placed on several devices and run partitioned, give what
they give on one device (values, dtypes, and the argument arrays they write) and what plain Python gives.

Placed the way a user can place a converted function's graph: `Function.get_graph` gives the trace that
calls run, `Graph.update_node(node, device=...)` places its nodes, and the next call runs it partitioned
(one executor per device, values through the rendezvous). Three placements: each node on a device drawn
at random, each user line on one (as `with graph.device` around each statement would), and loop bodies and
cond branches on other devices than the loops and conds around them.
"""
import copy

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import transpile
from exec.multi_device import DevicesPlan
from tests.dist.helpers import by_construct, scatter, scatter_lines, within
from tests.transpile.idioms import assert_same, refused_as_shared_on_some_paths
from tests.transpile.programs import define, forget, programs
from transpile.operators.staging import StagingError

DEVICES = ("/cpu:0", "/cpu:1", "/task:1/cpu:0")
PLACEMENTS = {
    "node": lambda g, seed: scatter(g, seed, DEVICES),
    "line": lambda g, seed: scatter_lines(g, seed, DEVICES),
    "construct": lambda g, seed: by_construct(g, top="/cpu:0", loop_body="/task:1/cpu:0", branch="/cpu:1"),
}

_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_arrays = st.lists(_floats, min_size=3, max_size=3).map(np.array)


def devices_run(function, args) -> int:
    """How many devices the last run of `function`'s trace for `args` ran on (1: not partitioned)."""
    plans = function.trace_for(copy.deepcopy(args)).session._plans.values()
    return max((len(p.devices) for p in plans if isinstance(p, DevicesPlan)), default=1)


def call(function, args):
    """(result, the arguments after the call) of `function` called with a copy of `args`."""
    given_args = copy.deepcopy(args)
    return within(60, function, *given_args), list(given_args)


def assert_partitioned_like_one_device(fn, args, place) -> int:
    """`fn` converted and run partitioned by `place` gives what it gives on one device, twice (the second run:
    fresh rendezvous keys), and what plain Python gives. Returns how many devices the run used."""
    want = call(fn, args)
    function = transpile.function(fn)
    one = call(function, args)
    place(function.get_graph(*copy.deepcopy(args)))
    for what in ("partitioned", "partitioned, again"):
        got = call(function, args)
        assert_same(got, one, f"{what} vs one device")
        assert_same(got, want, f"{what} vs Python", python_numbers_may_differ=True)
    return devices_run(function, args)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(max_depth=3, max_statements=16, idioms=True), st.integers(0, 3), _floats, _arrays,
       st.sampled_from(sorted(PLACEMENTS)), st.integers(0, 2 ** 31))
def test_partitioned_idiom_program_matches_one_device_and_python(source, n, x, arr, placement, seed):
    fn, filename = define(source)
    try:
        for args in ((n, x, arr), (0, x, arr)):
            devices = assert_partitioned_like_one_device(fn, args, lambda g: PLACEMENTS[placement](g, seed))
            event(f"{placement}: {devices} devices")
    except StagingError as e:
        if not refused_as_shared_on_some_paths(e):
            raise
        event("refused: an array shared on some paths only")
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: {n, x, arr}, placement {placement}, seed {seed}") \
            from None
    finally:
        forget(filename)


def _fill_rows(n, x, arr):
    """Allocate-then-fill and rebind in a loop, a row written through a view, a list resized under a
    cond in the loop, an in-place op on an argument."""
    buf = np.zeros(3)
    M = np.zeros((2, 3))
    L = [1.0, 2.0]
    for j in range(n):
        nb = np.zeros_like(buf)
        nb[j % 3] = buf[j % 3] * 0.5 + x
        buf = nb
        row = M[j % 2]
        row += buf
        if row.sum() > x:
            L.append(row.sum())
        elif len(L) > 1:
            L.pop()
    arr *= 2.0
    return buf, M, L


def test_each_placement_runs_the_program_on_several_devices():
    """The placements the random programs use do partition: a loop with a cond in it runs on all three
    devices by construct, on at least two by node or by line."""
    for placement, at_least in (("node", 2), ("line", 2), ("construct", 3)):
        for n in (0, 1, 4):
            args = (n, 0.25, np.array([1.0, -0.5, 2.0]))
            devices = assert_partitioned_like_one_device(_fill_rows, args, lambda g: PLACEMENTS[placement](g, 7))
            assert devices >= at_least, (placement, n, devices)
