#!/usr/bin/env bash
# scripts/fuzz.sh [--no-roundtrip] [SECONDS [TARGET...]] — builds the libFuzzer targets in tests/fuzz with clang
# (ASan + UBSan) and runs each for SECONDS (default 60): fy_parser_fuzz seeded with the examples,
# npy_fuzz seeded with tests/fuzz/corpus/npy, onnx_import_fuzz seeded with the ONNX node cases and
# exported models of tests/ (it links Debian's libonnx-dev and libprotobuf-dev,
# scripts/install-deps.sh), and executable_fuzz (saved executables through the loader,
# Session::create and one run; seeded with the examples compiled by build/bin/ferry-compile, or
# $FERRY_BUILD/bin/ferry-compile). Each uses tests/fuzz/dict/<kind>.dict when there is one.
# TARGETs pick some (e.g. `scripts/fuzz.sh 300 onnx_import_fuzz`). ctest replays every target's
# seeds and regressions (fuzz.replay.<kind>), built with g++. Fuzzing is open-ended, not `make test`;
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
[ ${#targets[@]} -gt 0 ] || targets=(fy_parser_fuzz npy_fuzz onnx_import_fuzz executable_fuzz)
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
# The executable loader runs what loads: the runtime and the CPU backend with its OpenBLAS.
exe_sources=(runtime/*.cpp backends/*.cpp backends/cpu/*.cpp)
exe_flags=(-isystem /usr/include/x86_64-linux-gnu/openblas-pthread -isystem /usr/include/openblas)
exe_libs=(-lopenblas -lpthread)

build() {
  local target=$1
  echo "fuzz.sh: building $target"
  case "$target" in
    fy_parser_fuzz | npy_fuzz)
      clang++ "${flags[@]}" "tests/fuzz/$target.cpp" "${ir_sources[@]}" -o "$out/$target" ;;
    onnx_import_fuzz)
      clang++ "${flags[@]}" "${onnx_flags[@]}" "${extra[@]}" "tests/fuzz/$target.cpp" "${ir_sources[@]}" \
        "${onnx_sources[@]}" "${onnx_libs[@]}" -o "$out/$target" ;;
    executable_fuzz)
      clang++ "${flags[@]}" "${exe_flags[@]}" "tests/fuzz/$target.cpp" "${ir_sources[@]}" \
        "${exe_sources[@]}" "${exe_libs[@]}" -o "$out/$target" ;;
    *) echo "fuzz.sh: no target '$target' (fy_parser_fuzz, npy_fuzz, onnx_import_fuzz," \
            "executable_fuzz)" >&2; exit 2 ;;
  esac
}

# Runs TARGET on the inputs of tests/fuzz/regressions/KIND once, then fuzzes it from CORPUS, with
# tests/fuzz/dict/KIND.dict when there is one.
fuzz() {
  local target=$1 kind=$2 corpus=$3 max_len=$4
  local dict=()
  [ -e "tests/fuzz/dict/$kind.dict" ] && dict=(-dict="$PWD/tests/fuzz/dict/$kind.dict")
  local regressions=(tests/fuzz/regressions/"$kind"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "fuzz.sh: $target on ${#regressions[@]} regression inputs"
    "$out/$target" "${regressions[@]}"
  fi
  echo "fuzz.sh: fuzzing $target for ${seconds}s"
  # No allocation stacks while fuzzing: recording one per malloc took a third of the parser's time.
  # A crash input re-run by hand (`build-fuzz/TARGET crash-...`) prints them.
  (cd "$out" && ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0:allocator_may_return_null=1} \
     "./$target" -max_total_time="$seconds" -max_len="$max_len" "${dict[@]}" "$corpus")
}

for target in "${targets[@]}"; do build "$target"; done
for target in "${targets[@]}"; do
  case "$target" in
    fy_parser_fuzz)
      mkdir -p "$out/corpus-fy"
      cp examples/*.fy "$out/corpus-fy/"
      fuzz fy_parser_fuzz fy corpus-fy 4096 ;;
    npy_fuzz)
      # Seeds: four valid files (f32, i64, bool scalar, f16 Fortran order).
      mkdir -p "$out/corpus-npy"
      cp tests/fuzz/corpus/npy/*.npy "$out/corpus-npy/"
      fuzz npy_fuzz npy corpus-npy 4096 ;;
    executable_fuzz)
      # Seeds: the examples compiled by this tree's ferry-compile (the format is this build's).
      compiler=${FERRY_BUILD:-build}/bin/ferry-compile
      [ -x "$compiler" ] || { echo "fuzz.sh: executable_fuzz needs $compiler for its seeds" >&2; exit 2; }
      mkdir -p "$out/corpus-executable"
      for m in mlp cnn mlp_split ops; do
        rm -f "$out/corpus-executable/$m.ferry"
        "$compiler" "examples/$m.fy" --emit none --devices cpu,cpu:1 --placement auto \
          -o "$out/corpus-executable/$m.ferry"
      done
      fuzz executable_fuzz executable corpus-executable 262144 ;;
    onnx_import_fuzz)
      # Seeds: every node case and exported model (the larger ones cut at max_len: a truncated
      # model is a good start too), and the tensors of their test data.
      mkdir -p "$out/corpus-onnx"
      for f in tests/onnx_node/*/model.onnx tests/onnx_node/*/*/model.onnx \
               tests/onnx_models/*/model.onnx tests/onnx_node/*/test_data_set_0/*.pb; do
        [ -e "$f" ] || continue
        cp "$f" "$out/corpus-onnx/$(echo "$f" | cut -d/ -f3-  | tr '/' '_')"
      done
      fuzz onnx_import_fuzz onnx corpus-onnx 65536 ;;
  esac
done
echo "fuzz.sh: no crash found"
