# ==== devs/s26a.sh
#!/usr/bin/env bash
# Session 26, call A: session 25's rules as committed against devs/head25; the cluster probe if an H200 came.
set -uo pipefail
g=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$g"
if [[ "$g" == *H200* ]]; then
  nvcc -arch=sm_90a -O3 -o /tmp/cl bench/probes/cluster_launch.cu && timeout 40 /tmp/cl > "$OUT/probe-cluster-launch.txt" 2>&1
  grep -E "rows  1 .* pdl" "$OUT/probe-cluster-launch.txt"
fi
bash devs/s25d.sh
# ==== devs/s26b.sh
#!/usr/bin/env bash
# Session 26, call B: the sweep's register-plan regressions since session 19 (same plans, codegen differs only by
# colive): HEAD against HEAD without colive; cluster and early-store shapes against c446241 (devs/head19).
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
S1=(layernorm:bf16:4096x1024 layernorm:bf16:4096x512 layernorm:bf16:16384x512 layernorm:bf16:4096x2048 layernorm:bf16:512x512
    layernorm:bf16:1x512 layernorm:bf16:8x512 layernorm:bf16:65536x512 rmsnorm:bf16:16384x512 rmsnorm:bf16:512x8192
    rmsnorm:bf16:4096x4096 rmsnorm:bf16:1x4096 rmsnorm:bf16:65536x1024 add_rmsnorm:bf16:512x2048 add_rmsnorm:bf16:1x1024
    add_rmsnorm:bf16:1x512 add_rmsnorm:bf16:512x512 add_rmsnorm:f16:96x12288 add_rmsnorm:bf16:96x12288 layernorm:f16:96x12288
    layernorm:bf16:3000x1536 rmsnorm:bf16:10000x2560)
CAP=200 bash bench/ab_code.sh devs/nocolive "${S1[@]}" > "$OUT/ab-nocolive.log" 2>&1; cat "$OUT/ab-nocolive.log"
S2=(rmsnorm:bf16:4096x131072 rmsnorm:bf16:512x131072 rmsnorm:bf16:16384x131072 add_rmsnorm:bf16:512x2048 add_rmsnorm:bf16:1x1024
    layernorm:bf16:4096x1024 rmsnorm:bf16:16384x512 add_rmsnorm:bf16:512x65536)
CAP=120 bash bench/ab_code.sh devs/head19 "${S2[@]}" > "$OUT/ab-head19.log" 2>&1; cat "$OUT/ab-head19.log"
timeout 60 ./build-gpu/tmanorm tune --op rmsnorm --rows 16384 --cols 512 > "$OUT/tune.log" 2>&1; head -12 "$OUT/tune.log" | cut -c1-220
# ==== devs/s26c.sh
#!/usr/bin/env bash
# Session 26, call C: cols_early for short rows (against head26); the cluster start after the PDL wait (devs/latestart); tunes at many short rows (rmsnorm
# 16384 x 512's tune best was a pipelined persistent grid, 11.83 us against 13.18).
set -uo pipefail
start=$(date +%s); cap=${CAP:-280}
left() { echo $(( cap - ($(date +%s) - start) )); }
g=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$g"
if [[ "$g" == *H200* ]]; then
  nvcc -arch=sm_90a -O3 -o /tmp/cl bench/probes/cluster_launch.cu && timeout 40 /tmp/cl > "$OUT/probe-cluster-launch.txt" 2>&1
  grep -E "rows  1 .* pdl" "$OUT/probe-cluster-launch.txt"
fi
S=(layernorm:bf16:4096x1024 layernorm:bf16:4096x512 layernorm:bf16:16384x512 layernorm:bf16:4096x2048 rmsnorm:bf16:16384x512
   layernorm:bf16:512x512 rmsnorm:bf16:1x4096 add_rmsnorm:bf16:512x512 add_rmsnorm:bf16:96x12288 layernorm:bf16:1000x1024
   rmsnorm:bf16:700x2048 add_rmsnorm:bf16:600x4096 layernorm:bf16:400x1536 rmsnorm:bf16:2000x4096)
