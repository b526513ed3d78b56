"""torch's utility functions that are not ops (no gradient of their own, or torch's zero
one): comparisons of whole tensors, random permutations and draws with a ``generator=``,
``unique``, ``bincount`` and ``searchsorted``.

>>> import pullback as pb
>>> pb.allclose(pb.ones(2), pb.ones(2) + 1e-9), pb.is_tensor(pb.ones(1))
(True, True)
>>> g = pb.Generator().manual_seed(0)
>>> pb.randperm(4, generator=g).dtype
pullback.int64
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import devices, dtypes
from .autograd.grad_mode import is_grad_enabled, no_grad
from .creation import rand, randn
from .ops.sampling import rng_of
from .ops.table import promotion
from .ops.table.args import broadcast_shape
from .tensor import Tensor


def _data(x: Any) -> np.ndarray:
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def _scalar_name(a: np.ndarray) -> str:
    return dtypes.as_dtype(a.dtype)._scalar_name


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a pullback Tensor (a Parameter is one)."""
    return isinstance(obj, Tensor)


def _close(name: str, input: Tensor, other: Tensor, rtol: float, atol: float,
           equal_nan: bool) -> np.ndarray:
    a, b = _data(input), _data(other)
    if a.dtype != b.dtype:
        raise RuntimeError(f"{_scalar_name(a)} did not match {_scalar_name(b)}")
    broadcast_shape(a, b)
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Elementwise |input - other| <= atol + rtol |other| (a bool tensor)."""
    return Tensor._make(np.asarray(_close("isclose", input, other, rtol, atol, equal_nan)))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether ``isclose`` holds everywhere (a Python bool)."""
    return bool(np.all(_close("allclose", input, other, rtol, atol, equal_nan)))


def equal(input: Tensor, other: Tensor) -> bool:
    """Same shape and same values (torch compares across dtypes by value)."""
    a, b = _data(input), _data(other)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _result(data: np.ndarray, requires_grad: bool = False) -> Tensor:
    t = Tensor._make(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (int64 unless ``dtype``)."""
    devices.check(device)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    npd = dtypes.to_numpy_dtype(dtype) if dtype is not None else np.int64
    if generator is None:  # from pullback's own draws: compiled code draws anew each call
        out = rand(int(n), dtype=np.float64).argsort().to(npd)
        return out.requires_grad_(True) if requires_grad else out
    return _result(rng_of(generator).permutation(int(n)).astype(npd), requires_grad)


def _zero_grad_from(out: Tensor, *inputs: Any) -> Tensor:
    """The draw; torch gives inputs that require grad a zero gradient through it, so it
    does the same (``0 * input`` joins them to the graph)."""
    for x in inputs:
        if isinstance(x, Tensor) and x.requires_grad:
            out = out + x * 0
    return out


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Draws from N(mean, std**2): tensor means and/or stds (broadcast), or two floats and a
    ``size``. The gradient to a mean or std that requires grad is zero, as torch's."""
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if not tensors and size is None:
        raise TypeError(
            "normal() received an invalid combination of arguments - got "
            f"({type(mean).__name__}, {type(std).__name__}), but expected one of:\n"
            " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = "
            "None)\n * (Tensor mean, float std = 1, *, torch.Generator generator = None, "
            "Tensor out = None)\n * (float mean, Tensor std, *, torch.Generator generator = "
            "None, Tensor out = None)\n * (float mean, float std, tuple of ints size, *, "
            "torch.Generator generator = None, Tensor out = None, torch.dtype dtype = None, "
            "torch.layout layout = None, torch.device device = None, bool pin_memory = False, "
            "bool requires_grad = False)\n")
    s = _data(std)
    if np.any(s < 0):
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(np.min(s)):g}")
    if tensors:
        shape = tuple(np.broadcast_shapes(*(t.shape for t in tensors)))
        npd = np.result_type(*(t._data for t in tensors))
    else:
        shape = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
        npd = dtypes.to_numpy_dtype(dtype) if dtype is not None else dtypes.default_float.np
    if generator is None:  # pullback's own draw (an op: compiled code draws anew)
        z = randn(*shape, dtype=np.float64)
        m, sd = (v.detach() if isinstance(v, Tensor) else v for v in (mean, std))
        out = _zero_grad_from((m + sd * z).to(npd), mean, std)
    else:
        z = rng_of(generator).standard_normal(shape)
        out = _zero_grad_from(Tensor._make((_data(mean) + s * z).astype(npd)), mean, std)
    if requires_grad:
        out.requires_grad_(True)
    return out


