"""torch's statistics and integration functions by torch's names and argument conventions,
written over other ops (their gradients, tangents and batching are those ops'):
``quantile`` / ``nanquantile`` (``dim=``, ``keepdim=``, ``interpolation=``, numpy's
quantile kernel), ``cov`` (``correction=``, ``fweights=``, ``aweights=``), ``corrcoef``,
``mode``, ``trapezoid`` / ``trapz`` / ``cumulative_trapezoid``, ``pdist`` and ``polar``.

- ``mode``: the most frequent value of each slice (the smallest of equally frequent
  ones) and the last index where it occurs, as torch's CPU kernel; the index is a
  primitive (no gradient), the value is gathered there (its gradient goes to that
  element, as torch's).
- ``cov``: where the degrees of freedom are not positive, the division is by zero
  (inf or NaN), as torch's (which warns).

>>> import pullback as pb
>>> x = pb.tensor([[1.0, 2.0, 4.0], [2.0, 0.0, 1.0]], requires_grad=True)
>>> pb.quantile(x, 0.5, dim=1)
tensor([2., 1.], grad_fn=<ViewBackward0>)
>>> pb.mode(pb.tensor([3.0, 1.0, 3.0, 1.0]))
pullback.return_types.mode(
values=tensor(1.),
indices=tensor(3))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import make_complex
from .numpy_statistics import _quantile
from .table import args
from .table.registry import defop, is_traced, public
from .table.results import return_type

Mode = return_type("mode", ("values", "indices"))

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _kind(x: Any) -> str:
    return np.dtype(args.np_dtype(x)).kind


def _plain(x: Any) -> np.ndarray:
    """The values of a constant argument (a tensor of q's or weights: no gradient)."""
    return np.asarray(x.detach()) if is_traced(x) else np.asarray(x)


def _quantile_of(input, q, dim, keepdim, interpolation, nan):
    if _kind(input) != "f":
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if is_traced(q):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if args.np_dtype(q) != args.np_dtype(input):
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    qa = _plain(q)
    if not (np.all(qa >= 0) and np.all(qa <= 1)):
        raise RuntimeError("quantile() q values must be in the range [0, 1]" if is_traced(q)
                           else f"quantile() q must be in the range [0, 1] but got {q}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if dim is not None:
        dim = args.wrap_dim(dim, max(input.ndim, 1))
    x = input if input.ndim else input.reshape(1)
    qv = np.asarray(qa, args.np_dtype(input)) if is_traced(q) else float(q)
    y = _quantile(x, qv, dim, None, interpolation, keepdim, {}, nan, weak=True)
    return y if input.ndim or not keepdim else y.reshape(np.shape(qa))


@public("quantile", function=True, method=True)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles of ``input`` along ``dim`` (flattened when None): NaN where a
    slice holds a NaN; q's dimension first when q is a 1-d tensor."""
    return _quantile_of(input, q, dim, keepdim, interpolation, nan=False)


@public("nanquantile", function=True, method=True)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile of the elements that are not NaN (NaN where all are)."""
    return _quantile_of(input, q, dim, keepdim, interpolation, nan=True)


def _weights(w, n: int, name: str, integral: bool):
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but "
                           f"got {name} with {w.ndim} dimensions")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if integral and _kind(w) not in "iu":
        raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                           f"fweights with {args.dtype_name(w)} dtype")
    if not integral and _kind(w) != "f":
        raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                           f"aweights with {args.dtype_name(w)} dtype")
    if bool((_plain(w) < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


@public("cov", function=True, method=True)
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the variables in ``input``'s rows (a 1-d input: one variable)
    over its columns' observations, weighted by ``fweights * aweights``."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if _kind(x) not in "fc":
        x = x.float()
    n = x.shape[1]
    w = None
    if fweights is not None:
        _weights(fweights, n, "fweights", True)
        w = fweights.to(x.dtype)
    if aweights is not None:
        _weights(aweights, n, "aweights", False)
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        avg, w_sum = x.mean(1) if n else x.sum(1) / 0.0, n
        norm = n - correction
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        norm = w_sum if correction == 0 else (
            w_sum - correction if aweights is None
            else w_sum - correction * (w * aweights).sum() / w_sum)
    norm = norm.clamp_min(0) if is_traced(norm) else max(norm, 0)
    xm = x - avg.unsqueeze(1)
    c = (xm if w is None else xm * w).mm(xm.t().conj()) / norm
    return c.squeeze()


@public("corrcoef", function=True, method=True)
def corrcoef(input):
    """cov over the outer product of the standard deviations, clipped to [-1, 1] (both
    parts of a complex value)."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    s = (d.real if _kind(d) == "c" else d).sqrt()
    c = c / s.unsqueeze(1) / s.unsqueeze(0)
    if _kind(c) == "c":
        return make_complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


# ------------------------------------------------------------------ mode
def _mode_index(x: np.ndarray, dim: int) -> np.ndarray:
    """Per slice along ``dim``: the last index of its most frequent value (the smallest
    of the equally frequent ones)."""
    moved = np.moveaxis(x, dim, -1)
    n = moved.shape[-1]
    flat = moved.reshape(-1, n)
    out = np.zeros(flat.shape[0], np.int64)
    for r, row in enumerate(flat):
        values, inverse, counts = np.unique(row, return_inverse=True, return_counts=True)
        pick = int(np.argmax(counts))  # (the first of the largest: the smallest value)
        out[r] = np.flatnonzero(inverse.reshape(-1) == pick)[-1]
    return out.reshape(moved.shape[:-1])


def _mode_batch(op, a, batched, dim):
    return op(a[0], dim=dim + 1)


#: the index of each slice's mode (an index: no gradient)
mode_index = defop("mode_index", _mode_index, fresh=True,
                   template="rt.mode_index({0}, {dim})", batch=_mode_batch)


@public("mode", function=True, method=True)
def mode(input, dim=-1, keepdim=False):
    """(values, indices): each slice's most frequent value and the last index of it."""
    d = args.wrap_dim(dim, max(input.ndim, 1))
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    x = input if input.ndim else input.reshape(1)
    index = mode_index(x, dim=d).unsqueeze(d)
    values = x.take_along_dim(index, d)
    if not keepdim or not input.ndim:
        values, index = values.squeeze(d), index.squeeze(d)
    return Mode(values, index)


# ------------------------------------------------------------------ integration
def _spacing(y, x, dx, dim: int):
    """The widths of the intervals along ``dim``: ``dx`` (a number) or x's differences
    (a 1-d x along dim, or one that broadcasts with y)."""
    if x is None:
        return 1.0 if dx is None else dx
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(
                "trapezoid: There must be one `x` value for each sample point")
        return x.diff().reshape(tuple(-1 if i == dim else 1 for i in range(y.ndim)))
    return x.diff(dim=dim - y.ndim)


def _trapezoid_args(name: str, y, x, dx, dim: int) -> int:
    if x is not None and dx is not None:
        raise TypeError("quantile() received an invalid combination of arguments")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return args.wrap_dim(dim, y.ndim)


@public("trapezoid", function=True)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule's integral of ``y`` along ``dim`` (samples ``x`` or equal
    spacing ``dx``)."""
    d = _trapezoid_args("trapezoid", y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    step = _spacing(y, x, dx, d)
    return (step * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))).sum(d) / 2


@public("trapz", function=True)
def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid (torch's older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


@public("cumulative_trapezoid", function=True)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim``: one element fewer than y."""
    d = _trapezoid_args("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[d]
    if n == 0:
        return y.narrow(d, 0, 0)
    step = _spacing(y, x, dx, d)
    return (step * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) / 2).cumsum(d)


# ------------------------------------------------------------------ pdist, polar
@public("pdist", function=True, functional=True)
def pdist(input, p=2):
    """The p-norm distances between the rows of a 2-d input, pairs i < j in row order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    rows = input.new_tensor(np.stack([i, j])).long()
    diff = input.index_select(0, rows[0]) - input.index_select(0, rows[1])
    return diff.norm(p, dim=1)


@public("polar", function=True)
def polar(abs, angle):
    """The complex numbers of magnitude ``abs`` and phase ``angle``."""
    if args.np_dtype(abs) != args.np_dtype(angle):
        raise RuntimeError(f"Expected object of scalar type {args.dtype_name(abs)} but got "
                           f"scalar type {args.dtype_name(angle)} for second argument")
    return make_complex(abs * angle.cos(), abs * angle.sin())
