"""Norms: torch.linalg.vector_norm as one primitive (every ``ord``, with torch's rule per
order), and matrix_norm, linalg.norm, torch.norm and numpy's ``np.linalg.norm`` in every
``ord``/``axis`` form, composed of it, of amax/amin and of the singular values, as torch
composes them (its nodes: LinalgVectorNormBackward0, AmaxBackward0, ...); and renorm, a
primitive with torch's rule (RenormBackward0)."""

from __future__ import annotations

import numpy as np

from .elementwise import absolute, conj, isnan, logical_or, sign, to_dtype, where, zeros_like
from .reductions import _kept, amax_op, amin_op, sum_dim
from .shape import expand, permute_op, reshape
from .spectral import svdvals_op
from .table import args, batching
from .table.registry import defop, public, rt_call

INF = float("inf")


def _vector_norm(x, ord, dim, keepdim):
    out = np.linalg.vector_norm(x, ord=ord, axis=dim, keepdims=keepdim)
    return np.asarray(out, dtype=np.abs(np.zeros(0, np.asarray(x).dtype)).dtype)


def _norm_rule(g, out, x, ord, dim, keepdim):
    """torch's norm_backward, order by order."""
    g, norm = _kept(g, x.shape, dim, keepdim), _kept(out, x.shape, dim, keepdim)
    if ord == 0:
        return expand(zeros_like(g), shape=x.shape)
    if ord == 1:
        return sign(x) * g
    if ord in (INF, -INF):  # split evenly over the extremes (a NaN is one)
        mask = logical_or(absolute(x) == norm, isnan(absolute(x)))
        return sign(x) * (g / sum_dim(mask, dim=dim, keepdim=True) * mask)
    if ord == 2:
        return x * where(norm == 0, 0, g / where(norm == 0, 1, norm))
    if ord < 1:
        scaled = where(x == 0, 0, sign(x) * absolute(x) ** (ord - 1))
        return scaled * g * norm ** (1 - ord)
    scale = where(norm == 0, 0, g / where(norm == 0, 1, norm) ** (ord - 1))
    if ord < 2:
        return sign(x) * absolute(x) ** (ord - 1) * scale
    return x * absolute(x) ** (ord - 2) * scale


def _print_norm(e, a, lit):
    p = e.params
    return (f"np.linalg.vector_norm({a[0]}, ord={lit(p['ord'])}, axis={lit(p['dim'])}, "
            f"keepdims={lit(p['keepdim'])})")


vector_norm_op = defop("linalg_vector_norm", _vector_norm, "LinalgVectorNormBackward0",
                       vjp=(_norm_rule,), uses=("x out",), template=_print_norm, fresh=True,
                       batch=batching.reduction)


# ------------------------------------------------------------------ renorm
def _renorm(x, p, dims, maxnorm):
    """Each slice whose p-norm over ``dims`` (every axis but torch's ``dim``) is above
    ``maxnorm`` scaled to it (divided by the norm plus 1e-7, as torch)."""
    norm = _vector_norm(x, p, dims, True)
    factor = np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(norm.dtype)
    return x * factor


def _renorm_rule(g, out, x, p, dims, maxnorm):
    """torch's renorm_backward: where the norm n is above maxnorm, f g - f / (n + 1e-7)
    times the norm's own gradient of sum(x g) (f = maxnorm / (n + 1e-7)); else g."""
    norm = vector_norm_op(x, ord=p, dim=dims, keepdim=True)
    through = _norm_rule(sum_dim(conj(x) * g, dim=dims, keepdim=True), norm, x, p, dims, True)
    inv = 1 / (norm + 1e-7)
    factor = inv * maxnorm
    return where(norm > maxnorm, factor * g - factor * inv * through, g)


# (the reduced dims as the param, not torch's kept dim: vmap's batch axis is kept too)
renorm_op = defop("renorm", _renorm, "RenormBackward0", vjp=(_renorm_rule,), uses=("x",),
                  fresh=True, template=rt_call("renorm", "p", "dims", "maxnorm"))


@public("renorm", function=True, method=True)
def renorm(input, p, dim, maxnorm):
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = args.wrap_dim(dim, input.ndim)
    _float("linalg.vector_norm", input, None)
    return renorm_op(input, p=float(p), dims=tuple(i for i in range(input.ndim) if i != d),
                     maxnorm=float(maxnorm))


def _float(name: str, x, dtype):
    kind = args.np_dtype(x).kind
    if dtype is not None:
        return to_dtype(x, dtype)
    if kind not in "fc":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {args.dtype_name(x)}")
    return x


@public("linalg.vector_norm", function=True,
        numpy={np.linalg.vector_norm: args.numpy_form(
            lambda x, axis=None, keepdims=False, ord=2: _numpy_vector_norm(x, axis, keepdims,
                                                                           ord))})
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    x = _float("linalg.vector_norm", x, dtype)
    if isinstance(ord, str):
        raise TypeError("linalg.vector_norm(): argument 'ord' must be Number, not str")
    found = None if dim is None else (args.dims(dim, x.ndim) or None)
    if ord < 0 and 0 in tuple(x.shape):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                           "tensor because the operation does not have an identity")
    return vector_norm_op(x, ord=float(ord), dim=found, keepdim=bool(keepdim))


