"""CPU tier for the Python binding: dtype, shape, stride and device validation
on stand-in tensors, the launch arguments the binding builds (checked by the
real library, which validates every argument before it finds there is no
GPU), out= tensors, missing weights, the bounded plan cache, the library
lookup and version, and explain() through the real library (no GPU, no torch
needed: the launch path runs with a stand-in torch module; the torch ops
themselves are tests/python/test_torch_ops.py's).
Run: python3 tests/python/test_binding.py (ctest runs it, with TMANORM_LIB set)."""
import ctypes
import itertools
import random
import re
import os
import sys
import threading
import time
import traceback
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tmanorm  # noqa: E402
from tmanorm import _core as C, _native as N  # noqa: E402

F32, F16, BF16, F8 = "torch.float32", "torch.float16", "torch.bfloat16", "torch.float8_e4m3fn"
INPUT_DTYPES = (F32, F16, BF16)
CODE = {F32: 0, F16: 1, BF16: 2, F8: 3}
ELEMENT_SIZE = {F32: 4, F16: 2, BF16: 2, F8: 1, "torch.int32": 4, "torch.int8": 1}


class FakeDevice:
    """What the binding reads of a torch.device: equality, str and index."""

    def __init__(self, spec):
        self.type, _, index = spec.partition(":")
        self.index = int(index) if index else None

    def __eq__(self, other):
        return isinstance(other, FakeDevice) and (self.type, self.index) == (other.type, other.index)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    __repr__ = __str__


class FakeTensor:
    """The attributes the binding reads from a torch.Tensor (dtype as its str)."""

    _next_ptr = 0x7f0000000000

    def __init__(self, shape, strides=None, is_cuda=True, dtype=BF16, device=None):
        self.shape, self.dtype = tuple(shape), dtype
        if strides is None:  # contiguous
            strides, step = [], 1
            for s in reversed(self.shape):
                strides.insert(0, step)
                step *= max(s, 1)
        self._strides = tuple(strides)
        self.device = FakeDevice(device or ("cuda:0" if is_cuda else "cpu"))
        self.is_cuda = self.device.type == "cuda"
        self._ptr = FakeTensor._next_ptr  # distinct, 256-byte aligned, never dereferenced
        FakeTensor._next_ptr += 1 << 32

    def dim(self):
        return len(self.shape)

    def stride(self, d):
        return self._strides[d]

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return ELEMENT_SIZE[self.dtype]

    def copy_(self, src):
        self.copied_from = src
        return self


class FakeTorch(types.ModuleType):
    """Stands in for the torch module in the binding's launch path."""

    def __init__(self):
        super().__init__("torch")
        self.empties, self.fulls, self.syncs = [], [], 0
        self.capturing = False
        for name in ("float32", "float16", "bfloat16", "float8_e4m3fn"):
            setattr(self, name, f"torch.{name}")

        def synchronize(device=None):
            self.syncs += 1
        self.cuda = types.SimpleNamespace(
            current_device=lambda: 0,
            current_stream=lambda device=None: types.SimpleNamespace(cuda_stream=0, synchronize=lambda: None),
            is_current_stream_capturing=lambda: self.capturing,
            synchronize=synchronize)

    def empty(self, shape, dtype=None, device=None):
        t = FakeTensor(shape, dtype=str(dtype), device=str(device))
        self.empties.append(t)
        return t

    def full(self, shape, value, dtype=None, device=None):
        t = FakeTensor(shape, dtype=str(dtype), device=str(device))
        t.value = value
        self.fulls.append(t)
        return t


class fake_torch:
    """with fake_torch() as torch: the binding's `import torch` gets a FakeTorch."""

    def __enter__(self):
        self.saved = sys.modules.get("torch")
        sys.modules["torch"] = self.torch = FakeTorch()
        return self.torch

    def __exit__(self, *exc):
        if self.saved is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = self.saved


class count_calls:
    """Counts calls of library functions by name (replacing them on the CDLL for the duration)."""

    def __init__(self, *names):
        self.lib, self.names, self.counts = N.library(), names, dict.fromkeys(names, 0)

    def __enter__(self):
        self.saved = {n: getattr(self.lib, n) for n in self.names}
        for n, fn in self.saved.items():
            def wrapper(*args, _n=n, _fn=fn):
                self.counts[_n] += 1
                return _fn(*args)
            setattr(self.lib, n, wrapper)
        return self.counts

    def __exit__(self, *exc):
        for n, fn in self.saved.items():
            setattr(self.lib, n, fn)


class stub_launch:
    """Context.launch records its calls instead of calling tn_plan_launch (no GPU needed; plans are
    still made by the library)."""

    def __enter__(self):
        self.saved, self.calls = N.Context.launch, []
        N.Context.launch = lambda ctx, plan, ins, outs, params, stream, rows=0: self.calls.append(plan.value)
        return self.calls

    def __exit__(self, *exc):
        N.Context.launch = self.saved


def fresh_context(device=7):
    """A launch context of its own (a device ordinal nothing else uses; without a GPU the library
    plans for its default target whatever the ordinal)."""
    N.contexts.pop((device, None), None)
    return N.context(device)


def expect_error(kind, needles, fn):
    """fn() raises kind whose message holds every needle (a str or a tuple of them)."""
    try:
        fn()
    except kind as e:
        for needle in (needles,) if isinstance(needles, str) else needles:
            assert needle in str(e), f"{needle!r} not in {e!r}"
        return e
    raise AssertionError(f"no {kind.__name__} ({needles})")


def vec(n, dtype=BF16, **kw):
    return FakeTensor((n,), dtype=dtype, **kw)


# ---- the tests: each a function; a failed assertion fails it --------------------

def test_rows_view_basics():
    rv = C.rows_view
    assert rv(FakeTensor((4, 8), (8, 1)), "x") == (4, 8, 8)
    assert rv(FakeTensor((4, 8), (16, 1)), "x") == (4, 8, 16)           # padded rows
    assert rv(FakeTensor((2, 3, 8), (24, 8, 1)), "x") == (6, 8, 8)      # leading dims collapse
    assert rv(FakeTensor((8,), (1,)), "x") == (1, 8, 8)
    assert rv(FakeTensor((1, 8), (40, 1)), "x") == (1, 8, 8)            # one row: its stride is never used


