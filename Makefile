# The two commands of the README. Everything else is CMake; this file only strings it together.
BUILD ?= build
CMAKE_FLAGS ?=

.PHONY: demo test build deps configure clean

# Compile the example (the annotated graph), then run it on the CPU with seeded random inputs.
demo: build
	./$(BUILD)/bin/ferry-compile examples/mlp.fy
	./$(BUILD)/bin/ferry-run examples/mlp.fy --random-inputs --iterations 20

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j 2

build: configure
	cmake --build $(BUILD)

configure: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

deps:
	@bash scripts/install-deps.sh

clean:
	rm -rf $(BUILD)
