#!/usr/bin/env python3
"""bench/peer/overhead.py — per-node runtime overhead, ferry against ONNX Runtime, side by side.

The graph of the "[exec] Lowering v2" target: a chain of N `matmul(f32[4,4], f32[4,4])`
(h = x; h = h @ w_i, i < N; y = h), N = 100, 1,000, 10,000, on one thread. The kernels are tiny,
so the time per node is what each runtime costs around a kernel call.

- The same numbers on both sides: this script draws x (standard normal) and the weights (random
  orthogonal matrices, QR of standard normal ones: h keeps the norm of x over any N; plain
  normal weights overflow to inf within ~150 matmuls) with numpy, writes them as .npy files and
  gives them to ferry-bench-overhead (--weights, --input); ONNX Runtime gets them as
  initializers of an ONNX model built with onnx.helper (one MatMul per node, opset 17).
- ferry: `ferry-bench-overhead --benchmark_filter=^runChain/N/ --benchmark_format=json` with
  FERRY_NUM_THREADS=1; its ns_per_node (cpu_ns_per_node) is the wall (process CPU) time of
  Session::run over >= 0.5 s of runs (after 10 warmup runs), divided by runs and N. Compile and
  Session::create are not timed.
- ONNX Runtime: one InferenceSession per N with intra_op_num_threads=1, inter_op_num_threads=1,
  ORT_SEQUENTIAL and ORT's default graph optimisation level (ORT_ENABLE_ALL: a chain of MatMuls
  has nothing to fuse; the table says how many nodes the optimised graph kept). A round is
  sess.run(["y"], {"x": x}) repeated for >= 0.5 s after 10 warmup runs, wall time and process
  CPU time over runs: as ferry's, and including the Python binding's few microseconds per call.
- Rounds alternate ferry and ORT per N; the table gives the median over rounds (and the
  smallest round) of each. Round 1 also writes ferry's y, compared with ORT's and with a float64
  numpy product: the two ran the same graph on the same numbers or the script fails.

    build/bench-venv/bin/python bench/peer/overhead.py [--rounds 7] [--nodes 100,1000,10000]

Needs numpy, onnx and onnxruntime (scripts/make-bench-venv.sh VENV onnx, or `make bench-overhead`).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

REPO = pathlib.Path(__file__).resolve().parents[2]
DIM = 4
WARMUP = 10


def chain_data(nodes, seed):
    """x f32[4,4] and `nodes` orthogonal f32[4,4] weights."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((DIM, DIM)).astype(np.float32)
    q, r = np.linalg.qr(rng.standard_normal((nodes, DIM, DIM)))
    q *= np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]  # a uniform draw, not QR's bias
    return x, q.astype(np.float32)


