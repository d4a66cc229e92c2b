# Thin wrapper over CMake so a fresh machine needs one command for each job.
#   make demo   build, then run `tmanorm demo`
#   make test   build, then run every test (the GPU tier reports itself skipped without a GPU)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CUDA_ROOT ?= $(firstword $(wildcard /usr/local/cuda))
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release $(if $(CUDA_ROOT),-DCUDAToolkit_ROOT=$(CUDA_ROOT))

.PHONY: all build demo test gpu-test clean
all: build

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/tmanorm demo

test: build
	ctest --test-dir $(BUILD) --output-on-failure

# The whole GPU tier (on a machine with a GPU): tests/gpu/run.sh.
gpu-test:
	bash tests/gpu/run.sh

clean:
	rm -rf $(BUILD)
