"""``Categorical(probs=None, logits=None)``: one of ``K`` categories (an int64 index),
with the weights of the last dimension of ``probs`` or ``logits``.

>>> import pullback as pb
>>> d = pb.distributions.Categorical(probs=pb.tensor([1.0, 1.0, 2.0]))
>>> d.probs
tensor([0.2500, 0.2500, 0.5000])
>>> d.log_prob(pb.tensor(2)), d.sample((4,)).shape
(tensor(-0.6931), (4,))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..creation import arange, full
from ..tensor import Tensor
from ..torch_functions import multinomial
from . import constraints
from .bernoulli import one_of
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    """A draw of one of ``probs.shape[-1]`` categories."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Categorical:
        new = self._get_checked_instance(Categorical, _instance)
        param_shape = tuple(batch_shape) + (self._num_events,)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(param_shape))
                new._param = getattr(new, name)
        new._num_events = self._num_events
        return self._expanded(new, tuple(batch_shape))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: tuple = ()) -> Tensor:
        n = int(np.prod(sample_shape, dtype=np.int64))
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = multinomial(probs_2d, n, True).T
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = tuple(np.broadcast_shapes(value.shape, self.logits.shape))
        value, log_pmf = value.expand(shape)[..., :1], self.logits.expand(shape)
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = float(np.finfo(dtypes.to_numpy_dtype(self.logits.dtype)).min)
        p_log_p = self.logits.clamp(min=min_real) * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events, dtype=dtypes.int64)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values
