#!/usr/bin/env bash
# Session 27 (devs/s27c.sh; never run: every start was refused, then loans paused): first the peeled clusters
# (this tree) against main before them (devs/head27 = 2bf5dda: odd long rows at vec 1), each run checked against
# the reference, beside the even twins, and memcheck on one peeled shape; then session 26's call (devs/s27a.sh)
# reordered to fit a smaller budget (no tunes). Missing trees: bash bench/ab/trees-s26.sh. From session 26: (1) session 26's cols_early change against devs/head26 (9988d7a);
# (2) the many-short-rows pipelined trials (devs/trialP1: the scheduler's threads a row, 1024-thread CTAs;
# devs/trialP2: 4 vectors a thread, 512-thread CTAs; both from 64 rows an SM) as OLD against this tree as NEW:
# new/old above 1 means the trial is faster; (3) the cluster start after the PDL wait (devs/latestart) as OLD;
# (4) devs/trialT (two-level fusions spread over clusters from 8 KiB rows, not 16) and devs/trialW (few rows of up to
# 128 vectors in one warp, 4 vectors a thread: warp-only reductions) as OLD; (5) tunes at few rows of 8192 and
# softmax 512 x 65536.
set -uo pipefail
start=$(date +%s); cap=${CAP:-500}
left() { echo $(( cap - ($(date +%s) - start) )); }
g=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$g"
if [[ "$g" == *H200* ]]; then
  nvcc -arch=sm_90a -O3 -o /tmp/cl bench/probes/cluster_launch.cu && timeout 40 /tmp/cl > "$OUT/probe-cluster-launch.txt" 2>&1
  grep -E "rows  1 .* pdl" "$OUT/probe-cluster-launch.txt"
fi
T=./build-gpu/tmanorm
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null 2>&1 && cmake --build build-gpu -j 16 --target tmanorm_cli >/dev/null 2>&1 || echo "build failed"
# Odd long rows: this tree (peeled clusters, branch peel-cluster) against main's head (devs/head27: vec 1 clusters
# and looped plans); ab_code checks every run against the reference.
O=(rmsnorm:bf16:2000x65537 rmsnorm:bf16:1x65537 rmsnorm:bf16:64x65537 softmax:bf16:2000x65537 softmax:bf16:100x65537
   layernorm:bf16:4096x65537 add_rmsnorm:bf16:512x65537 rmsnorm:bf16:4096x262145 softmax:bf16:64x131073
   layernorm:f16:1000x100001 rmsnorm:f32:1000x65537 add_rmsnorm:bf16:8x99999 layernorm:bf16:3x200001)
CAP=110 bash bench/ab_code.sh devs/head27 "${O[@]}" > "$OUT/ab-peel.log" 2>&1; cat "$OUT/ab-peel.log"
for a in "rmsnorm --rows 2000 --cols 65536" "softmax --rows 2000 --cols 65536" "layernorm --rows 4096 --cols 65536"; do
  echo "$a: $($T run --op $a | grep -E ' time:' | cut -c1-160)"
done
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 $T run --op layernorm --rows 5 --cols 65537 2>&1 | grep -E "ERROR SUMMARY|check|rror" | head -5
# tune at a many-row odd shape: the peeled clusters, persistent, in waves, and prefetching the next row's slices.
timeout 70 $T tune --op layernorm --rows 2000 --cols 99999 > "$OUT/tune-peel.log" 2>&1; head -12 "$OUT/tune-peel.log" | cut -c1-200
grep -E "scheduler|^regret" "$OUT/tune-peel.log" | cut -c1-200
S=(layernorm:bf16:4096x1024 layernorm:bf16:4096x512 layernorm:bf16:16384x512 layernorm:bf16:4096x2048 rmsnorm:bf16:16384x512
   layernorm:bf16:512x512 rmsnorm:bf16:1x4096 add_rmsnorm:bf16:512x512 add_rmsnorm:bf16:96x12288 layernorm:bf16:1000x1024
   rmsnorm:bf16:700x2048 add_rmsnorm:bf16:600x4096 layernorm:bf16:400x1536 rmsnorm:bf16:2000x4096)
CAP=80 bash bench/ab_code.sh devs/head26 "${S[@]}" > "$OUT/ab-colsbehind.log" 2>&1; cat "$OUT/ab-colsbehind.log"
W=(add_rmsnorm:bf16:1x512 add_rmsnorm:bf16:1x1024 add_rmsnorm:bf16:8x512 add_rmsnorm:bf16:8x1024 add_rmsnorm:bf16:64x1024
   rmsnorm:bf16:1x1024 rmsnorm:bf16:1x768 rmsnorm:bf16:8x1024 rmsnorm:bf16:64x512 rmsnorm:bf16:512x1024 layernorm:bf16:1x1024
   layernorm:bf16:8x512 softmax:bf16:1x1024 softmax:bf16:64x1024 add_rmsnorm:f16:32x896)
CAP=55 bash bench/ab_code.sh devs/trialW "${W[@]}" > "$OUT/ab-trialW.log" 2>&1; cat "$OUT/ab-trialW.log"
F=(layernorm:bf16:1x8192 layernorm:bf16:8x8192 layernorm:bf16:32x8192 layernorm:bf16:1x6144 layernorm:bf16:16x10240
   softmax:bf16:1x8192 softmax:bf16:8x8192 softmax:bf16:16x8192 softmax:bf16:1x5120 softmax:bf16:20x6144
   layernorm:f16:4x8192 softmax:bf16:33x8192)
CAP=60 bash bench/ab_code.sh devs/trialT "${F[@]}" > "$OUT/ab-trialT.log" 2>&1; cat "$OUT/ab-trialT.log"
P=(rmsnorm:bf16:16384x512 rmsnorm:bf16:65536x512 rmsnorm:bf16:16384x1024 rmsnorm:bf16:65536x1024 rmsnorm:bf16:10000x1536
   rmsnorm:bf16:16384x2048 layernorm:bf16:16384x512 layernorm:bf16:16384x1024 layernorm:bf16:65536x512
   add_rmsnorm:bf16:16384x512 add_rmsnorm:bf16:16384x1024 add_rmsnorm:bf16:65536x1024 rmsnorm:bf16:16384x4096
   rmsnorm:bf16:9000x2560 layernorm:bf16:20000x768 rmsnorm:f32:16384x1024 add_rmsnorm:f16:16384x2048)
[ "$(left)" -gt 100 ] && CAP=$(( $(left) - 100 )) bash bench/ab_code.sh devs/trialP1 "${P[@]}" > "$OUT/ab-trialP1.log" 2>&1; cat "$OUT/ab-trialP1.log"
CAP=100 bash bench/ab_code.sh devs/trialP2 "${P[@]}" > "$OUT/ab-trialP2.log" 2>&1; cat "$OUT/ab-trialP2.log"
L=(rmsnorm:bf16:4096x131072 rmsnorm:bf16:512x131072 add_rmsnorm:bf16:512x65536 add_rmsnorm:bf16:4096x65536 softmax:bf16:4096x131072
   rmsnorm:bf16:16384x65536 rmsnorm:bf16:8x131072 rmsnorm:bf16:64x65536 add_rmsnorm:bf16:1x65536 layernorm:bf16:64x131072 softmax:bf16:64x65536)
[ "$(left)" -gt 60 ] && CAP=$(( $(left) - 10 )) bash bench/ab_code.sh devs/latestart "${L[@]}" > "$OUT/ab-latestart.log" 2>&1; cat "$OUT/ab-latestart.log"
echo "done at $(( $(date +%s) - start )) s"
