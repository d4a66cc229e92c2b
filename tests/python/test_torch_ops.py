"""CPU tier for the PyTorch ops (no GPU): torch.ops.tmanorm.* registered with the
right schemas, fake-tensor propagation (shapes, dtypes, strides, devices) of every
op, opcheck, torch.compile(fullgraph=True) over meta tensors with the eager and
aot_eager backends (one graph, the ops in it), the Python functions' arguments
(normalized_shape, dim, out=, eps defaults, the older call forms), refusals
(requires_grad in eager and compiled code, CPU tensors, bad out=, dtypes), empty
batches and __version__. Skips (exit 0) without torch >= 2.4.
Run: TMANORM_LIB=build/libtmanorm.so python3 tests/python/test_torch_ops.py"""
import os
import re
import sys
import traceback

try:
    import torch
except ImportError:
    print("test_torch_ops: SKIPPED (torch is not installed)")
    sys.exit(77)  # ctest: skipped
if not hasattr(torch.library, "custom_op"):
    print(f"test_torch_ops: SKIPPED (torch {torch.__version__}; the ops need torch >= 2.4)")
    sys.exit(77)  # ctest: skipped

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tmanorm  # noqa: E402
from tmanorm import _native, _ops  # noqa: E402

BF16, F16, F32, F8 = torch.bfloat16, torch.float16, torch.float32, torch.float8_e4m3fn
OPS = {  # name: the arguments its schema marks mutable
    "rms_norm": (), "layer_norm": (), "softmax": (), "add_rms_norm": (),
    "rms_norm_out": ("out",), "layer_norm_out": ("out",), "softmax_out": ("out",),
    "add_rms_norm_out": ("out", "residual_out"), "fused_add_rms_norm_": ("x", "residual"),
}


def expect_error(kind, needles, fn):
    """fn() raises kind whose message holds every needle (a str or a tuple of them)."""
    try:
        fn()
    except kind as e:
        for needle in (needles,) if isinstance(needles, str) else needles:
            assert needle in str(e), f"{needle!r} not in {type(e).__name__}: {e}"
        return e
    except Exception as e:  # noqa: BLE001 - name the wrong kind
        raise AssertionError(f"expected {kind.__name__} ({needles}), got {type(e).__name__}: {e}") from e
    raise AssertionError(f"no {kind.__name__} ({needles})")


def meta(*shape, dtype=BF16, **kw):
    return torch.randn(*shape, device="meta", dtype=dtype, **kw)


def contiguous_strides(shape):
    strides, step = [], 1
    for s in reversed(shape):
        strides.insert(0, step)
        step *= max(s, 1)
    return tuple(strides)


# ---- the tests -------------------------------------------------------------------------

def test_ops_registered():
    for name, mutable in OPS.items():
        packet = getattr(torch.ops.tmanorm, name, None)
        assert packet is not None, f"torch.ops.tmanorm.{name} missing"
        schema = packet.default._schema
        written = tuple(a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write)
        assert written == mutable, (name, str(schema))
        assert schema.is_mutable == bool(mutable), (name, str(schema))
    assert len(torch.ops.tmanorm.add_rms_norm.default._schema.returns) == 2


def test_fake_propagation():
    """Under FakeTensorMode (CUDA tensors without a GPU): every op's outputs, and the checks that
    need no strides."""
    try:
        fake_cases("cuda")
    except RuntimeError as e:  # torch 2.4 asks the CUDA driver even for fake CUDA tensors
        if "CUDA driver" not in str(e):
            raise
        print("  (fake CUDA tensors need a CUDA driver in this torch: meta tensors instead)")
        fake_cases("meta")


