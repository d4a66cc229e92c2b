#!/usr/bin/env bash
# Downloads the peers' wheels for the device's Python (CPython 3.12, manylinux
# x86_64) into .whl/all (git-ignored), then packs them into carry bundles
# .whl/b1, .whl/b2, ... of at most 48 MiB each, splitting any larger wheel into
# parts: a device call carries at most 64 MiB, the working tree included
# (about 11 MiB; a 60 MiB bundle was refused). On the device, `bench/peers.sh stash .whl/bK` per call and then
# `bench/peers.sh install` reassemble and install them (see bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
all=.whl/all
mkdir -p "$all"
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
platforms=""
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64; do
  platforms="$platforms --platform $p"
done
get() {
  [ "${SKIP_DOWNLOAD:-0}" = 1 ] && return 0  # name==version ...
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    $platforms --platform any -d "$all" "$@"
}
# Quack: the CuTe DSL (CUDA 13 libraries) and its FFI.
get quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
    nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.15.post2 \
    torch-c-dlpack-ext==0.1.5
# Liger: Triton kernels, pure Python.
get liger-kernel==0.8.5
if [ "${WITH_FLASHINFER:-0}" = 1 ]; then
  get flashinfer-python==0.7.4 cuda-tile nccl-extensions nccl4py nvidia-cudnn-frontend click tabulate
fi
# nvFuser: the only CUDA 13 wheel for CPython 3.12, nvfuser-cu130-torch210 (80 MB, over a device call's 64 MiB of
# carried files), is built against PyTorch 2.10 and fails to import on the device's 2.11 (an undefined c10
# symbol): not fetched; compare.py records the reason.
echo "wheels.sh: nvfuser-cu130-torch210 not fetched: built for PyTorch 2.10, fails to import on 2.11 (compare.py says so)"

rm -rf .whl/b[0-9]*
# A device call carries the working tree too (about 30 MiB by now): BUNDLE_MIB keeps the sum under 64 MiB.
limit=$((${BUNDLE_MIB:-32} * 1024 * 1024))
n=1; used=0
mkdir -p .whl/b1
for f in $(ls -S "$all"/*.whl); do
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$limit" ]; then
    split -b $(( ${BUNDLE_MIB:-32} - 2 ))M -d "$f" "/tmp/$(basename "$f").part-"
    for part in /tmp/$(basename "$f").part-*; do
      psize=$(stat -c %s "$part")
      if [ $((used + psize)) -gt "$limit" ]; then n=$((n + 1)); used=0; mkdir -p .whl/b$n; fi
      mv "$part" .whl/b$n/; used=$((used + psize))
    done
  else
    if [ $((used + size)) -gt "$limit" ]; then n=$((n + 1)); used=0; mkdir -p .whl/b$n; fi
    cp "$f" .whl/b$n/; used=$((used + size))
  fi
done
du -sh .whl/b* | sed 's/^/wheels.sh: bundle /'
