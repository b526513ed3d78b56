"""Convolutions: torch's ``conv1d``/``conv2d``/``conv3d``, ``conv_transpose1d``/``2d``
and ``unfold``/``fold`` (im2col and col2im), over one strided-view core.

``windows`` is the core: a padded input ``(N, C, *S)`` seen, without a copy, as
``(N, C, *L, *K)``, every kernel-sized window at every output position. ``im2col``
lays the windows out as torch's ``unfold`` does, ``(N, C * prod(K), prod(L))``, and
``col2im`` (``fold``) adds such columns back into an image: the two are each other's
adjoint, so each is the other's VJP. A convolution is one matrix product of the
weight with the columns; its input's gradient is the transposed convolution of the
output's gradient (and the other way round), its weight's gradient a product of the
gradient with the input's columns: rules made of ops, so convolutions differentiate
again.

>>> import pullback as pb
>>> x = pb.arange(16.).reshape(1, 1, 4, 4).requires_grad_()
>>> y = pb.nn.functional.conv2d(x, pb.ones(1, 1, 2, 2), stride=2)
>>> y
tensor([[[[10., 18.],
          [42., 50.]]]], grad_fn=<ConvolutionBackward0>)
>>> pb.nn.functional.unfold(x, 2, stride=2).shape
(1, 4, 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .einsum import einsum_op
from .padding import constant_pad
from .reductions import sum_dim
from .shape import reshape, squeeze_dim, unsqueeze_op
from .table import args, batching
from .table.registry import defop, public, rt_call


# ------------------------------------------------------------------- the numpy core
def out_sizes(sizes: tuple, kernel: tuple, stride: tuple, padding: tuple,
              dilation: tuple) -> tuple:
    """Output positions per spatial dim: ``(S + 2p - d (K - 1) - 1) // s + 1``."""
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, st, p, d in zip(sizes, kernel, stride, padding, dilation))


def windows(xp: np.ndarray, kernel: tuple, stride: tuple, dilation: tuple) -> np.ndarray:
    """A read-only view ``(*lead, *L, *K)`` of the (already padded) ``(*lead, *S)``, one
    spatial dim per kernel dim: the window of kernel ``K`` at each of the ``L`` output
    positions.

    >>> windows(np.arange(5.).reshape(1, 1, 5), (2,), (2,), (1,))[0, 0]
    array([[0., 1.],
           [2., 3.]])
    """
    d = len(kernel)
    lead, sizes = xp.shape[:-d], xp.shape[-d:]
    ls = out_sizes(sizes, kernel, stride, (0,) * d, dilation)
    st = xp.strides[-d:]
    return np.lib.stride_tricks.as_strided(
        xp, lead + ls + tuple(kernel), xp.strides[:-d] + tuple(a * s for a, s in zip(st, stride))
        + tuple(a * dl for a, dl in zip(st, dilation)), writeable=False)


def add_windows(out: np.ndarray, blocks: np.ndarray, stride: tuple, dilation: tuple) -> None:
    """The adjoint of ``windows``: add ``blocks`` ``(*lead, *K, *L)`` into ``out``
    ``(*lead, *S)`` where each window lies, one strided block per kernel offset."""
    d = len(stride)
    kernel, ls = blocks.shape[-2 * d:-d], blocks.shape[-d:]
    lead = (slice(None),) * (out.ndim - d)
    for k in np.ndindex(*kernel):
        where = tuple(slice(i * dl, i * dl + st * (m - 1) + 1, st)
                      for i, dl, st, m in zip(k, dilation, stride, ls))
        out[lead + where] += blocks[lead + k]


def pad_spatial(x: np.ndarray, before: tuple, after: tuple, value: float = 0.0) -> np.ndarray:
    """``x`` padded with ``value`` on its last ``len(before)`` dims."""
    if not any(before) and not any(after):
        return x
    lead = ((0, 0),) * (x.ndim - len(before))
    return np.pad(x, lead + tuple(zip(before, after)), constant_values=value)


def _im2col(x, kernel, dilation, padding, stride):
    d = len(kernel)
    w = windows(pad_spatial(x, padding, padding), kernel, stride, dilation)  # (N, C, *L, *K)
    n, c = x.shape[:2]
    order = (0, 1) + tuple(range(2 + d, 2 + 2 * d)) + tuple(range(2, 2 + d))
    return w.transpose(order).reshape(n, c * int(np.prod(kernel)), int(np.prod(w.shape[2:2 + d])))


