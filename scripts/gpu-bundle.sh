#!/usr/bin/env bash
# scripts/gpu-bundle.sh — builds, on this machine, what scripts/gpu-check.sh runs on a GPU machine
# that cannot build ferry itself (the lent GPU machines have no network, so no Debian packages):
# the check's programs, compiled for any x86-64 CPU (FERRY_NATIVE=OFF), with the shared libraries
# they need that are not the C library's, packed into one file:
#   .gpu/bundle.tar.xz   (the folder .gpu/ is ignored by git; a device call carries it)
# gpu-check.sh unpacks it when it finds it, and builds nothing. The CUDA libraries (NVRTC,
# cuBLASLt) are not packed: ferry opens those of the GPU machine's CUDA 13 toolkit.
# Usage: scripts/gpu-bundle.sh   (after scripts/install-deps.sh; builds in build-gpu-bundle/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-gpu-bundle
targets=(ferry-run ferry-compile cuda_tests conformance_tests runtime_tests ferry-bench-cuda
         ferry-bench-model)
configured=$(cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_BENCH=ON \
  -DFERRY_NATIVE=OFF)
if ! grep -q 'ferry: CUDA backend on' <<<"$configured"; then
  grep 'ferry: CUDA' <<<"$configured" >&2
  echo "gpu-bundle: a bundle without the CUDA backend checks nothing on a GPU" >&2
  exit 1
fi
cmake --build "$build" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
programs=()
for t in "${targets[@]}"; do
  p=$(find "$build/bin" "$build/tests" -maxdepth 1 -type f -name "$t" | head -n 1)
  [ -n "$p" ] || { echo "gpu-bundle: $t was not built" >&2; exit 1; }
  cp "$p" "$stage/bin/"
  programs+=("$p")
done
strip --strip-unneeded "$stage"/bin/*
# Every shared library the programs load, but the C library's own (the GPU machine has a newer
# one; the others, libstdc++ included, come from here so that their versions match).
ldd "${programs[@]}" | awk '/=> \// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# Tests read files of the source tree and the host compiler by the paths compiled in.
printf '%s\n' "$PWD" >"$stage/source-dir"
git rev-parse HEAD >"$stage/revision"
mkdir -p .gpu
tar -C "$stage" -cJf .gpu/bundle.tar.xz .
echo "gpu-bundle: .gpu/bundle.tar.xz ($(du -h .gpu/bundle.tar.xz | cut -f1)) at $(cat "$stage/revision")"
