#!/usr/bin/env bash
# The whole GPU tier in one device call: build; then, side by side (they only
# check correctness), the C tier, the PyTorch tier and compute-sanitizer
# (memcheck over the sanitizer subset, racecheck and synccheck over one shape
# per kind); then, alone on the GPU, the timed runs: tune over a set of shapes
# (the heuristic's regret) and the acceptance run. Logs under $OUT.
# Usage: tests/gpu/full.sh [OP:MxN ...]   (shapes for tune; the whole tier takes 300-430 s,
# so tune more than a shape or two with tests/gpu/tune.sh in a call of its own)
# On the device ($OUT set) the logs end up in $OUT/full-logs.tgz.
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 &&
  cmake --build build-gpu -j 16 >>"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# Every step under a time limit: a kernel that hangs fails its step, not the device call.
lim=${TN_STEP_TIMEOUT:-480}
# The grid half in shards side by side (its cases compile one kernel each and check rows on the CPU, so the
# device's 16 cores set the pace: three shards took 258-396 s each on 2026-12-04, before the row tiers' cases).
# Eight: six took 340-373 s on the H100 on 2026-12-06 and one ran past a 400 s limit.
shards=${TN_GRID_SHARDS:-8}
for ((i = 0; i < shards; i++)); do
  timeout "$lim" ./build-gpu/tests/test_gpu --grid --shard $i/$shards >"$out/gpu_tier$i.log" 2>&1 & tiers[$i]=$!
done
timeout "$lim" ./build-gpu/tests/test_gpu --late >"$out/gpu_late.log" 2>&1 & late=$!
PYTHONUNBUFFERED=1 TMANORM_LIB=build-gpu/libtmanorm.so timeout "$lim" python3 tests/gpu/test_torch.py --sanitize >"$out/torch.log" 2>&1 & torch=$!
# The torch ops' API with what --sanitize leaves out (torch.compile, CUDA graphs, 1000 row counts).
PYTHONUNBUFFERED=1 TMANORM_LIB=build-gpu/libtmanorm.so timeout "$lim" python3 tests/gpu/test_torch.py --api >"$out/torch_api.log" 2>&1 & torch_api=$!
# The sanitizers side by side, racecheck (the slowest: about 155 s a shard on the H100, 2026-12-06) in two
# shards of the smoke cases (run_case's; the chains and checks outside it run in each), without the two large
# PDL chains (TN_TEST_RACECHECK: racecheck's host memory went past 128 GB on the chain of 512 x 65536 and the
# OOM killer took test_gpu).
san() {
  local name=$1 tool=$2; shift 2
  timeout "$lim" compute-sanitizer --tool "$tool" --error-exitcode 3 --print-limit 20 ./build-gpu/tests/test_gpu "$@" >"$out/san_$name.log" 2>&1
  echo "compute-sanitizer $tool test_gpu $*: exit $? $(grep -E '^[0-9]+ passed' "$out/san_$name.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san_$name.log")" >"$out/san_$name.txt"
}
san memcheck memcheck --sanitize & sanp=($!)
TN_TEST_RACECHECK=1 san race0 racecheck --smoke --shard 0/2 & sanp+=($!)
TN_TEST_RACECHECK=1 san race1 racecheck --smoke --shard 1/2 & sanp+=($!)
san sync synccheck --smoke & sanp+=($!)
rc=0
for t in "${tiers[@]}"; do wait "$t" || rc=1; done; wait $late || rc=1; wait $torch || rc=1; wait $torch_api || rc=1
for p in "${sanp[@]}"; do wait "$p"; done; cat "$out"/san_*.txt >"$out/sanitizers.txt"; rm -f "$out"/san_*.txt
for ((i = 0; i < shards; i++)); do grep -E '^FAIL' "$out/gpu_tier$i.log" | head -20; tail -2 "$out/gpu_tier$i.log"; done
grep -E '^FAIL' "$out/gpu_late.log" | head -20; tail -2 "$out/gpu_late.log"
grep -E 'PDL|2\^31' "$out/gpu_tier0.log" "$out/gpu_late.log"
for f in torch torch_api; do grep -E '^FAIL' "$out/$f.log" | head; tail -1 "$out/$f.log"; done
cat "$out/sanitizers.txt"; grep -qE 'exit [^0]' "$out/sanitizers.txt" && rc=1
shapes=${*:-}
if [ -n "$shapes" ]; then
  for s in $shapes; do op=${s%%:*}; mn=${s#*:}
    timeout 90 ./build-gpu/tmanorm tune --op "$op" --rows "${mn%x*}" --cols "${mn#*x}" --dtype bf16; done >"$out/tune.log" 2>&1
  grep -E '^regret|failed' "$out/tune.log"
fi
./build-gpu/tmanorm run --op rmsnorm --rows 32768 --cols 4096 --dtype bf16 --overhead 2>&1 | grep -E 'ceiling|time|host|check' | tee "$out/run_rmsnorm.log"
echo "full.sh exit $rc"
# The device call brings back at most 8 files: the logs travel as one archive (tar xzf full-logs.tgz).
if [ -n "${OUT:-}" ]; then
  tar czf /tmp/full-logs.tgz -C "$out" . && find "$out" -maxdepth 1 -type f -delete && mv /tmp/full-logs.tgz "$OUT/"
fi
exit $rc
