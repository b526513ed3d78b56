"""Neural-network primitives (the softmax family, binary cross-entropy, mse) and their
torch.nn.functional functions (nll_loss and cross_entropy: cross_entropy.py; the other
losses: losses.py)."""

from __future__ import annotations

import numpy as np

from .elementwise import exp, sigmoid, to_dtype, zeros_like
from .kernels.summation import sum_of
from .pointwise import logaddexp
from .reductions import fast_mean, sum_dim
from .shape import reshape_op
from .table import args, batching
from .table.promotion import primary
from .table.registry import c_order, defop, public


def _softmax(x, dim):
    if not x.size:  # nothing to normalize (numpy has no max of nothing)
        return x.copy()
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    e /= sum_of(e, axis=dim, keepdims=True)
    return c_order(e)


def _log_softmax(x, dim):
    if not x.size:
        return x.copy()
    s = x - x.max(axis=dim, keepdims=True)
    s -= np.log(sum_of(np.exp(s), axis=dim, keepdims=True))
    return c_order(s)


# dim: an int, or None (every axis: a 0-d input's only dim)
softmax = defop("softmax", _softmax, "SoftmaxBackward0", template="rt.softmax({0}, axis={dim})",
                vjp=(lambda g, out, x, dim:
                     out * (g - sum_dim(g * out, dim=dim, keepdim=True)),),
                uses=("out",), fresh=True)
log_softmax = defop("log_softmax", _log_softmax, "LogSoftmaxBackward0",
                    template="rt.log_softmax({0}, axis={dim})",
                    vjp=(lambda g, out, x, dim:
                         g - exp(out) * sum_dim(g, dim=dim, keepdim=True),),
                    uses=("out",), fresh=True)


def _reduce(v, reduction):
    if reduction == "mean":
        return fast_mean(v)
    if reduction == "sum":
        return sum_of(v)
    return v


def reduce_text(text, e, lit, reduction, shape=None):
    """``_reduce`` in generated code: ``text`` (an elementwise loss of ``shape``, the
    inputs' broadcast shape when None), its mean (sum / count) or sum."""
    if reduction == "none":
        return text
    if reduction == "sum":
        return f"{primary(text)}.sum()"
    dtype = np.dtype(e.out.dtype)
    if dtype.kind not in "fc" or dtype.itemsize < 4:
        return f"np.mean({text})"
    n = int(np.prod(args.broadcast_shape(*e.inputs) if shape is None else shape))
    return f"{primary(text)}.sum() / {n}" if n else f"{primary(text)}.sum() * np.nan"


def _loss_template(write):
    """A loss's template from ``write(*inputs' names, **params)``, its reduction added."""
    return lambda e, a, lit: reduce_text(
        write(*a, **{k: lit(v) for k, v in e.params.items() if k != "reduction"}), e, lit,
        e.params["reduction"])


def _scale(shape, reduction):
    """The factor a reduced loss's gradient carries per element."""
    return 1.0 / max(int(np.prod(shape)), 1) if reduction == "mean" else 1.0


def _bce_logits(x, y, reduction):
    """(1 - y) x + log(1 + exp(-x)), kept stable as torch keeps it: at x = inf it is inf
    (max(x, 0) - x y would be inf - inf)."""
    return _reduce((1 - y) * x + np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0), reduction)


binary_cross_entropy_with_logits = defop(
    "binary_cross_entropy_with_logits", _bce_logits, "BinaryCrossEntropyWithLogitsBackward0",
    vjp=(lambda g, out, x, y, reduction: g * (sigmoid(x) - y) * _scale(x.shape, reduction),
         lambda g, out, x, y, reduction: -g * x * _scale(x.shape, reduction)),
    uses=("x y", "x"), batch=batching.loss,
    # (rt's: the same sum in two new arrays, not one per term: 1M-element losses)
    template=_loss_template(lambda x, y: f"rt.bce_logits({x}, {y})"))


def _bce_logits_weighted(x, y, w, pw, reduction):
    """torch's weighted form: w ((1 - y) x + (1 + (pw - 1) y) softplus(-x)), softplus(-x)
    written as log1p(exp(-|x|)) + max(-x, 0) (stable for either sign of x)."""
    lw = (pw - 1) * y + 1
    return _reduce(w * ((1 - y) * x + lw * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))),
                   reduction)


def _softplus_neg(x):
    return logaddexp(zeros_like(x), -x)


