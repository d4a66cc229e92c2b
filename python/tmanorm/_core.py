"""Every check of a call and the eager launch. Needs only the tensors' attributes
until it launches; torch is imported inside compute() (the CPU tests stand a fake
module in for it), so this module loads without torch."""
import collections

from . import _native

# tn_dtype codes. Inputs take the first three; outputs also take f8e4m3.
F32, F16, BF16, F8E4M3 = 0, 1, 2, 3
INPUT_DTYPES = {"torch.float32": F32, "torch.float16": F16, "torch.bfloat16": BF16}
OUTPUT_DTYPES = dict(INPUT_DTYPES, **{"torch.float8_e4m3fn": F8E4M3})

# The fusion's inputs and outputs, in order. Inputs in OPTIONAL may be None (weight ones, bias zeros).
OP_INPUTS = {"rms_norm": ("x", "weight"), "layer_norm": ("x", "weight", "bias"),
             "softmax": ("x",), "add_rms_norm": ("x", "residual", "weight")}
OP_OUTPUTS = {"rms_norm": ("y",), "layer_norm": ("y",), "softmax": ("y",), "add_rms_norm": ("y", "sum")}
OPTIONAL = {"weight": 1.0, "bias": 0.0}  # what a missing vector holds

LaunchDtypes = collections.namedtuple("LaunchDtypes", "options inputs outputs")
LaunchDtypes.__doc__ = """options: (input, weight, output) codes for tn_builtin_options;
inputs, outputs: each tensor's own tn_dtype code, in the fusion's order."""


def _supported(table):
    return ", ".join(table)


def _input_code(op, name, dtype):
    key = str(dtype)
    code = INPUT_DTYPES.get(key)
    if code is None:
        if key in OUTPUT_DTYPES:
            raise TypeError(f"tmanorm: {op}: {name} is {key}, which tmanorm takes for outputs only "
                            f"(out_dtype=); inputs may be {_supported(INPUT_DTYPES)}")
        raise TypeError(f"tmanorm: {op}: {name} is {key}; supported: {_supported(INPUT_DTYPES)}")
    return code


def launch_dtypes(op, dtypes, out_dtype=None):
    """The dtype codes of a call of op, from each input's dtype (dtypes: name -> torch dtype or its
    str, for every input of OP_INPUTS[op]) and out_dtype (None: x's). Refuses, naming the tensor,
    any dtype or combination the built-in cannot take; every combination it returns is one the
    built-in's fusion declares, input by input."""
    if op not in OP_INPUTS:
        raise ValueError(f"tmanorm: unknown op {op!r}; ops: {', '.join(OP_INPUTS)}")
    names = OP_INPUTS[op]
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
        od = OUTPUT_DTYPES.get(str(out_dtype))
        if od is None:
            raise TypeError(f"tmanorm: {op}: out_dtype {out_dtype} is not supported; "
                            f"supported: {_supported(OUTPUT_DTYPES)}")
    # Each tensor carries its own code. The checks above make it the one the built-in declares:
    # x and residual (and the sum output) in input_dtype, weight and bias in weight_dtype, y in
    # output_dtype.
    inputs = [codes[n] for n in names]
    declared = {"x": xd, "residual": xd, "weight": wd, "bias": wd}
    assert inputs == [declared[n] for n in names], (op, dtypes)
    outputs = [od] + [xd] * (len(OP_OUTPUTS[op]) - 1)
    return LaunchDtypes((xd, wd, od), inputs, outputs)


def _on_gpu(t):
    # meta: what the fake (shape-only) path sees outside a FakeTensorMode.
    return t.is_cuda or t.device.type == "meta"


def rows_view(t, name, cols=None):
    """(rows, cols, row_stride) of t seen as [rows, cols]; raises for what the kernels cannot take.

    The leading dimensions must collapse into one with a uniform row stride; dimensions of size 1
    are ignored (PyTorch gives them arbitrary strides). Rows may be padded (row stride > N) but
    not broadcast or overlapping (row stride < N with more than one row)."""
    if not _on_gpu(t):
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


def check_vector(t, name, cols, device=None, layout=True):
    """A weight or bias: a contiguous vector of cols elements on the CUDA device (x's, when given)."""
    if not _on_gpu(t):
        raise ValueError(f"tmanorm: {name} is on {t.device}; tmanorm runs on CUDA tensors")
    if device is not None and t.device != device:
        raise ValueError(f"tmanorm: {name} is on {t.device} but x is on {device}; they must share one device")
    if t.dim() != 1 or t.shape[0] != cols or (layout and t.stride(0) != 1 and cols > 1):
        strides = tuple(t.stride(d) for d in range(t.dim())) if layout else "any"
        raise ValueError(f"tmanorm: {name} must be a contiguous vector of {cols} elements, "
                         f"is shape {tuple(t.shape)} with strides {strides}")


