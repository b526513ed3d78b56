"""Pooling over the last two dims (max, average, adaptive max) and resampling, one
matrix per dim (upsampling, adaptive average pooling)."""

from __future__ import annotations

# (the ops' own max and average pooling: plain numpy, shipped by pb.export)
from ..pooling import _adaptive_max_windows as adaptive_max_pool2d
from ..pooling import _avg_pool as avg_pool2d
from ..pooling import _avg_pool_backward as avg_pool2d_backward
from ..pooling import _max_windows as max_pool2d
from ..resampling import matrices, separable

__all__ = ["max_pool2d", "avg_pool2d", "avg_pool2d_backward", "adaptive_max_pool2d",
           "resample", "resample_backward"]


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
