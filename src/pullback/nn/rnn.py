"""Recurrent layers: ``RNN`` (Elman, tanh or relu), ``LSTM`` and ``GRU`` over sequences
(``num_layers``, ``batch_first``, ``bidirectional``, ``dropout`` between layers, LSTM's
``proj_size``) and their one-step cells ``RNNCell``, ``LSTMCell``, ``GRUCell``, with
torch's parameter names, shapes, gate order (LSTM: input, forget, cell, output; GRU:
reset, update, new), checks and initialisation (every weight from U(-1/sqrt(hidden_size),
1/sqrt(hidden_size))).

>>> import pullback as pb
>>> from pullback import nn
>>> rnn = nn.RNN(3, 5, num_layers=2, batch_first=True)
>>> out, h_n = rnn(pb.ones(4, 7, 3))        # batch 4, 7 time steps
>>> out.shape, h_n.shape
((4, 7, 5), (2, 4, 5))
>>> nn.RNNCell(3, 5)(pb.ones(4, 3)).shape
(4, 5)
>>> lstm = nn.LSTM(3, 5, bidirectional=True)
>>> out, (h_n, c_n) = lstm(pb.ones(7, 4, 3))
>>> out.shape, h_n.shape, c_n.shape
((7, 4, 10), (2, 4, 5), (2, 4, 5))
>>> h, c = nn.LSTMCell(3, 5)(pb.ones(4, 3))
>>> nn.GRU(3, 5)(pb.ones(7, 4, 3))[0].shape
(7, 4, 5)
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


def _gates(g: Tensor, count: int) -> list:
    """The ``count`` equal column blocks of ``g`` (N, count * H), in torch's gate order."""
    size = g.shape[-1] // count
    return [g[:, k * size:(k + 1) * size] for k in range(count)]


def _rnn_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None, act: Any) -> Tensor:
    """``act(gi + h @ W_hh.T + b_hh)``; ``gi`` is the input projection with its bias."""
    return act(gi + F.linear(h, w_hh, b_hh))


def _lstm_step(gi: Tensor, state: tuple, w_hh: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None = None) -> tuple:
    """One LSTM step: gates i, f, g, o; ``c' = f*c + i*g``, ``h' = o*tanh(c')`` (then
    ``h' @ W_hr.T`` with a projection). Returns ``(h', c')``."""
    h, c = state
    i, f, g, o = _gates(gi + F.linear(h, w_hh, b_hh), 4)
    c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
    h = F.sigmoid(o) * F.tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """One GRU step: ``r, z = sigmoid(...)``, ``n = tanh(i_n + r*(h @ W_hn.T + b_hn))``,
    ``h' = (1 - z)*n + z*h``."""
    i_r, i_z, i_n = _gates(gi, 3)
    h_r, h_z, h_n = _gates(F.linear(h, w_hh, b_hh), 3)
    r, z = F.sigmoid(i_r + h_r), F.sigmoid(i_z + h_z)
    n = F.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


class _CellBase(Module):
    """A cell's parameters (``gates * hidden_size`` rows each) and torch's checks."""

    _gate_count = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = self._gate_count * hidden_size
        self.weight_ih = Parameter(empty(rows, input_size, dtype=dtype))
        self.weight_hh = Parameter(empty(rows, hidden_size, dtype=dtype))
        for name in ("bias_ih", "bias_hh"):
            self.register_parameter(name, Parameter(empty(rows, dtype=dtype)) if bias else None)
        _uniform_all(self, hidden_size)

    def _batch(self, input: Tensor, hx: tuple, labels: tuple) -> tuple:
        """(input as 2-D, the states as 2-D (zeros for None), whether batched)."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D "
                             "instead")
        for h, label in zip(hx, labels):
            if h is not None and h.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.ndim}D "
                                 "instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        states = tuple(zeros(x.shape[0], self.hidden_size, dtype=x.dtype) if h is None else
                       h if batched else h.unsqueeze(0) for h in hx)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size}")
        for i, h in enumerate(states):
            if h.shape[0] != x.shape[0]:
                raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{i} "
                                   f"batch size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}"
                                   f", expected {self.hidden_size}")
        return x, states, batched

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        return s


class RNNCell(_CellBase):
    """One step: ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._batch(input, (hx,), ("hidden",))
        act = _ACTIVATIONS.get(self.nonlinearity)
        if act is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh, act)
        return out if batched else out.squeeze(0)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class LSTMCell(_CellBase):
    """One LSTM step: ``(h', c') = cell(x, (h, c))`` (zeros for a missing ``hx``)."""

    _gate_count = 4

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        hx = (None, None) if hx is None else tuple(hx)
        x, state, batched = self._batch(input, hx, ("hx[0]", "hx[1]"))
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), state, self.weight_hh,
                          self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(_CellBase):
    """One GRU step: ``h' = cell(x, h)`` (zeros for a missing ``hx``)."""

    _gate_count = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._batch(input, (hx,), ("hidden",))
        out = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh)
        return out if batched else out.squeeze(0)


