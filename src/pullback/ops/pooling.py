"""Pooling: torch's ``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d`` and
``adaptive_max_pool1d/2d``.

As in torch, the primitives are two-dimensional over the last two dims (any leading
dims), and the 1-d functions are the 2-d ones on an unsqueezed input (their
``grad_fn`` is torch's ``SqueezeBackward1``). Max pooling returns the values and the
flat index of each maximum in its ``H * W`` plane; its gradient adds the incoming
gradient at those indices (``put_along``). Average pooling is linear: the pooled sums
over ``convolution.windows`` and their transpose (``add_windows``) are each other's
VJP. Adaptive averages are ``resampling.separable`` maps.

>>> import pullback as pb
>>> x = pb.arange(16.).reshape(1, 1, 4, 4).requires_grad_()
>>> v, i = pb.nn.functional.max_pool2d(x, 2, return_indices=True)
>>> v
tensor([[[[ 5.,  7.],
          [13., 15.]]]], grad_fn=<MaxPool2DWithIndicesBackward0>)
>>> i.flatten()
tensor([ 5,  7, 13, 15])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .convolution import add_windows, ntuple, pad_spatial, windows
from .reductions import mean_dim
from .resampling import linear_pair
from .selection import put_along
from .shape import reshape, squeeze_dim, unsqueeze_op
from .table import batching
from .table.registry import defop, public, rt_call
from .table.results import return_type

Pooled = return_type("max_pool2d", ("values", "indices"))


def pooled_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: a last window that starts inside the input (or its
    left padding) counts under ceil_mode."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _padded(x, kernel, stride, padding, dilation, ceil_mode, value):
    """``x`` padded so that every pooled window lies inside: ``padding`` before, and
    after as far as the last window reaches."""
    sizes = x.shape[-2:]
    outs = [pooled_size(n, k, s, p, d, ceil_mode)
            for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    need = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(outs, stride, dilation, kernel)]
    after = tuple(max(m - n - p, 0) for m, n, p in zip(need, sizes, padding))
    xp = pad_spatial(x, padding, after, value)
    return xp[..., :need[0], :need[1]], tuple(outs)


# ------------------------------------------------------------------------ max pooling
def _max_pool(x, kernel, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False):
    return Pooled(*_max_windows(x, kernel, stride, padding, dilation, ceil_mode))


def _max_windows(x, kernel, stride, padding, dilation, ceil_mode):
    """(max of each window, the flat index of that max in its ``H * W`` plane)."""
    xp, outs = _padded(x, kernel, stride, padding, dilation, ceil_mode, -np.inf)
    w = windows(xp, kernel, stride, dilation)  # (*lead, Lh, Lw, Kh, Kw)
    flat = w.reshape(w.shape[:-2] + (kernel[0] * kernel[1],))
    at = np.expand_dims(np.argmax(flat, axis=-1) if flat.size else
                        np.zeros(flat.shape[:-1], np.int64), -1)
    values = np.take_along_axis(flat, at, -1)[..., 0]
    kh, kw = np.divmod(at[..., 0], kernel[1])
    rows = np.arange(outs[0])[:, None] * stride[0] - padding[0] + kh * dilation[0]
    cols = np.arange(outs[1])[None, :] * stride[1] - padding[1] + kw * dilation[1]
    return values.astype(x.dtype, copy=False), rows * x.shape[-1] + cols


def scatter_max(g: Any, indices: Any, x: Any) -> Any:
    """The gradient of a max pooling: ``g`` added into zeros like ``x`` at the flat
    plane indices of the maxima."""
    lead, plane = tuple(x.shape[:-2]), x.shape[-2] * x.shape[-1]
    n = int(np.prod(indices.shape[-2:]))
    spread = put_along(reshape(g, lead + (n,)), reshape(indices, lead + (n,)),
                       dim=len(lead), shape=lead + (plane,))
    return reshape(spread, tuple(x.shape))


max_pool2d_op = defop(
    "max_pool2d", _max_pool, "MaxPool2DWithIndicesBackward0", outputs=Pooled,
    template=rt_call("max_pool2d", "kernel", "stride", "padding", "dilation", "ceil_mode"),
    torch_args=("self",), uses=("indices",),
    vjp=(lambda g, out, x, kernel, stride, padding, dilation, ceil_mode:
         scatter_max(g.values, out.indices, x),), batch=batching.merged)


def _adaptive_max(x, output_size):
    return Pooled(*_adaptive_max_windows(x, output_size))


def _adaptive_max_windows(x, output_size):
    """(max, flat plane index) over each of torch's adaptive windows: rows
    ``[i * H // oh, ceil((i + 1) * H / oh))``, columns likewise."""
    h, w = x.shape[-2:]
    values = np.empty(x.shape[:-2] + tuple(output_size), x.dtype)
    indices = np.empty(values.shape, np.int64)
    for i in range(output_size[0]):
        a, b = (i * h) // output_size[0], -(-((i + 1) * h) // output_size[0])
        for j in range(output_size[1]):
            c, e = (j * w) // output_size[1], -(-((j + 1) * w) // output_size[1])
            block = x[..., a:b, c:e].reshape(x.shape[:-2] + ((b - a) * (e - c),))
            at = np.argmax(block, axis=-1) if block.size else np.zeros(block.shape[:-1], int)
            values[..., i, j] = np.take_along_axis(block, at[..., None], -1)[..., 0]
            indices[..., i, j] = (a + at // (e - c)) * w + c + at % (e - c)
    return values, indices


adaptive_max_pool2d_op = defop(
    "adaptive_max_pool2d", _adaptive_max, "AdaptiveMaxPool2DBackward0", outputs=Pooled,
    torch_args=("self",), uses=("indices",), template=rt_call("adaptive_max_pool2d",
                                                              "output_size"),
    vjp=(lambda g, out, x, output_size: scatter_max(g.values, out.indices, x),),
    batch=batching.merged)


# ------------------------------------------------------------------------ avg pooling
def _divisors(n, k, s, p, o, count_include_pad):
    """Each window's divisor along one dim (torch's avg_pool2d, before divisor_override)."""
    start = np.arange(o) * s - p
    end = np.minimum(start + k, n + p)
    if count_include_pad:
        return end - start
    return np.minimum(end, n) - np.maximum(start, 0)


def _divisor(sizes, outs, kernel, stride, padding, count_include_pad, divisor_override):
    if divisor_override:
        return float(divisor_override)
    dh, dw = (_divisors(n, k, s, p, o, count_include_pad)
              for n, k, s, p, o in zip(sizes, kernel, stride, padding, outs))
    return np.outer(dh, dw).astype(np.float64)


def _avg_pool(x, kernel, stride, padding=(0, 0), ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    xp, outs = _padded(x, kernel, stride, padding, (1, 1), ceil_mode, 0.0)
    sums = windows(xp, kernel, stride, (1, 1)).sum(axis=(-2, -1))
    div = _divisor(x.shape[-2:], outs, kernel, stride, padding, count_include_pad,
                   divisor_override)
    return (sums / div).astype(x.dtype, copy=False)


def _avg_pool_backward(g, input_size, kernel, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    outs = g.shape[-2:]
    div = _divisor(input_size, outs, kernel, stride, padding, count_include_pad,
                   divisor_override)
    need = [(o - 1) * s + k for o, s, k in zip(outs, stride, kernel)]
    full = [max(m, n + p) for m, n, p in zip(need, input_size, padding)]
    out = np.zeros(g.shape[:-2] + tuple(full), g.dtype)
    share = (g / div).astype(g.dtype, copy=False)
    add_windows(out, np.broadcast_to(share[..., None, None, :, :], g.shape[:-2] + tuple(
        kernel) + tuple(outs)), stride, (1, 1))
    inner = (slice(padding[0], padding[0] + input_size[0]),
             slice(padding[1], padding[1] + input_size[1]))
    return np.ascontiguousarray(out[(...,) + inner])


avg_pool2d_op = defop(
    "avg_pool2d", _avg_pool, "AvgPool2DBackward0", torch_args=("self",), fresh=True,
    template=rt_call("avg_pool2d", "kernel", "stride", "padding", "ceil_mode",
                     "count_include_pad", "divisor_override"),
    vjp=(lambda g, out, x, kernel, stride, padding, ceil_mode, count_include_pad,
         divisor_override: avg_pool2d_backward(
             g, input_size=tuple(x.shape[-2:]), kernel=kernel, stride=stride, padding=padding,
             ceil_mode=ceil_mode, count_include_pad=count_include_pad,
             divisor_override=divisor_override),), batch=batching.merged)
avg_pool2d_backward = defop(
    "avg_pool2d_backward", _avg_pool_backward, "AvgPool2DBackwardBackward0",
    torch_args=("grad_output",), fresh=True,
    template=rt_call("avg_pool2d_backward", "input_size", "kernel", "stride", "padding",
                     "ceil_mode", "count_include_pad", "divisor_override"),
    vjp=(lambda g, out, grad, input_size, kernel, stride, padding, ceil_mode,
         count_include_pad, divisor_override: avg_pool2d_op(
             g, kernel=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
             count_include_pad=count_include_pad, divisor_override=divisor_override),),
             batch=batching.merged)

adaptive_avg_pool2d_op, adaptive_avg_pool2d_backward = linear_pair(
    "adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", "adaptive")


# ------------------------------------------------------------------- public functions
def _check_input(fn: str, input: Any, d: int) -> None:
    if input.ndim not in (d + 1, d + 2) or any(n == 0 for n in input.shape[1:]):
        raise RuntimeError(f"non-empty {d + 1}D or {d + 2}D (batch mode) tensor expected for "
                           "input")


def _pool_args(fn, input, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = ntuple(kernel_size, 2, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else ntuple(
        stride, 2, "stride")
    padding, dilation = ntuple(padding, 2, "padding"), ntuple(dilation, 2, "dilation")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{fn}: kernel_size must be greater than zero, but got kH: "
                           f"{kernel[0]} kW: {kernel[1]}")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{fn}: stride must be greater than zero, but got dH: {stride[0]} "
                           f"dW: {stride[1]}")
    for k, p, dl in zip(kernel, padding, dilation):
        if p > (dl * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={dl}")
    outs = [pooled_size(n, k, s, p, dl, ceil_mode) for n, k, s, p, dl in zip(
        input.shape[-2:], kernel, stride, padding, dilation)]
    if any(o < 1 for o in outs):
        c = input.shape[-3]
        raise RuntimeError(f"Given input size: ({c}x{input.shape[-2]}x{input.shape[-1]}). "
                           f"Calculated output size: ({c}x{outs[0]}x{outs[1]}). Output size "
                           "is too small")
    return kernel, stride, padding, dilation


def _as_2d(v: Any, fill: int) -> Any:
    """A 1-d pooling argument as the 2-d one torch passes (``fill`` on the unit dim)."""
    if v is None:
        return None
    t = ntuple(v, 1)
    return (fill, t[0])


@public("max_pool2d", function=True, functional=True)
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _check_input("max_pool2d", input, 2)
    kernel, stride, padding, dilation = _pool_args("max_pool2d", input, kernel_size, stride,
                                                   padding, dilation, ceil_mode)
    out = max_pool2d_op(input, kernel=kernel, stride=stride, padding=padding,
                        dilation=dilation, ceil_mode=bool(ceil_mode))
    return (out.values, out.indices) if return_indices else out.values


@public("max_pool1d", function=True, functional=True)
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if input.ndim not in (2, 3) or any(n == 0 for n in input.shape[-1:]):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(input.shape)}")
    stride = None if stride is None or stride == [] or stride == () else _as_2d(stride, 1)
    x = unsqueeze_op(input, dim=input.ndim - 1)
    values, indices = max_pool2d(x, _as_2d(kernel_size, 1), stride, _as_2d(padding, 0),
                                 _as_2d(dilation, 1), ceil_mode, True)
    values = squeeze_dim(values, dim=input.ndim - 1)
    if not return_indices:
        return values
    return values, squeeze_dim(indices, dim=input.ndim - 1)


@public("avg_pool2d", functional=True)
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    _check_input("avg_pool2d", input, 2)
    kernel, stride, padding, _ = _pool_args("avg_pool2d", input, kernel_size, stride, padding,
                                            1, ceil_mode)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    return avg_pool2d_op(input, kernel=kernel, stride=stride, padding=padding,
                         ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
                         divisor_override=None if divisor_override is None
                         else int(divisor_override))


@public("avg_pool1d", function=True, functional=True)
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "avg_pool1d)")
    stride = None if stride is None or stride == [] or stride == () else _as_2d(stride, 1)
    x = unsqueeze_op(input, dim=input.ndim - 1)
    out = avg_pool2d(x, _as_2d(kernel_size, 1), stride, _as_2d(padding, 0), ceil_mode,
                     count_include_pad)
    return squeeze_dim(out, dim=input.ndim - 1)


def _adaptive_size(fn: str, input: Any, output_size: Any, d: int) -> tuple:
    if input.ndim not in (d + 1, d + 2):
        colon = ":" if "max" in fn else ""  # (torch's two texts)
        raise RuntimeError(f"{fn}(): Expected {d + 1}D or {d + 2}D tensor, but got{colon} "
                           f"{list(input.shape)}")
    sizes = (output_size,) * d if output_size is None or isinstance(
        output_size, (int, np.integer)) else tuple(output_size)
    if len(sizes) != d:
        raise RuntimeError(f"{fn}: output_size must be {d}")
    return tuple(int(n if s is None else s) for s, n in zip(sizes, input.shape[-d:]))


@public("adaptive_avg_pool2d", functional=True)
def adaptive_avg_pool2d(input, output_size):
    size = _adaptive_size("adaptive_avg_pool2d", input, output_size, 2)
    if size == (1, 1):  # torch's global average: a mean
        return mean_dim(input, dim=(input.ndim - 2, input.ndim - 1), keepdim=True)
    return adaptive_avg_pool2d_op(input, output_size=size, options=())


@public("adaptive_avg_pool1d", function=True, functional=True)
def adaptive_avg_pool1d(input, output_size):
    size = _adaptive_size("adaptive_avg_pool1d", input, output_size, 1)
    x = unsqueeze_op(input, dim=input.ndim - 1)
    return squeeze_dim(adaptive_avg_pool2d(x, (1,) + size), dim=input.ndim - 1)


@public("adaptive_max_pool2d", functional=True)
def adaptive_max_pool2d(input, output_size, return_indices=False):
    size = _adaptive_size("adaptive_max_pool2d", input, output_size, 2)
    out = adaptive_max_pool2d_op(input, output_size=size)
    return (out.values, out.indices) if return_indices else out.values


@public("adaptive_max_pool1d", function=True, functional=True)
def adaptive_max_pool1d(input, output_size, return_indices=False):
    size = _adaptive_size("adaptive_max_pool1d", input, output_size, 1)
    x = unsqueeze_op(input, dim=input.ndim - 1)
    out = adaptive_max_pool2d_op(x, output_size=(1,) + size)
    values = squeeze_dim(out.values, dim=input.ndim - 1)
    if not return_indices:
        return values
    return values, squeeze_dim(out.indices, dim=input.ndim - 1)
