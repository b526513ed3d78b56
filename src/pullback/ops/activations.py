"""torch.nn.functional's activations: one primitive per torch node (``HardtanhBackward0``,
``EluBackward0``, ``GeluBackward0``...), and the functions that take torch's arguments
(``inplace=``, ``relu6`` as hardtanh, ``selu`` as elu) and the distances.

Each rule is torch's derivative written with pullback's ops, so it differentiates again.
Masks select (``where``), so a masked-out gradient is 0 even when ``g`` is inf.

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> F.relu6(pb.tensor([-1., 3., 8.]))
tensor([0., 3., 6.])
>>> F.gelu(pb.tensor([1.]), approximate="tanh")
tensor([0.8412])
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .elementwise import exp, in_range, logical_and, sigmoid, tanh, where
from .erf_gamma import erf
from .joining import cat_op
from .kernels.erf_gamma import erf as np_erf
from .norms import torch_norm as norm
from .reductions import sum_dim
from .reshaping import narrow
from .shape import detach, reshape
from .table import args, batching
from .table.registry import defop, public

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_PI = math.sqrt(2 / math.pi)


def _dtype(x):
    return np.result_type(x)


def _c(x, v):
    """v as a scalar of x's dtype (keeps float32 float32)."""
    return _dtype(x).type(v)


def _tc(e, v, lit):
    """``_c`` in generated code: ``np.float32(0.5)`` for the equation's input."""
    return lit(np.dtype(e.inputs[0].dtype).type(v))


def _template(write):
    """A codegen template from ``write(x, e, lit, **params)``, ``x`` the input's name."""
    return lambda e, a, lit: write(a[0], e, lit, **e.params)


def _elu_text(x, e, lit, alpha=1.0, scale=1.0, input_scale=1.0):
    neg = (f"np.expm1(np.minimum({x}, 0) * {_tc(e, input_scale, lit)}) * "
           f"{_tc(e, alpha * scale, lit)}")
    return f"np.where({x} > 0, {x} * {_tc(e, scale, lit)}, {neg})"


def _gelu_text(x, e, lit, approximate="none"):
    if approximate == "tanh":
        inner = f"{_tc(e, _SQRT_2_PI, lit)} * ({x} + {_tc(e, 0.044715, lit)} * {x} ** 3)"
        return f"{_tc(e, 0.5, lit)} * {x} * (1 + np.tanh({inner}))"
    erf = f"rt.erf({x} * {_tc(e, 1 / math.sqrt(2), lit)})"
    return f"({_tc(e, 0.5, lit)} * {x} * (1 + {erf})).astype({lit(np.dtype(e.inputs[0].dtype))})"


def _softplus_text(x, e, lit, beta=1.0, threshold=20.0):
    bx = x if beta == 1 else f"({x} * {_tc(e, beta, lit)})"  # (x * 1 and s / 1 are exact)
    soft = f"np.maximum({bx}, 0) + np.log1p(np.exp(-np.abs({bx})))"
    soft = soft if beta == 1 else f"({soft}) / {_tc(e, beta, lit)}"
    return f"np.where({bx} > {lit(threshold)}, {x}, {soft})"


def _hardsigmoid_text(x, e, lit):
    return f"np.clip({x} / {_tc(e, 6, lit)} + {_tc(e, 0.5, lit)}, 0, 1)"


# ------------------------------------------------------------------ primitives
hardtanh_op = defop(
    "hardtanh", lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val),
    "HardtanhBackward0", uses=("x",), elementwise=True, inplace="hardtanh_",
    template="np.clip({0}, {min_val}, {max_val})",
    # torch's hardtanh_backward: 0 on the bounds and outside them
    vjp=(lambda g, out, x, min_val, max_val: where(
        logical_and(x > min_val, x < max_val), g, 0),))
# torch's shrink backward: g outside [-lambd, lambd] (a NaN is outside), 0 on and in it
def _shrink_rule(g, out, x, lambd):
    return where(in_range(x, min=-lambd, max=lambd), 0, g)


