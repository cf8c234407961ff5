#!/usr/bin/env bash
# scripts/make-bench-venv.sh — make the project's Python venv: numpy, torch (CPU) for the peer
# benchmarks' compare_eager.py (bench/peer/) and scripts/export-models.py, onnx and onnxruntime
# for overhead.py and scripts/onnx-conformance.sh, jax (CPU) for bench/peer/peer.py, which needs
# them all. Neither building nor using ferry needs it.
#
#   scripts/make-bench-venv.sh [VENV [all|torch|onnx]]   # default: $FERRY_BENCH_VENV, else
#                                                        # build/bench-venv; all
#
# Idempotent: installs only what VENV's python does not import yet; `onnx` leaves torch out (a
# few GB, see below) and is all onnx-conformance.sh needs; export-models.py and peer.py need
# `all`. jax is PyPI's `jax` with its CPU jaxlib (about 100 MB; JAX_SPEC to override), pinned so
# that peer.py's ratios are against one XLA. torch
# comes from a CPU-only wheel in pip's find-links folders when there is one (pip would otherwise
# prefer a newer torch from the index); else from TORCH_INDEX when set (a package index URL used
# for torch alone, e.g. PyTorch's CPU-only index https://download.pytorch.org/whl/cpu: about
# 200 MB); else from the package index, which on x86-64 Linux serves the CUDA build (about 3 GB
# to download, 5.4 GB installed, with its nvidia-* libraries; the same CPU kernels, and
# torch.onnx.export with dynamo=False needs nothing more). Set TORCH_SPEC (a requirement or a
# wheel path) to choose yourself, PYTHON for another interpreter. onnx and onnxruntime are pinned
# (ONNX_SPEC, ORT_SPEC to override): overhead.py's ratio is against one ONNX Runtime, the one
# the "[exec] Lowering v2" target was measured against, and tests/onnx_node's cases come from
# this onnx.
set -euo pipefail

venv="${1:-${FERRY_BENCH_VENV:-build/bench-venv}}"
what="${2:-all}"
python="${PYTHON:-python3}"
onnx_spec="${ONNX_SPEC:-onnx==1.23.2}"
ort_spec="${ORT_SPEC:-onnxruntime==1.32.0}"
jax_spec="${JAX_SPEC:-jax==0.10.2}"

case "$what" in
  all) modules=(numpy torch onnx onnxruntime jax) ;;
  torch) modules=(numpy torch) ;;
  onnx) modules=(numpy onnx onnxruntime) ;;
  *) echo "make-bench-venv: the second argument is all, torch or onnx, not '$what'" >&2; exit 2 ;;
esac

# The modules of $modules that VENV's python cannot import.
missing() {
  [ -x "$venv/bin/python" ] || { echo "${modules[@]}"; return; }
  local m
  for m in "${modules[@]}"; do "$venv/bin/python" -c "import $m" 2>/dev/null || echo "$m"; done
}
versions() {
  "$venv/bin/python" -c 'import importlib.metadata as md, sys
print(", ".join(f"{m} {md.version(m)}" for m in sys.argv[1:]))' "${modules[@]}"
}

need=$(missing | tr '\n' ' ')
if [ -z "${need// /}" ]; then
  echo "make-bench-venv: $venv has $(versions)"
  exit 0
fi

command -v "$python" >/dev/null || { echo "make-bench-venv: no $python on PATH" >&2; exit 1; }

# Debian splits venv's pip bootstrap into python3-venv.
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
  bash "$(dirname "$0")/install-deps.sh" python3-venv
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "make-bench-venv: creating $venv with $("$python" --version 2>&1)"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip)

specs=()
case " $need " in *" numpy "*) specs+=(numpy) ;; esac
case " $need " in *" onnx "*) specs+=("$onnx_spec") ;; esac
case " $need " in *" onnxruntime "*) specs+=("$ort_spec") ;; esac
case " $need " in *" jax "*) specs+=("$jax_spec") ;; esac

# The newest CPU-only torch wheel for this python in a find-links folder (PIP_FIND_LINKS or pip's
# config), if any.
if [[ " $need " == *" torch "* ]]; then
  torch_spec="${TORCH_SPEC:-}"
  if [ -z "$torch_spec" ]; then
    tag=$("$venv/bin/python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
    links=$("$venv/bin/python" -m pip config list 2>/dev/null |
            sed -n "s/^.*find-links='\(.*\)'$/\1/p" | tr ' ' '\n')
    for dir in ${PIP_FIND_LINKS:-} $links; do
      [ -d "$dir" ] || continue
      wheel=$(find "$dir" -maxdepth 1 -name "torch-*+cpu-$tag-*.whl" | sort -V | tail -n 1)
      [ -n "$wheel" ] && { torch_spec="$wheel"; break; }
    done
  fi
  if [ -z "$torch_spec" ] && [ -n "${TORCH_INDEX:-}" ]; then
    echo "make-bench-venv: installing torch from $TORCH_INDEX into $venv"
    "${pip[@]}" install --index-url "$TORCH_INDEX" torch
  elif [ -z "$torch_spec" ]; then
    torch_spec="torch"
    echo "make-bench-venv: no CPU-only torch wheel in pip's find-links; installing torch from the"
    echo "make-bench-venv: package index (on x86-64 Linux the CUDA build, about 3 GB to download: a few minutes;"
    echo "make-bench-venv: TORCH_INDEX=https://download.pytorch.org/whl/cpu takes the CPU-only build)"
  fi
  if [ -n "$torch_spec" ]; then specs+=("$torch_spec"); fi
fi

if [ ${#specs[@]} -gt 0 ]; then
  echo "make-bench-venv: installing ${specs[*]} into $venv"
  "${pip[@]}" install "${specs[@]}"
fi

echo "make-bench-venv: done: $venv has $(versions)"
