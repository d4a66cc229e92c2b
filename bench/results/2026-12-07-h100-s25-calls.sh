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
#!/usr/bin/env bash
# Session 25, call B: heavy few-row clusters of 8 x 128 (saved plans), trial A (clusters of 4 for several-input
# fusions under one wave) against head, tunes at three sweep shapes tmanorm lost in session 19.
set -uo pipefail
start=$(date +%s); cap=${CAP:-560}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/tmp/cm.log 2>&1 && cmake --build build-gpu -j 16 --target tmanorm_cli >>/tmp/cm.log 2>&1 || { tail -5 /tmp/cm.log; exit 1; }
timeout 80 bash bench/ab.sh bench/ab/few-c8-heavy-s25 > "$OUT/ab-few-c8-heavy.log" 2>&1; cut -c1-150 "$OUT/ab-few-c8-heavy.log"
A=(add_rmsnorm:bf16:70x32768 add_rmsnorm:bf16:111x30000 add_rmsnorm:bf16:80x24576 add_rmsnorm:bf16:96x32768
   add_rmsnorm:bf16:75x28672 add_rmsnorm:bf16:123x24576 add_rmsnorm:bf16:67x32768 add_rmsnorm:f16:85x30720
   add_rmsnorm:f32:72x12288 add_rmsnorm:bf16:130x24576 add_rmsnorm:f32:100x16000 add_rmsnorm:f16:120x28672
   add_rmsnorm:bf16:90x36864)
CAP=100 bash bench/ab_code.sh devs/trialA "${A[@]}" > "$OUT/ab-trialA.log" 2>&1; cat "$OUT/ab-trialA.log"
T=./build-gpu/tmanorm
for a in "add_rmsnorm --rows 64 --cols 65536" "rmsnorm --rows 64 --cols 131072" "softmax --rows 512 --cols 65536"; do
  [ "$(left)" -gt 70 ] || { echo "stopped before tune $a"; break; }
  timeout 75 $T tune --op $a > /tmp/tune.log 2>&1; echo "== tune $a (rc $?)"; head -8 /tmp/tune.log | cut -c1-200; grep -E "scheduler|regret" /tmp/tune.log | head -3
  cat /tmp/tune.log >> "$OUT/tune.log"
done
echo "done at $(( $(date +%s) - start )) s"
#!/usr/bin/env bash
# Session 25, call C: the working tree (cluster_pick_quarters, heavy_rows_over_eight) against head (devs/head25),
# trial C (few non-heavy rows over a quarter of the SMs streamed) against the working tree, then the GPU tier.
set -uo pipefail
start=$(date +%s); cap=${CAP:-575}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
S=(add_rmsnorm:bf16:100x28672 add_rmsnorm:bf16:88x32768 add_rmsnorm:f16:78x24576 add_rmsnorm:f32:90x12288
   add_rmsnorm:bf16:111x30000 add_rmsnorm:bf16:75x28672 add_rmsnorm:f32:72x12288 add_rmsnorm:bf16:110x36000
   softmax:bf16:64x65536 softmax:bf16:36x65536 softmax:f16:64x65536 softmax:bf16:60x65536 softmax:bf16:48x65536
   softmax:bf16:40x65536 softmax:bf16:50x81920 softmax:f32:64x32768 softmax:f32:50x32768 softmax:bf16:66x65536
   softmax:bf16:64x131072 rmsnorm:bf16:64x65536)
[ "${PART:-all}" != tier ] && CAP=130 bash bench/ab_code.sh devs/head25 "${S[@]}" > "$OUT/ab-rules.log" 2>&1; cat "$OUT/ab-rules.log"
C=(add_rmsnorm:bf16:64x65536 rmsnorm:bf16:64x131072 add_rmsnorm:bf16:64x131072 layernorm:bf16:64x131072
   add_rmsnorm:bf16:40x65536 rmsnorm:bf16:40x131072 rmsnorm:bf16:48x98304 rmsnorm:bf16:64x81920
   add_rmsnorm:f32:64x32768 add_rmsnorm:bf16:36x65536)
[ "${PART:-all}" != tier ] && CAP=55 bash bench/ab_code.sh devs/trialC "${C[@]}" > "$OUT/ab-trialC.log" 2>&1; cat "$OUT/ab-trialC.log"
echo "A/B done at $(( $(date +%s) - start )) s"
[ "${PART:-all}" = ab ] && exit 0
TN_STEP_TIMEOUT=$(( $(left) - 40 )) bash tests/gpu/full.sh > /tmp/full.txt 2>&1; echo "full.sh rc $? at $(( $(date +%s) - start )) s"
cp /tmp/full.txt "$OUT/full_stdout.txt"; tail -28 /tmp/full.txt
echo "done at $(( $(date +%s) - start )) s"
