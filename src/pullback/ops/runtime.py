"""The helpers generated code calls as ``rt.<name>``: plain numpy functions, for what one
numpy expression cannot say (the special functions numpy lacks, softmax's max shift,
nll's picking by target). Every other op prints as numpy itself (its ``template``).

``pb.export`` ships the functions an exported module calls, as source, so that it runs
without pullback. Each computes exactly what its op's forward computes (the same bits,
the same dtype).

>>> x = np.array([[1.0, 2.0, 3.0]], np.float32)
>>> log_softmax(x, 1)
array([[-2.4076061, -1.407606 , -0.407606 ]], dtype=float32)
>>> float(nll_loss(log_softmax(x, 1), np.array([2]), None, -100, "mean"))
0.40760600566864014
"""

from __future__ import annotations

import numpy as np

from .decompositions import _adjugate
from .embedding import _embedding_bag, _embedding_bag_backward, _max_gather, _renorm_scale
from .factorizations import _expm
from .kernels.bessel import i0, i0e, i1, i1e, iv, ive, j0, j1, jn, k0, k0e, k1, k1e, y0, y1, yn
from .kernels.erf_gamma import digamma, erf, erfc, erfinv, lgamma, polygamma
from .kernels.incomplete_gamma_beta import (
    betainc,
    betainc_da,
    betainc_db,
    gammainc,
    gammainc_da,
    gammaincc,
)
from .kernels.normal import erfcx, log_ndtr, ndtri
from .kernels.summation import PAIRWISE_BLOCK, sum_of
from .losses import _nll, _nll_backward, _picked, softmax_nll_backward
from .reductions import fast_mean
from .resampling import matrices, separable
from .sylvester import _solve_sylvester, _sqrtm
from .triangular import _solve_triangular


def softmax(x, axis):
    """exp(x - max) normalized along ``axis`` (the max shift keeps exp finite)."""
    if not x.size:
        return x.copy()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    e /= sum_of(e, axis, keepdims=True)
    return e if e.flags.c_contiguous else np.ascontiguousarray(e)


def log_softmax(x, axis):
    """x - logsumexp(x) along ``axis``, shifted by the max."""
    if not x.size:
        return x.copy()
    s = x - x.max(axis=axis, keepdims=True)
    e = np.exp(s)  # (a row of at most PAIRWISE_BLOCK: numpy's own sum, as sum_of's)
    s -= np.log(e.sum(axis=axis, keepdims=True) if x.ndim and x.shape[axis] <= PAIRWISE_BLOCK
                else sum_of(e, axis, keepdims=True))
    return s if s.flags.c_contiguous else np.ascontiguousarray(s)


def nll_loss(logp, target, weight, ignore_index, reduction):
    """-logp[i, target[i]] for each row of a (rows, classes) ``logp``, its mean or sum;
    any other case (class weights, a target equal to ``ignore_index`` or negative, no
    reduction) as pullback's own nll_loss."""
    if weight is not None or logp.ndim != 2 or not target.size or reduction == "none" or \
            0 <= ignore_index < logp.shape[1]:
        return _nll(logp, target, weight, ignore_index, reduction)
    return nll_rows(logp, target, ignore_index, reduction)


def nll_rows(logp, target, ignore_index, reduction):
    """nll_loss's common case, as the template finds it when traced: a (rows, classes)
    ``logp``, no class weights, ``ignore_index`` no class, a mean or a sum. Only a
    negative target (``ignore_index``'s, or out of range) takes the general path."""
    if target[target.argmin()] < 0:  # (argmin: a third of np.min's time on a batch)
        return _nll(logp, target, None, ignore_index, reduction)
    picked = _picked(logp, target)  # (torch's error for a target past the classes)
    if reduction == "sum":
        return -picked.sum()
    return -picked.sum() / target.size if logp.dtype.itemsize >= 4 else np.mean(-picked)


def nll_backward(g, target, weight, shape, ignore_index, reduction):
    """nll_loss's gradient: -g (over the rows, for a mean) at each row's target, zeros
    elsewhere (any other case as nll_loss's)."""
    if weight is not None or len(shape) != 2 or not target.size or reduction == "none" or \
            0 <= ignore_index < shape[1]:
        return _nll_backward(g, target, weight, shape, ignore_index, reduction)
    return nll_rows_backward(g, target, shape, ignore_index, reduction)


def nll_rows_backward(g, target, shape, ignore_index, reduction):
    """nll_rows's gradient (its case decided when traced, a negative target excepted)."""
    if target[target.argmin()] < 0:
        return _nll_backward(g, target, None, shape, ignore_index, reduction)
    out = np.zeros(shape, np.result_type(g))
    out[np.arange(target.size), target] = -g / target.size if reduction == "mean" else -g
    return out


