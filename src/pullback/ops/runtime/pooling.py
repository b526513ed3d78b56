"""Pooling over the last two dims (max, average, adaptive max) and resampling, one
matrix per dim (upsampling, adaptive average pooling)."""

from __future__ import annotations

import numpy as np

# (the ops' own padding and average pooling: plain numpy, shipped by pb.export)
from ..pooling import _avg_pool as avg_pool2d
from ..pooling import _avg_pool_backward as avg_pool2d_backward
from ..pooling import _padded
from ..resampling import matrices, separable
from .convolution import windows

__all__ = ["max_pool2d", "avg_pool2d", "avg_pool2d_backward", "adaptive_max_pool2d",
           "resample", "resample_backward"]


def max_pool2d(x, kernel, stride, padding, dilation, ceil_mode):
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
