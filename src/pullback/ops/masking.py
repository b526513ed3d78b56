"""Selection by a mask: ``masked_select`` (a result whose length depends on the data:
eager only, the compiler refuses it as it refuses ``nonzero``) and ``masked_scatter``,
with torch's node names (MaskedSelectBackward0, MaskedScatterBackward0).

>>> import pullback as pb
>>> x = pb.tensor([1., -2., 3.], requires_grad=True)
>>> x.masked_select(x > 0)
tensor([1., 3.], grad_fn=<MaskedSelectBackward0>)
"""

from __future__ import annotations

import numpy as np

from .elementwise import where
from .indexing import fill_op
from .table import args
from .table.registry import defop, public, rt_call


def _masked_select(x, mask):
    xb, mb = np.broadcast_arrays(x, mask)
    return xb[mb]


def _masked_select_backward(g, mask, shape):
    """``g`` put back at the mask's places, in the broadcast shape of ``shape`` and the
    mask (the rule's caller sums it to the input's shape)."""
    full = np.broadcast_shapes(tuple(shape), np.shape(mask))
    out = np.zeros(full, dtype=np.result_type(g))
    out[np.broadcast_to(mask, full)] = g
    return out


def _masked_scatter(x, mask, source):
    out = np.array(x, copy=True, order="C")
    m = np.broadcast_to(mask, out.shape)
    out[m] = np.reshape(source, -1)[:int(m.sum())]
    return out


def _masked_scatter_backward(g, mask, shape):
    """The source's gradient: ``g`` at the mask's places, in order, then zeros for the
    source elements the mask did not reach, in the source's ``shape``."""
    picked = np.asarray(g)[np.broadcast_to(mask, np.shape(g))]
    out = np.zeros(int(np.prod(shape)), dtype=np.result_type(g))
    out[:picked.size] = picked
    return out.reshape(shape)


masked_select_op = defop(
    "masked_select", _masked_select, "MaskedSelectBackward0", torch_args=("self", "mask"),
    uses=("mask", ""), fresh=True, shape_from_data=True,
    template=rt_call("masked_select"),
    vjp=(lambda g, out, x, mask: masked_select_backward(g, mask, shape=x.shape), None))
masked_select_backward = defop(
    "masked_select_backward", _masked_select_backward, "MaskedScatterBackward0", fresh=True,
    torch_args=("grad", "mask"), uses=("mask", ""),
    template=rt_call("masked_select_backward", "shape"),
    vjp=(lambda g, out, grad, mask, shape: masked_select_op(g, mask), None))
masked_scatter_op = defop(
    "masked_scatter", _masked_scatter, "MaskedScatterBackward0",
    torch_args=("self", "mask", "source"), uses=("mask", "", "mask"), fresh=True,
    inplace="masked_scatter_", template=rt_call("masked_scatter"),
    vjp=(lambda g, out, x, mask, source: where(mask, 0, g), None,
         lambda g, out, x, mask, source: masked_scatter_backward(g, mask, shape=source.shape)))
masked_scatter_backward = defop(
    "masked_scatter_backward", _masked_scatter_backward, "MaskedSelectBackward0", fresh=True,
    torch_args=("grad", "mask"), uses=("mask", ""),
    template=rt_call("masked_scatter_backward", "shape"),
    vjp=(lambda g, out, grad, mask, shape: masked_scatter_op(
        fill_op(g, value=0, shape=grad.shape), mask, g), None))


def _check_mask(fn: str, mask) -> None:
    if args.np_dtype(mask) != np.bool_:
        raise RuntimeError(f"{fn}: expected BoolTensor for mask")


@public("masked_select", function=True, method=True)
def masked_select(input, mask):
    _check_mask("masked_select", mask)
    return masked_select_op(input, mask)


@public("masked_scatter", function=True, method=True)
def masked_scatter(input, mask, source):
    _check_mask("masked_scatter_", mask)
    if np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)) != tuple(input.shape):
        raise RuntimeError(f"masked_scatter_: expected mask to be broadcastable to self "
                           f"{list(input.shape)}")
    return masked_scatter_op(input, mask, source)
