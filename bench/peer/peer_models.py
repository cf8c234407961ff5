"""bench/peer/peer_models.py — the models of peer.py, once in PyTorch and once in JAX.

Each model is a PyTorch module (the definition: its weights are exported to ONNX for ferry and
ONNX Runtime, and saved as .npz for JAX) and a JAX function of (params, x) written in jax.numpy
and lax from the same weights, op for op. Inputs are seeded standard normal. `export()` writes,
per model, into one folder: model.onnx (torch.onnx.export, opset 17, the TorchScript exporter),
x.npy, params.npz (the state dict, names as torch's) and y.npy (torch eager's output, the
reference every runtime is checked against).

  MODELS[key] = Spec(family, make, input shape, default threads, what it is)

Imported by peer.py (export, in the parent) and peer_worker.py (torch in the torch worker, the
JAX twins in the JAX worker): torch and jax are imported inside the functions that need them, so
that the JAX worker never loads torch and the others never load jax.
"""
from __future__ import annotations

import math
import pathlib
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

OPSET = 17
CHAIN_ELEMENTS = 16_777_216


@dataclass(frozen=True)
class Spec:
    family: str  # the torch module and JAX twin: mlp, chain, lenet, resblock, transformer
    shape: tuple  # the input x
    threads: int  # default thread count (the targets: 2 for mlp and chain, 1 else)
    what: str


MODELS = {
    "mlp-b1": Spec("mlp", (1, 784), 2, "MLP 784-1024-1024-10, batch 1"),
    "mlp-b32": Spec("mlp", (32, 784), 2, "MLP 784-1024-1024-10, batch 32"),
    "mlp-b256": Spec("mlp", (256, 784), 2, "MLP 784-1024-1024-10, batch 256"),
    "chain": Spec("chain", (CHAIN_ELEMENTS,), 2, "gelu(x*1.5+0.25)*0.75, 16M f32"),
    "lenet-b1": Spec("lenet", (1, 1, 28, 28), 1, "LeNet-style CNN, batch 1"),
    "lenet-b32": Spec("lenet", (32, 1, 28, 28), 1, "LeNet-style CNN, batch 32"),
    "resblock": Spec("resblock", (1, 64, 56, 56), 1, "residual block + BatchNorm, 64x56x56"),
    "transformer": Spec("transformer", (1, 128, 256), 1, "pre-LN encoder block, d 256, seq 128"),
}


# --- PyTorch ------------------------------------------------------------------------------------

def torch_module(family: str):
    """A fresh module of `family` (torch's seeded initialisation), in eval mode."""
    import torch
    from torch import nn

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(784, 1024), nn.Linear(1024, 1024)
            self.fc3 = nn.Linear(1024, 10)

        def forward(self, x):
            return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))

    class Chain(nn.Module):
        def forward(self, x):
            return nn.functional.gelu(x * 1.5 + 0.25) * 0.75

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2 = nn.Linear(16 * 4 * 4, 120), nn.Linear(120, 10)

        def forward(self, x):
            x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
            x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
            return self.fc2(torch.relu(self.fc1(x.flatten(1))))

    class ResBlock(nn.Module):
        def __init__(self, c=64):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            return torch.relu(y + x)

    class Encoder(nn.Module):
        def __init__(self, dim=256, heads=4, hidden=1024):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.proj = nn.Linear(dim, dim)
            self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

        def forward(self, x):
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

    make = {"mlp": Mlp, "chain": Chain, "lenet": LeNet, "resblock": ResBlock,
            "transformer": Encoder}
    torch.manual_seed(0)
    module = make[family]()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # statistics away from 0/1, so that BatchNorm counts
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.5)
                m.running_var.copy_(torch.rand(n, generator=gen) * 1.5 + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.2)
    return module.eval()


