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

Dtypes: x, weight and bias may each be float32, float16 or bfloat16, and
weight may differ from x; bias must share weight's dtype and residual must
share x's dtype and shape (the built-ins take one dtype for each pair).
out_dtype (y's dtype; default x's) may also be torch.float8_e4m3fn
(saturating, sm_89 or newer). Every check is made before launching: an
unsupported dtype raises TypeError, a combination or layout the kernels
cannot take raises ValueError, each naming the tensor at fault. An empty
batch (no rows) returns empty outputs without launching anything.
"""
import collections
import ctypes
import os

__all__ = ["rms_norm", "layer_norm", "softmax", "add_rms_norm", "explain", "TmanormError"]

# tn_dtype codes. Inputs take the first three; outputs also take f8e4m3.
_F32, _F16, _BF16, _F8E4M3 = 0, 1, 2, 3
_INPUT_DTYPES = {"torch.float32": _F32, "torch.float16": _F16, "torch.bfloat16": _BF16}
_OUTPUT_DTYPES = dict(_INPUT_DTYPES, **{"torch.float8_e4m3fn": _F8E4M3})

# The module's op names -> tn_builtin codes; the fusion's inputs and outputs, in order.
_OPS = {"rms_norm": 0, "layer_norm": 1, "softmax": 2, "add_rms_norm": 3}
_OP_INPUTS = {"rms_norm": ("x", "weight"), "layer_norm": ("x", "weight", "bias"),
              "softmax": ("x",), "add_rms_norm": ("x", "residual", "weight")}
_OP_OUTPUTS = {"rms_norm": ("y",), "layer_norm": ("y",), "softmax": ("y",), "add_rms_norm": ("y", "sum")}
# explain() also takes the command-line tool's names.
_OP_NAMES = dict({op: op for op in _OPS},
                 rmsnorm="rms_norm", layernorm="layer_norm", add_rmsnorm="add_rms_norm")
# explain()'s dtype names, as the command-line tool spells them (and their aliases).
_DTYPE_NAMES = {"f32": _F32, "fp32": _F32, "float32": _F32, "torch.float32": _F32,
                "f16": _F16, "fp16": _F16, "float16": _F16, "half": _F16, "torch.float16": _F16,
                "bf16": _BF16, "bfloat16": _BF16, "torch.bfloat16": _BF16}
_DESCRIBE_TEXT, _DESCRIBE_JSON = 0, 1


class TmanormError(RuntimeError):
    """A tmanorm call failed; the message is the library's."""


class _BuiltinOptions(ctypes.Structure):
    _fields_ = [("input_dtype", ctypes.c_int), ("weight_dtype", ctypes.c_int),
                ("output_dtype", ctypes.c_int), ("save_stats", ctypes.c_int)]


class _ContextOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("allocator", ctypes.c_void_p),
                ("target", ctypes.c_char_p), ("force_target", ctypes.c_int)]


class _PlanOptions(ctypes.Structure):
    _fields_ = [("align_bytes", ctypes.c_int), ("plan_json", ctypes.c_char_p), ("kind", ctypes.c_char_p),
                ("pdl", ctypes.c_int)]


def _pdl_code(pdl):
    """tn_plan_options.pdl: None -> 0 (on where the GPU has it, sm_90+), True -> 1, False -> -1."""
    if pdl is None:
        return 0
    if not isinstance(pdl, bool):
        raise TypeError(f"tmanorm: pdl must be None, True or False, not {pdl!r}")
    return 1 if pdl else -1


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
        vp, i64, st = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        signatures = {  # name: (restype, argtypes), for every function the binding calls
            "tn_status_string": (ctypes.c_char_p, [st]),
            "tn_context_create": (st, [ctypes.POINTER(_ContextOptions), ctypes.POINTER(vp)]),
            "tn_context_destroy": (None, [vp]),
            "tn_context_last_error": (ctypes.c_char_p, [vp]),
            "tn_context_has_gpu": (ctypes.c_int, [vp]),
            "tn_fusion_builtin": (st, [vp, ctypes.c_int, ctypes.POINTER(_BuiltinOptions), ctypes.POINTER(vp)]),
            "tn_fusion_destroy": (None, [vp]),
            "tn_plan_create": (st, [vp, vp, i64, i64, vp, ctypes.POINTER(vp)]),
            "tn_plan_destroy": (None, [vp]),
            "tn_plan_describe": (st, [vp, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.POINTER(ctypes.c_size_t)]),
            "tn_plan_launch": (st, [vp, ctypes.POINTER(_LaunchArgs)]),
        }
        for name, (restype, argtypes) in signatures.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib = lib
    return _lib


