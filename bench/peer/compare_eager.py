#!/usr/bin/env python3
"""bench/peer/compare_eager.py — ferry-run against PyTorch eager on the shipped examples.

For each model (examples/mlp.fy, examples/cnn.fy) runs `ferry-run MODEL --random-inputs` and
bench/peer/torch_eager.py in alternation, R rounds (ferry, torch, ferry, torch, ...: noise on a
shared machine hits both), on the same number of threads (FERRY_NUM_THREADS for ferry,
--threads for torch), and prints per model the median over rounds of each round's median time
per run, the smallest time seen, and torch/ferry (above 1: ferry is faster).

Before timing, `torch_eager.py --check` runs ferry on the torch model's parameters and input and
compares the outputs, so the two time the same graph (--no-check skips it). --torch-env sets
environment variables for torch alone: on a small shared VM, OpenMP threads that spin while
waiting (torch's default) can cost whole scheduler slices per op; OMP_WAIT_POLICY=PASSIVE
shows torch without that. Python's standard
library only; torch_eager.py runs under --python, by default the interpreter running this
script: start it with the venv's python (scripts/make-bench-venv.sh, or `make bench-peer-eager`).
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peerlib  # noqa: E402

REPO = peerlib.REPO
TORCH_EAGER = pathlib.Path(__file__).resolve().parent / "torch_eager.py"
TIME_LINE = re.compile(r"^time per run: median ([0-9.]+) ms, min ([0-9.]+) ms", re.M)
OUTPUT_LINE = re.compile(r"^output \S+: \w+\[([0-9,]*)\]", re.M)


def run(cmd, env=None):
    return peerlib.run_checked(cmd, "compare_eager", env)


def run_ferry(args, model):
    env = dict(os.environ, FERRY_NUM_THREADS=str(args.threads))
    out = run([args.ferry_run, REPO / "examples" / f"{model}.fy", "--random-inputs",
               "--iterations", str(args.iterations), "--warmup", str(args.warmup)], env)
    times, shape = TIME_LINE.search(out), OUTPUT_LINE.search(out)
    if not times or not shape:
        sys.exit(f"compare_eager: no time or output line in ferry-run's output:\n{out}")
    return float(times[1]), float(times[2]), [int(d) for d in shape[1].split(",") if d]


def run_torch(args, model):
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.torch_env))
    out = run([args.python, TORCH_EAGER, "--model", model, "--iterations", str(args.iterations),
               "--warmup", str(args.warmup), "--threads", str(args.threads)], env)
    r = json.loads(out.strip().splitlines()[-1])
    return r["median_ms"], r["min_ms"], r["output_shape"], r["torch"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternations per model (default 5)")
    ap.add_argument("--iterations", type=int, default=50, help="timed runs per process (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs per process (default 5)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="threads for both (default: the cores this process may use)")
    ap.add_argument("--ferry-run", default=str(REPO / "build" / "bin" / "ferry-run"),
                    help="the ferry-run binary (default build/bin/ferry-run)")
    ap.add_argument("--models", default="mlp,cnn", help="comma-separated (default mlp,cnn)")
    ap.add_argument("--python", default=sys.executable, help="python that imports torch")
    ap.add_argument("--torch-env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment for torch only, e.g. OMP_WAIT_POLICY=PASSIVE (repeatable)")
    ap.add_argument("--no-check", action="store_true", help="skip the output comparison")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    if any(m not in ("mlp", "cnn") for m in models) or not models:
        ap.error(f"--models: mlp and/or cnn, got '{args.models}'")
    if min(args.rounds, args.iterations, args.threads) < 1 or args.warmup < 0:
        ap.error("--rounds, --iterations and --threads must be at least 1, --warmup at least 0")
    if any("=" not in kv for kv in args.torch_env):
        ap.error(f"--torch-env: NAME=VALUE, got {args.torch_env}")

    if not args.no_check:
        for model in models:
            r = json.loads(run([args.python, TORCH_EAGER, "--model", model, "--check",
                                "--ferry-run", args.ferry_run]).strip().splitlines()[-1])
            print(f"check {model}: ferry {r['ferry_shape']} and torch {r['torch_shape']} agree, "
                  f"max |difference| {r['max_abs_diff']:.2g}")

    print(f"{args.rounds} rounds x {args.iterations} runs (+{args.warmup} warmup) per process, "
          f"{args.threads} threads each, ferry-run and torch alternating"
          + (f"; torch with {' '.join(args.torch_env)}" if args.torch_env else ""), flush=True)
    results, torch_version = {}, "?"
    for rnd in range(1, args.rounds + 1):
        for model in models:
            f_med, f_min, f_shape = run_ferry(args, model)
            t_med, t_min, t_shape, torch_version = run_torch(args, model)
            if f_shape != t_shape:
                sys.exit(f"compare_eager: {model}: ferry's output is {f_shape}, torch's {t_shape}")
            results.setdefault(model, []).append((f_med, f_min, t_med, t_min))
            print(f"  round {rnd} {model}: ferry median {f_med:.3f} ms (min {f_min:.3f}), "
                  f"torch median {t_med:.3f} ms (min {t_min:.3f})", flush=True)

    print(f"\ntorch {torch_version}{''.join(' ' + kv for kv in args.torch_env)}, "
          f"{args.threads} threads; medians over {args.rounds} rounds "
          f"of each round's median, min over all runs; torch/ferry > 1: ferry faster\n")
    header = ("model", "ferry median ms", "torch median ms", "torch/ferry",
              "ferry min ms", "torch min ms")
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 1))
    for model in models:
        f_med, f_min, t_med, t_min = zip(*results[model])
        fm, tm = statistics.median(f_med), statistics.median(t_med)
        print(f"| {model} | {fm:.3f} | {tm:.3f} | {tm / fm:.2f} | {min(f_min):.3f} | "
              f"{min(t_min):.3f} |")
    # A median hides a bimodal run; say so rather than let one number stand for two regimes.
    for model in models:
        rounds = results[model]
        for who, meds in (("ferry", [r[0] for r in rounds]), ("torch", [r[2] for r in rounds])):
            if max(meds) > 3 * min(meds):
                print(f"note: {who}'s round medians on {model} range from {min(meds):.3f} to "
                      f"{max(meds):.3f} ms: the machine was busy (bench/README.md, \"Peer: "
                      f"PyTorch eager\")", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
