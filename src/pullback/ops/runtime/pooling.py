"""Pooling over the last two dims (max, average, adaptive max) and resampling, one
matrix per dim (upsampling, adaptive average pooling)."""

from __future__ import annotations

import numpy as np

from ..resampling import matrices, separable
from .convolution import pad_last, windows


def _pooled(x, kernel, stride, padding, dilation, ceil_mode, value):
    """``x`` padded with ``value`` so that every pooled window lies inside (``padding``
    before, after as far as the last window reaches), and the pooled sizes: torch's
    (under ceil_mode a last window that starts inside the input or its left padding)."""
    outs, need, after = [], [], []
    for n, k, s, p, d in zip(x.shape[-2:], kernel, stride, padding, dilation):
        o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        outs.append(o)
        need.append((o - 1) * s + d * (k - 1) + 1)
        after.append(max(need[-1] - n - p, 0))
    xp = pad_last(x, padding, after, value)
    return xp[..., :need[0], :need[1]], tuple(outs)


def max_pool2d(x, kernel, stride, padding, dilation, ceil_mode):
    """(max of each window, the flat index of that max in its ``H * W`` plane)."""
    xp, outs = _pooled(x, kernel, stride, padding, dilation, ceil_mode, -np.inf)
    w = windows(xp, kernel, stride, dilation)  # (*lead, Lh, Lw, Kh, Kw)
    flat = w.reshape(w.shape[:-2] + (kernel[0] * kernel[1],))
    at = np.expand_dims(np.argmax(flat, axis=-1) if flat.size else
                        np.zeros(flat.shape[:-1], np.int64), -1)
    values = np.take_along_axis(flat, at, -1)[..., 0]
    kh, kw = np.divmod(at[..., 0], kernel[1])
    rows = np.arange(outs[0])[:, None] * stride[0] - padding[0] + kh * dilation[0]
    cols = np.arange(outs[1])[None, :] * stride[1] - padding[1] + kw * dilation[1]
    return values.astype(x.dtype, copy=False), rows * x.shape[-1] + cols


def _pool_divisor(sizes, outs, kernel, stride, padding, count_include_pad, divisor_override):
    """Each window's divisor (torch's avg_pool2d): its size, within the input and its
    padding (or the input alone), unless ``divisor_override``."""
    if divisor_override:
        return float(divisor_override)
    per_dim = []
    for n, k, s, p, o in zip(sizes, kernel, stride, padding, outs):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        per_dim.append(end - start if count_include_pad else
                       np.minimum(end, n) - np.maximum(start, 0))
    return np.outer(*per_dim).astype(np.float64)


def avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """The mean of each window (its sum over its divisor)."""
    xp, outs = _pooled(x, kernel, stride, padding, (1, 1), ceil_mode, 0.0)
    sums = windows(xp, kernel, stride, (1, 1)).sum(axis=(-2, -1))
    div = _pool_divisor(x.shape[-2:], outs, kernel, stride, padding, count_include_pad,
                        divisor_override)
    return (sums / div).astype(x.dtype, copy=False)


def avg_pool2d_backward(g, input_size, kernel, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    """avg_pool2d's adjoint: each window's share of ``g`` added over the window."""
    outs = g.shape[-2:]
    div = _pool_divisor(input_size, outs, kernel, stride, padding, count_include_pad,
                        divisor_override)
    full = [max((o - 1) * s + k, n + p)
            for o, s, k, n, p in zip(outs, stride, kernel, input_size, padding)]
    out = np.zeros(g.shape[:-2] + tuple(full), g.dtype)
    share = (g / div).astype(g.dtype, copy=False)
    for i, j in np.ndindex(*kernel):  # one strided block per kernel offset
        out[..., i:i + stride[0] * (outs[0] - 1) + 1:stride[0],
            j:j + stride[1] * (outs[1] - 1) + 1:stride[1]] += share
    return np.ascontiguousarray(out[..., padding[0]:padding[0] + input_size[0],
                                    padding[1]:padding[1] + input_size[1]])


def adaptive_max_pool2d(x, output_size):
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


def resample(x, kind, output_size, options):
    """``x``'s last dims resampled to ``output_size``, one matrix per dim (``kind``:
    torch's upsampling, "nearest" or "bilinear", or adaptive average pooling,
    "adaptive"; ``options``: their scales and align_corners)."""
    d = len(output_size)
    return separable(x, matrices(kind, x.shape[-d:], output_size, options))


def resample_backward(g, kind, input_size, options):
    """resample's adjoint: each dim's matrix transposed."""
    d = len(input_size)
    return separable(g, [m.T for m in matrices(kind, input_size, g.shape[-d:], options)])