def _numpy_vector_norm(x, axis, keepdims, ord):
    x = args.value(x)
    x = to_dtype(x, np.float64) if args.np_dtype(x).kind not in "fc" else x
    found = args.axes(axis, x.ndim)
    return vector_norm_op(x, ord=float(ord), dim=found or None, keepdim=bool(keepdims))


def _two_dims(name: str, A, dim) -> tuple:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if len(dim) == 2 and args.wrap_dim(dim[0], A.ndim) == args.wrap_dim(dim[1], A.ndim):
        raise RuntimeError(f"{name}: dims must be different. Got ({dim[0]}, {dim[1]})")
    d = args.dims(dim, A.ndim)
    if len(d) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    return d


def _matrix_norm(A, ord, d, keepdim):
    """A matrix norm over the dims ``d`` (two distinct, non-negative), torch's way."""
    if ord == "fro":
        return vector_norm_op(A, ord=2.0, dim=d, keepdim=keepdim)
    if ord in ("nuc", 2, -2):
        moved = _to_last(A, d)
        s = svdvals_op(moved)
        if ord == "nuc":
            out = sum_dim(s, dim=(s.ndim - 1,), keepdim=False)
        else:
            out = (amax_op if ord == 2 else amin_op)(s, dim=(s.ndim - 1,), keepdim=False)
        return _put_back(out, d, A.ndim) if keepdim else out
    if ord in (1, -1, INF, -INF):
        inner, outer = (d[0], d[1]) if ord in (1, -1) else (d[1], d[0])
        sums = vector_norm_op(A, ord=1.0, dim=(inner,), keepdim=True)
        out = (amax_op if ord > 0 else amin_op)(sums, dim=(outer,), keepdim=True)
        return out if keepdim else reshape(out, *[n for i, n in enumerate(out.shape)
                                                  if i not in d])
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def _to_last(A, d):
    rest = [i for i in range(A.ndim) if i not in d]
    order = tuple(rest) + tuple(d)
    return permute_op(A, dims=order) if order != tuple(range(A.ndim)) else A


def _put_back(out, d, ndim):
    shape = list(out.shape)
    for i in sorted(d):
        shape.insert(i, 1)
    return reshape(out, *shape)


@public("linalg.matrix_norm", function=True, numpy={np.linalg.matrix_norm: args.numpy_form(
    lambda x, keepdims=False, ord="fro": matrix_norm(_floating(x), ord, (-2, -1), keepdims))})
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    A = _float("linalg.matrix_norm", A, dtype)
    d = _two_dims("linalg.matrix_norm", A, dim)
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _matrix_norm(A, ord, d, bool(keepdim))


@public("linalg.norm", function=True)
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    if dim is not None and not isinstance(dim, int) and len(dim) == 2 or (
            dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim,
                           keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 2. Got "
                           f"{[] if dim is None else dim}")
    if dim is None and ord is not None and A.ndim != 1:
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must "
                           f"be 1D or 2D. Got {A.ndim}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


@public("norm", function=True, method=True)
def torch_norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: p='fro' a 2-norm over ``dim`` (every dim: the flattened tensor),
    'nuc' a matrix norm, a number a vector norm."""
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                           dtype=dtype)
    return vector_norm(input, 2 if p == "fro" else p, dim, keepdim, dtype=dtype)


def _floating(x):
    x = args.value(x)
    return to_dtype(x, np.float64) if args.np_dtype(x).kind not in "fc" else x


def _numpy_norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm: a vector norm over one axis (or all, flattened, when ``ord`` is None),
    a matrix norm over two (or over a 2-d array's two when ``ord`` is given)."""
    x = _floating(x)
    if isinstance(ord, str) and (x.ndim == 1 or isinstance(axis, int)):
        raise args.Unsupported  # numpy's error
    if axis is None and (ord is None or x.ndim == 1):
        return _keep_all(vector_norm_op(x, ord=2.0 if ord is None else float(ord), dim=None,
                                        keepdim=False), x.ndim, keepdims)
    if axis is None:
        axis = tuple(range(x.ndim)) if x.ndim == 2 else None
    found = args.axes(axis, x.ndim)
    if found is None or len(found) not in (1, 2):
        raise args.Unsupported  # numpy's errors
    if len(found) == 1:
        if isinstance(ord, str):
            raise args.Unsupported
        return vector_norm_op(x, ord=2.0 if ord is None else float(ord), dim=found,
                              keepdim=bool(keepdims))
    d = tuple(a % x.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if ord not in (None, "fro", "nuc", 1, -1, 2, -2, INF, -INF) or d[0] == d[1]:
        raise args.Unsupported
    return _matrix_norm(x, "fro" if ord is None else ord, d, bool(keepdims))


def _keep_all(x, ndim, keepdims):
    return reshape(x, *(1,) * ndim) if keepdims and ndim else x


public("linalg.norm numpy", numpy={np.linalg.norm: _numpy_norm})(_numpy_norm)
