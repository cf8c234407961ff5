#!/usr/bin/env python3
"""bench/peer/peer.py — ferry against PyTorch eager, torch.compile, ONNX Runtime and JAX on the
same models, inputs and thread counts, in interleaved rounds; a table of medians and ratios.

    build/bench-venv/bin/python bench/peer/peer.py [--rounds 5] [--models mlp,chain,...]
        [--peers torch,torch.compile,ort,jax] [--threads 2 | --threads mlp=2,lenet=1] [--quick]

(`make bench-peer` makes the venv, builds the two drivers and runs this.) The models
(peer_models.py): MLP 784-1024-1024-10 at batch 1, 32, 256; gelu(x*1.5+0.25)*0.75 on 16M f32;
a LeNet-style CNN at batch 1 and 32; a residual block with BatchNorm (64 channels, 56x56); a
pre-LN transformer encoder block (d 256, 4 heads, seq 128). Threads by default: 2 for the MLP
and the chain, 1 for the others (the issue's targets).

1. Export: each model is defined in PyTorch (seeded), exported once to ONNX (opset 17) with its
   input x.npy, its weights params.npz and torch eager's output y.npy, in a work folder.
2. Runtimes, each run what a user calls, on the input made once, timed run by run:
   - ferry: `ferry-bench-model model.onnx --input x=x.npy` (bench/model_bench.cpp): import,
     compile with the default options for cpu, one Session, Session::run timed;
     FERRY_NUM_THREADS.
   - torch (eager), torch.compile (mode default, compiled by its first run), ORT (the same
     .onnx), JAX (jax.jit of the model written in jax.numpy/lax, same weights): in one worker
     process per runtime kind and thread count (peer_worker.py, which says how each one's
     threads are set), kept alive across rounds so that compiling happens once.
3. Rounds: per round and model, ferry then each peer, each for >= --iterations runs and
   >= --min-time seconds after --warmup runs; a round's figure is the median of its runs, the
   table's is the median of the rounds'. Noise on a shared machine hits every runtime alike.
   With the chain, each round also runs ferry-bench-triad (the STREAM triad on ferry's pool, 16M
   f32, the chain's threads): the chain's bandwidth is given as a share of it (bytes: 1 f32 read
   and 1 write per element for the chain, 2 reads and 1 write for the triad).
4. Check, round 1: every runtime's output against torch eager's (shape, and max |difference|
   <= --tolerance * (1 + max |torch|)). ferry disagreeing stops the benchmark (exit 1); a peer
   disagreeing loses its cell. A runtime that cannot run a model (an import error, a compile
   failure) gets the reason in its cell, and the rest runs on.

The table: ferry's median ms, each peer's, and ferry / peer (below 1: ferry is faster); a second
table gives each runtime's process CPU time over wall time per run (how many cores it kept
busy). The machine (CPU, cores, load before and after) and the versions are printed with it.

--gpu: the same rounds and check on GPU 0, for the MLP (batch 1, 32, 256) and the transformer
block, against torch eager, torch.compile and ORT's CUDAExecutionProvider (left out, with the
reason printed, when onnxruntime has none); no JAX, no pinning. On a machine without a GPU it
exits with one line saying so. Every runtime's timed run starts from the host input and ends with
the output on the host, computing in f32 (TF32 off in torch and ORT; ferry's cuBLASLt GEMMs are
f32):
   - ferry: ferry-bench-model ... --devices cpu,cuda:0 --target cuda:0 --placement auto (under
     strict placement the ONNX input's host device would keep every node on the cpu): the
     plan's upload of x, the kernels, the Session's download of y. A plan with no step on
     cuda:0 is an error in ferry's cell.
   - torch eager, torch.compile: weights on the GPU; module(x.to("cuda")).cpu(), then
     torch.cuda.synchronize(), x a CPU tensor made once.
   - ORT: sess.run on the numpy array (ORT's copies in and out inside it).
  --bundle .gpu/bundle.tar.xz (scripts/gpu-bundle.sh, made on a machine that can build ferry)
  unpacks it into the work folder and runs its ferry-bench-model with its libraries (for ferry's
  process only), /usr/local/cuda/lib64 and, where found, the CUDA 13 libraries of the NVIDIA
  packages beside torch (NVRTC and cuBLASLt, which ferry opens by soname) on LD_LIBRARY_PATH.
"""
import argparse
import importlib.metadata as md
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in the source tree
sys.path.insert(0, str(HERE))
import peer_models  # noqa: E402
import peerlib  # noqa: E402