def onnx_chain(weights, nodes):
    inits = [numpy_helper.from_array(weights[i], f"w{i}") for i in range(nodes)]
    ops = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i - 1}", f"w{i}"],
                            ["y" if i == nodes - 1 else f"h{i}"], name=f"matmul{i}")
           for i in range(nodes)]
    graph = helper.make_graph(
        ops, f"chain{nodes}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [DIM, DIM])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [DIM, DIM])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="ferry bench/peer/overhead.py")
    model.ir_version = 8  # what opset 17 came with
    onnx.checker.check_model(model)
    return model


def ort_session(model, optimized_path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.optimized_model_filepath = str(optimized_path)  # to count the nodes ORT kept
    so.log_severity_level = 3  # its warning about saving an ORT_ENABLE_ALL graph
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    kept = len(onnx.load(str(optimized_path)).graph.node)
    return sess, so.graph_optimization_level, kept


def time_ort(sess, x, min_seconds):
    feed = {"x": x}
    for _ in range(WARMUP):
        sess.run(["y"], feed)
    runs, start, cpu_start = 0, time.perf_counter(), time.process_time()
    while True:
        sess.run(["y"], feed)
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / runs, (time.process_time() - cpu_start) / runs, runs


def time_ferry(args, nodes, files, outputs=None):
    cmd = [args.bench, f"--benchmark_filter=^runChain/{nodes}/", "--benchmark_format=json",
           f"--benchmark_min_time={args.min_time}", f"--weights={files['w']}",
           f"--input={files['x']}"]
    if outputs:
        cmd.append(f"--write_outputs={outputs}")
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, FERRY_NUM_THREADS="1"))
    if proc.returncode != 0:
        sys.exit(f"overhead: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    try:
        runs = json.loads(proc.stdout)["benchmarks"]
    except (json.JSONDecodeError, KeyError):
        runs = []
    if len(runs) != 1 or runs[0].get("error_occurred"):
        sys.exit(f"overhead: {' '.join(cmd)}: no result (nothing matched?):\n"
                 f"{proc.stdout}{proc.stderr}")
    r = runs[0]
    return r["ns_per_node"] * 1e-9 * nodes, r["cpu_ns_per_node"] * 1e-9 * nodes, r["iterations"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7, help="alternations per size (default 7)")
    ap.add_argument("--nodes", default="100,1000,10000", help="chain lengths (default 100,1000,10000)")
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="seconds of runs per side and round (default 0.5, Google Benchmark's)")
    ap.add_argument("--bench", default=str(REPO / "build" / "bin" / "ferry-bench-overhead"),
                    help="the ferry-bench-overhead binary (default build/bin/ferry-bench-overhead)")
    ap.add_argument("--seed", type=int, default=0, help="numpy seed of x and the weights")
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="largest |ferry - ORT| accepted on y (default 1e-3; |y| is about 2)")
    args = ap.parse_args()
    sizes = [int(n) for n in args.nodes.split(",") if n]
    if not sizes or min(sizes) < 1 or args.rounds < 1 or args.min_time <= 0:
        ap.error("--nodes: positive counts; --rounds at least 1; --min-time above 0")
    if not (os.path.isfile(args.bench) and os.access(args.bench, os.X_OK)):
        ap.error(f"{args.bench} is not an executable (ninja -C build ferry-bench-overhead)")

    with tempfile.TemporaryDirectory(prefix="ferry-overhead-") as tmp:
        tmp = pathlib.Path(tmp)
        x, weights = chain_data(max(sizes), args.seed)
        files = {"x": tmp / "x.npy", "w": tmp / "w.npy"}
        np.save(files["x"], x)
        np.save(files["w"], weights)

        sessions = {}
        for n in sizes:
            sessions[n] = ort_session(onnx_chain(weights, n), tmp / f"chain{n}.opt.onnx")
        level = sessions[sizes[0]][1]
        print(f"onnxruntime {ort.__version__} (onnx {onnx.__version__}, numpy {np.__version__}): "
              f"1 intra-op and 1 inter-op thread, sequential, {level}; ferry: "
              f"{args.bench}, FERRY_NUM_THREADS=1")
        print(f"{args.rounds} rounds of >= {args.min_time} s of runs per side and size, "
              f"ferry then ORT", flush=True)

        # (wall, cpu) seconds per run, per size and round
        ferry_t, ort_t = {n: [] for n in sizes}, {n: [] for n in sizes}
        for rnd in range(1, args.rounds + 1):
            for n in sizes:
                f_wall, f_cpu, f_runs = time_ferry(args, n, files, tmp if rnd == 1 else None)
                o_wall, o_cpu, o_runs = time_ort(sessions[n][0], x, args.min_time)
                ferry_t[n].append((f_wall, f_cpu))
                ort_t[n].append((o_wall, o_cpu))
                print(f"  round {rnd} N={n}: ferry {f_wall * 1e9 / n:.1f} ns/node wall, "
                      f"{f_cpu * 1e9 / n:.1f} CPU ({f_runs} runs); ORT {o_wall * 1e9 / n:.1f} "
                      f"wall, {o_cpu * 1e9 / n:.1f} CPU ({o_runs} runs)", flush=True)
            if rnd == 1:
                check(args, sizes, sessions, x, weights, tmp)

    print(f"\nns per node: median over {args.rounds} rounds (smallest round in parentheses); a "
          f"round is >= {args.min_time} s of runs, its time over its runs: wall time, and the "
          f"process's CPU time (on a shared machine wall time also counts waiting for a core)\n")
    print("| nodes | clock | ferry ns/node | ORT ns/node | ferry/ORT | ferry µs/run | ORT µs/run |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in sizes:
        for k, clock in enumerate(("wall", "CPU")):
            fs, os_ = [t[k] for t in ferry_t[n]], [t[k] for t in ort_t[n]]
            f, o = statistics.median(fs), statistics.median(os_)
            print(f"| {n:,} | {clock} | {f * 1e9 / n:.1f} ({min(fs) * 1e9 / n:.1f}) | "
                  f"{o * 1e9 / n:.1f} ({min(os_) * 1e9 / n:.1f}) | {f / o:.2f} | "
                  f"{f * 1e6:.1f} | {o * 1e6:.1f} |")
    print("\nORT kept every MatMul: " + ", ".join(
        f"{sessions[n][2]:,} of {n:,} nodes" for n in sizes) + " after optimisation")
    return 0


def check(args, sizes, sessions, x, weights, tmp):
    """ferry's y (written by round 1) against ORT's and a float64 product, per size."""
    for n in sizes:
        ferry_y = np.load(tmp / f"y_{n}.npy")
        ort_y = sessions[n][0].run(["y"], {"x": x})[0]
        exact = x.astype(np.float64)
        for w in weights[:n]:
            exact = exact @ w.astype(np.float64)
        diff = float(np.max(np.abs(ferry_y.astype(np.float64) - ort_y)))
        print(f"  check N={n}: y {list(ferry_y.shape)}, |y| {np.linalg.norm(exact):.3f}; "
              f"max |ferry - ORT| {diff:.2g}, |ferry - float64| "
              f"{np.max(np.abs(ferry_y - exact)):.2g}, |ORT - float64| "
              f"{np.max(np.abs(ort_y - exact)):.2g}", flush=True)
        if ferry_y.shape != ort_y.shape or not diff <= args.tolerance:
            sys.exit(f"overhead: N={n}: ferry and ORT disagree (max |difference| {diff:.3g} > "
                     f"{args.tolerance})")


if __name__ == "__main__":
    sys.exit(main())
