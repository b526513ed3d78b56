"""Resampling: torch's ``pixel_shuffle``/``pixel_unshuffle`` and ``interpolate`` (modes
nearest, linear and bilinear), and the separable linear maps they and adaptive average
pooling share.

Nearest and bilinear resampling and adaptive averaging are each a matrix per spatial
dim, applied one dim after the other (``separable``): the matrices come from the sizes
alone, so each op is a pair of primitives, the map and its transpose, each the
other's VJP (torch's ``UpsampleNearest2DBackward0`` and its
``UpsampleNearest2DBackwardBackward0``), and differentiates to any order.

>>> import pullback as pb
>>> x = pb.tensor([[[1., 2.]]], requires_grad=True)
>>> pb.nn.functional.interpolate(x, scale_factor=2)
tensor([[[1., 1., 2., 2.]]], grad_fn=<UpsampleNearest1DBackward0>)
>>> pb.nn.functional.pixel_shuffle(pb.arange(4.).reshape(1, 4, 1, 1), 2).flatten()
tensor([0., 1., 2., 3.])
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .table import batching
from .table.registry import defop, public


# --------------------------------------------------------------- pixel (un)shuffle
def _shuffle(x, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = x.shape
    y = x.reshape((*lead, c // (r * r), r, r, h, w))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return y.reshape((*lead, c // (r * r), h * r, w * r))


def _unshuffle(x, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = x.shape
    y = x.reshape((*lead, c, h // r, r, w // r, r))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return y.reshape((*lead, c * r * r, h // r, w // r))


def _print_shuffle(e: Any, a: list, lit: Callable) -> str:
    """``x.reshape(...).transpose(...).reshape(...)``, the shapes of _shuffle/_unshuffle."""
    *lead, c, h, w = e.inputs[0].shape
    k = len(lead)
    if "upscale_factor" in e.params:
        r = e.params["upscale_factor"]
        split, order = (*lead, c // (r * r), r, r, h, w), (k, k + 3, k + 1, k + 4, k + 2)
    else:
        r = e.params["downscale_factor"]
        split, order = (*lead, c, h // r, r, w // r, r), (k, k + 2, k + 4, k + 1, k + 3)
    order = tuple(range(k)) + order
    return (f"{a[0]}.reshape({lit(tuple(split))}).transpose({lit(order)})"
            f".reshape({lit(tuple(e.out.shape))})")


pixel_shuffle_op = defop(
    "pixel_shuffle", _shuffle, "PixelShuffleBackward0", torch_args=("self",), fresh=True,
    template=_print_shuffle,
    vjp=(lambda g, out, x, upscale_factor: pixel_unshuffle_op(
        g, downscale_factor=upscale_factor),), batch=batching.merged)
pixel_unshuffle_op = defop(
    "pixel_unshuffle", _unshuffle, "PixelUnshuffleBackward0", torch_args=("self",),
    fresh=True, template=_print_shuffle, vjp=(lambda g, out, x, downscale_factor: pixel_shuffle_op(
        g, upscale_factor=downscale_factor),), batch=batching.merged)


def _check_shuffle(fn: str, input: Any, r: int, up: bool) -> None:
    if input.ndim < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if r <= 0:
        which = "upscale_factor" if up else "downscale_factor"
        raise RuntimeError(f"{fn} expects a positive {which}, but got {r}")
    c, h, w = input.shape[-3:]
    if up and c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    if not up:
        for name, n, k in (("height", h, -2), ("width", w, -1)):
            if n % r:
                raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                                   f"downscale_factor, but input.size({k})={n} is not "
                                   f"divisible by {r}")


@public("pixel_shuffle", function=True, functional=True)
def pixel_shuffle(input, upscale_factor):
    _check_shuffle("pixel_shuffle", input, int(upscale_factor), True)
    return pixel_shuffle_op(input, upscale_factor=int(upscale_factor))


@public("pixel_unshuffle", function=True, functional=True)
def pixel_unshuffle(input, downscale_factor):
    _check_shuffle("pixel_unshuffle", input, int(downscale_factor), False)
    return pixel_unshuffle_op(input, downscale_factor=int(downscale_factor))


# ------------------------------------------------------------- separable linear maps
def separable(x: np.ndarray, mats: list) -> np.ndarray:
    """``x``'s last ``len(mats)`` dims each mapped by its matrix ``(out, in)``.

    >>> separable(np.ones((1, 2)), [np.array([[0.5, 0.5]])])
    array([[1.]])
    """
    d = len(mats)
    for i, m in enumerate(mats):
        axis = x.ndim - d + i
        x = np.moveaxis(np.tensordot(x, m.astype(x.dtype, copy=False), axes=([axis], [1])),
                        -1, axis)
    return np.ascontiguousarray(x)


def _nearest(n_in: int, n_out: int, scale: float | None) -> np.ndarray:
    """torch's nearest: source ``min(floor(i * s), n_in - 1)`` in float32, ``s`` being
    1 / scale_factor when one was given, else n_in / n_out."""
    s = np.float32(1.0 / scale if scale else n_in / n_out)
    src = np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * s).astype(np.int64),
                     n_in - 1)
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), src] = 1.0
    return m


def _linear(n_in: int, n_out: int, align_corners: bool, scale: float | None) -> np.ndarray:
    """torch's linear interpolation weights (area_pixel_compute_source_index)."""
    i = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        s = 1.0 / scale if scale else n_in / n_out
        src = np.maximum(s * (i + 0.5) - 0.5, 0.0)
    lo = np.floor(src).astype(np.int64)
    hi = lo + (lo < n_in - 1)
    frac = src - lo
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), lo), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), hi), frac)
    return m


