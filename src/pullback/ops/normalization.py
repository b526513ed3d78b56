"""torch.nn.functional's normalizations: layer_norm, batch_norm (training and eval),
group_norm as primitives named as torch's nodes (``NativeLayerNormBackward0``,
``NativeBatchNormBackward0``, ``NativeGroupNormBackward0``), each with its affine
weight and bias folded in as torch folds them; instance_norm (torch's: batch_norm of a
``(1, N*C, ...)`` view), rms_norm and local_response_norm composed of ops as torch
composes them.

A rule recomputes the statistics from ``x`` with pullback's ops, so it differentiates
again. batch_norm in training updates ``running_mean``/``running_var`` in place (the
unbiased variance, as torch), outside the graph.

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> F.layer_norm(pb.tensor([[1., 2., 3.]]), (3,))
tensor([[-1.2247,  0.0000,  1.2247]])
>>> rm, rv = pb.zeros(2), pb.ones(2)
>>> _ = F.batch_norm(pb.tensor([[1., 2.], [3., 6.]]), rm, rv, training=True)
>>> rm, rv
(tensor([0.2000, 0.4000]), tensor([1.1000, 1.7000]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import to_dtype
from .padding import constant_pad
from .pointwise import rsqrt
from .reductions import fast_mean, mean_dim, sum_dim
from .shape import detach, reshape
from .table import args, batching
from .table.registry import defop, public


# --------------------------------------------------------------- numpy kernels
def _normalize(x, axes, eps):
    mu = fast_mean(x, axis=axes, keepdims=True)
    xc = x - mu
    var = fast_mean(xc * xc, axis=axes, keepdims=True)
    return xc / np.sqrt(var + x.dtype.type(eps))


def _channel(v, ndim):
    """A per-channel vector shaped to broadcast along dim 1 of an ndim-d input."""
    return np.reshape(v, (-1,) + (1,) * (ndim - 2))


def _not_channel(ndim):
    return (0,) + tuple(range(2, ndim))


# ------------------------------------------------------------- rule helpers
def _xhat(x, axes, eps):
    mu = mean_dim(x, dim=axes, keepdim=True)
    xc = x - mu
    rstd = rsqrt(mean_dim(xc * xc, dim=axes, keepdim=True) + eps)
    return xc * rstd, rstd


def _grad_x(gy, x, axes, eps):
    """The gradient through (x - mean) / std over ``axes``, given the one of its result."""
    xhat, rstd = _xhat(x, axes, eps)
    return rstd * (gy - mean_dim(gy, dim=axes, keepdim=True)
                   - xhat * mean_dim(gy * xhat, dim=axes, keepdim=True))


def _per_channel(v, ndim):
    return reshape(v, (v.shape[0],) + (1,) * (ndim - 2))


# --------------------------------------------------------------- layer_norm
def _last(x, normalized_ndim):
    return tuple(range(x.ndim - normalized_ndim, x.ndim))


def _layer_norm(x, weight, bias, normalized_ndim, eps):
    return _normalize(x, _last(x, normalized_ndim), eps) * weight + bias


def _print_channel(v: str, ndim: int, lit: Any) -> str:
    return f"np.reshape({v}, {lit((-1,) + (1,) * (ndim - 2))})"


def _print_layer_norm(e: Any, a: list, lit: Any) -> str:
    n, k = len(e.inputs[0].shape), e.params["normalized_ndim"]
    axes = tuple(range(n - k, n))
    return f"rt.normalize({a[0]}, {lit(axes)}, {lit(e.params['eps'])}) * {a[1]} + {a[2]}"


def _print_batch_norm(e: Any, a: list, lit: Any) -> str:
    n = len(e.inputs[0].shape)
    return (f"rt.normalize({a[0]}, {lit(_not_channel(n))}, {lit(e.params['eps'])}) * "
            f"{_print_channel(a[1], n, lit)} + {_print_channel(a[2], n, lit)}")


def _print_batch_norm_eval(e: Any, a: list, lit: Any) -> str:
    x, mean, var, w, b = a
    n = len(e.inputs[0].shape)
    eps = lit(np.dtype(e.inputs[2].dtype).type(e.params["eps"]))
    return (f"({x} - {_print_channel(mean, n, lit)}) * "
            f"{_print_channel(f'{w} / np.sqrt({var} + {eps})', n, lit)} + "
            f"{_print_channel(b, n, lit)}")


def _print_group_norm(e: Any, a: list, lit: Any) -> str:
    shape = tuple(e.inputs[0].shape)
    grouped = lit(_grouped(shape, e.params["num_groups"]))
    xhat = (f"np.reshape(rt.normalize(np.reshape({a[0]}, {grouped}), (2,), "
            f"{lit(e.params['eps'])}), {lit(shape)})")
    n = len(shape)
    return f"{xhat} * {_print_channel(a[1], n, lit)} + {_print_channel(a[2], n, lit)}"


layer_norm_op = defop(
    "layer_norm", _layer_norm, "NativeLayerNormBackward0", fresh=True,
    template=_print_layer_norm,
    torch_args=("input", "weight", "bias"), uses=("x weight", "x", ""),
    vjp=(lambda g, out, x, weight, bias, normalized_ndim, eps:
         _grad_x(g * weight, x, _last(x, normalized_ndim), eps),
         lambda g, out, x, weight, bias, normalized_ndim, eps:
         g * _xhat(x, _last(x, normalized_ndim), eps)[0],
         lambda g, out, x, weight, bias, normalized_ndim, eps: g), batch=batching.first_only)


# --------------------------------------------------------------- batch_norm
def _batch_norm(x, weight, bias, eps):
    xhat = _normalize(x, _not_channel(x.ndim), eps)
    return xhat * _channel(weight, x.ndim) + _channel(bias, x.ndim)


batch_norm_op = defop(
    "batch_norm", _batch_norm, "NativeBatchNormBackward0", fresh=True,
    template=_print_batch_norm,
    torch_args=("input", "weight", "bias"), uses=("x weight", "x", ""),
    vjp=(lambda g, out, x, weight, bias, eps:
         _grad_x(g * _per_channel(weight, x.ndim), x, _not_channel(x.ndim), eps),
         lambda g, out, x, weight, bias, eps:
         sum_dim(g * _xhat(x, _not_channel(x.ndim), eps)[0], dim=_not_channel(x.ndim),
                 keepdim=False),
         lambda g, out, x, weight, bias, eps:
         sum_dim(g, dim=_not_channel(g.ndim), keepdim=False)))


def _batch_norm_eval(x, mean, var, weight, bias, eps):
    scale = _channel(weight / np.sqrt(var + var.dtype.type(eps)), x.ndim)
    return (x - _channel(mean, x.ndim)) * scale + _channel(bias, x.ndim)


def _eval_rstd(var, eps, ndim):
    return _per_channel(rsqrt(var + eps), ndim)


batch_norm_eval_op = defop(
    "batch_norm_eval", _batch_norm_eval, "NativeBatchNormBackward0", fresh=True,
    template=_print_batch_norm_eval,
    torch_args=("input", "running_mean", "running_var", "weight", "bias"),
    uses=("var weight", "", "", "x mean var", ""),
    vjp=(lambda g, out, x, mean, var, weight, bias, eps:
         g * _per_channel(weight, x.ndim) * _eval_rstd(var, eps, x.ndim),
         None, None,
         lambda g, out, x, mean, var, weight, bias, eps:
         sum_dim(g * (x - _per_channel(mean, x.ndim)) * _eval_rstd(var, eps, x.ndim),
                 dim=_not_channel(x.ndim), keepdim=False),
         lambda g, out, x, mean, var, weight, bias, eps:
         sum_dim(g, dim=_not_channel(g.ndim), keepdim=False)))


# --------------------------------------------------------------- group_norm
def _grouped(shape, num_groups):
    return (shape[0], num_groups, -1)


def _group_norm(x, weight, bias, num_groups, eps):
    xhat = np.reshape(_normalize(np.reshape(x, _grouped(x.shape, num_groups)), (2,), eps),
                      x.shape)
    return xhat * _channel(weight, x.ndim) + _channel(bias, x.ndim)


def _group_xhat(x, num_groups, eps):
    return reshape(_xhat(reshape(x, _grouped(x.shape, num_groups)), (2,), eps)[0], x.shape)


def _group_grad_x(g, x, weight, num_groups, eps):
    gy = reshape(g * _per_channel(weight, x.ndim), _grouped(x.shape, num_groups))
    return reshape(_grad_x(gy, reshape(x, _grouped(x.shape, num_groups)), (2,), eps),
                   x.shape)


group_norm_op = defop(
    "group_norm", _group_norm, "NativeGroupNormBackward0", fresh=True,
    template=_print_group_norm,
    torch_args=("input", "weight", "bias"), uses=("x weight", "x", ""),
    vjp=(lambda g, out, x, weight, bias, num_groups, eps:
         _group_grad_x(g, x, weight, num_groups, eps),
         lambda g, out, x, weight, bias, num_groups, eps:
         sum_dim(g * _group_xhat(x, num_groups, eps), dim=_not_channel(x.ndim),
                 keepdim=False),
         lambda g, out, x, weight, bias, num_groups, eps:
         sum_dim(g, dim=_not_channel(g.ndim), keepdim=False)), batch=batching.merged)


# ------------------------------------------------------------- public functions
def _same_dtype(input, *others):
    """torch's CPU check: a normalization's parameters and statistics have the input's
    dtype (a float32 input with float64 ones, or the other way round, is refused)."""
    d = args.np_dtype(input)
    if any(o is not None and args.np_dtype(o) != d for o in others):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float"
                           if d == np.float32 else
                           "mixed dtype (CPU): all inputs must share same datatype.")


def _affine(input, weight, bias, shape):
    """weight and bias, or ones and zeros of the input's dtype where they are None."""
    dt = args.np_dtype(input)
    w = np.ones(shape, dt) if weight is None else weight
    return w, (np.zeros(shape, dt) if bias is None else bias)