PEERS = ("torch", "torch.compile", "ort", "jax")
LABEL = {"ferry": "ferry", "torch": "torch eager", "torch.compile": "torch.compile",
         "ort": "ONNX Runtime", "jax": "jax.jit"}
KIND = {"torch": "torch", "torch.compile": "torch", "ort": "ort", "jax": "jax"}
GPU_MODELS = ("mlp-b1", "mlp-b32", "mlp-b256", "transformer")
GPU_PEERS = ("torch", "torch.compile", "ort")
# ferry on GPU 0; auto placement, since under strict the ONNX input's host device keeps every node
# on the cpu (bench/model_bench.cpp).
GPU_DEVICE = "cuda:0"
FERRY_GPU_FLAGS = ["--devices", "cpu," + GPU_DEVICE, "--target", GPU_DEVICE, "--placement", "auto"]


class Worker:
    """A peer_worker.py process: one runtime kind at one thread count."""

    def __init__(self, kind, threads, args, log):
        self.log_hint, self.error = log.name, None
        env = dict(os.environ)
        if kind == "torch":
            env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
            env.update(dict(kv.split("=", 1) for kv in args.torch_env))
        elif kind == "jax":
            env["JAX_PLATFORMS"] = "cpu"
            if threads == 1:
                env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                                    " --xla_cpu_multi_thread_eigen=false").strip()
        self.proc = subprocess.Popen(
            [sys.executable, HERE / "peer_worker.py", "--kind", kind, "--threads", str(threads),
             "--device", "cuda" if args.gpu else "cpu"] + (["--pin"] if args.pin else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        self.error = self._read().get("error")

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            self.error = f"the worker exited ({self.proc.wait()}); its log: {self.log_hint}"
            return {"error": self.error}
        return json.loads(line)

    def ask(self, request):
        if self.error:
            return {"error": self.error}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def parse_threads(text, keys, ap):
    """--threads: one count for every model, or FAMILY_OR_KEY=N pairs over the defaults."""
    threads = {k: peer_models.MODELS[k].threads for k in keys}
    if text is None:
        return threads
    if text.isdigit() and int(text) >= 1:
        return {k: int(text) for k in keys}
    for pair in text.split(","):
        name, _, n = pair.partition("=")
        if not n.isdigit() or int(n) < 1:
            ap.error(f"--threads: N or NAME=N,... with N >= 1, got '{pair}'")
        hit = [k for k in keys if k == name or peer_models.MODELS[k].family == name]
        if not hit:
            ap.error(f"--threads: '{name}' names none of the chosen models ({', '.join(keys)})")
        threads.update({k: int(n) for k in hit})
    return threads


def pick_models(text, ap, gpu=False):
    keys = []
    for name in text.split(","):
        hit = [k for k, s in peer_models.MODELS.items() if name in (k, s.family)]
        if not hit:
            ap.error(f"--models: '{name}' is none of {', '.join(peer_models.MODELS)} "
                     f"(or a family: mlp, lenet)")
        if gpu and any(k not in GPU_MODELS for k in hit):
            ap.error(f"--models: '{name}': with --gpu, some of {', '.join(GPU_MODELS)} (or mlp)")
        keys += [k for k in hit if k not in keys]
    return keys


def cuda_library_dirs():
    """Folders holding NVRTC or cuBLASLt of CUDA 13, which ferry dlopens by soname: the toolkit's
    /usr/local/cuda/lib64, then those of the NVIDIA packages installed beside torch."""
    found = [pathlib.Path("/usr/local/cuda/lib64")]
    for entry in sys.path:
        base = pathlib.Path(entry or ".") / "nvidia"
        if base.is_dir():
            found += sorted(base.glob("*/lib")) + sorted(base.glob("*/*/lib"))
    dirs = []
    for d in found:
        if d.is_dir() and str(d) not in dirs and (any(d.glob("libnvrtc.so.13*"))
                                                 or any(d.glob("libcublasLt.so.13*"))):
            dirs.append(str(d))
    return dirs


def unpack_bundle(path, work):
    """scripts/gpu-bundle.sh's .tar.xz unpacked into work/bundle: (its ferry-bench-model, its lib
    folder, the revision it was built at)."""
    dest = work / "bundle"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(path, "r:*") as tar:
        tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    exe = dest / "bin" / "ferry-bench-model"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        sys.exit(f"peer: --bundle {path}: no bin/ferry-bench-model in it (scripts/gpu-bundle.sh "
                 f"packs it)")
    rev = (dest / "revision").read_text().strip() if (dest / "revision").is_file() else "unknown"
    return exe, dest / "lib", rev


def ferry_env(args, threads):
    env = dict(os.environ, FERRY_NUM_THREADS=str(threads))
    if args.ferry_lib_path:
        env["LD_LIBRARY_PATH"] = ":".join(
            args.ferry_lib_path + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
    return env


def gpu_or_exit():
    """One line about GPU 0 (model, driver, torch's CUDA); exits with one line when there is
    none. Called before anything is exported or started."""
    try:
        import torch
    except ImportError as e:
        sys.exit(f"peer: --gpu: torch does not import ({e})")
    if not torch.cuda.is_available():
        built = (f"built for CUDA {torch.version.cuda}" if torch.version.cuda
                 else "a build without CUDA")
        sys.exit(f"peer: --gpu: no GPU: torch {torch.__version__} ({built}) sees no CUDA device "
                 f"(torch.cuda.is_available() is False)")
    name = torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                 "--format=csv,noheader", "-i", "0"], capture_output=True,
                                text=True, timeout=60).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        driver = "unknown (no nvidia-smi)"
    return (f"{name} (GPU 0 of {torch.cuda.device_count()}), compute capability {major}.{minor}, "
            f"driver {driver}; torch's CUDA {torch.version.cuda}")


def ort_gpu_reason():
    """None when onnxruntime has the CUDA provider, else why ORT is left out."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        return f"onnxruntime does not import ({e})"
    have = ort.get_available_providers()
    if "CUDAExecutionProvider" in have:
        return None
    return (f"onnxruntime {ort.__version__} has no CUDAExecutionProvider (providers: "
            f"{', '.join(have)}; the GPU build is the onnxruntime-gpu package)")


def run_ferry(args, key, folder, threads, write_outputs):
    cmd = [args.bench_model, folder / "model.onnx", "--input", f"x={folder / 'x.npy'}",
           "--warmup", args.warmup, "--iterations", args.iterations, "--min-time", args.min_time]
    if args.gpu:
        cmd += FERRY_GPU_FLAGS
    if write_outputs:  # y.npy there, beside torch's in folder
        (folder / "ferry").mkdir(exist_ok=True)
        cmd += ["--output-dir", folder / "ferry"]
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          env=ferry_env(args, threads),
                          preexec_fn=pin_to(threads) if args.pin else None)
    result = peerlib.last_json_line(proc.stdout) if proc.returncode == 0 else None
    if result is None:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return {"error": why.removeprefix("ferry-bench-model: ").removeprefix("error: ")}
    if args.gpu and not result.get("steps", {}).get(GPU_DEVICE):
        return {"error": f"the plan has no step on {GPU_DEVICE} (steps per device: "
                         f"{result.get('steps')}): not a GPU figure"}
    return result


def pin_to(threads):
    """A preexec_fn that cuts the child's CPU affinity to the first `threads` usable cores."""
    cores = sorted(os.sched_getaffinity(0))[:threads]
    return lambda: os.sched_setaffinity(0, cores)


def run_triad(args, threads):
    cmd = [args.bench_triad, "--elements", peer_models.CHAIN_ELEMENTS,
           "--passes", args.triad_passes]
    out = peerlib.run_checked(cmd, "peer", env=dict(os.environ, FERRY_NUM_THREADS=str(threads)),
                              preexec_fn=pin_to(threads) if args.pin else None)
    return json.loads(out)


def check(args, key, folder, runtime, got_path):
    """None when the output at got_path matches torch eager's, else why not."""
    want = np.load(folder / "y.npy")
    got = np.load(got_path)
    if got.shape != want.shape:
        return f"output shape {list(got.shape)}, torch's {list(want.shape)}"
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    limit = args.tolerance * (1 + float(np.max(np.abs(want))))
    print(f"  check {key} {LABEL[runtime]}: max |difference| from torch eager {diff:.2g} "
          f"(limit {limit:.2g})", flush=True)
    return None if diff <= limit else f"differs from torch eager by {diff:.3g} (> {limit:.3g})"


def versions():
    names = ("torch", "onnxruntime", "onnx", "jax", "jaxlib", "numpy")
    found = []
    for n in names:
        try:
            found.append(f"{n} {md.version(n)}")
        except md.PackageNotFoundError:
            found.append(f"{n} missing")
    return (f"ferry {peerlib.git_revision()}, Python {platform.python_version()}, "
            + ", ".join(found))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--models", help="models or families, comma-separated (default: all: "
                                     + ", ".join(peer_models.MODELS) + "; with --gpu "
                                     + ", ".join(GPU_MODELS) + ")")
    ap.add_argument("--peers", help=f"default {','.join(PEERS)}; with --gpu {','.join(GPU_PEERS)}")
    ap.add_argument("--gpu", action="store_true",
                    help="on GPU 0: ferry (--devices cpu,cuda:0 --target cuda:0 --placement "
                         "auto), torch, torch.compile and ORT's CUDA provider, each timed from "
                         "the host input to the host output; the MLP and the transformer only")
    ap.add_argument("--bundle", metavar="FILE",
                    help="run the ferry-bench-model of this scripts/gpu-bundle.sh bundle "
                         "(.gpu/bundle.tar.xz), with its libraries")
    ap.add_argument("--threads", help="N for every model, or NAME=N,... (default: mlp and chain "
                                      "2, the others 1)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs per round (default 3)")
    ap.add_argument("--iterations", type=int, default=10,
                    help="at least this many timed runs per runtime and round (default 10)")
    ap.add_argument("--min-time", type=float, default=0.3,
                    help="and at least this many seconds of them (default 0.3)")
    ap.add_argument("--no-pin", dest="pin", action="store_false",
                    help="leave the processes' CPU affinity alone (default: each runtime's "
                         "process, ferry's included, is cut to as many cores as it has threads)")
    ap.add_argument("--triad-passes", type=int, default=10, help="triad passes per round")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 1 round, 1 warmup, 3 runs, no minimum time")
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="max |runtime - torch| <= tolerance * (1 + max |torch|) (default 1e-3)")
    ap.add_argument("--torch-env", action="append", default=None, metavar="NAME=VALUE",
                    help="environment of the torch worker (default OMP_WAIT_POLICY=PASSIVE: "
                         "bench/README.md, 'Peer: PyTorch eager'); --torch-env= for none")
    build = peerlib.REPO / "build" / "bin"
    ap.add_argument("--bench-model", default=str(build / "ferry-bench-model"))
    ap.add_argument("--bench-triad", default=str(build / "ferry-bench-triad"))
    ap.add_argument("--workdir", help="export here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    args.ferry_lib_path = []
    if args.models is None:
        args.models = ",".join(GPU_MODELS if args.gpu else peer_models.MODELS)
    if args.peers is None:
        args.peers = ",".join(GPU_PEERS if args.gpu else PEERS)
    if args.gpu:
        args.pin = False  # the host side of a GPU run: left to the OS, for every runtime alike
    if args.quick:
        args.rounds, args.warmup, args.iterations, args.min_time, args.triad_passes = 1, 1, 3, 0, 3
    args.torch_env = [kv for kv in (args.torch_env if args.torch_env is not None
                                    else ["OMP_WAIT_POLICY=PASSIVE"]) if kv]
    keys = pick_models(args.models, ap, args.gpu)
    peers = [p for p in args.peers.split(",") if p]
    allowed = GPU_PEERS if args.gpu else PEERS
    if any(p not in allowed for p in peers):
        ap.error(f"--peers: some of {', '.join(allowed)}{' (with --gpu)' if args.gpu else ''}, "
                 f"got '{args.peers}'")
    threads = parse_threads(args.threads, keys, ap)
    if min(args.rounds, args.iterations, args.triad_passes) < 1 or args.warmup < 0:
        ap.error("--rounds, --iterations, --triad-passes at least 1; --warmup at least 0")
    if any("=" not in kv for kv in args.torch_env):
        ap.error(f"--torch-env: NAME=VALUE, got {args.torch_env}")
    if args.bundle and not os.path.isfile(args.bundle):
        ap.error(f"--bundle: no file '{args.bundle}' (scripts/gpu-bundle.sh makes "
                 f".gpu/bundle.tar.xz)")
    needed = ([] if args.bundle else [args.bench_model]) + (
        [args.bench_triad] if "chain" in keys else [])
    for exe in needed:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            ap.error(f"{exe} is not an executable "
                     f"(ninja -C build ferry-bench-model ferry-bench-triad)")
    args.gpu_line, args.left_out = None, []
    if args.gpu:
        args.gpu_line = gpu_or_exit()
        if "ort" in peers and (why := ort_gpu_reason()):
            print(f"peer: ONNX Runtime left out: {why}", flush=True)
            args.left_out.append(f"ONNX Runtime left out: {why}")
            peers.remove("ort")

    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="ferry-peer-"))
    try:
        if args.bundle:
            exe, lib, rev = unpack_bundle(args.bundle, work)
            args.bench_model = str(exe)
            args.ferry_lib_path = [str(lib)] + cuda_library_dirs()
            print(f"ferry: {exe} of the bundle {args.bundle}, built at {rev}")
        elif args.gpu:
            args.ferry_lib_path = cuda_library_dirs()
        return bench(args, keys, peers, threads, work)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def bench(args, keys, peers, threads, work):
    load_before = peerlib.machine()
    print(f"machine: {load_before}\nversions: {versions()}")
    if args.gpu:
        print(f"gpu: {args.gpu_line}")
        if args.ferry_lib_path:
            print(f"ferry's LD_LIBRARY_PATH starts with {':'.join(args.ferry_lib_path)}")
    pinning = ("each runtime's process cut to as many cores as it has threads" if args.pin
               else "left alone" + ("" if args.gpu else " (jax's cut to its threads)"))
    torch_env = " ".join(args.torch_env) or "no extra environment"
    print(f"affinity: {pinning}; torch worker: {torch_env}; "
          f"{args.rounds} rounds; per runtime and round >= {args.iterations} runs and "
          f">= {args.min_time} s after {args.warmup} warmup runs", flush=True)
    for key in keys:
        ops = peer_models.export(key, work / key)
        spec = peer_models.MODELS[key]
        print(f"exported {key} ({spec.what}): x {list(spec.shape)}, ONNX ops {' '.join(ops)}",
              flush=True)

    log = open(work / "workers.log", "w")
    workers = {}
    runtimes = ["ferry"] + peers
    # key -> runtime -> per round (median ms, CPU time / wall time of the timed runs);
    # errors: key -> runtime -> why
    results = {k: {r: [] for r in runtimes} for k in keys}
    errors = {k: {} for k in keys}
    compile_ms, triad, plans = {}, [], {}
    try:
        for rnd in range(1, args.rounds + 1):
            for key in keys:
                folder, t = work / key, threads[key]
                line = []
                for runtime in runtimes:
                    if runtime in errors[key]:
                        continue
                    if runtime == "ferry":
                        r = run_ferry(args, key, folder, t, write_outputs=rnd == 1)
                        if "compile_ms" in r:
                            compile_ms.setdefault(key, []).append(r["compile_ms"])
                            plans.setdefault(key, r)
                    else:
                        wk = (KIND[runtime], t)
                        if wk not in workers:
                            workers[wk] = Worker(KIND[runtime], t, args, log)
                        r = workers[wk].ask({"op": "time", "runtime": runtime, "model": key,
                                             "dir": str(folder), "warmup": args.warmup,
                                             "iterations": args.iterations,
                                             "min_time": args.min_time})
                        if "times_ms" in r:
                            r["median_ms"] = peerlib.median(r["times_ms"])
                    if "error" in r:
                        errors[key][runtime] = r["error"]
                        line.append(f"{LABEL[runtime]} failed")
                        continue
                    mean_ms = sum(r["times_ms"]) / len(r["times_ms"])
                    results[key][runtime].append((r["median_ms"], r["cpu_ms_per_run"] / mean_ms))
                    line.append(f"{LABEL[runtime]} {r['median_ms']:.3f} ms")
                    if rnd == 1:
                        why = check_runtime(args, key, folder, runtime, workers.get(
                            (KIND.get(runtime), t)))
                        if why:
                            if runtime == "ferry":
                                sys.exit(f"peer: {key}: ferry's output {why}: ferry and torch "
                                         f"disagree")
                            errors[key][runtime] = why
                            results[key][runtime].clear()
                if key == "chain":
                    tr = run_triad(args, t)
                    triad.append(tr["gb_per_s"])
                    line.append(f"triad {tr['gb_per_s']:.2f} GB/s")
                print(f"  round {rnd} {key} ({t} thr): " + ", ".join(line), flush=True)
    finally:
        for w in workers.values():
            w.close()
        log.close()
    print_tables(args, keys, runtimes, threads, results, errors, compile_ms, triad, plans)
    print(f"\nmachine after: {peerlib.machine()}")
    if args.gpu:
        print(f"gpu: {args.gpu_line}")
    return 0


