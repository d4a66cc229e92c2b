#!/usr/bin/env bash
# One device call for a change to one op's kernels: build; that op's cases of the grid (three shards side
# by side) and of the late half, and the smoke tier under racecheck; then tune over the shapes given.
# Usage: TN_TEST_OP=layernorm tests/gpu/quickcheck.sh [OP:MxN ...]; logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-logs}; mkdir -p "$out"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 && cmake --build build-gpu -j 16 >>"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
export TN_TEST_OP=${TN_TEST_OP:-layernorm}
for i in 0 1 2; do timeout 300 ./build-gpu/tests/test_gpu --grid --shard $i/3 >"$out/grid$i.log" 2>&1 & pids[$i]=$!; done
timeout 300 ./build-gpu/tests/test_gpu --late >"$out/late.log" 2>&1 & late=$!
TN_TEST_RACECHECK=1 timeout 300 compute-sanitizer --tool racecheck --error-exitcode 3 ./build-gpu/tests/test_gpu --smoke >"$out/race.log" 2>&1 & race=$!
for p in "${pids[@]}" $late $race; do wait $p; done
for f in grid0 grid1 grid2 late race; do echo "$f: $(grep -E 'passed' $out/$f.log | tail -1)"; grep -E '^FAIL' $out/$f.log | head -8; done
grep -E 'RACECHECK SUMMARY' "$out/race.log"
for s in ${*:-}; do op=${s%%:*}; mn=${s#*:}
  timeout 80 ./build-gpu/tmanorm tune --op "$op" --rows "${mn%x*}" --cols "${mn#*x}" --dtype bf16; done >"$out/tune.log" 2>&1
grep -E '^regret|failed' "$out/tune.log"
