"""tmanorm for PyTorch: the built-in fusions on CUDA tensors as operators
torch.ops.tmanorm.*, called through ctypes.

    import torch, tmanorm
    y = tmanorm.rms_norm(x, (N,), w, eps=1e-6)           # as F.rms_norm; x [..., N] on the GPU, w [N] or None
    y = tmanorm.layer_norm(x, (N,), w, b, eps=1e-5)      # as F.layer_norm
    y = tmanorm.softmax(x, -1)
    y, h = tmanorm.add_rms_norm(x, residual, w)          # h = x + residual, y = rms_norm(h)
    tmanorm.fused_add_rms_norm_(x, residual, w)          # in place: residual <- h, x <- y
    y8 = tmanorm.rms_norm(x, None, w, out_dtype=torch.float8_e4m3fn)
    tmanorm.rms_norm(x, None, w, out=y)                  # into y

Each op is a torch.library.custom_op with a fake implementation, so
torch.compile(fullgraph=True) traces it; it launches on the current CUDA
stream, and plans are cached per (op, dtypes, shape, pdl), up to 256 a device
(least recently used destroyed first). None has a backward: inputs that
require grad under grad mode raise RuntimeError. The library is looked for
beside this package, then at $TMANORM_LIB, then in the repository's build/.

Dtypes: x, weight and bias may each be float32, float16 or bfloat16, and
weight may differ from x; bias must share weight's dtype and residual must
share x's dtype and shape. out_dtype (y's dtype; default x's) may also be
torch.float8_e4m3fn (saturating, sm_89 or newer). Every check is made before
launching: an unsupported dtype raises TypeError, a combination or layout the
kernels cannot take raises ValueError, each naming the tensor at fault. An
empty batch (no rows) returns empty outputs without launching anything.
"""
import numbers

from . import _core, _native
from ._native import TmanormError

try:
    import torch
except ImportError:  # explain() works without torch; the ops need it
    torch = None
if torch is not None and hasattr(torch.library, "custom_op"):  # torch >= 2.4
    from . import _ops
else:
    _ops = None  # (set only here: `from . import _ops` would return an existing attribute)

__all__ = ["rms_norm", "layer_norm", "softmax", "add_rms_norm", "fused_add_rms_norm_", "explain",
           "TmanormError", "__version__"]

__version__ = _native.version()


def _need_torch(op):
    if _ops is None:
        raise ImportError(f"tmanorm.{op} needs PyTorch 2.4 or newer "
                          f"({'torch ' + torch.__version__ if torch else 'no torch'} here); explain() works without it")


def _refuse_grad(op, tensors, mutating=False):
    """Refuses inputs that require grad, before anything is allocated. Traced, a functional op's
    autograd refuses with this message (a raise traced here reaches the user wrapped as dynamo's
    "observed exception"); a mutating op has none, so it is refused here, traced or not."""
    if mutating or not torch.compiler.is_compiling():
        _ops.refuse_grad(op, tensors)


def _check_normalized_shape(op, normalized_shape, x):
    """normalized_shape, when given, must name x's last dimension alone."""
    if normalized_shape is None:
        return
    one = isinstance(normalized_shape, (numbers.Integral, torch.SymInt))
    shape = (normalized_shape,) if one else tuple(normalized_shape)
    if shape != (x.shape[-1],):
        raise ValueError(f"tmanorm: {op}: normalized_shape {shape} is not ({x.shape[-1]},): tmanorm normalizes "
                         "over the last dimension only (reshape x so that it is the only one)")


def _legacy_eps(op, value, eps, out_dtype):
    """(eps, out_dtype) of a call in the older form op(x, weight, ..., eps, out_dtype): value is what
    landed in the slot after the shifted tensors (None or the eps given positionally), eps what landed
    in eps's slot (None, or the older form's positional out_dtype)."""
    if isinstance(eps, torch.dtype):
        if out_dtype is not None and out_dtype != eps:
            raise TypeError(f"tmanorm: {op}: two output dtypes, {eps} (positional) and {out_dtype}")
        eps, out_dtype = None, eps
    if value is None:
        return eps, out_dtype
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value), out_dtype
    raise TypeError(f"tmanorm: {op}: a tensor as normalized_shape reads as the older form {op}(x, weight, ...), "
                    f"which takes no {type(value).__name__} there; use {op}(x, normalized_shape, weight, ...)")


def _check_out(op, out, out_dtype):
    """out= (None, or a tensor whose dtype out_dtype, when given, repeats); the ops check the rest."""
    if out is None:
        return
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"tmanorm: {op}: out= must be a tensor, not {type(out).__name__}")
    if out_dtype is not None and out_dtype != out.dtype:
        raise TypeError(f"tmanorm: {op}: out_dtype {out_dtype} differs from out's dtype {out.dtype} "
                        "(give one, or both the same)")


