"""`transpile.profile` under MPI: each rank writes its own Chrome trace of the parts it ran, and the files
merge into one. Runs under `mpiexec -n 2` (see conftest.py)."""
import os
import tempfile

import numpy as np

import graph
import transpile
from exec.profiler import merge_traces
from tests.dist.helpers import within
from tests.exec.chrome_trace import load_chrome_trace, process_names, spans_by_process


@transpile.function(inter_op_threads=0)
def pipeline(x, n):
    for t in range(n):
        with graph.device("/task:0/cpu:0"):
            x = x * 0.5 + 1.0
        with graph.device("/task:1/cpu:0"):
            x = np.tanh(x)
    return x


def test_each_rank_writes_its_own_trace_and_they_merge(comm):
    rank = comm.Get_rank()
    folder = comm.bcast(tempfile.mkdtemp(prefix="profile-") if rank == 0 else None, root=0)
    x = np.ones((2, 3))
    want = within(60, pipeline, x, 4)
    with transpile.profile(os.path.join(folder, "step.json")) as prof:
        np.testing.assert_array_equal(within(60, pipeline, x, 4), want)
    mine = os.path.join(folder, f"step.rank{rank}.json")
    assert prof.written == [mine]
    by_process = spans_by_process(load_chrome_trace(mine))
    assert [s["name"] for s in by_process["runs"]] == ["pipeline"]
    assert set(by_process) == {"runs", f"/task:{rank}/cpu:0"}  # this rank's part only
    assert ("Tanh" if rank == 1 else "Mul") in {s["name"].split(" ")[0] for s in by_process[f"/task:{rank}/cpu:0"]}
    # the values that crossed ranks: this rank's Recvs name the other rank's device and each iteration
    recvs = [s for s in by_process[f"/task:{rank}/cpu:0"] if s["name"].startswith("Recv ")]
    assert {f"while@{i}" for i in range(4)} <= {s["args"]["iteration"] for s in recvs
                                                 if s["args"]["from"] == f"/task:{1 - rank}/cpu:0"}
    comm.Barrier()
    if rank == 0:
        merged = merge_traces([os.path.join(folder, f"step.rank{r}.json") for r in (0, 1)],
                              os.path.join(folder, "step.json"))
        load_chrome_trace(os.path.join(folder, "step.json"))
        assert {"rank 0: /task:0/cpu:0", "rank 1: /task:1/cpu:0"} <= set(process_names(merged).values())
    comm.Barrier()
