#!/usr/bin/env bash
# The on-disk kernel cache across processes: the same plans made twice, each time in fresh processes over
# one cache directory (cold: empty; warm: filled by the cold pass). Prints each pass's wall time and the
# compile time its plans report (0 for a plan whose kernel came from a cache, in memory or on disk).
# Usage: tests/gpu/warm_cache.sh [tmanorm binary]
set -uo pipefail
bin=${1:-./build-gpu/tmanorm}
dir=$(mktemp -d)
export TMANORM_CACHE_DIR=$dir TMANORM_DISK_CACHE=1
shapes="rmsnorm:4096x4096 rmsnorm:8x8192 rmsnorm:1000x65536 layernorm:4096x4096 layernorm:33x40960
softmax:4096x32768 softmax:5x1536 add_rmsnorm:16384x4096 add_rmsnorm:2000x12288"
pass() {
  local t0 t1 total=0 n=0 ms
  t0=$(date +%s%N)
  for s in $shapes; do op=${s%%:*}; mn=${s#*:}
    ms=$("$bin" explain --json --op "$op" --rows "${mn%x*}" --cols "${mn#*x}" --dtype bf16 |
         python3 -c 'import json,sys; print(json.load(sys.stdin)["resources"]["compile_ms"])') || return 1
    total=$(python3 -c "print($total + $ms)"); n=$((n + 1))
  done
  t1=$(date +%s%N)
  echo "$1: $n plans in $n processes, $(( (t1 - t0) / 1000000 )) ms wall, compile_ms summed $total"
}
pass cold && pass warm
echo "cache entries: $(find "$dir" -type f | wc -l), $(du -sh "$dir" | cut -f1)"
rm -rf "$dir"