def test_rows_view_refusals():
    rv = C.rows_view
    expect_error(ValueError, "on cpu", lambda: rv(FakeTensor((4, 8), (8, 1), is_cuda=False), "x"))
    expect_error(ValueError, "not contiguous", lambda: rv(FakeTensor((4, 8), (1, 4)), "x"))
    expect_error(ValueError, "uniform row stride", lambda: rv(FakeTensor((2, 3, 8), (100, 8, 1)), "x"))
    expect_error(ValueError, "columns", lambda: rv(FakeTensor((4, 8), (8, 1)), "r", cols=16))
    expect_error(ValueError, "last dimension", lambda: rv(FakeTensor((4, 0), (1, 1)), "x"))


def test_broadcast_rows_refused():
    # x[1, N].expand(M, N): row stride 0, which the library would read as "N".
    rv = C.rows_view
    expect_error(ValueError, ("x is broadcast or overlapping along rows", "row stride 0 < N = 8", ".contiguous()"),
                 lambda: rv(FakeTensor((4, 8), (0, 1)), "x"))
    # Overlapping rows: row stride 4 < N = 8.
    expect_error(ValueError, ("broadcast or overlapping", "row stride 4"), lambda: rv(FakeTensor((4, 8), (4, 1)), "x"))
    # Expanded leading dimensions, inner or outer.
    expect_error(ValueError, ("x is broadcast along a leading dimension", "strides (0, 8, 1)"),
                 lambda: rv(FakeTensor((2, 3, 8), (0, 8, 1)), "x"))
    expect_error(ValueError, "row stride 0 < N = 8", lambda: rv(FakeTensor((3, 2, 8), (8, 0, 1)), "x"))
    expect_error(ValueError, "row stride 0 < N = 8", lambda: rv(FakeTensor((3, 2, 8), (0, 0, 1)), "x"))
    # Through a whole call, and for the residual too.
    expect_error(ValueError, "x is broadcast", lambda: C.prepare(
        "rms_norm", {"x": FakeTensor((4, 8), (0, 1)), "weight": vec(8)}))
    expect_error(ValueError, "residual is broadcast", lambda: C.prepare(
        "add_rms_norm", {"x": FakeTensor((4, 8)), "residual": FakeTensor((4, 8), (0, 1)), "weight": vec(8)}))


def test_size_one_dims_ignored():
    rv = C.rows_view
    # PyTorch gives size-1 dimensions arbitrary strides; they take no step.
    assert rv(FakeTensor((2, 1, 8), (8, 7, 1)), "x") == (2, 8, 8)
    assert rv(FakeTensor((1, 4, 8), (999, 8, 1)), "x") == (4, 8, 8)
    assert rv(FakeTensor((2, 1, 3, 8), (24, 5, 8, 1)), "x") == (6, 8, 8)
    assert rv(FakeTensor((2, 1, 8), (16, 3, 1)), "x") == (2, 8, 16)     # padded, size-1 stride odd
    assert rv(FakeTensor((3, 1), (5, 9)), "x") == (3, 1, 5)             # N = 1: last stride free
    # Non-uniform strides across dimensions that do step are still refused.
    expect_error(ValueError, "uniform row stride", lambda: rv(FakeTensor((2, 1, 3, 8), (30, 5, 8, 1)), "x"))


def test_empty_batch_view():
    rv = C.rows_view
    assert rv(FakeTensor((0, 8), (8, 1)), "x") == (0, 8, 8)
    assert rv(FakeTensor((2, 0, 8), (0, 8, 1)), "x") == (0, 8, 8)
    call = C.prepare("add_rms_norm", {"x": FakeTensor((0, 8)), "residual": FakeTensor((0, 8)),
                                      "weight": vec(8)})
    assert call.rows == 0 and call.cols == 8


def test_vectors():
    cv = C.check_vector
    expect_error(ValueError, "contiguous vector", lambda: cv(FakeTensor((8,), (2,)), "w", 8))
    expect_error(ValueError, ("weight", "8 elements"), lambda: C.prepare(
        "rms_norm", {"x": FakeTensor((4, 8)), "weight": vec(16)}))
    expect_error(ValueError, ("bias", "contiguous vector"), lambda: C.prepare(
        "layer_norm", {"x": FakeTensor((4, 8)), "weight": vec(8), "bias": FakeTensor((1, 8))}))
    expect_error(ValueError, ("weight is on cpu"), lambda: C.prepare(
        "rms_norm", {"x": FakeTensor((4, 8)), "weight": vec(8, is_cuda=False)}))
    cv(FakeTensor((1,), (5,)), "w", 1)  # one element: any stride


def test_device_mismatch_refused():
    x = FakeTensor((4, 8))
    expect_error(ValueError, ("weight is on cuda:1", "x is on cuda:0"), lambda: C.prepare(
        "rms_norm", {"x": x, "weight": vec(8, device="cuda:1")}))
    expect_error(ValueError, ("bias is on cuda:1",), lambda: C.prepare(
        "layer_norm", {"x": x, "weight": vec(8), "bias": vec(8, device="cuda:1")}))
    expect_error(ValueError, ("residual is on cuda:1",), lambda: C.prepare(
        "add_rms_norm", {"x": x, "residual": FakeTensor((4, 8), device="cuda:1"), "weight": vec(8)}))


def test_bias_weight_dtype_mismatch_refused():
    expect_error(ValueError, "tmanorm: layer_norm: bias is torch.float32 but weight is torch.bfloat16; "
                             "weight and bias must share one dtype",
                 lambda: C.launch_dtypes("layer_norm", {"x": BF16, "weight": BF16, "bias": F32}))
    # Through a whole call on stand-in tensors: refused before anything is launched.
    with count_calls("tn_plan_create", "tn_plan_launch") as calls:
        expect_error(ValueError, "bias is torch.float32", lambda: C.prepare(
            "layer_norm", {"x": FakeTensor((4, 8)), "weight": vec(8, BF16), "bias": vec(8, F32)}))
    assert calls == {"tn_plan_create": 0, "tn_plan_launch": 0}, calls


