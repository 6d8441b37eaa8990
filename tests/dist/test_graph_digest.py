"""The digest of a partitioned graph that the ranks of an MPI job compare before each run
(dist/exchange.py, GraphRecord): equal for the same program in every process, whatever its hash
seed (a false mismatch would fail every run across ranks), and different where a static argument
changed only a constant (each rank would run its own graph, silently)."""
import os
import subprocess
import sys

import numpy as np

import graph
import transpile
from dist.exchange import GraphRecord
from exec.multi_device import DevicesPlan

_PRINT_DIGEST = """
from tests.dist.test_graph_digest import digest
print(digest(2).hex())
"""


def _shifted(x, k, arr):
    buf = np.zeros(3)
    for j in range(3):
        with graph.device("/task:1/cpu:0"):
            buf[j] = arr[j] * x + k
        if buf.sum() > x:
            with graph.device("/cpu:1"):
                buf *= 0.5
    return buf


def digest(k: int) -> bytes:
    """The digest of `_shifted`'s partitioned graph for static argument `k`."""
    function = transpile.function(_shifted, static_argnames="k")
    args = (0.5, k, np.array([1.0, 2.0, 3.0]))
    function(*args)
    plans = [p for p in function.trace_for(args).session._plans.values() if isinstance(p, DevicesPlan)]
    assert len(plans) == 1
    return GraphRecord.of(plans[0]).digest


def test_the_graph_digest_is_the_same_in_another_process_and_differs_with_a_static_argument():
    env = dict(os.environ, PYTHONHASHSEED="12345")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    other = subprocess.run([sys.executable, "-c", _PRINT_DIGEST], env=env, cwd=root, capture_output=True,
                           text=True, check=True, timeout=120)
    assert other.stdout.split()[-1] == digest(2).hex()
    assert digest(2) == digest(2) != digest(3)
