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
# go there. Builds only what it runs, in build-gpu/ (Release). Exit status: non-zero when a step
# failed; every step runs regardless, so one run reports everything.
set -u
out=${1:-build-gpu/check}
mkdir -p "$out"
build=build-gpu
status=0
step() {  # step NAME COMMAND...: runs, logs to $out/NAME.log, records failure
  local name=$1
  shift
  echo "== $name: $*"
  if "$@" >"$out/$name.log" 2>&1; then echo "   ok"; else echo "   FAILED (exit $?; $out/$name.log)"; status=1; fi
  tail -n 15 "$out/$name.log"
}
step gpu nvidia-smi
step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_BENCH=ON
step build cmake --build "$build" --target ferry-run ferry-compile cuda_tests conformance_tests \
  runtime_tests ferry-bench-cuda
step devices "$build/bin/ferry-run" --list-devices
step cuda-tests "$build/tests/cuda_tests"
step conformance-cuda "$build/tests/conformance_tests" '--gtest_filter=Backends/Conformance.*/cuda_*'
step execute-cuda "$build/tests/runtime_tests" '--gtest_filter=*CompiledGraphsRunOnTheCpuAndCuda0*'
step demo "$build/bin/ferry-run" examples/mlp.fy --devices cpu,cuda:0 --target cuda:0 \
  --placement auto --random-inputs --iterations 20
step bench "$build/bin/ferry-bench-cuda" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/bench.json" \
  --benchmark_out_format=json
exit $status
