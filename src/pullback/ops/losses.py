"""torch.nn.functional's losses beyond neural.py's (binary cross-entropy, mse) and
cross_entropy.py's (nll_loss, cross_entropy): the losses torch has a node for
(``SmoothL1LossBackward0``, ``HuberLossBackward0``, ``SoftMarginLossBackward0``) as
primitives; the others composed of ops as torch composes them, so their nodes are
torch's (``MeanBackward0``, ``AddBackward0``...). Every one takes
``reduction="none" | "mean" | "sum"`` (and the legacy ``size_average``/``reduce``).

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> F.smooth_l1_loss(pb.tensor([0., 3.]), pb.zeros(2), reduction="none")
tensor([0.0000, 2.5000])
"""

from __future__ import annotations

import warnings

import numpy as np

from .activations import log_sigmoid_op, pairwise_distance
from .elementwise import absolute, exp, log, minimum, sigmoid, sign, where
from .neural import _loss_template, _reduce, _scale, mse_loss
from .pointwise import xlogy
from .shape import detach
from .table import args, batching
from .table.registry import defop, public


# ------------------------------------------------------ losses with a node of their own
def _where_small(x, y, bound, small, large):
    """The template of a loss of d = |x - y| that is ``small`` below ``bound``, else
    ``large`` (``{d}`` in them: d's text)."""
    d = f"np.abs({x} - {y})"
    return f"np.where({d} < {bound}, {small.format(d=d)}, {large.format(d=d)})"


def _smooth_l1(x, y, reduction, beta):
    d = np.abs(x - y)
    return _reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _smooth_l1_grad(x, y, beta):
    d = x - y
    return where(absolute(d) < beta, d * (1 / beta), sign(d))


smooth_l1_op = defop(
    "smooth_l1_loss", _smooth_l1, "SmoothL1LossBackward0", uses=("x y", "x y"), fresh=True,
    template=_loss_template(lambda x, y, beta: _where_small(
        x, y, beta, "0.5 * {d} * {d} / " + beta, "{d} - 0.5 * " + beta)),
    torch_args=("self", "target"),
    vjp=(lambda g, out, x, y, reduction, beta:
         g * _smooth_l1_grad(x, y, beta) * _scale(args.broadcast_shape(x, y), reduction),
         lambda g, out, x, y, reduction, beta:
         -g * _smooth_l1_grad(x, y, beta) * _scale(args.broadcast_shape(x, y), reduction)),
         batch=batching.loss)


