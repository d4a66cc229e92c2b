"""tmanorm for PyTorch: the built-in fusions on CUDA tensors, through ctypes.

    import torch, tmanorm
    y = tmanorm.rms_norm(x, w, eps=1e-6)             # x [..., N] on the GPU, w [N]
    y = tmanorm.layer_norm(x, w, b, eps=1e-5)
    y = tmanorm.softmax(x)
    y, h = tmanorm.add_rms_norm(x, residual, w)      # h = x + residual, y = rms_norm(h)

Each call takes pointer, shape, row stride and dtype from the tensors and
launches on the current CUDA stream; plans are made once per (op, dtypes,
shape) and cached. The library is found through $TMANORM_LIB, else in the
build folder next to this package (build/libtmanorm.so).
"""
import ctypes
import os

__all__ = ["rms_norm", "layer_norm", "softmax", "add_rms_norm", "explain", "TmanormError"]

_DTYPES = {"torch.float32": 0, "torch.float16": 1, "torch.bfloat16": 2}
_OPS = {"rms_norm": 0, "layer_norm": 1, "softmax": 2, "add_rms_norm": 3}
_DESCRIBE_TEXT, _DESCRIBE_JSON = 0, 1


class TmanormError(RuntimeError):
    """A tmanorm call failed; the message is the library's."""


class _BuiltinOptions(ctypes.Structure):
    _fields_ = [("input_dtype", ctypes.c_int), ("weight_dtype", ctypes.c_int),
                ("output_dtype", ctypes.c_int), ("save_stats", ctypes.c_int)]


class _ContextOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("allocator", ctypes.c_void_p),
                ("target", ctypes.c_char_p), ("force_target", ctypes.c_int)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("row_stride", ctypes.c_int64)]


class _LaunchArgs(ctypes.Structure):
    _fields_ = [("inputs", ctypes.POINTER(_Tensor)), ("num_inputs", ctypes.c_int),
                ("outputs", ctypes.POINTER(_Tensor)), ("num_outputs", ctypes.c_int),
                ("params", ctypes.POINTER(ctypes.c_float)), ("num_params", ctypes.c_int),
                ("stream", ctypes.c_void_p)]


def _find_library():
    env = os.environ.get("TMANORM_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for build in ("build", "build-gpu"):
        path = os.path.join(here, "..", "..", build, "libtmanorm.so")
        if os.path.exists(path):
            return path
    return "libtmanorm.so"


_lib = None


def _library():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_find_library())
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        lib.tn_context_create.argtypes = [ctypes.POINTER(_ContextOptions), ctypes.POINTER(vp)]
        lib.tn_context_last_error.restype = ctypes.c_char_p
        lib.tn_context_last_error.argtypes = [vp]
        lib.tn_status_string.restype = ctypes.c_char_p
        lib.tn_fusion_builtin.argtypes = [vp, ctypes.c_int, ctypes.POINTER(_BuiltinOptions), ctypes.POINTER(vp)]
        lib.tn_plan_create.argtypes = [vp, vp, i64, i64, vp, ctypes.POINTER(vp)]
        lib.tn_plan_launch.argtypes = [vp, ctypes.POINTER(_LaunchArgs)]
        lib.tn_plan_describe.argtypes = [vp, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.POINTER(ctypes.c_size_t)]
        lib.tn_fusion_destroy.argtypes = [vp]
        _lib = lib
    return _lib


class _Context:
    def __init__(self, device=0, target=None):
        lib = _library()
        opts = _ContextOptions(device, None, target.encode() if target else None, 1 if target else 0)
        self.handle = ctypes.c_void_p()
        self._check(lib.tn_context_create(ctypes.byref(opts), ctypes.byref(self.handle)), "tn_context_create")
        self.plans = {}

    def _check(self, status, what):
        if status != 0:
            lib = _library()
            detail = lib.tn_context_last_error(self.handle).decode() if self.handle else ""
            raise TmanormError(f"tmanorm: {what}: {lib.tn_status_string(status).decode()}: {detail}")

    def plan(self, op, dtypes, rows, cols, save_stats=0):
        key = (op, dtypes, rows, cols, save_stats)
        plan = self.plans.get(key)
        if plan is None:
            lib = _library()
            fusion = ctypes.c_void_p()
            opts = _BuiltinOptions(dtypes[0], dtypes[1], dtypes[2], save_stats)
            self._check(lib.tn_fusion_builtin(self.handle, _OPS[op], ctypes.byref(opts), ctypes.byref(fusion)),
                        "tn_fusion_builtin")
            plan = ctypes.c_void_p()
            try:
                self._check(lib.tn_plan_create(self.handle, fusion, rows, cols, None, ctypes.byref(plan)),
                            "tn_plan_create")
            finally:
                lib.tn_fusion_destroy(fusion)
            self.plans[key] = plan
        return plan

    def launch(self, plan, inputs, outputs, params, stream):
        ins = (_Tensor * len(inputs))(*inputs)
        outs = (_Tensor * len(outputs))(*outputs)
        prm = (ctypes.c_float * max(1, len(params)))(*params)
        args = _LaunchArgs(ins, len(inputs), outs, len(outputs), prm, len(params), stream)
        self._check(_library().tn_plan_launch(plan, ctypes.byref(args)), "tn_plan_launch")


_contexts = {}


def _context(device):
    ctx = _contexts.get(device)
    if ctx is None:
        ctx = _contexts[device] = _Context(device)
    return ctx


def _dtype_code(t, name):
    code = _DTYPES.get(str(t.dtype))
    if code is None:
        raise TypeError(f"tmanorm: {name} is {t.dtype}; supported: float32, float16, bfloat16")
    return code


