#!/usr/bin/env bash
# scripts/install-deps.sh [PACKAGE...] — install the Debian packages ferry needs to build and
# test; packages given as arguments are installed instead (other scripts' own needs, e.g.
# make-bench-venv.sh's python3-venv). Idempotent: asks apt only for what is missing and prints
# nothing when all is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config   # toolchain
  libgtest-dev libgmock-dev          # tests
  libbenchmark-dev                   # bench/
  libcli11-dev                       # command lines of the tools
  libeigen3-dev                      # f16/bf16 conversions, CPU kernels
  libopenblas-dev                    # GEMMs of the CPU kernels (matmul, linear, conv2d)
  libsleef-dev                       # vectorised exp/log/tanh/erf of the CPU kernels (backends/cpu/vmath)
  libdnnl-dev                        # oneDNN: the f32 matmul and linear of the CPU kernels (backends/cpu/onednn_gemm.h)
  graphviz                           # ferry-compile --emit svg (its `dot` program)
  libonnx-dev libprotobuf-dev        # the ONNX importer (frontend/onnx)
)
[ $# -gt 0 ] && packages=("$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