def _adaptive(n_in: int, n_out: int) -> np.ndarray:
    """torch's adaptive windows [floor(i n / m), ceil((i + 1) n / m)), averaged."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        a, b = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        m[i, a:b] = 1.0 / (b - a)
    return m


def matrices(kind: str, sizes_in: tuple, sizes_out: tuple, options: tuple) -> list:
    """The matrix of each spatial dim. ``options``: nearest (scales), bilinear
    (align_corners, scales), adaptive ()."""
    if kind == "nearest":
        return [_nearest(a, b, s) for a, b, s in zip(sizes_in, sizes_out, options)]
    if kind == "bilinear":
        return [_linear(a, b, options[0], s) for a, b, s in zip(sizes_in, sizes_out, options[1])]
    return [_adaptive(a, b) for a, b in zip(sizes_in, sizes_out)]


def linear_pair(name: str, grad_fn: str, kind: str) -> tuple:
    """The map ``name`` (``x`` to ``output_size``) and its transpose ``name_backward``
    (a gradient back to ``input_size``), each the other's VJP."""
    def forward(x, output_size, options):
        d = len(output_size)
        return separable(x, matrices(kind, x.shape[-d:], output_size, options))

    def backward(g, input_size, options):
        d = len(input_size)
        return separable(g, [m.T for m in matrices(kind, input_size, g.shape[-d:], options)])

    # (both act on the last axes: the batch passes through)
    fwd = defop(name, forward, grad_fn, torch_args=("self",), fresh=True,
                template=lambda e, a, lit: f"rt.resample({a[0]}, {kind!r}, "
                                           f"{lit(e.params['output_size'])}, "
                                           f"{lit(e.params['options'])})",
                vjp=(lambda g, out, x, output_size, options: bwd(
                    g, input_size=tuple(x.shape[-len(output_size):]), options=options),),
                batch=batching.as_is)
    bwd = defop(name + "_backward", backward, grad_fn[:-1] + "Backward0",
                torch_args=("grad_output",), fresh=True,
                template=lambda e, a, lit: f"rt.resample_backward({a[0]}, {kind!r}, "
                                           f"{lit(e.params['input_size'])}, "
                                           f"{lit(e.params['options'])})",
                vjp=(lambda g, out, grad, input_size, options: fwd(
                    g, output_size=tuple(grad.shape[-len(input_size):]), options=options),),
                batch=batching.as_is)
    return fwd, bwd


nearest1d, nearest1d_backward = linear_pair(
    "upsample_nearest1d", "UpsampleNearest1DBackward0", "nearest")
nearest2d, nearest2d_backward = linear_pair(
    "upsample_nearest2d", "UpsampleNearest2DBackward0", "nearest")
linear1d, linear1d_backward = linear_pair(
    "upsample_linear1d", "UpsampleLinear1DBackward0", "bilinear")
bilinear2d, bilinear2d_backward = linear_pair(
    "upsample_bilinear2d", "UpsampleBilinear2DBackward0", "bilinear")


# ---------------------------------------------------------------------- interpolate
def _output_size(input: Any, d: int, size: Any, scale_factor: Any) -> tuple:
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = (int(size),) * d if isinstance(size, (int, np.integer)) else tuple(map(int, size))
        if len(out) != d:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(input.shape[2:])} and output size of {list(out)}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                             "size in (o1, o2, ...,oK) format.")
        return out, (None,) * d
    scales = (float(scale_factor),) * d if np.ndim(scale_factor) == 0 else tuple(
        float(s) for s in scale_factor)
    if len(scales) != d:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of "
                         f"{list(input.shape[2:])} and scale_factor of shape {list(scales)}. "
                         "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                         "scale_factor in (s1, s2, ...,sK) format.")
    return tuple(math.floor(n * s) for n, s in zip(input.shape[2:], scales)), scales


_MODES: dict[tuple, Callable] = {("nearest", 1): nearest1d, ("nearest", 2): nearest2d,
                                 ("linear", 1): linear1d, ("bilinear", 2): bilinear2d}
_TORCH_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area",
                "nearest-exact")
_RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


@public("interpolate", functional=True)
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if input.ndim not in (3, 4, 5) or mode not in _TORCH_MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: "
                                  f"{' | '.join(_TORCH_MODES)} (got {mode})")
    d = input.ndim - 2
    out, scales = _output_size(input, d, size, scale_factor)
    if recompute_scale_factor:
        scales = (None,) * d
    if _RANK.get(mode, input.ndim) != input.ndim:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_RANK[mode]}D input")
    op = _MODES.get((mode, d))
    if op is None or antialias:
        raise NotImplementedError(f"interpolate: mode {mode!r} on {input.ndim}D input "
                                  f"{'with antialias ' if antialias else ''}is not supported "
                                  "yet (nearest on 3D or 4D, linear on 3D, bilinear on 4D "
                                  "are)")
    options = scales if mode == "nearest" else (bool(align_corners), scales)
    return op(input, output_size=out, options=options)