def _rows_view(t, name, cols=None):
    """(rows, cols, row_stride) of t seen as [rows, cols]; raises for what the kernels cannot take."""
    if not t.is_cuda:
        raise ValueError(f"tmanorm: {name} is on {t.device}; tmanorm runs on CUDA tensors")
    if t.dim() < 1 or t.shape[-1] < 1:
        raise ValueError(f"tmanorm: {name} has shape {tuple(t.shape)}; it needs a last dimension of at least 1")
    n = t.shape[-1]
    if cols is not None and n != cols:
        raise ValueError(f"tmanorm: {name} has {n} columns, expected {cols}")
    if t.stride(-1) != 1 and n > 1:
        raise ValueError(f"tmanorm: {name}'s last dimension is not contiguous (stride {t.stride(-1)}); "
                         "call .contiguous() first")
    rows = t.numel() // n if n else 0
    if t.dim() == 1:
        return 1, n, n
    # Leading dimensions must collapse into one of uniform row stride.
    row_stride = t.stride(-2)
    expect = row_stride * t.shape[-2]
    for d in range(t.dim() - 3, -1, -1):
        if t.shape[d] > 1 and t.stride(d) != expect:
            raise ValueError(f"tmanorm: {name}'s leading dimensions are not one uniform row stride; "
                             "call .contiguous() first")
        expect *= t.shape[d]
    return rows, n, max(row_stride, n) if rows == 1 else row_stride


def _check_vector(t, name, cols):
    if not t.is_cuda:
        raise ValueError(f"tmanorm: {name} is on {t.device}; tmanorm runs on CUDA tensors")
    if t.dim() != 1 or t.shape[0] != cols or (t.stride(0) != 1 and cols > 1):
        raise ValueError(f"tmanorm: {name} must be a contiguous vector of {cols} elements, is {tuple(t.shape)}")


def _stream(torch, device):
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def _run(op, x, vectors, eps, extra_rows=(), out_dtype=None, outputs=1):
    import torch
    rows, cols, stride = _rows_view(x, "x")
    extra = [(t, name, _rows_view(t, name, cols)) for t, name in extra_rows]
    for t, name, (r, _, _) in extra:
        if r != rows or t.dtype != x.dtype:
            raise ValueError(f"tmanorm: {name} must match x in rows and dtype")
    for t, name in vectors:
        _check_vector(t, name, cols)
    xd = _dtype_code(x, "x")
    wd = _dtype_code(vectors[0][0], vectors[0][1]) if vectors else xd
    od = _DTYPES[str(out_dtype)] if out_dtype is not None else xd
    device = x.device.index if x.device.index is not None else torch.cuda.current_device()
    ctx = _context(device)
    plan = ctx.plan(op, (xd, wd, od), rows, cols)
    y = torch.empty(x.shape, dtype=out_dtype or x.dtype, device=x.device)
    ins = [_Tensor(x.data_ptr(), xd, stride)] + [_Tensor(t.data_ptr(), xd, s) for t, _, (_, _, s) in extra]
    ins += [_Tensor(t.data_ptr(), wd, 0) for t, _ in vectors]
    outs = [_Tensor(y.data_ptr(), od, cols)]
    h = None
    if outputs == 2:
        h = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        outs.append(_Tensor(h.data_ptr(), xd, cols))
    params = [] if eps is None else [float(eps)]
    ctx.launch(plan, ins, outs, params, _stream(torch, x.device))
    return y if h is None else (y, h)


def rms_norm(x, weight, eps=1e-6, out_dtype=None):
    """y = x * rsqrt(mean(x^2) + eps) * weight over the last dimension."""
    return _run("rms_norm", x, [(weight, "weight")], eps, out_dtype=out_dtype)


def layer_norm(x, weight, bias, eps=1e-5, out_dtype=None):
    """y = (x - mean) * rsqrt(var + eps) * weight + bias over the last dimension."""
    return _run("layer_norm", x, [(weight, "weight"), (bias, "bias")], eps, out_dtype=out_dtype)


def softmax(x, out_dtype=None):
    """Softmax over the last dimension."""
    return _run("softmax", x, [], None, out_dtype=out_dtype)


def add_rms_norm(x, residual, weight, eps=1e-6, out_dtype=None):
    """(rms_norm(x + residual), x + residual), the sum rounded to x's dtype."""
    return _run("add_rms_norm", x, [(weight, "weight")], eps, extra_rows=[(residual, "residual")],
                out_dtype=out_dtype, outputs=2)


def explain(op, rows, cols, dtype="bf16", target=None):
    """The plan tmanorm makes for a built-in (op as in this module) at [rows, cols], as text."""
    codes = {"f32": 0, "f16": 1, "bf16": 2}
    ctx = _Context(0, target or ("h200" if target is None and not _has_gpu() else None))
    plan = ctx.plan(op, (codes[dtype],) * 3, rows, cols)
    need = ctypes.c_size_t()
    _library().tn_plan_describe(plan, _DESCRIBE_TEXT, None, 0, ctypes.byref(need))
    buf = ctypes.create_string_buffer(need.value)
    _library().tn_plan_describe(plan, _DESCRIBE_TEXT, buf, need.value, None)
    return buf.value.decode()


def _has_gpu():
    lib = _library()
    lib.tn_context_has_gpu.argtypes = [ctypes.c_void_p]
    ctx = ctypes.c_void_p()
    if lib.tn_context_create(None, ctypes.byref(ctx)) != 0:
        return False
    has = bool(lib.tn_context_has_gpu(ctx))
    lib.tn_context_destroy.argtypes = [ctypes.c_void_p]
    lib.tn_context_destroy(ctx)
    return has
