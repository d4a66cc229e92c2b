#!/usr/bin/env bash
# Recreates session 26's A/B trees under devs/ (untracked, not ignored: they travel to the device):
# devs/head26 = 9988d7a (before session 26's cols_early change), and the trials, each 991163f plus its patch;
# devs/head27 = 2bf5dda (main before session 27's peeled clusters: odd long rows at vec 1); devs/trialE (session 28).
set -euo pipefail
cd "$(dirname "$0")/../.."
tree() { rm -rf "devs/$1" && mkdir -p "devs/$1" && git archive "$2" CMakeLists.txt cmake include src tools | tar x -C "devs/$1"; }
[ -d devs/head26 ] || tree head26 9988d7a
[ -d devs/head27 ] || tree head27 2bf5dda
for t in trialP1 trialP2 trialT trialW latestart; do
  [ -d "devs/$t" ] && continue
  tree "$t" 991163f && (cd "devs/$t" && patch -p0 -s < "../../bench/ab/$t-s26.patch")
done
# Session 28's trialE: f1accdf plus bench/ab/trialE-s28.patch (rows read once into registers with L2 evict_first
# loads that skip L1).
[ -d devs/trialE ] || { tree trialE f1accdf && (cd devs/trialE && patch -p0 -s < ../../bench/ab/trialE-s28.patch); }
ls devs
