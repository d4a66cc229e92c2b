#!/usr/bin/env bash
# Session 28 (short: the device time left after refused starts): the peeled clusters against devs/head27, then the
# trials (W: warp-only few short rows; P2: many short rows pipelined; T: two-level fusions over clusters from 8 KiB)
# as OLD against this tree (new/old above 1: the trial faster); then cols_early vs head26 and latestart if time is left.
set -uo pipefail
start=$(date +%s); cap=${CAP:-300}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
O=(rmsnorm:bf16:2000x65537 rmsnorm:bf16:1x65537 rmsnorm:bf16:64x65537 softmax:bf16:2000x65537 softmax:bf16:100x65537
   layernorm:bf16:4096x65537 add_rmsnorm:bf16:512x65537 softmax:bf16:64x131073 layernorm:f16:1000x100001
   rmsnorm:f32:1000x65537 add_rmsnorm:bf16:8x99999 layernorm:bf16:3x200001)
CAP=95 bash bench/ab_code.sh devs/head27 "${O[@]}" > "$OUT/ab-peel.log" 2>&1; cat "$OUT/ab-peel.log"
T=./build-gpu/tmanorm
for a in "rmsnorm --rows 2000 --cols 65536" "softmax --rows 2000 --cols 65536"; do
  echo "$a: $($T run --op $a | grep -E ' time:' | cut -c1-120)"
done
W=(add_rmsnorm:bf16:1x512 add_rmsnorm:bf16:1x1024 add_rmsnorm:bf16:8x512 rmsnorm:bf16:1x1024 rmsnorm:bf16:8x1024
   rmsnorm:bf16:64x512 layernorm:bf16:1x1024 layernorm:bf16:8x512 softmax:bf16:1x1024 add_rmsnorm:f16:32x896)
CAP=45 bash bench/ab_code.sh devs/trialW "${W[@]}" > "$OUT/ab-trialW.log" 2>&1; cat "$OUT/ab-trialW.log"
P=(rmsnorm:bf16:16384x512 rmsnorm:bf16:65536x512 rmsnorm:bf16:16384x1024 rmsnorm:bf16:10000x1536 layernorm:bf16:16384x512
   layernorm:bf16:16384x1024 add_rmsnorm:bf16:16384x512 add_rmsnorm:bf16:16384x1024 rmsnorm:bf16:9000x2560
   layernorm:bf16:20000x768 rmsnorm:f32:16384x1024)
CAP=50 bash bench/ab_code.sh devs/trialP2 "${P[@]}" > "$OUT/ab-trialP2.log" 2>&1; cat "$OUT/ab-trialP2.log"
F=(layernorm:bf16:1x8192 layernorm:bf16:8x8192 layernorm:bf16:32x8192 layernorm:bf16:1x6144 softmax:bf16:1x8192
   softmax:bf16:8x8192 softmax:bf16:20x6144 layernorm:f16:4x8192 softmax:bf16:33x8192)
echo "done at $(( $(date +%s) - start )) s"