class _Context:
    """One tn_context (a device, or a target to plan for without a GPU) and its plans."""

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

    def has_gpu(self):
        return bool(_library().tn_context_has_gpu(self.handle))

    def make_plan(self, op, dtypes, rows, cols, save_stats=0, pdl=0):
        """A new plan (the caller owns it) for the built-in op with (input, weight, output) dtype codes;
        pdl as tn_plan_options.pdl (0 default, 1 on, -1 off)."""
        lib = _library()
        fusion = ctypes.c_void_p()
        opts = _BuiltinOptions(dtypes[0], dtypes[1], dtypes[2], save_stats)
        self._check(lib.tn_fusion_builtin(self.handle, _OPS[op], ctypes.byref(opts), ctypes.byref(fusion)),
                    "tn_fusion_builtin")
        plan = ctypes.c_void_p()
        try:
            popts = _PlanOptions(0, None, None, pdl)
            self._check(lib.tn_plan_create(self.handle, fusion, rows, cols, ctypes.byref(popts), ctypes.byref(plan)),
                        "tn_plan_create")
        finally:
            lib.tn_fusion_destroy(fusion)
        return plan

    def plan(self, op, dtypes, rows, cols, save_stats=0, pdl=0):
        """The cached plan for (op, dtypes, shape, PDL setting), made on first use."""
        key = (op, tuple(dtypes), rows, cols, save_stats, pdl)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = self.make_plan(op, dtypes, rows, cols, save_stats, pdl)
        return plan

    def describe(self, plan, what=_DESCRIBE_TEXT):
        lib = _library()
        need = ctypes.c_size_t()
        self._check(lib.tn_plan_describe(plan, what, None, 0, ctypes.byref(need)), "tn_plan_describe")
        buf = ctypes.create_string_buffer(need.value)
        self._check(lib.tn_plan_describe(plan, what, buf, need.value, None), "tn_plan_describe")
        return buf.value.decode()

    def launch(self, plan, inputs, outputs, params, stream):
        ins = (_Tensor * len(inputs))(*inputs)
        outs = (_Tensor * len(outputs))(*outputs)
        prm = (ctypes.c_float * max(1, len(params)))(*params)
        args = _LaunchArgs(ins, len(inputs), outs, len(outputs), prm, len(params), stream)
        self._check(_library().tn_plan_launch(plan, ctypes.byref(args)), "tn_plan_launch")


# One context per (device ordinal, target), made on first use and kept for the process.
_contexts = {}


def _context(device=0, target=None):
    key = (device, target)
    ctx = _contexts.get(key)
    if ctx is None:
        ctx = _contexts[key] = _Context(device, target)
    return ctx


_gpu_present = None


def _has_gpu():
    """Whether the library sees a GPU (asked once, of the device-0 context, which is kept)."""
    global _gpu_present
    if _gpu_present is None:
        try:
            _gpu_present = _context(0).has_gpu()
        except TmanormError:
            _gpu_present = False
    return _gpu_present


# ---- validation (plain Python: no torch needed, tested on stand-in tensors) ----

_LaunchDtypes = collections.namedtuple("_LaunchDtypes", "options inputs outputs")
_LaunchDtypes.__doc__ = """options: (input, weight, output) codes for tn_builtin_options;
inputs, outputs: each tensor's own tn_dtype code, in the fusion's order."""


def _supported(table):
    return ", ".join(table)


def _input_code(op, name, dtype):
    key = str(dtype)
    code = _INPUT_DTYPES.get(key)
    if code is None:
        if key in _OUTPUT_DTYPES:
            raise TypeError(f"tmanorm: {op}: {name} is {key}, which tmanorm takes for outputs only "
                            f"(out_dtype=); inputs may be {_supported(_INPUT_DTYPES)}")
        raise TypeError(f"tmanorm: {op}: {name} is {key}; supported: {_supported(_INPUT_DTYPES)}")
    return code


