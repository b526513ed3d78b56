"""Neural-network primitives: softmax family and losses (torch.nn.functional names)."""

from __future__ import annotations

import numpy as np

from .math import exp, fast_mean, sigmoid, sum_dim
from .registry import defop


def _softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    e /= e.sum(axis=dim, keepdims=True)
    return e


def _log_softmax(x, dim):
    s = x - x.max(axis=dim, keepdims=True)
    s -= np.log(np.exp(s).sum(axis=dim, keepdims=True))
    return s


softmax = defop("softmax", _softmax, "SoftmaxBackward0",
                vjp=(lambda g, out, x, dim:
                     out * (g - sum_dim(g * out, dim=(dim,), keepdim=True)),),
                uses=("out",))
log_softmax = defop("log_softmax", _log_softmax, "LogSoftmaxBackward0",
                    vjp=(lambda g, out, x, dim:
                         g - exp(out) * sum_dim(g, dim=(dim,), keepdim=True),),
                    uses=("out",))


def _reduce(v, reduction):
    if reduction == "mean":
        return fast_mean(v)
    if reduction == "sum":
        return v.sum()
    return v


def _scale(shape, reduction):
    """The factor a reduced loss's gradient carries per element."""
    return 1.0 / max(int(np.prod(shape)), 1) if reduction == "mean" else 1.0


def _bce_logits(x, y, reduction):
    return _reduce(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))), reduction)


binary_cross_entropy_with_logits = defop(
    "binary_cross_entropy_with_logits", _bce_logits, "BinaryCrossEntropyWithLogitsBackward0",
    vjp=(lambda g, out, x, y, reduction: g * (sigmoid(x) - y) * _scale(x.shape, reduction),
         lambda g, out, x, y, reduction: -g * x * _scale(x.shape, reduction)),
    uses=("x y", "x"))


def _bce(p, y, reduction):
    return _reduce(-(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log1p(-p), -100)),
                   reduction)


binary_cross_entropy = defop(
    "binary_cross_entropy", _bce, "BinaryCrossEntropyBackward0",
    vjp=(lambda g, out, p, y, reduction:
         g * (p - y) / clamp_min_eps(p * (1 - p)) * _scale(p.shape, reduction),
         None),
    uses=("p y", ""))
clamp_min_eps = defop("clamp_min_eps", lambda v: np.maximum(v, 1e-12), "ClampMinBackward0",
                      vjp=(lambda g, out, v: g * (v > 1e-12),), uses=("v",))

mse_loss = defop("mse_loss", lambda x, y, reduction: _reduce((x - y) ** 2, reduction),
                 "MseLossBackward0",
                 vjp=(lambda g, out, x, y, reduction: g * 2 * (x - y) * _scale(x.shape, reduction),
                      lambda g, out, x, y, reduction:
                      -g * 2 * (x - y) * _scale(x.shape, reduction)),
                 uses=("x y", "x y"))


def _rows(target):
    return np.arange(target.shape[0])


def _nll(logp, target, reduction):
    return _reduce(-logp[_rows(target), target], reduction)


def _onehot(target, num_classes, dtype):
    return (np.arange(num_classes) == np.expand_dims(target, 1)).astype(dtype)


one_hot = defop("one_hot", _onehot)


def _put_rows(g, target, num_classes):
    out = np.zeros((target.shape[0], num_classes), dtype=np.result_type(g))
    out[_rows(target), target] = g
    return out


# x[i, target[i]] for every row, and its adjoint: scatter into zeros (each other's VJP)
take_rows = defop("take_rows", lambda x, target: x[_rows(target), target], "IndexBackward0",
                  vjp=(lambda g, out, x, target: put_rows(g, target, num_classes=x.shape[1]),
                       None),
                  uses=("target", ""))
put_rows = defop("put_rows", _put_rows, "IndexPutBackward0",
                 vjp=(lambda g, out, v, target, num_classes: take_rows(g, target), None),
                 uses=("target", ""))


def _nll_rule(g, out, logp, target, reduction):
    return put_rows(-g * _scale(target.shape, reduction), target, num_classes=logp.shape[1])


nll_loss = defop("nll_loss", _nll, "NllLossBackward0",
                 vjp=(_nll_rule, None), uses=("target", ""))
