"""More torch functions and Tensor methods written over other ops (their gradients,
tangents and batching are those ops'): ``nn.functional.softmin``, ``tanhshrink`` and
``threshold``, ``broadcast_tensors``, ``cartesian_prod``, ``combinations``, ``vander``,
``addmv``, ``addr``, ``addbmm``, ``rsub``, ``positive``, ``take``, ``Tensor.where``,
``view_as_real`` / ``view_as_complex`` (copies here, not views), ``argwhere``,
``mvlgamma``, ``ldexp``, ``frexp`` (numpy's), ``heaviside`` (zero gradient in input where
torch's backward refuses), ``isin``, ``isreal``, ``unravel_index``, ``split_with_sizes``
and ``chain_matmul``.

>>> import pullback as pb
>>> pb.combinations(pb.tensor([1.0, 2.0, 3.0]))
tensor([[1., 2.],
        [1., 3.],
        [2., 3.]])
>>> pb.vander(pb.tensor([2.0, 3.0]), 3)
tensor([[4., 2., 1.],
        [9., 3., 1.]])
"""

from __future__ import annotations

import itertools
import math
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np

from .elementwise import make_complex, where
from .joining import cat
from .numpy_floats import _frexp
from .table import args
from .table.registry import is_traced, public
from .table.results import return_type

Frexp = return_type("frexp", ("mantissa", "exponent"))


@public("softmin", functional=True)
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along ``dim`` (torch's implicit choice where None)."""
    return (-(input if dtype is None else input.to(dtype))).softmax(dim)


@public("tanhshrink", functional=True)
def tanhshrink(input):
    """input - tanh(input)."""
    return input - input.tanh()


@public("threshold", function=True, functional=True)
def threshold(input, threshold, value, inplace=False):
    """``value`` where input <= threshold, input elsewhere."""
    out = input.masked_fill(input <= threshold, value)
    if inplace:
        return input.copy_(out)
    return out


@public("broadcast_tensors", function=True)
def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape."""
    shape = SimpleNamespace(shape=())
    for t in tensors:  # (torch's error: the shape so far against the next tensor's)
        shape = SimpleNamespace(shape=args.broadcast_shape(shape, t) if shape.shape else
                                tuple(t.shape))
    return tuple(t.expand(shape.shape) for t in tensors)


def _check_1d(name: str, tensors) -> None:
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


@public("cartesian_prod", function=True)
def cartesian_prod(*tensors):
    """The rows of every combination of one element of each 1-d tensor (a 1-d result for
    one tensor)."""
    _check_1d("cartesian_prod", tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = [t.reshape(tuple(-1 if i == k else 1 for i in range(len(tensors))))
             for k, t in enumerate(tensors)]
    shape = tuple(t.shape[0] for t in tensors)
    return cat([g.expand(shape).reshape(-1, 1) for g in grids], dim=1)


@public("combinations", function=True)
def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-d input's elements, as rows (itertools'
    order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_zeros((0,))
    how = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.asarray(list(how(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    picked = input.index_select(0, input.new_tensor(rows.reshape(-1)).long())
    return picked.reshape(-1, r)


@public("vander", function=True)
def vander(x, N=None, increasing=False):
    """The powers of a 1-d x as columns: x ** (N-1) ... x ** 0 (increasing: the other
    order)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if _kind(x) in "biu":
        x = x.long()
    columns = [x.unsqueeze(1) ** k for k in range(n)]
    if not columns:
        return x.new_zeros((x.shape[0], 0))
    out = cat([c if c.dtype == x.dtype else c.to(x.dtype) for c in columns], dim=1)
    return out if increasing else out.flip(1)


def _kind(x: Any) -> str:
    return np.dtype(args.np_dtype(x)).kind


def _scaled(input, product, beta, alpha):
    """beta * input + alpha * product (input not read where beta is 0)."""
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product.expand(np.broadcast_shapes(tuple(input.shape), tuple(product.shape)))
    return (input if beta == 1 else input * beta) + product


@public("addmv", function=True, method=True)
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, "
                           f"{mat.ndim}, {vec.ndim}")
    return _scaled(input, mat @ vec, beta, alpha)


