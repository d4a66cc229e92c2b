#!/usr/bin/env bash
# Nsight Compute on one case, tmanorm beside the peers (issue 9: 512 long rows at 80-89% of the copy where
# Quack and FlashInfer reach 94-100%; few long rows and 1-8 short rows likewise). Each system's one call
# (bench/probes/ncu_call.py, after its warm-up, L2 cold) is profiled with the sections below; with --plan, a
# saved tmanorm plan (a tune candidate) is profiled too, through `tmanorm run`. Reports as text under
# $OUT/ncu (archived as ncu.tgz on the device). The peers come from bench/peers.sh (stash, then this).
# Usage: bench/probes/ncu.sh OP MxN [SYSTEMS] [--plan PLAN.json ...]
#   bash bench/probes/ncu.sh softmax 512x65536 tmanorm,quack --plan bench/ab/m512/softmax.json
set -uo pipefail
cd "$(dirname "$0")/../.."
op=$1 shape=$2
shift 2
systems=tmanorm,quack,flashinfer
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then systems=$1; shift; fi
out=${OUT:-gpu-logs}/ncu
mkdir -p "$out"
[ -x build-gpu/tmanorm ] || { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
  cmake --build build-gpu -j 16 >>"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }; }
[ -d /tmp/site ] || bash bench/peers.sh install 2>&1 | tail -1
export BENCH_SITE=/tmp/site TMANORM_LIB=$PWD/build-gpu/libtmanorm.so
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
  --section WarpStateStats --section SchedulerStats)
metrics=--metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__cluster_dim_x,launch__grid_size,launch__block_size,launch__registers_per_thread
report() {  # name, then the command to profile
  local name=$1; shift
  ncu "${sections[@]}" "$metrics" -f -o "$out/$name" "$@" >"$out/$name.run.log" 2>&1
  ncu --import "$out/$name.ncu-rep" --page details >"$out/$name.txt" 2>&1
  rm -f "$out/$name.ncu-rep"
  echo "$name: $(grep -E 'gpu__time_duration.sum|dram__throughput.avg.pct' "$out/$name.txt" | tr -s ' ' | tr '\n' ';')"
}
for s in ${systems//,/ }; do
  report "$s-$op-$shape" --nvtx --nvtx-include "profile/" python3 bench/probes/ncu_call.py --system "$s" --op "$op" --shape "$shape"
done
while [ $# -ge 2 ] && [ "$1" = --plan ]; do
  plan=$2; shift 2
  # `tmanorm run` launches the plan once to check it, once a buffer set outside the graph it times, then the
  # graph's nodes: profile the first of the plain launches on a fresh set (skipping 4 profiled a graph node,
  # session 13: 68 us at 20% of DRAM, not the plan's time).
  report "plan-$(basename "$plan" .json)" -k regex:tn_kernel --launch-skip 1 --launch-count 1 \
    build-gpu/tmanorm run --op "$op" --rows "${shape%x*}" --cols "${shape#*x}" --plan "$plan"
done
if [ -n "${OUT:-}" ]; then tar czf "$OUT/ncu.tgz" -C "$out" . && rm -rf "$out"; fi
