#!/usr/bin/env python3
"""Compare builds of ferry-bench-placement on a noisy machine: runs the binaries one after the
other, ROUNDS times, and prints the median and minimum time_per_node of each benchmark per binary.

Interleaving matters on a shared box, whose speed drifts from one minute to the next: two
binaries run minutes apart are not comparable, run in alternation they are.

    bench/compare.py --rounds 5 --filter 'compile(Strict|Auto)/' OLD_BINARY NEW_BINARY
"""
import argparse
import collections
import re
import statistics
import subprocess
import sys

UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
LINE = re.compile(r"^(compile\S+)\s.*time_per_node=([\d.]+)(ns|us|ms|s)\b")


def run(binary, benchmark_filter):
    out = subprocess.run([binary, "--benchmark_filter=" + benchmark_filter],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            yield m.group(1), float(m.group(2)) * UNITS[m.group(3)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+", help="ferry-bench-placement builds to compare")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--filter", default="compile(Strict|Auto)/")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    times = collections.defaultdict(list)
    for r in range(args.rounds):
        for b in args.binaries:
            for name, us in run(b, args.filter):
                times[name, b].append(us)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    names = sorted({n for n, _ in times},
                   key=lambda n: (n.split("/")[0], int(n.split("/")[1])))
    print("µs per node, median / min of", args.rounds, "rounds")
    print(f"{'benchmark':<24}" + "".join(f"{b[-28:]:>30}" for b in args.binaries))
    for n in names:
        cells = [times[n, b] for b in args.binaries]
        print(f"{n:<24}" + "".join(
            f"{statistics.median(c):>21.3f} / {min(c):<6.3f}" if c else f"{'-':>30}"
            for c in cells))


if __name__ == "__main__":
    main()
