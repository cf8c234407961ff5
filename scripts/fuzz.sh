#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] — builds the libFuzzer targets in tests/fuzz with clang (ASan +
# UBSan) and runs each for SECONDS (default 60), seeded with the examples. Not part of `make
# test`: fuzzing is open-ended; run it after touching a parser. Crashes land in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ (apt-get install clang)" >&2; exit 2; }
out=build-fuzz
mkdir -p "$out"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I. -isystem /usr/include/eigen3)
ir_sources=(ir/*.cpp)
for target in fy_parser_fuzz npy_fuzz; do
  echo "fuzz.sh: building $target"
  clang++ "${flags[@]}" "tests/fuzz/$target.cpp" "${ir_sources[@]}" -o "$out/$target"
done
mkdir -p "$out/corpus-fy" "$out/corpus-npy"
cp examples/*.fy "$out/corpus-fy/"
echo "fuzz.sh: fuzzing each target for ${seconds}s"
(cd "$out" && ./fy_parser_fuzz -max_total_time="$seconds" -max_len=4096 corpus-fy)
(cd "$out" && ./npy_fuzz -max_total_time="$seconds" -max_len=4096 corpus-npy)
echo "fuzz.sh: no crash found"
