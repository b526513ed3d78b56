"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``,
``ConvTranspose2d``, with torch's default initialisation (``kaiming_uniform_`` with
``a=sqrt(5)``, the bias uniform in +-1/sqrt(fan_in)) and torch's padding modes.

>>> import pullback as pb
>>> from pullback import nn
>>> conv = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
>>> conv
Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), padding_mode=reflect)
>>> conv(pb.ones(2, 3, 5, 5)).shape
(2, 8, 5, 5)
"""

from __future__ import annotations

import math
from typing import Any

from ..creation import empty
from ..ops.convolution import ntuple
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What every convolution layer shares: its arguments, parameters, init and repr."""

    _dims = 0
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, groups: int, bias: bool, padding_mode: str,
                 output_padding: Any = 0, dtype: Any = None) -> None:
        super().__init__()
        d = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _MODES:
            raise ValueError("padding_mode must be one of {'zeros', 'replicate', 'circular', "
                             f"'reflect'}}, but got padding_mode='{padding_mode}'")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = ntuple(kernel_size, d, "kernel_size")
        self.stride, self.dilation = ntuple(stride, d, "stride"), ntuple(dilation, d, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = ntuple(padding, d, "padding")
        self.output_padding = ntuple(output_padding, d, "output_padding")
        self.transposed = self._transposed
        self.groups, self.padding_mode = groups, padding_mode
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(empty(*shape, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _mode_pads(self) -> tuple:
        """F.pad's pads (last dim first) for a padding mode other than zeros."""
        if self.padding == "valid":
            return (0,) * (2 * self._dims)
        if self.padding == "same":
            pairs = []
            for k, dl in zip(self.kernel_size, self.dilation):
                total = dl * (k - 1)
                pairs.append((total // 2, total - total // 2))
        else:
            pairs = [(p, p) for p in self.padding]
        return tuple(v for pair in reversed(pairs) for v in pair)

    def _conv(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = getattr(F, f"conv{self._dims}d")
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._mode_pads(), mode=self.padding_mode)
            return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        d = self._dims
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * d:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * d:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * d:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-d convolution over ``(N, C, L)`` (or ``(C, L)``); weight ``(out, in/groups, k)``."""

    _dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, self.weight, self.bias)


class Conv2d(Conv1d):
    """2-d convolution over ``(N, C, H, W)`` (or ``(C, H, W)``)."""

    _dims = 2


class Conv3d(Conv1d):
    """3-d convolution over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``)."""

    _dims = 3


class ConvTranspose1d(_ConvNd):
    """The adjoint of ``Conv1d`` (a fractionally strided convolution); weight
    ``(in, out/groups, k)``. ``forward(input, output_size=None)`` picks the
    output_padding that gives ``output_size``, as torch does."""

    _dims = 1
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                 bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, dtype=dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple:
        if output_size is None:
            return self.output_padding
        d = self._dims
        size = tuple(output_size)[-d:]
        extra = []
        for k in range(d):
            least = ((input.shape[input.ndim - d + k] - 1) * self.stride[k]
                     - 2 * self.padding[k] + self.dilation[k] * (self.kernel_size[k] - 1) + 1)
            if not least <= size[k] < least + self.stride[k]:
                raise ValueError(f"requested an output size of {list(size)}, but valid sizes "
                                 f"range from {least} to {least + self.stride[k] - 1} (for an "
                                 f"input of {list(input.shape[2:])})")
            extra.append(size[k] - least)
        return tuple(extra)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        fn = getattr(F, f"conv_transpose{self._dims}d")
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose2d(ConvTranspose1d):
    """The adjoint of ``Conv2d``."""

    _dims = 2
