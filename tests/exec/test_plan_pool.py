"""Which kernels the plan sends to the pool: only work big enough to pay for the round trip."""
import numpy as np

import graph as G
from exec.node_kinds import ASYNC
from exec.plan import build_plan
from exec.runtime import Runtime


def _async_ops(use_pool=True, **shapes):
    with G.Graph().as_default() as g:
        x = G.placeholder(np.float32, shapes["x"])
        w1 = G.placeholder(np.float32, shapes["w1"])
        w2 = G.placeholder(np.float32, shapes["w2"])
        y = G.matmul(G.maximum(G.matmul(x, w1), 0.0), w2)
    plan = build_plan(g, [y], [], [x, w1, w2], Runtime(), use_pool=use_pool)
    return [n.op for n, k in zip(plan.nodes, plan.kind) if k == ASYNC]


def test_small_matmuls_of_known_shape_run_inline_whatever_their_rank():
    assert _async_ops(x=(4,), w1=(4, 64), w2=(64, 2)) == []        # a vector through a small MLP
    assert _async_ops(x=(32, 4), w1=(4, 64), w2=(64, 2)) == []
    assert _async_ops(x=(4096,), w1=(4096, 1024), w2=(1024, 2)) == ["MatMul"]
