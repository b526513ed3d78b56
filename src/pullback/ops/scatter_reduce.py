"""``scatter_reduce``: src's elements reduced into input at the index along a dim, by
sum, prod, mean, amax or amin, with or without input's own value (``include_self``); torch's
ScatterReduceBackward0, whose rules this copies (an extreme's gradient is split evenly
among the values equal to it, input's own counted even without include_self; prod's
gradient is the product of the others, exact with one zero, as torch's).

>>> import pullback as pb
>>> x = pb.zeros(3, requires_grad=True)
>>> x.scatter_reduce(0, pb.tensor([0, 0, 2]), pb.tensor([1., 2., 3.]), "amax")
tensor([2., 0., 3.], grad_fn=<ScatterReduceBackward0>)
"""

from __future__ import annotations

import numpy as np

from .elementwise import div, eq, logical_and, where
from .indexing import _check_gather, _grid, _picked, _trimmed, fill_op, scatter_add_op
from .selection import take_along
from .table import args, batching
from .table.registry import defop, public, rt_call

_UFUNCS = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum,
           "amin": np.minimum}
_START = {"sum": 0, "prod": 1, "mean": 0, "amax": -np.inf, "amin": np.inf}


def _scatter_reduce(x, index, src, dim, reduce, include_self):
    out = np.array(x, copy=True, order="C")
    where_ = _grid(index, dim)
    if not include_self:
        out[where_] = _START[reduce]
    _UFUNCS[reduce].at(out, where_, src)
    if reduce == "mean":
        count = np.zeros(out.shape, out.dtype) + (1 if include_self else 0)
        np.add.at(count, where_, 1)
        out = np.where(count > 0, out / np.maximum(count, 1), out)
    return out


def _counts(g, index, dim, shape, src_hits=None):
    """How many src values land on each position (of those ``src_hits`` marks)."""
    ones = fill_op(g, value=1, shape=index.shape) if src_hits is None else src_hits
    return scatter_add_op(fill_op(g, value=0, shape=shape), index, ones, dim=dim)


def _shares(g, out, x, index, src, dim, reduce, include_self):
    """(where input's own value counts, the gradient per counted value, where each src
    value counts): torch's formulas for each reduction."""
    if reduce in ("sum", "mean"):
        n = _counts(g, index, dim, x.shape)
        hit = n > 0
        if reduce == "mean":
            n = n + 1 if include_self else n
            per = where(hit, div(g, where(hit, n, 1)), g)
        else:
            per = g
        own = fill_op(g, value=1, shape=x.shape) > 0 if include_self else hit == 0
        return own, per, None
    src_is = eq(src, take_along(_trimmed(out, tuple(index.shape), dim), index, dim=dim))
    n = _counts(g, index, dim, x.shape, where(src_is, 1.0, 0.0))
    # torch counts input's own value among the equal ones even without include_self
    # (then it takes no share: the positions scattered into get no gradient)
    is_out = eq(x, out)
    n = n + where(is_out, 1.0, 0.0)
    own = is_out if include_self else _counts(g, index, dim, x.shape) == 0
    return own, div(g, n), src_is


def _prod_self(g, out, x, index, src, dim, include_self):
    """torch's: the product of the others, exact where input's own value is 0 (the
    product with that 0 replaced by 1)."""
    zero = eq(x, 0)
    ones = where(zero, 1, x)
    others = scatter_reduce_op(ones, index, src, dim=dim, reduce="prod",
                               include_self=include_self)
    grad = div(g * others, ones)
    return grad if include_self else where(_counts(g, index, dim, x.shape) > 0, 0, grad)


def _prod_src(g, out, x, index, src, dim, include_self):
    """torch's: (g * out) / src, or the product of the others where src holds the only 0
    reaching its position."""
    zero = eq(src, 0)
    zeros_there = _picked(_counts(g, index, dim, x.shape, where(zero, 1.0, 0.0)), index, dim)
    single = logical_and(zero, eq(zeros_there, 1))
    others = scatter_reduce_op(x, index, where(single, 1, src), dim=dim, reduce="prod",
                               include_self=include_self)
    return where(single, _picked(g * others, index, dim),
                 div(_picked(g * out, index, dim), where(zero, 1, src)))


def _self_rule(g, out, x, index, src, dim, reduce, include_self):
    if reduce == "prod":
        return _prod_self(g, out, x, index, src, dim, include_self)
    own, per, _ = _shares(g, out, x, index, src, dim, reduce, include_self)
    return where(own, per, 0)


def _src_rule(g, out, x, index, src, dim, reduce, include_self):
    if reduce == "prod":
        return _prod_src(g, out, x, index, src, dim, include_self)
    _, per, src_is = _shares(g, out, x, index, src, dim, reduce, include_self)
    picked = _picked(per, index, dim)
    return picked if src_is is None else where(src_is, picked, 0)


scatter_reduce_op = defop(
    "scatter_reduce", _scatter_reduce, "ScatterReduceBackward0",
    torch_args=("self", "index", "src"), fresh=True,
    template=rt_call("scatter_reduce", "axis=dim", "reduce", "include_self"),
    uses=("x index src out", "", "x index src out"),
    vjp=(_self_rule, None, _src_rule), batch=batching.aligned_dim)


@public("scatter_reduce", function=True, method=True)
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    if reduce not in _UFUNCS:
        raise NotImplementedError(f"scatter_reduce: reduce={reduce!r} is not differentiable "
                                  "in pullback (sum, prod, mean, amax, amin are)")
    d = args.wrap_dim(dim, input.ndim)
    _check_gather("scatter_reduce", input, d, index, src)
    return scatter_reduce_op(input, index, _trimmed(src, tuple(index.shape), None), dim=d,
                             reduce=reduce, include_self=bool(include_self))
