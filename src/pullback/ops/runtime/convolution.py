"""Convolution as matrix products over im2col's columns (and col2im, their adjoint)."""

from __future__ import annotations

import numpy as np


def windows(xp, kernel, stride, dilation):
    """A read-only view ``(*lead, *L, *K)`` of ``xp`` ``(*lead, *S)``: the window of
    ``kernel`` (spread by ``dilation``) at each of the ``L`` positions ``stride`` apart."""
    d = len(kernel)
    lead, sizes, st = xp.shape[:-d], xp.shape[-d:], xp.strides[-d:]
    positions = tuple((n - dl * (k - 1) - 1) // s + 1
                      for n, k, s, dl in zip(sizes, kernel, stride, dilation))
    return np.lib.stride_tricks.as_strided(
        xp, lead + positions + tuple(kernel),
        xp.strides[:-d] + tuple(a * s for a, s in zip(st, stride))
        + tuple(a * dl for a, dl in zip(st, dilation)), writeable=False)


def pad_last(x, before, after, value=0.0):
    """``x`` padded with ``value`` on its last ``len(before)`` dims."""
    if not any(before) and not any(after):
        return x
    return np.pad(x, ((0, 0),) * (x.ndim - len(before)) + tuple(zip(before, after)),
                  constant_values=value)


def im2col(x, kernel, dilation, padding, stride):
    """The columns of ``x`` ``(N, C, *S)``: ``(N, C * prod(K), L)``, one column per
    output position, its window of the zero-padded input."""
    d = len(kernel)
    w = windows(pad_last(x, padding, padding), kernel, stride, dilation)  # (N, C, *L, *K)
    kernel_first = (0, 1) + tuple(range(2 + d, 2 + 2 * d)) + tuple(range(2, 2 + d))
    return w.transpose(kernel_first).reshape(x.shape[0], x.shape[1] * int(np.prod(kernel)),
                                             int(np.prod(w.shape[2:2 + d])))


def col2im(cols, output_size, kernel, dilation, padding, stride):
    """im2col's adjoint: each column added back where its window lies, in an image of
    ``output_size`` (the padding cut off)."""
    n = cols.shape[0]
    c = cols.shape[1] // int(np.prod(kernel))
    padded = tuple(s + 2 * p for s, p in zip(output_size, padding))
    positions = tuple((m - dl * (k - 1) - 1) // s + 1
                      for m, k, s, dl in zip(padded, kernel, stride, dilation))
    out = np.zeros((n, c) + padded, dtype=cols.dtype)
    blocks = cols.reshape((n, c) + tuple(kernel) + positions)
    for k in np.ndindex(*kernel):  # one strided block of the image per kernel offset
        at = tuple(slice(i * dl, i * dl + s * (m - 1) + 1, s)
                   for i, dl, s, m in zip(k, dilation, stride, positions))
        out[(slice(None), slice(None)) + at] += blocks[(slice(None), slice(None)) + k]
    inner = tuple(slice(p, p + s) for p, s in zip(padding, output_size))
    return np.ascontiguousarray(out[(slice(None), slice(None)) + inner])


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