CAP=80 bash bench/ab_code.sh devs/head26 "${S[@]}" > "$OUT/ab-colsbehind.log" 2>&1; cat "$OUT/ab-colsbehind.log"
L=(rmsnorm:bf16:4096x131072 rmsnorm:bf16:512x131072 add_rmsnorm:bf16:512x65536 add_rmsnorm:bf16:4096x65536 softmax:bf16:4096x131072
   rmsnorm:bf16:16384x65536 rmsnorm:bf16:8x131072 rmsnorm:bf16:64x65536 add_rmsnorm:bf16:1x65536 layernorm:bf16:64x131072 softmax:bf16:64x65536)
CAP=75 bash bench/ab_code.sh devs/latestart "${L[@]}" > "$OUT/ab-latestart.log" 2>&1; cat "$OUT/ab-latestart.log"
T=./build-gpu/tmanorm
for a in "rmsnorm --rows 65536 --cols 512" "layernorm --rows 1 --cols 8192" "layernorm --rows 16384 --cols 512" "softmax --rows 8 --cols 8192" "rmsnorm --rows 10000 --cols 1536"; do
  [ "$(left)" -gt 60 ] || { echo "stopped before tune $a"; break; }
  timeout 58 $T tune --op $a > /tmp/tune.log 2>&1; echo "== tune $a (rc $?)"; head -9 /tmp/tune.log | cut -c1-200; grep -E "scheduler" /tmp/tune.log | head -2 | cut -c1-200
  { echo "== tune $a"; cat /tmp/tune.log; } >> "$OUT/tune.log"
done
echo "done at $(( $(date +%s) - start )) s"
# ==== devs/s27a.sh
#!/usr/bin/env bash
# Prepared in session 26 for the next call: (1) session 26's cols_early change against devs/head26 (9988d7a);
# (2) the many-short-rows pipelined trials (devs/trialP1: the scheduler's threads a row, 1024-thread CTAs;
# devs/trialP2: 4 vectors a thread, 512-thread CTAs; both from 64 rows an SM) as OLD against this tree as NEW:
# new/old above 1 means the trial is faster; (3) the cluster start after the PDL wait (devs/latestart) as OLD;
# (4) devs/trialT (two-level fusions spread over clusters from 8 KiB rows, not 16) and devs/trialW (few rows of up to
# 128 vectors in one warp, 4 vectors a thread: warp-only reductions) as OLD; (5) tunes at few rows of 8192 and
# softmax 512 x 65536.
set -uo pipefail
start=$(date +%s); cap=${CAP:-560}
left() { echo $(( cap - ($(date +%s) - start) )); }
g=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$g"
if [[ "$g" == *H200* ]]; then
  nvcc -arch=sm_90a -O3 -o /tmp/cl bench/probes/cluster_launch.cu && timeout 40 /tmp/cl > "$OUT/probe-cluster-launch.txt" 2>&1
  grep -E "rows  1 .* pdl" "$OUT/probe-cluster-launch.txt"
fi
S=(layernorm:bf16:4096x1024 layernorm:bf16:4096x512 layernorm:bf16:16384x512 layernorm:bf16:4096x2048 rmsnorm:bf16:16384x512
   layernorm:bf16:512x512 rmsnorm:bf16:1x4096 add_rmsnorm:bf16:512x512 add_rmsnorm:bf16:96x12288 layernorm:bf16:1000x1024
   rmsnorm:bf16:700x2048 add_rmsnorm:bf16:600x4096 layernorm:bf16:400x1536 rmsnorm:bf16:2000x4096)
CAP=80 bash bench/ab_code.sh devs/head26 "${S[@]}" > "$OUT/ab-colsbehind.log" 2>&1; cat "$OUT/ab-colsbehind.log"
P=(rmsnorm:bf16:16384x512 rmsnorm:bf16:65536x512 rmsnorm:bf16:16384x1024 rmsnorm:bf16:65536x1024 rmsnorm:bf16:10000x1536
   rmsnorm:bf16:16384x2048 layernorm:bf16:16384x512 layernorm:bf16:16384x1024 layernorm:bf16:65536x512
   add_rmsnorm:bf16:16384x512 add_rmsnorm:bf16:16384x1024 add_rmsnorm:bf16:65536x1024 rmsnorm:bf16:16384x4096
   rmsnorm:bf16:9000x2560 layernorm:bf16:20000x768 rmsnorm:f32:16384x1024 add_rmsnorm:f16:16384x2048)
