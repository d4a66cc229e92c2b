#!/usr/bin/env bash
# Saves the plans another build's scheduler makes (no GPU needed: planned for the H200, or for the
# target in TARGET), one JSON a shape, for bench/ab.sh to time against this build's scheduler on the
# GPU. A shape is op:dtype:MxN. Usage: [TARGET=h100] bench/ab_save.sh OTHER_TMANORM OUT_DIR SHAPE...
set -euo pipefail
bin=$1 out=$2
shift 2
mkdir -p "$out"
for shape in "$@"; do
  IFS=: read -r op dt mn <<<"$shape"
  m=${mn%x*} n=${mn#*x}
  "$bin" explain --op "$op" --dtype "$dt" --rows "$m" --cols "$n" --target "${TARGET:-h200}" --json |
    python3 -c 'import json, sys; json.dump(json.load(sys.stdin)["plan"], sys.stdout)' >"$out/$op.$dt.${m}x$n.json"
done
echo "saved $# plans under $out"
