"""torch.nn.functional's lookups: embedding (``EmbeddingBackward0``; the ``padding_idx``
row gets no gradient; ``max_norm`` renormalizes the rows looked up, in place, as torch)
and embedding_bag (sums, means or maxima of bags of rows, ``EmbeddingBagBackward0``;
``per_sample_weights`` scale the rows of a sum).

The gradient of a lookup adds rows back into a table of zeros (``embedding_backward``)
and the gradient of that is the lookup again, so each is the other's rule and both
differentiate again.

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> w = pb.tensor([[0., 1.], [2., 3.], [4., 5.]], requires_grad=True)
>>> F.embedding(pb.tensor([[2, 0]]), w)
tensor([[[4., 5.],
         [0., 1.]]], grad_fn=<EmbeddingBackward0>)
>>> F.embedding_bag(pb.tensor([0, 1, 2]), w, pb.tensor([0, 1]), mode="mean")
tensor([[0., 1.],
        [3., 4.]], grad_fn=<EmbeddingBagBackward0>)
"""

from __future__ import annotations

import numpy as np

from .elementwise import eq, where
from .shape import unsqueeze_op
from .table import args, batching
from .table.registry import defop, public, rt_call


def _rows_of(g, n):
    return np.reshape(g, (n, -1))


def _embedding_backward(g, indices, num_weights, padding_idx):
    d = g.shape[-1] if g.ndim else 1
    out = np.zeros((num_weights, d), g.dtype)
    np.add.at(out, indices.reshape(-1), _rows_of(g, indices.size))
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def _lookup_rule(g, out, w, indices, padding_idx):
    return embedding_backward(g, indices, num_weights=w.shape[0], padding_idx=padding_idx)


embedding_op = defop(
    "embedding", lambda w, indices, padding_idx: np.take(w, indices, axis=0),
    "EmbeddingBackward0", torch_args=("weight", "indices"), uses=("indices", ""), fresh=True,
    template="np.take({0}, {1}, axis=0)",
    vjp=(_lookup_rule, None), batch=batching.indexed_by)


def _unlookup_rule(g, out, grad, indices, num_weights, padding_idx):
    rows = embedding_op(g, indices, padding_idx=padding_idx)
    if padding_idx is None:
        return rows
    return where(unsqueeze_op(eq(indices, padding_idx), dim=-1), 0, rows)


embedding_backward = defop(
    "embedding_backward", _embedding_backward, "EmbeddingDenseBackward0",
    torch_args=("grad_output", "indices"), uses=("indices", ""), fresh=True,
    template=rt_call("embedding_backward", "num_weights", "padding_idx"),
    vjp=(_unlookup_rule, None))


def _renorm_scale(w, indices, max_norm, norm_type):
    """Per row: max_norm / (norm + 1e-7) for the rows looked up whose norm is above
    max_norm, else 1 (torch's embedding_renorm_)."""
    scale = np.ones((w.shape[0], 1), w.dtype)
    rows = np.unique(indices)
    norms = np.linalg.norm(w[rows], ord=norm_type, axis=1)
    big = norms > max_norm
    scale[rows[big], 0] = max_norm / (norms[big] + 1e-7)
    return scale


renorm_scale = defop("renorm_scale", _renorm_scale, fresh=True,
                     template=rt_call("renorm_scale", "max_norm", "norm_type"))


# ---------------------------------------------------------------- embedding_bag
def _bags(indices, offsets, padding_idx, include_last_offset):
    """The looked-up rows, each one's bag, and the number of bags."""
    if indices.ndim == 2:
        n, length = indices.shape
        idx, bag, nbags = indices.reshape(-1), np.repeat(np.arange(n), length), n
    else:
        idx, bag, nbags = _offset_bags(indices, offsets, include_last_offset)
    if padding_idx is not None:
        idx, bag = idx[idx != padding_idx], bag[idx != padding_idx]
    return idx, bag, nbags