def test_residual_mismatch_refused():
    expect_error(ValueError, ("residual is torch.float16 but x is torch.bfloat16", "residual must share x's dtype"),
                 lambda: C.launch_dtypes("add_rms_norm", {"x": BF16, "residual": F16, "weight": BF16}))
    expect_error(ValueError, ("residual has shape (2, 4, 8) but x has shape (8, 8)",), lambda: C.prepare(
        "add_rms_norm", {"x": FakeTensor((8, 8)), "residual": FakeTensor((2, 4, 8)), "weight": vec(8)}))
    expect_error(ValueError, ("residual",), lambda: C.prepare(
        "add_rms_norm", {"x": FakeTensor((4, 8)), "residual": FakeTensor((4, 16)), "weight": vec(8)}))


def test_each_tensor_its_own_dtype_code():
    d = C.launch_dtypes("layer_norm", {"x": BF16, "weight": F32, "bias": F32})
    assert d.options == (2, 0, 2) and d.inputs == [2, 0, 0] and d.outputs == [2], d
    d = C.launch_dtypes("add_rms_norm", {"x": F16, "residual": F16, "weight": BF16}, F32)
    assert d.options == (1, 2, 0) and d.inputs == [1, 1, 2] and d.outputs == [0, 1], d
    # The tn_tensor list built for the launch: each tensor's pointer, own code and row stride.
    x, w, b = FakeTensor((4, 8), (16, 1), dtype=F16), vec(8, F32), vec(8, F32)
    call = C.prepare("layer_norm", {"x": x, "weight": w, "bias": b}, out_dtype=BF16)
    got = [(t.data, t.dtype, t.row_stride) for t in C.launch_tensors(call.inputs, call.dtypes.inputs)]
    assert got == [(x.data_ptr(), 1, 16), (w.data_ptr(), 0, 0), (b.data_ptr(), 0, 0)], got
    assert call.dtypes.options == (1, 0, 2) and call.dtypes.outputs == [2], call.dtypes


def test_dtype_rules_exhaustive():
    """Every assignment of dtypes to every op's inputs and out_dtype: accepted exactly when the
    built-in can take it, with each tensor's own code; refused naming the tensor otherwise."""
    candidates = (F32, F16, BF16, F8, "torch.int8", "torch.float8_e5m2")
    outs = (None, F32, F16, BF16, F8, "torch.int32", "torch.float8_e5m2")
    accepted = 0
    for op, names in C.OP_INPUTS.items():
        for combo in itertools.product(candidates, repeat=len(names)):
            dts = dict(zip(names, combo))
            for out in outs:
                bad_input = next((n for n in names if dts[n] not in INPUT_DTYPES), None)
                if bad_input:
                    expect_error(TypeError, f"{bad_input} is {dts[bad_input]}",
                                 lambda: C.launch_dtypes(op, dts, out))
                elif "residual" in dts and dts["residual"] != dts["x"]:
                    expect_error(ValueError, "residual", lambda: C.launch_dtypes(op, dts, out))
                elif "bias" in dts and dts["bias"] != dts["weight"]:
                    expect_error(ValueError, "bias", lambda: C.launch_dtypes(op, dts, out))
                elif out is not None and out not in CODE:
                    expect_error(TypeError, ("out_dtype", "supported", F8),
                                 lambda: C.launch_dtypes(op, dts, out))
                else:
                    d = C.launch_dtypes(op, dts, out)
                    assert d.inputs == [CODE[dts[n]] for n in names], (op, dts, d)
                    od = CODE[out or dts["x"]]
                    assert d.outputs == [od] + [CODE[dts["x"]]] * (op == "add_rms_norm"), (op, dts, out, d)
                    assert d.options == (CODE[dts["x"]], CODE[dts.get("weight", dts["x"])], od), (op, dts, out, d)
                    accepted += 1
    # (x, weight) 3 x 3 for rms_norm, layer_norm (bias = weight) and add_rms_norm (residual = x), x alone
    # for softmax; each with out_dtype None, f32, f16, bf16 or f8.
    assert accepted == (9 + 9 + 9 + 3) * 5, accepted


def test_f8():
    d = C.launch_dtypes("rms_norm", {"x": BF16, "weight": BF16}, F8)
    assert d.options == (2, 2, 3) and d.outputs == [3], d
    d = C.launch_dtypes("add_rms_norm", {"x": BF16, "residual": BF16, "weight": F32}, F8)
    assert d.outputs == [3, 2], d  # the sum stays in x's dtype
    expect_error(TypeError, ("out_dtype torch.int8 is not supported", "torch.float32", "torch.float16",
                             "torch.bfloat16", "torch.float8_e4m3fn"),
                 lambda: C.launch_dtypes("softmax", {"x": BF16}, "torch.int8"))
    expect_error(TypeError, ("x is torch.float8_e4m3fn", "outputs only"),
                 lambda: C.launch_dtypes("softmax", {"x": F8}))
    expect_error(TypeError, ("weight is torch.float8_e4m3fn",),
                 lambda: C.prepare("rms_norm", {"x": FakeTensor((4, 8)), "weight": vec(8, F8)}))
    expect_error(TypeError, ("x is torch.int32", "supported"),
                 lambda: C.prepare("softmax", {"x": FakeTensor((4, 8), dtype="torch.int32")}))


