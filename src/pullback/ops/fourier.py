"""Discrete Fourier transforms: torch.fft (``pb.fft.<name>``) and ``numpy.fft``, over
three primitives named as torch's nodes: ``fft_c2c`` (FftC2CBackward0), ``fft_r2c``
(FftR2CBackward0: real to complex, one-sided or not) and ``fft_c2r``
(FftC2RBackward0: a one-sided Hermitian spectrum to real values).

Each primitive carries numpy's ``norm`` for the direction it runs in. The adjoint of a
transform is the transform of the other direction with the scaling kept, which in
numpy's spelling swaps "backward" and "forward" (``fft(norm="backward")`` does not
scale, so its adjoint is ``ifft(norm="forward")``, which does not either). The rules
are torch's: fft_r2c_backward zero-pads the one-sided gradient and takes the real part
of the inverse transform; fft_c2r_backward is a one-sided forward transform with the
entries whose mirror images the one-sided spectrum leaves out counted twice. Complex
gradients follow torch's conjugate Wirtinger convention.

As torch composes them: ``n``/``s`` trim (SliceBackward0) or zero-pad
(ConstantPadNdBackward0) first; a real input of fft2/fftn/ifft2/ifftn/irfft/irfftn is
cast to complex (ToCopyBackward0); ifft and ihfft of a real input are the conjugate of
a forward transform, hfft the real inverse of the conjugate; fftshift and ifftshift
are rolls (RollBackward0).

>>> import pullback as pb
>>> x = pb.tensor([1., 2., 3., 4.], requires_grad=True)
>>> X = pb.fft.rfft(x)
>>> X
tensor([10.+0.j, -2.+2.j, -2.+0.j], grad_fn=<FftR2CBackward0>)
>>> X.abs().sum().backward()
>>> x.grad
tensor([-0.7071,  1.2929,  0.7071,  2.7071])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import cast, conj, is_complex, real
from .padding import constant_pad
from .reshaping import roll_op
from .subscripts import slice_view
from .table import args
from .table.registry import defop, public

#: the same scaling in the other direction, in numpy's spelling of ``norm``
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _print(name: str) -> Any:
    def text(e: Any, a: list, lit: Any) -> str:
        p = e.params
        fn = name if name != "c2c" else ("fftn" if p["forward"] else "ifftn")
        if name == "r2c":
            fn = "rfftn" if p["onesided"] else "fftn"
        extra = f", s={lit(_c2r_sizes(e.inputs[0].shape, p))}" if name == "irfftn" else ""
        return f"np.fft.{fn}({a[0]}{extra}, axes={lit(p['dim'])}, norm={lit(p['norm'])})"
    return text


# ------------------------------------------------------------------------- primitives
def _c2c(x, dim, norm, forward):
    return (np.fft.fftn if forward else np.fft.ifftn)(x, axes=dim, norm=norm)


fft_c2c = defop("fft_c2c", _c2c, "FftC2CBackward0",
                vjp=(lambda g, out, x, dim, norm, forward: fft_c2c(
                    g, dim=dim, norm=_SWAP[norm], forward=not forward),),
                template=_print("c2c"), fresh=True)


def _r2c(x, dim, norm, onesided):
    return (np.fft.rfftn if onesided else np.fft.fftn)(x, axes=dim, norm=norm)


def _r2c_rule(g, out, x, dim, norm, onesided):
    """torch's fft_r2c_backward: the one-sided gradient zero-padded to full length."""
    last = dim[-1]
    missing = x.shape[last] - g.shape[last]
    if onesided and missing > 0:
        g = constant_pad(g, pads=tuple((0, missing if d == last else 0) for d in range(g.ndim)),
                         value=0)
    return real(fft_c2c(g, dim=dim, norm=_SWAP[norm], forward=False))


fft_r2c = defop("fft_r2c", _r2c, "FftR2CBackward0", vjp=(_r2c_rule,),
                template=_print("r2c"), fresh=True)


def _c2r_sizes(shape: tuple, p: dict) -> tuple:
    return tuple(shape[d] for d in p["dim"][:-1]) + (p["last_dim_size"],)


def _c2r(x, dim, norm, last_dim_size):
    s = _c2r_sizes(x.shape, {"dim": dim, "last_dim_size": last_dim_size})
    return np.fft.irfftn(x, s=s, axes=dim, norm=norm)