def fake_cases(device):
    with FakeTensorMode():
        x = torch.empty(2, 3, 4096, device=device, dtype=BF16)
        strided = torch.empty(6, 5000, device=device, dtype=F16)[:, :4096]
        w32 = torch.empty(4096, device=device, dtype=F32)
        for xin in (x, strided):
            cases = {
                "rms_norm": (tmanorm.rms_norm(xin, None, w32), xin.dtype),
                "rms_norm f8": (tmanorm.rms_norm(xin, (4096,), w32, out_dtype=F8), F8),
                "rms_norm no weight": (tmanorm.rms_norm(xin), xin.dtype),
                "layer_norm": (tmanorm.layer_norm(xin, (4096,), w32, w32), xin.dtype),
                "layer_norm no bias, f32": (tmanorm.layer_norm(xin, None, w32, out_dtype=F32), F32),
                "layer_norm neither": (tmanorm.layer_norm(xin), xin.dtype),
                "softmax": (tmanorm.softmax(xin), xin.dtype),
                "softmax f8": (tmanorm.softmax(xin, -1, out_dtype=F8), F8),
            }
            y, h = tmanorm.add_rms_norm(xin, xin.clone(), w32, out_dtype=F8)
            cases["add_rms_norm y"], cases["add_rms_norm sum"] = (y, F8), (h, xin.dtype)
            for what, (got, dtype) in cases.items():
                assert got.shape == xin.shape and got.dtype == dtype and got.device == xin.device, (what, got)
                assert got.stride() == contiguous_strides(tuple(xin.shape)), (what, got.stride())
        # In place and out=: nothing returned by the ops, the given tensors by the functions.
        r = x.clone()
        assert tmanorm.fused_add_rms_norm_(x, r, w32) == (x, r)
        o = torch.empty(2, 3, 4096, device=device, dtype=F8)
        assert tmanorm.rms_norm(x, out=o) is o
        assert tmanorm.add_rms_norm(x, r, None, out=(o, r.clone()))[0] is o
        # Empty batches.
        e = torch.empty(0, 4096, device=device, dtype=BF16)
        assert tmanorm.rms_norm(e, None, w32).shape == (0, 4096)
        assert tmanorm.add_rms_norm(e, e, None)[1].shape == (0, 4096)
        # Checks that need no strides are made in the fake path too.
        expect_error(ValueError, ("weight", "4096 elements"),
                     lambda: tmanorm.rms_norm(x, None, torch.empty(100, device=device, dtype=F32)))
        expect_error(ValueError, ("bias is torch.float16 but weight is torch.float32",),
                     lambda: tmanorm.layer_norm(x, None, w32, w32.half()))
        expect_error(ValueError, ("x is on cpu",), lambda: tmanorm.softmax(torch.empty(2, 8, dtype=BF16)))


