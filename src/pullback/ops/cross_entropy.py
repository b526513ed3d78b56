"""nll_loss and cross_entropy, torch.nn.functional's: nll_loss a primitive (class
weights, ``ignore_index``, any number of extra dims; its backward an op too, and
cross-entropy's backward as one op), cross_entropy over it (label smoothing,
probability targets). Both take ``reduction="none" | "mean" | "sum"`` (and the legacy
``size_average``/``reduce``).

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> x = pb.tensor([[2., 0., 1.], [0., 2., 1.]])
>>> F.cross_entropy(x, pb.tensor([0, 2]), label_smoothing=0.1)
tensor(0.9576)
>>> F.cross_entropy(x, pb.tensor([0, -100]))
tensor(0.4076)
"""

from __future__ import annotations

import math

import numpy as np

from .elementwise import eq, logical_not, where
from .indexing import index_select_op
from .kernels.summation import sum_of
from .losses import legacy_reduction
from .neural import _reduce, log_softmax_fn
from .reductions import sum_dim
from .shape import expand, reshape_op
from .table import args, batching
from .table.registry import defop, public


# ------------------------------------------------------------------- nll_loss
def _flat(logp_shape, target):
    """(rows, classes) of logp's class-last layout, target flattened alike."""
    if len(logp_shape) <= 2:
        return (1, logp_shape[0]) if len(logp_shape) == 1 else tuple(logp_shape)
    c = logp_shape[1]
    return math.prod(logp_shape) // max(c, 1), c


def _class_last(x):
    if x.ndim <= 2:  # (rows, classes) already: no copy
        return x[None] if x.ndim == 1 else x
    return np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def _weights(target, weight, ignore_index, classes):
    """Each target's class weight (None: all 1 and none ignored, the common case, which
    costs no array), 0 where it is ignore_index; the targets, clipped into range."""
    t = target.reshape(-1)
    if weight is None and not 0 <= ignore_index < classes and (
            t.size == 0 or np.minimum.reduce(t) >= 0):
        return None, t  # none is ignore_index (_picked checks the upper bound)
    ignored = t == ignore_index
    w = np.ones(classes) if weight is None else weight
    bad = t[~ignored & ((t < 0) | (t >= classes))]
    if bad.size:
        raise IndexError(f"Target {bad[0]} is out of bounds.")
    safe = np.where(ignored, 0, t)
    dtype = np.result_type(w) if weight is not None else None
    return np.where(ignored, 0, w[safe]).astype(dtype), safe


def _picked(rows, t):
    """Each row's entry at its target (torch's message for a target out of range)."""
    try:
        return rows[np.arange(t.size), t]
    except IndexError:
        raise IndexError(f"Target {t[t >= rows.shape[1]][0]} is out of bounds.") from None


def _nll(logp, target, weight, ignore_index, reduction):
    rows = _class_last(logp)
    w, t = _weights(target, weight, ignore_index, rows.shape[1])
    picked = _picked(rows, t)
    if w is None:  # the common case: as plain as it can be
        return _reduce(-picked, reduction) if reduction != "none" else \
            (-picked).reshape(target.shape)
    losses = -(w.astype(picked.dtype) * picked)
    if reduction == "none":
        return losses.reshape(target.shape)
    total = sum_of(losses)
    if reduction == "sum":
        return total
    count = np.asarray(t.size if w is None else sum_of(w.astype(picked.dtype)), total.dtype)
    return total / count if count else total * np.nan  # (0/0: NaN, as torch's)


def _nll_backward(g, target, weight, shape, ignore_index, reduction):
    """nll's transpose: -w g at each target's position (g / the total weight: mean)."""
    n, c = _flat(shape, target)
    w, t = _weights(target, weight, ignore_index, c)
    g = np.asarray(g)
    coef = -(g.reshape(-1) if reduction == "none" else g)
    if w is None:
        if reduction == "mean":
            coef = coef / t.size if t.size else coef
    else:
        coef = w.astype(g.dtype) * coef
        if reduction == "mean":  # (an ignored target's 0 stays 0 when every one is)
            total = sum_of(w.astype(g.dtype))
            coef = coef / np.asarray(total, g.dtype) if total else coef * 0
    out = np.zeros((n, c), np.result_type(g))
    out[np.arange(t.size), t] = coef
    if len(shape) <= 2:
        return out[0] if len(shape) == 1 else out
    moved = (shape[0],) + tuple(shape[2:]) + (shape[1],)
    return np.ascontiguousarray(np.moveaxis(out.reshape(moved), -1, 1))


def _rows_of(logp, target, batched):
    """A batch of nll's inputs as one batch of rows: (rows, classes) and (rows,), every
    example's rows together, and how many rows an example has."""
    size = batching.size_of((logp, target), batched)
    logp = logp if batched[0] else batching.with_batch(logp, size)
    target = target if batched[1] else batching.with_batch(target, size)
    per = int(np.prod(target.shape[1:], dtype=np.int64))
    return (reshape_op(logp, shape=(size * per, logp.shape[-1]) if logp.ndim > 2 else
                       (size, logp.shape[-1])), reshape_op(target, shape=(size * per,)), size,
            per)