hardshrink_op = defop(
    "hardshrink", lambda x, lambd=0.5: np.where((x >= -lambd) & (x <= lambd), _c(x, 0), x),
    "HardshrinkBackward0", uses=("x",), elementwise=True, vjp=(_shrink_rule,),
    function=True, method=True, functional=True,
    template=_template(lambda x, e, lit, lambd: f"np.where(({x} >= {lit(-lambd)}) & ({x} <= "
                       f"{lit(lambd)}), {_tc(e, 0, lit)}, {x})"))
softshrink_op = defop(
    "softshrink", lambda x, lambd=0.5: np.where((x >= -lambd) & (x <= lambd), _c(x, 0),
                                                x - np.copysign(_c(x, lambd), x)),
    "SoftshrinkBackward0", uses=("x",), elementwise=True, vjp=(_shrink_rule,),
    template=_template(lambda x, e, lit, lambd: f"np.where(({x} >= {lit(-lambd)}) & ({x} <= "
                       f"{lit(lambd)}), {_tc(e, 0, lit)}, {x} - np.copysign("
                       f"{_tc(e, lambd, lit)}, {x}))"))
leaky_relu_op = defop(
    "leaky_relu", lambda x, negative_slope=0.01: np.where(x > 0, x, x * _c(x, negative_slope)),
    "LeakyReluBackward0", uses=("x",), elementwise=True, inplace="leaky_relu_",
    template=_template(lambda x, e, lit, negative_slope:
                       f"np.where({x} > 0, {x}, {x} * {_tc(e, negative_slope, lit)})"),
    vjp=(lambda g, out, x, negative_slope: where(x > 0, g, g * negative_slope),))


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    neg = np.expm1(np.minimum(x, 0) * _c(x, input_scale)) * _c(x, alpha * scale)
    return np.where(x > 0, x * _c(x, scale), neg)


def _elu_rule(g, out, x, alpha, scale, input_scale):
    return where(x > 0, g * scale, g * (input_scale * alpha * scale) * exp(x * input_scale))


elu_op = defop("elu", _elu, "EluBackward0", uses=("x",), elementwise=True, inplace="elu_",
               vjp=(_elu_rule,), template=_template(_elu_text))
celu_op = defop("celu", lambda x, alpha=1.0: _elu(x, alpha, 1.0, 1.0 / alpha), "CeluBackward0",
                uses=("x",), elementwise=True, inplace="celu_",
                template=_template(lambda x, e, lit, alpha:
                                   _elu_text(x, e, lit, alpha, 1.0, 1.0 / alpha)),
                vjp=(lambda g, out, x, alpha: _elu_rule(g, out, x, alpha, 1.0, 1.0 / alpha),))


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        inner = _c(x, _SQRT_2_PI) * (x + _c(x, 0.044715) * x ** 3)
        return _c(x, 0.5) * x * (1 + np.tanh(inner))
    return (_c(x, 0.5) * x * (1 + np_erf(x * _c(x, 1 / math.sqrt(2))))).astype(x.dtype)


def _gelu_rule(g, out, x, approximate):
    if approximate == "tanh":
        t = tanh((x + 0.044715 * x * x * x) * _SQRT_2_PI)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_PI * (1 + 0.134145 * x * x))
    cdf = 0.5 * (1 + erf(x * (1 / math.sqrt(2))))
    return g * (cdf + x * exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi)))


gelu_op = defop("gelu", _gelu, "GeluBackward0", uses=("x",), elementwise=True,
                vjp=(_gelu_rule,), template=_template(_gelu_text))
silu_op = defop("silu", lambda x: x / (1 + np.exp(-x)), "SiluBackward0", uses=("x",),
                elementwise=True, inplace="silu_", template="{0} / (1 + np.exp(-{0}))",
                vjp=(lambda g, out, x: g * sigmoid(x) * (1 + x * (1 - sigmoid(x))),))


def _softplus(x, beta=1.0, threshold=20.0):
    bx = x * _c(x, beta)
    soft = (np.maximum(bx, 0) + np.log1p(np.exp(-np.abs(bx)))) / _c(x, beta)
    return np.where(bx > threshold, x, soft)


softplus_op = defop(
    "softplus", _softplus, "SoftplusBackward0", uses=("x",), elementwise=True,
    template=_template(_softplus_text),
    vjp=(lambda g, out, x, beta, threshold: where(x * beta > threshold, g,
                                                  g * sigmoid(x * beta)),))


