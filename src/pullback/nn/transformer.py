"""torch's transformer: ``TransformerEncoderLayer`` (self-attention, then a feed-forward
block), ``TransformerDecoderLayer`` (self-attention, attention over the encoder's output
``memory``, feed-forward), the stacks ``TransformerEncoder`` and ``TransformerDecoder``
(copies of one layer, an optional final norm) and ``Transformer`` (both stacks), with
torch's arguments, defaults, parameter names (``self_attn.in_proj_weight``,
``linear1.weight``, ``norm1.weight``...), masks and checks, over ``MultiheadAttention``.

Each residual block is ``x + block(x)`` then a ``LayerNorm`` (``norm_first=False``), or
``x + block(norm(x))`` (``norm_first=True``). torch's inference fast path (nested tensors,
fused kernels) has no counterpart: its results are the same up to rounding. An
``is_causal`` hint only asserts that the mask given is causal; the mask is what is
applied.

>>> import pullback as pb
>>> from pullback import nn
>>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
...                                    batch_first=True)
>>> encoder = nn.TransformerEncoder(layer, num_layers=2)
>>> src = pb.randn(3, 5, 8)                      # batch 3, 5 positions, 8 features
>>> mask = nn.Transformer.generate_square_subsequent_mask(5)
>>> encoder(src, mask=mask).shape
(3, 5, 8)
>>> model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
...                        num_decoder_layers=1, dim_feedforward=16)
>>> model(pb.randn(5, 3, 8), pb.randn(4, 3, 8)).shape
(4, 3, 8)
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..creation import full
from ..tensor import Tensor
from . import functional as F
from . import init
from .activation import GELU, ReLU
from .attention import MultiheadAttention, canonical_mask
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _activation(activation: str | Callable) -> Callable:
    if not isinstance(activation, str):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class _Layer(Module):
    """What both layers share: attention, feed-forward block, norms and dropouts."""

    def _build(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
               activation: str | Callable, layer_norm_eps: float, batch_first: bool,
               norm_first: bool, bias: bool, dtype: Any, blocks: int) -> None:
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        if blocks == 3:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                     bias=bias, batch_first=batch_first,
                                                     dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        for k in range(1, blocks + 1):
            setattr(self, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                dtype=dtype))
        for k in range(1, blocks + 1):
            setattr(self, f"dropout{k}", Dropout(dropout))
        self.activation = _activation(activation)

    def _attend(self, attn: MultiheadAttention, x: Tensor, mem: Tensor, mask: Any,
                key_padding_mask: Any, is_causal: bool) -> Tensor:
        return attn(x, mem, mem, attn_mask=mask, key_padding_mask=key_padding_mask,
                    need_weights=False, is_causal=is_causal)[0]

    def _sa_block(self, x: Tensor, attn_mask: Any, key_padding_mask: Any,
                  is_causal: bool = False) -> Tensor:
        return self.dropout1(self._attend(self.self_attn, x, x, attn_mask,
                                          key_padding_mask, is_causal))

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class TransformerEncoderLayer(_Layer):
    """Self-attention and a feed-forward block (``linear1``, activation, ``linear2``),
    each with dropout, a residual connection and a ``LayerNorm``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, dtype, blocks=2)
        act = self.activation
        self.activation_relu_or_gelu = (1 if act is F.relu or isinstance(act, ReLU) else
                                        2 if act is F.gelu or isinstance(act, GELU) else 0)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                              src.dtype, src_mask, "src_mask")
        src_mask = canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self._feed_forward(x))


class TransformerDecoderLayer(_Layer):
    """Self-attention over the target, attention (``multihead_attn``) over the encoder's
    output, and a feed-forward block; each with dropout, a residual and a ``LayerNorm``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, dtype, blocks=3)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        sa = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        mha = (memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), memory, *mha)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, *sa))
        x = self.norm2(x + self._mha_block(x, memory, *mha))
        return self.norm3(x + self._ff_block(x))

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Any, key_padding_mask: Any,
                   is_causal: bool = False) -> Tensor:
        return self.dropout2(self._attend(self.multihead_attn, x, mem, attn_mask,
                                          key_padding_mask, is_causal))

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self._feed_forward(x))


def _nested_ok(layer: Module) -> bool:
    """torch's conditions for running an encoder of such layers on nested tensors."""
    if not isinstance(layer, TransformerEncoderLayer):
        return False
    attn = layer.self_attn
    return (not layer.norm_first and attn.batch_first and attn._qkv_same_embed_dim
            and attn.in_proj_bias is not None and bool(layer.activation_relu_or_gelu)
            and layer.norm1.eps == layer.norm2.eps and attn.num_heads % 2 == 0)


def _left_aligned(padded: np.ndarray) -> bool:
    """Every sequence's padding (True) is at its end."""
    return bool((padded[:, 1:] >= padded[:, :-1]).all())


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (``layers.0``, ``layers.1``...), then
    ``norm`` if given.

    Where torch would run on nested tensors (``use_nested_tensor``: inference with no
    gradient, eval mode, batch-first layers without ``norm_first``, a key padding mask
    with the padding at the ends, no ``mask``), the padded positions come out as zeros
    before the final norm, as torch's do; the other positions are the same either way.
    (pullback does not warn, as torch does, when that path is not available.)"""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor and _nested_ok(encoder_layer)
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                              src.dtype, mask, "mask")
        mask = canonical_mask(mask, "mask", src.dtype)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal is True,
                           src_key_padding_mask=src_key_padding_mask)
        if self._as_nested(src, mask, src_key_padding_mask):
            output = output.masked_fill((src_key_padding_mask != 0).unsqueeze(-1), 0.0)
        return output if self.norm is None else self.norm(output)

    def _as_nested(self, src: Tensor, mask: Any, key_padding_mask: Any) -> bool:
        """Whether torch would take its nested-tensor path (see the class)."""
        first = self.layers[0]
        if (not self.use_nested_tensor or first.training or src.ndim != 3
                or key_padding_mask is None or mask is not None):
            return False
        attn = first.self_attn
        weights = [src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                   attn.out_proj.bias, first.norm1.weight, first.norm1.bias,
                   first.norm2.weight, first.norm2.bias, first.linear1.weight,
                   first.linear1.bias, first.linear2.weight, first.linear2.bias]
        if is_grad_enabled() and any(t is not None and t.requires_grad for t in weights):
            return False
        return not self.mask_check or _left_aligned(
            (key_padding_mask != 0).detach().numpy())


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer``, then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal is True,
                           memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """An encoder (``encoder``: ``num_encoder_layers`` layers and a final ``LayerNorm``)
    and a decoder (``decoder``, the same) or the ``custom_encoder``/``custom_decoder``
    given; every matrix initialised by ``xavier_uniform_``."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = F.relu,
                 custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*args, dtype=dtype), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*args, dtype=dtype), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        if src.ndim == 3 and src.shape[int(not self.batch_first)] != \
                tgt.shape[int(not self.batch_first)]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The causal mask: -inf above the diagonal (a later position), 0 elsewhere.

        >>> Transformer.generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
        """
        return full((sz, sz), float("-inf"), dtype=dtype).triu(1)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)


__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "TransformerEncoder", "TransformerEncoderLayer"]