class _RNNBase(Module):
    """A multi-layer recurrent layer over a sequence: input ``(L, N, input_size)``
    (``(N, L, ...)`` with ``batch_first``, ``(L, input_size)`` unbatched); output ``(L,
    N, D * out_size)`` (D = 2 if bidirectional; out_size is ``proj_size`` or
    ``hidden_size``) and the last states ``(D * num_layers, N, ...)``. ``dropout``
    zeroes each layer's output but the last's while training."""

    _gate_count = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, bias: bool,
                 batch_first: bool, dropout: float, bidirectional: bool, proj_size: int,
                 dtype: Any) -> None:
        super().__init__()
        _check_options(hidden_size, num_layers, dropout, proj_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        rows, out = self._gate_count * hidden_size, proj_size or hidden_size
        for layer in range(num_layers):
            size = input_size if layer == 0 else out * self._dirs
            for suffix in ("", "_reverse")[:self._dirs]:
                shapes = [("weight_ih", (rows, size)), ("weight_hh", (rows, out))]
                if bias:
                    shapes += [("bias_ih", (rows,)), ("bias_hh", (rows,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
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
                     for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))

    def _step(self, gi: Tensor, state: Any, weights: tuple) -> tuple:
        """One time step: (this step's output, the new state)."""
        raise NotImplementedError

    def _run(self, x: Tensor, states: tuple) -> tuple:
        """Every layer and direction over ``x`` (L, N, F) from the initial ``states``
        (each ``(D * num_layers, N, ...)``); the output and the final states, stacked."""
        finals: list = []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout)
            outs = []
            for d in range(self._dirs):
                weights = self._weights(layer, d)
                xs = F.linear(x, weights[0], weights[2])  # every step's input projection
                state = tuple(s[layer * self._dirs + d] for s in states)
                seq: list = [None] * x.shape[0]
                for t in (reversed(range(len(seq))) if d else range(len(seq))):
                    seq[t], state = self._step(xs[t], state, weights)
                outs.append(_stack(seq))
                finals.append(state)
            x = outs[0] if len(outs) == 1 else \
                _stack(outs).permute(1, 2, 0, 3).reshape(*outs[0].shape[:2], -1)
        return x, tuple(_stack(list(s)) for s in zip(*finals))

    def _sequence(self, input: Tensor) -> tuple:
        """The input as (L, N, features) and whether the call was batched."""
        if input.ndim not in (2, 3):
            tensor = " tensor" if isinstance(self, RNN) else ""  # (torch's texts differ)
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D{tensor} instead")
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        return x, batched

    def _state(self, h: Tensor | None, x: Tensor, size: int, label: str) -> Tensor:
        """One initial state, 3-D: zeros for None, else checked against its shape."""
        expected = (self.num_layers * self._dirs, x.shape[1], size)
        if h is None:
            return zeros(*expected, dtype=x.dtype)
        if tuple(h.shape) != expected:
            raise RuntimeError(f"Expected hidden{label} size {expected}, got {list(h.shape)}")
        return h

    def _output(self, output: Tensor, batched: bool) -> Tensor:
        if self.batch_first:
            output = output.transpose(0, 1)
        return output if batched else output.squeeze(1 - self.batch_first)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class _SingleState(_RNNBase):
    """RNN and GRU: one state tensor ``h``; ``forward`` returns ``(output, h_n)``."""

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple:
        x, batched = self._sequence(input)
        if hx is not None and hx.ndim != 2 + batched:
            raise RuntimeError(f"For {'batched 3' if batched else 'unbatched 2'}-D input, hx "
                               f"should also be {2 + batched}-D but got {hx.ndim}-D tensor")
        if hx is not None and not batched:
            hx = hx.unsqueeze(1)
        h0 = self._state(hx, x, self.hidden_size, "")
        output, (h_n,) = self._run(x, (h0,))
        return self._output(output, batched), h_n if batched else h_n.squeeze(1)


class RNN(_SingleState):
    """A multi-layer Elman RNN: ``h_t = act(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T +
    b_hh)`` with act tanh or relu; returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        if nonlinearity not in _ACTIVATIONS:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, dtype)
        self.nonlinearity = nonlinearity

    def _step(self, gi: Tensor, state: tuple, weights: tuple) -> tuple:
        h = _rnn_step(gi, state[0], weights[1], weights[3], _ACTIVATIONS[self.nonlinearity])
        return h, (h,)


class GRU(_SingleState):
    """A multi-layer gated recurrent unit (gates reset, update, new, as torch orders
    them); returns ``(output, h_n)``."""

    _gate_count = 3

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, dtype)

    def _step(self, gi: Tensor, state: tuple, weights: tuple) -> tuple:
        h = _gru_step(gi, state[0], weights[1], weights[3])
        return h, (h,)


class LSTM(_RNNBase):
    """A multi-layer long short-term memory (gates input, forget, cell, output, as torch
    orders them; ``proj_size`` > 0 projects each ``h`` to that size). Takes ``(input,
    (h_0, c_0))`` and returns ``(output, (h_n, c_n))``."""

    _gate_count = 4

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        x, batched = self._sequence(input)
        if hx is not None:
            hx = (hx[0], hx[1])
            if any(h.ndim != 2 + batched for h in hx):
                raise RuntimeError(
                    f"For {'batched 3' if batched else 'unbatched 2'}-D input, hx and cx "
                    f"should also be {2 + batched}-D but got ({hx[0].ndim}-D, {hx[1].ndim}-D)"
                    " tensors")
            if not batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        h0, c0 = (None, None) if hx is None else hx
        states = (self._state(h0, x, self.proj_size or self.hidden_size, "[0]"),
                  self._state(c0, x, self.hidden_size, "[1]"))
        output, (h_n, c_n) = self._run(x, states)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._output(output, batched), (h_n, c_n)

    def _step(self, gi: Tensor, state: tuple, weights: tuple) -> tuple:
        h, c = _lstm_step(gi, state, weights[1], weights[3], weights[4])
        return h, (h, c)


def _check_options(hidden_size: Any, num_layers: Any, dropout: Any, proj_size: int) -> None:
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or \
            not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=4)
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable "
                         "projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]