def _weighted_loss_template(write):
    """A weighted loss's template: ``write(*inputs' names)``, reduced over the broadcast
    shape of every input (the weights' too)."""
    def text(e, a, lit):
        shape = np.broadcast_shapes(*(tuple(getattr(v, "shape", ())) for v in e.inputs))
        return reduce_text(write(*a), e, lit, e.params["reduction"], shape)
    return text


# weight and pos_weight take no gradient (torch refuses them requiring grad)
bce_logits_weighted = defop(
    "binary_cross_entropy_with_logits_weighted", _bce_logits_weighted,
    "BinaryCrossEntropyWithLogitsBackward0",
    vjp=(lambda g, out, x, y, w, pw, reduction:
         g * w * ((1 - y) - ((pw - 1) * y + 1) * sigmoid(-x)) * _scale(x.shape, reduction),
         lambda g, out, x, y, w, pw, reduction:
         g * w * ((pw - 1) * _softplus_neg(x) - x) * _scale(x.shape, reduction),
         None, None),
    uses=("x y w pw", "x w pw", "", ""), torch_args=("self", "target", "weight", "pos_weight"),
    batch=batching.loss,
    template=_weighted_loss_template(
        lambda x, y, w, pw: f"{w} * ((1 - {y}) * {x} + (({pw} - 1) * {y} + 1) * "
                            f"(np.log1p(np.exp(-np.abs({x}))) + np.maximum(-{x}, 0)))"))


def _bce_weighted(p, y, w, reduction):
    return _reduce(w * -(y * np.maximum(np.log(p), -100)
                         + (1 - y) * np.maximum(np.log1p(-p), -100)), reduction)


binary_cross_entropy_weighted = defop(
    "binary_cross_entropy_weighted", _bce_weighted, "BinaryCrossEntropyBackward0",
    vjp=(lambda g, out, p, y, w, reduction:
         g * w * (p - y) / clamp_min_eps(p * (1 - p)) * _scale(p.shape, reduction),
         None, None),
    uses=("p y w", "", ""), torch_args=("self", "target", "weight"), batch=batching.loss,
    template=_weighted_loss_template(
        lambda p, y, w: f"{w} * -({y} * np.maximum(np.log({p}), -100) + (1 - {y}) * "
                        f"np.maximum(np.log1p(-{p}), -100))"))


def _bce(p, y, reduction):
    return _reduce(-(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log1p(-p), -100)),
                   reduction)


binary_cross_entropy = defop(
    "binary_cross_entropy", _bce, "BinaryCrossEntropyBackward0",
    vjp=(lambda g, out, p, y, reduction:
         g * (p - y) / clamp_min_eps(p * (1 - p)) * _scale(p.shape, reduction),
         None),
    uses=("p y", ""), batch=batching.loss,
    template=_loss_template(lambda p, y: f"-({y} * np.maximum(np.log({p}), -100) + (1 - {y}) "
                                         f"* np.maximum(np.log1p(-{p}), -100))"))
clamp_min_eps = defop("clamp_min_eps", lambda v: np.maximum(v, 1e-12), "ClampMinBackward0",
                      template="np.maximum({0}, 1e-12)",
                      vjp=(lambda g, out, v: g * (v > 1e-12),), uses=("v",), batch=batching.as_is)

mse_loss = defop("mse_loss", lambda x, y, reduction: _reduce((x - y) ** 2, reduction),
                 "MseLossBackward0",
                 vjp=(lambda g, out, x, y, reduction: g * 2 * (x - y) * _scale(x.shape, reduction),
                      lambda g, out, x, y, reduction:
                      -g * 2 * (x - y) * _scale(x.shape, reduction)),
                 uses=("x y", "x y"), batch=batching.loss,
                 template=_loss_template(lambda x, y: f"({x} - {y}) ** 2"))


def _rows(target):
    return np.arange(target.shape[0])


def _onehot(target, num_classes, dtype):
    return (np.arange(num_classes) == np.expand_dims(target, 1)).astype(dtype)


def _onehot_batch(op, args, batched, num_classes, dtype):
    """one_hot of a batch of label vectors: of all the labels, one vector."""
    target = args[0]
    flat = op(reshape_op(target, shape=(-1,)), num_classes=num_classes, dtype=dtype)
    return reshape_op(flat, shape=tuple(target.shape) + (num_classes,))


one_hot = defop("one_hot", _onehot, fresh=True, batch=_onehot_batch,
                template="(np.arange({num_classes}) == np.expand_dims({0}, 1)).astype({dtype})")


