#!/usr/bin/env python3
"""bench/peer/peer_worker.py — one peer runtime, kept alive across peer.py's rounds.

    peer_worker.py --kind torch|ort|jax --threads N [--pin] [--device cpu|cuda]

peer.py starts one per kind and thread count (thread settings are per process for torch and
XLA) and talks to it in JSON lines: a request on stdin, one reply line on the stdout it was
started with (fd 1 is pointed at stderr once the protocol's copy is taken, so that a library that
prints cannot corrupt a reply). Requests:

  {"op": "time", "runtime": R, "model": KEY, "dir": D, "warmup": W, "iterations": I, "min_time": S}
      prepares R (torch, torch.compile, ort or jax) for MODEL from folder D on first use (not
      timed: compile, session, jit), then W untimed runs and at least I timed runs and S seconds
      of them, each run timed on its own (time.perf_counter): {"times_ms": [...],
      "cpu_ms_per_run": process CPU time over the timed runs / runs, "prepare_s"}
  {"op": "output", "runtime": R, "model": KEY, "dir": D}
      one run's output, written to D/y_<R>.npy: {"path": ...}

Any exception is a reply {"error": "Type: first line of the message"}: peer.py puts it in the
table's cell, and the worker stays up for the other models. A run is what a user calls: torch's
module under inference_mode on a tensor made once; ORT's sess.run on a numpy array; the jitted
JAX function on a device array made once, with block_until_ready.

Threads (set here, before the runtime starts its pools):
  torch  torch.set_num_threads(N) and set_num_interop_threads(1); OMP_NUM_THREADS=N in the
         environment (peer.py sets it, with OMP_WAIT_POLICY from --torch-env); torch.compile's
         kernels (Inductor's C++ with OpenMP) use the same OpenMP threads
  ort    intra_op_num_threads=N, inter_op_num_threads=1, ORT_SEQUENTIAL, default optimisation
         level (all), spinning left at ORT's default
  jax    XLA's CPU client sizes its pools to the cores it may use, and has no flag for a
         thread count: this process's CPU affinity is cut to N cores (os.sched_setaffinity, as
         `taskset`) before jax is imported, pinned or not, and with N = 1
         XLA_FLAGS=--xla_cpu_multi_thread_eigen=false (peer.py sets it) keeps Eigen's matmuls and
         convolutions on the calling thread
  --pin  (peer.py's default) cuts every kind's affinity to N cores that way, as peer.py does for
         ferry: a runtime that starts more threads than asked still gets N cores

--device cuda (peer.py --gpu; torch and ort only): the model runs on GPU 0, computing in f32.
  torch  weights on the GPU; TF32 off (torch.backends.cuda.matmul.allow_tf32 and
         torch.backends.cudnn.allow_tf32 False). A run is what an app with a host tensor calls:
         x.to("cuda") of the CPU tensor made once (pageable memory, as ferry's .npy input), the
         module, .cpu() of the output, torch.cuda.synchronize(); so it includes the input's upload
         and the output's download, as ferry-bench-model's Session::run does
  ort    providers CUDAExecutionProvider (device 0, use_tf32 0), then CPUExecutionProvider for
         what CUDA cannot run; sess.run on the numpy array (ORT uploads the input and downloads
         the output inside it). An onnxruntime without the CUDA provider, or a session that did
         not take it, is an error
"""
import argparse
import json
import os
import pathlib
import sys
import time
import traceback

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peer_models  # noqa: E402


