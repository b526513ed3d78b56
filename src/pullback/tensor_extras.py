"""Tensor methods real programs call that pullback lacked: the in-place forms of
out-of-place methods (``clip_``, ``square_``, ``addmm_``, ``eq_``, ``logical_and_``...,
written as ``self.copy_(self.method(...))``: their gradients flow as the out-of-place
ones'), ``index_put`` / ``put`` (and their in-place forms), ``fill_diagonal_``,
the random fills ``bernoulli_``, ``exponential_``,
``geometric_``, ``cauchy_``, ``log_normal_`` and ``random_``, and what scripts ask of a
tensor: ``nelement``, ``ndimension``, ``stride``, ``itemsize``, ``nbytes``,
``is_signed``, ``is_same_size``, ``pin_memory`` / ``is_pinned``, ``share_memory_`` /
``is_shared``, ``is_cpu``, ``is_sparse``, ``is_quantized``, ``is_meta``, ``is_conj`` /
``is_neg`` / ``resolve_conj`` / ``resolve_neg`` and the casts ``byte``, ``char``,
``short``, ``cfloat``, ``cdouble``.

>>> import pullback as pb
>>> x = pb.zeros(3, 3)
>>> x.fill_diagonal_(2.0).diagonal()
tensor([2., 2., 2.])
>>> pb.tensor([1.0, -2.0]).square_()
tensor([1., 4.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ops.sampling import rng_of
from .tensor import Tensor
from .torch_functions import _fill

#: out-of-place method -> its in-place name (``self.copy_(self.<method>(...))``)
_INPLACE = {name: name + "_" for name in (
    "clip", "sign", "sgn", "square", "fix", "renorm", "addmm", "addmv", "addr", "addbmm",
    "baddbmm", "divide", "multiply", "subtract", "true_divide", "absolute", "float_power",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal",
    "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "mvlgamma",
    "scatter_reduce", "index_reduce", "nan_to_num", "arctan2", "xlogy",
    "negative", "heaviside", "ldexp", "nextafter", "hypot", "logit", "i0", "sinc")}


def _inplace(name: str) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        # (from a copy of self: the write must not change what the result's backward
        # reads, self's value before it)
        before = self.clone() if self.requires_grad else self
        args = tuple(before if a is self else a for a in args)
        out = getattr(before, name)(*args, **kwargs)
        if name == "float_power" and self.dtype != out.dtype:
            raise RuntimeError("the base given to float_power_ has dtype "
                               f"{self.dtype._scalar_name} but the operation's result "
                               "requires dtype Double")
        return self.copy_(out)
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"``{name}`` written into this tensor."
    return method


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal (all dims of equal size beyond 2-d; a tall
    matrix's diagonal starts again every n + 1 rows where ``wrap``)."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(self.shape, bool)
    if self.ndim > 2:
        mask[(np.arange(self.shape[0]),) * self.ndim] = True
    else:
        rows, cols = self.shape
        flat = mask.reshape(-1)
        end = rows * cols if wrap or rows <= cols else cols * cols
        flat[:end:cols + 1] = True
    return self.masked_fill_(Tensor._make(mask), fill_value)


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 1 (probability ``p``, a number or a tensor) or 0."""
    prob = p._data if isinstance(p, Tensor) else p
    if np.any((np.asarray(prob) < 0) | (np.asarray(prob) > 1)):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, rng_of(generator).random(self.shape) < prob)


def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _fill(self, rng_of(generator).exponential(1 / lambd, self.shape))


def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    return _fill(self, rng_of(generator).geometric(p, self.shape))


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Any = None) -> Tensor:
    return _fill(self, median + sigma * rng_of(generator).standard_cauchy(self.shape))


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Any = None) -> Tensor:
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _fill(self, rng_of(generator).lognormal(mean, std, self.shape))