def _c2r_rule(g, out, x, dim, norm, last_dim_size):
    """torch's fft_c2r_backward: a one-sided forward transform, the entries 1..n-m
    (whose mirror images n-k lie outside the m kept ones) doubled."""
    gi = fft_r2c(g, dim=dim, norm=_SWAP[norm], onesided=True)
    last, m = dim[-1], gi.shape[dim[-1]]
    double = last_dim_size - m
    if double <= 0:
        return gi
    w = np.ones(m, np.finfo(args.np_dtype(gi)).dtype)
    w[1:1 + double] = 2
    return gi * w.reshape((m,) + (1,) * (g.ndim - 1 - last))


fft_c2r = defop("fft_c2r", _c2r, "FftC2RBackward0", vjp=(_c2r_rule,),
                template=_print("irfftn"), fresh=True)


# ---------------------------------------------------------------------------- checks
def _norm(norm: Any) -> str:
    if norm is None:
        return "backward"
    if norm not in _SWAP:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _points(n: int) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return int(n)


def _floating(x: Any, name: str, *, real_only: bool = False) -> Any:
    """``x`` as torch's FFTs take it: ints as float32; half refused; a complex input
    refused where a real one is required."""
    d = args.np_dtype(x)
    if real_only and d.kind == "c":
        raise RuntimeError(f"{name} expects a real input tensor, but got {args.dtype_name(x)}")
    if d == np.float16:
        raise RuntimeError("Unsupported dtype Half")
    return cast(x, dtype=np.dtype(np.float32)) if d.kind in "biu" else x


def _complex(x: Any) -> Any:
    if is_complex(x):
        return x
    return cast(x, dtype=np.dtype(np.complex128 if args.np_dtype(x) == np.float64
                                  else np.complex64))


def _one_dim(x: Any, dim: int) -> int:
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return args.wrap_dim(dim, x.ndim)


def _plan(x: Any, s: Any, dim: Any) -> tuple:
    """torch's fftn arguments: (dims, sizes), sizes None where ``s`` keeps the length."""
    if s is not None and dim is not None and len(s) != len(dim):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    if s is not None and len(s) > x.ndim:
        raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                           f"{x.ndim} dimensions.")
    if dim is None:
        dim = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    dims = tuple(_one_dim(x, d) for d in (dim if isinstance(dim, (list, tuple)) else (dim,)))
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    sizes = tuple(None if s is None or s[i] == -1 else _points(s[i]) for i in range(len(dims)))
    return dims, sizes


def _resize(x: Any, dims: tuple, sizes: tuple) -> Any:
    """Trim (a slice) or zero-pad (a constant pad) each of ``dims`` to its size (None:
    as it is), as torch's resize_fft_input."""
    want = dict(zip(dims, sizes))
    target = [want.get(d) or n for d, n in enumerate(x.shape)]
    if any(t < n for t, n in zip(target, x.shape)):
        x = slice_view(x, index=tuple(slice(0, min(t, n)) for t, n in zip(target, x.shape)))
    pads = tuple((0, t - n) for t, n in zip(target, x.shape))
    return constant_pad(x, pads=pads, value=0) if any(p for _, p in pads) else x


def _numpy_input(a: Any) -> Any:
    """numpy's promotion before a transform: integers to float64, float16 to float32."""
    a = args.value(a)
    d = args.np_dtype(a)
    if d.kind in "biu":
        return cast(a, dtype=np.dtype(np.float64))
    return cast(a, dtype=np.dtype(np.float32)) if d == np.float16 else a


def _numpy_one(name: str) -> dict:
    """numpy's spelling of a one-dim transform: (a, n, axis, norm, out). It calls the
    torch form by name (declared just below, with this as its ``numpy=``); numpy's irfft
    and hfft of float16 give float16."""
    def run(a, n=None, axis=-1, norm=None, out=None):
        args.plain(out)
        result = globals()[name](_numpy_input(a), n, axis, norm)
        half = name in ("irfft", "hfft") and args.np_dtype(args.value(a)) == np.float16
        return cast(result, dtype=np.dtype(np.float16)) if half else result
    return {getattr(np.fft, name): args.numpy_form(run)}


def _numpy_nd(name: str, default: Any = None) -> dict:
    """numpy's spelling of an n-dim transform: (a, s, axes, norm, out)."""
    def run(a, s=None, axes=default, norm=None, out=None):
        args.plain(out)
        return globals()[name](_numpy_input(a), s, axes, norm)
    return {getattr(np.fft, name): args.numpy_form(run)}


