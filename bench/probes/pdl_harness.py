"""Why PDL costs tmanorm 12-14% at 65536 x 512 in bench/compare.py's harness but not in `tmanorm run`'s
(issue 9 status, session 10). Times tmanorm's rms_norm with compare.py's own graph_time (a torch CUDA graph
of 20 launches over rotated buffer sets) four ways: PDL on and off, each with the output allocated inside
the capture (as compare.py does: torch's graph pool hands every launch the same block) and written into a
preallocated output of each buffer set (as `tmanorm run` does). Run on the device from the repository root,
after building build-gpu:

    TMANORM_LIB=build-gpu/libtmanorm.so PYTHONPATH=python python3 bench/probes/pdl_harness.py [MxN ...]
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402

import compare  # noqa: E402
import tmanorm  # noqa: E402

SHAPES = [a.split("x") for a in sys.argv[1:]] or [("65536", "512"), ("65536", "1024"), ("1", "512"),
                                                  ("8", "131072"), ("4096", "32768")]


def main():
    dtype = torch.bfloat16
    print("op M x N: PDL on / off, output allocated in the capture; PDL on / off, preallocated out= (us)")
    for m, n in ((int(a), int(b)) for a, b in SHAPES):
        nbytes = compare.floor_bytes("rmsnorm", m, n, dtype)
        nsets = max(1, min(32, math.ceil(4 * compare.L2_BYTES / nbytes)))
        sets = [compare.make_inputs("rmsnorm", m, n, dtype, seed=s) for s in range(nsets)]
        for s in sets:
            s["y"] = torch.empty_like(s["x"])
        times = []
        for out in (False, True):
            for pdl in (True, False):
                def fn(i, pdl=pdl, out=out):
                    y = i["y"] if out else None
                    return tmanorm.rms_norm(i["x"], None, i["w"], compare.EPS, pdl=pdl, out=y)
                times.append(compare.graph_time(fn, sets)[0])
        print(f"rmsnorm {m} x {n} ({nsets} sets): " + " / ".join(f"{t:.2f}" for t in times[:2]) + "; " +
              " / ".join(f"{t:.2f}" for t in times[2:]), flush=True)


if __name__ == "__main__":
    main()
