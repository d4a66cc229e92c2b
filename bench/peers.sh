#!/usr/bin/env bash
# On the device: `peers.sh stash DIR` keeps a carried bundle in /tmp/tn_wheels
# (the machine stays warm for 30 s between calls); `peers.sh install`
# reassembles split wheels and installs everything into /tmp/site.
set -euo pipefail
store=/tmp/tn_wheels
case "${1:-}" in
  stash) mkdir -p "$store"; cp "$2"/* "$store"/; ls "$store" | wc -l | sed 's/^/peers.sh: files stashed: /' ;;
  install)
    cd "$store"
    for first in *.part-00; do
      [ -e "$first" ] || continue
      whl=${first%.part-00}
      cat "$whl".part-* > "$whl" && rm "$whl".part-*
    done
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ./*.whl
    echo "peers.sh: installed $(ls ./*.whl | wc -l) wheels into /tmp/site" ;;
  *) echo "usage: peers.sh stash DIR | install" >&2; exit 2 ;;
esac
