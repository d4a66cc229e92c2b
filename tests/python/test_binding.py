"""CPU tier for the Python binding: dtype, shape, stride and device validation
on stand-in tensors, the launch arguments the binding builds (checked by the
real library, which validates every argument before it finds there is no
GPU), and explain() through the real library (no GPU, no torch needed).
Run: python3 tests/python/test_binding.py (ctest runs it, with TMANORM_LIB set)."""
import itertools
import re
import os
import sys
import traceback
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tmanorm  # noqa: E402

F32, F16, BF16, F8 = "torch.float32", "torch.float16", "torch.bfloat16", "torch.float8_e4m3fn"
INPUT_DTYPES = (F32, F16, BF16)
CODE = {F32: 0, F16: 1, BF16: 2, F8: 3}


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


class FakeTorch(types.ModuleType):
    """Stands in for the torch module in the binding's launch path."""

    def __init__(self):
        super().__init__("torch")
        self.empties = []
        self.cuda = types.SimpleNamespace(
            current_device=lambda: 0,
            current_stream=lambda device=None: types.SimpleNamespace(cuda_stream=0))

    def empty(self, shape, dtype=None, device=None):
        t = FakeTensor(shape, dtype=str(dtype), device=str(device))
        self.empties.append(t)
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
        self.lib, self.names, self.counts = tmanorm._library(), names, dict.fromkeys(names, 0)

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
    rv = tmanorm._rows_view
    assert rv(FakeTensor((4, 8), (8, 1)), "x") == (4, 8, 8)
    assert rv(FakeTensor((4, 8), (16, 1)), "x") == (4, 8, 16)           # padded rows
    assert rv(FakeTensor((2, 3, 8), (24, 8, 1)), "x") == (6, 8, 8)      # leading dims collapse
    assert rv(FakeTensor((8,), (1,)), "x") == (1, 8, 8)
    assert rv(FakeTensor((1, 8), (40, 1)), "x") == (1, 8, 8)            # one row: its stride is never used


def test_rows_view_refusals():
    rv = tmanorm._rows_view
    expect_error(ValueError, "on cpu", lambda: rv(FakeTensor((4, 8), (8, 1), is_cuda=False), "x"))
    expect_error(ValueError, "not contiguous", lambda: rv(FakeTensor((4, 8), (1, 4)), "x"))
    expect_error(ValueError, "uniform row stride", lambda: rv(FakeTensor((2, 3, 8), (100, 8, 1)), "x"))
    expect_error(ValueError, "columns", lambda: rv(FakeTensor((4, 8), (8, 1)), "r", cols=16))
    expect_error(ValueError, "last dimension", lambda: rv(FakeTensor((4, 0), (1, 1)), "x"))


def test_broadcast_rows_refused():
    # x[1, N].expand(M, N): row stride 0, which the library would read as "N".
    rv = tmanorm._rows_view
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
    expect_error(ValueError, "x is broadcast", lambda: tmanorm._prepare(
        "rms_norm", {"x": FakeTensor((4, 8), (0, 1)), "weight": vec(8)}))
    expect_error(ValueError, "residual is broadcast", lambda: tmanorm._prepare(
        "add_rms_norm", {"x": FakeTensor((4, 8)), "residual": FakeTensor((4, 8), (0, 1)), "weight": vec(8)}))


def test_size_one_dims_ignored():
    rv = tmanorm._rows_view
    # PyTorch gives size-1 dimensions arbitrary strides; they take no step.
    assert rv(FakeTensor((2, 1, 8), (8, 7, 1)), "x") == (2, 8, 8)
    assert rv(FakeTensor((1, 4, 8), (999, 8, 1)), "x") == (4, 8, 8)
    assert rv(FakeTensor((2, 1, 3, 8), (24, 5, 8, 1)), "x") == (6, 8, 8)
    assert rv(FakeTensor((2, 1, 8), (16, 3, 1)), "x") == (2, 8, 16)     # padded, size-1 stride odd
    assert rv(FakeTensor((3, 1), (5, 9)), "x") == (3, 1, 5)             # N = 1: last stride free
    # Non-uniform strides across dimensions that do step are still refused.
    expect_error(ValueError, "uniform row stride", lambda: rv(FakeTensor((2, 1, 3, 8), (30, 5, 8, 1)), "x"))