def bernoulli(input: Tensor, p: float | None = None, *, generator: Any = None) -> Tensor:
    """1 with probability ``input`` (or ``p``), else 0, in ``input``'s dtype; the gradient
    to ``input`` is zero, as torch's."""
    a = input._data
    if a.dtype.kind not in "fc":
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{_scalar_name(a)}'")
    prob = a if p is None else np.full(a.shape, p)
    if np.any((prob < 0) | (prob > 1)) or np.any(np.isnan(prob)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    if generator is None:  # pullback's own draw (an op: compiled code draws anew)
        p_ = input.detach() if p is None else p
        return _zero_grad_from((rand(*a.shape, dtype=a.dtype) < p_).to(a.dtype), input)
    draw = (rng_of(generator).random(a.shape) < prob).astype(a.dtype)
    return _zero_grad_from(Tensor._make(draw), input)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """``num_samples`` category indices per row, drawn with the row's weights (int64)."""
    w = np.asarray(input._data, np.float64)
    if w.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not replacement and num_samples > w.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = w.reshape(-1, w.shape[-1])
    if np.any(rows.sum(-1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if generator is None:  # pullback's own draws (ops: compiled code draws anew)
        return _multinomial_ops(input.detach(), num_samples, replacement)
    rng = rng_of(generator)
    picks = []
    for row in rows:
        if replacement:
            picks.append(rng.choice(row.size, num_samples, p=row / row.sum()))
        else:  # exponential races: the first num_samples finishers (zero weights last)
            with np.errstate(divide="ignore"):
                keys = rng.exponential(size=row.size) / row
            picks.append(np.argsort(keys, kind="stable")[:num_samples])
    out = np.asarray(picks, np.int64).reshape(w.shape[:-1] + (num_samples,))
    return Tensor._make(out)


def _multinomial_ops(w: Tensor, k: int, replacement: bool) -> Tensor:
    """Categories drawn as ops: Gumbel-max per sample (with replacement), or the first ``k``
    of exponential races ``-log(u) / w`` (without; zero weights finish last)."""
    w = w.to(np.float64)
    if not replacement:
        u = rand(*w.shape, dtype=np.float64)
        return (-(u.log()) / w).argsort(-1)[..., :k]
    shape = w.shape[:-1] + (k, w.shape[-1])
    u = rand(*shape, dtype=np.float64)
    gumbel = -((-(u.log())).log())
    return (w.log().unsqueeze(-2) + gumbel).argmax(-1)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct values (or slices along ``dim``), sorted, with torch's optional inverse
    indices and counts."""
    a = input._data
    vals, inv, counts = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    if dim is None:
        inv = inv.reshape(a.shape)
    out = [Tensor._make(vals)]
    if return_inverse:
        out.append(Tensor._make(inv.astype(np.int64)))
    if return_counts:
        out.append(Tensor._make(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs (summed ``weights`` if given)."""
    a = input._data
    if a.dtype.kind not in "iu":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_scalar_name(a)}'")
    if a.ndim != 1 or np.any(a < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return Tensor._make(np.bincount(a, minlength=minlength).astype(np.int64))
    w = weights._data
    npd = np.float64 if w.dtype == np.float64 else np.float32
    return Tensor._make(np.bincount(a, w, minlength=minlength).astype(npd))


def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Any = None) -> Tensor:
    """Where each value of ``input`` would go in ``sorted_sequence`` (per row for N-D)."""
    if side is not None and (side == "right") != right and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                           f"got side of {side} while right was True")
    how = "right" if right or side == "right" else "left"
    seq, vals = sorted_sequence._data, _data(input)
    if sorter is not None:
        seq = np.take_along_axis(seq, _data(sorter), -1)
    if seq.ndim > 1 and seq.shape[:-1] != vals.shape[:-1]:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           "the first N-1 dimensions of boundaries tensor and input value "
                           "tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(vals.shape)}")
    if seq.ndim <= 1:
        idx = np.searchsorted(seq, vals, how)
    else:
        rows = [np.searchsorted(s, v, how) for s, v in
                zip(seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1]))]
        idx = np.asarray(rows).reshape(vals.shape)
    return Tensor._make(np.asarray(idx, np.int32 if out_int32 else np.int64))


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The bucket of each value of ``input`` among the sorted 1-d ``boundaries``
    (searchsorted with the arguments swapped)."""
    if boundaries.ndim != 1:
        raise RuntimeError("boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def broadcast_shapes(*shapes: Any) -> tuple:
    """The shape tensors of these shapes broadcast to (torch.Size: a tuple here), with
    torch's error at the first dimension (from the right) that does not broadcast."""
    sizes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    out = [1] * max((len(s) for s in sizes), default=0)
    for i, s in enumerate(sizes):
        for k in range(-1, -len(s) - 1, -1):
            if out[k] == 1:
                out[k] = s[k]
            elif s[k] != 1 and s[k] != out[k]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {s[k]} at {k}! "
                    f"Mismatching argument at index {i} had {s}; but expected shape should "
                    f"be broadcastable to {out}")
    return tuple(out)


