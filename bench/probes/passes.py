"""Why a system's two passes in compare.py differ by 3-4% at large shapes (session 12's H100 sweep:
flashinfer rmsnorm 16384 x 4096 88.8 us in one pass, 92.2 in the other; tmanorm 93.0 / 93.4).
Two suspects, timed with compare.py's own graph_time:
  order     tmanorm and eager alternately, 4 rounds: does a system's time depend on its place in the run?
  place     tmanorm with its outputs at several offsets from the inputs, and torch's copy_ likewise:
            does the time depend on where the output lands in memory?
nvidia-smi samples the SM and memory clocks and the power every 20 ms meanwhile ($OUT/clocks.csv).
Usage: python3 bench/probes/passes.py [MxN ...]   (rmsnorm bf16; default 16384x4096 4096x8192 4096x4096)"""
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compare  # noqa: E402
import tmanorm  # noqa: E402  (compare put python/ on the path)

out = os.environ.get("OUT", ".")
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu",
                        "--format=csv", "-lms", "20"], stdout=open(os.path.join(out, "clocks.csv"), "w"))
shapes = [tuple(int(v) for v in s.split("x")) for s in (sys.argv[1:] or ["16384x4096", "4096x8192", "4096x4096"])]
ceiling, _ = compare.copy_ceiling_gbs()
print(f"copy ceiling {ceiling:.0f} GB/s")
for m, n in shapes:
    nbytes = compare.floor_bytes("rmsnorm", m, n, torch.bfloat16)
    nsets = max(1, min(32, math.ceil(4 * compare.L2_BYTES / nbytes)))
    launches = compare.graph_launches(nbytes, ceiling)
    base = [compare.make_inputs("rmsnorm", m, n, torch.bfloat16, seed=s) for s in range(nsets)]
    fns = {"tmanorm": lambda i: tmanorm.rms_norm(i["x"], i["w"], 1e-6),
           "eager": lambda i: F.rms_norm(i["x"], (n,), i["w"], 1e-6)}
    for r in range(4):
        line = [f"{name} {compare.graph_time(fn, base, launches)[0]:.2f}" for name, fn in fns.items()]
        print(f"order {m}x{n} round {r}: " + ", ".join(line), flush=True)
    for pad_mib in (0, 1, 2, 3, 5, 8, 13, 32):
        pad = torch.empty(pad_mib * 2**20 + 1, dtype=torch.uint8, device="cuda")
        outs = [torch.empty_like(i["x"]) for i in base]
        sets = [dict(i, y=y) for i, y in zip(base, outs)]
        t = compare.graph_time(lambda i: tmanorm.rms_norm(i["x"], i["w"], 1e-6, out=i["y"]), sets, launches)[0]
        c = compare.graph_time(lambda i: i["y"].copy_(i["x"]), sets, launches)[0]
        offs = [(y.data_ptr() - i["x"].data_ptr()) // 2**20 for i, y in zip(base, outs)][:2]
        print(f"place {m}x{n} pad {pad_mib} MiB (y - x: {offs} MiB...): tmanorm {t:.2f} us, copy_ {c:.2f} us",
              flush=True)
        del pad, outs, sets
        torch.cuda.empty_cache()
smi.terminate()
