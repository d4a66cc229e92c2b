#!/usr/bin/env bash
# What row tiers cost: each op and N at row counts between powers of two, timed with the plan made
# for exactly M rows and with the row-tier plan a caller whose M varies keeps (made for the next
# power of two, launched for M: the tier's kernel on a grid cut to the rows). One line a shape:
# op N M exact_us tier_us ratio. Usage: bench/tiers.sh [tmanorm binary] > log
set -uo pipefail
bin=${1:-./build-gpu/tmanorm}
export TMANORM_CACHE_DIR=${TMANORM_CACHE_DIR:-$(mktemp -d)}
ops=${TIER_OPS:-"rmsnorm layernorm softmax add_rmsnorm"}
cols=${TIER_COLS:-"2560 4096 12288"}
rows=${TIER_ROWS:-"5 33 100 300 600 1000 3000 10000"}
time_of() { "$bin" run "$@" --dtype bf16 2>&1 | sed -n 's/.* time: \([0-9.]*\) us.*/\1/p'; }
echo "op N M exact_us tier_us tier/exact"
for op in $ops; do for n in $cols; do for m in $rows; do
  b=1; while [ "$b" -lt "$m" ]; do b=$((b * 2)); done
  e=$(time_of --op "$op" --rows "$m" --cols "$n"); t=$(time_of --op "$op" --rows "$m" --cols "$n" --bound "$b")
  python3 -c "import sys; e, t = float('${e:-nan}'), float('${t:-nan}'); print('$op $n $m', e, t, round(t / e, 3))"
done; done; done