def check_runtime(args, key, folder, runtime, worker):
    """None when `runtime`'s output of round 1 matches torch eager's, else why not."""
    if runtime == "ferry":
        return check(args, key, folder, runtime, folder / "ferry" / "y.npy")
    r = worker.ask({"op": "output", "runtime": runtime, "model": key, "dir": str(folder)})
    if "error" in r:
        return r["error"]
    return check(args, key, folder, runtime, r["path"])


def print_tables(args, keys, runtimes, threads, results, errors, compile_ms, triad, plans):
    notes = []

    def note(text):
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"

    def med(key, runtime):
        rounds = results[key][runtime]
        return peerlib.median([m for m, _ in rounds]) if rounds else None

    where = (f" on {args.gpu_line.split(' (GPU 0')[0]} (host input to host output)" if args.gpu
             else "")
    print(f"\nmedian ms per run{where} over {args.rounds} round(s) (each round's figure: the "
          f"median of its runs); ferry / peer below 1: ferry is faster\n")
    peers = runtimes[1:]
    header = (["model", "threads", "ferry compile ms"] + [f"{LABEL[r]} ms" for r in runtimes]
              + [f"ferry / {LABEL[p]}" for p in peers])
    print("| " + " | ".join(header) + " |")
    print("|---|---:|" + "---:|" * (len(header) - 2))
    for key in keys:
        cells = [key, str(threads[key]),
                 f"{peerlib.median(compile_ms[key]):.1f}" if key in compile_ms else "—"]
        for r in runtimes:
            m = med(key, r)
            cells.append(f"{m:.3f}" if m is not None else
                         "— " + note(f"{LABEL[r]}, {key}: {errors[key].get(r, 'not run')}"))
        f = med(key, "ferry")
        for p in peers:
            m = med(key, p)
            cells.append(f"{f / m:.2f}" if f is not None and m is not None else "—")
        print("| " + " | ".join(cells) + " |")

    if "chain" in keys and triad:
        bw = peerlib.median(triad)
        n = peer_models.CHAIN_ELEMENTS
        print(f"\nelementwise chain, {n:,} f32 elements, {threads['chain']} threads: STREAM triad "
              f"(ferry-bench-triad, 12 bytes per element) {bw:.2f} GB/s, median of "
              f"{len(triad)} round(s); each runtime's chain at 8 bytes per element:")
        for r in runtimes:
            m = med("chain", r)
            if m is not None:
                gbs = 8 * n / (m * 1e6)
                print(f"  {LABEL[r]}: {m:.1f} ms, {gbs:.2f} GB/s, {100 * gbs / bw:.0f} % of triad")

    print("\ncores kept busy: the process's CPU time over the wall time of the timed runs (median "
          "over rounds; for the Python peers the loop around the runs counts too)\n")
    print("| model | threads | " + " | ".join(LABEL[r] for r in runtimes) + " |")
    print("|---|---:|" + "---:|" * len(runtimes))
    for key in keys:
        cells = [key, str(threads[key])]
        for r in runtimes:
            rounds = results[key][r]
            cells.append(f"{peerlib.median([busy for _, busy in rounds]):.2f}" if rounds else "—")
        print("| " + " | ".join(cells) + " |")
    for i, text in enumerate(notes, 1):
        print(f"\n[{i}] {text}", end="")
    print()
    if args.gpu:
        print_gpu_notes(args, keys, runtimes, plans)


