#!/usr/bin/env bash
# scripts/fuzz.sh [--no-roundtrip] [SECONDS [TARGET...]] — builds the libFuzzer targets of
# tests/fuzz with clang (ASan + UBSan, through CMake, in build-fuzz/) and runs each for SECONDS
# (default 60): fy_parser_fuzz seeded with the examples, npy_fuzz seeded with tests/fuzz/corpus/npy,
# onnx_import_fuzz seeded with the ONNX node cases and exported models of tests/ (it links Debian's
# libonnx-dev and libprotobuf-dev, scripts/install-deps.sh), and executable_fuzz (saved executables
# through the loader, Session::create and one run; seeded with the examples compiled by the same
# build's ferry-compile, or $FERRY_BUILD/bin/ferry-compile). Each uses tests/fuzz/dict/<kind>.dict
# when there is one. TARGETs pick some (e.g. `scripts/fuzz.sh 300 onnx_import_fuzz`). ctest
# replays every target's seeds and regressions (fuzz.replay.<kind>) in every build, and
# `make test-asan` fuzzes each target for 20 s (fuzz.run.<kind>); longer fuzzing is this script's,
# after touching a parser or the importer. Every input kept under tests/fuzz/regressions/<kind>/
# runs first: each is a crash found once and fixed since. New crashes land in build-fuzz/
# (crash-<sha1>): keep each under tests/fuzz/regressions/<kind>/ once it is reported.
# --no-roundtrip: onnx_import_fuzz checks the import alone, not the imported graph's .fy round
# trip (to fuzz the importer past a known printer/parser mistake).
set -euo pipefail
cd "$(dirname "$0")/.."
roundtrip=OFF
if [ "${1:-}" = --no-roundtrip ]; then
  roundtrip=ON
  shift
fi
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fy_parser_fuzz npy_fuzz onnx_import_fuzz executable_fuzz)
for target in "${targets[@]}"; do
  case "$target" in
    fy_parser_fuzz | npy_fuzz | onnx_import_fuzz | executable_fuzz) ;;
    *) echo "fuzz.sh: no target '$target' (fy_parser_fuzz, npy_fuzz, onnx_import_fuzz," \
            "executable_fuzz)" >&2; exit 2 ;;
  esac
done
# The targets are CMake's (tests/CMakeLists.txt), in a clang ASan + UBSan build configured as
# `make test-asan` configures its own (which installs clang if it is missing); FERRY_FUZZ_BUILD
# names another such folder (e.g. build-asan) to reuse. Crashes and corpora stay in build-fuzz/.
out=build-fuzz
build_dir=${FERRY_FUZZ_BUILD:-$out}
make --no-print-directory configure-asan ASAN_BUILD="$build_dir"
cmake -B "$build_dir" -DFERRY_FUZZ_SKIP_ROUNDTRIP=$roundtrip >/dev/null
ninja -C "$build_dir" -t query "${targets[0]}" >/dev/null 2>&1 ||
  { echo "fuzz.sh: clang++ has no libFuzzer (make deps-clang)" >&2; exit 2; }
build=("${targets[@]}")
[[ " ${targets[*]} " == *" executable_fuzz "* && -z "${FERRY_BUILD:-}" ]] && build+=(ferry-compile)
echo "fuzz.sh: building ${build[*]}"
cmake --build "$build_dir" --target "${build[@]}"
mkdir -p "$out"
for target in "${targets[@]}"; do ln -sf "$(realpath "$build_dir")/tests/$target" "$out/$target"; done

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
      compiler=${FERRY_BUILD:-$build_dir}/bin/ferry-compile
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