CAP=100 bash bench/ab_code.sh devs/trialP1 "${P[@]}" > "$OUT/ab-trialP1.log" 2>&1; cat "$OUT/ab-trialP1.log"
CAP=100 bash bench/ab_code.sh devs/trialP2 "${P[@]}" > "$OUT/ab-trialP2.log" 2>&1; cat "$OUT/ab-trialP2.log"
F=(layernorm:bf16:1x8192 layernorm:bf16:8x8192 layernorm:bf16:32x8192 layernorm:bf16:1x6144 layernorm:bf16:16x10240
   softmax:bf16:1x8192 softmax:bf16:8x8192 softmax:bf16:16x8192 softmax:bf16:1x5120 softmax:bf16:20x6144
   layernorm:f16:4x8192 softmax:bf16:33x8192)
CAP=60 bash bench/ab_code.sh devs/trialT "${F[@]}" > "$OUT/ab-trialT.log" 2>&1; cat "$OUT/ab-trialT.log"
W=(add_rmsnorm:bf16:1x512 add_rmsnorm:bf16:1x1024 add_rmsnorm:bf16:8x512 add_rmsnorm:bf16:8x1024 add_rmsnorm:bf16:64x1024
   rmsnorm:bf16:1x1024 rmsnorm:bf16:1x768 rmsnorm:bf16:8x1024 rmsnorm:bf16:64x512 rmsnorm:bf16:512x1024 layernorm:bf16:1x1024
   layernorm:bf16:8x512 softmax:bf16:1x1024 softmax:bf16:64x1024 add_rmsnorm:f16:32x896)
CAP=55 bash bench/ab_code.sh devs/trialW "${W[@]}" > "$OUT/ab-trialW.log" 2>&1; cat "$OUT/ab-trialW.log"
L=(rmsnorm:bf16:4096x131072 rmsnorm:bf16:512x131072 add_rmsnorm:bf16:512x65536 add_rmsnorm:bf16:4096x65536 softmax:bf16:4096x131072
   rmsnorm:bf16:16384x65536 rmsnorm:bf16:8x131072 rmsnorm:bf16:64x65536 add_rmsnorm:bf16:1x65536 layernorm:bf16:64x131072 softmax:bf16:64x65536)
CAP=75 bash bench/ab_code.sh devs/latestart "${L[@]}" > "$OUT/ab-latestart.log" 2>&1; cat "$OUT/ab-latestart.log"
T=./build-gpu/tmanorm
for a in "layernorm --rows 1 --cols 8192" "softmax --rows 8 --cols 8192" "softmax --rows 512 --cols 65536"; do
  [ "$(left)" -gt 60 ] || { echo "stopped before tune $a"; break; }
  timeout 58 $T tune --op $a > /tmp/tune.log 2>&1; echo "== tune $a (rc $?)"; head -9 /tmp/tune.log | cut -c1-200; grep -E "scheduler" /tmp/tune.log | head -2 | cut -c1-200
  { echo "== tune $a"; cat /tmp/tune.log; } >> "$OUT/tune.log"
done
# tune timed the scheduler's plan at add_rmsnorm 96 x 12288 at 5.30 us twice (sessions 23-24) where `run` times the
# same plan at 4.32-4.40: run, then the plan replayed from JSON, then tune's line for it.
if [ "$(left)" -gt 40 ]; then
  $T run --op add_rmsnorm --rows 96 --cols 12288 | grep -E "time"
  $T explain --op add_rmsnorm --rows 96 --cols 12288 --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["plan"]))' > /tmp/p96.json
  $T run --op add_rmsnorm --rows 96 --cols 12288 --plan /tmp/p96.json | grep -E "time"
  timeout 40 $T tune --op add_rmsnorm --rows 96 --cols 12288 2>&1 | grep -E "scheduler|^regret" | cut -c1-220
fi
echo "done at $(( $(date +%s) - start )) s"