def test_empty_batch_view():
    rv = tmanorm._rows_view
    assert rv(FakeTensor((0, 8), (8, 1)), "x") == (0, 8, 8)
    assert rv(FakeTensor((2, 0, 8), (0, 8, 1)), "x") == (0, 8, 8)
    call = tmanorm._prepare("add_rms_norm", {"x": FakeTensor((0, 8)), "residual": FakeTensor((0, 8)),
                                             "weight": vec(8)})
    assert call.rows == 0 and call.cols == 8


def test_vectors():
    cv = tmanorm._check_vector
    expect_error(ValueError, "contiguous vector", lambda: cv(FakeTensor((8,), (2,)), "w", 8))
    expect_error(ValueError, ("weight", "8 elements"), lambda: tmanorm._prepare(
        "rms_norm", {"x": FakeTensor((4, 8)), "weight": vec(16)}))
    expect_error(ValueError, ("bias", "contiguous vector"), lambda: tmanorm._prepare(
        "layer_norm", {"x": FakeTensor((4, 8)), "weight": vec(8), "bias": FakeTensor((1, 8))}))
    expect_error(ValueError, ("weight is on cpu"), lambda: tmanorm._prepare(
        "rms_norm", {"x": FakeTensor((4, 8)), "weight": vec(8, is_cuda=False)}))
    cv(FakeTensor((1,), (5,)), "w", 1)  # one element: any stride


def test_device_mismatch_refused():
    x = FakeTensor((4, 8))
    expect_error(ValueError, ("weight is on cuda:1", "x is on cuda:0"), lambda: tmanorm._prepare(
        "rms_norm", {"x": x, "weight": vec(8, device="cuda:1")}))
    expect_error(ValueError, ("bias is on cuda:1",), lambda: tmanorm._prepare(
        "layer_norm", {"x": x, "weight": vec(8), "bias": vec(8, device="cuda:1")}))
    expect_error(ValueError, ("residual is on cuda:1",), lambda: tmanorm._prepare(
        "add_rms_norm", {"x": x, "residual": FakeTensor((4, 8), device="cuda:1"), "weight": vec(8)}))


def test_bias_weight_dtype_mismatch_refused():
    expect_error(ValueError, "tmanorm: layer_norm: bias is torch.float32 but weight is torch.bfloat16; "
                             "weight and bias must share one dtype",
                 lambda: tmanorm._launch_dtypes("layer_norm", {"x": BF16, "weight": BF16, "bias": F32}))
    # Through a whole call on stand-in tensors: refused before anything is launched.
    with count_calls("tn_plan_create", "tn_plan_launch") as calls:
        expect_error(ValueError, "bias is torch.float32", lambda: tmanorm._prepare(
            "layer_norm", {"x": FakeTensor((4, 8)), "weight": vec(8, BF16), "bias": vec(8, F32)}))
    assert calls == {"tn_plan_create": 0, "tn_plan_launch": 0}, calls


def test_residual_mismatch_refused():
    expect_error(ValueError, ("residual is torch.float16 but x is torch.bfloat16", "residual must share x's dtype"),
                 lambda: tmanorm._launch_dtypes("add_rms_norm", {"x": BF16, "residual": F16, "weight": BF16}))
    expect_error(ValueError, ("residual has shape (2, 4, 8) but x has shape (8, 8)",), lambda: tmanorm._prepare(
        "add_rms_norm", {"x": FakeTensor((8, 8)), "residual": FakeTensor((2, 4, 8)), "weight": vec(8)}))
    expect_error(ValueError, ("residual",), lambda: tmanorm._prepare(
        "add_rms_norm", {"x": FakeTensor((4, 8)), "residual": FakeTensor((4, 16)), "weight": vec(8)}))


def test_each_tensor_its_own_dtype_code():
    d = tmanorm._launch_dtypes("layer_norm", {"x": BF16, "weight": F32, "bias": F32})
    assert d.options == (2, 0, 2) and d.inputs == [2, 0, 0] and d.outputs == [2], d
    d = tmanorm._launch_dtypes("add_rms_norm", {"x": F16, "residual": F16, "weight": BF16}, F32)
    assert d.options == (1, 2, 0) and d.inputs == [1, 1, 2] and d.outputs == [0, 1], d
    # The tn_tensor list built for the launch: each tensor's pointer, own code and row stride.
    x, w, b = FakeTensor((4, 8), (16, 1), dtype=F16), vec(8, F32), vec(8, F32)
    call = tmanorm._prepare("layer_norm", {"x": x, "weight": w, "bias": b}, out_dtype=BF16)
    got = [(t.data, t.dtype, t.row_stride) for t in tmanorm._launch_tensors(call.inputs, call.dtypes.inputs)]
    assert got == [(x.data_ptr(), 1, 16), (w.data_ptr(), 0, 0), (b.data_ptr(), 0, 0)], got
    assert call.dtypes.options == (1, 0, 2) and call.dtypes.outputs == [2], call.dtypes


