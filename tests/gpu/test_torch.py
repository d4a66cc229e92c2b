"""GPU tier for the Python binding: each built-in against PyTorch on CUDA
tensors (odd shapes, strided rows, every dtype), every mixed-dtype combination
the binding accepts (x, weight and out_dtype, f8 outputs on sm_89+) against a
float64 reference, the combinations and layouts it refuses (each error naming
the tensor), empty batches, size-1 dimensions with odd strides; the torch ops'
API: F-style arguments with weight/bias None and eps None, out= (padded, f8,
over an input), the in-place fused_add_rms_norm_, the older call forms,
torch.compile(fullgraph=True) against eager (aot_eager, inductor, inductor
with CUDA graphs), CUDA graph capture and replay, requires_grad refused; the
plans made for 1000 row counts at one N (reported, not judged); and rmsnorm
timed against torch's F.rms_norm in CUDA graphs at one shape.
Run on the device: python3 tests/gpu/test_torch.py [--sanitize | --api]"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import tmanorm  # noqa: E402
from compare import copy_ceiling_gbs, graph_time  # noqa: E402  (the benchmark's own timing)

passed = failed = 0
DTYPES = (torch.bfloat16, torch.float16, torch.float32)
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}  # relative, by output dtype
F8 = getattr(torch, "float8_e4m3fn", None)
F8_MAX = 448.0


def report(ok, what):
    global passed, failed
    passed += ok
    failed += not ok
    print(("PASS " if ok else "FAIL ") + what, flush=True)


def rel_err(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def has_f8():
    return F8 is not None and torch.cuda.get_device_capability() >= (8, 9)


def f8_err(got, want):
    """got (float8_e4m3fn) against the float64 want rounded through e4m3 (saturated at +-448, as
    tmanorm stores): the worst |got - want8| over the allowance of one e4m3 ulp (relative 2^-3,
    and 2^-9, the subnormal step, near zero); above 1 fails. inf when got holds a NaN."""
    g = got.float().double()
    if torch.isnan(g).any():
        return float("inf")
    w8 = want.double().clamp(-F8_MAX, F8_MAX).float().to(F8).float().double()
    allowed = (w8.abs() * 2.0**-3).clamp_min(2.0**-9)
    return ((g - w8).abs() / allowed).max().item() if g.numel() else 0.0


def check_out(got, want, dt, what):
    """Reports got (expected dtype dt) against the float64 want, with the tolerance of dt."""
    if got.dtype != dt or tuple(got.shape) != tuple(want.shape):
        report(False, f"{what}: got {got.dtype} {tuple(got.shape)}, want {dt} {tuple(want.shape)}")
    elif dt == F8:
        e = f8_err(got, want)
        report(e <= 1.0, f"{what} f8 error / 1 ulp {e:.2f}")
    else:
        e = rel_err(got, want)
        report(e < TOL[dt], f"{what} rel err {e:.2e}")


def expect_refusal(what, fn, kinds, needles):
    """fn() must raise one of kinds, before launching, with every needle (the tensor's name) in the message."""
    try:
        fn()
    except kinds as e:
        missing = [n for n in needles if n not in str(e)]
        report(not missing, f"refused {what}: {type(e).__name__}: {e}" + (f" (missing {missing})" if missing else ""))
        return
    except Exception as e:  # noqa: BLE001 - any other error is a failure, reported
        report(False, f"refused {what}: wrong error {type(e).__name__}: {e}")
        return
    report(False, f"refused {what}: nothing raised")


def check_ops():
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for rows, cols in ((1, 7), (3, 1000), (1000, 4097), (257, 4096), (8, 65537)):
            x = torch.randn(rows, cols, device="cuda", dtype=dt)
            r = torch.randn(rows, cols, device="cuda", dtype=dt)
            w = torch.rand(cols, device="cuda", dtype=dt) + 0.5
            b = torch.randn(cols, device="cuda", dtype=dt)
            x64, w64 = x.double(), w.double()
            cases = {
                "rms_norm": (tmanorm.rms_norm(x, (cols,), w, 1e-6), F.rms_norm(x64, (cols,), w64, 1e-6)),
                "layer_norm": (tmanorm.layer_norm(x, (cols,), w, b, 1e-5),
                               F.layer_norm(x64, (cols,), w64, b.double(), 1e-5)),
                "softmax": (tmanorm.softmax(x, -1), torch.softmax(x64, -1)),
            }
            y, h = tmanorm.add_rms_norm(x, r, w, 1e-6)
            h_ref = (x.float() + r.float()).to(dt)
            cases["add_rms_norm"] = (y, F.rms_norm(h_ref.double(), (cols,), w64, 1e-6))
            cases["add_rms_norm.sum"] = (h, h_ref)
            for name, (got, want) in cases.items():
                e = rel_err(got, want)
                report(e < tol[dt] and got.dtype == dt, f"{name} {dt} [{rows}, {cols}] rel err {e:.2e}")
    # Strided rows (a slice of a wider tensor) and 3-D inputs.
    base = torch.randn(64, 5000, device="cuda", dtype=torch.bfloat16)
    x = base[:, :4096]
    w = torch.rand(4096, device="cuda", dtype=torch.bfloat16) + 0.5
    e = rel_err(tmanorm.rms_norm(x, w), F.rms_norm(x.double(), (4096,), w.double(), 1e-6))
    report(e < 1e-2, f"rms_norm strided rows (stride 5000) rel err {e:.2e}")
    x3 = torch.randn(4, 16, 1024, device="cuda", dtype=torch.bfloat16)
    w3 = torch.rand(1024, device="cuda", dtype=torch.bfloat16)
    e = rel_err(tmanorm.rms_norm(x3, w3), F.rms_norm(x3.double(), (1024,), w3.double(), 1e-6))
    report(e < 1e-2, f"rms_norm 3-D input rel err {e:.2e}")
    # PDL on and off (per call): the same bits; the tma-ws plan (softmax rows of 64 KiB) too.
    for rows, cols in ((64, 4096), (1024, 32768)):
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(cols, device="cuda", dtype=torch.bfloat16) + 0.5
        same = torch.equal(tmanorm.rms_norm(x, w, pdl=False), tmanorm.rms_norm(x, w)) and torch.equal(
            tmanorm.softmax(x, pdl=False), tmanorm.softmax(x))
        report(same, f"pdl=False and the default give the same bits [{rows}, {cols}]")
    e = rel_err(tmanorm.softmax(x), torch.softmax(x.double(), -1))
    report(e < 1e-2, f"softmax [1024, 32768] (tma-ws) rel err {e:.2e}")


def check_errors():
    w = torch.ones(64, device="cuda", dtype=torch.bfloat16)
    for what, fn, kind in (
        ("CPU tensor", lambda: tmanorm.rms_norm(torch.ones(4, 64, dtype=torch.bfloat16), w), ValueError),
        ("wrong dtype", lambda: tmanorm.rms_norm(torch.ones(4, 64, device="cuda", dtype=torch.int32), w), TypeError),
        ("non-contiguous last dim", lambda: tmanorm.rms_norm(torch.ones(64, 4, device="cuda", dtype=torch.bfloat16).t(), w), ValueError),
        ("weight of another size", lambda: tmanorm.rms_norm(torch.ones(4, 32, device="cuda", dtype=torch.bfloat16), w), ValueError),
    ):
        try:
            fn()
            report(False, f"error for {what}: none raised")
        except kind as e:
            report(True, f"error for {what}: {e}")


def check_mixed_dtypes():
    """Every combination the binding accepts: x and weight (bias = weight, residual = x) in any of
    bf16, f16, f32, out_dtype None (x's), f32, bf16 or f8 (sm_89+), against float64 PyTorch."""
    outs = [None, torch.float32, torch.bfloat16] + ([F8] if has_f8() else [])
    for rows, cols in ((33, 1000), (5, 4097)):
        for xd in DTYPES:
            x = torch.randn(rows, cols, device="cuda", dtype=xd)
            r = torch.randn(rows, cols, device="cuda", dtype=xd)
            x64 = x.double()
            h_ref = (x.float() + r.float()).to(xd)  # the sum as stored: rounded to x's dtype
            for out in outs:
                od = xd if out is None else out
                tag = f"x {xd} out {out} [{rows}, {cols}]"
                check_out(tmanorm.softmax(x, out_dtype=out), torch.softmax(x64, -1), od, f"mixed softmax {tag}")
            for wd in DTYPES:
                w = (torch.rand(cols, device="cuda") + 0.5).to(wd)
                b = torch.randn(cols, device="cuda").to(wd)
                w64, b64 = w.double(), b.double()
                for out in outs:
                    od = xd if out is None else out
                    tag = f"x {xd} w {wd} out {out} [{rows}, {cols}]"
                    check_out(tmanorm.rms_norm(x, w, 1e-6, out_dtype=out), F.rms_norm(x64, (cols,), w64, 1e-6),
                              od, f"mixed rms_norm {tag}")
                    check_out(tmanorm.layer_norm(x, w, b, 1e-5, out_dtype=out),
                              F.layer_norm(x64, (cols,), w64, b64, 1e-5), od, f"mixed layer_norm {tag}")
                    y, h = tmanorm.add_rms_norm(x, r, w, 1e-6, out_dtype=out)
                    check_out(y, F.rms_norm(h_ref.double(), (cols,), w64, 1e-6), od, f"mixed add_rms_norm {tag}")
                    check_out(h, h_ref.double(), xd, f"mixed add_rms_norm.sum {tag}")


def check_f8_saturation():
    """f8 outputs saturate at +-448 (no NaN, no inf); without sm_89 the library refuses them."""
    if F8 is None:
        report(True, "f8 outputs: this torch has no float8_e4m3fn; skipped")
        return
    x = torch.randn(16, 1000, device="cuda", dtype=torch.bfloat16)
    w = torch.full((1000,), 300.0, device="cuda", dtype=torch.float32)
    if not has_f8():
        expect_refusal("f8 output below sm_89", lambda: tmanorm.rms_norm(x, w, out_dtype=F8),
                       (tmanorm.TmanormError,), ["sm_89"])
        return
    y = tmanorm.rms_norm(x, w, out_dtype=F8)
    want = F.rms_norm(x.double(), (1000,), w.double(), 1e-6)
    check_out(y, want, F8, "f8 saturation rms_norm |y| up to ~1200")
    top = y.float().abs().max().item()
    report(top == F8_MAX, f"f8 saturation: max |y| = {top} (want {F8_MAX})")


def check_refused_combinations():
    """Combinations the built-ins cannot take are refused before launching, naming the tensor."""
    n = 64
    x = torch.randn(4, n, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(n, device="cuda", dtype=torch.bfloat16)
    w32 = torch.ones(n, device="cuda", dtype=torch.float32)
    b32 = torch.zeros(n, device="cuda", dtype=torch.float32)
    r16 = torch.randn(4, n, device="cuda", dtype=torch.float16)
    cases = [
        ("bias f32 with weight bf16", lambda: tmanorm.layer_norm(x, w, b32), (ValueError, TypeError), ["bias", "weight"]),
        ("bias bf16 with weight f32", lambda: tmanorm.layer_norm(x, w32, w), (ValueError, TypeError), ["bias"]),
        ("residual f16 with x bf16", lambda: tmanorm.add_rms_norm(x, r16, w), (ValueError, TypeError), ["residual"]),
        ("residual of another shape", lambda: tmanorm.add_rms_norm(x, x.view(2, 2, n), w), (ValueError,), ["residual"]),
        ("residual on the CPU", lambda: tmanorm.add_rms_norm(x, x.cpu(), w), (ValueError,), ["residual"]),
        ("weight on the CPU", lambda: tmanorm.rms_norm(x, w.cpu()), (ValueError,), ["weight"]),
        ("weight 2-D", lambda: tmanorm.rms_norm(x, w.view(1, n)), (ValueError,), ["weight"]),
        ("weight strided", lambda: tmanorm.rms_norm(x, torch.ones(2 * n, device="cuda", dtype=torch.bfloat16)[::2]),
         (ValueError,), ["weight"]),
        ("out_dtype int8", lambda: tmanorm.rms_norm(x, w, out_dtype=torch.int8), (TypeError,), ["out_dtype"]),
        ("out_dtype float64", lambda: tmanorm.softmax(x, out_dtype=torch.float64), (TypeError,), ["out_dtype"]),
    ]
    if F8 is not None:
        x8 = x.to(F8)
        cases += [
            ("f8 x", lambda: tmanorm.rms_norm(x8, w), (TypeError,), ["x"]),
            ("f8 x, softmax", lambda: tmanorm.softmax(x8), (TypeError,), ["x"]),
            ("f8 weight", lambda: tmanorm.rms_norm(x, w.to(F8)), (TypeError,), ["weight"]),
            ("f8 bias", lambda: tmanorm.layer_norm(x, w, w.to(F8)), (TypeError,), ["bias"]),
            ("f8 residual", lambda: tmanorm.add_rms_norm(x, x8, w), (TypeError,), ["residual"]),
        ]
    e5m2 = getattr(torch, "float8_e5m2", None)
    if e5m2 is not None:
        cases.append(("out_dtype float8_e5m2", lambda: tmanorm.rms_norm(x, w, out_dtype=e5m2), (TypeError,),
                      ["out_dtype"]))
    if torch.cuda.device_count() >= 2:
        w1 = w.to("cuda:1")
        cases += [
            ("weight on cuda:1, x on cuda:0", lambda: tmanorm.rms_norm(x, w1), (ValueError,), ["weight", "cuda:1"]),
            ("bias on cuda:1", lambda: tmanorm.layer_norm(x, w, w1), (ValueError,), ["bias", "cuda:1"]),
            ("residual on cuda:1", lambda: tmanorm.add_rms_norm(x, x.to("cuda:1"), w), (ValueError,), ["residual"]),
        ]
    for what, fn, kinds, needles in cases:
        expect_refusal(what, fn, kinds, needles)


def check_broadcast_refused():
    """Broadcast (row stride 0) and overlapping rows are refused, not read as row stride N."""
    n = 64
    w = torch.ones(n, device="cuda", dtype=torch.bfloat16)
    row = torch.randn(1, n, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(8, n, device="cuda", dtype=torch.bfloat16)
    flat = torch.randn(100, device="cuda", dtype=torch.bfloat16)
    cases = [
        ("x expanded (row stride 0)", lambda: tmanorm.rms_norm(row.expand(8, n), w), ["x", "broadcast"]),
        ("x expanded, softmax", lambda: tmanorm.softmax(row.expand(8, n)), ["x", "broadcast"]),
        ("x overlapping (row stride 8 < 64)", lambda: tmanorm.rms_norm(flat.as_strided((4, n), (8, 1)), w),
         ["x", "overlapping"]),
        ("x expanded along an outer dim", lambda: tmanorm.rms_norm(x.view(1, 8, n).expand(3, 8, n), w), ["x", "broadcast"]),
        ("residual expanded", lambda: tmanorm.add_rms_norm(x, row.expand(8, n), w), ["residual", "broadcast"]),
    ]
    for what, fn, needles in cases:
        expect_refusal(what, fn, (ValueError,), needles)
    # One row may have any row stride (here 0): no step between rows is ever taken.
    one = row.as_strided((1, n), (0, 1))
    y = tmanorm.rms_norm(one, w)
    e = rel_err(y, F.rms_norm(row.double(), (n,), w.double(), 1e-6))
    report(e < TOL[torch.bfloat16], f"one row of row stride {one.stride(0)} accepted, rel err {e:.2e}")


def check_empty_batch():
    """M = 0: empty outputs of the right shape and dtype, nothing launched."""
    n = 64
    w = torch.ones(n, device="cuda", dtype=torch.float32)
    for shape in ((0, n), (2, 0, n)):
        x = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
        outs = {
            "rms_norm": (tmanorm.rms_norm(x, w), torch.bfloat16),
            "layer_norm out f32": (tmanorm.layer_norm(x, w, w, out_dtype=torch.float32), torch.float32),
            "softmax": (tmanorm.softmax(x), torch.bfloat16),
        }
        y, h = tmanorm.add_rms_norm(x, torch.empty_like(x), w, out_dtype=torch.float32)
        outs["add_rms_norm y"], outs["add_rms_norm sum"] = (y, torch.float32), (h, torch.bfloat16)
        if has_f8():
            outs["rms_norm out f8"] = (tmanorm.rms_norm(x, w, out_dtype=F8), F8)
        for name, (got, dt) in outs.items():
            ok = tuple(got.shape) == shape and got.dtype == dt and got.is_cuda
            report(ok, f"empty batch {name} {shape}: {tuple(got.shape)} {got.dtype}")
    torch.cuda.synchronize()


def check_size_one_dims():
    """A size-1 dimension with an odd stride (PyTorch allows any) takes no step and is accepted."""
    for cols in (1000, 4097):
        for pad in (0, 16):
            rs = cols + pad
            base = torch.randn(2 * rs, device="cuda", dtype=torch.bfloat16)
            x = base.as_strided((2, 1, cols), (rs, 7, 1))
            r = torch.randn(2, 1, cols, device="cuda", dtype=torch.bfloat16)
            w = torch.rand(cols, device="cuda", dtype=torch.bfloat16) + 0.5
            b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
            x64, w64 = x.double(), w.double()
            tag = f"(2, 1, {cols}) strides ({rs}, 7, 1)"
            check_out(tmanorm.rms_norm(x, w), F.rms_norm(x64, (cols,), w64, 1e-6), torch.bfloat16, f"rms_norm {tag}")
            check_out(tmanorm.layer_norm(x, w, b), F.layer_norm(x64, (cols,), w64, b.double(), 1e-5),
                      torch.bfloat16, f"layer_norm {tag}")
            check_out(tmanorm.softmax(x), torch.softmax(x64, -1), torch.bfloat16, f"softmax {tag}")
            y, h = tmanorm.add_rms_norm(x, r, w)
            h_ref = (x.float() + r.float()).to(torch.bfloat16)
            check_out(y, F.rms_norm(h_ref.double(), (cols,), w64, 1e-6), torch.bfloat16, f"add_rms_norm {tag}")
            check_out(h, h_ref.double(), torch.bfloat16, f"add_rms_norm.sum {tag}")


# ---- the torch ops' API ----------------------------------------------------------------

def check_new_api():
    """F-style arguments: normalized_shape, weight and bias None (ones, zeros), eps None
    (torch.finfo(torch.float32).eps, as F.rms_norm), softmax's dim, against float64 PyTorch."""
    for dt in DTYPES:
        for shape in ((3, 1000), (257, 4096), (2, 5, 4097)):
            cols = shape[-1]
            x = torch.randn(shape, device="cuda", dtype=dt)
            r = torch.randn(shape, device="cuda", dtype=dt)
            w = torch.rand(cols, device="cuda", dtype=dt) + 0.5
            b = torch.randn(cols, device="cuda", dtype=dt)
            x64, w64, b64 = x.double(), w.double(), b.double()
            eps = torch.finfo(torch.float32).eps  # F.rms_norm's for f16, bf16, f32 (it computes in f32)
            tag = f"{dt} {shape}"
            h_ref = (x.float() + r.float()).to(dt)
            cases = [
                ("rms_norm(x)", tmanorm.rms_norm(x), F.rms_norm(x64, (cols,), None, eps)),
                ("rms_norm(x, (N,), w)", tmanorm.rms_norm(x, (cols,), w), F.rms_norm(x64, (cols,), w64, eps)),
                ("rms_norm(x, N, None, 1e-5)", tmanorm.rms_norm(x, cols, None, 1e-5),
                 F.rms_norm(x64, (cols,), None, 1e-5)),
                ("layer_norm(x)", tmanorm.layer_norm(x), F.layer_norm(x64, (cols,))),
                ("layer_norm(x, (N,), w)", tmanorm.layer_norm(x, (cols,), w), F.layer_norm(x64, (cols,), w64)),
                ("layer_norm(x, None, None, b)", tmanorm.layer_norm(x, None, None, b),
                 F.layer_norm(x64, (cols,), None, b64)),
                ("softmax(x, dim=last)", tmanorm.softmax(x, x.dim() - 1), torch.softmax(x64, -1)),
                ("add_rms_norm(x, r) y", tmanorm.add_rms_norm(x, r)[0],
                 F.rms_norm(h_ref.double(), (cols,), None, 1e-6)),
                ("add_rms_norm(x, r) sum", tmanorm.add_rms_norm(x, r)[1], h_ref.double()),
            ]
            for what, got, want in cases:
                check_out(got, want, dt, f"{what} {tag}")
    # weight None with f8 and f32 outputs; the ones stand-in made once per (N, dtype, device)
    x = torch.randn(33, 1000, device="cuda", dtype=torch.bfloat16)
    want = F.rms_norm(x.double(), (1000,), None, 1e-6)
    check_out(tmanorm.rms_norm(x, None, None, 1e-6, out_dtype=torch.float32), want, torch.float32,
              "rms_norm weight=None out_dtype f32")
    if has_f8():
        check_out(tmanorm.rms_norm(x, None, None, 1e-6, out_dtype=F8), want, F8, "rms_norm weight=None out_dtype f8")
        check_out(tmanorm.layer_norm(x, out_dtype=F8), F.layer_norm(x.double(), (1000,)), F8,
                  "layer_norm weight=bias=None out_dtype f8")
        check_out(tmanorm.softmax(x, out_dtype=F8), torch.softmax(x.double(), -1), F8, "softmax out_dtype f8")
    # Refused arguments, on CUDA tensors.
    w = torch.ones(1000, device="cuda", dtype=torch.bfloat16)
    for what, fn, kinds, needles in (
        ("normalized_shape of two dims", lambda: tmanorm.rms_norm(x, (33, 1000), w), (ValueError,),
         ["normalized_shape", "last dimension only"]),
        ("normalized_shape not N", lambda: tmanorm.layer_norm(x, (999,)), (ValueError,), ["normalized_shape"]),
        ("softmax dim 0", lambda: tmanorm.softmax(x, 0), (ValueError,), ["dim 0", "last dimension"]),
    ):
        expect_refusal(what, fn, kinds, needles)


def check_older_forms():
    """The 0.1 calls (bench/compare.py's): rms_norm(x, w, eps), layer_norm(x, w, b, eps), softmax(x,
    out_dtype), bit-identical to the F-style ones; rms_norm(x, w) keeps eps 1e-6."""
    x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(4096, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    pairs = {
        "rms_norm(x, w, 1e-5)": (tmanorm.rms_norm(x, w, 1e-5), tmanorm.rms_norm(x, None, w, 1e-5)),
        "rms_norm(x, w)": (tmanorm.rms_norm(x, w), tmanorm.rms_norm(x, None, w, 1e-6)),
        "rms_norm(x, w, eps=1e-3, pdl=False)": (tmanorm.rms_norm(x, w, eps=1e-3, pdl=False),
                                                tmanorm.rms_norm(x, None, w, 1e-3, pdl=False)),
        "layer_norm(x, w, b, 1e-3)": (tmanorm.layer_norm(x, w, b, 1e-3), tmanorm.layer_norm(x, None, w, b, 1e-3)),
        "layer_norm(x, w, b)": (tmanorm.layer_norm(x, w, b), tmanorm.layer_norm(x, None, w, b, 1e-5)),
        "softmax(x, torch.float32)": (tmanorm.softmax(x, torch.float32), tmanorm.softmax(x, out_dtype=torch.float32)),
    }
    for what, (old, new) in pairs.items():
        report(torch.equal(old, new), f"older form {what} equals the F-style call")


def check_out_param():
    """out=: the tensor given comes back, written; padded rows keep their padding; f8 out=; out=
    over an input (written through fresh tensors, copied in); the checks on out."""
    n, rows, dt = 4096, 64, torch.bfloat16
    x = torch.randn(rows, n, device="cuda", dtype=dt)
    r = torch.randn(rows, n, device="cuda", dtype=dt)
    w = torch.rand(n, device="cuda", dtype=dt) + 0.5
    want = F.rms_norm(x.double(), (n,), w.double(), 1e-6)
    o = torch.empty_like(x)
    report(tmanorm.rms_norm(x, None, w, 1e-6, out=o) is o, "rms_norm out= returns the tensor given")
    check_out(o, want, dt, "rms_norm out=")
    base = torch.full((rows, n + 64), 7.0, device="cuda", dtype=dt)
    tmanorm.rms_norm(x, None, w, 1e-6, out=base[:, :n])
    check_out(base[:, :n], want, dt, "rms_norm out= padded rows")
    report(bool((base[:, n:] == 7).all()), "rms_norm out= padded rows: the padding untouched")
    o32 = torch.empty(rows, n, device="cuda", dtype=torch.float32)
    tmanorm.layer_norm(x, None, w, None, out=o32)
    check_out(o32, F.layer_norm(x.double(), (n,), w.double()), torch.float32, "layer_norm out= f32")
    s = torch.empty_like(x)
    tmanorm.softmax(x, out=s)
    check_out(s, torch.softmax(x.double(), -1), dt, "softmax out=")
    if has_f8():
        o8 = torch.empty(rows, n, device="cuda", dtype=F8)
        tmanorm.rms_norm(x, None, w, 1e-6, out=o8)
        check_out(o8, want, F8, "rms_norm out= f8")
    xc = x.clone()
    tmanorm.rms_norm(xc, None, w, 1e-6, out=xc)
    check_out(xc, want, dt, "rms_norm out=x (in place through out=)")
    h_ref = (x.float() + r.float()).to(dt)
    rc, y = r.clone(), torch.empty_like(x)
    got = tmanorm.add_rms_norm(x, rc, w, 1e-6, out=(y, rc))
    report(got[0] is y and got[1] is rc, "add_rms_norm out= returns the pair given")
    check_out(y, F.rms_norm(h_ref.double(), (n,), w.double(), 1e-6), dt, "add_rms_norm out=(y, residual) y")
    check_out(rc, h_ref.double(), dt, "add_rms_norm out=(y, residual) sum in residual")
    for what, fn, kinds, needles in (
        ("out= of another shape", lambda: tmanorm.rms_norm(x, out=torch.empty(rows, n - 1, device="cuda", dtype=dt)),
         (ValueError,), ["out= y", "shape"]),
        ("out= int8", lambda: tmanorm.rms_norm(x, out=torch.empty(rows, n, device="cuda", dtype=torch.int8)),
         (TypeError,), ["out= y", "torch.int8"]),
        ("out= on the CPU", lambda: tmanorm.softmax(x, out=torch.empty(rows, n, dtype=dt)), (ValueError,), ["out= y"]),
        ("out= transposed", lambda: tmanorm.softmax(x, out=torch.empty(n, rows, device="cuda", dtype=dt).t()),
         (ValueError,), ["out= y", "not contiguous"]),
        ("out= and another out_dtype", lambda: tmanorm.rms_norm(x, out=o, out_dtype=torch.float32), (TypeError,),
         ["out_dtype"]),
        ("add_rms_norm out= sum in f32", lambda: tmanorm.add_rms_norm(x, r, w, out=(y, o32)), (TypeError,),
         ["out= sum"]),
        ("add_rms_norm out= overlapping each other", lambda: tmanorm.add_rms_norm(x, r, w, out=(y, y)), (ValueError,),
         ["overlap each other"]),
    ):
        expect_refusal(what, fn, kinds, needles)


def check_fused_in_place():
    """fused_add_rms_norm_(x, residual, w): residual <- x + residual, x <- rms_norm(residual) * w,
    in place (the same storage), bit-identical to add_rms_norm."""
    for dt in DTYPES:
        for shape, wd in (((7, 1000), dt), ((2, 64, 4096), torch.float32), ((1, 65537), dt), ((300, 8192), None)):
            cols = shape[-1]
            x = torch.randn(shape, device="cuda", dtype=dt)
            r = torch.randn(shape, device="cuda", dtype=dt)
            w = None if wd is None else (torch.rand(cols, device="cuda") + 0.5).to(wd)
            h_ref = (x.float() + r.float()).to(dt)
            y_ref = F.rms_norm(h_ref.double(), (cols,), None if w is None else w.double(), 1e-6)
            xi, ri = x.clone(), r.clone()
            ptrs = (xi.data_ptr(), ri.data_ptr())
            got = tmanorm.fused_add_rms_norm_(xi, ri, w, 1e-6)
            tag = f"{dt} {shape} weight {wd}"
            report(got[0] is xi and got[1] is ri and (xi.data_ptr(), ri.data_ptr()) == ptrs,
                   f"fused_add_rms_norm_ {tag}: returns (x, residual), same storage")
            check_out(xi, y_ref, dt, f"fused_add_rms_norm_ {tag}: y in x")
            check_out(ri, h_ref.double(), dt, f"fused_add_rms_norm_ {tag}: sum in residual")
            y, h = tmanorm.add_rms_norm(x, r, w, 1e-6)
            report(torch.equal(y, xi) and torch.equal(h, ri), f"fused_add_rms_norm_ {tag}: the bits of add_rms_norm")
    # A view with padded rows: only the view is written.
    base = torch.randn(16, 1100, device="cuda", dtype=torch.bfloat16)
    rbase = torch.randn(16, 1100, device="cuda", dtype=torch.bfloat16)
    keep, rkeep = base[:, 1000:].clone(), rbase[:, 1000:].clone()
    xv, rv = base[:, :1000], rbase[:, :1000]
    y, h = tmanorm.add_rms_norm(xv, rv)
    tmanorm.fused_add_rms_norm_(xv, rv)
    report(torch.equal(xv, y) and torch.equal(rv, h) and torch.equal(base[:, 1000:], keep)
           and torch.equal(rbase[:, 1000:], rkeep), "fused_add_rms_norm_ on padded views: the padding untouched")


def check_empty_batch_api():
    """M = 0 through the new arguments: weight None, out=, f8, the in-place variant."""
    n = 64
    for shape in ((0, n), (3, 0, n)):
        x = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
        o = torch.empty(shape, device="cuda", dtype=torch.float32)
        ok = tmanorm.rms_norm(x).shape == shape and tmanorm.layer_norm(x, out=o) is o
        ok = ok and tmanorm.softmax(x, -1, out_dtype=F8 if has_f8() else None).shape == shape
        r = torch.empty_like(x)
        ok = ok and tmanorm.fused_add_rms_norm_(x, r) == (x, r)
        y, h = tmanorm.add_rms_norm(x, r, None, out=(torch.empty_like(x), torch.empty_like(x)))
        report(ok and y.shape == h.shape == shape, f"empty batch {shape}: weight None, out=, f8, in place")
    torch.cuda.synchronize()


def check_requires_grad():
    """Inputs that require grad (grad mode on) are refused, eager and compiled; under no_grad,
    inference_mode or detached they are taken (a Parameter as the weight included)."""
    x = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)
    xg = x.clone().requires_grad_(True)
    wg = torch.nn.Parameter(torch.rand(256, device="cuda", dtype=torch.bfloat16) + 0.5)
    cases = [
        ("rms_norm x", lambda: tmanorm.rms_norm(xg)),
        ("rms_norm weight (a Parameter)", lambda: tmanorm.rms_norm(x, None, wg)),
        ("layer_norm bias", lambda: tmanorm.layer_norm(x, None, None, wg)),
        ("softmax", lambda: tmanorm.softmax(xg)),
        ("add_rms_norm residual", lambda: tmanorm.add_rms_norm(x, xg)),
        ("fused_add_rms_norm_ weight", lambda: tmanorm.fused_add_rms_norm_(x.clone(), x.clone(), wg)),
        ("out=", lambda: tmanorm.rms_norm(xg, out=torch.empty_like(x))),
        ("torch.ops.tmanorm.rms_norm", lambda: torch.ops.tmanorm.rms_norm(xg, None, 1e-6, None, None)),
        ("compiled rms_norm (aot_eager)",
         lambda: torch.compile(lambda a, w: tmanorm.rms_norm(a, None, w), backend="aot_eager", fullgraph=True)(x, wg)),
        ("compiled layer_norm (inductor)",
         lambda: torch.compile(lambda a: tmanorm.layer_norm(a), fullgraph=True)(xg)),
    ]
    for what, fn in cases:
        torch._dynamo.reset()
        expect_refusal(f"requires_grad: {what}", fn, (RuntimeError,), ["has no backward yet"])
    torch._dynamo.reset()
    expect_refusal("requires_grad: compiled fused_add_rms_norm_",
                   lambda: torch.compile(lambda a, b, w: tmanorm.fused_add_rms_norm_(a, b, w), fullgraph=True)(
                       x.clone(), x.clone(), wg), (RuntimeError,), [])
    want = F.rms_norm(x.double(), (256,), wg.detach().double(), 1e-6)
    with torch.no_grad():
        y = tmanorm.rms_norm(xg, None, wg, 1e-6)
    check_out(y, want, torch.bfloat16, "requires_grad under no_grad: taken")
    report(not y.requires_grad, "requires_grad under no_grad: the output needs no grad")
    with torch.inference_mode():
        check_out(tmanorm.rms_norm(xg, None, wg, 1e-6), want, torch.bfloat16, "requires_grad under inference_mode")
    check_out(tmanorm.rms_norm(xg.detach(), None, wg.detach(), 1e-6), want, torch.bfloat16, "requires_grad, detached")


def block(x, residual, w, b):
    """A decoder's norms: rms_norm, layer_norm, add_rms_norm, the in-place variant, softmax, out= and f8."""
    n = x.shape[-1]
    a = tmanorm.rms_norm(x, (n,), w, 1e-6)
    c = tmanorm.layer_norm(a, (n,), w, b, 1e-5)
    y, h = tmanorm.add_rms_norm(c, residual, w, 1e-6)
    tmanorm.fused_add_rms_norm_(y, h, w, 1e-6)
    s = torch.empty_like(y)
    tmanorm.softmax(y * 0.5, out=s)
    q = tmanorm.rms_norm(h, None, None, 1e-6, out_dtype=F8 if has_f8() else torch.float32)
    return a, c, y, h, s, q


def same(got, want, what):
    """Reports got against want: the same bits expected (the same kernels on the same inputs)."""
    for i, (g, w) in enumerate(zip(got, want)):
        if not torch.equal(g.float(), w.float()):
            diff = (g.float() - w.float()).abs().max().item()
            report(False, f"{what}: output {i} differs from eager (max |diff| {diff:.3g})")
            return
    report(True, f"{what}: the bits of eager")


def check_compile():
    """torch.compile(fullgraph=True) of block (no graph break, or it raises) against eager, with
    aot_eager, inductor and inductor's CUDA graphs, at two row counts."""
    n = 4096
    w = torch.rand(n, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for backend, mode in (("aot_eager", None), ("inductor", None), ("inductor", "reduce-overhead")):
            torch._dynamo.reset()
            try:
                fn = torch.compile(block, backend=backend, mode=mode, fullgraph=True)
                for rows in (256, 100, 256):
                    x = torch.randn(rows, n, device="cuda", dtype=torch.bfloat16)
                    r = torch.randn(rows, n, device="cuda", dtype=torch.bfloat16)
                    want = block(x.clone(), r.clone(), w, b)
                    got = [t.clone() for t in fn(x.clone(), r.clone(), w, b)]  # (CUDA graphs reuse outputs)
                    same(got, want, f"compiled block {backend} mode {mode} [{rows}, {n}]")
            except Exception as e:  # noqa: BLE001 - a compile failure is a failed check
                report(False, f"compiled block {backend} mode {mode}: {type(e).__name__}: {str(e)[:2000]}")


def check_cuda_graph():
    """The ops captured in a CUDA graph (after a warm-up on the capture stream) and replayed on new
    data: the bits of eager; the plans used are pinned."""
    n, rows, dt = 4096, 512, torch.bfloat16
    x = torch.randn(rows, n, device="cuda", dtype=dt)
    r = torch.randn(rows, n, device="cuda", dtype=dt)
    w = torch.rand(n, device="cuda", dtype=dt) + 0.5
    b = torch.randn(n, device="cuda", dtype=dt)
    xi, ri = torch.empty_like(x), torch.empty_like(r)
    so = torch.empty(rows, n, device="cuda", dtype=torch.float32)

    def step():
        a = tmanorm.rms_norm(x, None, w, 1e-6)
        c = tmanorm.layer_norm(x, None, None, b)  # the ones stand-in made in the warm-up
        y, h = tmanorm.add_rms_norm(x, r)
        xi.copy_(x)
        ri.copy_(r)
        tmanorm.fused_add_rms_norm_(xi, ri, w)
        tmanorm.softmax(x, out=so)
        return [a, c, y, h, xi, ri, so]

    with torch.no_grad():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            step()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        pinned = tmanorm._plan_cache_info()["pinned"]
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                outs = step()
        except Exception as e:  # noqa: BLE001 - a capture failure is a failed check
            report(False, f"CUDA graph capture: {type(e).__name__}: {e}")
            return
        for _ in range(2):
            x.copy_(torch.randn_like(x))
            r.copy_(torch.randn_like(r))
            graph.replay()
            torch.cuda.synchronize()
            got = [t.clone() for t in outs]
            same(got, step(), "CUDA graph replay on new data")
        info = tmanorm._plan_cache_info()
        report(info["pinned"] > pinned, f"CUDA graph: the plans captured are pinned ({pinned} -> {info['pinned']})")


def check_many_row_counts(n=4096, counts=1000):
    """rms_norm at every row count 1..counts at one N: the binding makes a plan a doubling of the
    row count (its row tiers serve every count below), not one a row count, and the kernels among
    them are a handful (the scheduler's distinct choices over the tiers)."""
    dt = torch.bfloat16
    x = torch.randn(counts, n, device="cuda", dtype=dt)
    w = torch.rand(n, device="cuda", dtype=dt) + 0.5
    before = tmanorm._plan_cache_info()
    torch.cuda.synchronize()
    start = time.perf_counter()
    with torch.no_grad():
        for m in range(1, counts + 1):
            tmanorm.rms_norm(x[:m], None, w, 1e-6)
    torch.cuda.synchronize()
    took = time.perf_counter() - start
    after = tmanorm._plan_cache_info()
    made = after["created"] - before["created"]
    doublings = (counts - 1).bit_length() + 1
    ctx = tmanorm._native.context(torch.cuda.current_device())
    with ctx.lock:  # the kernels of the plan that served the sweep: earlier checks left rms_norm plans at N of
        # their own (other dtypes, fewer rows), which only it reaches `counts` rows among
        tiers = [ctx.describe(p, tmanorm._native.DESCRIBE_TIERS) for k, p in ctx.cache.plans.items()
                 if k[0] == "rms_norm" and k[2] == n and ctx.cache.bounds[k] >= counts]
    kernels = {line.rsplit("kernel ", 1)[1].split()[0] for t in tiers for line in t.splitlines()[1:]}
    print(f"row counts 1..{counts} at N = {n} ({dt}): {made} plans made, {len(tiers)} held for N up to {counts} rows, "
          f"{len(kernels)} distinct kernels over its row tiers; {took:.2f} s, {took / counts * 1e3:.3f} ms "
          "a call, plan making included\n" + "".join(tiers), flush=True)
    report(made <= doublings, f"1000 row counts: {made} plans made (at most one a doubling, {doublings})")
    report(len(tiers) == 1 and len(kernels) <= 8, f"1000 row counts: one plan held, {len(kernels)} kernels "
           "(a handful: at most 8)")
    start = time.perf_counter()
    with torch.no_grad():
        for m in range(counts, 0, -1):
            tmanorm.rms_norm(x[:m], None, w, 1e-6)
    torch.cuda.synchronize()
    again = tmanorm._plan_cache_info()
    report(again["created"] == after["created"], f"the same row counts again: no plan made "
           f"({(time.perf_counter() - start) / counts * 1e3:.3f} ms a call)")
    for m in (1, 7, 129, 500, 513, counts):
        check_out(tmanorm.rms_norm(x[:m], None, w, 1e-6), F.rms_norm(x[:m].double(), (n,), w.double(), 1e-6), dt,
                  f"rms_norm at M = {m} after the sweep")


def compare_rmsnorm(rows=32768, cols=4096):
    dt = torch.bfloat16
    nbytes = rows * cols * 2 * 2 + cols * 2
    nsets = max(1, -(-4 * 60 * 2**20 // nbytes))
    sets = [(torch.randn(rows, cols, device="cuda", dtype=dt), torch.rand(cols, device="cuda", dtype=dt) + 0.5)
            for _ in range(nsets)]
    ceiling, _ = copy_ceiling_gbs()
    tn_us, tn_spread = graph_time(lambda a: tmanorm.rms_norm(a[0], a[1], 1e-6), sets)
    th_us, th_spread = graph_time(lambda a: F.rms_norm(a[0], (cols,), a[1], 1e-6), sets)
    print(f"copy ceiling (torch copy_ of 1 GiB, read + write, events): {ceiling:.0f} GB/s")
    for name, us, spread in (("tmanorm.rms_norm", tn_us, tn_spread), ("torch F.rms_norm", th_us, th_spread)):
        gbs = nbytes / us / 1e3
        print(f"{name:18s} bf16 [{rows} x {cols}]: {us:8.2f} us (spread {spread:.2f}), {gbs:6.0f} GB/s, "
              f"{100 * gbs / ceiling:5.1f}% of ceiling")


if __name__ == "__main__":
    # --sanitize: the checks tests/gpu/sanitize.sh runs under compute-sanitizer (and full.sh runs):
    # no timing, no compiles, no graph capture, no 1000-plan sweep. --api: the torch ops' API only.
    sanitize, api_only = "--sanitize" in sys.argv[1:], "--api" in sys.argv[1:]
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, tmanorm {tmanorm.__version__} ({tmanorm._native.find_library()})", flush=True)
    if not api_only:
        if not sanitize:
            check_ops()
        check_mixed_dtypes()
        check_f8_saturation()
        check_errors()
        check_refused_combinations()
        check_broadcast_refused()
        check_empty_batch()
        check_size_one_dims()
    check_new_api()
    check_older_forms()
    check_out_param()
    check_fused_in_place()
    check_empty_batch_api()
    if not sanitize:
        check_requires_grad()
        check_compile()
        check_cuda_graph()
        check_many_row_counts()
    if not sanitize and not api_only:
        compare_rmsnorm()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