def test_opcheck():
    """torch.library.opcheck (schema, fake tensor, AOT dispatch) on meta tensors, where it exists."""
    if not hasattr(torch.library, "opcheck"):
        print("  (no torch.library.opcheck here)")
        return
    x, r, w = meta(4, 64), meta(4, 64), meta(64, dtype=F32)
    cases = [
        (torch.ops.tmanorm.rms_norm.default, (x, w, 1e-6, None, None)),
        (torch.ops.tmanorm.rms_norm.default, (x, None, 1e-6, F8, None)),
        (torch.ops.tmanorm.layer_norm.default, (x, w, w, 1e-5, F32, None)),
        (torch.ops.tmanorm.softmax.default, (x, None, False)),
        (torch.ops.tmanorm.add_rms_norm.default, (x, r, w, 1e-6, None, None)),
        (torch.ops.tmanorm.rms_norm_out.default, (x, w, 1e-6, None, meta(4, 64))),
        (torch.ops.tmanorm.add_rms_norm_out.default, (x, r, w, 1e-6, None, meta(4, 64), meta(4, 64))),
        (torch.ops.tmanorm.fused_add_rms_norm_.default, (meta(4, 64), meta(4, 64), w, 1e-6, None)),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


class GraphCounter:
    """A torch.compile backend that keeps each graph it is given and runs it as it is."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    def targets(self):
        return [str(n.target) for g in self.graphs for n in g.graph.nodes if n.op == "call_function"]


def model(x, residual, w, b):
    """rms_norm, layer_norm, add_rms_norm, the in-place variant, softmax and out=, as a model would."""
    a = tmanorm.rms_norm(x, (x.shape[-1],), w, 1e-6)
    c = tmanorm.layer_norm(a, None, w, b, 1e-5)
    y, h = tmanorm.add_rms_norm(c, residual, w)
    tmanorm.fused_add_rms_norm_(y, h, w, 1e-6)
    out = torch.empty_like(y)
    tmanorm.softmax(y, -1, out=out)
    return out * 2, h, tmanorm.rms_norm(x, out_dtype=F8)


def test_compile_fullgraph():
    x, r, w, b = meta(8, 256), meta(8, 256), meta(256, dtype=F32), meta(256, dtype=F32)
    counter = GraphCounter()
    for backend in (counter, "eager", "aot_eager"):
        for dynamic in (False, True):
            torch._dynamo.reset()
            fn = torch.compile(model, backend=backend, fullgraph=True, dynamic=dynamic)
            got = fn(x, r.clone(), w, b)
            assert [(t.shape, t.dtype) for t in got] == [((8, 256), BF16), ((8, 256), BF16), ((8, 256), F8)], got
            got = fn(meta(3, 256), meta(3, 256), w, b)  # another M: a recompile or a dynamic graph, no break
            assert got[0].shape == (3, 256)
    targets = counter.targets()
    assert len(counter.graphs) >= 2, len(counter.graphs)  # one a compile (fullgraph: never a break)
    for op in ("rms_norm", "layer_norm", "add_rms_norm", "fused_add_rms_norm_", "softmax_out"):
        assert f"tmanorm.{op}" in targets or f"tmanorm.{op}.default" in targets, (op, targets)


def test_eps_and_older_forms():
    """eps None is F.rms_norm's (finfo(float32).eps for f16, bf16, f32); the older form rms_norm(x, w[, eps]) keeps 1e-6;
    layer_norm(x, w, b, eps) and softmax(x, out_dtype) still read as they did. Read off the traced call."""
    def traced(fn, *args):
        g = make_fx(fn)(*args)
        return [n for n in g.graph.nodes if n.op == "call_function" and "tmanorm" in str(n.target)]
    x, w, b = meta(4, 64), meta(64, dtype=F32), meta(64, dtype=F32)
    cases = [
        (lambda x, w: tmanorm.rms_norm(x), 2, torch.finfo(F32).eps),
        (lambda x, w: tmanorm.rms_norm(x.float(), (64,), w), 2, torch.finfo(F32).eps),
        (lambda x, w: tmanorm.rms_norm(x, None, w, 1e-3), 2, 1e-3),
        (lambda x, w: tmanorm.rms_norm(x, w), 2, 1e-6),
        (lambda x, w: tmanorm.rms_norm(x, w, 1e-5), 2, 1e-5),
        (lambda x, w: tmanorm.rms_norm(x, w, eps=1e-4), 2, 1e-4),
        (lambda x, w: tmanorm.layer_norm(x), 3, 1e-5),
        (lambda x, w: tmanorm.layer_norm(x, w, w, 1e-3), 3, 1e-3),
        (lambda x, w: tmanorm.add_rms_norm(x, x, w)[0], 3, 1e-6),
        (lambda x, w: tmanorm.fused_add_rms_norm_(x.clone(), x.clone(), w, 1e-2)[0], 3, 1e-2),
    ]
    for fn, eps_at, eps in cases:
        (node,) = traced(fn, x, w)
        assert abs(node.args[eps_at] - eps) <= 1e-12, (node.format_node(), eps)
    (node,) = traced(lambda x, w: tmanorm.layer_norm(x, w, b, 1e-3), x, w)  # the older form
    assert node.args[1].meta["val"].dtype == F32 and node.args[2] is not None, node.format_node()
    (node,) = traced(lambda x, w: tmanorm.softmax(x, F32), x, w)  # softmax(x, out_dtype), the older form
    assert node.args[1] == F32, node.format_node()
    expect_error(TypeError, "older form", lambda: tmanorm.rms_norm(x, w, w))
    # The older forms' positional out_dtype after eps: rms_norm(x, w, eps, out_dtype), layer_norm(x, w, b, eps, out_dtype).
    f8 = torch.float8_e4m3fn
    (node,) = traced(lambda x, w: tmanorm.rms_norm(x, w, 1e-5, f8), x, w)
    assert abs(node.args[2] - 1e-5) <= 1e-12 and node.meta["val"].dtype == f8, node.format_node()
    (node,) = traced(lambda x, w: tmanorm.layer_norm(x, w, b, 1e-3, f8), x, w)
    assert abs(node.args[3] - 1e-3) <= 1e-12 and node.meta["val"].dtype == f8, node.format_node()


def test_argument_refusals():
    x, w = meta(4, 64), meta(64, dtype=F32)
    for shape in ((4, 64), (32,), 65, [2, 32]):
        expect_error(ValueError, ("normalized_shape", "is not (64,)", "last dimension only"),
                     lambda: tmanorm.rms_norm(x, shape, w))
        expect_error(ValueError, "normalized_shape", lambda: tmanorm.layer_norm(x, shape))
    assert tmanorm.rms_norm(x, 64, w).shape == (4, 64) and tmanorm.rms_norm(x, torch.Size([64])).shape == (4, 64)
    for dim in (0, -2):
        expect_error(ValueError, (f"dim {dim} is not the last dimension",), lambda: tmanorm.softmax(x, dim))
    expect_error(TypeError, "dim must be an int", lambda: tmanorm.softmax(x, None))
    assert tmanorm.softmax(x, 1).shape == (4, 64)
    # out=
    expect_error(ValueError, ("out= y has shape (4, 32)", "expected x's (4, 64)"),
                 lambda: tmanorm.rms_norm(x, out=meta(4, 32)))
    expect_error(TypeError, ("out= y is torch.float64", "expected torch.float32, torch.float16"),
                 lambda: tmanorm.rms_norm(x, out=meta(4, 64, dtype=torch.float64)))
    expect_error(TypeError, ("out_dtype torch.float32 differs from out's dtype torch.bfloat16",),
                 lambda: tmanorm.rms_norm(x, out=meta(4, 64), out_dtype=F32))
    expect_error(TypeError, "out= must be a tensor", lambda: tmanorm.softmax(x, out=[meta(4, 64)]))
    expect_error(TypeError, "pair of tensors", lambda: tmanorm.add_rms_norm(x, x, w, out=meta(4, 64)))
    expect_error(TypeError, ("out= sum is torch.float32", "expected torch.bfloat16"),
                 lambda: tmanorm.add_rms_norm(x, x, w, out=(meta(4, 64), meta(4, 64, dtype=F32))))
    expect_error(ValueError, ("out= y is on cpu",),
                 lambda: tmanorm.layer_norm(x, out=torch.empty(4, 64, dtype=BF16)))
    assert tmanorm.rms_norm(x, out=meta(4, 64, dtype=F8)).dtype == F8  # f8 out= takes its dtype from out
    # Dtypes.
    expect_error(TypeError, "out_dtype torch.int8 is not supported", lambda: tmanorm.softmax(x, out_dtype=torch.int8))
    x32 = torch.empty(4, 64, device="meta", dtype=torch.int32)
    expect_error(TypeError, "x is torch.int32", lambda: tmanorm.rms_norm(x32))
    expect_error(TypeError, ("x is torch.float8_e4m3fn", "outputs only"), lambda: tmanorm.softmax(meta(4, 64).to(F8)))
    expect_error(ValueError, ("residual is torch.float16 but x is torch.bfloat16",),
                 lambda: tmanorm.add_rms_norm(x, meta(4, 64, dtype=F16)))
    # CPU tensors: the real impl refuses them (before any library call), M = 0 included.
    for shape in ((4, 64), (0, 64)):
        cpu = torch.zeros(shape, dtype=BF16)
        expect_error(ValueError, ("x is on cpu", "CUDA"), lambda: tmanorm.rms_norm(cpu))
        expect_error(ValueError, ("x is on cpu",), lambda: torch.ops.tmanorm.softmax(cpu, None, None))
    for op in (lambda: tmanorm.rms_norm(x, pdl=1), lambda: tmanorm.softmax(x, pdl="on"),
               lambda: tmanorm.fused_add_rms_norm_(x, x.clone(), pdl=0)):
        expect_error(TypeError, "pdl must be None, True or False", op)


def test_empty_batch():
    for shape in ((0, 64), (2, 0, 64)):
        x = meta(*shape)
        assert tmanorm.rms_norm(x).shape == shape and tmanorm.softmax(x, out_dtype=F8).dtype == F8
        y, h = tmanorm.add_rms_norm(x, x, None, out_dtype=F32)
        assert (y.shape, y.dtype, h.shape, h.dtype) == (shape, F32, shape, BF16)
        assert tmanorm.layer_norm(x, None, meta(64, dtype=F32)).shape == shape


def test_requires_grad_refused():
    xg, wg, x = meta(4, 64, requires_grad=True), meta(64, dtype=F32, requires_grad=True), meta(4, 64)
    needle = ("has no backward yet", "torch.no_grad()")
    cases = {
        "rms_norm x": lambda: tmanorm.rms_norm(xg),
        "rms_norm weight": lambda: tmanorm.rms_norm(x, None, wg),
        "layer_norm bias": lambda: tmanorm.layer_norm(x, None, None, wg),
        "softmax": lambda: tmanorm.softmax(xg),
        "add_rms_norm residual": lambda: tmanorm.add_rms_norm(x, xg),
        "fused_add_rms_norm_": lambda: tmanorm.fused_add_rms_norm_(x.clone(), x.clone(), wg),
        "rms_norm out=": lambda: tmanorm.rms_norm(x, out=meta(4, 64, requires_grad=True)),
        "torch.ops rms_norm": lambda: torch.ops.tmanorm.rms_norm(xg, None, 1e-6, None, None).sum().backward(),
        "torch.ops add_rms_norm":
            lambda: torch.ops.tmanorm.add_rms_norm(x, x, wg, 1e-6, None, None)[0].sum().backward(),
    }
    for what, fn in cases.items():
        e = expect_error(RuntimeError, needle, fn)
        assert "requires grad" in str(e), (what, e)
    # Compiled: refused while tracing (the functional ops by their autograd, the in-place one by the function).
    for what, fn, args in (("rms_norm", lambda a, w: tmanorm.rms_norm(a, None, w), (x, wg)),
                           ("layer_norm", lambda a, w: tmanorm.layer_norm(a, None, w), (xg, None)),
                           ("fused_add_rms_norm_", lambda a, w: tmanorm.fused_add_rms_norm_(a, a.clone(), w), (x, wg))):
        for backend in ("eager", "aot_eager"):
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend=backend, fullgraph=True)
            needle, call = "has no backward yet", (lambda: compiled(*args))
            if not _ops._SETUP_ONLY_FOR_GRAD:  # torch 2.4
                if what == "fused_add_rms_norm_":
                    needle = ""  # refused, in dynamo's words ("observed exception")
                elif backend == "eager":  # nothing traces the backward, where the refusal is there
                    call = lambda: compiled(*args).float().sum().backward()  # noqa: E731
            expect_error(RuntimeError, needle, call)
    # Under no_grad / inference_mode, or detached: accepted (a Parameter as the weight included).
    p = torch.nn.Parameter(meta(64, dtype=F32))
    with torch.no_grad():
        assert tmanorm.rms_norm(xg, None, p).shape == (4, 64)
        assert torch.ops.tmanorm.rms_norm(xg, p, 1e-6, None, None).shape == (4, 64)
        tmanorm.fused_add_rms_norm_(x.clone(), x.clone(), p)
    with torch.inference_mode():
        assert tmanorm.layer_norm(xg, None, p, p).shape == (4, 64)
    assert not tmanorm.rms_norm(xg.detach(), None, p.detach()).requires_grad


def test_version():
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "tmanorm.h")
    with open(header) as f:
        text = f.read()
    want = ".".join(re.search(rf"^#define TN_VERSION_{p} (\d+)$", text, re.M)[1] for p in ("MAJOR", "MINOR", "PATCH"))
    assert _native.VERSION == want, (_native.VERSION, want)
    assert tmanorm.__version__ == want, (tmanorm.__version__, want)
    assert "__version__" in tmanorm.__all__


def test_plan_cache_info():
    info = tmanorm._plan_cache_info()
    assert set(info) == {"plans", "capacity", "created", "evicted", "hits", "pinned", "retired", "kernels"}, info


def main():
    print(f"torch {torch.__version__}, tmanorm {tmanorm.__version__}")
    tests = [(name, fn) for name, fn in globals().items() if name.startswith("test_") and callable(fn)]
    passed = failed = 0
    for name, fn in tests:
        try:
            fn()
            passed += 1
            print(f"PASS {name}")
        except Exception:  # noqa: BLE001 - report every failure and go on
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}")
    print(f"torch ops: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