def test_empty_batch_returns_empty_outputs():
    with fake_torch() as torch, count_calls("tn_plan_create", "tn_plan_launch") as calls:
        x, r, w = FakeTensor((2, 0, 8)), FakeTensor((2, 0, 8)), vec(8, F32)
        y, h = C.compute("add_rms_norm", {"x": x, "residual": r, "weight": w}, 1e-6, out_dtype=F8)
        assert (y.shape, y.dtype, h.shape, h.dtype) == ((2, 0, 8), F8, (2, 0, 8), BF16), (y.shape, y.dtype, h.dtype)
        y, = C.compute("layer_norm", {"x": FakeTensor((0, 8), dtype=F16), "weight": vec(8), "bias": vec(8)}, 1e-5)
        assert (y.shape, y.dtype) == ((0, 8), F16)
        y, = C.compute("softmax", {"x": FakeTensor((0, 3))}, None)
        assert (y.shape, y.dtype) == ((0, 3), BF16)
        y, = C.compute("rms_norm", {"x": FakeTensor((0, 8)), "weight": None}, 1e-6)  # no ones made either
        # out= with no rows: the given tensor back, untouched.
        o = FakeTensor((0, 8), dtype=F32)
        got = C.compute("rms_norm", {"x": FakeTensor((0, 8)), "weight": w}, 1e-6, outs=[o])
        assert got == [o] and not hasattr(o, "copied_from"), got
        # Still validated: an empty batch with a bad combination is refused.
        expect_error(ValueError, "bias", lambda: C.compute(
            "layer_norm", {"x": FakeTensor((0, 8)), "weight": vec(8), "bias": vec(8, F32)}, 1e-5))
        assert len(torch.empties) == 5 and not torch.fulls, (len(torch.empties), torch.fulls)
    assert calls == {"tn_plan_create": 0, "tn_plan_launch": 0}, calls


def _launch_error(fn):
    """fn() reaches the library's launch and fails there for want of a GPU (nothing else)."""
    e = expect_error(tmanorm.TmanormError, "tn_plan_launch", fn)
    assert "no device" in str(e) and "no GPU" in str(e), e


def test_every_accepted_combination_launches():
    """Every combination the binding accepts, through the launch path on stand-in tensors, reaches
    the library's argument checks (each tn_tensor's dtype against the fusion's) and passes them: the
    only error is the missing GPU. Skipped (passes) where a GPU is present: the pointers are fake."""
    if N.has_gpu():
        print("  (GPU present: launch check skipped; tests/gpu/test_torch.py runs it)")
        return
    rows, cols = 3, 40
    outs = (None, F32, F16, BF16, F8)
    checked = 0
    with fake_torch():
        for xd, wd, out in itertools.product(INPUT_DTYPES, INPUT_DTYPES, outs):
            x, r = FakeTensor((rows, cols), (48, 1), dtype=xd), FakeTensor((rows, cols), dtype=xd)
            w, b = vec(cols, wd), vec(cols, wd)
            calls = [lambda: C.compute("rms_norm", {"x": x, "weight": w}, 1e-6, out),
                     lambda: C.compute("layer_norm", {"x": x, "weight": w, "bias": b}, 1e-5, out),
                     lambda: C.compute("add_rms_norm", {"x": x, "residual": r, "weight": w}, 1e-6, out)]
            if wd == xd:
                calls.append(lambda: C.compute("softmax", {"x": x}, None, out))
            for fn in calls:
                _launch_error(fn)
                checked += 1
    assert checked == 3 * 3 * 5 * 3 + 3 * 5, checked


def test_missing_weight_and_bias():
    """weight None: ones in x's dtype (or bias's); bias None: zeros in weight's dtype; made once per
    (N, dtype, device) and passed with the code the fusion declares."""
    expect_error(ValueError, "residual is required", lambda: C.prepare(
        "add_rms_norm", {"x": FakeTensor((4, 8)), "residual": None, "weight": vec(8)}))
    call = C.prepare("layer_norm", {"x": FakeTensor((4, 8), dtype=F16), "weight": None, "bias": vec(8, F32)})
    assert call.dtypes.inputs == [1, 0, 0] and call.inputs[1] == (None, 0), call
    call = C.prepare("layer_norm", {"x": FakeTensor((4, 8), dtype=F16), "weight": None, "bias": None})
    assert call.dtypes.inputs == [1, 1, 1], call
    if N.has_gpu():
        return
    C._fillers.clear()
    with fake_torch() as torch:
        x = FakeTensor((3, 40), dtype=F16)
        for _ in range(3):
            _launch_error(lambda: C.compute("layer_norm", {"x": x, "weight": None, "bias": vec(40, F32)}, 1e-5))
            _launch_error(lambda: C.compute("rms_norm", {"x": x, "weight": None}, 1e-6))
        made = sorted((t.value, t.shape, t.dtype) for t in torch.fulls)
        assert made == [(1.0, (40,), F16), (1.0, (40,), F32)], made
        # While capturing, a filler is made for that call only (its fill runs on replay).
        torch.capturing = True
        _launch_error(lambda: C.compute("layer_norm", {"x": x, "weight": vec(40, F16), "bias": None}, 1e-5))
        _launch_error(lambda: C.compute("layer_norm", {"x": x, "weight": vec(40, F16), "bias": None}, 1e-5))
        assert [(t.value, t.dtype) for t in torch.fulls[2:]] == [(0.0, F16)] * 2, torch.fulls
    C._fillers.clear()


def test_out_tensors():
    x, w = FakeTensor((4, 8)), vec(8)
    call = C.prepare("add_rms_norm", {"x": x, "residual": FakeTensor((4, 8)), "weight": w}, F8)
    assert C.check_outs("add_rms_norm", [FakeTensor((4, 8), dtype=F8), FakeTensor((4, 8), (16, 1))], x, call) == [8, 16]
    bad = [("shape", [FakeTensor((4, 16), dtype=F8), FakeTensor((4, 8))], ValueError, "out= y has shape (4, 16)"),
           ("dtype", [FakeTensor((4, 8), dtype=F8), FakeTensor((4, 8), dtype=F32)], TypeError,
            "out= sum is torch.float32, expected torch.bfloat16"),
           ("device", [FakeTensor((4, 8), dtype=F8, device="cuda:1"), FakeTensor((4, 8))], ValueError,
            "out= y is on cuda:1 but x is on cuda:0"),
           ("cpu", [FakeTensor((4, 8), dtype=F8, is_cuda=False), FakeTensor((4, 8))], ValueError, "on cpu"),
           ("layout", [FakeTensor((4, 8), (1, 4), dtype=F8), FakeTensor((4, 8))], ValueError,
            "out= y's last dimension is not contiguous"),
           ("broadcast", [FakeTensor((4, 8), (0, 1), dtype=F8), FakeTensor((4, 8))], ValueError, "broadcast"),
           ("count", [FakeTensor((4, 8), dtype=F8)], ValueError, "takes 2 tensors"),
           ("not a tensor", [3, FakeTensor((4, 8))], TypeError, "must be a tensor")]
    for what, outs, kind, needle in bad:
        expect_error(kind, needle, lambda: C.check_outs("add_rms_norm", outs, x, call))
    if N.has_gpu():
        return
    with fake_torch() as torch:
        # Separate outputs: the kernel writes them (the launch is reached, nothing copied).
        y = FakeTensor((3, 40), (64, 1))
        _launch_error(lambda: C.compute("rms_norm", {"x": FakeTensor((3, 40)), "weight": vec(40)}, 1e-6, outs=[y]))
        assert not torch.empties, torch.empties
        # Overlapping each other: refused.
        xr = FakeTensor((3, 40))
        expect_error(ValueError, "overlap each other", lambda: C.compute(
            "add_rms_norm", {"x": FakeTensor((3, 40)), "residual": FakeTensor((3, 40)), "weight": vec(40)}, 1e-6,
            outs=[xr, xr]))


