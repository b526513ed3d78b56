"""Affine layers and reshaping layers: ``Identity``, ``Linear``, ``Bilinear``,
``Flatten``, ``Unflatten``, with torch's default initialisation.

>>> import pullback as pb
>>> from pullback import nn
>>> layer = nn.Linear(4, 5)
>>> layer(pb.ones(2, 4)).shape
(2, 5)
>>> layer(pb.ones(2, 3))
Traceback (most recent call last):
  ...
RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)
>>> nn.Flatten()(pb.ones(2, 3, 4)).shape, nn.Unflatten(1, (3, 4))(pb.ones(2, 12)).shape
((2, 12), (2, 3, 4))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import devices
from ..creation import empty
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def check_size(fn: str, shape: tuple) -> None:
    """torch's argument parser's refusal of a size that is not ints (``nn.Linear("a", 3)``)."""
    for i, n in enumerate(shape):
        if isinstance(n, (int, np.integer)):
            continue
        kind = type(n).__name__
        if i == 0:
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but "
                            f"found element of type {kind} at pos 0")
        raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {i + 1} "
                        f"with error \"type must be tuple of ints,but got {kind}\"")


def _weight_and_bias(module: Module, shape: tuple, bias: bool, dtype: Any) -> None:
    """``module.weight`` of ``shape`` and ``module.bias`` (its first dim; or None), then
    the module's ``reset_parameters``."""
    check_size("empty", shape)
    module.weight = Parameter(empty(*shape, dtype=dtype))
    if bias:
        module.bias = Parameter(empty(shape[0], dtype=dtype))
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


class Identity(Module):
    """Returns its input (any arguments to the constructor are ignored, as in torch)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out_features, in_features)``, both drawn
    from U(-1/sqrt(in_features), 1/sqrt(in_features)) as torch draws them."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        devices.check(device)
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), bias, dtype)

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b`` per output feature; weight ``(out, in1, in2)``."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), bias, dtype)

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        if input1.ndim != input2.ndim:
            raise RuntimeError("bilinear(): input dimensions do not match: got "
                               f"{input1.ndim} and {input2.ndim}")
        for d, (m, n) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
            if m != n:
                raise RuntimeError("bilinear(): input batch dimensions do not match at dim "
                                   f"{d}: got {m} and {n}")
        for k, (x, n) in enumerate(((input1, self.in1_features),
                                    (input2, self.in2_features))):
            if x.ndim == 0 or x.shape[-1] != n:
                raise RuntimeError(f"bilinear(): input{k + 1} size does not match weight size: "
                                   f"got {x.shape[-1] if x.ndim else 0} but expected {n}")
        lead = tuple(input1.shape[:-1])
        a = input1.reshape(-1, self.in1_features)
        b = input2.reshape(-1, self.in2_features)
        out = (a.matmul(self.weight) * b).sum(-1).t()  # (out, n, in2) -> (n, out)
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Dims ``start_dim`` to ``end_dim`` into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError("invalid argument type for dim parameter")
        if not isinstance(unflattened_size, (tuple, list)) or not all(
                isinstance(n, int) for n in unflattened_size):
            raise TypeError("unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        shape = tuple(input.shape)
        dim = self.dim % len(shape) if shape else 0
        return input.reshape(*shape[:dim], *self.unflattened_size, *shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


__all__ = ["Bilinear", "Flatten", "Identity", "Linear", "Unflatten"]