def _offset_bags(indices, offsets, include_last_offset):
    offsets = np.asarray(offsets)
    nbags = offsets.size - 1 if include_last_offset else offsets.size
    end = offsets[-1] if include_last_offset else indices.size
    pos = np.arange(indices.size)
    bag = np.searchsorted(offsets[1:nbags], pos, "right")  # offsets[b] <= pos < offsets[b+1]
    keep = pos < end
    return indices[keep], bag[keep], nbags


def _argmax_rows(w, idx, bag, nbags):
    """For each bag and column, the looked-up row holding the maximum (the first one)."""
    at = np.full((nbags, w.shape[1]), -1, np.int64)
    for b in range(nbags):
        rows = idx[bag == b]
        if rows.size:
            at[b] = rows[np.argmax(w[rows], axis=0)]
    return at


def _embedding_bag(w, indices, offsets, mode, padding_idx, include_last_offset):
    idx, bag, nbags = _bags(indices, offsets, padding_idx, include_last_offset)
    out = np.zeros((nbags, w.shape[1]), w.dtype)
    if mode == "max":
        at = _argmax_rows(w, idx, bag, nbags)
        hit = at >= 0
        out[hit] = w[at[hit], np.nonzero(hit)[1]]
        return out
    np.add.at(out, bag, w[idx])
    if mode == "mean":
        counts = np.bincount(bag, minlength=nbags)
        out /= np.maximum(counts, 1)[:, None].astype(w.dtype)
    return out


def _embedding_bag_backward(g, w, indices, offsets, mode, padding_idx, include_last_offset):
    idx, bag, nbags = _bags(indices, offsets, padding_idx, include_last_offset)
    out = np.zeros(w.shape, g.dtype)
    if mode == "max":
        at = _argmax_rows(w, idx, bag, nbags)
        b, col = np.nonzero(at >= 0)
        np.add.at(out, (at[b, col], col), g[b, col])
        return out
    rows = g[bag]
    if mode == "mean":
        counts = np.bincount(bag, minlength=nbags)
        rows = rows / np.maximum(counts, 1)[bag, None].astype(g.dtype)
    np.add.at(out, idx, rows)
    return out


def _bag_rule(g, out, w, indices, offsets, **p):
    return embedding_bag_backward(g, w, indices, offsets, **p)


def _max_gather(gw, w, indices, offsets, mode, padding_idx, include_last_offset):
    """The transpose of max-mode's backward: each bag's entries at its maxima."""
    idx, bag, nbags = _bags(indices, offsets, padding_idx, include_last_offset)
    at = _argmax_rows(w, idx, bag, nbags)
    out = np.zeros((nbags, w.shape[1]), gw.dtype)
    hit = at >= 0
    out[hit] = gw[at[hit], np.nonzero(hit)[1]]
    return out


def _bag_backward_rule(g, out, grad, w, indices, offsets, mode, **p):
    if mode == "max":
        return embedding_bag_max_gather(g, w, indices, offsets, mode=mode, **p)
    return embedding_bag_op(g, indices, offsets, mode=mode, **p)


_BAG = {"torch_args": ("weight", "indices", "offsets"), "fresh": True}
_BAG_PARAMS = ("mode", "padding_idx", "include_last_offset")
embedding_bag_op = defop("embedding_bag", _embedding_bag, "EmbeddingBagBackward0",
                         template=rt_call("embedding_bag", *_BAG_PARAMS),
                         uses=("w indices offsets", "", ""), vjp=(_bag_rule, None, None),
                         **_BAG)
embedding_bag_backward = defop(
    "embedding_bag_backward", _embedding_bag_backward, "EmbeddingBagDenseBackward0",
    template=rt_call("embedding_bag_backward", *_BAG_PARAMS),
    uses=("w indices offsets", "", "", ""), vjp=(_bag_backward_rule, None, None, None),
    torch_args=("grad", "weight", "indices", "offsets"), fresh=True)