def test_in_place_writes_fresh_outputs():
    """An out= tensor that overlaps an input without being it (a shifted view, the weight's bytes):
    the kernels may not write what they read, so they write fresh tensors, copied in after the
    launch."""
    if N.has_gpu():
        return
    with fake_torch() as torch:
        # A view into x's rows (same bytes) counts; a disjoint slice of one buffer does not.
        base = FakeTensor((6, 40))
        top, bottom = FakeTensor((3, 40)), FakeTensor((3, 40))
        top._ptr, bottom._ptr = base._ptr, base._ptr + 3 * 40 * 2
        _launch_error(lambda: C.compute("rms_norm", {"x": top, "weight": vec(40)}, 1e-6, outs=[bottom]))
        assert len(torch.empties) == 0, torch.empties
        near = FakeTensor((3, 40))
        near._ptr = base._ptr + 3 * 40 * 2 - 2  # one element into top's last row
        _launch_error(lambda: C.compute("rms_norm", {"x": top, "weight": vec(40)}, 1e-6, outs=[near]))
        assert len(torch.empties) == 1, torch.empties
        shifted = FakeTensor((3, 40))
        shifted._ptr = top._ptr + 2  # x's rows one element on
        _launch_error(lambda: C.compute("rms_norm", {"x": top, "weight": vec(40)}, 1e-6, outs=[shifted]))
        assert len(torch.empties) == 2, torch.empties
        # h over the weight (a COL input): not in place either.
        x, r, w = FakeTensor((3, 40)), FakeTensor((3, 40)), vec(40)
        over_w = FakeTensor((3, 40))
        over_w._ptr = w._ptr
        _launch_error(lambda: C.compute("add_rms_norm", {"x": x, "residual": r, "weight": w}, 1e-6,
                                        outs=[x, over_w]))
        assert len(torch.empties) == 4, torch.empties


def test_in_place_launches_in_place():
    """fused_add_rms_norm_'s out= (x, residual) over its inputs exactly (same address, row stride and
    dtype): launched in place, no fresh tensors, no copies."""
    if N.has_gpu():
        return
    with fake_torch() as torch, stub_launch() as launches:
        x, r = FakeTensor((3, 40)), FakeTensor((3, 40))
        got = C.compute("add_rms_norm", {"x": x, "residual": r, "weight": vec(40)}, 1e-6, outs=[x, r])
        assert got == [x, r] and not torch.empties and len(launches) == 1, (got, torch.empties)
        assert getattr(x, "copied_from", None) is None and getattr(r, "copied_from", None) is None
        got = C.compute("rms_norm", {"x": x, "weight": None}, 1e-6, outs=[x])  # weight None: a filler
        assert got == [x] and not torch.empties and len(launches) == 2, torch.empties


def test_in_place_copies_in():
    """A partial overlap (out= x's rows one element on) computes into a fresh tensor, copied in."""
    if N.has_gpu():
        return
    with fake_torch() as torch, stub_launch() as launches:
        x = FakeTensor((3, 40))
        shifted = FakeTensor((3, 40))
        shifted._ptr = x._ptr + 2
        got = C.compute("rms_norm", {"x": x, "weight": vec(40)}, 1e-6, outs=[shifted])
        (y,) = torch.empties
        assert got == [shifted] and shifted.copied_from is y and len(launches) == 1, got


def test_plan_cache_bounded():
    """The plan cache keeps N.PLAN_CACHE_SIZE plans, keyed by what changes the kernels (here N),
    least recently used first: past it, one synchronize, then the oldest destroyed down to 3/4 of
    the size. Plans launched while capturing are pinned (a graph may replay them) and nothing is
    evicted during a capture."""
    if N.has_gpu():
        return
    cap = N.PLAN_CACHE_SIZE
    ctx = fresh_context()
    x_of = lambda n: FakeTensor((3, n), device="cuda:7")  # noqa: E731
    w_of = lambda n: vec(n, device="cuda:7")  # noqa: E731
    with fake_torch() as torch, stub_launch() as launches, \
            count_calls("tn_plan_create", "tn_plan_destroy") as calls:
        for n in range(1, cap + 1):
            C.compute("rms_norm", {"x": x_of(n), "weight": w_of(n)}, 1e-6)
        assert len(ctx.cache.plans) == cap and calls["tn_plan_destroy"] == 0 and torch.syncs == 0
        C.compute("rms_norm", {"x": x_of(1), "weight": w_of(1)}, 1e-6)  # a hit: N = 1 becomes the newest
        C.compute("rms_norm", {"x": x_of(cap + 1), "weight": w_of(cap + 1)}, 1e-6)
        keep = cap - cap // 4
        assert len(ctx.cache.plans) == keep and calls["tn_plan_destroy"] == cap + 1 - keep, calls
        assert torch.syncs == 1 and len(launches) == cap + 2, (torch.syncs, len(launches))
        cols = sorted(key[2] for key in ctx.cache.plans)
        assert cols[:2] == [1, cap + 2 - keep + 1] and cols[-1] == cap + 1, cols[:3]
        # Capturing: pinned, and nothing evicted while the capture lasts.
        torch.capturing = True
        for n in range(1000, 1000 + cap):
            C.compute("rms_norm", {"x": x_of(n), "weight": w_of(n)}, 1e-6)
        assert len(ctx.cache.plans) == keep + cap and len(ctx.cache.pinned) == cap, len(ctx.cache.plans)
        assert calls["tn_plan_destroy"] == cap + 1 - keep and torch.syncs == 1, calls
        # After it, pinned plans do not count against the size and are never evicted.
        torch.capturing = False
        for n in range(5000, 5000 + cap - keep + 1):
            C.compute("rms_norm", {"x": x_of(n), "weight": w_of(n)}, 1e-6)
        assert all(key in ctx.cache.plans for key in ctx.cache.pinned)
        assert len(ctx.cache.plans) == cap + keep and torch.syncs == 2, (len(ctx.cache.plans), torch.syncs)
        assert calls["tn_plan_create"] == ctx.cache.created == (cap + 1) + cap + (cap - keep + 1), calls
        info = tmanorm._plan_cache_info(7)
        assert info["plans"] == len(ctx.cache.plans) and info["pinned"] == cap and info["kernels"] >= 1, info
        assert info["evicted"] == calls["tn_plan_destroy"] and info["hits"] == 1, info
    N.contexts.pop((7, None)).cache.plans.clear()


