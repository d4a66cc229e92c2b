#!/usr/bin/env bash
# The benchmark on the device, in one call per step (bench/README.md):
#   bash bench/run.sh stash .whl/b1              keep a carried wheel bundle, build tmanorm
#   bash bench/run.sh bench .whl/b2 --quick      keep the last bundle, install the peers, run, report
# Results land in $OUT (CSV, summary, plots).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results}
mkdir -p "$out"
step=$1; shift
# Always the incremental build: the device may keep an older build-gpu/ between calls.
build() {
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
    cmake --build build-gpu -j 16 --target tmanorm >>"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
}
case "$step" in
  stash) bash bench/peers.sh stash "$1"; build ;;
  bench)
    [ -d "${1:-}" ] && { bash bench/peers.sh stash "$1"; shift; }
    build
    bash bench/peers.sh install 2>&1 | tail -3
    export BENCH_SITE=/tmp/site TMANORM_LIB=$PWD/build-gpu/libtmanorm.so PYTHONUNBUFFERED=1
    export TORCHINDUCTOR_COMPILE_THREADS=16
    python3 bench/compare.py --out "$out" "$@" 2>&1 | tee "$out/compare.log"
    python3 bench/report.py "$out"/*.csv --out "$out" >"$out/report.log" 2>&1 || tail -20 "$out/report.log"
    # At most 8 files come back from a device call: the CSV and the summary as they are, the rest archived.
    if [ -n "${OUT:-}" ]; then
      tar czf /tmp/bench-extras.tgz -C "$out" --exclude '*.csv' --exclude '*summary.md' . &&
        find "$out" -maxdepth 1 -type f ! -name '*.csv' ! -name '*summary.md' -delete && mv /tmp/bench-extras.tgz "$OUT/"
    fi
    ;;
  *) echo "usage: run.sh stash DIR | bench [DIR] [compare.py options]" >&2; exit 2 ;;
esac
