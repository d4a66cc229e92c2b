#!/usr/bin/env bash
# Tunes the shapes given as OP:MxN (default: where the last benchmark had tmanorm trailing),
# printing every candidate plan timed; logs to $OUT/tune.log.
set -uo pipefail
out=${OUT:-gpu-logs}; mkdir -p "$out"
# Always the incremental build: the device may keep an older build-gpu/ between calls.
{ cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-gpu -j 16 --target tmanorm_cli >/dev/null; } || exit 1
shapes=${*:-rmsnorm:4096x1024 rmsnorm:16384x1024 rmsnorm:4096x4096 rmsnorm:64x4096 softmax:4096x16384 softmax:16384x16384 add_rmsnorm:64x1024 layernorm:64x16384 layernorm:4096x16384}
for s in $shapes; do
  op=${s%%:*}; mn=${s#*:}
  ./build-gpu/tmanorm tune --op "$op" --rows "${mn%x*}" --cols "${mn#*x}" --dtype bf16
done 2>&1 | tee "$out/tune.log"