def _nll_total(target, weight, ignore_index, classes, dtype, size):
    """Each example's total weight (mean's divisor): nll of -1 everywhere, unreduced."""
    minus = np.full((target.shape[0], classes), -1, dtype)
    each = nll_loss_op(minus, target, weight, ignore_index=ignore_index, reduction="none")
    return sum_dim(reshape_op(each, shape=(size, -1)), dim=(1,), keepdim=False)


def _nll_batch(op, inputs, batched, ignore_index, reduction):
    """nll over a batch (logp or target batched, not the weight): unreduced over every
    example's rows, then each example's sum or weighted mean."""
    logp, target, weight = inputs
    if batched[2] or (logp.ndim - batched[0] > 2):
        raise batching.NoRule  # (a batched weight; a K-dimensional loss: per example)
    rows, flat, size, per = _rows_of(logp, target, batched[:2])
    each = reshape_op(op(rows, flat, weight, ignore_index=ignore_index, reduction="none"),
                      shape=(size, per))
    if reduction == "none":
        return reshape_op(each, shape=(size,) + tuple(target.shape[int(batched[1]):]))
    total = sum_dim(each, dim=(1,), keepdim=False)
    if reduction == "sum":
        return total
    return total / _nll_total(flat, weight, ignore_index, rows.shape[1], args.np_dtype(rows),
                              size)


def _nll_backward_batch(op, inputs, batched, shape, ignore_index, reduction):
    """nll's backward over a batch: each example's coefficients (its mean's own divisor),
    then one unreduced backward over every example's rows."""
    g, target, weight = inputs
    if batched[2] or len(shape) > 2:
        raise batching.NoRule
    size = batching.size_of(inputs, batched)
    target = target if batched[1] else batching.with_batch(target, size)
    per = int(np.prod(target.shape[1:], dtype=np.int64))
    flat = reshape_op(target, shape=(size * per,))
    g = g if batched[0] else batching.with_batch(g, size)
    if reduction != "none":
        if reduction == "mean":
            g = g / _nll_total(flat, weight, ignore_index, shape[-1], args.np_dtype(g), size)
        g = expand(reshape_op(g, shape=(size, 1)), shape=(size, per))
    rows = op(reshape_op(g, shape=(size * per,)), flat, weight, shape=(size * per, shape[-1]),
              ignore_index=ignore_index, reduction="none")
    return reshape_op(rows, shape=(size,) + tuple(shape))


def _rows_case(weight, shape, target, ignore_index, reduction):
    """Whether nll runs as ``rt.nll_rows`` (decided when traced, from shapes): (rows,
    classes), no class weights, a mean or a sum, ``ignore_index`` no class."""
    return weight is None and len(shape) == 2 and math.prod(target.shape) > 0 and \
        reduction != "none" and not 0 <= ignore_index < shape[1]


def _nll_template(e, a, lit):
    logp, target, weight = e.inputs
    p = e.params
    if _rows_case(weight, logp.shape, target, p["ignore_index"], p["reduction"]):
        return (f"rt.nll_rows({a[0]}, {a[1]}, ignore_index={lit(p['ignore_index'])}, "
                f"reduction={lit(p['reduction'])})")
    return (f"rt.nll_loss({a[0]}, {a[1]}, {a[2]}, ignore_index={lit(p['ignore_index'])}, "
            f"reduction={lit(p['reduction'])})")


def _nll_backward_template(e, a, lit):
    _, target, weight = e.inputs
    p = e.params
    rest = (f"shape={lit(p['shape'])}, ignore_index={lit(p['ignore_index'])}, "
            f"reduction={lit(p['reduction'])}")
    if _rows_case(weight, p["shape"], target, p["ignore_index"], p["reduction"]):
        return f"rt.nll_rows_backward({a[0]}, {a[1]}, {rest})"
    return f"rt.nll_backward({a[0]}, {a[1]}, {a[2]}, {rest})"


nll_loss_op = defop(
    "nll_loss", _nll, "NllLossBackward0", torch_args=("self", "target", "weight"),
    uses=("target weight", "", ""), fresh=True, batch=_nll_batch, template=_nll_template,
    vjp=(lambda g, out, logp, target, weight, ignore_index, reduction: nll_backward(
        g, target, weight, shape=logp.shape, ignore_index=ignore_index, reduction=reduction),
         None, None))
