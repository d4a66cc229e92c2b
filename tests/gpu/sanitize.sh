#!/usr/bin/env bash
# The GPU tier's sanitizer runs, in one device call: compute-sanitizer memcheck
# over `test_gpu --sanitize` (N = 2^31 - 1, padded and misaligned tensors, odd
# shapes, mixed dtypes, launch errors, random fusions) and over the PyTorch
# binding's mixed-dtype and broadcast checks. Logs under $OUT (or ./gpu-logs).
# Usage: tests/gpu/sanitize.sh [TOOL...]   (default: memcheck)
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
[ -x build-gpu/tests/test_gpu ] || { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 &&
  cmake --build build-gpu -j 16 >>"$out/cmake.log" 2>&1; } || { tail -30 "$out/cmake.log"; exit 1; }
tools=${*:-memcheck}
rc=0
for tool in $tools; do
  compute-sanitizer --tool "$tool" --error-exitcode 3 --print-limit 20 ./build-gpu/tests/test_gpu --sanitize \
    >"$out/sanitize_$tool.log" 2>&1
  r=$?; [ $r = 0 ] || rc=1
  echo "compute-sanitizer $tool test_gpu --sanitize: exit $r; $(grep -E '^[0-9]+ passed' "$out/sanitize_$tool.log") $(grep -E 'ERROR SUMMARY' "$out/sanitize_$tool.log")"
  grep -E '^FAIL|Invalid|Race|Barrier' "$out/sanitize_$tool.log" | head -20
done
if [ -f tests/gpu/test_torch.py ]; then
  PYTHONUNBUFFERED=1 TMANORM_LIB=build-gpu/libtmanorm.so compute-sanitizer --tool memcheck --error-exitcode 3 \
    --print-limit 20 python3 tests/gpu/test_torch.py --sanitize >"$out/sanitize_torch.log" 2>&1
  r=$?; [ $r = 0 ] || rc=1
  echo "compute-sanitizer memcheck test_torch.py --sanitize: exit $r; $(grep -E '^[0-9]+ passed' "$out/sanitize_torch.log") $(grep -E 'ERROR SUMMARY' "$out/sanitize_torch.log")"
  grep -E '^FAIL|Invalid' "$out/sanitize_torch.log" | head -20
fi
echo "sanitize.sh exit $rc"
exit $rc