def torch_loaded(family: str, folder: pathlib.Path):
    """The module of `family` with the weights of folder/params.npz."""
    import torch
    module = torch_module(family)
    params = np.load(folder / "params.npz")
    module.load_state_dict({k: torch.from_numpy(params[k]) for k in params.files})
    return module.eval()


def export(key: str, folder: pathlib.Path) -> list:
    """Writes model.onnx, x.npy, params.npz and y.npy of MODELS[key] to `folder`; returns the
    ONNX model's op types."""
    import onnx
    import torch
    spec = MODELS[key]
    folder.mkdir(parents=True, exist_ok=True)
    module = torch_module(spec.family)
    x = np.random.default_rng(2).standard_normal(spec.shape, dtype=np.float32)
    with torch.inference_mode():
        y = module(torch.from_numpy(x)).numpy()
    # BatchNorm kept as its own op (PRESERVE: not folded into the conv by the exporter): folding
    # it is the compiler's job, and each runtime does it or not.
    training = (torch.onnx.TrainingMode.PRESERVE if spec.family == "resblock"
                else torch.onnx.TrainingMode.EVAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(module, (torch.from_numpy(x),), str(folder / "model.onnx"),
                          opset_version=OPSET, input_names=["x"], output_names=["y"],
                          training=training, dynamo=False)
    proto = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(proto)
    np.save(folder / "x.npy", x)
    np.save(folder / "y.npy", y)
    np.savez(folder / "params.npz",
             **{k: v.detach().numpy() for k, v in module.state_dict().items()
                if v.dtype.is_floating_point})
    return sorted({n.op_type for n in proto.graph.node})


# --- JAX ----------------------------------------------------------------------------------------

def jax_function(family: str) -> Callable:
    """f(params, x) in jax.numpy/lax, the twin of torch_module(family); params: the .npz's
    arrays by torch's names. Not jitted (the caller does)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def linear(p, name, x):
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    def conv(p, name, x, pad):
        y = lax.conv_general_dilated(x, p[name + ".weight"], (1, 1), [(pad, pad), (pad, pad)],
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        bias = p.get(name + ".bias")
        return y if bias is None else y + bias[None, :, None, None]

    def max_pool2(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def batch_norm(p, name, x, eps=1e-5):
        scale = p[name + ".weight"] / jnp.sqrt(p[name + ".running_var"] + eps)
        shift = p[name + ".bias"] - p[name + ".running_mean"] * scale
        return x * scale[None, :, None, None] + shift[None, :, None, None]

    def layer_norm(p, name, x, eps=1e-5):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]

    def gelu(x):
        return jax.nn.gelu(x, approximate=False)  # torch's default: the erf form

    def mlp(p, x):
        h = jax.nn.relu(linear(p, "fc1", x))
        return linear(p, "fc3", jax.nn.relu(linear(p, "fc2", h)))

    def chain(p, x):
        return gelu(x * 1.5 + 0.25) * 0.75

    def lenet(p, x):
        x = max_pool2(jax.nn.relu(conv(p, "conv1", x, 0)))
        x = max_pool2(jax.nn.relu(conv(p, "conv2", x, 0)))
        return linear(p, "fc2", jax.nn.relu(linear(p, "fc1", x.reshape(x.shape[0], -1))))

    def resblock(p, x):
        y = jax.nn.relu(batch_norm(p, "bn1", conv(p, "conv1", x, 1)))
        return jax.nn.relu(batch_norm(p, "bn2", conv(p, "conv2", y, 1)) + x)

    def transformer(p, x, heads=4):
        b, t, d = x.shape
        z = layer_norm(p, "ln1", x)

        def split(name):
            return linear(p, name, z).reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)

        q, k, v = split("q"), split("k"), split("v")
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads), axis=-1)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = x + linear(p, "proj", y)
        return x + linear(p, "fc2", gelu(linear(p, "fc1", layer_norm(p, "ln2", x))))

    return {"mlp": mlp, "chain": chain, "lenet": lenet, "resblock": resblock,
            "transformer": transformer}[family]