def test_dtype_rules_exhaustive():
    """Every assignment of dtypes to every op's inputs and out_dtype: accepted exactly when the
    built-in can take it, with each tensor's own code; refused naming the tensor otherwise."""
    candidates = (F32, F16, BF16, F8, "torch.int8", "torch.float8_e5m2")
    outs = (None, F32, F16, BF16, F8, "torch.int32", "torch.float8_e5m2")
    accepted = 0
    for op, names in tmanorm._OP_INPUTS.items():
        for combo in itertools.product(candidates, repeat=len(names)):
            dts = dict(zip(names, combo))
            for out in outs:
                bad_input = next((n for n in names if dts[n] not in INPUT_DTYPES), None)
                if bad_input:
                    expect_error(TypeError, f"{bad_input} is {dts[bad_input]}",
                                 lambda: tmanorm._launch_dtypes(op, dts, out))
                elif "residual" in dts and dts["residual"] != dts["x"]:
                    expect_error(ValueError, "residual", lambda: tmanorm._launch_dtypes(op, dts, out))
                elif "bias" in dts and dts["bias"] != dts["weight"]:
                    expect_error(ValueError, "bias", lambda: tmanorm._launch_dtypes(op, dts, out))
                elif out is not None and out not in CODE:
                    expect_error(TypeError, ("out_dtype", "supported", F8),
                                 lambda: tmanorm._launch_dtypes(op, dts, out))
                else:
                    d = tmanorm._launch_dtypes(op, dts, out)
                    assert d.inputs == [CODE[dts[n]] for n in names], (op, dts, d)
                    od = CODE[out or dts["x"]]
                    assert d.outputs == [od] + [CODE[dts["x"]]] * (op == "add_rms_norm"), (op, dts, out, d)
                    assert d.options == (CODE[dts["x"]], CODE[dts.get("weight", dts["x"])], od), (op, dts, out, d)
                    accepted += 1
    # (x, weight) 3 x 3 for rms_norm, layer_norm (bias = weight) and add_rms_norm (residual = x), x alone
    # for softmax; each with out_dtype None, f32, f16, bf16 or f8.
    assert accepted == (9 + 9 + 9 + 3) * 5, accepted


def test_f8():
    d = tmanorm._launch_dtypes("rms_norm", {"x": BF16, "weight": BF16}, F8)
    assert d.options == (2, 2, 3) and d.outputs == [3], d
    d = tmanorm._launch_dtypes("add_rms_norm", {"x": BF16, "residual": BF16, "weight": F32}, F8)
    assert d.outputs == [3, 2], d  # the sum stays in x's dtype
    expect_error(TypeError, ("out_dtype torch.int8 is not supported", "torch.float32", "torch.float16",
                             "torch.bfloat16", "torch.float8_e4m3fn"),
                 lambda: tmanorm._launch_dtypes("softmax", {"x": BF16}, "torch.int8"))
    expect_error(TypeError, ("x is torch.float8_e4m3fn", "outputs only"),
                 lambda: tmanorm._launch_dtypes("softmax", {"x": F8}))
    expect_error(TypeError, ("weight is torch.float8_e4m3fn",),
                 lambda: tmanorm._prepare("rms_norm", {"x": FakeTensor((4, 8)), "weight": vec(8, F8)}))
    expect_error(TypeError, ("x is torch.int32", "supported"),
                 lambda: tmanorm._prepare("softmax", {"x": FakeTensor((4, 8), dtype="torch.int32")}))


def test_empty_batch_returns_empty_outputs():
    with fake_torch() as torch, count_calls("tn_plan_create", "tn_plan_launch") as calls:
        x, r, w = FakeTensor((2, 0, 8)), FakeTensor((2, 0, 8)), vec(8, F32)
        y, h = tmanorm.add_rms_norm(x, r, w, out_dtype=F8)
        assert (y.shape, y.dtype, h.shape, h.dtype) == ((2, 0, 8), F8, (2, 0, 8), BF16), (y.shape, y.dtype, h.dtype)
        y = tmanorm.layer_norm(FakeTensor((0, 8), dtype=F16), vec(8), vec(8))
        assert (y.shape, y.dtype) == ((0, 8), F16)
        y = tmanorm.softmax(FakeTensor((0, 3)))
        assert (y.shape, y.dtype) == ((0, 3), BF16)
        # Still validated: an empty batch with a bad combination is refused.
        expect_error(ValueError, "bias", lambda: tmanorm.layer_norm(FakeTensor((0, 8)), vec(8), vec(8, F32)))
        assert len(torch.empties) == 4, len(torch.empties)
    assert calls == {"tn_plan_create": 0, "tn_plan_launch": 0}, calls


