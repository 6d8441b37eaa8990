"""Where a compiled step's time goes, by op kind: every kernel a compiled program calls, timed.

The program's kernels are globals of its generated module; each is replaced by a wrapper that adds
its call's time to its op's total (the wrapper's own cost, ~0.2 us a call, is measured and reported
apart), and what is left of the step's wall time is the generated code's own Python: loop tests,
scalar operators, assignments and `del`s. Workload: bench/lstm.py's training step (`--workload lstm`)
or bench/dqn.py's agent step (`--workload dqn`).

Usage: python bench/op_profile.py [--workload lstm] [--seq 100] [--steps 5] [--mode compiled] [--clock cpu]
                                  [--no-fusion]
Ends with one line `BENCH_JSON: {...}`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_CALL = re.compile(r"=\s*([A-Za-z_]\w*)\(|^\s*([A-Za-z_]\w*)\(")


def traces_of(fn) -> list:
    """A transpile.function's traces (its trace cache is a dict of lists, or a TraceCache holding one)."""
    cache = getattr(fn, "_function", fn)._traces
    groups = cache._by_signature.values() if hasattr(cache, "_by_signature") else cache.values()
    return [trace for variants in groups for trace in variants]


def programs_of(fn) -> list:
    """The compiled programs of a transpile.function's traces (those its session compiled)."""
    return [program for trace in traces_of(fn) for _plan, program in trace.session._programs.values()
            if program is not None]


def _function(program):
    f = program.function
    return getattr(f, "function", f)  # under exec/compiled/threads.LoadAwareBlas


def instrument(program, totals: dict, clock=time.perf_counter) -> None:
    """Wraps every kernel global that `program`'s lines call with a timer into `totals[op] = [s, calls]`."""
    namespace = _function(program).__globals__
    lines = program.source.splitlines()
    for line_no, (node, _) in namespace["LINES"].items():
        m = _CALL.search(lines[line_no - 1].split("  #")[0])
        if m is None:
            continue
        name = m.group(1) or m.group(2)
        kernel = namespace.get(name)
        if kernel is None or getattr(kernel, "_profiled", False):
            continue
        namespace[name] = _timed(kernel, totals.setdefault(_kind(node, kernel), [0.0, 0]), clock)


def _kind(node, kernel) -> str:
    """The op, or "Fused" for a fused chain's kernel (exec/compiled/fusion.py; its line names the chain's last op)."""
    from exec.compiled.fusion import FusedKernel
    return "Fused" if isinstance(kernel, FusedKernel) else node.op


def _timed(kernel, slot, clock=time.perf_counter):

    def timed(*args):
        t0 = clock()
        try:
            return kernel(*args)
        finally:
            slot[0] += clock() - t0
            slot[1] += 1
    timed._profiled = True
    return timed


def wrapper_cost_s(clock) -> float:
    """The timing wrapper's own cost per call (what it adds besides the kernel): the best of a few tries."""
    slot = [0.0, 0]
    f, g = _timed(lambda: None, slot, clock), (lambda: None)
    n, best = 20000, float("inf")
    for _ in range(5):
        t0 = clock()
        for _ in range(n):
            f()
        wrapped = clock() - t0
        t0 = clock()
        for _ in range(n):
            g()
        best = min(best, (wrapped - (clock() - t0)) / n)
    return max(best, 0.0)


def lstm_workload(T: int, mode: str):
    import lstm
    step = lstm.build_ours(T, static=False, mode=mode)
    return step, step.transpiled


def dqn_workload(mode: str):
    """bench/dqn.py's in-graph agent: a step is a block of 1000 interactions (its converted function's calls)."""
    import importlib.util

    import _dqn_workload as W
    spec = importlib.util.spec_from_file_location("dqn_bench", os.path.join(os.path.dirname(__file__), "dqn.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    run = bench.build_ours(in_graph=True)
    run.agent.step.mode = mode
    run(W.WARMUP_STEPS)

    def step():
        run(1000)
    return step, run.agent.step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="lstm", choices=("lstm", "dqn"))
    ap.add_argument("--seq", type=int, default=100)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--mode", default="compiled")
    ap.add_argument("--no-fusion", action="store_true", help="compiled code without fused chains (numpy's kernels)")
    ap.add_argument("--clock", default="wall", choices=("wall", "cpu"),
                    help="wall time, or this process's CPU time (steadier on a shared machine)")
    a = ap.parse_args()
    if a.no_fusion:
        from exec.compiled import fusion
        fusion._available = False
    step, fn = lstm_workload(a.seq, a.mode) if a.workload == "lstm" else dqn_workload(a.mode)
    clock = time.perf_counter if a.clock == "wall" else time.process_time
    step()
    step()
    plain = []
    for _ in range(a.steps):
        t0 = clock()
        step()
        plain.append(clock() - t0)
    totals: dict = {}
    for program in programs_of(fn):
        instrument(program, totals, clock)
    step()
    for slot in totals.values():
        slot[0], slot[1] = 0.0, 0
    walls = []
    for _ in range(a.steps):
        t0 = clock()
        step()
        walls.append(clock() - t0)
    wrapper = wrapper_cost_s(clock)
    steps = a.steps
    wall = sum(walls) / steps
    rows = sorted(((op, s / steps, n / steps) for op, (s, n) in totals.items() if n), key=lambda r: -r[1])
    calls = sum(r[2] for r in rows)
    kernels = sum(r[1] for r in rows) - calls * wrapper
    print(f"\n{a.workload}: {a.mode} mode, {a.clock} clock, step median {statistics.median(plain) * 1e3:.2f} ms uninstrumented, "
          f"{wall * 1e3:.2f} ms instrumented (mean of {steps}); wrapper {wrapper * 1e6:.2f} us a call, taken off")
    print(f"{'op':<22}{'ms/step':>9}{'share':>8}{'calls':>8}{'us/call':>9}")
    for op, s, n in rows:
        net = s - n * wrapper
        print(f"{op:<22}{net * 1e3:>9.2f}{net / wall:>8.1%}{n:>8.0f}{net / n * 1e6:>9.1f}")
    rest = wall - kernels - calls * wrapper
    print(f"{'(generated code)':<22}{rest * 1e3:>9.2f}{rest / wall:>8.1%}")
    print("BENCH_JSON: " + json.dumps({
        "bench": "op_profile", "workload": a.workload, "mode": a.mode, "clock": a.clock, "fusion": not a.no_fusion, "seq": a.seq,
        "step_ms": statistics.median(plain) * 1e3, "instrumented_ms": wall * 1e3, "wrapper_us": wrapper * 1e6,
        "ops": {op: {"ms": (s - n * wrapper) * 1e3, "calls": n} for op, s, n in rows},
        "generated_code_ms": rest * 1e3}))


if __name__ == "__main__":
    main()
