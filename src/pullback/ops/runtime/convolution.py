"""Convolution as matrix products over im2col's columns (and col2im, their adjoint)."""

from __future__ import annotations

import numpy as np

# (the ops' own windows, padding, im2col and col2im: plain numpy, shipped by pb.export)
from ..convolution import _col2im as col2im
from ..convolution import _im2col as im2col
from ..convolution import pad_spatial as pad_last
from ..convolution import windows

__all__ = ["windows", "pad_last", "im2col", "col2im", "conv", "conv_transpose"]


def conv(x, w, b, stride, padding, dilation, groups):
    """torch's convolution of ``x`` ``(N, C, *S)`` by ``w`` ``(O, C / groups, *K)``: per
    group, the weight as a matrix times the input's im2col columns."""
    n, kernel = x.shape[0], w.shape[2:]
    cols = im2col(x, kernel, dilation, padding, stride)
    cols = cols.reshape(n, groups, cols.shape[1] // groups, cols.shape[-1])
    wg = w.reshape(groups, w.shape[0] // groups, w.shape[1] * int(np.prod(kernel)))
    positions = tuple((s + 2 * p - dl * (k - 1) - 1) // st + 1 for s, k, st, p, dl in zip(
        x.shape[2:], kernel, stride, padding, dilation))
    out = (wg[None] @ cols).reshape((n, w.shape[0]) + positions)
    if b is not None:
        out += b.reshape((-1,) + (1,) * len(kernel))
    return out


def conv_transpose(x, w, b, stride, padding, dilation, output_padding, groups):
    """torch's transposed convolution of ``x`` ``(N, C, *S)`` by ``w``
    ``(C, O / groups, *K)``: columns from the weight, added into the image (col2im)."""
    n, kernel = x.shape[0], w.shape[2:]
    cin_g, cout_g, kp = w.shape[0] // groups, w.shape[1], int(np.prod(kernel))
    xg = x.reshape(n, groups, cin_g, int(np.prod(x.shape[2:])))
    wg = w.reshape(groups, cin_g, cout_g * kp)
    cols = (np.swapaxes(wg, 1, 2)[None] @ xg).reshape(n, groups * cout_g * kp, xg.shape[-1])
    size = tuple((s - 1) * st - 2 * p + dl * (k - 1) + op + 1 for s, k, st, p, dl, op in zip(
        x.shape[2:], kernel, stride, padding, dilation, output_padding))
    out = col2im(cols, size, kernel, dilation, padding, stride)
    if b is not None:
        out += b.reshape((-1,) + (1,) * len(kernel))
    return out
