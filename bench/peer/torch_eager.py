#!/usr/bin/env python3
"""bench/peer/torch_eager.py — examples/mlp.fy and examples/cnn.fy in PyTorch eager, timed.

The same graphs as the .fy files, op for op: the same shapes and attributes (conv padding and
stride, batch_norm eps in eval mode, pooling, softmax axis). Parameters are torch's random
initialisation, not ferry's randn: only the timing is compared.

    torch_eager.py --model mlp|cnn [--iterations N] [--warmup N] [--threads N]

prints one JSON line: {"model", "threads", "iterations", "warmup", "median_ms", "min_ms",
"output_shape", "torch"}. A run is one call of the model under torch.inference_mode() on an
input made once beforehand, timed as ferry-run times Session::run.

    torch_eager.py --model cnn --check [--ferry-run build/bin/ferry-run]

checks instead that ferry computes what the torch model computes: writes the torch model's
parameters and an input as .npy files, a copy of the example reading them with npy("..."), runs
ferry-run on it and compares the outputs (shape and values). Run it with the venv's python
(scripts/make-bench-venv.sh).
"""
import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn

REPO = pathlib.Path(__file__).resolve().parents[2]


class Mlp(nn.Module):
    """examples/mlp.fy: linear 784->256, relu, linear 256->10, softmax(axis=-1); batch 32."""

    input_name, input_shape = "x", (32, 784)

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)

    def ferry_params(self):
        return dict(self.state_dict())


class Cnn(nn.Module):
    """examples/cnn.fy: two conv / batch_norm / relu blocks, max pooling after the first, global
    average pooling, flatten, linear, softmax(axis=1); batch 8 of 3x32x32."""

    input_name, input_shape = "image", (8, 3, 32, 32)

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=1, padding=1, bias=True)
        self.bn1 = nn.BatchNorm2d(16, eps=1e-5)
        self.pool1 = nn.MaxPool2d(kernel_size=2)  # stride = kernel, as ferry's empty stride
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32, eps=1e-3)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, image):
        p1 = self.pool1(torch.relu(self.bn1(self.conv1(image))))
        r2 = torch.relu(self.bn2(self.conv2(p1)))
        f = torch.flatten(self.gap(r2), start_dim=1)
        return torch.softmax(self.fc(f), dim=1)

    def randomize_batch_norm(self, generator):
        """Non-trivial statistics, so that --check exercises batch_norm (the .fy has 1s and 0s)."""
        for bn in (self.bn1, self.bn2):
            n = bn.num_features
            bn.weight.data = 1 + 0.5 * torch.randn(n, generator=generator)
            bn.bias.data = 0.5 * torch.randn(n, generator=generator)
            bn.running_mean = 0.5 * torch.randn(n, generator=generator)
            bn.running_var = 0.5 + torch.rand(n, generator=generator)

    def ferry_params(self):
        """The torch tensors under the .fy's param names (batch_norm operands in ONNX's order)."""
        out = {}
        for name in ("conv1", "conv2", "fc"):
            for k, v in getattr(self, name).state_dict().items():
                out[f"{name}.{k}"] = v
        for name in ("bn1", "bn2"):
            bn = getattr(self, name)
            out[f"{name}.scale"] = bn.weight
            out[f"{name}.bias"] = bn.bias
            out[f"{name}.mean"] = bn.running_mean
            out[f"{name}.var"] = bn.running_var
        return out


MODELS = {"mlp": Mlp, "cnn": Cnn}


def make(model_name, seed=0):
    torch.manual_seed(seed)
    model = MODELS[model_name]().eval()
    x = torch.randn(*model.input_shape, generator=torch.Generator().manual_seed(seed + 1))
    return model, x


def time_runs(model, x, iterations, warmup):
    times = []
    with torch.inference_mode():
        for i in range(warmup + iterations):
            start = time.perf_counter()
            y = model(x)
            elapsed = time.perf_counter() - start
            if i >= warmup:
                times.append(elapsed)
    return times, tuple(y.shape)


def bench(args):
    model, x = make(args.model)
    times, shape = time_runs(model, x, args.iterations, args.warmup)
    print(json.dumps({
        "model": args.model,
        "threads": torch.get_num_threads(),
        "iterations": args.iterations,
        "warmup": args.warmup,
        "median_ms": statistics.median(times) * 1e3,
        "min_ms": min(times) * 1e3,
        "output_shape": list(shape),
        "torch": torch.__version__,
    }))
    return 0


PARAM_LINE = re.compile(r"^(\s*param\s+%([\w.]+)\s*:[^=]*=\s*)(.*?)(\s*#.*)?$")


def check(args):
    """Runs ferry on the torch model's parameters and input; compares the outputs."""
    model, x = make(args.model)
    if isinstance(model, Cnn):
        model.randomize_batch_norm(torch.Generator().manual_seed(2))
    with torch.inference_mode():
        expected = model(x).numpy()
    params = {k: v.detach().numpy() for k, v in model.ferry_params().items()}

    with tempfile.TemporaryDirectory(prefix=f"ferry-peer-{args.model}-") as tmp:
        tmp = pathlib.Path(tmp)
        lines, seen = [], set()
        for line in (REPO / "examples" / f"{args.model}.fy").read_text().splitlines():
            m = PARAM_LINE.match(line)
            if m:
                name = m.group(2)
                if name not in params:
                    sys.exit(f"torch_eager: the torch {args.model} has no parameter for %{name}")
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(params[name], dtype=np.float32))
                line = f'{m.group(1)}npy("{name}.npy")'
                seen.add(name)
            lines.append(line)
        if set(params) != seen:
            sys.exit(f"torch_eager: parameters not in {args.model}.fy: {sorted(set(params) - seen)}")
        (tmp / "model.fy").write_text("\n".join(lines) + "\n")
        np.save(tmp / "input.npy", x.numpy())

        cmd = [args.ferry_run, str(tmp / "model.fy"), "--input", f"{model.input_name}={tmp / 'input.npy'}",
               "--iterations", "1", "--output-dir", str(tmp / "out")]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"torch_eager: {' '.join(cmd)} failed ({run.returncode}):\n{run.stdout}{run.stderr}")
        got = np.load(tmp / "out" / "probs.npy")

    same_shape = got.shape == expected.shape
    diff = float(np.max(np.abs(got.astype(np.float64) - expected))) if same_shape else float("nan")
    ok = same_shape and diff <= args.tolerance
    print(json.dumps({
        "model": args.model,
        "check": "ok" if ok else "MISMATCH",
        "ferry_shape": list(got.shape),
        "torch_shape": list(expected.shape),
        "max_abs_diff": diff,
        "tolerance": args.tolerance,
        "torch": torch.__version__,
    }))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--iterations", type=int, default=50, help="timed runs (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch.set_num_threads (default: torch's own choice)")
    ap.add_argument("--check", action="store_true",
                    help="compare ferry's output with torch's on the same parameters, no timing")
    ap.add_argument("--ferry-run", default=str(REPO / "build" / "bin" / "ferry-run"),
                    help="ferry-run binary for --check (default build/bin/ferry-run)")
    ap.add_argument("--tolerance", type=float, default=1e-4,
                    help="largest absolute difference --check accepts (default 1e-4)")
    args = ap.parse_args()
    if args.iterations < 1 or args.warmup < 0 or args.threads < 0:
        ap.error("--iterations must be at least 1, --warmup and --threads at least 0")
    if args.threads:
        torch.set_num_threads(args.threads)
    return check(args) if args.check else bench(args)


if __name__ == "__main__":
    sys.exit(main())
