#!/usr/bin/env bash
# Session 25, call A (prepared in session 24): Next device calls 0-2 in one call, on whichever GPU comes.
set -uo pipefail
start=$(date +%s); cap=${CAP:-560}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1
nvcc -arch=sm_90a -O3 -o /tmp/cl bench/probes/cluster_launch.cu && timeout 40 /tmp/cl > "$OUT/probe-cluster-launch.txt" 2>&1
grep -E "rows  1 .* pdl" "$OUT/probe-cluster-launch.txt"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/tmp/cm.log 2>&1 && cmake --build build-gpu -j 16 --target tmanorm_cli >>/tmp/cm.log 2>&1 || { tail -5 /tmp/cm.log; exit 1; }
timeout 60 bash bench/ab.sh bench/ab/few-one-cta-s23 > "$OUT/ab-few.log" 2>&1; cut -c1-90 "$OUT/ab-few.log"
timeout 90 bash bench/ab.sh bench/ab/lone-c4-s24 > "$OUT/ab-lone-c4.log" 2>&1; cut -c1-90 "$OUT/ab-lone-c4.log"
[ -d devs/head ] || { mkdir -p devs/head && git archive a9d5e62~2 CMakeLists.txt cmake include src tools | tar x -C devs/head; }
S=(add_rmsnorm:bf16:70x32768 add_rmsnorm:bf16:96x32768 add_rmsnorm:bf16:120x32768 add_rmsnorm:bf16:160x32768
   rmsnorm:bf16:70x32768 rmsnorm:bf16:131x32768 rmsnorm:bf16:200x32768 rmsnorm:bf16:82x24576 rmsnorm:bf16:150x24576
   layernorm:bf16:150x24576 rmsnorm:bf16:100x49152 rmsnorm:bf16:99x24584 add_rmsnorm:bf16:111x30000
   add_rmsnorm:f16:180x24576 rmsnorm:f32:96x24576)
CAP=$(( $(left) / 2 )) bash bench/ab_code.sh devs/head "${S[@]}" > "$OUT/ab-lone-head.log" 2>&1; cat "$OUT/ab-lone-head.log"
if [ ! -d devs/colive ]; then mkdir -p devs/colive && git archive HEAD CMakeLists.txt cmake include src tools | tar x -C devs/colive &&
  (cd devs/colive && patch -p0 -s < ../../bench/ab/colive-s24.patch); fi
CAP=$(( $(left) - 10 )) bash bench/ab_code.sh devs/colive add_rmsnorm:f16:96x12288 add_rmsnorm:bf16:96x12288 add_rmsnorm:f16:64x8192 \
  layernorm:f16:96x12288 add_rmsnorm:bf16:4096x4096 rmsnorm:bf16:1x4096 add_rmsnorm:bf16:264x4096 > "$OUT/ab-colive.log" 2>&1; cat "$OUT/ab-colive.log"
echo "done at $(( $(date +%s) - start )) s"
