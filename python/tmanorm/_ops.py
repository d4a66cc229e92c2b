"""The PyTorch operators torch.ops.tmanorm.*: each a torch.library.custom_op with a
fake (shape-only) implementation, so torch.compile traces it whole. The
functional ops return new tensors; the *_out ops and fused_add_rms_norm_ write
into the tensors their schema marks mutable. None has a backward: the
functional ops' autograd refuses an input that requires grad (eager and
traced); the mutating ops cannot have an autograd formula, so the Python
functions in __init__ refuse for them."""
from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _core


def grad_error(op, name):
    return RuntimeError(f"tmanorm: {op} has no backward yet, and {name} requires grad; call it under "
                        "torch.no_grad() or torch.inference_mode(), or pass .detach()ed tensors")


def refuse_grad(op, tensors):
    """Raises if grad mode is on and any of tensors (name -> tensor or None) requires grad."""
    if torch.is_grad_enabled():
        for name, t in tensors.items():
            if t is not None and t.requires_grad:
                raise grad_error(op, name)


def _fake(op, tensors, out_dtype=None, outs=None):
    """What the op returns, as empty tensors of the right shape, dtype, device and strides, after the
    checks that need no strides (those are left to the launch)."""
    x = tensors["x"]
    if outs:
        out_dtype = _core.out_dtype_of(outs[0])
    call = _core.prepare(op, tensors, out_dtype, layout=False)
    if outs is not None:
        _core.check_outs(op, outs, x, call, layout=False)
        return None
    return [x.new_empty(x.shape, dtype=_core.torch_dtype(torch, code)) for code in call.dtypes.outputs]


# ---- functional ops ----------------------------------------------------------------

@torch.library.custom_op("tmanorm::rms_norm", mutates_args=())
def rms_norm(x: Tensor, weight: Optional[Tensor], eps: float, out_dtype: Optional[torch.dtype],
             pdl: Optional[bool]) -> Tensor:
    return _core.compute("rms_norm", {"x": x, "weight": weight}, eps, out_dtype, pdl)[0]


@rms_norm.register_fake
def _(x, weight, eps, out_dtype, pdl):
    return _fake("rms_norm", {"x": x, "weight": weight}, out_dtype)[0]


@torch.library.custom_op("tmanorm::layer_norm", mutates_args=())
def layer_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float,
               out_dtype: Optional[torch.dtype], pdl: Optional[bool]) -> Tensor:
    return _core.compute("layer_norm", {"x": x, "weight": weight, "bias": bias}, eps, out_dtype, pdl)[0]


@layer_norm.register_fake
def _(x, weight, bias, eps, out_dtype, pdl):
    return _fake("layer_norm", {"x": x, "weight": weight, "bias": bias}, out_dtype)[0]


@torch.library.custom_op("tmanorm::softmax", mutates_args=())
def softmax(x: Tensor, out_dtype: Optional[torch.dtype], pdl: Optional[bool]) -> Tensor:
    return _core.compute("softmax", {"x": x}, None, out_dtype, pdl)[0]


@softmax.register_fake
def _(x, out_dtype, pdl):
    return _fake("softmax", {"x": x}, out_dtype)[0]


@torch.library.custom_op("tmanorm::add_rms_norm", mutates_args=())
def add_rms_norm(x: Tensor, residual: Tensor, weight: Optional[Tensor], eps: float,
                 out_dtype: Optional[torch.dtype], pdl: Optional[bool]) -> Tuple[Tensor, Tensor]:
    y, h = _core.compute("add_rms_norm", {"x": x, "residual": residual, "weight": weight}, eps, out_dtype, pdl)
    return y, h


@add_rms_norm.register_fake
def _(x, residual, weight, eps, out_dtype, pdl):
    y, h = _fake("add_rms_norm", {"x": x, "residual": residual, "weight": weight}, out_dtype)
    return y, h


# ---- ops that write into their arguments ---------------------------------------------

