"""First-call cost: converting and tracing a function of n simple statements, per statement.

A function of n statements (arithmetic on two arguments, a numpy call, a new name every
fourth statement, so it has about n/2 names, and a tensor `if` every 40) is converted, traced and called once,
for n in --sizes. Reported per size: the median CPU seconds of --repeats conversions, µs
per statement, the share of the conversion itself (parse, converters, analyses, source)
against tracing and compiling the graph, and as a baseline Python's own parse and compile
of the same source, measured in the same run. Linear means µs/statement stays flat as n
grows: `growth` is µs/statement at the largest size over the smallest. CPU time, not wall
time, because the machines are shared. Ends with one JSON line.

Usage: python bench/conversion.py [--sizes 100 1000 4000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import transpile  # noqa: E402
from transpile import conversion  # noqa: E402


def source_of(n: int, salt: int = 0) -> str:
    """`salt` changes the constants: conversions are cached per code object, and code objects of equal
    source compare equal (whatever their file), so every measurement converts a source of its own."""
    lines = ["def f(x, y):"]
    for i in range(n):
        k = i % 4
        if k == 0:
            lines.append(f"    a{i} = x * {i % 7 + 1 + salt} + y")
        elif k == 1:
            lines.append(f"    x = a{i - 1} - x * 0.5")
        elif k == 2:
            lines.append("    y = np.tanh(x) + y")
        elif i % 40 == 3:  # now and then a tensor `if`: the function must be converted, not only traced
            lines += ["    if x > y:", "        x = x * 0.5"]
        else:
            lines.append(f"    b{i} = y * x")
    lines.append("    return x + y")
    return "\n".join(lines) + "\n"


def function_of(n: int, directory: str, tag: str, salt: int):
    # inspect needs the source in a file; a file of its own per measurement, so that no cache of an
    # earlier conversion (they are keyed by where the function is defined) serves it
    path = os.path.join(directory, f"conversion_bench_{n}_{tag}.py")
    src = source_of(n, salt)
    with open(path, "w") as f:
        f.write(src)
    ns = {"np": np}
    exec(compile(src, path, "exec"), ns)
    return ns["f"], src, path


def measure(n: int, repeats: int, directory: str) -> dict:
    totals, converts, pythons = [], [], []
    for r in range(repeats):
        f, src, path = function_of(n, directory, f"{r}_total", 2 * r)
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                transpile.function(f)(np.float64(0.5), np.float64(0.25))
        totals.append(time.process_time() - t0)
        t0 = time.process_time()
        compile(src, path, "exec")
        pythons.append(time.process_time() - t0)
        f, _, _ = function_of(n, directory, f"{r}_convert", 2 * r + 1)
        t0 = time.process_time()
        conversion.convert_function(f)
        converts.append(time.process_time() - t0)
    total, convert, python = (statistics.median(v) for v in (totals, converts, pythons))
    return {"statements": n, "total_s": total, "us_per_statement": total / n * 1e6,
            "convert_us_per_statement": convert / n * 1e6, "python_compile_us_per_statement": python / n * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 4000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        rows = [measure(n, args.repeats, d) for n in args.sizes]
    print(f"{'statements':>10} {'total s':>9} {'us/stmt':>9} {'convert us/stmt':>16} {'python compile us/stmt':>23} "
          f"{'ratio to python':>16}")
    for r in rows:
        print(f"{r['statements']:>10} {r['total_s']:>9.3f} {r['us_per_statement']:>9.0f} "
              f"{r['convert_us_per_statement']:>16.0f} {r['python_compile_us_per_statement']:>23.1f} "
              f"{r['us_per_statement'] / r['python_compile_us_per_statement']:>16.0f}")
    growth = rows[-1]["us_per_statement"] / rows[0]["us_per_statement"]
    print(f"growth of us/statement from {rows[0]['statements']} to {rows[-1]['statements']} statements: {growth:.2f}x")
    print(json.dumps({"bench": "conversion", "rows": rows, "growth": round(growth, 3),
                      "us_per_statement_largest": round(rows[-1]["us_per_statement"], 1)}))


if __name__ == "__main__":
    main()
