"""What a Chrome/Perfetto trace file must hold for chrome://tracing and ui.perfetto.dev to open it."""
import json


def load_chrome_trace(path) -> dict:
    """The trace at `path`, checked: `traceEvents` of complete spans ("X": name, ts, dur >= 0, pid, tid),
    counters ("C": name, ts, pid, numeric args) and metadata ("M") naming every process and track used."""
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    assert isinstance(events, list) and events, f"{path}: no traceEvents"
    processes = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in events:
        assert e["ph"] in ("X", "C", "M"), e
        if e["ph"] == "X":
            assert {"name", "ts", "dur", "pid", "tid"} <= e.keys(), e
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0, e
            assert (e["pid"], e["tid"]) in tracks and e["pid"] in processes, e
        elif e["ph"] == "C":
            assert {"name", "ts", "pid", "args"} <= e.keys() and e["pid"] in processes, e
            assert all(isinstance(v, (int, float)) for v in e["args"].values()), e
    json.dumps(trace)  # plain JSON through and through
    return trace


def spans(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def process_names(trace: dict) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


def spans_by_process(trace: dict) -> dict[str, list[dict]]:
    """Each process's name -> its spans."""
    names = process_names(trace)
    out: dict = {}
    for e in spans(trace):
        out.setdefault(names[e["pid"]], []).append(e)
    return out
