#!/usr/bin/env bash
# Builds and runs the hardware probes (sm_90a, one GPU, ~30 s); output under $OUT (default probe-logs/).
set -euo pipefail
out=${OUT:-probe-logs}
mkdir -p "$out"
here=$(dirname "$0")
for p in gpc rowcopy clcopy tail cluster_launch; do
  nvcc -arch=sm_90a -O3 -o "/tmp/tn_probe_$p" "$here/$p.cu"
  "/tmp/tn_probe_$p" | tee "$out/$p.txt"
done
