"""Helpers for benchmarks that run each variant in its own process (the peers' method).

A child prints one line `CHILD_JSON: {...}`; the parent collects it. Separate
processes keep frameworks from sharing thread pools and allocators, and make
the peak RSS of a process belong to one variant. `Contention` measures how many
cores *other* processes used during a timed block: on a shared machine every
timing must be read together with it.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

CHILD_TAG = "CHILD_JSON: "
_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def peak_rss_mib() -> float:
    """High-water resident set size of this process (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_emit(payload: dict) -> None:
    payload.setdefault("peak_rss_mib", round(peak_rss_mib(), 1))
    print(CHILD_TAG + json.dumps(payload, default=float), flush=True)


def run_child(script: str, args, timeout: float = 600.0) -> dict:
    """Runs `python script --child ARGS`; its CHILD_JSON payload, or {"error": ...}."""
    cmd = [sys.executable, script, "--child"] + [str(a) for a in args]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f}s"}
    payload = None
    for line in p.stdout.splitlines():
        if line.startswith(CHILD_TAG):
            payload = json.loads(line[len(CHILD_TAG):])
    if payload is None:
        tail = (p.stderr or "").strip().splitlines()[-4:]
        return {"error": f"rc={p.returncode}: " + " | ".join(tail)}
    payload["child_wall_s"] = round(time.perf_counter() - t0, 2)
    return payload


def _system_busy_s() -> float:
    try:
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:9]]
        return (sum(vals) - vals[3] - vals[4]) / _TCK  # all but idle and iowait
    except OSError:
        return float("nan")


def _self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Contention:
    """`with Contention() as c: ...` -> c.other_cores: mean cores other processes used meanwhile."""

    def __enter__(self):
        self.t0, self.b0, self.s0 = time.perf_counter(), _system_busy_s(), _self_cpu_s()
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self.t0
        other = (_system_busy_s() - self.b0) - (_self_cpu_s() - self.s0)
        self.other_cores = max(other, 0.0) / wall if wall > 0 else float("nan")
        return False


def other_load(seconds: float = 0.5) -> float:
    with Contention() as c:
        time.sleep(seconds)
    return c.other_cores


def wait_quiet(threshold: float, max_wait_s: float) -> float:
    """Waits (at most max_wait_s) until other processes use fewer than `threshold` cores."""
    t0 = time.perf_counter()
    load = other_load()
    while load > threshold and time.perf_counter() - t0 < max_wait_s:
        time.sleep(1.0)
        load = other_load()
    return load