def _put_rows(g, target, num_classes):
    out = np.zeros((target.shape[0], num_classes), dtype=np.result_type(g))
    out[_rows(target), target] = g
    return out


def _rows_batch(op, args, batched, **params):
    """take_rows / put_rows over a batch: every example's rows as one set of rows."""
    size = batching.size_of(args, batched)
    x, target = (a if b else batching.with_batch(a, size) for a, b in zip(args, batched))
    rows = size * target.shape[1]
    out = op(reshape_op(x, shape=(rows,) + tuple(x.shape[2:])),
             reshape_op(target, shape=(rows,)), **params)
    return reshape_op(out, shape=(size, target.shape[1]) + tuple(out.shape[1:]))


# x[i, target[i]] for every row, and its adjoint: scatter into zeros (each other's VJP)
take_rows = defop("take_rows", lambda x, target: x[_rows(target), target], "IndexBackward0",
                  vjp=(lambda g, out, x, target: put_rows(g, target, num_classes=x.shape[1]),
                       None),
                  uses=("target", ""), batch=_rows_batch,
                  template=lambda e, a, lit: f"{a[0]}[np.arange({e.inputs[1].shape[0]}), {a[1]}]")
put_rows = defop("put_rows", _put_rows, "IndexPutBackward0",
                 vjp=(lambda g, out, v, target, num_classes: take_rows(g, target), None),
                 uses=("target", ""), batch=_rows_batch,
                 template=lambda e, a, lit: f"rt.zeros_set(({e.inputs[1].shape[0]}, "
                                            f"{e.params['num_classes']}), (np.arange("
                                            f"{e.inputs[1].shape[0]}), {a[1]}), {a[0]})")


# ------------------------------------------------------------- public functions
def _softmax_dim(input, dim):
    if dim is None:  # torch's implicit choice
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return args.dim_or_all(dim, input.ndim)


@public("softmax", function=True, method=True, functional=True)
def softmax_fn(input, dim=None, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    return softmax(input, dim=_softmax_dim(input, dim))


@public("log_softmax", function=True, method=True, functional=True)
def log_softmax_fn(input, dim=None, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    return log_softmax(input, dim=_softmax_dim(input, dim))


@public("binary_cross_entropy_with_logits", functional=True)
def bce_with_logits_fn(input, target, weight=None, reduction="mean", pos_weight=None):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({args.size_str(target)}) must be the same as input size "
                         f"({args.size_str(input)})")
    reduction = args.reduction(reduction)
    if weight is None and pos_weight is None:
        return binary_cross_entropy_with_logits(input, target, reduction=reduction)
    # torch broadcasts pos_weight against target, then weight against the loss
    pw = _no_grad_arg("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    w = _no_grad_arg("binary_cross_entropy_with_logits", "weight", weight)
    if pos_weight is not None:
        args.broadcast_shape(pos_weight, target)
    if weight is not None:
        args.broadcast_shape(input, weight)
    return bce_logits_weighted(input, target, 1.0 if w is None else w,
                               1.0 if pw is None else pw, reduction=reduction)


@public("binary_cross_entropy", functional=True)
def bce_fn(input, target, weight=None, reduction="mean"):
    reduction = args.reduction(reduction)
    if weight is None:
        return binary_cross_entropy(input, target, reduction=reduction)
    w = _no_grad_arg("binary_cross_entropy", "weight", weight)
    if _mismatch(tuple(weight.shape), tuple(input.shape)):
        raise RuntimeError(f"Attempting to broadcast a dimension of length "
                           f"{_mismatch(weight.shape, input.shape)}! Mismatching argument at "
                           f"index 1 had {args.size_str(weight)}; but expected shape should be "
                           f"broadcastable to {list(input.shape)}")
    return binary_cross_entropy_weighted(input, target, w, reduction=reduction)


def _no_grad_arg(fn, name, value):
    """``value`` for an argument torch does not differentiate: refused if it requires grad."""
    if getattr(value, "requires_grad", False):
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{name}'. This input cannot have requires_grad True.")
    return value


def _mismatch(small, big):
    """'3 at -1': the first trailing dim of ``small`` that does not broadcast to ``big``."""
    for i in range(1, len(small) + 1):
        if small[-i] != 1 and (i > len(big) or small[-i] != big[-i]):
            return f"{small[-i]} at -{i}"
    return ""