def _launch_dtypes(op, dtypes, out_dtype=None):
    """The dtype codes of a call of op, from each input's dtype (dtypes: name -> torch dtype or its
    str, for every input of _OP_INPUTS[op]) and out_dtype (None: x's). Refuses, naming the tensor,
    any dtype or combination the built-in cannot take; every combination it returns is one the
    built-in's fusion declares, input by input."""
    if op not in _OPS:
        raise ValueError(f"tmanorm: unknown op {op!r}; ops: {', '.join(_OPS)}")
    names = _OP_INPUTS[op]
    missing = [n for n in names if n not in dtypes]
    if missing:
        raise ValueError(f"tmanorm: {op}: no dtype for {', '.join(missing)}")
    codes = {n: _input_code(op, n, dtypes[n]) for n in names}
    xd = codes["x"]
    if "residual" in codes and codes["residual"] != xd:
        raise ValueError(f"tmanorm: {op}: residual is {dtypes['residual']} but x is {dtypes['x']}; "
                         "residual must share x's dtype")
    wd = codes.get("weight", xd)
    if "bias" in codes and codes["bias"] != wd:
        raise ValueError(f"tmanorm: {op}: bias is {dtypes['bias']} but weight is {dtypes['weight']}; "
                         "weight and bias must share one dtype")
    if out_dtype is None:
        od = xd
    else:
        od = _OUTPUT_DTYPES.get(str(out_dtype))
        if od is None:
            raise TypeError(f"tmanorm: {op}: out_dtype {out_dtype} is not supported; "
                            f"supported: {_supported(_OUTPUT_DTYPES)}")
    # Each tensor carries its own code. The checks above make it the one the built-in declares:
    # x and residual (and the sum output) in input_dtype, weight and bias in weight_dtype, y in
    # output_dtype.
    inputs = [codes[n] for n in names]
    declared = {"x": xd, "residual": xd, "weight": wd, "bias": wd}
    assert inputs == [declared[n] for n in names], (op, dtypes)
    outputs = [od] + [xd] * (len(_OP_OUTPUTS[op]) - 1)
    return _LaunchDtypes((xd, wd, od), inputs, outputs)


def _rows_view(t, name, cols=None):
    """(rows, cols, row_stride) of t seen as [rows, cols]; raises for what the kernels cannot take.

    The leading dimensions must collapse into one with a uniform row stride; dimensions of size 1
    are ignored (PyTorch gives them arbitrary strides). Rows may be padded (row stride > N) but
    not broadcast or overlapping (row stride < N with more than one row)."""
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
    rows = 1
    for d in range(t.dim() - 1):
        rows *= t.shape[d]
    if rows <= 1:
        return rows, n, n  # no row step is ever taken: the strides do not matter
    # Innermost first, the leading dimensions that step: each must step by the one inside it times its size.
    leading = [(t.shape[d], t.stride(d)) for d in range(t.dim() - 2, -1, -1) if t.shape[d] != 1]
    row_stride = leading[0][1]
    layout = f"shape {tuple(t.shape)}, strides {tuple(t.stride(d) for d in range(t.dim()))}"
    if row_stride < n:
        raise ValueError(f"tmanorm: {name} is broadcast or overlapping along rows (row stride {row_stride} "
                         f"< N = {n}; {layout}); call .contiguous() first")
    if any(stride == 0 for _, stride in leading):
        raise ValueError(f"tmanorm: {name} is broadcast along a leading dimension (stride 0; {layout}); "
                         "call .contiguous() first")
    expect = row_stride
    for size, stride in leading:
        if stride != expect:
            raise ValueError(f"tmanorm: {name}'s leading dimensions are not one uniform row stride ({layout}); "
                             "call .contiguous() first")
        expect = stride * size
    return rows, n, row_stride


def _check_vector(t, name, cols, device=None):
    """A weight or bias: a contiguous vector of cols elements on the CUDA device (x's, when given)."""
    if not t.is_cuda:
        raise ValueError(f"tmanorm: {name} is on {t.device}; tmanorm runs on CUDA tensors")
    if device is not None and t.device != device:
        raise ValueError(f"tmanorm: {name} is on {t.device} but x is on {device}; they must share one device")
    if t.dim() != 1 or t.shape[0] != cols or (t.stride(0) != 1 and cols > 1):
        strides = tuple(t.stride(d) for d in range(t.dim()))
        raise ValueError(f"tmanorm: {name} must be a contiguous vector of {cols} elements, "
                         f"is shape {tuple(t.shape)} with strides {strides}")


_Call = collections.namedtuple("_Call", "rows cols dtypes inputs")
_Call.__doc__ = """A checked call: [rows, cols], its _LaunchDtypes, and (tensor, row_stride) per input
in the fusion's order (row_stride 0 for vectors)."""


def _prepare(op, tensors, out_dtype=None):
    """Checks a call of op on tensors (name -> tensor, for every input of _OP_INPUTS[op]) before
    anything is launched: layout, device, shape and dtypes. Needs only the tensors' attributes."""
    x = tensors["x"]
    rows, cols, stride = _rows_view(x, "x")
    strides = {"x": stride}
    for name in _OP_INPUTS[op][1:]:
        t = tensors[name]
        if name == "residual":
            if not t.is_cuda or t.device != x.device:
                raise ValueError(f"tmanorm: {op}: residual is on {t.device} but x is on {x.device}; "
                                 "they must share one device")
            if tuple(t.shape) != tuple(x.shape):
                raise ValueError(f"tmanorm: {op}: residual has shape {tuple(t.shape)} but x has shape "
                                 f"{tuple(x.shape)}; residual must match x's shape")
            strides[name] = _rows_view(t, name, cols)[2]
        else:
            _check_vector(t, name, cols, x.device)
            strides[name] = 0
    dtypes = _launch_dtypes(op, {n: str(t.dtype) for n, t in tensors.items()}, out_dtype)
    inputs = [(tensors[n], strides[n]) for n in _OP_INPUTS[op]]
    return _Call(rows, cols, dtypes, inputs)


