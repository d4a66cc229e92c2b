#!/usr/bin/env bash
# PDL on and off, each kernel timed alone by `tmanorm run` (no chain), over plans of many waves: the
# scheduler's and one tma plan a row a CTA in waves (pdl_tma_waves.json). Run on the device from the
# repository root: bash bench/probes/pdl.sh (~20 s). Results: bench/results/2026-12-04-h200-probe-pdl.txt.
set -uo pipefail
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null 2>&1 && cmake --build build-gpu -j 16 --target tmanorm_cli >/dev/null 2>&1 || exit 1
t() { ./build-gpu/tmanorm run "$@" 2>&1 | grep -E ' time:' | sed -E 's/.*time: ([0-9.]+ us).*/\1/'; }
for s in "rmsnorm 4096 32768" "rmsnorm 16384 32768" "rmsnorm 65536 512" "rmsnorm 65536 4096" "softmax 4096 32768" "layernorm 4096 32768" "rmsnorm 4096 65536"; do
  set -- $s
  echo "$1 $2x$3: pdl on $(t --op $1 --rows $2 --cols $3 --pdl on), off $(t --op $1 --rows $2 --cols $3 --pdl off)"
done
sed "s/\"pdl\": 1/\"pdl\": 0/" bench/probes/pdl_tma_waves.json > /tmp/tma0.json
echo "rmsnorm 4096x32768 tma waves 512: on $(t --op rmsnorm --rows 4096 --cols 32768 --plan bench/probes/pdl_tma_waves.json), off $(t --op rmsnorm --rows 4096 --cols 32768 --plan /tmp/tma0.json)"