def _triangle_indices(rows: np.ndarray, cols: np.ndarray, dtype: Any) -> Tensor:
    npd = dtypes.to_numpy_dtype(dtype) or np.int64
    if np.dtype(npd).kind not in "iu":
        raise NotImplementedError("\"tril_indices\" not implemented for "
                           f"'{dtypes.as_dtype(npd)._scalar_name}'")
    return _result(np.stack([rows, cols]).astype(npd).reshape(2, -1))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None, layout: Any = None) -> Tensor:
    """The (row, column) indices of the lower triangle of a row x col matrix (on and
    below diagonal ``offset``), row by row, as a 2 x N tensor."""
    devices.check(device)
    return _triangle_indices(*np.tril_indices(row, offset, col), dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None,
                 device: Any = None, layout: Any = None) -> Tensor:
    """The (row, column) indices of the upper triangle (on and above diagonal
    ``offset``), row by row, as a 2 x N tensor."""
    devices.check(device)
    return _triangle_indices(*np.triu_indices(row, offset, col), dtype)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    return input.is_complex()


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is not zero (torch's errors otherwise)."""
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


Tensor.is_nonzero = is_nonzero


def _uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *,
              generator: Any = None) -> Tensor:
    """Fill with draws from U[from, to) (an in-place write, as ``nn.init.uniform_``)."""
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_:g} > to={to:g}")
    return _fill(self, rng_of(generator).uniform(from_, to, self.shape))


def _normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *,
             generator: Any = None) -> Tensor:
    """Fill with draws from N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return _fill(self, rng_of(generator).normal(mean, std, self.shape))


def _fill(t: Tensor, values: np.ndarray) -> Tensor:
    if t.requires_grad and t.is_leaf and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    with no_grad():
        t.copy_(Tensor._make(np.asarray(values, dtype=t._data.dtype)))
    return t




def _with_alpha(method: Any) -> Any:
    """``add_``/``sub_`` taking torch's ``alpha=`` (other scaled by alpha first)."""
    def inplace(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        return method(self, other if alpha == 1 else other * alpha)
    inplace.__name__ = inplace.__qualname__ = method.__name__
    inplace.__doc__ = method.__doc__
    return inplace


def _scatter_(self: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
              reduce: str | None = None) -> Tensor:
    """``scatter`` written into ``self`` (its gradient flows as the out-of-place one's)."""
    return self.copy_(self.scatter(dim, index, src, value=value, reduce=reduce))


def _scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return self.copy_(self.scatter_add(dim, index, src))


_METHODS = {"add_": _with_alpha(Tensor.add_), "sub_": _with_alpha(Tensor.sub_),
            "scatter_": _scatter_, "scatter_add_": _scatter_add_,
            "allclose": allclose, "isclose": isclose, "equal": equal, "unique": unique,
            "bincount": bincount, "bernoulli": bernoulli, "multinomial": multinomial,
            "uniform_": _uniform_, "normal_": _normal_}
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)


def numel(input: Tensor) -> int:
    """The number of elements of ``input``."""
    return input.numel()


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None,
             requires_grad: bool = False, device: Any = None) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    devices.check(device)
    npd = dtypes.to_numpy_dtype(dtype) or dtypes.default_float.np
    return _result(np.power(base, np.linspace(start, end, steps)).astype(npd), requires_grad)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Counts of ``input`` in ``bins`` equal bins over [min, max] (the data's own range when
    min == max; values outside it are left out), in input's dtype. No gradient, as torch's."""
    a = input._data
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{_scalar_name(a)}'")
    lo, hi = (float(a.min()), float(a.max())) if min == max and a.size else (min, max)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    counts, _ = np.histogram(a, bins=int(bins), range=(lo, hi))
    return _result(counts.astype(a.dtype))


Tensor.histc = histc


def get_default_dtype() -> dtypes.dtype:
    """The dtype of tensors made from Python floats (float32 unless set)."""
    return dtypes.default_float


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (float32 or float64) the dtype of tensors made from Python floats."""
    d = dtypes.as_dtype(d)
    if d.np.kind != "f" or d.itemsize < 4:
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.default_float = d


def promote_types(type1: Any, type2: Any) -> dtypes.dtype:
    """The dtype torch's type promotion gives two dtypes."""
    return dtypes.as_dtype(promotion.promote_types(dtypes.as_dtype(type1).np,
                                                   dtypes.as_dtype(type2).np))


class finfo:
    """Machine limits of a floating dtype, with torch's attribute names."""

    def __init__(self, type: Any = None) -> None:
        d = dtypes.as_dtype(type or dtypes.default_float)
        if d.np.kind not in "fc":
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        info = np.finfo(d.np)
        self.bits, self.dtype = info.bits, d.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, with torch's attribute names."""

    def __init__(self, type: Any) -> None:
        d = dtypes.as_dtype(type)
        if d.np.kind not in "iub":
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = info.bits, int(info.max), int(info.min), d.name
