#!/usr/bin/env bash
# A/B on the GPU: each plan saved by bench/ab_save.sh (another build's scheduler, replayed by this
# build) against this build's own plan for the same shape, both checked against the reference and
# timed by `tmanorm run`. One line a shape: shape, the two plans' kinds, their times, new/old, and the
# plan fields in which the two differ (old>new; "same" for a control whose plans agree: a line whose
# plans differ only by a device-dependent field, such as early_l2 from another GPU's L2, shows it).
# Usage: bench/ab.sh DIR [tmanorm binary] > log
set -uo pipefail
dir=$1 bin=${2:-./build-gpu/tmanorm}
export TMANORM_CACHE_DIR=${TMANORM_CACHE_DIR:-$(mktemp -d)}
run_of() { "$bin" run "$@" 2>&1; }
time_of() { sed -n 's/.* time: \([0-9.]*\) us.*/\1/p' <<<"$1"; }
kind_of() { sed -n 's/^plan \([a-z-]*\).*/\1/p' <<<"$1" | head -1; }
echo "shape old_kind new_kind old_us new_us new/old differs"
# The fields in which saved plan $1 and this build's plan (explain --json on stdin) differ, "why" aside.
differs() {
  python3 -c 'import json, sys
old, new = json.load(open(sys.argv[1])), json.load(sys.stdin)["plan"]
d = [f"{k}:{old.get(k)}>{new.get(k)}" for k in sorted(set(old) | set(new)) if k != "why" and old.get(k) != new.get(k)]
print(",".join(d) or "same")' "$1" 2>/dev/null || echo "?"
}
for f in "$dir"/*.json; do
  shape=$(basename "$f" .json)
  IFS=. read -r op dt mn <<<"$shape"
  m=${mn%x*} n=${mn#*x}
  old=$(run_of --op "$op" --dtype "$dt" --rows "$m" --cols "$n" --plan "$f")
  new=$(run_of --op "$op" --dtype "$dt" --rows "$m" --cols "$n")
  for r in "$old" "$new"; do grep -q "FAILED\|tmanorm:" <<<"$r" && echo "$shape: $(grep -m1 "FAILED\|tmanorm:" <<<"$r")"; done
  diff=$("$bin" explain --op "$op" --dtype "$dt" --rows "$m" --cols "$n" --json 2>/dev/null | differs "$f")
  python3 -c "import sys; o, n = float('$(time_of "$old")' or 'nan'), float('$(time_of "$new")' or 'nan'); print('$shape', '$(kind_of "$old")', '$(kind_of "$new")', o, n, round(n / o, 3), '$diff')"
done