def test_plan_per_doubling_of_rows():
    """A row count that changes every call makes a plan a doubling (row tiers up to a power of two),
    not one a row count: the outgrown plan is destroyed after one synchronize, or, when pinned by a
    capture, kept (retired) without either. Every launch is told its rows."""
    if N.has_gpu():
        return
    ctx = fresh_context()
    w = vec(64, device="cuda:7")
    rows_launched = []
    saved = N.Context.launch
    N.Context.launch = lambda c, plan, ins, outs, params, stream, rows=0: rows_launched.append(rows)
    try:
        with fake_torch() as torch, count_calls("tn_plan_create", "tn_plan_destroy") as calls:
            for m in range(1, 1001):
                C.compute("rms_norm", {"x": FakeTensor((m, 64), device="cuda:7"), "weight": w}, 1e-6)
            assert calls["tn_plan_create"] == 11 and calls["tn_plan_destroy"] == 10 and torch.syncs == 10, calls
            assert len(ctx.cache.plans) == 1 and list(ctx.cache.bounds.values()) == [1024], ctx.cache.bounds
            assert rows_launched == list(range(1, 1001)), rows_launched[:5]
            tiers = ctx.describe(next(iter(ctx.cache.plans.values())), N.DESCRIBE_TIERS)
            n = int(tiers.split()[0])  # tiers end where the scheduler's choice changes: a handful
            assert 1 <= n <= 8 and "-1024: " in tiers and tiers.count("  rows ") == n, tiers
            torch.capturing = True
            C.compute("rms_norm", {"x": FakeTensor((1000, 64), device="cuda:7"), "weight": w}, 1e-6)
            C.compute("rms_norm", {"x": FakeTensor((3000, 64), device="cuda:7"), "weight": w}, 1e-6)
            assert calls["tn_plan_destroy"] == 10 and torch.syncs == 10 and len(ctx.cache.retired) == 1, calls
            assert ctx.cache.bounds[next(iter(ctx.cache.plans))] == 4096 and ctx.cache.pinned, ctx.cache.bounds
            assert tmanorm._plan_cache_info(7)["retired"] == 1
    finally:
        N.Context.launch = saved
        N.contexts.pop((7, None)).cache.plans.clear()


