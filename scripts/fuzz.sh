#!/usr/bin/env bash
# scripts/fuzz.sh [--no-roundtrip] [SECONDS [TARGET...]] — builds the libFuzzer targets in tests/fuzz with clang
# (ASan + UBSan) and runs each for SECONDS (default 60): fy_parser_fuzz seeded with the examples,
# npy_fuzz, and onnx_import_fuzz seeded with the ONNX node cases and exported models of tests/
# (it links Debian's libonnx-dev and libprotobuf-dev, scripts/install-deps.sh). TARGETs pick some
# (e.g. `scripts/fuzz.sh 300 onnx_import_fuzz`). Not part of `make test`: fuzzing is open-ended;
# run it after touching a parser or the importer. Every input kept under tests/fuzz/regressions/
# <kind>/ runs first: each is a crash found once and fixed since. New crashes land in build-fuzz/
# (crash-<sha1>): keep each under tests/fuzz/regressions/<kind>/ once it is reported.
# --no-roundtrip: onnx_import_fuzz checks the import alone, not the imported graph's .fy round
# trip (to fuzz the importer past a known printer/parser mistake).
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()
if [ "${1:-}" = --no-roundtrip ]; then
  extra=(-DFERRY_FUZZ_SKIP_ROUNDTRIP)
  shift
fi
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fy_parser_fuzz npy_fuzz onnx_import_fuzz)
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ (apt-get install clang)" >&2; exit 2; }
out=build-fuzz
mkdir -p "$out"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I. -isystem /usr/include/eigen3)
ir_sources=(ir/*.cpp)
# The importer folds constant subgraphs with the reference interpreter.
onnx_sources=(frontend/onnx/*.cpp backends/reference/*.cpp)
onnx_flags=(-DONNX_NAMESPACE=onnx -DONNX_ML=1)
onnx_libs=(-lonnx_proto -lprotobuf)

build() {
  local target=$1
  echo "fuzz.sh: building $target"
  case "$target" in
    fy_parser_fuzz | npy_fuzz)
      clang++ "${flags[@]}" "tests/fuzz/$target.cpp" "${ir_sources[@]}" -o "$out/$target" ;;
    onnx_import_fuzz)
      clang++ "${flags[@]}" "${onnx_flags[@]}" "${extra[@]}" "tests/fuzz/$target.cpp" "${ir_sources[@]}" \
        "${onnx_sources[@]}" "${onnx_libs[@]}" -o "$out/$target" ;;
    *) echo "fuzz.sh: no target '$target' (fy_parser_fuzz, npy_fuzz, onnx_import_fuzz)" >&2; exit 2 ;;
  esac
}

# Runs TARGET on the inputs of tests/fuzz/regressions/KIND once, then fuzzes it from CORPUS.
fuzz() {
  local target=$1 kind=$2 corpus=$3 max_len=$4
  local regressions=(tests/fuzz/regressions/"$kind"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "fuzz.sh: $target on ${#regressions[@]} regression inputs"
    "$out/$target" "${regressions[@]}"
  fi
  echo "fuzz.sh: fuzzing $target for ${seconds}s"
  (cd "$out" && "./$target" -max_total_time="$seconds" -max_len="$max_len" "$corpus")
}

for target in "${targets[@]}"; do build "$target"; done
for target in "${targets[@]}"; do
  case "$target" in
    fy_parser_fuzz)
      mkdir -p "$out/corpus-fy"
      cp examples/*.fy "$out/corpus-fy/"
      fuzz fy_parser_fuzz fy corpus-fy 4096 ;;
    npy_fuzz)
      mkdir -p "$out/corpus-npy"
      fuzz npy_fuzz npy corpus-npy 4096 ;;
    onnx_import_fuzz)
      # Seeds: every node case and exported model (the larger ones cut at max_len: a truncated
      # model is a good start too), and the tensors of their test data.
      mkdir -p "$out/corpus-onnx"
      for f in tests/onnx_node/*/model.onnx tests/onnx_models/*/model.onnx \
               tests/onnx_node/*/test_data_set_0/*.pb; do
        [ -e "$f" ] || continue
        cp "$f" "$out/corpus-onnx/$(echo "$f" | cut -d/ -f3-  | tr '/' '_')"
      done
      fuzz onnx_import_fuzz onnx corpus-onnx 65536 ;;
  esac
done
echo "fuzz.sh: no crash found"
