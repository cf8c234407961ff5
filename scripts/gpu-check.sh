#!/usr/bin/env bash
# scripts/gpu-check.sh — the CUDA backend's GPU-only checks in one run, on a machine with an NVIDIA
# GPU, its driver and the CUDA 13 toolkit (DEVELOPERS.md, "GPU checks"):
#   1. what the machine has (nvidia-smi, ferry-run --list-devices)
#   2. the CUDA tests: tests/cuda (generated kernels, NVRTC, plans), the conformance suite's cuda
#      kind (every op x dtype on cuda:0 against the reference), the random-graph execution test on
#      cpu+cuda:0
#   3. ferry-bench-cuda: GEMMs against cuBLASLt, the fused chain against a device copy, uploads
#      against pinned copies
# Usage: scripts/gpu-check.sh [OUT_DIR]   (default: build-gpu/check); logs and the benchmark's JSON
# go there. With .gpu/bundle.tar.xz (scripts/gpu-bundle.sh, made on a machine that can build
# ferry: the lent GPU machines cannot install its dependencies), it runs the bundle's programs;
# otherwise it builds only what it runs, in build-gpu/ (Release). Exit status: non-zero when a
# step failed; every step runs regardless, so one run reports everything.
set -u
out=${1:-build-gpu/check}
mkdir -p "$out"
status=0
step() {  # step NAME COMMAND...: runs, logs to $out/NAME.log, records failure
  local name=$1
  shift
  echo "== $name: $*"
  if "$@" >"$out/$name.log" 2>&1; then echo "   ok"; else echo "   FAILED (exit $?; $out/$name.log)"; status=1; fi
  tail -n 15 "$out/$name.log"
}
if [ -d /usr/local/cuda/lib64 ]; then  # NVRTC and cuBLASLt, which ferry opens when it needs them
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
step gpu nvidia-smi
if [ -f .gpu/bundle.tar.xz ]; then
  bundle=$(mktemp -d)
  tar -C "$bundle" -xJf .gpu/bundle.tar.xz
  bin=$bundle/bin
  tests=$bundle/bin
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== bundle of $(cat "$bundle/revision") (HEAD is $(git rev-parse HEAD 2>/dev/null || echo unknown))"
  # The tests open files of the source tree by the path they were built at.
  src=$(cat "$bundle/source-dir")
  if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
  fi
else
  build=build-gpu
  bin=$build/bin
  tests=$build/tests
  step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_BENCH=ON
  step build cmake --build "$build" --target ferry-run ferry-compile cuda_tests conformance_tests \
    runtime_tests ferry-bench-cuda ferry-bench-model
fi
step devices "$bin/ferry-run" --list-devices
step cuda-tests "$tests/cuda_tests"
step conformance-cuda "$tests/conformance_tests" '--gtest_filter=Backends/Conformance.*/cuda_*'
step execute-cuda "$tests/runtime_tests" \
  '--gtest_filter=*CompiledGraphsRunOnTheCpuAndCuda0*:SessionStreams.*'
step demo "$bin/ferry-run" examples/mlp.fy --devices cpu,cuda:0 --target cuda:0 \
  --placement auto --random-inputs --iterations 20 --check
step cnn "$bin/ferry-run" examples/cnn.fy --devices cpu,cuda:0 --target cuda:0 \
  --placement auto --random-inputs --iterations 20 --check
step bench "$bin/ferry-bench-cuda" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/bench.json" \
  --benchmark_out_format=json
exit $status
