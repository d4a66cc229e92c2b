#!/usr/bin/env bash
# Runs the libFuzzer targets of a -DTN_FUZZ=ON build (make fuzz), each for
# SECONDS over its corpus in tests/fuzz/corpus/TARGET. New interesting inputs go
# to BUILD/fuzz-out/TARGET/corpus and crashes to BUILD/fuzz-out/TARGET/crashes,
# never into the repository. A crash does not stop the run (fork mode), so one
# shallow bug does not hide the next; at the end each crash is replayed once to
# say what broke, and the exit status is 1 if there was any.
#   tests/fuzz/run.sh BUILD SECONDS TARGET...
set -u
build=$1 seconds=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
out=$build/fuzz-out
status=0
for t in "$@"; do
  bin=$build/tests/fuzz_$t
  mkdir -p "$out/$t/corpus" "$out/$t/crashes"
  dict=()
  [ -f "$src/$t.dict" ] && dict=(-dict="$src/$t.dict")
  max_len=4096
  [ "$t" = ir ] && max_len=1024 # a few hundred instructions already reach the 1024-value limit
  echo "== fuzz_$t for ${seconds}s: new inputs in $out/$t/corpus, crashes in $out/$t/crashes"
  start=$(date +%s)
  "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=$max_len "${dict[@]}" -artifact_prefix="$out/$t/crashes/" \
    "$out/$t/corpus" "$src/corpus/$t" >"$out/$t/log" 2>&1
  grep -E '^#[0-9]+:' "$out/$t/log" | tail -1
  echo "   ran $(($(date +%s) - start))s; libFuzzer's log: $out/$t/log"
  shopt -s nullglob
  crashes=("$out/$t/crashes"/*)
  shopt -u nullglob
  if [ ${#crashes[@]} -gt 0 ]; then
    status=1
    echo "   ${#crashes[@]} crashing inputs (first report line of each; numbers elided to group them):"
    for c in "${crashes[@]}"; do
      "$bin" "$c" 2>&1 | grep -a -m1 -E 'fuzz property broken|runtime error|ERROR: (Address|Leak|Undefined)Sanitizer|SUMMARY' |
        sed -E 's/0x[0-9a-f]+/0x?/g; s/[0-9]+/N/g' | cut -c1-160
    done | sort | uniq -c | sort -rn
    echo "   reproduce: $bin CRASH_FILE; keep one as a regression: tests/fuzz/corpus/$t/crash-<what>"
  fi
done
exit $status
