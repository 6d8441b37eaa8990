"""`with transpile.profile(path):` writes the calls made inside it as a Chrome trace: compiled and dataflow
mode, runs across devices, with the memory counters and their plot."""
import importlib.util
import json

import numpy as np
import pytest

import grad
import graph
import transpile
from exec import Session
from exec.profiler import merge_traces, rank_path
from tests.exec.chrome_trace import load_chrome_trace, process_names, spans, spans_by_process


def rnn_loss(w, x, n):
    h = np.zeros((x.shape[1], w.shape[1]))
    for t in range(n):
        h = np.tanh(h @ w + x[t])
    return np.sum(h * h)


def step(w, x, n):
    return grad.gradients(rnn_loss(w, x, n), [w])[0]


def _inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(6, 6)) * 0.3, rng.normal(size=(5, 2, 6))


@pytest.mark.parametrize("mode,process", [("compiled", "compiled"), ("dataflow", "executor")])
def test_a_profile_writes_each_call_and_its_kernels(mode, process, tmp_path):
    f = transpile.function(step, mode=mode)
    w, x = _inputs()
    want = f(w, x, 5)
    path = tmp_path / "step.json"
    with transpile.profile(str(path)) as prof:
        got = [f(w, x, 5), f(w, x, 3)]
    assert prof.written == [str(path)]
    np.testing.assert_array_equal(got[0], want)
    trace = load_chrome_trace(path)
    by_process = spans_by_process(trace)
    assert [(s["name"], s["args"]["mode"]) for s in by_process["runs"]] == [("step", mode)] * 2
    kernels = by_process[process]
    assert {"MatMul", "Tanh", "StackPush", "StackPop"} <= {s["name"].split(" ")[0] for s in kernels}
    assert all("test_profile.py:" in s["args"]["source"] for s in kernels if s["name"].startswith("MatMul"))
    first, second = by_process["runs"]
    assert first["ts"] <= min(s["ts"] for s in kernels) and second["ts"] + second["dur"] >= max(s["ts"] for s in kernels)
    saved = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == f"{process} saved bytes"]
    assert max(e["args"]["saved bytes"] for e in saved) >= 5 * 2 * 6 * 8  # the five h_t of the first call


def test_calls_outside_a_profile_are_not_recorded(tmp_path):
    f = transpile.function(rnn_loss)
    w, x = _inputs()
    f(w, x, 5)  # its fast path is warm before the profile
    with transpile.profile() as prof:
        f(w, x, 5)
    recorded = len(prof.to_json()["traceEvents"])
    assert [s["name"] for s in spans_by_process(prof.to_json())["runs"]] == ["rnn_loss"]
    assert f(w, x, 5) == f(w, x, 5)
    assert len(prof.to_json()["traceEvents"]) == recorded and prof.written == []
    prof.export_chrome_trace(str(tmp_path / "later.json"))
    load_chrome_trace(tmp_path / "later.json")


def test_a_run_across_two_devices_records_each_devices_part(tmp_path):
    @transpile.function(inter_op_threads=0)
    def pipeline(x, n):
        for t in range(n):
            with graph.device("/cpu:0"):
                x = x * 0.5 + 1.0
            with graph.device("/cpu:1"):
                x = np.tanh(x)
        return x

    x = np.ones((2, 3))
    want = pipeline(x, 4)
    path = tmp_path / "two.json"
    with transpile.profile(str(path)):
        np.testing.assert_array_equal(pipeline(x, 4), want)
    by_process = spans_by_process(load_chrome_trace(path))
    assert [s["args"]["mode"] for s in by_process["runs"]] == ["devices"]
    assert "Tanh" in {s["name"].split(" ")[0] for s in by_process["/task:0/cpu:1"]}
    assert "Mul" in {s["name"].split(" ")[0] for s in by_process["/task:0/cpu:0"]}
    # what crosses between the devices: a Send on one side, a Recv (from asking to arrival) on the other,
    # each naming the tensor, both devices and the loop iteration, in every iteration
    recvs = [s for s in by_process["/task:0/cpu:1"] if s["name"].startswith("Recv ")]
    sends = [s for s in by_process["/task:0/cpu:0"] if s["name"].startswith("Send ")]
    assert recvs and sends
    iterations = {s["args"]["iteration"] for s in recvs if s["args"]["from"] == "/task:0/cpu:0"}
    assert {f"while@{i}" for i in range(4)} <= iterations
    assert all(s["dur"] >= 0 for s in recvs + sends)


def test_session_runs_are_recorded_too(tmp_path):
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, ())
        _, y = graph.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 2.0), (graph.constant(0), 1.0))
    session = Session(g)
    with transpile.profile(str(tmp_path / "s.json")):
        assert session.run(y, {n: 3}) == 8.0
    names = [s["name"] for s in spans_by_process(load_chrome_trace(tmp_path / "s.json"))["runs"]]
    assert names == ["Session.run"]


def test_profiles_do_not_nest():
    with transpile.profile():
        with pytest.raises(RuntimeError, match="profiles do not nest"):
            with transpile.profile():
                pass


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib (the plot extra)")
def test_the_memory_plot_is_drawn_with_the_trace(tmp_path):
    f = transpile.function(step)
    w, x = _inputs()
    with transpile.profile(str(tmp_path / "t.json"), memory_plot=str(tmp_path / "memory.png")) as prof:
        f(w, x, 5)
    assert prof.written == [str(tmp_path / "t.json"), str(tmp_path / "memory.png")]
    assert (tmp_path / "memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_per_rank_files_merge_into_one_trace(tmp_path):
    """Under MPI each rank writes its own file (tests/dist/mpi/test_profile.py runs it on 2 ranks); merged,
    each rank's processes keep their own ids and names, on the earliest file's clock."""
    assert rank_path("a/step.json", 1) == "a/step.rank1.json" and rank_path("step.json", None) == "step.json"
    f = transpile.function(rnn_loss)
    w, x = _inputs()
    paths = []
    for rank in (0, 1):
        with transpile.profile() as prof:
            f(w, x, 2)
        prof.timeline.metadata["rank"] = rank
        paths.append(str(tmp_path / f"t.rank{rank}.json"))
        prof.export_chrome_trace(paths[-1])
    merge_traces(paths, str(tmp_path / "merged.json"))
    merged = load_chrome_trace(tmp_path / "merged.json")
    names = sorted(process_names(merged).values())
    assert names == ["rank 0: compiled", "rank 0: runs", "rank 1: compiled", "rank 1: runs"]
    starts = [json.loads(open(p).read())["otherData"]["start_unix_us"] for p in paths]
    second = [s for s in spans(merged) if process_names(merged)[s["pid"]] == "rank 1: runs"][0]
    assert second["ts"] >= starts[1] - starts[0]