def _launch_tensors(pairs, codes):
    """tn_tensor per (tensor, row_stride), each labelled with its own dtype code."""
    assert len(pairs) == len(codes)
    return [_Tensor(t.data_ptr(), code, stride) for (t, stride), code in zip(pairs, codes)]


# ---- the ops ------------------------------------------------------------------

def _stream(torch, device):
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def _run(op, tensors, eps, out_dtype=None, pdl=None):
    import torch
    pdl_code = _pdl_code(pdl)
    call = _prepare(op, tensors, out_dtype)
    x = tensors["x"]
    y = torch.empty(x.shape, dtype=x.dtype if out_dtype is None else out_dtype, device=x.device)
    outs = [y] + [torch.empty(x.shape, dtype=x.dtype, device=x.device) for _ in _OP_OUTPUTS[op][1:]]
    if call.rows > 0:  # an empty batch: nothing to compute, nothing to launch
        device = x.device.index if x.device.index is not None else torch.cuda.current_device()
        ctx = _context(device)
        plan = ctx.plan(op, call.dtypes.options, call.rows, call.cols, 0, pdl_code)
        ins = _launch_tensors(call.inputs, call.dtypes.inputs)
        out_args = _launch_tensors([(o, call.cols) for o in outs], call.dtypes.outputs)
        params = [] if eps is None else [float(eps)]
        ctx.launch(plan, ins, out_args, params, _stream(torch, x.device))
    return outs[0] if len(outs) == 1 else tuple(outs)


# pdl: programmatic dependent launch. None (the default): on where the GPU has it (sm_90+), as
# FlashInfer's enable_pdl does on Hopper; True: on (an error below sm_90); False: off.

def rms_norm(x, weight, eps=1e-6, out_dtype=None, pdl=None):
    """y = x * rsqrt(mean(x^2) + eps) * weight over the last dimension."""
    return _run("rms_norm", {"x": x, "weight": weight}, eps, out_dtype, pdl)


def layer_norm(x, weight, bias, eps=1e-5, out_dtype=None, pdl=None):
    """y = (x - mean) * rsqrt(var + eps) * weight + bias over the last dimension (weight, bias: one dtype)."""
    return _run("layer_norm", {"x": x, "weight": weight, "bias": bias}, eps, out_dtype, pdl)


def softmax(x, out_dtype=None, pdl=None):
    """Softmax over the last dimension."""
    return _run("softmax", {"x": x}, None, out_dtype, pdl)


def add_rms_norm(x, residual, weight, eps=1e-6, out_dtype=None, pdl=None):
    """(rms_norm(x + residual), x + residual), the sum rounded to x's dtype (residual: x's dtype and shape)."""
    return _run("add_rms_norm", {"x": x, "residual": residual, "weight": weight}, eps, out_dtype, pdl)


def _explain_op(op):
    name = _OP_NAMES.get(op) if isinstance(op, str) else None
    if name is None:
        raise ValueError(f"tmanorm: explain: unknown op {op!r}; ops: {', '.join(_OP_NAMES)}")
    return name


def _explain_dtype(dtype):
    code = _DTYPE_NAMES.get(dtype if isinstance(dtype, str) else str(dtype))
    if code is None:
        raise ValueError(f"tmanorm: explain: unknown dtype {dtype!r}; dtypes: {', '.join(_DTYPE_NAMES)} "
                         "or a torch dtype among float32, float16, bfloat16")
    return code


def explain(op, rows, cols, dtype="bf16", target=None, pdl=None):
    """The plan tmanorm makes for a built-in at [rows, cols] with every tensor in dtype, as text.

    op: rms_norm, layer_norm, softmax, add_rms_norm (or the command-line tool's rmsnorm, layernorm,
    add_rmsnorm); dtype: f32, f16, bf16 (or fp32, float32, fp16, float16, half, bfloat16, or a torch
    dtype); target: "h200", "h100", "a100" to plan for that GPU (default: the GPU here, else h200)."""
    name, code = _explain_op(op), _explain_dtype(dtype)
    if target is None and not _has_gpu():
        target = "h200"
    ctx = _context(0, target)
    plan = ctx.make_plan(name, (code,) * 3, rows, cols, 0, _pdl_code(pdl))
    try:
        return ctx.describe(plan, _DESCRIBE_TEXT)
    finally:
        _library().tn_plan_destroy(plan)
