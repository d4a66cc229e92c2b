"""One system's kernel(s) for one case, called once inside an NVTX range named "profile", so Nsight
Compute profiles exactly that call and nothing of the set-up (peers compile and autotune on the first
calls, which run before the range). The systems and inputs are compare.py's, as its users run them.

    ncu --nvtx --nvtx-include "profile/" --section SpeedOfLight ... \\
        python3 bench/probes/ncu_call.py --system quack --op softmax --shape 512x65536

bench/probes/ncu.sh runs it for several systems and turns each report into text.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compare  # noqa: E402  (adds BENCH_SITE and python/ to the path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", required=True, choices=sorted(compare.SYSTEMS))
    ap.add_argument("--op", required=True, choices=compare.OPS)
    ap.add_argument("--shape", required=True, help="MxN")
    ap.add_argument("--dtype", default="bf16", choices=sorted(compare.DTYPES))
    ap.add_argument("--warmup", type=int, default=3, help="calls before the profiled one")
    args = ap.parse_args()
    m, n = (int(v) for v in args.shape.split("x"))
    fn = compare.SYSTEMS[args.system]()[args.op]
    inputs = compare.prepare(args.system, compare.make_inputs(args.op, m, n, compare.DTYPES[args.dtype], seed=1))
    for _ in range(args.warmup):
        fn(inputs)
    torch.cuda.synchronize()
    # A cold L2, as compare.py's rotated buffer sets leave it: 2x the L2 of other bytes touched first.
    scratch = torch.empty(2 * compare.L2_BYTES, dtype=torch.uint8, device="cuda")
    scratch.fill_(1)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    fn(inputs)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"profiled {args.system} {args.op} {args.dtype} {m}x{n}")


if __name__ == "__main__":
    main()