def _mish_rule(g, out, x):
    t = tanh(softplus_op(x, beta=1.0, threshold=20.0))
    return g * (t + x * sigmoid(x) * (1 - t * t))


mish_op = defop("mish", lambda x: x * np.tanh(_softplus(x)), "MishBackward0", uses=("x",),
                elementwise=True, inplace="mish_", vjp=(_mish_rule,),
                template=_template(lambda x, e, lit:
                                   f"{x} * np.tanh({_softplus_text(x, e, lit)})"))
hardsigmoid_op = defop(
    "hardsigmoid", lambda x: np.clip(x / _c(x, 6) + _c(x, 0.5), 0, 1), "HardsigmoidBackward0",
    uses=("x",), elementwise=True, inplace="hardsigmoid_", template=_template(_hardsigmoid_text),
    vjp=(lambda g, out, x: where(logical_and(x > -3, x < 3), g * (1 / 6), 0),))
hardswish_op = defop(
    "hardswish", lambda x: x * np.clip(x / _c(x, 6) + _c(x, 0.5), 0, 1), "HardswishBackward0",
    uses=("x",), elementwise=True, inplace="hardswish_",
    template=_template(lambda x, e, lit: f"{x} * {_hardsigmoid_text(x, e, lit)}"),
    # torch's hardswish_backward: 0 below -3, x/3 + 1/2 up to 3 (inclusive), 1 above
    vjp=(lambda g, out, x: where(x < -3, 0, where(x <= 3, g * (x * (1 / 3) + 0.5), g)),))
log_sigmoid_op = defop(
    "log_sigmoid", lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))),
    "LogSigmoidBackward0", uses=("x",), elementwise=True,
    template="np.minimum({0}, 0) - np.log1p(np.exp(-np.abs({0})))",
    vjp=(lambda g, out, x: g * sigmoid(-x),))


def _glu(x, dim):
    a, b = np.split(x, 2, axis=dim)
    return a / (1 + np.exp(-b))


def _glu_rule(g, out, x, dim):
    h = x.shape[dim] // 2
    a, b = narrow(x, dim, 0, h), narrow(x, dim, h, h)
    s = sigmoid(b)
    return cat_op(g * s, g * a * s * (1 - s), dim=dim)


def _print_glu(e, a, lit):
    """x's first half along dim over 1 + exp(-second half): ``x[:, :3] / (1 + ...)``."""
    dim = e.params["dim"]
    h = e.inputs[0].shape[dim] // 2
    half = lambda part: f"{a[0]}[{', '.join([':'] * dim + [part])}]"  # noqa: E731
    return f"{half(f':{h}')} / (1 + np.exp(-{half(f'{h}:')}))"


glu_op = defop("glu", _glu, "GluBackward0", uses=("x",), fresh=True, vjp=(_glu_rule,),
               template=_print_glu)


def _channel_shape(x_ndim, weight):
    """Where prelu's weight sits: along dim 1 (dim 0 of a 1-d input), else broadcast."""
    n = int(np.prod(weight.shape))
    if n == 1:
        return (1,) * max(x_ndim, 1)
    return tuple(n if d == min(1, x_ndim - 1) else 1 for d in range(x_ndim))


def _prelu(x, weight):
    w = np.reshape(weight, _channel_shape(x.ndim, weight))
    return np.where(x > 0, x, w * x)


def _prelu_weight_rule(g, out, x, weight):
    contrib = where(x > 0, 0, g * x)
    shp = _channel_shape(x.ndim, weight)
    dims = tuple(d for d in range(len(shp)) if shp[d] == 1 and d < x.ndim)
    return reshape(sum_dim(contrib, dim=dims, keepdim=False) if dims else contrib,
                   weight.shape)


prelu_op = defop(
    "prelu", _prelu, "PreluKernelBackward0", uses=("x weight", "x"), fresh=True,
    torch_args=("self", "weight"),
    template=lambda e, a, lit: f"np.where({a[0]} > 0, {a[0]}, np.reshape({a[1]}, "
                               f"{lit(_channel_shape(len(e.inputs[0].shape), e.inputs[1]))})"
                               f" * {a[0]})",
    vjp=(lambda g, out, x, weight: where(
        x > 0, g, g * reshape(weight, _channel_shape(x.ndim, weight))),
         _prelu_weight_rule), batch=batching.merged)