def _size_list(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def _normalized_shape(input, normalized_shape):
    """``normalized_shape`` as a tuple, checked against the input's last dims (torch's
    message)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={_size_list(shape)}, expected input with "
                           f"shape [*, {', '.join(map(str, shape))}], but got input of size"
                           f"{_size_list(input.shape)}")
    return shape


@public("layer_norm", functional=True)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    _same_dtype(input, weight, bias)
    shape = _normalized_shape(input, normalized_shape)
    k = len(shape)
    w, b = _affine(input, weight, bias, shape)
    return layer_norm_op(input, w, b, normalized_ndim=k, eps=eps)


def _check_batch(input):
    size = input.shape[0] * int(np.prod(input.shape[2:]))
    if size == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size torch.Size({_size_list(input.shape)})")


def _update(running, stat, momentum):
    """running = (1 - momentum) running + momentum stat, in place, outside the graph."""
    running.mul_(1 - momentum).add_(to_dtype(detach(stat), running.dtype) * momentum)


@public("batch_norm", functional=True)
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if input.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
    _same_dtype(input, running_mean, running_var, weight, bias)
    c = input.shape[1]
    w, b = _affine(input, weight, bias, (c,))
    if not training and running_mean is not None and running_var is not None:
        return batch_norm_eval_op(input, running_mean, running_var, w, b, eps=eps)
    if training:
        _check_batch(input)
    out = batch_norm_op(input, w, b, eps=eps)
    if training and (running_mean is not None or running_var is not None):
        axes = _not_channel(input.ndim)
        n = input.shape[0] * int(np.prod(input.shape[2:]))
        mean = mean_dim(input, dim=axes, keepdim=False)
        if running_mean is not None:
            _update(running_mean, mean, momentum)
        if running_var is not None:
            xc = input - _per_channel(mean, input.ndim)
            _update(running_var, sum_dim(xc * xc, dim=axes, keepdim=False) / max(n - 1, 1),
                    momentum)
    return out


def _tiled(v, n):
    """A per-channel vector repeated for each of n instances."""
    return np.tile(v, n) if isinstance(v, np.ndarray) else v.repeat(n)


@public("instance_norm", functional=True)
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if input.ndim < 3:
        raise ValueError(f"expected 3D or more input (got {input.ndim}D input)")
    n, c = input.shape[:2]
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if int(np.prod(input.shape[2:])) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"torch.Size({list(input.shape)})")
    w, b = _affine(input, weight, bias, (c,))
    flat = reshape(input, (1, n * c) + tuple(input.shape[2:]))
    out = batch_norm_op(flat, _tiled(w, n), _tiled(b, n), eps=eps)
    if running_mean is not None or running_var is not None:
        axes = tuple(range(2, input.ndim))
        m = int(np.prod(input.shape[2:]))
        mean = mean_dim(input, dim=axes, keepdim=False)
        if running_mean is not None:
            _update(running_mean, mean_dim(mean, dim=(0,), keepdim=False), momentum)
        if running_var is not None:
            xc = input - reshape(mean, (n, c) + (1,) * (input.ndim - 2))
            var = sum_dim(xc * xc, dim=axes, keepdim=False) / max(m - 1, 1)
            _update(running_var, mean_dim(var, dim=(0,), keepdim=False), momentum)
    return reshape(out, input.shape)


@public("group_norm", functional=True)
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    _same_dtype(input, weight, bias)
    c = input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {_size_list(input.shape)} and "
                           f"num_groups={num_groups}")
    w, b = _affine(input, weight, bias, (c,))
    return group_norm_op(input, w, b, num_groups=num_groups, eps=eps)


@public("rms_norm", functional=True)
def rms_norm(input, normalized_shape, weight=None, eps=None):
    shape = _normalized_shape(input, normalized_shape)
    k = len(shape)
    if eps is None:
        eps = float(np.finfo(args.np_dtype(input)).eps)
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * rsqrt(mean_dim(input * input, dim=dims, keepdim=True) + eps)
    return out if weight is None else out * weight


@public("local_response_norm", functional=True)
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels) ** beta, the
    window zero-padded at the edges (torch's average pool counts the padding)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    lo, hi = size // 2, (size - 1) // 2
    pads = ((0, 0), (lo, hi)) + ((0, 0),) * (input.ndim - 2)
    padded = constant_pad(sq, pads=pads, value=0.0)
    window = padded.narrow(1, 0, c)
    for i in range(1, size):
        window = window + padded.narrow(1, i, c)
    div = (window * (alpha / size) + k) ** beta
    return input / div
