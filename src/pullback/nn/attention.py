"""``MultiheadAttention``: torch's layer (one packed ``in_proj_weight``, or separate
``q/k/v_proj_weight`` when ``kdim``/``vdim`` differ; ``out_proj``; ``batch_first``;
``key_padding_mask`` and ``attn_mask`` where True means "may not attend", or float masks
added to the scores; ``need_weights`` with the weights averaged over heads or not;
dropout on the weights in training; ``add_bias_kv``, a learnt key and value appended to
every sequence, and ``add_zero_attn``, a zero key and value), over the attention of
``F.scaled_dot_product_attention``.

>>> import pullback as pb
>>> from pullback import nn
>>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
>>> x = pb.randn(3, 5, 8)
>>> out, weights = mha(x, x, x)
>>> out.shape, weights.shape
((3, 5, 8), (3, 5, 5))
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..creation import empty, zeros
from ..ops.attention import attend
from ..ops.elementwise import where
from ..ops.joining import cat
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import Linear
from .module import Module
from .parameter import Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for the output projection of MultiheadAttention (a Linear)."""


def _float_mask(mask: Any, dtype: Any) -> Any:
    """A boolean mask (True: may not attend) as -inf / 0; a float mask as it is."""
    if mask is None or mask.dtype.name != "bool":
        return mask
    return where(mask, -np.inf, np.zeros((), dtype.np if hasattr(dtype, "np") else dtype))


def canonical_mask(mask: Any, name: str, dtype: Any, other: Any = None,
                   other_name: str = "") -> Any:
    """torch's check of an attention mask (bool or floating; the same type as ``other``,
    the other mask of the call, or a warning) and the mask as an additive float mask.

    >>> import pullback as pb
    >>> canonical_mask(pb.tensor([True, False]), "key_padding_mask", pb.float32)
    tensor([-inf, 0.])
    """
    if mask is None:
        return None
    if mask.dtype.name != "bool" and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and mask.dtype != other.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=3)
    return _float_mask(mask, dtype)


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim // num_heads`` features each."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, dtype=dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(zeros(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(empty(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projections(self, query: Tensor, key: Tensor, value: Tensor) -> tuple:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def _heads(self, x: Tensor, length: int, batch: int) -> Tensor:
        """(L, N, E) -> (N, H, L, head_dim)."""
        return x.reshape(length, batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def _bias(self, key_padding_mask: Any, attn_mask: Any, batch: int, length: int,
              source: int, dtype: Any) -> Any:
        """The additive bias of both masks, shaped (N, H, L, S) or broadcastable to it."""
        bias = None
        if attn_mask is not None:
            m = _float_mask(attn_mask, dtype)
            if m.ndim == 3:  # (N * H, L, S)
                m = m.reshape(batch, self.num_heads, length, source)
            bias = m
        if key_padding_mask is not None:
            k = _float_mask(key_padding_mask, dtype).reshape(batch, 1, 1, source)
            bias = k if bias is None else bias + k
        return bias

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple:
        batched = query.ndim == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use "
                               "the Transformer module method `generate_square_subsequent_mask` "
                               "to create this mask.")
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", query.dtype,
                                          attn_mask, "attn_mask")
        attn_mask = canonical_mask(attn_mask, "attn_mask", query.dtype)
        length, batch, _ = query.shape
        source = key.shape[0]
        q, k, v = self._projections(query, key, value)
        bias = self._bias(key_padding_mask, attn_mask, batch, length, source, query.dtype)
        if self.bias_k is not None:  # one more key and value, that every query may see
            k = cat([k, self.bias_k.expand(1, batch, self.embed_dim)])
            v = cat([v, self.bias_v.expand(1, batch, self.embed_dim)])
            bias = None if bias is None else F.pad(bias, (0, 1))
        q, k, v = (self._heads(t, t.shape[0], batch) for t in (q, k, v))
        if self.add_zero_attn:
            k, v = (cat([t, zeros(batch, self.num_heads, 1, self.head_dim, dtype=t.dtype)], 2)
                    for t in (k, v))
            bias = None if bias is None else F.pad(bias, (0, 1))
        out, weights = attend(q, k, v, bias, self.dropout if self.training else 0.0,
                              1 / math.sqrt(self.head_dim))
        out = out.permute(2, 0, 1, 3).reshape(length, batch, self.embed_dim)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)
        return out, (weights if batched else weights.squeeze(0))


__all__ = ["MultiheadAttention"]