# pdl: programmatic dependent launch. None (the default): on where the GPU has it (sm_90+), as
# FlashInfer's enable_pdl does on Hopper; True: on (an error below sm_90); False: off.

def rms_norm(x, normalized_shape=None, weight=None, eps=None, *, out=None, out_dtype=None, pdl=None):
    """y = x * rsqrt(mean(x^2) + eps) * weight over the last dimension, as F.rms_norm: eps None is
    torch.finfo(torch.float32).eps (F.rms_norm's for f16, bf16 and f32 inputs), weight None is ones. The older form rms_norm(x, weight, eps=1e-6)
    (a tensor second) still works, with its default eps of 1e-6."""
    _need_torch("rms_norm")
    _native.pdl_code(pdl)  # refuses anything but None, True, False
    if isinstance(normalized_shape, torch.Tensor):
        eps, out_dtype = _legacy_eps("rms_norm", weight, eps, out_dtype)
        normalized_shape, weight = None, normalized_shape
        eps = 1e-6 if eps is None else eps
    _check_normalized_shape("rms_norm", normalized_shape, x)
    if eps is None:
        eps = torch.finfo(torch.float32).eps  # F.rms_norm computes in f32 for these dtypes
    _check_out("rms_norm", out, out_dtype)
    _refuse_grad("rms_norm", {"x": x, "weight": weight, "out": out}, out is not None)
    if out is None:
        return torch.ops.tmanorm.rms_norm(x, weight, eps, out_dtype, pdl)
    torch.ops.tmanorm.rms_norm_out(x, weight, eps, pdl, out)
    return out


def layer_norm(x, normalized_shape=None, weight=None, bias=None, eps=1e-5, *, out=None, out_dtype=None, pdl=None):
    """y = (x - mean) * rsqrt(var + eps) * weight + bias over the last dimension, as F.layer_norm;
    weight None is ones, bias None zeros (weight and bias: one dtype). The older form
    layer_norm(x, weight, bias, eps) (a tensor second) still works."""
    _need_torch("layer_norm")
    _native.pdl_code(pdl)  # refuses anything but None, True, False
    if isinstance(normalized_shape, torch.Tensor):
        eps, out_dtype = _legacy_eps("layer_norm", bias, eps, out_dtype)
        normalized_shape, weight, bias = None, normalized_shape, weight
    _check_normalized_shape("layer_norm", normalized_shape, x)
    _check_out("layer_norm", out, out_dtype)
    _refuse_grad("layer_norm", {"x": x, "weight": weight, "bias": bias, "out": out}, out is not None)
    if out is None:
        return torch.ops.tmanorm.layer_norm(x, weight, bias, eps, out_dtype, pdl)
    torch.ops.tmanorm.layer_norm_out(x, weight, bias, eps, pdl, out)
    return out


def softmax(x, dim=-1, *, out=None, out_dtype=None, pdl=None):
    """Softmax over the last dimension (dim must name it)."""
    _need_torch("softmax")
    _native.pdl_code(pdl)  # refuses anything but None, True, False
    if isinstance(dim, torch.dtype):  # the older form softmax(x, out_dtype)
        dim, out_dtype = -1, dim
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"tmanorm: softmax: dim must be an int, not {type(dim).__name__}")
    if dim not in (-1, x.dim() - 1):
        raise ValueError(f"tmanorm: softmax: dim {dim} is not the last dimension; tmanorm's softmax runs over "
                         f"the last dimension only (dim=-1 or {x.dim() - 1}): move the dimension last first")
    _check_out("softmax", out, out_dtype)
    _refuse_grad("softmax", {"x": x, "out": out}, out is not None)
    if out is None:
        return torch.ops.tmanorm.softmax(x, out_dtype, pdl)
    torch.ops.tmanorm.softmax_out(x, pdl, out)
    return out


def add_rms_norm(x, residual, weight=None, eps=1e-6, *, out=None, out_dtype=None, pdl=None):
    """(rms_norm(x + residual), x + residual), the sum rounded to x's dtype (residual: x's dtype and
    shape); weight None is ones. out: a pair (y, sum) to write into."""
    _need_torch("add_rms_norm")
    _native.pdl_code(pdl)  # refuses anything but None, True, False
    outs = {}
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("tmanorm: add_rms_norm: out= must be a pair of tensors (y, sum)")
        _check_out("add_rms_norm", out[0], out_dtype)
        _check_out("add_rms_norm", out[1], None)
        outs = {"out[0]": out[0], "out[1]": out[1]}
    _refuse_grad("add_rms_norm", dict({"x": x, "residual": residual, "weight": weight}, **outs), out is not None)
    if out is None:
        return torch.ops.tmanorm.add_rms_norm(x, residual, weight, eps, out_dtype, pdl)
    torch.ops.tmanorm.add_rms_norm_out(x, residual, weight, eps, pdl, out[0], out[1])
    return tuple(out)


