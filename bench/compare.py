"""Side-by-side benchmark on the GPU: tmanorm against PyTorch eager,
torch.compile, Quack, Liger, FlashInfer and nvFuser, with the copy ceiling
measured in the same run.

For every (op, dtype, M, N) case each available system is first checked
against a float64 reference on the same inputs (its max relative error is
recorded), then timed inside CUDA graphs that rotate over enough buffer sets
that the working set is at least 4x the L2; the median of the replays is the
time, and the whole case is timed twice, in two passes over the systems, the second in the reverse order
(each system's faster pass reported, the other in us_repeat), so the CSV shows how well it repeats.

    python3 bench/compare.py --quick                   # a subset, one device call
    python3 bench/compare.py --full --part 1/3         # the standard sweep, split over calls
    python3 bench/compare.py --ops rmsnorm --systems tmanorm,eager --shapes 4096x4096,1x65536

Writes <out>/<date>-h200.csv (append; one header) and prints a progress line
per case. bench/report.py turns CSVs into the markdown summary and the plots.
"""
import argparse
import csv
import datetime
import math
import os
import site
import sys
import time
import traceback

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
# Peers installed with pip --target (bench/peers.sh): add them as site dirs so their .pth files
# (the CuTe DSL's package path, for one) take effect.
for _site in filter(None, os.environ.get("BENCH_SITE", "").split(":")):
    site.addsitedir(_site)

OPS = ("rmsnorm", "layernorm", "softmax", "add_rmsnorm")
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
FULL_M = (1, 8, 64, 512, 4096, 16384, 65536)
FULL_N = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
QUICK_SHAPES = [(m, n) for m in (64, 4096, 16384) for n in (1024, 4096, 16384)]
EPS = 1e-6
L2_BYTES = 60 * 2**20
CSV_FIELDS = ["op", "dtype", "M", "N", "system", "us", "gbs", "pct_ceiling", "max_rel_err",
              "us_repeat", "spread_us", "buffer_sets", "status"]
TOLERANCE = {torch.bfloat16: 2e-2, torch.float16: 4e-3, torch.float32: 1e-4}


# ---- the problems ------------------------------------------------------------------------

def make_inputs(op, m, n, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, n, device="cuda", dtype=dtype, generator=g)
    inputs = {"x": x}
    if op in ("rmsnorm", "layernorm", "add_rmsnorm"):
        inputs["w"] = (torch.rand(n, device="cuda", generator=g) + 0.5).to(dtype)
    if op == "layernorm":
        inputs["b"] = (torch.rand(n, device="cuda", generator=g) - 0.5).to(dtype)
    if op == "add_rmsnorm":
        inputs["r"] = torch.randn(m, n, device="cuda", dtype=dtype, generator=g)
    return inputs


def floor_bytes(op, m, n, dtype):
    e = torch.finfo(dtype).bits // 8
    rows = {"rmsnorm": 2, "layernorm": 2, "softmax": 2, "add_rmsnorm": 4}[op]
    cols = {"rmsnorm": 1, "layernorm": 2, "softmax": 0, "add_rmsnorm": 1}[op]
    return m * n * e * rows + n * e * cols


def reference(op, inp):
    """float64 outputs: y, and for add_rmsnorm also the sum as it is stored."""
    x = inp["x"].double()
    n = x.shape[-1]
    if op == "rmsnorm":
        return [F.rms_norm(x, (n,), inp["w"].double(), EPS)]
    if op == "layernorm":
        return [F.layer_norm(x, (n,), inp["w"].double(), inp["b"].double(), EPS)]
    if op == "softmax":
        return [torch.softmax(x, -1)]
    h = (inp["x"].float() + inp["r"].float()).to(inp["x"].dtype)
    return [F.rms_norm(h.double(), (n,), inp["w"].double(), EPS), h.double()]