def _rows(t):
    rows = 1
    for s in t.shape[:-1]:
        rows *= s
    return rows


Call = collections.namedtuple("Call", "rows cols dtypes inputs")
Call.__doc__ = """A checked call: [rows, cols], its LaunchDtypes, and (tensor or None, row_stride) per
input in the fusion's order (row_stride 0 for vectors; None for a missing weight or bias)."""


def prepare(op, tensors, out_dtype=None, layout=True):
    """Checks a call of op on tensors (name -> tensor, for every input of OP_INPUTS[op]; weight and
    bias may be None) before anything is launched: device, shape, dtypes and, with layout, strides
    (the fake path leaves those to the launch). Needs only the tensors' attributes."""
    x = tensors["x"]
    if layout:
        rows, cols, stride = rows_view(x, "x")
    else:
        if not _on_gpu(x) or x.dim() < 1 or x.shape[-1] < 1:
            rows_view(x, "x")  # raises, with the reason
        rows, cols, stride = _rows(x), x.shape[-1], x.shape[-1]
    strides = {"x": stride}
    for name in OP_INPUTS[op][1:]:
        t = tensors[name]
        if t is None:
            if name not in OPTIONAL:
                raise ValueError(f"tmanorm: {op}: {name} is required")
            strides[name] = 0
        elif name == "residual":
            if not _on_gpu(t) or t.device != x.device:
                raise ValueError(f"tmanorm: {op}: residual is on {t.device} but x is on {x.device}; "
                                 "they must share one device")
            if tuple(t.shape) != tuple(x.shape):
                raise ValueError(f"tmanorm: {op}: residual has shape {tuple(t.shape)} but x has shape "
                                 f"{tuple(x.shape)}; residual must match x's shape")
            strides[name] = rows_view(t, name, cols)[2] if layout else cols
        else:
            check_vector(t, name, cols, x.device, layout)
            strides[name] = 0
    dtypes = {n: str(t.dtype) for n, t in tensors.items() if t is not None}
    for name in OP_INPUTS[op]:
        if name not in dtypes:  # a missing weight takes bias's dtype, a missing bias weight's, else x's
            dtypes[name] = next((dtypes[o] for o in ("weight", "bias") if o in dtypes), dtypes["x"])
    call_dtypes = launch_dtypes(op, dtypes, out_dtype)
    inputs = [(tensors[n], strides[n]) for n in OP_INPUTS[op]]
    return Call(rows, cols, call_dtypes, inputs)


def check_outs(op, outs, x, call, layout=True):
    """Checks the out= tensors (in OP_OUTPUTS[op]'s order) against the call; their row strides."""
    names = OP_OUTPUTS[op]
    if len(outs) != len(names):
        raise ValueError(f"tmanorm: {op}: out= takes {len(names)} tensors ({', '.join(names)}), got {len(outs)}")
    strides = []
    for name, t, code in zip(names, outs, call.dtypes.outputs):
        what = f"out= {name}"
        if not hasattr(t, "dtype") or not hasattr(t, "shape"):
            raise TypeError(f"tmanorm: {op}: {what} must be a tensor, not {type(t).__name__}")
        if OUTPUT_DTYPES.get(str(t.dtype)) != code:
            want = _supported(OUTPUT_DTYPES) if name == "y" else _DTYPE_OF_CODE[code]
            raise TypeError(f"tmanorm: {op}: {what} is {t.dtype}, expected {want}")
        if tuple(t.shape) != tuple(x.shape):
            raise ValueError(f"tmanorm: {op}: {what} has shape {tuple(t.shape)}, expected x's {tuple(x.shape)}")
        if not _on_gpu(t) or t.device != x.device:
            raise ValueError(f"tmanorm: {op}: {what} is on {t.device} but x is on {x.device}")
        strides.append(rows_view(t, what)[2] if layout else call.cols)
    return strides


def out_dtype_of(y):
    """y's dtype where an output may have it (else None: check_outs names the fault)."""
    dtype = getattr(y, "dtype", None)
    return dtype if str(dtype) in OUTPUT_DTYPES else None


def _spans(pairs, rows, cols):
    """The bytes [start, end) the kernel touches in each (tensor, row_stride); vectors: stride 0."""
    spans = []
    for t, stride in pairs:
        if t is not None:
            elems = (rows - 1) * stride + cols if stride else cols
            spans.append((t.data_ptr(), t.data_ptr() + elems * t.element_size()))
    return spans


def _overlaps(a, b):
    return a[0] < b[1] and b[0] < a[1]


