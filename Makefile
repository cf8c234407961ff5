# The two commands of the README. Everything else is CMake; this file only strings it together.
BUILD ?= build
CMAKE_FLAGS ?=

.PHONY: demo test build deps configure clean bench-peer bench-overhead

# Compile the example (the annotated graph), run it on the CPU with seeded random inputs, and
# draw it as SVG next to it.
demo: build
	./$(BUILD)/bin/ferry-compile examples/mlp.fy
	./$(BUILD)/bin/ferry-run examples/mlp.fy --random-inputs --iterations 20
	./$(BUILD)/bin/ferry-compile examples/mlp.fy --emit svg -o examples/mlp.svg
	@echo "demo: the annotated graph is drawn in examples/mlp.svg (open it in a browser)"

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j 2

build: configure
	cmake --build $(BUILD)

configure: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

# Time ferry-run against PyTorch eager on examples/mlp.fy and examples/cnn.fy (bench/README.md,
# "Peer: PyTorch eager"). torch lives in a venv of its own, made on first use; ferry never needs it.
# More rounds, other threads: make bench-peer PEER_FLAGS="--rounds 9 --threads 1". torch's
# OpenMP threads sleep instead of spinning by default: on a shared box spinning made its runs
# bimodal (bench/README.md); PEER_FLAGS= restores torch's own setting.
BENCH_VENV ?= $(BUILD)/bench-venv
PEER_FLAGS ?= --torch-env OMP_WAIT_POLICY=PASSIVE
bench-peer: configure
	cmake --build $(BUILD) --target ferry-run
	@bash scripts/make-bench-venv.sh $(BENCH_VENV) torch
	$(BENCH_VENV)/bin/python bench/peer/compare_eager.py --ferry-run $(BUILD)/bin/ferry-run $(PEER_FLAGS)

# Per-node runtime overhead: Session::run on chains of 100, 1,000 and 10,000 matmul(f32[4,4],
# f32[4,4]), ferry against ONNX Runtime on one thread, interleaved (bench/README.md,
# "ferry-bench-overhead"). onnx and onnxruntime (no torch) in the same venv as bench-peer's.
# Other rounds or sizes: make bench-overhead OVERHEAD_FLAGS="--rounds 9 --nodes 1000".
OVERHEAD_FLAGS ?=
bench-overhead: configure
	cmake --build $(BUILD) --target ferry-bench-overhead
	@bash scripts/make-bench-venv.sh $(BENCH_VENV) onnx
	$(BENCH_VENV)/bin/python bench/peer/overhead.py --bench $(BUILD)/bin/ferry-bench-overhead $(OVERHEAD_FLAGS)

deps:
	@bash scripts/install-deps.sh

clean:
	rm -rf $(BUILD)