def fused_add_rms_norm_(x, residual, weight=None, eps=1e-6, *, pdl=None):
    """In place, as inference engines' fused_add_rms_norm: residual <- x + residual (in x's dtype),
    then x <- rms_norm(residual) * weight. Returns (x, residual)."""
    _need_torch("fused_add_rms_norm_")
    _native.pdl_code(pdl)  # refuses anything but None, True, False
    _refuse_grad("fused_add_rms_norm_", {"x": x, "residual": residual, "weight": weight}, True)
    torch.ops.tmanorm.fused_add_rms_norm_(x, residual, weight, eps, pdl)
    return x, residual


# ---- explain and introspection -----------------------------------------------------

# explain()'s op names: the module's, and the command-line tool's.
_OP_NAMES = dict({op: op for op in _core.OP_INPUTS},
                 rmsnorm="rms_norm", layernorm="layer_norm", add_rmsnorm="add_rms_norm")
# explain()'s dtype names, as the command-line tool and the library spell them, and torch's.
_F32, _F16, _BF16, _F8 = _core.F32, _core.F16, _core.BF16, _core.F8E4M3
_DTYPE_NAMES = {"f32": _F32, "fp32": _F32, "float32": _F32, "float": _F32, "torch.float32": _F32,
                "f16": _F16, "fp16": _F16, "float16": _F16, "half": _F16, "torch.float16": _F16,
                "bf16": _BF16, "bfloat16": _BF16, "torch.bfloat16": _BF16,
                "f8e4m3": _F8, "fp8": _F8, "e4m3": _F8, "float8_e4m3fn": _F8, "torch.float8_e4m3fn": _F8}


def _explain_op(op):
    name = _OP_NAMES.get(op) if isinstance(op, str) else None
    if name is None:
        raise ValueError(f"tmanorm: explain: unknown op {op!r}; ops: {', '.join(_OP_NAMES)}")
    return name


def _explain_dtype(dtype, what="dtype", output=False):
    code = _DTYPE_NAMES.get(dtype if isinstance(dtype, str) else str(dtype))
    if code is None:
        raise ValueError(f"tmanorm: explain: unknown {what} {dtype!r}; dtypes: {', '.join(_DTYPE_NAMES)} "
                         "or a torch dtype among float32, float16, bfloat16, float8_e4m3fn")
    if code == _F8 and not output:
        raise ValueError(f"tmanorm: explain: {what} {dtype!r}: f8e4m3 is an output dtype only (out_dtype=)")
    return code


def explain(op, rows, cols, dtype="bf16", target=None, pdl=None, *, weight_dtype=None, out_dtype=None,
            row_tiers=False):
    """The plan tmanorm makes for a built-in at [rows, cols], as text; with row_tiers, followed by
    the row tiers of the plan the ops keep for any row count up to `rows` (each tier's rows, plan
    and kernel: what a call of fewer rows runs).

    op: rms_norm, layer_norm, softmax, add_rms_norm (or the command-line tool's rmsnorm, layernorm,
    add_rmsnorm); dtype: x's (and every other tensor's unless weight_dtype, out_dtype say), as
    f32, f16, bf16, their aliases (fp32, float32, float, fp16, float16, half, bfloat16) or a torch
    dtype; out_dtype may also be f8e4m3 (fp8, e4m3, torch.float8_e4m3fn); target: "h200", "h100",
    "a100" to plan for that GPU (default: the GPU here, else h200). One context a target, kept."""
    name = _explain_op(op)
    xd = _explain_dtype(dtype)
    wd = xd if weight_dtype is None else _explain_dtype(weight_dtype, "weight_dtype")
    od = xd if out_dtype is None else _explain_dtype(out_dtype, "out_dtype", output=True)
    if target is None and not _native.has_gpu():
        target = "h200"
    ctx = _native.context(0, target)
    if not isinstance(row_tiers, bool):
        raise TypeError(f"tmanorm: explain: row_tiers must be True or False, not {row_tiers!r}")
    plan = ctx.make_plan(name, (xd, wd, od), rows, cols, 0, _native.pdl_code(pdl), row_tiers=int(row_tiers))
    try:
        text = ctx.describe(plan, _native.DESCRIBE_TEXT)
        return text + ctx.describe(plan, _native.DESCRIBE_TIERS) if row_tiers else text
    finally:
        _native.library().tn_plan_destroy(plan)


def _plan_cache_info(device=None):
    """The launch path's plan caches (every device's, or one's), summed: plans held, capacity,
    created, evicted, hits, pinned (launched during CUDA graph capture), retired (pinned plans a
    plan for more rows replaced, kept for their graphs), and kernels (distinct kernels over the row
    tiers of the plans held and retired)."""
    infos = [ctx.info() for (dev, target), ctx in list(_native.contexts.items())
             if target is None and (device is None or dev == device)]
    keys = ("plans", "capacity", "created", "evicted", "hits", "pinned", "retired", "kernels")
    return {k: sum(i[k] for i in infos) for k in keys}