def _col2im(cols, output_size, kernel, dilation, padding, stride):
    d = len(kernel)
    n = cols.shape[0]
    c = cols.shape[1] // int(np.prod(kernel))
    padded = tuple(s + 2 * p for s, p in zip(output_size, padding))
    ls = out_sizes(padded, kernel, stride, (0,) * d, dilation)
    out = np.zeros((n, c) + padded, dtype=cols.dtype)
    add_windows(out, cols.reshape((n, c) + tuple(kernel) + ls), stride, dilation)
    inner = tuple(slice(p, p + s) for p, s in zip(padding, output_size))
    return np.ascontiguousarray(out[(slice(None), slice(None)) + inner])


# im2col and col2im: each other's adjoint (torch's Im2ColBackward0, Col2ImBackward0)
im2col = defop("im2col", _im2col, "Im2ColBackward0", fresh=True, torch_args=("self",),
               template=rt_call("im2col", "kernel", "dilation", "padding", "stride"),
               vjp=(lambda g, out, x, kernel, dilation, padding, stride: col2im(
                   g, output_size=tuple(x.shape[2:]), kernel=kernel, dilation=dilation,
                   padding=padding, stride=stride),), batch=batching.merged)
col2im = defop("col2im", _col2im, "Col2ImBackward0", fresh=True, torch_args=("self",),
               template=rt_call("col2im", "output_size", "kernel", "dilation", "padding",
                                "stride"),
               vjp=(lambda g, out, cols, output_size, kernel, dilation, padding, stride:
                    im2col(g, kernel=kernel, dilation=dilation, padding=padding,
                           stride=stride),), batch=batching.merged)


# ----------------------------------------------------------------------- convolution
def _transposed_size(sizes, kernel, stride, padding, dilation, output_padding) -> tuple:
    return tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, k, st, p, d, op in zip(
        sizes, kernel, stride, padding, dilation, output_padding))