# ---------------------------------------------------------------- the transforms
def _c2c_or_r2c(name: str, x: Any, dims: tuple, sizes: tuple, norm: Any, forward: bool,
                one: bool = False) -> Any:
    """fft/ifft (``one``) of a real input are r2c transforms; fftn's, a complex one."""
    x = _resize(_floating(x, name), dims, sizes)
    norm = _norm(norm)
    if is_complex(x) or not one:
        return fft_c2c(_complex(x), dim=dims, norm=norm, forward=forward)
    if forward:  # torch: fft of a real input is a full (two-sided) r2c
        return fft_r2c(x, dim=dims, norm=norm, onesided=False)
    return conj(fft_r2c(x, dim=dims, norm=_SWAP[norm], onesided=False))


def _one(x: Any, n: Any, dim: int) -> tuple:
    d = _one_dim(x, dim)
    return (d,), (None if n is None else _points(n),)


@public("fft.fft", function=True, numpy=_numpy_one("fft"))
def fft(input, n=None, dim=-1, norm=None):
    """The one-dim transform; a real input is a two-sided r2c."""
    return _c2c_or_r2c("fft", input, *_one(input, n, dim), norm, True, one=True)


@public("fft.ifft", function=True, numpy=_numpy_one("ifft"))
def ifft(input, n=None, dim=-1, norm=None):
    """The one-dim inverse; a real input is the conjugate of a two-sided r2c."""
    return _c2c_or_r2c("ifft", input, *_one(input, n, dim), norm, False, one=True)


@public("fft.fftn", function=True, numpy=_numpy_nd("fftn"))
def fftn(input, s=None, dim=None, norm=None):
    """The transform over ``dim`` (default: all, or the last ``len(s)``)."""
    return _c2c_or_r2c("fftn", input, *_plan(input, s, dim), norm, True)


@public("fft.ifftn", function=True, numpy=_numpy_nd("ifftn"))
def ifftn(input, s=None, dim=None, norm=None):
    """The inverse over ``dim`` (default: all, or the last ``len(s)``)."""
    return _c2c_or_r2c("ifftn", input, *_plan(input, s, dim), norm, False)


@public("fft.fft2", function=True,
        numpy=_numpy_nd("fft2", (-2, -1)))
def fft2(input, s=None, dim=(-2, -1), norm=None):
    """fftn over the last two dims."""
    return fftn(input, s, dim, norm)


@public("fft.ifft2", function=True,
        numpy=_numpy_nd("ifft2", (-2, -1)))
def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """ifftn over the last two dims."""
    return ifftn(input, s, dim, norm)


def _rfft(name: str, x: Any, dims: tuple, sizes: tuple, norm: Any) -> Any:
    x = _resize(_floating(x, name, real_only=True), dims, sizes)
    return fft_r2c(x, dim=dims, norm=norm, onesided=True)


@public("fft.rfft", function=True, numpy=_numpy_one("rfft"))
def rfft(input, n=None, dim=-1, norm=None):
    """The one-sided transform of a real input: n // 2 + 1 entries."""
    return _rfft("rfft", input, *_one(input, n, dim), _norm(norm))


@public("fft.rfftn", function=True, numpy=_numpy_nd("rfftn"))
def rfftn(input, s=None, dim=None, norm=None):
    """The transform of a real input, one-sided in the last of ``dim``."""
    return _rfft("rfftn", input, *_plan(input, s, dim), _norm(norm))


@public("fft.rfft2", function=True,
        numpy=_numpy_nd("rfft2", (-2, -1)))
def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """rfftn over the last two dims."""
    return _rfft("rfft2", input, *_plan(input, s, dim), _norm(norm))


