"""A 2-layer LSTM training step, one device against each layer on its own device (the paper's Figure 15 analog).

The step is examples/rnn.py's: a stacked LSTM (input and hidden size H, batch B) over T steps of
random inputs, the squared error of a read-out after the last step, gradients through the time
loop (a gradient loop over the saved values), clipped, SGD. With `--devices 2` each layer's cell is
built inside `with graph.device(...)`: the one time loop, and its gradient loop, are partitioned by
layer, and parallel iterations pipeline them: layer 1 computes step t+1 while layer 2 computes step
t (backward: layer 2's gradient at step t-1 while layer 1's at step t). The matmuls (B x H by H x 4H,
4 per layer and step forward, 8 backward) dominate, and numpy runs them without the GIL.

Variants, all in this run, interleaved round by round (the machine is shared: load from other
processes falls on all alike), each taking the same steps from the same weights:
  1 device          the dataflow executor, kernels inline on its thread (inter_op_threads=0): one
                    device computes on one thread, as a GPU runs one stream
  2 devices         the same, layer k on /cpu:k: two executors, two threads
  2 MPI ranks       layer k on /task:k/cpu:0, one process per rank (python -m dist.launch -n 2), each
                    process's executor inline; a job per round, its step timed inside it
  1 device, pool 2  for reference: one executor with 2 pool threads for its heavy kernels (the
                    executor's own inter-op parallelism, which pipelines the same loop on one device)
  1 device, compiled  for reference: the session's "auto" mode (compiled Python code, one thread)
BLAS runs one thread per call in every variant (exec/blas.py; the ranks get OPENBLAS_NUM_THREADS=1).
Before each round the parent waits (up to --quiet-wait s) for other processes to use fewer than
--quiet-cores cores. Each variant's losses are checked equal (to float32 rounding) to the first variant's, step by step.

Reported per variant: the median step time and steps/s, the CPU time per step (all threads) and the
cores the step kept busy (CPU time / wall time), and "other cores": the mean number of cores other
processes used while it was timed. `speedup_2_devices` is "1 device" time / "2 devices" time;
`gil_parallelism` is how much faster two threads run the layer's matmul than one (2.0: fully
parallel; a busy machine lowers it), and `gil_pause_ms` the longest a Python loop stopped while another
thread ran a large matmul (small next to the matmul's time: numpy releases the GIL in it, which load
cannot fake). Ends with one line `BENCH_JSON: {...}`.

Usage: python bench/pipeline_lstm.py [--hidden 512] [--batch 64] [--seq 50] [--rounds 5] [--no-mpi] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "examples"), os.path.dirname(os.path.abspath(__file__))]

import _procs as P  # noqa: E402
import rnn  # noqa: E402

import grad  # noqa: E402
from exec import blas  # noqa: E402
from exec import executor as _executor  # noqa: E402

LAYERS = 2
# name -> (number of devices the 2 layers are spread over, transpile.function options)
VARIANTS = {
    "1 device": (1, dict(mode="dataflow", inter_op_threads=0)),
    "2 devices": (2, dict(mode="dataflow", inter_op_threads=0)),
    "1 device, pool 2": (1, dict(mode="dataflow", inter_op_threads=2)),
    "1 device, compiled": (1, dict(mode="auto", inter_op_threads=0)),
}
MPI_VARIANT = "2 MPI ranks"


def data(args):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((args.seq, args.batch, args.hidden)).astype(np.float32)
    y = rng.standard_normal((args.batch, 1)).astype(np.float32)
    return x, y


def build(args, devices: int, options: dict):
    """The training step of a fresh model (the same weights for every variant: seed 0)."""
    m = rnn.LSTM(args.hidden, args.hidden, 1, np.random.default_rng(0), layers=LAYERS,
                 devices=rnn.layer_devices(LAYERS, devices))
    return rnn.make_train_step(rnn.adding_loss, m, grad.SGD(0.01), **options)


# CPU seconds of each executor thread in the current step, by thread name ("MainThread" runs the first
# device, "device /task:0/cpu:1" the second): exec.multi_device calls executor.execute on each device's
# thread, so timing that call with the thread's own CPU clock splits a step's work by device
_device_cpu: dict[str, float] = {}
_execute = _executor.execute


def _counted_execute(*args, **kwargs):
    t0 = time.thread_time()
    try:
        return _execute(*args, **kwargs)
    finally:
        name = threading.current_thread().name
        _device_cpu[name] = _device_cpu.get(name, 0.0) + time.thread_time() - t0


_executor.execute = _counted_execute


def cpu_s() -> float:
    return time.process_time()  # every thread of this process, at the clock's resolution (os.times: 10 ms)


def timed(step, x, y, seq):
    """(loss, wall seconds, CPU seconds of this process, other processes' cores) of one step; the CPU
    seconds of each device's executor thread are left in _device_cpu."""
    _device_cpu.clear()
    with P.Contention() as c:
        c0, t0 = cpu_s(), time.perf_counter()
        loss = float(step(x, y, seq))
        wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    return loss, wall, cpu, c.other_cores


def gil_parallelism(args, seconds: float = 1.0) -> float:
    """Two threads running the layer's matmul (B x H by H x 4H) against one: 2.0 when numpy releases the
    GIL and two cores are free."""
    a = np.ones((args.batch, args.hidden), np.float32)
    b = np.ones((args.hidden, 4 * args.hidden), np.float32)

    def work(n):
        for _ in range(n):
            a @ b
    with blas.single_threaded():
        t0 = time.perf_counter()
        n = 0
        while time.perf_counter() - t0 < seconds / 4:
            work(4)
            n += 4
        one_thread = (time.perf_counter() - t0) / n
        threads = [threading.Thread(target=work, args=(n,)) for _ in range(2)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        two_threads = (time.perf_counter() - t0) / (2 * n)
    return one_thread / two_threads


def longest_gil_pause() -> tuple[float, float]:
    """(the longest pause of a Python loop while another thread runs one large matmul, the matmul's
    time): a matmul that held the GIL would stop the loop for all of it; one that releases it stops
    the loop only for thread switches. Unlike gil_parallelism, other processes' load cannot fake it."""
    big = np.ones((2048, 2048), np.float32)
    done = threading.Event()
    took = []

    def work():
        t0 = time.perf_counter()
        big @ big
        took.append(time.perf_counter() - t0)
        done.set()
    with blas.single_threaded():
        t = threading.Thread(target=work)
        last = time.perf_counter()
        pause = 0.0
        t.start()
        while not done.is_set():
            now = time.perf_counter()
            pause, last = max(pause, now - last), now
        t.join()
    return pause, took[0]


# ----------------------------------------------------------------------------- the MPI job

def mpi_child(args) -> None:
    """Rank-side: one warm-up step, then `--steps` steps, each after a barrier; rank 0 prints them."""
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    step = build(args, 2, dict(mode="dataflow", inter_op_threads=0))
    x, y = data(args)
    losses, walls, cpus = [float(step(x, y, args.seq))], [], []
    for _ in range(args.steps):
        MPI.COMM_WORLD.Barrier()
        loss, wall, cpu, _ = timed(step, x, y, args.seq)
        losses.append(loss)
        walls.append(wall)
        cpus.append(cpu)
    # a step's CPU time is both ranks': each sends its own to rank 0
    others = MPI.COMM_WORLD.gather(cpus, root=0)
    if rank == 0:
        P.child_emit({"losses": losses, "walls": walls, "cpus": [sum(c) for c in zip(*others, strict=True)]})


def run_mpi_job(args, steps: int) -> dict:
    from dist.launch import command, run
    cmd = command(2, [os.path.abspath(__file__), "--mpi-child", "--steps", str(steps), "--hidden", str(args.hidden),
                      "--batch", str(args.batch), "--seq", str(args.seq)])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=ROOT)
    out_path = f"/tmp/pipeline_lstm_mpi_{os.getpid()}.out"
    with open(out_path, "w") as out:
        with P.Contention() as c:
            rc = run(cmd, timeout=600, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    with open(out_path) as fh:
        text = fh.read()
    os.unlink(out_path)
    for line in text.splitlines():
        if line.startswith(P.CHILD_TAG):
            payload = json.loads(line[len(P.CHILD_TAG):])
            payload["other_cores"] = c.other_cores  # over the whole job (start-up and tracing included)
            return payload
    return {"error": f"rc={rc}: " + " | ".join(text.strip().splitlines()[-4:])}


def mpi_available() -> str | None:
    """None when 2-rank jobs can run here, else why not."""
    try:
        import mpi4py  # noqa: F401

        from dist.launch import find_mpiexec
        find_mpiexec()
    except (ImportError, FileNotFoundError) as e:
        return f"{type(e).__name__}: {e}"
    return None


# ----------------------------------------------------------------------------- the parent

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seq", type=int, default=50)
    p.add_argument("--rounds", type=int, default=5, help="timed steps per variant, one per round")
    p.add_argument("--quiet-cores", type=float, default=0.7,
                   help="before each round, wait (up to --quiet-wait s) until other processes use fewer cores")
    p.add_argument("--quiet-wait", type=float, default=20.0)
    p.add_argument("--no-mpi", action="store_true", help="leave out the 2-rank variant")
    p.add_argument("--quick", action="store_true", help="hidden 256, T=20, 3 rounds")
    p.add_argument("--mpi-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.mpi_child:
        mpi_child(args)
        return
    if args.quick:
        args.hidden, args.seq, args.rounds = 256, 20, 3
    x, y = data(args)
    load_before = os.getloadavg()
    print(f"2-layer LSTM training step: B={args.batch}, H={args.hidden}, T={args.seq}; {os.cpu_count()} cores, "
          f"load average {load_before[0]:.1f}; numpy {np.__version__}, BLAS threads per call 1")
    gil = gil_parallelism(args)
    print(f"two threads run the layer's matmul {gil:.2f}x as fast as one (2.0: the GIL is released, 2 free cores)")
    pause, matmul_s = longest_gil_pause()
    print(f"a Python loop paused at most {pause * 1e3:.1f} ms while another thread ran a {matmul_s * 1e3:.0f} ms matmul "
          "(numpy releases the GIL in it: a held GIL would pause it for the whole matmul)")

    steps = {}
    results = {name: {"losses": [], "walls": [], "cpus": [], "other": []} for name in VARIANTS}
    for name, (devices, options) in VARIANTS.items():  # trace and warm up every variant first
        t0 = time.perf_counter()
        steps[name] = build(args, devices, options)
        results[name]["losses"].append(float(steps[name](x, y, args.seq)))
        print(f"  {name}: first step (tracing, planning) {time.perf_counter() - t0:.1f} s", flush=True)
    why_no_mpi = "--no-mpi" if args.no_mpi else mpi_available()
    if why_no_mpi is None:
        results[MPI_VARIANT] = {"losses": [], "walls": [], "cpus": [], "other": []}
    for r in range(args.rounds):
        waited = time.perf_counter()
        P.wait_quiet(args.quiet_cores, args.quiet_wait)
        waited = time.perf_counter() - waited
        for name, step in steps.items():
            loss, wall, cpu, other = timed(step, x, y, args.seq)
            res = results[name]
            res["losses"].append(loss)
            res["walls"].append(wall)
            res["cpus"].append(cpu)
            res["other"].append(other)
            res.setdefault("device_cpus", []).append(sorted(_device_cpu.values(), reverse=True))
        if why_no_mpi is None:
            # one job per round, timing one step after a warm-up step that repeats the in-process ones' first
            job = run_mpi_job(args, 1)
            if "error" in job:
                print(f"  the MPI job failed: {job['error']}")
                why_no_mpi = job["error"]
                del results[MPI_VARIANT]
            else:
                res = results[MPI_VARIANT]
                if not res["losses"]:
                    res["losses"].append(job["losses"][0])
                res["walls"] += job["walls"]
                res["cpus"] += job["cpus"]
                res["other"].append(job["other_cores"])
                res.setdefault("job_losses", []).append(job["losses"])
        print(f"  round {r + 1}/{args.rounds} done (after waiting {waited:.0f} s for a quieter machine), "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)

    # every in-process variant took the same steps from the same weights: the same losses
    reference = results["1 device"]["losses"]
    for name, res in results.items():
        got = res["losses"] if name != MPI_VARIANT else res["losses"][:1]
        np.testing.assert_allclose(got, reference[:len(got)], rtol=2e-4,
                                   err_msg=f"{name}'s losses differ from one device's")
    for job in results.get(MPI_VARIANT, {}).get("job_losses", []):
        np.testing.assert_allclose(job, reference[:len(job)], rtol=2e-4, err_msg="the MPI job's losses differ")

    rows = {}
    print(f"\n{'variant':22s} {'step ms':>9s} {'steps/s':>8s} {'CPU ms':>8s} {'cores busy':>10s} "
          f"{'other cores':>11s} {'vs 1 device':>11s}")
    base = statistics.median(results["1 device"]["walls"])
    for name, res in results.items():
        wall, cpu = statistics.median(res["walls"]), statistics.median(res["cpus"])
        other = statistics.mean(res["other"])
        rows[name] = {"step_ms": round(wall * 1e3, 1), "steps_per_s": round(1 / wall, 3),
                      "cpu_ms": round(cpu * 1e3, 1), "cores_busy": round(cpu / wall, 2),
                      "other_cores": round(other, 2), "speedup": round(base / wall, 2),
                      "walls_ms": [round(w * 1e3, 1) for w in res["walls"]]}
        r = rows[name]
        print(f"{name:22s} {r['step_ms']:9.1f} {r['steps_per_s']:8.3f} {r['cpu_ms']:8.1f} {r['cores_busy']:10.2f} "
              f"{r['other_cores']:11.2f} {r['speedup']:10.2f}x")
    if why_no_mpi is not None:
        print(f"({MPI_VARIANT}: not run: {why_no_mpi})")
    load_after = os.getloadavg()
    speedup = rows["1 device"]["step_ms"] / rows["2 devices"]["step_ms"]
    best_one = min(rows[n]["step_ms"] for n in rows if n.startswith("1 device"))
    # the two variants ran one after the other in each round, under about the same load
    per_round = [a / b for a, b in zip(results["1 device"]["walls"], results["2 devices"]["walls"], strict=True)]
    # where each device's executor thread spent its CPU: with cores to spare, a pipelined step takes about
    # as long as its busiest device's work, so this ratio is the speedup the partitioning allows
    one_cpu = statistics.median(sum(d) for d in results["1 device"]["device_cpus"])
    busiest = statistics.median(d[0] for d in results["2 devices"]["device_cpus"])
    split = [round(statistics.median(d[k] for d in results["2 devices"]["device_cpus"]) * 1e3, 1) for k in range(2)]
    bound = one_cpu / busiest
    print(f"\nspeedup of 2 devices over 1 device: {speedup:.2f}x of medians (target >= 1.5x on 2 free cores); "
          f"per round {', '.join(f'{r:.2f}x' for r in per_round)}; over the fastest one-device variant: "
          f"{best_one / rows['2 devices']['step_ms']:.2f}x; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after")
    print(f"executor CPU per step: 1 device {one_cpu * 1e3:.0f} ms; 2 devices {split[0]:.0f} + {split[1]:.0f} ms "
          f"(busiest device / one device's: the speedup with 2 free cores is at most {bound:.2f}x)")
    out = {"bench": "pipeline_lstm", "batch": args.batch, "hidden": args.hidden, "seq": args.seq,
           "rounds": args.rounds, "speedup_2_devices": round(speedup, 3),
           "speedup_2_devices_vs_best_1_device": round(best_one / rows["2 devices"]["step_ms"], 3),
           "speedup_2_devices_per_round": [round(r, 3) for r in per_round],
           "speedup_2_devices_cpu_bound": round(bound, 3),
           "executor_cpu_ms": {"1 device": round(one_cpu * 1e3, 1), "2 devices": split},
           "speedup_2_mpi_ranks": (round(rows["1 device"]["step_ms"] / rows[MPI_VARIANT]["step_ms"], 3)
                                   if MPI_VARIANT in rows else None),
           "gil_parallelism": round(gil, 3), "gil_pause_ms": round(pause * 1e3, 2),
           "gil_pause_matmul_ms": round(matmul_s * 1e3, 1), "load_average": [round(load_before[0], 2), round(load_after[0], 2)],
           "cpu_count": os.cpu_count(), "python": platform.python_version(), "variants": rows}
    print("BENCH_JSON: " + json.dumps(out))


if __name__ == "__main__":
    main()
