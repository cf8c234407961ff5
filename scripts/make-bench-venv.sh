#!/usr/bin/env bash
# scripts/make-bench-venv.sh — make the Python venv of the peer benchmarks (bench/peer/): torch
# (CPU) and numpy. Neither building nor using ferry needs it.
#
#   scripts/make-bench-venv.sh [VENV]     # default: $FERRY_BENCH_VENV, else build/bench-venv
#
# Idempotent: does nothing when VENV's python already imports torch and numpy. torch comes from
# a CPU-only wheel in pip's find-links folders when there is one (pip would otherwise prefer a
# newer torch from the index); else from the package index, which on x86-64 Linux serves the
# CUDA build (about 3 GB to download, 5.4 GB installed, with its nvidia-* libraries; the same CPU
# kernels). Set TORCH_SPEC (a requirement or a wheel path) to choose yourself, PYTHON for another
# interpreter.
set -euo pipefail

venv="${1:-${FERRY_BENCH_VENV:-build/bench-venv}}"
python="${PYTHON:-python3}"

if [ -x "$venv/bin/python" ] &&
   version=$("$venv/bin/python" -c 'import numpy, torch; print(torch.__version__)' 2>/dev/null); then
  echo "make-bench-venv: $venv has torch $version"
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

# The newest CPU-only torch wheel for this python in a find-links folder (PIP_FIND_LINKS or pip's
# config), if any.
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
if [ -z "$torch_spec" ]; then
  torch_spec="torch"
  echo "make-bench-venv: no CPU-only torch wheel in pip's find-links; installing torch from the"
  echo "make-bench-venv: package index (on x86-64 Linux the CUDA build, about 3 GB to download: a few minutes)"
fi

echo "make-bench-venv: installing $torch_spec and numpy into $venv"
"${pip[@]}" install "$torch_spec" numpy

version=$("$venv/bin/python" -c 'import numpy, torch; print(torch.__version__)')
echo "make-bench-venv: done: $venv has torch $version"
