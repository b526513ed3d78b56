"""torch.nn.functional.scaled_dot_product_attention, composed as torch documents it:
softmax(q k^T * scale + bias) v, where the bias is -inf outside a boolean mask (or
``is_causal``'s lower triangle) or a float mask added as it is; ``dropout_p`` drops
attention weights (pullback's generator, a fresh draw per call in compiled code).

A query row that every key is masked from gets zeros, as torch's CPU kernels give (the
formula alone gives NaN there), and no NaN gradient.

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> q = pb.tensor([[[1., 0.], [0., 1.]]])
>>> F.scaled_dot_product_attention(q, q, q, is_causal=True)
tensor([[[1.0000, 0.0000],
         [0.3302, 0.6698]]])
"""

from __future__ import annotations

import math

import numpy as np

from .dropout import dropout
from .elementwise import logical_not, where
from .indexing import repeat_interleave
from .linalg import matmul
from .neural import softmax_fn
from .reductions import amax
from .table import args
from .table.registry import public


def attention_bias(attn_mask, is_causal, length, source, dtype):
    """The additive bias of a boolean or float mask (None: no bias)."""
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                               "be set when is_causal=True")
        attn_mask = np.tril(np.ones((length, source), bool))
    if attn_mask is None:
        return None
    if args.np_dtype(attn_mask) == np.bool_:
        return where(logical_not(attn_mask), -np.inf, np.zeros((), dtype))
    return attn_mask


def attend(query, key, value, bias, dropout_p, scale):
    """softmax(q k^T scale + bias) v and the weights; rows masked everywhere are zeros."""
    scores = matmul(query, key.transpose(-2, -1)) * scale
    dead = None
    if bias is not None:
        dead = amax(bias, -1, True) == -np.inf
        scores = scores + where(dead, 0, bias)
    weights = softmax_fn(scores, -1)
    if dead is not None:
        weights = where(dead, 0, weights)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p, True)
    return matmul(weights, value), weights


@public("scaled_dot_product_attention", functional=True)
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value need at least "
                           "2 dimensions")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected query and key to have the same last dimension, got "
                           f"{query.shape[-1]} and {key.shape[-1]}")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        key = repeat_interleave(key, query.shape[-3] // key.shape[-3], -3)
        value = repeat_interleave(value, query.shape[-3] // value.shape[-3], -3)
    if scale is None:
        scale = 1 / math.sqrt(query.shape[-1])
    bias = attention_bias(attn_mask, is_causal, query.shape[-2], key.shape[-2],
                          args.np_dtype(query))
    return attend(query, key, value, bias, dropout_p, scale)[0]
