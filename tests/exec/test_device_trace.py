"""Timelines: Session.run(trace=...) writes a Chrome trace with executor threads, device streams and memory."""
import importlib.util
import json

import numpy as np
import pytest

from exec import Session
from exec.trace_plot import memory_series, plot_memory
from tests.exec.device_fixtures import KINDS, make_device
from tests.exec.test_swap import rnn


# compiled mode is left out: under load its traced run (slower, every kernel timed) can outrun the swap-outs
# in flight and fail with DeviceOutOfMemory at this tight limit, and its last memory sample can precede frees
# (tests/transpile/test_profile.py traces compiled runs without a device)
@pytest.mark.parametrize("mode,process", [("dataflow", "executor")])
@pytest.mark.parametrize("kind", KINDS)
def test_a_trace_has_executor_threads_device_streams_and_memory(kind, mode, process, tmp_path):
    g, feed, dw = rnn(30, swap_memory=True)
    device = make_device(kind, memory_limit=100_000)
    s = Session(g, device=device, mode=mode)  # a traced run runs in the mode an untraced one does
    want = s.run(dw, feed)
    path = tmp_path / "run.json"
    np.testing.assert_array_equal(s.run(dw, feed, trace=str(path)), want)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    tracks = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {f"{process} MainThread", "runs MainThread"} <= tracks
    assert {"/gpu:0 compute stream", "/gpu:0 h2d stream", "/gpu:0 d2h stream"} <= tracks
    spans = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and {"pid", "tid", "ts", "name"} <= e.keys() for e in spans)
    names = {e["name"].split(" ")[0] for e in spans}
    assert {"StackPush", "StackPop", "MatMul", "swap"} <= names and names & {"produce", "upload"}
    assert any(e["name"].startswith("swap out") for e in spans) and any(e["name"].startswith("swap in") for e in spans)
    memory = [e for e in events if e["ph"] == "C" and e["name"] == "/gpu:0 memory in use"]
    assert memory and max(e["args"]["device bytes"] for e in memory) <= 100_000
    assert memory[-1]["args"]["device bytes"] == device.bytes_in_use


def test_a_trace_without_a_device_has_the_saved_bytes(tmp_path):
    g, feed, dw = rnn(10, swap_memory=False)
    path = tmp_path / "cpu.json"
    Session(g, mode="dataflow").run(dw, feed, trace=str(path))
    series = memory_series(str(path))
    times, values = series["executor saved bytes: saved bytes"]
    assert times == sorted(times) and max(values) >= 10 * 8 * 40 * 8 and values[-1] == 0


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib (the plot extra)")
def test_memory_over_time_plots_as_a_png(tmp_path):
    g, feed, dw = rnn(20, swap_memory=True)
    path = tmp_path / "run.json"
    Session(g, device=make_device("simulated", memory_limit=100_000)).run(dw, feed, trace=str(path))
    png = tmp_path / "memory.png"
    plot_memory(str(path), str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