def _convolution(x, w, b=None, stride=None, padding=None, dilation=None, transposed=False,
                 output_padding=None, groups=1):
    n, kernel = x.shape[0], w.shape[2:]
    ones, zeros = (1,) * len(kernel), (0,) * len(kernel)
    stride, dilation = stride or ones, dilation or ones
    padding, output_padding = padding or zeros, output_padding or zeros
    kp = int(np.prod(kernel))
    if transposed:  # columns from the weight, added up into the image
        cin_g, cout_g = w.shape[0] // groups, w.shape[1]
        ls = int(np.prod(x.shape[2:]))
        xg = x.reshape(n, groups, cin_g, ls)
        wg = w.reshape(groups, cin_g, cout_g * kp)
        cols = (np.swapaxes(wg, 1, 2)[None] @ xg).reshape(n, groups * cout_g * kp, ls)
        out = _col2im(cols, _transposed_size(x.shape[2:], kernel, stride, padding, dilation,
                                             output_padding), kernel, dilation, padding, stride)
    else:
        cols = _im2col(x, kernel, dilation, padding, stride)
        ls = out_sizes(x.shape[2:], kernel, stride, padding, dilation)
        cols = cols.reshape(n, groups, cols.shape[1] // groups, cols.shape[-1])
        wg = w.reshape(groups, w.shape[0] // groups, w.shape[1] * kp)
        out = (wg[None] @ cols).reshape((n, w.shape[0]) + ls)
    if b is not None:
        out += b.reshape((-1,) + (1,) * len(kernel))
    return out


def _conv_input_rule(g, out, x, w, b, stride, padding, dilation, transposed, output_padding,
                     groups):
    """The input's gradient: the convolution the other way (transposed or not)."""
    kernel = tuple(w.shape[2:])
    if transposed:
        return convolution(g, w, None, stride=stride, padding=padding, dilation=dilation,
                           transposed=False, output_padding=(0,) * len(kernel), groups=groups)
    ls = tuple(g.shape[2:])
    full = _transposed_size(ls, kernel, stride, padding, dilation, (0,) * len(kernel))
    extra = tuple(s - f for s, f in zip(x.shape[2:], full))
    return convolution(g, w, None, stride=stride, padding=padding, dilation=dilation,
                       transposed=True, output_padding=extra, groups=groups)


def positions(x: Any) -> int:
    """The number of spatial positions of an ``(N, C, *S)`` value."""
    return int(np.prod(x.shape[2:]))


def _conv_weight_rule(g, out, x, w, b, stride, padding, dilation, transposed, output_padding,
                      groups):
    """The weight's gradient: the gradient times the columns of the input (or, transposed,
    the input times the columns of the gradient), summed over batch and positions."""
    kernel = tuple(w.shape[2:])
    n, kp = x.shape[0], int(np.prod(kernel))
    if transposed:
        cols = reshape(im2col(g, kernel=kernel, dilation=dilation, padding=padding,
                              stride=stride), (n, groups, w.shape[1] * kp, positions(x)))
        xs = reshape(x, (n, groups, x.shape[1] // groups, positions(x)))
        return reshape(einsum_op(xs, cols, equation="ngcl,ngkl->gck", optimize=False), w.shape)
    cols = reshape(im2col(x, kernel=kernel, dilation=dilation, padding=padding, stride=stride),
                   (n, groups, w.shape[1] * kp, positions(g)))
    gs = reshape(g, (n, groups, w.shape[0] // groups, positions(g)))
    return reshape(einsum_op(gs, cols, equation="ngol,ngkl->gok", optimize=False), w.shape)


def _conv_bias_rule(g, out, x, w, b, stride, padding, dilation, transposed, output_padding,
                    groups):
    return sum_dim(g, dim=(0,) + tuple(range(2, g.ndim)), keepdim=False)


def _print_conv(e: Any, a: list, lit: Any) -> str:
    """``rt.conv(x, w, b, stride=..., ...)`` (``rt.conv_transpose`` for a transposed one),
    every param written out."""
    p, d = e.params, len(e.inputs[1].shape) - 2
    ones, zeros = (1,) * d, (0,) * d
    kw = [f"stride={lit(p['stride'] or ones)}", f"padding={lit(p['padding'] or zeros)}",
          f"dilation={lit(p['dilation'] or ones)}"]
    if p["transposed"]:
        kw.append(f"output_padding={lit(p['output_padding'] or zeros)}")
    kw.append(f"groups={lit(p['groups'])}")
    name = "conv_transpose" if p["transposed"] else "conv"
    return f"rt.{name}({', '.join(list(a) + kw)})"

# torch's convolution: one node for every dim, transposed or not, with or without a bias
def _conv_batch(op, args, batched, **params):
    """A convolution over a batch (the weight and bias unbatched): the vmap batch merged
    with the examples' own batch of samples, or, for one sample per example, the batch
    of samples itself."""
    x, w = args[0], args[1]
    if any(batched[1:]):
        raise batching.NoRule
    if x.ndim - 1 == w.ndim:
        return batching.merged(op, args, batched, **params)
    return op(*args, **params)


convolution = defop("convolution", _convolution, "ConvolutionBackward0", fresh=True,
                    torch_args=("input", "weight", "bias"),
                    template=_print_conv,
                    vjp=(_conv_input_rule, _conv_weight_rule, _conv_bias_rule),
                    uses=("w", "x", ""), batch=_conv_batch)


# ------------------------------------------------------------------- public functions
def ntuple(v: Any, n: int, name: str = "") -> tuple:
    """An int or a sequence of ``n`` ints as a tuple of ``n`` ints (torch's _ntuple)."""
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(a) for a in v)
    if len(t) == 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"expected {name or 'argument'} to be a single integer value or a "
                           f"list of {n} values to match the convolution dimensions, but got "
                           f"{name or 'argument'}={list(t)}")
    return t


def _check_rank(fn: str, input: Any, d: int) -> bool:
    """Whether the input is batched; torch's error for a wrong rank."""
    if input.ndim not in (d + 1, d + 2):
        raise RuntimeError(f"Expected {d + 1}D (unbatched) or {d + 2}D (batched) input to "
                           f"{fn}, but got input of size: {list(input.shape)}")
    return input.ndim == d + 2


def _same_padding(kernel: tuple, dilation: tuple, stride: tuple) -> tuple | None:
    """'same' as symmetric pads, or None when torch pads one side more (then the input is
    padded explicitly first)."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple(t // 2 for t in totals), tuple(t % 2 for t in totals)


_C_NAMES = {"Double": "double", "Float": "float", "Half": "c10::Half", "BFloat16": "c10::BFloat16"}


def _check_types(input: Any, weight: Any, bias: Any) -> None:
    """torch's texts for a weight or bias of another dtype than the input."""
    kinds = [args.dtype_name(t) for t in (input, weight)]
    if kinds[0] != kinds[1]:
        raise RuntimeError(f"Input type (torch.{kinds[0]}Tensor) and weight type "
                           f"(torch.{kinds[1]}Tensor) should be the same or input should be a "
                           "MKLDNN tensor and weight is a dense tensor")
    if bias is not None and args.dtype_name(bias) != kinds[0]:
        names = [_C_NAMES.get(k, k) for k in (kinds[0], args.dtype_name(bias))]
        raise RuntimeError(f"Input type ({names[0]}) and bias type ({names[1]}) should be the "
                           "same")


def _check_conv(input: Any, weight: Any, bias: Any, groups: int, transposed: bool) -> None:
    _check_types(input, weight, bias)
    shape = list(weight.shape)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if not transposed and shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size [{shape}] instead")
    want = shape[0] if transposed else shape[1] * groups
    if input.shape[1] != want:
        kind = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(f"Given {kind}, weight of size {shape}, expected input"
                           f"{list(input.shape)} to have {want} channels, but got "
                           f"{input.shape[1]} channels instead")
    outs = shape[1] * groups if transposed else shape[0]
    if bias is not None and tuple(bias.shape) != (outs,):
        raise RuntimeError(f"Given weight of size {shape}, expected bias to be 1-dimensional "
                           f"with {outs} elements, but got bias of size {list(bias.shape)} "
                           "instead")


def _conv(fn: str, d: int, input, weight, bias, stride, padding, dilation, groups):
    batched = _check_rank(fn, input, d)
    x = input if batched else unsqueeze_op(input, dim=0)
    _check_conv(x, weight, bias, groups, False)
    kernel = tuple(weight.shape[2:])
    stride, dilation = ntuple(stride, d, "stride"), ntuple(dilation, d, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * d
        elif padding == "same":
            padding, odd = _same_padding(kernel, dilation, stride)
            if any(odd):  # torch pads the extra element at the end
                x = constant_pad_end(x, odd)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    padding = ntuple(padding, d, "padding")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    padded = tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
    spans = [dl * (k - 1) + 1 for k, dl in zip(kernel, dilation)]
    if any(n > s for s, n in zip(padded, spans)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, spans))}). Kernel size can't be greater "
                           "than actual input size")
    out = convolution(x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                      transposed=False, output_padding=(0,) * d, groups=int(groups))
    return out if batched else squeeze_dim(out, dim=0)


def constant_pad_end(x: Any, extra: tuple) -> Any:
    """``x`` with ``extra[i]`` zeros after spatial dim ``i`` (padding='same', even kernels)."""
    return constant_pad(x, pads=((0, 0), (0, 0)) + tuple((0, e) for e in extra), value=0.0)


@public("conv1d", function=True, functional=True)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@public("conv2d", function=True, functional=True)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@public("conv3d", function=True, functional=True)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(fn, d, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    batched = _check_rank(fn, input, d)
    x = input if batched else unsqueeze_op(input, dim=0)
    _check_conv(x, weight, bias, groups, True)
    stride, dilation = ntuple(stride, d, "stride"), ntuple(dilation, d, "dilation")
    padding, extra = ntuple(padding, d, "padding"), ntuple(output_padding, d, "output_padding")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(e >= max(s, dl) for e, s, dl in zip(extra, stride, dilation)):
        names = ("height", "width") if d == 2 else ("width",)
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            + " ".join(f"output_padding_{n}: {e}" for n, e in zip(names, extra)) + " "
            + " ".join(f"stride_{n}: {s}" for n, s in zip(names, stride)) + " "
            + " ".join(f"dilation_{n}: {dl}" for n, dl in zip(names, dilation)))
    out = convolution(x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                      transposed=True, output_padding=extra, groups=int(groups))
    return out if batched else squeeze_dim(out, dim=0)


@public("conv_transpose1d", function=True, functional=True)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@public("conv_transpose2d", function=True, functional=True)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ------------------------------------------------------------------------ unfold, fold
def _block_args(kernel_size, dilation, padding, stride) -> tuple:
    return tuple(ntuple(v, 2, n) for v, n in ((kernel_size, "kernel_size"),
                                              (dilation, "dilation"), (padding, "padding"),
                                              (stride, "stride")))


@public("unfold", functional=True)
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    if input.ndim not in (3, 4):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           "and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    batched = input.ndim == 4
    x = input if batched else unsqueeze_op(input, dim=0)
    kernel, dilation, padding, stride = _block_args(kernel_size, dilation, padding, stride)
    ls = out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    if any(n <= 0 for n in ls):
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, "
                           f"kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                           f"calculated shape of the array of sliding blocks as {ls}, but its "
                           "components must be at least one.")
    out = im2col(x, kernel=kernel, dilation=dilation, padding=padding, stride=stride)
    return out if batched else squeeze_dim(out, dim=0)


@public("fold", functional=True)
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    if input.ndim not in (2, 3):
        raise RuntimeError("Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                           f"supported (got {input.ndim}D)")
    batched = input.ndim == 3
    x = input if batched else unsqueeze_op(input, dim=0)
    size = ntuple(output_size, 2, "output_size")
    kernel, dilation, padding, stride = _block_args(kernel_size, dilation, padding, stride)
    kp = kernel[0] * kernel[1]
    if x.shape[1] % kp:
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={kernel}.")
    ls = out_sizes(size, kernel, stride, padding, dilation)
    if ls[0] * ls[1] != x.shape[2]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, stride={stride}, expected "
                           "size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {ls[0]} * {ls[1]} = {ls[0] * ls[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    out = col2im(x, output_size=size, kernel=kernel, dilation=dilation, padding=padding,
                 stride=stride)
    return out if batched else squeeze_dim(out, dim=0)