@torch.library.custom_op("tmanorm::rms_norm_out", mutates_args=("out",))
def rms_norm_out(x: Tensor, weight: Optional[Tensor], eps: float, pdl: Optional[bool], out: Tensor) -> None:
    _core.compute("rms_norm", {"x": x, "weight": weight}, eps, None, pdl, [out])


@rms_norm_out.register_fake
def _(x, weight, eps, pdl, out):
    _fake("rms_norm", {"x": x, "weight": weight}, None, [out])


@torch.library.custom_op("tmanorm::layer_norm_out", mutates_args=("out",))
def layer_norm_out(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float, pdl: Optional[bool],
                   out: Tensor) -> None:
    _core.compute("layer_norm", {"x": x, "weight": weight, "bias": bias}, eps, None, pdl, [out])


@layer_norm_out.register_fake
def _(x, weight, bias, eps, pdl, out):
    _fake("layer_norm", {"x": x, "weight": weight, "bias": bias}, None, [out])


@torch.library.custom_op("tmanorm::softmax_out", mutates_args=("out",))
def softmax_out(x: Tensor, pdl: Optional[bool], out: Tensor) -> None:
    _core.compute("softmax", {"x": x}, None, None, pdl, [out])


@softmax_out.register_fake
def _(x, pdl, out):
    _fake("softmax", {"x": x}, None, [out])


@torch.library.custom_op("tmanorm::add_rms_norm_out", mutates_args=("out", "residual_out"))
def add_rms_norm_out(x: Tensor, residual: Tensor, weight: Optional[Tensor], eps: float, pdl: Optional[bool],
                     out: Tensor, residual_out: Tensor) -> None:
    _core.compute("add_rms_norm", {"x": x, "residual": residual, "weight": weight}, eps, None, pdl, [out, residual_out])


@add_rms_norm_out.register_fake
def _(x, residual, weight, eps, pdl, out, residual_out):
    _fake("add_rms_norm", {"x": x, "residual": residual, "weight": weight}, None, [out, residual_out])


@torch.library.custom_op("tmanorm::fused_add_rms_norm_", mutates_args=("x", "residual"))
def fused_add_rms_norm_(x: Tensor, residual: Tensor, weight: Optional[Tensor], eps: float,
                        pdl: Optional[bool]) -> None:
    # residual <- x + residual, x <- rms_norm(residual) * weight. The kernels may not write what they
    # read, so compute() writes fresh tensors and copies them in.
    _core.compute("add_rms_norm", {"x": x, "residual": residual, "weight": weight}, eps, None, pdl, [x, residual])


@fused_add_rms_norm_.register_fake
def _(x, residual, weight, eps, pdl):
    _fake("add_rms_norm", {"x": x, "residual": residual, "weight": weight}, None, [x, residual])


# The functional ops' autograd refuses. Since torch 2.5 (with torch._C._any_requires_grad)
# setup_context runs only when an input requires grad under grad mode: it raises there, at the
# forward. torch 2.4 runs it on every call, even under no_grad, so there only the backward raises
# (the Python functions refuse eagerly all the same, and AOTAutograd traces the backward when it
# compiles). Mutating ops cannot have a formula, and run with grad mode off.
_SETUP_ONLY_FOR_GRAD = hasattr(torch._C, "_any_requires_grad")


def _refusing(op, names):
    def setup_context(ctx, inputs, output):
        needs = ctx.needs_input_grad
        ctx.refused = next((n for n, need in zip(names, needs) if need), "an input")
        if _SETUP_ONLY_FOR_GRAD:
            raise grad_error(op, ctx.refused)

    def backward(ctx, *grads):
        raise grad_error(op, ctx.refused)
    return setup_context, backward


for _op, _names in (("rms_norm", ("x", "weight")), ("layer_norm", ("x", "weight", "bias")),
                    ("softmax", ("x",)), ("add_rms_norm", ("x", "residual", "weight"))):
    _setup, _backward = _refusing(_op, _names)
    torch.library.register_autograd(f"tmanorm::{_op}", _backward, setup_context=_setup)