class Runner:
    """One runtime's prepared models: key -> a no-argument callable that runs the model once
    and returns the output as numpy."""

    def __init__(self, kind, threads, device="cpu"):
        self.kind, self.threads, self.device = kind, threads, device
        self.prepared = {}
        if kind == "torch":
            import torch
            torch.set_num_threads(threads)
            torch.set_num_interop_threads(1)
            if device == "cuda":
                if not torch.cuda.is_available():
                    raise RuntimeError(f"torch {torch.__version__} sees no GPU")
                torch.backends.cuda.matmul.allow_tf32 = False  # f32 matmuls in f32, as ferry's
                torch.backends.cudnn.allow_tf32 = False
        elif kind == "jax":
            import jax  # after the affinity and XLA_FLAGS, so that its pools see them
            jax.config.update("jax_platforms", "cpu")

    def get(self, runtime, key, folder):
        if (runtime, key) not in self.prepared:
            start = time.perf_counter()
            run = getattr(self, "prepare_" + runtime.replace(".", "_"))(key, pathlib.Path(folder))
            run()  # the first run (torch.compile and jax.jit compile here): part of preparing
            self.prepared[runtime, key] = (run, time.perf_counter() - start)
        return self.prepared[runtime, key]

    def prepare_torch(self, key, folder, compiled=False):
        import torch
        module = peer_models.torch_loaded(peer_models.MODELS[key].family, folder)
        if self.device == "cuda":
            module = module.to("cuda")
        if compiled:
            module = torch.compile(module)  # mode default
        x = torch.from_numpy(np.load(folder / "x.npy"))

        if self.device == "cuda":
            def run():  # the host input up, the output down: what ferry's timed run does too
                with torch.inference_mode():
                    y = module(x.to("cuda")).cpu()
                torch.cuda.synchronize()
                return y
            return run

        def run():
            with torch.inference_mode():
                return module(x)
        return run

    def prepare_torch_compile(self, key, folder):
        return self.prepare_torch(key, folder, compiled=True)

    def prepare_ort(self, key, folder):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        providers = ["CPUExecutionProvider"]
        if self.device == "cuda":
            have = ort.get_available_providers()
            if "CUDAExecutionProvider" not in have:
                raise RuntimeError(f"onnxruntime {ort.__version__} has no CUDAExecutionProvider "
                                   f"(providers: {', '.join(have)})")
            providers = [("CUDAExecutionProvider", {"device_id": 0, "use_tf32": 0})] + providers
        sess = ort.InferenceSession(str(folder / "model.onnx"), so, providers=providers)
        if self.device == "cuda" and sess.get_providers()[0] != "CUDAExecutionProvider":
            raise RuntimeError(f"the session did not take CUDAExecutionProvider (it has "
                               f"{', '.join(sess.get_providers())}; the CUDA libraries?)")
        feed = {"x": np.load(folder / "x.npy")}
        return lambda: sess.run(["y"], feed)[0]

    def prepare_jax(self, key, folder):
        import jax
        import jax.numpy as jnp
        f = jax.jit(peer_models.jax_function(peer_models.MODELS[key].family))
        npz = np.load(folder / "params.npz")
        params = {k: jnp.asarray(npz[k]) for k in npz.files}
        x = jnp.asarray(np.load(folder / "x.npy"))
        return lambda: f(params, x).block_until_ready()


def as_numpy(y):
    return y.numpy() if hasattr(y, "numpy") and not isinstance(y, np.ndarray) else np.asarray(y)


def handle(runner, req):
    run, prepare_s = runner.get(req["runtime"], req["model"], req["dir"])
    if req["op"] == "output":
        path = pathlib.Path(req["dir"]) / f"y_{req['runtime']}.npy"
        np.save(path, as_numpy(run()))
        return {"path": str(path)}
    for _ in range(req["warmup"]):
        run()
    times, cpu0, start = [], time.process_time(), time.perf_counter()
    while len(times) < req["iterations"] or time.perf_counter() - start < req["min_time"]:
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"times_ms": times, "cpu_ms_per_run": (time.process_time() - cpu0) * 1e3 / len(times),
            "prepare_s": prepare_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", required=True, choices=["torch", "ort", "jax"])
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--pin", action="store_true",
                    help="cut this process's CPU affinity to --threads cores (jax: always)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: run on GPU 0 (torch and ort; peer.py --gpu)")
    args = ap.parse_args()
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    if args.pin or args.kind == "jax":
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cores[:args.threads])
    try:
        if args.device == "cuda" and args.kind == "jax":
            raise RuntimeError("--device cuda: torch and ort only")
        runner = Runner(args.kind, args.threads, args.device)
        replies.write(json.dumps({"ready": True}) + "\n")
    except Exception as e:  # noqa: BLE001 — the runtime does not start: say so, once
        replies.write(json.dumps({"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}) + "\n")
        return 1
    for line in sys.stdin:
        try:
            reply = handle(runner, json.loads(line))
        except Exception as e:  # noqa: BLE001 — any failure is this model's cell, not the run's
            traceback.print_exc(file=sys.stderr)
            msg = str(e).strip().splitlines()
            reply = {"error": f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]}
        replies.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