def random_(self: Tensor, from_: int = 0, to: int | None = None, *,
            generator: Any = None) -> Tensor:
    """Fill with integers drawn from [from, to) (``random_(to)``: [0, to); none: [0, the
    dtype's largest integer with an exact float, as torch's])."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        d = self._data.dtype
        to = (2 ** np.finfo(d).nmant + 1) if d.kind == "f" else (
            2 if d.kind == "b" else int(np.iinfo(d).max))
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={from_} >= to={to}")
    return _fill(self, rng_of(generator).integers(from_, to, self.shape))


def index_put(self: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of self with ``values`` at ``self[indices]`` (added there, repeats too,
    where ``accumulate``: index tensors for the leading dimensions, broadcast together)."""
    indices = tuple(indices)
    if not accumulate:
        out = self.clone()
        out[indices] = values
        return out
    if not isinstance(values, Tensor):
        values = self.new_tensor(values)
    lead, rest = tuple(self.shape[:len(indices)]), tuple(self.shape[len(indices):])
    flat = 0  # (the position in the leading dimensions, flattened)
    for size, index in zip(lead, indices):
        flat = flat * size + index % size
    rows = self.reshape((-1,) + rest)
    added = rows.index_add(0, flat.reshape(-1), values.expand(tuple(flat.shape) + rest)
                           .reshape((-1,) + rest))
    return added.reshape(tuple(self.shape))


def put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of self with ``source`` at the flat positions ``index`` (added where
    ``accumulate``)."""
    n = self.numel()
    at, src = (index % n).reshape(-1), source.reshape(-1)
    flat = self.reshape(-1)
    out = flat.index_add(0, at, src) if accumulate else flat.index_copy(0, at, src)
    return out.reshape(tuple(self.shape))


def stride(self: Tensor, dim: int | None = None) -> Any:
    """Elements to step over per dimension (numpy's layout of the data)."""
    steps = tuple(s // self._data.itemsize for s in self._data.strides)
    return steps if dim is None else steps[dim]


def _cast_to(dtype: Any) -> Any:
    def cast(self: Tensor, memory_format: Any = None) -> Tensor:
        return self.to(dtype)
    return cast


_METHODS = {
    **{inplace: _inplace(name) for name, inplace in _INPLACE.items()
       if hasattr(Tensor, name)},
    "fill_diagonal_": fill_diagonal_, "bernoulli_": bernoulli_, "exponential_": exponential_,
    "geometric_": geometric_, "cauchy_": cauchy_, "log_normal_": log_normal_,
    "random_": random_, "stride": stride, "index_put": index_put, "put": put,
    "index_put_": lambda self, indices, values, accumulate=False: self.copy_(
        index_put(self.clone() if self.requires_grad else self, indices, values, accumulate)),
    "put_": lambda self, index, source, accumulate=False: self.copy_(
        put(self.clone() if self.requires_grad else self, index, source, accumulate)),
    "nelement": lambda self: self.numel(),
    "ndimension": lambda self: self.dim(),
    "is_signed": lambda self: self._data.dtype.kind in "ifc",
    "is_same_size": lambda self, other: tuple(self.shape) == tuple(other.shape),
    "pin_memory": lambda self, device=None: self,
    "is_pinned": lambda self, device=None: False,
    "share_memory_": lambda self: self,
    "is_shared": lambda self: False,
    "is_conj": lambda self: False,
    "is_neg": lambda self: False,
    "resolve_conj": lambda self: self,
    "resolve_neg": lambda self: self,
    "byte": _cast_to(np.uint8), "char": _cast_to(np.int8), "short": _cast_to(np.int16),
    "cfloat": _cast_to(np.complex64), "cdouble": _cast_to(np.complex128),
}
_PROPERTIES = {
    "itemsize": lambda self: self._data.itemsize,
    "nbytes": lambda self: self._data.itemsize * self.numel(),
    "is_cpu": lambda self: True, "is_sparse": lambda self: False,
    "is_quantized": lambda self: False, "is_meta": lambda self: False,
}
for _name, _fn in _METHODS.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
for _name, _fn in _PROPERTIES.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, property(_fn))