def test_row_bound():
    """A plan is made for the next power of two of the rows (at most 2^48, the library's bound)."""
    got = [N.row_bound(m) for m in (1, 2, 3, 4, 5, 1000, 1024, 1025)]
    assert got == [1, 2, 4, 4, 8, 1024, 1024, 2048], got
    assert N.row_bound(N.MAX_ROWS) == N.MAX_ROWS and N.row_bound(N.MAX_ROWS // 2 + 1) == N.MAX_ROWS
    assert N.MAX_ROWS == 1 << 48


class track_plans:
    """Wraps tn_plan_create and tn_plan_destroy on the library: the live plans (handle -> the rows each
    was made for), and every destroy of a plan not live or of one a capture launched, as an error."""

    def __init__(self):
        self.lib, self.live, self.captured, self.errors = N.library(), {}, set(), []
        self.created = self.destroyed = 0
        self.lock = threading.Lock()

    def __enter__(self):
        self.saved = create, destroy = self.lib.tn_plan_create, self.lib.tn_plan_destroy

        def tn_plan_create(ctx, fusion, rows, cols, opts, out):
            status = create(ctx, fusion, rows, cols, opts, out)
            if status == 0:
                with self.lock:
                    self.live[out._obj.value] = rows
                    self.created += 1
            return status

        def tn_plan_destroy(plan):
            handle = plan.value if isinstance(plan, ctypes.c_void_p) else plan
            with self.lock:
                if handle not in self.live:
                    self.errors.append(f"plan {handle:#x} destroyed but not live")
                if handle in self.captured:
                    self.errors.append(f"plan {handle:#x} destroyed after a capture launched it")
                self.live.pop(handle, None)
                self.destroyed += 1
            destroy(plan)
        self.lib.tn_plan_create, self.lib.tn_plan_destroy = tn_plan_create, tn_plan_destroy
        return self

    def __exit__(self, *exc):
        self.lib.tn_plan_create, self.lib.tn_plan_destroy = self.saved


def test_threads_grow_plans():
    """Eight threads call the binding at once with random row counts (1 to 5000, so plans grow many
    times), five N (keys) over a cache of two, some calls at one N capturing a graph (per thread):
    no call fails; every launch gets a live plan made for at least its rows; no plan a capture
    launched is destroyed, none twice; afterwards the plans live are exactly those held and retired,
    the row bounds kept for exactly the plans held (each the rows its plan was made for), and pinned
    ones among them."""
    if N.has_gpu():
        return
    ctx = fresh_context()
    ctx.cache.capacity = 2
    local = threading.local()
    failures, launches = [], [0]
    saved = N.Context.launch
    with fake_torch() as torch, track_plans() as plans:
        torch.cuda.is_current_stream_capturing = lambda: getattr(local, "capturing", False)

        def launch(c, plan, ins, outs, params, stream, rows=0):
            time.sleep(0.0002)  # lets other threads run (as a launch does) between the lookup and the check
            with plans.lock:
                bound = plans.live.get(plan.value)
                launches[0] += 1
                if bound is None or not 1 <= rows <= bound:
                    failures.append(f"{rows} rows launched on plan {plan.value:#x} of {bound} rows")
                if local.capturing:
                    plans.captured.add(plan.value)
        N.Context.launch = launch

        def worker(seed):
            rng = random.Random(seed)
            try:
                for i in range(150):
                    m = int(2 ** rng.uniform(0, 12.3))
                    n = rng.choice((64, 128, 256, 512, 1024))
                    local.capturing = n == 64 and rng.random() < 0.3 and i < 149  # each thread's last call eager
                    C.compute("rms_norm", {"x": FakeTensor((m, n), device="cuda:7"),
                                           "weight": vec(n, device="cuda:7")}, 1e-6)
            except Exception:  # noqa: BLE001 - reported below
                failures.append(traceback.format_exc())
        try:
            threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            N.Context.launch = saved
        c = ctx.cache
        assert not failures, failures[:3]
        assert not plans.errors, plans.errors[:3]
        assert launches[0] == 8 * 150, launches
        held = {p.value for p in c.plans.values()}
        retired = {p.value for p in c.retired}
        assert set(plans.live) == held | retired and not held & retired, (len(plans.live), len(held), len(retired))
        assert plans.created == plans.destroyed + len(held) + len(retired), (plans.created, plans.destroyed)
        assert set(c.bounds) == set(c.plans) and c.pinned <= set(c.plans), (c.bounds, c.pinned)
        assert all(plans.live[p.value] == c.bounds[k] for k, p in c.plans.items()), c.bounds
        assert len(c.plans) - len(c.pinned) <= c.capacity and c.evicted > 0 and plans.destroyed > c.evicted, \
            (len(c.plans), len(c.pinned), c.evicted, plans.destroyed)
        assert retired and c.pinned, (len(retired), c.pinned)  # the capture paths ran
    N.contexts.pop((7, None)).cache.plans.clear()


def test_failed_launch_leaks_no_plan():
    """A call that replaces its key's plan with one for more rows and whose launch then raises (here
    the library's "no GPU"; on a GPU a refused tensor or a CUDA error) still disposes of the replaced
    plan: after a later call that succeeds, the plans live are exactly those held and retired."""
    if N.has_gpu():
        return
    ctx = fresh_context()
    w = vec(64, device="cuda:7")
    with fake_torch(), track_plans() as plans:
        for m in (100, 200, 500, 1000):  # each a new power of two: each replaces the plan before it
            expect_error(tmanorm.TmanormError, "tn_plan_launch",
                         lambda: C.compute("rms_norm", {"x": FakeTensor((m, 64), device="cuda:7"), "weight": w},
                                           1e-6))
        with stub_launch():
            C.compute("rms_norm", {"x": FakeTensor((10, 64), device="cuda:7"), "weight": w}, 1e-6)
        c = ctx.cache
        held, retired = {p.value for p in c.plans.values()}, {p.value for p in c.retired}
        assert plans.created == 4 and not plans.errors, (plans.created, plans.errors)
        assert set(plans.live) == held | retired, (len(plans.live), len(held), len(retired))
    N.contexts.pop((7, None)).cache.plans.clear()


def test_rows_past_the_bound_refused():
    """More rows than a plan may have (2^48) are refused before any plan is made: not a plan for 2^48
    rows made, cached and replaced again on every such call."""
    if N.has_gpu():
        return
    fresh_context()
    w = vec(64, device="cuda:7")
    with fake_torch(), stub_launch() as launches, count_calls("tn_plan_create") as calls:
        for _ in range(2):
            expect_error(ValueError, "2^48", lambda: C.compute(
                "rms_norm", {"x": FakeTensor((N.MAX_ROWS + 1, 64), device="cuda:7"), "weight": w}, 1e-6))
        assert calls["tn_plan_create"] == 0 and not launches, (calls, launches)
    N.contexts.pop((7, None)).cache.plans.clear()


def test_hits_are_calls_a_cached_plan_served():
    """hits counts the calls a cached plan served: not a plan found outgrown and replaced."""
    if N.has_gpu():
        return
    ctx = fresh_context()
    w = vec(64, device="cuda:7")
    with fake_torch(), stub_launch():
        for m in range(1, 1001):
            C.compute("rms_norm", {"x": FakeTensor((m, 64), device="cuda:7"), "weight": w}, 1e-6)
    assert ctx.cache.created == 11 and ctx.cache.hits == 1000 - 11, (ctx.cache.created, ctx.cache.hits)
    N.contexts.pop((7, None)).cache.plans.clear()


def test_version_and_lookup():
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "tmanorm.h")
    with open(header) as f:
        text = f.read()
    parts = [re.search(rf"^#define TN_VERSION_{p} (\d+)$", text, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
    assert all(parts), "TN_VERSION_MAJOR/MINOR/PATCH not found in include/tmanorm.h"
    header_version = ".".join(m[1] for m in parts)
    assert N.VERSION == header_version, f"_native.py's VERSION {N.VERSION} != the header's {header_version}"
    lib = N.library()
    if hasattr(lib, "tn_version"):
        assert tmanorm.__version__ == lib.tn_version().decode() == header_version, tmanorm.__version__
    else:
        print("  (the library predates tn_version: __version__ is the constant)")
        assert tmanorm.__version__ == N.VERSION
    # Lookup order: beside the package, then $TMANORM_LIB, then build folders, then the loader's path.
    found = N.library_candidates()
    here = os.path.dirname(os.path.abspath(tmanorm.__file__))
    beside = [p for p in found if os.path.dirname(p) == here]
    env = os.environ.get("TMANORM_LIB")
    if env:
        assert found.index(env) == len(beside), found
    assert found[-1] == "libtmanorm.so", found


def test_launch_checks_reach_library():
    """The library refuses a tensor labelled with the wrong dtype (what the old binding sent), so the
    launch check above would catch a binding that mislabelled one."""
    if N.has_gpu():
        return
    ctx = N.context(0)
    plan = ctx.make_plan("layer_norm", (2, 2, 2), 3, 40)
    x, w, b, y = FakeTensor((3, 40)), vec(40, F32), vec(40, F32), FakeTensor((3, 40))
    ins = [N.Tensor(x.data_ptr(), 2, 40), N.Tensor(w.data_ptr(), 0, 0),
           N.Tensor(b.data_ptr(), 0, 0)]
    outs = [N.Tensor(y.data_ptr(), 2, 40)]
    try:
        expect_error(tmanorm.TmanormError, ("tn_plan_launch", "input 1", "is f32, the fusion's is bf16"),
                     lambda: ctx.launch(plan, ins, outs, [1e-5], None))
    finally:
        N.library().tn_plan_destroy(plan)


def test_pdl_option():
    def pdl_of(text):
        return int(re.search(r"^  pdl +(\d+)$", text, re.M)[1])
    assert pdl_of(tmanorm.explain("rms_norm", 4096, 4096, "bf16", target="h200")) == 1  # on by default on Hopper
    assert pdl_of(tmanorm.explain("rms_norm", 4096, 4096, "bf16", target="h200", pdl=False)) == 0
    assert pdl_of(tmanorm.explain("rms_norm", 4096, 4096, "bf16", target="a100")) == 0  # not there below sm_90
    try:
        tmanorm.explain("rms_norm", 4096, 4096, "bf16", target="a100", pdl=True)
        raise AssertionError("PDL forced on an A100 was accepted")
    except tmanorm.TmanormError as e:
        assert "sm_90" in str(e), e
    for bad in (1, "on"):
        try:
            tmanorm.explain("rms_norm", 64, 64, "bf16", target="h200", pdl=bad)
            raise AssertionError(f"pdl={bad!r} accepted")
        except TypeError as e:
            assert "pdl" in str(e), e


def test_explain_names():
    for op in ("rms_norm", "rmsnorm"):
        text = tmanorm.explain(op, 4096, 4096, "bf16", target="h200")
        assert re.search(r"^plan (register|tma|tma-ws|cluster)$", text, re.M) and "why:" in text, text
    for op, dtype in (("layernorm", "fp16"), ("layer_norm", "half"), ("add_rmsnorm", "bfloat16"),
                      ("add_rms_norm", "f32"), ("softmax", "float32"), ("softmax", "float16"),
                      ("rmsnorm", "fp32"), ("rmsnorm", "bf16"), ("rmsnorm", "f16")):
        assert "plan " in tmanorm.explain(op, 64, 1000, dtype, target="h100"), (op, dtype)

    class TorchDtype:  # a torch dtype, by its str
        def __str__(self):
            return "torch.bfloat16"
    assert "plan " in tmanorm.explain("softmax", 8, 100, TorchDtype(), target="a100")
    assert "plan " in tmanorm.explain("softmax", 8, 100, "bf16")  # no GPU here: plans for h200
    expect_error(ValueError, ("unknown op 'rms'", "rms_norm", "rmsnorm", "add_rmsnorm", "add_rms_norm"),
                 lambda: tmanorm.explain("rms", 8, 8))
    expect_error(ValueError, ("unknown dtype 'int8'", "f32", "bf16", "half"), lambda: tmanorm.explain("rmsnorm", 8, 8, "int8"))
    expect_error(ValueError, ("f8e4m3", "output dtype only"), lambda: tmanorm.explain("rmsnorm", 8, 8, "f8e4m3"))
    expect_error(ValueError, "unknown out_dtype", lambda: tmanorm.explain("rmsnorm", 8, 8, out_dtype="int8"))
    for out in ("f8e4m3", "fp8", "e4m3", "torch.float8_e4m3fn", "f32"):
        text = tmanorm.explain("rmsnorm", 64, 4096, "bf16", target="h200", weight_dtype="float", out_dtype=out)
        assert "plan " in text, (out, text)
    # The library's own errors come through TmanormError.
    expect_error(tmanorm.TmanormError, ("tn_plan_create", "invalid argument", "M = 0"),
                 lambda: tmanorm.explain("rmsnorm", 0, 8, target="h200"))
    expect_error(tmanorm.TmanormError, "tn_context_create", lambda: tmanorm.explain("rmsnorm", 8, 8, target="z9"))
    # row_tiers: the tiers of the plan the ops keep for up to `rows` rows, after the plan for `rows`.
    text = tmanorm.explain("rms_norm", 1000, 4096, "bf16", target="h200", row_tiers=True)
    tiers = text[text.index("row tier"):]
    assert re.search(r"^\d+ row tiers?, \d+ kernels?, for 1 to 1000 rows$", text, re.M) and "  rows 1-" in tiers, text
    assert "row tier" not in tmanorm.explain("rms_norm", 1000, 4096, "bf16", target="h200")
    expect_error(TypeError, "row_tiers must be True or False",
                 lambda: tmanorm.explain("rms_norm", 8, 8, target="h200", row_tiers=1))


def test_explain_reuses_context_and_frees_plans():
    tmanorm.explain("rmsnorm", 4096, 4096, "bf16", target="h200")  # the context exists from here on
    N.has_gpu()
    before = dict(N.contexts)
    with count_calls("tn_context_create", "tn_context_destroy", "tn_plan_create", "tn_plan_destroy") as calls:
        for i in range(50):
            tmanorm.explain("rmsnorm" if i % 2 else "rms_norm", 4096, 4096, "bf16", target="h200")
            N.has_gpu()
    assert calls == {"tn_context_create": 0, "tn_context_destroy": 0, "tn_plan_create": 50,
                     "tn_plan_destroy": 50}, calls
    assert N.contexts == before, (N.contexts, before)


def test_library_signatures():
    lib = N.library()
    for name in ("tn_plan_destroy", "tn_context_destroy", "tn_fusion_destroy"):
        assert getattr(lib, name).restype is None and getattr(lib, name).argtypes, name
    for name in ("tn_context_has_gpu", "tn_context_create", "tn_plan_describe", "tn_plan_launch",
                 "tn_plan_create", "tn_fusion_builtin", "tn_status_string", "tn_context_last_error"):
        assert getattr(lib, name).argtypes is not None, name


def main():
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
    print(f"python binding: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
