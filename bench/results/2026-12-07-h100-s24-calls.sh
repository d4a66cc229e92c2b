# ===== devs/s24a.sh
#!/usr/bin/env bash
# Session 24, call A: the cluster-launch probe (stage 4: arrive before the PDL wait), the A/B of session 23's
# early cluster start against the tree before it, the few-row one-CTA A/B, then the GPU tier in what is left.
set -uo pipefail
start=$(date +%s); cap=${CAP:-570}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1
nvcc -arch=sm_90a -O3 -o /tmp/cl bench/probes/cluster_launch.cu && timeout 40 /tmp/cl > "$OUT/probe-cluster-launch.txt" 2>&1; cat "$OUT/probe-cluster-launch.txt"
echo "probe done at $(( $(date +%s) - start )) s"
CAP=170 bash bench/ab_code.sh devs/pre-s23 rmsnorm:bf16:1x16384 rmsnorm:bf16:8x32768 add_rmsnorm:bf16:1x8192 add_rmsnorm:bf16:33x8192 \
  softmax:bf16:64x32768 layernorm:bf16:8x65536 add_rmsnorm:bf16:64x32768 rmsnorm:bf16:512x65536 softmax:bf16:512x65536 \
  add_rmsnorm:bf16:4096x131072 > "$OUT/ab-early-cluster.log" 2>&1; cat "$OUT/ab-early-cluster.log"
timeout 60 bash bench/ab.sh bench/ab/few-one-cta-s23 > "$OUT/ab-few.log" 2>&1; cut -c1-90 "$OUT/ab-few.log"
echo "A/B done at $(( $(date +%s) - start )) s"
TN_STEP_TIMEOUT=$(( $(left) - 45 )) bash tests/gpu/full.sh > /tmp/full.txt 2>&1; echo "full.sh rc $? at $(( $(date +%s) - start )) s"
cp /tmp/full.txt "$OUT/full_stdout.txt"; tail -28 /tmp/full.txt
echo "done at $(( $(date +%s) - start )) s"

# ===== devs/s24b.sh
#!/usr/bin/env bash
# Session 24, call B: the 67-131-row cluster sets (onewave-c4, lone-under2), then the 32-bit slot-address A/B.
set -uo pipefail
start=$(date +%s); cap=${CAP:-480}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/tmp/cm.log 2>&1 && cmake --build build-gpu -j 16 --target tmanorm_cli >>/tmp/cm.log 2>&1 || { tail -5 /tmp/cm.log; exit 1; }
for s in onewave-c4-s23 lone-under2-s23; do
  timeout 120 bash bench/ab.sh bench/ab/$s > "$OUT/ab-$s.log" 2>&1; echo "== $s"; cut -c1-100 "$OUT/ab-$s.log"
done
echo "sets done at $(( $(date +%s) - start )) s"
CAP=$(( $(left) - 10 )) bash bench/ab_code.sh devs/smem32 add_rmsnorm:f16:96x12288 rmsnorm:bf16:16384x8192 rmsnorm:bf16:33x131072 \
  rmsnorm:bf16:96x32768 rmsnorm:bf16:64x8192 layernorm:bf16:8x16384 softmax:bf16:512x16384 add_rmsnorm:bf16:1x4096 > "$OUT/ab-smem32.log" 2>&1
cat "$OUT/ab-smem32.log"; echo "done at $(( $(date +%s) - start )) s"

# ===== devs/s24c.sh
#!/usr/bin/env bash
# Session 24, call C: the all-row checks, then tunes at the shapes the A/B sets left open.
set -uo pipefail
start=$(date +%s); cap=${CAP:-420}
left() { echo $(( cap - ($(date +%s) - start) )); }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/tmp/cm.log 2>&1 && cmake --build build-gpu -j 16 --target tmanorm_cli >>/tmp/cm.log 2>&1 || { tail -5 /tmp/cm.log; exit 1; }
T=./build-gpu/tmanorm
for a in "rmsnorm --rows 300 --cols 24576" "add_rmsnorm --rows 512 --cols 32768" "add_rmsnorm --rows 463 --cols 32768 --bound 512" \
  "rmsnorm --rows 512 --cols 32768 --align 4" "layernorm --rows 700 --cols 20480" "rmsnorm --dtype f16 --rows 740 --cols 9216 --bound 777" \
  "layernorm --rows 301 --cols 16384 --bound 792 --stats" "add_rmsnorm --rows 96 --cols 32768" "softmax --rows 96 --cols 16384"; do
  echo "== $a: $($T run --op $a --check-rows 1000000 2>&1 | grep -E 'check|FAIL|tmanorm:' | head -2)"
done | tee "$OUT/check-rows.log"
for a in "add_rmsnorm --dtype f16 --rows 96 --cols 12288" "softmax --rows 96 --cols 16384" "softmax --rows 64 --cols 65536" "rmsnorm --rows 200 --cols 24576"; do
  [ "$(left)" -gt 70 ] || break
  timeout 80 $T tune --op $a > /tmp/tune.log 2>&1; echo "== tune $a (rc $?)"; head -12 /tmp/tune.log; grep -E "scheduler|best|regret" /tmp/tune.log | head -4
  cat /tmp/tune.log >> "$OUT/tune.log"
done
echo "done at $(( $(date +%s) - start )) s"

