#!/usr/bin/env bash
# scripts/onnx-conformance.sh — runs the ONNX backend node test cases of the imported ops through
# ferry-run and prints passed / failed / unsupported per op (docs/onnx-conformance.md).
#
#   scripts/onnx-conformance.sh [VENV] [--ops Add,Gemm,...] [--ort] [--out FILE] [--jobs N]
#                               [--cases DIR] [--no-expanded] [--min-pass PCT]
#
# VENV: a Python venv with onnx (and onnxruntime for --ort): scripts/make-bench-venv.sh VENV onnx
# makes one; default $FERRY_BENCH_VENV, else build/bench-venv. The ferry build is $FERRY_BUILD
# (default build/); its bin/ferry-run runs each case. The node cases come from the onnx package:
# its data/node folder when the wheel ships one, else generated once from the package's case
# definitions into $FERRY_BUILD/onnx-node-cases; --cases DIR takes another folder, e.g. Debian's
# onnx 1.12 cases (opsets up to 17): scripts/install-deps.sh libonnx-testdata, then --cases
# /usr/share/libonnx-testdata/data/node. The full table goes to --out (default
# $FERRY_BUILD/onnx-conformance.md). Exit status: 0 ran (whatever passed; 1 below --min-pass),
# 2 no venv, no ferry-run or a bad option.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

venv="${FERRY_BENCH_VENV:-$root/build/bench-venv}"
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then
  venv="$1"
  shift
fi
build="${FERRY_BUILD:-$root/build}"

python="$venv/bin/python"
if [ ! -x "$python" ]; then
  echo "onnx-conformance: no venv at $venv (make one: scripts/make-bench-venv.sh $venv onnx)" >&2
  exit 2
fi
if ! "$python" -c 'import onnx, numpy' 2>/dev/null; then
  echo "onnx-conformance: $venv lacks onnx or numpy (scripts/make-bench-venv.sh $venv onnx)" >&2
  exit 2
fi
ferry_run="$build/bin/ferry-run"
if [ ! -x "$ferry_run" ]; then
  echo "onnx-conformance: no $ferry_run (build it: ninja -C $build ferry-run, or set FERRY_BUILD)" >&2
  exit 2
fi

exec "$python" "$root/scripts/onnx_conformance.py" --ferry-run "$ferry_run" \
  --cache "$build/onnx-node-cases" --out "$build/onnx-conformance.md" "$@"
