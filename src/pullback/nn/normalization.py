"""Normalization layers: ``BatchNorm1d/2d/3d`` (running statistics, momentum or a
cumulative average, ``track_running_stats``, eval mode, ``num_batches_tracked``),
``InstanceNorm1d/2d/3d``, ``LayerNorm``, ``GroupNorm``, ``RMSNorm`` and
``LocalResponseNorm``, over ``pb.nn.functional``'s, with torch's parameters, buffers,
state-dict keys and reprs.

>>> import pullback as pb
>>> from pullback import nn
>>> bn = nn.BatchNorm1d(2)
>>> _ = bn(pb.tensor([[1., 2.], [3., 6.]]))
>>> bn.running_mean, bn.num_batches_tracked
(tensor([0.2000, 0.4000]), tensor(1))
>>> nn.LayerNorm(4)
LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
"""

from __future__ import annotations

from typing import Any

from ..creation import ones, tensor, zeros
from ..dtypes import int64
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _affine(module: Module, shape: tuple, affine: bool, bias: bool, dtype: Any) -> None:
    if affine:
        module.weight = Parameter(ones(*shape, dtype=dtype))
        if bias:
            module.bias = Parameter(zeros(*shape, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class _NormBase(Module):
    """The state torch's batch and instance norms share."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine(self, (num_features,), affine, bias, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims: tuple = ()

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else \
                self.momentum
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs over all but the channels."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs."""

    _dims = (5,)


class _InstanceNorm(_NormBase):
    _batched: int = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias if affine else False)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self._batched - 1, self._batched):
            raise ValueError(f"expected {self._batched - 1}D or {self._batched}D input (got "
                             f"{input.ndim}D input)")
        if input.ndim == self._batched - 1:
            return self.forward(input.unsqueeze(0)).squeeze(0)
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               0.0 if self.momentum is None else self.momentum, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Normalization of each (instance, channel) over its length: (N, C, L) or (C, L)."""

    _batched = 3


class InstanceNorm2d(_InstanceNorm):
    """Normalization of each (instance, channel) over H and W."""

    _batched = 4


class InstanceNorm3d(_InstanceNorm):
    """Normalization of each (instance, channel) over D, H and W."""

    _batched = 5


def _shape(normalized_shape: Any) -> tuple:
    return (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)


class LayerNorm(Module):
    """Normalization over the last ``len(normalized_shape)`` dims, with an elementwise
    affine map."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine(self, self.normalized_shape, elementwise_affine, bias, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalization over groups of channels (and the other dims), a per-channel affine."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine(self, (num_channels,), affine, bias, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last dims, times a learnt weight (eps None:
    the dtype's machine epsilon)."""

    def __init__(self, normalized_shape: Any, eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels) ** beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