__all__ = ["softmax", "log_softmax", "nll_loss", "nll_backward", "erf", "erfc", "erfinv",
           "lgamma", "digamma", "i0", "i0e", "i1", "i1e", "j0", "j1", "y0", "y1", "k0", "k0e",
           "k1", "k1e", "erfcx", "log_ndtr", "ndtri", "nll_rows", "nll_rows_backward",
           "softmax_nll_backward"]


# ------------------------------------------------------------ reductions and ordering
def c_order(a):
    """``a`` laid out C-contiguous (itself when it is, as a 0-d array always is)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def logsumexp(x, axis, keepdims):
    """log(sum(exp(x))) along ``axis`` (an int, a tuple, or None: every axis), shifted by
    the max, which counts as 0 where it is infinite (all -inf gives -inf, an inf inf)."""
    if x.size:
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isinf(m), 0, m)
    else:
        m = np.zeros([1 if axis is None or i in np.atleast_1d(axis) else n
                      for i, n in enumerate(x.shape)], x.dtype)
    s = np.log(sum_of(np.exp(x - m), axis, True)) + m
    if not keepdims:
        s = np.squeeze(s, axis=axis)
    return c_order(s)


def prod_others(x, axis):
    """The product of the other elements of each slice along ``axis``, at each element
    (Q / x without zeros; Q, the product of the nonzero ones, at a slice's only zero)."""
    zero = x == 0
    y = np.where(zero, 1, x)
    q = np.prod(y, axis=axis, keepdims=True)
    zeros = np.sum(zero, axis=axis, keepdims=True)
    return np.where(zeros == 0, q / y, np.where(zero & (zeros == 1), q, 0)).astype(q.dtype,
                                                                                  copy=False)


def stable_order(x, axis, descending=False):
    """The indices that sort ``x`` along ``axis``, stably (torch's order: descending keeps
    equal elements in their order and puts NaN first)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(x.shape[axis] - 1 - flipped, axis)


def sort(x, axis, descending):
    """(values, indices) of ``x`` sorted along ``axis`` (None: a 0-d ``x``)."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = stable_order(x, axis, descending)
    return np.ascontiguousarray(np.take_along_axis(x, index, axis)), index


def topk(x, k, axis, largest):
    """(values, indices) of the ``k`` largest (or smallest) along ``axis``, in order."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = np.ascontiguousarray(np.take(stable_order(x, axis, largest), np.arange(k), axis))
    return np.take_along_axis(x, index, axis), index


def argsort_descending(x, axis):
    """torch's argsort(descending=True): NaN first, then by -x, equal elements in their
    order (lexsort's last key first, over the axis moved to the end)."""
    key = -x.astype(np.float64) if x.dtype.kind in "biu" else -x
    if x.dtype.kind not in "fc":
        return np.argsort(key, axis=axis, kind="stable")
    nan = np.isnan(x)
    keys = (np.moveaxis(np.where(nan, 0, key), axis, -1), np.moveaxis(~nan, axis, -1))
    return np.ascontiguousarray(np.moveaxis(np.lexsort(keys, axis=-1), -1, axis))


def median(x):
    """torch's median of every element: the lower of the two middle ones; NaN if any is
    NaN (or there are none)."""
    flat = x.reshape(-1)
    if not flat.size or (flat.dtype.kind in "fc" and np.isnan(flat).any()):
        return np.asarray(np.nan, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    k = (flat.size - 1) // 2
    return np.asarray(np.partition(flat, k)[k])


def argmedian(x, axis, keepdims):
    """The index of the lower median along ``axis`` (the first NaN's, if there is one;
    among equal elements the first)."""
    order = np.argsort(x, axis=axis, kind="stable")
    index = np.take(order, [(x.shape[axis] - 1) // 2], axis=axis)
    if x.dtype.kind in "fc":
        nan = np.isnan(x)
        index = np.where(nan.any(axis=axis, keepdims=True),
                         np.argmax(nan, axis=axis, keepdims=True), index)
    return c_order(index if keepdims else np.squeeze(index, axis))


def median_along(x, axis, keepdims):
    """(values, indices) of the lower median along ``axis``."""
    index = argmedian(x, axis, keepdims)
    at = index if keepdims else np.expand_dims(index, axis)
    values = np.take_along_axis(x, at, axis=axis)
    return c_order(values if keepdims else np.squeeze(values, axis)), index


# ------------------------------------------------------------ scatters and index writes
def _index_at(index, axis):
    """The advanced index that puts ``index`` at ``axis`` and counts along the other dims
    (torch's scatter/gather addressing)."""
    where = list(np.indices(np.shape(index), sparse=True))
    where[axis] = index
    return tuple(where)


def scatter(x, index, src, axis):
    """A copy of ``x`` with ``src`` (an array or a scalar) written at ``index`` along
    ``axis``."""
    out = np.array(x, copy=True, order="C")
    out[_index_at(index, axis)] = src
    return out


def scatter_add(x, index, src, axis):
    """A copy of ``x`` with ``src`` added at ``index`` along ``axis`` (repeats add up)."""
    out = np.array(x, copy=True, order="C")
    np.add.at(out, _index_at(index, axis), src)
    return out


def scatter_reduced(x, index, src, axis, reduce):
    """torch's legacy ``scatter(..., reduce="add"|"multiply")``: ``src`` accumulated into
    a copy of ``x``."""
    out = np.array(x, copy=True)
    vals = src[tuple(slice(0, n) for n in np.shape(index))] if np.ndim(src) else src
    (np.add if reduce == "add" else np.multiply).at(out, _index_at(index, axis), vals)
    return out


def put_along(src, index, axis, shape):
    """Zeros of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    out = np.zeros(shape, dtype=np.result_type(src))
    np.add.at(out, _index_at(index, axis), src)
    return out


def index_copy(x, axis, index, value):
    """A copy of ``x`` with ``value`` written at ``index`` of ``axis``
    (``out[:, index] = value`` for axis 1)."""
    out = np.array(x, copy=True, order="C")
    out[(slice(None),) * axis + (index,)] = value
    return out


def index_add(x, axis, index, value):
    """A copy of ``x`` with ``value`` added at ``index`` of ``axis`` (repeats add up)."""
    out = np.array(x, copy=True, order="C")
    np.add.at(out, (slice(None),) * axis + (index,), value)
    return out


# ------------------------------------------------------------ convolution
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


# ------------------------------------------------------------ pooling (the last two dims)
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


# ------------------------------------------------------------ indexing's gradients
def zeros_set(shape, index, value):
    """Zeros of ``shape`` (``value``'s dtype) with ``value`` written at ``index`` (a basic
    index: the gradient of a view)."""
    out = np.zeros(shape, dtype=np.result_type(value))
    out[index] = value
    return out


def zeros_add(shape, index, value):
    """Zeros of ``shape`` with ``value`` added at ``index`` (advanced indexing's gradient:
    repeated indices add up)."""
    out = np.zeros(shape, dtype=np.result_type(value))
    np.add.at(out, index, value)
    return out


def index_put(x, index, value):
    """A copy of ``x`` with ``value`` written at ``index`` (``x[index] = value``)."""
    out = np.array(x, copy=True)
    out[index] = value
    return out


def diagonal_set(shape, value, offset, axis1, axis2):
    """Zeros of ``shape`` with ``value`` on the diagonal (``offset``, ``axis1``,
    ``axis2``): diag_embed, and diagonal's gradient."""
    out = np.zeros(shape, dtype=np.result_type(value))
    diagonal = np.diagonal(out, offset, axis1, axis2)
    diagonal.flags.writeable = True  # (a view of out, which numpy hands out read-only)
    diagonal[...] = value
    return out


def embedding_backward(g, indices, num_weights, padding_idx):
    """The gradient of the rows looked up at ``indices``: each row of ``g`` added into
    its row of a zero table, the ``padding_idx`` row kept 0."""
    d = g.shape[-1] if g.ndim else 1
    out = np.zeros((num_weights, d), g.dtype)
    np.add.at(out, indices.reshape(-1), np.reshape(g, (indices.size, -1)))
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


# ------------------------------------------------------------ resampling, normalization
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


def normalize(x, axes, eps):
    """(x - mean) / sqrt(var + eps) over ``axes`` (layer, batch and group norm)."""
    mu = fast_mean(x, axis=axes, keepdims=True)
    xc = x - mu
    var = fast_mean(xc * xc, axis=axes, keepdims=True)
    return xc / np.sqrt(var + x.dtype.type(eps))


# ------------------------------------------------------------ masks
def masked_select(x, mask):
    """The elements of ``x`` where ``mask`` is true (the two broadcast), in order."""
    xb, mb = np.broadcast_arrays(x, mask)
    return xb[mb]


def masked_select_backward(g, mask, shape):
    """``g`` put back at the mask's places, zeros elsewhere, in the broadcast shape of
    ``shape`` and the mask."""
    full = np.broadcast_shapes(tuple(shape), np.shape(mask))
    out = np.zeros(full, dtype=np.result_type(g))
    out[np.broadcast_to(mask, full)] = g
    return out


def masked_scatter(x, mask, source):
    """A copy of ``x`` with the mask's places filled, in order, from ``source``."""
    out = np.array(x, copy=True, order="C")
    m = np.broadcast_to(mask, out.shape)
    out[m] = np.reshape(source, -1)[:int(m.sum())]
    return out


def masked_scatter_backward(g, mask, shape):
    """The source's gradient: ``g`` at the mask's places, in order, then zeros, in the
    source's ``shape``."""
    picked = np.asarray(g)[np.broadcast_to(mask, np.shape(g))]
    out = np.zeros(int(np.prod(shape)), dtype=np.result_type(g))
    out[:picked.size] = picked
    return out.reshape(shape)


def scatter_reduce(x, index, src, axis, reduce, include_self):
    """torch's scatter_reduce: ``src`` combined by ``reduce`` ("sum", "prod", "mean",
    "amax", "amin") into a copy of ``x`` at ``index`` along ``axis``, ``x``'s own value
    taking part where ``include_self``."""
    out = np.array(x, copy=True, order="C")
    at = _index_at(index, axis)
    if not include_self:
        out[at] = {"sum": 0, "prod": 1, "mean": 0, "amax": -np.inf, "amin": np.inf}[reduce]
    ufunc = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    ufunc.at(out, at, src)
    if reduce == "mean":
        count = np.zeros(out.shape, out.dtype) + (1 if include_self else 0)
        np.add.at(count, at, 1)
        out = np.where(count > 0, out / np.maximum(count, 1), out)
    return out


# ------------------------------------------------------------ embedding_bag
def embedding_bag(w, indices, offsets, mode, padding_idx, include_last_offset):
    """Each bag's rows of ``w`` combined by ``mode`` ("sum", "mean" or "max"); the bags
    are ``indices``' rows (2-d) or start at ``offsets`` (1-d)."""
    return _embedding_bag(w, indices, offsets, mode, padding_idx, include_last_offset)


def embedding_bag_backward(g, w, indices, offsets, mode, padding_idx, include_last_offset):
    """embedding_bag's gradient for ``w``: each bag's row of ``g`` added to the rows it
    looked up (divided by the bag's size for "mean"; at the maxima for "max")."""
    return _embedding_bag_backward(g, w, indices, offsets, mode, padding_idx,
                                   include_last_offset)


def embedding_bag_max_gather(gw, w, indices, offsets, mode, padding_idx, include_last_offset):
    """The transpose of max mode's backward: each bag's entries of ``gw`` at its maxima."""
    return _max_gather(gw, w, indices, offsets, mode, padding_idx, include_last_offset)


def renorm_scale(w, indices, max_norm, norm_type):
    """Per row of ``w``: max_norm / (norm + 1e-7) for the rows looked up whose norm is
    above max_norm, else 1 (torch's embedding_renorm_)."""
    return _renorm_scale(w, indices, max_norm, norm_type)


# ------------------------------------------------------------ special functions
def xlog1py(x, y):
    """x log1p(y), 0 where x == 0 (unless y is NaN): torch's and scipy's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(x == 0, 0, x * np.log1p(y))
    return np.where(np.isnan(y), np.nan, v).astype(v.dtype, copy=False)


__all__ += ["jn", "yn", "iv", "ive", "polygamma", "gammainc", "gammaincc", "gammainc_da",
            "betainc", "betainc_da", "betainc_db"]


# ------------------------------------------------------------ linear algebra
def adjugate(A):
    """adj(A): det(A) inv(A) where A is invertible, from the SVD at singular matrices
    (torch's linalg_det_backward)."""
    return _adjugate(A)


def matrix_exp(A):
    """exp(A) of each matrix: scaling and squaring with the Pade(13) approximant."""
    return _expm(A)


def eig(A):
    """(eigenvalues, eigenvectors) of each matrix, always complex (torch's)."""
    L, V = np.linalg.eig(A)
    c = np.result_type(A.dtype, np.complex64)
    return L.astype(c, copy=False), V.astype(c, copy=False)


def solve_triangular(A, B, upper, left, unitriangular):
    """X with A X = B (``left``) or X A = B, A triangular, by substitution."""
    return _solve_triangular(A, B, upper, left, unitriangular)


def solve_sylvester(A, B, Q):
    """X with A X + X B = Q (scipy's solve_sylvester)."""
    return _solve_sylvester(A, B, Q)


def sqrtm(A):
    """The principal square root of a matrix (scipy's sqrtm)."""
    return _sqrtm(A)


def class_one_hot(labels, num_classes):
    """int64 one-hot rows of class ``labels`` (torch's one_hot and its errors)."""
    if labels.size and labels.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if labels.size and labels.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (labels[..., None] == np.arange(num_classes)).astype(np.int64)
