# The two commands of the README. Everything else is CMake; this file only strings it together.
BUILD ?= build
CMAKE_FLAGS ?=

.PHONY: demo test build deps configure clean bench-peer bench-peer-eager bench-overhead test-asan test-tsan configure-asan configure-tsan deps-clang

# Compile the example (the annotated graph), run it on the CPU with seeded random inputs, and
# draw it as SVG next to it.
# With a GPU (ferry-run --list-devices names cuda:0), the model runs there; without, on the CPU,
# and the demo says why there is no GPU.
demo: build
	./$(BUILD)/bin/ferry-compile examples/mlp.fy
	@if ./$(BUILD)/bin/ferry-run --list-devices 2>/dev/null | grep -qx 'cuda:0'; then \
	  echo "demo: running on the GPU (cuda:0)"; \
	  echo "./$(BUILD)/bin/ferry-run examples/mlp.fy --devices cpu,cuda:0 --target cuda:0 --placement auto --random-inputs --iterations 20"; \
	  ./$(BUILD)/bin/ferry-run examples/mlp.fy --devices cpu,cuda:0 --target cuda:0 --placement auto --random-inputs --iterations 20; \
	else \
	  echo "demo: running on the CPU; $$(./$(BUILD)/bin/ferry-run --list-devices 2>&1 >/dev/null | sed 's/^ferry-run: //')"; \
	  echo "./$(BUILD)/bin/ferry-run examples/mlp.fy --random-inputs --iterations 20"; \
	  ./$(BUILD)/bin/ferry-run examples/mlp.fy --random-inputs --iterations 20; \
	fi
	./$(BUILD)/bin/ferry-compile examples/mlp.fy --emit svg -o examples/mlp.svg
	@echo "demo: the annotated graph is drawn in examples/mlp.svg (open it in a browser)"

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j 2

build: configure
	cmake --build $(BUILD)

configure: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

# ferry against PyTorch eager, torch.compile, ONNX Runtime and JAX on the same models, inputs and
# threads, in interleaved rounds: a table of medians and ratios (bench/README.md, "Peers: ONNX
# Runtime, PyTorch, torch.compile, JAX"). Makes the venv (torch, onnx, onnxruntime, jax: ferry
# itself never needs it) and builds the two drivers. Other rounds, models, threads:
# make bench-peer PEER_FLAGS="--rounds 9 --models mlp,chain --threads 1"; a smoke run:
# make bench-peer PEER_FLAGS=--quick.
BENCH_VENV ?= $(BUILD)/bench-venv
PEER_FLAGS ?=
bench-peer: configure
	cmake --build $(BUILD) --target ferry-bench-model ferry-bench-triad
	@bash scripts/make-bench-venv.sh $(BENCH_VENV) all
	$(BENCH_VENV)/bin/python bench/peer/peer.py --bench-model $(BUILD)/bin/ferry-bench-model \
	  --bench-triad $(BUILD)/bin/ferry-bench-triad $(PEER_FLAGS)

# Time ferry-run against PyTorch eager on examples/mlp.fy and examples/cnn.fy (bench/README.md,
# "Peer: PyTorch eager"). torch lives in the same venv, made on first use.
# More rounds, other threads: make bench-peer-eager EAGER_FLAGS="--rounds 9 --threads 1". torch's
# OpenMP threads sleep instead of spinning by default: on a shared box spinning made its runs
# bimodal (bench/README.md); EAGER_FLAGS= restores torch's own setting.
EAGER_FLAGS ?= --torch-env OMP_WAIT_POLICY=PASSIVE
bench-peer-eager: configure
	cmake --build $(BUILD) --target ferry-run
	@bash scripts/make-bench-venv.sh $(BENCH_VENV) torch
	$(BENCH_VENV)/bin/python bench/peer/compare_eager.py --ferry-run $(BUILD)/bin/ferry-run $(EAGER_FLAGS)

# Per-node runtime overhead: Session::run on chains of 100, 1,000 and 10,000 matmul(f32[4,4],
# f32[4,4]), ferry against ONNX Runtime on one thread, interleaved (bench/README.md,
# "ferry-bench-overhead"). onnx and onnxruntime (no torch) in the same venv as bench-peer's.
# Other rounds or sizes: make bench-overhead OVERHEAD_FLAGS="--rounds 9 --nodes 1000".
OVERHEAD_FLAGS ?=
bench-overhead: configure
	cmake --build $(BUILD) --target ferry-bench-overhead
	@bash scripts/make-bench-venv.sh $(BENCH_VENV) onnx
	$(BENCH_VENV)/bin/python bench/peer/overhead.py --bench $(BUILD)/bin/ferry-bench-overhead $(OVERHEAD_FLAGS)

# The test suite under sanitizers, each in a build folder of its own (RELIABILITY.md, "6.
# Sanitizers in CI"). test-asan: ASan and UBSan, built with clang so that the fuzz targets of
# tests/fuzz are built too and each fuzzed for FERRY_FUZZ_SECONDS (fuzz.run.<kind>).
# allocator_may_return_null: tests ask for petabytes and expect an error, not ASan's report. The
# three that ask through operator new are left out (-E): ASan's operator new reports out of memory
# and aborts whatever the options (its malloc returns null), so they cannot pass under it.
# test-tsan: ThreadSanitizer with g++; OpenBLAS is not instrumented and runs one thread inside
# ferry's pool anyway (OPENBLAS_NUM_THREADS=1 keeps its own pool from starting), while ferry's
# pool is checked. The benchmarks are not built: they are no tests. Left out (-E), as under
# ASan: the three tests that ask operator new for petabytes (TSan's allocator aborts), the RSS
# bound of ferry-run's run counts (TSan's shadow memory is several times the program's), and
# the allocation-failure sweeps (single-threaded; past ctest's 300 s under TSan; ASan runs them).
# Too slow for CI (RELIABILITY.md 6): run it by hand after touching the pool or the Session.
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
SANITIZE_FLAGS = -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_BENCH=OFF $(CMAKE_FLAGS)
test-asan: configure-asan
	cmake --build $(ASAN_BUILD)
	ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-$(CLANG) ctest --test-dir $(ASAN_BUILD) \
	  --output-on-failure -j 2 -E TheHostCannotHold

test-tsan: configure-tsan
	cmake --build $(TSAN_BUILD)
	OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir $(TSAN_BUILD) --output-on-failure -j 2 \
	  -E 'TheHostCannotHold|InBoundedMemory|FaultSweep'

# scripts/fuzz.sh builds its targets in a folder configured the same way (build-fuzz/).
configure-asan: deps-clang
	@[ -f $(ASAN_BUILD)/build.ninja ] || cmake -S . -B $(ASAN_BUILD) -G Ninja \
	  -DCMAKE_CXX_COMPILER=clang++-$(CLANG) -DFERRY_SANITIZE=address -DFERRY_WERROR=OFF $(SANITIZE_FLAGS)

configure-tsan: deps
	@[ -f $(TSAN_BUILD)/build.ninja ] || cmake -S . -B $(TSAN_BUILD) -G Ninja \
	  -DFERRY_SANITIZE=thread $(SANITIZE_FLAGS)

deps:
	@bash scripts/install-deps.sh

# clang with its sanitizer and libFuzzer runtimes, and llvm-symbolizer for the reports' lines;
# only the sanitizer targets need them. Debian 12's default clang (14) lacks the builtin that
# libstdc++ 12's std::source_location needs (the Builder's locations); 16 has it.
CLANG ?= 16
deps-clang: deps
	@bash scripts/install-deps.sh clang-$(CLANG) libclang-rt-$(CLANG)-dev llvm-$(CLANG)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
