"""torch functions written over other ops (their gradients come from those ops): ``mv``,
``baddbmm``, ``logdet``, ``dist``, ``std_mean``/``var_mean``, ``kthvalue``,
``nn.functional.gumbel_softmax``, ``ravel``, ``msort``, ``float_power``, ``adjoint``, and
the methods ``Tensor.unfold`` (sliding windows), ``Tensor.sum_to_size`` and
``Tensor.reshape_as``.

>>> import pullback as pb
>>> x = pb.tensor([3.0, 1.0, 2.0], requires_grad=True)
>>> pb.kthvalue(x, 2)
pullback.return_types.kthvalue(
values=tensor(2., grad_fn=<SqueezeBackward1>),
indices=tensor(2))
>>> pb.arange(5.0).unfold(0, 2, 2)
tensor([[0., 1.],
        [2., 3.]])
"""

from __future__ import annotations

import numpy as np

from .elementwise import to_dtype
from .sampling import GENERATOR, own_generator
from .table import args
from .table.registry import defop, public
from .table.results import return_type

KthValue = return_type("kthvalue", ("values", "indices"))


@public("mv", function=True, method=True)
def mv(input, vec):
    """matrix @ vector, with torch's check of the operands' dimensions."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return input @ vec


@public("baddbmm", function=True, method=True)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2) over a batch of matrices, as torch.baddbmm
    (``beta=0``: input is not read)."""
    product = batch1.bmm(batch2)
    if alpha != 1:
        product = product * alpha
    return product if beta == 0 else input * beta + product


@public("logdet", function=True, method=True)
def logdet(input):
    """log(det(input)): NaN where the determinant is negative, -inf where it is zero."""
    sign, logabs = input.slogdet()
    return logabs.masked_fill(sign < 0, float("nan"))


@public("dist", function=True, method=True)
def dist(input, other, p=2):
    """The p-norm of input - other, flattened."""
    return (input - other).norm(p)


def _with_mean(stat, input, a, k):
    dim = k.get("dim", a[0] if a and not isinstance(a[0], bool) else None)
    keepdim = k.get("keepdim", a[2] if len(a) > 2 else False)
    mean = input.mean() if dim is None else input.mean(dim, keepdim=keepdim)
    return getattr(input, stat)(*a, **k), mean


@public("std_mean", function=True)
def std_mean(input, *a, **k):
    """(std, mean) over the same dimensions, std's arguments (``unbiased``/``correction``)."""
    return _with_mean("std", input, a, k)


@public("var_mean", function=True)
def var_mean(input, *a, **k):
    """(var, mean) over the same dimensions, var's arguments (``unbiased``/``correction``)."""
    return _with_mean("var", input, a, k)


@public("kthvalue", function=True, method=True)
def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element along ``dim`` (1-based) and its index."""
    d = args.wrap_dim(dim, max(input.ndim, 1))
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    flat = input if input.ndim else input.reshape(1)
    ordered = flat.sort(d, stable=True)
    values, indices = (t.narrow(d, k - 1, 1) for t in ordered)
    if not keepdim or not input.ndim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return KthValue(values, indices)


@public("ravel", function=True, method=True)
def ravel(input):
    """torch's ravel: a contiguous copy where ``input`` is not contiguous, viewed flat."""
    return input.contiguous().view(-1)


@public("reshape_as", method=True)
def reshape_as(input, other):
    return input.reshape(other.shape)


@public("msort", function=True, method=True)
def msort(input):
    """The values sorted along dim 0 (torch's sort(0).values)."""
    return input.sort(0).values


@public("float_power", function=True, method=True)
def float_power(input, exponent):
    """input ** exponent in double precision (complex128 where either is complex)."""
    kinds = [args.np_dtype(v).kind for v in (input, exponent)]
    wide = np.complex128 if "c" in kinds else np.float64
    base = to_dtype(input, wide) if hasattr(input, "shape") else input
    if hasattr(exponent, "shape"):
        exponent = to_dtype(exponent, wide)
    return base ** exponent


@public("adjoint", function=True, method=True)
def adjoint(input):
    """The conjugate transpose of the last two dims (torch's: a view)."""
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    return input.transpose(-2, -1).conj()


@public("unfold", method=True)
def unfold(input, dimension, size, step):
    """Windows of ``size`` elements every ``step`` along ``dimension``: that dimension
    becomes the window count, and a last dimension of ``size`` is appended."""
    d = args.wrap_dim(dimension, max(input.ndim, 1))
    n = input.shape[d] if input.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    starts = np.arange(0, n - size + 1, step)
    index = (starts[:, None] + np.arange(size)).reshape(-1)
    windows = input.index_select(d, input.new_tensor(index).long())
    shape = input.shape[:d] + (len(starts), size) + input.shape[d + 1:]
    return windows.reshape(shape).movedim(d + 1, -1)


@public("sum_to_size", method=True)
def sum_to_size(input, *size):
    """Sums input down to ``size``, a shape it broadcasts from (leading dimensions summed
    away, dimensions of size 1 summed with keepdim)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    lead = input.ndim - len(shape)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(shape, input.shape[lead:])):
        raise RuntimeError(f"size {{{', '.join(map(str, shape))}}} is not expandable to size "
                           f"{{{', '.join(map(str, input.shape))}}}.")
    out = input.sum(tuple(range(lead))) if lead else input
    keep = tuple(i for i, (s, n) in enumerate(zip(shape, out.shape)) if s == 1 and n != 1)
    return out.sum(keep, keepdim=True) if keep else out


# Gumbel(0, 1) draws shaped and typed as the input (which is only read for that)
gumbel_noise = defop("gumbel_noise", lambda x: -np.log(GENERATOR.rng.exponential(
    size=x.shape)).astype(x.dtype), pure=False, fresh=True, draws_from=own_generator)


@public("gumbel_softmax", functional=True)
def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau); ``hard``: the one-hot of its argmax forward,
    the soft sample's gradient backward (straight-through)."""
    soft = ((logits + gumbel_noise(logits)) / tau).softmax(dim)
    if not hard:
        return soft
    one_hot = soft.new_zeros(soft.shape).scatter(dim, soft.argmax(dim, keepdim=True), 1.0)
    return one_hot - soft.detach() + soft