# ------------------------------------------------------------- public functions
def _maybe_inplace(input, op, inplace, **params):
    return getattr(input, op.name + "_")(**params) if inplace else op(input, **params)


def _inplace_only(name: str, op) -> Callable:
    """``F.<name>(input, inplace=False)``, an activation whose only option is ``inplace``."""
    def activation(input, inplace=False):
        return _maybe_inplace(input, op, inplace)
    activation.__qualname__ = name
    return public(name, functional=True)(activation)


@public("softshrink", functional=True)
def softshrink(input, lambd=0.5):
    top = float(np.finfo(args.np_dtype(input)).max) if args.np_dtype(input).kind == "f" else 0
    if not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{args.dtype_name(input)}, but found {lambd:g}")
    return softshrink_op(input, lambd=lambd)


@public("hardtanh", functional=True)
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(input, hardtanh_op, inplace, min_val=min_val, max_val=max_val)


@public("hardtanh_", functional=True)
def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


@public("relu6", functional=True)
def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


@public("relu_", functional=True)
def relu_(input):
    return input.relu_()


@public("leaky_relu", functional=True)
def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_inplace(input, leaky_relu_op, inplace, negative_slope=negative_slope)


@public("leaky_relu_", functional=True)
def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


@public("elu", functional=True)
def elu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, elu_op, inplace, alpha=alpha, scale=1.0, input_scale=1.0)


@public("elu_", functional=True)
def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


@public("selu", function=True, functional=True)
def selu(input, inplace=False):
    return _maybe_inplace(input, elu_op, inplace, alpha=SELU_ALPHA, scale=SELU_SCALE,
                          input_scale=1.0)


@public("selu_", function=True, functional=True)
def selu_(input):
    return selu(input, True)


@public("celu", function=True, functional=True)
def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _maybe_inplace(input, celu_op, inplace, alpha=alpha)


@public("celu_", function=True, functional=True)
def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


@public("gelu", functional=True)
def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return gelu_op(input, approximate=approximate)


silu = _inplace_only("silu", silu_op)
mish = _inplace_only("mish", mish_op)


@public("softplus", functional=True)
def softplus(input, beta=1.0, threshold=20.0):
    return softplus_op(input, beta=beta, threshold=threshold)


@public("softsign", functional=True)
def softsign(input):
    """x / (1 + |x|), as torch composes it (``DivBackward0``)."""
    return input / (input.abs() + 1)


hardsigmoid = _inplace_only("hardsigmoid", hardsigmoid_op)
hardswish = _inplace_only("hardswish", hardswish_op)


@public("logsigmoid", functional=True)
def logsigmoid(input):
    return log_sigmoid_op(input)


@public("glu", functional=True)
def glu(input, dim=-1):
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = args.wrap_dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    return glu_op(input, dim=d)


@public("prelu", functional=True)
def prelu(input, weight):
    n = int(np.prod(weight.shape))
    channels = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim else 1)
    if n != 1 and n != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {n} and channel size = {channels}.")
    return prelu_op(input, weight)


# ------------------------------------------------------------------- distances
def _clamp_values(x, eps):
    """x with its values raised to ``eps`` but its gradient x's: torch clamps the norms in
    place under no_grad."""
    return x + detach(x.clamp(min=eps) - x)


@public("normalize", functional=True)
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    if out is not None:
        raise TypeError("normalize: out= is not supported")
    denom = norm(input, p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    return input / denom


@public("cosine_similarity", functional=True, function=True)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    n1 = _clamp_values(norm(x1, 2, dim, keepdim=True), eps)
    n2 = _clamp_values(norm(x2, 2, dim, keepdim=True), eps)
    return sum_dim(x1 / n1 * (x2 / n2), dim=(args.wrap_dim(dim, max(x1.ndim, x2.ndim)),),
                   keepdim=False)


@public("pairwise_distance", function=True, functional=True)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = max(x1.ndim, x2.ndim)
    return norm(x1 - x2 + eps, p, d - 1 if d else None, keepdim=keepdim)


@public("cdist", function=True)
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return norm(diff, p, -1)