def _exactly_in_place(outs, inputs, dtypes, rows, cols):
    """Whether every output that overlaps an input is that input itself: the same address, row
    stride and dtype, overlapping no other input. Then the kernels write in place (each element is
    read before the thread that reads it writes it: every plan reads a row before it writes it, and
    rows are disjoint), with no fresh tensors and no copies (fused_add_rms_norm_ as inference
    engines call it)."""
    present = [(pair, code) for pair, code in zip(inputs, dtypes.inputs) if pair[0] is not None]
    in_spans = _spans([pair for pair, _ in present], rows, cols)
    for (o, o_stride), o_code, o_span in zip(outs, dtypes.outputs, _spans(outs, rows, cols)):
        hits = [k for k, span in enumerate(in_spans) if _overlaps(o_span, span)]
        if not hits:
            continue
        if len(hits) != 1:
            return False
        (t, t_stride), t_code = present[hits[0]]
        if t_stride == 0 or t.data_ptr() != o.data_ptr() or t_stride != o_stride or t_code != o_code:
            return False
    return True


# Ones and zeros standing in for a missing weight or bias, by (value, N, dtype, device). Never
# evicted (a captured graph may hold one): past the bound, fresh ones are made for each call.
_fillers = {}
_FILLERS_MAX = 64


def _filler(torch, value, cols, dtype, device):
    key = (value, cols, str(dtype), str(device))
    t = _fillers.get(key)
    if t is None:
        t = torch.full((cols,), value, dtype=dtype, device=device)
        # Made during capture, its fill runs only on replay: not for eager calls. Kept for later calls
        # on any stream: filled before it is shared (one wait, once per filler).
        if len(_fillers) < _FILLERS_MAX and not torch.cuda.is_current_stream_capturing():
            if t.is_cuda:
                torch.cuda.current_stream(t.device).synchronize()
            _fillers[key] = t
    return t


_DTYPE_OF_CODE = {v: k for k, v in OUTPUT_DTYPES.items()}


def torch_dtype(torch, code):
    return getattr(torch, _DTYPE_OF_CODE[code][len("torch."):])


def compute(op, tensors, eps, out_dtype=None, pdl=None, outs=None):
    """Checks, then launches op on the current CUDA stream; returns its outputs (a list, in
    OP_OUTPUTS[op]'s order): outs when given (checked; where one overlaps an input the kernel
    writes fresh tensors, copied into it after), else new contiguous tensors. No rows: nothing
    launched."""
    import torch
    pdl_flag = _native.pdl_code(pdl)
    x = tensors["x"]
    if outs:
        out_dtype = out_dtype_of(outs[0])
    call = prepare(op, tensors, out_dtype)
    results = None
    if outs is not None:
        strides = check_outs(op, outs, x, call)
        results = list(zip(outs, strides))
        if call.rows > 0:
            out_spans = _spans(results, call.rows, call.cols)
            if len(out_spans) == 2 and _overlaps(*out_spans):
                raise ValueError(f"tmanorm: {op}: the out= tensors overlap each other")
            in_spans = _spans(call.inputs, call.rows, call.cols)
            if any(_overlaps(o, i) for o in out_spans for i in in_spans) and \
                    not _exactly_in_place(results, call.inputs, call.dtypes, call.rows, call.cols):
                results = None  # a partial overlap: the kernels may not write what they read
    if results is None:
        results = [(torch.empty(x.shape, dtype=torch_dtype(torch, code), device=x.device), call.cols)
                   for code in call.dtypes.outputs]
    if call.rows > 0:
        device = x.device.index if x.device.index is not None else torch.cuda.current_device()
        ctx = _native.context(device)
        inputs = [(_filler(torch, OPTIONAL[name], call.cols, torch_dtype(torch, code), x.device), 0)
                  if t is None else (t, s)
                  for name, (t, s), code in zip(OP_INPUTS[op], call.inputs, call.dtypes.inputs)]
        ins = launch_tensors(inputs, call.dtypes.inputs)
        out_args = launch_tensors(results, call.dtypes.outputs)
        params = [] if eps is None else [float(eps)]
        stream = torch.cuda.current_stream(x.device)
        ctx.run(op, call.dtypes.options, call.rows, call.cols, pdl_flag,
                lambda plan: ctx.launch(plan, ins, out_args, params, stream.cuda_stream, call.rows),
                capturing=torch.cuda.is_current_stream_capturing(),
                before_evict=lambda: torch.cuda.synchronize(x.device))
    if outs is not None:
        for o, (r, _) in zip(outs, results):
            if r is not o:
                o.copy_(r)
        return list(outs)
    return [r for r, _ in results]


def launch_tensors(pairs, codes):
    """tn_tensor per (tensor, row_stride), each labelled with its own dtype code."""
    assert len(pairs) == len(codes)
    return [_native.Tensor(t.data_ptr(), code, stride) for (t, stride), code in zip(pairs, codes)]