def _huber(x, y, reduction, delta):
    d = np.abs(x - y)
    return _reduce(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _huber_grad(x, y, delta):
    d = x - y
    return where(absolute(d) < delta, d, sign(d) * delta)


huber_op = defop(
    "huber_loss", _huber, "HuberLossBackward0", uses=("x y", "x y"), fresh=True,
    template=_loss_template(lambda x, y, delta: _where_small(
        x, y, delta, "0.5 * {d} * {d}", delta + " * ({d} - 0.5 * " + delta + ")")),
    torch_args=("self", "target"),
    vjp=(lambda g, out, x, y, reduction, delta:
         g * _huber_grad(x, y, delta) * _scale(args.broadcast_shape(x, y), reduction),
         lambda g, out, x, y, reduction, delta:
         -g * _huber_grad(x, y, delta) * _scale(args.broadcast_shape(x, y), reduction)),
         batch=batching.loss)
soft_margin_op = defop(
    "soft_margin_loss",
    lambda x, y, reduction: _reduce(np.logaddexp(0, -y * x), reduction),
    "SoftMarginLossBackward0", uses=("x y", ""), fresh=True, torch_args=("self", "target"),
    template=_loss_template(lambda x, y: f"np.logaddexp(0, -{y} * {x})"),
    vjp=(lambda g, out, x, y, reduction:
         -g * y * sigmoid(-y * x) * _scale(args.broadcast_shape(x, y), reduction), None),
         batch=batching.loss)


# ------------------------------------------------------------------ helpers
def legacy_reduction(size_average, reduce, reduction):
    """torch's _Reduction.legacy_get_string: the old flags, with torch's warning."""
    if size_average is None and reduce is None:
        return args.reduction(reduction)
    mean = size_average is None or size_average
    ret = ("mean" if mean else "sum") if reduce is None or reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _reduced(loss, reduction):
    """The mean or sum of an elementwise loss (the loss itself for 'none')."""
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _check_same_size(fn, input, target):
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({args.size_str(target)}) that is different to "
                      f"the input size ({args.size_str(input)}). This will likely lead to "
                      "incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)


# --------------------------------------------------------------- pointwise losses
def _weighted(errors, input, weight, reduction, by_weight):
    """torch's weighted elementwise losses: errors * weight, and a mean that divides by the
    weights' sum (``by_weight``: l1, mse) or by the count (huber)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = errors * weight
    if reduction == "mean" and by_weight:
        return loss.sum() / weight.sum()
    return _reduced(loss, reduction)


@public("l1_loss", functional=True)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size("l1_loss", input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted(absolute(input - target), input, weight, reduction, True)
    return _reduced(absolute(input - target), reduction)


@public("mse_loss", functional=True)
def mse_loss_fn(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size("mse_loss", input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target) ** 2, input, weight, reduction, True)
    return mse_loss(input, target, reduction=reduction)


@public("smooth_l1_loss", functional=True)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_same_size("smooth_l1_loss", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    return smooth_l1_op(input, target, reduction=reduction, beta=beta)


@public("huber_loss", functional=True)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    reduction = args.reduction(reduction)
    _check_same_size("huber_loss", input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:
        return _weighted(huber_op(input, target, reduction="none", delta=delta), input, weight,
                         reduction, False)
    return huber_op(input, target, reduction=reduction, delta=delta)


@public("soft_margin_loss", functional=True)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return soft_margin_op(input, target, reduction=reduction)


@public("kl_div", functional=True)
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                      "the support size.'batchmean' divides only by the batch size, and "
                      "aligns with the KL div math definition.'mean' will be changed to "
                      "behave the same as 'batchmean' in the next major release.",
                      stacklevel=3)
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduced(loss, args.reduction(reduction))


@public("poisson_nll_loss", functional=True)
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = exp(input) - target * input
    else:
        loss = input - target * log(input + eps)
    if full:
        stirling = target * log(target) - target + log(target * (2 * np.pi)) * 0.5
        loss = loss + where(target > 1, stirling, 0)
    return _reduced(loss, reduction)


@public("gaussian_nll_loss", functional=True)
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    reduction = args.reduction(reduction)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    var = var + detach(var.clamp(min=eps) - var)  # torch clamps in place under no_grad
    loss = (log(var) + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + 0.5 * np.log(2 * np.pi)
    return _reduced(loss, reduction)


# ------------------------------------------------------------------ margins
@public("margin_ranking_loss", functional=True)
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduced((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@public("hinge_embedding_loss", functional=True)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    margin_clamp = (margin - input).clamp(min=0)
    loss = where(target != 1, margin_clamp, 0) + where(target != -1, input, 0)
    return _reduced(loss, reduction)


@public("multilabel_soft_margin_loss", functional=True)
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = -(target * log_sigmoid_op(input) + (1 - target) * log_sigmoid_op(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return _reduced(loss, reduction)


@public("cosine_embedding_loss", functional=True)
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = input1.ndim - 1
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + 1e-12
    mag2 = (input2 * input2).sum(d) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    loss = where(target == 1, 1 - cos, 0) + where(target == -1, (cos - margin).clamp(min=0), 0)
    return _reduced(loss, reduction)


@public("triplet_margin_loss", functional=True)
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = pairwise_distance(positive, negative, p, eps)
        d_neg = minimum(d_neg, d_swap)
    return _reduced((d_pos - d_neg + margin).clamp(min=0), reduction)
