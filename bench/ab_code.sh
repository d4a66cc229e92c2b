#!/usr/bin/env bash
# A/B of a change of the generated code (or anything but the scheduler, which ab.sh covers): another
# tree's build against this one's, the same shapes, each run checked against the reference and timed
# twice a side, interleaved (old, new, old, new), the faster of each side's two times kept.
#   here:   mkdir -p devs/old && git archive COMMIT CMakeLists.txt cmake include src tools | tar x -C devs/old
#           (untracked, not ignored: it travels to the device with the working tree)
#   device: bash bench/ab_code.sh devs/old op:dtype:MxN ... > log
# One line a shape: shape, old_us, new_us, new/old, then each side's second time. CAP (seconds,
# default 540) stops starting shapes in time for the device call's limit.
set -uo pipefail
old=$1
shift
cap=${CAP:-540} start=$(date +%s)
# The other tree holds no tests (git archive of the paths above): the command alone.
build() {
  cmake -S "$1" -B "$1/build-gpu" -DCMAKE_BUILD_TYPE=Release "${@:2}" >/dev/null 2>&1 &&
    cmake --build "$1/build-gpu" -j 16 --target tmanorm_cli >/dev/null 2>&1
}
build . || { echo "this tree's build failed"; exit 1; }
build "$old" -DTMANORM_BUILD_TESTS=OFF -DTMANORM_BUILD_CLI=ON -DTMANORM_INSTALL=OFF || { echo "the build of $old failed"; exit 1; }
echo "built both in $(($(date +%s) - start)) s"
export TMANORM_CACHE_DIR=${TMANORM_CACHE_DIR:-$(mktemp -d)}
time_of() { sed -n 's/.* time: \([0-9.]*\) us.*/\1/p' <<<"$1" | head -1; }
echo "shape old_us new_us new/old old2_us new2_us"
for s in "$@"; do
  [ $((cap - ($(date +%s) - start))) -gt 15 ] || { echo "stopped: CAP $cap s"; break; }
  IFS=: read -r op dt mn <<<"$s"
  a=(run --op "$op" --dtype "$dt" --rows "${mn%x*}" --cols "${mn#*x}")
  o1=$("$old/build-gpu/tmanorm" "${a[@]}" 2>&1) n1=$(./build-gpu/tmanorm "${a[@]}" 2>&1)
  o2=$("$old/build-gpu/tmanorm" "${a[@]}" 2>&1) n2=$(./build-gpu/tmanorm "${a[@]}" 2>&1)
  for r in "$o1" "$n1" "$o2" "$n2"; do grep -q "FAILED\|tmanorm:" <<<"$r" && echo "$s: $(grep -m1 "FAILED\|tmanorm:" <<<"$r")"; done
  python3 - "$s" "$(time_of "$o1")" "$(time_of "$n1")" "$(time_of "$o2")" "$(time_of "$n2")" <<'PY'
import sys
s, *t = sys.argv[1:]
o1, n1, o2, n2 = (float(x) if x else float("nan") for x in t)
o, n = min(o1, o2), min(n1, n2)
print(s, o, n, round(n / o, 3), o2, n2)
PY
done