embedding_bag_max_gather = defop(
    "embedding_bag_max_gather", _max_gather, "IndexBackward0",
    template=rt_call("embedding_bag_max_gather", *_BAG_PARAMS),
    uses=("w indices offsets", "", "", ""),
    vjp=(lambda g, out, gw, w, indices, offsets, **p:
         embedding_bag_backward(g, w, indices, offsets, **p), None, None, None),
    torch_args=("grad", "weight", "indices", "offsets"), fresh=True)


# ------------------------------------------------------------- public functions
def _padding(padding_idx, num_weights):
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= num_weights or padding_idx < -num_weights:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_weights if padding_idx < 0 else padding_idx


def _integer(indices, fn, name="indices"):
    if args.np_dtype(indices).kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"{args.dtype_name(indices)} instead (while checking arguments "
                           f"for {fn})")


@public("embedding", functional=True)
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if scale_grad_by_freq or sparse:
        raise TypeError("embedding: scale_grad_by_freq and sparse are not supported")
    _integer(input, "embedding")
    padding_idx = _padding(padding_idx, weight.shape[0])
    if max_norm is not None:
        weight.data.mul_(renorm_scale(weight.data, input, max_norm=max_norm,
                                      norm_type=norm_type))
    return embedding_op(weight, input, padding_idx=padding_idx)


@public("embedding_bag", functional=True)
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    if scale_grad_by_freq or sparse:
        raise TypeError("embedding_bag: scale_grad_by_freq and sparse are not supported")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    _integer(input, "embedding_bag")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets).__name__}")
        offsets = np.arange(0, int(np.prod(input.shape)), max(input.shape[1], 1))
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    padding_idx = _padding(padding_idx, weight.shape[0])
    if max_norm is not None:
        weight.data.mul_(renorm_scale(weight.data, input, max_norm=max_norm,
                                      norm_type=norm_type))
    if per_sample_weights is not None:
        return _weighted_bags(input, weight, offsets, per_sample_weights, padding_idx,
                              include_last_offset)
    return embedding_bag_op(weight, input, offsets, mode=mode, padding_idx=padding_idx,
                            include_last_offset=include_last_offset)


def _weighted_bags(input, weight, offsets, per_sample_weights, padding_idx,
                   include_last_offset):
    """Sums of rows scaled by per_sample_weights: the scaled rows (padding rows zeroed)
    summed bag by bag by embedding_bag over a table of them, looked up in order."""
    if tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights "
                         f"({args.size_str(per_sample_weights)}) is not None, then it must have "
                         f"the same shape as the input ({args.size_str(input)})")
    flat = input.reshape(-1)
    rows = embedding_op(weight, flat, padding_idx=None) * per_sample_weights.reshape(-1, 1)
    if padding_idx is not None:
        rows = where(unsqueeze_op(eq(flat, padding_idx), dim=-1), 0, rows)
    order = np.arange(int(np.prod(input.shape)))
    return embedding_bag_op(rows, order, offsets, mode="sum", padding_idx=None,
                            include_last_offset=include_last_offset and input.ndim == 1)


# ---------------------------------------------------------------------- one_hot
def _class_one_hot(tensor, num_classes):
    if tensor.size and tensor.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if tensor.size and tensor.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor[..., None] == np.arange(num_classes)).astype(np.int64)


# (the checks of the values run where the values are: eagerly, or in generated code)
class_one_hot = defop("class_one_hot", _class_one_hot, fresh=True, torch_args=("self",),
                      batch=batching.as_is, template=rt_call("class_one_hot", "num_classes"))


@public("one_hot", functional=True)
def one_hot(tensor, num_classes=-1):
    """torch's F.one_hot: int64 rows of ``num_classes`` (-1: the largest class + 1)."""
    if args.np_dtype(tensor) != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if 0 in tensor.shape:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    return class_one_hot(tensor, num_classes=num_classes)