nll_backward = defop(
    "nll_backward", _nll_backward, "NllLossBackwardBackward0", fresh=True,
    torch_args=("grad_output", "target", "weight"), uses=("target weight", "", ""),
    template=_nll_backward_template,
    vjp=(lambda g, out, grad, target, weight, shape, ignore_index, reduction: nll_loss_op(
        g, target, weight, ignore_index=ignore_index, reduction=reduction), None, None),
    batch=_nll_backward_batch)


def softmax_nll_backward(g, target, logp, ignore_index, reduction):
    """The gradient of ``nll_rows(logp, target)`` through ``logp = log_softmax(z)``, at z:
    (softmax(z) - onehot(target)) * g (/ the rows, for a mean), read from logp. The
    values of nll_rows_backward's gradient then log_softmax's (its row sums are the
    target's coefficient), bit for bit; a negative target takes that path itself."""
    if target[target.argmin()] < 0:
        d = _nll_backward(g, target, None, logp.shape, ignore_index, reduction)
        return d - np.exp(logp) * d.sum(axis=1, keepdims=True)
    s = np.asarray(g) / target.size if reduction == "mean" else np.asarray(g)
    out = np.exp(logp) * s
    out[np.arange(target.size), target] -= s
    return out


#: cross-entropy's backward as one op (transforms/peephole.py's ``lean_cross_entropy``
#: writes it where nll_backward meets log_softmax's rule; never differentiated)
softmax_nll_backward_op = defop(
    "softmax_nll_backward", softmax_nll_backward, fresh=True,
    template=lambda e, a, lit: (
        f"rt.softmax_nll_backward({a[0]}, {a[1]}, {a[2]}, ignore_index="
        f"{lit(e.params['ignore_index'])}, reduction={lit(e.params['reduction'])})"))


# ------------------------------------------------------------ nll, cross_entropy
def _class_weight(input, weight, class_dim):
    """``weight``, checked (None stays None: every class weighs 1)."""
    n = input.shape[class_dim] if input.ndim else 1
    if weight is None:
        return None
    if tuple(weight.shape) != (n,):
        raise RuntimeError(f"weight tensor should be defined either for all {n} classes or "
                           f"no classes but got weight tensor of shape: "
                           f"[{', '.join(map(str, weight.shape))}]")
    return weight


def _check_target(input, target, ignore_index):
    if args.np_dtype(target).kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {args.dtype_name(target)}")
    batch = input.shape[0] if input.ndim >= 2 else None
    if batch is not None and (target.ndim == 0 or target.shape[0] != batch):
        raise ValueError(f"Expected input batch_size ({batch}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    want = (input.shape[0],) + tuple(input.shape[2:]) if input.ndim >= 2 else ()
    if tuple(target.shape) != want:
        raise RuntimeError(f"size mismatch (got input: {args.size_str(input)} , target: "
                           f"{args.size_str(target)})")


@public("nll_loss", functional=True)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    _check_target(input, target, ignore_index)
    w = _class_weight(input, weight, 1 if input.ndim >= 2 else 0)
    return nll_loss_op(input, target, w, ignore_index=ignore_index, reduction=reduction)


def _smoothing(logp, target, weight, ignore_index, reduction, class_dim):
    """torch's smooth term: -sum over classes of (weighted) log-probabilities, 0 where the
    target is ignored, normalized as nll normalizes."""
    shape = [1] * logp.ndim
    shape[class_dim] = logp.shape[class_dim]
    term = logp if weight is None else logp * weight.reshape(shape)
    smooth = -term.sum(class_dim)
    ignored = eq(target, ignore_index)
    smooth = where(ignored, 0, smooth)
    if reduction == "mean":
        if weight is None:
            return smooth.sum() / logical_not(ignored).sum()
        safe = where(ignored, 0, target).reshape(-1)
        kept = where(ignored.reshape(-1), 0, index_select_op(weight, safe, dim=0))
        return smooth.sum() / kept.sum()
    return smooth.sum() if reduction == "sum" else smooth


@public("cross_entropy", functional=True)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    class_dim = 1 if input.ndim >= 2 else 0
    logp = log_softmax_fn(input, class_dim)
    if args.np_dtype(target).kind == "f":
        return _prob_cross_entropy(logp, target, weight, reduction, label_smoothing, class_dim)
    if label_smoothing == 0:
        return nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if weight is not None:
        _class_weight(input, weight, class_dim)
    smooth = _smoothing(logp, target, weight, ignore_index, reduction, class_dim)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / input.shape[class_dim])


def _prob_cross_entropy(logp, target, weight, reduction, label_smoothing, class_dim):
    if tuple(target.shape) != tuple(logp.shape):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{args.dtype_name(target).capitalize()}")
    c = logp.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / c
    term = logp * target
    if weight is not None:
        shape = [1] * logp.ndim
        shape[class_dim] = c
        term = term * weight.reshape(shape)
    if reduction == "mean":
        return -term.sum() / (int(np.prod(logp.shape)) // max(c, 1))
    return -term.sum() if reduction == "sum" else -term.sum(class_dim)