# ===== devs/s24d.sh
#!/usr/bin/env bash
# Session 24, call D: the lone window extended from 2 rows an SM down to half the SMs, two ways: this tree
# (cluster_pick_streamed's clusters under two waves) against main head (devs/head: one row a CTA there), then
# devs/lonepick (cluster_pick_lone's over the whole window) against this tree.
set -uo pipefail
start=$(date +%s); cap=${CAP:-540}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
S=(add_rmsnorm:bf16:70x32768 add_rmsnorm:bf16:96x32768 add_rmsnorm:bf16:120x32768 add_rmsnorm:bf16:128x32768
   add_rmsnorm:bf16:160x32768 add_rmsnorm:bf16:200x32768 add_rmsnorm:bf16:250x32768
   rmsnorm:bf16:70x32768 rmsnorm:bf16:96x32768 rmsnorm:bf16:120x32768 rmsnorm:bf16:131x32768 rmsnorm:bf16:150x32768
   rmsnorm:bf16:200x32768 rmsnorm:bf16:250x32768 rmsnorm:bf16:80x24576 rmsnorm:bf16:120x24576 rmsnorm:bf16:150x24576
   rmsnorm:bf16:200x24576 rmsnorm:bf16:230x24576 layernorm:bf16:100x24576 layernorm:bf16:150x24576
   layernorm:bf16:200x24576 rmsnorm:bf16:100x49152 rmsnorm:bf16:180x49152 rmsnorm:bf16:99x24584
   add_rmsnorm:bf16:111x30000 rmsnorm:f16:100x24576 add_rmsnorm:f32:96x16384 layernorm:f16:128x24576)
CAP=$(( $(left) * 4 / 10 )) bash bench/ab_code.sh devs/head "${S[@]}" > "$OUT/ab-lone-half-head.log" 2>&1; cat "$OUT/ab-lone-half-head.log"
echo "first done at $(( $(date +%s) - start )) s"
CAP=$(( $(left) * 6 / 10 )) bash bench/ab_code.sh devs/lonepick "${S[@]}" > "$OUT/ab-lone-half-lonepick.log" 2>&1; cat "$OUT/ab-lone-half-lonepick.log"
echo "second done at $(( $(date +%s) - start )) s"
# The 32-bit slot addresses on main head (devs/smem32b = head + bench/ab/smem32-s23.patch), at shapes the lone change leaves alone.
CAP=$(( $(left) - 5 )) bash bench/ab_code.sh devs/smem32b add_rmsnorm:f16:96x12288 add_rmsnorm:bf16:1x4096 rmsnorm:bf16:64x8192 \
  softmax:bf16:512x16384 rmsnorm:bf16:16384x8192 layernorm:bf16:8x16384 rmsnorm:bf16:33x131072 add_rmsnorm:bf16:264x4096 \
  add_rmsnorm:f32:96x12288 layernorm:bf16:4096x4096 > "$OUT/ab-smem32b.log" 2>&1; cat "$OUT/ab-smem32b.log"
echo "done at $(( $(date +%s) - start )) s"

# ===== devs/s24e.sh
#!/usr/bin/env bash
# Session 24, call E: the lone window from half the SMs as committed (1907369: cluster_pick_lone for one-input
# fusions, the streamed pick for several, all-at-once clusters only with 1/8 of the SMs idle) against main's
# head before it (devs/head), then the whole GPU tier in what is left.
set -uo pipefail
start=$(date +%s); cap=${CAP:-560}
left() { echo $(( cap - ($(date +%s) - start) )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
S=(add_rmsnorm:bf16:70x32768 add_rmsnorm:bf16:96x32768 add_rmsnorm:bf16:120x32768 add_rmsnorm:bf16:160x32768
   add_rmsnorm:bf16:200x32768 rmsnorm:bf16:70x32768 rmsnorm:bf16:120x32768 rmsnorm:bf16:131x32768
   rmsnorm:bf16:200x32768 rmsnorm:bf16:82x24576 rmsnorm:bf16:150x24576 rmsnorm:bf16:230x24576
   layernorm:bf16:150x24576 layernorm:bf16:200x24576 rmsnorm:bf16:100x49152 rmsnorm:bf16:180x49152
   rmsnorm:bf16:99x24584 add_rmsnorm:bf16:111x30000 rmsnorm:f16:100x24576 add_rmsnorm:f32:96x16384
   add_rmsnorm:f16:180x24576 rmsnorm:bf16:200x40000 rmsnorm:f32:96x24576 add_rmsnorm:bf16:250x24576)
CAP=130 bash bench/ab_code.sh devs/head "${S[@]}" > "$OUT/ab-lone-final.log" 2>&1; cat "$OUT/ab-lone-final.log"
echo "A/B done at $(( $(date +%s) - start )) s"
TN_STEP_TIMEOUT=$(( $(left) - 40 )) bash tests/gpu/full.sh > /tmp/full.txt 2>&1; echo "full.sh rc $? at $(( $(date +%s) - start )) s"
cp /tmp/full.txt "$OUT/full_stdout.txt"; tail -30 /tmp/full.txt
echo "done at $(( $(date +%s) - start )) s"

# ===== the last call (two tunes)
for a in "add_rmsnorm --rows 111 --cols 30000" "rmsnorm --rows 124 --cols 24576"; do timeout 40 ./build-gpu/tmanorm tune --op $a; done
