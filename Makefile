# Thin wrapper over CMake so a fresh machine needs one command for each job.
#   make demo   build, then run `tmanorm demo`
#   make test   build, then run every test (the GPU tier reports itself skipped without a GPU)
#   make sanitize   ASan + UBSan build in build-asan, then the CPU tier there
#   make tsan       ThreadSanitizer build in build-tsan, then the thread tests
#   make fuzz       libFuzzer build with clang in build-fuzz, each target FUZZ_SECONDS (tests/fuzz/README.md)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CUDA_ROOT ?= $(firstword $(wildcard /usr/local/cuda))
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release $(if $(CUDA_ROOT),-DCUDAToolkit_ROOT=$(CUDA_ROOT))

.PHONY: all build demo test gpu-test clean sanitize tsan fuzz
all: build

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/tmanorm demo

test: build
	ctest --test-dir $(BUILD) --output-on-failure

# Sanitizer tiers, each in its own tree: RelWithDebInfo, so reports name lines.
# SAN_CC=clang picks the compiler (use a fresh tree: ASAN_BUILD=build-asan-clang).
SAN_CC ?=
SAN_FLAGS = -DCMAKE_BUILD_TYPE=RelWithDebInfo $(if $(CUDA_ROOT),-DCUDAToolkit_ROOT=$(CUDA_ROOT)) \
            $(if $(SAN_CC),-DCMAKE_C_COMPILER=$(SAN_CC))
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = plan_json ir

# The CPU tier under ASan + UBSan (the GPU tier needs a GPU; python_binding preloads ASan).
sanitize:
	cmake -S . -B $(ASAN_BUILD) $(SAN_FLAGS) -DTN_SANITIZE=address,undefined
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -E '^gpu_tier$$'

# The API suite and the 8-thread stress test under ThreadSanitizer.
tsan:
	cmake -S . -B $(TSAN_BUILD) $(SAN_FLAGS) -DTN_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target test_cpu test_threads
	ctest --test-dir $(TSAN_BUILD) --output-on-failure -R '^(cpu_api|stress_threads)$$'

# Each libFuzzer target for FUZZ_SECONDS (new inputs and crashes under $(FUZZ_BUILD)/fuzz-out).
fuzz:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(if $(CUDA_ROOT),-DCUDAToolkit_ROOT=$(CUDA_ROOT)) \
	      -DCMAKE_C_COMPILER=$(FUZZ_CC) -DTN_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The whole GPU tier (on a machine with a GPU): tests/gpu/run.sh.
gpu-test:
	bash tests/gpu/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
