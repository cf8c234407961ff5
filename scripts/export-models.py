#!/usr/bin/env python3
"""scripts/export-models.py — exports small real PyTorch models to ONNX with test data.

    build/bench-venv/bin/python scripts/export-models.py [OUT]   # default: tests/onnx_models

Needs torch and onnx (scripts/make-bench-venv.sh VENV torch, then onnx). Each model is written as
OUT/<name>/model.onnx (torch.onnx.export, opset 17, the TorchScript exporter: dynamo=False) with
OUT/<name>/test_data_set_0/input_K.pb and output_K.pb (PyTorch's f32 outputs), the layout of
ONNX's test data that `ferry-run model.onnx --check-dir` reads, and OUT/<name>/ferry-run.args:
extra ferry-run arguments the tests pass (`--shape` for a symbolic batch dim). The models:

  mlp          784-128-64-10, ReLU, softmax; symbolic batch dim `batch` (Gemm, Relu, Softmax)
  lenet        LeNet-5 style: conv 5x5, max and average pooling, three linear layers
  resblock     a ResNet stem and two residual blocks (the second strided, with a 1x1 projection)
               with BatchNormalization kept as its own op (eval mode, exported with
               TrainingMode.PRESERVE so that it is not folded into the convolutions), global
               average pooling
  transformer  one pre-LN encoder block: LayerNormalization, multi-head attention written as
               matmuls and softmax, a GELU (erf) MLP; symbolic batch dim, so its reshapes come as
               Shape/Gather/Concat subgraphs that fold once --shape fixes the batch

Deterministic: fixed seeds, the same files on every run with the same torch. Weights are small
(each model well under 1 MB) since the models are checked in.
"""
from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

OPSET = 17


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return torch.softmax(self.fc3(x), dim=-1)


class LeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.fc3(x)


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.project = None
        if stride != 1 or cin != cout:
            self.project = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                         nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.project is None else self.project(x)
        return torch.relu(y + skip)


class ResBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU())
        self.block1 = Block(16, 16, 1)
        self.block2 = Block(16, 32, 2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.block1(self.stem(x)))
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class EncoderBlock(nn.Module):
    """Pre-LN: x + attn(ln1(x)), then + mlp(ln2(x)); attention spelled out in matmuls."""

    def __init__(self, dim: int = 64, heads: int = 4, hidden: int = 256) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.heads
        z = self.ln1(x)
        q = self.q(z).reshape(b, t, h, d // h).transpose(1, 2)
        k = self.k(z).reshape(b, t, h, d // h).transpose(1, 2)
        v = self.v(z).reshape(b, t, h, d // h).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // h), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


def randomize_batchnorm(model: nn.Module, gen: torch.Generator) -> None:
    """Running statistics and affine parameters away from 0/1, so that BatchNormalization counts."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.5)
            m.running_var.copy_(torch.rand(n, generator=gen) * 1.5 + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=gen) * 0.2)


# name -> (constructor, input shape, symbolic batch?, export training mode)
MODELS = {
    "mlp": (Mlp, (4, 784), True, torch.onnx.TrainingMode.EVAL),
    "lenet": (LeNet, (2, 1, 28, 28), False, torch.onnx.TrainingMode.EVAL),
    "resblock": (ResBlock, (2, 3, 16, 16), False, torch.onnx.TrainingMode.PRESERVE),
    "transformer": (EncoderBlock, (2, 16, 64), True, torch.onnx.TrainingMode.EVAL),
}


def write_tensor(path: Path, array: np.ndarray, name: str) -> None:
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


def errors(got: np.ndarray, want: np.ndarray) -> str:
    diff = np.abs(got.astype(np.float64) - want)
    rel = diff / np.maximum(np.abs(want), 1e-12)
    return f"max abs error {diff.max():.3g}, max rel error {rel.max():.3g}"


def check_with_ort(path: Path, x: np.ndarray, want: np.ndarray) -> str:
    """ONNX Runtime's output against PyTorch's (the tests' f32 tolerance), when it is installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime not installed: not checked"
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return f"ONNX Runtime matches PyTorch (rtol 1e-4, atol 1e-5): {errors(got, want)}"


def export(name: str, out: Path) -> None:
    make, shape, symbolic, training = MODELS[name]
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = make()
    with torch.no_grad():
        randomize_batchnorm(model, gen)
    model.eval()
    x = torch.randn(*shape, generator=gen)
    with torch.no_grad():
        y = model(x)

    folder = out / name
    data = folder / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    dynamic = {"x": {0: "batch"}, "y": {0: "batch"}} if symbolic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(model, (x,), str(folder / "model.onnx"), opset_version=OPSET,
                          input_names=["x"], output_names=["y"], dynamic_axes=dynamic,
                          training=training, dynamo=False)
    proto = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(proto, full_check=True)
    write_tensor(data / "input_0.pb", x.numpy(), "x")
    write_tensor(data / "output_0.pb", y.numpy(), "y")
    args = f"--shape x={','.join(map(str, shape))}\n" if symbolic else ""
    (folder / "ferry-run.args").write_text(args)

    ops = sorted({n.op_type for n in proto.graph.node})
    size = (folder / "model.onnx").stat().st_size
    print(f"export-models: {name}: {size / 1024:.0f} KiB, input x{list(shape)}"
          f"{' (batch symbolic)' if symbolic else ''}, ops {' '.join(ops)}")
    print(f"export-models: {name}: {check_with_ort(folder / 'model.onnx', x.numpy(), y.numpy())}")
    for dtype in (torch.float16, torch.bfloat16):
        with torch.no_grad():
            low = model.to(dtype)(x.to(dtype)).float()
        model.float()
        print(f"export-models: {name}: PyTorch in {str(dtype)[6:]} against f32: "
              f"{errors(low.numpy(), y.numpy())}")


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent.parent / "tests/onnx_models"
    for name in MODELS:
        export(name, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
