"""GPU tier for the Python binding: each built-in against PyTorch on CUDA
tensors (odd shapes, strided rows, every dtype), the binding's errors, and
rmsnorm timed against torch's F.rms_norm in CUDA graphs at one shape.
Run on the device: python3 tests/gpu/test_torch.py"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import tmanorm  # noqa: E402
from compare import copy_ceiling_gbs, graph_time  # noqa: E402  (the benchmark's own timing)

passed = failed = 0


def report(ok, what):
    global passed, failed
    passed += ok
    failed += not ok
    print(("PASS " if ok else "FAIL ") + what, flush=True)


def rel_err(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


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
                "rms_norm": (tmanorm.rms_norm(x, w, 1e-6), F.rms_norm(x64, (cols,), w64, 1e-6)),
                "layer_norm": (tmanorm.layer_norm(x, w, b, 1e-5), F.layer_norm(x64, (cols,), w64, b.double(), 1e-5)),
                "softmax": (tmanorm.softmax(x), torch.softmax(x64, -1)),
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
    torch.manual_seed(0)
    check_ops()
    check_errors()
    compare_rmsnorm()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
