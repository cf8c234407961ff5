#!/usr/bin/env python3
"""Compare builds of ferry on a noisy machine: runs the binaries one after the other, ROUNDS
times, and prints the median and minimum per binary of a per-node counter of
ferry-bench-placement (time_per_node, or pds_per_node with --counter), or with --run of
ferry-run's median time per run on each model given.

Interleaving matters on a shared box, whose speed drifts from one minute to the next: two
binaries run minutes apart are not comparable, run in alternation they are.

    bench/compare.py --rounds 5 --filter 'compile(Strict|Auto)/' OLD_BINARY NEW_BINARY
    bench/compare.py --counter pds_per_node OLD_BINARY NEW_BINARY
    bench/compare.py --run examples/mlp.fy --run examples/cnn.fy OLD/ferry-run NEW/ferry-run
"""
import argparse
import collections
import os
import re
import statistics
import subprocess
import sys

UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
COUNTERS = ("time_per_node", "pds_per_node")


def run(binary, benchmark_filter, counters):
    """Yields (benchmark, counter, µs) for each benchmark the filter selects."""
    out = subprocess.run([binary, "--benchmark_filter=" + benchmark_filter],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name = re.match(r"^(compile\S+)\s", line)
        if not name:
            continue
        for counter in counters:
            m = re.search(r"\b" + counter + r"=([\d.]+)(ns|us|ms|s)\b", line)
            if m:
                yield name.group(1), counter, float(m.group(1)) * UNITS[m.group(2)]


def run_model(binary, model, iterations):
    """Yields (model, "time_per_run", µs): ferry-run's median time per run on random inputs."""
    out = subprocess.run([binary, model, "--random-inputs", "--iterations", str(iterations)],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"time per run: median ([\d.]+) (ns|us|ms|s)\b", out)
    if not m:
        sys.exit(f"{binary} {model}: no 'time per run' in its output:\n{out}")
    yield model, "time_per_run", float(m.group(1)) * UNITS[m.group(2)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+",
                    help="ferry-bench-placement builds to compare (ferry-run builds with --run)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--filter", default="compile(Strict|Auto)/")
    ap.add_argument("--counter", choices=COUNTERS, action="append",
                    help="time_per_node: the whole compile(); pds_per_node: placement + dtype + "
                         "simplify; may be repeated (default: time_per_node)")
    ap.add_argument("--run", metavar="MODEL", action="append",
                    help="time ferry-run on this model (.fy or .ferry) instead; may be repeated")
    ap.add_argument("--iterations", type=int, default=50, help="ferry-run runs per round (--run)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.iterations < 1:
        ap.error(f"--iterations must be at least 1, got {args.iterations}")
    if args.run and args.counter:
        ap.error("--counter is a ferry-bench-placement counter; --run times ferry-run")
    expected = "a ferry-run binary" if args.run else "a ferry-bench-placement binary"
    for b in args.binaries:
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            ap.error(f"{b} is not an executable file (expected {expected})")
    for model in args.run or []:
        if not os.path.isfile(model):
            ap.error(f"--run {model}: no such file")
    counters = ["time_per_run"] if args.run else args.counter or ["time_per_node"]
    times = collections.defaultdict(list)
    for r in range(args.rounds):
        for i, b in enumerate(args.binaries):
            results = ([t for m in args.run for t in run_model(b, m, args.iterations)]
                       if args.run else run(b, args.filter, counters))
            for name, counter, us in results:
                times[name, counter, i].append(us)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    names = sorted({n for n, _, _ in times},
                   key=lambda n: (args.run.index(n),) if args.run
                   else (n.split("/")[0], int(n.split("/")[1])))
    for i, b in enumerate(args.binaries):
        print(f"build {i + 1}: {b}")
    for counter in counters:
        unit = "µs per run" if args.run else "µs per node"
        print(f"\n{counter}: {unit}, median / min of", args.rounds, "rounds")
        print(f"{'benchmark':<24}" + "".join(f"{'build ' + str(i + 1):>30}"
                                             for i in range(len(args.binaries))))
        for n in names:
            cells = [times[n, counter, i] for i in range(len(args.binaries))]
            print(f"{n:<24}" + "".join(
                f"{statistics.median(c):>21.3f} / {min(c):<6.3f}" if c else f"{'-':>30}"
                for c in cells))


if __name__ == "__main__":
    main()
