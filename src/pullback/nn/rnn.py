"""Elman recurrent layers: ``RNNCell`` and ``RNN`` (tanh or relu, ``num_layers``,
``batch_first``, ``bidirectional``), with torch's parameter names, shapes, checks and
initialisation (every weight from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))).

>>> import pullback as pb
>>> from pullback import nn
>>> rnn = nn.RNN(3, 5, num_layers=2, batch_first=True)
>>> out, h_n = rnn(pb.ones(4, 7, 3))        # batch 4, 7 time steps
>>> out.shape, h_n.shape
((4, 7, 5), (2, 4, 5))
>>> nn.RNNCell(3, 5)(pb.ones(4, 3)).shape
(4, 5)
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ..creation import empty, zeros
from ..ops.joining import stack
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

_ACTIVATIONS = {"tanh": F.tanh, "relu": F.relu}


def _stack(tensors: list) -> Tensor:
    """The tensors stacked along a new first dim: one stack op (StackBackward0)."""
    return stack(list(tensors))


def _uniform_all(module: Module, hidden_size: int) -> None:
    stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    for w in module.parameters():
        init.uniform_(w, -stdv, stdv)


class RNNCell(Module):
    """One step: ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.nonlinearity = nonlinearity
        self.weight_ih = Parameter(empty(hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(empty(hidden_size, hidden_size, dtype=dtype))
        for name in ("bias_ih", "bias_hh"):
            self.register_parameter(name, Parameter(empty(hidden_size, dtype=dtype))
                                    if bias else None)
        _uniform_all(self, hidden_size)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if input.ndim not in (1, 2):
            raise ValueError(f"RNNCell: Expected input to be 1D or 2D, got {input.ndim}D "
                             "instead")
        if hx is not None and hx.ndim not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.ndim}D "
                             "instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            h = zeros(x.shape[0], self.hidden_size, dtype=x.dtype)
        else:
            h = hx if batched else hx.unsqueeze(0)
        self._check(x, h)
        act = _ACTIVATIONS.get(self.nonlinearity)
        if act is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = act(F.linear(x, self.weight_ih, self.bias_ih)
                  + F.linear(h, self.weight_hh, self.bias_hh))
        return out if batched else out.squeeze(0)

    def _check(self, x: Tensor, h: Tensor) -> None:
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size}")
        if h.shape[0] != x.shape[0]:
            raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden0 batch "
                               f"size {h.shape[0]}")
        if h.shape[1] != self.hidden_size:
            raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {self.hidden_size}")

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNN(Module):
    """A multi-layer Elman RNN over a sequence: input ``(L, N, input_size)`` (``(N, L,
    ...)`` with ``batch_first``, ``(L, input_size)`` unbatched); returns ``(output,
    h_n)``, output ``(L, N, D * hidden_size)``, h_n ``(D * num_layers, N,
    hidden_size)`` (D = 2 if bidirectional)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _check_options(hidden_size, num_layers, nonlinearity, dropout)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.nonlinearity = nonlinearity
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        for layer in range(num_layers):
            size = input_size if layer == 0 else hidden_size * self._dirs
            for suffix in ("", "_reverse")[:self._dirs]:
                shapes = [("weight_ih", (hidden_size, size)),
                          ("weight_hh", (hidden_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (hidden_size,)), ("bias_hh", (hidden_size,))]
                for name, shape in shapes:
                    self.register_parameter(f"{name}_l{layer}{suffix}",
                                            Parameter(empty(*shape, dtype=dtype)))
        _uniform_all(self, hidden_size)

    @property
    def _dirs(self) -> int:
        return 2 if self.bidirectional else 1

    def _weights(self, layer: int, direction: int) -> tuple:
        suffix = "_reverse" if direction else ""
        p = self._parameters
        return tuple(p.get(f"{name}_l{layer}{suffix}")
                     for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple:
        x, h0, batched = self._prepare(input, hx)
        act = _ACTIVATIONS[self.nonlinearity]
        if self.dropout and self.training and self.num_layers > 1:
            raise TypeError("RNN: dropout between layers is not supported yet")
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self._dirs):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                xs = F.linear(x, w_ih, b_ih)  # every step's input projection at once
                h = h0[layer * self._dirs + d]
                seq: list = [None] * x.shape[0]
                for t in (reversed(range(len(seq))) if d else range(len(seq))):
                    h = act(xs[t] + F.linear(h, w_hh, b_hh))
                    seq[t] = h
                outs.append(_stack(seq))
                finals.append(h)
            x = outs[0] if len(outs) == 1 else \
                _stack(outs).permute(1, 2, 0, 3).reshape(*outs[0].shape[:2], -1)
        output, h_n = x, _stack(finals)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output, h_n = output.squeeze(1 - self.batch_first), h_n.squeeze(1)
        return output, h_n

    def _prepare(self, input: Tensor, hx: Tensor | None) -> tuple:
        """The input as (L, N, features), the initial hidden state (zeros if None), and
        whether the call was batched; torch's checks of both."""
        if input.ndim not in (2, 3):
            raise ValueError(f"RNN: Expected input to be 2D or 3D, got {input.ndim}D tensor "
                             "instead")
        batched = input.ndim == 3
        if batched and hx is not None and hx.ndim != 3:
            raise RuntimeError("For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.ndim}-D tensor")
        if not batched:
            if hx is not None and hx.ndim != 2:
                raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.ndim}-D tensor")
            input = input.unsqueeze(0 if self.batch_first else 1)
            hx = None if hx is None else hx.unsqueeze(1)
        x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        expected = (self.num_layers * self._dirs, x.shape[1], self.hidden_size)
        if hx is None:
            hx = zeros(*expected, dtype=x.dtype)
        elif tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected hidden size {expected}, got {list(hx.shape)}")
        return x, hx, batched

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


def _check_options(hidden_size: Any, num_layers: Any, nonlinearity: str, dropout: Any) -> None:
    if nonlinearity not in _ACTIVATIONS:
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                         "'relu'.")
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or \
            not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")


__all__ = ["RNN", "RNNCell"]