def test_every_accepted_combination_launches():
    """Every combination the binding accepts, through the public ops on stand-in tensors, reaches
    the library's argument checks (each tn_tensor's dtype against the fusion's) and passes them: the
    only error is the missing GPU. Skipped (passes) where a GPU is present: the pointers are fake."""
    if tmanorm._has_gpu():
        print("  (GPU present: launch check skipped; tests/gpu/test_torch.py runs it)")
        return
    rows, cols = 3, 40
    outs = (None, F32, F16, BF16, F8)
    checked = 0
    with fake_torch():
        for xd, wd, out in itertools.product(INPUT_DTYPES, INPUT_DTYPES, outs):
            x, r = FakeTensor((rows, cols), (48, 1), dtype=xd), FakeTensor((rows, cols), dtype=xd)
            w, b = vec(cols, wd), vec(cols, wd)
            calls = [lambda: tmanorm.rms_norm(x, w, out_dtype=out),
                     lambda: tmanorm.layer_norm(x, w, b, out_dtype=out),
                     lambda: tmanorm.add_rms_norm(x, r, w, out_dtype=out)]
            if wd == xd:
                calls.append(lambda: tmanorm.softmax(x, out_dtype=out))
            for fn in calls:
                e = expect_error(tmanorm.TmanormError, "tn_plan_launch", fn)
                assert "no device" in str(e) and "no GPU" in str(e), f"{xd} {wd} {out}: {e}"
                checked += 1
    assert checked == 3 * 3 * 5 * 3 + 3 * 5, checked


def test_launch_checks_reach_library():
    """The library refuses a tensor labelled with the wrong dtype (what the old binding sent), so the
    launch check above would catch a binding that mislabelled one."""
    if tmanorm._has_gpu():
        return
    ctx = tmanorm._context(0)
    plan = ctx.plan("layer_norm", (2, 2, 2), 3, 40)
    x, w, b, y = FakeTensor((3, 40)), vec(40, F32), vec(40, F32), FakeTensor((3, 40))
    ins = [tmanorm._Tensor(x.data_ptr(), 2, 40), tmanorm._Tensor(w.data_ptr(), 0, 0),
           tmanorm._Tensor(b.data_ptr(), 0, 0)]
    outs = [tmanorm._Tensor(y.data_ptr(), 2, 40)]
    expect_error(tmanorm.TmanormError, ("tn_plan_launch", "input 1", "is f32, the fusion's is bf16"),
                 lambda: ctx.launch(plan, ins, outs, [1e-5], None))


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
    expect_error(ValueError, "unknown dtype", lambda: tmanorm.explain("rmsnorm", 8, 8, "f8e4m3"))
    # The library's own errors come through TmanormError.
    expect_error(tmanorm.TmanormError, ("tn_plan_create", "invalid argument", "M = 0"),
                 lambda: tmanorm.explain("rmsnorm", 0, 8, target="h200"))
    expect_error(tmanorm.TmanormError, "tn_context_create", lambda: tmanorm.explain("rmsnorm", 8, 8, target="z9"))


def test_explain_reuses_context_and_frees_plans():
    tmanorm.explain("rmsnorm", 4096, 4096, "bf16", target="h200")  # the context exists from here on
    tmanorm._has_gpu()
    before = dict(tmanorm._contexts)
    with count_calls("tn_context_create", "tn_context_destroy", "tn_plan_create", "tn_plan_destroy") as calls:
        for i in range(50):
            tmanorm.explain("rmsnorm" if i % 2 else "rms_norm", 4096, 4096, "bf16", target="h200")
            tmanorm._has_gpu()
    assert calls == {"tn_context_create": 0, "tn_context_destroy": 0, "tn_plan_create": 50,
                     "tn_plan_destroy": 50}, calls
    assert tmanorm._contexts == before, (tmanorm._contexts, before)


def test_library_signatures():
    lib = tmanorm._library()
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