def max_rel_err(outs, refs):
    """max |out - ref| / max |ref| over every output (max-norm relative error), a block of rows at a time: a
    float64 copy of a whole 4 GiB output did not fit beside the reference, and the first system timed at those
    shapes failed for it (2026-12-06-h100-s17-part*.csv: tmanorm out of memory, tmanorm_nopdl then timed)."""
    worst = 0.0
    for o, r in zip(outs, refs):
        step = max(1, (1 << 25) // max(1, o.shape[-1]))  # 256 MiB of float64 a block
        diff = peak = 0.0
        for i in range(0, o.shape[0], step):
            ob, rb = o[i:i + step].double(), r[i:i + step]
            if not torch.isfinite(ob).all():
                return float("inf")
            diff = max(diff, (ob - rb).abs().max().item())
            peak = max(peak, rb.abs().max().item())
        worst = max(worst, diff / max(peak, 1e-30))
    return worst


# ---- the systems -------------------------------------------------------------------------
# Each returns {op: fn(inputs) -> list of outputs} for the ops it offers, or raises with the
# reason it cannot run here. Weights are prepared per case (outside timing) where a system
# insists on another dtype.

def sys_tmanorm(pdl=None):
    """tmanorm as its users run it by default: PDL on where the GPU has it (sm_90+), as FlashInfer's
    norms do on Hopper; `tmanorm_nopdl` is the same with PDL off, reported beside it."""
    import tmanorm
    return {
        "rmsnorm": lambda i: [tmanorm.rms_norm(i["x"], i["w"], EPS, pdl=pdl)],
        "layernorm": lambda i: [tmanorm.layer_norm(i["x"], i["w"], i["b"], EPS, pdl=pdl)],
        "softmax": lambda i: [tmanorm.softmax(i["x"], pdl=pdl)],
        "add_rmsnorm": lambda i: list(tmanorm.add_rms_norm(i["x"], i["r"], i["w"], EPS, pdl=pdl)),
    }


def _eager_fns():
    def add_rms(i):
        h = i["x"] + i["r"]
        return [F.rms_norm(h, (h.shape[-1],), i["w"], EPS), h]
    return {
        "rmsnorm": lambda i: [F.rms_norm(i["x"], (i["x"].shape[-1],), i["w"], EPS)],
        "layernorm": lambda i: [F.layer_norm(i["x"], (i["x"].shape[-1],), i["w"], i["b"], EPS)],
        "softmax": lambda i: [torch.softmax(i["x"], -1)],
        "add_rmsnorm": add_rms,
    }


def sys_eager():
    return _eager_fns()


def sys_compile():
    """torch.compile of the eager functions: one compile per N, M marked dynamic."""
    compiled = {op: torch.compile(fn) for op, fn in _eager_fns().items()}

    def wrap(op):
        def run(i):
            torch._dynamo.mark_dynamic(i["x"], 0)
            if "r" in i:
                torch._dynamo.mark_dynamic(i["r"], 0)
            return compiled[op](i)
        return run
    return {op: wrap(op) for op in compiled}


def sys_quack():
    from quack.rmsnorm import layernorm_fwd, rmsnorm_fwd
    from quack.softmax import softmax_fwd
    return {
        "rmsnorm": lambda i: [rmsnorm_fwd(i["x"], i["w"], eps=EPS)[0]],
        # Quack's layernorm takes float32 weight and bias only.
        "layernorm": lambda i: [layernorm_fwd(i["x"], i["w32"], i["b32"], eps=EPS)],
        "softmax": lambda i: [softmax_fwd(i["x"])],
        "add_rmsnorm": lambda i: list(rmsnorm_fwd(i["x"], i["w"], residual=i["r"], eps=EPS)[:2]),
    }


def sys_liger():
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    return {
        "rmsnorm": lambda i: [LigerRMSNormFunction.apply(i["x"], i["w"], EPS)],
        "layernorm": lambda i: [LigerLayerNormFunction.apply(i["x"], i["w"], i["b"], EPS)],
        "softmax": lambda i: [LigerSoftmaxFunction.apply(i["x"])],
        "add_rmsnorm": lambda i: list(LigerFusedAddRMSNormFunction.apply(i["x"], i["r"], i["w"], EPS)),
    }


def sys_flashinfer():
    import flashinfer.norm as fn

    def fused_add(i):
        # In place: x becomes y and r becomes the sum; work on this case's own copies.
        x, r = i["x_scratch"], i["r_scratch"]
        fn.fused_add_rmsnorm(x, r, i["w"], EPS)
        return [x, r]
    return {
        "rmsnorm": lambda i: [fn.rmsnorm(i["x"], i["w"], EPS)],
        "layernorm": lambda i: [fn.layernorm(i["x"], i["w32"], i["b32"], EPS)],
        "add_rmsnorm": fused_add,
    }


def sys_nvfuser():
    try:
        import nvfuser  # noqa: F401
    except ImportError as e:
        raise RuntimeError("not installed: the one nvFuser wheel for CUDA 13 and CPython 3.12 "
                           "(nvfuser-cu130-torch210 0.2.36.dev20260301, 80 MB) is built against PyTorch 2.10 and fails "
                           "to import on the device's PyTorch 2.11 (an undefined c10 symbol); no build for 2.11 exists "
                           f"({type(e).__name__}: {e})") from e
    raise RuntimeError("nvfuser imported, but the harness has no nvFuser definitions yet")


SYSTEMS = {"tmanorm": sys_tmanorm, "tmanorm_nopdl": lambda: sys_tmanorm(pdl=False), "eager": sys_eager, "compile": sys_compile, "quack": sys_quack,
           "liger": sys_liger, "flashinfer": sys_flashinfer, "nvfuser": sys_nvfuser}


def prepare(system, inp):
    """Per-case extras some systems need, made outside timing."""
    inp = dict(inp)
    if system in ("quack", "flashinfer") and "w" in inp:
        inp["w32"] = inp["w"].float()
        if "b" in inp:
            inp["b32"] = inp["b"].float()
    if system == "flashinfer" and "r" in inp:
        inp["x_scratch"], inp["r_scratch"] = inp["x"].clone(), inp["r"].clone()
    return inp


# ---- timing ------------------------------------------------------------------------------

def graph_launches(nbytes, ceiling_gbs, graph_us=1000.0, most=20, least=4):
    """Launches a graph: 20, fewer where a launch takes long (a graph of about graph_us at the copy ceiling,
    at least 4): a launch of 250 us or more leaves launch overhead nothing to hide, and the largest shapes
    took most of a full sweep's device time at 20."""
    est_us = nbytes / (ceiling_gbs * 1e3)
    return max(least, min(most, math.ceil(graph_us / est_us)))


def graph_time(fn, sets, launches=20, replays=15, warmup=3):
    """Median µs per call of fn over CUDA-graph replays that rotate buffer sets, and the
    spread (max - min) of the per-replay figures."""
    launches = max(launches, len(sets)) // len(sets) * len(sets)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for s in sets:  # warm-up outside capture: compiles, autotuning, plan creation
            fn(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for k in range(launches):
            fn(sets[k % len(sets)])
    per = []
    for r in range(warmup + replays):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        graph.replay()
        e1.record()
        torch.cuda.synchronize()
        if r >= warmup:
            per.append(e0.elapsed_time(e1) * 1e3 / launches)
    per.sort()
    del graph
    return per[len(per) // 2], per[-1] - per[0]


def fail(row, e):
    """Records why a system failed a case (BENCH_DEBUG=1 prints the traceback)."""
    row["status"] = "failed: " + f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
    if os.environ.get("BENCH_DEBUG"):
        traceback.print_exc()


def copy_ceiling_gbs(nbytes=2**30):
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    per = []
    for r in range(18):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(5):
            dst.copy_(src)
        e1.record()
        torch.cuda.synchronize()
        if r >= 3:
            per.append(e0.elapsed_time(e1) * 1e3 / 5)
    per.sort()
    us = per[len(per) // 2]
    return 2 * nbytes / us / 1e3, us


# ---- the sweep ---------------------------------------------------------------------------

def parse_shapes(text):
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]


def parse_part(text):
    """--part K/P as (K, P), refused unless 1 <= K <= P (0/2 once ran a single case and looked like a half)."""
    try:
        k, p = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/P") from None
    if not 1 <= k <= p:
        raise argparse.ArgumentTypeError(f"{text!r}: K must be 1 to P")
    return k, p


def cases(args):
    shapes = parse_shapes(args.shapes) if args.shapes else (
        QUICK_SHAPES if args.quick else [(m, n) for m in FULL_M for n in FULL_N])
    out = []
    for op in args.ops.split(","):
        for dt in args.dtypes.split(","):
            for m, n in shapes:
                if m * n * torch.finfo(DTYPES[dt]).bits // 8 > 4 * 2**30:
                    continue  # the standard sweep skips tensors above 4 GiB
                out.append((op, dt, m, n))
    if args.part:
        k, parts = args.part
        out = out[k - 1::parts]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="3 x 3 shapes per op (default)")
    mode.add_argument("--full", action="store_true", help="the standard sweep of DESIGN.md")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--shapes", default="", help="MxN,MxN,... (overrides --quick/--full)")
    ap.add_argument("--part", default=None, type=parse_part,
                    help="K/P, K from 1 to P: every P-th case starting at the K-th (split --full over calls)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tag", default="h200")
    args = ap.parse_args()
    if not args.full:
        args.quick = True
    for op in args.ops.split(","):
        if op not in OPS:
            ap.error(f"unknown op {op}; one of {', '.join(OPS)}")
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{datetime.date.today().isoformat()}-{args.tag}.csv")
    new = not os.path.exists(path)
    f = open(path, "a", newline="")
    w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
    if new:
        w.writeheader()

    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}", flush=True)
    ceiling, copy_us = copy_ceiling_gbs()
    print(f"copy ceiling: {ceiling:.0f} GB/s (1 GiB copy_, read + write, {copy_us:.1f} us)", flush=True)
    w.writerow({"op": "copy", "dtype": "u8", "M": 1, "N": 2**30, "system": "copy", "us": f"{copy_us:.3f}",
                "gbs": f"{ceiling:.1f}", "pct_ceiling": "100.0", "max_rel_err": "0", "us_repeat": "",
                "spread_us": "", "buffer_sets": 1, "status": "ceiling"})

    systems = {}
    for name in args.systems.split(","):
        try:
            systems[name] = SYSTEMS[name]()
            print(f"system {name}: available", flush=True)
        except Exception as e:  # the exact reason goes into the results
            reason = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
            systems[name] = reason
            print(f"system {name}: unavailable: {reason}", flush=True)
            w.writerow({"op": "*", "dtype": "*", "M": "", "N": "", "system": name, "us": "", "gbs": "",
                        "pct_ceiling": "", "max_rel_err": "", "us_repeat": "", "spread_us": "",
                        "buffer_sets": "", "status": f"unavailable: {reason}"})
    f.flush()

    todo = cases(args)
    t_start = time.time()
    for k, (op, dt, m, n) in enumerate(todo, 1):
        dtype = DTYPES[dt]
        nbytes = floor_bytes(op, m, n, dtype)
        nsets = max(1, min(32, math.ceil(4 * L2_BYTES / nbytes)))
        launches = graph_launches(nbytes, ceiling)
        base = [make_inputs(op, m, n, dtype, seed=1000 * k + s) for s in range(nsets)]
        refs = reference(op, base[0])
        torch.cuda.empty_cache()  # the reference's float64 temporaries, before the systems allocate
        rows, timed = {}, {}
        # Two passes over the systems, the faster of each system's two reported: the first timing after a large
        # case (or the copy ceiling) came out slower (H100: tmanorm rmsnorm 1 x 1024 1.30 us first in a run,
        # 1.10 later, bench/results/2026-12-05-h100-first-case.log), which charged whichever system was timed
        # first, and now and then a whole pass is disturbed (tmanorm_nopdl add_rmsnorm 1 x 512: 5.76 us against
        # 1.67, bench/results/2026-12-05-h100-twopass.csv).
        for name, impl in systems.items():
            if isinstance(impl, str):
                continue
            rows[name] = row = {"op": op, "dtype": dt, "M": m, "N": n, "system": name, "buffer_sets": nsets}
            if op not in impl:
                row["status"] = f"not offered: {name} has no {op}"
                continue
            sets = None
            try:
                sets = [prepare(name, s) for s in base]
                err = max_rel_err(impl[op](sets[0]), refs)
                timed[name] = (err, graph_time(impl[op], sets, launches))
            except Exception as e:
                fail(row, e)
            del sets  # a system's extras (flashinfer's scratch copies) are made again for its second pass
            torch.cuda.empty_cache()
        # The second pass runs the systems in the reverse order, so each has one early and one late place
        # (session 12, H100: in one of the two passes the systems timed late ran 2-4% faster at 268 MB
        # shapes, while tmanorm, always first, never did: us against us_repeat in 2026-12-05-h100-s12-part*.csv).
        line = {}
        for name, row in reversed(list(rows.items())):
            if name not in timed:
                line[name] = f"{name} failed" if row["status"].startswith("failed") else f"{name} -"
                continue
            err, (us1, spread1) = timed.pop(name)
            sets = None
            try:
                sets = [prepare(name, s) for s in base]
                us, spread = graph_time(systems[name][op], sets, launches)
                us, us1 = min(us, us1), max(us, us1)  # the faster pass: a disturbed one does not count
                gbs = nbytes / us / 1e3
                ok = err <= TOLERANCE[dtype]
                row.update(us=f"{us:.3f}", gbs=f"{gbs:.1f}", pct_ceiling=f"{100 * gbs / ceiling:.1f}",
                           max_rel_err=f"{err:.3e}", us_repeat=f"{us1:.3f}", spread_us=f"{max(spread, spread1):.3f}",
                           status="ok" if ok else f"inaccurate: max rel err {err:.2e} > {TOLERANCE[dtype]:.0e}")
                line[name] = f"{name} {us:.1f}us{'' if ok else '(!)'}"
            except Exception as e:
                fail(row, e)
                line[name] = f"{name} failed"
            del sets
            torch.cuda.empty_cache()
        for row in rows.values():
            w.writerow(row)
        f.flush()
        progress = ", ".join(line[name] for name in rows)  # in the first pass's order
        print(f"[{k}/{len(todo)} {time.time() - t_start:5.0f}s] {op} {dt} {m}x{n}: {progress}", flush=True)
        del base, refs
    f.close()
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