def print_gpu_notes(args, keys, runtimes, plans):
    """What each runtime's GPU figure includes, and where ferry's plan put the models."""
    print("\nWhat a timed run includes (every runtime: from the host input x, made once in "
          "pageable memory, to the output on the host, in f32):")
    says = {
        "ferry": "Session::run (ferry-bench-model " + " ".join(FERRY_GPU_FLAGS) + "): input "
                 "checks, the plan's upload of x to cuda:0, the kernels, the download of y "
                 "into a host tensor; compile and Session::create (NVRTC, weights' upload) "
                 "not timed",
        "torch": "module(x.to('cuda')).cpu() under inference_mode, then "
                 "torch.cuda.synchronize(); weights on the GPU; TF32 off",
        "torch.compile": "as torch eager, on torch.compile(module) (mode default, compiled by "
                         "an untimed first run)",
        "ort": "sess.run on the numpy x with CUDAExecutionProvider (use_tf32 0): ORT's upload "
               "and download inside it",
    }
    for r in runtimes:
        print(f"  {LABEL[r]}: {says[r]}")
    print("  threads: each runtime's CPU threads (FERRY_NUM_THREADS, torch.set_num_threads, ORT's "
          "intra_op_num_threads); no process pinned")
    for text in args.left_out:
        print(f"  {text}")
    for key in keys:
        if key in plans:
            p = plans[key]
            print(f"  ferry's plan for {key}: steps per device {p.get('steps')}, "
                  f"{p.get('transfers_per_run')} transfer(s) per run "
                  f"({p.get('transfer_bytes_per_run')} bytes), {p.get('input_moves')} input "
                  f"move(s), Session::create {p.get('create_ms', 0):.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
