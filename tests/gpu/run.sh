#!/usr/bin/env bash
# The GPU tier, in one device call: build, run the tier, the acceptance run and
# the demo; logs under $OUT (or ./gpu-logs). Usage: tests/gpu/run.sh [--quick]
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 &&
  cmake --build build-gpu -j 16 >>"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
rc=0
./build-gpu/tests/test_gpu "$@" 2>&1 | tee "$out/gpu_tier.log" | grep -v '^PASS'
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
PYTHONUNBUFFERED=1 TMANORM_LIB=build-gpu/libtmanorm.so python3 tests/gpu/test_torch.py 2>&1 | tee "$out/torch.log" | grep -v '^PASS'
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
./build-gpu/tmanorm run --op rmsnorm --rows 32768 --cols 4096 --dtype bf16 --overhead 2>&1 | tee "$out/run_rmsnorm.log"
./build-gpu/tmanorm demo >"$out/demo.log" 2>&1; echo "demo exit $?"
grep -E 'check|time' "$out/demo.log"
echo "run.sh exit $rc"
exit $rc