@public("addr", function=True, method=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D"
                           if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return _scaled(input, vec1.unsqueeze(1) * vec2.unsqueeze(0), beta, alpha)


@public("addbmm", function=True, method=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.ndim != 3 else
                           "batch2 must be a 3D tensor")
    return _scaled(input, batch1.bmm(batch2).sum(0), beta, alpha)


@public("rsub", function=True)
def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    return other - (input if alpha == 1 else input * alpha)


@public("positive", function=True, method=True)
def positive(input):
    """input itself (torch refuses bool)."""
    if _kind(input) == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@public("take", function=True, method=True)
def take(input, index):
    """input's elements at the flat indices ``index`` (negative from the end), shaped as
    index."""
    n = input.numel()
    flat = input.reshape(-1)
    idx = index if is_traced(index) else flat.new_tensor(np.asarray(index)).long()
    if _kind(idx) not in "iu":
        raise RuntimeError("take(): Expected a long tensor for index, but got "
                           f"{args.dtype_name(idx)}")
    wrapped = (idx % n) if n else idx
    return flat.take_along_dim(wrapped.reshape(-1), 0).reshape(tuple(idx.shape))


@public("where", method=True)
def where_method(input, condition, other):
    """``input`` where ``condition``, ``other`` elsewhere (torch's Tensor.where)."""
    return where(condition, input, other)


@public("view_as_real", function=True)
def view_as_real(input):
    """A complex tensor's real and imaginary parts in a last dimension of 2 (a copy)."""
    if _kind(input) != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return cat([input.real.unsqueeze(-1), input.imag.unsqueeze(-1)], dim=-1)


@public("view_as_complex", function=True)
def view_as_complex(input):
    """The complex numbers of a last dimension of 2 (real, imaginary) (a copy)."""
    if input.ndim == 0 or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if _kind(input) != "f":
        raise RuntimeError("view_as_complex is only supported for floating point tensors, "
                           f"but got a tensor of scalar type: {args.dtype_name(input)}")
    return make_complex(input.select(-1, 0), input.select(-1, 1))


@public("argwhere", function=True, method=True)
def argwhere(input):
    """The indices of the nonzero elements, one row each."""
    return input.nonzero()


@public("mvlgamma", function=True, method=True)
def mvlgamma(input, p):
    """The multivariate log-gamma of dimension ``p`` (torch 2.13 no longer checks that
    input > (p - 1) / 2: inf or NaN below)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not bool((input > (p - 1) / 2).all()):
        raise RuntimeError("All elements must be greater than (p-1)/2")
    steps = input.new_tensor(np.arange(p) / 2.0)
    return (input.unsqueeze(-1) - steps).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(
        math.pi)


@public("ldexp", function=True, method=True)
def ldexp(input, other):
    """input * 2 ** other (in a float dtype)."""
    x = input if _kind(input) in "fc" else input.float()
    return x * (2.0 ** other if not is_traced(other) else other.to(args.np_dtype(x)).exp2())


@public("frexp", function=True, method=True)
def frexp(input):
    """(mantissa, exponent): input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1);
    the mantissa's gradient is 2 ** -exponent (numpy's frexp)."""
    if _kind(input) != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = _frexp(input)
    return Frexp(mantissa, input.new_tensor(exponent).int() if not is_traced(exponent)
                 else exponent.int())


@public("heaviside", function=True, method=True)
def heaviside(input, values):
    """0 where input < 0 (and NaN), ``values`` where it is 0, 1 where it is > 0."""
    if args.np_dtype(input) != args.np_dtype(values):
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    step = (input > 0).to(args.np_dtype(input))
    return where(input == 0, values, step)


@public("isin", function=True)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is among ``test_elements`` (a bool tensor of elements' shape)."""
    if not is_traced(elements):
        return isin(test_elements.new_tensor(elements), test_elements, invert=invert)
    tests = test_elements.reshape(-1) if is_traced(test_elements) else \
        elements.new_tensor(np.reshape(test_elements, -1))
    found = (elements.unsqueeze(-1) == tests).any(-1)
    return found.logical_not() if invert else found


@public("isreal", function=True, method=True)
def isreal(input):
    """Whether each element's imaginary part is 0 (every element of a real tensor)."""
    if _kind(input) == "c":
        return input.imag == 0
    return (input == input) | (input != input)


@public("unravel_index", function=True)
def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in ``shape``, one tensor per dimension."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if _kind(indices) not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{args.dtype_name(indices)}")
    out, rest = [], indices
    for n in reversed(shape):
        out.append(rest % n)
        rest = rest // n
    return tuple(reversed(out))


@public("split_with_sizes", function=True)
def split_with_sizes(input, split_sizes, dim=0):
    """input split along ``dim`` into pieces of the given sizes."""
    return input.split(list(split_sizes), dim)


CHAIN_MATMUL_DEPRECATED = (
    "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
    "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
    "than multiple parameters.")


@public("chain_matmul", function=True)
def chain_matmul(*matrices):
    """The product of the matrices, left to right (deprecated in torch, which warns)."""
    warnings.warn(CHAIN_MATMUL_DEPRECATED, UserWarning, stacklevel=2)
    out = matrices[0]
    for m in matrices[1:]:
        out = out @ m
    return out