@public("fft.ihfft", function=True, numpy=_numpy_one("ihfft"))
def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of hfft: the conjugate of a one-sided r2c."""
    return conj(_rfft("ihfft", input, *_one(input, n, dim), _SWAP[_norm(norm)]))


def _irfft(name: str, x: Any, dims: tuple, sizes: tuple, norm: str, flip: bool = False) -> Any:
    """A real inverse transform of the one-sided spectrum ``x``: the last dim's output
    length is its size, else 2 * (m - 1); the input is cut or padded to length // 2 + 1."""
    x = _floating(x, name)
    last = sizes[-1] if sizes[-1] is not None else _points(2 * (x.shape[dims[-1]] - 1))
    x = _complex(_resize(x, dims, sizes[:-1] + (last // 2 + 1,)))
    return fft_c2r(conj(x) if flip else x, dim=dims, norm=norm, last_dim_size=last)


@public("fft.irfft", function=True, numpy=_numpy_one("irfft"))
def irfft(input, n=None, dim=-1, norm=None):
    """The real inverse of a one-sided spectrum (n defaults to 2 * (m - 1))."""
    return _irfft("irfft", input, *_one(input, n, dim), _norm(norm))


@public("fft.irfftn", function=True, numpy=_numpy_nd("irfftn"))
def irfftn(input, s=None, dim=None, norm=None):
    """The real inverse of a spectrum one-sided in the last of ``dim``."""
    return _irfft("irfftn", input, *_plan(input, s, dim), _norm(norm))


@public("fft.irfft2", function=True,
        numpy=_numpy_nd("irfft2", (-2, -1)))
def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """irfftn over the last two dims."""
    return _irfft("irfft2", input, *_plan(input, s, dim), _norm(norm))


@public("fft.hfft", function=True, numpy=_numpy_one("hfft"))
def hfft(input, n=None, dim=-1, norm=None):
    """The real transform of a one-sided Hermitian signal: c2r of its conjugate."""
    return _irfft("hfft", input, *_one(input, n, dim), _SWAP[_norm(norm)], flip=True)


def _hfftn(x: Any, s: Any, dim: Any, norm: Any, name: str) -> Any:
    """torch's hfftn: a forward c2c over all but the last dim, the conjugate, and a c2r
    of the last (each unscaled for norm="backward")."""
    norm = _norm(norm)
    dims, sizes = _plan(x, s, dim)
    x = _floating(x, name)
    last = sizes[-1] if sizes[-1] is not None else _points(2 * (x.shape[dims[-1]] - 1))
    x = _complex(_resize(x, dims, sizes[:-1] + (last // 2 + 1,)))
    if len(dims) > 1:
        x = fft_c2c(x, dim=dims[:-1], norm=norm, forward=True)
    return fft_c2r(conj(x), dim=dims[-1:], norm=_SWAP[norm], last_dim_size=last)


def _ihfftn(x: Any, s: Any, dim: Any, norm: Any, name: str) -> Any:
    """torch's ihfftn: a one-sided r2c of the last dim, the conjugate, and an inverse
    c2c over the others."""
    norm = _norm(norm)
    dims, sizes = _plan(x, s, dim)
    x = _resize(_floating(x, name, real_only=True), dims, sizes)
    out = conj(fft_r2c(x, dim=dims[-1:], norm=_SWAP[norm], onesided=True))
    return fft_c2c(out, dim=dims[:-1], norm=norm, forward=False) if len(dims) > 1 else out


@public("fft.hfftn", function=True)
def hfftn(input, s=None, dim=None, norm=None):
    """hfft over ``dim``: c2c over all but the last, the conjugate, c2r of the last."""
    return _hfftn(input, s, dim, norm, "hfftn")


@public("fft.hfft2", function=True)
def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """hfftn over the last two dims."""
    return _hfftn(input, s, dim, norm, "hfft2")


@public("fft.ihfftn", function=True)
def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of hfftn: r2c of the last dim, the conjugate, c2c over the rest."""
    return _ihfftn(input, s, dim, norm, "ihfftn")


@public("fft.ihfft2", function=True)
def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """ihfftn over the last two dims."""
    return _ihfftn(input, s, dim, norm, "ihfft2")


def _shift(x: Any, dim: Any, sign: int) -> Any:
    dims = tuple(range(x.ndim)) if dim is None else args.dims(dim, x.ndim)
    shifts = tuple((x.shape[d] // 2) if sign > 0 else -(x.shape[d] // 2) for d in dims)
    return roll_op(x, shifts=shifts, dims=dims) if dims else x


@public("fft.fftshift", function=True, numpy={np.fft.fftshift: lambda x, axes=None: fftshift(
    args.value(x), axes)})
def fftshift(input, dim=None):
    """The zero frequency moved to the middle: a roll by n // 2 along ``dim``."""
    return _shift(input, dim, 1)


@public("fft.ifftshift", function=True, numpy={np.fft.ifftshift: lambda x, axes=None: ifftshift(
    args.value(x), axes)})
def ifftshift(input, dim=None):
    """fftshift's inverse: a roll by -(n // 2)."""
    return _shift(input, dim, -1)
